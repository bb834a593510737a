"""``optimize``: prune phantom ``state_dependencies`` (SEMANTICS section 6).

A ``state_dependencies`` entry is *phantom* when the action declares an explicit,
non-empty ``read_set`` (its own statement of what it reads) and the key is in
none of that ``read_set``, its preconditions, its assumptions or its
``state_read`` keys. Without an explicit ``read_set``, ``state_dependencies`` is
the read set and nothing is phantom.

A phantom entry is removed only if verify's findings, as a set of
``(action_id, code, severity)`` under the same initial state, stay exactly the
same, no conflict appears and verify's end state is unchanged. Actions are never
reordered, added or removed; unknown fields are kept. The result says which
entries were removed and why, and which phantom entries were kept and why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .api import ProposalLike, VerificationResult, _state, verify
from .model import Action, ActionProposal, load
from .values import json_equal

__all__ = ["Change", "OptimizeResult", "optimize", "phantom_entries", "proves_guarantee"]


@dataclass(frozen=True, slots=True)
class Change:
    """One phantom ``state_dependencies`` entry: removed, or kept with the reason."""

    action_id: str
    index: int
    key: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"action_id": self.action_id, "key": self.key, "reason": self.reason}


@dataclass(slots=True)
class OptimizeResult:
    """The optimized proposal, the phantom entries removed and the ones kept (each with
    its reason), and the number of levels before and after."""

    proposal: ActionProposal
    removed: list[Change] = field(default_factory=list)
    kept: list[Change] = field(default_factory=list)
    depth_before: int = 0
    depth_after: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "proposal": self.proposal.to_dict(),
            "removed": [c.to_dict() for c in self.removed],
            "kept": [c.to_dict() for c in self.kept],
            "levels": {"before": self.depth_before, "after": self.depth_after},
        }

    def diff(self) -> str:
        """What changed, one line per entry, like a unified diff of the affected fields."""
        lines = []
        for c in self.removed:
            lines.append(f"- actions[{c.index}] ({c.action_id}).state_dependencies: {c.key!r}")
            lines.append(f"    removed: {c.reason}")
        for c in self.kept:
            lines.append(f"  actions[{c.index}] ({c.action_id}).state_dependencies: {c.key!r}")
            lines.append(f"    kept: {c.reason}")
        lines.append(f"levels: {self.depth_before} -> {self.depth_after}")
        return "\n".join(lines)


def phantom_entries(action: Action) -> list[str]:
    """The ``state_dependencies`` keys of ``action`` that are phantom."""
    if not action.read_set:
        return []
    declared = set(action.read_set)
    declared.update(p.key for p in action.preconditions)
    declared.update(a.key for a in action.assumptions)
    declared.update(action.state_read_keys())
    return [key for key in dict.fromkeys(action.state_dependencies) if key not in declared]


def _signature(
    result: VerificationResult,
) -> tuple[set[tuple[str | None, str, str]], set[tuple[str, ...]]]:
    findings = {(i.action_id, i.code, i.severity.value) for i in result.issues}
    conflicts = {tuple(c) for c in result.conflicts}
    return findings, conflicts


def optimize(
    proposal: ProposalLike, *, initial_state: Mapping[str, Any] | None = None
) -> OptimizeResult:
    """Remove the phantom ``state_dependencies`` entries that change nothing verify sees."""
    original = load(proposal)
    state = _state(initial_state)
    current = load(json.loads(json.dumps(original.to_dict())))
    base = verify(current, initial_state=state)
    findings, conflicts = _signature(base)
    result = OptimizeResult(current, depth_before=len(base.execution_levels))
    for index, action in enumerate(original.actions):
        for key in phantom_entries(action):
            # Each removal is tried on `current` in place (it is this function's own
            # copy) and undone when it is kept: no copy of the plan per trial.
            target = current.actions[index]
            deps = target.state_dependencies
            target.state_dependencies = [k for k in deps if k != key]
            after = verify(current, initial_state=state)
            new_findings, new_conflicts = _signature(after)
            if new_findings != findings:
                kept = "removing it changes verify's findings"
            elif not new_conflicts <= conflicts:
                kept = "removing it creates a write conflict"
            elif not json_equal(after.simulated_state, base.simulated_state):
                kept = "removing it changes verify's end state"
            else:
                why = (
                    f"not in the action's read_set {action.read_set}, preconditions, "
                    "assumptions or state_read keys; findings, conflicts and end state unchanged"
                )
                result.removed.append(Change(action.id, index, key, why))
                continue
            target.state_dependencies = deps
            result.kept.append(Change(action.id, index, key, kept))
    result.proposal = current
    result.depth_after = len(verify(current, initial_state=state, passes=[]).execution_levels)
    return result


def proves_guarantee(original: ProposalLike, optimized: ProposalLike) -> bool | None:
    """Decide with z3: in every initial state where ``original`` runs with no blocked
    action, both proposals reach the same ``simulate`` end state. None if unknown."""
    from .symbolic import Encoder

    a, b = load(original), load(optimized)
    encoder = Encoder([a, b])
    z3 = encoder.z3
    run_a, run_b = encoder.run(a), encoder.run(b)
    answer = encoder.questions().ask(
        *[z3.Not(blocked) for blocked in run_a.blocked],
        z3.Not(encoder.same_final_state(run_a, run_b)),
    )
    return True if answer.verdict == z3.unsat else False if answer.verdict == z3.sat else None
