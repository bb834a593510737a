"""SARIF 2.1.0: one rule per finding code, one result per finding.

The rules are every code of the table, sorted, then the policy rules that fired
(named after the rule, ``deny_tool:send_email``), sorted; each result names its
rule by id and by its index in that list. A finding with a location in a file
points at the file (relative to ``%SRCROOT%``), its line and column (``verify``
locates its findings in the file it read); one without points at ``artifact``
when the caller names the file it checked. Help links are absolute when the
documentation's address is given (``--docs-url``, ``$CAR_VERIFY_DOCS_URL``);
without one, a rule carries its help text and no ``helpUri``. Every result
also carries its JSON pointer into the proposal as a logical location, and a
fingerprint (file, action id, code) that survives edits moving it to another line.

A finding with a fix that edits the document carries it as a SARIF ``fix``: its
message, and the change of the file's text as one replacement (the region of the
original text the JSON Patch rewrites, and what goes there), when the file's text
is at hand; its ``properties`` keep the applicability (``safe``, ``unsafe``) and the
JSON Patch itself. A ``display`` fix (words only) is in the result's properties.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..base.codes import CODES, Code
from ..base.findings import Issue, Severity

if TYPE_CHECKING:
    from ..api import VerificationResult

__all__ = ["SARIF_SCHEMA", "located", "render_sarif", "sarif", "sarif_rule"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def sarif_rule(name: str, code: Code | None, docs_url: str | None = None) -> dict[str, Any]:
    """One SARIF rule: a finding code with its help text (a policy rule name when
    ``code`` is None) and, when ``docs_url`` says where the documentation is
    published, an absolute link to the code's entry."""
    summary = code.summary if code else f"policy rule {name}"
    level = _LEVEL[code.worst] if code else "error"
    page = f"codes.md#{name}" if code else "policies.md"
    rule: dict[str, Any] = {
        "id": name,
        "name": "".join(part.title() for part in name.replace(":", "-").split("-")),
        "shortDescription": {"text": summary},
        "fullDescription": {"text": summary},
        "help": {
            "text": f"{summary}. Documentation: docs/{page}",
            "markdown": f"{summary}. See `docs/{page}` in the car-verify documentation.",
        },
    }
    if docs_url:
        rule["helpUri"] = docs_url.rstrip("/") + "/" + page
    rule["defaultConfiguration"] = {"level": level}
    rule["properties"] = {"tier": code.tier.value if code else "decision_procedure"}
    return rule


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


def _fixes(issue: Issue, path: str, text: str | None) -> list[dict[str, Any]]:
    """The finding's fix as SARIF ``fixes`` (none without edits, or without the text
    a region is counted in)."""
    fix = issue.fix
    if fix is None or not fix.edits or text is None or not path:
        return []
    from ..base.patch import PatchError, apply_to_text, text_change

    try:
        change = text_change(text, apply_to_text(text, fix.edits))
    except (PatchError, ValueError):
        return []
    if change is None:
        return []
    return [
        {
            "description": {"text": fix.message},
            "artifactChanges": [
                {
                    "artifactLocation": {"uri": path, "uriBaseId": "%SRCROOT%"},
                    "replacements": [
                        {
                            "deletedRegion": {
                                "startLine": change.start_line,
                                "startColumn": change.start_column,
                                "endLine": change.end_line,
                                "endColumn": change.end_column,
                                "charOffset": change.start,
                                "charLength": change.end - change.start,
                            },
                            "insertedContent": {"text": change.inserted},
                        }
                    ],
                }
            ],
            "properties": {"applicability": fix.applicability.value},
        }
    ]


def sarif(
    issues: Sequence[Issue],
    *,
    artifact: str | None = None,
    docs_url: str | None = None,
    text_of: Callable[[str], str | None] | None = None,
) -> str:
    """A SARIF 2.1.0 log of ``issues`` (see the module's docstring). ``text_of``: the
    text of a file the findings are in (None: not at hand), for their fixes' regions."""
    extra = sorted({i.code for i in issues} - set(CODES))
    names = [*sorted(CODES), *extra]
    index = {name: i for i, name in enumerate(names)}
    results = []
    texts: dict[str, str | None] = {}
    for issue in issues:
        path = issue.location.path if issue.location else (artifact or "")
        mark = hashlib.sha256(f"{path}\0{issue.action_id}\0{issue.code}".encode())
        properties: dict[str, Any] = {"tier": issue.tier.value, "actionId": issue.action_id}
        if issue.fix is not None:
            properties["fix"] = issue.fix.to_dict()
        entry: dict[str, Any] = {
            "ruleId": issue.code,
            "ruleIndex": index[issue.code],
            "level": _LEVEL[issue.severity],
            "message": {"text": issue.message},
            "locations": [_location(issue, artifact)],
            "partialFingerprints": {"carVerify/v1": mark.hexdigest()[:32]},
            "properties": properties,
        }
        if text_of is not None and issue.fix is not None:
            if path not in texts:
                texts[path] = text_of(path) if path else None
            fixes = _fixes(issue, path, texts[path])
            if fixes:
                entry["fixes"] = fixes
        results.append(entry)
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "car-verify",
                "version": __version__,
                "informationUri": "https://pypi.org/project/car-verify/",
                "rules": [sarif_rule(name, CODES.get(name), docs_url) for name in names],
            }
        },
    }
    if any(i.location is not None for i in issues):
        run["originalUriBaseIds"] = {"%SRCROOT%": {"uri": Path.cwd().resolve().as_uri() + "/"}}
    run["results"] = results
    log = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def render_sarif(
    result: VerificationResult,
    *,
    artifact: str | None = None,
    text: str | None = None,
    docs_url: str | None = None,
) -> str:
    """``verify``'s SARIF: the result's findings, in the file ``artifact`` when named,
    each at its action's line and column when the file's ``text`` is given."""
    return sarif(
        located(result.issues, artifact, text),
        artifact=artifact,
        docs_url=docs_url,
        text_of=None if text is None else (lambda path: text if path == artifact else None),
    )


def located(issues: Sequence[Issue], artifact: str | None, text: str | None) -> list[Issue]:
    """``issues`` at their actions' places in the JSON ``text`` of file ``artifact``
    (the proposal's first line for a finding about the whole proposal)."""
    if artifact is None or text is None:
        return list(issues)
    from ..base.locate import at_actions, json_positions

    try:
        positions = json_positions(text)
    except ValueError:  # not JSON text: the file without a region
        return list(issues)
    return at_actions(issues, artifact, positions)
