"""Findings are data: an immutable record per issue, with severity and tier as independent axes."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

__all__ = ["Applicability", "Fix", "Issue", "Location", "Severity", "Tier"]


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


class Applicability(StrEnum):
    """How far a repair may be trusted (ruff's names): ``safe`` is applied by
    ``--fix``; ``unsafe`` only with ``--unsafe-fixes`` (a guess at what was meant, or
    a change of what the plan does); ``display`` is shown and never applied."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY = "display"

    @property
    def rank(self) -> int:
        return {"safe": 2, "unsafe": 1, "display": 0}[self.value]


@dataclass(frozen=True, slots=True)
class Fix:
    """How to repair a finding: an RFC 6902 JSON Patch (``edits``) against the
    document as the user gave it, how far it may be trusted, and what it does in
    words. A ``display`` fix may have no edits: its message says what to do."""

    applicability: Applicability
    message: str
    edits: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The wire object ``{applicability, message, edits}``."""
        return {
            "applicability": self.applicability.value,
            "message": self.message,
            "edits": [dict(op) for op in self.edits],
        }

    def one_line(self) -> str:
        """The fix as one line for a model or a person: ``fix (safe): <message>``,
        with the edits as JSON when there are any (a gate's deny message quotes it)."""
        import json

        head = f"fix ({self.applicability.value}): {self.message}"
        if not self.edits:
            return head
        patch = json.dumps(list(self.edits), ensure_ascii=False, separators=(",", ":"))
        return f"{head}; JSON Patch: {patch}"


@dataclass(frozen=True, slots=True)
class Issue:
    """One finding, of every command (verify, lint, policy check, run).

    ``to_dict()`` is the wire object ``{action_id, severity, message, tier, code}``;
    ``index`` (the action's position) and ``pointer`` (a JSON pointer into the
    proposal, e.g. ``/actions/2/preconditions/0``) locate it in the proposal, and
    ``location``, when a file is known, in the file. ``fix``, when one was asked
    for (:attr:`car_verify.api.VerificationResult.fixes`), how to repair it; the
    wire object then carries it as ``fix``.
    """

    code: str
    severity: Severity
    tier: Tier
    message: str
    action_id: str | None = None
    index: int | None = None
    pointer: str = ""
    location: Location | None = None
    fix: Fix | None = None

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

    def with_fix(self, fix: Fix | None) -> Issue:
        """The same finding carrying ``fix``."""
        return replace(self, fix=fix)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "action_id": self.action_id,
            "severity": self.severity.value,
            "message": self.message,
            "tier": self.tier.value,
            "code": self.code,
        }
        if self.fix is not None:
            out["fix"] = self.fix.to_dict()
        return out

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
            **({"fix": self.fix.to_dict()} if self.fix is not None else {}),
        }

    def baseline_key(self) -> tuple[str, str | None, str]:
        """How a baseline matches a finding: file, action id and code (not line)."""
        return (self.location.path if self.location else "", self.action_id, self.code)
