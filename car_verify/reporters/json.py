"""JSON: the result objects' own ``to_dict`` forms, indented, one document per run."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..api import VerificationResult
    from ..base.findings import Issue
    from ..base.values import JSONValue
    from ..executor import ExecutionResult

__all__ = ["dump", "policy_json", "render_json", "run_json", "statistics_json"]


def dump(
    doc: JSONValue,
    *,
    indent: int | None = 2,
    ascii: bool = False,
    default: Callable[[object], JSONValue] | None = None,
) -> str:
    """A JSON document as car-verify prints it: indented, UTF-8 kept, newline-terminated.

    The other layouts are those a command has always printed: ``indent=None`` one
    line (a ledger record), ``ascii`` non-ASCII characters escaped (``policy lint``,
    ``--statistics``), ``default`` for a value JSON has no form of (a path)."""
    return json.dumps(doc, indent=indent, ensure_ascii=ascii, default=default) + "\n"


def statistics_json(issues: Iterable[Issue]) -> str:
    """``--statistics --format json``: ``[{code, severity, count}]``, the most frequent
    first (ties by code, then severity)."""
    from collections import Counter

    counts = Counter((i.code, i.severity.value) for i in issues)
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return dump([{"code": c, "severity": v, "count": n} for (c, v), n in rows], ascii=True)


def render_json(result: VerificationResult) -> str:
    """``verify``'s JSON: ``VerificationResult.to_dict()``."""
    return dump(result.to_dict())


def policy_json(result: VerificationResult, directory: str | None, files: list[str]) -> str:
    """``policy check``: the policies loaded, the violations (errors) and what could
    not be decided (a rule on another action's output, a trace rule past its budget)."""

    def entry(i: Issue) -> dict[str, JSONValue]:
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
