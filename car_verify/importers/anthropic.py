"""Anthropic-style transcripts: ``{messages: [...]}`` whose content is a list of
blocks; an assistant's ``tool_use`` block ``{id, name, input}`` is a call, a user's
``tool_result`` block ``{tool_use_id, content, is_error}`` its result
(``is_error: true``, or a text beginning ``Error``, marks it ``failed``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..base.errors import InputError
from .base import (
    Call,
    Trajectory,
    chat_trajectory,
    errored,
)


def _blocks(record: Any) -> list[Any] | None:
    messages = record.get("messages") if isinstance(record, Mapping) else record
    if not isinstance(messages, list) or not messages:
        return None
    return messages


def _text(content: Any) -> Any:
    if isinstance(content, list):  # [{type: text, text}] blocks
        parts = [
            b.get("text", "") for b in content if isinstance(b, Mapping) and b.get("type") == "text"
        ]
        return "".join(parts) if len(parts) == len(content) else content
    return content


class AnthropicImporter:
    name = "anthropic"

    def sniff(self, record: Any) -> bool:
        messages = _blocks(record)
        if messages is None:
            return False
        return any(
            isinstance(m, Mapping)
            and isinstance(m.get("content"), list)
            and any(
                isinstance(b, Mapping) and b.get("type") in ("tool_use", "tool_result")
                for b in m["content"]
            )
            for m in messages
        )

    def lift(self, record: Any, *, source: str, line: int | None, index: int) -> list[Trajectory]:
        messages = _blocks(record) or []
        calls: list[Call] = []
        where: dict[str, int] = {}
        notes: list[str] = []
        for step, message in enumerate(messages):
            if not isinstance(message, Mapping):
                raise InputError("expected a message object", ["messages", step])
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for n, block in enumerate(content):
                if not isinstance(block, Mapping):
                    continue
                if block.get("type") == "tool_use":
                    name = block.get("name")
                    if not isinstance(name, str) or not name:
                        raise InputError(
                            "a tool_use block without a name", ["messages", step, "content", n]
                        )
                    arguments = block.get("input", {})
                    if not isinstance(arguments, dict):
                        notes.append(f"call {len(calls) + 1} ({name}): input is not an object")
                    call_id = block.get("id") if isinstance(block.get("id"), str) else None
                    calls.append(Call(name, arguments, call_id, step=step))
                    if call_id is not None:
                        where[call_id] = len(calls) - 1
                elif block.get("type") == "tool_result":
                    use_id = block.get("tool_use_id")
                    target = where.pop(use_id, None) if isinstance(use_id, str) else None
                    if target is None:
                        notes.append(f"message {step}: a tool_result that answers no tool_use")
                        continue
                    result = _text(block.get("content"))
                    failed = block.get("is_error") is True or errored(result)
                    c = calls[target]
                    calls[target] = Call(c.tool, c.arguments, c.call_id, result, failed, c.step)
        doc = record if isinstance(record, Mapping) else {}
        return [
            chat_trajectory(
                self.name,
                doc,
                calls,
                notes,
                model=doc.get("model"),
                metadata=doc.get("metadata"),
                source=source,
                line=line,
                index=index,
            )
        ]
