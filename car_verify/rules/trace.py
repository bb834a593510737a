"""Trace rules: a small past-time temporal language over a run's tool calls.

The upstream runtime refuses to load ``trace_rule``; car-verify enforces it twice:

* :class:`TraceGate` decides at dispatch time from the trace so far, in O(1) per
  event and rule (an incremental monitor: one flag or counter per rule);
* :func:`check_schedules` checks a proposal statically against the schedules
  the executor can run (``schedules="levels"``: the levels in order, any
  interleaving inside a level; ``"any"``: every order the DAG allows), each call
  succeeding or failing where a failure does not stop the run, exploring
  (finished actions, failed actions, monitor state) with memoization up to a
  budget; every action that some schedule makes break a rule is reported, each
  with a schedule that shows it.

The grammar is ``grammars/trace_rules.lark``; see ``docs/policies.md`` for the
language reference. Rules read aloud::

    never send_email after read_secret
    deploy where env == "prod" only after run_tests succeeded
    at most 3 http_request
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from ..base.errors import InputError
from ..base.schedules import Schedules
from ..base.values import ABSENT, evaluate, json_equal

if TYPE_CHECKING:  # the schedule check loads them; the gate (the agent hook) never does
    from ..ir.model import ActionProposal
    from ..semantics.dag import Dag, Readiness

__all__ = [
    "Call",
    "Counterexample",
    "ScheduleCheck",
    "Test",
    "TraceGate",
    "TraceRule",
    "check_schedules",
    "parse_trace_rule",
    "unwound",
]

Outcome = Literal["succeeded", "failed"]

#: A path kept as a linked list, its last step and the path before it (None: no
#: step): a breadth-first search that extends a path copies nothing, so searches
#: whose paths run long (``at most 100000``) stay linear.
LinkedPath = tuple[Any, Any] | None


def reads_outcome(rule: TraceRule) -> bool:
    """Whether the rule's monitor changes when a call's outcome is reported: its
    event names an outcome, or it is an ``only after`` rule (counted at the report)."""
    return rule.event is not None and (rule.event.outcome is not None or rule.kind == "only_after")


def unwound(path: LinkedPath) -> tuple[Any, ...]:
    """A linked path's steps, first to last."""
    steps: list[Any] = []
    while path is not None:
        steps.append(path[0])
        path = path[1]
    return tuple(reversed(steps))


@dataclass(frozen=True, slots=True)
class Test:
    """A condition on one parameter: ``==``, ``!=``, ``contains`` or ``exists``.

    Values are compared as docs/semantics.md §2 says: ``==`` is deep JSON equality
    (numbers by value, exactly, however large); ``contains`` is a substring test
    on a string parameter and deep-equal membership in an array parameter."""

    param: str
    op: Literal["equals", "differs", "contains", "present"]
    value: Any = None

    def holds(self, params: Mapping[str, Any]) -> bool:
        actual = params.get(self.param, ABSENT)
        if self.op == "present":
            return actual is not ABSENT
        if self.op == "equals":
            return actual is not ABSENT and json_equal(actual, self.value)
        if self.op == "differs":
            return actual is ABSENT or not json_equal(actual, self.value)
        return evaluate("contains", actual, self.value)


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call pattern: a tool (None: any tool), parameter tests, an outcome."""

    tool: str | None
    tests: tuple[Test, ...] = ()
    outcome: Outcome | None = None

    def matches(self, tool: str, params: Mapping[str, Any]) -> bool:
        return (self.tool is None or self.tool == tool) and all(t.holds(params) for t in self.tests)


@dataclass(frozen=True, slots=True)
class TraceRule:
    """One parsed rule. ``kind``: ``never``, ``never_after``, ``only_after``, ``at_most``."""

    kind: Literal["never", "never_after", "only_after", "at_most"]
    call: Call
    event: Call | None = None
    limit: int = 0
    text: str = ""
    name: str = ""
    #: Where the rule was written (``file:line``), when it came from a file.
    origin: str = ""

    @property
    def has_literals(self) -> bool:
        """Whether the rule's tests compare with a value written in the rule (a
        literal, which may be a secret: ``body contains "sk-live-..."``)."""
        return any(
            t.op != "present" for c in (self.call, self.event) if c is not None for t in c.tests
        )

    @property
    def policy_name(self) -> str:
        """The rule's stable name, never holding a literal of the rule: its ``name``;
        else its text when the text holds no literal; else where it was written;
        else its canonical text with each literal shown as ``…``."""
        if self.name:
            return f"trace_rule:{self.name}"
        if not self.has_literals:
            return f"trace_rule:{self.text or self.to_text()}"
        if self.origin:
            return f"trace_rule:{self.origin}"
        return f"trace_rule:{_masked_text(self)}"

    def to_text(self) -> str:
        """The rule in canonical text (parses back to an equal rule)."""
        if self.kind == "never":
            return f"never {_call_text(self.call)}"
        if self.kind == "at_most":
            return f"at most {self.limit} {_call_text(self.call)}"
        assert self.event is not None
        joint = "after" if self.kind == "never_after" else "only after"
        head = (
            f"never {_call_text(self.call)}"
            if self.kind == "never_after"
            else _call_text(self.call)
        )
        return f"{head} {joint} {_call_text(self.event)}"

    def mentions(self, tool: str) -> bool:
        """Whether a call of ``tool`` is one the rule's call or its event can match."""
        call, event = self.call.tool, self.event
        return (
            call is None
            or call == tool
            or (event is not None and (event.tool is None or event.tool == tool))
        )

    def reads(self, tool: str) -> set[str]:
        """The parameters whose values the rule's tests read of a call of ``tool``. An
        ``exists`` test reads none: it asks only whether the parameter is there (a
        parameter that is another action's output is there whenever the call is
        sent, as its reference's text is there in the plan)."""
        return {
            t.param
            for c in (self.call, self.event)
            if c is not None and (c.tool is None or c.tool == tool)
            for t in c.tests
            if t.op != "present"
        }


def written(name: str) -> str:
    """A tool or parameter name as the rule language writes it: bare when it is a
    word the grammar's ``NAME`` reads, else quoted (``"node2:sub2"``)."""
    return name if _NAME.fullmatch(name) else json.dumps(name, ensure_ascii=False)


def _call_text(call: Call, *, masked: bool = False) -> str:
    """A call pattern as the rule language writes it (``masked``: each literal as ``…``)."""
    text = "any tool" if call.tool is None else written(call.tool)
    if call.tests:
        parts = []
        for t in call.tests:
            literal = "…" if masked else json.dumps(t.value)
            param = written(t.param)
            if t.op == "present":
                parts.append(f"{param} exists")
            elif t.op == "contains":
                parts.append(f"{param} contains {literal}")
            else:
                parts.append(f"{param} {'==' if t.op == 'equals' else '!='} {literal}")
        text += " where " + " and ".join(parts)
    if call.outcome:
        text += f" {call.outcome}"
    return text


def _masked_text(rule: TraceRule) -> str:
    """The rule's canonical text with every literal shown as ``…``."""
    call = _call_text(rule.call, masked=True)
    if rule.kind == "never":
        return f"never {call}"
    if rule.kind == "at_most":
        return f"at most {rule.limit} {call}"
    assert rule.event is not None
    event = _call_text(rule.event, masked=True)
    if rule.kind == "never_after":
        return f"never {call} after {event}"
    return f"{call} only after {event}"


@lru_cache(maxsize=1)
def _parser() -> Any:
    """The rule parser, as used: built without lark's ``strict`` collision check,
    which proves no two terminals can match the same text but costs about 0.6 s per
    process (too much for a hook run once per tool call). :func:`_strict_parser` is
    the checked build; a test parses the same rules with both."""
    from lark import Lark

    return Lark(_grammar_text(), **_OPTIONS, cache=True)


def _strict_parser() -> Any:
    """The same parser with lark's ``strict`` terminal-collision check (the tests)."""
    from lark import Lark

    return Lark(_grammar_text(), **_OPTIONS, strict=True)


_OPTIONS: dict[str, Any] = {
    "parser": "lalr",
    "propagate_positions": True,
    "maybe_placeholders": False,
}


def _grammar_text() -> str:
    """The grammar, installed as ``car_verify.grammars`` from the top-level ``grammars/``."""
    from importlib.resources import files

    return (files("car_verify.grammars") / "trace_rules.lark").read_text(encoding="utf-8")


#: Rules known already, by (text, name): :func:`remember` fills it (the agent hook,
#: from its cache, so that a hook call parses nothing and never imports lark).
_KNOWN: dict[tuple[str, str], TraceRule] = {}


def remember(rules: Iterable[TraceRule]) -> None:
    """Let :func:`parse_trace_rule` answer these rules without parsing them again."""
    for rule in rules:
        _KNOWN[(rule.text, rule.name)] = rule


def remembered(rule: TraceRule) -> bool:
    """Whether :func:`parse_trace_rule` answers ``rule`` without parsing it."""
    return _KNOWN.get((rule.text, rule.name)) == rule


def rule_to_dict(rule: TraceRule) -> dict[str, Any]:
    """A parsed rule as JSON (:func:`rule_from_dict` reads it back, equal)."""

    def call(c: Call | None) -> dict[str, Any] | None:
        if c is None:
            return None
        tests = [{"param": t.param, "op": t.op, "value": t.value} for t in c.tests]
        return {"tool": c.tool, "tests": tests, "outcome": c.outcome}

    return {
        "kind": rule.kind,
        "call": call(rule.call),
        "event": call(rule.event),
        "limit": rule.limit,
        "text": rule.text,
        "name": rule.name,
        "origin": rule.origin,
    }


_KINDS = ("never", "never_after", "only_after", "at_most")
_OPS = ("equals", "differs", "contains", "present")
#: A tool or parameter name as the grammar's NAME reads it (a keyword is none).
_NAME = re.compile(
    r"(?!(never|after|only|at|most|any|tool|where|and|contains|exists|succeeded|failed"
    r"|true|false|null)(?![A-Za-z0-9_.\-]))[A-Za-z_][A-Za-z0-9_.\-]*"
)


def rule_from_dict(doc: Mapping[str, Any]) -> TraceRule:
    """The rule :func:`rule_to_dict` wrote; ValueError for anything a parse of a
    rule's text could not give (an unknown kind, operator or outcome, a tool or
    parameter name that is no bare word and not quoted in the rule's text, a value
    that is no literal)."""

    text = doc["text"] if isinstance(doc.get("text"), str) else ""

    def name(value: Any) -> str:  # a bare word, or quoted in the rule's own text
        quoted = isinstance(value, str) and json.dumps(value, ensure_ascii=False) in text
        if not isinstance(value, str) or not (_NAME.fullmatch(value) or quoted):
            raise ValueError(f"not a name the rule's text writes: {value!r}")
        return value

    def literal(value: Any) -> Any:
        if value is None or isinstance(value, (str, bool, int)):
            return value
        if isinstance(value, float) and math.isfinite(value):
            return value
        raise ValueError(f"not a literal of the rule language: {value!r}")

    def call(c: Mapping[str, Any] | None) -> Call | None:
        if c is None:
            return None
        tests = []
        for t in c["tests"]:
            if t["op"] not in _OPS:
                raise ValueError(f"unknown test {t['op']!r}")
            tests.append(Test(name(t["param"]), t["op"], literal(t["value"])))
        if c["outcome"] not in (None, "succeeded", "failed"):
            raise ValueError(f"unknown outcome {c['outcome']!r}")
        tool = None if c["tool"] is None else name(c["tool"])
        return Call(tool, tuple(tests), c["outcome"])

    if doc["kind"] not in _KINDS:
        raise ValueError(f"unknown rule kind {doc['kind']!r}")
    if (doc["event"] is None) != (doc["kind"] in ("never", "at_most")):
        raise ValueError("an event belongs to the after rules only")
    if type(doc["limit"]) is not int or doc["limit"] < 0:
        raise ValueError("a limit is a non-negative integer")

    head = call(doc["call"])
    assert head is not None
    return TraceRule(
        doc["kind"],
        head,
        call(doc["event"]),
        int(doc["limit"]),
        doc["text"],
        doc["name"],
        str(doc.get("origin", "")),
    )


def parse_trace_rule(text: str, *, name: str = "", source: str | None = None) -> TraceRule:
    """Parse one rule; a syntax error is an InputError with the line and column."""
    known = _KNOWN.get((text, name))
    if known is not None:
        return known
    from lark.exceptions import (
        UnexpectedCharacters,
        UnexpectedEOF,
        UnexpectedInput,
        UnexpectedToken,
    )

    try:
        tree = _parser().parse(text)
    except UnexpectedInput as err:
        if isinstance(err, UnexpectedEOF):
            problem = "the rule ends too early"
        elif isinstance(err, UnexpectedToken):
            problem = (
                f"unexpected {err.token!s}"
                if err.token.type != "$END"
                else "the rule ends too early"
            )
        elif isinstance(err, UnexpectedCharacters):
            at = err.pos_in_stream or 0
            problem = f"unexpected character {text[at : at + 1]!r}"
        else:  # pragma: no cover - lark's other UnexpectedInput kinds
            problem = "cannot read the rule"
        expected = sorted(_friendly(t) for t in (getattr(err, "expected", None) or ()))
        hint = f"; expected {', '.join(expected)}" if expected else ""
        raise InputError(
            f"trace rule {text!r}: {problem}{hint}",
            source=source,
            line=getattr(err, "line", None),
            column=getattr(err, "column", None),
        ) from None

    def string(token: Any) -> str:
        try:
            return str(json.loads(str(token)))
        except ValueError:
            raise InputError(
                f"trace rule {text!r}: {token!s} is not a valid string literal",
                source=source,
                line=token.line,
                column=token.column,
            ) from None

    def number(token: Any) -> int | float:
        """An integer exactly (Python's are unbounded), anything else as a float."""
        digits = str(token).lstrip("+")
        if digits.lstrip("-").isdigit():
            return int(digits)
        parsed = float(digits)
        if not math.isfinite(parsed):
            raise InputError(
                f"trace rule {text!r}: {token!s} is too large for a number",
                source=source,
                line=token.line,
                column=token.column,
            )
        return parsed

    def value(tree: Any) -> Any:
        kind = tree.data
        if kind == "string":
            return string(tree.children[0])
        if kind == "number":
            return number(tree.children[0])
        return {"true": True, "false": False, "null": None}[str(kind)]

    def named(token: Any) -> str:
        """A bare name, or a quoted one: any text, "" too (the runtime dispatches a
        tool named "", and a JSON key may be empty)."""
        return str(token) if token.type != "ESCAPED_STRING" else string(token)

    def call(tree: Any) -> Call:
        tool: str | None = None
        tests: list[Test] = []
        outcome: Outcome | None = None
        for child in tree.children:
            if child.data == "named_tool":
                tool = named(child.children[0])
            elif child.data == "condition":
                for t in child.children:
                    param = named(t.children[0])
                    if t.data == "present":
                        tests.append(Test(param, "present"))
                    elif t.data == "contains":
                        tests.append(Test(param, "contains", value(t.children[1])))
                    else:
                        same = t.data == "equals"
                        tests.append(
                            Test(param, "equals" if same else "differs", value(t.children[1]))
                        )
            elif child.data == "succeeded":
                outcome = "succeeded"
            elif child.data == "failed":
                outcome = "failed"
        return Call(tool, tuple(tests), outcome)

    rule = tree.children[0]
    kind = str(rule.data)
    if kind == "at_most":
        return TraceRule(
            "at_most", call(rule.children[1]), limit=int(rule.children[0]), text=text, name=name
        )
    event = call(rule.children[1]) if len(rule.children) > 1 else None
    return TraceRule(kind, call(rule.children[0]), event, text=text, name=name)  # type: ignore[arg-type]


_TERMINALS = {
    "NAME": "a tool or parameter name",
    "ESCAPED_STRING": 'a "quoted" string',
    "$END": "the end of the rule",
    "INT": "a number",
}


def _friendly(terminal: str) -> str:
    if terminal.startswith("__ANON"):  # an operator the grammar spells in place: "==", "!="
        spelt = {t.name: t.pattern.value for t in _parser().terminals}.get(terminal)
        if spelt is not None:
            return f'"{spelt}"'
    return _TERMINALS.get(terminal, f'"{terminal.lower()}"' if terminal.isupper() else terminal)


# --- the incremental monitor ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TraceViolation:
    policy_name: str
    reason: str


class TraceGate:
    """Decides at dispatch time whether a call may run, given the trace so far.

    ``check`` asks without changing anything; ``dispatch`` checks and, when the
    call is admitted, records it (an ``at most`` budget is taken at admission);
    ``record`` adds a call's reported outcome. The monitor keeps one flag or
    counter per rule, so each event costs O(number of rules). ``state`` /
    ``restore`` expose it as a hashable value (the static checker memoizes on it).

    The events of a trace are a call's dispatch and, later, its reported outcome.
    ``never X after Y`` counts ``Y`` from its dispatch (a dispatched call may run:
    while it is pending, ``X`` is refused), ``never X after Y succeeded`` from the
    report of that outcome. ``X only after Y`` counts ``Y`` only once its outcome
    is reported (any outcome; ``Y succeeded``: that one): a call the gate admitted
    but that never ran, or has not finished, does not open the way for ``X``.
    """

    def __init__(self, rules: Sequence[TraceRule], *, indexed: bool = True) -> None:
        self.rules = tuple(rules)
        self._state = [0] * len(self.rules)
        # The speed trick, in this one place: a call of ``tool`` can only match a
        # rule whose pattern names ``tool`` or names no tool, so ``check`` and
        # ``_observe`` visit those rules alone, in the rules' order. ``indexed=False``
        # is the plain version (every rule at every call); tests/test_trace_index.py
        # holds the two equal on generated rules and traces.
        everything = tuple(range(len(self.rules)))
        self._calls = _Positions([r.call.tool for r in self.rules], everything, indexed)
        observed = [
            r.call.tool if r.kind == "at_most" or r.event is None else r.event.tool
            for r in self.rules
        ]
        self._events = _Positions(observed, everything, indexed)

    @property
    def state(self) -> tuple[int, ...]:
        return tuple(self._state)

    def restore(self, state: tuple[int, ...]) -> None:
        self._state = list(state)

    def check(self, tool: str, params: Mapping[str, Any]) -> list[TraceViolation]:
        """The rules that refuse a call of ``tool`` with ``params`` now, each with a
        reason that names the tools and never a value (of the rule or the call)."""
        out = []
        for index in self._calls.of(tool):
            rule, seen = self.rules[index], self._state[index]
            if not rule.call.matches(tool, params):
                continue
            if rule.kind == "never":
                out.append(TraceViolation(rule.policy_name, f"{tool} is never allowed"))
            elif rule.kind == "never_after" and seen:
                out.append(
                    TraceViolation(rule.policy_name, f"{tool} is not allowed after {_event(rule)}")
                )
            elif rule.kind == "only_after" and not seen & 1:
                out.append(
                    TraceViolation(rule.policy_name, f"{tool} is allowed only after {_event(rule)}")
                )
            elif rule.kind == "at_most" and seen >= rule.limit:
                out.append(
                    TraceViolation(
                        rule.policy_name, f"{tool} is allowed at most {rule.limit} times in a run"
                    )
                )
        return out

    def dispatch(self, tool: str, params: Mapping[str, Any]) -> list[TraceViolation]:
        violations = self.check(tool, params)
        if not violations:
            self._observe(tool, params, None)
        return violations

    def dispatched(self, tool: str, params: Mapping[str, Any]) -> None:
        """Record a call as dispatched whatever the rules say (one a person let run
        after the rules asked them)."""
        self._observe(tool, params, None)

    def record(self, tool: str, params: Mapping[str, Any], outcome: Outcome) -> None:
        """A dispatched call's outcome, as reported."""
        self._observe(tool, params, outcome)

    def _observe(self, tool: str, params: Mapping[str, Any], outcome: Outcome | None) -> None:
        """``outcome`` None: the call was dispatched; else its outcome was reported."""
        for index in self._events.of(tool):
            rule = self.rules[index]
            if rule.kind == "at_most":
                if outcome is None and rule.call.matches(tool, params):
                    self._state[index] += 1
                continue
            event = rule.event
            state = self._state[index]
            if event is None or state & 1:
                continue
            if rule.kind == "only_after":
                # Counted once an outcome is reported of a call that was dispatched:
                # bit 1 says a call of the event was dispatched, bit 0 that one
                # reported (an outcome with no dispatch before it opens nothing).
                if not event.matches(tool, params):
                    continue
                if outcome is None:
                    self._state[index] = state | 2
                elif state & 2 and event.outcome in (None, outcome):
                    self._state[index] = state | 1
            elif event.outcome == outcome and event.matches(tool, params):
                # never ... after: at dispatch, or at the named outcome's report
                self._state[index] = 1


class _Positions:
    """The positions of the rules whose pattern can match a call of each tool: those
    naming it and those naming no tool, in order. Made from the rules alone (a tool
    no rule names gets the rules naming none), so it never grows with the calls."""

    __slots__ = ("_any", "_named")

    def __init__(
        self, tools: Sequence[str | None], everything: tuple[int, ...], indexed: bool
    ) -> None:
        self._any = tuple(i for i, t in enumerate(tools) if t is None) if indexed else everything
        self._named: dict[str, tuple[int, ...]] = (
            {
                name: tuple(i for i, t in enumerate(tools) if t is None or t == name)
                for name in {t for t in tools if t is not None}
            }
            if indexed
            else {}
        )

    def of(self, tool: str) -> tuple[int, ...]:
        return self._named.get(tool, self._any)


def _event(rule: TraceRule) -> str:
    """The rule's event in words: its tool and outcome, never a literal of its tests."""
    event = rule.event
    assert event is not None
    tool = event.tool or "any tool"
    if event.tests:
        text = f"a {tool} call that the rule selects" if event.tool else "a call the rule selects"
        return f"{text}, {event.outcome}" if event.outcome else text
    return f"{tool} {event.outcome}" if event.outcome else tool


# --- the schedules of a run ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Counterexample:
    """An action that breaks a rule, and a schedule that shows it: the calls
    dispatched, in order, ending with the refused one; ``failed`` names those of
    them that failed (a failure that does not stop the run); ``refused`` those an
    earlier refusal of the same rule turned away. ``seen``, beside ``schedule``:
    whether the verdict needs each step (the steps marked, replayed on their own
    through the rule's monitor, break it; empty: every step counts)."""

    action_id: str
    index: int
    schedule: tuple[str, ...]
    failed: tuple[str, ...]
    violation: TraceViolation
    refused: tuple[str, ...] = ()
    seen: tuple[bool, ...] = ()

    @property
    def relevant(self) -> tuple[str, ...]:
        """The steps of the schedule the verdict needs, in order (the last is the
        action that breaks the rule): on their own, in this order, they break it."""
        if not self.seen:
            return self.schedule
        return tuple(a for a, sees in zip(self.schedule, self.seen, strict=True) if sees)

    def describe(self) -> str:
        """The steps the verdict needs, as a reader follows them: ``fetch (failed),
        send``; then how many other steps the schedule had (the whole schedule is
        :attr:`schedule`)."""
        failed, refused = set(self.failed), set(self.refused)
        shown = ", ".join(
            f"{a} (failed)" if a in failed else f"{a} (refused)" if a in refused else a
            for a in self.relevant
        )
        others = len(self.schedule) - len(self.relevant)
        if others:
            calls = "call" if others == 1 else "calls"
            shown += f" (and {others:,} other {calls} the verdict does not need)"
        return shown


@dataclass(slots=True)
class ScheduleCheck:
    """The outcome of checking one rule against a proposal's schedules.

    ``violations``: every action that some schedule makes break the rule, in
    proposal order, each with one such schedule. ``complete`` is False when the
    budget ran out first: then ``explored`` states were checked, the violations
    found are real, and their absence elsewhere is a sample, not a decision.
    """

    rule: TraceRule
    violations: list[Counterexample]
    explored: int
    complete: bool
    schedules: Schedules = "levels"

    @property
    def schedule(self) -> list[str] | None:
        """The first violation's schedule (None: no schedule breaks the rule)."""
        return list(self.violations[0].schedule) if self.violations else None

    @property
    def violation(self) -> TraceViolation | None:
        return self.violations[0].violation if self.violations else None


def check_schedules(
    proposal: ActionProposal,
    rules: Iterable[TraceRule],
    *,
    budget: int = 100_000,
    dag: Dag | None = None,
    schedules: Schedules = "levels",
    unseen: Collection[int] = (),
) -> list[ScheduleCheck]:
    """Check each rule against the schedules a run of the proposal can take
    (``dag``: the proposal's DAG when the caller has it already).

    ``unseen``: the positions of calls taken as calls no rule matches (sent, and
    failing or not, as any call, but never a rule's call or event): what is found
    then holds whatever they send (the policies pass's second look at a violation
    that rested on a call whose parameter is not known before run time).

    ``schedules="levels"`` (the default) explores what the executor runs: the
    levels in order, the actions of a level in any interleaving; ``"any"`` every
    order the DAG allows. In both, a call may fail: a failure under
    ``failure_behavior: skip`` lets the run go on without the call's dependents
    (which are rejected, never dispatched); any other failure stops the run once
    its level is done (``"any"``: at once). A refused call is not recorded, as at
    dispatch, and the check goes on past it, so every action that can break the
    rule is found, not just the first. ``budget`` bounds the (finished actions,
    monitor state) pairs explored over all the rules together.
    """
    from ..semantics.dag import Dag

    dag = dag or Dag(proposal)
    rules = list(rules)
    if not rules:
        return []
    plan = _Plan(proposal, dag)
    for i in unseen:
        plan.events[i] = None
    # One budget for the whole check, shared by the rules in turn: ten rules on one
    # plan cost what one costs, not ten times it; a rule reached with nothing left
    # is reported unchecked (incomplete), never silently passed.
    out, left = [], budget
    for rule in rules:
        result = _check_rule(plan, rule, left, schedules)
        out.append(result)
        left = max(0, left - result.explored)
    return out


class _Plan:
    """What every rule's exploration shares: the call events, who waits for whom,
    which actions can fail and what a failure does, the levels."""

    __slots__ = (
        "_readiness",
        "dag",
        "dependents",
        "detached",
        "events",
        "fails",
        "level_masks",
        "levels",
        "skip",
        "waits",
    )

    def __init__(self, proposal: ActionProposal, dag: Dag) -> None:
        from ..ir.model import FailureBehavior, ToolInvocationMode

        skip, one_shot = FailureBehavior.SKIP, ToolInvocationMode.ONE_SHOT
        self.dag = dag
        self._readiness: Readiness | None = None
        #: Per action: its call (tool, parameters), None for an action that is no call;
        #: whether it can fail, whether a failure skips it (the run goes on), and
        #: whether it is detached (a streaming or long-running call's outcome is its
        #: stream's terminal status, known at some later point of the run, or not
        #: within it).
        self.events: list[tuple[str, Any] | None] = []
        self.fails: list[bool] = []
        self.skip: list[bool] = []
        self.detached: list[bool] = []
        #: Per action, the actions it waits for (a bitmask): one that did not succeed
        #: gets it rejected (the executor's blocked dependency).
        self.waits: list[int] = []
        waited = 0
        for i, a in enumerate(proposal.actions):
            kind = a.type
            self.events.append(
                (a.tool, a.parameters) if kind == "tool_call" and a.tool is not None else None
            )
            self.fails.append(kind in ("tool_call", "assertion"))
            self.skip.append(a.failure_behavior is skip)
            self.detached.append(a.invocation_mode is not one_shot)
            mask = 0
            for t in dag.waits_for(i):
                mask |= 1 << t
            self.waits.append(mask)
            waited |= mask
        self.dependents = [bool(waited >> i & 1) for i in range(dag.n)]
        self.levels = [tuple(level) for level in dag.levels]
        #: Per level, its actions as a bitmask (a level is done when all are).
        self.level_masks = [sum(1 << i for i in level) for level in self.levels]

    @property
    def readiness(self) -> Readiness:
        """Which actions may start next, for ``schedules="any"`` (made when first asked)."""
        if self._readiness is None:
            from ..semantics.dag import Readiness

            self._readiness = Readiness(self.dag)
        return self._readiness


#: A schedule as a linked list, last step first: (action, 0 succeeded | 1 failed |
#: 2 refused | 3 dispatched with no outcome within the run, the steps before), so
#: that a step copies nothing.
_Path: TypeAlias = "tuple[int, int, _Path] | None"
#: How a step ended, by the outcome the monitor recorded (None: none, a detached call).
_HOW: dict[Outcome | None, int] = {"succeeded": 0, "failed": 1, None: 3}
#: (finished, not succeeded, stopping, monitor, level, ready before, last action, path)
_Entry: TypeAlias = "tuple[int, int, bool, tuple[int, ...], int, tuple[int, ...], int, _Path]"


def _check_rule(
    plan: _Plan, rule: TraceRule, budget: int, mode: Schedules, *, ask_every_call: bool = False
) -> ScheduleCheck:
    events, levels, level_masks, waits = plan.events, plan.levels, plan.level_masks, plan.waits
    relevant = [e is not None and rule.mentions(e[0]) for e in events]
    # A call of a tool the rule does not mention leaves its monitor as it is and is
    # never refused by it (TraceGate): it is not asked of the gate. ``ask_every_call``
    # asks it all the same (the plain version, which the tests compare with).
    asked = [e is not None for e in events] if ask_every_call else relevant
    # Whose outcome the rule reads (``... after fetch failed``, ``only after x succeeded``).
    watched = rule.event if rule.event is not None and reads_outcome(rule) else None
    sees = [e is not None and watched is not None and watched.tool in (None, e[0]) for e in events]
    # How each action can end, for this rule (the same at every visit).
    outcomes = [_outcomes(plan, i, sees[i]) for i in range(len(events))]
    gate = TraceGate([rule])
    found: dict[int, Counterexample] = {}
    seen: set[tuple[int, int, bool, tuple[int, ...]]] = set()
    stack: list[_Entry] = [(0, 0, False, gate.state, 0, (), -1, None)]
    explored = 0
    n_levels = len(levels)
    by_levels = mode == "levels"
    while stack:
        done, failed, halt, state, level, before, last, path = stack.pop()
        key = (done, failed, halt, state)
        if key in seen:
            continue
        seen.add(key)
        explored += 1
        if explored > budget:
            return _result(plan, rule, found, explored - 1, False, mode)
        if by_levels:
            while level < n_levels and done & level_masks[level] == level_masks[level]:
                level = n_levels if halt else level + 1  # a stopped run ends with its level
            if level == n_levels:
                continue
            members = levels[level]
            if done & level_masks[level]:
                ready = tuple(i for i in members if not done >> i & 1)
            else:
                ready = members
        else:
            readiness = plan.readiness
            full = readiness.walkable_mask
            if halt or done == full:
                continue
            ready = readiness.first() if last < 0 else readiness.after(before, last, full & ~done)
        # A rejected action or a call the rule never mentions commutes with everything
        # the rule watches: take one of them first, and only it.
        quiet = -1
        for i in ready:
            if not relevant[i] or waits[i] & failed:
                quiet = i
                break
        for i in (quiet,) if quiet >= 0 else reversed(ready):
            bit = 1 << i
            if waits[i] & failed:  # a dependency did not succeed: rejected, not sent
                stack.append((done | bit, failed | bit, halt, state, level, ready, i, path))
                continue
            event = events[i] if asked[i] else None
            after_dispatch = state
            if event is not None:
                gate.restore(state)
                violations = gate.dispatch(*event)
                if violations:
                    if i not in found:
                        found[i] = _counterexample(plan, rule, i, path, violations[0], relevant)
                    stack.append((done | bit, failed, halt, state, level, ready, i, (i, 2, path)))
                    continue
                after_dispatch = gate.state
            for recorded, lost in outcomes[i]:
                now = after_dispatch
                if event is not None and recorded is not None:
                    gate.restore(after_dispatch)
                    gate.record(event[0], event[1], recorded)
                    now = gate.state
                stack.append(
                    (
                        done | bit,
                        failed | bit if lost else failed,
                        halt or (lost and not plan.skip[i]),
                        now,
                        level,
                        ready,
                        i,
                        (i, _HOW[recorded], path),
                    )
                )
    return _result(plan, rule, found, explored, True, mode)


def _outcomes(plan: _Plan, i: int, seen: bool) -> list[tuple[Outcome | None, bool]]:
    """How action ``i`` can end, as the branches that differ for the rule: (what the
    monitor records, None for nothing yet; whether the action did not succeed),
    successes first. ``seen``: whether the rule reads this call's outcome.

    A failure matters where the rule reads it, or where it rejects dependents; a
    failure that stops the run only cuts a schedule short (its trace is a prefix of
    the same schedule's without the failure), so it needs no branch of its own. A
    detached call (streaming, long-running) succeeds as an action when it starts;
    its outcome for the rule is the stream's terminal status, recorded at once or
    not within the run (for a flag that, once set, stays set, a time in between
    gives no other verdict), and a stream's failure rejects nothing.
    """
    branches: list[tuple[Outcome | None, bool]] = [("succeeded", False)]
    if plan.fails[i] and (seen or (plan.skip[i] and plan.dependents[i])):
        branches.append(("failed", True))  # it failed outright (or failed to start)
    if seen and plan.detached[i]:
        branches += [("failed", False), (None, False)]
    return branches[::-1]  # the stack pops the last first


def _counterexample(
    plan: _Plan,
    rule: TraceRule,
    i: int,
    path: _Path,
    violation: TraceViolation,
    relevant: Sequence[bool],
) -> Counterexample:
    """Action ``i`` breaks the rule after ``path``. Which steps the reader is shown
    (``seen``): those the rule's verdict needs (:func:`_needed`), out of the calls
    it names (``relevant``, per action); the rest of the schedule is kept whole."""
    steps = _unwind(path)
    ids = plan.dag.ids
    needed = _needed(plan, rule, steps, i, relevant)
    return Counterexample(
        ids[i],
        i,
        tuple([ids[j] for j, _ in steps] + [ids[i]]),
        tuple(ids[j] for j, how in steps if how == 1),
        violation,
        tuple(ids[j] for j, how in steps if how == 2),
        tuple([k in needed for k in range(len(steps))] + [True]),
    )


#: At most this many steps the rule names are narrowed down one by one (beyond, a
#: counterexample shows every step the rule names).
MAX_NARROWED = 48


def _needed(
    plan: _Plan, rule: TraceRule, steps: list[tuple[int, int]], i: int, relevant: Sequence[bool]
) -> set[int]:
    """The positions in ``steps`` of a short run of the rule's own events that breaks
    it at action ``i`` on its own: replayed through the rule's monitor in order
    (each call dispatched and admitted, then its recorded outcome), then ``i``
    refused. A call the rule does not name, or one it refused, never changes its
    state, so the answer is among the others: none if ``i`` is refused alone, else
    one of them if one suffices, else (up to :data:`MAX_NARROWED` of them) each
    left out in turn where the rest still breaks it. For ``X only after Y`` the
    calls of ``Y`` that ran are kept too (they say why the way was still closed).
    What it returns always replays; at worst it is every step the rule names."""
    named = [k for k, (j, how) in enumerate(steps) if relevant[j] and how != 2]

    def breaks(kept: Sequence[int]) -> bool:
        gate = TraceGate([rule])
        for k in kept:
            j, how = steps[k]
            event = _call(plan, j)
            if gate.dispatch(*event):
                return False  # refused here: not the run it claims
            if how != 3:
                gate.record(event[0], event[1], "failed" if how == 1 else "succeeded")
        final = plan.events[i]
        assert final is not None
        return bool(gate.dispatch(*final))

    shortest = _shortest(named, breaks)
    if rule.kind == "only_after" and rule.event is not None:
        # what the call waited for in vain: the event's calls that ran (and failed,
        # or did not report) say why the way was still closed
        event = rule.event
        tried = {k for k in named if event.matches(*_call(plan, steps[k][0]))}
        if tried and breaks(sorted(shortest | tried)):
            return shortest | tried
    return shortest


def _shortest(named: list[int], breaks: Callable[[Sequence[int]], bool]) -> set[int]:
    """The fewest of ``named`` that break the rule on their own (see :func:`_needed`)."""
    if breaks([]):
        return set()
    for k in reversed(named):
        if breaks([k]):
            return {k}
    if len(named) > MAX_NARROWED or not breaks(named):
        return set(named)
    kept = list(named)
    for k in named:
        trial = [x for x in kept if x != k]
        if breaks(trial):
            kept = trial
    return set(kept)


def _call(plan: _Plan, j: int) -> tuple[str, Any]:
    event = plan.events[j]
    assert event is not None  # a call the rule names
    return event


def _result(
    plan: _Plan,
    rule: TraceRule,
    found: dict[int, Counterexample],
    explored: int,
    complete: bool,
    mode: Schedules,
) -> ScheduleCheck:
    return ScheduleCheck(rule, [found[i] for i in sorted(found)], explored, complete, mode)


def _unwind(path: _Path) -> list[tuple[int, int]]:
    """The steps of a linked path, first to last: (action, how it ended)."""
    out: list[tuple[int, int]] = []
    while path is not None:
        out.append((path[0], path[1]))
        path = path[2]
    return out[::-1]
