"""OpenAI-style chat transcripts: ``{messages: [...]}`` (or a bare message array)
where assistant messages carry ``tool_calls: [{id, function: {name, arguments}}]``
and ``tool`` messages answer them by ``tool_call_id``.

A result is matched with the earliest unanswered call of its id (transcripts
reuse ids); a call no message answers has no result (unknown). A result whose
text begins ``Error`` marks its call ``failed``. The trajectory's reward is the
record's ``reward`` (or ``score``), its model ``model`` (or ``metadata.model``).
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Mapping, Sequence
from typing import Any

from ..base.errors import InputError
from .base import (
    Call,
    Trajectory,
    chat_trajectory,
    errored,
    parse_arguments,
)

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def is_chat(messages: Any) -> bool:
    return (
        isinstance(messages, list)
        and bool(messages)
        and all(isinstance(m, Mapping) and m.get("role") in ROLES for m in messages)
        and not any(
            isinstance(m.get("content"), list) and _has_blocks(m["content"]) for m in messages
        )
    )


def _has_blocks(content: Sequence[Any]) -> bool:
    return any(
        isinstance(b, Mapping) and b.get("type") in ("tool_use", "tool_result") for b in content
    )


def calls_of(messages: Sequence[Any]) -> tuple[list[Call], list[str]]:
    """The tool calls of a chat transcript, with their results, and notes."""
    calls: list[Call] = []
    notes: list[str] = []
    waiting: dict[str, deque[int]] = defaultdict(deque)
    results: dict[int, tuple[Any, bool]] = {}
    for step, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise InputError("expected a message object", ["messages", step])
        if message.get("role") == "assistant":
            for n, raw in enumerate(message.get("tool_calls") or []):
                if not isinstance(raw, Mapping) or not isinstance(raw.get("function"), Mapping):
                    raise InputError(
                        "expected a tool call {id, function}", ["messages", step, "tool_calls", n]
                    )
                function = raw["function"]
                name = function.get("name")
                if not isinstance(name, str) or not name:
                    raise InputError(
                        "a tool call without a name", ["messages", step, "tool_calls", n]
                    )
                arguments, note = parse_arguments(function.get("arguments"))
                if note:
                    notes.append(f"call {len(calls) + 1} ({name}): {note}")
                call_id = raw.get("id") if isinstance(raw.get("id"), str) else None
                calls.append(Call(name, arguments, call_id, step=step))
                if call_id is not None:
                    waiting[call_id].append(len(calls) - 1)
        elif message.get("role") in ("tool", "function"):
            call_id = message.get("tool_call_id")
            queue = waiting.get(call_id) if isinstance(call_id, str) else None
            if not queue:
                notes.append(f"message {step}: a tool result that answers no call ({call_id!r})")
                continue
            content = message.get("content")
            results[queue.popleft()] = (content, errored(content))
    for index, (content, failed) in results.items():
        c = calls[index]
        calls[index] = Call(c.tool, c.arguments, c.call_id, content, failed, c.step)
    return calls, notes


class OpenAIChatImporter:
    name = "openai-chat"

    def sniff(self, record: Any) -> bool:
        if isinstance(record, list):
            return is_chat(record)
        return isinstance(record, Mapping) and is_chat(record.get("messages"))

    def lift(self, record: Any, *, source: str, line: int | None, index: int) -> list[Trajectory]:
        messages = record if isinstance(record, list) else record["messages"]
        doc: Mapping[str, Any] = record if isinstance(record, Mapping) else {}
        calls, notes = calls_of(messages)
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), Mapping) else {}
        model = doc.get("model", meta.get("model") if meta else None)
        return [
            chat_trajectory(
                self.name,
                doc,
                calls,
                notes,
                model=model,
                metadata=meta,
                source=source,
                line=line,
                index=index,
            )
        ]
