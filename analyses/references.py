"""References: every dependency names an action, and the dependencies form no cycle.

What it checks:
    Every id in ``dependencies`` and every ``$<id>.output[.<path>]`` reference
    inside ``parameters`` names an action of the proposal (``unknown-dependency``),
    and the dependency graph has no cycle (``dependency-cycle``, one finding per
    cycle on its first action in proposal order, naming the actions on it: a
    shortest cycle through that action, then the others of its group).

Why it matters:
    A dependency on an action that does not exist can never be satisfied by the
    plan; a cycle means none of the actions on it (nor anything after them) can
    ever start. Those actions get no execution level and are not walked.

How to fix:
    Correct the id, or drop the dependency. Break the cycle by removing the
    dependency (or output reference) that points back. Edges from state keys
    always point forward in the proposal, so only ``dependencies`` and output
    references can close a cycle.

Why this tier:
    ``decision_procedure``: set membership and graph reachability.
"""

from __future__ import annotations

from collections.abc import Iterator

from car_verify.base.findings import Issue, Tier
from car_verify.passes import Context, Example, Pass, Preserves


class ReferencePass(Pass):
    name = "references"
    preserves = frozenset({Preserves.ORDER_KEEPING_DEPENDENCY_EDIT})
    tier = Tier.DECISION_PROCEDURE
    codes = ("unknown-dependency", "dependency-cycle")
    verifies = "dependencies and output references name actions, and the DAG is acyclic"
    cannot_verify = "whether a dependency is the one the author meant"
    examples = (
        Example(
            "deploy waits for build and uses its output",
            {
                "actions": [
                    {"id": "build", "type": "tool_call", "tool": "build"},
                    {
                        "id": "deploy",
                        "type": "tool_call",
                        "tool": "deploy",
                        "parameters": {"artifact": "$build.output.path"},
                        "dependencies": ["build"],
                    },
                ]
            },
        ),
        Example(
            "a reference to an action that does not exist",
            {
                "actions": [
                    {
                        "id": "deploy",
                        "type": "tool_call",
                        "tool": "deploy",
                        "parameters": {"artifact": "$compile.output"},
                    }
                ]
            },
            ("unknown-dependency",),
        ),
        Example(
            "two actions waiting for each other",
            {
                "actions": [
                    {"id": "a", "type": "tool_call", "tool": "t", "dependencies": ["b"]},
                    {"id": "b", "type": "tool_call", "tool": "t", "dependencies": ["a"]},
                ]
            },
            ("dependency-cycle",),
        ),
    )

    def run(self, ctx: Context) -> Iterator[Issue]:
        dag = ctx.dag
        for ref in dag.unknown_refs:
            what = "depends on" if ref.kind == "dependency" else "refers to the output of"
            yield ctx.issue(
                "unknown-dependency",
                f"{what} {ref.target!r}, which is not an action of this proposal",
                index=ref.index,
                where=ref.pointer,
            )
        ids = dag.ids
        for cycle in dag.cycles:
            path = " -> ".join(ids[i] for i in cycle.path)
            others = [ids[i] for i in cycle.members if i not in cycle.path]
            extra = f" (also in the cycle: {', '.join(others)})" if others else ""
            after = dag.downstream(cycle.members)
            if after:
                shown = ", ".join(ids[i] for i in after[:10])
                more = f" and {len(after) - 10} more" if len(after) > 10 else ""
                extra += f"; actions after it get no level and are not walked: {shown}{more}"
            yield ctx.issue(
                "dependency-cycle",
                f"dependency cycle: {path}{extra}",
                index=cycle.members[0],
                where=("dependencies",),
            )
