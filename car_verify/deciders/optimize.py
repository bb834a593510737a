"""``optimize``: prune phantom ``state_dependencies`` (docs/semantics.md §6).

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

from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..api import ProposalLike, VerificationResult, _state, assess
from ..base.errors import deep_values_are_input_errors
from ..base.values import json_equal
from ..ir.model import ActionProposal, load, load_parsed
from ..passes import Context, Pass, Preserves
from ..semantics import ProfileLike, semantics_of
from ..semantics.base import Semantics
from ..semantics.dag import Dag
from ..semantics.strict import phantom_entries

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


def _signature(
    result: VerificationResult,
) -> tuple[set[tuple[str | None, str, str]], set[tuple[str, ...]]]:
    findings = {(i.action_id, i.code, i.severity.value) for i in result.issues}
    conflicts = {tuple(c) for c in result.conflicts}
    return findings, conflicts


_CHANGES_FINDINGS: Final = "removing it changes verify's findings"


@deep_values_are_input_errors
def optimize(
    proposal: ProposalLike,
    *,
    initial_state: Mapping[str, Any] | None = None,
    profile: ProfileLike = None,
) -> OptimizeResult:
    """Remove the ``state_dependencies`` entries the profile calls removable.

    Under the ``car`` profile (the default) this is CAR's rule: every entry on a key
    that no action writes is removed (``read_set`` plays no part); under ``strict``,
    docs/semantics.md §6: a phantom entry goes only when verify then sees what it
    saw before. What differs is the semantics object's (``optimize_candidates``,
    ``optimize_rechecks``)."""
    sem = semantics_of(profile)
    original = load(proposal)
    sem.refuse(original)
    current = load_parsed(original.to_dict())  # to_dict builds fresh JSON: our own copy
    candidates = sem.optimize_candidates(current)
    if not sem.optimize_rechecks:
        return _remove_all(current, candidates, sem)
    state = _state(initial_state)
    base, ctx, passes = _verify(current, state, sem)
    findings, conflicts = _signature(base)
    result = OptimizeResult(current, depth_before=len(base.execution_levels))
    shortcut = _Shortcut.make(ctx, base, passes)
    for index, key, why in candidates:
        # Each removal is tried on `current` in place (it is this function's own
        # copy) and undone when it is kept: no copy of the plan per trial.
        target = current.actions[index]
        deps = target.state_dependencies
        target.state_dependencies = [k for k in deps if k != key]
        kept: str | None = None
        known = shortcut.verdict(index, key) if shortcut is not None else None
        if known is not None:
            kept = None if known else _CHANGES_FINDINGS
        else:
            after, ctx, passes = _verify(current, state, sem)
            new_findings, new_conflicts = _signature(after)
            if new_findings != findings:
                kept = _CHANGES_FINDINGS
            elif not new_conflicts <= conflicts:
                kept = "removing it creates a write conflict"
            elif not json_equal(after.simulated_state, base.simulated_state):
                kept = "removing it changes verify's end state"
            elif shortcut is not None:  # the order may have changed: start afresh
                shortcut = _Shortcut.make(ctx, base, passes)
        if kept is None:
            reason = f"{why}; findings, conflicts and end state unchanged"
            result.removed.append(Change(target.id, index, key, reason))
            continue
        target.state_dependencies = deps
        result.kept.append(Change(target.id, index, key, kept))
    result.proposal = current
    result.depth_after = len(sem.order(current).execution_levels())
    return result


def _remove_all(
    current: ActionProposal, candidates: list[tuple[int, str, str]], sem: Semantics
) -> OptimizeResult:
    """Every candidate removed (the runtime's rule: nothing is checked first)."""
    result = OptimizeResult(current, depth_before=len(sem.order(current).execution_levels()))
    for index, key, why in candidates:
        action = current.actions[index]
        action.state_dependencies = [k for k in action.state_dependencies if k != key]
        result.removed.append(Change(action.id, index, key, why))
    result.depth_after = len(sem.order(current).execution_levels())
    return result


class _Shortcut:
    """Answers a trial removal without a verify when it leaves the DAG's order as it was.

    Removing ``key`` from action A's ``state_dependencies`` drops the edges into A from
    the earlier writers of ``key``. When each of them still reaches A through A's other
    predecessors, no path appears or goes and no level moves (a writer that reaches A
    by a longer path never set A's level). Then the walk, its end state and the
    conflicts stay as they were, and so do the findings of the :data:`_ORDER_ONLY`
    passes, but for A's own check of ``key``: if ``key`` was absent when A's level
    began, that ``missing-dependency`` goes, and the findings, a set of
    ``(action_id, code, severity)``, change exactly when it was A's only missing key.
    A removal this cannot settle (another order, a pass it does not know, too many
    writers to ask about) goes to ``verify``.
    """

    __slots__ = ("dag", "missing")

    #: Writers of the key, or other predecessors of the action, beyond which the
    #: shortcut does not ask and leaves the trial to ``verify``.
    LIMIT = 32

    def __init__(self, dag: Dag, missing: dict[int, set[str]]) -> None:
        self.dag = dag
        self.missing = missing

    @classmethod
    def make(cls, ctx: Context, result: VerificationResult, passes: list[Pass]) -> _Shortcut | None:
        """From the DAG and the walk of the run of ``passes`` that gave ``result``."""
        names = {c.name for c in result.evidence.checks if c.ran}
        ran = [p for p in passes if p.name in names]
        if not all(Preserves.ORDER_KEEPING_DEPENDENCY_EDIT in p.preserves for p in ran):
            return None
        if ctx.dag.unlevelled:
            return None
        missing = {
            t.index: {c.key for c in t.causes if c.kind == "missing-key" and c.key is not None}
            for t in ctx.walk.traces
            if t is not None
        }
        return cls(ctx.dag, missing)

    def _earlier(self, key: str, index: int) -> list[int] | None:
        writers = self.dag.writers.get(key, [])
        count = bisect_left(writers, index)
        return writers[:count] if count <= self.LIMIT else None

    def verdict(self, index: int, key: str) -> bool | None:
        """Whether removing ``key`` (already gone from the action's list) keeps
        everything verify sees; None when only ``verify`` can tell."""
        dag = self.dag
        gone = self._earlier(key, index)
        if gone is None:
            return None
        remaining = set(dag.waits_for(index))
        for other in dag.actions[index].depended_keys():
            writers = self._earlier(other, index)
            if writers is None:
                return None
            remaining.update(writers)
        lost = [w for w in gone if w not in remaining]
        if len(lost) * len(remaining) > self.LIMIT * self.LIMIT:
            return None
        reached = dag.reachable((w, q) for w in lost for q in remaining)
        if any(all((w, q) not in reached for q in remaining) for w in lost):
            return None  # a path goes: the order changes
        missing = self.missing.get(index, set())
        if key in missing:
            if missing == {key}:
                return False  # its only missing-dependency would go
            missing.discard(key)
        return True


def _verify(
    proposal: ActionProposal, state: dict[str, Any], sem: Semantics
) -> tuple[VerificationResult, Context, list[Pass]]:
    """``verify(proposal, initial_state=state)`` under ``sem``, keeping the run's DAG,
    walk and passes."""
    from ..passes.registry import resolve_passes

    ctx = Context(proposal, initial_state=state, semantics=sem)
    passes = resolve_passes(None, ctx)
    return assess(ctx, passes), ctx, passes


def proves_guarantee(
    original: ProposalLike, optimized: ProposalLike, *, profile: ProfileLike = None
) -> bool | None:
    """Decide with z3: in every initial state where ``original`` runs with no blocked
    action, both proposals reach the same ``simulate`` end state under the profile's
    semantics (``car`` by default). None if unknown."""
    from ..semantics import semantics_of
    from ..semantics.symbolic import Encoder, Unmodelled

    a, b = load(original), load(optimized)
    try:
        encoder = Encoder([a, b], semantics_of(profile))
        run_a, run_b = encoder.run(a), encoder.run(b)
    except Unmodelled:
        return None
    z3 = encoder.z3
    answer = encoder.questions().ask(
        *[z3.Not(blocked) for blocked in run_a.blocked],
        z3.Not(encoder.same_final_state(run_a, run_b)),
    )
    return True if answer.verdict == z3.unsat else False if answer.verdict == z3.sat else None
