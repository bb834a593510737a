"""The DAG of a proposal (docs/semantics.md §3): edges, levels, cycles, reachability, conflicts.

This is the one module that knows how actions are ordered. Every other part
(the walk, the passes, exporters, the executor) asks a :class:`Dag`.

Edges P -> A exist when P's id is in A's ``dependencies``, when A refers to
P's output (``$P.output``), or when a key A depends on (``state_dependencies``,
a ``state_read`` key) is written by P and P comes *before* A in the proposal.
The last rule links A to *every* earlier writer of the key; to keep the graph
linear in size, those edges are routed through one *cover node* per
(key, number of earlier writers): cover(k, m) has edges from cover(k, m-1) and
from the m-th writer of k, so a path from writer w to A exists exactly when the
original edge w -> A does. Cover nodes carry no level of their own. A reader of
a key with few earlier writers (``DIRECT_WRITERS``) gets the edges themselves,
which costs no more and keeps the graph smaller. In the same way, a dependency
or output reference naming an id that more than ``DIRECT_WRITERS`` actions share
(a ``duplicate-id`` plan) gets one edge from that id's node, which has an edge
from each of them.

Reachability questions are answered by the engine behind the class
(``car_verify.semantics._reach``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal, TypeVar

from ..ir.flat import FlatPlan
from ..ir.model import (
    Action,
    ActionProposal,
    OutputRef,
    depended_keys_of,
    output_refs_of,
    writes_of,
)
from ._reach import Reachability, bitmask

__all__ = ["Cycle", "Dag", "Edge", "FlatDag", "Readiness", "UnknownRef", "forward_reachable"]

_G = TypeVar("_G")

EdgeKind = Literal["dependency", "output", "state"]


@dataclass(frozen=True, slots=True)
class Edge:
    """One real edge ``source -> target`` (positions), with the reason it exists."""

    source: int
    target: int
    kind: EdgeKind
    label: str  # the dependency id, the output reference, or the state key


@dataclass(frozen=True, slots=True)
class UnknownRef:
    """A ``dependencies`` entry or ``$id.output`` reference that names no action."""

    index: int
    target: str
    pointer: tuple[str | int, ...]
    kind: Literal["dependency", "output"]


@dataclass(frozen=True, slots=True)
class Cycle:
    """A strongly connected group of actions; ``path`` is one cycle through its first action."""

    members: tuple[int, ...]
    path: tuple[int, ...]


class Dag(Reachability):
    """Ordering facts of one proposal, computed once, and the questions about them.

    The questions: ``levels`` and ``level_of``; ``preds``/``succs`` and
    ``waits_for`` (actions only); ``writers`` and ``blind_writers``; ``cycles``;
    ``reaches``/``reachable``, ``writers_not_before``, ``totally_ordered``; and
    ``conflicts``. How reachability is answered is the engine's business
    (``car_verify.semantics._reach``): the helper nodes it works on (cover and id nodes,
    numbered from ``n`` up) never reach a caller.
    """

    #: A reader of a key with at most this many earlier writers gets an edge from
    #: each of them; beyond, one edge from the key's cover node.
    DIRECT_WRITERS = 4
    #: An action that waits for more than this many positions of one duplicated id
    #: is told so by :meth:`waits_shared_with` (a caller can then derive something
    #: from those positions once per id, not once per action).
    SHARED_TASKS = 8

    def __init__(self, proposal: ActionProposal) -> None:
        actions = proposal.actions
        self.proposal = proposal
        self.actions: list[Action] = actions
        self._build(
            [a.id for a in actions],
            (
                (
                    a.dependencies,
                    a.output_refs() if a.parameters else (),
                    a.depended_keys(),
                    a.writes(),
                )
                for a in actions
            ),
        )

    def _build(
        self,
        ids: list[str],
        fields: Iterable[tuple[Sequence[str], Sequence[OutputRef], list[str], Sequence[str]]],
    ) -> None:
        """The DAG of the actions ``ids`` whose ``fields`` are, by position, their
        ``dependencies``, output references, depended keys and writes."""
        n = self.n = len(ids)
        self.ids = ids
        # id -> its first position; ids used twice also get every position in `_twice`.
        first = self._first = dict(zip(reversed(ids), range(n - 1, -1, -1), strict=True))
        twice: dict[str, list[int]] = {}
        if len(first) < n:
            for i, action_id in enumerate(ids):
                if first[action_id] != i:
                    twice.setdefault(action_id, [first[action_id]]).append(i)
        self._twice = twice

        # Filled in the walk over the actions below: an action's state edges come
        # from the writers before it, which are the writers listed so far.
        writers: dict[str, list[int]] = {}
        self.writers = writers
        # A writer that follows another writer of a key without reading the key has
        # no state edge from them: the only writers that can race an earlier one.
        # Noted here, while the action is in the cache, not asked of `keys` later.
        blind: dict[str, list[int]] = {}
        self.blind_writers = blind
        self.keys: list[list[str]] = []

        # Predecessor lists share one empty tuple; an action's task predecessors are
        # its explicit and output-reference ones, `preds` adds the state-key covers.
        none: tuple[int, ...] = ()
        preds: list[Sequence[int]] = []
        task_preds: list[Sequence[int]] = []
        unknown: list[UnknownRef] = []
        shared: dict[int, str] = {}  # see waits_shared_with
        chains: dict[str, list[int]] = {}
        # The nodes after the actions: covers (a pair each) and id nodes (every
        # position of an id used more than DIRECT_WRITERS times).
        extra: list[Sequence[int]] = []
        id_nodes: dict[str, int] = {}
        # Levels are computed on the fly while every edge points backwards in the
        # list (the common case); a forward `dependencies` entry falls back to Kahn.
        level: list[int] = [-1] * n
        order: list[int] = []
        levels: list[list[int]] = []  # the actions of each level, while backward_only
        backward_only = True

        def cover(key: str, count: int) -> int:
            """The node that every one of the first ``count`` writers of ``key`` reaches."""
            ws = writers[key]
            if count == 1:
                return ws[0]
            chain = chains.get(key)
            if chain is None:
                chain = chains[key] = [ws[0]]
            while len(chain) < count:
                node = n + len(extra)
                pair = (chain[-1], ws[len(chain)])
                extra.append(pair)
                level.append(max(level[pair[0]], level[pair[1]]))
                order.append(node)
                chain.append(node)
            return chain[count - 1]

        def id_node(action_id: str, positions: list[int]) -> int:
            """The node that every action with this (duplicated) id reaches: an edge
            from it instead of one from each, so that the edges stay linear."""
            node = id_nodes.get(action_id)
            if node is None:
                node = id_nodes[action_id] = n + len(extra)
                extra.append(positions)
                # Right when they all come first (else the levels come from _kahn).
                level.append(max(level[p] for p in positions))
                order.append(node)
            return node

        keys_of = self.keys
        direct = self.DIRECT_WRITERS
        for i, (dependencies, refs, depended, writes) in enumerate(fields):
            # The positions each dependency and output reference names (ascending).
            named: list[list[int]] = []
            last_named = ""
            if dependencies:
                for j, dep in enumerate(dependencies):
                    targets = self.targets(dep)
                    if targets:
                        named.append(targets)
                        last_named = dep
                    else:
                        unknown.append(UnknownRef(i, dep, ("dependencies", j), "dependency"))
            if refs:
                for ref in refs:
                    targets = self.targets(ref.action_id)
                    if targets:
                        named.append(targets)
                        last_named = ref.action_id
                    else:
                        unknown.append(UnknownRef(i, ref.action_id, ref.pointer, "output"))
            tasks: Sequence[int]
            if not named:
                tasks = none
            else:
                # One list is kept as it is: shared, when it holds a duplicated id's positions.
                if len(named) == 1:
                    tasks = named[0]
                    forward = tasks[-1] >= i  # ascending
                    if len(tasks) > self.SHARED_TASKS:
                        shared[i] = last_named
                else:
                    tasks = [t for ts in named for t in ts]
                    forward = max(tasks) >= i
                if forward:
                    backward_only = False
            own = tasks
            if twice and len(tasks) > direct:
                own = self._through_id_nodes(dependencies, refs, id_node)
            with_covers: list[int] | None = None
            keys_of.append(depended)
            for key in depended:
                ws = writers.get(key)
                if ws:  # all of them before this action
                    if with_covers is None:
                        own = with_covers = list(own)
                    count = len(ws)
                    if count <= direct:
                        with_covers.extend(ws)
                    else:
                        with_covers.append(cover(key, count))
            for key in writes:
                found = writers.get(key)
                if found is None:
                    writers[key] = [i]
                else:
                    found.append(i)
                    if key not in depended:
                        later = blind.get(key)
                        if later is None:
                            blind[key] = [i]
                        else:
                            later.append(i)
            task_preds.append(tasks)
            preds.append(own)
            if backward_only:
                top = -1
                for p in own:
                    if level[p] > top:
                        top = level[p]
                top += 1
                level[i] = top
                order.append(i)
                if top < len(levels):
                    levels[top].append(i)
                else:
                    levels.append([i])
        preds.extend(extra)
        self._preds = preds
        self._waits = task_preds
        self._shared_waits = shared
        self.unknown_refs = unknown
        #: Every edge points forward in the proposal (then proposal order is topological).
        self.order_is_proposal_order = backward_only
        unlevelled: list[int] = []
        if backward_only:
            self._level, self._order = level, order
        else:
            self._order, self._level = self._kahn()
            final = self._level
            levels = [[] for _ in range(max(final[:n], default=-1) + 1)]
            for i, lvl in enumerate(final[:n]):
                if lvl >= 0:
                    levels[lvl].append(i)
                else:
                    unlevelled.append(i)
        self.levels = levels
        self.unlevelled = unlevelled
        self._descendant_cache: dict[int, set[int]] = {}
        #: The edges another ordering rule gave (:meth:`from_edges`), else None.
        self._given: Sequence[Sequence[tuple[int, str]]] | None = None

    @classmethod
    def from_edges(
        cls,
        proposal: ActionProposal,
        edges: Sequence[Sequence[tuple[int, str]]],
        *,
        keys: list[list[str]],
        writers: dict[str, list[int]],
        preds: list[Sequence[int]] | None = None,
        level: list[int] | None = None,
        levels: list[list[int]] | None = None,
    ) -> Dag:
        """The DAG of another ordering rule (a :class:`~car_verify.semantics.base.Semantics`
        chooses it): ``edges[i]`` lists the ``(predecessor, key)`` edges into action
        ``i``, each from an earlier position, ascending; ``keys[i]`` are the keys
        action ``i`` needs present; ``writers`` each key's writers, ascending. Nothing
        waits for an action under such a rule (an edge orders, it never blocks a
        dependent). The DAG keeps the lists it is given (they are not copied: the
        caller hands them over). ``preds``, ``level`` and ``levels``, when given, are
        what the edges make of them (each action's predecessors, ascending; its
        level; each level's actions), found with them by the rule that made them."""
        dag = cls.__new__(cls)
        actions = proposal.actions
        dag.proposal = proposal
        dag.actions = actions
        n = dag.n = len(actions)
        ids = dag.ids = [a.id for a in actions]
        dag._first = dict(zip(reversed(ids), range(n - 1, -1, -1), strict=True))
        twice: dict[str, list[int]] = {}
        if len(dag._first) < n:
            for i, action_id in enumerate(ids):
                if dag._first[action_id] != i:
                    twice.setdefault(action_id, [dag._first[action_id]]).append(i)
        dag._twice = twice
        dag.keys = keys
        dag.writers = writers
        blind: dict[str, list[int]] = {}
        for key, members in writers.items():
            later = [i for i in members[1:] if key not in keys[i]]
            if later:
                blind[key] = later
        dag.blind_writers = blind
        none: tuple[int, ...] = ()
        if preds is None or level is None or levels is None:
            preds, level, levels = _levelled(edges, n)
        dag._preds = preds
        dag._waits = [none] * n
        dag._shared_waits = {}
        dag._given = edges
        dag.unknown_refs = []
        dag.order_is_proposal_order = True
        dag._level, dag._order = level, list(range(n))
        dag.levels = levels
        dag.unlevelled = []
        dag._descendant_cache = {}
        return dag

    def _through_id_nodes(
        self,
        dependencies: Sequence[str],
        refs: Sequence[OutputRef],
        id_node: Callable[[str, list[int]], int],
    ) -> list[int]:
        """An action's predecessors when it names an id used more than DIRECT_WRITERS
        times: that id's node stands for all its positions."""
        own: list[int] = []
        for action_id in [*dependencies, *(r.action_id for r in refs)]:
            targets = self.targets(action_id)
            if len(targets) > self.DIRECT_WRITERS:
                own.append(id_node(action_id, targets))
            else:
                own.extend(targets)
        return own

    # --- the questions -----------------------------------------------------------------

    def level_of(self, i: int) -> int:
        """Action ``i``'s level (0 first), or -1 when it is on or after a cycle."""
        return self._level[i]

    def preds(self, i: int) -> list[int]:
        """The actions with an edge into action ``i`` (ascending): what it waits for,
        and the earlier writers of each key it depends on."""
        if self._given is not None:
            return sorted({p for p, _ in self._given[i]})
        found = set(self._waits[i])
        for key in self.keys[i]:
            for w in self.writers.get(key, ()):
                if w >= i:
                    break
                found.add(w)
        return sorted(found)

    def succs(self, i: int) -> list[int]:
        """The actions with an edge from action ``i`` (ascending)."""
        return self._action_succs[i]

    @cached_property
    def _action_succs(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in range(self.n)]
        for i in range(self.n):
            for p in self.preds(i):
                out[p].append(i)
        return out

    def waits_for(self, i: int) -> Sequence[int]:
        """The actions that action ``i`` waits for through ``dependencies`` and
        ``$id.output`` references (ascending; every position of a duplicated id)."""
        return self._waits[i]

    def waits_shared_with(self, i: int) -> str | None:
        """The duplicated id whose positions are exactly :meth:`waits_for` of ``i``,
        when they are more than ``SHARED_TASKS``: every action that names only that
        id waits for the same actions, so a verdict on them holds for all of them."""
        return self._shared_waits.get(i)

    def targets(self, action_id: str) -> list[int]:
        """The positions of the actions with this id (empty when there is none)."""
        where = self._first.get(action_id)
        if where is None:
            return []
        return self._twice.get(action_id) or [where]

    @cached_property
    def positions(self) -> dict[str, list[int]]:
        """Every id with its positions (more than one when an id is used twice)."""
        return {action_id: self.targets(action_id) for action_id in self._first}

    # --- levels and cycles ---------------------------------------------------------------

    def _kahn(self) -> tuple[list[int], list[int]]:
        """Topological order and levels of all nodes; nodes on or after a cycle get -1."""
        n, preds, succ = self.n, self._preds, self._succ
        indeg = [len(ps) for ps in preds]
        level = [-1] * len(preds)
        queue = deque(node for node in range(len(preds)) if not indeg[node])
        order: list[int] = []
        while queue:
            node = queue.popleft()
            order.append(node)
            ps = preds[node]
            if ps:
                top = max(level[p] for p in ps)
                level[node] = top + 1 if node < n else top
            else:
                level[node] = 0
            for s in succ[node]:
                indeg[s] -= 1
                if not indeg[s]:
                    queue.append(s)
        return order, level

    @cached_property
    def cycles(self) -> list[Cycle]:
        """Each strongly connected group among the unlevelled actions, first action first."""
        if not self.unlevelled:
            return []
        n, preds = self.n, self._preds
        cycles: list[Cycle] = []
        for component in self._groups[0]:
            if len(component) == 1:
                (only,) = component
                if only not in preds[only]:
                    continue
            members = tuple(sorted(v for v in component if v < n))
            if members:
                cycles.append(Cycle(members, self._shortest_cycle(members[0], component)))
        cycles.sort(key=lambda c: c.members[0])
        return cycles

    def _shortest_cycle(self, start: int, component: set[int]) -> tuple[int, ...]:
        """The cycle through action ``start`` with the fewest actions, at each step the
        earliest action in proposal order among those that keep it shortest. Counted
        in actions (a cover node costs nothing), so the path is the same whether a
        state edge is drawn directly or through cover nodes."""
        n, preds, succ = self.n, self._preds, self._succ
        # left[v]: the fewest actions on a path from v back to start (start counted,
        # v not); a search backwards from start, nearer nodes first (0-1 weights).
        left: dict[int, int] = {}
        queue = deque((1, p) for p in preds[start] if p in component)
        while queue:
            cost, node = queue.popleft()
            if node in left:
                continue
            left[node] = cost
            if node == start:
                continue  # the cycle's beginning, not a step on the way back
            for p in preds[node]:
                if p in component and p not in left:
                    if node < n:
                        queue.append((cost + 1, p))
                    else:
                        queue.appendleft((cost, p))
        path = [start]
        node = start
        while True:
            cost = left[node]
            # The actions one step on (through cover nodes) that keep the cycle shortest.
            best: int | None = None
            seen: set[int] = set()
            stack = [node]
            while stack:
                for s in succ[stack.pop()]:
                    if s in seen or s not in component:
                        continue
                    seen.add(s)
                    if s >= n:
                        stack.append(s)
                    elif (s == start and cost == 1) or (s != start and left.get(s) == cost - 1):
                        best = s if best is None else min(best, s)
            assert best is not None, "a strongly connected component has a way back"
            path.append(best)
            if best == start:
                return tuple(path)
            node = best

    def downstream(self, members: tuple[int, ...]) -> list[int]:
        """Actions reachable from ``members`` that are not themselves members (positions):
        one search from all of them at once (a search per member was quadratic in a
        long cycle)."""
        inside = set(members)
        found: set[int] = set()
        stack = list(members)
        succ = self._succ
        while stack:
            for s in succ[stack.pop()]:
                if s not in found:
                    found.add(s)
                    stack.append(s)
        return sorted(v for v in found if v < self.n and v not in inside)

    def execution_levels(self) -> list[list[str]]:
        """``execution_levels``: ids per level, proposal order inside a level."""
        ids = self.ids
        return [[ids[i] for i in level] for level in self.levels]

    # --- edges with reasons (for people: traces, exporters) ------------------------------------

    def edges(self, *, implied: bool = True) -> Iterator[Edge]:
        """Every real edge with its reason; state edges to every earlier writer of the key.

        With ``implied=False``, a state edge is left out when a later one of the
        earlier writers reads the key itself: the left-out writer reaches that one
        through its own state edge, so what reaches what is unchanged, and a chain
        of n read-modify-write steps draws n - 1 edges instead of n(n - 1)/2."""
        if self._given is not None:
            for i, into in enumerate(self._given):
                for p, key in into:
                    yield Edge(p, i, "state", key)
            return
        for i, action in enumerate(self.actions):
            for dep in action.dependencies:
                for t in self.targets(dep):
                    yield Edge(t, i, "dependency", dep)
            for ref in action.output_refs():
                for t in self.targets(ref.action_id):
                    label = f"${ref.action_id}.output" + (f".{ref.path}" if ref.path else "")
                    yield Edge(t, i, "output", label)
            for key in self.keys[i]:
                ws = self.writers.get(key, [])
                earlier = ws[: bisect_left(ws, i)]
                if not implied:
                    for start in range(len(earlier) - 1, -1, -1):
                        if key in self.keys[earlier[start]]:
                            earlier = earlier[start:]  # the writers before it reach it
                            break
                for w in earlier:
                    yield Edge(w, i, "state", key)


class FlatDag(Dag):
    """The :class:`Dag` of a flat plan (:mod:`car_verify.ir.flat`), by the same rule
    over the same fields: ``dependencies``, output references, depended keys and
    writes, read from the plan's arrays. Its ``proposal`` and ``actions`` are the
    plan's model, made when asked."""

    def __init__(self, plan: FlatPlan) -> None:
        self._plan = plan
        self._model: ActionProposal | None = None
        deps, types, params = plan.dependencies, plan.types, plan.parameters
        sdeps, effects, write_sets = plan.state_dependencies, plan.effects, plan.write_sets
        self._build(
            plan.ids,
            (
                (
                    deps[i],
                    output_refs_of(params[i]) if params[i] else (),
                    depended_keys_of(types[i], sdeps[i], params[i]),
                    writes_of(types[i], write_sets[i], effects[i], params[i]),
                )
                for i in range(plan.n)
            ),
        )

    @property
    def proposal(self) -> ActionProposal:
        if self._model is None:
            self._model = self._plan.model()
        return self._model

    @proposal.setter
    def proposal(self, value: ActionProposal) -> None:
        self._model = value

    @property
    def actions(self) -> list[Action]:
        return self.proposal.actions

    @actions.setter
    def actions(self, value: list[Action]) -> None:
        raise AttributeError("a flat plan's DAG reads its plan's actions")


class Readiness:
    """Which actions may start next while a schedule of the DAG is built one finished
    action at a time, in any order the edges allow (``check_schedules`` explores every
    such order). ``after`` looks only at what the finished action unlocks, through the
    cover nodes, never at the whole plan.
    """

    __slots__ = ("masks", "n", "succ", "walkable", "walkable_mask")

    def __init__(self, dag: Dag) -> None:
        n = self.n = dag.n
        # Per node, the actions that must have finished before it is passed: an
        # action's real predecessors, a cover node's writers.
        masks = [0] * len(dag._preds)
        for node in dag._order:
            mask = 0
            for p in dag._preds[node]:
                mask |= 1 << p if p < n else masks[p]
            masks[node] = mask
        self.masks = masks
        self.succ = dag._succ
        self.walkable = [lvl >= 0 for lvl in dag._level[:n]]
        #: The actions a complete schedule finishes (none on or after a cycle).
        self.walkable_mask = bitmask([i for i, ok in enumerate(self.walkable) if ok], n)

    def first(self) -> tuple[int, ...]:
        """The actions that may start before any has finished, in proposal order."""
        masks = self.masks
        return tuple(i for i, ok in enumerate(self.walkable) if ok and not masks[i])

    def after(self, ready: tuple[int, ...], finished: int, pending: int) -> tuple[int, ...]:
        """``ready`` once ``finished`` (one of them) has finished; ``pending``: bitmask
        of the actions not finished by then. In proposal order."""
        n, masks, succ, walkable = self.n, self.masks, self.succ, self.walkable
        found = list(ready)
        found.remove(finished)
        have = set(found)
        passed: set[int] = set()
        stack = [finished]
        while stack:
            for s in succ[stack.pop()]:
                if masks[s] & pending:
                    continue  # waits for an action still pending
                if s >= n:
                    if s not in passed:  # a cover node all of whose writers finished
                        passed.add(s)
                        stack.append(s)
                elif walkable[s] and s not in have and pending >> s & 1:
                    have.add(s)
                    found.append(s)
        found.sort()
        return tuple(found)


def _levelled(
    edges: Sequence[Sequence[tuple[int, str]]], n: int
) -> tuple[list[Sequence[int]], list[int], list[list[int]]]:
    """Each action's predecessors (ascending), level and each level's actions, of the
    ``(predecessor, key)`` edges into each of ``n`` actions, every one from an
    earlier position (:meth:`Dag.from_edges`)."""
    none: tuple[int, ...] = ()
    preds: list[Sequence[int]] = [
        none if not into else [into[0][0]] if len(into) == 1 else sorted({p for p, _ in into})
        for into in edges
    ]
    level = [0] * n
    levels: list[list[int]] = []
    for i, ps in enumerate(preds):
        if not ps:
            top = 0
        elif ps[-1] >= i:  # ascending: the last is the latest
            raise ValueError(f"edge into action {i} from a later position")
        else:
            top = 1 + max([level[p] for p in ps])
        level[i] = top
        if top < len(levels):
            levels[top].append(i)
        else:
            levels.append([i])
    return preds, level, levels


def forward_reachable(
    preds: Sequence[Sequence[int]], pairs: Iterable[tuple[int, int]], batch: int = 4096
) -> set[tuple[int, int]]:
    """Which ``(a, b)`` of ``pairs`` have a path ``a -> ... -> b``, in a DAG whose every
    edge points forward in position order (each of ``preds[b]`` is below ``b``), as
    the ``car`` profile's order is. One sweep per ``batch`` sources over the positions
    from the first source to the last target, each node's ancestors a bitset over the
    batch's sources: linear in the graph per batch, never a set of ancestors per node."""
    found: set[tuple[int, int]] = set()
    asked = [(a, b) for a, b in pairs if a < b]
    sources = sorted({a for a, _ in asked})
    for first in range(0, len(sources), batch):
        chosen = sources[first : first + batch]
        bit = {source: j for j, source in enumerate(chosen)}
        wanted: dict[int, list[int]] = {}
        for a, b in asked:
            if a in bit:
                wanted.setdefault(b, []).append(a)
        reach: dict[int, int] = {}
        for node in range(chosen[0], max(wanted) + 1):
            mask = 1 << bit[node] if node in bit else 0
            for p in preds[node]:
                mask |= reach.get(p, 0)
            if mask:
                reach[node] = mask
                for a in wanted.get(node, ()):
                    if mask >> bit[a] & 1 and a != node:
                        found.add((a, node))
    return found
