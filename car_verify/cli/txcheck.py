"""``car-verify txcheck``: transactional hazards within or across proposals."""

from __future__ import annotations

import argparse

from ..base.errors import InputError
from .options import (
    EXIT_FINDINGS,
    EXIT_OK,
    Parser,
    Report,
    Subcommands,
    emit,
    format_option,
    load_json,
    load_proposal,
    load_state,
    proposal_argument,
    run_profile,
    state_option,
)


def add(sub: Subcommands, profiled: Parser) -> None:
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

    versions = None if args.versions is None else load_json(args.versions, dict, "versions")
    try:
        report = transaction_check(
            [load_proposal(p) for p in args.proposals],
            versions=versions,
            state=load_state(args.state),
            profile=run_profile(args),
            **({} if len(args.proposals) == 1 else {"labels": args.proposals}),
        )
    except InputError as err:
        raise (err if err.source else err.with_source(args.versions or "")) from None
    emit(
        args,
        Report.of(report.to_dict(), lambda: f"{report.explain()} (profile {report.profile})\n"),
    )
    return EXIT_OK if report.clean else EXIT_FINDINGS
