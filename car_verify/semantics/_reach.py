"""The reachability engine behind :class:`car_verify.semantics.dag.Dag`'s questions.

"Does A reach B", for one pair or many, and the write conflicts that rest on it,
answered on the DAG's nodes (actions, then its helper nodes): cheap tests first
(levels, a short search back from the target), then the pairs left open settled
together by one sweep of the topological order carrying ancestor bitsets over
their sources only. The tuning constants below choose how the work is split,
never the answer (a Hypothesis test runs every setting against an oracle).

Only ``dag.py`` imports this module: :class:`Dag` is built on :class:`Reachability`
and is the API; callers never see a helper node.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from itertools import pairwise
from typing import TypeVar

__all__ = ["Reachability", "bitmask"]

_G = TypeVar("_G")


class Reachability:
    """What :class:`~car_verify.semantics.dag.Dag` asks of its nodes, answered fast."""

    # The ordering facts, set by Dag.__init__ (nodes: the actions, then helper nodes).
    n: int
    writers: dict[str, list[int]]
    blind_writers: dict[str, list[int]]
    unlevelled: list[int]
    order_is_proposal_order: bool
    _preds: list[Sequence[int]]
    _order: list[int]
    _level: list[int]
    _descendant_cache: dict[int, set[int]]

    def is_writer(self, key: str, i: int) -> bool:
        """Whether action ``i`` writes ``key`` (``writers`` lists are ascending)."""
        ws = self.writers.get(key, ())
        at = bisect_left(ws, i)
        return at < len(ws) and ws[at] == i

    @cached_property
    def _succ(self) -> list[list[int]]:
        """Successor lists of every node (actions, then cover nodes)."""
        succ: list[list[int]] = [[] for _ in self._preds]
        for node, ps in enumerate(self._preds):
            for p in ps:
                succ[p].append(node)
        return succ

    @cached_property
    def _groups(self) -> tuple[list[set[int]], dict[int, int]]:
        """The strongly connected groups of the nodes on or after a cycle, in
        topological order of the groups, and each such node's group index."""
        import networkx as nx

        stuck = {node for node, lvl in enumerate(self._level) if lvl < 0}
        graph: nx.DiGraph[int] = nx.DiGraph()
        graph.add_nodes_from(stuck)
        graph.add_edges_from((p, node) for node in stuck for p in self._preds[node] if p in stuck)
        condensed = nx.condensation(graph)
        groups = [set(condensed.nodes[g]["members"]) for g in nx.topological_sort(condensed)]
        return groups, {node: g for g, members in enumerate(groups) for node in members}

    def _descendants(self, source: int) -> set[int]:
        """Every node a path leads to from ``source`` (plain search, cached; the cold
        path for graphs with cycles, where levels cannot prune)."""
        cache = self._descendant_cache
        found = cache.get(source)
        if found is None:
            found = set()
            stack = [source]
            while stack:
                for s in self._succ[stack.pop()]:
                    if s not in found:
                        found.add(s)
                        stack.append(s)
            cache[source] = found
        return found

    # --- reachability and conflicts --------------------------------------------------------
    #
    # A reachability question is first put to cheap tests (levels, a short search back
    # from the target); the pairs they leave open are answered together by one sweep
    # of the topological order carrying ancestor bitsets over their sources only.

    #: Nodes the short search back from a target may expand before it gives up.
    NEAR_SEARCH = 16
    # Ancestor bitsets are computed over a *batch* of sources at a time: a bit per
    # source, so an int's size is bounded by the batch, and the total memory by
    # BITSET_BUDGET bits however wide the DAG is.
    BITSET_BUDGET = 1 << 32
    MIN_BATCH = 4096

    def reaches(self, source: int, target: int) -> bool:
        """True when a path leads from action ``source`` to action ``target``."""
        return (source, target) in self.reachable([(source, target)])

    def reachable(self, pairs: Iterable[tuple[int, int]]) -> set[tuple[int, int]]:
        """The pairs ``(a, b)`` of actions for which a path leads from a to b."""
        found: set[tuple[int, int]] = set()
        open_pairs: list[tuple[int, int]] = []
        for pair in pairs:
            answer = self._settle(*pair)
            if answer is None:
                open_pairs.append(pair)
            elif answer:
                found.add(pair)
        return found | self._sweep(open_pairs)

    def _settle(self, source: int, target: int, search: int | None = None) -> bool | None:
        """Answer cheaply, or None: equal nodes, cycles (a search), levels, then a
        short search back from ``target`` that never goes below ``source``'s level
        and expands at most ``search`` nodes (default NEAR_SEARCH)."""
        if source == target:
            return False
        level = self._level
        floor = level[source]
        if floor < 0 or level[target] < 0:
            if floor < 0 and level[target] < 0:
                group = self._groups[1]
                if group[source] == group[target]:
                    return True  # two nodes of one cycle group reach each other
            return target in self._descendants(source)
        if floor >= level[target]:
            return False
        preds = self._preds
        if search == 1:  # the target's own edges (the search below, without its lists)
            ps = preds[target]
            if source in ps:
                return True
            for p in ps:
                if level[p] >= floor:
                    return None
            return False
        seen = {target}
        stack = [target]
        budget = self.NEAR_SEARCH if search is None else search
        while stack and budget:
            budget -= 1
            for p in preds[stack.pop()]:
                if p == source:
                    return True
                if p not in seen and level[p] >= floor:  # a cover node may sit at the floor
                    seen.add(p)
                    stack.append(p)
        return None if stack else False

    @cached_property
    def _topo_position(self) -> list[int]:
        where = [-1] * len(self._preds)
        for position, node in enumerate(self._order):
            where[node] = position
        return where

    def _sweep(self, pairs: list[tuple[int, int]]) -> set[tuple[int, int]]:
        """Exact answers for pairs of levelled actions: walk the topological order from
        the first source to the last target, each node's ancestors a bitset over the
        batch's sources (bit j: ``batch[j]`` reaches the node). A node's bitset is
        dropped once its last successor has read it."""
        found: set[tuple[int, int]] = set()
        if not pairs:
            return found
        where, order = self._topo_position, self._order
        sources = sorted({a for a, _ in pairs}, key=where.__getitem__)
        size = self._batch_size()
        for first in range(0, len(sources), size):
            batch = sources[first : first + size]
            bit = {source: j for j, source in enumerate(batch)}
            wanted: dict[int, list[int]] = {}
            for a, b in pairs:
                if a in bit:
                    wanted.setdefault(b, []).append(a)
            stop = max(map(where.__getitem__, wanted))
            stretch = order[where[batch[0]] : stop + 1]
            for node, ancestors in self._ancestor_bits(stretch, bit, wanted):
                asked = wanted[node]
                if asked:
                    found.update((a, node) for a in asked if ancestors >> bit[a] & 1)
        return found

    #: Up to this many (writer, reader) pairs per action, ``writers_not_before`` asks
    #: them one by one; beyond, one bitset sweep answers every reader at once.
    PAIRS_PER_ACTION = 4

    def writers_not_before(
        self, queries: Iterable[tuple[int, str]], first: int = 5
    ) -> dict[tuple[int, str], tuple[int, list[int]]]:
        """For each ``(action, key)``: how many writers of ``key`` other than the action
        do not reach it, and the first ``first`` of them in proposal order.

        Few (writer, action) pairs are asked one by one through :meth:`reachable`.
        Many (a key with many writers and many readers) are answered without asking
        them: along the chain when the key's writers form one (:meth:`_late_on_chain`),
        else by one sweep per batch of writers, each node's ancestors a bitset over
        the batch, so that each reader costs a bit count, not a question per writer.
        """
        asked: dict[int, list[str]] = {}
        for node, key in queries:
            keys = asked.setdefault(node, [])
            if key not in keys:
                keys.append(key)
        out: dict[tuple[int, str], tuple[int, list[int]]] = {}
        pairs = sum(len(self.writers.get(key, ())) for keys in asked.values() for key in keys)
        if pairs <= self.PAIRS_PER_ACTION * self.n or self.unlevelled:
            # Few questions (or a cycle): ask them as pairs, most settle cheaply. A
            # writer at the reader's level or above cannot reach it (_settle's level
            # test, here before a pair is even made: it settles most of them).
            level = self._level
            ordered = self.reachable(
                [
                    (w, node)
                    for node, keys in asked.items()
                    for key in keys
                    for w in self.writers.get(key, ())
                    if w != node and (level[w] < level[node] or level[node] < 0)
                ]
            )
            for node, keys in asked.items():
                for key in keys:
                    late = [
                        w
                        for w in self.writers.get(key, ())
                        if w != node and (w, node) not in ordered
                    ]
                    out[(node, key)] = (len(late), late[:first])
            return out
        for node, keys in asked.items():
            for key in keys:
                out[(node, key)] = (0, [])
        wanted = {key for keys in asked.values() for key in keys if key in self.writers}
        for key in self._chains(wanted):
            self._late_on_chain(key, [node for node, ks in asked.items() if key in ks], out, first)
            wanted.discard(key)
        asked = {node: [k for k in keys if k in wanted] for node, keys in asked.items()}
        asked = {node: keys for node, keys in asked.items() if keys}
        if not asked:
            return out
        writers = sorted({w for key in wanted for w in self.writers.get(key, ())})
        where, order = self._topo_position, self._order
        size = self._batch_size()
        readers = [where[node] for node in asked]
        stop = max(readers)
        for start in range(0, len(writers), size):
            batch = writers[start : start + size]  # proposal order: bit j is batch[j]
            bit = {w: j for j, w in enumerate(batch)}
            masks = {
                key: bitmask([bit[w] for w in self.writers[key] if w in bit], len(batch))
                for key in wanted
            }
            counts = {key: mask.bit_count() for key, mask in masks.items()}
            begin = min(min(readers), *map(where.__getitem__, batch))
            for node, ancestors in self._ancestor_bits(order[begin : stop + 1], bit, asked):
                reading = asked[node]
                own = bit.get(node)
                for key in reading:
                    mine = own is not None and self.is_writer(key, node)
                    racing = counts[key] - (masks[key] & ancestors).bit_count() - mine
                    if racing:
                        count, names = out[(node, key)]
                        out[(node, key)] = (count + racing, names)
                        if len(names) < first:
                            names.extend(
                                batch[j]
                                for j in _low_bits(masks[key], ancestors, own, first - len(names))
                            )
        return out

    #: A key with at least this many writers, all of them in one chain, is counted
    #: along the chain by ``writers_not_before`` instead of with bitsets.
    CHAIN_MIN = 64

    def _chains(self, keys: Iterable[str]) -> list[str]:
        """The keys (of CHAIN_MIN writers or more) whose writers are totally ordered:
        each reaches the next. Only when proposal order is topological, so that the
        chain's order is also the order in which writers are named."""
        if not self.order_is_proposal_order:
            return []
        long = sorted(k for k in keys if len(self.writers.get(k, ())) >= self.CHAIN_MIN)
        chains = self.totally_ordered({k: self.writers[k] for k in long})
        return [k for k in long if k in chains]

    def totally_ordered(self, groups: Mapping[_G, Iterable[int]]) -> set[_G]:
        """The groups of actions that form one chain (in topological order each reaches
        the next, so every two are ordered), asked as one question per consecutive pair;
        none when the graph has a cycle."""
        if self.unlevelled:
            return set()
        where = self._topo_position
        steps = {
            group: list(pairwise(sorted(set(nodes), key=where.__getitem__)))
            for group, nodes in groups.items()
        }
        reached = self.reachable(pair for pairs in steps.values() for pair in pairs)
        return {group for group, pairs in steps.items() if reached.issuperset(pairs)}

    def _late_on_chain(
        self,
        key: str,
        readers: list[int],
        out: dict[tuple[int, str], tuple[int, list[int]]],
        first: int,
    ) -> None:
        """``writers_not_before`` for a key whose writers form a chain: the writers
        that reach a node are a prefix of the chain, up to the latest one that does,
        which one sweep finds for every node (linear, whatever the number of writers)."""
        writers = self.writers[key]
        index = {w: j for j, w in enumerate(writers)}
        preds, where = self._preds, self._topo_position
        latest = [-1] * len(preds)  # per node: the index of the latest writer reaching it
        stop = max(where[r] for r in readers)
        for node in self._order[where[writers[0]] : stop + 1]:
            best = -1
            for p in preds[node]:
                v = max(latest[p], index.get(p, -1))
                if v > best:
                    best = v
            latest[node] = best
        for r in readers:
            reach = latest[r]
            own = index.get(r, -1)
            late = len(writers) - reach - 1 - (own > reach)
            names = [w for w in writers[reach + 1 : reach + 2 + first] if w != r]
            out[(r, key)] = (late, names[:first])

    def _batch_size(self) -> int:
        """Sources per sweep: a bit each, so that the bitsets stay within BITSET_BUDGET."""
        return max(self.MIN_BATCH, self.BITSET_BUDGET // max(1, len(self._preds)))

    def _ancestor_bits(
        self, nodes: Sequence[int], bit: Mapping[int, int], wanted: Container[int]
    ) -> Iterator[tuple[int, int]]:
        """Walk ``nodes``, a stretch of the topological order, yielding each node of
        ``wanted`` with its ancestors among the sources of ``bit`` as a bitset (bit
        ``bit[s]`` set: source ``s`` reaches the node; a source's own bit is added after
        it is yielded). A node's bitset is dropped once its last successor has read it
        (an empty one is never stored, so only a stored one is counted down)."""
        preds = self._preds
        remaining = list(self._successor_counts)
        carried = [0] * len(preds)
        for node in nodes:
            ancestors = 0
            for p in preds[node]:
                value = carried[p]
                if value:
                    ancestors = ancestors | value if ancestors else value
                    left = remaining[p] = remaining[p] - 1
                    if not left:
                        carried[p] = 0
            if node in wanted:
                yield node, ancestors
            own = bit.get(node)
            value = ancestors if own is None else ancestors | 1 << own
            if value and remaining[node]:
                carried[node] = value

    @cached_property
    def _successor_counts(self) -> list[int]:
        counts = [0] * len(self._preds)
        for ps in self._preds:
            for p in ps:
                counts[p] += 1
        return counts

    #: Open pairs the first pass of ``conflicts`` may collect before it stops early
    #: (and at most two per action: more means the guesses are failing).
    OPEN_PAIR_LIMIT = 1 << 16
    #: Guesses one key's race may rely on, per writer of the key, before that key is
    #: left to the exact races: the guesses of a race whose writers are ordered but
    #: far apart (a chain the short search cannot see) grow with the square of them.
    GUESSES_PER_WRITER = 2
    #: Nodes the first pass of ``conflicts`` expands before it guesses: the target
    #: alone, so a direct edge settles a pair. Its open pairs all go to one sweep, and
    #: a longer search cost more than the sweep it spared (docs/performance.md).
    GUESS_SEARCH = 1

    @cached_property
    def conflicts(self) -> list[tuple[int, int, str]]:
        """Every ``(a, b, key)``: a before b, both write key, neither reaches the other.

        Only a key with a blind writer after its first (``blind_writers``) can have
        a race: a writer that reads the key is reached by every earlier writer. A
        first pass runs each such key's :class:`_Race` with the cheapest answers of
        :meth:`_settle` (levels and direct edges: ``GUESS_SEARCH``), counting an open
        pair as unordered so that it asks what an exact run would ask. The open pairs
        are then settled in one :meth:`_sweep`; a key whose guesses all held keeps its
        triples. The others, a key whose race needed more than GUESSES_PER_WRITER
        guesses per writer, and the keys left when too many pairs were open, are run
        again with exact answers, all in one more sweep (:meth:`_exact_races`). So the
        first pass does work in proportion to the writers and the conflicts, whatever
        the plan's shape.
        """
        shared = list(self.blind_writers)  # the keys that can have a race
        if not shared:
            return []
        if self.unlevelled:
            return self._conflicts_with_cycles(shared)
        known: dict[tuple[int, int], bool | None] = {}
        open_pairs: list[tuple[int, int]] = []
        guesses: list[tuple[int, int]] = []  # the open pairs the current key relied on
        limit = min(self.OPEN_PAIR_LIMIT, 2 * self.n)
        allowed = 0  # guesses the current key may rely on

        def cheap(a: int, b: int) -> bool:
            pair = (a, b)
            if pair in known:
                answer = known[pair]
            else:
                answer = known[pair] = self._settle(a, b, self.GUESS_SEARCH)
                if answer is None:
                    open_pairs.append(pair)
            if answer is None:
                guesses.append(pair)
                if len(guesses) > allowed or len(open_pairs) > limit:
                    raise _Unsettled  # guessing is failing: stop
            return bool(answer)

        found: list[tuple[int, int, str]] = []
        guessed: list[tuple[str, list[tuple[int, int, str]], list[tuple[int, int]]]] = []
        again: list[str] = []
        for position, key in enumerate(shared):
            if len(open_pairs) > limit:  # the short search cannot see these paths:
                again.extend(shared[position:])  # stop guessing
                break
            guesses = []
            allowed = self.GUESSES_PER_WRITER * len(self.writers[key])
            try:
                triples = self._race(key, cheap)
            except _Unsettled:
                again.append(key)
                continue
            if guesses:
                guessed.append((key, triples, guesses))
            else:
                found.extend(triples)
        if open_pairs:
            reached = self._sweep(open_pairs)
            for pair in open_pairs:
                known[pair] = pair in reached
            for key, triples, relied_on in guessed:
                if reached.isdisjoint(relied_on):
                    found.extend(triples)  # every guess "unordered" was right
                else:
                    again.append(key)

        def settled(a: int, b: int) -> bool:
            answer = known.get((a, b))
            if answer is None:
                answer = known[(a, b)] = self._settle(a, b)
                if answer is None:
                    raise _Unsettled
            return answer

        unsettled: list[str] = []
        for key in again:  # what is known may now be enough
            try:
                found.extend(self._race(key, settled))
            except _Unsettled:
                unsettled.append(key)
        if unsettled:
            found.extend(self._exact_races(unsettled))
        found.sort()
        return found

    def _race(self, key: str, reaches: Callable[[int, int], bool]) -> list[tuple[int, int, str]]:
        """The conflicts on ``key``, given a reachability test (see :class:`_Race`)."""
        writers = self.writers[key]
        race = _Race(key, self.blind_writers[key])
        if not self.order_is_proposal_order:
            writers = sorted(writers, key=self._topo_position.__getitem__)
        visit = race.visit
        for b in writers:
            visit(b, reaches)
        return race.found

    def _exact_races(self, keys: list[str]) -> list[tuple[int, int, str]]:
        """Run the races of ``keys`` with exact answers, all in one topological sweep.

        Each writer of these keys gets a bit when the sweep passes it; a node's
        ancestors are a bitset over the writers before it, and a writer's race steps
        run when the sweep reaches it, so every question is a bit test. The bitsets
        are as wide as the writers of ``keys``; a node's is dropped once its last
        successor has read it.
        """
        all_races = [_Race(key, self.blind_writers[key]) for key in keys]
        races: dict[int, list[_Race]] = {}
        for race in all_races:
            for w in self.writers[race.key]:
                races.setdefault(w, []).append(race)
        where = self._topo_position
        writers = sorted(races, key=where.__getitem__)
        bit = {w: j for j, w in enumerate(writers)}
        stretch = self._order[where[writers[0]] : where[writers[-1]] + 1]
        for node, ancestors in self._ancestor_bits(stretch, bit, races):

            def reaches(m: int, b: int, known: int = ancestors) -> bool:
                return known >> bit[m] & 1 == 1

            for race in races[node]:
                race.visit(node, reaches)
        return [t for race in all_races for t in race.found]

    def _conflicts_with_cycles(self, shared: list[str]) -> list[tuple[int, int, str]]:
        """The same triples when the graph has a cycle. The actions have no topological
        order, but their strongly connected groups do: the levelled nodes in their
        order, then the groups of the rest. Each key's :class:`_Race` visits its
        writers in that order; two writers of one group reach each other, and
        :meth:`_settle` knows it, so a long cycle costs no search per pair."""
        rank = {node: r for r, node in enumerate(self._order)}
        base = len(self._order)
        for g, members in enumerate(self._groups[0]):
            for node in members:
                rank[node] = base + g

        def reaches(a: int, b: int) -> bool:
            answer = self._settle(a, b)
            return answer if answer is not None else b in self._descendants(a)

        found: list[tuple[int, int, str]] = []
        for key in shared:
            race = _Race(key, self.blind_writers[key])
            for b in sorted(self.writers[key], key=rank.__getitem__):
                race.visit(b, reaches)
            found.extend(race.found)
        found.sort()
        return found


class _Unsettled(Exception):
    """A reachability question the cheap tests and the known answers cannot settle."""


class _Race:
    """The write races on one key, found by visiting its writers in topological order.

    It keeps the *maximal* writers visited so far (no later-visited writer reaches
    them) and, per writer, the maximal earlier writers that reach it. A writer
    that reads the key and comes after every writer visited so far is reached by
    all of them (the state-key edges), so it ends all open races at once. Any
    other writer is tested against the maximal writers; one that reaches it covers
    everything below it, one that does not is a conflict and its own lower writers
    are tested in turn. The work follows the conflicts found, not the square of
    the writers.
    """

    __slots__ = ("below", "blind", "found", "key", "latest", "maximal")

    def __init__(self, key: str, blind: list[int]) -> None:
        self.key = key
        # The writers after the first that do not read the key (a set once a scan
        # of the list would cost more than building it).
        self.blind: Container[int] = blind if len(blind) <= 8 else set(blind)
        self.found: list[tuple[int, int, str]] = []
        self.maximal: list[int] = []
        self.below: dict[int, list[int]] = {}
        self.latest = -1

    def visit(self, b: int, reaches: Callable[[int, int], bool]) -> None:
        """Take the next writer ``b``; ``reaches(m, b)`` answers for earlier writers m."""
        key = self.key
        if b > self.latest:
            self.latest = b
            if b not in self.blind or not self.maximal:  # b reads the key (or is the first)
                self.below[b] = self.maximal
                self.maximal = [b]
                return
        found, below = self.found, self.below
        reaching: list[int] = []
        seen: set[int] = set()
        stack = list(self.maximal)
        if len(stack) == 1:  # one maximal writer, asked before the search is set up:
            m = stack.pop()
            if reaches(m, b):  # a step along a chain, b covers m
                below[b] = self.maximal
                self.maximal = [b]
                return
            found.append((m, b, key) if m < b else (b, m, key))
            seen.add(m)
            stack.extend(below.get(m, ()))
        while stack:
            m = stack.pop()
            if m in seen:
                continue
            seen.add(m)
            if reaches(m, b):
                reaching.append(m)
            else:
                found.append((m, b, key) if m < b else (b, m, key))
                stack.extend(below.get(m, ()))
        below[b] = reaching
        maximal = [m for m in self.maximal if m not in reaching]
        maximal.append(b)
        self.maximal = maximal


def bitmask(indexes: list[int], width: int) -> int:
    """The int with exactly the bits ``indexes`` set (linear in ``width``)."""
    buffer = bytearray((width + 7) // 8)
    for j in indexes:
        buffer[j >> 3] |= 1 << (j & 7)
    return int.from_bytes(buffer, "little")


_WINDOW = 1 << 10  # bits looked at a time by _low_bits


def _low_bits(mask: int, ancestors: int, own: int | None, wanted: int) -> list[int]:
    """The lowest ``wanted`` bits set in ``mask`` but not in ``ancestors`` (nor ``own``),
    looked for a window at a time so that an early find never touches the whole int."""
    found: list[int] = []
    window = _WINDOW
    cut = (1 << window) - 1
    low = 0
    while len(found) < wanted and mask >> low:
        part = (mask >> low) & cut & ~((ancestors >> low) & cut)
        if own is not None and low <= own < low + window:
            part &= ~(1 << (own - low))
        while part and len(found) < wanted:
            lowest = part & -part
            found.append(low + lowest.bit_length() - 1)
            part ^= lowest
        low += window
    return found
