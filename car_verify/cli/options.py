"""What the commands share, declared once: the options several commands take, the
readers of their inputs, the profile of a run and the writing of a report.

Each command module (:mod:`car_verify.cli.verify`, ...) declares its parser with
the functions here and imports them by these names. An option a command shares
with another is declared by one function of this module, so it has one name, one
value (metavar, type) and one meaning in every command: ``--state STATE.json`` is
the initial state everywhere, ``--policies DIR`` a policy directory everywhere,
``--format`` one of the reporters' names (:data:`car_verify.reporters.formats.FORMATS`)
everywhere. An option whose name meant two things was renamed in one command; its
old spelling there still works and says so on stderr (:func:`renamed_option`).

A command writes its report through :func:`emit`: the :class:`Report` it built,
in the ``--format`` chosen, by the reporter of that name. No command branches on
the format.

Start-up matters (a pre-commit hook pays it on every commit): this module imports
the standard library and two small modules of the package; everything a command
needs to do its work is imported when it runs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeAlias, TypeVar

from ..base.errors import InputError, UsageError
from ..reporters.formats import FORMATS, Report

if TYPE_CHECKING:
    from ..base.findings import Issue
    from ..base.values import JSONValue
    from ..ir.model import ActionProposal
    from ..plan.flow import FlowPolicy, Label
    from ..plan.permissions import GateDecision, Ledger
    from ..rules.policy import LoadedPolicies
    from ..rules.tools import ToolRegistry
    from ..semantics import ProfileLike
    from ..semantics.profiles import Profile

__all__ = [
    "DOCS_URL_ENV",
    "EXIT_FINDINGS",
    "EXIT_OK",
    "EXIT_UNKNOWN",
    "EXIT_USAGE",
    "PROPOSAL_HELP",
    "ArgumentError",
    "CommandTree",
    "Parser",
    "Report",
    "Settled",
    "Subcommands",
    "color",
    "color_option",
    "command_tree",
    "counted",
    "decision_options",
    "diff_option",
    "docs_url",
    "docs_url_option",
    "emit",
    "findings_text",
    "fix_files",
    "fix_options",
    "flow_files",
    "flow_policy_option",
    "format_option",
    "gate_code",
    "gate_options",
    "gate_text",
    "gated",
    "gated_doc",
    "granted_option",
    "labels_option",
    "labels_options",
    "ledger_option",
    "load_json",
    "load_proposal",
    "load_state",
    "load_tools",
    "max_actions_option",
    "max_states_option",
    "method_option",
    "named_inputs",
    "no_labels_option",
    "no_progress_option",
    "non_negative",
    "note",
    "output_option",
    "policies_for",
    "policies_option",
    "positive",
    "profile_option",
    "proposal_argument",
    "quiet_option",
    "rates_option",
    "renamed_option",
    "repeat_threshold_option",
    "report_options",
    "reported",
    "run_profile",
    "schedules_option",
    "seconds",
    "show_settings",
    "state_option",
    "timeout_ms",
    "timeout_option",
    "tools_option",
    "with_profile",
    "workers_option",
    "write",
]

# --- exit codes and the parser ----------------------------------------------------------

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_UNKNOWN = 0, 1, 2, 3


class ArgumentError(UsageError):
    """A command line argparse refuses: said with the command's usage and a hint."""

    def __init__(self, message: str, usage: str, prog: str) -> None:
        super().__init__(message)
        self.usage = usage.strip()
        self.hint = f"Try '{prog} --help' for more."


class Parser(argparse.ArgumentParser):
    """The parser of the command line and of each command: an argument it refuses
    is an :class:`ArgumentError` (exit 2), never a ``SystemExit`` from inside. A
    misspelt command or option gets the nearest one (``did you mean 'verify'?``),
    and an argument a command does not take is refused with that command's usage,
    not the top level's."""

    def error(self, message: str) -> NoReturn:
        raise ArgumentError(self._suggest(message), self.format_usage(), self.prog)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and " " in self.prog:  # a command: its own arguments, its own usage
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

    def _suggest(self, message: str) -> str:
        """``message`` with the nearest choice or option, where one is close."""
        import difflib
        import re

        choice = re.match(r"argument (.+?): invalid choice: '(.*?)' \(choose from (.*)\)$", message)
        if choice:
            known = re.findall(r"'([^']*)'", choice[3])
            near = difflib.get_close_matches(choice[2], known, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else f" (choose from {choice[3]})"
            return f"argument {choice[1]}: invalid choice: {choice[2]!r}{hint}"
        unknown = re.match(r"unrecognized arguments: (.*)$", message)
        if unknown:
            options = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
            for word in unknown[1].split():
                near = difflib.get_close_matches(word.partition("=")[0], options, n=1)
                if word.startswith("-") and near:
                    return f"{message} (did you mean {near[0]}?)"
        return message


#: The command line's subparsers, on which each command module's ``add`` declares
#: its command.
Subcommands: TypeAlias = "argparse._SubParsersAction[Parser]"

#: Every command under a parser: its full name (``car-verify policy check``), its
#: parser and its one-line help.
CommandTree: TypeAlias = list[tuple[str, argparse.ArgumentParser, str]]


def command_tree(parser: argparse.ArgumentParser, prefix: str = "car-verify") -> CommandTree:
    """Every command under ``parser`` (``car-verify policy check``), its parser and its
    one-line help: the one declaration of the commands, read (by the reference and
    the MCP server's tool descriptions)."""
    found: CommandTree = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                nested = command_tree(sub, f"{prefix} {name}")
                found += nested or [(f"{prefix} {name}", sub, helps.get(name, ""))]
    return found


# --- value types ------------------------------------------------------------------------


def _whole_number(text: str, least: int = 0) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < least:
        what = "a positive" if least == 1 else "a non-negative"
        raise argparse.ArgumentTypeError(f"expected {what} number, got {value}")
    return value


def non_negative(text: str) -> int:
    """An option's value: a whole number, 0 or more."""
    return _whole_number(text)


def positive(text: str) -> int:
    """An option's value: a whole number, 1 or more."""
    return _whole_number(text, least=1)


def seconds(text: str) -> float:
    """An option's value: a finite, positive number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return value


# --- the options several commands take, each declared here once ---------------------------

#: What a proposal argument is, for every command that reads one.
PROPOSAL_HELP = "proposal file (JSON or YAML), or - for stdin"


def profile_option(p: argparse.ArgumentParser) -> None:
    """``--profile car|strict``: whose answers the command gives (docs/semantics.md §9)."""
    from ..base.config import PROFILES
    from ..semantics.profiles import PROFILE_ENV

    p.add_argument(
        "--profile",
        choices=PROFILES,
        help="car: the runtime's own answers (the default); strict: docs/semantics.md §1-8 "
        f"(also ${PROFILE_ENV} or `profile` in the configuration)",
    )


def proposal_argument(p: argparse.ArgumentParser, *, many: bool = False) -> None:
    """The proposal (``proposal``), or with ``many`` one or more (``proposals``)."""
    if many:
        p.add_argument(
            "proposals", metavar="PROPOSAL", nargs="+", help=PROPOSAL_HELP + " (one or more)"
        )
    else:
        p.add_argument("proposal", metavar="PROPOSAL", help=PROPOSAL_HELP)


def state_option(p: argparse.ArgumentParser, help: str = "initial state (a JSON object)") -> None:
    """``--state STATE.json``: the state the proposal starts from."""
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
    """``--format`` (also ``--output-format``, as ruff spells it): the name of the
    reporter that writes the command's :class:`Report` (each of ``choices`` is one)."""
    unknown = [c for c in choices if c not in FORMATS]
    if unknown or default not in choices:
        raise ValueError(f"--format {unknown or default}: not a reporter ({', '.join(FORMATS)})")
    p.add_argument(
        "--format",
        "--output-format",
        dest="format",
        choices=choices,
        default=default,
        help=help,
        action=_GivenFormat,
    )


class _GivenFormat(argparse.Action):
    """``--format``'s action: the value, and that the user gave it
    (``args.format_given``), for a command whose other flag implies a format unless
    one is named (``optimize --diff``: text, unless ``--format json``)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        namespace.format_given = True


def ledger_option(p: argparse.ArgumentParser, help: str) -> None:
    """``--ledger LEDGER.jsonl`` (also ``--approvals``): the approval ledger."""
    p.add_argument("--ledger", "--approvals", dest="ledger", metavar="LEDGER.jsonl", help=help)


def output_option(
    p: argparse.ArgumentParser, metavar: str, help: str, *, required: bool = False
) -> None:
    """``-o OUT`` (``--output``): the file or folder a command makes besides, or
    instead of, the report on stdout (a picture, Parquet tables). A report itself
    goes to a file with ``-o FILE`` spelt ``--output-file`` (:func:`report_options`)."""
    p.add_argument("-o", "--output", metavar=metavar, required=required, help=help)


def quiet_option(p: argparse.ArgumentParser, help: str) -> None:
    """``-q`` / ``--quiet``: say less (no notes, no progress, no summary line)."""
    p.add_argument("-q", "--quiet", action="store_true", help=help)


def color_option(p: argparse.ArgumentParser) -> None:
    """``--color auto|always|never``: the text output's colours."""
    p.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the text output: auto (default) on a terminal unless $NO_COLOR is set",
    )


#: Where the documentation is published, for SARIF's absolute help links (its
#: ``helpUri`` must be an absolute URI), when ``--docs-url`` does not say.
DOCS_URL_ENV = "CAR_VERIFY_DOCS_URL"


def docs_url_option(p: argparse.ArgumentParser) -> None:
    """``--docs-url URL``: where the documentation is published (SARIF's help links)."""
    p.add_argument(
        "--docs-url",
        metavar="URL",
        help="where car-verify's docs/ are published: SARIF rules link there "
        f"(also ${DOCS_URL_ENV})",
    )


def report_options(p: argparse.ArgumentParser) -> None:
    """What a linter's user expects of a command that reports findings."""
    p.add_argument(
        "-o",
        "--output-file",
        metavar="FILE",
        help="write the report to FILE instead of stdout (written whole, at the end)",
    )
    p.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 even when there are findings (2 still means bad input or usage)",
    )
    quiet_option(p, "print the findings only: no summary line, no notes on stderr")
    p.add_argument(
        "--statistics",
        action="store_true",
        help="count the findings per code instead of listing them",
    )
    p.add_argument(
        "--show-settings",
        action="store_true",
        help="print the settings this run would use (files found, profile, patterns) and exit",
    )
    color_option(p)


def diff_option(p: argparse.ArgumentParser, help: str) -> None:
    """``--diff``: show what the command would change, change nothing."""
    p.add_argument("--diff", action="store_true", help=help)


def fix_options(p: argparse.ArgumentParser) -> None:
    """``--fix``, ``--unsafe-fixes`` and ``--diff``, as :func:`fix_files` reads them."""
    p.add_argument(
        "--fix",
        action="store_true",
        help="apply the findings' safe fixes (a lossless type repair, a re-cased name, an "
        "ordering proven to keep the end state, ...), each re-verified, and say each",
    )
    p.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="with --fix or --diff, apply the unsafe fixes too (the closest registered tool, "
        "a misspelled name, an action moved after the one it reads from, ...)",
    )
    diff_option(
        p,
        "show the fixes --fix would apply as a unified diff, write nothing "
        "(exit 1 when there are some)",
    )


def timeout_option(p: argparse.ArgumentParser) -> None:
    """``--timeout SECONDS``: the solver's budget (:func:`timeout_ms`)."""
    p.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=seconds,
        default=30.0,
        help="the solver's time budget; past it the answer is unknown (exit 3), "
        "never a hang (default 30)",
    )


def max_actions_option(p: argparse.ArgumentParser) -> None:
    """``--max-actions N``: the action budget (no default: docs/semantics.md §8)."""
    p.add_argument("--max-actions", type=non_negative, metavar="N", help="action budget")


def repeat_threshold_option(p: argparse.ArgumentParser, default: int | None) -> None:
    """``--repeat-threshold N``: identical tool calls that count as a loop."""
    shown = "" if default is None else f" (default {default})"
    p.add_argument(
        "--repeat-threshold",
        type=positive,
        default=default,
        metavar="N",
        help=f"identical tool calls that count as a loop{shown}",
    )


def labels_option(p: argparse.ArgumentParser, help: str) -> None:
    """``--labels LABELS.json``: the tool labels of the information-flow checks."""
    p.add_argument("--labels", metavar="LABELS.json", help=help)


def flow_policy_option(p: argparse.ArgumentParser, help: str, *aliases: str) -> None:
    """``--flow-policy POLICY.json``: the flow policy, checked against the labels."""
    p.add_argument("--flow-policy", *aliases, dest="flow_policy", metavar="POLICY.json", help=help)


def no_labels_option(p: argparse.ArgumentParser, help: str) -> None:
    """``--no-labels``: do not look for the labels (and what goes with them) in ``.car``."""
    p.add_argument("--no-labels", action="store_true", help=help)


def labels_options(p: argparse.ArgumentParser) -> None:
    """The flow and intent passes' inputs, as :func:`flow_files` reads them."""
    labels_option(p, "tool labels for the flow pass (default: the nearest .car/tool-labels.json)")
    flow_policy_option(
        p, "{min_confidential, forbidden_sequences} (default: .car/flow-policy.json)"
    )
    p.add_argument(
        "--intent",
        metavar="INTENT.json",
        help="the user's declared intent for the intent pass (default: .car/intent.json)",
    )
    no_labels_option(p, "do not look for .car/tool-labels.json, flow-policy.json or intent.json")


def schedules_option(p: argparse.ArgumentParser) -> None:
    """``--schedules levels|all``: the schedules trace rules are checked over."""
    from ..base.schedules import SCHEDULES

    p.add_argument(
        "--schedules",
        choices=SCHEDULES,
        default="levels",
        help="check trace rules over the executor's schedules (levels in order, any "
        "interleaving inside one; the default) or over every order the DAG allows",
    )


def gate_options(
    p: argparse.ArgumentParser,
    gate_policy: str,
    gate: str = "map the report to allow / require_approval / block (exit 1 unless allow)",
    *,
    ledger: bool = True,
) -> None:
    """``--gate``, ``--gate-policy`` and (with ``ledger``) ``--approvals``, as
    :func:`gated` reads them."""
    p.add_argument("--gate", action="store_true", help=gate)
    p.add_argument("--gate-policy", metavar="GATE.json", help=gate_policy)
    if ledger:
        ledger_option(p, "settle the gate's approvals against this ledger (implies --gate)")


def decision_options(p: argparse.ArgumentParser, metavar: str, subject: str) -> None:
    """``--approve`` / ``--reject`` (one of them), ``--reviewer`` and ``--reason``: a
    decision recorded in the approval ledger."""
    who = p.add_mutually_exclusive_group()
    who.add_argument("--approve", metavar=metavar, help=f"record an approval of {subject}")
    who.add_argument("--reject", metavar=metavar, help=f"record a rejection of {subject}")
    p.add_argument("--reviewer", metavar="NAME", help="who decided (with --approve/--reject)")
    p.add_argument("--reason", metavar="TEXT", help="why (with --approve/--reject)")


def granted_option(p: argparse.ArgumentParser, help: str) -> None:
    """``--granted TIER``: the standing permission tier."""
    p.add_argument("--granted", choices=("read_only", "sandbox_edit", "full_access"), help=help)


def rates_option(p: argparse.ArgumentParser, help: str) -> None:
    """``--rates RATES.json``: tool name -> success rate in [0, 1]."""
    p.add_argument("--rates", metavar="RATES.json", help=help)


def max_states_option(p: argparse.ArgumentParser, help: str) -> None:
    """``--max-states N``: a search's budget of states; past it the answer is unknown."""
    p.add_argument("--max-states", metavar="N", type=positive, default=None, help=help)


def method_option(p: argparse.ArgumentParser, choices: Sequence[str], help: str) -> None:
    """``--method``: how the answer is decided (``auto``, the default, chooses)."""
    p.add_argument("--method", choices=choices, default="auto", help=help)


def workers_option(p: argparse.ArgumentParser, help: str, default: int | None = None) -> None:
    """``--workers N``: how many worker processes."""
    p.add_argument("--workers", type=positive, default=default, metavar="N", help=help)


def no_progress_option(p: argparse.ArgumentParser) -> None:
    """``--no-progress``: no progress bar."""
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


class _Renamed(argparse.Action):
    """An option's old spelling in one command: it sets the new option's value and
    says on stderr that the spelling is deprecated."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        *,
        instead: str,
        why: str,
        default: object = None,
        help: str | None = None,
    ) -> None:
        self.instead = instead
        self.why = why
        super().__init__(option_strings, dest, default=default, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        sys.stderr.write(
            f"car-verify: warning: {parser.prog} {option_string} is deprecated: use "
            f"{self.instead} ({self.why})\n"
        )
        setattr(namespace, self.dest, values)


def renamed_option(p: argparse.ArgumentParser, old: str, new: str, dest: str, why: str) -> None:
    """``old``, the spelling option ``new`` (stored at ``dest``) had in this command
    before ``old`` came to mean another thing in another command: still read, with
    a deprecation warning on stderr, and left out of ``--help``."""
    p.add_argument(old, dest=dest, action=_Renamed, instead=new, why=why, help=argparse.SUPPRESS)


# --- the inputs ---------------------------------------------------------------------------


def load_proposal(name: str, what: str = "proposal") -> ActionProposal:
    """A proposal from a file (JSON or YAML), or from stdin for ``-``."""
    from .sources import proposal_input

    return proposal_input(name, what=what).proposal


def load_json(name: str, kind: type, what: str) -> JSONValue:
    """A JSON file (or ``-``) that must hold a value of ``kind`` (``dict``, ``list``;
    ``object``: any); errors name the file."""
    from .sources import json_input

    return json_input(name, kind, what)


def load_state(name: str | None) -> dict[str, JSONValue] | None:
    """``--state``: the JSON object in file ``name``, or None without one. A proposal
    given in its place (an ``actions`` array of actions) is refused: read as a state,
    it would be one key, ``actions``, and every check would run on a wrong state."""
    if name is None:
        return None
    state = dict(load_json(name, dict, "state"))
    actions = state.get("actions")
    if name == "-":  # stdin: a proposal here is stdin named twice, which is said first
        return state
    if (
        isinstance(actions, list)
        and actions
        and all(isinstance(a, dict) and ("type" in a or "tool" in a) for a in actions)
    ):
        raise UsageError(
            f"--state {name}: this is a proposal (its `actions` are actions), not a state: "
            "--state takes the initial state, a JSON object of key -> value"
        )
    return state


def load_tools(name: str | None) -> ToolRegistry | None:
    """``--tools``: the tool registry in file ``name``, or None without one."""
    if name is None:
        return None
    from .sources import tools_input

    return tools_input(name)


@contextlib.contextmanager
def named_inputs(files: Mapping[str, str | None]) -> Iterator[None]:
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


def run_profile(args: argparse.Namespace) -> Profile:
    """The profile to run: ``--profile``, else ``$CAR_VERIFY_PROFILE``, else the nearest
    configuration's ``profile``, else ``car`` (docs/semantics.md §9), resolved once per
    run by :func:`car_verify.semantics.resolve_profile` for every command."""
    resolved = getattr(args, "_resolved_profile", None)
    if resolved is None:
        from ..semantics.profiles import resolve_profile

        resolved = resolve_profile(getattr(args, "profile", None))
        args._resolved_profile = resolved
    chosen: Profile = resolved[0]
    return chosen


def policies_for(args: argparse.Namespace, proposal: str | None = None) -> LoadedPolicies | None:
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
    said: dict[Path, LoadedPolicies | None] = args.__dict__.setdefault("_policies_said", {})
    if folder is None:  # said once the command has its answer (verify's note)
        where = searched[0].parent.parent if searched else Path.cwd()
        said.setdefault(where, None)
        return None
    if folder in said:
        return said[folder]
    from ..rules.policy import load_policies  # only when there are policies to load

    loaded = load_policies(folder)
    said[folder] = loaded
    note(args, f"policies: {loaded.describe()} (--no-policies to skip)")
    return loaded


def policies_argument(value: str, name: str, *, strict: bool = True) -> LoadedPolicies:
    """The policies a command's positional argument ``name`` (``DIR``, ``OLD``,
    ``NEW``) names: a policies folder, a project holding ``.car/policies``, or one
    policy file (what ``policy impact`` has always taken; ``policy diff`` and
    ``policy lint`` take the same). An error names the argument as the user wrote
    it, never a flag they did not give. ``strict``: see
    :func:`~car_verify.rules.policy.load_policy_file` (``policy lint`` alone reads
    leniently, to report what a face refuses)."""
    from ..rules.policy import LoadedPolicies, load_policies, load_policy_text

    path = Path(value)
    if path.is_file():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise UsageError(f"{name} {value}: cannot read the policy file: {err}") from None
        rules = load_policy_text(text, source=value, strict=strict)
        return LoadedPolicies(path.parent.resolve(), [path], rules, [path], texts={path: text})
    if not path.is_dir():
        why = "no such file or folder" if not path.exists() else "neither a folder nor a file"
        raise UsageError(
            f"{name} {value}: {why}: {name} names a policies folder, a project holding "
            ".car/policies, or one policy file"
        )
    return load_policies(path, strict=strict)


def flow_files(args: argparse.Namespace) -> tuple[dict[str, Label] | None, FlowPolicy | None]:
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
        note(args, f"labels: {found} (--no-labels to skip)")
        if policy_name is None:
            near, _ = find_car_file(FLOW_POLICY_FILE)
            policy_name = None if near is None else str(near)
    with named_inputs({"labels": labels_name, "policy": policy_name}):
        labels = load_json(labels_name, dict, "labels")
        policy = None if policy_name is None else load_json(policy_name, dict, "flow policy")
        from ..plan.flow import parse_labels, parse_policy

        return parse_labels(labels), parse_policy(policy)


def timeout_ms(args: argparse.Namespace) -> int:
    """``--timeout`` in whole milliseconds (at least one)."""
    budget: float = args.timeout
    return max(1, round(budget * 1000))


# --- writing ------------------------------------------------------------------------------


def write(text: str) -> None:
    """``text`` on stdout, flushed."""
    sys.stdout.write(text)
    sys.stdout.flush()


#: From how many actions a lone proposal's check is announced on a terminal: a
#: check of 50,000 actions takes several seconds, which a silent prompt hides.
LARGE_PROPOSAL = 5_000


def say_when_large(args: argparse.Namespace, actions: int) -> None:
    """On a terminal, say that a large proposal is being checked (``verify``,
    ``policy check``; with ``-q`` too: it is progress, not a note, and never in a pipe)."""
    if actions >= LARGE_PROPOSAL and sys.stderr.isatty():
        sys.stderr.write(f"car-verify: checking {actions:,} actions ...\n")
        sys.stderr.flush()


def note(args: argparse.Namespace, text: str) -> None:
    """A note on stderr (what was loaded), unless ``--quiet``."""
    if not getattr(args, "quiet", False):
        sys.stderr.write(f"car-verify: {text}\n")


def with_profile(text: str, profile: ProfileLike) -> str:
    """``text`` with its first line (the verdict) saying which profile answered."""
    from ..semantics import profile_of

    first, _, rest = text.partition("\n")
    return f"{first} (profile {profile_of(profile)})" + (f"\n{rest}" if rest else "")


def color(args: argparse.Namespace) -> bool:
    """Whether the text output is coloured (``--color``, the terminal, ``$NO_COLOR``)."""
    from ..reporters.text import color_wanted

    return color_wanted(getattr(args, "color", "auto"), sys.stdout)


def docs_url(args: argparse.Namespace) -> str | None:
    """Where the documentation is published, for SARIF's absolute help links."""
    return getattr(args, "docs_url", None) or os.environ.get(DOCS_URL_ENV) or None


def emit(args: argparse.Namespace, report: Report) -> None:
    """The command's ``report`` on stdout, in the ``--format`` chosen, written by
    the reporter of that name (the only place a format is chosen)."""
    from ..reporters.formats import render

    write(render(report, args.format, docs_url=docs_url(args)))


def findings_text(args: argparse.Namespace, issues: Sequence[Issue], summary: str | None) -> str:
    """The findings as text under ``--quiet`` and ``--color``: one line each and the
    summary line."""
    from ..reporters.text import lines

    return lines(issues, None if getattr(args, "quiet", False) else summary, color=color(args))


def counted(args: argparse.Namespace, report: Report, summary: str) -> Report:
    """``--statistics``: ``report`` with its findings counted per code instead of
    listed, in text (as ruff prints them) and JSON; the formats that list findings
    (SARIF, annotations) list them all the same."""
    if not getattr(args, "statistics", False):
        return report
    shown = None if getattr(args, "quiet", False) else summary
    return report.counted(shown, color=color(args))


def show_settings(args: argparse.Namespace, settings: dict[str, JSONValue]) -> int:
    """``--show-settings``: the resolved settings, as TOML-like lines or JSON."""
    from ..reporters.json import dump

    def text() -> str:
        return "".join(
            f"{key} = {dump(value, indent=None, default=str)}" for key, value in settings.items()
        )

    emit(args, Report(text, lambda: dump(settings, default=str)))
    return EXIT_OK


def reported(args: argparse.Namespace, code: int) -> int:
    """The exit code of a reporting command under ``--exit-zero``."""
    return EXIT_OK if getattr(args, "exit_zero", False) and code == EXIT_FINDINGS else code


def fix_files(
    args: argparse.Namespace,
    names: Sequence[str],
    state: Mapping[str, JSONValue] | None,
    profile: ProfileLike,
    tools: ToolRegistry | None = None,
) -> bool:
    """``--fix`` / ``--diff`` (with ``--unsafe-fixes``): repair each JSON file named
    (its text edited where the fixes touch it, or the edits shown as a unified diff),
    saying what was repaired, what was dropped and why, and what was not attempted.
    Whether anything changed."""
    from ..base.patch import apply_to_text
    from ..deciders.fix import fix_document, unified_diff
    from ..ir.model import read_json

    changed = False
    unsafe = bool(getattr(args, "unsafe_fixes", False))
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
            document,
            initial_state=state,
            profile=profile,
            timeout_ms=timeout_ms(args),
            tools=tools,
            policies=policies_for(args, name),
            unsafe=unsafe,
        )
        for said in repaired.notes:
            note(args, f"{name}: {said}")
        for declined in repaired.declined:
            note(args, f"{name}: not repaired: {declined}")
        if repaired.unsafe_left and not unsafe:
            note(
                args,
                f"{name}: {repaired.unsafe_left} unsafe "
                f"{'fix' if repaired.unsafe_left == 1 else 'fixes'} not applied "
                "(--unsafe-fixes applies them)",
            )
        if not repaired.changed:
            continue
        changed = True
        after = apply_to_text(text, repaired.edits)
        if args.diff:
            write(unified_diff(text, after, name))
            continue
        Path(name).write_text(after, encoding="utf-8")
        for done in repaired.fixes:
            write(f"{name}: fixed {done.describe()}\n")
    return changed


# --- the gate over a report ---------------------------------------------------------------

_Found = TypeVar("_Found")
_Settled = TypeVar("_Settled", bound="Settled")


class Settled(Protocol):
    """A gate decision settled against the ledger (the flow's, the intent's)."""

    reason: str

    def to_dict(self) -> dict[str, JSONValue]: ...


def gated(
    args: argparse.Namespace,
    report: _Found,
    gate: Callable[[_Found, Mapping[str, JSONValue] | None], GateDecision],
    enforce: Callable[[GateDecision, Ledger], _Settled],
) -> tuple[GateDecision | None, _Settled | None]:
    """A report's gate decision (``--gate``, ``--gate-policy``) and, with
    ``--approvals LEDGER``, its enforcement against the recorded decisions."""
    if not (args.gate or args.ledger is not None):
        return None, None
    policy = None if args.gate_policy is None else load_json(args.gate_policy, dict, "gate policy")
    decision = gate(report, policy)
    if args.ledger is None:
        return decision, None
    from ..plan.permissions import Ledger

    return decision, enforce(decision, Ledger(args.ledger))


def gated_doc(
    doc: dict[str, JSONValue], decision: GateDecision | None, enforcement: Settled | None
) -> dict[str, JSONValue]:
    """A gated report's JSON: the report, its ``gate`` and ``enforcement``."""
    if decision is not None:
        doc["gate"] = decision.to_dict()
    if enforcement is not None:
        doc["enforcement"] = enforcement.to_dict()
    return doc


def gate_text(
    decision: GateDecision | None, enforcement: Settled | None, passed: bool | None, verb: str
) -> str:
    """The gate's lines of a gated report's text."""
    out = ""
    if decision is not None:
        out += f"gate: {decision.action}: {decision.reason}\n"
    if enforcement is not None:
        out += f"enforcement: {verb if passed else 'hold'}: {enforcement.reason}\n"
    return out


def gate_code(safe: bool, decision: GateDecision | None, passed: bool | None) -> int:
    """Enforcement decides, else the gate, else the report."""
    if passed is not None:
        return EXIT_OK if passed else EXIT_FINDINGS
    if decision is not None:
        return EXIT_OK if decision.action == "allow" else EXIT_FINDINGS
    return EXIT_OK if safe else EXIT_FINDINGS
