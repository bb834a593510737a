"""Plain text: one line per finding, then a summary line."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..findings import Issue, Severity
from ..values import plural

if TYPE_CHECKING:
    from ..api import VerificationResult
    from ..executor import ExecutionResult as Outcome

__all__ = [
    "issue_line",
    "lines",
    "one_line",
    "policy_text",
    "render_text",
    "run_text",
    "severity_counts",
    "verdict_line",
]


def severity_counts(errors: int, warnings: int, infos: int) -> str:
    """``1 error, 2 warnings`` (and ``, 3 info`` when there are any)."""
    counts = f"{plural(errors, 'error')}, {plural(warnings, 'warning')}"
    return counts + f", {infos} info" if infos else counts


def issue_line(issue: Issue) -> str:
    """The one layout of a finding, in every command: ``path:line:col: severity[code]
    action: message``. Without a file (stdin, the Python API) the location is left
    out, and a finding about the whole proposal says ``(proposal)``; a finding in a
    file about no action (lint's about the file itself) names none."""
    where = issue.location
    head = f"{issue.severity.value}[{issue.code}]"
    if where is not None:
        head = f"{where.path}:{where.line}:{where.column}: {head}"
    if issue.action_id is not None:
        return f"{head} {issue.action_id}: {issue.message}"
    return f"{head} {issue.message}" if where is not None else f"{head} (proposal): {issue.message}"


def lines(issues: Iterable[Issue], summary: str) -> str:
    """The findings' lines and the summary, newline-terminated."""
    return "".join(issue_line(i) + "\n" for i in issues) + summary + "\n"


def verdict_line(result: VerificationResult) -> str:
    """``valid: 0 errors, 1 warning (8 of 8 checks ran; profile car)``; the checks
    that did not run are named (``7 of 8 checks ran, not param_schema``)."""
    errors, warnings = len(result.errors), len(result.warnings)
    infos = len(result.issues) - errors - warnings
    checks = result.evidence.checks
    idle = [c.name for c in checks if not c.ran]
    verdict = "valid" if result.valid else "invalid"
    counts = severity_counts(errors, warnings, infos)
    ran = f"{len(checks) - len(idle)} of {len(checks)} checks ran"
    if idle:
        ran += f", not {', '.join(idle)}"
    return f"{verdict}: {counts} ({ran}; profile {result.profile.value})"


def render_text(result: VerificationResult) -> str:
    """``verify``'s text: one line per issue (severity, code, action, message), then the verdict."""
    return lines(result.issues, verdict_line(result))


def one_line(text: str) -> str:
    """``text`` with its runs of whitespace (newlines too) made one space."""
    return " ".join(text.split())


def policy_text(result: VerificationResult, described: str) -> str:
    """``policy check``: each violation, each undecided rule, then the count and the
    policies that were loaded (``described``)."""
    out = []
    for i in result.issues:
        prefix = "" if i.severity is Severity.ERROR else "undecided: "
        out.append(f"{prefix}{i.code} {i.action_id}: {i.message}\n")
    count = sum(1 for i in result.issues if i.severity is Severity.ERROR)
    out.sort(key=lambda line: line.startswith("undecided: "))
    return "".join(out) + f"{plural(count, 'violation')} ({described})\n"


def run_text(outcome: Outcome) -> str:
    """``run``: each action's status, the cost, and why the run stopped, if it did."""
    out = []
    shown = outcome.shown_statuses
    refused = bool(outcome.rejected_by)  # every action: the reasons, said once below
    for r in outcome.result.results:
        detail = f": {one_line(r.error)}" if r.error and not refused else ""
        out.append(f"{shown[r.action_id]:<11} {r.action_id}{detail}\n")
    c = outcome.result.cost
    out.append(
        f"{c.actions_executed} executed, {c.actions_rejected} rejected, {c.actions_skipped} "
        f"skipped; {c.tool_calls} tool calls, {c.retries} retries, "
        f"{c.total_duration_ms:.0f} ms\n"
    )
    if outcome.rejected_by:
        reasons, more = outcome.rejected_by[:5], len(outcome.rejected_by) - 5
        rest = f"; and {more} more (car-verify verify lists them all)" if more > 0 else ""
        out.append(f"rejected at admission: {'; '.join(reasons)}{rest}\n")
    if outcome.rollback is not None:
        rb = outcome.rollback
        failed = [f["action_id"] for f in rb.failed_to_compensate]
        out.append(
            f"rolled back ({one_line(outcome.aborted_by or '')}): state restored; compensated "
            f"{rb.compensated or 'nothing'}; failed to compensate {failed or 'nothing'}; "
            f"irreversible already done {rb.irreversible_reached or 'nothing'}\n"
        )
    return "".join(out)
