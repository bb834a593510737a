"""Reporters turn results into text, JSON and SARIF. Passes never format output."""

from __future__ import annotations

import json
from typing import Any

from . import __version__
from .api import VerificationResult
from .codes import CODES, Code
from .findings import Issue, Severity
from .values import plural

__all__ = ["render_json", "render_sarif", "render_text"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def severity_counts(errors: int, warnings: int, infos: int) -> str:
    """``1 error, 2 warnings`` (and ``, 3 info`` when there are any)."""
    counts = f"{plural(errors, 'error')}, {plural(warnings, 'warning')}"
    return counts + f", {infos} info" if infos else counts


def _summary(result: VerificationResult) -> str:
    errors, warnings = len(result.errors), len(result.warnings)
    infos = len(result.issues) - errors - warnings
    checks = result.evidence.checks
    ran = sum(1 for c in checks if c.ran)
    counts = severity_counts(errors, warnings, infos)
    verdict = "valid" if result.valid else "invalid"
    return (
        f"{verdict}: {counts} ({ran} of {len(checks)} checks ran; profile {result.profile.value})"
    )


def issue_line(issue: Issue) -> str:
    where = issue.action_id if issue.action_id is not None else "(proposal)"
    return f"{issue.severity.value}[{issue.code}] {where}: {issue.message}"


def render_text(result: VerificationResult) -> str:
    """One line per issue (severity, code, action, message), then a summary line."""
    lines = [issue_line(i) for i in result.issues]
    lines.append(_summary(result))
    return "\n".join(lines) + "\n"


def render_json(result: VerificationResult) -> str:
    return json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n"


def sarif_rule(name: str, code: Code | None) -> dict[str, Any]:
    """One SARIF rule: a finding code with its help text and documentation link
    (a policy rule name when ``code`` is None)."""
    summary = code.summary if code else f"policy rule {name}"
    level = _SARIF_LEVEL[code.worst] if code else "error"
    return {
        "id": name,
        "name": "".join(part.title() for part in name.replace(":", "-").split("-")),
        "shortDescription": {"text": summary},
        "fullDescription": {"text": summary},
        "help": {
            "text": f"{summary}. Documentation: docs/codes.md#{name}",
            "markdown": f"{summary}. See [the documentation](docs/codes.md#{name}).",
        },
        "helpUri": f"docs/codes.md#{name}" if code else "docs/policies.md",
        "defaultConfiguration": {"level": level},
        "properties": {"tier": code.tier.value if code else "decision_procedure"},
    }


def sarif_log(rules: list[dict[str, Any]], results: list[dict[str, Any]], **run: Any) -> str:
    """A SARIF 2.1.0 log with one run of car-verify."""
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "car-verify",
                        "version": __version__,
                        "informationUri": "https://pypi.org/project/car-verify/",
                        "rules": rules,
                    }
                },
                **run,
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def render_sarif(result: VerificationResult, *, artifact: str | None = None) -> str:
    """A SARIF 2.1.0 log: one rule per finding code (and per policy rule that
    fired, named after it), one result per issue, each pointing at its own rule."""
    codes = [*sorted(CODES), *sorted({i.code for i in result.issues} - set(CODES))]
    index = {name: i for i, name in enumerate(codes)}
    results = []
    for issue in result.issues:
        location: dict[str, Any] = {}
        if artifact:
            location["physicalLocation"] = {"artifactLocation": {"uri": artifact}}
        logical: dict[str, Any] = {"fullyQualifiedName": issue.pointer or "/", "kind": "object"}
        if issue.action_id is not None:
            logical["name"] = issue.action_id
        location["logicalLocations"] = [logical]
        results.append(
            {
                "ruleId": issue.code,
                "ruleIndex": index[issue.code],
                "level": _SARIF_LEVEL[issue.severity],
                "message": {"text": issue.message},
                "locations": [location],
                "properties": {"tier": issue.tier.value, "actionId": issue.action_id},
            }
        )
    return sarif_log([sarif_rule(name, CODES.get(name)) for name in codes], results)
