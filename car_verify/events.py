"""The event log: one JSON object per line, append-only, flushed per event.

Every lifecycle step, policy violation, retry, rollback and compensation of a run
is written as it happens, with the proposal's ``context`` passed through. A log
written by a run that was killed mid-way reads back up to its last complete line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from .errors import InputError

__all__ = ["Event", "EventLog", "read_events"]


@dataclass(frozen=True, slots=True)
class Event:
    """One log entry: ``kind`` (``action_started``, ``retry``, ...), when, and its data."""

    kind: str
    timestamp: str
    proposal_id: str
    action_id: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "event": self.kind,
            "timestamp": self.timestamp,
            "proposal_id": self.proposal_id,
        }
        if self.action_id is not None:
            out["action_id"] = self.action_id
        out.update(self.data)
        return out

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Event:
        data = {
            k: v
            for k, v in doc.items()
            if k not in ("event", "timestamp", "proposal_id", "action_id")
        }
        return cls(
            kind=str(doc["event"]),
            timestamp=str(doc.get("timestamp", "")),
            proposal_id=str(doc.get("proposal_id", "")),
            action_id=doc.get("action_id"),
            data=data,
        )


class EventLog:
    """Append events to a file (or an open text stream) as JSON lines."""

    def __init__(self, target: str | os.PathLike[str] | IO[str]) -> None:
        if isinstance(target, (str, os.PathLike)):
            self._stream: IO[str] = open(target, "a", encoding="utf-8")  # noqa: SIM115
            self._owned = True
        else:
            self._stream = target
            self._owned = False
        self.context: Mapping[str, Any] = {}

    def write(
        self, kind: str, proposal_id: str, action_id: str | None = None, **data: Any
    ) -> Event:
        event = Event(
            kind,
            datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            proposal_id,
            action_id,
            {**data, "context": dict(self.context)} if self.context else data,
        )
        self._stream.write(json.dumps(event.to_dict(), default=repr, ensure_ascii=False) + "\n")
        self._stream.flush()
        return event

    def close(self) -> None:
        if self._owned:
            self._stream.close()


def read_events(path: str | os.PathLike[str]) -> list[Event]:
    """Read a log back into typed events; a torn last line (a killed run) is dropped."""
    return list(_events(Path(path)))


def _events(path: Path) -> Iterator[Event]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise InputError(
            f"cannot read event log: {err.strerror or err}", source=str(path)
        ) from None
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            if number == len(lines):  # the last line, cut off by a kill
                return
            raise InputError("not a JSON line", source=str(path), line=number) from None
        if not isinstance(doc, dict) or "event" not in doc:
            raise InputError("not an event object", source=str(path), line=number)
        yield Event.from_dict(doc)
