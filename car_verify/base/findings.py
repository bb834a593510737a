"""Findings are data: an immutable record per issue, with severity and tier as independent axes."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

__all__ = ["Issue", "Location", "Severity", "Tier"]


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 2, "warning": 1, "info": 0}[self.value]


class Tier(StrEnum):
    """EvidenceTier: which kind of check produced a finding (not how bad, not a ranking)."""

    DECISION_PROCEDURE = "decision_procedure"
    HEURISTIC = "heuristic"
    SAMPLED = "sampled"


@dataclass(frozen=True, slots=True)
class Location:
    """Where in a file a finding is: the path as the user gave it, 1-based line and column."""

    path: str
    line: int = 1
    column: int = 1


@dataclass(frozen=True, slots=True)
class Issue:
    """One finding, of every command (verify, lint, policy check, run).

    ``to_dict()`` is the wire object ``{action_id, severity, message, tier, code}``;
    ``index`` (the action's position) and ``pointer`` (a JSON pointer into the
    proposal, e.g. ``/actions/2/preconditions/0``) locate it in the proposal, and
    ``location``, when a file is known, in the file.
    """

    code: str
    severity: Severity
    tier: Tier
    message: str
    action_id: str | None = None
    index: int | None = None
    pointer: str = ""
    location: Location | None = None

    @property
    def path(self) -> str | None:
        """The file of the finding's location (None: not located in a file)."""
        return self.location.path if self.location else None

    @property
    def line(self) -> int | None:
        return self.location.line if self.location else None

    @property
    def column(self) -> int | None:
        return self.location.column if self.location else None

    def located(self, location: Location, *, severity: Severity | None = None) -> Issue:
        """The same finding at ``location`` (and at ``severity``, when given)."""
        return replace(self, location=location, severity=severity or self.severity)

    def to_dict(self) -> dict[str, Any]:
        return {
            "action_id": self.action_id,
            "severity": self.severity.value,
            "message": self.message,
            "tier": self.tier.value,
            "code": self.code,
        }

    def sort_key(self) -> tuple[int, str]:
        return (-1 if self.index is None else self.index, self.code)

    def to_located_dict(self) -> dict[str, Any]:
        """The finding with its place in a file (what ``lint --format json`` prints)."""
        where = self.location or Location("")
        return {
            "path": where.path,
            "line": where.line,
            "column": where.column,
            "code": self.code,
            "severity": self.severity.value,
            "tier": self.tier.value,
            "message": self.message,
            "action_id": self.action_id,
            "pointer": self.pointer,
        }

    def baseline_key(self) -> tuple[str, str | None, str]:
        """How a baseline matches a finding: file, action id and code (not line)."""
        return (self.location.path if self.location else "", self.action_id, self.code)
