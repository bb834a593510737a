"""Every row of ``docs/compat.md`` stays true.

Each case is a row's smallest plan and what each profile says of it. The test runs
the plan under ``car`` and ``strict``, checks each claim, checks that the row in the
page shows this very plan, and, where ``car_runtime`` is installed, that the runtime
says what the ``car`` column says (for the rows that are CAR's behaviour).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import car_verify as cv
from car_verify.base.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "compat.md").read_text()


def tc(i: str, **kw: Any) -> dict[str, Any]:
    return {"id": i, "type": "tool_call", "tool": kw.pop("tool", "t" + i), **kw}


def codes(result: Any, severity: str | None = None) -> list[str]:
    return sorted(i.code for i in result.issues if severity is None or i.severity.value == severity)


Check = Callable[[Any], bool]


@dataclass
class Row:
    id: str
    plan: dict[str, Any]
    car: Check
    strict: Check
    state: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None
    #: Whether the runtime itself is held to the car column (False: car-verify's choice).
    runtime: bool = True


def levels(r: Any) -> list[list[str]]:
    return r.execution_levels  # type: ignore[no-any-return]


GOAL_PLAN = {
    "actions": [{"id": "w", "type": "state_write", "parameters": {"key": "x", "value": [1]}}]
}


def _goal_reached(profile: str) -> tuple[float | None, float | None]:
    """C21: ``risk``'s p_goal_reached for the goals ``x == [1.0]`` (the row's plan) and
    ``x == 1.0`` (the plan writing ``1``)."""
    one = {"actions": [{"id": "w", "type": "state_write", "parameters": {"key": "x", "value": 1}}]}
    return (
        cv.risk(GOAL_PLAN, goal={"kind": "state_predicate", "key": "x", "equals": [1.0]},
                profile=profile).p_goal_reached,
        cv.risk(one, goal={"kind": "state_predicate", "key": "x", "equals": 1.0},
                profile=profile).p_goal_reached,
    )  # fmt: skip


ROWS = [
    Row(
        "C1",
        {
            "actions": [
                tc("a", expected_effects={"k": 1}),
                tc("b", state_dependencies=["k"]),
                tc("c", expected_effects={"k": 2}),
            ]
        },
        lambda r: levels(r) == [["a", "b", "c"]] and "car-spec-deviation" in codes(r, "info"),
        lambda r: levels(r) == [["a", "c"], ["b"]],
    ),
    Row(
        "C2",
        {"actions": [tc("a", write_set=["k"]), tc("b", state_dependencies=["k"])]},
        lambda r: levels(r) == [["a", "b"]] and codes(r) == ["missing-dependency"],
        lambda r: levels(r) == [["a"], ["b"]] and codes(r) == ["missing-dependency"],
    ),
    Row(
        "C3",
        {
            "actions": [
                tc("a", expected_effects={"k": 1, "j": 1}),
                tc("b", expected_effects={"k": 2}, state_dependencies=["j"]),
            ]
        },
        lambda r: (
            r.conflicts == [["a", "b", "k"]]
            and [i.action_id for i in r.issues if i.code == "write-conflict"] == ["a"]
            and "car-spec-deviation" in codes(r)
        ),
        lambda r: r.conflicts == [],
    ),
    Row(
        "C4",
        {
            "actions": [
                tc("a", expected_effects={"k": 1}),
                tc("c", preconditions=[{"key": "k", "operator": "exists"}]),
            ]
        },
        lambda r: r.valid,
        lambda r: codes(r) == ["precondition-unsatisfied"],
    ),
    Row(
        "C5",
        {
            "actions": [
                tc("a", preconditions=[{"key": "k", "operator": "neq", "value": 1}]),
                tc("b", preconditions=[{"key": "n", "operator": "eq", "value": 1.0}]),
            ]
        },
        lambda r: codes(r) == ["precondition-unsatisfied", "precondition-unsatisfied"],
        lambda r: r.valid,
        state={"n": 1},
    ),
    Row(
        "C6",
        {"actions": [tc("a", reversibility="compensable")]},
        lambda r: codes(r, "error") == ["missing-compensation"],
        lambda r: codes(r, "warning") == ["missing-compensation"] and r.valid,
    ),
    Row(
        "C7",
        {
            "actions": [
                tc("a", failure_behavior="skip", preconditions=[{"key": "k", "operator": "exists"}])
            ]
        },
        lambda r: codes(r, "error") == ["precondition-unsatisfied"],
        lambda r: codes(r, "warning") == ["precondition-unsatisfied"] and r.valid,
    ),
    Row(
        "C8",
        {"actions": [{"id": "a", "type": "shell"}]},
        lambda r: r == "rejected",
        lambda r: codes(r) == ["unknown-action-type"],
    ),
    Row(
        "C9",
        {"actions": [tc("a", tool="t", parameters={"n": 1})]},
        lambda r: r.valid,
        lambda r: codes(r) == ["param-schema"],
        tools=[
            {
                "name": "t",
                "parameters": {
                    "type": "object",
                    "properties": {"n": {"type": "integer", "minimum": 3}},
                },
            }
        ],
    ),
    Row(
        "C10",
        {"actions": [tc(f"a{i}") for i in range(31)]},
        lambda r: (
            r.valid
            and [(i.code, i.action_id) for i in r.issues if i.severity.value == "warning"]
            == [("too-many-actions", "a0")]
        ),
        lambda r: "too-many-actions" not in codes(r),
    ),
    Row(
        "C11",
        {"actions": [tc("a", tool="poll"), tc("b", tool="poll")]},
        lambda r: codes(r) == ["duplicate-call"] and r.issues[0].action_id == "proposal",
        lambda r: codes(r) == [],
    ),
    Row(
        "C12",
        {"actions": [tc("a", tool="poll"), tc("b", tool="poll"), tc("c", tool="poll")]},
        lambda r: codes(r, "error") == ["repeated-call"] and not r.valid,
        lambda r: codes(r, "warning") == ["repeated-call"] and r.valid,
    ),
    Row(
        "C13",
        {
            "actions": [
                tc("a", expected_effects={"k": 1}),
                tc("a"),
                {"id": "w", "type": "state_write", "parameters": {"value": 1}},
            ]
        },
        lambda r: r.valid,
        lambda r: codes(r, "error") == ["duplicate-id", "state-write-without-key"],
    ),
    Row(
        "C14",
        {
            "actions": [
                tc("build"),
                tc("deploy", dependencies=["build"], parameters={"image": "$build.output"}),
            ]
        },
        lambda r: (
            levels(r) == [["build", "deploy"]]
            and codes(r) == ["dependency-overtaken", "extension-ignored"]
        ),
        lambda r: levels(r) == [["build"], ["deploy"]],
    ),
    Row(
        "C15",
        {
            "actions": [
                {
                    "id": "a",
                    "type": "assertion",
                    "parameters": {"key": "k", "operator": "eq", "value": 1},
                }
            ]
        },
        lambda r: r.valid and codes(r) == ["assertion-not-evaluated"],
        lambda r: codes(r) == ["assertion-fails"],
        state={"k": 2},
    ),
    Row(
        "C16",
        {"actions": [tc("a", preconditions=[{"key": "k", "operator": "contains", "value": 1}])]},
        lambda r: r.valid,
        lambda r: codes(r) == ["precondition-unsatisfied"],
        state={"k": [10]},
    ),
    Row(
        "C17",
        {"actions": []},
        lambda r: r.valid and codes(r) == ["empty-proposal"],  # CAR's verdict, and a note
        lambda r: codes(r) == ["empty-proposal"],
    ),
    Row(
        "C18",
        {
            "actions": [
                tc("a", tool="t", parameters={"x": 1, "y": 2}),
                tc("b", tool="t", parameters={"y": 2, "x": 1}),
            ]
        },
        lambda r: codes(r) == ["duplicate-call"],
        lambda r: codes(r) == [],
        runtime=False,
    ),
    Row(
        "C19",
        {"actions": [tc("a", expected_effects={"z": 1, "a": 2})]},
        lambda r: list(r.simulated_state) == ["z", "a"],
        lambda r: list(r.simulated_state) == ["z", "a"],
        runtime=False,
    ),
    Row(
        "C20",
        {"timestamp": "yesterday", "actions": []},
        lambda r: r == "rejected",
        lambda r: r.valid,
    ),
    Row(  # a goal's equality: the row's plan under risk (test_the_goal_check_is_the_runtimes
        # in tests/test_risk.py holds evaluate_goal and risk to the runtime's)
        "C21",
        GOAL_PLAN,
        lambda r: _goal_reached("car") == (0.0, 1.0),
        lambda r: _goal_reached("strict") == (1.0, 1.0),
    ),
]


def _run(row: Row, profile: str) -> Any:
    try:
        return cv.verify(row.plan, initial_state=row.state, tools=row.tools, profile=profile)
    except InputError:
        return "rejected"


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_each_row_holds_under_both_profiles(row: Row) -> None:
    assert row.car(_run(row, "car")), "the car column"
    assert row.strict(_run(row, "strict")), "the strict column"


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_each_row_shows_its_plan(row: Row) -> None:
    line = next((x for x in PAGE.splitlines() if x.startswith(f"| {row.id} |")), None)
    assert line is not None, f"docs/compat.md has no row {row.id}"
    if len(row.plan["actions"]) <= 6:
        assert f"`{json.dumps(row.plan, separators=(',', ':'))}`" in line


@pytest.mark.parametrize("row", [r for r in ROWS if r.runtime], ids=lambda r: r.id)
def test_the_runtime_says_what_the_car_column_says(row: Row) -> None:
    from car_oracle import assert_projection_matches

    assert_projection_matches(row.plan, row.state, row.tools)


def test_z3_decides_under_car_too_and_tells_ints_from_floats() -> None:
    a = {"actions": [tc("a", expected_effects={"k": 1})]}
    b = {"actions": [tc("a", expected_effects={"k": 1.0})]}
    for profile in ("car", "strict"):
        same = cv.equivalent(a, a, method="z3", profile=profile)
        assert same.equivalent is True and same.profile == profile
    # CAR tells 1 from 1.0 (serde_json); sections 1-8 do not.
    assert cv.equivalent(a, b, method="z3", profile="car").equivalent is False
    assert cv.equivalent(a, b, method="z3", profile="strict").equivalent is True


def test_car_messages_are_plain_words_with_json_values() -> None:
    plan = {"actions": [tc("a", preconditions=[{"key": "k", "operator": "eq", "value": 1}])]}
    message = cv.verify(plan, initial_state={"k": 2}).issues[0].message
    assert message == "precondition will fail: 'k' is 2, need 1"
    assert "Number(" not in message


def test_wp_and_the_executor_run_under_both_profiles() -> None:
    from car_verify.executor import execute_sync

    plan = {"actions": [tc("a")]}
    for profile in ("car", "strict"):
        assert cv.runs_unblocked(plan, profile=profile).satisfiable is True
        result = execute_sync(plan, {"ta": lambda p: {}}, profile=profile)
        assert result.statuses == {"a": "succeeded"}
    # neq on an absent key: false under car (the runtime's walk), true under strict
    gate = {"actions": [tc("a", preconditions=[{"key": "k", "operator": "neq", "value": 1}])]}
    assert cv.runs_unblocked(gate, profile="car").formula == "k exists and k != 1"
    assert cv.runs_unblocked(gate, profile="strict").formula == "k is absent or k != 1"


def test_the_executor_stops_as_each_profile_says() -> None:
    """docs/compat.md, "The executor against the runtime's execute": a spent retry and
    a rejection before a call stop the run under strict (the spec's failure_behavior
    table) and not under car (the runtime's execute); under both a failed skip
    action is skipped, and car runs a level in turn, stopping at an abort."""
    from car_verify.executor import execute_sync

    def boom(params: Any) -> Any:
        raise RuntimeError("down")

    tools = {"boom": boom, "ok": lambda p: {}}
    spent = {
        "actions": [
            tc("a", tool="boom", failure_behavior="retry", max_retries=1),
            tc("b", tool="ok"),
        ]
    }
    absent = {
        "actions": [
            tc("a", tool="ok", preconditions=[{"key": "k", "operator": "exists"}]),
            tc("b", tool="ok"),
        ]
    }
    for plan in (spent, absent):
        car = execute_sync(plan, tools, profile="car")
        assert car.aborted_by is None and car.statuses["b"] == "succeeded"
        strict = execute_sync(plan, tools, profile="strict")  # b ran beside a: rolled back
        assert strict.aborted_by is not None and strict.result.results[1].rolled_back
    skip = {"actions": [tc("a", tool="boom", failure_behavior="skip"), tc("b", tool="ok")]}
    for profile in ("car", "strict"):
        assert execute_sync(skip, tools, profile=profile).statuses == {
            "a": "skipped",
            "b": "succeeded",
        }
    level = {"actions": [tc("a", tool="boom"), tc("b", tool="ok")]}  # one level under both
    assert execute_sync(level, tools, profile="car").statuses == {"a": "failed", "b": "skipped"}
    assert execute_sync(level, tools, profile="strict").statuses == {
        "a": "failed",
        "b": "succeeded",
    }
