"""``python -m car_verify``: the command line, as ``car-verify``."""

from ._launch import main

raise SystemExit(main())
