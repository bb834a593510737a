"""JSON: the result objects' own ``to_dict`` forms, indented, one document per run."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..api import VerificationResult
    from ..executor import ExecutionResult

__all__ = ["dump", "policy_json", "render_json", "run_json"]


def dump(doc: Any) -> str:
    """A JSON document as car-verify prints it: indented, UTF-8 kept, newline-terminated."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def render_json(result: VerificationResult) -> str:
    """``verify``'s JSON: ``VerificationResult.to_dict()``."""
    return dump(result.to_dict())


def policy_json(result: VerificationResult, directory: str | None, files: list[str]) -> str:
    """``policy check``: the policies loaded, the violations (errors) and what could
    not be decided (a rule on another action's output, a trace rule past its budget)."""

    def entry(i: Any) -> dict[str, Any]:
        return {
            "policy_name": i.code,
            "action_id": i.action_id,
            "reason": i.message,
            "tier": i.tier.value,
        }

    errors = [i for i in result.issues if i.severity.value == "error"]
    return dump(
        {
            "directory": directory,
            "files": files,
            "violations": [entry(i) for i in errors],
            "undecided": [entry(i) for i in result.issues if i.severity.value != "error"],
        }
    )


def run_json(outcome: ExecutionResult) -> str:
    """``run``: the result, the rollback and the abort cause (``ExecutionResult.report()``)."""
    return dump(outcome.report())
