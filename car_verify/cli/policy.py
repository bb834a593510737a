"""``car-verify policy``: check a proposal against policies, or lint them."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from ._common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_UNKNOWN,
    _color,
    _color_option,
    _load_state,
    _load_tools,
    _Parser,
    _positive,
    _profile,
    _schedules_option,
    _write,
    emit,
    format_option,
    policies_option,
    proposal_argument,
    state_option,
    tools_option,
)


def add(sub: Any, profiled: Any) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser("policy", help="check a proposal against policies, or lint them")
    policy = p.add_subparsers(dest="policy_command", metavar="ACTION", parser_class=_Parser)
    policy.required = True
    q = policy.add_parser(
        "check", parents=[profiled], help="report every policy violation of a proposal"
    )
    proposal_argument(q)
    policies_option(q, lookup=False)
    state_option(q, "state for require_state rules")
    format_option(q, ("text", "json", "sarif"))
    _schedules_option(q)
    _color_option(q)
    q.set_defaults(run=cmd_policy_check)
    q = policy.add_parser(
        "lint", parents=[profiled], help="load a policy directory and report what it holds"
    )
    q.add_argument("directory", metavar="DIR", help="policy directory (or a project holding .car)")
    tools_option(q)
    format_option(q, ("text", "json"))
    q.set_defaults(run=cmd_policy_lint)
    q = policy.add_parser(
        "diff",
        parents=[profiled],
        help="does NEW deny everything OLD denies? counterexample calls either way",
    )
    q.add_argument("old", metavar="OLD", help="the policy directory before")
    q.add_argument("new", metavar="NEW", help="the policy directory after")
    q.add_argument(
        "--max-states",
        metavar="N",
        type=_positive,
        default=None,
        help="the most states of the two sets' trace-rule monitors the search visits in "
        "each direction; past it that direction is unknown, exit 3 (default 1,000,000)",
    )
    format_option(q, ("text", "json"))
    q.set_defaults(run=cmd_policy_diff)


def cmd_policy_check(args: argparse.Namespace) -> int:
    from ..api import verify
    from ..reporters.json import policy_json
    from ..reporters.sarif import sarif
    from ..reporters.text import policy_text
    from ..rules.policy import policies_to_check
    from .sources import proposal_input

    source = proposal_input(args.proposal)
    # the nearest .car/policies above the proposal's own file, as verify finds it
    start = os.path.dirname(os.path.abspath(source.path)) if source.path else os.getcwd()
    loaded = policies_to_check(
        args.policies, start, name_them="name the policies with --policies DIR"
    )
    result = verify(
        source.proposal,
        initial_state=_load_state(args.state),
        passes=["policies"],
        policies=loaded,
        schedules=args.schedules,
        profile=_profile(args),
    )
    found = source.locate(result.issues)
    if args.format == "json":
        directory = None if loaded.directory is None else str(loaded.directory)
        _write(policy_json(result, directory, [str(f) for f in loaded.files]))
    elif args.format == "sarif":
        _write(sarif(found, artifact=source.path))
    else:
        described = f"{loaded.describe()} (profile {result.profile.value})"
        _write(policy_text(found, described, color=_color(args)))
    violations = [i for i in result.issues if i.severity.value == "error"]
    return EXIT_FINDINGS if violations else EXIT_OK


def cmd_policy_lint(args: argparse.Namespace) -> int:
    from ..rules.policy import load_policies
    from ..rules.policy_analysis import lint_policies

    loaded = load_policies(args.directory)
    rules = loaded.rules
    counts = {kind: len(getattr(rules, kind)) for kind in rules.__dataclass_fields__}
    findings = lint_policies(loaded, tools=_load_tools(args.tools))
    errors = sum(1 for f in findings if f.severity.value == "error")
    code = EXIT_FINDINGS if errors else EXIT_OK
    if args.format == "json":
        doc = {
            "directory": None if loaded.directory is None else str(loaded.directory),
            "files": [str(f) for f in loaded.files],
            "rules": {kind: n for kind, n in counts.items() if n},
            "total": sum(counts.values()),
            "findings": [f.to_dict() for f in findings],
        }
        _write(json.dumps(doc, indent=2) + "\n")
        return code
    _write(loaded.describe() + "\n")
    for file in loaded.files:
        _write(f"  {file.name}\n")
    for kind, n in counts.items():
        if n:
            _write(f"{kind}: {n}\n")
    for finding in findings:
        _write(f"{finding}\n")
    if findings:
        from ..base.values import plural

        warnings = len(findings) - errors
        _write(f"{plural(errors, 'error')}, {plural(warnings, 'warning')}\n")
    return code


def cmd_policy_diff(args: argparse.Namespace) -> int:
    from ..rules.policy import load_policies
    from ..rules.policy_analysis import policy_diff

    old, new = load_policies(args.old), load_policies(args.new)
    diff = policy_diff(old, new, max_states=args.max_states)

    def text() -> None:
        meaning = {
            "equivalent": "each denies exactly what the other does",
            "stricter": "NEW denies everything OLD denies, and more",
            "looser": "OLD denies everything NEW denies, and more",
            "incomparable": "each denies a call the other allows",
            "unknown": "not decided",
        }[diff.verdict]
        _write(f"{diff.verdict}: {meaning}\n")
        for label, found in (
            ("newly denied", diff.newly_denied),
            ("newly allowed", diff.newly_allowed),
        ):
            for c in found:
                _write(f"  {label}: {c.describe()}\n")
        for reason in diff.unknown:
            _write(f"  unknown: {reason}\n")
        for bound in diff.bounds:
            _write(f"  bound: {bound['name']}={bound['value']:,} (--max-states N)\n")

    emit(args, diff.to_dict(), text)
    covers = diff.new_covers_old
    return EXIT_OK if covers else EXIT_UNKNOWN if covers is None else EXIT_FINDINGS
