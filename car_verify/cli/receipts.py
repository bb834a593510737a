"""``car-verify receipts``: a model's claims about tool use against the receipts."""

from __future__ import annotations

import argparse
from typing import Any

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

    with _named_inputs({"claims": args.claims, "receipts": args.receipts}):
        report = verify_tool_receipts(
            _read_file(args.claims, list, "claims"),
            _read_file(args.receipts, list, "receipts"),
            window_complete=not args.window_incomplete,
        )

    def text() -> None:
        for h in report.hallucinations:
            _write(f"{h['kind']}: {h['explanation']}\n")
        for u in report.ungroundable:
            _write(f"ungroundable: {u['explanation']}\n")
        if report.grounded:
            ungroundable = len(report.ungroundable)
            _write(f"grounded ({ungroundable} ungroundable; profile {_profile(args)})\n")
        else:
            count = len(report.hallucinations)
            _write(f"not grounded: {count} hallucinations (profile {_profile(args)})\n")

    emit(args, report.to_dict(), text)
    return EXIT_OK if report.grounded else EXIT_FINDINGS
