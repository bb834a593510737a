"""What the commands share: reading inputs, the profile, writing reports, the
options more than one command takes."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from ..base.errors import InputError, UsageError

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
    from ..reporters.sarif import DOCS_URL_ENV

    return getattr(args, "docs_url", None) or os.environ.get(DOCS_URL_ENV) or None


def _read_file(name: str, kind: type, what: str) -> Any:
    """A JSON file (or ``-``) that must hold a value of ``kind``; errors name the file."""
    from .sources import json_input

    return json_input(name, kind, what)


def _profile(args: argparse.Namespace) -> str:
    """The profile to run: ``--profile``, else ``$CAR_VERIFY_PROFILE``, else the nearest
    configuration's ``profile``, else ``car`` (docs/semantics.md §9), resolved once per
    run by :func:`car_verify.semantics.resolve_profile` for every command."""
    resolved = getattr(args, "_resolved_profile", None)
    if resolved is None:
        from ..semantics.profiles import resolve_profile

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
        help="apply the repairs car-verify proves safe (phantom state_dependencies; an "
        "ordering that removes a write conflict, as the profile orders actions, checked "
        "with z3), say each",
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
    from ..reporters.text import color_wanted

    return color_wanted(getattr(args, "color", "auto"), sys.stdout)


def _findings_text(args: argparse.Namespace, issues: Any, summary: str | None) -> str:
    """The findings as text under ``--statistics``, ``--quiet`` and ``--color``."""
    from ..reporters.text import lines, statistics

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


def _policies(args: argparse.Namespace, proposal: str | None = None) -> Any:
    """The policies to apply to the proposal file ``proposal``: ``--policies DIR``,
    else the nearest ``.car/policies`` walking up from the file's own folder (the
    working directory for stdin) to the repository root, as ruff finds its
    configuration, unless ``--no-policies``. What was loaded, or that none was
    found, is said on stderr once per folder."""
    from ..base.config import find_policies

    if getattr(args, "no_policies", False):
        return None
    if getattr(args, "policies", None) is not None:
        from ..rules.policy import load_policies

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
    from ..rules.policy import load_policies  # only when there are policies to load

    loaded = load_policies(folder)
    said[folder] = loaded
    _note(args, f"policies: {loaded.describe()} (--no-policies to skip)")
    return loaded


def _flow_files(args: argparse.Namespace) -> tuple[Any, Any]:
    """Tool labels and a flow policy: ``--labels`` / ``--flow-policy``, else the
    nearest ``.car/tool-labels.json`` and ``.car/flow-policy.json`` (said on stderr),
    unless ``--no-labels``."""
    from ..base.config import FLOW_POLICY_FILE, LABELS_FILE, find_car_file

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
        from ..plan.flow import parse_labels, parse_policy

        return parse_labels(labels), parse_policy(policy)


def _fix_files(args: argparse.Namespace, names: Sequence[str], state: Any, profile: str) -> bool:
    """``--fix`` / ``--diff``: repair each JSON file named (written back, or shown as a
    unified diff), saying what was repaired, declined and not attempted. Whether
    anything changed."""
    from ..deciders.fix import dump_like, fix_document, unified_diff
    from ..ir.model import read_json

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


EXIT_UNKNOWN = 3


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


def _gated(args: argparse.Namespace, report: Any, gate: Any, enforce: Any) -> tuple[Any, Any]:
    """A report's gate decision (``--gate``, ``--gate-policy``) and, with
    ``--approvals LEDGER``, its enforcement against the recorded decisions."""
    if not (args.gate or args.ledger is not None):
        return None, None
    policy = None if args.gate_policy is None else _read_file(args.gate_policy, dict, "gate policy")
    decision = gate(report, policy)
    if args.ledger is None:
        return decision, None
    from ..plan.permissions import Ledger

    return decision, enforce(decision, Ledger(args.ledger))


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


def _gate_options(p: argparse.ArgumentParser, gate_policy: str) -> None:
    """``--gate``, ``--gate-policy`` and ``--approvals``, as :func:`_gated` reads them."""
    p.add_argument(
        "--gate",
        action="store_true",
        help="map the report to allow / require_approval / block (exit 1 unless allow)",
    )
    p.add_argument("--gate-policy", metavar="GATE.json", help=gate_policy)
    ledger_option(p, "settle the gate's approvals against this ledger (implies --gate)")


def _schedules_option(p: argparse.ArgumentParser) -> None:
    from ..base.schedules import SCHEDULES

    p.add_argument(
        "--schedules",
        choices=SCHEDULES,
        default="levels",
        help="check trace rules over the executor's schedules (levels in order, any "
        "interleaving inside one; the default) or over every order the DAG allows",
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


# --- the arguments more than one command takes, each declared here once ---------------------

#: What a proposal argument is, for every command that reads one.
PROPOSAL_HELP = "proposal file (JSON or YAML), or - for stdin"


def proposal_argument(p: argparse.ArgumentParser, *, many: bool = False) -> None:
    """The proposal (``proposal``), or with ``many`` one or more (``proposals``)."""
    if many:
        p.add_argument(
            "proposals", metavar="PROPOSAL", nargs="+", help=PROPOSAL_HELP + " (one or more)"
        )
    else:
        p.add_argument("proposal", metavar="PROPOSAL", help=PROPOSAL_HELP)


def state_option(p: argparse.ArgumentParser, help: str = "initial state (a JSON object)") -> None:
    """``--state STATE.json``."""
    p.add_argument("--state", metavar="STATE.json", help=help)


def tools_option(p: argparse.ArgumentParser, *, many: bool = False) -> None:
    """``--tools TOOLS.json``: the tool registry (an array of ToolSchema), the same
    for every command; with ``many``, repeatable (merged)."""
    if many:
        p.add_argument(
            "--tools", metavar="TOOLS.json", action="append", help="tool registry (repeatable)"
        )
    else:
        p.add_argument(
            "--tools", metavar="TOOLS.json", help="tool registry (an array of ToolSchema)"
        )


def policies_option(
    p: argparse.ArgumentParser,
    help: str = "policy directory (default: the nearest .car/policies walking up)",
    *,
    lookup: bool = True,
) -> None:
    """``--policies DIR`` and, where the command looks for ``.car/policies`` itself
    (``lookup``), ``--no-policies``."""
    p.add_argument("--policies", metavar="DIR", help=help)
    if lookup:
        p.add_argument(
            "--no-policies",
            action="store_true",
            help="do not look for .car/policies (found by walking up to the repository root)",
        )


def format_option(
    p: argparse.ArgumentParser,
    choices: Sequence[str] = ("text", "json"),
    default: str = "text",
    help: str | None = None,
) -> None:
    """``--format`` (also ``--output-format``, as ruff spells it)."""
    p.add_argument(
        "--format", "--output-format", dest="format", choices=choices, default=default, help=help
    )


def ledger_option(p: argparse.ArgumentParser, help: str) -> None:
    """``--ledger LEDGER.jsonl`` (also ``--approvals``): the approval ledger."""
    p.add_argument("--ledger", "--approvals", dest="ledger", metavar="LEDGER.jsonl", help=help)


def emit(args: argparse.Namespace, doc: Any, text: Callable[[], None]) -> None:
    """A command's report in the ``--format`` chosen: ``doc`` as indented JSON
    for ``json``, else ``text()`` writes the readable form. (A command with a wire
    format of its own, SARIF or a result's ``to_json``, writes it through its
    reporter.)"""
    if args.format == "json":
        _write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    else:
        text()


def command_tree(parser: argparse.ArgumentParser, prefix: str = "car-verify") -> list[Any]:
    """Every command under ``parser`` (``car-verify policy check``), its parser and its
    one-line help: the one declaration of the commands, read (by the reference and
    the MCP server's tool descriptions)."""
    found: list[Any] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                nested = command_tree(sub, f"{prefix} {name}")
                found += nested or [(f"{prefix} {name}", sub, helps.get(name, ""))]
    return found
