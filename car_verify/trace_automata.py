"""Containment of trace-rule sets, decided on finite automata.

Each trace rule is a monitor with finitely many states (a flag; a counter up to
its limit), so a set of rules is a finite automaton over calls, and two sets are
a finite product. What a call does to the product depends only on which of the
rules' call patterns (a tool, parameter tests) it matches: the *letter* of the
call. The letters that some call has are enumerated with z3, each with a
concrete call, over the same value domain as the policy analysis (a parameter
is absent, a string, or one of finitely many other JSON values: each value a
test compares with ``==``, and arrays holding each subset of the values tested
with ``contains``; any other value matches as one of these does).

:func:`trace_containment` then searches the product breadth first from the
start: a trace is a sequence of calls both sets admit, each dispatched and
recorded with its outcome (``succeeded`` or ``failed``) before the next call,
or, when a rule's event names its outcome, still awaiting it until a later step
brings it (or never). Set B denies everything set A denies when, after no such trace,
A refuses a call that B admits; otherwise the shortest such trace and call is
the counterexample. Past ``MAX_LETTERS`` letters (many patterns with
overlapping tests) or ``MAX_STATES`` states the answer is ``unknown``.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .trace import Call, LinkedPath, Outcome, TraceGate, TraceRule, unwound
from .value_domain import Slot, contains, equals, literal, text_of
from .values import ABSENT, evaluate, json_equal

__all__ = ["MAX_LETTERS", "MAX_STATES", "Split", "trace_containment"]

MAX_LETTERS = 512
#: The most states of the two sets' monitors together the search visits.
MAX_STATES = 1_000_000
#: Subsets of the values a parameter is tested with ``contains`` against, as arrays:
#: at most this many values per parameter (2**5 arrays).
MAX_NEEDLES = 5
_MARK = "\x00car-verify"  # an array element no rule names


@dataclass(frozen=True, slots=True)
class Split:
    """After ``trace`` (both sets admit each call), A's rules ``denied_by`` refuse
    the call (``tool``, ``parameters``) and B's admit it."""

    tool: str
    parameters: dict[str, Any]
    denied_by: tuple[str, ...]
    trace: tuple[str, ...]


def trace_containment(a: Sequence[TraceRule], b: Sequence[TraceRule]) -> Any:
    """None when B refuses, after every trace both admit, every call A refuses; a
    :class:`Split` (the trace, then the call A refuses and B admits) otherwise; a
    reason when undecided."""
    if not a:
        return None
    letters = _letters([*a, *b])
    if isinstance(letters, str):
        return letters
    gate_a, gate_b = TraceGate(a), TraceGate(b)
    # A call whose outcome some rule's event names may still be awaiting it when
    # the next call comes (or for ever): the state also counts, per such letter,
    # the calls awaiting an outcome (0, 1, or 2 meaning two or more).
    awaited = [
        i
        for i, (tool, params) in enumerate(letters)
        if any(
            r.event is not None and r.event.outcome is not None and r.event.matches(tool, params)
            for r in (*a, *b)
        )
    ]
    slot_of = {letter: n for n, letter in enumerate(awaited)}
    State = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    start: State = (gate_a.state, gate_b.state, (0,) * len(awaited))
    seen = {start}
    # Each state's trace is a linked list: a rule that counts far (``at most
    # 100000``) walks its long traces in linear time.
    queue: deque[tuple[State, LinkedPath]] = deque([(start, None)])
    outcomes: tuple[Outcome, ...] = ("succeeded", "failed")

    def recorded(sa: Any, sb: Any, tool: str, params: Any, outcome: Outcome) -> Any:
        gate_a.restore(sa)
        gate_b.restore(sb)
        gate_a.record(tool, params, outcome)
        gate_b.record(tool, params, outcome)
        return gate_a.state, gate_b.state

    while queue:
        (sa, sb, waiting), trace = queue.popleft()
        successors: list[tuple[State, str]] = []
        for letter, (tool, params) in enumerate(letters):
            gate_a.restore(sa)
            gate_b.restore(sb)
            refused_a = gate_a.dispatch(tool, params)
            refused_b = gate_b.dispatch(tool, params)
            if refused_a and not refused_b:
                names = tuple(dict.fromkeys(v.policy_name for v in refused_a))
                return Split(tool, dict(params), names, unwound(trace))
            if refused_a or refused_b:
                continue  # not a trace both admit
            after = (gate_a.state, gate_b.state)
            call = f"{tool}({_params_text(params)})"
            for outcome in outcomes:  # the outcome comes before the next call
                successors.append(
                    ((*recorded(*after, tool, params, outcome), waiting), f"{call} {outcome}")
                )
            if letter in slot_of:  # or the call is still awaiting it
                n = slot_of[letter]
                more = (*waiting[:n], min(waiting[n] + 1, 2), *waiting[n + 1 :])
                successors.append(((*after, more), f"{call} awaiting its outcome"))
        for letter, n in slot_of.items():  # an awaited outcome comes
            if not waiting[n]:
                continue
            tool, params = letters[letter]
            fewer = [(*waiting[:n], waiting[n] - 1, *waiting[n + 1 :])]
            if waiting[n] == 2:
                fewer.append(waiting)  # two or more were awaiting: one or more still are
            for outcome in outcomes:
                done = recorded(sa, sb, tool, params, outcome)
                text = f"the outcome of {tool}({_params_text(params)}): {outcome}"
                successors.extend(((*done, w), text) for w in fewer)
        for state, step in successors:
            if state not in seen:
                if len(seen) >= MAX_STATES:
                    return (
                        f"the two sets' trace rules reach more than {MAX_STATES:,} "
                        "states together; compared on the traces to those only"
                    )
                seen.add(state)
                queue.append((state, (step, trace)))
    return None


def _params_text(params: dict[str, Any]) -> str:
    import json

    return json.dumps(params, sort_keys=True) if params else ""


def _letters(rules: Sequence[TraceRule]) -> list[tuple[str, dict[str, Any]]] | str:
    """A concrete call for each combination of the rules' call patterns some call
    matches (one call per letter), or why they could not all be found."""
    import z3

    patterns: list[Call] = []
    for rule in rules:
        for call in (rule.call, rule.event):
            if call is not None and call not in patterns:
                patterns.append(call)
    values: dict[str, list[Any]] = {}
    needles: dict[str, list[Any]] = {}
    for call in patterns:
        for test in call.tests:
            values.setdefault(test.param, [])
            needles.setdefault(test.param, [])
            if test.op in ("equals", "differs"):
                _add(values[test.param], test.value)
            elif test.op == "contains":
                _add(needles[test.param], test.value)
    slots: dict[str, Slot] = {}
    for param in sorted(values):
        found = needles[param]
        if len(found) > MAX_NEEDLES:
            return (
                f"parameter {param!r} is tested with contains against more than "
                f"{MAX_NEEDLES} values"
            )
        variants = [v for v in values[param] if not isinstance(v, str)]
        for size in range(len(found) + 1):
            for subset in itertools.combinations(found, size):
                variants.append([*subset, _MARK])
        slots[param] = Slot(z3, param, variants)
    tool = z3.String("tool")
    solver = z3.Solver()
    solver.set("timeout", 10_000)
    for slot in slots.values():
        solver.add(slot.domain())
    matches = [z3.Bool(f"pattern:{n}") for n in range(len(patterns))]
    for flag, call in zip(matches, patterns, strict=True):
        solver.add(flag == _matches(z3, tool, slots, call))
    letters: list[tuple[str, dict[str, Any]]] = []
    while True:
        answer = solver.check()
        if answer == z3.unsat:
            return letters
        if answer != z3.sat:
            return "z3 gave no answer within its time limit while enumerating the calls"
        model = solver.model()
        name = text_of(model, tool)
        params = {}
        for param, slot in slots.items():
            value = slot.value(model)
            if value is not ABSENT:
                params[param] = value
        letters.append((name, params))
        if len(letters) > MAX_LETTERS:
            return f"the rules' patterns combine into more than {MAX_LETTERS} kinds of call"
        solver.add(
            z3.Or(*(m != model.eval(m, model_completion=True) for m in matches), z3.BoolVal(False))
        )


def _add(values: list[Any], value: Any) -> None:
    if not any(type(v) is type(value) and json_equal(v, value) for v in values):
        values.append(value)


def _matches(z3: Any, tool: Any, slots: dict[str, Slot], call: Call) -> Any:
    parts = [] if call.tool is None else [tool == literal(z3, call.tool)]
    for test in call.tests:
        slot = slots[test.param]
        if test.op == "present":
            parts.append(slot.present)
        elif test.op == "contains":
            needle = test.value
            on_text = (
                contains(z3, slot.text, needle) if isinstance(needle, str) else z3.BoolVal(False)
            )
            parts.append(slot.where(on_text, lambda v, n=needle: evaluate("contains", v, n)))
        else:
            expected = test.value
            on_text = (
                equals(z3, slot.text, expected) if isinstance(expected, str) else z3.BoolVal(False)
            )
            same = slot.where(
                on_text, lambda v, e=expected: not isinstance(v, str) and json_equal(v, e)
            )
            parts.append(same if test.op == "equals" else z3.Not(same))
    return z3.And(*parts) if parts else z3.BoolVal(True)
