"""tau-bench run files: ``[{task_id, trial, reward, info, traj}, ...]``, ``traj`` an
OpenAI-style chat transcript (:mod:`car_verify.importers.openai_chat`).

A trajectory's id is ``<task_id>:<trial>`` (tasks repeat across trials); its
outcome is ``success`` for a reward of 1 and ``failure`` otherwise; the user's
``user_id`` (from ``info.task``) is kept as metadata.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import Trajectory, reward_of
from .openai_chat import calls_of, is_chat


class TauBenchImporter:
    name = "tau-bench"

    def sniff(self, record: Any) -> bool:
        return (
            isinstance(record, Mapping)
            and "task_id" in record
            and "reward" in record
            and is_chat(record.get("traj"))
        )

    def lift(self, record: Any, *, source: str, line: int | None, index: int) -> list[Trajectory]:
        calls, notes = calls_of(record["traj"])
        reward = record.get("reward")
        task = (
            (record.get("info") or {}).get("task")
            if isinstance(record.get("info"), Mapping)
            else None
        )
        meta: dict[str, Any] = {"task_id": record["task_id"], "trial": record.get("trial")}
        if isinstance(task, Mapping) and isinstance(task.get("user_id"), str):
            meta["user_id"] = task["user_id"]
        score = reward_of(reward)
        return [
            Trajectory(
                f"{record['task_id']}:{record.get('trial', 0)}",
                self.name,
                calls,
                reward=None if score is None else float(score),
                outcome=None if score is None else "success" if score >= 1 else "failure",
                source=source,
                line=line,
                metadata=meta,
                notes=notes,
            )
        ]
