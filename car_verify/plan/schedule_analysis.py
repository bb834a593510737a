"""A static execution DAG analysed: critical path, makespan, parallelism, levels,
the single-ready-unit ("serial") pathology and cycles, with the runtime's answers
(``car_runtime.analyze_schedule``).

The input is the runtime's ``ScheduleGraph`` ``{units: [{id, duration?,
depends_on?}]}``: a ``duration`` is a non-negative integer (0 when absent), a
``depends_on`` entry that names no unit is ignored, and a unit listed twice has
the later duration and the dependencies of both. The rules, each checked
against the runtime by a Hypothesis test:

- ``levels``: a unit without (known) dependencies is in level 0, any other one
  level after its deepest dependency; ids sorted inside a level.
- A unit's finish is its duration plus the latest finish of its dependencies;
  ``makespan`` is the latest finish (0 for none).
- ``critical_path``: empty when the makespan is 0; otherwise it ends at the unit
  with the smallest id that finishes at the makespan, and runs back through, at
  each step, the first dependency (in ``depends_on`` order) with the latest
  finish, while that finish is above 0.
- ``max_parallelism``: the widest level; ``serial``: at most one unit is ever
  ready at once (``max_parallelism <= 1``), the Agent-Loop pathology.
- ``has_cycle``: not every listed unit was placed in a level (a cycle, or an id
  listed twice).

Beyond the runtime: the units on a cycle and every unit that depends on one are
left out of the levels and the path, as ``verify`` leaves out the actions after
a cycle, and ``cyclic`` names them (the runtime keeps some of them; docs/compat.md).
:func:`schedule_of` builds the graph of a proposal's own DAG under either profile.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..base.errors import InputError, reject_unknown_fields

if TYPE_CHECKING:
    from ..semantics import ProfileLike

__all__ = ["ScheduleAnalysis", "Unit", "analyze_schedule", "parse_schedule", "schedule_of"]

_UNIT_FIELDS = ("id", "duration", "depends_on")


@dataclass(frozen=True, slots=True)
class Unit:
    """One unit of work: its id, how long it takes, what it waits for."""

    id: str
    duration: int = 0
    depends_on: tuple[str, ...] = ()


@dataclass(slots=True)
class ScheduleAnalysis:
    """The runtime's ``ScheduleAnalysis``, and the units left out for a cycle."""

    has_cycle: bool
    critical_path: list[str]
    makespan: int
    max_parallelism: int
    levels: list[list[str]]
    serial: bool
    cyclic: list[str] = field(default_factory=list)

    def to_dict(self, *, extras: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "has_cycle": self.has_cycle,
            "critical_path": self.critical_path,
            "makespan": self.makespan,
            "max_parallelism": self.max_parallelism,
            "levels": self.levels,
            "serial": self.serial,
        }
        if extras:
            out["cyclic"] = self.cyclic
        return out


def parse_schedule(graph: Any) -> list[Unit]:
    """The units of a ``ScheduleGraph`` (a dict, or JSON text), or an InputError
    naming where."""
    from ..ir.model import json_value

    doc = json_value(graph)
    if not isinstance(doc, Mapping):
        raise InputError("expected an object {units: [...]}", [])
    reject_unknown_fields(doc, ("units",), [])
    raw = doc.get("units", [])
    if not isinstance(raw, list):
        raise InputError("expected an array of units", ["units"])
    units = []
    for n, item in enumerate(raw):
        where: list[str | int] = ["units", n]
        if not isinstance(item, Mapping):
            raise InputError("expected an object {id, duration?, depends_on?}", where)
        reject_unknown_fields(item, _UNIT_FIELDS, where)
        if not isinstance(item.get("id"), str):
            raise InputError("expected a string id", [*where, "id"])
        duration = item.get("duration", 0)
        if isinstance(duration, bool) or not isinstance(duration, int) or duration < 0:
            raise InputError("expected a non-negative integer", [*where, "duration"])
        deps = item.get("depends_on", [])
        if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
            raise InputError("expected an array of unit ids", [*where, "depends_on"])
        units.append(Unit(item["id"], duration, tuple(deps)))
    return units


def analyze_schedule(graph: Any) -> ScheduleAnalysis:
    """The schedule of ``graph`` (see the module docs): a ``ScheduleGraph`` as a
    dict or JSON text, or a list of :class:`Unit`."""
    given = isinstance(graph, list) and all(isinstance(u, Unit) for u in graph)
    units: list[Unit] = graph if given else parse_schedule(graph)
    by_id: dict[str, Unit] = {}
    edges: dict[str, list[str]] = {}
    for unit in units:  # listed twice: the later duration, the edges of both
        by_id[unit.id] = unit
        edges.setdefault(unit.id, []).extend(unit.depends_on)
    deps = {u: [d for d in dict.fromkeys(ds) if d in by_id] for u, ds in edges.items()}
    # Kahn's order: a unit is placed once everything it depends on is; what is never
    # placed is on a cycle or after one.
    waiting = {u: len(ds) for u, ds in deps.items()}
    dependents: dict[str, list[str]] = {u: [] for u in by_id}
    for u, ds in deps.items():
        for d in ds:
            dependents[d].append(u)
    level: dict[str, int] = {}
    finish: dict[str, int] = {}
    ready = deque(sorted(u for u, n in waiting.items() if n == 0))
    while ready:
        u = ready.popleft()
        level[u] = 1 + max((level[d] for d in deps[u]), default=-1)
        finish[u] = by_id[u].duration + max((finish[d] for d in deps[u]), default=0)
        for v in dependents[u]:
            waiting[v] -= 1
            if waiting[v] == 0:
                ready.append(v)
    cyclic = {u for u in by_id if u not in level}
    placed = sorted(level, key=lambda u: (level[u], u))
    levels: list[list[str]] = []
    for u in placed:
        if level[u] == len(levels):
            levels.append([])
        levels[level[u]].append(u)
    makespan = max(finish.values(), default=0)
    path: list[str] = []
    if makespan > 0:
        current: str | None = min(u for u in placed if finish[u] == makespan)
        while current is not None:
            path.append(current)
            best = None
            for d in deps[current]:
                if finish[d] > 0 and (best is None or finish[d] > finish[best]):
                    best = d
            current = best
        path.reverse()
    widest = max((len(lv) for lv in levels), default=0)
    return ScheduleAnalysis(
        has_cycle=len(placed) != len(units),
        critical_path=path,
        makespan=makespan,
        max_parallelism=widest,
        levels=levels,
        serial=widest <= 1,
        cyclic=sorted(cyclic),
    )


def schedule_of(proposal: Any, *, profile: ProfileLike = None, durations: Any = None) -> list[Unit]:
    """A proposal's own DAG under ``profile`` as schedule units: each action a
    unit depending on its DAG predecessors, its duration ``durations[id]``, else
    its ``timeout_ms``, else 1 (one step)."""
    from ..ir.model import load
    from ..semantics import semantics_of

    model = load(proposal)
    dag = semantics_of(profile).order(model)
    given = dict(durations or {})
    units = []
    for index, action in enumerate(model.actions):
        duration = given.get(action.id, action.timeout_ms if action.timeout_ms else 1)
        preds = tuple(dict.fromkeys(model.actions[p].id for p in dag.preds(index)))
        units.append(Unit(action.id, int(duration), preds))
    return units
