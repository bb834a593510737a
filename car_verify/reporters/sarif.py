"""SARIF 2.1.0: one rule per finding code, one result per finding.

The rules are every code of the table, sorted, then the policy rules that fired
(named after the rule, ``deny_tool:send_email``), sorted; each result names its
rule by id and by its index in that list. A finding with a location in a file
points at the file (relative to ``%SRCROOT%``), its line and column; one without
points at ``artifact`` when the caller names the file it checked. Every result
also carries its JSON pointer into the proposal as a logical location, and a
fingerprint (file, action id, code) that survives edits moving it to another line.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..codes import CODES, Code
from ..findings import Issue, Severity

if TYPE_CHECKING:
    from ..api import VerificationResult

__all__ = ["SARIF_SCHEMA", "render_sarif", "sarif", "sarif_rule"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def sarif_rule(name: str, code: Code | None) -> dict[str, Any]:
    """One SARIF rule: a finding code with its help text and documentation link
    (a policy rule name when ``code`` is None)."""
    summary = code.summary if code else f"policy rule {name}"
    level = _LEVEL[code.worst] if code else "error"
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


def _location(issue: Issue, artifact: str | None) -> dict[str, Any]:
    location: dict[str, Any] = {}
    where = issue.location
    if where is not None:
        location["physicalLocation"] = {
            "artifactLocation": {"uri": where.path, "uriBaseId": "%SRCROOT%"},
            "region": {"startLine": where.line, "startColumn": where.column},
        }
    elif artifact:
        location["physicalLocation"] = {"artifactLocation": {"uri": artifact}}
    logical: dict[str, Any] = {
        "name": issue.action_id or "proposal",
        "fullyQualifiedName": issue.pointer or "/",
        "kind": "object",
    }
    location["logicalLocations"] = [logical]
    return location


def sarif(issues: Sequence[Issue], *, artifact: str | None = None) -> str:
    """A SARIF 2.1.0 log of ``issues`` (see the module's docstring)."""
    extra = sorted({i.code for i in issues} - set(CODES))
    names = [*sorted(CODES), *extra]
    index = {name: i for i, name in enumerate(names)}
    results = []
    for issue in issues:
        path = issue.location.path if issue.location else (artifact or "")
        mark = hashlib.sha256(f"{path}\0{issue.action_id}\0{issue.code}".encode())
        results.append(
            {
                "ruleId": issue.code,
                "ruleIndex": index[issue.code],
                "level": _LEVEL[issue.severity],
                "message": {"text": issue.message},
                "locations": [_location(issue, artifact)],
                "partialFingerprints": {"carVerify/v1": mark.hexdigest()[:32]},
                "properties": {"tier": issue.tier.value, "actionId": issue.action_id},
            }
        )
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "car-verify",
                "version": __version__,
                "informationUri": "https://pypi.org/project/car-verify/",
                "rules": [sarif_rule(name, CODES.get(name)) for name in names],
            }
        },
    }
    if any(i.location is not None for i in issues):
        run["originalUriBaseIds"] = {"%SRCROOT%": {"uri": Path.cwd().resolve().as_uri() + "/"}}
    run["results"] = results
    log = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def render_sarif(result: VerificationResult, *, artifact: str | None = None) -> str:
    """``verify``'s SARIF: the result's findings, in the file ``artifact`` when named."""
    return sarif(result.issues, artifact=artifact)
