"""Plain text: one line per finding, then a summary line."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, TextIO

from ..base.findings import Applicability, Fix, Issue, Severity
from ..base.values import plural

if TYPE_CHECKING:
    from ..api import VerificationResult
    from ..executor import ExecutionResult as Outcome

__all__ = [
    "color_wanted",
    "fix_line",
    "fix_note",
    "fixable_line",
    "issue_line",
    "lines",
    "one_line",
    "policy_text",
    "render_text",
    "run_text",
    "severity_counts",
    "statistics",
    "verdict_line",
]

#: ANSI colours of the severities (SGR codes), and the bold of a location.
_SGR = {Severity.ERROR: "1;31", Severity.WARNING: "1;33", Severity.INFO: "1;36"}
_BOLD = "1"


def color_wanted(choice: str, stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """``--color auto|always|never``: ``auto`` colours a terminal unless ``NO_COLOR``
    is set (no-color.org) or ``TERM`` is ``dumb``; ``FORCE_COLOR`` colours a pipe too.
    The flag, said on the command line, wins over both variables."""
    if choice != "auto":
        return choice == "always"
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and env.get("TERM") != "dumb"


def _paint(text: str, sgr: str, color: bool) -> str:
    return f"\x1b[{sgr}m{text}\x1b[0m" if color else text


def severity_counts(errors: int, warnings: int, infos: int) -> str:
    """``1 error, 2 warnings`` (and ``, 3 info`` when there are any)."""
    counts = f"{plural(errors, 'error')}, {plural(warnings, 'warning')}"
    return counts + f", {infos} info" if infos else counts


#: How a finding's line says it has a fix, by the fix's applicability.
_FIX_WORDS = {
    Applicability.SAFE: "fix available",
    Applicability.UNSAFE: "unsafe fix available",
    Applicability.DISPLAY: "to fix",
}


def fix_note(fix: Fix) -> str:
    """What a finding's line adds for its fix: `` [fix available: <message>]`` (safe,
    ``--fix`` applies it), `` [unsafe fix available: ...]`` (``--unsafe-fixes``), or
    `` [to fix: ...]`` (shown, never applied)."""
    return f" [{_FIX_WORDS[fix.applicability]}: {one_line(fix.message)}]"


def fix_line(issue: Issue) -> str | None:
    """A finding's fix as one line for a model (a gate's deny message quotes it):
    ``fix (unsafe): call `deploy` instead; JSON Patch: [...]``; None without one."""
    return None if issue.fix is None else issue.fix.one_line()


def issue_line(issue: Issue, *, color: bool = False) -> str:
    """The one layout of a finding, in every command: ``path:line:col: severity[code]
    action: message``, and what its fix does when one was derived (:func:`fix_note`).
    Without a file (stdin, the Python API) the location is left out, and a finding
    about the whole proposal says ``(proposal)``; a finding in a file about no action
    (lint's about the file itself) names none. ``color``: the location in bold, the
    severity and code in the severity's colour."""
    where = issue.location
    head = _paint(f"{issue.severity.value}[{issue.code}]", _SGR[issue.severity], color)
    if where is not None:
        head = f"{_paint(f'{where.path}:{where.line}:{where.column}:', _BOLD, color)} {head}"
    tail = "" if issue.fix is None else fix_note(issue.fix)
    if issue.action_id is not None:
        return f"{head} {issue.action_id}: {issue.message}{tail}"
    if where is not None:
        return f"{head} {issue.message}{tail}"
    return f"{head} (proposal): {issue.message}{tail}"


def fixable_line(issues: Iterable[Issue]) -> str | None:
    """``2 fixable with --fix (1 more with --unsafe-fixes)``, as ruff says it; None
    when no finding has a fix that either applies."""
    kinds = Counter(i.fix.applicability for i in issues if i.fix is not None and i.fix.edits)
    safe, unsafe = kinds[Applicability.SAFE], kinds[Applicability.UNSAFE]
    if not safe and not unsafe:
        return None
    more = f" ({unsafe} more with --unsafe-fixes)" if unsafe and safe else ""
    if not safe:
        return f"{unsafe} fixable with --fix --unsafe-fixes"
    return f"{safe} fixable with --fix{more}"


def lines(issues: Iterable[Issue], summary: str | None, *, color: bool = False) -> str:
    """The findings' lines and the summary (None: no summary, ``--quiet``),
    newline-terminated."""
    found = "".join(issue_line(i, color=color) + "\n" for i in issues)
    return found if summary is None else found + summary + "\n"


def statistics(issues: Iterable[Issue], summary: str | None, *, color: bool = False) -> str:
    """``--statistics``, as ruff prints it: one line per code that fired, most
    frequent first (count, code, severity, summary), then the summary line."""
    from ..base.codes import CODES

    counts = Counter((i.code, i.severity) for i in issues)
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0], -kv[0][1].rank))
    width = max((len(code) for (code, _), _ in rows), default=0)
    out = []
    for (code, severity), count in rows:
        spec = CODES.get(code)
        about = spec.summary if spec is not None else "policy rule"
        label = _paint(f"{severity.value:<7}", _SGR[severity], color)
        out.append(f"{count:>5}  {code:<{width}}  {label}  {about}\n")
    text = "".join(out)
    return text if summary is None else text + summary + "\n"


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


def render_text(result: VerificationResult, *, color: bool = False) -> str:
    """``verify``'s text: one line per issue (severity, code, action, message, and its
    fix when the result's fixes were derived), then the verdict (and what ``--fix``
    would repair)."""
    summary = verdict_line(result)
    fixable = fixable_line(result.issues)
    shown = summary if fixable is None else f"{summary}\n{fixable}"
    return lines(result.issues, shown, color=color)


def one_line(text: str) -> str:
    """``text`` with its runs of whitespace (newlines too) made one space."""
    return " ".join(text.split())


def policy_text(
    issues: Iterable[Issue], described: str, *, color: bool = False, quiet: bool = False
) -> str:
    """``policy check``: each violation (an error), then each rule that could not be
    decided (a warning), in the one layout; then the count and the policies that
    were loaded (``described``)."""
    found = sorted(issues, key=lambda i: i.severity is not Severity.ERROR)
    count = sum(1 for i in found if i.severity is Severity.ERROR)
    tail = f"{plural(count, 'violation')} ({described})"
    return lines(found, None if quiet else tail, color=color)


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
        f"{c.total_duration_ms:.0f} ms (profile {outcome.admission.profile.value})\n"
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
