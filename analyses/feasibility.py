"""Feasibility (z3): every action can run in *some* initial state.

What it checks:
    With z3, for every action, whether any initial state at all lets it run
    unblocked under the simulate semantics: its preconditions, the keys it
    depends on, and the actions it waits for (``never-runs``). The walk checks
    one initial state; this pass decides over all of them. Opt-in: name it
    (``passes=["feasibility"]``, ``--passes feasibility``); it needs z3-solver.

Why it matters:
    An action that can never run is dead weight at best and a broken gate at
    worst: contradictory preconditions (``x == 1`` and ``x == 2``), a precondition
    that an earlier effect always falsifies, or a dependency on such an action.

How to fix:
    Read the action's preconditions together with the effects ordered before it;
    ``car-verify wp PROPOSAL --action ID`` prints the condition it needs.

Why this tier:
    ``decision_procedure``: z3 decides satisfiability over every initial state of
    the keys the proposal mentions.
"""

from __future__ import annotations

from collections.abc import Iterator

from car_verify.base.findings import Issue, Tier
from car_verify.passes import Context, Example, Pass, Requirement


class FeasibilityPass(Pass):
    name = "feasibility"
    tier = Tier.DECISION_PROCEDURE
    codes = ("never-runs",)
    requires = frozenset({Requirement.Z3})
    default = False
    verifies = "every action can run unblocked in some initial state"
    cannot_verify = "whether the initial state the plan will meet is one of those"
    examples = (
        Example(
            "a gate some state satisfies",
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
            initial_state={"tests_passed": True},
        ),
        Example(
            "contradictory preconditions",
            {
                "actions": [
                    {
                        "id": "deploy",
                        "type": "tool_call",
                        "tool": "deploy",
                        "preconditions": [
                            {"key": "env", "value": "staging"},
                            {"key": "env", "value": "prod"},
                        ],
                    }
                ]
            },
            ("never-runs",),
        ),
    )

    def run(self, ctx: Context) -> Iterator[Issue]:
        from car_verify.semantics.symbolic import Encoder

        encoder = Encoder([ctx.proposal], ctx.semantics)
        z3 = encoder.z3
        # One state in which every action runs settles them all. The run in which
        # every action ran asks that with small terms (see Encoder.run).
        all_ran = encoder.run(ctx.proposal, assume_unblocked=True)
        # On or after a cycle: not walked, and reported by the references pass.
        walked = [i for i in range(all_ran.dag.n) if all_ran.dag.level_of(i) >= 0]
        questions = encoder.questions()
        if questions.ask(*[z3.Not(all_ran.blocked[i]) for i in walked]).verdict == z3.sat:
            return
        run = encoder.run(ctx.proposal)  # each action on its own: the real run
        for i in walked:
            if questions.ask(z3.Not(run.blocked[i])).verdict == z3.unsat:
                yield ctx.issue(
                    "never-runs",
                    "no initial state lets this action run: its preconditions, dependencies "
                    "and the effects ordered before it contradict each other",
                    index=i,
                )
