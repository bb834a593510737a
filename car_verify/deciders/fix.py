"""``--fix``: the findings' fixes applied to a proposal's JSON, and one repair more.

The fixes are the findings' own (:mod:`car_verify.deciders.repair`: each a JSON
Patch, safe, unsafe or display, re-verified): ``--fix`` applies the safe ones,
``--unsafe-fixes`` the unsafe ones too, round after round, and a fix that brings a
new finding once applied is dropped and said. Among them, a write conflict's:
for ``[a, b, key]`` (``a`` before ``b`` in the proposal), ``b`` ordered after ``a``
as the profile orders actions (its semantics' ``ordering_edit``: under ``strict``
``a`` added to ``b``'s ``dependencies``; under ``car``, which orders by
``state_dependencies`` alone, ``key`` added to ``b``'s ``state_dependencies``),
safe when z3 proves, on the profile's walk, the end state the same in every
initial state (:func:`changes_the_end_state`).

Only a finding's fix is applied: ``--fix`` leaves a plan without findings as it
is. (A ``state_dependencies`` entry that orders nothing, which ``--fix`` removed
before fixes were a finding's, is ``car-verify optimize``'s: it is no finding.)

Every repair is an edit of the document as the user wrote it (a JSON Patch,
applied to the file's text by :func:`car_verify.base.patch.apply_to_text`), so
unknown fields, key order, indentation and everything else stay.
"""

from __future__ import annotations

import copy
import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..base.errors import deep_values_are_input_errors
from ..semantics import ProfileLike, profile_of
from .repair import Applied, apply_fixes, changes_the_end_state

__all__ = [
    "FixResult",
    "changes_the_end_state",
    "dump_like",
    "fix_document",
    "unified_diff",
]


@dataclass(slots=True)
class FixResult:
    """The repaired document, the repairs made (in order), the JSON Patch that makes
    it from the given one, and what was considered and left."""

    document: dict[str, Any]
    fixes: list[Applied] = field(default_factory=list)
    #: The edits of every repair made, in order: a JSON Patch of the given document.
    edits: list[dict[str, Any]] = field(default_factory=list)
    #: Repairs tried and not made, each with why (a counterexample, a new finding).
    declined: list[str] = field(default_factory=list)
    #: What was not attempted at all, and why.
    notes: list[str] = field(default_factory=list)
    #: Unsafe fixes left unapplied (``unsafe=False``).
    unsafe_left: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.edits)

    def to_dict(self) -> dict[str, Any]:
        return {
            "fixes": [
                {"code": f.code, "action_id": f.action_id, **f.fix.to_dict()} for f in self.fixes
            ],
            "edits": self.edits,
            "declined": self.declined,
            "notes": self.notes,
        }


@deep_values_are_input_errors
def fix_document(
    document: Mapping[str, Any],
    *,
    initial_state: Mapping[str, Any] | None = None,
    profile: ProfileLike = None,
    timeout_ms: int = 30_000,
    tools: Any = None,
    policies: Any = None,
    unsafe: bool = False,
) -> FixResult:
    """The repairs of the proposal ``document`` (parsed JSON; not modified): the
    findings' safe fixes, and the unsafe ones too with ``unsafe``."""
    from ..api import verify

    chosen = profile_of(profile)
    given = copy.deepcopy(dict(document))
    result = verify(
        given, tools=tools, initial_state=initial_state, profile=chosen, policies=policies
    )
    applied = apply_fixes(given, result, unsafe=unsafe, timeout_ms=timeout_ms)
    out = FixResult(
        applied.proposal,
        list(applied.applied),
        list(applied.edits),
        list(applied.dropped),
        unsafe_left=applied.unsafe_left,
    )
    return out


def dump_like(document: Any, original: str) -> str:
    """``document`` as JSON laid out like ``original``: its indentation (or none),
    non-ASCII kept, and its trailing newline."""
    indent: int | str | None = None
    for line in original.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            indent = line[: len(line) - len(stripped)]
            indent = len(indent) if set(indent) == {" "} else indent
            break
    if indent is None:
        compact = '":' in original and '": ' not in original
        text = json.dumps(document, ensure_ascii=False, separators=(",", ":") if compact else None)
    else:
        text = json.dumps(document, ensure_ascii=False, indent=indent)
    return text + ("\n" if original.endswith("\n") else "")


def unified_diff(before: str, after: str, path: str) -> str:
    """A unified diff of a file's text, as ``ruff --diff`` prints it."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=path,
        tofile=path,
    )
    out = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return out
