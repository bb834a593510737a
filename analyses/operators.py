"""Operators: every precondition uses an operator from the spec's table.

What it checks:
    Each precondition's ``operator`` (and, under strict, the ``operator`` an
    assertion spells in its ``parameters``, which the runtime does not evaluate)
    is one of ``eq neq gt lt gte lte exists not_exists
    contains``. Names are case-sensitive: ``EQ`` is unknown (``unknown-operator``).

Why it matters:
    Runtimes accept unknown operators and evaluate them to false, so the action is
    silently blocked at run time. A typo in an operator is a plan that can never
    run. The walk does not report such a precondition again as
    ``precondition-unsatisfied``.

How to fix:
    Use an operator from the table; ``exists`` / ``not_exists`` test presence.

Why this tier:
    ``decision_procedure``: membership in a fixed set.
"""

from __future__ import annotations

from collections.abc import Iterator

from car_verify.base.findings import Issue, Tier
from car_verify.base.values import ABSENT, KNOWN_OPERATORS
from car_verify.passes import Context, Example, Pass, Preserves


class OperatorPass(Pass):
    name = "operators"
    preserves = frozenset({Preserves.ORDER_KEEPING_DEPENDENCY_EDIT})
    tier = Tier.DECISION_PROCEDURE
    codes = ("unknown-operator",)
    verifies = "every precondition operator is in the operator table"
    cannot_verify = "operators that a newer runtime may add"
    examples = (
        Example(
            "a known operator",
            {
                "actions": [
                    {
                        "id": "a1",
                        "type": "tool_call",
                        "tool": "deploy",
                        "preconditions": [{"key": "ready", "operator": "exists"}],
                    }
                ]
            },
            initial_state={"ready": True},
        ),
        Example(
            "an operator spelt in capitals",
            {
                "actions": [
                    {
                        "id": "a1",
                        "type": "tool_call",
                        "tool": "deploy",
                        "preconditions": [{"key": "ready", "operator": "EQ", "value": True}],
                    }
                ]
            },
            ("unknown-operator",),
            initial_state={"ready": True},
        ),
    )

    def run(self, ctx: Context) -> Iterator[Issue]:
        sem = ctx.semantics
        checks = sem.checks
        # Where the profile words a failure itself (the runtime's message, which
        # names the key's value first), the value at the action's turn in the walk.
        seen: dict[tuple[int, tuple[str | int, ...]], object] | None = None
        for i, action in enumerate(ctx.proposal.actions):
            if action.type != "assertion":
                for pre in action.preconditions:
                    if pre.operator not in KNOWN_OPERATORS:
                        break
                else:
                    continue  # every operator known: the common case, no predicate built
            for pre, where in checks(action):  # what the profile checks of the action
                if pre.operator not in KNOWN_OPERATORS:
                    if seen is None:
                        seen = _values(ctx) if sem.has_failure_words else {}
                    message = sem.failure_words(pre, pre.key, seen.get((i, where), ABSENT)) or (
                        f"precondition on {pre.key!r} uses unknown operator {pre.operator!r}"
                    )
                    yield ctx.issue(
                        "unknown-operator", message, index=i, where=(*where, "operator")
                    )


def _values(ctx: Context) -> dict[tuple[int, tuple[str | int, ...]], object]:
    """Each failed precondition's value in the walk, by action and place."""
    out: dict[tuple[int, tuple[str | int, ...]], object] = {}
    for trace in ctx.walk.traces:
        if trace is None:
            continue
        for cause in trace.causes:
            if cause.precondition is not None:
                out[(trace.index, cause.where)] = cause.actual
            for _, where, actual in cause.failed:
                out[(trace.index, where)] = actual
    return out
