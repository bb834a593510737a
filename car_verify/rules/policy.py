"""Policies: registered rules, ``.car/policies/*.toml`` files, and the PolicyEngine.

What a rule of each kind reads, decides and means is its kind's module
(:mod:`car_verify.rules.kinds`, one module per kind, and the registry that lists
them). This module holds what is the same for every kind: the set of rules of a
policy folder (:class:`PolicySet`, one list per kind), the strict loading of the
files (each kind reads its own array), and :class:`PolicyEngine`, a loop over the
rules of one call that judges a call of a tool: the rules of that tool, in the
registry's order. Trace rules are parsed here and decided over the run's trace by
:class:`~car_verify.rules.trace.TraceGate` (at dispatch, in the gate) and
:func:`~car_verify.rules.trace.check_schedules` (statically).

:meth:`PolicyEngine.check` returns *every* violation of an action, not the first.
Violations of file rules carry stable names (``deny_tool:deploy``,
``deny_tool_param:http_request.url``, ...) and never the offending value or the
text a pattern matched: violation reasons are written to event logs.
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.config import find_policies
from ..base.errors import InputError, UsageError
from ..base.values import plural
from .kinds import FILE_KEYS, REGISTERED_KEYS, Call, Kind, Reader, file_kind, registered_kind
from .kinds._base import coerce, strings_of, texts_of
from .trace import TraceRule

if TYPE_CHECKING:
    from ..ir.model import Action, PolicyViolation
    from .kinds.allow_command import AllowCommandRule
    from .kinds.allow_tool_param import AllowRule
    from .kinds.deny_command import CommandRule
    from .kinds.deny_keyword import keyword_rule_name
    from .kinds.deny_tool_param import ParamRule
    from .kinds.deny_tool_param_matching import (
        MAX_MATCH_WORK,
        MAX_PATTERN_PROGRAM,
        MatchRule,
        compile_pattern,
        pattern_cost,
    )
    from .kinds.rate_limit_tool import RateRule
    from .kinds.registered import Callback, Registered

#: The names this module gives from the kinds' modules, by module: each is imported
#: when a name of it is first asked for (a caller holding rules of a few kinds
#: imports only their modules: the hook's start, issue 61).
_FROM_KINDS = {
    "AllowCommandRule": "allow_command",
    "AllowRule": "allow_tool_param",
    "CommandRule": "deny_command",
    "keyword_rule_name": "deny_keyword",
    "ParamRule": "deny_tool_param",
    "MAX_MATCH_WORK": "deny_tool_param_matching",
    "MAX_PATTERN_PROGRAM": "deny_tool_param_matching",
    "MatchRule": "deny_tool_param_matching",
    "compile_pattern": "deny_tool_param_matching",
    "pattern_cost": "deny_tool_param_matching",
    "RateRule": "rate_limit_tool",
    "Registered": "registered",
}


def __getattr__(name: str) -> Any:
    module = _FROM_KINDS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__package__}.kinds.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "MAX_MATCH_WORK",
    "MAX_PATTERN_PROGRAM",
    "AllowCommandRule",
    "AllowRule",
    "CommandRule",
    "LoadedPolicies",
    "MatchRule",
    "ParamRule",
    "PolicyEngine",
    "PolicySet",
    "RateRule",
    "Registered",
    "coerce",
    "compile_pattern",
    "find_policies",
    "keyword_rule_name",
    "load_policies",
    "load_policy_file",
    "load_policy_object",
    "load_policy_text",
    "pattern_cost",
    "policies_folder",
    "policy_engine",
    "rule_identities",
    "state_keys",
    "strings_of",
    "texts_of",
]

#: The most work the content rules may do on one call: the characters of the
#: call's parameters read (their string forms and every string inside them) times
#: the number of content rules on the call's tool that read them (``reads_content``:
#: ``deny_keyword``, ``deny_tool_param``). Past it the content rules are not run and
#: the call is denied (fails closed), never let through unread: 90,000 keywords
#: against a 238 kB edit took minutes a call.
MAX_CONTENT_WORK = 200_000_000
#: The name of the content rules' work bound when it denies a call.
WORK_BOUND = "deny_keyword:work-bound"

#: The kinds of rule whose names are finding codes (``deny_tool:rm``).
RULE_KINDS = frozenset({*FILE_KEYS, *REGISTERED_KEYS})


# --- the rules of a policy folder ---------------------------------------------------------------


class PolicySet:
    """The file-authored rules, merged from every file in sorted filename order: a
    list per kind of :data:`~car_verify.rules.kinds.FILE_KINDS`, read and written
    as an attribute of the kind's key (``rules.deny_tool``, ``rules.trace_rule``),
    or with :meth:`of`. ``PolicySet(trace_rule=[...])`` starts with those rules."""

    __slots__ = ("_rules",)
    _rules: dict[str, list[Any]]

    def __init__(self, **rules: Iterable[Any]) -> None:
        object.__setattr__(self, "_rules", {key: [] for key in FILE_KEYS})
        for key, items in rules.items():
            setattr(self, key, items)

    def __getattr__(self, key: str) -> list[Any]:
        if key.startswith("_"):  # the store itself, before it is set (a copy in the making)
            raise AttributeError(key)
        try:
            return self._rules[key]
        except KeyError:
            raise AttributeError(f"no rule kind {key!r} in a policy set") from None

    def __setattr__(self, key: str, items: Iterable[Any]) -> None:
        if key == "_rules":  # a copy restoring its store
            object.__setattr__(self, key, items)
            return
        if key not in FILE_KEYS:
            raise AttributeError(f"no rule kind {key!r} in a policy set")
        self._rules[key] = list(items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PolicySet) and self._rules == other._rules

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        held = ", ".join(f"{k}={v!r}" for k, v in self._rules.items() if v)
        return f"PolicySet({held})"

    def of(self, kind: Kind[Any]) -> list[Any]:
        """The rules of ``kind`` (the list itself)."""
        rules: list[Any] = self._rules[kind.key]
        return rules

    def kinds(self) -> Iterator[tuple[Kind[Any], list[Any]]]:
        """Each file kind with its rules, in the registry's order."""
        for key in FILE_KEYS:
            yield file_kind(key), self._rules[key]

    def held(self) -> Iterator[tuple[Kind[Any], list[Any]]]:
        """Each file kind that has rules with them, in the registry's order:
        :meth:`kinds` without the empty ones (whose modules are not imported)."""
        for key in FILE_KEYS:
            rules = self._rules[key]
            if rules:
                yield file_kind(key), rules

    def extend(self, other: PolicySet) -> None:
        for kind, rules in other.held():
            self.of(kind).extend(rules)

    def count(self) -> int:
        return sum(len(rules) for rules in self._rules.values())

    def trace_rules(self) -> list[TraceRule]:
        """The rules of the ``trace`` kinds, decided on the run's trace by the
        gate's trace monitor, in the registry's order."""
        return [r for kind, items in self.held() if kind.stage == "trace" for r in items]

    def counts(self) -> dict[str, int]:
        """The number of rules of each kind that has any, by key."""
        return {key: len(rules) for key, rules in self._rules.items() if rules}


def rule_identities(rules: PolicySet) -> list[tuple[str, str]]:
    """Each file rule as (kind, its content as canonical JSON): two rules that say
    the same thing have the same identity, wherever they were written."""
    return [
        (kind.key, json.dumps(kind.to_doc(r), sort_keys=True, ensure_ascii=False))
        for kind, items in rules.held()
        for r in items
    ]


def state_keys(rules: PolicySet) -> tuple[list[str], list[str]]:
    """A key for each rule whose state a run carries: each rule of a ``trace``
    kind (in :class:`~car_verify.rules.trace.TraceGate`'s order) and each rule
    whose memory is a window of call times (``Kind.windowed``, in the order of
    :attr:`PolicyEngine.windows`). A key is a digest of the rule's kind and content
    and its occurrence (a rule written twice keeps two states), so that a rule
    keeps its state while the rules around it change, and a changed rule does not
    take another's. The one place both the hook's session file and the framework
    integrations' saved runs take their keys from."""
    from ..base.digest import sha256_hex

    seen: dict[str, int] = {}
    trace: list[str] = []
    windows: list[str] = []
    for kind, items in rules.held():
        held = trace if kind.stage == "trace" else windows if kind.windowed else None
        if held is None:
            continue
        for rule in items:
            text = json.dumps(kind.to_doc(rule), sort_keys=True, ensure_ascii=False)
            digest = sha256_hex(f"{kind.key}:{text}".encode("utf-8", "surrogatepass"))[:20]
            seen[digest] = seen.get(digest, 0) + 1
            held.append(f"{digest}:{seen[digest]}")
    return trace, windows


# --- the engine ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Entry:
    """One rule of one call as the engine holds it: its kind, the rule, its name,
    its place among the engine's rules (which is also its memory's) and among its
    kind's."""

    kind: Kind[Any]
    rule: Any
    name: str
    slot: int
    position: int


#: How many tools' lists of rules an engine keeps (a call of a tool it has not kept
#: gathers them again): the names come from the agent.
_KEPT_TOOLS = 4096


class PolicyEngine:
    """Checks actions against registered rules and a :class:`PolicySet`: a loop over
    the rules of one call of the tool called (the kinds decide; see
    :mod:`car_verify.rules.kinds`).

    ``clock`` (seconds, monotonic) drives the rate-limit windows; tests pass a fake.
    """

    def __init__(
        self, rules: PolicySet | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rules = rules if rules is not None else PolicySet()
        self.registered: list[Registered] = []
        self.clock = clock
        entries: list[_Entry] = []
        for kind, items in self.rules.held():
            if kind.stage != "call":
                continue
            for position, rule in enumerate(items):
                name = kind.rule_name(rule, position)
                entries.append(_Entry(kind, rule, name, len(entries), position))
        self._entries = tuple(entries)
        #: Each rule's memory (a rate limit's window, a compiled pattern), by slot.
        self._memory: list[Any] = [e.kind.start(e.rule) for e in entries]
        self._every: list[_Entry] = []
        self._exact: dict[str, list[_Entry]] = {}
        self._folded: dict[str, list[_Entry]] = {}
        for e in entries:
            tool = e.kind.tool_of(e.rule)
            if tool is None:
                self._every.append(e)
            elif e.kind.tool_folded:
                self._folded.setdefault(tool.casefold(), []).append(e)
            else:
                self._exact.setdefault(tool, []).append(e)
        self._by_tool: dict[str | None, tuple[_Entry, ...]] = {}

    def __repr__(self) -> str:
        return f"PolicyEngine({self.rules.count()} rules, {len(self.registered)} registered)"

    @property
    def trace_rules(self) -> list[TraceRule]:
        """The rules of the ``trace`` kinds, decided by the gate's trace monitor."""
        return self.rules.trace_rules()

    @property
    def windows(self) -> dict[int, tuple[float, ...]]:
        """The admitted calls' times of each windowed rule with any (``Kind.windowed``:
        a rate limit), by its index among the windowed rules (the order of
        :func:`state_keys`), to carry the windows to another engine."""
        windowed = (e for e in self._entries if e.kind.windowed)
        return {
            i: tuple(self._memory[e.slot]) for i, e in enumerate(windowed) if self._memory[e.slot]
        }

    def restore_windows(self, windows: Mapping[int, Iterable[float]]) -> None:
        """Take up the windows another engine over the same rules saved (``windows``)."""
        for i, e in enumerate(e for e in self._entries if e.kind.windowed):
            if i in windows:
                self._memory[e.slot] = deque(windows[i])

    def fresh(self, *, clock: Callable[[], float] = time.monotonic) -> PolicyEngine:
        """An engine over the same rules (registered ones too), with empty windows."""
        engine = PolicyEngine(self.rules, clock=clock)
        engine.registered = list(self.registered)
        return engine

    def register_policy(
        self,
        name: str,
        kind: str,
        target: str | None = None,
        key: str | None = None,
        pattern: str | None = None,
        value_json: str | None = None,
        *,
        callback: Callback | None = None,
    ) -> None:
        """Register a rule as the FFI does: ``deny_tool``, ``deny_tool_param``,
        ``require_state`` (``value_json`` is the JSON text of the required value), or
        ``deny_tool_callback`` (``callback(tool, params, action)``; a non-empty string
        is the reason, any other truthy value denies)."""
        registering = registered_kind(kind) if kind in REGISTERED_KEYS else None
        if registering is None:
            raise UsageError(f"unknown policy rule type {kind!r}")
        self.registered.append(registering.register(name, target, key, pattern, value_json,
                                                    callback))  # fmt: skip

    def register_callback(self, name: str, callback: Callback, target: str | None = None) -> None:
        """A Python callable in place of the JS callback (any tool when ``target`` is None)."""
        self.register_policy(name, "deny_tool_callback", target, callback=callback)

    def check(
        self, action: Action, state: Mapping[str, Any] | None = None
    ) -> list[PolicyViolation]:
        """Every violation of ``action`` (the engine does not stop at the first)."""
        from ..ir.model import PolicyViolation

        found = self.check_call(action.tool, action.parameters, state, action=action)
        return [PolicyViolation(policy_name=n, action_id=action.id, reason=r) for n, r in found]

    def check_call(
        self,
        tool: str | None,
        params: Mapping[str, Any],
        state: Mapping[str, Any] | None = None,
        *,
        action: Action | None = None,
    ) -> list[tuple[str, str]]:
        """Every violation of a call of ``tool`` with ``params``, as (rule name,
        reason) pairs: :meth:`check` without an action. A rule that cannot be
        decided on the call counts as a violation here (fails closed); the run-time
        gate (:class:`car_verify.plan.gate.CallGate`) tells the two apart."""
        denied, undecided = self.judge(tool, params, state, action=action)
        return [*denied, *undecided]

    def judge(
        self,
        tool: str | None,
        params: Mapping[str, Any],
        state: Mapping[str, Any] | None = None,
        *,
        action: Action | None = None,
    ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """The rules that deny a call of ``tool`` with ``params`` and those that
        cannot be decided on it, each as (rule name, reason) pairs: each rule of one
        call of the tool asked in turn (every one: a rate limit takes a slot of its
        window when it admits the call, whatever the others say). A callback rule
        is handed ``action``, or a ``tool_call`` action made from the call."""
        denied: list[tuple[str, str]] = []
        undecided: list[tuple[str, str]] = []
        call = Call(tool, params, state, action, self.clock)
        for rule in self.registered:
            kind = registered_kind(rule.kind)
            target = kind.tool_of(rule)
            if target is None or target == tool:
                self._answer(kind.decide(rule, call, None), rule.name, denied, undecided)
        entries = self._for_tool(tool)
        bounded = self._over_work_bound(call, entries)
        if bounded is not None:
            denied.append((WORK_BOUND, bounded))
        for e in entries:
            if bounded is not None and e.kind.reads_content:
                continue
            self._answer(e.kind.decide(e.rule, call, self._memory[e.slot]), e.name, denied,
                         undecided)  # fmt: skip
        return denied, undecided

    @staticmethod
    def _answer(
        answer: Any, name: str, denied: list[tuple[str, str]], undecided: list[tuple[str, str]]
    ) -> None:
        if answer.decision == "deny":
            denied.append((name, answer.reason))
        elif answer.decision == "undecided":
            undecided.append((name, answer.reason))

    def _for_tool(self, tool: str | None) -> tuple[_Entry, ...]:
        """The rules of one call that judge a call of ``tool``, in the engine's order."""
        found = self._by_tool.get(tool)
        if found is None:
            mine = [*self._every]
            if tool is not None:
                mine += self._exact.get(tool, ())
                mine += self._folded.get(tool.casefold(), ())
            found = tuple(sorted(mine, key=lambda e: e.slot))
            if len(self._by_tool) < _KEPT_TOOLS:
                self._by_tool[tool] = found
        return found

    @staticmethod
    def _over_work_bound(call: Call, entries: Iterable[_Entry]) -> str | None:
        """Why the content rules cannot read this call within their work bound
        (:data:`MAX_CONTENT_WORK`); None when they can."""
        readers = sum(1 for e in entries if e.kind.reads_content)
        if not readers or not call.params:
            return None
        size = sum(len(t) for name in call.params for t in call.texts(name))
        if size * readers <= MAX_CONTENT_WORK:
            return None
        return (
            f"the parameters of {call.tool!r} ({size:,} characters) are too large to check "
            f"against {readers:,} content rules within the work bound: denied (fails "
            "closed); send less text in one call"
        )


# --- loading files ------------------------------------------------------------------------------


def load_policy_file(path: str | os.PathLike[str], *, strict: bool = True) -> PolicySet:
    """Read one policy file strictly: malformed TOML, an unknown key or a wrong type
    raises InputError naming the file (and the key). ``strict=False`` is ``policy
    lint``'s reading: a rule that cannot be applied as written (a pattern RE2 cannot
    compile) is kept, failing closed, for lint to report."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read policy file: {err}", source=str(file)) from None
    return load_policy_text(text, source=str(file), strict=strict)


def load_policy_text(text: str, *, source: str = "<policies>", strict: bool = True) -> PolicySet:
    """Read policy TOML text strictly (errors name ``source`` and the key; ``strict``:
    see :func:`load_policy_file`)."""
    import tomllib

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"not valid TOML: {err}", source=str(Path(source))) from None
    except RecursionError:
        raise InputError("not valid TOML: nested too deeply", source=str(Path(source))) from None
    return _policy_set(doc, Reader(Path(source), text, strict=strict))


def load_policy_object(doc: Mapping[str, Any], *, source: str = "<policies>") -> PolicySet:
    """Read a policy file's content given as a JSON object (the shape its TOML
    parses to) as strictly as :func:`load_policy_text` reads the text."""
    if not isinstance(doc, Mapping):
        raise InputError("expected an object (the policy file's tables)", source=source)
    return _policy_set(doc, Reader(Path(source)))


def _policy_set(doc: Mapping[str, Any], reader: Reader) -> PolicySet:
    """The rules of one parsed policy file: each kind reads its own array."""
    for key in doc:
        if key not in FILE_KEYS:
            known = ", ".join(sorted(FILE_KEYS))
            raise reader.fail([key], f"unknown key (expected one of {known})")
    rules = PolicySet()
    for key in FILE_KEYS:
        if key in doc:
            kind = file_kind(key)
            rules.of(kind).extend(kind.read(reader, doc[key]))
    return rules


@dataclass(slots=True)
class LoadedPolicies:
    """What was loaded and from where (``directory`` None: no policy directory found).

    ``texts``: each file's text as it was read (once, from the descriptor the load
    opened: what was checked is what was read). ``skipped``: the entries of the
    folder that hold no rules (not a ``*.toml`` file), each with why, so that a
    folder whose only file is ``rules.tml`` is said out loud, never read as empty."""

    directory: Path | None
    files: list[Path]
    rules: PolicySet
    searched: list[Path] = field(default_factory=list)
    texts: dict[Path, str] = field(default_factory=dict)
    skipped: list[tuple[Path, str]] = field(default_factory=list)

    def describe(self) -> str:
        if self.directory is None:
            where = ", ".join(str(p) for p in self.searched[:3])
            more = " ..." if len(self.searched) > 3 else ""
            return f"no .car/policies directory found (searched {where}{more})"
        count = len(self.files)
        said = (
            f"loaded {plural(self.rules.count(), 'rule')} from {plural(count, 'file')} "
            f"in {self.directory}"
        )
        if self.skipped:
            said += f"; {self.describe_skipped()}"
        return said

    def describe_skipped(self) -> str:
        """The skipped entries, named (at most five, then how many more), or ''."""
        if not self.skipped:
            return ""
        named = ", ".join(f"{p.name} ({why})" for p, why in self.skipped[:5])
        more = f" and {len(self.skipped) - 5} more" if len(self.skipped) > 5 else ""
        return f"skipped {named}{more}"

    def engine(self, *, clock: Callable[[], float] = time.monotonic) -> PolicyEngine:
        return PolicyEngine(self.rules, clock=clock)


def load_policies(
    directory: str | os.PathLike[str] | None = None, *, strict: bool = True
) -> LoadedPolicies:
    """Load every ``*.toml`` of a policies directory in sorted filename order.

    ``directory`` may be the policies directory itself or a project directory that
    holds ``.car/policies``; without it, the nearest ``.car/policies`` walking up
    from the working directory is used (:func:`policies_folder`). A missing
    directory is not an error; a malformed file fails the whole load, naming the file
    (``strict``: see :func:`load_policy_file`).
    """
    folder, searched = policies_folder(directory)
    if folder is None:
        return LoadedPolicies(None, [], PolicySet(), searched)
    read, skipped = _policy_files(folder)
    rules = PolicySet()
    for file, text in read:
        rules.extend(load_policy_text(text, source=str(file), strict=strict))
        if rules.count() > MAX_RULES or len(rules.trace_rules()) > MAX_TRACE_RULES:
            raise InputError(
                f"the policies hold over {MAX_RULES:,} rules, or over {MAX_TRACE_RULES:,} "
                "trace rules: more than a check of every call can afford; the policies fail "
                "closed",
                source=str(folder),
            )
    return LoadedPolicies(
        folder.resolve(),
        [file for file, _ in read],
        rules,
        searched,
        texts=dict(read),
        skipped=skipped,
    )


def policies_to_check(
    directory: str | os.PathLike[str] | None, start: str | os.PathLike[str], *, name_them: str
) -> LoadedPolicies:
    """The policies a policy check applies: those of ``directory`` when given, else
    the nearest ``.car/policies`` at or above ``start``. No folder, or one that holds
    no rule, would check nothing: each is a :class:`UsageError` (``name_them`` says
    how to name the policies instead)."""
    if directory is not None:
        loaded = load_policies(directory)
    else:
        folder, _ = find_policies(start)
        if folder is None:
            raise UsageError(
                f"no .car/policies at or above {start}: nothing was checked ({name_them})"
            )
        loaded = load_policies(folder)
    if loaded.directory is None or not loaded.rules.count():
        raise UsageError(
            f"{loaded.describe()}: the policy set holds no rule, so nothing was checked"
        )
    return loaded


def policies_folder(
    directory: str | os.PathLike[str] | None = None,
) -> tuple[Path | None, list[Path]]:
    """The policies directory :func:`load_policies` reads for ``directory`` (None:
    there is none) and the places it looked, without reading a rule."""
    if directory is not None:
        given = Path(directory)
        if not given.is_dir():
            why = "is not a directory" if given.exists() else "no such policies directory"
            raise InputError(
                f"{why}: policies are read from a folder (a policies folder or a "
                "project holding .car/policies)",
                source=str(given),
            )
        if is_policies_folder(given):
            # It is the policies folder itself: a .car/policies created inside it
            # (by anyone who can write there) is never read in its place.
            return given, [given]
        nested = given / ".car" / "policies"
        if not nested.is_dir() and (nested.exists() or nested.is_symlink()):
            raise InputError(
                "is not a directory: the policies cannot be read (fails closed)",
                source=str(nested),
            )
        chosen = nested if nested.is_dir() else given
        return chosen, [chosen]
    return find_policies()


def is_policies_folder(path: Path) -> bool:
    """Whether ``path`` is named as a policies folder is (``.car/policies``)."""
    return path.name == "policies" and path.parent.name == ".car"


#: The most entries a policies folder may hold, the largest policy file and the
#: most policy text in all: past any of them the load fails naming the bound, at
#: once (a folder flooded with files must not make every check slow, nor pass).
MAX_POLICY_ENTRIES = 1_000
#: The most rules, and trace rules, a policies folder may hold: each call is checked
#: against every one of them (17,000 trace rules took 6 s a call).
MAX_RULES = 5_000
MAX_TRACE_RULES = 1_000
MAX_POLICY_FILE_BYTES = 1_000_000
MAX_POLICY_BYTES = 4_000_000


def _policy_files(folder: Path) -> tuple[list[tuple[Path, str]], list[tuple[Path, str]]]:
    """The ``*.toml`` files of a policies directory, sorted, each with its text, and
    the entries skipped (a regular file of another name, with why).

    Each entry is opened once, without blocking, and judged by ``fstat`` on the open
    descriptor; its text is read from that descriptor. So a swap between the check
    and the read (a symlink turned to a FIFO or a device) is seen and fails the load,
    and nothing can make the load wait. Anything that is not a readable regular file
    (a directory, a dangling symlink, a symlink loop, a socket, a FIFO) fails the
    load naming it: a rule that cannot be read must not vanish. A folder past the
    bounds above fails the load too, after reading at most one entry more than
    :data:`MAX_POLICY_ENTRIES`."""
    entries: list[Path] = []
    try:
        with os.scandir(folder) as listing:
            for item in listing:
                if len(entries) >= MAX_POLICY_ENTRIES:
                    raise InputError(
                        f"holds more than {MAX_POLICY_ENTRIES:,} entries: too many to be a "
                        "policies folder; the policies fail closed",
                        source=str(folder),
                    )
                entries.append(Path(item.path))
    except OSError as err:
        raise InputError(
            f"cannot be listed ({err.strerror}): the policies fail closed", source=str(folder)
        ) from None
    read: list[tuple[Path, str]] = []
    skipped: list[tuple[Path, str]] = []
    total = 0
    for entry in sorted(entries):
        if entry.suffix != ".toml":
            _regular(entry)  # a FIFO or a directory by any name still fails the load
            skipped.append((entry, "not a .toml file"))
            continue
        text, size = _read_policy_entry(entry)
        total += size
        if total > MAX_POLICY_BYTES:
            raise InputError(
                f"the policy files hold over {MAX_POLICY_BYTES:,} bytes in all: the "
                "policies fail closed",
                source=str(folder),
            )
        read.append((entry, text))
    return read, skipped


def _unreadable(entry: Path, err: OSError) -> InputError:
    import errno

    why = (
        "a symlink loop"
        if err.errno == errno.ELOOP
        else "a dangling symlink"
        if entry.is_symlink() and err.errno == errno.ENOENT
        else "not readable"
        if err.errno == errno.EACCES
        else err.strerror
    )
    return InputError(f"cannot be read ({why}): the policies fail closed", source=str(entry))


def _not_regular(entry: Path, mode: int) -> InputError:
    import stat

    kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
    return InputError(f"is {kind}, not a policy file: the policies fail closed", source=str(entry))


def _regular(entry: Path) -> None:
    """Fail the load unless ``entry`` is (or links to) a regular file; never opens it."""
    import stat

    try:
        mode = entry.stat().st_mode
    except OSError as err:
        raise _unreadable(entry, err) from None
    if not stat.S_ISREG(mode):
        raise _not_regular(entry, mode)


def _read_policy_entry(entry: Path) -> tuple[str, int]:
    """The text of one policy file and its size in bytes, read from one descriptor
    that ``fstat`` shows to be a regular file (see :func:`_policy_files`)."""
    import stat

    _regular(entry)  # a device is not opened at all when the folder holds still
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(entry, flags)
    except OSError as err:
        raise _unreadable(entry, err) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # swapped after the check
            raise _not_regular(entry, info.st_mode)
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_POLICY_FILE_BYTES:
            chunk = os.read(fd, MAX_POLICY_FILE_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as err:
        raise _unreadable(entry, err) from None
    finally:
        os.close(fd)
    if size > MAX_POLICY_FILE_BYTES:
        raise InputError(
            f"is over the bound of {MAX_POLICY_FILE_BYTES:,} bytes for a policy file: the "
            "policies fail closed",
            source=str(entry),
        )
    try:
        return b"".join(chunks).decode("utf-8"), size
    except UnicodeDecodeError as err:
        raise InputError(f"cannot read policy file: {err}", source=str(entry)) from None


def policy_engine(policies: Any) -> PolicyEngine:
    """A PolicyEngine from an engine, loaded policies, a PolicySet or a directory."""
    if isinstance(policies, PolicyEngine):
        return policies
    if isinstance(policies, LoadedPolicies):
        return policies.engine()
    if isinstance(policies, PolicySet):
        return PolicyEngine(policies)
    if isinstance(policies, (str, os.PathLike)):
        return load_policies(policies).engine()
    raise UsageError("policies must be a PolicyEngine, a PolicySet, loaded policies or a directory")
