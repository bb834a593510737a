"""``car-verify permissions``: who may authorize each action (tiers), whether it
can be undone, and the gate."""

from __future__ import annotations

import argparse

from ..base.errors import UsageError
from .options import (
    EXIT_FINDINGS,
    EXIT_OK,
    Parser,
    Report,
    Subcommands,
    decision_options,
    emit,
    format_option,
    granted_option,
    ledger_option,
    load_proposal,
    note,
    proposal_argument,
    run_profile,
)


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "permissions",
        parents=[profiled],
        help="who may authorize each action (tiers), whether it can be undone, and the gate",
    )
    proposal_argument(p)
    granted_option(p, "gate each action against this standing tier (exit 1 when any is held)")
    ledger_option(p, "the approval ledger (JSON lines)")
    decision_options(p, "ACTION", "ACTION")
    p.add_argument("--evidence", metavar="TEXT", help="what the decision rests on")
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_permissions)


def cmd_permissions(args: argparse.Namespace) -> int:
    from ..plan.permissions import Ledger, permission_classify, permission_evaluate, record_decision

    proposal = load_proposal(args.proposal)
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
        from ..reporters.json import dump

        recorded = Report(
            lambda: f"{record.decision} {record.fingerprint} at {record.required_tier}\n",
            lambda: dump(record.to_dict(), indent=None),  # one line, as the ledger holds it
        )
        emit(args, recorded)
        return EXIT_OK
    report = permission_classify(proposal)
    if args.granted is None:
        classified = report.to_dict()
        emit(
            args,
            Report.of(classified, lambda: f"{report.explain()} (profile {run_profile(args)})\n"),
        )
        return EXIT_OK
    decisions = permission_evaluate(proposal, args.granted, ledger)
    if ledger is not None:
        for line in ledger.torn:
            note(args, f"{ledger.path}:{line}: not an approval record (a torn write?); skipped")

    def text() -> str:
        out = []
        for d in decisions:
            why = f": {d.reason}" if d.reason else ""
            out.append(
                f"{d.action_id}: {d.decision} (requires {d.required}, {d.reversibility}){why}\n"
            )
            if d.decision == "needs_approval":
                out.append(f"    fingerprint {d.fingerprint}\n")
        held = sum(d.decision != "allow" for d in decisions)
        allowed = len(decisions) - held
        profile = run_profile(args)
        out.append(f"{allowed} allowed, {held} held at {args.granted} (profile {profile})\n")
        return "".join(out)

    doc = {"granted": args.granted, "decisions": [d.to_dict() for d in decisions]}
    emit(args, Report.of(doc, text))
    return EXIT_FINDINGS if any(d.decision != "allow" for d in decisions) else EXIT_OK
