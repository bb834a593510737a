"""How `conflicts` scales where its cheap tests cannot see (issue 2: near-linear).

The short search back from a writer looks at a few nodes only; when the writers
of a key sit far apart on long paths, every question is left open. These tests
count the work instead of timing it: the open questions must be settled by a
bounded number of sweeps, not one sweep per question.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import oracle
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import proposals

import car_verify
from car_verify.semantics import _reach as dag_module
from car_verify.semantics.dag import Dag, Readiness


def rungs(n: int, keys: int, lanes: int, every: int = 5) -> list[dict[str, Any]]:
    """``lanes`` chains of explicit dependencies; every ``every``-th action of the
    whole plan writes one of ``keys`` keys, round robin, without reading it."""
    actions: list[dict[str, Any]] = []
    for i in range(n):
        action: dict[str, Any] = {"id": f"a{i}", "type": "tool_call", "tool": "t"}
        if i >= lanes:
            action["dependencies"] = [f"a{i - lanes}"]
        if i % every == 0:
            action["expected_effects"] = {f"k{(i // every) % keys}": i}
        actions.append(action)
    return actions


def counting(monkeypatch: pytest.MonkeyPatch, *names: str) -> Counter[str]:
    calls: Counter[str] = Counter()
    for name in names:
        original = getattr(Dag, name)

        def wrapper(
            self: Dag, *args: Any, _name: str = name, _f: Callable[..., Any] = original
        ) -> Any:
            calls[_name] += 1
            return _f(self, *args)

        monkeypatch.setattr(Dag, name, wrapper)
    return calls


def test_far_apart_writers_on_one_chain_take_a_bounded_number_of_sweeps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    n = 6000
    dag = Dag(car_verify.load({"actions": rungs(n, keys=24, lanes=1)}))
    calls = counting(monkeypatch, "_settle", "_sweep", "_exact_races")
    assert dag.conflicts == []  # one chain orders every pair of writers
    assert calls["_sweep"] <= 1 and calls["_exact_races"] <= 1
    assert calls["_settle"] <= 4 * n


def test_one_key_written_far_apart_along_a_chain_is_not_guessed_pair_by_pair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """300 writers of one key, 20 steps apart: the short search sees none of the
    orderings, and a race that guessed "unordered" would ask all 45,000 pairs."""
    n = 6000
    dag = Dag(car_verify.load({"actions": rungs(n, keys=1, lanes=1, every=20)}))
    calls = counting(monkeypatch, "_settle", "_exact_races")
    assert dag.conflicts == []
    assert calls["_exact_races"] == 1
    assert calls["_settle"] <= 2 * n


@pytest.mark.parametrize("self_reference", [False, True])
def test_an_id_shared_by_many_actions_adds_one_node_not_an_edge_per_pair(
    self_reference: bool,
) -> None:
    """2,000 actions share the id "x" and 2,000 more (or the same ones) depend on it:
    an edge from each to each was four million edges (10 s to verify)."""
    n = 2000
    shared = [{"id": "x", "type": "tool_call", "tool": "t"} for _ in range(n)]
    if self_reference:
        actions = [{**a, "dependencies": ["x"]} for a in shared]
    else:
        actions = [
            *shared,
            *(
                {"id": f"d{i}", "type": "tool_call", "tool": "t", "parameters": {"in": "$x.output"}}
                for i in range(n)
            ),
        ]
    dag = Dag(car_verify.load({"actions": actions}))
    assert sum(len(ps) for ps in dag._preds) <= 2 * len(actions)
    if self_reference:  # every one depends on itself: one group, one self-loop path
        (cycle,) = dag.cycles
        assert cycle.members == tuple(range(n)) and cycle.path == (0, 0)
        assert dag.levels == []
    else:
        assert dag.levels == [list(range(n)), list(range(n, 2 * n))]
        assert all(list(dag.waits_for(i)) == list(range(n)) for i in range(n, 2 * n))
        actions[0] = {**actions[0], "preconditions": [{"key": "ready", "operator": "exists"}]}
        walked = car_verify.simulate(
            {"actions": actions}, profile="strict"
        )  # the first "x" is blocked
        assert walked.blocked == ["x", *(f"d{i}" for i in range(n))]
        last = walked.trace[-1]
        assert [c.dependency for c in last.causes] == [0] and last.after == ["x"]


def test_a_long_cycle_costs_no_search_per_action_or_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    """2,000 steps, each writing and reading one counter, closed into one cycle by a
    dependency of the first step on the last: every pair of writers is one cycle
    group, answered without a search (a search per member or per pair of writers
    was quadratic: 10,000 such steps took two minutes)."""
    n = 2000
    actions: list[dict[str, Any]] = [
        {
            "id": f"s{i}",
            "type": "tool_call",
            "tool": "t",
            "expected_effects": {"counter": i},
            "state_dependencies": ["counter"] if i else [],
            "dependencies": [f"s{n - 1}"] if i == 0 else [f"s{i - 1}"],
        }
        for i in range(n)
    ]
    calls = counting(monkeypatch, "_descendants")
    result = car_verify.verify({"actions": actions}, profile="strict")
    assert calls["_descendants"] == 0
    assert result.conflicts == []
    (cycle,) = [i.message for i in result.issues if i.code == "dependency-cycle"]
    assert cycle.startswith(f"dependency cycle: s0 -> s{n - 1} -> s0 (also in the cycle: s1, s2")


@pytest.mark.slow
@pytest.mark.parametrize("lanes", [2, 3])
@pytest.mark.parametrize("stop_early", [False, True])
def test_far_apart_writers_on_parallel_chains_match_the_oracle(
    monkeypatch: pytest.MonkeyPatch, lanes: int, stop_early: bool
) -> None:
    """Writers on different lanes race, writers on the same lane do not. With
    ``stop_early`` the first pass gives up at once and the exact sweep runs."""
    actions = rungs(1100, keys=11, lanes=lanes)
    dag = Dag(car_verify.load({"actions": actions}))
    if stop_early:
        dag.OPEN_PAIR_LIMIT = 0
    calls = counting(monkeypatch, "_sweep", "_exact_races")
    ids = dag.ids
    got = [[ids[a], ids[b], key] for a, b, key in dag.conflicts]
    assert got == oracle.conflicts(actions)
    assert got  # the lanes race
    assert calls["_sweep"] <= 1
    assert calls["_exact_races"] == 1 if stop_early else calls["_exact_races"] <= 1


@given(
    proposals(max_actions=8),
    st.integers(1, 3),
    st.sampled_from([0, 1000]),
    st.sampled_from([1, 2, 1024]),
    st.sampled_from([1, 2, 64]),
)
def test_writers_not_before_agree_with_the_oracle(
    doc: dict[str, Any], batch: int, pairs_per_action: int, window: int, chain_min: int
) -> None:
    """Counts and first names of the writers not ordered before an action, asked
    pair by pair, along a chain of writers or by the bitset sweep, however the
    writers are cut into batches and their bits scanned (and with cycles, where a
    search answers)."""
    dag_module._WINDOW, before = window, dag_module._WINDOW
    try:
        dag = Dag(car_verify.load(doc))
        dag.MIN_BATCH, dag.BITSET_BUDGET = batch, 1
        dag.PAIRS_PER_ACTION, dag.CHAIN_MIN = pairs_per_action, chain_min
        edges, _ = oracle.edges(doc["actions"])
        reach = oracle.closure(dag.n, edges)
        queries = [(i, key) for i in range(dag.n) for key in [*dag.writers, "unwritten"]]
        got = dag.writers_not_before(queries, first=2)
        for i, key in queries:
            late = [w for w in dag.writers.get(key, ()) if w != i and i not in reach[w]]
            assert got[(i, key)] == (len(late), late[:2])
    finally:
        dag_module._WINDOW = before


def test_many_readers_of_a_key_with_many_writers_are_not_asked_pair_by_pair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """1,000 chained writers of a flag, 1,000 readers whose precondition fails:
    a million (writer, reader) pairs, answered by bit counts in one sweep."""
    actions: list[dict[str, Any]] = []
    for i in range(2000):
        action: dict[str, Any] = {"id": f"a{i}", "type": "tool_call", "tool": "t"}
        if i % 2 == 0:
            action["expected_effects"] = {"flag": False}
            if i:
                action["dependencies"] = [f"a{i - 2}"]
        else:
            action["preconditions"] = [{"key": "flag", "operator": "eq", "value": True}]
        actions.append(action)
    calls = counting(monkeypatch, "_settle")
    result = car_verify.verify({"actions": actions}, profile="strict")
    assert calls["_settle"] <= 2 * len(actions)
    last = [i for i in result.issues if i.code == "precondition-unsatisfied"][-1]
    assert last.action_id == "a1999"
    assert "written by a0, a2, a4, a6, a8 and 995 more, not ordered before" in last.message


def test_a_failing_precondition_on_a_key_nobody_writes_beside_many_racing_writers() -> None:
    """Enough (writer, reader) pairs for the bitset sweep, whose readers also need a
    key that no action writes: that key has no writers to count (it raised KeyError)."""
    actions: list[dict[str, Any]] = [
        {"id": f"w{i}", "type": "tool_call", "tool": "t", "expected_effects": {"flag": False}}
        for i in range(20)
    ]
    actions += [
        {
            "id": f"r{i}",
            "type": "tool_call",
            "tool": "t",
            "preconditions": [
                {"key": "flag", "value": True},
                {"key": "ghost", "operator": "exists"},
            ],
        }
        for i in range(20)
    ]
    result = car_verify.verify({"actions": actions}, profile="strict")
    messages = [i.message for i in result.issues if i.action_id == "r19"]
    assert any("'ghost' is absent and no action writes it" in m for m in messages)
    assert any(
        "written by w0, w1, w2, w3, w4 and 15 more, not ordered before" in m for m in messages
    )


def _closure(n: int, pairs: set[tuple[int, int]]) -> set[tuple[int, int]]:
    reach = set(pairs)
    for k in range(n):  # Floyd-Warshall on booleans
        for a in range(n):
            if (a, k) in reach:
                reach |= {(a, b) for b in range(n) if (k, b) in reach}
    return reach


@given(proposals(max_actions=8))
def test_drawn_edges_are_real_and_keep_what_reaches_what(doc: dict[str, Any]) -> None:
    dag = Dag(car_verify.load(doc))
    every = {(e.source, e.target) for e in dag.edges()}
    drawn = {(e.source, e.target) for e in dag.edges(implied=False)}
    assert drawn <= every
    assert _closure(dag.n, drawn) == _closure(dag.n, every)


def test_a_read_modify_write_chain_draws_one_state_edge_per_step() -> None:
    steps = [
        {"id": f"s{i}", "type": "tool_call", "tool": "t", "state_dependencies": ["count"],
         "expected_effects": {"count": i}}
        for i in range(300)
    ]  # fmt: skip
    dag = Dag(car_verify.load({"actions": steps}))
    assert len(list(dag.edges())) == 300 * 299 // 2
    assert [(e.source, e.target) for e in dag.edges(implied=False)] == [
        (i, i + 1) for i in range(299)
    ]


@given(proposals(max_actions=8), st.randoms(use_true_random=False))
def test_readiness_follows_every_schedule_like_a_scan_of_the_real_edges(
    doc: dict[str, Any], rng: Any
) -> None:
    """Finishing ready actions one at a time in a random order, what ``Readiness``
    says may start next is exactly what a scan of the real edges says (no cover
    node, cycle or duplicate id changes that)."""
    dag = Dag(car_verify.load(doc))
    edges, _ = oracle.edges(doc["actions"])
    levels = oracle.levels(doc["actions"])
    walkable = {i for i in range(dag.n) if levels[i] is not None}
    waits = {i: {p for p, q in edges if q == i} for i in range(dag.n)}
    readiness = Readiness(dag)

    def scan(done: set[int]) -> tuple[int, ...]:
        return tuple(i for i in sorted(walkable - done) if waits[i] <= done)

    done: set[int] = set()
    ready = readiness.first()
    assert ready == scan(done)
    while ready:
        finished = rng.choice(ready)
        done.add(finished)
        pending = sum(1 << i for i in walkable - done)
        ready = readiness.after(ready, finished, pending)
        assert ready == scan(done)
    assert done == walkable


def test_only_a_key_with_a_later_writer_that_does_not_read_it_gets_a_race(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Writers that read the key they write are ordered after every earlier writer
    by their state edges: such a key can have no race, and none is run for it."""
    actions: list[dict[str, Any]] = []
    for i in range(300):
        key = f"k{i % 100}"
        action: dict[str, Any] = {"id": f"a{i}", "type": "tool_call", "tool": "t"}
        action["expected_effects"] = {key: i}
        if i >= 100:  # every later writer reads its key ...
            action["state_dependencies"] = [key]
        actions.append(action)
    actions[250]["state_dependencies"] = []  # ... but one, a blind writer of k50
    dag = Dag(car_verify.load({"actions": actions}))
    assert dag.blind_writers == {"k50": [250]}
    calls = counting(monkeypatch, "_race")
    got = [[dag.ids[a], dag.ids[b], key] for a, b, key in dag.conflicts]
    assert got == oracle.conflicts(actions) == [["a50", "a250", "k50"], ["a150", "a250", "k50"]]
    assert calls["_race"] == 1


@given(proposals(max_actions=8))
def test_blind_writers_are_the_later_writers_that_do_not_depend_on_their_key(
    doc: dict[str, Any],
) -> None:
    dag = Dag(car_verify.load(doc))
    expected: dict[str, list[int]] = {}
    for key, writers in dag.writers.items():
        blind = [w for w in writers[1:] if key not in dag.actions[w].depended_keys()]
        if blind:
            expected[key] = blind
    assert dag.blind_writers == expected
