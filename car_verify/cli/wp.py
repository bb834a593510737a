"""``car-verify wp``: the condition under which the actions run unblocked."""

from __future__ import annotations

import argparse
from typing import Any

from ._common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_UNKNOWN,
    _load_proposal,
    _profile,
    _timeout_ms,
    _timeout_option,
    _write,
    emit,
    format_option,
    proposal_argument,
)


def add(sub: Any, profiled: Any) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "wp", parents=[profiled], help="the condition under which the actions run unblocked"
    )
    proposal_argument(p)
    p.add_argument("--action", metavar="ID", help="one action instead of every action")
    _timeout_option(p)
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_wp)


def cmd_wp(args: argparse.Namespace) -> int:
    from ..deciders.wp import runs_unblocked

    condition = runs_unblocked(
        _load_proposal(args.proposal),
        args.action,
        timeout_ms=_timeout_ms(args),
        profile=_profile(args),
    )
    profile = _profile(args)
    emit(
        args,
        {**condition.to_dict(), "profile": profile},
        lambda: _write(f"(profile {profile})\n{condition.explain()}\n"),
    )
    if condition.satisfiable is None:
        return EXIT_UNKNOWN
    return EXIT_OK if condition.satisfiable else EXIT_FINDINGS
