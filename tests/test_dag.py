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

import car_verify
from car_verify.dag import Dag


def rungs(n: int, keys: int, lanes: int) -> list[dict[str, Any]]:
    """``lanes`` chains of explicit dependencies; every fifth action of the
    whole plan writes one of ``keys`` keys, round robin, without reading it."""
    actions: list[dict[str, Any]] = []
    for i in range(n):
        action: dict[str, Any] = {"id": f"a{i}", "type": "tool_call", "tool": "t"}
        if i >= lanes:
            action["dependencies"] = [f"a{i - lanes}"]
        if i % 5 == 0:
            action["expected_effects"] = {f"k{(i // 5) % keys}": i}
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
    assert calls["_exact_races"] == (1 if stop_early else 0)
