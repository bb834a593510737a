"""The forward walk (SEMANTICS section 4), shared by ``verify`` and ``simulate``.

Level-synchronous: every action of level L is checked against the state as it
stood when level L began; the effects of level L are applied after the whole
level, in proposal order. In ``verify`` mode blocked actions' effects are applied
anyway (one pass, no cascades); in ``simulate`` mode they are skipped and an
action whose explicit or output-reference dependency was blocked is blocked too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ._records import quick_init
from .dag import Dag
from .model import Precondition
from .values import ABSENT, KNOWN_OPERATORS, evaluate

__all__ = ["ActionTrace", "Cause", "Walk", "walk"]

_NOT_RECORDED: dict[str, str | None] = {}

CauseKind = Literal[
    "precondition", "unknown-operator", "missing-key", "assertion", "blocked-dependency"
]


@quick_init
@dataclass(frozen=True, slots=True)
class Cause:
    """Why an action is blocked.

    ``precondition`` and ``unknown-operator`` carry the precondition and its position;
    ``missing-key`` the absent key; ``assertion`` the failed parts of the predicate;
    ``blocked-dependency`` the position of the blocked action it waits for.
    """

    kind: CauseKind
    key: str | None = None
    precondition: Precondition | None = None
    where: tuple[str | int, ...] = ()
    actual: Any = ABSENT
    failed: tuple[tuple[Precondition, tuple[str | int, ...], Any], ...] = ()
    dependency: int | None = None
    dependency_id: str | None = None


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


def walk(
    dag: Dag,
    initial_state: Mapping[str, Any] | None = None,
    *,
    mode: Literal["verify", "simulate"] = "verify",
    on_level: Callable[[list[int], Mapping[str, Any]], None] | None = None,
) -> Walk:
    """Walk the levels; ``on_level(members, state)`` sees each level's start state."""
    actions, ids, keys_of, task_preds = dag.actions, dag.ids, dag.keys, dag.task_preds
    state: dict[str, Any] = dict(initial_state or {})
    simulate = mode == "simulate"
    supplier: dict[str, int] = {}
    blocked = [False] * dag.n
    traces: list[ActionTrace | None] = [None] * dag.n
    # The causes and ids of each long list of dependencies, by identity: a list of a
    # duplicated id's positions is shared by every action that names the id.
    waits: dict[int, tuple[list[Cause], list[str]]] = {}
    # An action's causes; a fresh list only once a trace has kept this one (verify
    # mode keeps the blocked actions' only, so most actions make no list).
    causes: list[Cause] = []

    for level_no, members in enumerate(dag.levels):
        if on_level is not None:
            on_level(members, state)
        for i in members:
            action = actions[i]
            # verify mode records no suppliers: nothing writes this shared dict there
            supplied: dict[str, str | None] = {} if simulate else _NOT_RECORDED
            if action.type == "assertion":
                failed = []
                for pre, where in action.predicate():
                    actual = state.get(pre.key, ABSENT)
                    if evaluate(pre.operator, actual, pre.value):
                        if simulate:
                            supplied[pre.key] = _who(supplier, ids, pre.key, actual)
                    else:
                        failed.append((pre, where, actual))
                if failed:
                    causes.append(Cause("assertion", failed=tuple(failed)))
            elif action.preconditions:
                for j, pre in enumerate(action.preconditions):
                    actual = state.get(pre.key, ABSENT)
                    if evaluate(pre.operator, actual, pre.value):
                        if simulate:
                            supplied[pre.key] = _who(supplier, ids, pre.key, actual)
                        continue
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
            for key in keys_of[i]:
                if key in state:
                    if simulate:
                        supplied[key] = _who(supplier, ids, key, state[key])
                else:
                    causes.append(Cause("missing-key", key=key))
            if simulate:
                after: list[str] = []
                needs = task_preds[i]
                if needs:
                    if len(needs) > dag.SHARED_TASKS:  # maybe an id's positions, shared:
                        found = waits.get(id(needs))  # their verdicts are final once, for all
                        if found is None:
                            found = waits[id(needs)] = _waits(needs, blocked, ids)
                    else:
                        found = _waits(needs, blocked, ids)
                    causes.extend(found[0])
                    after = list(found[1])
                blocked[i] = bool(causes)
                traces[i] = ActionTrace(i, ids[i], level_no, bool(causes), causes, supplied, after)
                causes = []
            elif causes:  # verify needs only the blocked actions' traces
                blocked[i] = True
                traces[i] = ActionTrace(i, ids[i], level_no, True, causes)
                causes = []
        for i in members:  # read again while the level's actions are still in the cache
            if not (simulate and blocked[i]):
                change = actions[i].effects()
                if change:
                    state.update(change)
                    if simulate:
                        for key in change:
                            supplier[key] = i
    return Walk(state, traces, mode)


def _waits(
    needs: Sequence[int], blocked: list[bool], ids: list[str]
) -> tuple[list[Cause], list[str]]:
    """The blocked-dependency causes of an action waiting for ``needs``, and the ids
    of those that ran (in order, once each). Every one of ``needs`` is on an earlier
    level, so the answer holds for every action waiting for the same list."""
    causes: list[Cause] = []
    after: dict[str, None] = {}
    for t in needs:
        if blocked[t]:
            causes.append(Cause("blocked-dependency", dependency=t, dependency_id=ids[t]))
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
    from .values import format_predicate, format_value

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
    return f"depends on {cause.dependency_id!r}, which is blocked"
