"""``car-verify txcheck``: transactional hazards within or across proposals."""

from __future__ import annotations

import argparse
from typing import Any

from ..base.errors import InputError
from ._common import (
    EXIT_FINDINGS,
    EXIT_OK,
    _load_proposal,
    _load_state,
    _profile,
    _read_file,
    _write,
    format_option,
    proposal_argument,
    state_option,
)


def add(sub: Any, profiled: Any) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "txcheck", parents=[profiled], help="transactional hazards within or across proposals"
    )
    proposal_argument(p, many=True)
    p.add_argument("--versions", metavar="V.json", help="current version of each key")
    state_option(p, "current state (for belief divergence)")
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_txcheck)


def cmd_txcheck(args: argparse.Namespace) -> int:
    from ..deciders.transactions import transaction_check

    versions = None if args.versions is None else _read_file(args.versions, dict, "versions")
    try:
        report = transaction_check(
            [_load_proposal(p) for p in args.proposals],
            versions=versions,
            state=_load_state(args.state),
            profile=_profile(args),
            **({} if len(args.proposals) == 1 else {"labels": args.proposals}),
        )
    except InputError as err:
        raise (err if err.source else err.with_source(args.versions or "")) from None
    if args.format == "json":
        _write(report.to_json() + "\n")
    else:
        _write(f"{report.explain()} (profile {report.profile.value})\n")
    return EXIT_OK if report.clean else EXIT_FINDINGS
