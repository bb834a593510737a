"""``car-verify intent``: does each call stay inside the user's intent, and is a
drift influenced by untrusted data."""

from __future__ import annotations

import argparse
from typing import Any

from ..base.errors import UsageError
from ._common import (
    _gate_code,
    _gate_options,
    _gate_text,
    _gated,
    _named_inputs,
    _profile,
    _read_file,
    _write,
    _write_gated,
    format_option,
)


def add(sub: Any, profiled: Any) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "intent",
        parents=[profiled],
        help="does each call stay inside the user's intent; is drift influenced by untrusted data",
    )
    p.add_argument(
        "request",
        metavar="REQUEST.json",
        help="{intent, actions} (the runtime's IntentActions, or Agent IR actions with "
        "untrusted_tools / untrusted_ids)",
    )
    _gate_options(p, "{on_untainted_drift}")
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_intent)


def cmd_intent(args: argparse.Namespace) -> int:
    from ..plan.intent import check_intent, check_intent_plan, enforce_intent, gate_intent

    with _named_inputs({"request": args.request}):
        request = _read_file(args.request, dict, "intent request")
        actions = request.get("actions")
        if not actions:  # an intent on its own (.car/intent.json) judges no call
            raise UsageError(
                f"{args.request}: the request has no actions, so nothing was checked "
                "(give {intent, actions}; to check a proposal against an intent file, "
                "run verify --intent FILE)"
            )
        plan = isinstance(actions, list) and any(
            isinstance(a, dict) and "type" in a for a in actions
        )
        if plan or "untrusted_tools" in request or "untrusted_ids" in request:
            report = check_intent_plan(request, profile=_profile(args))  # Agent IR actions
        else:
            report = check_intent(request)
    decision, enforcement = _gated(args, report, gate_intent, enforce_intent)
    passed = None if enforcement is None else bool(enforcement.commit)
    if args.format == "json":
        _write_gated(report.to_dict(), decision, enforcement)
    else:
        for v in report.violations:
            _write(f"{v.action}: {v.kind}: {v.explanation}\n")
        profile = _profile(args)
        if report.safe:
            count = len(report.violations)
            _write(f"safe ({count} out-of-intent, none blocks the commit; profile {profile})\n")
        else:
            blocked = ", ".join(report.commit_blocked)
            _write(f"unsafe: commit blocked by {blocked} (profile {profile})\n")
        _gate_text(decision, enforcement, passed, "commit")
    return _gate_code(report.safe, decision, passed)
