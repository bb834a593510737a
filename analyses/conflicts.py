"""Conflicts: no two unordered actions write the same key.

What it checks:
    Every triple ``[a, b, key]`` the profile calls a write conflict
    (``write-conflict``, one finding per triple), the result's ``conflicts``.
    Under strict: actions a and b (a before b in the proposal) both write ``key``
    and neither reaches the other in the DAG; writes are ``write_set`` when
    non-empty, else the keys of ``expected_effects`` plus a ``state_write``'s key;
    the finding is on b. Under car, the runtime's rule: any two writers of the key
    (by effects), unless one lists it in ``state_dependencies``, ordered or not;
    the finding is on a, as the runtime places it.

Why it matters:
    Actions of one level run concurrently, so which write lands last depends on
    timing. The walk resolves the race by proposal order (the later action wins),
    a runtime may not.

How to fix:
    Order the two writers with a dependency, or have them write different keys.

Why this tier:
    ``decision_procedure``: reachability in the DAG, decided exactly.
"""

from __future__ import annotations

from collections.abc import Iterator

from car_verify.base.findings import Issue, Tier
from car_verify.passes import Context, Example, Pass, Preserves


class ConflictPass(Pass):
    name = "conflicts"
    preserves = frozenset({Preserves.ORDER_KEEPING_DEPENDENCY_EDIT})
    tier = Tier.DECISION_PROCEDURE
    codes = ("write-conflict",)
    verifies = "no two actions write the same key without an order between them"
    cannot_verify = "writes a tool performs without declaring them"
    examples = (
        Example(
            "two writers, ordered",
            {
                "actions": [
                    {"id": "a", "type": "tool_call", "tool": "t", "expected_effects": {"x": 1}},
                    {
                        "id": "b",
                        "type": "tool_call",
                        "tool": "t",
                        "expected_effects": {"x": 2},
                        "dependencies": ["a"],
                    },
                ]
            },
        ),
        Example(
            "two writers racing on one key",
            {
                "actions": [
                    {"id": "a", "type": "tool_call", "tool": "t", "expected_effects": {"x": 1}},
                    {"id": "b", "type": "tool_call", "tool": "t", "expected_effects": {"x": 2}},
                ]
            },
            ("write-conflict",),
        ),
    )

    def run(self, ctx: Context) -> Iterator[Issue]:
        ids = ctx.dag.ids
        say = ctx.semantics.say
        on_earlier = ctx.semantics.placement.conflict_on_earlier
        for a, b, key in ctx.conflicts:
            here, other = (a, b) if on_earlier else (b, a)
            message = say("write-conflict", key=key, other=ids[other]) or (
                f"{ids[a]!r} and {ids[b]!r} both write {key!r} and neither is ordered "
                "before the other"
            )
            yield ctx.issue("write-conflict", message, index=here)
