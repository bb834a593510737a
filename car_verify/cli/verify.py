"""``car-verify verify``: run the analysis passes and report issues."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..base.errors import UsageError
from ._common import (
    EXIT_FINDINGS,
    EXIT_OK,
    _color,
    _docs_url,
    _docs_url_option,
    _findings_text,
    _fix_files,
    _fix_options,
    _flow_files,
    _labels_options,
    _load_state,
    _load_tools,
    _named_inputs,
    _non_negative,
    _note,
    _policies,
    _positive,
    _profile,
    _read_file,
    _report_options,
    _schedules_option,
    _show_settings,
    _timeout_option,
    _write,
    _write_statistics,
    format_option,
    policies_option,
    proposal_argument,
    state_option,
    tools_option,
)


def add(sub: Any, profiled: Any) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "verify", parents=[profiled], help="run the analysis passes and report issues"
    )
    proposal_argument(p, many=True)
    state_option(p)
    tools_option(p)
    p.add_argument("--max-actions", type=_non_negative, metavar="N", help="action budget")
    format_option(p, ("text", "json", "sarif", "github"))
    _docs_url_option(p)
    _report_options(p)
    _fix_options(p)
    _timeout_option(p)
    p.add_argument(
        "--repeat-threshold",
        type=_positive,
        default=3,
        metavar="N",
        help="identical tool calls that count as a loop (default 3)",
    )
    p.add_argument("--passes", metavar="A,B", help="run only these passes (comma-separated)")
    policies_option(p)
    _schedules_option(p)
    _labels_options(p)
    p.set_defaults(run=cmd_verify)


def _note_no_policies(args: argparse.Namespace) -> None:
    """That no policies were found for a file, once per folder (after the answer, so
    that an error stays the one line on stderr)."""
    for where, loaded in getattr(args, "_policies_said", {}).items():
        if loaded is None:
            _note(args, f"policies: no .car/policies at or above {where} (none applied)")


def _note_unknown_names(args: argparse.Namespace, policies: Any, tools: Any) -> None:
    """A rule naming a tool or parameter the registry lacks fails open: say so."""
    from ..rules.policy_analysis import unknown_names

    for finding in unknown_names(policies, tools):  # a warning: even under --quiet
        sys.stderr.write(f"car-verify: warning: policies: {finding}\n")


def _intent_file(args: argparse.Namespace) -> Any:
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
        _note(args, f"intent: {found} (--no-labels to skip)")
    from ..plan.intent import parse_intent_file

    with _named_inputs({"intent": name}):
        return parse_intent_file(_read_file(name, dict, "intent"))


def cmd_verify(args: argparse.Namespace) -> int:
    from ..api import verify
    from ..reporters import render_json
    from ..reporters.text import verdict_line
    from .sources import proposal_input

    passes = [p.strip() for p in args.passes.split(",") if p.strip()] if args.passes else None
    if args.show_settings:
        return _show_settings(args, _verify_settings(args, passes))
    tools, state = _load_tools(args.tools), _load_state(args.state)
    profile = _profile(args)  # resolved once: it may read the configuration file
    if args.fix or args.diff:
        changed = _fix_files(args, args.proposals, state, profile)
        if args.diff:
            return EXIT_FINDINGS if changed else EXIT_OK
    # Every input is read before anything is checked: a bad one is the error, alone.
    sources = [proposal_input(name) for name in args.proposals]
    chosen = {id(s): _policies(args, s.path) for s in sources}  # per file, as ruff does
    for policies in {id(p): p for p in chosen.values() if p is not None}.values():
        if tools is not None:
            _note_unknown_names(args, policies, tools)
    labels, flow_policy = _flow_files(args)
    intent = _intent_file(args)
    from ..base.progress import progress

    results = []
    shown = progress(len(sources), "verify", "files", show=None if len(sources) > 1 else False)
    for source in sources:
        shown.update()
        _say_when_large(source.proposal, len(sources))
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
    several = len(sources) > 1
    if args.statistics and args.format in ("text", "json"):
        found = [i for s, r in zip(sources, results, strict=True) for i in s.locate(r.issues)]
        summary = verdict_line(results[0]) if not several else _verdicts(results)
        _write_statistics(args, found, summary)
    elif args.format == "json":  # one file: exactly the wire object (docs/semantics.md §7)
        if several:
            docs = [
                {"file": s.label, "result": r.to_dict()}
                for s, r in zip(sources, results, strict=True)
            ]
            _write(json.dumps(docs, indent=2, ensure_ascii=False) + "\n")
        else:
            _write(render_json(results[0]))
    else:
        found = [i for s, r in zip(sources, results, strict=True) for i in s.locate(r.issues)]
        artifact = sources[0].path if not several else None
        if args.format == "sarif":
            from ..reporters.sarif import sarif

            _write(sarif(found, artifact=artifact, docs_url=_docs_url(args)))
        elif args.format == "github":
            from ..reporters.github import render_github

            _write(render_github(found, artifact=artifact))
        elif several:
            for source, result in zip(sources, results, strict=True):
                summary = f"{source.label}: {verdict_line(result)}"
                _write(_findings_text(args, source.locate(result.issues), summary))
        else:
            summary = verdict_line(results[0]) if not several else _verdicts(results)
            _write(_findings_text(args, found, summary))
    _note_no_policies(args)
    return EXIT_OK if all(r.valid for r in results) else EXIT_FINDINGS


def _verdicts(results: Sequence[Any]) -> str:
    """The verdict over several files: how many are invalid."""
    from ..base.values import plural

    bad = sum(1 for r in results if not r.valid)
    return f"{'invalid' if bad else 'valid'}: {bad} of {plural(len(results), 'file')} invalid"


def _verify_settings(args: argparse.Namespace, passes: list[str] | None) -> dict[str, Any]:
    """What ``verify`` would run with: the profile and where it came from, the
    configuration and policies found, the inputs and limits."""
    from ..base.config import find_config, find_policies

    config = find_config()
    if args.no_policies:
        policies: Any = None
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
        "profile": _profile(args),
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
        "docs-url": _docs_url(args),
        "color": _color(args),
    }


def _profile_source(args: argparse.Namespace) -> str:
    _profile(args)
    return str(args._resolved_profile[1])


#: From how many actions a lone proposal's check is announced on a terminal: a
#: check of 50,000 actions takes several seconds, which a silent prompt hides.
LARGE_PROPOSAL = 5_000


def _say_when_large(proposal: Any, files: int) -> None:
    """On a terminal, say that a large lone proposal is being checked (several
    files have their own progress bar)."""
    count = len(getattr(proposal, "actions", ()))
    if files == 1 and count >= LARGE_PROPOSAL and sys.stderr.isatty():
        sys.stderr.write(f"car-verify: checking {count:,} actions ...\n")
        sys.stderr.flush()
