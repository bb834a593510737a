"""``car-verify check-plan``: a STRIPS plan: unmet preconditions, an unreached goal."""

from __future__ import annotations

import argparse

from ..base.errors import UsageError
from .options import (
    EXIT_FINDINGS,
    EXIT_OK,
    Parser,
    Report,
    Subcommands,
    emit,
    format_option,
    load_json,
    named_inputs,
    run_profile,
)


def add(sub: Subcommands, profiled: Parser) -> None:
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

    with named_inputs({"request": args.request}):
        request = load_json(args.request, dict, "plan check request")
        if not request.get("steps") and not request.get("goal"):
            raise UsageError(
                f"{args.request}: the plan has no steps and no goal, so nothing was checked"
            )
        report = check_plan(request)

    def text() -> str:
        from ..base.values import plural

        defects = "".join(f"{d.kind}: {d.explanation}\n" for d in report.defects)
        verdict = "valid" if report.valid else f"invalid: {plural(len(report.defects), 'defect')}"
        final = ", ".join(report.final_state) or "(empty)"
        return defects + f"{verdict}; final state: {final} (profile {run_profile(args)})\n"

    emit(args, Report.of(report.to_dict(), text))
    return EXIT_OK if report.valid else EXIT_FINDINGS
