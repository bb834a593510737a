"""Containment of trace-rule sets, decided on finite automata.

Each trace rule is a monitor with finitely many states (a flag; a counter up to
its limit), so a set of rules is a finite automaton over calls, and two sets are
a finite product. What a call does to the product depends only on which of the
rules' call patterns (a tool, parameter tests) it matches, and on whether each
set's rules of one call (``deny_tool``, parameter rules, ...) deny it: the
*letter* of the call. The policy analysis enumerates the letters some call has
with z3, each with a concrete call (:class:`Letter`), over one value domain for
every rule of both sets; :func:`pattern_values` gives it the values the trace
rules' tests need (each value a test compares with ``==``, and arrays holding
each subset of the values tested with ``contains``), and :func:`pattern_formula`
a pattern as a z3 formula.

:func:`trace_containment` then searches the product breadth first from the
start. A run is a sequence of calls the agent tries, each under both sets, as
one agent's run replayed against two hooks: a call a set refuses does not run
under it (a call one set's rules of one call deny is not dispatched to its trace
rules either, as at run time); a call it admits is dispatched and recorded with
its outcome (``succeeded`` or ``failed``) before the next call, or, when a
rule's event names its outcome, still awaiting it until a later step brings it
(or never). The search follows the calls A admits (a call A refuses and B
admits is the answer; one both refuse changes nothing). Set B denies everything
set A denies when, after no run, A refuses a call that B admits; otherwise the
shortest such run and call is the counterexample. Past ``MAX_STATES`` states the
answer is ``unknown``.
"""

from __future__ import annotations

import itertools
import json
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..base.values import evaluate, json_equal
from ..semantics.value_domain import Slot, contains, equals, literal
from .trace import Call, LinkedPath, Outcome, TraceGate, TraceRule, reads_outcome, unwound

__all__ = [
    "MAX_LETTERS",
    "MAX_NEEDLES",
    "MAX_STATES",
    "Letter",
    "Split",
    "Step",
    "call_patterns",
    "pattern_formula",
    "pattern_values",
    "trace_containment",
]

#: The most kinds of call (letters) the rules of two sets may tell apart.
MAX_LETTERS = 512
#: The most states of the two sets' monitors together the search visits.
MAX_STATES = 1_000_000
#: Subsets of the values a parameter is tested with ``contains`` against, as arrays:
#: at most this many values per parameter (2**5 arrays).
MAX_NEEDLES = 5
_MARK = "\x00car-verify"  # an array element no rule names


@dataclass(frozen=True, slots=True)
class Letter:
    """A concrete call standing for every call that matches the same trace-rule
    patterns and that each set's rules of one call judge alike: ``denied`` holds
    the names of A's and of B's rules of one call that deny it (none: admitted)."""

    tool: str
    parameters: dict[str, Any]
    state: dict[str, Any] | None = None
    denied: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())

    def text(self) -> str:
        params = json.dumps(self.parameters, sort_keys=True) if self.parameters else ""
        text = f"{self.tool}({params})"
        if self.state:
            text += f" with state {json.dumps(self.state, sort_keys=True)}"
        return text


@dataclass(frozen=True, slots=True)
class Step:
    """One event of a run: ``call`` tried under both sets and dispatched with its
    ``outcome`` recorded at once, or still awaiting it (``outcome`` None), where
    B's rules ``refused`` may have refused it (it then ran under A alone); or
    (``late``) the outcome of an earlier call of ``call`` that was awaiting it
    (``alone``: one that ran under A alone)."""

    call: Letter
    outcome: Outcome | None
    late: bool = False
    refused: tuple[str, ...] = ()
    alone: bool = False

    def __str__(self) -> str:
        if self.late:
            alone = " (it ran under one set)" if self.alone else ""
            return f"the outcome of {self.call.text()}{alone}: {self.outcome}"
        text = f"{self.call.text()} {self.outcome or 'awaiting its outcome'}"
        if self.refused:
            text += f" (the other set refuses it: {', '.join(self.refused)})"
        return text


@dataclass(frozen=True, slots=True)
class Split:
    """After ``steps`` (both sets admit each call), A's rules ``denied_by`` refuse
    ``call`` and B's admit it."""

    call: Letter
    denied_by: tuple[str, ...]
    steps: tuple[Step, ...] = field(default=())

    @property
    def trace(self) -> tuple[str, ...]:
        return tuple(str(s) for s in self.steps)


def trace_containment(
    a: Sequence[TraceRule],
    b: Sequence[TraceRule],
    letters: Sequence[Letter],
    *,
    max_states: int = MAX_STATES,
) -> Any:
    """None when, after every run of calls, B refuses every call A refuses; a
    :class:`Split` (the run, then the call A refuses and B admits) otherwise; a
    reason when undecided. ``letters`` stand for every call (see the module docs).

    The product is searched in parts (:func:`_cones`): whether a call is refused
    depends only on the rules whose call it matches, their states only on the
    calls that match their call or event, and whether those calls run only on the
    rules whose call *they* match; each closed set of rules is searched alone, and
    a call is judged in the part that holds every rule its refusal depends on. So
    ``at most N a`` against ``at most N b`` is two searches of N + 1 states, not one
    of (N + 1)², and 14 pairs of unrelated rules are 14 small searches. Every part
    together visits at most ``max_states`` states; past them the answer is unknown,
    naming the bound, unless a part already found a split."""
    if not a and not any(letter.denied[0] for letter in letters):
        return None
    budget = [max_states]
    best: Split | None = None
    undecided: str | None = None
    for part_a, part_b, judged in _cones(a, b, letters):
        if not part_a and not any(letters[i].denied[0] for i in judged):
            continue  # A refuses nothing this part decides
        if _in_step(part_a, part_b, [letters[i] for i in judged]):
            continue  # both sides move in step: neither ever refuses alone
        found = _search(part_a, part_b, letters, judged, budget, max_states)
        if isinstance(found, Split):
            if best is None or len(found.steps) < len(best.steps):
                best = found
        elif isinstance(found, str):
            undecided = undecided or found
    if best is not None:
        return best
    return undecided


def _in_step(a: Sequence[TraceRule], b: Sequence[TraceRule], letters: Sequence[Letter]) -> bool:
    """Whether the two sides of a part hold the same rules (by what they say, in any
    order) and the rules of one call refuse each of its letters on both sides or on
    neither: then both monitors start alike and each call changes them alike, so no
    run splits them, however far their counters go (``at most 1000000 a`` against
    itself is decided here, not searched)."""
    if sorted(r.to_text() for r in a) != sorted(r.to_text() for r in b):
        return False
    return all(bool(c.denied[0]) == bool(c.denied[1]) for c in letters)


def _cones(
    a: Sequence[TraceRule], b: Sequence[TraceRule], letters: Sequence[Letter]
) -> list[tuple[list[TraceRule], list[TraceRule], frozenset[int]]]:
    """The parts the search is split into: per letter, the rules (A's, B's) its
    refusal depends on, closed under "a letter that changes one of them: the rules
    whose call it matches", and the letters judged there (those whose every
    deciding rule is in the part). A part inside another is left out."""
    rules = [(0, r) for r in a] + [(1, r) for r in b]

    def calls(letter: Letter) -> frozenset[int]:
        return frozenset(
            n for n, (_, r) in enumerate(rules) if r.call.matches(letter.tool, letter.parameters)
        )

    def touches(letter: Letter, part: frozenset[int]) -> bool:
        return any(
            r.call.matches(letter.tool, letter.parameters)
            or (r.event is not None and r.event.matches(letter.tool, letter.parameters))
            for n, (_, r) in enumerate(rules)
            if n in part
        )

    deciding = [calls(letter) for letter in letters]
    closed: list[frozenset[int]] = []
    for start in dict.fromkeys(deciding):
        part = start
        while True:
            grown = part.union(
                *(deciding[i] for i, letter in enumerate(letters) if touches(letter, part))
            )
            if grown == part:
                break
            part = grown
        if part not in closed:
            closed.append(part)
    kept = [p for p in closed if not any(p < q for q in closed)]
    out = []
    for part in kept:
        judged = frozenset(i for i, d in enumerate(deciding) if d <= part)
        mine = [r for n, (side, r) in enumerate(rules) if n in part and side == 0]
        theirs = [r for n, (side, r) in enumerate(rules) if n in part and side == 1]
        out.append((mine, theirs, judged))
    return out


def _search(
    a: Sequence[TraceRule],
    b: Sequence[TraceRule],
    letters: Sequence[Letter],
    judged: frozenset[int],
    budget: list[int],
    max_states: int,
) -> Any:
    """The breadth-first search of one part: a :class:`Split` on a letter of
    ``judged``, None, or the bound's reason once ``budget`` (shared) runs out."""
    gate_a, gate_b = TraceGate(a), TraceGate(b)
    order = sorted(judged)
    # A call whose outcome some rule's event names may still be awaiting it when
    # the next call comes (or for ever): the state also counts, per such letter and
    # per who ran it (both sets, or A alone), the calls awaiting an outcome (0, 1,
    # or 2 meaning two or more).
    awaited = [
        i
        for i, letter in enumerate(letters)
        if any(
            r.event is not None
            and reads_outcome(r)
            and r.event.matches(letter.tool, letter.parameters)
            for r in (*a, *b)
        )
    ]
    slot_of = {
        (letter, alone): 2 * n + alone for n, letter in enumerate(awaited) for alone in (0, 1)
    }
    State = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    start: State = (gate_a.state, gate_b.state, (0,) * (2 * len(awaited)))
    seen = {start}
    # Each state's trace is a linked list: a rule that counts far (``at most
    # 100000``) walks its long traces in linear time.
    queue: deque[tuple[State, LinkedPath]] = deque([(start, None)])
    outcomes: tuple[Outcome, ...] = ("succeeded", "failed")

    def refused(gate: TraceGate, saved: tuple[int, ...], by_one: tuple[str, ...], c: Letter) -> Any:
        # As at dispatch: the rules of one call first, the trace rules only for a
        # call they allow (an admitted call is recorded as dispatched).
        gate.restore(saved)
        if by_one:
            return by_one
        return tuple(dict.fromkeys(v.policy_name for v in gate.dispatch(c.tool, c.parameters)))

    def recorded(sa: Any, sb: Any, c: Letter, outcome: Outcome, alone: bool) -> Any:
        gate_a.restore(sa)
        gate_b.restore(sb)
        gate_a.record(c.tool, c.parameters, outcome)
        if not alone:  # B refused the call: it never ran there
            gate_b.record(c.tool, c.parameters, outcome)
        return gate_a.state, gate_b.state

    while queue:
        (sa, sb, waiting), trace = queue.popleft()
        successors: list[tuple[State, Step]] = []
        for index in order:  # the letters of this part (every one that changes it)
            c = letters[index]
            refused_a = refused(gate_a, sa, c.denied[0], c)
            refused_b = refused(gate_b, sb, c.denied[1], c)
            if refused_a and not refused_b:
                if index in judged:
                    return Split(c, refused_a, unwound(trace))
                continue  # another part decides it; here it runs under neither
            if refused_a:
                continue  # both refuse it: nothing changes
            # The same call is tried under both sets; B may refuse it (A runs it alone).
            alone = bool(refused_b)
            after = (gate_a.state, gate_b.state)
            for outcome in outcomes:  # the outcome comes before the next call
                done = recorded(*after, c, outcome, alone)
                successors.append(((*done, waiting), Step(c, outcome, refused=refused_b)))
            if (index, alone) in slot_of:  # or the call is still awaiting it
                n = slot_of[index, alone]
                more = (*waiting[:n], min(waiting[n] + 1, 2), *waiting[n + 1 :])
                successors.append(((*after, more), Step(c, None, refused=refused_b)))
        for (index, solo), n in slot_of.items():  # an awaited outcome comes
            if not waiting[n]:
                continue
            c = letters[index]
            fewer = [(*waiting[:n], waiting[n] - 1, *waiting[n + 1 :])]
            if waiting[n] == 2:
                fewer.append(waiting)  # two or more were awaiting: one or more still are
            for outcome in outcomes:
                done = recorded(sa, sb, c, outcome, bool(solo))
                step = Step(c, outcome, late=True, alone=bool(solo))
                successors.extend(((*done, w), step) for w in fewer)
        for state, step in successors:
            if state not in seen:
                if budget[0] <= 0:
                    return (
                        f"the two sets' trace rules reach more than {max_states:,} states "
                        f"together (the bound max_states={max_states:,}); compared on the "
                        "traces to those only"
                    )
                budget[0] -= 1
                seen.add(state)
                queue.append((state, (step, trace)))
    return None


def call_patterns(rules: Sequence[TraceRule]) -> list[Call]:
    """The distinct call patterns (a rule's call and its event) of ``rules``."""
    patterns: list[Call] = []
    for rule in rules:
        for call in (rule.call, rule.event):
            if call is not None and call not in patterns:
                patterns.append(call)
    return patterns


def pattern_values(patterns: Sequence[Call]) -> tuple[dict[str, list[Any]], dict[str, int]] | str:
    """Per parameter the patterns test, the values other than strings its slot
    must offer (:class:`~car_verify.semantics.value_domain.Slot`), and how many ``contains``
    needles it is tested with; or why there would be too many."""
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
    variants: dict[str, list[Any]] = {}
    for param in sorted(values):
        found = needles[param]
        if len(found) > MAX_NEEDLES:
            return (
                f"parameter {param!r} is tested with contains against more than "
                f"{MAX_NEEDLES} values"
            )
        variants[param] = [v for v in values[param] if not isinstance(v, str)]
        for size in range(len(found) + 1):
            for subset in itertools.combinations(found, size):
                variants[param].append([*subset, _MARK])
    return variants, {param: len(found) for param, found in needles.items()}


def _add(values: list[Any], value: Any) -> None:
    if not any(type(v) is type(value) and json_equal(v, value) for v in values):
        values.append(value)


def pattern_formula(z3: Any, tool: Any, slots: dict[str, Slot], call: Call) -> Any:
    """The z3 formula that holds exactly when the call (``tool``, ``slots``)
    matches the pattern ``call``."""
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
