"""ATIF, the Agent Trajectory Interchange Format (v1.x, 1.7 and 1.8 included):
``{schema_version: "ATIF-v1.x", session_id, agent: {name, model_name}, steps:
[{step_id, source, message, tool_calls: [{tool_call_id, function_name,
arguments}], observation: {results: [{source_call_id, content}]}}], final_metrics,
extra}``.

Each ``tool_calls`` entry is a call; an observation result answers the call
named by its ``source_call_id``. The reward, when given, is ``extra.reward`` or
``final_metrics.reward``; the model is ``agent.model_name``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..base.errors import InputError
from .base import (
    Call,
    Trajectory,
    errored,
    outcome_of,
    parse_arguments,
    reward_of,
    scalar_metadata,
    string_or_none,
)


class AtifImporter:
    name = "atif"

    def sniff(self, record: Any) -> bool:
        version = record.get("schema_version") if isinstance(record, Mapping) else None
        return (
            isinstance(version, str)
            and version.startswith("ATIF-")
            and isinstance(record.get("steps"), list)
        )

    def lift(self, record: Any, *, source: str, line: int | None, index: int) -> list[Trajectory]:
        calls: list[Call] = []
        where: dict[str, int] = {}
        notes: list[str] = []
        for n, step in enumerate(record["steps"]):
            if not isinstance(step, Mapping):
                raise InputError("expected a step object", ["steps", n])
            step_id = step.get("step_id") if isinstance(step.get("step_id"), int) else n + 1
            for k, raw in enumerate(step.get("tool_calls") or []):
                if not isinstance(raw, Mapping) or not isinstance(raw.get("function_name"), str):
                    raise InputError(
                        "expected a tool call {tool_call_id, function_name, arguments}",
                        ["steps", n, "tool_calls", k],
                    )
                arguments, note = parse_arguments(raw.get("arguments"))
                if note:
                    notes.append(f"call {len(calls) + 1} ({raw['function_name']}): {note}")
                call_id = (
                    raw.get("tool_call_id") if isinstance(raw.get("tool_call_id"), str) else None
                )
                calls.append(Call(raw["function_name"], arguments, call_id, step=step_id))
                if call_id is not None:
                    where[call_id] = len(calls) - 1
            observation = step.get("observation")
            if isinstance(observation, Mapping):
                for result in observation.get("results") or []:
                    if not isinstance(result, Mapping):
                        continue
                    source_id = result.get("source_call_id")
                    target = where.pop(source_id, None) if isinstance(source_id, str) else None
                    if target is None:
                        continue  # an observation of no call (a user's message, say)
                    content = result.get("content")
                    c = calls[target]
                    calls[target] = Call(
                        c.tool, c.arguments, c.call_id, content, errored(content), c.step
                    )
        extra = record.get("extra") if isinstance(record.get("extra"), Mapping) else {}
        metrics = (
            record.get("final_metrics") if isinstance(record.get("final_metrics"), Mapping) else {}
        )
        reward = extra.get("reward", metrics.get("reward"))
        agent = record.get("agent") if isinstance(record.get("agent"), Mapping) else {}
        ident = record.get("trajectory_id") or record.get("session_id") or f"{source}:{index}"
        return [
            Trajectory(
                str(ident),
                self.name,
                calls,
                reward=reward_of(reward),
                outcome=outcome_of(reward),
                model=string_or_none(agent.get("model_name")),
                source=source,
                line=line,
                metadata={
                    **{k: v for k, v in scalar_metadata(extra).items() if k != "reward"},
                    **{
                        f"agent_{k}": v
                        for k, v in scalar_metadata(agent).items()
                        if k in ("name", "version")
                    },
                    "schema_version": record["schema_version"],
                },
                notes=notes,
            )
        ]
