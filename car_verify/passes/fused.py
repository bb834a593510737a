"""The default passes as one loop over the flat plan: the fused kernel.

Its plain twin is :func:`car_verify.api.assess` with the profile's default passes
(:func:`car_verify.passes.registry.default_passes`: ``structure``, ``operators``,
``references``, ``strips``, ``conflicts``, ``loops``, ``budget``, ``tools``,
``compensation``, and under ``car`` the ``car`` pass that stands for them in the
evidence) over the model :func:`car_verify.ir.model.load` makes of the same
document. The twin is what a reader learns the checks from; this module computes
the same answer from the per-position arrays of :mod:`car_verify.ir.flat`, each
check a loop over the arrays, the findings tuples. ``tests/test_fused.py`` holds
the two equal, finding by finding and pointer by pointer, with the same result
object (levels, conflicts, end state, evidence), under both profiles, by a
Hypothesis property on generated plans of every kind.

What it computes at once is what the verdict needs: the order, the walk, the
findings that are errors or warnings (their messages made as the plain passes
make them), the conflicts. What never changes the verdict is made when asked:
the ``info`` notes (CAR's ``extension-ignored``, ``assertion-not-evaluated`` and
``car-spec-deviation``, the
notes ``structure`` gives under ``car``), the :class:`~car_verify.base.findings.Issue`
objects, the evidence and the result's dictionary.

It runs only where it models the run (:func:`runnable`): the default passes of a
profile, all of them built in, without tools, policies, labels or an intent
(their passes read the model). Anything else is the plain runner's, and so is a
document the flat plan does not model (:func:`car_verify.ir.flat.flat_plan`). The
evidence says which ran (``Evidence.runner``).

Each profile's answers are read from its :class:`~car_verify.semantics.base.Semantics`
object: its order (:meth:`~car_verify.semantics.base.Semantics.flat_order`), its
walk (sequential or level by level), its values, its effects, its placements and
words, each code's severity. Nothing here branches on a profile's name.
"""

from __future__ import annotations

import json
import weakref
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Final

from ..base.codes import lookup
from ..base.errors import json_pointer
from ..base.findings import Issue, Severity
from ..base.values import (
    ABSENT,
    KNOWN_OPERATORS,
    format_predicate,
    format_value,
    listed,
    plural,
)
from ..ir.flat import FlatPlan
from ..ir.model import _find_output_refs
from ..semantics.dag import forward_reachable
from . import (
    _REASONS,
    CheckRecord,
    Pass,
    Requirement,
    Said,
    gathered,
    identical_groups,
    key_pointer_in,
    named_actions,
)
from .car import ADDED_CODES, CHECK_OF_CODE, CarEvidence, car_evidence, car_evidence_parts

if TYPE_CHECKING:
    from ..semantics.base import FlatOrder, Semantics

__all__ = ["MODELLED", "Fused", "car_parts", "evidence_parts", "fused_verify", "runnable"]

#: A finding, as the kernel keeps it: its sort key (the action's position, -1 for
#: the proposal), its code, its position (None: the proposal), where inside the
#: action (a path), and its message: the text, or a tuple of a function and its
#: arguments that make it when it is asked for (one tuple, and paths shared
#: between findings: at 10,000 actions a finding is one object the collector
#: tracks, not four).
Found = tuple[int, str, int | None, tuple[Any, ...], Any]

_ERROR, _WARNING, _INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
_NO_WHERE: Final[tuple[Any, ...]] = ()

#: The passes the kernel computes (by name): a default selection with any other
#: pass in it is the plain runner's.
MODELLED: Final = frozenset(
    {
        "structure",
        "operators",
        "references",
        "strips",
        "conflicts",
        "loops",
        "budget",
        "tools",
        "compensation",
        "car",
    }
)


def runnable(passes: tuple[Pass, ...]) -> bool:
    """Whether the kernel computes what ``passes`` report: a profile's default
    selection for a run without tools, policies, labels or an intent, of built-in
    passes only (:func:`~car_verify.passes.registry.default_selection`), all of them
    passes it models."""
    return _names(passes) <= MODELLED


def _names(passes: tuple[Pass, ...]) -> frozenset[str]:
    known = _NAMES.get(passes)
    if known is None:
        known = _NAMES[passes] = frozenset(p.name for p in passes)
    return known


#: The names of the passes of each selection (the registry keeps each default one).
_NAMES: dict[tuple[Pass, ...], frozenset[str]] = {}


class Fused:
    """What the kernel found for one plan: the verdict first, the rest when asked.

    ``found`` holds the findings of the codes the profile makes errors, and the
    walk's (``errors``: how many of them are errors, which is the verdict);
    :meth:`rest` makes the others (warnings and notes), :meth:`issues` the
    :class:`Issue` objects of all of them in the plain runner's order, :meth:`said`
    what each pass says for the evidence.
    """

    __slots__ = (
        "__weakref__",
        "_conflicts",
        "_groups",
        "_issues",
        "_late",
        "_notes",
        "_warned",
        "asked",
        "complete",
        "effects",
        "errors",
        "found",
        "levels",
        "max_actions",
        "me",
        "names",
        "order",
        "passes",
        "phase",
        "plan",
        "repeat_threshold",
        "semantics",
        "setup",
        "severities",
        "state",
        "words",
    )

    effects: list[Mapping[str, Any]]
    state: dict[str, Any]

    def __init__(
        self,
        plan: FlatPlan,
        semantics: Semantics,
        passes: tuple[Pass, ...],
        max_actions: int | None,
        repeat_threshold: int,
        order: FlatOrder,
    ) -> None:
        self.plan = plan
        self.semantics = semantics
        self.passes = passes
        #: The run as its findings' lazy messages hold it: a weak reference, so that a
        #: run and its findings are no reference cycle (freed when the caller drops
        #: them, not left to the cyclic collector).
        self.me = weakref.proxy(self)
        setup = _SETUPS.get((semantics, passes))
        if setup is None:
            setup = _SETUPS[(semantics, passes)] = _setup(semantics, passes)
        #: The selection's pass names, the profile's severities, and the codes of each
        #: phase: the profile's errors and the walk's, its warnings, its notes (and the
        #: first two together, for a run whose warnings will all be asked for).
        self.setup = setup
        self.names, self.severities, self.phase = setup[:3]
        self.max_actions = max_actions
        self.repeat_threshold = repeat_threshold
        #: Every finding but the notes will be asked for (the drop-in's answer).
        self.complete = False
        self.order = order
        self.levels = order.levels
        self.found: list[Found] = []
        self.errors = 0
        self.words = semantics.words_mode()
        self._warned: list[Found] | None = None
        self._notes: list[Found] | None = None
        self._issues: list[Issue] | None = None
        self._conflicts: list[tuple[int, int, str]] | None = None
        self._groups: tuple[int, list[list[int]]] | None = None
        #: The walk's false preconditions whose words name the writers of their key.
        self.asked: list[tuple[int, str]] = []
        self._late: dict[tuple[int, str], tuple[int, list[int]]] | None = None

    # --- findings ---------------------------------------------------------------------

    def severity(self, code: str) -> Severity | None:
        """The severity the profile gives ``code`` (None: not reported)."""
        known = self.severities
        if code in known:
            return known[code]
        severity = known[code] = self.semantics.severity_of(code)
        return severity

    @property
    def conflicts(self) -> list[tuple[int, int, str]]:
        """The write conflicts under the profile (made on first use)."""
        if self._conflicts is None:
            self._conflicts = self.semantics.flat_conflicts(self.plan, self.order)
        return self._conflicts

    def late(self) -> dict[tuple[int, str], tuple[int, list[int]]]:
        """For each false precondition the walk noted (``asked``), how many writers of
        its key are not ordered before its action, and the first of them (one
        question to the DAG for all of them)."""
        if self._late is None:
            dag = self.order.dag
            assert dag is not None
            self._late = dag.writers_not_before(self.asked)
        return self._late

    def warned(self) -> list[Found]:
        """The findings of the codes the profile makes warnings (made on the first call)."""
        if self._warned is None:
            self._warned = _phase(self, self.setup[3])
        return self._warned

    def notes(self) -> list[Found]:
        """The ``info`` findings (made on the first call)."""
        if self._notes is None:
            self._notes = _phase(self, self.setup[4])
        return self._notes

    def rest(self) -> list[Found]:
        """The findings of the codes that are not errors."""
        return self.warned() + self.notes()

    def issues(self) -> list[Issue]:
        """Every finding as an :class:`Issue`, sorted as the plain runner sorts them."""
        if self._issues is None:
            every = self.sorted()
            with self.semantics.words_in(self.words):
                self._issues = [self.issue(f) for f in every]
        return self._issues

    def sorted(self, *, notes: bool = True) -> list[Found]:
        """The findings in the runner's order: by position (the proposal first), then
        code, stable in the passes' order (a code is one pass's, made in one phase).
        ``notes=False``: but the ``info`` ones."""
        every = self.found + self.warned()
        if notes:
            every += self.notes()
        every.sort(key=_sort_key)
        return every

    def issue(self, found: Found) -> Issue:
        _, code, index, where, message = found
        severity = self._severity_at(code, index)
        assert severity is not None
        text = message if type(message) is str else _made(message)
        tier = lookup(code).tier
        pointer = json_pointer(where) if where else ""
        if index is None:
            proposal_id = self.semantics.placement.proposal_id
            return Issue(code, severity, tier, text, proposal_id, None, pointer)
        return Issue(
            code, severity, tier, text, self.plan.ids[index], index, f"/actions/{index}{pointer}"
        )

    def issue_dicts(self) -> list[dict[str, Any]]:
        """``[i.to_dict() for i in issues()]`` without the Issues."""
        return [
            {"action_id": at, "severity": severity, "message": message, "tier": tier, "code": code}
            for at, severity, message, tier, code in self.issue_fields()
        ]

    def issue_fields(self, *, added: bool = True) -> list[tuple[str | None, str, str, str, str]]:
        """Each finding's wire fields in the runner's order: action id, severity, message,
        tier, code. ``added=False``: but what car-verify adds beside the runtime's
        verdict (the ``info`` notes and :data:`~car_verify.passes.car.ADDED_CODES`), as
        the runtime's answer leaves them out."""
        every = self.sorted(notes=added)
        if not added:
            every = [f for f in every if f[1] not in ADDED_CODES]
        ids = self.plan.ids
        proposal_id = self.semantics.placement.proposal_id
        table = self.severities
        optional = self.semantics.skip_is_optional and self.plan.long
        out = []
        with self.semantics.words_in(self.words):
            for _, code, index, _, message in every:
                severity = self._severity_at(code, index) if optional else table[code]
                assert severity is not None
                out.append(
                    (
                        proposal_id if index is None else ids[index],
                        severity._value_,
                        message if type(message) is str else message[0](*message[1:]),
                        _tier_value(code),
                        code,
                    )
                )
        return out

    def _severity_at(self, code: str, index: int | None) -> Severity | None:
        sem = self.semantics
        if (
            sem.skip_is_optional
            and index is not None
            and self.plan.field(index, "failure_behavior") == "skip"
        ):
            return sem.severity_of(code, optional=True)
        return self.severity(code)

    # --- evidence -----------------------------------------------------------------------

    def said(self) -> list[Said]:
        """What the passes say for the evidence, as :func:`run_and_say` gives it: a
        record per pass (``ran: false`` and why, for a pass whose input is missing),
        and in the place of the passes a summing pass stands for (CAR's), its summary."""
        layout = _layout(self.passes)
        owner, summing, members = layout
        every = self.found + self.warned()
        counts: dict[str, int] = {}
        alone = [p for p in self.passes if p.name not in members]
        if alone:
            # A note counts in its pass's own record (none counts in CAR's summary).
            if any(set(p.codes) & self.setup[4] for p in alone):
                every += self.notes()
            for _, code, _, _, _ in every:
                name = owner[code]
                counts[name] = counts.get(name, 0) + 1
        summary = None
        if summing is not None and not (summing.requires and _why_skipped(summing, self)):
            summary = _car_summary(self, every, members)
        said: list[Said] = []
        for p in self.passes:
            if summary is not None and p.name in members:
                if summary is not _SAID:
                    said.append(summary)
                    summary = _SAID  # said once, in the place of the first of them
                continue
            reason = _why_skipped(p, self) if p.requires else None
            if reason is not None:
                record = CheckRecord(p.name, False, p.verifies, p.cannot_verify, 0, p.tier, reason)
                untested = f"{p.name}: {p.verifies} (not checked: {reason})"
                said.append(Said([record], untested_regions=(untested,)))
                continue
            record = CheckRecord(
                p.name, True, p.verifies, p.cannot_verify, counts.get(p.name, 0), p.tier
            )
            said.append(Said([record], p.assumes, (), p.residual_risks))
        return said


_SAID: Any = Said([])

#: Per selection of passes: which pass makes each code, the pass that stands for
#: others in the evidence (CAR's), and the names of those it stands for with its own.
_LAYOUTS: dict[tuple[Pass, ...], tuple[dict[str, str], Pass | None, frozenset[str]]] = {}


def _layout(passes: tuple[Pass, ...]) -> tuple[dict[str, str], Pass | None, frozenset[str]]:
    known = _LAYOUTS.get(passes)
    if known is None:
        summing = next((p for p in passes if p.stands_for is not None), None)
        names = _names(passes)
        members = (
            frozenset()
            if summing is None or summing.stands_for is None
            else (summing.stands_for | {summing.name}) & names
        )
        known = _LAYOUTS[passes] = (_owners(passes), summing, members)
    return known


#: What a run under a semantics with a selection of passes reads of them (Fused): the
#: pass names, the severities, the codes of each phase (made at once, warnings, notes).
_Setup = tuple[
    frozenset[str],
    dict[str, Severity | None],
    frozenset[str],
    frozenset[str],
    frozenset[str],
    frozenset[str],
]
_SETUPS: dict[tuple[Semantics, tuple[Pass, ...]], _Setup] = {}


def _setup(semantics: Semantics, passes: tuple[Pass, ...]) -> _Setup:
    table = _severities(semantics)
    eager = _eager_codes(semantics, table)
    later = [c for c, severity in table.items() if severity is not None and c not in eager]
    warnings = frozenset(c for c in later if table[c] is not _INFO)
    notes = frozenset(c for c in later if table[c] is _INFO)
    return _names(passes), table, eager, warnings, notes, eager | warnings


#: Each semantics' severity of each code it was asked for (the code table's built-in
#: codes, the only ones the kernel makes, keep their severities), and the codes it
#: makes errors.
_SEVERITY_TABLES: dict[Semantics, dict[str, Severity | None]] = {}
_EAGER: dict[Semantics, frozenset[str]] = {}


def _severities(semantics: Semantics) -> dict[str, Severity | None]:
    table = _SEVERITY_TABLES.get(semantics)
    if table is None:
        table = _SEVERITY_TABLES[semantics] = {}
    return table


def _eager_codes(semantics: Semantics, table: dict[str, Severity | None]) -> frozenset[str]:
    """The codes the kernel makes at once under ``semantics``: those it makes errors
    (the verdict), and the walk's (made on the way)."""
    known = _EAGER.get(semantics)
    if known is None:
        from .registry import available_passes

        codes = {c for name in MODELLED if (p := available_passes().get(name)) for c in p.codes}
        for code in codes:
            if code not in table:
                table[code] = semantics.severity_of(code)
        errors = {c for c in codes if table[c] is _ERROR}
        known = _EAGER[semantics] = frozenset(errors | _WALK_CODES)
    return known


_WALK_CODES: Final = frozenset(
    {"unknown-operator", "precondition-unsatisfied", "missing-dependency", "assertion-fails"}
)


def _tier_value(code: str) -> str:
    known = _TIERS.get(code)
    if known is None:
        known = _TIERS[code] = lookup(code).tier._value_
    return known


#: Each built-in code's tier, as its text (every finding written out asks).
_TIERS: dict[str, str] = {}


#: A finding's place in the runner's order: its position (the proposal first), then
#: its code (``Issue.sort_key``), read at C speed.
_sort_key: Final[Callable[[Found], tuple[int, str]]] = itemgetter(0, 1)


def _made(message: tuple[Any, ...]) -> str:
    return message[0](*message[1:])  # type: ignore[no-any-return]


def _path(name: str, at: int) -> tuple[str, int]:
    """The path ``(name, at)`` inside an action, one tuple for all findings."""
    if at >= 64:
        return (name, at)
    known = _PATHS.get((name, at))
    if known is None:
        known = _PATHS[(name, at)] = (name, at)
    return known


#: The paths findings share (a field's name and a position in it; positions past
#: the first few are made for each finding).
_PATHS: dict[tuple[str, int], tuple[str, int]] = {}


def _owners(passes: Sequence[Pass]) -> dict[str, str]:
    return {code: p.name for p in reversed(passes) for code in p.codes}


def _why_skipped(p: Pass, run: Fused) -> str | None:
    have = {Requirement.MAX_ACTIONS: run.max_actions is not None}
    missing = [r for r in sorted(p.requires) if not have.get(r, False)]
    return "; ".join(_REASONS[r] for r in missing) if missing else None


def _car_summary(run: Fused, every: list[Found], records: Collection[str]) -> Said:
    return car_evidence(*_car_inputs(run, every, records))


def car_parts(run: Fused) -> CarEvidence | None:
    """CAR's evidence of ``run`` in parts (:func:`~car_verify.passes.car.car_evidence_parts`),
    where its summary is the whole evidence (every pass of the run is one it stands
    for); None otherwise."""
    _, summing, members = _layout(run.passes)
    if summing is None or members != run.names or (summing.requires and _why_skipped(summing, run)):
        return None
    return car_evidence_parts(*_car_inputs(run, run.found + run.warned(), members))


def _car_inputs(
    run: Fused, every: list[Found], records: Collection[str]
) -> tuple[
    dict[str, int],
    int,
    Collection[str],
    None,
    int | None,
    list[tuple[str | None, str, dict[str, Any]]],
    bool,
]:
    """What CAR's evidence reads of a run: its checks' counts, the warnings among
    them, the passes selected, no tool registry, the budget, the tool calls and
    whether a compensation names an action."""
    counts: dict[str, int] = {}
    warnings = 0
    check_of = CHECK_OF_CODE
    table = run.severities
    optional = run.semantics.skip_is_optional and run.plan.long
    for _, code, index, _, _ in every:
        check = check_of.get(code)
        if check is not None:
            counts[check] = counts.get(check, 0) + 1
            severity = run._severity_at(code, index) if optional else table[code]
            warnings += severity is _WARNING
    plan = run.plan
    types, tools, ids, effects = plan.types, plan.tools, plan.ids, plan.effects
    calls = [(tools[i], ids[i], effects[i]) for i in range(plan.n) if types[i] == "tool_call"]
    refs = any(
        type(c := plan.field(i, "compensation")) is dict and c.get("type") == "action_ref"
        for i in plan.long
    )
    return counts, warnings, records, None, run.max_actions, calls, refs


def evidence_parts(
    run: Fused,
) -> tuple[list[CheckRecord], list[str], list[str], list[str], float | None]:
    """The evidence's check records, assumptions, untested regions, residual risks
    and score (:func:`car_verify.api.assess`'s, from :meth:`Fused.said`)."""
    said = run.said()
    assumptions, untested, risks, score = gathered(said)
    checks = [record for one in said for record in one.checks]
    return checks, assumptions, untested, risks, score


# --- the kernel -----------------------------------------------------------------------------


def fused_verify(
    plan: FlatPlan,
    semantics: Semantics,
    passes: tuple[Pass, ...],
    initial_state: Mapping[str, Any] | None,
    max_actions: int | None,
    repeat_threshold: int,
    *,
    complete: bool = False,
) -> Fused | None:
    """The default passes' verdict on ``plan`` under ``semantics`` (None: a plan the
    kernel leaves to the plain runner, such as one whose order has a cycle).
    ``max_actions``: the budget in force (the given one, else the profile's);
    ``complete``: every finding but the notes will be asked for."""
    order = semantics.flat_order(plan)
    if order is None:
        return None
    run = Fused(plan, semantics, passes, max_actions, repeat_threshold, order)
    run.complete = complete
    if complete:  # the warnings will be asked for: found in the same pass
        run.phase = run.setup[5]
        run._warned = []
    _walk(run, initial_state or {})
    _checks(run)
    found, table = run.found, run.severities
    if semantics.skip_is_optional and plan.long:
        at = run._severity_at
        run.errors = sum(1 for f in found if at(f[1], f[2]) is _ERROR)
    else:
        run.errors = sum(1 for f in found if table[f[1]] is _ERROR)
    return run


def _checks(run: Fused) -> None:
    """The checks beside the walk, each making the codes of the current phase."""
    names, phase = run.names, run.phase
    if "structure" in names:
        _structure(run)
    if "references" in names and "unknown-dependency" in phase:
        _references(run)
    if "conflicts" in names and "write-conflict" in phase:
        _conflicts(run)
    if "loops" in names or "car" in names:
        _loops(run, "loops" in names, "car" in names)
    if "budget" in names and run.max_actions is not None:
        _budget(run)
    if "compensation" in names and run.plan.long:
        _compensation(run)
    if "car" in names:
        _ignored(run)
        _overtaken(run)
        _deviations(run)


def _phase(run: Fused, codes: frozenset[str]) -> list[Found]:
    """The findings of ``codes`` (a later phase): :func:`_checks` again, making those."""
    kept, run.found = run.found, []
    eager = run.phase
    run.phase = codes
    try:
        _checks(run)
        return run.found
    finally:
        run.found, run.phase = kept, eager


def _add(run: Fused, code: str, index: int | None, where: tuple[Any, ...], message: Any) -> None:
    """One finding, of a code of the current phase."""
    run.found.append((-1 if index is None else index, code, index, where, message))


def _walk(run: Fused, initial_state: Mapping[str, Any]) -> None:
    """The walk of verify (every action's effects land, blocked or not): the
    profile's turns (each action alone, seeing the effects of those before it, or a
    whole level at once), its checks and effects; the ``operators`` and ``strips``
    findings of each action at its turn."""
    sem, plan = run.semantics, run.plan
    state: dict[str, Any] = dict(initial_state)
    run.state = state
    holds = sem.holds
    effects_of = run.effects = sem.flat_effects(plan)
    extra_checks = sem.flat_checks
    missing_words = sem.failure_words
    keys_of = run.order.keys
    preconditions, types = plan.preconditions, plan.types
    sdeps_of = plan.state_dependencies
    found = run.found
    sequential = sem.sequential
    words = sem.has_failure_words
    absent = ABSENT
    said: dict[str, tuple[Any, ...]] = {}  # the missing keys' messages, where they are words
    for level in run.levels:
        for i in level:
            pres = preconditions[i]
            assertion = types[i] == "assertion"
            failed: list[tuple[Mapping[str, Any], tuple[Any, ...], Any]] | None = None
            if pres:
                for j, pre in enumerate(pres):
                    actual = state.get(pre["key"], absent)
                    if not holds(pre.get("operator", "eq"), actual, pre.get("value")):
                        if failed is None:
                            failed = []
                        failed.append((pre, _path("preconditions", j), actual))
            if assertion:
                for spelled, place in extra_checks(plan, i):
                    actual = state.get(spelled["key"], absent)
                    if not holds(spelled.get("operator", "eq"), actual, spelled.get("value")):
                        if failed is None:
                            failed = []
                        failed.append((spelled, place, actual))
            if failed:
                _failed(run, i, assertion, failed)
            keys = keys_of[i]
            if keys:
                seen: dict[str, int] | None = None
                for key in keys:
                    if key in state:
                        continue
                    sdeps = sdeps_of[i]
                    start = 0 if seen is None else seen.get(key, 0)
                    if key in sdeps[start:]:  # the common case: its own entry
                        at = sdeps.index(key, start)
                        where: tuple[Any, ...] = _path("state_dependencies", at)
                        if seen is None:
                            seen = {}
                        seen[key] = at + 1
                    else:
                        where = key_pointer_in(sdeps, plan.parameters[i], key, start)
                    if words:  # one message for every finding of the key
                        message = said.get(key)
                        if message is None:
                            message = said[key] = (missing_words, None, key, None)
                    else:
                        message = _missing(run, i, key)
                    found.append((i, "missing-dependency", i, where, message))
            if sequential and effects_of[i]:
                state.update(effects_of[i])
        if not sequential:  # the level's turn is over: its effects land, in proposal order
            for i in level:
                if effects_of[i]:
                    state.update(effects_of[i])


def _failed(
    run: Fused,
    i: int,
    assertion: bool,
    failed: list[tuple[Mapping[str, Any], tuple[Any, ...], Any]],
) -> None:
    """The findings of action ``i``'s false checks (``failed``: each precondition's
    object, where it is, the key's value at the turn): ``operators``' unknown
    operators, ``strips``' false preconditions and assertions, in the plain passes'
    words (made when asked)."""
    sem = run.semantics
    found = run.found
    words = sem.flat_failure_words
    for pre, where, actual in failed:
        operator = pre.get("operator", "eq")
        if operator not in KNOWN_OPERATORS:  # false whatever the state: never held
            key = pre["key"]
            said = (_unknown_operator, words, key, operator, pre.get("value"), actual)
            found.append((i, "unknown-operator", i, (*where, "operator"), said))
    if assertion and not sem.placement.each_false_part:
        parts = tuple((p["key"], p.get("operator", "eq"), p.get("value"), a) for p, _, a in failed)
        found.append((i, "assertion-fails", i, failed[0][1], (_assertion_false, parts)))
        return
    code = "assertion-fails" if assertion else "precondition-unsatisfied"
    for pre, where, actual in failed:
        operator = pre.get("operator", "eq")
        if operator not in KNOWN_OPERATORS:
            continue  # the operators pass's
        key, expected = pre["key"], pre.get("value")
        if sem.has_failure_words:
            message: Any = (words, key, operator, expected, actual)
        else:
            message = _explained(run, i, key, operator, expected, actual, assertion)
        found.append((i, code, i, where, message))


def _unknown_operator(
    words: Callable[[str, str, Any, Any], str | None],
    key: str,
    operator: str,
    expected: Any,
    actual: Any,
) -> str:
    return words(key, operator, expected, actual) or (
        f"precondition on {key!r} uses unknown operator {operator!r}"
    )


def _assertion_false(parts: tuple[tuple[str, str, Any, Any], ...]) -> str:
    shown = "; ".join(
        f"{format_predicate(key, operator, value)} ({key} is {format_value(actual)})"
        for key, operator, value, actual in parts
    )
    return f"assertion is false in the walk: {shown}"


def _missing(run: Fused, i: int, key: str) -> tuple[Any, ...]:
    """``strips``' words for a depended-on key absent at action ``i``'s turn, where the
    profile has none of its own: why it is absent, from the writers of the key (made
    when asked)."""
    return _missing_why, run.me, i, key


def _missing_why(run: Fused, i: int, key: str) -> str:
    order = run.order
    ids, writers = run.plan.ids, order.writers.get(key, [])
    earlier = bisect_left(writers, i)  # writers[:earlier] come before this action
    later = earlier + _is_writer(writers, i)  # and writers[later:] after it
    if earlier:
        effects = run.effects
        if not any(key in effects[w] for w in writers[:earlier]):
            verb = "names" if earlier == 1 else "name"
            why = (
                f"{named_actions(ids, writers[:5], earlier)} {verb} it in write_set but "
                "no declared effect sets it"
            )
        else:
            why = "it is absent when this action's level begins"
    elif later < len(writers):
        why = (
            "it is absent from the initial state and written only by later actions: "
            f"{named_actions(ids, writers[later : later + 5], len(writers) - later)}"
        )
    else:
        why = "it is absent from the initial state and written by no earlier action"
    return f"depends on state key {key!r}: {why}"


def _is_writer(writers: list[int], i: int) -> bool:
    at = bisect_left(writers, i)
    return at < len(writers) and writers[at] == i


def _explained(
    run: Fused, i: int, key: str, operator: str, expected: Any, actual: Any, assertion: bool
) -> tuple[Any, ...]:
    """``strips``' words for a false precondition where the profile has none of its
    own: which writers of its key are not ordered before the action (asked of the
    DAG once for all of them, when the first is made)."""
    run.asked.append((i, key))
    return _precondition_why, run.me, i, key, operator, expected, actual


def _precondition_why(
    run: Fused, i: int, key: str, operator: str, expected: Any, actual: Any
) -> str:
    order = run.order
    ids, writers = run.plan.ids, order.writers.get(key, [])
    head = f"precondition {format_predicate(key, operator, expected)} is false"
    shown = format_value(actual)
    if not writers:
        why = f"{key!r} is {shown} and no action writes it"
    else:
        unordered, first = run.late()[(i, key)]
        if unordered:
            why = (
                f"{key!r} is {shown} here; written by {named_actions(ids, first, unordered)}, "
                "not ordered before this action"
            )
        else:
            others = len(writers) - _is_writer(writers, i)
            why = (
                f"{key!r} is {shown} here, after the writes of "
                f"{named_actions(ids, [w for w in writers[:6] if w != i], others)}"
                if others
                else f"{key!r} is {shown}; only this action writes it"
            )
    return f"{head}: {why}"


def _structure(run: Fused) -> None:
    """``structure``'s findings on ids and shapes (the others the flat plan leaves to
    the plain runner: a document with an unknown field, a repeated key or an
    unknown action type is not flat)."""
    plan, sem, phase = run.plan, run.semantics, run.phase
    if not plan.n:
        if "empty-proposal" in phase:
            _add(run, "empty-proposal", None, _NO_WHERE, "the proposal has no actions")
        return
    ids = plan.ids
    if "duplicate-id" in phase and len(set(ids)) < len(ids):
        first: dict[str, int] = {}
        for i, action_id in enumerate(ids):
            earlier = first.setdefault(action_id, i)
            if earlier != i:
                _add(
                    run,
                    "duplicate-id",
                    i,
                    ("id",),
                    f"action id {action_id!r} is already used by action #{earlier}",
                )
    if plan.toolless and "missing-tool-name" in phase:
        message = sem.say("missing-tool-name") or "tool_call action has no `tool`"
        for i in plan.toolless:
            _add(run, "missing-tool-name", i, ("type",), message)
    if plan.keyless and "state-write-without-key" in phase:
        for i in plan.keyless:
            present = "key" in plan.parameters[i]
            _add(
                run,
                "state-write-without-key",
                i,
                ("parameters", "key") if present else ("parameters",),
                "state_write's parameters.key is not a string"
                if present
                else "state_write has no parameters.key",
            )


def _references(run: Fused) -> None:
    """``references``: each ``dependencies`` entry and output reference that names no
    action (a cycle is the plain runner's: its order is not flat)."""
    dag = run.order.dag
    if dag is None:
        return  # an order without dependencies: nothing to name
    for ref in dag.unknown_refs:
        what = "depends on" if ref.kind == "dependency" else "refers to the output of"
        _add(
            run,
            "unknown-dependency",
            ref.index,
            ref.pointer,
            f"{what} {ref.target!r}, which is not an action of this proposal",
        )


def _conflicts(run: Fused) -> None:
    """``conflicts``: one finding per write conflict, worded and placed by the profile."""
    ids = run.plan.ids
    sem = run.semantics
    on_earlier = sem.placement.conflict_on_earlier
    template = sem.words.get("write-conflict")
    found = run.found
    for a, b, key in run.conflicts:
        here, other = (a, b) if on_earlier else (b, a)
        if template is not None:
            message = template.format(key=key, other=ids[other])
        else:
            message = (
                f"{ids[a]!r} and {ids[b]!r} both write {key!r} and neither is ordered "
                "before the other"
            )
        found.append((here, "write-conflict", here, _NO_WHERE, message))


def _loops(run: Fused, loops: bool, car: bool) -> None:
    """``loops``'s repeated calls, and the ``car`` pass's identical calls below the
    threshold (``duplicate-call``, where the profile reports it)."""
    phase = run.phase
    repeats = loops and "repeated-call" in phase
    duplicates = car and "duplicate-call" in phase
    if not (repeats or duplicates):
        return
    threshold = run.repeat_threshold
    # The groups below the threshold, when they are a later phase's (CAR's
    # duplicate calls) and that phase is sure to be asked for, are found at once.
    at_least = min(2, threshold) if duplicates or (car and run.complete) else threshold
    groups = _identical_calls(run, at_least)
    if not groups:
        return
    plan, sem = run.plan, run.semantics
    tools, ids = plan.tools, plan.ids
    on_proposal = sem.placement.repeats_on_proposal
    for group in groups:
        if len(group) < threshold:
            if duplicates:
                tool = tools[group[0]]
                message = f"duplicate tool call: {tool} ({len(group)}x)"
                _add(run, "duplicate-call", None, _NO_WHERE, message)
            continue
        if not repeats:
            continue
        shown = group if on_proposal else group[:threshold]
        names = ", ".join(ids[m] for m in shown[:10])
        if len(shown) > 10:
            names += f" and {len(shown) - 10:,} more"
        tool = tools[group[0]]
        message = sem.say("repeated-call", tool=tool, count=len(shown)) or (
            f"tool {tool!r} is called {len(shown)} times with identical "
            f"parameters ({names}): a possible runaway loop"
        )
        index = None if on_proposal else shown[-1]
        _add(run, "repeated-call", index, _NO_WHERE, message)


def _identical_calls(run: Fused, at_least: int) -> list[list[int]]:
    """``Context.identical_calls`` of the flat plan, the groups of ``at_least`` calls
    or more (a tool's calls are compared only when the tool is called that often;
    the groups of the first phase are kept for the second)."""
    known = run._groups
    if known is not None and known[0] <= at_least:
        return [group for group in known[1] if len(group) >= at_least]
    groups = _grouped(run, at_least)
    run._groups = (at_least, groups)
    return groups


def _grouped(run: Fused, at_least: int) -> list[list[int]]:
    plan = run.plan
    tools = plan.tools
    if len(tools) < at_least:
        return []
    # Each tool's actions counted at C speed (a tool of an action of another type
    # counts too: a count only leaves out the tools too rare to make a group).
    counts: dict[str | None, int]
    if len(tools) > 64:
        counts = Counter(tools)
    else:
        counts = {}
        for t in tools:
            counts[t] = counts.get(t, 0) + 1
    often = {t for t, c in counts.items() if c >= at_least and t is not None}
    if not often:
        return []
    types, parameters = plan.types, plan.parameters
    calls = (  # one call at a time: no list of them
        (i, tool, parameters[i])
        for i, tool in enumerate(tools)
        if tool in often and types[i] == "tool_call"
    )
    return identical_groups(calls, run.semantics, at_least)


def _budget(run: Fused) -> None:
    if "too-many-actions" not in run.phase:
        return
    limit, count = run.max_actions, run.plan.n
    assert limit is not None
    if count > limit:
        sem = run.semantics
        default = " (the runtime's default)" if sem.default_max_actions == limit else ""
        message = sem.say("too-many-actions", count=count, limit=limit) or (
            f"the proposal has {plural(count, 'action')}; max_actions is {limit}{default}"
        )
        index = 0 if sem.placement.over_budget_on_first else None
        _add(run, "too-many-actions", index, _NO_WHERE, message)


def _compensation(run: Fused) -> None:
    """``compensation``: of the actions with the fields it reads (the flat plan's
    ``long`` ones), those compensable without a compensation, and those naming an
    action that is not in the proposal (a tool is checked against a registry, which
    a run of the kernel has not)."""
    plan, sem, phase = run.plan, run.semantics, run.phase
    missing = "missing-compensation" in phase
    unknown = "unknown-compensation-target" in phase
    if not (missing or unknown):
        return
    ids = set(plan.ids)
    for i in plan.long:
        raw = plan.raw[i]
        comp = raw.get("compensation")
        if missing and raw.get("reversibility") == "compensable" and comp is None:
            message = (
                sem.say("missing-compensation")
                or "action is compensable but declares no compensation"
            )
            _add(run, "missing-compensation", i, ("reversibility",), message)
        if comp is None or not unknown:
            continue
        if comp.get("type") == "action_ref" and comp["action_id"] not in ids:
            target = comp["action_id"]
            message = sem.say("unknown-compensation-target:action", target=target) or (
                f"compensation refers to action {target!r}, which is not in this proposal"
            )
            _add(run, "unknown-compensation-target", i, ("compensation", "action_id"), message)


# --- CAR's notes beside its verdict ----------------------------------------------------------


def _ignored(run: Fused) -> None:
    """What CAR ignores that car-verify reads: ``dependencies`` and output references
    (``extension-ignored``), an assertion's ``parameters`` (``assertion-not-evaluated``):
    the ``car`` pass's ``_ignored`` over the flat plan."""
    phase = run.phase
    ordering = "extension-ignored" in phase
    asserting = "assertion-not-evaluated" in phase
    if not ordering and not asserting:
        return
    plan, order = run.plan, run.order
    levels, level_of, ids = order.levels, order.level, plan.ids
    deps, params, types = plan.dependencies, plan.parameters, plan.types
    for index in range(plan.n):
        p = params[index]
        if ordering:
            ignored = []
            if deps[index]:
                ignored.append("`dependencies`")
            if p:
                refs: list[Any] = []
                _find_output_refs(p, ("parameters",), refs)
                if refs:
                    ignored.append("`$id.output` references")
            if ignored:
                level = level_of[index]
                members = levels[level]
                beside = [ids[i] for i in members[:6] if i != index]  # a few, not all
                named = listed(beside, total=len(members) - 1)
                where = f"level {level}" + (f", beside {named}" if beside else "")
                _add(
                    run,
                    "extension-ignored",
                    index,
                    _NO_WHERE,
                    f"CAR ignores {' and '.join(ignored)}: it orders {ids[index]} only by "
                    f"state_dependencies, so it runs in {where}",
                )
        if asserting and types[index] == "assertion" and type(p.get("key")) is str:
            operator = p.get("operator", "eq")
            if type(operator) is not str:
                operator = json.dumps(operator)
            shown = format_predicate(p["key"], operator, p.get("value"))
            _add(
                run,
                "assertion-not-evaluated",
                index,
                ("parameters",),
                f"CAR does not evaluate an assertion's `parameters` predicate "
                f"({shown}): it checks {ids[index]}'s preconditions only, so this "
                "predicate gates nothing; write it as a precondition",
            )


def _overtaken(run: Fused) -> None:
    """Each ``dependencies`` entry whose action the profile's order runs in the same
    level as, or a level before, the action it names (``dependency-overtaken``),
    but where the action, later in the level, checks a key that one writes: the
    ``car`` pass's ``_overtaken`` over the flat plan."""
    if "dependency-overtaken" not in run.phase:
        return
    plan = run.plan
    deps = plan.dependencies
    if not any(deps):
        return
    level_of, ids, types = run.order.level, plan.ids, plan.types
    position = {name: index for index, name in enumerate(ids)}
    for index in range(plan.n):
        names = deps[index]
        if not names:
            continue
        mine = level_of[index]
        for n, name in enumerate(names):
            other = position.get(name)
            if other is None or other == index:
                continue
            theirs = level_of[other]
            if mine > theirs or (
                mine == theirs and other < index and _gated(run, index, types[index], other)
            ):
                continue
            when = (
                f"in the same level as {name} (level {mine})"
                if mine == theirs
                else f"before {name} (levels {mine} and {theirs})"
            )
            _add(
                run,
                "dependency-overtaken",
                index,
                ("dependencies", n),
                f"{ids[index]} runs {when}, which it depends on: CAR ignores `dependencies` "
                "and orders by state_dependencies only",
            )


def _gated(run: Fused, index: int, kind: str, other: int) -> bool:
    """Whether action ``index`` checks a key that action ``other`` (earlier in its
    level) writes (the ``car`` pass's ``_gated``)."""
    written = run.effects[other]
    if not written:
        return False
    checks = [pre["key"] for pre in run.plan.preconditions[index]]
    if kind == "assertion":
        checks += [spelled["key"] for spelled, _ in run.semantics.flat_checks(run.plan, index)]
    return any(key in written for key in checks)


def _deviations(run: Fused) -> None:
    """Where CAR's answer contradicts its own spec (``car-spec-deviation``): the
    ``car`` pass's ``_deviations`` over the flat plan."""
    if "car-spec-deviation" not in run.phase:
        return
    plan, order = run.plan, run.order
    ids, level_of, preds, writers = plan.ids, order.level, order.preds, order.writers
    conflicts = run.conflicts
    ordered = forward_reachable(preds, [(a, b) for a, b, _ in conflicts]) if conflicts else ()
    by_key: dict[str, list[tuple[int, int]]] = {}
    for a, b, key in conflicts:
        if (a, b) in ordered:
            by_key.setdefault(key, []).append((a, b))
    for key, pairs in by_key.items():
        a, b = pairs[0]
        more = f" (and {len(pairs) - 1:,} more pairs)" if len(pairs) > 1 else ""
        _add(
            run,
            "car-spec-deviation",
            b,
            _NO_WHERE,
            f"CAR reports a write conflict on {key!r} between {ids[a]} and "
            f"{ids[b]}{more} although it orders them (spec: conflicts are writers "
            "'without ordering')",
        )
    asked: list[tuple[int, str, list[int]]] = []
    questions: list[tuple[int, int]] = []
    for index, keys in enumerate(plan.state_dependencies):
        if not keys:
            continue
        direct: set[int] | None = None
        mine = level_of[index]
        for key in dict.fromkeys(keys):
            all_writers = writers.get(key)
            if not all_writers or all_writers[0] >= index:
                continue
            if direct is None:
                direct = set(preds[index])
            earlier = [w for w in all_writers[: bisect_left(all_writers, index)] if w not in direct]
            if earlier:
                asked.append((index, key, earlier))
                questions += [(w, index) for w in earlier if level_of[w] < mine]
    reached = forward_reachable(preds, questions) if questions else ()
    for index, key, earlier in asked:
        late = [w for w in earlier if (w, index) not in reached]
        if not late:
            continue
        names = ", ".join(ids[w] for w in late[:3])
        if len(late) > 3:
            names += f" and {len(late) - 3:,} more"
        shown = ", ".join(str(level_of[w]) for w in late[:3])
        _add(
            run,
            "car-spec-deviation",
            index,
            _NO_WHERE,
            f"CAR does not order {ids[index]} after {names}, "
            f"{'an earlier writer' if len(late) == 1 else 'earlier writers'} of {key!r} "
            f"it depends on (levels {shown} and {level_of[index]}): the two can race "
            "at run time (spec: 'actions in the same layer are independent')",
        )
    count, limit = plan.n, run.max_actions
    if limit is not None and count > limit:
        _add(
            run,
            "car-spec-deviation",
            None,
            _NO_WHERE,
            f"CAR returns valid: true for {count} actions over the limit of "
            f"{limit} (spec: such proposals 'are rejected at verification time')",
        )
