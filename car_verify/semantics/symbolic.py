"""The simulate semantics over *all* initial states, encoded in z3.

This module is the symbolic reading of :mod:`car_verify.semantics.walk` (simulate mode),
for either profile: the :class:`~car_verify.semantics.base.Semantics` it is given
says how the proposal is ordered, what each operator means (its ``holds_term``),
which effects an action applies and whether an action sees the effects before it
in its level. The initial state is left open. Every key a proposal mentions gets
a presence bit and a JSON value; JSON values are a z3 datatype:

* ``null``, ``boolean(b)``, ``string(s)``;
* ``number(n)``, a real (``strict``: every number, so ``1 == 1.0``; ``car``: an
  f64) and ``integer(i)`` (``car`` only: a 64-bit integer, never equal to a float);
* ``known(i)``: the i-th array or object constant that appears in the proposals
  (one index per constant the semantics' ``equal`` tells apart);
* ``opaque(i, array)``: any other array (``array``) or object of the initial state.
  What an operator asks of an opaque value (membership, ``car``'s text search) is
  an uninterpreted predicate of it: any answer, the same for equal values.

A float zero has two texts (``0.0``, ``-0.0``) and one value, so the sign of zero
travels beside each value as a boolean (:attr:`Encoder.negative_zero`: one per key
of the initial state, the constants' own signs where an action writes one): a
profile that reads a value's text (``car``'s ``contains``) is given it.

A construct the encoding cannot model raises :class:`Unmodelled`; the deciders
answer unknown and name it. The tests check this encoding against the concrete
walk (a counterexample is always replayed through :func:`car_verify.simulate`
before it is reported). z3 is imported here only, and only when a symbolic
question is asked.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..base.values import is_number
from ..ir.model import ActionProposal, Precondition
from . import semantics_of
from .base import Semantics
from .dag import Dag
from .value_domain import constant_text, literal
from .walk import schedule

__all__ = [
    "OPAQUE_MARKER",
    "Answer",
    "Encoder",
    "Questions",
    "SymbolicRun",
    "Unmodelled",
    "Z3Unavailable",
    "load_z3",
]

OPAQUE_MARKER = "car-verify:opaque"


class Z3Unavailable(RuntimeError):
    """z3-solver cannot be imported."""


class Unmodelled(ValueError):
    """A construct the encoding cannot model exactly (the message names it)."""


def load_z3() -> Any:
    try:
        return importlib.import_module("z3")
    except ImportError as err:  # pragma: no cover - z3-solver is a dependency
        raise Z3Unavailable(f"z3-solver is not installed ({err})") from err


class SymbolicRun:
    """One proposal walked symbolically: final state terms, per-action blocked terms,
    and each key's final sign of zero (:attr:`Encoder.negative_zero`)."""

    def __init__(
        self,
        final: dict[str, tuple[Any, Any]],
        blocked: list[Any],
        dag: Dag,
        signs: dict[str, Any] | None = None,
    ) -> None:
        self.final = final
        self.blocked = blocked
        self.dag = dag
        self.signs = signs or {}


@dataclass(frozen=True, slots=True)
class Answer:
    """The solver's verdict (``z3.sat``, ``z3.unsat`` or ``z3.unknown``), with a model
    when it is sat and the solver's reason when it is unknown."""

    verdict: Any
    model: Any = None
    reason: str = ""


class Questions:
    """Questions about the initial states of one :class:`Encoder`, asked of one
    incremental solver that holds the JSON domain once; each question is asked in a
    scope of its own, so nothing one question adds is left for the next."""

    _NO_TIMEOUT = 4_294_967_295  # z3's own default

    def __init__(
        self, encoder: Encoder, timeout_ms: int | None = None, keys: Iterable[str] | None = None
    ) -> None:
        """``keys``: questions name only these keys, so the domain of the others
        (independent of them) is left out and each question costs less."""
        self._z3 = encoder.z3
        self._solver = encoder.z3.Solver(ctx=encoder.ctx)
        self._timeout = self._NO_TIMEOUT if timeout_ms is None else timeout_ms
        self._solver.add(encoder.domain(keys))

    def ask(self, *facts: Any, timeout_ms: int | None = None, model: bool = True) -> Answer:
        """Is there an initial state in which all ``facts`` hold? (``model=False``:
        the verdict is enough, do not fetch the state.)"""
        z3, solver = self._z3, self._solver
        budget = self._timeout if timeout_ms is None else timeout_ms
        solver.set("timeout", budget)
        solver.push()
        try:
            solver.add(*facts)
            verdict = solver.check()
            if verdict == z3.sat:
                return Answer(verdict, model=solver.model() if model else None)
            if verdict == z3.unsat:
                return Answer(verdict)
            reason = solver.reason_unknown()
            if reason in ("timeout", "canceled") and budget != self._NO_TIMEOUT:
                reason = f"the solver ran out of its time budget ({budget:,} ms; --timeout)"
            return Answer(verdict, reason=reason)
        finally:
            solver.pop()


class Encoder:
    """Shared vocabulary (keys, constants, the initial state) for one symbolic question."""

    def __init__(self, proposals: Sequence[ActionProposal], semantics: Semantics | str) -> None:
        self.semantics = sem = semantics_of(semantics)
        z3 = self.z3 = load_z3()
        self.ctx = z3.Context()
        json_sort = z3.Datatype("Json", ctx=self.ctx)
        json_sort.declare("null")
        json_sort.declare("boolean", ("b", z3.BoolSort(ctx=self.ctx)))
        json_sort.declare("number", ("n", z3.RealSort(ctx=self.ctx)))
        json_sort.declare("integer", ("i", z3.IntSort(ctx=self.ctx)))
        json_sort.declare("string", ("s", z3.StringSort(ctx=self.ctx)))
        json_sort.declare("known", ("k", z3.IntSort(ctx=self.ctx)))
        json_sort.declare(
            "opaque", ("o", z3.IntSort(ctx=self.ctx)), ("array", z3.BoolSort(ctx=self.ctx))
        )
        self.J = json_sort.create()
        self.known: list[Any] = []
        self._known_index: dict[str, int] = {}
        self.needles: list[Any] = []
        self._needle_index: dict[str, int] = {}
        self.member = z3.Function(
            "member",
            z3.IntSort(ctx=self.ctx),
            z3.IntSort(ctx=self.ctx),
            z3.BoolSort(ctx=self.ctx),
        )
        #: car's ``contains`` of a needle (by index) in a number or an opaque value.
        self.text_contains = z3.Function(
            "text_contains", self.J, z3.IntSort(ctx=self.ctx), z3.BoolSort(ctx=self.ctx)
        )
        #: The numbers the proposals test and write (each once, by its canonical text).
        self.scalars: list[Any] = []
        scalar_texts: set[str] = set()
        keys: dict[str, None] = {}
        for proposal in proposals:
            for action in proposal.actions:
                named = []
                for pre, _ in sem.checks(action):
                    keys[pre.key] = None
                    self._register(pre.value)
                    named.append(pre.value)
                    if pre.operator == "contains":
                        self.needle(pre.value)
                for key in action.depended_keys():
                    keys[key] = None
                keys.update(dict.fromkeys(action.state_dependencies))
                for key, value in sem.effects(action).items():
                    keys[key] = None
                    self._register(value)
                    named.append(value)
                for value in named:
                    if is_number(value) and sem.canonical(value) not in scalar_texts:
                        scalar_texts.add(sem.canonical(value))
                        self.scalars.append(value)
        self.keys = list(keys)
        self.initial: dict[str, tuple[Any, Any]] = {
            key: (
                z3.Bool(f"present[{key}]", ctx=self.ctx),
                z3.Const(f"value[{key}]", self.J),
            )
            for key in self.keys
        }
        #: Per key: its initial value, where that is a float zero, is ``-0.0`` (the two
        #: zeros are one value with two texts; meaningless for any other value).
        self.negative_zero: dict[str, Any] = {
            key: z3.Bool(f"negative_zero[{key}]", ctx=self.ctx) for key in self.keys
        }
        self.true = z3.BoolVal(True, ctx=self.ctx)
        self.false = z3.BoolVal(False, ctx=self.ctx)

    # --- constants -------------------------------------------------------------------------

    def unmodelled(self, construct: str) -> None:
        """Stop: the encoding cannot model ``construct`` (the deciders answer unknown)."""
        raise Unmodelled(
            f"{construct} cannot be modelled exactly under the "
            f"{self.semantics.profile.value} profile"
        )

    def _register(self, value: Any) -> None:
        if isinstance(value, (list, dict)):
            text = self.semantics.canonical(value)
            if text not in self._known_index:
                self._known_index[text] = len(self.known)
                self.known.append(value)

    def needle(self, value: Any) -> int:
        """The index of a ``contains`` needle (the uninterpreted predicates' argument)."""
        text = self.semantics.canonical(value)
        index = self._needle_index.get(text)
        if index is None:
            index = self._needle_index[text] = len(self.needles)
            self.needles.append(value)
        return index

    def const(self, value: Any) -> Any:
        z3, J = self.z3, self.J
        if value is None:
            return J.null
        if isinstance(value, bool):
            return J.boolean(z3.BoolVal(value, ctx=self.ctx))
        if is_number(value):
            return self.semantics.number_term(self, value)
        if isinstance(value, str):
            return J.string(literal(z3, value, self.ctx))
        self._register(value)
        index = self._known_index[self.semantics.canonical(value)]
        return J.known(z3.IntVal(index, ctx=self.ctx))

    def real(self, value: float) -> Any:
        """A number as an exact z3 real."""
        fraction = Fraction(value)
        return self.z3.RealVal(f"{fraction.numerator}/{fraction.denominator}", ctx=self.ctx)

    def questions(
        self, timeout_ms: int | None = None, keys: Iterable[str] | None = None
    ) -> Questions:
        """A solver for questions about the initial state (see :class:`Questions`); its
        domain covers every key of the proposals this encoder was made with, or ``keys``."""
        return Questions(self, timeout_ms, keys)

    def domain(self, keys: Iterable[str] | None = None) -> Any:
        """Constraints every initial value obeys (``known`` indexes name real constants):
        of every key, or of ``keys`` (each constrains its own value only)."""
        z3, J = self.z3, self.J
        parts = [self.semantics.constant_facts(self)]
        chosen = self.initial.values() if keys is None else [self.initial[k] for k in keys]
        for _, value in chosen:
            parts.append(
                z3.Implies(J.is_known(value), z3.And(J.k(value) >= 0, J.k(value) < len(self.known)))
            )
            parts.append(self.semantics.value_domain(self, value))
        return z3.And(*parts) if parts else self.true

    # --- operators -----------------------------------------------------------------------------

    def holds(self, pre: Precondition, present: Any, value: Any, negative_zero: Any = None) -> Any:
        """The precondition as a z3 formula over a key's presence and value (and the
        sign of a float zero there: None when unknown, and then any answer that
        depends on it is left open), as the semantics reads the operator."""
        return self.semantics.holds_term(self, pre, present, value, negative_zero)

    def sign_of(self, value: Any) -> Any:
        """A constant's sign of zero: true for ``-0.0`` only."""
        negative = isinstance(value, float) and value == 0 and math.copysign(1.0, value) < 0
        return self.true if negative else self.false

    # --- the walk ------------------------------------------------------------------------------

    def run(self, proposal: ActionProposal, *, assume_unblocked: bool = False) -> SymbolicRun:
        """Walk ``proposal`` in simulate mode from the symbolic initial state.

        ``assume_unblocked``: walk the run in which every action runs, applying every
        effect. Its blocked terms are small (no ``If`` over earlier outcomes) but mean
        something only together: no action is blocked in the real run exactly when
        none is in this one (level by level, the two runs see the same state).
        """
        sem = self.semantics
        dag = sem.order(proposal)
        actions = proposal.actions
        state = dict(self.initial)
        signs = dict(self.negative_zero)
        blocked: list[Any] = [self.false] * dag.n
        # "none of these ran blocked", once per duplicated id waited for (Dag.waits_shared_with)
        shared: dict[str, Any] = {}
        for _, turn, _, _ in schedule(dag, sem):  # the walk's order of turns
            for i in turn:  # the walk's needs, each made a term
                ok = []
                for pre, _ in sem.checks(actions[i]):
                    present, value = state[pre.key]
                    ok.append(self.holds(pre, present, value, signs[pre.key]))
                for key in dag.keys[i]:
                    ok.append(state[key][0])
                if not assume_unblocked:
                    ok.extend(self._ran(dag, i, blocked, shared))
                blocked[i] = self.z3.Not(self.z3.And(*ok)) if ok else self.false
            for i in turn:  # the turn is over: its effects land, in proposal order
                self._apply(state, signs, i, sem.effects(actions[i]), blocked, assume_unblocked)
        return SymbolicRun(state, blocked, dag, signs)

    def _apply(
        self,
        state: dict[str, tuple[Any, Any]],
        signs: dict[str, Any],
        i: int,
        change: Mapping[str, Any],
        blocked: list[Any],
        assume_unblocked: bool,
    ) -> None:
        """Action ``i``'s effects on the symbolic state (and on the signs of zero):
        where it ran (every action runs, with ``assume_unblocked``)."""
        z3 = self.z3
        for key, value in change.items():
            if assume_unblocked:
                state[key] = (self.true, self.const(value))
                signs[key] = self.sign_of(value)
                continue
            present, current = state[key]
            state[key] = (
                z3.If(blocked[i], present, self.true),
                z3.If(blocked[i], current, self.const(value)),
            )
            signs[key] = z3.If(blocked[i], signs[key], self.sign_of(value))

    def _ran(self, dag: Dag, i: int, blocked: list[Any], shared: dict[str, Any]) -> list[Any]:
        """The terms "each action ``i`` waits for ran"."""
        z3 = self.z3
        needs = dag.waits_for(i)
        name = dag.waits_shared_with(i)
        if name is None:
            return [z3.Not(blocked[t]) for t in needs]
        ran = shared.get(name)
        if ran is None:
            ran = shared[name] = z3.And(*(z3.Not(blocked[t]) for t in needs))
        return [ran]

    def same_final_state(self, a: SymbolicRun, b: SymbolicRun) -> Any:
        z3 = self.z3
        parts = []
        for key in self.keys:
            pa, va = a.final[key]
            pb, vb = b.final[key]
            parts.append(z3.And(pa == pb, z3.Implies(pa, va == vb)))
        return z3.And(*parts) if parts else self.true

    # --- models back to JSON ----------------------------------------------------------------------

    def state_from_model(self, model: Any, keys: Iterable[str] | None = None) -> dict[str, Any]:
        """A concrete initial state from a z3 model (absent keys left out)."""
        out: dict[str, Any] = {}
        for key in self.keys if keys is None else keys:
            present, value = self.initial[key]
            if self.z3.is_true(model.eval(present, model_completion=True)):
                found = self.to_json(model, model.eval(value, model_completion=True))
                negative = model.eval(self.negative_zero[key], model_completion=True)
                if isinstance(found, float) and found == 0 and self.z3.is_true(negative):
                    found = -0.0  # the zero the model's sign says
                out[key] = found
        return out

    def realized_state(self, model: Any, proposals: Sequence[ActionProposal]) -> dict[str, Any]:
        """:meth:`state_from_model`, with each value the model reads loosely (one whose
        text an open predicate stands for: a number or an opaque value under ``car``)
        replaced, where it has to be, by a value on which every test of the
        proposals on that key (their preconditions, and equality with each value
        they write to it) has the truth the model gives it: a run from the state
        then takes the model's branches. The value is sought among candidates built
        from the needles the model says it holds and the numbers the proposals
        name; where none fits, the model's own reading stays. A search for a
        witness, never a proof: what it returns is replayed like any other state."""
        sem = self.semantics
        state = self.state_from_model(model)
        checks: dict[str, list[Precondition]] = {}
        written: dict[str, list[Any]] = {}
        for proposal in proposals:
            for action in proposal.actions:
                for pre, _ in sem.checks(action):
                    checks.setdefault(pre.key, []).append(pre)
                for key, value in sem.effects(action).items():
                    written.setdefault(key, []).append(value)
        for key, value in list(state.items()):
            present, term = self.initial[key]
            tests: list[tuple[Any, bool]] = []
            for pre in checks.get(key, []):
                held = self.holds(pre, present, term, self.negative_zero[key])
                truth = self.z3.is_true(model.eval(held, True))
                tests.append((lambda v, pre=pre: sem.holds(pre.operator, v, pre.value), truth))
            for constant in written.get(key, []):
                truth = self.z3.is_true(model.eval(term == self.const(constant), True))
                tests.append((lambda v, c=constant: sem.equal(v, c), truth))

            def fits(candidate: Any, tests: list[tuple[Any, bool]] = tests) -> bool:
                return all(check(candidate) == truth for check, truth in tests)

            if fits(value):
                continue
            held = [
                pre.value
                for (pre, (_, truth)) in zip(checks.get(key, []), tests, strict=False)
                if pre.operator == "contains" and truth
            ]
            for candidate in _candidates(value, held, self.scalars):
                if fits(candidate):
                    state[key] = candidate
                    break
        return state

    def to_json(self, model: Any, term: Any) -> Any:
        z3 = self.z3
        name = term.decl().name()
        if name == "null":
            return None
        if name == "boolean":
            return z3.is_true(term.arg(0))
        if name == "number":
            fraction = Fraction(term.arg(0).as_fraction())
            return self.semantics.number_of(fraction)
        if name == "integer":
            return term.arg(0).as_long()
        if name == "string":
            return constant_text(self.z3, term.arg(0))
        if name == "known":
            index = term.arg(0).as_long()
            return self.known[index] if 0 <= index < len(self.known) else None
        ident = term.arg(0).as_long()
        if z3.is_true(term.arg(1)):
            members = [
                needle
                for i, needle in enumerate(self.needles)
                if z3.is_true(
                    model.eval(
                        self.member(ident, z3.IntVal(i, ctx=self.ctx)), model_completion=True
                    )
                )
            ]
            return self._unlike_known(members, [*members, f"{OPAQUE_MARKER}:{ident}"])
        return self._unlike_known({}, {OPAQUE_MARKER: ident})

    def _unlike_known(self, plain: Any, marked: Any) -> Any:
        """An opaque value differs from every array and object constant of the proposals:
        ``plain`` when it does, else ``marked`` (with a marker that makes it differ)."""
        if any(self.semantics.equal(plain, known) for known in self.known):
            return marked
        return plain


#: At most this many candidate values are tried for one key (:meth:`Encoder.realized_state`).
MAX_CANDIDATES = 400


def _candidates(value: Any, held: Sequence[Any], scalars: Sequence[Any]) -> list[Any]:
    """Values to try for a key the model reads loosely, in order: built from the
    needles it must hold (themselves; their texts joined, as a string and as a
    number, signed too; in an array; in an object), then the model's value with
    its sign turned, then the numbers the proposals name and their neighbours."""
    import itertools
    import json

    def text(v: Any) -> str:
        if isinstance(v, str):
            return v
        return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    out: list[Any] = [*held]
    pieces = list(dict.fromkeys(text(v) for v in held))
    for size in range(1, min(len(pieces), 3) + 1):
        for order in itertools.permutations(pieces, size):
            joined = "".join(order)
            out.append(joined)
            forms = (joined, f"1{joined}", f"{joined}1", f"{joined}.5", f"0.{joined}", f"-{joined}")
            for number_text in forms:
                for read in (int, float):
                    try:
                        number = read(number_text)
                    except (ValueError, OverflowError):
                        continue
                    if not isinstance(number, float) or math.isfinite(number):
                        out.append(number)
    for size in range(1, min(len(held), 3) + 1):
        for chosen in itertools.permutations(held, size):
            out.append(list(chosen))
            out.append({"~" * (n + 1): v for n, v in enumerate(chosen)})
    out.extend([[], {}])
    if isinstance(value, float) and math.isfinite(value):  # a real the model chose, rounded
        out.extend([math.nextafter(value, math.inf), math.nextafter(value, -math.inf)])
    if is_number(value):
        out.extend([-value, -0.0 if value == 0 else value / 2])
    for number in scalars:
        out.extend([number, number + 1, number - 1, number + 0.5, number - 0.5])
    return out[:MAX_CANDIDATES]
