"""STRIPS walk: every action can run in the state the plan leaves before it.

What it checks:
    The STRIPS-style forward walk of docs/semantics.md §4. Levels run in order;
    each action is checked against the state as its level begins (the initial
    state plus the declared effects of all earlier levels). It reports each false
    precondition (``precondition-unsatisfied``, one per precondition), each
    depended-on key that is absent (``missing-dependency``: ``state_dependencies``
    and ``state_read`` keys), and each assertion whose predicate is false
    (``assertion-fails``). Blocked actions' effects are applied anyway, so one
    failure does not cascade into knock-on findings.

    Under car the walk is the runtime's (sequential inside a level, with its
    equality and operators), each false precondition of an assertion is a finding
    of its own, each ``state_dependencies`` entry absent at its turn is one
    (repeats included), the messages are the runtime's, and ``failure_behavior:
    skip`` changes nothing (the code table's car column).

Why it matters:
    An action whose precondition cannot hold, or whose input key is never
    produced, is rejected by the runtime before dispatch: the plan cannot do what
    it says. The messages say whether any action writes the key and, when one
    does but is not ordered before the reader, name it: the usual fix is a
    missing dependency.

How to fix:
    Order the writer before the reader (``dependencies`` or
    ``state_dependencies``), supply the key in the initial state, or correct the
    precondition. Under strict, on an action marked ``failure_behavior: skip``
    these findings are warnings: the author declared it optional.

Why this tier:
    ``decision_procedure``: the walk decides the property over the declared
    ``expected_effects``. It is not a prediction that the tools behave as
    declared; see the evidence bundle's assumptions.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator

from car_verify.base.findings import Issue, Tier
from car_verify.base.values import KNOWN_OPERATORS, format_predicate, format_value
from car_verify.ir.model import Action, Precondition
from car_verify.passes import Context, Example, Pass, Preserves, key_pointer_in, named_actions
from car_verify.semantics.walk import Cause


def key_pointer(action: Action, key: str, start: int = 0) -> tuple[str | int, ...]:
    """Where an action names a depended-on key (in ``state_dependencies``, its first
    entry from ``start`` on)."""
    return key_pointer_in(action.state_dependencies, action.parameters, key, start)


class StripsPass(Pass):
    name = "strips"
    preserves = frozenset({Preserves.ORDER_KEEPING_DEPENDENCY_EDIT})
    tier = Tier.DECISION_PROCEDURE
    codes = ("precondition-unsatisfied", "missing-dependency", "assertion-fails")
    verifies = "preconditions, state dependencies and assertions hold in the forward walk"
    cannot_verify = "whether tools really produce their declared expected_effects"
    assumes = (
        "each action changes the state exactly as its expected_effects declare",
        "the initial state is the one given ({} when none is given)",
    )
    residual_risks = (
        "a tool whose real effects differ from its declared expected_effects can still "
        "block a later action at run time",
    )
    examples = (
        Example(
            "tests run before the gated deploy",
            {
                "actions": [
                    {
                        "id": "test",
                        "type": "tool_call",
                        "tool": "run_tests",
                        "expected_effects": {"tests_passed": True},
                    },
                    {
                        "id": "deploy",
                        "type": "tool_call",
                        "tool": "deploy",
                        "preconditions": [{"key": "tests_passed", "value": True}],
                        "dependencies": ["test"],
                    },
                ]
            },
        ),
        Example(
            "a deploy gated on tests nobody runs",
            {
                "actions": [
                    {
                        "id": "deploy",
                        "type": "tool_call",
                        "tool": "deploy",
                        "preconditions": [{"key": "tests_passed", "value": True}],
                    }
                ]
            },
            ("precondition-unsatisfied",),
        ),
        Example(
            "a report that reads a key nothing writes",
            {
                "actions": [
                    {
                        "id": "report",
                        "type": "tool_call",
                        "tool": "send_report",
                        "state_dependencies": ["metrics"],
                    }
                ]
            },
            ("missing-dependency",),
        ),
        Example(
            "an assertion that the walk proves false",
            {
                "actions": [
                    {
                        "id": "check",
                        "type": "assertion",
                        "parameters": {"key": "replicas", "operator": "gte", "value": 3},
                    }
                ]
            },
            ("assertion-fails",),
            initial_state={"replicas": 1},
        ),
    )

    def run(self, ctx: Context) -> Iterator[Issue]:
        actions = ctx.proposal.actions
        words = ctx.semantics.failure_words
        each_part = ctx.semantics.placement.each_false_part
        traces = [t for t in ctx.walk.traces if t is not None and t.causes]
        late: dict[tuple[int, str], tuple[int, list[int]]] = {}
        if not ctx.semantics.has_failure_words:  # the messages name the writers of a key
            # Which writers of a failing precondition's key are not ordered before the
            # reader: asked of the DAG once, for all failing preconditions together.
            late = ctx.dag.writers_not_before(
                (trace.index, cause.key)
                for trace in traces
                for cause in trace.causes
                if cause.kind == "precondition" and cause.key is not None
            )
        for trace in traces:
            i = trace.index
            action = actions[i]
            seen: dict[str, int] = {}  # each key's entries named so far (repeats)
            for cause in trace.causes:
                if cause.kind == "assertion" and each_part:
                    for pre, where, actual in cause.failed:
                        if pre.operator in KNOWN_OPERATORS:  # else: the operators pass's
                            message = words(pre, pre.key, actual) or self._false(pre, actual)
                            yield ctx.issue("assertion-fails", message, index=i, where=where)
                    continue
                issue = self._issue(ctx, i, action, cause, late, seen)
                if issue is not None:
                    yield issue

    @staticmethod
    def _false(pre: Precondition, actual: object) -> str:
        return (
            f"assertion is false in the walk: {format_predicate(pre.key, pre.operator, pre.value)}"
            f" ({pre.key} is {format_value(actual)})"
        )

    def _issue(
        self,
        ctx: Context,
        i: int,
        action: Action,
        cause: Cause,
        late: dict[tuple[int, str], tuple[int, list[int]]],
        seen: dict[str, int],
    ) -> Issue | None:
        dag = ctx.dag
        words = ctx.semantics.failure_words
        if cause.kind == "precondition" and cause.precondition is not None:
            pre = cause.precondition
            key = pre.key
            said = words(pre, key, cause.actual)
            if said is not None:
                return ctx.issue("precondition-unsatisfied", said, index=i, where=cause.where)
            head = f"precondition {format_predicate(key, pre.operator, pre.value)} is false"
            writers = dag.writers.get(key, [])
            if not writers:
                why = f"{key!r} is {format_value(cause.actual)} and no action writes it"
            else:
                unordered, first = late[(i, key)]
                if unordered:
                    why = (
                        f"{key!r} is {format_value(cause.actual)} here; "
                        f"written by {named_actions(dag.ids, first, unordered)}, "
                        "not ordered before this action"
                    )
                else:
                    others = len(writers) - dag.is_writer(key, i)
                    why = (
                        f"{key!r} is {format_value(cause.actual)} here, after the writes of "
                        f"{named_actions(dag.ids, [w for w in writers[:6] if w != i], others)}"
                        if others
                        else f"{key!r} is {format_value(cause.actual)}; only this action writes it"
                    )
            return ctx.issue(
                "precondition-unsatisfied", f"{head}: {why}", index=i, where=cause.where
            )
        if cause.kind == "missing-key" and cause.key is not None:
            key = cause.key
            where = key_pointer(action, key, seen.get(key, 0))
            if where[:1] == ("state_dependencies",):
                seen[key] = int(where[1]) + 1
            said = words(None, key, None)
            if said is not None:
                return ctx.issue("missing-dependency", said, index=i, where=where)
            writers = dag.writers.get(key, [])
            earlier = bisect_left(writers, i)  # writers[:earlier] come before this action
            later = earlier + dag.is_writer(key, i)  # and writers[later:] after it
            if earlier:
                actions = ctx.proposal.actions
                if not any(key in actions[w].effects() for w in writers[:earlier]):
                    verb = "names" if earlier == 1 else "name"
                    why = (
                        f"{named_actions(dag.ids, writers[:5], earlier)} {verb} it in write_set "
                        "but no declared effect sets it"
                    )
                else:
                    why = "it is absent when this action's level begins"
            elif later < len(writers):
                why = (
                    "it is absent from the initial state and written only by later actions: "
                    f"{named_actions(dag.ids, writers[later : later + 5], len(writers) - later)}"
                )
            else:
                why = "it is absent from the initial state and written by no earlier action"
            return ctx.issue(
                "missing-dependency", f"depends on state key {key!r}: {why}", index=i, where=where
            )
        if cause.kind == "assertion":
            parts = "; ".join(
                f"{format_predicate(p.key, p.operator, p.value)} "
                f"({p.key} is {format_value(actual)})"
                for p, _, actual in cause.failed
            )
            first_where = cause.failed[0][1] if cause.failed else ()
            return ctx.issue(
                "assertion-fails",
                f"assertion is false in the walk: {parts}",
                index=i,
                where=first_where,
            )
        return None  # unknown-operator: reported by the operators pass
