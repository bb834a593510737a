"""Findings are data: an immutable record per issue, with severity and tier as independent axes."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ._records import quick_init

__all__ = ["Issue", "Severity", "Tier"]


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


@quick_init
@dataclass(frozen=True, slots=True)
class Issue:
    """One finding.

    ``to_dict()`` is the wire object ``{action_id, severity, message, tier, code}``;
    ``index`` (the action's position) and ``pointer`` (a JSON pointer into the
    proposal, e.g. ``/actions/2/preconditions/0``) locate it for reporters.
    """

    code: str
    severity: Severity
    tier: Tier
    message: str
    action_id: str | None = None
    index: int | None = None
    pointer: str = ""

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
