"""``car-verify wp``: the condition under which the actions run unblocked."""

from __future__ import annotations

import argparse

from .options import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_UNKNOWN,
    Parser,
    Report,
    Subcommands,
    emit,
    format_option,
    load_proposal,
    proposal_argument,
    run_profile,
    timeout_ms,
    timeout_option,
)


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "wp", parents=[profiled], help="the condition under which the actions run unblocked"
    )
    proposal_argument(p)
    p.add_argument("--action", metavar="ID", help="one action instead of every action")
    timeout_option(p)
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_wp)


def cmd_wp(args: argparse.Namespace) -> int:
    from ..deciders.wp import runs_unblocked

    condition = runs_unblocked(
        load_proposal(args.proposal),
        args.action,
        timeout_ms=timeout_ms(args),
        profile=run_profile(args),
    )
    profile = run_profile(args)
    doc = {**condition.to_dict(), "profile": profile}
    emit(args, Report.of(doc, lambda: f"(profile {profile})\n{condition.explain()}\n"))
    if condition.satisfiable is None:
        return EXIT_UNKNOWN
    return EXIT_OK if condition.satisfiable else EXIT_FINDINGS
