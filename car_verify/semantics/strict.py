"""The ``strict`` profile: docs/semantics.md §1-8 as written.

* **order**: ``dependencies``, ``$id.output`` references and every earlier writer
  of a depended-on key order an action (:class:`~car_verify.semantics.dag.Dag`); explicit
  and output-reference dependencies also block (a blocked one blocks its dependents);
* **values**: :mod:`car_verify.base.values` (``1 == 1.0``, ``neq`` on an absent key is
  true, ``contains`` is substring or deep-equal membership);
* **effects**: ``expected_effects``, then a ``state_write``'s ``{key: value}``;
* **the walk**: level-synchronous: every action of a level sees its start state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ..base.values import canonical, evaluate, fingerprint, is_number, json_equal
from .base import FlatOrder, Placement, Semantics, ToolSchemas, Where
from .profiles import Profile
from .value_domain import literal

if TYPE_CHECKING:
    from fractions import Fraction

    from ..ir.flat import FlatPlan
    from ..ir.model import Action, ActionProposal, Precondition
    from .dag import Dag

__all__ = ["STRICT", "StrictSemantics", "phantom_entries"]


def phantom_entries(action: Action) -> list[str]:
    """The ``state_dependencies`` keys of ``action`` that are phantom (docs/semantics.md
    §6): with an explicit, non-empty ``read_set``, those in none of it, the
    preconditions, the assumptions or the ``state_read`` keys."""
    if not action.read_set:
        return []
    declared = set(action.read_set)
    declared.update(p.key for p in action.preconditions)
    declared.update(a.key for a in action.assumptions)
    declared.update(action.state_read_keys())
    return [key for key in dict.fromkeys(action.state_dependencies) if key not in declared]


class StrictSemantics(Semantics):
    """docs/semantics.md §1-8."""

    profile: ClassVar[Profile] = Profile.STRICT
    number_noun: ClassVar[str] = "a number"
    declassifier_on_any_path: ClassVar[bool] = False
    own_checks_decide: ClassVar[bool] = True
    sequential: ClassVar[bool] = False
    rejection_aborts: ClassVar[bool] = True
    spent_retry_aborts: ClassVar[bool] = True
    assertion_predicate_rejects: ClassVar[bool] = False
    optimize_rechecks: ClassVar[bool] = True
    placement: ClassVar[Placement] = Placement(
        proposal_id=None,
        repeats_on_proposal=False,
        over_budget_on_first=False,
        conflict_on_earlier=False,
        each_false_part=False,
    )
    default_max_actions: ClassVar[int | None] = None
    answers_repeated_op_ids: ClassVar[bool] = False
    skip_is_optional: ClassVar[bool] = True
    summary: ClassVar[str] = (
        "dependencies, output references and every earlier writer of a key order an "
        "action; a level sees the state it began with"
    )

    def order(self, proposal: ActionProposal) -> Dag:
        from .dag import Dag

        return Dag(proposal)

    def optimize_candidates(self, proposal: ActionProposal) -> list[tuple[int, str, str]]:
        return [
            (
                index,
                key,
                f"not in the action's read_set {action.read_set}, preconditions, "
                "assumptions or state_read keys",
            )
            for index, action in enumerate(proposal.actions)
            for key in phantom_entries(action)
        ]

    def ordering_edit(
        self, action: Mapping[str, Any], first: str, key: str
    ) -> tuple[str, str] | str:
        return "dependencies", first  # an explicit edge (docs/semantics.md §3)

    #: :meth:`Semantics.holds`: :func:`~car_verify.base.values.evaluate` itself.
    holds = staticmethod(evaluate)

    def equal(self, a: object, b: object) -> bool:
        return json_equal(a, b)

    def canonical(self, value: object) -> str:
        return canonical(value)

    def fingerprint(self, parameters: Mapping[str, Any]) -> int:
        return fingerprint(parameters)

    # --- the flat plan ------------------------------------------------------------------

    def flat_order(self, plan: FlatPlan) -> FlatOrder | None:
        from .dag import FlatDag

        dag = FlatDag(plan)
        if dag.unlevelled:
            return None  # a cycle: references' finding, and the plain runner's walk
        return FlatOrder(dag.levels, dag._level, dag._preds, dag.keys, plan, self, dag.writers, dag)

    def flat_writers(self, plan: FlatPlan) -> dict[str, list[int]]:
        raise AssertionError("the flat order's DAG lists the writers")  # pragma: no cover

    def flat_conflicts(self, plan: FlatPlan, order: FlatOrder) -> list[tuple[int, int, str]]:
        assert order.dag is not None
        return list(order.dag.conflicts)

    def flat_checks(self, plan: FlatPlan, i: int) -> Sequence[tuple[Mapping[str, Any], Where]]:
        # An assertion's predicate: its preconditions, and the one its parameters spell.
        params = plan.parameters[i]
        key = params.get("key")
        if type(key) is not str:
            return ()
        operator = params.get("operator", "eq")
        spelled = {
            "key": key,
            "operator": operator if type(operator) is str else json.dumps(operator),
            "value": params.get("value"),
        }
        return ((spelled, ("parameters",)),)

    def flat_effects(self, plan: FlatPlan) -> list[Mapping[str, Any]]:
        effects: list[Mapping[str, Any]] = plan.effects  # type: ignore[assignment]
        types, parameters = plan.types, plan.parameters
        for i, kind in enumerate(types):
            if kind == "state_write":
                key = parameters[i].get("key")
                if type(key) is str:  # Action.effects: expected_effects, then {key: value}
                    if effects is plan.effects:
                        effects = list(effects)
                    effects[i] = {**plan.effects[i], key: parameters[i].get("value")}
        return effects

    def parameter_problems(
        self, tools: ToolSchemas, tool: str, parameters: Mapping[str, Any]
    ) -> list[tuple[str, tuple[str | int, ...]]]:
        """The tool's full JSON Schema, read with the draft it declares."""
        return [
            (f"parameters of {tool!r} at {error.json_path}: {error.message}", tuple(error.path))
            for error in tools.check_parameters(tool, parameters)
        ]

    def checks(self, action: Action) -> list[tuple[Precondition, Where]]:
        return action.predicate()

    def effects(self, action: Action) -> Mapping[str, Any]:
        return action.effects()

    # --- z3 -----------------------------------------------------------------------------

    def number_term(self, encoder: Any, value: int | float) -> Any:
        return encoder.J.number(encoder.real(value))  # a real: 1 == 1.0

    def number_of(self, value: Fraction) -> int | float:
        return value.numerator if value.denominator == 1 else float(value)

    def value_domain(self, encoder: Any, value: Any) -> Any:
        return encoder.z3.Not(encoder.J.is_integer(value))  # one kind of number

    def holds_term(
        self, encoder: Any, pre: Precondition, present: Any, value: Any, negative_zero: Any = None
    ) -> Any:
        # no operator of the spec reads a value's text: the sign of zero plays no part
        z3, J = encoder.z3, encoder.J
        op, expected = pre.operator, pre.value
        if op == "exists":
            return present
        if op == "not_exists":
            return z3.Not(present)
        if op == "eq":
            return z3.And(present, value == encoder.const(expected))
        if op == "neq":
            return z3.Or(z3.Not(present), value != encoder.const(expected))
        if op in ("gt", "lt", "gte", "lte"):
            if not is_number(expected):
                return encoder.false
            n, c = J.n(value), encoder.real(expected)
            compare = {"gt": n > c, "lt": n < c, "gte": n >= c, "lte": n <= c}[op]
            return z3.And(present, J.is_number(value), compare)
        if op == "contains":
            return z3.And(present, self._contains(encoder, value, expected))
        return encoder.false  # unknown operators are false

    def _contains(self, encoder: Any, value: Any, needle: Any) -> Any:
        """Substring of a string, or deep-equal membership of an array: of a known
        array exactly, of an opaque one through the encoder's ``member`` predicate."""
        z3, J = encoder.z3, encoder.J
        parts = []
        if isinstance(needle, str):
            parts.append(
                z3.And(
                    J.is_string(value),
                    z3.Contains(J.s(value), literal(z3, needle, encoder.ctx)),
                )
            )
        arrays = [
            i
            for i, known in enumerate(encoder.known)
            if isinstance(known, list) and any(json_equal(item, needle) for item in known)
        ]
        if arrays:
            parts.append(z3.And(J.is_known(value), z3.Or(*[J.k(value) == i for i in arrays])))
        index = z3.IntVal(encoder.needle(needle), ctx=encoder.ctx)
        parts.append(z3.And(J.is_opaque(value), J.array(value), encoder.member(J.o(value), index)))
        return z3.Or(*parts)


#: The one strict semantics object.
STRICT = StrictSemantics()
