"""One agent run replayed under two policy sets: the one vocabulary and the one table
of ``car-verify policy impact`` and ``car-verify audit --compare-policies``.

Each call of a trajectory goes through a fresh
:class:`~car_verify.plan.gate.CallGate` for each set, in order: a call the gate
denies is not dispatched to its trace rules; a call it admits is, and its recorded
outcome (``failed`` when its result says it errored, else ``succeeded``) is
reported before the next call, as the hook and the executor report them. A
trajectory records no times, so the replay's clock stands still: a rate limit sees
every call of a trajectory inside one window. Each call is then (:data:`CHANGES`)

* ``newly_denied``: NEW denies it, OLD did not;
* ``no_longer_denied``: OLD denied it, NEW does not;
* ``still_denied``: both deny it (the rules may differ);
* ``allowed``: neither denies it.

Both commands write the same rows (:class:`ImpactRow`, one per call) with the same
Parquet schema (:func:`replay_schema`): ``policy impact -o calls.parquet`` for its
sources, ``audit`` as ``replay.parquet`` beside its other tables.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..plan.gate import UNDECIDED, CallGate, Decision

__all__ = ["CHANGES", "COLUMNS", "ImpactRow", "replay", "replay_schema", "trajectory_rows"]

#: What a change of policies does to one call, in the order reports list them.
CHANGES = ("newly_denied", "no_longer_denied", "still_denied", "allowed")
#: The table's columns, in order (docs/policies.md, "What a change does to real runs").
COLUMNS = (
    "trajectory",
    "source",
    "index",
    "tool",
    "old_decision",
    "new_decision",
    "old_rules",
    "new_rules",
    "change",
    "outcome",
)


@dataclass(frozen=True, slots=True)
class ImpactRow:
    """One call of one trajectory, under both policy sets."""

    trajectory: str
    source: str
    #: The call's position in the trajectory (0 for the first).
    index: int
    tool: str
    old_decision: Decision
    new_decision: Decision
    old_rules: tuple[str, ...]
    new_rules: tuple[str, ...]
    #: The run's recorded outcome (``success``, ``failure``; None: not recorded).
    outcome: str | None = None

    @property
    def change(self) -> str:
        was, now = self.old_decision == "deny", self.new_decision == "deny"
        if was and now:
            return "still_denied"
        if now:
            return "newly_denied"
        return "no_longer_denied" if was else "allowed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "trajectory": self.trajectory,
            "source": self.source,
            "index": self.index,
            "tool": self.tool,
            "old_decision": self.old_decision,
            "new_decision": self.new_decision,
            "old_rules": list(self.old_rules),
            "new_rules": list(self.new_rules),
            "change": self.change,
            "outcome": self.outcome,
        }


def replay(
    trace: Iterable[tuple[str, dict[str, Any], str]],
    engine: Any,
    on_unknown: Decision = UNDECIDED["policy impact"],
) -> list[tuple[Decision, tuple[str, ...]]]:
    """Each call's (decision, rule names) through a fresh gate over ``engine``'s rules
    (see the module docs: outcomes reported, the clock standing still)."""
    gate = CallGate(engine.fresh(clock=lambda: 0.0), on_unknown=on_unknown)
    out: list[tuple[Decision, tuple[str, ...]]] = []
    for tool, params, outcome in trace:
        verdict = gate.decide(tool, params)
        if verdict.decision != "deny":
            gate.report(tool, verdict.sent, "failed" if outcome == "failed" else "succeeded")
        out.append((verdict.decision, tuple(verdict.rules)))
    return out


def trajectory_rows(
    trajectory: Any, old: Any, new: Any, on_unknown: Decision = UNDECIDED["policy impact"]
) -> list[ImpactRow]:
    """Every call of ``trajectory`` (an imported trajectory) under the engines ``old``
    and ``new``: one row per call, in order."""
    trace = trajectory.trace()
    before = replay(trace, old, on_unknown)
    after = replay(trace, new, on_unknown)
    return [
        ImpactRow(
            trajectory.id,
            trajectory.source,
            index,
            tool,
            was[0],
            now[0],
            was[1],
            now[1],
            trajectory.outcome,
        )
        for index, ((tool, _, _), was, now) in enumerate(zip(trace, before, after, strict=True))
    ]


def replay_schema() -> Any:
    """The Parquet schema of the rows (pyarrow's; the caller has checked it is there)."""
    import pyarrow as pa

    types = {
        "index": pa.int64(),
        "old_rules": pa.list_(pa.string()),
        "new_rules": pa.list_(pa.string()),
    }
    return pa.schema([(name, types.get(name, pa.string())) for name in COLUMNS])
