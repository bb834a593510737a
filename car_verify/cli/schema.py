"""``car-verify schema``: the JSON Schema of a proposal, tools or state file,
generated from the model (for editors: docs/schema.md)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ._common import EXIT_OK, _write


def add(sub: Any, profiled: Any) -> None:
    """Declare the command on the command line's subparsers."""
    from ..ir.schema import KINDS

    p = sub.add_parser(
        "schema",
        parents=[profiled],
        help="print the JSON Schema of a proposal, tools or state file (for editors)",
    )
    p.add_argument(
        "kind", nargs="?", choices=KINDS, default="proposal", help="which file (default proposal)"
    )
    p.set_defaults(run=cmd_schema)


def cmd_schema(args: argparse.Namespace) -> int:
    from ..ir.schema import json_schema

    # The format is the profiles' common input: both read the same files.
    _write(json.dumps(json_schema(args.kind), indent=2, ensure_ascii=False) + "\n")
    return EXIT_OK
