"""``car-verify schema``: the JSON Schema of a proposal, tools or state file,
generated from the model (for editors: docs/schema.md)."""

from __future__ import annotations

import argparse

from .options import EXIT_OK, Parser, Subcommands, write


def add(sub: Subcommands, profiled: Parser) -> None:
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
    from ..reporters.json import dump

    # The format is the profiles' common input: both read the same files.
    write(dump(json_schema(args.kind)))
    return EXIT_OK
