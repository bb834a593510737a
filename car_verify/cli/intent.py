"""``car-verify intent``: does each call stay inside the user's intent, and is a
drift influenced by untrusted data."""

from __future__ import annotations

import argparse

from ..base.errors import UsageError
from .options import (
    Parser,
    Report,
    Subcommands,
    emit,
    format_option,
    gate_code,
    gate_options,
    gate_text,
    gated,
    gated_doc,
    load_json,
    named_inputs,
    run_profile,
)


def add(sub: Subcommands, profiled: Parser) -> None:
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
    gate_options(p, "{on_untainted_drift}")
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_intent)


def cmd_intent(args: argparse.Namespace) -> int:
    from ..plan.intent import check_intent, check_intent_plan, enforce_intent, gate_intent

    with named_inputs({"request": args.request}):
        request = load_json(args.request, dict, "intent request")
        actions = request.get("actions")
        if not actions:  # an intent on its own (.car/intent.json) judges no call
            raise UsageError(
                f"{args.request}: the request has no actions, so nothing was checked "
                "(give {intent, actions}; to check a proposal against an intent file, "
                "run verify --intent FILE)"
            )
        intent = request.get("intent")
        declared = isinstance(intent, dict) and any(
            intent.get(key)
            for key in ("allowed_tools", "allowed_resources", "forbidden_capabilities")
        )
        if not declared:  # a proposal given on its own: no call is judged against anything
            what = "no `intent`" if intent is None else "an `intent` that declares nothing"
            raise UsageError(
                f"{args.request}: the request has {what}, so no call was checked against "
                "one (give {intent: {allowed_tools, allowed_resources, "
                "forbidden_capabilities}, actions}; to check a proposal against an intent "
                "file, run verify --intent FILE)"
            )
        plan = isinstance(actions, list) and any(
            isinstance(a, dict) and "type" in a for a in actions
        )
        if plan or "untrusted_tools" in request or "untrusted_ids" in request:
            report = check_intent_plan(request, profile=run_profile(args))  # Agent IR actions
        else:
            report = check_intent(request)
    decision, enforcement = gated(args, report, gate_intent, enforce_intent)
    passed = None if enforcement is None else bool(enforcement.commit)

    def text() -> str:
        profile = run_profile(args)
        out = [f"{v.action}: {v.kind}: {v.explanation}\n" for v in report.violations]
        if report.safe:
            count = len(report.violations)
            out.append(f"safe ({count} out-of-intent, none blocks the commit; profile {profile})\n")
        else:
            blocked = ", ".join(report.commit_blocked)
            out.append(f"unsafe: commit blocked by {blocked} (profile {profile})\n")
        return "".join(out) + gate_text(decision, enforcement, passed, "commit")

    emit(args, Report.of(gated_doc(report.to_dict(), decision, enforcement), text))
    return gate_code(report.safe, decision, passed)
