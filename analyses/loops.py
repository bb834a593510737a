"""Loops: the same tool call repeated suggests a runaway loop.

What it checks:
    Groups of ``tool_call`` actions with the same tool and ``parameters`` the
    profile calls equal (strict: JSON equality, ``1 == 1.0``, ``true != 1``, key
    order ignored; car: serde_json's, ``1 != 1.0``). A group of 3 or more (the
    threshold is configurable: ``repeat_threshold``, ``--repeat-threshold``)
    gives one ``repeated-call`` finding: under strict a warning on the occurrence
    that reaches the threshold, under car an error on the proposal, as the
    runtime places it (a group of two is CAR's ``duplicate-call``, reported by the
    ``car`` pass).

Why it matters:
    A model stuck in a loop emits the same call again and again: polling a status
    that never changes, retrying a request that always fails. Each call costs
    money, quota and time, and may repeat a side effect.

How to fix:
    Replace the repetition with one call, or give each call the parameters that
    make it different (a page token, a cursor). If the repetition is deliberate
    (a bounded poll), raise the threshold.

Why this tier:
    ``heuristic``: the count is exact, but "three identical calls" is only a proxy
    for "runaway loop"; a legitimate 3x poll trips it.
"""

from __future__ import annotations

from collections.abc import Iterator

from car_verify.base.findings import Issue, Tier
from car_verify.passes import Context, Example, Pass, Preserves

_POLL = {"id": "p", "type": "tool_call", "tool": "get_status", "parameters": {"job": "j-1"}}


class LoopPass(Pass):
    name = "loops"
    preserves = frozenset({Preserves.ORDER_KEEPING_DEPENDENCY_EDIT})
    tier = Tier.HEURISTIC
    codes = ("repeated-call",)
    verifies = "no tool is called three or more times with identical parameters"
    cannot_verify = "whether a repetition is a runaway loop or a deliberate poll"
    residual_risks = ("a loop whose calls differ in some parameter is not detected",)
    examples = (
        Example(
            "two polls stay under the threshold",
            {"actions": [{**_POLL, "id": "p1"}, {**_POLL, "id": "p2"}]},
        ),
        Example(
            "a runaway poll loop",
            {"actions": [{**_POLL, "id": f"p{n}"} for n in range(1, 4)]},
            ("repeated-call",),
        ),
    )

    def run(self, ctx: Context) -> Iterator[Issue]:
        threshold = ctx.options.repeat_threshold
        on_proposal = ctx.semantics.placement.repeats_on_proposal
        actions = ctx.proposal.actions
        for group in ctx.identical_calls:
            if len(group) < threshold:
                continue
            # On the proposal: the whole group; else on the call that reaches the
            # threshold, naming the calls up to it.
            shown = group if on_proposal else group[:threshold]
            ids = ", ".join(actions[m].id for m in shown[:10])
            if len(shown) > 10:
                ids += f" and {len(shown) - 10:,} more"
            tool = actions[group[0]].tool
            message = ctx.semantics.say("repeated-call", tool=tool, count=len(shown)) or (
                f"tool {tool!r} is called {len(shown)} times with identical "
                f"parameters ({ids}): a possible runaway loop"
            )
            yield ctx.issue("repeated-call", message, index=None if on_proposal else shown[-1])
