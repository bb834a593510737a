"""``python -m car_verify``: the command line, as ``car-verify``."""

from .cli import main

raise SystemExit(main())
