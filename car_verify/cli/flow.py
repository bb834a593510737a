"""``car-verify flow``: information flow, sensitive data to sinks and untrusted
data to consequential actions."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..base.errors import UsageError
from .options import (
    EXIT_OK,
    Parser,
    Report,
    Subcommands,
    decision_options,
    emit,
    flow_policy_option,
    format_option,
    gate_code,
    gate_options,
    gate_text,
    gated,
    gated_doc,
    labels_option,
    load_json,
    load_proposal,
    named_inputs,
    note,
    proposal_argument,
    run_profile,
    write,
)

if TYPE_CHECKING:
    from ..base.values import JSONObject


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "flow",
        parents=[profiled],
        help="information flow: sensitive data to sinks, untrusted data to consequential "
        "calls, forbidden tool orderings",
    )
    proposal_argument(p)
    labels_option(
        p,
        "tool -> {capability, confidentiality, trust, sink, declassifier} "
        "(default: the nearest .car/tool-labels.json)",
    )
    flow_policy_option(p, "{min_confidential, forbidden_sequences}", "--policy")
    gate_options(p, "{on_sensitive_to_sink, on_forbidden_sequence}")
    decision_options(p, "FINGERPRINT", "a hazard")
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_flow)


def _labels(args: argparse.Namespace) -> tuple[JSONObject, str]:
    """``--labels FILE``, else the nearest ``.car/tool-labels.json`` (said on stderr);
    no labels at all is a usage error: the check would pass on nothing."""
    if args.labels is not None:
        return load_json(args.labels, dict, "labels"), args.labels
    from ..base.config import LABELS_FILE, find_car_file

    found, searched = find_car_file(LABELS_FILE)
    if found is None:
        where = ", ".join(str(p) for p in searched[:3]) + (" ..." if len(searched) > 3 else "")
        raise UsageError(f"no tool labels: give --labels FILE (no .car/{LABELS_FILE} in {where})")
    note(args, f"labels: {found}")
    return load_json(str(found), dict, "labels"), str(found)


def cmd_flow(args: argparse.Namespace) -> int:
    from ..plan.flow import check_information_flow, enforce_information_flow, gate_information_flow

    if args.approve or args.reject:
        if args.ledger is None or not args.reviewer:
            raise UsageError("--approve / --reject record into --approvals LEDGER, with --reviewer")
        from ..plan.permissions import Ledger

        record = Ledger(args.ledger).record(
            args.approve or args.reject,
            "full_access",
            bool(args.approve),
            args.reviewer,
            args.reason or "",
        )
        write(f"{record.decision} {record.fingerprint}\n")
        return EXIT_OK
    labels, labels_name = _labels(args)
    policy = None if args.flow_policy is None else load_json(args.flow_policy, dict, "flow policy")
    with named_inputs({"labels": labels_name, "policy": args.flow_policy}):
        report = check_information_flow(
            load_proposal(args.proposal), labels, policy, profile=run_profile(args)
        )
    decision, enforcement = gated(args, report, gate_information_flow, enforce_information_flow)
    passed = None if enforcement is None else bool(enforcement.allow)

    def text() -> str:
        from ..base.values import plural

        out = []
        for v in report.violations:
            out.append(f"{v.kind}: {v.explanation}\n    fix: {v.mitigation}\n")
            if v.schedule:
                out.append(f"    schedule: {' -> '.join(v.schedule)}\n")
        for v in report.beyond_car:
            out.append(f"{v.kind} (beyond the runtime's checks): {v.explanation}\n")
            if v.schedule:
                out.append(f"    schedule: {' -> '.join(v.schedule)}\n")
        extra = (
            f"; {len(report.beyond_car)} more beyond the runtime's checks"
            if report.beyond_car
            else ""
        )
        verdict = (
            "safe" if report.safe else f"unsafe: {plural(len(report.violations), 'violation')}"
        )
        out.append(f"{verdict} (profile {report.profile}{extra})\n")
        out.append(gate_text(decision, enforcement, passed, "allow"))
        if enforcement is not None:
            out += [f"    pending {item['fingerprint']}\n" for item in enforcement.pending]
        return "".join(out)

    emit(args, Report.of(gated_doc(report.to_dict(extras=True), decision, enforcement), text))
    return gate_code(report.safe, decision, passed)
