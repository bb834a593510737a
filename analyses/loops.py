"""Loops: the same tool call repeated suggests a runaway loop.

What it checks:
    Groups of ``tool_call`` actions with the same tool and deep-equal
    ``parameters`` (JSON equality: ``1 == 1.0``, ``true != 1``, key order ignored).
    A group of 3 or more (the threshold is configurable: ``repeat_threshold``,
    ``--repeat-threshold``) gives one ``repeated-call`` finding, on the
    occurrence that reaches the threshold.

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
from car_verify.base.values import canonical, fingerprint
from car_verify.passes import Context, Example, Pass, Preserves

_POLL = {"id": "p", "type": "tool_call", "tool": "get_status", "parameters": {"job": "j-1"}}


class LoopPass(Pass):
    name = "loops"
    #: Under car, CAR's own check (car_verify.passes.car) stands in for this one.
    profiles = frozenset({"strict"})
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
        actions = ctx.proposal.actions
        # A cheap fingerprint first; only crowded buckets are compared exactly.
        buckets: dict[tuple[str, int], list[int]] = {}
        for i, action in enumerate(actions):
            if action.type == "tool_call" and action.tool is not None:
                key = (action.tool, fingerprint(action.parameters))
                buckets.setdefault(key, []).append(i)
        found: list[tuple[int, list[int]]] = []
        for members in buckets.values():
            if len(members) < threshold:
                continue
            groups: dict[str, list[int]] = {}
            for i in members:
                group = groups.setdefault(canonical(actions[i].parameters), [])
                group.append(i)
                if len(group) == threshold:
                    found.append((i, list(group)))
        for i, group in sorted(found):
            ids = ", ".join(actions[m].id for m in group)
            yield ctx.issue(
                "repeated-call",
                f"tool {actions[i].tool!r} is called {threshold} times with identical "
                f"parameters ({ids}): a possible runaway loop",
                index=i,
            )
