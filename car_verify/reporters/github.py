"""GitHub Actions workflow commands (``::error file=...,line=...::message``)."""

from __future__ import annotations

from collections.abc import Iterable

from ..base.findings import Issue, Severity
from .text import fix_note

__all__ = ["render_github"]

_KIND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def _escape(text: str, *, property: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if property:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def render_github(issues: Iterable[Issue], *, artifact: str | None = None) -> str:
    """One annotation per finding, at its location (or in ``artifact``, line 1)."""
    out = []
    for issue in issues:
        where = issue.location
        path = where.path if where is not None else artifact
        place = []
        if path:
            place.append(f"file={_escape(path, property=True)}")
            if where is not None:
                place.append(f"line={where.line},col={where.column}")
        place.append(f"title={_escape(issue.code, property=True)}")
        message = (
            issue.message
            if issue.action_id is None or where
            else (f"{issue.action_id}: {issue.message}")
        )
        if issue.fix is not None:
            message += fix_note(issue.fix)
        out.append(f"::{_KIND[issue.severity]} {','.join(place)}::{_escape(message)}\n")
    return "".join(out)
