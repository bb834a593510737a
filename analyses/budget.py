"""Budget: the proposal stays within ``max_actions``.

What it checks:
    That the proposal has at most ``max_actions`` actions (``too-many-actions``).
    Under strict it runs only when a budget is given (``max_actions=``,
    ``--max-actions``), and the finding is an error on the proposal; under car the
    budget is the runtime's default of 30 unless one is given, and the finding is
    a warning on the first action, as the runtime reports it.

Why it matters:
    A hard cap on plan size bounds what one model turn can do, the way a
    runtime's CostBudget rejects oversized proposals at verification time.

How to fix:
    Split the plan into smaller proposals, or raise the budget.

Why this tier:
    ``decision_procedure``: a count against a number.
"""

from __future__ import annotations

from collections.abc import Iterator

from car_verify.base.findings import Issue, Tier
from car_verify.base.values import plural
from car_verify.passes import Context, Example, Pass, Requirement

_STEP = {"type": "tool_call", "tool": "step"}


class BudgetPass(Pass):
    name = "budget"
    tier = Tier.DECISION_PROCEDURE
    codes = ("too-many-actions",)
    requires = frozenset({Requirement.MAX_ACTIONS})
    verifies = "the number of actions is within max_actions"
    cannot_verify = "tool-call, time and money budgets, which depend on run time"
    examples = (
        Example(
            "two actions within a budget of two",
            {"actions": [{**_STEP, "id": "a"}, {**_STEP, "id": "b"}]},
            max_actions=2,
        ),
        Example(
            "three actions over a budget of two",
            {"actions": [{**_STEP, "id": x} for x in "abc"]},
            ("too-many-actions",),
            max_actions=2,
        ),
    )

    def run(self, ctx: Context) -> Iterator[Issue]:
        limit = ctx.max_actions  # the one given, else the profile's default
        count = len(ctx.proposal.actions)
        if limit is not None and count > limit:
            default = " (the runtime's default)" if ctx.options.max_actions is None else ""
            message = ctx.semantics.say("too-many-actions", count=count, limit=limit)
            yield ctx.issue(
                "too-many-actions",
                message
                or f"the proposal has {plural(count, 'action')}; max_actions is {limit}{default}",
                index=0 if ctx.semantics.placement.over_budget_on_first else None,
            )
