"""Agent IR proposals, one per record (a JSONL of proposals, or a folder of them):
each ``tool_call`` action is a call, in document order; the proposal is checked as
written, not lifted (its own ids, dependencies and effects are kept)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import Call, Trajectory, outcome_of, record_id, scalar_metadata


class ProposalImporter:
    name = "proposal"

    def sniff(self, record: Any) -> bool:
        return isinstance(record, Mapping) and isinstance(record.get("actions"), list)

    def lift(self, record: Any, *, source: str, line: int | None, index: int) -> list[Trajectory]:
        calls = [
            Call(str(a.get("tool", "")), a.get("parameters", {}), a.get("id"), step=n)
            for n, a in enumerate(record["actions"])
            if isinstance(a, Mapping) and a.get("type") == "tool_call"
        ]
        reward = (
            (record.get("metadata") or {}).get("reward")
            if isinstance(record.get("metadata"), Mapping)
            else None
        )
        trajectory = Trajectory(
            record_id(record, source, index, line),
            self.name,
            calls,
            reward=reward if isinstance(reward, (int, float)) else None,
            outcome=outcome_of(reward),
            source=source,
            line=line,
            metadata={
                k: v
                for k, v in scalar_metadata(record.get("metadata")).items()
                if k not in ("reward", "outcome")
            },
        )
        trajectory.written = dict(record)
        return [trajectory]
