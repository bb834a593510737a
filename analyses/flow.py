"""Information flow: with tool labels, where sensitive and untrusted data go, and
which tool orderings happen.

What it checks:
    With tool labels (``verify(labels=...)``, ``--labels FILE``, or the nearest
    ``.car/tool-labels.json``) and a flow policy (``--flow-policy``, or
    ``.car/flow-policy.json``), the checks of ``car-verify flow``
    (``docs/flow.md``): data at the policy's confidentiality floor reaching a
    sink (``flow-sensitive-to-sink``) and a forbidden capability ordering along
    a path of the DAG (``flow-forbidden-sequence``), as the runtime's
    ``check_information_flow`` decides them; beyond it, a forbidden ordering
    that some schedule runs because the two actions are not ordered
    (``flow-forbidden-schedule``, with the schedule) and data from an untrusted
    tool reaching a sink or a consequential call with no declassifier or
    approval on the way (``flow-untrusted-to-consequential``, with the path).

Why it matters:
    These are the questions prompt-injection defences are judged by: does a
    secret leave, does an attacker's text decide a payment. Found before the
    run, the plan can be changed; found after, the money is gone.

How to fix:
    Route the data through a declassifier (a sanitiser) or an approval step,
    drop the dependency, or order the actions so the forbidden one cannot run
    first.

Why this tier:
    ``decision_procedure``: each finding is decided over the declared keys,
    references and the DAG's schedules; undeclared channels are out of scope.
"""

from __future__ import annotations

from collections.abc import Iterator

from car_verify.base.findings import Issue, Tier
from car_verify.passes import Context, Example, Pass, Requirement

_CODE = {
    "sensitive_to_sink": "flow-sensitive-to-sink",
    "forbidden_sequence": "flow-forbidden-sequence",
    "forbidden_sequence_schedule": "flow-forbidden-schedule",
    "untrusted_to_consequential": "flow-untrusted-to-consequential",
}
_LABELS = {
    "get_transactions": {"capability": "read_untrusted", "trust": "untrusted"},
    "read_vault": {"confidentiality": "secret"},
    "post_webhook": {"sink": True},
    "send_money": {"capability": "payment"},
}
_POLICY = {"forbidden_sequences": [["read_untrusted", "payment"]]}


def _call(id: str, tool: str, **fields: object) -> dict[str, object]:
    return {"id": id, "type": "tool_call", "tool": tool, **fields}


class FlowPass(Pass):
    name = "flow"
    tier = Tier.DECISION_PROCEDURE
    codes = tuple(_CODE.values())
    default = False
    when_given = Requirement.LABELS  # runs by default whenever labels are given
    requires = frozenset({Requirement.LABELS})
    verifies = (
        "sensitive data reaches no sink; untrusted data no consequential call; no forbidden "
        "ordering runs in any schedule"
    )
    cannot_verify = "channels the plan does not declare (a tool that reads what it was not given)"
    examples = (
        Example(
            "the transfer runs before the untrusted read, and uses none of it",
            {
                "actions": [
                    _call("pay", "send_money", expected_effects={"receipt": "r1"}),
                    _call("fetch", "get_transactions", state_dependencies=["receipt"]),
                ]
            },
            labels=_LABELS,
            flow_policy=_POLICY,
        ),
        Example(
            "a secret posted to a webhook",
            {
                "actions": [
                    _call("read", "read_vault", expected_effects={"token": "t"}),
                    _call("post", "post_webhook", state_dependencies=["token"]),
                ]
            },
            ("flow-sensitive-to-sink",),
            labels=_LABELS,
        ),
        Example(
            "a transfer after an untrusted read it depends on",
            {
                "actions": [
                    _call("fetch", "get_transactions", expected_effects={"note": "n"}),
                    _call("pay", "send_money", state_dependencies=["note"]),
                ]
            },
            ("flow-forbidden-sequence", "flow-untrusted-to-consequential"),
            labels=_LABELS,
            flow_policy=_POLICY,
        ),
        Example(
            "a transfer that some schedule runs after the untrusted read",
            {"actions": [_call("fetch", "get_transactions"), _call("pay", "send_money")]},
            ("flow-forbidden-schedule",),
            labels=_LABELS,
            flow_policy=_POLICY,
        ),
    )

    def run(self, ctx: Context) -> Iterator[Issue]:
        from car_verify.plan.flow import flow_violations

        assert ctx.labels is not None
        decide = ctx.semantics.own_checks_decide
        runtime, beyond = flow_violations(
            ctx.proposal, ctx.labels, ctx.flow_policy, semantics=ctx.semantics
        )
        position = {a.id: i for i, a in reversed(list(enumerate(ctx.proposal.actions)))}
        for v, ours in [*((v, False) for v in runtime), *((v, True) for v in beyond)]:
            code = _CODE[v.kind]  # its severity under the profile: the code table's
            message = v.explanation
            if v.schedule:
                message += f" (schedule: {', '.join(v.schedule)})"
            if ours and not decide:
                message += " [beyond the runtime's check]"
            yield ctx.issue(
                code,
                message,
                index=position.get(v.actions[-1]),
            )
