"""Weakest precondition: the condition on the initial state under which every action
(or one chosen action) runs unblocked, decided with z3 over the simulate semantics.

The condition is printed as a readable formula over keys
(``tests_passed == true and coverage >= 0.8``), with a satisfying example state,
or ``never`` with the reason (the first action that can never run).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ..api import ProposalLike, simulate
from ..base.errors import UsageError, deep_values_are_input_errors
from ..ir.model import load
from ..semantics.value_domain import constant_text

if TYPE_CHECKING:
    from ..semantics import ProfileLike
    from ..semantics.symbolic import Encoder, Questions

__all__ = ["Condition", "runs_unblocked"]


@dataclass(slots=True)
class Condition:
    """``satisfiable``: True (``formula`` holds for some state, e.g. ``example``),
    False (``never``: see ``reason``) or None (the solver could not decide)."""

    target: str | None
    satisfiable: bool | None
    formula: str
    example: dict[str, Any] | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "action_id": self.target,
            "satisfiable": self.satisfiable,
            "condition": self.formula,
            "example": self.example,
            "reason": self.reason,
        }

    def explain(self) -> str:
        who = f"action {self.target!r}" if self.target else "every action"
        if self.satisfiable is None:
            return f"unknown: {self.reason}"
        if not self.satisfiable:
            return f"{who} runs unblocked: never ({self.reason})"
        return "\n".join(
            [
                f"{who} runs unblocked iff: {self.formula}",
                f"for example: {json.dumps(self.example, sort_keys=True)}",
            ]
        )


@deep_values_are_input_errors
def runs_unblocked(
    proposal: ProposalLike,
    action: str | None = None,
    *,
    timeout_ms: int = 30_000,
    profile: ProfileLike = None,
) -> Condition:
    """The weakest precondition for ``action`` (or every action) to run unblocked,
    over the walk of the profile's semantics (``car`` by default, or ``strict``)."""
    from ..semantics import semantics_of
    from ..semantics.symbolic import Encoder, Unmodelled

    sem = semantics_of(profile)
    model = load(proposal)
    sem.refuse(model)
    try:
        encoder = Encoder([model], sem)
        run = encoder.run(model, assume_unblocked=action is None)
    except Unmodelled as err:
        return Condition(action, None, "unknown", reason=str(err))
    z3 = encoder.z3
    # Every action runs exactly when every action runs in the run where all ran,
    # whose terms carry no If over earlier outcomes: ask that one (far smaller).
    ids = run.dag.ids
    if action is not None and action not in run.dag.positions:
        raise UsageError(f"no action {action!r} in the proposal")
    targets = run.dag.positions[action] if action is not None else list(range(run.dag.n))
    unwalked = [i for i in targets if run.dag.level_of(i) < 0]
    if unwalked:
        return Condition(
            action,
            False,
            "never",
            reason=f"{ids[unwalked[0]]} is on or after a dependency cycle",
        )
    runs = [z3.Not(run.blocked[i]) for i in targets]
    condition = z3.And(*runs) if runs else encoder.true
    questions = encoder.questions(timeout_ms)
    answer = questions.ask(condition)
    if answer.verdict == z3.unknown:
        return Condition(action, None, "unknown", reason=answer.reason)
    if answer.verdict == z3.unsat:
        real = run if action is not None else encoder.run(model)  # per action: real
        reason = _never(z3, questions, real, targets, ids)
        return Condition(action, False, "never", reason=reason)
    wanted = {ids[i] for i in targets}
    # The model's state, or, where it does not replay (a value the model reads
    # loosely: a number's or an opaque value's text under car, a real that is no
    # f64), the state with those values realized (Encoder.realized_state).
    for example in (
        encoder.state_from_model(answer.model),
        encoder.realized_state(answer.model, [model]),
    ):
        trace = simulate(model, initial_state=example, profile=sem).trace
        if not {t.action_id for t in trace if t.blocked} & wanted:
            break
    else:
        return Condition(action, None, "unknown", reason="the example did not replay")
    simple = _without_implied(z3, _simplify(z3, condition, encoder), encoder)
    printer = Printer(encoder)
    formula = printer.render(simple)
    return Condition(action, True, formula, example)


def _never(z3: Any, questions: Questions, run: Any, targets: list[int], ids: list[str]) -> str:
    for i in targets:
        if questions.ask(z3.Not(run.blocked[i])).verdict == z3.unsat:
            return f"{ids[i]} can never run, whatever the initial state"
    return "no initial state lets all of these actions run together"


def _without_implied(z3: Any, expr: Any, encoder: Encoder, timeout_ms: int = 2_000) -> Any:
    """Drop, first to last, each conjunct that the ones kept imply over JSON states
    (``a >= 1 and (b exists or a >= 1)`` is ``a >= 1``): the simplifier does not know
    the JSON domain. A question the solver cannot answer in time keeps the conjunct.

    Conjuncts that share no key are independent (the domain constrains each key on
    its own, and the whole conjunction is satisfiable when this runs), so a conjunct
    is implied by the others exactly when the ones of its group, linked by shared
    keys, imply it. Each question holds one group, not the whole condition, and goes
    to a solver that knows the domain of that group's keys only: the questions stay
    small and their number linear in the conjuncts.
    """
    if not z3.is_and(expr):
        return expr
    parts = list(expr.children())
    # A key's presence and value constants -> the key.
    key_of = {term.get_id(): key for key, pair in encoder.initial.items() for term in pair}
    dropped: set[int] = set()
    for group, constants in _linked(z3, parts):
        keys = dict.fromkeys(key_of[c] for c in sorted(constants) if c in key_of)
        questions = encoder.questions(keys=keys)
        kept = list(group)
        for j in group:
            rest = [k for k in kept if k != j]
            facts = [parts[k] for k in rest]
            answer = questions.ask(*facts, z3.Not(parts[j]), timeout_ms=timeout_ms, model=False)
            if answer.verdict == z3.unsat:
                kept = rest
                dropped.add(j)
    kept_parts = [part for j, part in enumerate(parts) if j not in dropped]
    if not kept_parts:  # each holds in every state: keep the last, as one by one would
        return parts[-1]
    return z3.And(*kept_parts) if len(kept_parts) > 1 else kept_parts[0]


def _linked(z3: Any, parts: list[Any]) -> list[tuple[list[int], set[int]]]:
    """The conjuncts grouped by shared uninterpreted constants (the keys' presence and
    values), each group in order with its constants' ids, the groups in order of
    their first conjunct."""
    parent = list(range(len(parts)))

    def root(j: int) -> int:
        while parent[j] != j:
            parent[j] = parent[parent[j]]
            j = parent[j]
        return j

    owner: dict[int, int] = {}  # constant's id -> the first conjunct that names it
    for j, part in enumerate(parts):
        for const in _constants(z3, part):
            first = owner.setdefault(const, j)
            parent[root(j)] = root(first)
    groups: dict[int, tuple[list[int], set[int]]] = {}
    for j in range(len(parts)):
        groups.setdefault(root(j), ([], set()))[0].append(j)
    for const, j in owner.items():
        groups[root(j)][1].add(const)
    return sorted(groups.values(), key=lambda group: group[0])


def _constants(z3: Any, expr: Any) -> set[int]:
    """The ids of the uninterpreted constants in ``expr`` (each subterm visited once)."""
    found: set[int] = set()
    seen: set[int] = set()
    stack = [expr]
    while stack:
        term = stack.pop()
        tid = term.get_id()
        if tid in seen:
            continue
        seen.add(tid)
        if z3.is_const(term) and term.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            found.add(tid)
        elif z3.is_app(term):
            stack.extend(term.children())
    return found


def _simplify(z3: Any, expr: Any, encoder: Any) -> Any:
    try:
        goal = z3.Goal(ctx=encoder.ctx)
        goal.add(expr)
        tactic = z3.Then("simplify", "ctx-solver-simplify", ctx=encoder.ctx)
        results = tactic(goal)
        parts = [g.as_expr() for g in results]
        return z3.simplify(z3.Or(*parts) if len(parts) > 1 else parts[0])
    except z3.Z3Exception:  # pragma: no cover - fall back to the plain simplifier
        return z3.simplify(expr)


class Printer:
    """z3 formulas over the initial state, back to ``key op value`` text."""

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self.z3 = encoder.z3
        self.present = {str(p): k for k, (p, _) in encoder.initial.items()}
        self.values = {str(v): k for k, (_, v) in encoder.initial.items()}

    def render(self, expr: Any) -> str:
        """The formula on one line, over keys and JSON values (never z3's own terms)."""
        return " ".join(self._expr(expr, top=True).split())

    def _ite(self, e: Any, top: bool) -> str:
        """``If(c, a, b)``, as ``(if c then a else b)``."""
        cond, then, other = e.children()
        return f"(if {self._expr(cond)} then {self._expr(then)} else {self._expr(other)})"

    def _key(self, term: Any) -> str | None:
        return self.values.get(str(term))

    def _value(self, term: Any) -> str:
        z3 = self.z3
        if z3.is_rational_value(term) or z3.is_int_value(term):
            fraction = (
                Fraction(term.as_fraction())
                if z3.is_rational_value(term)
                else Fraction(term.as_long())
            )
            if fraction.denominator == 1:
                return str(fraction.numerator)
            as_float = float(fraction)
            return (
                repr(as_float)
                if Fraction(as_float) == fraction or len(repr(as_float)) < 12
                else str(fraction)
            )
        if z3.is_string_value(term):
            return json.dumps(constant_text(z3, term))
        try:
            return json.dumps(self.encoder.to_json(None, term))
        except Exception:
            return str(term)

    def _expr(self, e: Any, top: bool = False) -> str:
        z3 = self.z3
        if z3.is_true(e):
            return "always"
        if z3.is_false(e):
            return "never"
        if z3.is_and(e):
            loose = self._loose_contains(e)
            if loose is not None:
                return loose
            parts = self._prune([c for c in e.children()])
            text = " and ".join(self._expr(c) for c in parts)
            return text if top or len(parts) == 1 else f"({text})"
        if z3.is_or(e):
            contains = self._contains_cases(e)
            if contains is not None:
                return contains
            # `contains` is a substring test or a membership test, which read alike
            texts = list(dict.fromkeys(self._expr(c) for c in e.children()))
            text = " or ".join(texts)
            return text if top or len(texts) == 1 else f"({text})"
        if z3.is_not(e):
            inner = e.arg(0)
            if str(inner) in self.present:
                return f"{self.present[str(inner)]} is absent"
            if z3.is_eq(inner) or str(inner.decl().name()) in ("<", "<=", ">", ">="):
                return self._atom(inner, negate=True)
            return f"not {self._expr(inner)}"
        if z3.is_implies(e):
            return f"(if {self._expr(e.arg(0))} then {self._expr(e.arg(1))})"
        if z3.is_app_of(e, z3.Z3_OP_ITE):
            return self._ite(e, top)
        return self._atom(e)

    def _contains_cases(self, e: Any) -> str | None:
        """``k contains x`` for a disjunction that is one ``contains`` read case by
        case (the car semantics': a string's substring, a number's or an opaque
        value's text as an open predicate, the array constants that hold it, null
        and booleans by their words, an integer's sign): every case on one key, one
        of them an open ``contains`` of one needle, printed as the needle."""
        z3 = self.z3
        keys: set[str] = set()
        needles: set[int] = set()
        stack, seen = [e], set()
        while stack:
            term = stack.pop()
            if term.get_id() in seen:
                continue
            seen.add(term.get_id())
            key = self._key(term) or self.present.get(str(term))
            if key is not None:
                keys.add(key)
                continue
            if z3.is_const(term) and term.decl().kind() == z3.Z3_OP_UNINTERPRETED:
                continue  # a sign the car semantics leaves open at zero
            if str(term.decl().name()) == "text_contains" and z3.is_int_value(term.arg(1)):
                needles.add(term.arg(1).as_long())
            stack.extend(term.children())
        if len(keys) != 1 or len(needles) != 1:
            return None
        needle = self.encoder.needles[needles.pop()]
        return f"{keys.pop()} contains {json.dumps(needle)}"

    def _loose_contains(self, e: Any) -> str | None:
        """``(k is an integer or k is a float or ...) and k contains "x"``: the car
        semantics' ``contains`` on a value other than a string (its text, an open
        predicate) beside the string case. CAR's ``contains`` is a test on the text
        of any value, so this is ``k contains "x"``, as the string case prints."""
        z3 = self.z3
        needle = [c for c in e.children() if str(c.decl().name()) == "text_contains"]
        if len(needle) != 1:
            return None
        key = self._key(needle[0].arg(0))

        def kinds_of_key(c: Any) -> bool:
            if z3.is_or(c):
                return all(kinds_of_key(d) for d in c.children())
            return self._recognizer(c) is not None and self._key(c.arg(0)) == key

        rest = [c for c in e.children() if not c.eq(needle[0])]
        if key is None or not all(kinds_of_key(c) for c in rest):
            return None
        return self._atom(needle[0])

    def _prune(self, parts: list[Any]) -> list[Any]:
        """In a conjunction, drop ``k exists`` / ``k is a number`` implied by a comparison on k
        (a negated order, printed ``k < 2.5``, still compares k as a number; a negated
        equality, printed ``k != 1``, holds for an absent k too, so it implies nothing)."""
        mentioned = {key for c in parts for key in self._compared_keys(c)}
        out = []
        for c in parts:
            name = str(c)
            if name in self.present and self.present[name] in mentioned:
                continue
            if self._recognizer(c) and self._key(c.arg(0)) in mentioned:
                continue
            if str(c.decl().name()) == "array" and self._key(c.arg(0)) in mentioned:
                continue
            out.append(c)
        return out or parts

    def _compared_keys(self, e: Any) -> set[str]:
        if not self.z3.is_not(e):
            return self._value_keys(e)
        inner = e.arg(0)
        if str(inner.decl().name()) in ("<", "<=", ">", ">="):
            return self._value_keys(inner)
        return set()

    def _recognizer(self, e: Any) -> str | None:
        """The constructor a ``is(kind, value)`` test names, else None."""
        text = str(e)
        if text.startswith("is(") and e.num_args() == 1:
            return text[3:].split(",", 1)[0]
        return None

    def _value_keys(self, e: Any) -> set[str]:
        z3 = self.z3
        if self._recognizer(e) or str(e.decl().name()) == "array":
            return set()
        found: set[str] = set()
        stack = [e]
        while stack:
            t = stack.pop()
            key = self._key(t)
            if key is not None:
                found.add(key)
            elif z3.is_app(t):
                stack.extend(t.children())
        return found

    def _atom(self, e: Any, negate: bool = False) -> str:
        z3 = self.z3
        name = str(e.decl().name())
        if str(e) in self.present:
            return f"{self.present[str(e)]} exists"
        kind = self._recognizer(e)
        if kind is not None:
            key = self._key(e.arg(0)) or str(e.arg(0))
            noun = {
                "opaque": "an array or object",
                "known": "an array or object",
                "null": "null",
                "boolean": "a boolean",
                "number": self.encoder.semantics.number_noun,
                "integer": "an integer",
                "string": "a string",
            }.get(kind, kind)
            return f"{key} is {noun}"
        if name == "array":
            return f"{self._operand(e.arg(0))} is an array"
        if z3.is_eq(e) or name in ("<", "<=", ">", ">="):
            left, right = e.arg(0), e.arg(1)
            op = {"=": "==", "<": "<", "<=": "<=", ">": ">", ">=": ">="}.get(name, name)
            if negate:
                op = {"==": "!=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}[op]
            if self._is_key_term(right) and not self._is_key_term(left):
                left, right = right, left
                op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
            if self._accessor(left) == "k" and z3.is_int_value(right):
                # k(value) == i: the value is the i-th array or object constant
                constant = json.dumps(self.encoder.known[right.as_long()])
                return f"{self._operand(left)} {op} {constant}"
            return f"{self._operand(left)} {op} {self._operand(right)}"
        if name == "str.contains" or name == "Contains":
            return f"{self._operand(e.arg(0))} contains {self._operand(e.arg(1))}"
        if name in ("member", "text_contains"):
            needle = self.encoder.needles[e.arg(1).as_long()]
            return f"{self._operand(e.arg(0))} contains {json.dumps(needle)}"
        return str(e)

    def _accessor(self, t: Any) -> str | None:
        """The field name of ``n(value[k])``, ``s(value[k])``, ``k(value[k])``..., else None."""
        if t.num_args() == 1 and self._key(t.arg(0)) is not None:
            return str(t.decl().name())
        return None

    def _is_key_term(self, t: Any) -> bool:
        if self.z3.is_to_real(t):  # an integer compared as a number
            return self._is_key_term(t.arg(0))
        return self._key(t) is not None or (t.num_args() == 1 and self._key(t.arg(0)) is not None)

    def _operand(self, t: Any) -> str:
        key = self._key(t)
        if key is not None:
            return key
        if self.z3.is_to_real(t):  # an integer compared as a number
            return self._operand(t.arg(0))
        if t.num_args() == 1 and self._key(t.arg(0)) is not None:  # n(value), s(value)
            return self._key(t.arg(0)) or str(t)
        return self._value(t)
