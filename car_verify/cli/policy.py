"""``car-verify policy``: check a proposal against policies, or lint them."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import UsageError
from .options import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_UNKNOWN,
    Parser,
    Report,
    Subcommands,
    color,
    color_option,
    docs_url_option,
    emit,
    format_option,
    load_state,
    load_tools,
    max_states_option,
    note,
    output_option,
    policies_argument,
    policies_option,
    proposal_argument,
    quiet_option,
    run_profile,
    say_when_large,
    schedules_option,
    state_option,
    tools_option,
)

if TYPE_CHECKING:
    from ..rules.policy import LoadedPolicies


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser("policy", help="check a proposal against policies, or lint them")
    policy = p.add_subparsers(dest="policy_command", metavar="ACTION", parser_class=Parser)
    policy.required = True
    q = policy.add_parser(
        "check", parents=[profiled], help="report every policy violation of a proposal"
    )
    proposal_argument(q)
    policies_option(q, lookup=False)
    state_option(q, "state for require_state rules")
    format_option(q, ("text", "json", "sarif"))
    docs_url_option(q)
    schedules_option(q)
    color_option(q)
    quiet_option(q, "print the violations only: no summary line, no notes on stderr")
    q.set_defaults(run=cmd_policy_check)
    q = policy.add_parser(
        "lint", parents=[profiled], help="load a policy directory and report what it holds"
    )
    q.add_argument(
        "directory",
        metavar="DIR",
        help="policy directory (or a project holding .car), or one policy file",
    )
    tools_option(q)
    format_option(q, ("text", "json"))
    q.set_defaults(run=cmd_policy_lint)
    q = policy.add_parser(
        "diff",
        parents=[profiled],
        help="does NEW deny everything OLD denies? counterexample calls either way",
    )
    q.add_argument("old", metavar="OLD", help="the policies before (a folder or a policy file)")
    q.add_argument("new", metavar="NEW", help="the policies after (a folder or a policy file)")
    max_states_option(
        q,
        "the most states of the two sets' trace-rule monitors the search visits in "
        "each direction; past it that direction is unknown, exit 3 (default 1,000,000)",
    )
    format_option(q, ("text", "json"))
    q.set_defaults(run=cmd_policy_diff)
    q = policy.add_parser(
        "impact",
        parents=[profiled],
        help="replay real runs under OLD and NEW: calls newly denied, no longer denied",
    )
    q.add_argument("old", metavar="OLD", help="the policies before (a folder or a policy file)")
    q.add_argument("new", metavar="NEW", help="the policies after (a folder or a policy file)")
    q.add_argument(
        "sources",
        metavar="SOURCE",
        nargs="+",
        help="agent runs, read as the audit reads them (files, folders, globs)",
    )
    output_option(
        q, "OUT.parquet", "write one row per call: Parquet (.parquet) or CSV (.csv), by the suffix"
    )
    from ..plan.gate import UNDECIDED

    default = UNDECIDED["policy impact"]  # the face's answer, from the one table of them
    q.add_argument(
        "--on-unknown",
        choices=("deny", "allow", "ask"),
        default=default,
        help=f"the answer to a rule that cannot be decided on a call (default: {default})",
    )
    format_option(q, ("text", "json"))
    q.set_defaults(run=cmd_policy_impact)
    add_accept(policy, profiled)


def cmd_policy_check(args: argparse.Namespace) -> int:
    from ..api import verify
    from ..reporters.json import policy_json
    from ..reporters.text import policy_text
    from ..rules.policy import policies_to_check
    from .sources import proposal_input

    source = proposal_input(args.proposal)
    # the nearest .car/policies above the proposal's own file, as verify finds it
    start = os.path.dirname(os.path.abspath(source.path)) if source.path else os.getcwd()
    loaded = policies_to_check(
        args.policies, start, name_them="name the policies with --policies DIR"
    )
    say_when_large(args, len(source.proposal.actions))
    result = verify(
        source.proposal,
        initial_state=load_state(args.state),
        passes=["policies"],
        policies=loaded,
        schedules=args.schedules,
        profile=run_profile(args),
    )
    found = source.locate(result.issues)
    directory = None if loaded.directory is None else str(loaded.directory)
    described = f"{loaded.describe()} (profile {result.profile})"
    report = Report(
        lambda: policy_text(found, described, color=color(args), quiet=args.quiet),
        lambda: policy_json(result, directory, [str(f) for f in loaded.files]),
        findings=found,
        artifact=source.path,
    )
    emit(args, report)
    violations = [i for i in result.issues if i.severity.value == "error"]
    return EXIT_FINDINGS if violations else EXIT_OK


def cmd_policy_lint(args: argparse.Namespace) -> int:
    from ..rules.policy_analysis import lint_policies

    loaded = policies_argument(
        args.directory, "DIR", strict=False
    )  # lint reports what a face refuses
    if not loaded.rules.count():  # a clean report about no rule is no clean report
        said = "" if loaded.skipped else " (a policy file's name ends in .toml)"
        raise UsageError(
            f"{loaded.describe()}: the policy set holds no rule, so nothing was linted{said}"
        )
    counts = loaded.rules.counts()
    findings = lint_policies(loaded, tools=load_tools(args.tools))
    errors = sum(1 for f in findings if f.severity.value == "error")

    def text() -> str:
        out = [loaded.describe() + "\n"]
        out += [f"  {file.name}\n" for file in loaded.files]
        out += [f"{kind}: {n}\n" for kind, n in counts.items() if n]
        out += [f"{finding}\n" for finding in findings]
        if findings:
            from ..base.values import plural

            warnings = len(findings) - errors
            out.append(f"{plural(errors, 'error')}, {plural(warnings, 'warning')}\n")
        return "".join(out)

    def json() -> str:
        from ..reporters.json import dump

        doc = {
            "directory": None if loaded.directory is None else str(loaded.directory),
            "files": [str(f) for f in loaded.files],
            "rules": {kind: n for kind, n in counts.items() if n},
            "total": sum(counts.values()),
            "findings": [f.to_dict() for f in findings],
        }
        return dump(doc, ascii=True)  # as policy lint has always written it

    emit(args, Report(text, json))
    return EXIT_FINDINGS if errors else EXIT_OK


def _both(args: argparse.Namespace) -> tuple[LoadedPolicies, LoadedPolicies]:
    """OLD and NEW (each a folder, a project holding .car/policies, or one policy
    file), with what each skipped said on stderr."""
    both = policies_argument(args.old, "OLD"), policies_argument(args.new, "NEW")
    for name, loaded in zip(("OLD", "NEW"), both, strict=True):
        if loaded.skipped:
            note(args, f"{name}: {loaded.describe()}")
    return both


def cmd_policy_diff(args: argparse.Namespace) -> int:
    from ..plan.policy_diff import policy_diff

    old, new = _both(args)
    diff = policy_diff(old, new, max_states=args.max_states)

    def text() -> str:
        meaning = {
            "equivalent": "each denies exactly what the other does",
            "stricter": "NEW denies everything OLD denies, and more",
            "looser": "OLD denies everything NEW denies, and more",
            "incomparable": "each denies a call the other allows",
            "unknown": "not decided",
        }[diff.verdict]
        out = [f"{diff.verdict}: {meaning}\n"]
        for label, found in (
            ("newly denied", diff.newly_denied),
            ("newly allowed", diff.newly_allowed),
        ):
            out += [f"  {label}: {c.describe()}\n" for c in found]
        out += [f"  unknown: {reason}\n" for reason in diff.unknown]
        out += [
            f"  bound: {bound['name']}={bound['value']:,} (--max-states N)\n"
            for bound in diff.bounds
        ]
        return "".join(out)

    emit(args, Report.of(diff.to_dict(), text))
    covers = diff.new_covers_old
    return EXIT_OK if covers else EXIT_UNKNOWN if covers is None else EXIT_FINDINGS


def cmd_policy_impact(args: argparse.Namespace) -> int:
    from ..base.values import plural
    from ..corpora.impact import WRITERS, impact

    if args.output and Path(args.output).suffix.lower() not in WRITERS:
        raise UsageError(
            f"-o {args.output}: policy impact writes one row per call as Parquet "
            f"(-o calls.parquet) or CSV (-o calls.csv); {Path(args.output).suffix or 'no suffix'} "
            "is neither"
        )
    old, new = _both(args)
    found = impact(old, new, args.sources, on_unknown=args.on_unknown)
    for problem in found.problems[:5]:
        note(args, f"skipped a record: {problem}")
    if not found.trajectories:  # as the audit: a replay of nothing is no answer
        bad = found.problems
        said = f" ({plural(len(bad), 'record')} could not be read)" if bad else ""
        raise UsageError(
            f"{', '.join(args.sources)}: no readable trajectory{said}, so nothing was replayed"
        )
    if args.output:
        WRITERS[Path(args.output).suffix.lower()](found, args.output)
    doc = found.to_dict()

    def text() -> str:
        calls, runs = doc["calls"], doc["trajectories"]
        out = [
            f"{plural(calls, 'call')} in {plural(runs, 'trajectory')} replayed under both sets\n"
        ]
        for change, label in (
            ("newly_denied", "newly denied"),
            ("no_longer_denied", "no longer denied"),
            ("still_denied", "still denied"),
        ):
            c = doc["changes"][change]
            low, high = c["calls_ci95"]
            t_low, t_high = c["trajectories_ci95"]
            out.append(
                f"{label}: {plural(c['calls'], 'call')} ({c['calls_share']:.1%}, 95% CI "
                f"{low:.1%}-{high:.1%} of calls), in {c['trajectories']} of "
                f"{plural(runs, 'trajectory')} (95% CI {t_low:.1%}-{t_high:.1%})\n"
            )
            out += [f"  {rule}: {n}\n" for rule, n in c["by_rule"].items()]
            if c["example"] is not None:
                e = c["example"]
                rules = ", ".join(e["new_rules"] if change == "newly_denied" else e["old_rules"])
                out.append(
                    f"  e.g. trajectory {e['trajectory']} call {e['index']} ({e['tool']}): "
                    f"{rules}\n"
                )
        if doc["unreadable_records"]:
            out.append(f"{plural(len(doc['unreadable_records']), 'record')} could not be read\n")
        if args.output:
            out.append(f"one row per call written to {args.output}\n")
        return "".join(out)

    emit(args, Report.of(doc, text))
    return EXIT_FINDINGS if doc["changes"]["no_longer_denied"]["calls"] else EXIT_OK


def add_accept(policy: Subcommands, profiled: Parser) -> None:
    """``policy accept``: the agent hook's accepted rules (docs/hook.md)."""
    q = policy.add_parser(
        "accept",
        parents=[profiled],
        help="accept a policies folder's rules for the agent hook as they are now "
        "(run it yourself, outside the agent)",
    )
    q.add_argument(
        "directory",
        metavar="DIR",
        nargs="?",
        help="policy directory (or a project holding .car/policies); default: the nearest "
        ".car/policies above the working directory",
    )
    q.add_argument(
        "--state-dir",
        metavar="DIR",
        help="the hook's --state-dir, when its settings name one (default: every project "
        "state folder of the hook that read DIR)",
    )
    q.set_defaults(run=cmd_policy_accept)


def cmd_policy_accept(args: argparse.Namespace) -> int:
    """Accept the folder's rules for the hook; say what changed, where."""
    from ..base.values import plural
    from ..hook import accept_policies

    for done in accept_policies(args.directory, state_dir=args.state_dir):
        now, before = done.now, done.before
        files = plural(len(now.files), "file")
        print(f"accepted {plural(done.rules, 'rule')} from {files} in {now.policies} "
              f"for the agent hook (state: {done.state})")  # fmt: skip
        if before is None:
            print("  nothing was accepted there before")
        elif done.changes:
            print(f"  since the rules {before.said()}: {', '.join(done.changes)}")
        else:
            print(f"  unchanged since the rules {before.said()}")
        if not done.rules:
            print("  warning: the folder holds no rule: the hook checks nothing until it does")
    return EXIT_OK
