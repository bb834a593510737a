"""The one level-by-level interpreter of a proposal, for either profile.

The :class:`~car_verify.semantics.base.Semantics` it is given (``strict`` unless
told) decides what an action's turn checks, what each operator means, which
effects it applies and what a turn is (``Semantics.turns``). The actions of a turn
see the state as the turn began, and their effects land when it is over, in
proposal order:

* level-synchronous (``strict``, docs/semantics.md §4): a turn is a whole level,
  so every action of level L is checked against the state as level L began and
  the effects of level L are applied after the whole level;
* sequential (``car``, the runtime's walk): a turn is one action, so inside a
  level each action sees the effects of those before it.

In ``verify`` mode blocked actions' effects are applied anyway (one pass, no
cascades); in ``simulate`` mode they are skipped and an action that waits for a
blocked one (``Dag.waits_for``: ``strict``'s explicit and output-reference
dependencies; nothing under ``car``) is blocked too.

The order of turns is defined here once (:func:`schedule`): level by level, each
level's members in the turns its semantics makes of them (``Semantics.turns``),
with the stop rule (:func:`next_phase`): a stop takes effect at the next turn.
Every reader of the walk takes its turns from :func:`schedule`: :func:`turns`,
:meth:`Walk.action_states`, the symbolic walk and risk's compiled walk.

What an action needs at its turn is defined here once: its predicate (an
assertion's, else its preconditions: ``Semantics.checks``), the state keys it depends
on (``Dag.keys``) and the actions it waits for (``Dag.waits_for``).
:func:`blockers` judges those needs on a concrete JSON state (risk's walk asks it
too).

:func:`turns` is the interpreter over JSON values, written once as a coroutine:
it yields each turn (one action under a sequential semantics, a whole level under
a level-synchronous one) with why each member cannot run, and takes back what
each member did (:class:`Outcome`). Its drivers are the sources of outcomes:

- :func:`walk` (``verify`` and ``simulate``), with its tool calls' outcomes from
  a :data:`Dispatch`: every call succeeds (verify, simulate), or a seeded draw
  per call (risk's reference trials), or chosen calls fail (risk's critical
  calls);
- the executor, with live calls: it dispatches a turn's members at once with
  ``asyncio.gather`` and answers with what each call did and produced.

:mod:`car_verify.semantics.symbolic` reads the same :func:`checks`, keys, waits,
turns and effects over z3 terms, each made a term.
"""

from __future__ import annotations

from collections.abc import (
    Callable,
    Container,
    Generator,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal

from ..base.values import ABSENT, KNOWN_OPERATORS
from ..ir.model import Action, Precondition
from .base import Semantics, Where
from .dag import Dag

__all__ = [
    "GOING",
    "STOPPED",
    "STOPPING",
    "ActionTrace",
    "Cause",
    "Dispatch",
    "Outcome",
    "Slot",
    "Turn",
    "Walk",
    "blockers",
    "describe",
    "next_phase",
    "schedule",
    "turns",
    "walk",
]

CauseKind = Literal[
    "precondition", "unknown-operator", "missing-key", "assertion", "blocked-dependency",
    "failed-dependency", "aborted", "refused",
]  # fmt: skip

#: An outcome source: what the tool call of action ``i`` did when the walk
#: dispatched it (a tool call no cause blocks). True: it succeeded, and its effects
#: land; False: it failed, its effects do not land, and an action waiting for it is
#: blocked; a string: it was refused before it ran (it counts as blocked; the
#: string says why). Without one, every call succeeds.
Dispatch = Callable[[int], "bool | str"]

#: One turn of the walk's order (:func:`schedule`): its level, its members (in
#: proposal order), and whether it is the first, and whether the last, turn of its level.
Slot = tuple[int, Sequence[int], bool, bool]

#: A run's phase under the stop rule (:func:`next_phase`): it goes on, it stops when
#: the current turn is over, or it has stopped (every member of a later turn is
#: rejected: ``aborted``).
GOING: Final = 0
STOPPING: Final = 1
STOPPED: Final = 2


def schedule(dag: Dag, semantics: Semantics) -> Iterator[Slot]:
    """The order of turns the profile gives, the one skeleton of every walk: level
    by level, and inside a level the turns ``semantics.turns`` makes of its members
    (one per action under a sequential semantics, ``car``; the whole level under a
    level-synchronous one, ``strict``).

    The rules every reader follows with it: a turn's members see the state as the
    turn began; their effects land when it is over, in proposal order; and a stop
    takes effect at the next turn (:func:`next_phase`)."""
    turns_of = semantics.turns
    for level, members in enumerate(dag.levels):
        groups = turns_of(members)
        last = len(groups) - 1
        for g, group in enumerate(groups):
            yield level, group, g == 0, g == last


def next_phase(phase: int, stops: bool, turn_over: bool) -> int:
    """The stop rule: the run's phase once a member of a turn is done. A member that
    stops the run (``stops``) makes a going run ``STOPPING``; when its turn is over
    (``turn_over``: it was the turn's last member), a stopping run has ``STOPPED``.
    So a stop takes effect at the next turn: under ``strict`` the rest of the level
    was dispatched with the member that stopped it."""
    if stops and phase == GOING:
        phase = STOPPING
    return STOPPED if turn_over and phase == STOPPING else phase


@dataclass(frozen=True, slots=True)
class Cause:
    """Why an action is blocked.

    ``precondition`` and ``unknown-operator`` carry the precondition and its position;
    ``missing-key`` the absent key; ``assertion`` the failed parts of the predicate;
    ``blocked-dependency`` and ``failed-dependency`` the position of the action it
    waits for, blocked or failed; ``aborted`` the position of the action whose not
    succeeding stopped the run; ``refused`` the reason its dispatch was refused.
    """

    kind: CauseKind
    key: str | None = None
    precondition: Precondition | None = None
    where: tuple[str | int, ...] = ()
    actual: Any = ABSENT
    failed: tuple[tuple[Precondition, tuple[str | int, ...], Any], ...] = ()
    dependency: int | None = None
    dependency_id: str | None = None
    reason: str | None = None


@dataclass(slots=True)
class ActionTrace:
    """What the walk did with one action.

    ``supplied`` maps each precondition key and depended-on key that held to the
    action that supplied its value (``None``: the initial state); ``after`` lists
    the explicit and output-reference dependencies that ran (simulate mode only).
    """

    index: int
    action_id: str
    level: int
    blocked: bool
    causes: list[Cause]
    supplied: dict[str, str | None] = field(default_factory=dict)
    after: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "action_id": self.action_id,
            "level": self.level,
            "runs": not self.blocked,
            "blocked_by": [describe(c) for c in self.causes],
            "supplied_by": dict(self.supplied),
            "after": list(self.after),
        }


@dataclass(slots=True)
class Walk:
    """The end state and one trace per walked action (``None`` for unlevelled ones;
    in verify mode also for the actions that are not blocked)."""

    state: dict[str, Any]
    traces: list[ActionTrace | None]
    mode: Literal["verify", "simulate"]
    dag: Dag
    #: The state the walk began in (the caller's; read, never written).
    initial_state: Mapping[str, Any]
    #: The semantics it walked under.
    semantics: Semantics
    #: The actions whose dispatched call failed (simulate mode, from the outcome source).
    failed: list[int] = field(default_factory=list)

    def action_states(self) -> Iterator[tuple[int, Mapping[str, Any]]]:
        """Each walked action with the state it saw at its turn, as this walk saw it,
        replayed from the initial state (one state, updated in place: read it before
        asking for the next action)."""
        state = dict(self.initial_state)
        skip = self._skipped()
        effects_of = self.semantics.effects
        actions = self.dag.actions
        for _, turn, _, _ in schedule(self.dag, self.semantics):
            for i in turn:
                yield i, state
            for i in turn:  # the turn is over: its effects land, in proposal order
                if i not in skip:
                    state.update(effects_of(actions[i]))

    def _skipped(self) -> Container[int]:
        if self.mode == "verify":
            return ()
        return {*(t.index for t in self.traces if t is not None and t.blocked), *self.failed}


@dataclass(slots=True)
class Turn:
    """Actions that take their turn together (:func:`turns`): one action under a
    sequential semantics (``car``), a whole level under a level-synchronous one
    (``strict``), dispatched at once."""

    level: int
    members: Sequence[int]
    #: Per member, why it cannot run on ``state`` (empty: nothing blocks it).
    causes: Sequence[list[Cause]]
    #: The state the members see: the walk's own, read-only, until the driver answers.
    state: Mapping[str, Any]
    #: Whether this is the first, and whether the last, turn of its level.
    opens: bool
    closes: bool


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a member of a turn did, as its driver answers :func:`turns`.

    ``ran``: it succeeded, and its effects land (``effects``: what it produced, when
    not its declared effects); else it did not run: ``failed`` if it was dispatched
    and failed (an action waiting for it says so), ``refused`` the reason it was
    refused before it ran. ``stops``: the run stops once this turn is over."""

    ran: bool
    effects: Mapping[str, Any] | None = None
    failed: bool = False
    refused: str | None = None
    stops: bool = False


RAN = Outcome(True)
BLOCKED = Outcome(False)
BLOCKED_STOPS = Outcome(False, stops=True)
FAILED = Outcome(False, failed=True)
FAILED_STOPS = Outcome(False, failed=True, stops=True)


def blockers(
    dag: Dag,
    i: int,
    state: Mapping[str, Any],
    blocked: Callable[[int], bool] | None,
    semantics: Semantics,
) -> list[Cause]:
    """Why action ``i`` cannot run on ``state``, the state at its turn: each false
    part of its predicate, each absent key it depends on, and (when ``blocked(t)``
    says whether action ``t`` did not run) each action it waits for that did not."""
    causes: list[Cause] = []
    action = dag.actions[i]
    if action.type == "assertion":
        failed = _failed(action, state, semantics)
        if failed:
            causes.append(Cause("assertion", failed=failed))
    elif action.preconditions:
        _preconditions(action, state, causes, semantics)
    for key in dag.keys[i]:
        if key not in state:
            causes.append(Cause("missing-key", key=key))
    if blocked is not None:
        causes.extend(_waits(dag.waits_for(i), blocked, dag.ids)[0])
    return causes


def _failed(
    action: Action, state: Mapping[str, Any], semantics: Semantics
) -> tuple[tuple[Precondition, Where, Any], ...]:
    out = []
    holds = semantics.holds
    for pre, where in semantics.checks(action):
        actual = state.get(pre.key, ABSENT)
        if not holds(pre.operator, actual, pre.value):
            out.append((pre, where, actual))
    return tuple(out)


def _preconditions(
    action: Action, state: Mapping[str, Any], causes: list[Cause], semantics: Semantics
) -> None:
    holds = semantics.holds
    for j, pre in enumerate(action.preconditions):
        actual = state.get(pre.key, ABSENT)
        if not holds(pre.operator, actual, pre.value):
            known = pre.operator in KNOWN_OPERATORS
            causes.append(
                Cause(
                    "precondition" if known else "unknown-operator",
                    key=pre.key,
                    precondition=pre,
                    where=("preconditions", j),
                    actual=actual,
                )
            )


def turns(
    dag: Dag,
    initial_state: Mapping[str, Any] | None = None,
    *,
    mode: Literal["verify", "simulate"] = "simulate",
    semantics: Semantics,
) -> Generator[Turn, Sequence[Outcome], Walk]:
    """The walk as a coroutine: the one interpreter every reader over JSON values
    drives (see the module's docstring for the modes).

    In ``simulate`` mode it yields each :class:`Turn` (one action under a sequential
    semantics, a whole level under a level-synchronous one), with why each member
    cannot run on the state at its turn, and takes back one :class:`Outcome` per
    member: what the driver made of it (it ran, it was dispatched and failed, it was
    blocked or refused), the effects that landed, and whether the run stops. After a
    turn with a stopping outcome every member of every later turn carries an
    ``aborted`` cause (:func:`next_phase`). It returns the :class:`Walk`.

    In ``verify`` mode nothing is dispatched: it yields no turn (every blocked
    action's effects are applied anyway) and returns the walk at the first ``next``.
    """
    actions, ids = dag.actions, dag.ids
    state: dict[str, Any] = dict(initial_state or {})
    effects_of = semantics.effects
    traces: list[ActionTrace | None] = [None] * dag.n
    if mode != "simulate":
        for level_no, turn, _, _ in schedule(dag, semantics):
            for i in turn:
                causes = blockers(dag, i, state, None, semantics)
                if causes:  # verify needs only the blocked actions' traces
                    traces[i] = ActionTrace(i, ids[i], level_no, True, causes)
            for i in turn:  # the turn is over: its effects land, in proposal order
                state.update(effects_of(actions[i]))
        return Walk(state, traces, mode, dag, initial_state or {}, semantics)

    view = MappingProxyType(state)
    supplier: dict[str, int] = {}
    blocked = [False] * dag.n  # it did not run: blocked, refused, or its call failed
    failed: list[int] = []
    phase = GOING
    stopper: Cause | None = None  # the first member that stopped the run, as a cause
    shared: dict[str, tuple[list[Cause], list[str]]] = {}  # see Dag.waits_shared_with

    def land(i: int, change: Mapping[str, Any]) -> None:
        state.update(change)
        for key in change:
            supplier[key] = i

    for level_no, group, opens, closes in schedule(dag, semantics):
        causes_of: list[list[Cause]] = []
        afters: list[list[str]] = []
        for i in group:
            causes = blockers(dag, i, state, None, semantics)
            waited, after = _waits_of(dag, i, blocked, shared, failed)
            causes.extend(waited)
            if stopper is not None and phase == STOPPED:
                causes.append(stopper)
            causes_of.append(causes)
            afters.append(after)
        said = yield Turn(level_no, group, causes_of, view, opens, closes)
        if len(said) != len(group):
            raise ValueError(f"a turn of {len(group)} actions was answered with {len(said)}")
        landed: list[tuple[int, Mapping[str, Any]]] = []
        last = len(group) - 1
        for k, i in enumerate(group):
            outcome, causes = said[k], causes_of[k]
            if outcome.refused is not None:
                causes.append(Cause("refused", reason=outcome.refused))
            if outcome.failed:
                failed.append(i)
            blocked[i] = not outcome.ran
            if outcome.stops and phase == GOING:
                stopper = Cause("aborted", dependency=i, dependency_id=ids[i])
            phase = next_phase(phase, outcome.stops, k == last)
            supplied = _supplied(dag, i, state, supplier, causes, semantics)
            traces[i] = ActionTrace(i, ids[i], level_no, bool(causes), causes, supplied, afters[k])
            if outcome.ran:
                change = effects_of(actions[i]) if outcome.effects is None else outcome.effects
                landed.append((i, change))
        for i, change in landed:  # the turn is over: its effects land, in proposal order
            land(i, change)
    return Walk(state, traces, mode, dag, initial_state or {}, semantics, failed)


def walk(
    dag: Dag,
    initial_state: Mapping[str, Any] | None = None,
    *,
    mode: Literal["verify", "simulate"] = "verify",
    semantics: Semantics,
    dispatch: Dispatch | None = None,
    aborts: Container[int] = (),
) -> Walk:
    """Walk the levels over JSON values: :func:`turns`, driven here with the tool
    calls' outcomes from ``dispatch`` (every call succeeds without it); ``dag``: the
    proposal's DAG under ``semantics`` (``semantics.order``).

    In ``simulate`` mode an action of ``aborts`` that is blocked or fails stops the
    run: every action of a later turn is blocked (``failure_behavior`` modelled, as
    the executor does: under a level-synchronous semantics the rest of its level was
    dispatched with it)."""
    if mode != "simulate" and (dispatch is not None or aborts):
        raise ValueError("outcomes and aborts are walked in simulate mode only")
    actions = dag.actions
    run = turns(dag, initial_state, mode=mode, semantics=semantics)
    try:
        turn = next(run)
        while True:
            said: list[Outcome] = []
            for k, i in enumerate(turn.members):
                if turn.causes[k]:
                    said.append(BLOCKED_STOPS if i in aborts else BLOCKED)
                    continue
                outcome = True if dispatch is None else _outcome(dispatch, i, actions[i])
                if outcome is True:
                    said.append(RAN)
                elif outcome is False:
                    said.append(FAILED_STOPS if i in aborts else FAILED)
                else:
                    said.append(Outcome(False, refused=outcome, stops=i in aborts))
            turn = run.send(said)
    except StopIteration as end:
        result: Walk = end.value
        return result


def _outcome(dispatch: Dispatch, i: int, action: Action) -> bool | str:
    """A tool call's outcome from the source (True for any other action: it runs)."""
    return dispatch(i) if action.type == "tool_call" else True


def _waits_of(
    dag: Dag,
    i: int,
    blocked: list[bool],
    shared: dict[str, tuple[list[Cause], list[str]]],
    failed: Container[int] = (),
) -> tuple[list[Cause], list[str]]:
    """:func:`_waits` of action ``i``, once per duplicated id it shares them with."""
    name = dag.waits_shared_with(i)
    if name is None:
        return _waits(dag.waits_for(i), blocked.__getitem__, dag.ids, failed)
    found = shared.get(name)
    if found is None:
        found = shared[name] = _waits(dag.waits_for(i), blocked.__getitem__, dag.ids, failed)
    return list(found[0]), list(found[1])


def _supplied(
    dag: Dag,
    i: int,
    state: Mapping[str, Any],
    supplier: dict[str, int],
    causes: list[Cause],
    semantics: Semantics,
) -> dict[str, str | None]:
    """Each precondition key and depended-on key that held (no cause of ``causes``
    names it), with the action that supplied its value (None: the initial state)."""
    ids = dag.ids
    failed = {c.where for c in causes if c.precondition is not None}
    failed.update(where for c in causes for _, where, _ in c.failed)
    out: dict[str, str | None] = {}
    for pre, where in semantics.checks(dag.actions[i]):
        if where not in failed:
            out[pre.key] = _who(supplier, ids, pre.key, state.get(pre.key, ABSENT))
    for key in dag.keys[i]:
        if key in state:
            out[key] = _who(supplier, ids, key, state[key])
    return out


def _waits(
    needs: Sequence[int],
    blocked: Callable[[int], bool],
    ids: list[str],
    failed: Container[int] = (),
) -> tuple[list[Cause], list[str]]:
    """The causes of an action waiting for ``needs`` (each one blocked, or in
    ``failed``), and the ids of those that ran (in order, once each). Every one of
    ``needs`` is on an earlier level, so the answer holds for every action waiting
    for the same list."""
    causes: list[Cause] = []
    after: dict[str, None] = {}
    for t in needs:
        if blocked(t):
            kind: CauseKind = "failed-dependency" if t in failed else "blocked-dependency"
            causes.append(Cause(kind, dependency=t, dependency_id=ids[t]))
        else:
            after[ids[t]] = None
    return causes, list(after)


def _who(supplier: dict[str, int], ids: list[str], key: str, actual: Any) -> str | None:
    if actual is ABSENT:
        return None
    position = supplier.get(key)
    return None if position is None else ids[position]


def describe(cause: Cause) -> str:
    """A one-line, human description of a cause (used by traces and reporters)."""
    from ..base.values import format_predicate, format_value

    if cause.kind in ("precondition", "unknown-operator") and cause.precondition is not None:
        pre = cause.precondition
        head = f"precondition {format_predicate(pre.key, pre.operator, pre.value)}"
        if cause.kind == "unknown-operator":
            return f"{head}: unknown operator {pre.operator!r}"
        return f"{head} is false ({pre.key} is {format_value(cause.actual)})"
    if cause.kind == "missing-key":
        return f"state key {cause.key!r} is absent"
    if cause.kind == "assertion":
        parts = ", ".join(
            f"{format_predicate(p.key, p.operator, p.value)} ({p.key} is {format_value(actual)})"
            for p, _, actual in cause.failed
        )
        return f"assertion is false: {parts}"
    if cause.kind == "failed-dependency":
        return f"depends on {cause.dependency_id!r}, whose call failed"
    if cause.kind == "aborted":
        return f"the run stopped when {cause.dependency_id!r} did not succeed"
    if cause.kind == "refused":
        return f"its call was refused: {cause.reason}"
    return f"depends on {cause.dependency_id!r}, which is blocked"
