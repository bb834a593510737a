"""``car-verify flow``: information flow, sensitive data to sinks and untrusted
data to consequential actions."""

from __future__ import annotations

import argparse
from typing import Any

from ..base.errors import UsageError
from ._common import (
    EXIT_OK,
    _gate_code,
    _gate_options,
    _gate_text,
    _gated,
    _load_proposal,
    _named_inputs,
    _note,
    _profile,
    _read_file,
    _write,
    _write_gated,
    format_option,
    proposal_argument,
)


def add(sub: Any, profiled: Any) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "flow",
        parents=[profiled],
        help="information flow: sensitive data to sinks, untrusted data to consequential "
        "calls, forbidden tool orderings",
    )
    proposal_argument(p)
    p.add_argument(
        "--labels",
        metavar="LABELS.json",
        help="tool -> {capability, confidentiality, trust, sink, declassifier} "
        "(default: the nearest .car/tool-labels.json)",
    )
    p.add_argument(
        "--flow-policy",
        "--policy",
        dest="policy",
        metavar="POLICY.json",
        help="{min_confidential, forbidden_sequences}",
    )
    _gate_options(p, "{on_sensitive_to_sink, on_forbidden_sequence}")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--approve", metavar="FINGERPRINT", help="record an approval of a hazard")
    who.add_argument("--reject", metavar="FINGERPRINT", help="record a rejection of a hazard")
    p.add_argument("--reviewer", metavar="NAME", help="who decided (with --approve/--reject)")
    p.add_argument("--reason", metavar="TEXT", help="why (with --approve/--reject)")
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_flow)


def _labels(args: argparse.Namespace) -> tuple[Any, str]:
    """``--labels FILE``, else the nearest ``.car/tool-labels.json`` (said on stderr);
    no labels at all is a usage error: the check would pass on nothing."""
    if args.labels is not None:
        return _read_file(args.labels, dict, "labels"), args.labels
    from ..base.config import LABELS_FILE, find_car_file

    found, searched = find_car_file(LABELS_FILE)
    if found is None:
        where = ", ".join(str(p) for p in searched[:3]) + (" ..." if len(searched) > 3 else "")
        raise UsageError(f"no tool labels: give --labels FILE (no .car/{LABELS_FILE} in {where})")
    _note(args, f"labels: {found}")
    return _read_file(str(found), dict, "labels"), str(found)


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
        _write(f"{record.decision} {record.fingerprint}\n")
        return EXIT_OK
    labels, labels_name = _labels(args)
    policy = None if args.policy is None else _read_file(args.policy, dict, "flow policy")
    with _named_inputs({"labels": labels_name, "policy": args.policy}):
        report = check_information_flow(
            _load_proposal(args.proposal), labels, policy, profile=_profile(args)
        )
    decision, enforcement = _gated(args, report, gate_information_flow, enforce_information_flow)
    passed = None if enforcement is None else bool(enforcement.allow)
    if args.format == "json":
        _write_gated(report.to_dict(extras=True), decision, enforcement)
    else:
        for v in report.violations:
            _write(f"{v.kind}: {v.explanation}\n    fix: {v.mitigation}\n")
            if v.schedule:
                _write(f"    schedule: {' -> '.join(v.schedule)}\n")
        for v in report.beyond_car:
            _write(f"{v.kind} (beyond the runtime's checks): {v.explanation}\n")
            if v.schedule:
                _write(f"    schedule: {' -> '.join(v.schedule)}\n")
        extra = (
            f"; {len(report.beyond_car)} more beyond the runtime's checks"
            if report.beyond_car
            else ""
        )
        verdict = "safe" if report.safe else f"unsafe: {len(report.violations)} violations"
        _write(f"{verdict} (profile {report.profile}{extra})\n")
        _gate_text(decision, enforcement, passed, "allow")
        if enforcement is not None:
            for item in enforcement.pending:
                _write(f"    pending {item['fingerprint']}\n")
    return _gate_code(report.safe, decision, passed)
