"""Transactions: reads racing writes, and assumptions the state contradicts.

What it checks:
    The single-proposal part of ``transaction_check``: an action that reads a key
    (``read_set``, else ``state_dependencies`` and assumption keys) while an
    action not ordered with it writes the key (``read-write-hazard``, on the
    reader), and, when an initial state is given, an assumption whose
    ``expected_value`` differs from it (``belief-divergence``, with the profile's
    equality), each on the profile's order. Opt-in: name it
    (``passes=["transactions"]``). Across proposals and with version maps, use
    ``car_verify.transaction_check`` / ``car-verify txcheck``.

Why it matters:
    Concurrent actions see each other's writes in an order nobody chose: a read
    that races a write may see either value. An assumption the state no longer
    supports means the plan was made from a stale belief.

How to fix:
    Order the reader and the writer with a dependency; re-plan from the current
    state when an assumption diverges.

Why this tier:
    ``decision_procedure``: reachability in the DAG and JSON equality.
"""

from __future__ import annotations

from collections.abc import Iterator

from car_verify.base.findings import Issue, Tier
from car_verify.base.values import ABSENT, format_value
from car_verify.passes import Context, Example, Pass


class TransactionPass(Pass):
    name = "transactions"
    tier = Tier.DECISION_PROCEDURE
    codes = ("read-write-hazard", "belief-divergence")
    default = False
    verifies = "no read races an unordered write; assumptions agree with the given state"
    cannot_verify = "other agents' concurrent proposals and key versions (use txcheck)"
    examples = (
        Example(
            "the reader waits for the writer",
            {
                "actions": [
                    {"id": "w", "type": "tool_call", "tool": "t", "expected_effects": {"k": 1}},
                    {
                        "id": "r",
                        "type": "tool_call",
                        "tool": "u",
                        "read_set": ["k"],
                        "dependencies": ["w"],
                    },
                ]
            },
        ),
        Example(
            "a read racing a write",
            {
                "actions": [
                    {"id": "r", "type": "tool_call", "tool": "u", "read_set": ["k"]},
                    {"id": "w", "type": "tool_call", "tool": "t", "expected_effects": {"k": 1}},
                ]
            },
            ("read-write-hazard",),
        ),
        Example(
            "a plan made from a stale belief",
            {
                "actions": [
                    {
                        "id": "pay",
                        "type": "tool_call",
                        "tool": "pay",
                        "assumptions": [{"key": "balance", "expected_value": 100}],
                    }
                ]
            },
            ("belief-divergence",),
            initial_state={"balance": 40},
        ),
    )

    def run(self, ctx: Context) -> Iterator[Issue]:
        dag = ctx.dag
        actions = ctx.proposal.actions
        pairs = [
            (reader, writer, key)
            for reader, action in enumerate(actions)
            for key in action.reads()
            for writer in dag.writers.get(key, ())
            if writer != reader
        ]
        ordered = dag.reachable([(r, w) for r, w, _ in pairs] + [(w, r) for r, w, _ in pairs])
        for reader, writer, key in pairs:
            if (reader, writer) not in ordered and (writer, reader) not in ordered:
                yield ctx.issue(
                    "read-write-hazard",
                    f"reads {key!r} while {dag.ids[writer]!r}, not ordered with it, writes it",
                    index=reader,
                )
        if ctx.state_given:
            equal = ctx.semantics.equal  # the profile's (car: 1 is not 1.0)
            for i, action in enumerate(actions):
                for j, assumption in enumerate(action.assumptions):
                    if not assumption.has_expected_value:
                        continue
                    actual = ctx.initial_state.get(assumption.key, ABSENT)
                    if actual is ABSENT or not equal(actual, assumption.expected_value):
                        yield ctx.issue(
                            "belief-divergence",
                            f"assumes {assumption.key!r} is "
                            f"{format_value(assumption.expected_value)}; the state has "
                            f"{format_value(actual)}",
                            index=i,
                            where=("assumptions", j),
                        )
