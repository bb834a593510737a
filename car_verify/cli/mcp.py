"""``car-verify mcp``: serve car-verify's checks to an MCP client over stdio."""

from __future__ import annotations

import argparse
import importlib.util
from typing import Any

from ..base.errors import UsageError
from ._common import EXIT_OK


def add(sub: Any, profiled: Any) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "mcp",
        parents=[profiled],
        help="an MCP server on stdio: verify, simulate, equivalent, policy check, risk and "
        "codes as tools for an agent (needs the [mcp] extra)",
    )
    p.set_defaults(run=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("mcp") is None:
        raise UsageError("car-verify mcp needs the MCP SDK: pip install 'car-verify[mcp]'")
    from ._common import command_tree
    from .mcp_server import Declarations, serve

    # --profile is the server's default; each call may name its own.
    serve(Declarations.of(command_tree(args._parser)), profile=getattr(args, "profile", None))
    return EXIT_OK
