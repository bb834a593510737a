"""The DAG of a proposal (SEMANTICS section 3): edges, levels, cycles, reachability, conflicts.

This is the one module that knows how actions are ordered. Every other part
(the walk, the passes, exporters, the executor) asks a :class:`Dag`.

Edges P -> A exist when P's id is in A's ``dependencies``, when A refers to
P's output (``$P.output``), or when a key A depends on (``state_dependencies``,
a ``state_read`` key) is written by P and P comes *before* A in the proposal.
The last rule links A to *every* earlier writer of the key; to keep the graph
linear in size, those edges are routed through one *cover node* per
(key, number of earlier writers): cover(k, m) has edges from cover(k, m-1) and
from the m-th writer of k, so a path from writer w to A exists exactly when the
original edge w -> A does. Cover nodes carry no level of their own.

Reachability for ``conflicts`` uses ancestor bitsets over the actions that write
a shared key, computed once in topological order and released as soon as the
last successor has read them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from .model import Action, ActionProposal

__all__ = ["Cycle", "Dag", "Edge", "UnknownRef"]

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


class Dag:
    """Ordering facts of one proposal, computed once."""

    def __init__(self, proposal: ActionProposal) -> None:
        actions = proposal.actions
        self.proposal = proposal
        self.actions: list[Action] = actions
        n = self.n = len(actions)
        self.ids: list[str] = [a.id for a in actions]
        positions: dict[str, list[int]] = {}
        for i, action_id in enumerate(self.ids):
            positions.setdefault(action_id, []).append(i)
        self.positions = positions

        self.writes: list[list[str]] = [a.writes() for a in actions]
        writers: dict[str, list[int]] = {}
        for i, keys in enumerate(self.writes):
            for key in keys:
                writers.setdefault(key, []).append(i)
        self.writers = writers
        self.keys: list[list[str]] = [a.depended_keys() for a in actions]

        preds: list[list[int]] = [[] for _ in range(n)]
        task_preds: list[list[int]] = [[] for _ in range(n)]
        unknown: list[UnknownRef] = []
        chains: dict[str, list[int]] = {}
        # Levels are computed on the fly while every edge points backwards in the
        # list (the common case); a forward `dependencies` entry falls back to Kahn.
        level: list[int] = [-1] * n
        order: list[int] = []
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
                node = len(preds)
                first, second = chain[-1], ws[len(chain)]
                preds.append([first, second])
                level.append(max(level[first], level[second]))
                order.append(node)
                chain.append(node)
            return chain[count - 1]

        earlier_writers: list[list[tuple[str, int]]] = [[] for _ in range(n)]
        keys_of = self.keys
        for i, action in enumerate(actions):
            own = preds[i]
            tasks = task_preds[i]
            for j, dep in enumerate(action.dependencies):
                targets = positions.get(dep)
                if targets is None:
                    unknown.append(UnknownRef(i, dep, ("dependencies", j), "dependency"))
                else:
                    own.extend(targets)
                    tasks.extend(targets)
            if action.parameters:
                for ref in action.output_refs():
                    targets = positions.get(ref.action_id)
                    if targets is None:
                        unknown.append(UnknownRef(i, ref.action_id, ref.pointer, "output"))
                    else:
                        own.extend(targets)
                        tasks.extend(targets)
            if tasks and max(tasks) >= i:
                backward_only = False
            for key in keys_of[i]:
                ws = writers.get(key)
                if ws and ws[0] < i:
                    count = bisect_left(ws, i)
                    own.append(cover(key, count))
                    earlier_writers[i].append((key, count))
            if backward_only:
                level[i] = 1 + max([level[p] for p in own]) if own else 0
                order.append(i)
        self.earlier_writers = earlier_writers
        self.preds = preds
        self.task_preds = task_preds
        self.unknown_refs = unknown
        #: Every edge points forward in the proposal (then proposal order is topological).
        self.order_is_proposal_order = backward_only
        if backward_only:
            self.level, self.order = level, order
        else:
            self.order, self.level = self._kahn()
        final = self.level
        depth = max(final[:n], default=-1) + 1
        levels: list[list[int]] = [[] for _ in range(depth)]
        unlevelled: list[int] = []
        for i, lvl in enumerate(final[:n]):
            if lvl >= 0:
                levels[lvl].append(i)
            else:
                unlevelled.append(i)
        self.levels = levels
        self.unlevelled = unlevelled
        self._descendant_cache: dict[int, set[int]] = {}

    # --- levels and cycles ---------------------------------------------------------------

    def _kahn(self) -> tuple[list[int], list[int]]:
        """Topological order and levels of all nodes; nodes on or after a cycle get -1."""
        n, preds, succ = self.n, self.preds, self.succ
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
    def succ(self) -> list[list[int]]:
        """Successor lists of every node (actions, then cover nodes)."""
        succ: list[list[int]] = [[] for _ in self.preds]
        for node, ps in enumerate(self.preds):
            for p in ps:
                succ[p].append(node)
        return succ

    @cached_property
    def cycles(self) -> list[Cycle]:
        """Each strongly connected group among the unlevelled actions, first action first."""
        if not self.unlevelled:
            return []
        import networkx as nx

        n = self.n
        stuck = {node for node, lvl in enumerate(self.level) if lvl < 0}
        graph: nx.DiGraph[int] = nx.DiGraph()
        graph.add_nodes_from(stuck)
        graph.add_edges_from((p, node) for node in stuck for p in self.preds[node] if p in stuck)
        cycles: list[Cycle] = []
        for component in nx.strongly_connected_components(graph):
            if len(component) == 1:
                (only,) = component
                if not graph.has_edge(only, only):
                    continue
            members = tuple(sorted(v for v in component if v < n))
            start = members[0]
            loop = nx.find_cycle(graph.subgraph(component), source=start)
            path = [start, *(edge[1] for edge in loop)]
            cycles.append(Cycle(members, tuple(v for v in path if v < n)))
        cycles.sort(key=lambda c: c.members[0])
        return cycles

    def downstream(self, members: tuple[int, ...]) -> list[int]:
        """Actions reachable from ``members`` that are not themselves members (positions)."""
        inside = set(members)
        found: set[int] = set()
        for m in members:
            found |= self._descendants(m)
        return sorted(v for v in found if v < self.n and v not in inside)

    def _descendants(self, source: int) -> set[int]:
        """Every node a path leads to from ``source`` (plain search, cached; the cold
        path for graphs with cycles, where levels cannot prune)."""
        cache = self._descendant_cache
        found = cache.get(source)
        if found is None:
            found = set()
            stack = [source]
            while stack:
                for s in self.succ[stack.pop()]:
                    if s not in found:
                        found.add(s)
                        stack.append(s)
            cache[source] = found
        return found

    def execution_levels(self) -> list[list[str]]:
        """``execution_levels``: ids per level, proposal order inside a level."""
        ids = self.ids
        return [[ids[i] for i in level] for level in self.levels]

    # --- reachability and conflicts --------------------------------------------------------

    def reaches(self, source: int, target: int) -> bool:
        """True when a path leads from action ``source`` to action ``target``."""
        return (source, target) in self.reachable([(source, target)])

    # Ancestor bitsets are computed over a *batch* of source actions at a time: a
    # bit per source, so an int's size is bounded by the batch, and the total
    # memory by BITSET_BUDGET bits however wide the DAG is. Small plans take one
    # batch; very large ones trade a few extra sweeps for bounded memory.
    BITSET_BUDGET = 1 << 32
    MIN_BATCH = 4096
    #: Nodes a reachability query visits before it falls back on interval labels.
    NEAR_SEARCH = 64

    @cached_property
    def _topo_position(self) -> list[int]:
        where = [-1] * len(self.preds)
        for position, node in enumerate(self.order):
            where[node] = position
        return where

    @cached_property
    def _successor_counts(self) -> list[int]:
        counts = [0] * len(self.preds)
        for ps in self.preds:
            for p in ps:
                counts[p] += 1
        return counts

    def _batches(self, sources: list[int]) -> Iterator[list[int]]:
        """``sources`` (levelled actions) in topological order, cut into batches."""
        where = self._topo_position
        ordered = sorted(set(sources), key=where.__getitem__)
        size = max(self.MIN_BATCH, self.BITSET_BUDGET // max(1, len(self.preds)))
        for first in range(0, len(ordered), size):
            yield ordered[first : first + size]

    def _sweep(self, batch: list[int], stop: int) -> Iterator[tuple[int, int]]:
        """Walk the topological order from the batch's first source to position ``stop``;
        yield ``(action, ancestors)`` per action, ``ancestors`` a bitset over ``batch``
        (bit j: ``batch[j]`` reaches the action)."""
        n, preds, order = self.n, self.preds, self.order
        bits = {source: 1 << j for j, source in enumerate(batch)}
        remaining = list(self._successor_counts)
        out: dict[int, int] = {}
        for node in order[self._topo_position[batch[0]] : stop + 1]:
            ancestors = 0
            for p in preds[node]:
                value = out.get(p)
                if value:
                    ancestors |= value
                left = remaining[p] - 1
                remaining[p] = left
                if not left and value:
                    del out[p]
            if node < n:
                yield node, ancestors
                value = ancestors | bits.get(node, 0)
            else:
                value = ancestors
            if value and remaining[node]:
                out[node] = value

    def reachable(self, pairs: Iterable[tuple[int, int]]) -> set[tuple[int, int]]:
        """The pairs ``(a, b)`` of actions for which a path leads from a to b."""
        level, where = self.level, self._topo_position
        wanted: dict[int, list[int]] = {}
        found: set[tuple[int, int]] = set()
        for a, b in pairs:
            if a == b or level[a] < 0 or level[b] < 0:
                if a != b and (level[a] < 0 or level[b] < 0) and b in self._descendants(a):
                    found.add((a, b))
                continue
            if level[a] < level[b]:
                wanted.setdefault(b, []).append(a)
        if not wanted:
            return found
        for batch in self._batches([a for sources in wanted.values() for a in sources]):
            index = {a: j for j, a in enumerate(batch)}
            stop = max(
                where[b] for b, sources in wanted.items() if any(a in index for a in sources)
            )
            for node, ancestors in self._sweep(batch, stop):
                for a in wanted.get(node, ()):
                    j = index.get(a)
                    if j is not None and ancestors >> j & 1:
                        found.add((a, node))
        return found

    @cached_property
    def conflicts(self) -> list[tuple[int, int, str]]:
        """Every ``(a, b, key)``: a before b, both write key, neither reaches the other."""
        shared = {k for k, ws in self.writers.items() if len(ws) > 1}
        if not shared:
            return []
        if self.unlevelled:
            return self._conflicts_with_cycles(shared)
        one_batch = max(self.MIN_BATCH, self.BITSET_BUDGET // max(1, len(self.preds)))
        many = sum(len(self.writers[k]) for k in shared) > one_batch
        if self.order_is_proposal_order and many:
            return self._conflicts_in_order(shared)
        writes, where = self.writes, self._topo_position
        shared_keys = {
            w: [k for k in writes[w] if k in shared] for k in shared for w in self.writers[k]
        }
        last = {k: max(where[w] for w in self.writers[k]) for k in shared}
        found: list[tuple[int, int, str]] = []
        for batch in self._batches(list(shared_keys)):
            bits = {source: 1 << j for j, source in enumerate(batch)}
            stop = max(last[k] for source in batch for k in shared_keys[source])
            written: dict[str, int] = {}
            for node, ancestors in self._sweep(batch, stop):
                keys = shared_keys.get(node)
                if not keys:
                    continue
                bit = bits.get(node, 0)
                for key in keys:
                    seen = written.get(key, 0)
                    unordered = seen & ~ancestors
                    while unordered:
                        low = unordered & -unordered
                        other = batch[low.bit_length() - 1]
                        found.append((other, node, key) if other < node else (node, other, key))
                        unordered ^= low
                    if bit:
                        written[key] = seen | bit
        found.sort()
        return found

    def _conflicts_in_order(self, shared: set[str]) -> list[tuple[int, int, str]]:
        """Conflicts when every edge points forward in the proposal (the common case).

        Writers of a key are visited in proposal order, keeping the *maximal* ones
        (no later-visited writer of the key reaches them) and, per writer, the
        maximal earlier writers that reach it. A writer that reads the key is
        reached by every earlier writer (the state-key edges), so it ends all open
        races at once. A blind writer is tested against the maximal writers; one
        that reaches it covers everything below it, one that does not is a
        conflict and its own lower writers are tested in turn. The work follows
        the conflicts found, not the square of the writers.
        """
        found: list[tuple[int, int, str]] = []
        keys_of = self.keys
        for key in sorted(shared):
            maximal: list[int] = []
            below: dict[int, list[int]] = {}
            for b in self.writers[key]:
                if key in keys_of[b]:
                    below[b] = maximal
                    maximal = [b]
                    continue
                reaching: list[int] = []
                kept: list[int] = []
                seen: set[int] = set()
                stack = list(maximal)
                while stack:
                    m = stack.pop()
                    if m in seen:
                        continue
                    seen.add(m)
                    if self._reaches_forward(m, b):
                        reaching.append(m)
                    else:
                        found.append((m, b, key))
                        stack.extend(below.get(m, ()))
                for m in maximal:
                    if m not in reaching:
                        kept.append(m)
                below[b] = reaching
                maximal = [*kept, b]
        found.sort()
        return found

    @cached_property
    def _intervals(self) -> list[tuple[list[int], list[int]]]:
        """Two interval labelings (GRAIL): post-order rank ``r`` and ``low`` = the least
        rank below a node. If u reaches v then v's interval lies inside u's, so a
        label that is not nested answers "no" at once; nested labels prune the search."""
        succ = self.succ
        total = len(succ)
        indeg = [0] * total
        for children in succ:
            for c in children:
                indeg[c] += 1
        roots = [v for v in range(total) if not indeg[v]]
        labelings = []
        for flip in (False, True):
            rank = [-1] * total
            low = [0] * total
            counter = 0
            for root in reversed(roots) if flip else roots:
                if rank[root] >= 0:
                    continue
                first: Iterator[int] = iter(succ[root][::-1] if flip else succ[root])
                stack = [(root, first)]
                visiting = {root}
                while stack:
                    node, pending = stack[-1]
                    for child in pending:
                        if rank[child] < 0 and child not in visiting:
                            visiting.add(child)
                            nxt = succ[child][::-1] if flip else succ[child]
                            stack.append((child, iter(nxt)))
                            break
                    else:
                        stack.pop()
                        rank[node] = counter
                        low[node] = min([counter, *(low[c] for c in succ[node])])
                        counter += 1
            labelings.append((rank, low))
        return labelings

    def _reaches_forward(self, source: int, target: int) -> bool:
        """Reachability when every edge points forward: a search from ``source`` that
        the interval labels and the levels prune."""
        level, preds = self.level, self.preds
        if level[source] >= level[target]:
            return False
        # A short search back from the target settles the near cases without labels.
        floor = level[source]
        seen = {target}
        stack = [target]
        budget = self.NEAR_SEARCH
        while stack and budget:
            budget -= 1
            for p in preds[stack.pop()]:
                if p == source:
                    return True
                if p not in seen and level[p] >= floor:  # a cover node may sit at the floor
                    seen.add(p)
                    stack.append(p)
        if not stack:
            return False
        labels = self._intervals

        def may_reach(u: int) -> bool:
            return all(low[u] <= low[target] and rank[target] <= rank[u] for rank, low in labels)

        if not may_reach(source):
            return False
        succ, ceiling = self.succ, level[target]
        seen = {source}
        stack = [source]
        while stack:
            for c in succ[stack.pop()]:
                if c == target:
                    return True
                if c not in seen and level[c] <= ceiling and may_reach(c):
                    seen.add(c)
                    stack.append(c)
        return False

    def _conflicts_with_cycles(self, shared: set[str]) -> list[tuple[int, int, str]]:
        """The same triples when the graph has a cycle (no topological order): search."""
        descendants = self._descendants
        triples = []
        for key in shared:
            ws = self.writers[key]
            for x, a in enumerate(ws):
                for b in ws[x + 1 :]:
                    if b not in descendants(a) and a not in descendants(b):
                        triples.append((a, b, key))
        triples.sort()
        return triples

    def conflict_triples(self) -> list[list[str]]:
        ids = self.ids
        return [[ids[a], ids[b], key] for a, b, key in self.conflicts]

    # --- edges with reasons (for people: traces, exporters) ------------------------------------

    def edges(self) -> Iterator[Edge]:
        """Every real edge with its reason; state edges to every earlier writer of the key."""
        positions = self.positions
        for i, action in enumerate(self.actions):
            for dep in action.dependencies:
                for t in positions.get(dep, ()):
                    yield Edge(t, i, "dependency", dep)
            for ref in action.output_refs():
                for t in positions.get(ref.action_id, ()):
                    label = f"${ref.action_id}.output" + (f".{ref.path}" if ref.path else "")
                    yield Edge(t, i, "output", label)
            for key, count in self.earlier_writers[i]:
                for w in self.writers[key][:count]:
                    yield Edge(w, i, "state", key)
