"""Trace rules: a small past-time temporal language over a run's tool calls.

The upstream runtime refuses to load ``trace_rule``; car-verify enforces it twice:

* :class:`TraceGate` decides at dispatch time from the trace so far, in O(1) per
  event and rule (an incremental monitor: one flag or counter per rule);
* :func:`check_schedules` checks a proposal statically against **every** order
  its DAG allows, exploring (finished actions, monitor state) with memoization up
  to a budget, and returns a violating schedule as a counterexample.

The grammar is ``grammars/trace_rules.lark``; see ``docs/policies.md`` for the
language reference. Rules read aloud::

    never send_email after read_secret
    deploy where env == "prod" only after run_tests succeeded
    at most 3 http_request
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, TypeAlias

from .dag import Dag, Readiness
from .errors import InputError
from .model import ActionProposal
from .values import ABSENT, json_equal

__all__ = [
    "Call",
    "ScheduleCheck",
    "Test",
    "TraceGate",
    "TraceRule",
    "check_schedules",
    "parse_trace_rule",
]

Outcome = Literal["succeeded", "failed"]


@dataclass(frozen=True, slots=True)
class Test:
    """A condition on one parameter: ``==``, ``!=``, ``contains`` or ``exists``."""

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
        return isinstance(actual, str) and self.value in actual


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

    @property
    def policy_name(self) -> str:
        return f"trace_rule:{self.name or self.text}"

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
        return any(
            c is not None and (c.tool is None or c.tool == tool) for c in (self.call, self.event)
        )


def _call_text(call: Call) -> str:
    text = call.tool or "any tool"
    if call.tests:
        parts = []
        for t in call.tests:
            if t.op == "present":
                parts.append(f"{t.param} exists")
            elif t.op == "contains":
                parts.append(f"{t.param} contains {json.dumps(t.value)}")
            else:
                parts.append(
                    f"{t.param} {'==' if t.op == 'equals' else '!='} {json.dumps(t.value)}"
                )
        text += " where " + " and ".join(parts)
    if call.outcome:
        text += f" {call.outcome}"
    return text


@lru_cache(maxsize=1)
def _parser() -> Any:
    from lark import Lark

    return Lark(
        _grammar_text(),
        parser="lalr",
        strict=True,
        propagate_positions=True,
        maybe_placeholders=False,
    )


def _grammar_text() -> str:
    """The grammar, installed as ``car_verify.grammars`` from the top-level ``grammars/``."""
    from importlib.resources import files

    return (files("car_verify.grammars") / "trace_rules.lark").read_text(encoding="utf-8")


def parse_trace_rule(text: str, *, name: str = "", source: str | None = None) -> TraceRule:
    """Parse one rule; a syntax error is an InputError with the line and column."""
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

    def value(tree: Any) -> Any:
        kind = tree.data
        if kind == "string":
            return string(tree.children[0])
        if kind == "number":
            number = float(tree.children[0])
            return (
                int(number) if number.is_integer() and "." not in str(tree.children[0]) else number
            )
        return {"true": True, "false": False, "null": None}[str(kind)]

    def call(tree: Any) -> Call:
        tool: str | None = None
        tests: list[Test] = []
        outcome: Outcome | None = None
        for child in tree.children:
            if child.data == "named_tool":
                tool = str(child.children[0])
            elif child.data == "condition":
                for t in child.children:
                    param = str(t.children[0])
                    if t.data == "present":
                        tests.append(Test(param, "present"))
                    elif t.data == "contains":
                        tests.append(Test(param, "contains", string(t.children[1])))
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


_TERMINALS = {"NAME": "a tool or parameter name", "$END": "the end of the rule", "INT": "a number"}


def _friendly(terminal: str) -> str:
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
    ``record`` adds a call's outcome. The monitor keeps one flag or counter per
    rule, so each event costs O(number of rules). ``state`` / ``restore`` expose it
    as a hashable value (the static checker memoizes on it).
    """

    def __init__(self, rules: Sequence[TraceRule]) -> None:
        self.rules = tuple(rules)
        self._state = [0] * len(self.rules)

    @property
    def state(self) -> tuple[int, ...]:
        return tuple(self._state)

    def restore(self, state: tuple[int, ...]) -> None:
        self._state = list(state)

    def check(self, tool: str, params: Mapping[str, Any]) -> list[TraceViolation]:
        out = []
        for rule, seen in zip(self.rules, self._state, strict=True):
            if not rule.call.matches(tool, params):
                continue
            if rule.kind == "never":
                out.append(TraceViolation(rule.policy_name, f"{tool} is never allowed"))
            elif rule.kind == "never_after" and seen:
                out.append(
                    TraceViolation(rule.policy_name, f"{tool} is not allowed after {_event(rule)}")
                )
            elif rule.kind == "only_after" and not seen:
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

    def record(self, tool: str, params: Mapping[str, Any], outcome: Outcome) -> None:
        self._observe(tool, params, outcome)

    def _observe(self, tool: str, params: Mapping[str, Any], outcome: Outcome | None) -> None:
        for index, rule in enumerate(self.rules):
            if rule.kind == "at_most":
                if outcome is None and rule.call.matches(tool, params):
                    self._state[index] += 1
            elif (
                rule.event is not None
                and not self._state[index]
                and rule.event.outcome == outcome
                and rule.event.matches(tool, params)
            ):
                self._state[index] = 1


def _event(rule: TraceRule) -> str:
    event = rule.event
    assert event is not None
    what = event.tool or "any tool"
    return f"{what} {event.outcome}" if event.outcome else what


# --- every schedule the DAG allows ----------------------------------------------------------


@dataclass(slots=True)
class ScheduleCheck:
    """The outcome of checking one rule against a proposal's schedules.

    ``schedule`` is a violating order of action ids (ending with the violating
    action) or None. ``complete`` is False when the budget ran out first: then
    ``explored`` states were checked and the answer is a sample, not a decision.
    """

    rule: TraceRule
    schedule: list[str] | None
    violation: TraceViolation | None
    explored: int
    complete: bool


def check_schedules(
    proposal: ActionProposal,
    rules: Iterable[TraceRule],
    *,
    budget: int = 100_000,
    dag: Dag | None = None,
) -> list[ScheduleCheck]:
    """Check each rule against every linearization of the proposal's DAG
    (``dag``: the proposal's DAG when the caller has it already)."""
    dag = dag or Dag(proposal)
    rules = list(rules)
    if not rules:
        return []
    # What every rule shares: which actions may start when, and the call events.
    readiness = Readiness(dag)
    events = [
        (a.tool, a.parameters) if a.type == "tool_call" and a.tool is not None else None
        for a in proposal.actions
    ]
    return [_check_rule(dag, readiness, events, rule, budget) for rule in rules]


_Path: TypeAlias = "tuple[int, _Path] | None"


def _check_rule(
    dag: Dag,
    readiness: Readiness,
    events: list[tuple[str, dict[str, Any]] | None],
    rule: TraceRule,
    budget: int,
) -> ScheduleCheck:
    relevant = [e is not None and rule.mentions(e[0]) for e in events]
    full = readiness.walkable_mask
    gate = TraceGate([rule])
    seen: set[tuple[int, tuple[int, ...]]] = set()
    # Each entry: the state reached, the actions ready before the last step, that last
    # step (-1 at the start), and the path so far as a linked list (last action, path
    # before it), so that a step copies nothing.
    stack: list[tuple[int, tuple[int, ...], tuple[int, ...], int, _Path]] = [
        (0, gate.state, (), -1, None)
    ]
    explored = 0
    while stack:
        done, state, before, last, path = stack.pop()
        if (done, state) in seen:
            continue
        seen.add((done, state))
        explored += 1
        if explored > budget:
            return ScheduleCheck(rule, None, None, explored - 1, False)
        if done == full:
            continue
        ready = readiness.first() if last < 0 else readiness.after(before, last, full & ~done)
        quiet = next((i for i in ready if not relevant[i]), -1)
        # Calls the rule never mentions commute with everything it watches: take one.
        for i in (quiet,) if quiet >= 0 else reversed(ready):
            gate.restore(state)
            event = events[i]
            if event is not None:
                violations = gate.dispatch(*event)
                if violations:
                    schedule = [dag.ids[j] for j in _unwind((i, path))]
                    return ScheduleCheck(rule, schedule, violations[0], explored, True)
                gate.record(event[0], event[1], "succeeded")
            stack.append((done | 1 << i, gate.state, ready, i, (i, path)))
    return ScheduleCheck(rule, None, None, explored, True)


def _unwind(path: _Path) -> list[int]:
    """The actions of a linked path, first to last."""
    out: list[int] = []
    while path is not None:
        out.append(path[0])
        path = path[1]
    return out[::-1]
