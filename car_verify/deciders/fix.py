"""``--fix``: the repairs car-verify can prove safe, applied to the proposal's JSON.

Two kinds, as ruff applies only its safe fixes:

- ``remove-phantom-dependency``: a ``state_dependencies`` entry that ``optimize``
  removes (under the profile's own rule, docs/semantics.md §6 or CAR's, which
  keeps the findings), kept only when z3 proves the end state the same in every
  initial state: CAR's rule drops a dependency on a key no action writes, which
  unblocks the action in a state without the key.
- ``order-writers``: for a write conflict ``[a, b, key]`` (``a`` before ``b`` in
  the proposal), ``b`` ordered after ``a`` as the profile orders actions (its
  semantics' ``ordering_edit``): under ``strict`` ``a`` added to ``b``'s
  ``dependencies``; under ``car``, which orders by ``state_dependencies`` alone,
  ``key`` added to ``b``'s ``state_dependencies``. Kept only when z3 proves, on
  the profile's own walk, that the end state is the same in every initial state
  and verify then reports nothing it did not report before (the conflict gone).

A repair is an edit of the document as the user wrote it (one list entry removed,
one id appended), so unknown fields, key order and everything else stay; the
JSON is written back with the file's own indentation.
"""

from __future__ import annotations

import copy
import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..api import verify
from ..base.errors import deep_values_are_input_errors
from ..ir.model import load_parsed
from ..semantics import ProfileLike, profile_of

__all__ = ["Fix", "FixResult", "dump_like", "fix_document", "unified_diff"]


@dataclass(frozen=True, slots=True)
class Fix:
    """One repair: its kind, the action it edits (index and id), what and why."""

    kind: str
    index: int
    action_id: str
    detail: str
    reason: str

    def describe(self) -> str:
        return f"{self.action_id}: {self.detail} ({self.reason})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "action_id": self.action_id,
            "detail": self.detail,
            "reason": self.reason,
        }


@dataclass(slots=True)
class FixResult:
    """The repaired document, the repairs made, and what was considered and left."""

    document: dict[str, Any]
    fixes: list[Fix] = field(default_factory=list)
    #: Repairs tried and not made, each with why (a counterexample, a new finding).
    declined: list[str] = field(default_factory=list)
    #: What was not attempted at all, and why (the profile, a duplicate id).
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.fixes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "fixes": [f.to_dict() for f in self.fixes],
            "declined": self.declined,
            "notes": self.notes,
        }


#: At most this many write conflicts are tried as ordering repairs (each is a z3 question).
MAX_ORDERING_TRIALS = 50


@deep_values_are_input_errors
def fix_document(
    document: Mapping[str, Any],
    *,
    initial_state: Mapping[str, Any] | None = None,
    profile: ProfileLike = None,
    timeout_ms: int = 30_000,
) -> FixResult:
    """The safe repairs of the proposal ``document`` (parsed JSON; not modified)."""
    chosen = profile_of(profile)
    current: dict[str, Any] = copy.deepcopy(dict(document))
    result = FixResult(current)
    proposal = load_parsed(copy.deepcopy(current))
    ids = [a.id for a in proposal.actions]
    if len(set(ids)) != len(ids):
        result.notes.append("no repairs: action ids repeat, so an edit could not name its action")
        return result
    _remove_phantoms(result, initial_state, chosen, timeout_ms)
    _order_writers(result, initial_state, timeout_ms, chosen)
    return result


def _remove_phantoms(
    result: FixResult,
    initial_state: Mapping[str, Any] | None,
    profile: ProfileLike,
    timeout_ms: int,
) -> None:
    from .optimize import optimize

    optimized = optimize(
        load_parsed(copy.deepcopy(result.document)), initial_state=initial_state, profile=profile
    )
    for change in optimized.removed:
        candidate = copy.deepcopy(result.document)
        action = candidate["actions"][change.index]
        action["state_dependencies"] = [k for k in action["state_dependencies"] if k != change.key]
        # The profile's optimize rule keeps the findings; a repair must keep the end
        # state too, in every initial state (CAR's rule drops a dependency on a key no
        # action writes, which unblocks the action when the key is absent).
        label = f"removing {change.key!r} from {change.action_id}'s state_dependencies"
        why = _changes_the_end_state(result.document, candidate, profile, timeout_ms)
        if why is not None:
            result.declined.append(f"{label}: {why}")
            continue
        result.document.clear()
        result.document.update(candidate)
        detail = f"removed {change.key!r} from state_dependencies"
        result.fixes.append(
            Fix("remove-phantom-dependency", change.index, change.action_id, detail, change.reason)
        )


def _changes_the_end_state(
    before: Mapping[str, Any], after: Mapping[str, Any], profile: ProfileLike, timeout_ms: int
) -> str | None:
    """None when z3 proves the two plans leave the same end state in every initial
    state (on the profile's walk); otherwise why not (a counterexample state)."""
    from .equivalence import equivalent

    same = equivalent(
        load_parsed(copy.deepcopy(dict(before))),
        load_parsed(copy.deepcopy(dict(after))),
        method="z3",
        profile=profile,
        timeout_ms=timeout_ms,
    )
    if same.equivalent is True:
        return None
    if same.equivalent is None:
        return "z3 could not decide it" + (f": {same.reason}" if same.reason else "")
    return f"changes the end state, e.g. from {json.dumps(same.counterexample)}"


def _signature(
    doc: Mapping[str, Any], state: Mapping[str, Any] | None, profile: ProfileLike
) -> Any:
    checked = verify(load_parsed(copy.deepcopy(dict(doc))), initial_state=state, profile=profile)
    return checked, {(i.action_id, i.code, i.severity.value, i.message) for i in checked.issues}


def _order_writers(
    result: FixResult,
    initial_state: Mapping[str, Any] | None,
    timeout_ms: int,
    profile: ProfileLike,
) -> None:
    from ..semantics import semantics_of

    semantics = semantics_of(profile)
    checked, before = _signature(result.document, initial_state, profile)
    tried: set[tuple[str, str]] = set()
    for _ in range(MAX_ORDERING_TRIALS):
        pending = [c for c in checked.conflicts if (c[0], c[1]) not in tried]
        if not pending:
            return
        first, second, key = pending[0]
        tried.add((first, second))
        ids = [a["id"] for a in result.document["actions"]]
        index = ids.index(second)
        label = f"ordering {first} before {second} (write conflict on {key!r})"
        candidate = copy.deepcopy(result.document)
        target = candidate["actions"][index]
        edit = semantics.ordering_edit(target, first, key)
        if isinstance(edit, str):
            result.declined.append(f"{label}: {edit}")
            continue
        name, entry = edit
        if entry in target.get(name, []):
            continue  # already there: this profile orders the two some other way
        target[name] = [*target.get(name, []), entry]
        why = _changes_the_end_state(result.document, candidate, profile, timeout_ms)
        if why is not None:
            result.declined.append(f"{label}: {why}")
            continue
        after_check, after = _signature(candidate, initial_state, profile)
        new = after - before
        if new:
            code = sorted(new)[0]
            result.declined.append(f"{label}: verify would then report {code[1]} on {code[0]}")
            continue
        result.document.clear()
        result.document.update(candidate)
        checked, before = after_check, after
        reason = "z3 proves the end state the same in every initial state; no new finding"
        detail = f"added {entry!r} to {name} (ordering the writers of {key!r})"
        result.fixes.append(Fix("order-writers", index, second, detail, reason))
    result.notes.append(f"stopped after {MAX_ORDERING_TRIALS} ordering trials")


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
