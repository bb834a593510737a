"""``car-verify lint``: lint the proposal files of a repository."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import CarVerifyError, UsageError
from ..semantics.profiles import PROFILE_ENV, profile_of
from .options import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    Parser,
    Report,
    Subcommands,
    counted,
    docs_url_option,
    emit,
    findings_text,
    fix_files,
    fix_options,
    format_option,
    labels_options,
    load_state,
    max_actions_option,
    no_progress_option,
    note,
    policies_option,
    repeat_threshold_option,
    report_options,
    show_settings,
    state_option,
    timeout_option,
    tools_option,
    workers_option,
)

if TYPE_CHECKING:
    from ..base.findings import Issue
    from ..base.values import JSONValue
    from ..corpora.lint import LintConfig, LintReport


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser("lint", parents=[profiled], help="lint the proposal files of a repository")
    p.add_argument("paths", metavar="PATH", nargs="*", help="files and folders (default: .)")
    p.add_argument("--config", metavar="FILE", help="pyproject.toml or .car/verify.toml to use")
    format_option(p, ("text", "json", "sarif", "github"))
    docs_url_option(p)
    report_options(p)
    p.add_argument(
        "--fail-on",
        choices=("error", "warning", "info", "never"),
        default=None,
        help="exit 1 when a finding is at or above this severity (default: error)",
    )
    p.add_argument(
        "--select",
        metavar="A,B",
        action="append",
        help="report only these codes (ALL, or a prefix: flow-, deny_tool:; repeatable)",
    )
    p.add_argument(
        "--ignore", metavar="A,B", action="append", help="never report these codes (repeatable)"
    )
    tools_option(p, many=True)
    state_option(p)
    max_actions_option(p)
    policies_option(p)
    repeat_threshold_option(p, None)
    p.add_argument("--baseline", metavar="FILE", help="leave out the findings recorded in FILE")
    p.add_argument("--write-baseline", metavar="FILE", help="record today's findings in FILE")
    workers_option(p, "worker processes")
    fix_options(p)
    timeout_option(p)
    no_progress_option(p)
    labels_options(p)
    p.add_argument(
        "--exclude",
        metavar="GLOB",
        action="append",
        help="also leave out files and folders matching GLOB (repeatable; adds to `exclude`)",
    )
    p.add_argument(
        "--force-exclude",
        action="store_true",
        default=None,
        help="apply include / exclude / .gitignore to files named on the command line too "
        "(the pre-commit hook does)",
    )
    p.add_argument(
        "--no-respect-gitignore",
        dest="respect_gitignore",
        action="store_false",
        default=None,
        help="lint files that .gitignore leaves out",
    )
    p.set_defaults(run=cmd_lint)


def _codes_arg(text: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """Codes given as ``A,B`` (an option given again adds to it); an unknown one is
    a usage error."""
    if text is None:
        return None
    from ..corpora.lint import unknown_codes

    given = [text] if isinstance(text, str) else list(text)
    codes = tuple(c.strip() for part in given for c in part.split(",") if c.strip())
    unknown = unknown_codes(codes)
    if unknown:
        import difflib

        from ..base.codes import CODES

        near = difflib.get_close_matches(unknown[0], sorted(CODES), n=1)
        hint = f" (the closest is {near[0]!r})" if near else ""
        raise UsageError(f"unknown code {unknown[0]!r}{hint}; `car-verify codes` lists them")
    return codes


def _lint_flow_files(args: argparse.Namespace, config: LintConfig) -> LintConfig:
    """``--labels`` / ``--flow-policy``, the configuration's, else the nearest
    ``.car/tool-labels.json`` and ``.car/flow-policy.json`` (said), unless
    ``--no-labels``."""
    from ..base.config import FLOW_POLICY_FILE, LABELS_FILE, find_car_file

    if args.no_labels:
        return dataclasses.replace(config, labels=None, flow_policy=None, intent=None)
    labels = Path(args.labels).resolve() if args.labels else config.labels
    policy = Path(args.flow_policy).resolve() if args.flow_policy else config.flow_policy
    if labels is None:
        labels, _ = find_car_file(LABELS_FILE)
        if labels is not None:
            note(args, f"labels: {labels} (--no-labels to skip)")
            if policy is None:
                policy, _ = find_car_file(FLOW_POLICY_FILE)
    if labels is None and policy is not None:
        raise UsageError("a flow policy is checked against tool labels: give --labels too")
    intent = Path(args.intent).resolve() if args.intent else config.intent
    if intent is None:
        from ..base.config import INTENT_FILE

        intent, _ = find_car_file(INTENT_FILE)
        if intent is not None:
            note(args, f"intent: {intent} (--no-labels to skip)")
    return dataclasses.replace(config, labels=labels, flow_policy=policy, intent=intent)


def cmd_lint(args: argparse.Namespace) -> int:
    from ..corpora import lint

    # The configuration and policies of the files linted, found from them (the first
    # path's folder), as ruff finds its own: not from wherever the command runs.
    first = Path(args.paths[0]) if args.paths and args.paths[0] != "-" else Path.cwd()
    start = first if first.is_dir() else first.parent
    config_path = Path(args.config) if args.config else lint.find_config(start)
    config = lint.load_config(config_path)
    config = lint.with_overrides(
        config,
        tools=tuple(Path(t).resolve() for t in args.tools) if args.tools else None,
        state=Path(args.state).resolve() if args.state else None,
        max_actions=args.max_actions,
        policies=Path(args.policies).resolve() if args.policies else None,
        select=_codes_arg(args.select),
        ignore=_codes_arg(args.ignore),
        repeat_threshold=args.repeat_threshold,
        fail_on=args.fail_on,
        profile=args.profile or os.environ.get(PROFILE_ENV) or None,  # else the file's
        force_exclude=args.force_exclude,
        respect_gitignore=args.respect_gitignore,
    )
    if args.exclude:
        config = dataclasses.replace(config, extend_exclude=(*config.extend_exclude, *args.exclude))
    if args.no_policies:
        config = dataclasses.replace(config, policies=None)
    elif config.policies is None:
        from ..base.config import find_policies

        found, _ = find_policies(start.resolve())
        if found is not None:
            config = dataclasses.replace(config, policies=found)
            note(args, f"policies: {found} (--no-policies to skip)")
    config = _lint_flow_files(args, config)
    progress = False if args.no_progress else None
    paths = args.paths or ["."]
    if args.show_settings:
        return show_settings(args, _lint_settings(config, config_path, paths))
    _check_rule_names(config, args)
    if args.fix or args.diff:
        candidates = lint.collect(paths, config).files
        state = None if config.state is None else load_state(str(config.state))
        chosen = [str(f) for f in candidates if f.suffix.lower() == ".json"]
        others = len(candidates) - len(chosen)
        if others:
            note(args, f"--fix rewrites .json files only; {others} other files not repaired")
        changed = fix_files(args, chosen, state, profile_of(config.profile))
        if args.diff:
            return EXIT_FINDINGS if changed else EXIT_OK
    if paths == ["-"]:  # stdin: linted as a file of its own, named `-`
        report = _lint_stdin(config)
    else:
        report = lint.lint_paths(paths, config, workers=args.workers, progress=progress)
    from ..base.values import plural

    if not report.files and report.excluded:  # pre-commit named only excluded files
        sys.stderr.write(
            f"car-verify: {plural(len(report.excluded), 'file')} named and left out by the"
            " include / exclude patterns (--force-exclude); nothing to lint\n"
        )
        return EXIT_OK
    if not report.files:  # a clean result about nothing is no clean result
        sys.stderr.write(
            f"car-verify: warning: no proposal files ({', '.join(config.include)}) under "
            f"{', '.join(paths)} after the exclude patterns and .gitignore; nothing was linted\n"
        )
        return EXIT_USAGE
    if args.write_baseline:
        lint.Baseline.of(report.findings).write(args.write_baseline)
        sys.stderr.write(
            f"car-verify: wrote {plural(len(report.findings), 'finding')} "
            f"to {args.write_baseline}\n"
        )
        return EXIT_OK
    if args.baseline:
        lint.Baseline.read(args.baseline).apply(report)
    summary = lint.summary_line(report)
    findings = report.findings
    done = Report(
        lambda: findings_text(args, findings, summary),
        lambda: lint.render_json(report),
        findings=findings,
    )
    emit(args, counted(args, done, summary))
    return EXIT_FINDINGS if report.failing(config.fail_on) else EXIT_OK


def _lint_stdin(config: LintConfig) -> LintReport:
    """``lint -``: the proposal on stdin (JSON, or YAML when it is no JSON), linted
    as a file and reported as ``-``."""
    import tempfile

    from ..corpora import lint
    from .sources import STDIN_LABEL

    text = sys.stdin.read()
    stripped = text.lstrip()
    suffix = ".json" if stripped[:1] in ("{", "[") or not stripped else ".yaml"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"stdin{suffix}"
        path.write_text(text, encoding="utf-8")
        result = lint.lint_file(path, dataclasses.replace(config, root=Path(folder)))
    label = STDIN_LABEL

    def relabel(issue: Issue) -> Issue:
        if issue.location is None:
            return issue
        return dataclasses.replace(issue, location=dataclasses.replace(issue.location, path=label))

    result.path = label
    result.findings = [relabel(f) for f in result.findings]
    result.suppressed = [relabel(f) for f in result.suppressed]
    return lint.LintReport([result], config)


def _check_rule_names(config: LintConfig, args: argparse.Namespace) -> None:
    """A selected or ignored rule name (``trace_rule:tested``) that no loaded policy
    has is a usage error naming it and the closest name there is: a misspelled rule
    would otherwise select nothing, or ignore nothing, in silence. (Policies that do
    not load are reported by the lint itself.)"""
    config_file = config.source or "the configuration"
    given = [
        (option if given_here else f"`{option[2:]}` in {config_file}", code)
        for option, codes, given_here in (
            ("--select", config.select, args.select),
            ("--ignore", config.ignore, args.ignore),
        )
        for code in codes or ()
        if ":" in code and not code.endswith(":")
    ]
    if not given:
        return
    known: list[str] = []
    if config.policies is not None:
        try:
            from ..rules.policy_analysis import rule_names

            known = rule_names(config.policies)
        except (CarVerifyError, OSError):
            return
    for option, code in given:
        if code in known:
            continue
        import difflib

        near = difflib.get_close_matches(code, known, n=1, cutoff=0.5)
        if config.policies is None:
            where = "no policies were loaded (--policies DIR names a folder of them)"
        else:
            where = (
                f"no rule of that name in {config.policies} "
                "(`car-verify policy lint` lists the rules)"
            )
        hint = f"; the closest is {near[0]!r}" if near else ""
        raise UsageError(f"{option} {code}: {where}{hint}")


def _lint_settings(
    config: LintConfig, source: Path | None, paths: list[str]
) -> dict[str, JSONValue]:
    """What ``lint`` would run with, every path resolved (``--show-settings``)."""
    settings: dict[str, JSONValue] = {
        "config": None if source is None else str(source),
        "paths": paths,
    }
    for item in dataclasses.fields(config):
        if item.name in ("source", "profile"):
            continue
        value = getattr(config, item.name)
        if isinstance(value, tuple):
            value = [str(v) for v in value]
        elif isinstance(value, Path):
            value = str(value)
        elif isinstance(value, Mapping):
            value = {k: list(v) if isinstance(v, tuple) else v for k, v in value.items()}
        settings[item.name.replace("_", "-")] = value
    settings["profile"] = config.profile or "car"  # what runs when the file names none
    return settings
