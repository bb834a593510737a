"""The command line: ``car-verify verify | simulate | equivalent | optimize | wp | txcheck |
policy check | policy lint | run | dot | lint | codes | passes``.

``main(argv) -> int`` never raises: bad input or usage prints one line on stderr
and returns 2 with nothing on stdout. Set ``CAR_VERIFY_DEBUG=1`` to see the
traceback of an internal error.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from .errors import TOO_DEEP, CarVerifyError, InputError, UsageError, is_too_deep, too_deep
from .reporters.text import one_line
from .semantics.profiles import PROFILE_ENV

__all__ = ["main"]

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class _ArgumentError(UsageError):
    """A command line argparse refuses: said with the command's usage and a hint."""

    def __init__(self, message: str, usage: str, prog: str) -> None:
        super().__init__(message)
        self.usage = usage.strip()
        self.hint = f"Try '{prog} --help' for more."


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _ArgumentError(message, self.format_usage(), self.prog)


def _load_proposal(name: str, what: str = "proposal") -> Any:
    """A proposal from a file (JSON or YAML), or from stdin for ``-``."""
    from .sources import proposal_input

    return proposal_input(name, what=what).proposal


def _docs_url_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--docs-url",
        metavar="URL",
        help="where car-verify's docs/ are published: SARIF rules link there "
        "(also $CAR_VERIFY_DOCS_URL)",
    )


def _docs_url(args: argparse.Namespace) -> str | None:
    """Where the documentation is published, for SARIF's absolute help links."""
    from .reporters.sarif import DOCS_URL_ENV

    return getattr(args, "docs_url", None) or os.environ.get(DOCS_URL_ENV) or None


def _read_file(name: str, kind: type, what: str) -> Any:
    """A JSON file (or ``-``) that must hold a value of ``kind``; errors name the file."""
    from .sources import json_input

    return json_input(name, kind, what)


def _profile(args: argparse.Namespace) -> str:
    """The profile to run: ``--profile``, else ``$CAR_VERIFY_PROFILE``, else the nearest
    configuration's ``profile``, else ``car`` (SEMANTICS section 9), resolved once per
    run by :func:`car_verify.semantics.resolve_profile` for every command."""
    resolved = getattr(args, "_resolved_profile", None)
    if resolved is None:
        from .semantics.profiles import resolve_profile

        resolved = resolve_profile(getattr(args, "profile", None))
        args._resolved_profile = resolved
    return str(resolved[0].value)


def _first_line_names_profile(text: str, profile: str) -> str:
    """``text`` with its first line (the verdict) saying which profile answered."""
    first, _, rest = text.partition("\n")
    return f"{first} (profile {profile})" + (f"\n{rest}" if rest else "")


def _load_state(name: str | None) -> dict[str, Any] | None:
    return None if name is None else dict(_read_file(name, dict, "state"))


def _load_tools(name: str | None) -> Any:
    if name is None:
        return None
    from .sources import tools_input

    return tools_input(name)


def _int_arg(text: str, least: int = 0) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < least:
        what = "a positive" if least == 1 else "a non-negative"
        raise argparse.ArgumentTypeError(f"expected {what} number, got {value}")
    return value


def _non_negative(text: str) -> int:
    return _int_arg(text)


def _positive(text: str) -> int:
    return _int_arg(text, least=1)


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _report_options(parser: argparse.ArgumentParser) -> None:
    """What a linter's user expects of a command that reports findings."""
    parser.add_argument(
        "-o",
        "--output-file",
        metavar="FILE",
        help="write the report to FILE instead of stdout (written whole, at the end)",
    )
    parser.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 even when there are findings (2 still means bad input or usage)",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print the findings only: no summary line, no notes on stderr",
    )
    parser.add_argument(
        "--statistics",
        action="store_true",
        help="count the findings per code instead of listing them",
    )
    parser.add_argument(
        "--show-settings",
        action="store_true",
        help="print the settings this run would use (files found, profile, patterns) and exit",
    )
    _color_option(parser)


def _fix_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fix",
        action="store_true",
        help="apply the repairs car-verify proves safe (phantom state_dependencies; under "
        "strict, an ordering that removes a write conflict, checked with z3), say each",
    )
    parser.add_argument(
        "--diff",
        action="store_true",
        help="show the repairs --fix would make as a unified diff, write nothing "
        "(exit 1 when there are some)",
    )


def _color_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the text output: auto (default) on a terminal unless $NO_COLOR is set",
    )


def _color(args: argparse.Namespace) -> bool:
    from .reporters.text import color_wanted

    return color_wanted(getattr(args, "color", "auto"), sys.stdout)


def _findings_text(args: argparse.Namespace, issues: Any, summary: str | None) -> str:
    """The findings as text under ``--statistics``, ``--quiet`` and ``--color``."""
    from .reporters.text import lines, statistics

    shown = None if getattr(args, "quiet", False) else summary
    if getattr(args, "statistics", False):
        return statistics(issues, shown, color=_color(args))
    return lines(issues, shown, color=_color(args))


def _note(args: argparse.Namespace, text: str) -> None:
    """A note on stderr (what was loaded), unless ``--quiet``."""
    if not getattr(args, "quiet", False):
        sys.stderr.write(f"car-verify: {text}\n")


def _show_settings(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    """``--show-settings``: the resolved settings, as TOML-like lines or JSON."""
    if getattr(args, "format", "text") == "json":
        _write(json.dumps(settings, indent=2, ensure_ascii=False, default=str) + "\n")
        return EXIT_OK
    for key, value in settings.items():
        shown = json.dumps(value, ensure_ascii=False, default=str)
        _write(f"{key} = {shown}\n")
    return EXIT_OK


def _labels_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--labels",
        metavar="LABELS.json",
        help="tool labels for the flow pass (default: the nearest .car/tool-labels.json)",
    )
    p.add_argument(
        "--flow-policy",
        metavar="POLICY.json",
        help="{min_confidential, forbidden_sequences} (default: .car/flow-policy.json)",
    )
    p.add_argument(
        "--intent",
        metavar="INTENT.json",
        help="the user's declared intent for the intent pass (default: .car/intent.json)",
    )
    p.add_argument(
        "--no-labels",
        action="store_true",
        help="do not look for .car/tool-labels.json, flow-policy.json or intent.json",
    )


def _timeout_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=_seconds,
        default=30.0,
        help="the solver's time budget; past it the answer is unknown (exit 3), "
        "never a hang (default 30)",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return value


def _timeout_ms(args: argparse.Namespace) -> int:
    seconds: float = args.timeout
    return max(1, round(seconds * 1000))


def _reported(args: argparse.Namespace, code: int) -> int:
    """The exit code of a reporting command under ``--exit-zero``."""
    return EXIT_OK if getattr(args, "exit_zero", False) and code == EXIT_FINDINGS else code


# --- commands -------------------------------------------------------------------------------


def _policies(args: argparse.Namespace, proposal: str | None = None) -> Any:
    """The policies to apply to the proposal file ``proposal``: ``--policies DIR``,
    else the nearest ``.car/policies`` walking up from the file's own folder (the
    working directory for stdin) to the repository root, as ruff finds its
    configuration, unless ``--no-policies``. What was loaded, or that none was
    found, is said on stderr once per folder."""
    from .config import find_policies

    if getattr(args, "no_policies", False):
        return None
    if getattr(args, "policies", None) is not None:
        from .policy import load_policies

        return load_policies(args.policies)
    start = os.path.dirname(os.path.abspath(proposal)) if proposal not in (None, "-") else None
    folder, searched = find_policies(start)
    said: dict[Any, Any] = args.__dict__.setdefault("_policies_said", {})
    if folder is None:  # said once the command has its answer (_note_no_policies)
        where = searched[0].parent.parent if searched else Path.cwd()
        said.setdefault(where, None)
        return None
    if folder in said:
        return said[folder]
    from .policy import load_policies  # only when there are policies to load

    loaded = load_policies(folder)
    said[folder] = loaded
    _note(args, f"policies: {loaded.describe()} (--no-policies to skip)")
    return loaded


def _note_no_policies(args: argparse.Namespace) -> None:
    """That no policies were found for a file, once per folder (after the answer, so
    that an error stays the one line on stderr)."""
    for where, loaded in getattr(args, "_policies_said", {}).items():
        if loaded is None:
            _note(args, f"policies: no .car/policies at or above {where} (none applied)")


def _note_unknown_names(args: argparse.Namespace, policies: Any, tools: Any) -> None:
    """A rule naming a tool or parameter the registry lacks fails open: say so."""
    from .policy_analysis import unknown_names

    for finding in unknown_names(policies, tools):  # a warning: even under --quiet
        sys.stderr.write(f"car-verify: warning: policies: {finding}\n")


def _flow_files(args: argparse.Namespace) -> tuple[Any, Any]:
    """Tool labels and a flow policy: ``--labels`` / ``--flow-policy``, else the
    nearest ``.car/tool-labels.json`` and ``.car/flow-policy.json`` (said on stderr),
    unless ``--no-labels``."""
    from .config import FLOW_POLICY_FILE, LABELS_FILE, find_car_file

    labels_name = getattr(args, "labels", None)
    policy_name = getattr(args, "flow_policy", None)
    if getattr(args, "no_labels", False):
        if labels_name or policy_name:
            raise UsageError("--no-labels with --labels / --flow-policy: which is it?")
        return None, None
    if labels_name is None:
        found, _ = find_car_file(LABELS_FILE)
        if found is None:
            if policy_name is not None:
                raise UsageError("--flow-policy is checked against tool labels: give --labels")
            return None, None
        labels_name = str(found)
        _note(args, f"labels: {found} (--no-labels to skip)")
        if policy_name is None:
            near, _ = find_car_file(FLOW_POLICY_FILE)
            policy_name = None if near is None else str(near)
    with _named_inputs({"labels": labels_name, "policy": policy_name}):
        labels = _read_file(labels_name, dict, "labels")
        policy = None if policy_name is None else _read_file(policy_name, dict, "flow policy")
        from .flow import parse_labels, parse_policy

        return parse_labels(labels), parse_policy(policy)


def _intent_file(args: argparse.Namespace) -> Any:
    """The declared intent: ``--intent``, else the nearest ``.car/intent.json`` (said),
    unless ``--no-labels``; parsed, or None."""
    from .config import INTENT_FILE, find_car_file

    name = getattr(args, "intent", None)
    if getattr(args, "no_labels", False) and name is None:
        return None
    if name is None:
        found, _ = find_car_file(INTENT_FILE)
        if found is None:
            return None
        name = str(found)
        _note(args, f"intent: {found} (--no-labels to skip)")
    from .intent import parse_intent_file

    with _named_inputs({"intent": name}):
        return parse_intent_file(_read_file(name, dict, "intent"))


def cmd_verify(args: argparse.Namespace) -> int:
    from .api import verify
    from .reporters import render_json
    from .reporters.text import verdict_line
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
    from .progress import progress

    results = []
    shown = progress(len(sources), "verify", "files", show=None if len(sources) > 1 else False)
    for source in sources:
        shown.update()
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
    elif args.format == "json":  # one file: exactly the wire object (SEMANTICS section 7)
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
            from .reporters.sarif import sarif

            _write(sarif(found, artifact=artifact, docs_url=_docs_url(args)))
        elif args.format == "github":
            from .reporters.github import render_github

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


def _fix_files(args: argparse.Namespace, names: Sequence[str], state: Any, profile: str) -> bool:
    """``--fix`` / ``--diff``: repair each JSON file named (written back, or shown as a
    unified diff), saying what was repaired, declined and not attempted. Whether
    anything changed."""
    from .fix import dump_like, fix_document, unified_diff
    from .model import read_json

    changed = False
    skipped = [n for n in names if n == "-" or not n.lower().endswith(".json")]
    if skipped:
        sys.stderr.write(
            f"car-verify: --fix rewrites .json files only; not repaired: {', '.join(skipped)}\n"
        )
    for name in names:
        if name in skipped:
            continue
        text = Path(name).read_text(encoding="utf-8")
        document = read_json(text, name=name)
        if not isinstance(document, dict) or not isinstance(document.get("actions"), list):
            continue  # verify says what is wrong with it
        repaired = fix_document(
            document, initial_state=state, profile=profile, timeout_ms=_timeout_ms(args)
        )
        for note in repaired.notes:
            _note(args, f"{name}: {note}")
        for declined in repaired.declined:
            _note(args, f"{name}: not repaired: {declined}")
        if not repaired.changed:
            continue
        changed = True
        after = dump_like(repaired.document, text)
        if args.diff:
            _write(unified_diff(text, after, name))
            continue
        Path(name).write_text(after, encoding="utf-8")
        for done in repaired.fixes:
            _write(f"{name}: fixed [{done.kind}] {done.describe()}\n")
    return changed


def _verdicts(results: Sequence[Any]) -> str:
    """The verdict over several files: how many are invalid."""
    from .values import plural

    bad = sum(1 for r in results if not r.valid)
    return f"{'invalid' if bad else 'valid'}: {bad} of {plural(len(results), 'file')} invalid"


def _verify_settings(args: argparse.Namespace, passes: list[str] | None) -> dict[str, Any]:
    """What ``verify`` would run with: the profile and where it came from, the
    configuration and policies found, the inputs and limits."""
    from .config import find_config, find_policies

    config = find_config()
    if args.no_policies:
        policies: Any = None
    elif args.policies is not None:
        policies = str(Path(args.policies).resolve())
    else:
        found, _ = find_policies()
        policies = str(found) if found is not None else None
    from .config import FLOW_POLICY_FILE, LABELS_FILE, find_car_file

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
        from .config import INTENT_FILE

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


def cmd_simulate(args: argparse.Namespace) -> int:
    from .api import simulate

    sim = simulate(
        _load_proposal(args.proposal),
        initial_state=_load_state(args.state),
        profile=_profile(args),
    )
    if args.explain or args.format == "text":
        _write(f"{sim.explain()}\n(profile {sim.profile})\n")
    elif args.trace:
        doc = {
            "state": sim.to_dict(),
            "trace": sim.trace_dicts(),
            "unwalked": sim.unwalked,
            "profile": sim.profile,
        }
        _write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    else:
        _write(json.dumps(sim.to_dict(), indent=2, ensure_ascii=False) + "\n")
    return EXIT_OK


EXIT_UNKNOWN = 3


def _load_states(name: str | None) -> list[dict[str, Any]] | None:
    if name is None:
        return None
    from ._codec import expected

    data = _read_file(name, list, "states")
    for index, state in enumerate(data):
        if not isinstance(state, dict):
            raise InputError(expected("an object", state).problem, [index], source=name)
    if not data:
        raise InputError("the states file must hold at least one state", source=name)
    return list(data)


def cmd_equivalent(args: argparse.Namespace) -> int:
    from .equivalence import equivalent

    result = equivalent(
        _load_proposal(args.a, "first proposal"),
        _load_proposal(args.b, "second proposal"),
        _load_states(args.states),
        method=args.method,
        timeout_ms=_timeout_ms(args),
        profile=_profile(args),
    )
    if args.format == "json":
        _write(result.to_json() + "\n")
    else:
        _write(_first_line_names_profile(result.explain(), result.profile) + "\n")
    if result.equivalent is None:
        return EXIT_UNKNOWN
    return EXIT_OK if result.equivalent else EXIT_FINDINGS


@contextlib.contextmanager
def _named_inputs(files: Mapping[str, str | None]) -> Any:
    """An input error about ``goal.conditions`` (say) names the file it came from."""
    try:
        yield
    except InputError as err:
        first = err.path[0] if err.path else None
        name = files.get(first) if isinstance(first, str) else None
        if name is None or err.source:
            raise
        raise InputError(
            err.problem, err.path[1:], source=name, line=err.line, column=err.column
        ) from None


def cmd_risk(args: argparse.Namespace) -> int:
    from .risk import risk

    config: dict[str, Any] = {}
    if args.config is not None:
        config.update(_read_file(args.config, dict, "config"))
    for key, value in (
        ("trials", args.trials),
        ("seed", args.seed),
        ("default_success_rate", args.default_rate),
        ("retry_attempts", args.retries),
    ):
        if value is not None:
            config[key] = value
    history = None
    if args.history:
        from .risk import rates_from_history

        history = rates_from_history(args.history)
        for note in history.notes:
            _note(args, note)
        _note(args, f"history: {len(history.files)} files, {len(history.dispatched)} tools")
    from .progress import progress

    trials = config.get("trials", 1000)
    with (
        progress(trials if isinstance(trials, int) else None, "risk", "trials") as bar,
        _named_inputs({"goal": args.goal, "tool_success_rates": args.rates, "config": args.config}),
    ):
        result = risk(
            _load_proposal(args.proposal),
            _load_state(args.state),
            None if args.rates is None else _read_file(args.rates, dict, "rates"),
            None if args.goal is None else _read_file(args.goal, dict, "goal"),
            config,
            method=args.method,
            profile=_profile(args),
            history=history,
            sensitivity=args.sensitivity,
            failure_behavior=args.failure_behavior,
            progress=bar,
        )
    if args.format == "json":
        _write(result.to_json() + "\n")
    else:
        _write(_first_line_names_profile(result.explain(), _profile(args)) + "\n")
    return EXIT_OK


def cmd_permissions(args: argparse.Namespace) -> int:
    from .permissions import Ledger, permission_classify, permission_evaluate, record_decision

    proposal = _load_proposal(args.proposal)
    ledger = None if args.ledger is None else Ledger(args.ledger)
    decided = args.approve or args.reject
    if decided is not None:
        if ledger is None:
            raise UsageError("--approve / --reject record into a ledger: give --ledger FILE")
        if not args.reviewer:
            raise UsageError("--approve / --reject need --reviewer NAME (who decided)")
        from .model import load

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
        if args.format == "json":
            _write(json.dumps(record.to_dict(), ensure_ascii=False) + "\n")
        else:
            _write(f"{record.decision} {record.fingerprint} at {record.required_tier}\n")
        return EXIT_OK
    report = permission_classify(proposal)
    if args.granted is None:
        if args.format == "json":
            _write(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n")
        else:
            for row in report.classifications:
                why = f" ({'; '.join(row.because)})" if row.because else ""
                missing = ", compensable without a compensation" if row.missing_compensation else ""
                _write(f"{row.action_id}: {row.required_tier}, {row.reversibility}{missing}{why}\n")
            contract = report.declared_rollback_contract
            _write(f"declared rollback contract: {contract} (profile {_profile(args)})\n")
        return EXIT_OK
    decisions = permission_evaluate(proposal, args.granted, ledger)
    if ledger is not None:
        for line in ledger.torn:
            _note(args, f"{ledger.path}:{line}: not an approval record (a torn write?); skipped")
    if args.format == "json":
        doc = {"granted": args.granted, "decisions": [d.to_dict() for d in decisions]}
        _write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    else:
        for d in decisions:
            why = f": {d.reason}" if d.reason else ""
            _write(f"{d.action_id}: {d.decision} (requires {d.required}, {d.reversibility}){why}\n")
            if d.decision == "needs_approval":
                _write(f"    fingerprint {d.fingerprint}\n")
        held = sum(d.decision != "allow" for d in decisions)
        allowed = len(decisions) - held
        _write(f"{allowed} allowed, {held} held at {args.granted} (profile {_profile(args)})\n")
    return EXIT_FINDINGS if any(d.decision != "allow" for d in decisions) else EXIT_OK


def _labels(args: argparse.Namespace) -> tuple[Any, str]:
    """``--labels FILE``, else the nearest ``.car/tool-labels.json`` (said on stderr);
    no labels at all is a usage error: the check would pass on nothing."""
    if args.labels is not None:
        return _read_file(args.labels, dict, "labels"), args.labels
    from .config import LABELS_FILE, find_car_file

    found, searched = find_car_file(LABELS_FILE)
    if found is None:
        where = ", ".join(str(p) for p in searched[:3]) + (" ..." if len(searched) > 3 else "")
        raise UsageError(f"no tool labels: give --labels FILE (no .car/{LABELS_FILE} in {where})")
    _note(args, f"labels: {found}")
    return _read_file(str(found), dict, "labels"), str(found)


def _gated(args: argparse.Namespace, report: Any, gate: Any, enforce: Any) -> tuple[Any, Any]:
    """A report's gate decision (``--gate``, ``--gate-policy``) and, with
    ``--approvals LEDGER``, its enforcement against the recorded decisions."""
    if not (args.gate or args.approvals is not None):
        return None, None
    policy = None if args.gate_policy is None else _read_file(args.gate_policy, dict, "gate policy")
    decision = gate(report, policy)
    if args.approvals is None:
        return decision, None
    from .permissions import Ledger

    return decision, enforce(decision, Ledger(args.approvals))


def _write_gated(doc: dict[str, Any], decision: Any, enforcement: Any) -> None:
    """A gated report as JSON: the report, its ``gate`` and ``enforcement``."""
    if decision is not None:
        doc["gate"] = decision.to_dict()
    if enforcement is not None:
        doc["enforcement"] = enforcement.to_dict()
    _write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


def _gate_text(decision: Any, enforcement: Any, passed: bool | None, verb: str) -> None:
    if decision is not None:
        _write(f"gate: {decision.action}: {decision.reason}\n")
    if enforcement is not None:
        _write(f"enforcement: {verb if passed else 'hold'}: {enforcement.reason}\n")


def _gate_code(safe: bool, decision: Any, passed: bool | None) -> int:
    """Enforcement decides, else the gate, else the report."""
    if passed is not None:
        return EXIT_OK if passed else EXIT_FINDINGS
    if decision is not None:
        return EXIT_OK if decision.action == "allow" else EXIT_FINDINGS
    return EXIT_OK if safe else EXIT_FINDINGS


def cmd_flow(args: argparse.Namespace) -> int:
    from .flow import check_information_flow, enforce_information_flow, gate_information_flow

    if args.approve or args.reject:
        if args.approvals is None or not args.reviewer:
            raise UsageError("--approve / --reject record into --approvals LEDGER, with --reviewer")
        from .permissions import Ledger

        record = Ledger(args.approvals).record(
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


def cmd_check_plan(args: argparse.Namespace) -> int:
    from .claims import check_plan

    with _named_inputs({"request": args.request}):
        request = _read_file(args.request, dict, "plan check request")
        if not request.get("steps") and not request.get("goal"):
            raise UsageError(
                f"{args.request}: the plan has no steps and no goal, so nothing was checked"
            )
        report = check_plan(request)
    if args.format == "json":
        _write(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n")
    else:
        for d in report.defects:
            _write(f"{d.kind}: {d.explanation}\n")
        verdict = "valid" if report.valid else f"invalid: {len(report.defects)} defects"
        final = ", ".join(report.final_state) or "(empty)"
        _write(f"{verdict}; final state: {final} (profile {_profile(args)})\n")
    return EXIT_OK if report.valid else EXIT_FINDINGS


def cmd_goal(args: argparse.Namespace) -> int:
    from .claims import evaluate_goal

    with _named_inputs({"request": args.request}):
        verdict = evaluate_goal(_read_file(args.request, dict, "goal request"))
    if args.format == "json":
        _write(json.dumps(verdict.to_dict(), indent=2, ensure_ascii=False) + "\n")
    else:
        grounded = "" if verdict.grounded else " (ungrounded: it rests on a model judge)"
        met = "met" if verdict.met else "not met"
        _write(f"{met}{grounded}: {verdict.reason} (profile {_profile(args)})\n")
    return EXIT_OK if verdict.met else EXIT_FINDINGS


def cmd_receipts(args: argparse.Namespace) -> int:
    from .claims import verify_tool_receipts

    with _named_inputs({"claims": args.claims, "receipts": args.receipts}):
        report = verify_tool_receipts(
            _read_file(args.claims, list, "claims"),
            _read_file(args.receipts, list, "receipts"),
            window_complete=not args.window_incomplete,
        )
    if args.format == "json":
        _write(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n")
    else:
        for h in report.hallucinations:
            _write(f"{h['kind']}: {h['explanation']}\n")
        for u in report.ungroundable:
            _write(f"ungroundable: {u['explanation']}\n")
        if report.grounded:
            ungroundable = len(report.ungroundable)
            _write(f"grounded ({ungroundable} ungroundable; profile {_profile(args)})\n")
        else:
            count = len(report.hallucinations)
            _write(f"not grounded: {count} hallucinations (profile {_profile(args)})\n")
    return EXIT_OK if report.grounded else EXIT_FINDINGS


def _found_workflows(args: argparse.Namespace) -> int:
    """``car-verify workflow`` without a file: every ``.car/workflows/*.json`` of the
    nearest ``.car`` (found as ``.car/policies`` is), with its policies."""
    from .config import find_car_file

    folder, searched = find_car_file("workflows", kind="directory")
    if folder is None:
        where = ", ".join(str(p) for p in searched[:3])
        raise UsageError(f"no workflow graph: give GRAPH.json (no .car/workflows in {where})")
    graphs = sorted(folder.glob("*.json"))
    if not graphs:
        raise UsageError(f"{folder} holds no *.json workflow graph")
    if args.policies is None:
        near = folder.parent / "workflow-policies.json"
        if near.is_file():
            args.policies = str(near)
    worst = EXIT_OK
    for graph in graphs:
        _note(args, f"workflow: {graph}" + (f" with {args.policies}" if args.policies else ""))
        args.graph = str(graph)
        worst = max(worst, cmd_workflow(args))
    return worst


def _runtime_workflow(args: argparse.Namespace, doc: dict[str, Any]) -> int:
    from .workflow import verify_workflow

    if args.policies or args.rule or args.output:
        raise UsageError(
            "--policies, --rule and -o read the graph format {entry, terminals, stages, "
            "edges}; this file is the runtime's workflow format"
        )
    with _named_inputs({"workflow": args.graph}):
        report = verify_workflow(doc)
    for note in report.notes:
        _note(args, f"workflow: {note}")
    if args.format == "json":
        _write(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n")
    else:
        for issue in report.issues:
            _write(f"{issue}\n")
        cycles = "; it has cycles" if report.has_cycles else ""
        verdict = "valid" if report.valid else "invalid"
        _write(f"{verdict}: {len(report.reachable_stages)} stages reachable{cycles}\n")
    return EXIT_OK if report.valid else EXIT_FINDINGS


def cmd_workflow(args: argparse.Namespace) -> int:
    from .workflow import (
        check_workflow_policies,
        check_workflow_trace_rules,
        parse_graph,
        verify_workflow_graph,
    )

    if args.graph is None:
        return _found_workflows(args)
    doc = _read_file(args.graph, dict, "workflow graph")
    if "start" in doc:  # the runtime's workflow format (stages with steps)
        return _runtime_workflow(args, doc)
    with _named_inputs({"graph": args.graph, "policies": args.policies}):
        graph = parse_graph(doc)
        report = verify_workflow_graph(graph)
        policies = None
        if args.policies is not None:
            policies = check_workflow_policies(graph, _read_file(args.policies, list, "policies"))
    traced = None
    if args.rule:
        from .trace import parse_trace_rule

        rules = [parse_trace_rule(text, source="--rule") for text in args.rule]
        named = {*graph.stages, graph.entry, *(s for e in graph.edges for s in e[:2])}
        for rule in rules:  # a rule on no stage of the graph holds of nothing: a typo
            tools = {c.tool for c in (rule.call, rule.event) if c is not None}
            missing = sorted(t for t in tools if t is not None and t not in named)
            if missing:
                raise UsageError(
                    f"--rule {rule.text!r}: no stage is named {', '.join(map(repr, missing))}, "
                    f"so nothing was checked (stages: {', '.join(sorted(graph.stages))})"
                )
        traced = check_workflow_trace_rules(graph, rules)
    witness: tuple[str, ...] = ()
    for found in (
        *(d.witness for d in report.defects),
        *(v.witness for v in (policies.violations if policies else [])),
        *(c.path for c in (traced.counterexamples if traced else [])),
    ):
        if found:
            witness = found
            break
    ok = (
        report.sound
        and (policies is None or policies.compliant)
        and (traced is None or traced.holds)
    )
    if args.output:
        from .export import workflow_to_dot, write

        title = "sound" if ok else "first witness in red"
        write(workflow_to_dot(graph, witness=witness, title=title), args.output)
    if args.format == "json":
        out: dict[str, Any] = report.to_dict()
        if policies is not None:
            out["policies"] = policies.to_dict()
        if traced is not None:
            out["trace_rules"] = traced.to_dict()
        _write(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    else:
        for d in report.defects:
            path = f" (path: {' -> '.join(d.witness)})" if d.witness else ""
            _write(f"{d.kind}: {d.explanation}{path}\n")
        for v in policies.violations if policies else []:
            _write(f"policy {v.policy!r}: {v.explanation} (path: {' -> '.join(v.witness)})\n")
        for c in traced.counterexamples if traced else []:
            _write(f"trace rule {c.rule!r}: {c.message} (path: {_path_text(c.path)})\n")
        parts = ["sound" if report.sound else f"unsound: {len(report.defects)} defects"]
        if policies is not None:
            parts.append(
                "policies hold"
                if policies.compliant
                else f"{len(policies.violations)} policy violations"
            )
        if traced is not None:
            parts.append(
                "trace rules hold"
                if traced.holds
                else f"{len(traced.counterexamples)} trace rules broken"
            )
        _write("; ".join(parts) + f" (profile {_profile(args)})\n")
    return EXIT_OK if ok else EXIT_FINDINGS


def cmd_intent(args: argparse.Namespace) -> int:
    from .intent import check_intent, check_intent_plan, enforce_intent, gate_intent

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
        if report.safe:
            _write(f"safe ({len(report.violations)} out-of-intent, none blocks the commit)\n")
        else:
            _write(f"unsafe: commit blocked by {', '.join(report.commit_blocked)}\n")
        _gate_text(decision, enforcement, passed, "commit")
    return _gate_code(report.safe, decision, passed)


def cmd_concurrency(args: argparse.Namespace) -> int:
    from .concurrency import analyze_concurrency, gate_concurrency, ops_from_proposal

    with _named_inputs({"ops": args.ops}):
        doc = _read_file(args.ops, object, "ops")
        if isinstance(doc, dict):  # a proposal: its actions as the executor schedules them
            ops: Any = ops_from_proposal(doc, profile=_profile(args))
        else:
            ops = doc
        report = analyze_concurrency(ops)
    gate = None
    if args.gate or args.gate_policy is not None:
        policy = (
            None if args.gate_policy is None else _read_file(args.gate_policy, dict, "gate policy")
        )
        gate = gate_concurrency(report, policy)
    if args.format == "json":
        doc_out = report.to_dict(extras=True)
        if gate is not None:
            doc_out["gate"] = gate.to_dict()
        _write(json.dumps(doc_out, indent=2, ensure_ascii=False) + "\n")
    else:
        for a in report.anomalies:
            _write(f"{a.anomaly} ({', '.join(a.ops)} on {a.key!r}): {a.explanation}\n")
        serial = (
            "serializable"
            if report.serializable
            else ("not serializable: " + " -> ".join(report.cycle))
        )
        _write(f"level {report.level}; {serial} (profile {_profile(args)})\n")
        if gate is not None:
            for r in gate.remediations:
                _write(f"    {r['disposition']}: {r['remediation']['kind']} ({r['anomaly']})\n")
            _write(f"gate: {'abort' if gate.abort else ('safe' if gate.safe else 'remediate')}\n")
    if gate is not None:
        return EXIT_OK if gate.safe else EXIT_FINDINGS
    return EXIT_OK if report.serializable and not report.anomalies else EXIT_FINDINGS


def cmd_audit(args: argparse.Namespace) -> int:
    from collections import Counter

    from .audit import AuditSettings, audit, plan_shards, rates_by_outcome, sources_of
    from .progress import progress

    labels = flow_policy = None
    if args.labels is not None:
        labels = _read_file(args.labels, dict, "labels")
        from .flow import parse_labels

        with _named_inputs({"labels": args.labels}):
            parse_labels(labels)  # a bad labels file fails before any work
    if args.flow_policy is not None:
        if labels is None:
            raise UsageError("--flow-policy is checked against tool labels: give --labels")
        flow_policy = _read_file(args.flow_policy, dict, "flow policy")
    settings = AuditSettings(
        profile=_profile(args),
        policies=args.policies,
        compare_policies=args.compare_policies,
        labels=labels,
        flow_policy=flow_policy,
        budget=args.budget,
    )
    inside = Path(args.output).resolve()
    files = [f for f in sources_of(args.sources) if inside not in f.resolve().parents]
    total = sum(s.count for s in plan_shards(files, args.shard_size))
    with progress(None if args.no_progress else total, "audit", "trajectories") as bar:
        summary = audit(
            args.sources,
            args.output,
            settings=settings,
            workers=args.workers,
            shard_size=args.shard_size,
            progress=bar,
            fresh=args.fresh,
            engine=args.engine,
            address=args.address or args.scheduler,
        )
    for problem in summary.problems:
        _note(args, f"skipped a record: {problem}")
    if not summary.trajectories and not summary.skipped:
        bad = f" ({summary.malformed} malformed records)" if summary.malformed else ""
        raise UsageError(
            f"{', '.join(args.sources)}: no readable trajectory{bad}, so nothing was audited"
        )
    done = f" ({summary.skipped} of {summary.shards} shards done before)" if summary.skipped else ""
    extra = ""
    if summary.malformed:
        extra += f", {summary.malformed} malformed records"
    if summary.unknown:
        extra += f", {summary.unknown} past the budget (unknown)"
    _write(
        f"{summary.trajectories} trajectories{extra}, {summary.findings} findings in "
        f"{summary.out}{done}: findings.parquet, trajectories.parquet\n"
    )
    if args.compare_policies:
        import pyarrow.parquet as pq

        changes = Counter(
            pq.read_table(summary.out / "replay.parquet", columns=["change"]).column(0).to_pylist()
        )
        _write(
            f"replacing {args.policies} with {args.compare_policies}: "
            f"{changes.get('newly_blocked', 0)} calls newly blocked, "
            f"{changes.get('newly_allowed', 0)} newly allowed, "
            f"{changes.get('still_blocked', 0)} still blocked (replay.parquet)\n"
        )
    if args.report:
        from .audit_report import write_report

        _note(args, f"report: {write_report(summary.out, args.report)}")
    rates = rates_by_outcome(summary.out)
    if rates:
        _write(f"{'code':<34} {'trajectories':>12} {'success':>8} {'failure':>8}\n")
        for row in sorted(rates, key=lambda r: -r["trajectories"])[: args.top]:
            cells = [
                f"{row[k]:.0%}" if row[k] is not None else "-"
                for k in ("rate_success", "rate_failure")
            ]
            _write(f"{row['code']:<34} {row['trajectories']:>12} {cells[0]:>8} {cells[1]:>8}\n")
    return EXIT_OK


def cmd_optimize(args: argparse.Namespace) -> int:
    from .optimize import optimize

    result = optimize(
        _load_proposal(args.proposal),
        initial_state=_load_state(args.state),
        profile=_profile(args),
    )
    if args.diff:
        if args.format == "json":
            doc = result.to_dict()
            del doc["proposal"]
            doc["profile"] = _profile(args)
            _write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        else:
            _write(f"{result.diff()}\n(profile {_profile(args)})\n")
    else:
        _write(json.dumps(_as_written(args.proposal, result), indent=2, ensure_ascii=False) + "\n")
    return EXIT_OK


def _as_written(name: str, result: Any) -> Any:
    """The optimized proposal as the user wrote it: their own document (a JSON or
    YAML file) with only the removed entries gone, no default filled in and nothing
    invented (an id, a timestamp); from stdin, the model's full form."""
    if name == "-":
        return result.proposal.to_dict()
    text = Path(name).read_text(encoding="utf-8")
    if name.lower().endswith((".yaml", ".yml")):
        import yaml

        doc = yaml.safe_load(text)
    else:
        doc = json.loads(text)
    actions = doc.get("actions") if isinstance(doc, dict) else None
    if not isinstance(actions, list):
        return result.proposal.to_dict()
    for change in result.removed:
        action = actions[change.index]
        deps = action.get("state_dependencies", [])
        action["state_dependencies"] = [k for k in deps if k != change.key]
    return doc


def cmd_wp(args: argparse.Namespace) -> int:
    from .wp import runs_unblocked

    condition = runs_unblocked(
        _load_proposal(args.proposal),
        args.action,
        timeout_ms=_timeout_ms(args),
        profile=_profile(args),
    )
    profile = _profile(args)
    if args.format == "json":
        doc = {**condition.to_dict(), "profile": profile}
        _write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    else:
        _write(_first_line_names_profile(condition.explain(), profile) + "\n")
    if condition.satisfiable is None:
        return EXIT_UNKNOWN
    return EXIT_OK if condition.satisfiable else EXIT_FINDINGS


def cmd_txcheck(args: argparse.Namespace) -> int:
    from .transactions import CarTransactionReport, transaction_check
    from .values import plural

    versions = None if args.versions is None else _read_file(args.versions, dict, "versions")
    try:
        report = transaction_check(
            [_load_proposal(p) for p in args.proposals],
            versions=versions,
            state=_load_state(args.state),
            profile=_profile(args),
            **({} if len(args.proposals) == 1 else {"labels": args.proposals}),
        )
    except InputError as err:
        raise (err if err.source else err.with_source(args.versions or "")) from None
    if args.format == "json":
        _write(report.to_json() + "\n")
    elif isinstance(report, CarTransactionReport):
        for conflict in report.conflicts:
            _write(f"{conflict['kind']} [{conflict['key']}]: {conflict['explanation']}\n")
        verdict = "consistent" if report.consistent else "inconsistent"
        _write(f"{verdict}: {plural(len(report.conflicts), 'conflict')} (profile car)\n")
    else:
        for hazard in report.hazards:
            _write(f"{hazard.kind} [{hazard.key}]: {hazard.message}\n")
        count = len(report.hazards)
        proposals = plural(len(report.proposals), "proposal")
        _write(f"{plural(count, 'hazard')} in {proposals} (profile {_profile(args)})\n")
    return EXIT_OK if report.clean else EXIT_FINDINGS


def cmd_policy_check(args: argparse.Namespace) -> int:
    from .api import verify
    from .policy import load_policies
    from .reporters.json import policy_json
    from .reporters.sarif import sarif
    from .reporters.text import policy_text
    from .sources import proposal_input

    source = proposal_input(args.proposal)
    if args.policies is not None:
        loaded = load_policies(args.policies)
    else:  # the nearest .car/policies above the proposal's own file, as verify finds it
        from .config import find_policies

        start = os.path.dirname(os.path.abspath(source.path)) if source.path else os.getcwd()
        folder, _ = find_policies(start)
        if folder is None:
            raise UsageError(
                f"no .car/policies at or above {start}: nothing was checked "
                "(name the policies with --policies DIR)"
            )
        loaded = load_policies(folder)
    if loaded.directory is None or not loaded.rules.count():
        raise UsageError(
            f"{loaded.describe()}: the policy set holds no rule, so nothing was checked"
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
    from .policy import load_policies
    from .policy_analysis import lint_policies

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
        from .values import plural

        warnings = len(findings) - errors
        _write(f"{plural(errors, 'error')}, {plural(warnings, 'warning')}\n")
    return code


def cmd_hook(args: argparse.Namespace) -> int:
    """One hook call: a payload on stdin, the answer on stdout, warnings on stderr."""
    from .hook import run

    return run(args)


def cmd_policy_diff(args: argparse.Namespace) -> int:
    from .policy import load_policies
    from .policy_analysis import policy_diff

    old, new = load_policies(args.old), load_policies(args.new)
    diff = policy_diff(old, new)
    if args.format == "json":
        _write(json.dumps(diff.to_dict(), indent=2) + "\n")
    else:
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
    covers = diff.new_covers_old
    return EXIT_OK if covers else EXIT_UNKNOWN if covers is None else EXIT_FINDINGS


def _gate_options(p: argparse.ArgumentParser, gate_policy: str) -> None:
    """``--gate``, ``--gate-policy`` and ``--approvals``, as :func:`_gated` reads them."""
    p.add_argument(
        "--gate",
        action="store_true",
        help="map the report to allow / require_approval / block (exit 1 unless allow)",
    )
    p.add_argument("--gate-policy", metavar="GATE.json", help=gate_policy)
    p.add_argument(
        "--approvals",
        metavar="LEDGER.jsonl",
        help="settle the gate's approvals against this ledger (implies --gate)",
    )


def _schedules_option(p: argparse.ArgumentParser) -> None:
    from .schedules import SCHEDULES

    p.add_argument(
        "--schedules",
        choices=SCHEDULES,
        default="levels",
        help="check trace rules over the executor's schedules (levels in order, any "
        "interleaving inside one; the default) or over every order the DAG allows",
    )


def _load_tool_module(spec: str) -> Any:
    """``MODULE[:ATTR]``: a dotted module or a ``.py`` file; ATTR defaults to ``TOOLS``."""
    import importlib
    import importlib.util

    module_name, _, attr = spec.partition(":")
    attr = attr or "TOOLS"
    try:
        if module_name.endswith(".py") or os.sep in module_name:
            path = Path(module_name)
            if not path.is_file():
                raise UsageError(f"--tools: no such file {module_name!r}")
            loader_spec = importlib.util.spec_from_file_location(path.stem, path)
            if loader_spec is None or loader_spec.loader is None:
                raise UsageError(f"--tools: cannot import {module_name!r}")
            module = importlib.util.module_from_spec(loader_spec)
            sys.path.insert(0, str(path.resolve().parent))
            loader_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except UsageError:
        raise
    except Exception as err:
        raise UsageError(
            f"--tools: importing {module_name!r} failed: {type(err).__name__}: {err}"
        ) from err
    if not hasattr(module, attr):
        raise UsageError(f"--tools: {module_name!r} has no attribute {attr!r}")
    tools = getattr(module, attr)
    if not (isinstance(tools, Mapping) or callable(tools)):
        raise UsageError(
            f"--tools: {module_name}:{attr} is {type(tools).__name__!r}; expected a mapping "
            "of tool name -> callable, or one dispatch callable"
        )
    return tools


def cmd_run(args: argparse.Namespace) -> int:
    import asyncio
    import signal

    from .executor import Executor
    from .reporters.json import run_json
    from .reporters.text import run_text

    proposal = _load_proposal(args.proposal)
    tools = _load_tool_module(args.tools)
    policies = _policies(args, args.proposal)
    labels, flow_policy = _flow_files(args)
    quiet = args.quiet

    def progress(kind: str, action_id: str | None, data: Any) -> None:
        if quiet:
            return
        if kind == "level_started":
            sys.stderr.write(f"level: {', '.join(data['actions'])}\n")
        elif kind == "level_finished":
            sys.stderr.write(f"  -> {', '.join(data['statuses'])}\n")
        elif kind in ("aborted", "compensated", "compensation_failed"):
            detail = data.get("reason") or data.get("tool") or data.get("error") or ""
            sys.stderr.write(f"{kind}: {action_id or ''} {detail}\n")

    executor = Executor(
        proposal,
        tools,
        schemas=_load_tools(args.schemas),
        initial_state=_load_state(args.state),
        policies=policies,
        event_log=args.events,
        progress=progress,
        profile=_profile(args),
        granted_tier=args.granted,
        ledger=args.ledger,
        labels=labels,
        flow_policy=flow_policy,
    )

    async def run() -> Any:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        if task is not None:
            with contextlib.suppress(NotImplementedError, RuntimeError):  # not on every OS
                loop.add_signal_handler(signal.SIGINT, task.cancel)
        try:
            return await executor.run()
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)

    outcome = asyncio.run(run())
    if args.format == "json":
        _write(run_json(outcome))
    else:
        _write(run_text(outcome))
    statuses = {r.status.value for r in outcome.result.results}
    return EXIT_OK if statuses <= {"succeeded"} else EXIT_FINDINGS


def cmd_dot(args: argparse.Namespace) -> int:
    from .export import to_dot, write
    from .model import ProposalResult
    from .progress import progress

    execution: Any = None
    if args.result is not None:
        data = _read_file(args.result, dict, "result")
        try:  # a run report is a ProposalResult with more keys
            execution = ProposalResult.from_dict(data)
        except InputError as err:
            raise err.with_source(args.result) from None
        if isinstance(data.get("statuses"), dict):  # `run --format json`: `compensated` kept
            execution = data
    proposal = _load_proposal(args.proposal)
    tools, state = _load_tools(args.tools), _load_state(args.state)
    policies = _policies(args, args.proposal)
    risked = None
    if args.risk or args.rates:
        from .risk import risk

        rates = None if args.rates is None else _read_file(args.rates, dict, "rates")
        risked = risk(proposal, state, rates, profile=_profile(args))
    with progress(4, "dot", "steps", show=None if len(proposal.actions) > 200 else False) as bar:
        graph = to_dot(
            proposal,
            tools=tools,
            initial_state=state,
            execution=execution,
            profile=_profile(args),
            policies=policies,
            max_nodes=args.max_nodes,
            progress=bar,
            risk=risked,
        )
        bar.note("render")
        if args.output is None:
            _write(graph.to_string())
        else:
            write(graph, args.output)
        bar.update()
    if len(proposal.actions) > args.max_nodes:
        _note(
            args,
            f"dot: {len(proposal.actions):,} actions, more than --max-nodes {args.max_nodes}: "
            "the picture is summarised (actions with findings first; the title says how)",
        )
    return EXIT_OK


def _codes_arg(text: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """Codes given as ``A,B`` (an option given again adds to it); an unknown one is
    a usage error."""
    if text is None:
        return None
    from .lint import unknown_codes

    given = [text] if isinstance(text, str) else list(text)
    codes = tuple(c.strip() for part in given for c in part.split(",") if c.strip())
    unknown = unknown_codes(codes)
    if unknown:
        raise UsageError(f"unknown code {unknown[0]!r}; `car-verify codes` lists them")
    return codes


def _lint_flow_files(args: argparse.Namespace, config: Any) -> Any:
    """``--labels`` / ``--flow-policy``, the configuration's, else the nearest
    ``.car/tool-labels.json`` and ``.car/flow-policy.json`` (said), unless
    ``--no-labels``."""
    from .config import FLOW_POLICY_FILE, LABELS_FILE, find_car_file

    if args.no_labels:
        return dataclasses.replace(config, labels=None, flow_policy=None, intent=None)
    labels = Path(args.labels).resolve() if args.labels else config.labels
    policy = Path(args.flow_policy).resolve() if args.flow_policy else config.flow_policy
    if labels is None:
        labels, _ = find_car_file(LABELS_FILE)
        if labels is not None:
            _note(args, f"labels: {labels} (--no-labels to skip)")
            if policy is None:
                policy, _ = find_car_file(FLOW_POLICY_FILE)
    if labels is None and policy is not None:
        raise UsageError("a flow policy is checked against tool labels: give --labels too")
    intent = Path(args.intent).resolve() if args.intent else config.intent
    if intent is None:
        from .config import INTENT_FILE

        intent, _ = find_car_file(INTENT_FILE)
        if intent is not None:
            _note(args, f"intent: {intent} (--no-labels to skip)")
    return dataclasses.replace(config, labels=labels, flow_policy=policy, intent=intent)


def cmd_lint(args: argparse.Namespace) -> int:
    from . import lint

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
        from .config import find_policies

        found, _ = find_policies(start.resolve())
        if found is not None:
            config = dataclasses.replace(config, policies=found)
            _note(args, f"policies: {found} (--no-policies to skip)")
    config = _lint_flow_files(args, config)
    progress = False if args.no_progress else None
    paths = args.paths or ["."]
    if args.show_settings:
        return _show_settings(args, _lint_settings(config, config_path, paths))
    if args.fix or args.diff:
        candidates = lint.collect(paths, config).files
        state = None if config.state is None else _load_state(str(config.state))
        chosen = [str(f) for f in candidates if f.suffix.lower() == ".json"]
        others = len(candidates) - len(chosen)
        if others:
            _note(args, f"--fix rewrites .json files only; {others} other files not repaired")
        changed = _fix_files(args, chosen, state, config.profile or "car")
        if args.diff:
            return EXIT_FINDINGS if changed else EXIT_OK
    if paths == ["-"]:  # stdin: linted as a file of its own, named `-`
        report = _lint_stdin(lint, config)
    else:
        report = lint.lint_paths(paths, config, workers=args.workers, progress=progress)
    from .values import plural

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
            f"car-verify: wrote {len(report.findings)} findings to {args.write_baseline}\n"
        )
        return EXIT_OK
    if args.baseline:
        lint.Baseline.read(args.baseline).apply(report)
    _note_unmatched_rules(config, report)
    if args.statistics and args.format in ("text", "json"):
        _write_statistics(args, report.findings, lint.summary_line(report))
    elif args.format == "sarif":
        _write(lint.render_sarif(report, docs_url=_docs_url(args)))
    elif args.format == "text":
        _write(_findings_text(args, report.findings, lint.summary_line(report)))
    else:
        render = {"json": lint.render_json, "github": lint.render_github}[args.format]
        _write(render(report))
    return EXIT_FINDINGS if report.failing(config.fail_on) else EXIT_OK


def _lint_stdin(lint: Any, config: Any) -> Any:
    """``lint -``: the proposal on stdin (JSON, or YAML when it is no JSON), linted
    as a file and reported as ``-``."""
    import tempfile

    from .sources import STDIN_LABEL

    text = sys.stdin.read()
    stripped = text.lstrip()
    suffix = ".json" if stripped[:1] in ("{", "[") or not stripped else ".yaml"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"stdin{suffix}"
        path.write_text(text, encoding="utf-8")
        result = lint.lint_file(path, dataclasses.replace(config, root=Path(folder)))
    label = STDIN_LABEL

    def relabel(issue: Any) -> Any:
        if issue.location is None:
            return issue
        return dataclasses.replace(issue, location=dataclasses.replace(issue.location, path=label))

    result.path = label
    result.findings = [relabel(f) for f in result.findings]
    result.suppressed = [relabel(f) for f in result.suppressed]
    return lint.LintReport([result], config)


def _path_text(path: Sequence[str], ends: int = 12) -> str:
    """A path as ``a -> b -> c``; a long one (a loop walked 100,000 times) with its
    middle said as a count (the JSON output keeps it whole)."""
    if len(path) <= 2 * ends + 1:
        return " -> ".join(path)
    hidden = len(path) - 2 * ends
    return (
        " -> ".join(path[:ends])
        + f" -> ... ({hidden:,} more stages) -> "
        + " -> ".join(path[-ends:])
    )


def _note_unmatched_rules(config: Any, report: Any) -> None:
    """A selected rule name (``trace_rule:tested``) is checked only against the rules
    loaded; one that matched no finding of any file may be misspelled: said (even
    under ``--quiet``), with the rules' names when the policies can be read."""
    named = [c for c in config.select or () if ":" in c and not c.endswith(":")]
    if not named:
        return
    seen = {f.code for r in report.files for f in (*r.findings, *r.suppressed)}
    seen.update(f.code for f in report.baselined)
    known: list[str] = []
    if config.policies is not None:
        with contextlib.suppress(CarVerifyError, OSError):
            from .policy_analysis import rule_names

            known = rule_names(config.policies)
    for code in named:
        if code in seen or code in known:
            continue
        import difflib

        near = difflib.get_close_matches(code, known, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        sys.stderr.write(
            f"car-verify: warning: --select {code}: no rule of that name was loaded and no "
            f"finding has it{hint}; `car-verify policy lint` lists the rules\n"
        )


def _write_statistics(args: argparse.Namespace, issues: Any, summary: str) -> None:
    """``--statistics``: text (as ruff prints it) or JSON ``[{code, severity, count}]``."""
    if args.format == "json":
        from collections import Counter

        counts = Counter((i.code, i.severity.value) for i in issues)
        rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        doc = [{"code": c, "severity": v, "count": n} for (c, v), n in rows]
        _write(json.dumps(doc, indent=2) + "\n")
    else:
        _write(_findings_text(args, issues, summary))


def _lint_settings(config: Any, source: Path | None, paths: list[str]) -> dict[str, Any]:
    """What ``lint`` would run with, every path resolved (``--show-settings``)."""
    settings: dict[str, Any] = {"config": None if source is None else str(source), "paths": paths}
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


def cmd_codes(args: argparse.Namespace) -> int:
    from .codes import CODES

    if args.code is not None:
        from .docgen import explain_code

        text = explain_code(args.code)
        if text is None:
            raise UsageError(f"unknown code {args.code!r}; 'car-verify codes' lists them")
        _write(text)
        return EXIT_OK
    codes = CODES  # verify's, then lint's own (about files)
    if args.format == "json":
        doc = [
            {
                "code": c.name,
                "severity": {"strict": c.column("strict"), "car": c.column("car")},
                "tier": c.tier.value,
                "blocks": c.blocks,
                "summary": c.summary,
            }
            for c in codes.values()
        ]
        _write(json.dumps(doc, indent=2) + "\n")
    else:
        width = max(len(c) for c in codes)
        for c in codes.values():
            severities = f"{c.column('strict'):<7}  {c.column('car'):<7}"
            _write(f"{c.name:<{width}}  {severities}  {c.tier.value:<18}  {c.summary}\n")
    return EXIT_OK


def cmd_passes(args: argparse.Namespace) -> int:
    from .registry import available_passes

    passes = available_passes()
    if args.format == "json":
        doc = [
            {
                "name": name,
                "tier": cls.tier.value,
                "verifies": cls.verifies,
                "cannot_verify": cls.cannot_verify,
                "requires": sorted(cls.requires),
                "codes": list(cls.codes),
                "default": cls.default,
                "preserves": sorted(cls.preserves),
            }
            for name, cls in passes.items()
        ]
        _write(json.dumps(doc, indent=2) + "\n")
        return EXIT_OK
    for name, cls in passes.items():
        needs = f" (needs: {', '.join(sorted(cls.requires))})" if cls.requires else ""
        codes = ", ".join(cls.codes)
        if cls.dynamic_codes:  # a policies pass reports under the names of the rules
            codes = ", ".join([*cls.codes, "the name of each rule (deny_tool:rm, ...)"])
        _write(f"{name}: {cls.verifies}{needs}\n    codes: {codes}\n")
    return EXIT_OK


def _parser() -> _Parser:
    parser = _Parser(
        prog="car-verify",
        description="Check Agent IR action proposals before they run.",
    )
    from ._version import __version__

    parser.add_argument("--version", action="version", version=f"car-verify {__version__}")
    profiled = _Parser(add_help=False)
    profiled.add_argument(
        "--profile",
        choices=("car", "strict"),
        help="car: the runtime's own answers (the default); strict: SEMANTICS sections 1-8 "
        f"(also ${PROFILE_ENV} or `profile` in the configuration)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser(
        "verify", parents=[profiled], help="run the analysis passes and report issues"
    )
    p.add_argument(
        "proposals",
        metavar="PROPOSAL",
        nargs="+",
        help="proposal files (JSON, or YAML by the suffix), or - for stdin",
    )
    p.add_argument("--state", metavar="STATE.json", help="initial state (a JSON object)")
    p.add_argument("--tools", metavar="TOOLS.json", help="tool registry (an array of ToolSchema)")
    p.add_argument("--max-actions", type=_non_negative, metavar="N", help="action budget")
    p.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text")
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
    p.add_argument("--policies", metavar="DIR", help="policy directory (.car/policies)")
    p.add_argument(
        "--no-policies",
        action="store_true",
        help="do not look for .car/policies (found by walking up to the repository root)",
    )
    _schedules_option(p)
    _labels_options(p)
    p.set_defaults(run=cmd_verify)

    p = sub.add_parser(
        "simulate", parents=[profiled], help="print the end state the executor would leave"
    )
    p.add_argument(
        "proposal", metavar="PROPOSAL", help="proposal file (JSON or YAML), or - for stdin"
    )
    p.add_argument("--state", metavar="STATE.json", help="initial state (a JSON object)")
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--trace", action="store_true", help="print state and per-action trace as JSON"
    )
    group.add_argument("--explain", action="store_true", help="print the trace as readable text")
    p.add_argument(
        "--format",
        choices=("json", "text"),
        default="json",
        help="json: the end state (the default; with --trace, the trace too); "
        "text: the trace as readable text (as --explain)",
    )
    p.set_defaults(run=cmd_simulate)

    p = sub.add_parser(
        "equivalent", parents=[profiled], help="do two proposals leave the same state?"
    )
    p.add_argument("a", metavar="A", help="first proposal (or -)")
    p.add_argument("b", metavar="B", help="second proposal")
    p.add_argument("--states", metavar="STATES.json", help="probe states (sampled method)")
    p.add_argument(
        "--method",
        choices=("auto", "sampled", "z3"),
        default="auto",
        help="auto (default): z3 where it can model the plans, else sampled, which is "
        "then unknown (exit 3) when the probes agree",
    )
    _timeout_option(p)
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=cmd_equivalent)

    p = sub.add_parser(
        "risk", parents=[profiled], help="how likely the plan reaches its goal when tools fail"
    )
    p.add_argument(
        "proposal", metavar="PROPOSAL", help="proposal file (JSON or YAML), or - for stdin"
    )
    p.add_argument("--state", metavar="STATE.json", help="initial state (a JSON object)")
    p.add_argument("--rates", metavar="RATES.json", help="tool name -> success rate in [0, 1]")
    p.add_argument(
        "--history",
        metavar="PATH",
        action="append",
        help="event logs (run --events) and ProposalResult files with the proposals they "
        "ran (files, or folders of *.jsonl / *.json): each tool's rate "
        "(succeeded+1)/(dispatched+2); --rates wins per tool (repeatable)",
    )
    p.add_argument("--goal", metavar="GOAL.json", help="a GoalCondition (state_predicate, ...)")
    p.add_argument("--config", metavar="CONFIG.json", help="{trials, seed, ...}")
    p.add_argument("--trials", type=_positive, metavar="N", help="sampled trials (1000)")
    p.add_argument("--seed", type=_non_negative, metavar="N", help="the sampling seed")
    p.add_argument("--default-rate", type=float, metavar="P", help="rate of an unlisted tool")
    p.add_argument("--retries", type=_non_negative, metavar="N", help="retry attempts per call")
    p.add_argument(
        "--method",
        choices=("auto", "exact", "sampled"),
        default="auto",
        help="auto (default): exact when it fits its budget, else sampled (and said)",
    )
    p.add_argument(
        "--sensitivity",
        action="store_true",
        help="exact d p(goal) / d rate per tool (two exact passes per tool call)",
    )
    p.add_argument(
        "--failure-behavior",
        action="store_true",
        help="model each action's failure_behavior (abort stops the run, retry draws "
        "again up to max_retries, skip goes on); the runtime does not",
    )
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=cmd_risk)

    p = sub.add_parser(
        "workflow",
        parents=[profiled],
        help="a workflow graph: dead ends, traps, unreachable stages; precedes policies",
    )
    p.add_argument(
        "graph",
        metavar="GRAPH.json",
        nargs="?",
        help="{entry, terminals, stages, edges}, or the runtime's workflow format "
        "(default: each .car/workflows/*.json, with .car/workflow-policies.json)",
    )
    p.add_argument(
        "--policies", metavar="POLICIES.json", help="[{kind: precedes, earlier, later, name?}]"
    )
    p.add_argument(
        "--rule",
        metavar="RULE",
        action="append",
        help="a trace rule checked over every path from the entry, loops included "
        "(entering a stage is a call of its name; repeatable)",
    )
    p.add_argument(
        "-o", "--output", metavar="OUT.svg", help="draw the graph (.dot/.svg/.png), the witness red"
    )
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=cmd_workflow)

    p = sub.add_parser(
        "check-plan",
        parents=[profiled],
        help="a STRIPS plan: unmet preconditions, an unreached goal",
    )
    p.add_argument("request", metavar="REQUEST.json", help="{initial, steps, goal}, or - for stdin")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=cmd_check_plan)

    p = sub.add_parser(
        "goal", parents=[profiled], help="evaluate a goal condition on gathered inputs"
    )
    p.add_argument("request", metavar="REQUEST.json", help="{condition, inputs}, or - for stdin")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=cmd_goal)

    p = sub.add_parser(
        "receipts",
        parents=[profiled],
        help="a model's claims about tool use against the receipts",
    )
    p.add_argument("claims", metavar="CLAIMS.json", help="[{kind, tool, call_id?, count?, text?}]")
    p.add_argument(
        "receipts", metavar="RECEIPTS.json", help="[{tool, call_id?, ok?, result_count?}]"
    )
    p.add_argument(
        "--window-incomplete",
        action="store_true",
        help="the receipts were trimmed: a claim without one is ungroundable, not fabricated",
    )
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=cmd_receipts)

    p = sub.add_parser(
        "concurrency",
        parents=[profiled],
        help="concurrency anomalies of agents' ops (stale generation, phantom tools, ...) "
        "and serializability",
    )
    p.add_argument(
        "ops",
        metavar="OPS.json",
        help="an array of AgentOps {id, read_set, write_set, read_at, commit_at, ...}, or a "
        "proposal (its actions, a level per step of time)",
    )
    p.add_argument("--gate", action="store_true", help="remediations and dispositions")
    p.add_argument(
        "--gate-policy",
        metavar="GATE.json",
        help="{abort_at_or_below, require_approval_at_or_below} (levels l0..l4)",
    )
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=cmd_concurrency)

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
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=cmd_intent)

    p = sub.add_parser(
        "flow",
        parents=[profiled],
        help="information flow: sensitive data to sinks, untrusted data to consequential "
        "calls, forbidden tool orderings",
    )
    p.add_argument(
        "proposal", metavar="PROPOSAL", help="proposal file (JSON or YAML), or - for stdin"
    )
    p.add_argument(
        "--labels",
        metavar="LABELS.json",
        help="tool -> {capability, confidentiality, trust, sink, declassifier} "
        "(default: the nearest .car/tool-labels.json)",
    )
    p.add_argument(
        "--policy", metavar="POLICY.json", help="{min_confidential, forbidden_sequences}"
    )
    _gate_options(p, "{on_sensitive_to_sink, on_forbidden_sequence}")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--approve", metavar="FINGERPRINT", help="record an approval of a hazard")
    who.add_argument("--reject", metavar="FINGERPRINT", help="record a rejection of a hazard")
    p.add_argument("--reviewer", metavar="NAME", help="who decided (with --approve/--reject)")
    p.add_argument("--reason", metavar="TEXT", help="why (with --approve/--reject)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=cmd_flow)

    p = sub.add_parser(
        "audit",
        parents=[profiled],
        help="audit a corpus of agent trajectories into Parquet tables of findings",
    )
    p.add_argument(
        "sources",
        metavar="SOURCE",
        nargs="+",
        help="files, folders or globs (.json, .jsonl, .gz, .parquet; chat transcripts, "
        "ATIF, tau-bench runs, proposals)",
    )
    p.add_argument("-o", "--output", metavar="OUT", required=True, help="the output folder")
    p.add_argument("--policies", metavar="DIR", help="policy directory (rules and trace rules)")
    p.add_argument(
        "--compare-policies",
        metavar="DIR",
        help="replay: what replacing --policies with these would newly block, newly allow "
        "and keep blocking, per call (replay.parquet)",
    )
    p.add_argument("--labels", metavar="LABELS.json", help="tool labels: the flow checks too")
    p.add_argument("--flow-policy", metavar="POLICY.json", help="the flow policy for --labels")
    p.add_argument("--workers", type=_positive, default=1, metavar="N", help="processes (1)")
    p.add_argument(
        "--engine",
        choices=("local", "ray", "dask"),
        default="local",
        help="who runs the shards: a local process pool (default), Ray Data, a Dask bag",
    )
    p.add_argument("--address", metavar="ADDR", help="an existing Ray cluster (--engine ray)")
    p.add_argument("--scheduler", metavar="ADDR", help="an existing Dask scheduler (--engine dask)")
    p.add_argument(
        "--shard-size", type=_positive, default=1000, metavar="N", help="trajectories per shard"
    )
    p.add_argument(
        "--budget",
        type=_seconds,
        default=10.0,
        metavar="SECONDS",
        help="per trajectory; past it the row says unknown (default 10)",
    )
    p.add_argument("--top", type=_positive, default=15, metavar="N", help="codes in the summary")
    p.add_argument(
        "--report", metavar="REPORT.html", help="a self-contained HTML report (plots: matplotlib)"
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="start over: drop the shards a previous audit left in OUT (else they are reused)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(run=cmd_audit)

    p = sub.add_parser(
        "permissions",
        parents=[profiled],
        help="who may authorize each action (tiers), whether it can be undone, and the gate",
    )
    p.add_argument(
        "proposal", metavar="PROPOSAL", help="proposal file (JSON or YAML), or - for stdin"
    )
    p.add_argument(
        "--granted",
        choices=("read_only", "sandbox_edit", "full_access"),
        help="gate each action against this standing tier (exit 1 when any is held)",
    )
    p.add_argument("--ledger", metavar="FILE", help="the approval ledger (JSON lines)")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--approve", metavar="ACTION", help="record an approval of ACTION")
    who.add_argument("--reject", metavar="ACTION", help="record a rejection of ACTION")
    p.add_argument("--reviewer", metavar="NAME", help="who decided (with --approve/--reject)")
    p.add_argument("--reason", metavar="TEXT", help="why (with --approve/--reject)")
    p.add_argument("--evidence", metavar="TEXT", help="what the decision rests on")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=cmd_permissions)

    p = sub.add_parser("optimize", parents=[profiled], help="prune phantom state_dependencies")
    p.add_argument(
        "proposal", metavar="PROPOSAL", help="proposal file (JSON or YAML), or - for stdin"
    )
    p.add_argument("--state", metavar="STATE.json", help="initial state (a JSON object)")
    p.add_argument("--diff", action="store_true", help="show what was removed (or kept) and why")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=cmd_optimize)

    p = sub.add_parser(
        "wp", parents=[profiled], help="the condition under which the actions run unblocked"
    )
    p.add_argument(
        "proposal", metavar="PROPOSAL", help="proposal file (JSON or YAML), or - for stdin"
    )
    p.add_argument("--action", metavar="ID", help="one action instead of every action")
    _timeout_option(p)
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=cmd_wp)

    p = sub.add_parser(
        "txcheck", parents=[profiled], help="transactional hazards within or across proposals"
    )
    p.add_argument("proposals", metavar="PROPOSAL", nargs="+", help="one or more proposals")
    p.add_argument("--versions", metavar="V.json", help="current version of each key")
    p.add_argument("--state", metavar="S.json", help="current state (for belief divergence)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=cmd_txcheck)

    p = sub.add_parser("policy", help="check a proposal against policies, or lint them")
    policy = p.add_subparsers(dest="policy_command", metavar="ACTION", parser_class=_Parser)
    policy.required = True
    q = policy.add_parser(
        "check", parents=[profiled], help="report every policy violation of a proposal"
    )
    q.add_argument(
        "proposal", metavar="PROPOSAL", help="proposal file (JSON or YAML), or - for stdin"
    )
    q.add_argument(
        "--policies",
        metavar="DIR",
        help="policy directory (default: the nearest .car/policies walking up)",
    )
    q.add_argument("--state", metavar="STATE.json", help="state for require_state rules")
    q.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    _schedules_option(q)
    _color_option(q)
    q.set_defaults(run=cmd_policy_check)
    q = policy.add_parser(
        "lint", parents=[profiled], help="load a policy directory and report what it holds"
    )
    q.add_argument("directory", metavar="DIR", help="policy directory (or a project holding .car)")
    q.add_argument("--tools", metavar="REGISTRY", help="tool registry: warn on names no tool has")
    q.add_argument("--format", choices=("text", "json"), default="text")
    q.set_defaults(run=cmd_policy_lint)
    q = policy.add_parser(
        "diff",
        parents=[profiled],
        help="does NEW deny everything OLD denies? counterexample calls either way",
    )
    q.add_argument("old", metavar="OLD", help="the policy directory before")
    q.add_argument("new", metavar="NEW", help="the policy directory after")
    q.add_argument("--format", choices=("text", "json"), default="text")
    q.set_defaults(run=cmd_policy_diff)

    p = sub.add_parser(
        "hook",
        help="a coding agent's pre-tool-use hook (Claude Code, Codex): the policies and "
        "trace rules before each call",
    )
    from .hook import add_arguments as add_hook_arguments

    add_hook_arguments(p)
    p.set_defaults(run=cmd_hook)

    p = sub.add_parser(
        "run", parents=[profiled], help="execute a proposal behind the verify passes"
    )
    p.add_argument(
        "proposal", metavar="PROPOSAL", help="proposal file (JSON or YAML), or - for stdin"
    )
    p.add_argument(
        "--tools",
        metavar="MODULE[:ATTR]",
        required=True,
        help="a mapping name -> callable, or one dispatch callable (default ATTR: TOOLS)",
    )
    p.add_argument(
        "--schemas", metavar="TOOLS.json", help="tool schemas (validation, caching, rate limits)"
    )
    p.add_argument("--state", metavar="STATE.json", help="initial state (a JSON object)")
    p.add_argument("--policies", metavar="DIR", help="policy directory (.car/policies)")
    p.add_argument("--events", metavar="FILE", help="append the event log (JSON lines) to FILE")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    p.add_argument(
        "--no-policies",
        action="store_true",
        help="do not look for .car/policies (found by walking up to the repository root)",
    )
    p.add_argument(
        "--granted",
        choices=("read_only", "sandbox_edit", "full_access"),
        help="the standing permission tier: an action it does not cover, or any "
        "full_access one, not approved in --ledger holds back the whole proposal",
    )
    p.add_argument(
        "--ledger", metavar="FILE", help="the approval ledger --granted and the flow gate consult"
    )
    p.add_argument(
        "--labels",
        metavar="LABELS.json",
        help="tool labels: the flow gate holds back a proposal whose hazards it blocks or "
        "the ledger has not approved (default: .car/tool-labels.json)",
    )
    p.add_argument("--flow-policy", metavar="POLICY.json", help="the flow gate's flow policy")
    p.add_argument("--no-labels", action="store_true", help="do not look for .car/tool-labels.json")
    p.set_defaults(run=cmd_run)

    p = sub.add_parser(
        "dot", parents=[profiled], help="draw the DAG: levels, edges, conflicts, findings"
    )
    p.add_argument(
        "proposal", metavar="PROPOSAL", help="proposal file (JSON or YAML), or - for stdin"
    )
    p.add_argument("--state", metavar="STATE.json", help="initial state (a JSON object)")
    p.add_argument("--tools", metavar="TOOLS.json", help="tool registry (an array of ToolSchema)")
    p.add_argument(
        "--result",
        metavar="RESULT.json",
        help="a ProposalResult, or `run --format json`'s report: colour by status "
        "(compensated after a rollback)",
    )
    p.add_argument(
        "--max-nodes",
        metavar="N",
        type=_positive,
        default=250,
        help="past N actions, summarise: levels in bands, actions with findings first "
        "(default 250)",
    )
    p.add_argument(
        "--risk",
        action="store_true",
        help="colour by each action's chance that its effects land (car-verify risk)",
    )
    p.add_argument(
        "--rates", metavar="RATES.json", help="tool success rates for --risk (implies it)"
    )
    p.add_argument(
        "-o", "--output", metavar="OUT", help="OUT.dot, OUT.svg or OUT.png (default: DOT on stdout)"
    )
    p.add_argument("--policies", metavar="DIR", help="policy directory (.car/policies)")
    p.add_argument(
        "--no-policies",
        action="store_true",
        help="do not look for .car/policies (found by walking up to the repository root)",
    )
    p.set_defaults(run=cmd_dot)

    p = sub.add_parser("lint", parents=[profiled], help="lint the proposal files of a repository")
    p.add_argument("paths", metavar="PATH", nargs="*", help="files and folders (default: .)")
    p.add_argument("--config", metavar="FILE", help="pyproject.toml or .car/verify.toml to use")
    p.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text")
    _docs_url_option(p)
    _report_options(p)
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
    p.add_argument("--tools", metavar="TOOLS.json", action="append", help="tool registry")
    p.add_argument("--state", metavar="STATE.json", help="initial state (a JSON object)")
    p.add_argument("--max-actions", type=_non_negative, metavar="N", help="action budget")
    p.add_argument("--policies", metavar="DIR", help="policy directory (.car/policies)")
    p.add_argument("--repeat-threshold", type=_positive, metavar="N", default=None)
    p.add_argument("--baseline", metavar="FILE", help="leave out the findings recorded in FILE")
    p.add_argument("--write-baseline", metavar="FILE", help="record today's findings in FILE")
    p.add_argument("--workers", type=_positive, metavar="N", help="worker processes")
    _fix_options(p)
    _timeout_option(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--no-policies",
        action="store_true",
        help="do not look for .car/policies (found by walking up to the repository root)",
    )
    _labels_options(p)
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

    p = sub.add_parser("codes", parents=[profiled], help="list every finding code, or explain one")
    p.add_argument("code", nargs="?", help="explain this code: what, why, how to fix")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=cmd_codes)

    p = sub.add_parser("passes", parents=[profiled], help="list the analysis passes")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(run=cmd_passes)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    args: argparse.Namespace | None = None
    from .sources import reset_stdin

    reset_stdin()
    try:
        args = _parser().parse_args(argv)
        run: Callable[[argparse.Namespace], int] = args.run
        target = getattr(args, "output_file", None)
        if target is None:
            return _reported(args, run(args))
        captured = io.StringIO()
        with contextlib.redirect_stdout(captured):
            code = run(args)
        try:  # only a finished report is written: never half of one
            Path(target).write_text(captured.getvalue(), encoding="utf-8")
        except OSError as err:
            raise UsageError(f"--output-file: {target}: {err.strerror or err}") from None
        return _reported(args, code)
    except SystemExit as exit_:  # --help / --version
        return int(exit_.code or 0)
    except CarVerifyError as err:
        if isinstance(err, InputError) and is_too_deep(err) and args is not None:
            err = _locate_deep(args) or err
        sys.stderr.write(f"car-verify: error: {one_line(str(err))}\n")
        if isinstance(err, _ArgumentError):  # as ruff and mypy do: the usage, a hint
            sys.stderr.write(f"{err.usage}\n{err.hint}\n")
        return EXIT_USAGE
    except RecursionError:  # what the API entry points report as TOO_DEEP, elsewhere
        found = None if args is None else _locate_deep(args)
        sys.stderr.write(f"car-verify: error: {found or TOO_DEEP}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("car-verify: interrupted\n")
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as err:  # never a traceback for users
        if isinstance(err, OSError) and err.filename is not None:
            # A file the user named that cannot be written (an output, the event log).
            sys.stderr.write(f"car-verify: error: {err.filename}: {err.strerror or err}\n")
            return EXIT_USAGE
        if os.environ.get("CAR_VERIFY_DEBUG"):
            raise
        sys.stderr.write(
            f"car-verify: internal error: {type(err).__name__}: {one_line(str(err))}\n"
        )
        return EXIT_USAGE


def _locate_deep(args: argparse.Namespace) -> InputError | None:
    """:data:`TOO_DEEP`, naming the input file and the place of its deepest value
    (the inputs are read again: this runs only when something was too deep)."""
    from .model import read_json
    from .values import deepest

    names: list[str] = []
    for attr in ("proposal", "a", "b", "proposals", "state", "tools"):
        value = getattr(args, attr, None)
        names.extend(value if isinstance(value, list) else [value] if value else [])
    worst: tuple[int, str, list[str | int]] | None = None
    for name in names:
        if name == "-":
            continue
        try:
            path, depth = deepest(read_json(Path(name), name=name))
        except (CarVerifyError, OSError):
            continue
        if worst is None or depth > worst[0]:
            worst = (depth, name, path)
    if worst is None:
        return None
    depth, name, path = worst
    return too_deep(path, depth, source=name)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
