"""The event log: one JSON object per line, append-only, flushed per event.

Every lifecycle step, policy violation, retry, rollback and compensation of a run
is written as it happens, with the proposal's ``context`` passed through. A log
written by a run that was killed mid-way reads back up to its last complete line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from .errors import InputError

__all__ = ["Event", "EventLog", "read_events", "read_log"]


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
            torn = _ends_torn(Path(target))
            self._stream: IO[str] = open(target, "a", encoding="utf-8")  # noqa: SIM115
            self._owned = True
            if torn:  # a killed run's last line: this run starts on a fresh one
                self._stream.write("\n")
        else:
            self._stream = target
            self._owned = False
        self.context: Mapping[str, Any] = {}
        #: The first write error (a full disk, a closed stream), and how many events
        #: were lost since. The run goes on; its result says the log is incomplete.
        self.error: str | None = None
        self.lost = 0

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
        if self.error is not None:
            self.lost += 1
            return event
        try:
            self._stream.write(json.dumps(event.to_dict(), default=repr, ensure_ascii=False) + "\n")
            self._stream.flush()
        except (OSError, ValueError) as err:  # ValueError: the stream was closed
            self.error = f"{type(err).__name__}: {getattr(err, 'strerror', None) or err}"
            self.lost = 1
        return event

    @property
    def complete(self) -> bool:
        """Whether every event was written."""
        return self.error is None

    def close(self) -> None:
        """Close an owned file. Its last flush may fail (a full disk): that is the
        log's error, said by the run's result, never an exception that loses it."""
        if not self._owned:
            return
        try:
            self._stream.close()
        except (OSError, ValueError) as err:
            if self.error is None:
                self.error = f"{type(err).__name__}: {getattr(err, 'strerror', None) or err}"
                self.lost = max(self.lost, 1)


def _ends_torn(path: Path) -> bool:
    """Whether a log file ends inside a line (a run was killed mid-write)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() == 0:
                return False
            f.seek(-1, os.SEEK_END)
            return f.read(1) != b"\n"
    except OSError:
        return False


def read_events(path: str | os.PathLike[str]) -> list[Event]:
    """Read a log back into typed events. A torn line (a killed run's last write,
    cut anywhere, even inside a UTF-8 character) is dropped; :func:`read_log` also
    says where."""
    return read_log(path)[0]


def read_log(path: str | os.PathLike[str]) -> tuple[list[Event], list[str]]:
    """The events of a log, and a note for each torn line it passed over."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as err:
        raise InputError(
            f"cannot read event log: {err.strerror or err}", source=str(file)
        ) from None
    events: list[Event] = []
    notes: list[str] = []
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        last = number == len(lines)  # no newline after it: cut off by a kill
        try:
            doc = json.loads(raw.decode("utf-8"))
        except ValueError:  # UnicodeDecodeError is one
            if last or _looks_torn(raw):  # a later run appended after a torn line
                notes.append(
                    f"{file}:{number}: a torn line (a killed run's last event) was skipped"
                )
                continue
            raise InputError("not a JSON line", source=str(file), line=number) from None
        if not isinstance(doc, dict) or "event" not in doc:
            raise InputError("not an event object", source=str(file), line=number)
        events.append(Event.from_dict(doc))
    return events, notes


def _looks_torn(raw: bytes) -> bool:
    """A line that starts as an event object but does not end as one."""
    return raw.lstrip().startswith(b'{"event"') and not raw.rstrip().endswith(b"}")
