"""``car-verify verify``: run the analysis passes and report issues."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import CarVerifyError, UsageError
from .options import (
    EXIT_FINDINGS,
    EXIT_OK,
    Parser,
    Report,
    Subcommands,
    color,
    counted,
    docs_url,
    docs_url_option,
    emit,
    findings_text,
    fix_files,
    fix_options,
    flow_files,
    format_option,
    labels_options,
    load_json,
    load_state,
    load_tools,
    max_actions_option,
    named_inputs,
    note,
    policies_for,
    policies_option,
    proposal_argument,
    repeat_threshold_option,
    report_options,
    run_profile,
    say_when_large,
    schedules_option,
    show_settings,
    state_option,
    timeout_option,
    tools_option,
)

if TYPE_CHECKING:
    from ..api import VerificationResult
    from ..base.findings import Issue
    from ..base.values import JSONValue
    from ..plan.intent import Intent
    from ..rules.policy import LoadedPolicies
    from ..rules.tools import ToolRegistry
    from .sources import Source


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "verify", parents=[profiled], help="run the analysis passes and report issues"
    )
    proposal_argument(p, many=True)
    state_option(p)
    tools_option(p)
    max_actions_option(p)
    format_option(p, ("text", "json", "sarif", "github"))
    docs_url_option(p)
    report_options(p)
    fix_options(p)
    timeout_option(p)
    repeat_threshold_option(p, 3)
    p.add_argument("--passes", metavar="A,B", help="run only these passes (comma-separated)")
    policies_option(p)
    schedules_option(p)
    labels_options(p)
    p.set_defaults(run=cmd_verify)


def _note_no_policies(args: argparse.Namespace) -> None:
    """That no policies were found for a file, once per folder (after the answer, so
    that an error stays the one line on stderr)."""
    for where, loaded in getattr(args, "_policies_said", {}).items():
        if loaded is None:
            note(args, f"policies: no .car/policies at or above {where} (none applied)")


def _note_unknown_names(policies: LoadedPolicies, tools: ToolRegistry) -> None:
    """A rule naming a tool or parameter the registry lacks fails open: say so."""
    from ..rules.policy_analysis import unknown_names

    for finding in unknown_names(policies, tools):  # a warning: even under --quiet
        sys.stderr.write(f"car-verify: warning: policies: {finding}\n")


def _intent_file(args: argparse.Namespace) -> tuple[Intent, tuple[str, ...]] | None:
    """The declared intent: ``--intent``, else the nearest ``.car/intent.json`` (said),
    unless ``--no-labels``; parsed, or None."""
    from ..base.config import INTENT_FILE, find_car_file

    name = getattr(args, "intent", None)
    if getattr(args, "no_labels", False) and name is None:
        return None
    if name is None:
        found, _ = find_car_file(INTENT_FILE)
        if found is None:
            return None
        name = str(found)
        note(args, f"intent: {found} (--no-labels to skip)")
    from ..plan.intent import parse_intent_file

    with named_inputs({"intent": name}):
        return parse_intent_file(load_json(name, dict, "intent"))


def cmd_verify(args: argparse.Namespace) -> int:
    from ..api import verify
    from .sources import proposal_input

    passes = [p.strip() for p in args.passes.split(",") if p.strip()] if args.passes else None
    if args.show_settings:
        return show_settings(args, _verify_settings(args, passes))
    tools, state = load_tools(args.tools), load_state(args.state)
    profile = run_profile(args)  # resolved once: it may read the configuration file
    if args.unsafe_fixes and not (args.fix or args.diff):
        raise UsageError("--unsafe-fixes goes with --fix or --diff")
    if args.fix or args.diff:
        changed = fix_files(args, args.proposals, state, profile, tools)
        if args.diff:
            return EXIT_FINDINGS if changed else EXIT_OK
    # Every input is read before anything is checked: a bad one is the error, alone.
    sources = [proposal_input(name) for name in args.proposals]
    chosen = {id(s): policies_for(args, s.path) for s in sources}  # per file, as ruff does
    for policies in {id(p): p for p in chosen.values() if p is not None}.values():
        if tools is not None:
            _note_unknown_names(policies, tools)
    labels, flow_policy = flow_files(args)
    intent = _intent_file(args)
    from ..base.progress import progress

    results = []
    shown = progress(len(sources), "verify", "files", show=None if len(sources) > 1 else False)
    for source in sources:
        shown.update()
        if len(sources) == 1:  # several files have their own progress bar
            say_when_large(args, len(source.proposal.actions))
        result = verify(
            source.proposal,
            tools=tools,
            initial_state=state,
            max_actions=args.max_actions,
            passes=passes,
            repeat_threshold=args.repeat_threshold,
            policies=chosen[id(source)],
            profile=profile,
            labels=labels,
            flow_policy=flow_policy,
            intent=intent,
            schedules=args.schedules,
        )
        if passes:  # a pass asked for by name that could not run is no clean result
            idle = [c for c in result.evidence.checks if c.name in passes and not c.ran]
            if idle:
                why = "; ".join(f"{c.name}: {c.reason or 'its input is missing'}" for c in idle)
                raise UsageError(f"a pass asked for cannot run ({why})")
        results.append(result)
    shown.close()
    emit(args, _report(args, sources, results))
    _note_no_policies(args)
    return EXIT_OK if all(r.valid for r in results) else EXIT_FINDINGS


def _report(
    args: argparse.Namespace, sources: Sequence[Source], results: Sequence[VerificationResult]
) -> Report:
    """What verify found, for every format: one file's result is its wire object in
    JSON (docs/semantics.md §7) and its findings then its verdict in text; several
    files' are a list of ``{file, result}`` and each file's findings and verdict."""
    from ..reporters.json import dump
    from ..reporters.text import fixable_line, verdict_line

    pairs = list(zip(sources, results, strict=True))
    for result in results:  # the findings are shown (or logged) with their fixes
        result.fixes  # noqa: B018 - derived, and attached to the findings
    found: list[Issue] = [i for s, r in pairs for i in s.locate(r.issues)]
    fixable = fixable_line(found) if not (args.fix or args.diff) else None
    if len(pairs) == 1:
        summary = verdict_line(results[0]) + ("" if fixable is None else f"\n{fixable}")
        report = Report(
            lambda: findings_text(args, found, summary),
            lambda: dump(results[0].to_dict()),
            findings=found,
            artifact=sources[0].path,
            text_of=_text_of,
        )
    else:
        summary = _verdicts(results)

        def text() -> str:
            out = "".join(
                findings_text(args, s.locate(r.issues), f"{s.label}: {verdict_line(r)}")
                for s, r in pairs
            )
            if fixable is not None and not getattr(args, "quiet", False):
                out += fixable + "\n"
            return out

        def json() -> str:
            return dump([{"file": s.label, "result": r.to_dict()} for s, r in pairs])

        report = Report(text, json, findings=found, text_of=_text_of)
    return counted(args, report, summary)


def _text_of(path: str) -> str | None:
    """A proposal file's text, for the SARIF log's fix regions (None: not a JSON file)."""
    from ..ir.model import read_text_file

    if not path.lower().endswith(".json"):
        return None
    try:
        return read_text_file(path)
    except (OSError, ValueError, CarVerifyError):
        return None


def _verdicts(results: Sequence[VerificationResult]) -> str:
    """The verdict over several files: how many are invalid."""
    from ..base.values import plural

    bad = sum(1 for r in results if not r.valid)
    return f"{'invalid' if bad else 'valid'}: {bad} of {plural(len(results), 'file')} invalid"


def _verify_settings(args: argparse.Namespace, passes: list[str] | None) -> dict[str, JSONValue]:
    """What ``verify`` would run with: the profile and where it came from, the
    configuration and policies found, the inputs and limits."""
    from ..base.config import find_config, find_policies

    config = find_config()
    if args.no_policies:
        policies: str | None = None
    elif args.policies is not None:
        policies = str(Path(args.policies).resolve())
    else:
        found, _ = find_policies()
        policies = str(found) if found is not None else None
    from ..base.config import FLOW_POLICY_FILE, LABELS_FILE, find_car_file

    labels, flow_policy = args.labels, args.flow_policy
    if args.no_labels:
        labels = flow_policy = None
    elif labels is None:
        near, _ = find_car_file(LABELS_FILE)
        labels = None if near is None else str(near)
        if labels is not None and flow_policy is None:
            near, _ = find_car_file(FLOW_POLICY_FILE)
            flow_policy = None if near is None else str(near)
    intent = args.intent
    if intent is None and not args.no_labels:
        from ..base.config import INTENT_FILE

        near, _ = find_car_file(INTENT_FILE)
        intent = None if near is None else str(near)
    return {
        "profile": run_profile(args),
        "profile-from": _profile_source(args),
        "config": None if config is None else str(config),
        "policies": policies,
        "labels": labels,
        "flow-policy": flow_policy,
        "intent": intent,
        "tools": args.tools,
        "state": args.state,
        "max-actions": args.max_actions,
        "passes": passes,
        "repeat-threshold": args.repeat_threshold,
        "docs-url": docs_url(args),
        "color": color(args),
    }


def _profile_source(args: argparse.Namespace) -> str:
    run_profile(args)
    return str(args._resolved_profile[1])
