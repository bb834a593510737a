"""Policies: registered rules, ``.car/policies/*.toml`` files, and the PolicyEngine.

Every rule is a prohibition checked against one action, except ``allow_tool_param``
(an allowlist that fails closed) and the stateful ``rate_limit_tool`` (a sliding
window per rule and engine). ``trace_rule`` entries, which the upstream runtime
refuses to load, are parsed here and enforced by :class:`~car_verify.rules.trace.TraceGate`
(at dispatch) and :func:`~car_verify.rules.trace.check_schedules` (statically).

:meth:`PolicyEngine.check` returns *every* violation of an action, not the first.
Violations of file rules carry stable names (``deny_tool:deploy``,
``deny_tool_param:http_request.url``, ...) and never the offending value or the
text a pattern matched: violation reasons are written to event logs.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.config import find_policies
from ..base.errors import InputError, UsageError
from ..base.values import ABSENT, json_equal, plural
from .trace import TraceGate, TraceRule, parse_trace_rule

if TYPE_CHECKING:  # the agent hook checks calls without loading the model
    from ..ir.model import Action, PolicyViolation
    from .shell_words import Command

__all__ = [
    "LoadedPolicies",
    "PolicyEngine",
    "PolicySet",
    "find_policies",
    "keyword_rule_name",
    "load_policies",
    "load_policy_file",
    "load_policy_object",
    "load_policy_text",
    "policies_folder",
    "policy_engine",
    "policy_set_from_dict",
    "policy_set_to_dict",
    "rule_identities",
]

Callback = Callable[[str, Mapping[str, Any], "Action"], Any]


def keyword_rule_name(position: int) -> str:
    """The name of the ``deny_keyword`` entry at ``position`` (0-based, in the merged
    rules' order): its number, never its text, so that a secret a rule guards never
    shows in a deny reason, a finding, SARIF or an event log."""
    return f"deny_keyword:{position + 1}"


def coerce(value: Any) -> str:
    """A parameter's string form: a string as it is, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def strings_of(value: Any) -> list[str]:
    """Every string inside a parameter's value as it is (nested values and object
    keys alike): a content rule that looked only at the value's JSON text would miss
    a string whose quote, backslash or control character JSON escapes there."""
    out: list[str] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, Mapping):
            for key, item in node.items():
                if isinstance(key, str):
                    out.append(key)
                stack.append(item)
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return out


def texts_of(value: Any) -> list[str]:
    """What a content rule reads of a parameter: its string form (the runtime's
    reading) and, for anything that is not a string, every string inside it."""
    if isinstance(value, str):
        return [value]
    return [coerce(value), *strings_of(value)]


#: The most work the content rules may do on one call: the characters of the
#: call's parameters read (their string forms and every string inside them) times
#: the number of content rules that read them. Past it the call is denied (fails
#: closed), never let through unread: 90,000 keywords against a 238 kB edit took
#: minutes a call.
MAX_CONTENT_WORK = 200_000_000


# --- the rules ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ParamRule:
    """``deny_tool_param`` (equals / contains / presence)."""

    tool: str
    param: str
    equals: Any = ABSENT
    contains: str | None = None

    @property
    def name(self) -> str:
        return f"deny_tool_param:{self.tool}.{self.param}"


@dataclass(frozen=True, slots=True)
class AllowRule:
    tool: str
    param: str
    allow: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"allow_tool_param:{self.tool}.{self.param}"


@dataclass(frozen=True, slots=True)
class MatchRule:
    tool: str
    param: str
    matches: str

    @property
    def name(self) -> str:
        return f"deny_tool_param_matching:{self.tool}.{self.param}"


@dataclass(frozen=True, slots=True)
class CommandRule:
    """``deny_command``: a shell command line that runs ``program`` with every one of
    ``flags`` (in any spelling :data:`~car_verify.rules.shell_words.FLAG_ALIASES`
    holds), every one of ``args`` among its words, and, when ``input_from`` is given,
    the output of one of those programs reaching it (``curl x | sh``); read as a shell
    parses it (:mod:`car_verify.rules.shell_words`); the tool's name compared without
    case (``Bash``, ``bash``)."""

    program: str
    flags: tuple[str, ...] = ()
    tool: str = "Bash"
    param: str = "command"
    args: tuple[str, ...] = ()
    input_from: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"deny_command:{self.tool}.{self.program}"

    def matches(self, command: Command) -> bool:
        """Whether ``command`` is one this rule denies."""
        from .shell_words import has_flags

        return (
            command.program == self.program
            and has_flags(command, self.flags)
            and all(arg in command.words[1:] for arg in self.args)
            and (not self.input_from or any(p in command.inputs for p in self.input_from))
        )


@dataclass(frozen=True, slots=True)
class RateRule:
    tool: str
    max_calls: int
    interval_secs: float

    @property
    def name(self) -> str:
        return f"rate_limit_tool:{self.tool}"


@dataclass(slots=True)
class PolicySet:
    """The file-authored rules, merged from every file in sorted filename order."""

    deny_tool: list[str] = field(default_factory=list)
    deny_keyword: list[str] = field(default_factory=list)
    deny_tool_param: list[ParamRule] = field(default_factory=list)
    allow_tool_param: list[AllowRule] = field(default_factory=list)
    deny_tool_param_matching: list[MatchRule] = field(default_factory=list)
    deny_command: list[CommandRule] = field(default_factory=list)
    rate_limit_tool: list[RateRule] = field(default_factory=list)
    trace_rule: list[TraceRule] = field(default_factory=list)

    def extend(self, other: PolicySet) -> None:
        for name in self.__dataclass_fields__:
            getattr(self, name).extend(getattr(other, name))

    def count(self) -> int:
        return sum(len(getattr(self, name)) for name in self.__dataclass_fields__)


def _rule_doc(rule: Any) -> Any:
    """One file rule as JSON (a string rule as it is)."""
    if isinstance(rule, str):
        return rule
    if isinstance(rule, TraceRule):
        from .trace import rule_to_dict

        doc = rule_to_dict(rule)
        doc.pop("origin", None)  # where it was written is not what it says
        return doc
    out: dict[str, Any] = {}
    for name in rule.__dataclass_fields__:
        value = getattr(rule, name)
        if value is ABSENT:
            continue
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


def _rule_of(kind: str, doc: Any) -> Any:
    """The rule :func:`_rule_doc` wrote, for a rule of ``kind``."""
    if kind in ("deny_tool", "deny_keyword"):
        if not isinstance(doc, str):
            raise ValueError(f"a {kind} entry is a string")
        return doc
    if kind == "trace_rule":
        from .trace import rule_from_dict

        return rule_from_dict(doc)
    cls = _RULE_CLASSES[kind]
    if not isinstance(doc, dict):
        raise ValueError(f"a {kind} entry is an object")
    values = {k: tuple(v) if isinstance(v, list) and k != "equals" else v for k, v in doc.items()}
    return cls(**values)


def policy_set_to_dict(rules: PolicySet) -> dict[str, list[Any]]:
    """Every file rule of ``rules`` as JSON, by kind (:func:`policy_set_from_dict`
    reads it back equal, but for where each trace rule was written)."""
    return {
        kind: [_rule_doc(r) for r in getattr(rules, kind)] for kind in rules.__dataclass_fields__
    }


def policy_set_from_dict(doc: Mapping[str, Any]) -> PolicySet:
    """The rules :func:`policy_set_to_dict` wrote; ValueError (or KeyError, TypeError)
    for anything else."""
    rules = PolicySet()
    for kind, items in doc.items():
        if kind not in rules.__dataclass_fields__ or not isinstance(items, list):
            raise ValueError(f"unknown rule kind {kind!r}")
        getattr(rules, kind).extend(_rule_of(kind, item) for item in items)
    return rules


def rule_identities(rules: PolicySet) -> list[tuple[str, str]]:
    """Each file rule as (kind, its content as canonical JSON): two rules that say
    the same thing have the same identity, wherever they were written."""
    return [
        (kind, json.dumps(_rule_doc(r), sort_keys=True, ensure_ascii=False))
        for kind in rules.__dataclass_fields__
        for r in getattr(rules, kind)
    ]


# --- registered rules (the FFI's registerPolicy) ------------------------------------------


@dataclass(frozen=True, slots=True)
class Registered:
    name: str
    kind: str
    target: str | None = None
    key: str | None = None
    pattern: str | None = None
    value: Any = None
    callback: Callback | None = None


_RULE_CLASSES: dict[str, type] = {
    "deny_tool_param": ParamRule,
    "allow_tool_param": AllowRule,
    "deny_tool_param_matching": MatchRule,
    "deny_command": CommandRule,
    "rate_limit_tool": RateRule,
}


class PolicyEngine:
    """Checks actions against registered rules and a :class:`PolicySet`.

    ``clock`` (seconds, monotonic) drives the rate-limit windows; tests pass a fake.
    """

    def __init__(
        self, rules: PolicySet | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rules = rules or PolicySet()
        self.registered: list[Registered] = []
        self.clock = clock
        self._windows: dict[int, deque[float]] = {}
        self._patterns: dict[int, Any] = {}
        for index, rule in enumerate(self.rules.deny_tool_param_matching):
            self._patterns[index] = compile_pattern(rule.matches)

    def __repr__(self) -> str:
        return f"PolicyEngine({self.rules.count()} rules, {len(self.registered)} registered)"

    @property
    def trace_rules(self) -> list[TraceRule]:
        return list(self.rules.trace_rule)

    @property
    def windows(self) -> dict[int, tuple[float, ...]]:
        """The admitted calls' times of each rate limit with any (by its index in
        ``rules.rate_limit_tool``), to carry the windows to another engine."""
        return {index: tuple(window) for index, window in self._windows.items() if window}

    def fresh(self, *, clock: Callable[[], float] = time.monotonic) -> PolicyEngine:
        """An engine over the same rules (registered ones too), with empty windows."""
        engine = PolicyEngine(self.rules, clock=clock)
        engine.registered = list(self.registered)
        return engine

    def admit(
        self,
        gate: TraceGate | None,
        tool: str,
        params: Mapping[str, Any],
        state: Mapping[str, Any] | None = None,
    ) -> list[tuple[str, str]]:
        """Why a call is refused at dispatch, as (rule name, reason) pairs: this
        engine's rules first, then, for a call they all allow, the trace rules of
        ``gate``, which record it as dispatched when they admit it too. The order
        the run-time gate (:class:`car_verify.plan.gate.CallGate`) keeps; the
        analyses of rule sets model a run with it."""
        found = self.check_call(tool, params, state)
        if not found and gate is not None:
            found = [(v.policy_name, v.reason) for v in gate.dispatch(tool, params)]
        return found

    def restore_windows(self, windows: Mapping[int, Iterable[float]]) -> None:
        """Take up the windows another engine over the same rules saved (``windows``)."""
        for index, times in windows.items():
            self._windows[index] = deque(times)

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
        if kind == "deny_tool":
            if target is None:
                raise UsageError("deny_tool needs a target tool")
            self.registered.append(Registered(name, kind, target))
        elif kind == "deny_tool_param":
            if target is None or key is None or pattern is None:
                raise UsageError("deny_tool_param needs a target, a key and a pattern")
            self.registered.append(Registered(name, kind, target, key, pattern))
        elif kind == "require_state":
            if key is None or value_json is None:
                raise UsageError("require_state needs a key and value_json")
            try:
                value = json.loads(value_json)
            except ValueError:
                raise UsageError(f"require_state value_json is not JSON: {value_json!r}") from None
            self.registered.append(Registered(name, kind, key=key, value=value))
        elif kind == "deny_tool_callback":
            if callback is None:
                raise UsageError("deny_tool_callback needs a callback")
            self.registered.append(Registered(name, kind, target, callback=callback))
        else:
            raise UsageError(f"unknown policy rule type {kind!r}")

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
        cannot be decided on it, each as (rule name, reason) pairs. A callback rule
        is handed ``action``, or a ``tool_call`` action made from the call when there
        is none. A rate limit takes a slot of its window when it admits the call."""
        out: list[tuple[str, str]] = []
        undecided: list[tuple[str, str]] = []

        def deny(name: str, reason: str) -> None:
            out.append((name, reason))

        for rule in self.registered:
            self._check_registered(rule, tool, params, action, state, deny)
        rules = self.rules
        if tool is not None and tool in rules.deny_tool:
            deny(f"deny_tool:{tool}", f"tool {tool!r} is denied")
        read: dict[str, list[str]] = {}  # each parameter read once per call

        def texts(param: str) -> list[str]:
            if param not in read:
                read[param] = texts_of(params[param])
            return read[param]

        readers = len(rules.deny_keyword) + len(rules.deny_tool_param)
        if readers and params:
            size = sum(len(t) for name in params for t in texts(name))
            if size * readers > MAX_CONTENT_WORK:
                deny(
                    "deny_keyword:work-bound",
                    f"the parameters of {tool!r} ({size:,} characters) are too large to check "
                    f"against {readers:,} content rules within the work bound: denied (fails "
                    "closed)",
                )
                return out, undecided
        for position, keyword in enumerate(rules.deny_keyword):
            if any(keyword in t for name in params for t in (str(name), *texts(name))):
                deny(
                    keyword_rule_name(position),
                    f"a parameter contains denied keyword #{position + 1}",
                )
        for p in rules.deny_tool_param:
            if p.tool != tool or p.param not in params:
                continue
            value = params[p.param]
            if p.equals is not ABSENT and not json_equal(value, p.equals):
                continue
            if p.contains is not None and not any(p.contains in t for t in texts(p.param)):
                continue
            how = (
                "is present"
                if p.equals is ABSENT and p.contains is None
                else "matches a denied value"
            )
            deny(p.name, f"parameter {p.param!r} of {tool!r} {how}")
        for a in rules.allow_tool_param:
            if a.tool != tool:
                continue
            if a.param not in params:
                deny(a.name, f"parameter {a.param!r} of {tool!r} is required and absent")
            elif coerce(params[a.param]) not in a.allow:
                deny(a.name, f"parameter {a.param!r} of {tool!r} is not an allowed value")
        for index, m in enumerate(rules.deny_tool_param_matching):
            if m.tool != tool:
                continue
            pattern = self._patterns[index]
            if pattern is None:
                deny(
                    m.name,
                    f"the pattern for {tool!r}.{m.param} does not compile: every call is denied",
                )
            elif m.param in params:
                each = texts(m.param)
                length = sum(len(t) for t in each)
                if length * int(pattern.programsize) > MAX_MATCH_WORK:
                    deny(
                        m.name,
                        f"parameter {m.param!r} of {tool!r} is too long ({length:,} "
                        "characters) to match the rule's pattern within its work bound: "
                        "denied (fails closed)",
                    )
                elif any(pattern.search(t) for t in each):
                    deny(m.name, f"parameter {m.param!r} of {tool!r} matches a denied pattern")
        for c in rules.deny_command:
            if tool is None or tool.casefold() != c.tool.casefold() or c.param not in params:
                continue
            from .shell_words import ShellError, read_commands

            line = params[c.param]
            if isinstance(line, list) and line and all(isinstance(w, str) for w in line):
                import shlex

                line = shlex.join(line)  # an argv: the words as they are
            elif not isinstance(line, str):
                undecided.append(
                    (
                        c.name,
                        f"parameter {c.param!r} of {tool!r} is no command line (a "
                        f"{type(line).__name__}): what it runs cannot be decided",
                    )
                )
                continue
            try:
                reading = read_commands(line)
            except ShellError as err:
                deny(
                    c.name,
                    f"parameter {c.param!r} of {tool!r} cannot be read as a shell command "
                    f"line ({err}): denied (fails closed)",
                )
                continue
            if any(c.matches(r) for r in reading.commands):
                with_flags = f" with {' '.join(c.flags)}" if c.flags else ""
                fed = f" fed by {' or '.join(c.input_from)}" if c.input_from else ""
                ran_what = " ".join((c.program, *c.args))
                deny(c.name, f"parameter {c.param!r} of {tool!r} runs {ran_what}{with_flags}{fed}")
                continue
            why = [u.reason for u in reading.undecided if u.program in (None, c.program)]
            if why:
                undecided.append(
                    (
                        c.name,
                        f"parameter {c.param!r} of {tool!r} may run {c.program}, which cannot "
                        f"be decided before it runs ({'; '.join(dict.fromkeys(why))})",
                    )
                )
        # Last: a call denied only by this rule consumes no budget; any other call does.
        for index, r in enumerate(rules.rate_limit_tool):
            if r.tool != tool:
                continue
            if self._over_limit(index, r):
                deny(
                    r.name,
                    f"{tool!r} may be called at most {r.max_calls} times in {r.interval_secs:g} s",
                )
        return out, undecided

    def _check_registered(
        self,
        rule: Registered,
        tool: str | None,
        params: Mapping[str, Any],
        action: Action | None,
        state: Mapping[str, Any] | None,
        deny: Callable[[str, str], None],
    ) -> None:
        if rule.kind == "deny_tool" and tool == rule.target:
            deny(rule.name, f"tool {tool!r} is denied")
        elif rule.kind == "deny_tool_param" and tool == rule.target:
            assert rule.key is not None and rule.pattern is not None
            if rule.key in params and rule.pattern in coerce(params[rule.key]):
                deny(rule.name, f"param {rule.key!r} matches a denied pattern")
        elif rule.kind == "require_state":
            actual = (state or {}).get(rule.key or "", ABSENT)
            if actual is ABSENT or not json_equal(actual, rule.value):
                deny(rule.name, f"requires state {rule.key!r} to hold the rule's value")
        elif rule.kind == "deny_tool_callback" and rule.callback is not None:
            if rule.target is not None and tool != rule.target:
                return
            if action is None:
                from ..ir.model import Action

                action = Action(id="call", type="tool_call", tool=tool, parameters=dict(params))
            verdict = rule.callback(tool or "", params, action)
            if verdict:
                reason = verdict if isinstance(verdict, str) else "denied by callback"
                deny(rule.name, reason)

    def _over_limit(self, index: int, rule: RateRule) -> bool:
        """Admit (and take a slot) or deny (taking nothing): the sliding window."""
        now = self.clock()
        window = self._windows.setdefault(index, deque())
        while window and now - window[0] >= rule.interval_secs:
            window.popleft()
        if len(window) >= rule.max_calls:
            return True
        window.append(now)
        return False


#: The largest compiled RE2 program a policy pattern may have. RE2 is linear in the
#: input, but its DFA runs out of memory on large programs and falls back to the
#: NFA, whose cost is the program size times the input. The bound keeps a match on
#: 100 kB near 10 ms (the measurements are in docs/security.md).
MAX_PATTERN_PROGRAM = 1000
#: The most work one match may do: the pattern's program size times the length of
#: the text (RE2 runs in time linear in both; ``(.*a){40}``, 444 instructions, took
#: 14.5 s on a 5 MB command). Past it the call is denied, never let through unread.
MAX_MATCH_WORK = 100_000_000


@functools.lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> Any:
    """RE2 (linear time, no backtracking); None when the pattern does not compile.
    RE2 writes nothing to stderr (``log_errors`` off). Compiled once per pattern:
    the engine, the load-time cost check and the schema ``pattern`` keyword (which
    checks every value it is given) share it; a compiled pattern is immutable."""
    import re2

    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options=options)
    except Exception:
        return None


def pattern_cost(pattern: str) -> int | None:
    """The size of ``pattern``'s compiled RE2 program; None if it does not compile."""
    compiled = compile_pattern(pattern)
    return None if compiled is None else int(compiled.programsize)


# --- loading files ------------------------------------------------------------------------------

_KEYS = {
    "deny_tool",
    "deny_keyword",
    "deny_tool_param",
    "allow_tool_param",
    "deny_tool_param_matching",
    "deny_command",
    "rate_limit_tool",
    "trace_rule",
}

#: The kinds of rule whose names are finding codes (``deny_tool:rm``): the file keys
#: and the registered ``require_state``.
RULE_KINDS = frozenset({*_KEYS, "require_state"})


class _Reader:
    """Strict typed access to one parsed TOML file; every error names the file and key."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.source = str(path)

    def fail(self, where: Sequence[str | int], problem: str) -> InputError:
        return InputError(problem, list(where), source=self.source)

    #: A value of each array of strings, for the examples in the messages.
    _SAMPLES = (
        ("deny_tool", "rm"),
        ("deny_keyword", "rm -rf"),
        ("allow", "staging"),
        ("flags", "--force"),
    )

    def _form(self, where: Sequence[str | int]) -> str:
        """The expected form of the array of strings at ``where``, as an example:
        ``deny_tool = ["rm"]``."""
        key = str(where[-1]) if where else "key"
        return f'{key} = ["{dict(self._SAMPLES).get(key, "...")}"]'

    def strings(self, value: Any, where: Sequence[str | int]) -> list[str]:
        if not isinstance(value, list):
            raise self.fail(where, f"expected an array of strings ({self._form(where)})")
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise self.fail([*where, i], f"expected a string ({self._form(where)})")
        return list(value)

    def tables(
        self,
        value: Any,
        where: str,
        required: dict[str, type | tuple[type, ...]],
        optional: dict[str, type | tuple[type, ...] | None],
    ) -> list[dict[str, Any]]:
        if not isinstance(value, list):
            raise self.fail([where], f"expected an array of tables ([[{where}]])")
        out = []
        for i, table in enumerate(value):
            if not isinstance(table, dict):
                raise self.fail([where, i], f"expected a table ([[{where}]] with its keys)")
            for key in table:
                if key not in required and key not in optional:
                    known = ", ".join(sorted([*required, *optional]))
                    raise self.fail([where, i, key], f"unknown key (expected one of {known})")
            for key in required:
                if key not in table:
                    raise self.fail([where, i], f"missing required key {key!r}")
            for key, kind in {**required, **optional}.items():
                if key in table and kind is not None:
                    self.check_type(table[key], kind, [where, i, key])
            out.append(table)
        return out

    def _sample(self, kind: type | tuple[type, ...], where: Sequence[str | int]) -> str:
        """An example of the expected form of a table's key (`` (rule = "...")``)."""
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if list in kinds and where:
            return f" ({self._form(where)})"
        examples = {str: '"..."', int: "3", float: "0.5", bool: "true"}
        first = next((examples[k] for k in kinds if k in examples), None)
        if first is None or not where:
            return ""
        return f" ({where[-1]} = {first})"

    def check_type(self, value: Any, kind: type | tuple[type, ...], where: list[str | int]) -> None:
        if (
            isinstance(value, bool)
            and kind is not bool
            and bool not in (kind if isinstance(kind, tuple) else (kind,))
        ):
            raise self.fail(
                where, f"expected {_type_name(kind)}, got a boolean{self._sample(kind, where)}"
            )
        if not isinstance(value, kind):
            got = type(value).__name__
            raise self.fail(
                where, f"expected {_type_name(kind)}, got {got}{self._sample(kind, where)}"
            )


def _type_name(kind: type | tuple[type, ...]) -> str:
    names = {
        str: "a string",
        int: "an integer",
        float: "a number",
        list: "an array",
        bool: "a boolean",
    }
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _json_value(reader: _Reader, value: Any, where: list[str | int]) -> Any:
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise reader.fail(where, "expected a finite number")
        return value
    if isinstance(value, list):
        return [_json_value(reader, v, [*where, i]) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _json_value(reader, v, [*where, k]) for k, v in value.items()}
    raise reader.fail(where, f"a {type(value).__name__} is not a JSON value")


def load_policy_file(path: str | os.PathLike[str]) -> PolicySet:
    """Read one policy file strictly: malformed TOML, an unknown key or a wrong type
    raises InputError naming the file (and the key)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read policy file: {err}", source=str(file)) from None
    return load_policy_text(text, source=str(file))


def load_policy_text(text: str, *, source: str = "<policies>") -> PolicySet:
    """Read policy TOML text strictly (errors name ``source`` and the key)."""
    import tomllib

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"not valid TOML: {err}", source=str(Path(source))) from None
    except RecursionError:
        raise InputError("not valid TOML: nested too deeply", source=str(Path(source))) from None
    return _policy_set(doc, _Reader(Path(source)), text)


def load_policy_object(doc: Mapping[str, Any], *, source: str = "<policies>") -> PolicySet:
    """Read a policy file's content given as a JSON object (the shape its TOML
    parses to) as strictly as :func:`load_policy_text` reads the text."""
    if not isinstance(doc, Mapping):
        raise InputError("expected an object (the policy file's tables)", source=source)
    return _policy_set(doc, _Reader(Path(source)), None)


def _policy_set(doc: Mapping[str, Any], reader: _Reader, text: str | None) -> PolicySet:
    """The rules of one parsed policy file (``text``: its TOML, to place a trace
    rule's error in it; None for a JSON object)."""
    file = reader.path
    rules = PolicySet()
    for key in doc:
        if key not in _KEYS:
            raise reader.fail([key], f"unknown key (expected one of {', '.join(sorted(_KEYS))})")
    if "deny_tool" in doc:
        rules.deny_tool = reader.strings(doc["deny_tool"], ["deny_tool"])
    if "deny_keyword" in doc:
        rules.deny_keyword = reader.strings(doc["deny_keyword"], ["deny_keyword"])
    for i, t in enumerate(
        reader.tables(
            doc.get("deny_tool_param", []),
            "deny_tool_param",
            {"tool": str, "param": str},
            {"equals": None, "contains": str},
        )
    ):
        equals = (
            _json_value(reader, t["equals"], ["deny_tool_param", i, "equals"])
            if "equals" in t
            else ABSENT
        )
        rules.deny_tool_param.append(ParamRule(t["tool"], t["param"], equals, t.get("contains")))
    for i, t in enumerate(
        reader.tables(
            doc.get("allow_tool_param", []),
            "allow_tool_param",
            {"tool": str, "param": str},
            {"allow": list},
        )
    ):
        allow = reader.strings(t.get("allow", []), ["allow_tool_param", i, "allow"])
        rules.allow_tool_param.append(AllowRule(t["tool"], t["param"], tuple(allow)))
    for t in reader.tables(
        doc.get("deny_tool_param_matching", []),
        "deny_tool_param_matching",
        {"tool": str, "param": str, "matches": str},
        {},
    ):
        cost = pattern_cost(t["matches"])
        if cost is not None and cost > MAX_PATTERN_PROGRAM:
            index = len(rules.deny_tool_param_matching)
            raise reader.fail(
                ["deny_tool_param_matching", index, "matches"],
                f"the pattern compiles to {cost:,} RE2 instructions, over the bound of "
                f"{MAX_PATTERN_PROGRAM:,}: matching it could take seconds per value",
            )
        rules.deny_tool_param_matching.append(MatchRule(t["tool"], t["param"], t["matches"]))
    for i, t in enumerate(
        reader.tables(
            doc.get("deny_command", []),
            "deny_command",
            {"program": str},
            {"flags": list, "tool": str, "param": str, "args": list, "input_from": list},
        )
    ):
        flags = reader.strings(t.get("flags", []), ["deny_command", i, "flags"])
        args = reader.strings(t.get("args", []), ["deny_command", i, "args"])
        input_from = reader.strings(t.get("input_from", []), ["deny_command", i, "input_from"])
        for n, flag in enumerate(flags):
            if not flag.startswith("-") or flag in ("-", "--"):
                raise reader.fail(["deny_command", i, "flags", n], "expected a flag: -r, --force")
        split = [f"-{c}" for f in flags if not f.startswith("--") for c in f[1:]]
        split += [f for f in flags if f.startswith("--")]  # -rf as -r and -f, as matched
        rules.deny_command.append(
            CommandRule(
                t["program"],
                tuple(dict.fromkeys(split)),
                t.get("tool", "Bash"),
                t.get("param", "command"),
                tuple(args),
                tuple(input_from),
            )
        )
    for i, t in enumerate(
        reader.tables(
            doc.get("rate_limit_tool", []),
            "rate_limit_tool",
            {"tool": str, "max_calls": int, "interval_secs": (int, float)},
            {},
        )
    ):
        if t["max_calls"] < 0:
            raise reader.fail(["rate_limit_tool", i, "max_calls"], "must not be negative")
        if not math.isfinite(t["interval_secs"]) or t["interval_secs"] < 0:
            raise reader.fail(
                ["rate_limit_tool", i, "interval_secs"], "must be a non-negative number"
            )
        rules.rate_limit_tool.append(RateRule(t["tool"], t["max_calls"], float(t["interval_secs"])))
    cursor = 0  # the rules stand in the file in their order: each is looked for after the last
    for i, t in enumerate(
        reader.tables(doc.get("trace_rule", []), "trace_rule", {"rule": str}, {"name": str})
    ):
        start = None if text is None else _position_of(text, t["rule"], cursor)
        if start is not None:
            cursor = start[2]
        try:
            parsed = parse_trace_rule(t["rule"], name=t.get("name", ""), source=str(file))
            at = start
            origin = f"{file.name}:{at[0]}" if at is not None else f"{file.name}:trace_rule[{i}]"
            rules.trace_rule.append(dataclasses.replace(parsed, origin=origin))
        except InputError as err:
            where = f"trace_rule[{i}].rule"
            if start is None:  # written with escapes: only the rule's own position is known
                problem = f"{where}, line {err.line} column {err.column} of the rule: {err.problem}"
                raise InputError(problem, source=str(file)) from None
            line, column, _ = start
            at_line = err.line or 1
            raise InputError(
                f"{where}: {err.problem}",
                source=str(file),
                line=line + at_line - 1,
                column=(column if at_line == 1 else 1) + (err.column or 1) - 1,
            ) from None
    return rules


def _position_of(text: str, needle: str, after: int = 0) -> tuple[int, int, int] | None:
    """The file line and column where a rule's text starts, and the offset past it
    (TOML gives no positions: found by its text, as the value of a ``rule`` key, at
    or after offset ``after``; a rule written with escapes is not found). A comment
    or a ``name`` that holds the same text, or an earlier rule that holds it whole,
    is not taken for it."""
    import re

    quote = r"(?:\"\"\"\r?\n?|'''\r?\n?|\"|')"
    value = re.compile(r"(?<![\w-])rule\s*=\s*" + quote + re.escape(needle))
    for found in value.finditer(text, after):
        line_start = text.rfind("\n", 0, found.start()) + 1
        if "#" in text[line_start : found.start()]:  # inside a comment
            continue
        index = found.end() - len(needle)
        line_start = text.rfind("\n", 0, index) + 1
        return text.count("\n", 0, index) + 1, index - line_start + 1, found.end()
    return None


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


def load_policies(directory: str | os.PathLike[str] | None = None) -> LoadedPolicies:
    """Load every ``*.toml`` of a policies directory in sorted filename order.

    ``directory`` may be the policies directory itself or a project directory that
    holds ``.car/policies``; without it, the nearest ``.car/policies`` walking up
    from the working directory is used (:func:`policies_folder`). A missing
    directory is not an error; a malformed file fails the whole load, naming the file.
    """
    folder, searched = policies_folder(directory)
    if folder is None:
        return LoadedPolicies(None, [], PolicySet(), searched)
    read, skipped = _policy_files(folder)
    rules = PolicySet()
    for file, text in read:
        rules.extend(load_policy_text(text, source=str(file)))
        if rules.count() > MAX_RULES or len(rules.trace_rule) > MAX_TRACE_RULES:
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
