"""``car-verify receipts``: a model's claims about tool use against the receipts."""

from __future__ import annotations

import argparse

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
        "receipts",
        parents=[profiled],
        help="a model's claims about tool use against the receipts",
    )
    p.add_argument("claims", metavar="CLAIMS.json", help="[{kind, tool, call_id?, count?, text?}]")
    p.add_argument(
        "receipts", metavar="RECEIPTS.json", help="[{tool, call_id?, ok?, result_count?}]"
    )
    p.add_argument(
        "--window-incomplete",
        action="store_true",
        help="the receipts were trimmed: a claim without one is ungroundable, not fabricated",
    )
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_receipts)


def cmd_receipts(args: argparse.Namespace) -> int:
    from ..plan.claims import verify_tool_receipts

    with named_inputs({"claims": args.claims, "receipts": args.receipts}):
        report = verify_tool_receipts(
            load_json(args.claims, list, "claims"),
            load_json(args.receipts, list, "receipts"),
            window_complete=not args.window_incomplete,
        )

    def text() -> str:
        from ..base.values import plural

        out = [f"{h['kind']}: {h['explanation']}\n" for h in report.hallucinations]
        out += [f"ungroundable: {u['explanation']}\n" for u in report.ungroundable]
        profile = run_profile(args)
        if report.grounded:
            ungroundable = len(report.ungroundable)
            out.append(f"grounded ({ungroundable} ungroundable; profile {profile})\n")
        else:
            count = len(report.hallucinations)
            out.append(f"not grounded: {plural(count, 'hallucination')} (profile {profile})\n")
        return "".join(out)

    emit(args, Report.of(report.to_dict(), text))
    return EXIT_OK if report.grounded else EXIT_FINDINGS
