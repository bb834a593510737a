"""Compensation: what claims to be undoable says how, and the undo exists.

What it checks:
    An action with ``reversibility: compensable`` declares a ``compensation``
    (``missing-compensation``), and a declared compensation names something that
    exists (``unknown-compensation-target``): an ``action_ref`` must name an
    action of the proposal; a ``tool`` compensation must name a registered tool
    (checked only when a tool registry is given).

Why it matters:
    ``compensable`` promises a way back. Without a compensation, or with one that
    points nowhere, a rollback after a partial failure leaves the effect in the
    world while the plan's rollback contract says it could be undone.

How to fix:
    Add ``"compensation": {"type": "tool", "tool": ...}`` or
    ``{"type": "action_ref", "action_id": ...}`` naming a real undo; or declare
    the action ``irreversible`` if it cannot be undone.

Why this tier:
    ``decision_procedure``: presence and set membership. Whether the named tool is
    a true inverse is a claim nothing checks.
"""

from __future__ import annotations

from collections.abc import Iterator

from car_verify.base.findings import Issue, Tier
from car_verify.ir.model import ActionRefCompensation
from car_verify.passes import Context, Example, Pass, Preserves

_CHARGE = {
    "id": "charge",
    "type": "tool_call",
    "tool": "charge_card",
    "reversibility": "compensable",
}


class CompensationPass(Pass):
    name = "compensation"
    preserves = frozenset({Preserves.ORDER_KEEPING_DEPENDENCY_EDIT})
    tier = Tier.DECISION_PROCEDURE
    codes = ("missing-compensation", "unknown-compensation-target")
    verifies = (
        "compensable actions declare a compensation that names an action or a registered tool"
    )
    cannot_verify = "that a compensation really undoes its action"
    residual_risks = ("a declared compensation is a claim: nothing checks it is a true inverse",)
    examples = (
        Example(
            "a charge with its refund",
            {"actions": [{**_CHARGE, "compensation": {"type": "tool", "tool": "refund"}}]},
        ),
        Example("compensable, but no way back", {"actions": [_CHARGE]}, ("missing-compensation",)),
        Example(
            "an undo that points at no action",
            {"actions": [{**_CHARGE, "compensation": {"type": "action_ref", "action_id": "undo"}}]},
            ("unknown-compensation-target",),
        ),
    )

    def run(self, ctx: Context) -> Iterator[Issue]:
        dag = ctx.dag
        tools = ctx.tools
        say = ctx.semantics.say
        for i, action in enumerate(ctx.proposal.actions):
            if action.missing_required_compensation():
                yield ctx.issue(
                    "missing-compensation",
                    say("missing-compensation")
                    or "action is compensable but declares no compensation",
                    index=i,
                    where=("reversibility",),
                )
            comp = action.compensation
            if comp is None:
                continue
            if isinstance(comp, ActionRefCompensation):
                if not dag.targets(comp.action_id):
                    yield ctx.issue(
                        "unknown-compensation-target",
                        say("unknown-compensation-target:action", target=comp.action_id)
                        or f"compensation refers to action {comp.action_id!r}, which is not in "
                        "this proposal",
                        index=i,
                        where=("compensation", "action_id"),
                    )
            elif tools is not None and comp.tool not in tools:
                yield ctx.issue(
                    "unknown-compensation-target",
                    say("unknown-compensation-target:tool", target=comp.tool)
                    or f"compensation tool {comp.tool!r} is not in the tool registry",
                    index=i,
                    where=("compensation", "tool"),
                )
