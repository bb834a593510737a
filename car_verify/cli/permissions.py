"""``car-verify permissions``: who may authorize each action (tiers), whether it
can be undone, and the gate."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..base.errors import UsageError
from ._common import (
    EXIT_FINDINGS,
    EXIT_OK,
    _load_proposal,
    _note,
    _profile,
    _write,
    emit,
    format_option,
    ledger_option,
    proposal_argument,
)


def add(sub: Any, profiled: Any) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "permissions",
        parents=[profiled],
        help="who may authorize each action (tiers), whether it can be undone, and the gate",
    )
    proposal_argument(p)
    p.add_argument(
        "--granted",
        choices=("read_only", "sandbox_edit", "full_access"),
        help="gate each action against this standing tier (exit 1 when any is held)",
    )
    ledger_option(p, "the approval ledger (JSON lines)")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--approve", metavar="ACTION", help="record an approval of ACTION")
    who.add_argument("--reject", metavar="ACTION", help="record a rejection of ACTION")
    p.add_argument("--reviewer", metavar="NAME", help="who decided (with --approve/--reject)")
    p.add_argument("--reason", metavar="TEXT", help="why (with --approve/--reject)")
    p.add_argument("--evidence", metavar="TEXT", help="what the decision rests on")
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_permissions)


def cmd_permissions(args: argparse.Namespace) -> int:
    from ..plan.permissions import Ledger, permission_classify, permission_evaluate, record_decision

    proposal = _load_proposal(args.proposal)
    ledger = None if args.ledger is None else Ledger(args.ledger)
    decided = args.approve or args.reject
    if decided is not None:
        if ledger is None:
            raise UsageError("--approve / --reject record into a ledger: give --ledger FILE")
        if not args.reviewer:
            raise UsageError("--approve / --reject need --reviewer NAME (who decided)")
        from ..ir.model import load

        model = load(proposal)
        action = next((a for a in model.actions if a.id == decided), None)
        if action is None:
            raise UsageError(f"no action {decided!r} in the proposal")
        record = record_decision(
            action,
            args.approve is not None,
            args.reviewer,
            args.reason or "",
            ledger,
            args.evidence,
        )
        if args.format == "json":
            _write(json.dumps(record.to_dict(), ensure_ascii=False) + "\n")
        else:
            _write(f"{record.decision} {record.fingerprint} at {record.required_tier}\n")
        return EXIT_OK
    report = permission_classify(proposal)
    if args.granted is None:

        def classified() -> None:
            _write(f"{report.explain()} (profile {_profile(args)})\n")

        emit(args, report.to_dict(), classified)
        return EXIT_OK
    decisions = permission_evaluate(proposal, args.granted, ledger)
    if ledger is not None:
        for line in ledger.torn:
            _note(args, f"{ledger.path}:{line}: not an approval record (a torn write?); skipped")

    def text() -> None:
        for d in decisions:
            why = f": {d.reason}" if d.reason else ""
            _write(f"{d.action_id}: {d.decision} (requires {d.required}, {d.reversibility}){why}\n")
            if d.decision == "needs_approval":
                _write(f"    fingerprint {d.fingerprint}\n")
        held = sum(d.decision != "allow" for d in decisions)
        allowed = len(decisions) - held
        _write(f"{allowed} allowed, {held} held at {args.granted} (profile {_profile(args)})\n")

    emit(args, {"granted": args.granted, "decisions": [d.to_dict() for d in decisions]}, text)
    return EXIT_FINDINGS if any(d.decision != "allow" for d in decisions) else EXIT_OK
