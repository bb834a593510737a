"""``car-verify mcp``: serve car-verify's checks to an MCP client over stdio."""

from __future__ import annotations

import argparse
import importlib.util
import math
import os

from ..base.errors import UsageError
from .options import (
    EXIT_OK,
    Parser,
    Subcommands,
    command_tree,
    policies_option,
    workers_option,
)


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "mcp",
        parents=[profiled],
        help="an MCP server on stdio: verify, simulate, equivalent, policy check, risk and "
        "codes as tools for an agent (needs the [mcp] extra)",
    )
    policies_option(
        p,
        "the policies folder policy_check applies when a call gives no policies "
        "(default: the nearest .car/policies at or above the working directory)",
        lookup=False,
    )
    p.add_argument(
        "--call-timeout",
        metavar="SECONDS",
        type=float,
        default=10.0,
        help="each call's budget: past it the call is stopped and answered with a tool error",
    )
    workers_option(p, "how many worker processes run calls at once", 2)
    p.set_defaults(run=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("mcp") is None:
        raise UsageError("car-verify mcp needs the MCP SDK: pip install 'car-verify[mcp]'")
    if not (math.isfinite(args.call_timeout) and args.call_timeout > 0):
        raise UsageError("--call-timeout: expected a number of seconds above 0")
    policies = None
    if args.policies is not None:
        if not os.path.isdir(args.policies):
            raise UsageError(f"--policies: {args.policies}: no such directory")
        policies = os.path.abspath(args.policies)
    from ..base.config import find_policies
    from ..rules.policy import load_policies
    from .mcp_server import Declarations, Settings
    from .mcp_stdio import serve

    # The rules in force are fixed at start: the folder found now (a nearer one the
    # agent writes later does not replace it) and each file's text as read now
    # (an edit or a removal later adds nothing and takes nothing away until restart).
    accepted: tuple[tuple[str, str], ...] = ()
    if policies is None:
        found, _ = find_policies(os.getcwd())
        policies = None if found is None else str(found)
    if policies is not None:
        loaded = load_policies(policies)
        accepted = tuple((str(path), text) for path, text in loaded.texts.items())
    settings = Settings(
        profile=getattr(args, "profile", None),  # each call's default; a call may name its own
        policies=policies,
        start=os.getcwd(),
        call_timeout=args.call_timeout,
        workers=args.workers,
        accepted=accepted,
    )
    from . import _parser  # every command: the tools' descriptions are theirs

    serve(Declarations.of(command_tree(_parser())), settings)
    return EXIT_OK
