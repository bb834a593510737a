"""``car-verify check-plan``: a STRIPS plan: unmet preconditions, an unreached goal."""

from __future__ import annotations

import argparse
from typing import Any

from ..base.errors import UsageError
from ._common import (
    EXIT_FINDINGS,
    EXIT_OK,
    _named_inputs,
    _profile,
    _read_file,
    _write,
    emit,
    format_option,
)


def add(sub: Any, profiled: Any) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "check-plan",
        parents=[profiled],
        help="a STRIPS plan: unmet preconditions, an unreached goal",
    )
    p.add_argument("request", metavar="REQUEST.json", help="{initial, steps, goal}, or - for stdin")
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_check_plan)


def cmd_check_plan(args: argparse.Namespace) -> int:
    from ..plan.claims import check_plan

    with _named_inputs({"request": args.request}):
        request = _read_file(args.request, dict, "plan check request")
        if not request.get("steps") and not request.get("goal"):
            raise UsageError(
                f"{args.request}: the plan has no steps and no goal, so nothing was checked"
            )
        report = check_plan(request)

    def text() -> None:
        for d in report.defects:
            _write(f"{d.kind}: {d.explanation}\n")
        verdict = "valid" if report.valid else f"invalid: {len(report.defects)} defects"
        final = ", ".join(report.final_state) or "(empty)"
        _write(f"{verdict}; final state: {final} (profile {_profile(args)})\n")

    emit(args, report.to_dict(), text)
    return EXIT_OK if report.valid else EXIT_FINDINGS
