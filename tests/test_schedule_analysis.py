"""``analyze_schedule`` (issue 39): the runtime's answers on generated schedule
graphs, and a proposal's own DAG as a schedule under either profile."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import car_verify.runtime as drop_in
from car_verify.base.errors import InputError
from car_verify.cli import main
from car_verify.plan.schedule_analysis import analyze_schedule, schedule_of
from tests.car_oracle import runtime

IDS = st.sampled_from(["a", "b", "c", "d", "e"])
units = st.lists(
    st.fixed_dictionaries(
        {"id": IDS},
        optional={
            "duration": st.integers(0, 4),
            "depends_on": st.lists(st.sampled_from(["a", "b", "c", "d", "e", "zz"]), max_size=3),
        },
    ),
    max_size=6,
)


def acyclic(graph: list[dict[str, Any]]) -> bool:
    """No cycle among distinct ids (what the runtime and car-verify read alike)."""
    deps: dict[str, list[str]] = {}
    for u in graph:
        deps.setdefault(u["id"], []).extend(u.get("depends_on", []))
    state: dict[str, int] = {}

    def visit(u: str) -> bool:
        if state.get(u) == 1:
            return False
        if state.get(u) == 2 or u not in deps:
            return True
        state[u] = 1
        ok = all(visit(d) for d in deps[u])
        state[u] = 2
        return ok

    return all(visit(u) for u in deps)


@settings(deadline=None, max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(units)
@example(
    [
        {"id": "a", "duration": 2},
        {"id": "b", "duration": 3},
        {"id": "c", "depends_on": ["a", "b"], "duration": 1},
    ]
)
@example(
    [
        {"id": "z", "duration": 1},
        {"id": "a", "duration": 1},
        {"id": "m", "depends_on": ["a", "z"], "duration": 1},
    ]
)
def test_the_analysis_agrees_with_the_runtime(graph: list[dict[str, Any]]) -> None:
    rt = runtime()
    doc = json.dumps({"units": graph})
    theirs = json.loads(rt.analyze_schedule(doc))
    ours = analyze_schedule(doc).to_dict()
    if acyclic(graph) and len({u["id"] for u in graph}) == len(graph):
        assert ours == theirs
    else:  # a cycle or a repeated id: said by both; what car-verify places, the runtime does
        assert ours["has_cycle"] == theirs["has_cycle"]
        placed = {u for level in ours["levels"] for u in level}
        assert placed <= {u for level in theirs["levels"] for u in level}
    assert json.loads(drop_in.analyze_schedule(doc)) == ours


def test_bad_graphs_are_input_errors_naming_the_place() -> None:
    for graph, where in [
        ({"units": [{"duration": 1}]}, "units[0].id"),
        ({"units": [{"id": "a", "duration": 0.5}]}, "units[0].duration"),
        ({"units": [{"id": "a", "depends": []}]}, "units[0]"),
        ({"units": 3}, "units"),
    ]:
        with pytest.raises(InputError, match=rf"^{where.replace('[', '.').replace(']', '.')}"):
            analyze_schedule(graph)
    with pytest.raises(ValueError, match=r"^invalid graph JSON"):
        drop_in.analyze_schedule('{"units": [{"id": 3}]}')


def test_a_proposals_own_dag_as_a_schedule_under_each_profile() -> None:
    """Beyond the runtime: the proposal's DAG, ordered as each profile orders it.
    `dependencies` order under strict and not under car, so the plan is serial
    under strict and runs its two steps at once under car."""
    plan = {
        "actions": [
            {"id": "build", "type": "tool_call", "tool": "b", "timeout_ms": 3},
            {"id": "ship", "type": "tool_call", "tool": "s", "dependencies": ["build"]},
        ]
    }
    strict = analyze_schedule(schedule_of(plan, profile="strict"))
    car = analyze_schedule(schedule_of(plan, profile="car"))
    assert strict.levels == [["build"], ["ship"]] and strict.serial
    assert strict.critical_path == ["build", "ship"] and strict.makespan == 4
    assert car.levels == [["build", "ship"]] and not car.serial and car.makespan == 3


def test_the_command(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    graph = tmp_path / "g.json"
    graph.write_text(
        json.dumps({"units": [{"id": "a", "duration": 2}, {"id": "b", "depends_on": ["a"]}]})
    )
    assert main(["schedule", str(graph)]) == 1  # serial: one unit ready at a time
    out = capsys.readouterr().out
    assert "critical path: a (makespan 2)" in out and "serial" in out
    assert main(["schedule", str(graph), "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["levels"] == [["a"], ["b"]]


def test_the_documented_output_is_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    doc = (root / "docs" / "schedule.md").read_text()
    block = doc.split("```console\n", 1)[1].split("```", 1)[0]
    command, *expected = block.splitlines()
    args = command.removeprefix("$ car-verify ").split()
    args = [str(root / a) if a.startswith("examples/") else a for a in args]
    assert main(args) == 0
    assert capsys.readouterr().out.splitlines() == expected
