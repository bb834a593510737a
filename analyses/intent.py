"""Intent: with a declared intent, every call stays inside what the user asked for.

What it checks:
    With an intent (``verify(intent=...)``, ``--intent FILE``, or the nearest
    ``.car/intent.json``: ``{allowed_tools, allowed_resources,
    forbidden_capabilities}``, or ``{intent, untrusted_tools}``), the check of
    ``car-verify intent`` (``docs/intent.md``) over the plan: a tool outside
    ``allowed_tools`` or a written key outside ``allowed_resources`` is
    ``intent-drift``, or ``intent-injection`` when the action depends (through
    the DAG, followed through) on a tool whose results are untrusted (labelled
    ``trust: untrusted`` in the tool labels, or listed in ``untrusted_tools``);
    a capability in ``metadata.capabilities`` the intent forbids is
    ``intent-forbidden-capability``.

Why it matters:
    Tool-stream injection makes an agent call what the user never asked for,
    steered by text a tool returned. A call outside the intent that an
    untrusted result influenced is the signature; the runtime refuses to commit
    it.

How to fix:
    Drop the call, or widen the intent if the user did ask for it; keep
    untrusted results away from consequential calls (a human approval step).

Why this tier:
    ``decision_procedure``: set membership and a prefix test over the declared
    tools, keys and the DAG.
"""

from __future__ import annotations

from collections.abc import Iterator

from car_verify.base.findings import Issue, Tier
from car_verify.passes import Context, Example, Pass, Requirement

_INTENT = {
    "intent": {
        "allowed_tools": ["search_flights", "book_flight"],
        "forbidden_capabilities": ["payment_outside_booking"],
    },
    "untrusted_tools": ["search_flights"],
}


def _call(id: str, tool: str, **fields: object) -> dict[str, object]:
    return {"id": id, "type": "tool_call", "tool": tool, **fields}


class IntentPass(Pass):
    name = "intent"
    tier = Tier.DECISION_PROCEDURE
    codes = ("intent-drift", "intent-injection", "intent-forbidden-capability")
    default = False
    when_given = Requirement.INTENT
    requires = frozenset({Requirement.INTENT})
    verifies = "every call is inside the declared intent; no untrusted result steers one outside"
    cannot_verify = "intent the user did not declare, and tools that hide what they call"
    examples = (
        Example(
            "search, then book: what the user asked for",
            {
                "actions": [
                    _call("find", "search_flights", expected_effects={"offer": 1}),
                    _call("book", "book_flight", state_dependencies=["offer"]),
                ]
            },
            intent=_INTENT,
        ),
        Example(
            "a search result steers an email nobody asked for",
            {
                "actions": [
                    _call("find", "search_flights", expected_effects={"offer": 1}),
                    _call("mail", "send_email", state_dependencies=["offer"]),
                ]
            },
            ("intent-injection",),
            intent=_INTENT,
        ),
        Example(
            "an email nobody asked for, steered by nothing untrusted",
            {"actions": [_call("mail", "send_email")]},
            ("intent-drift",),
            intent=_INTENT,
        ),
        Example(
            "a capability the intent forbids",
            {
                "actions": [
                    _call(
                        "pay", "book_flight", metadata={"capabilities": ["payment_outside_booking"]}
                    )
                ]
            },
            ("intent-forbidden-capability",),
            intent=_INTENT,
        ),
    )

    def run(self, ctx: Context) -> Iterator[Issue]:
        from car_verify.plan.intent import judge, plan_actions

        intent, untrusted = ctx.intent
        labelled = {t for t, label in (ctx.labels or {}).items() if label.trust == "untrusted"}
        actions = plan_actions(ctx.proposal, {*untrusted, *labelled}, semantics=ctx.semantics)
        report = judge(intent, actions)
        first = {a.id: i for i, a in reversed(list(enumerate(ctx.proposal.actions)))}
        for v in report.violations:
            if v.kind == "forbidden_capability":
                code = "intent-forbidden-capability"
            elif v.tool_influenced:
                code = "intent-injection"
            else:
                code = "intent-drift"
            yield ctx.issue(code, v.explanation, index=first.get(v.action))
