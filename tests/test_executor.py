"""The executor: admission, levels, failure behaviours, costs, caching, rate limits,
detached tools, the event log, budgets and rollback."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import proposals, states

import car_verify
from car_verify.base.events import read_events
from car_verify.cli import main
from car_verify.executor import CostBudget, Gate
from car_verify.executor import Executor as _Executor
from car_verify.executor import execute as _execute
from car_verify.executor import execute_sync as _execute_sync
from car_verify.ir.model import ActionStatus
from car_verify.rules.policy import PolicyEngine, load_policy_text


# These tests pin the executor's strict walk (docs/semantics.md §1-8: dependencies order and
# block, a level on its start state); tests/test_semantics.py runs it under car.
def execute_sync(*args: Any, **kwargs: Any) -> Any:
    kwargs.setdefault("profile", "strict")
    return _execute_sync(*args, **kwargs)


def Executor(*args: Any, **kwargs: Any) -> Any:
    kwargs.setdefault("profile", "strict")
    return _Executor(*args, **kwargs)


def execute(*args: Any, **kwargs: Any) -> Any:
    kwargs.setdefault("profile", "strict")
    return _execute(*args, **kwargs)


pytestmark = pytest.mark.usefixtures("strict_cli")


def tc(action_id: str, tool: str = "ok", **extra: Any) -> dict[str, Any]:
    return {
        "id": action_id,
        "type": "tool_call",
        "tool": tool,
        "parameters": {"n": action_id},
        **extra,
    }


def ok(params: dict[str, Any]) -> Any:
    return {"done": params.get("n")}


def boom(params: dict[str, Any]) -> Any:
    raise RuntimeError("boom")


TOOLS = {"ok": ok, "boom": boom}


def statuses(result: Any) -> dict[str, str]:
    return result.statuses


# --- the CostSummary table and the lifecycle ----------


def test_cost_summary_counts_as_the_spec_table_says() -> None:
    doc = {
        "actions": [
            tc("s1"),
            tc("f1", "boom", failure_behavior="skip"),
            tc("r1", preconditions=[{"key": "never"}], failure_behavior="skip"),
            tc("r2", dependencies=["f1"], failure_behavior="skip"),
            tc("a1", "boom", dependencies=["s1"]),
            tc("k1", dependencies=["a1"]),
        ]
    }
    result = execute_sync(doc, TOOLS)
    assert statuses(result) == {
        "s1": "succeeded",
        "f1": "skipped",  # skip: "mark this action skipped and continue"
        "r1": "rejected",
        "r2": "rejected",
        "a1": "failed",
        "k1": "skipped",
    }
    cost = result.result.cost
    assert (cost.actions_executed, cost.actions_rejected, cost.actions_skipped) == (2, 2, 2)
    # tool_calls counts the calls that succeeded (s1's, rolled back), as the runtime does
    assert cost.tool_calls == 1 and cost.retries == 0
    assert set(result.to_dict()) == {"proposal_id", "results", "cost"}


@pytest.mark.parametrize("behavior", ["abort", "retry", "skip"])
@pytest.mark.parametrize("outcome", ["succeeds", "errors", "precondition", "policy"])
def test_failure_behavior_by_outcome(behavior: str, outcome: str) -> None:
    calls: list[str] = []

    def tool(params: dict[str, Any]) -> Any:
        calls.append("x")
        if outcome == "errors":
            raise RuntimeError("tool error")
        return 1

    action = tc("x", "t", failure_behavior=behavior, max_retries=2)
    if outcome == "precondition":
        action["preconditions"] = [{"key": "ready", "value": True}]
    doc = {"actions": [action, tc("other", "ok"), tc("after", "ok", dependencies=["x", "other"])]}
    engine = PolicyEngine()
    if outcome == "policy":
        engine.register_policy("no_t", "deny_tool", "t")
    result = execute_sync(doc, {"t": tool, "ok": ok}, policies=engine)
    got = statuses(result)
    stops = behavior != "skip"
    if outcome == "succeeds":
        assert got == {"x": "succeeded", "other": "succeeded", "after": "succeeded"}
        assert result.rollback is None
        return
    # an error under skip: "mark this action skipped and continue" (the spec's table)
    expected_x = (
        ("skipped" if behavior == "skip" else "failed") if outcome == "errors" else "rejected"
    )
    assert got["x"] == expected_x and got["other"] == "succeeded"
    assert got["after"] == ("skipped" if stops else "rejected")
    assert (result.aborted_by is not None) == stops
    retries = 2 if (behavior == "retry" and outcome == "errors") else 0
    assert result.result.cost.retries == retries
    assert len(calls) == (1 + retries if outcome == "errors" else 0)  # a denied call is not retried
    if outcome == "policy":
        assert [v.policy_name for v in result.violations] == ["no_t"]


def test_execute_sync_runs_inside_a_running_event_loop_as_in_jupyter() -> None:
    """A notebook cell runs in an event loop, where asyncio.run cannot nest: the
    synchronous entry still runs the plan, with the same result as outside one."""

    async def async_ok(params: dict[str, Any]) -> Any:
        await asyncio.sleep(0)
        return {"async": params["n"]}

    doc = {
        "actions": [
            tc("a"),
            tc("b", "async_ok", dependencies=["a"], expected_effects={"done": True}),
        ]
    }
    tools = {**TOOLS, "async_ok": async_ok}

    async def cell() -> Any:
        return execute_sync(doc, tools, initial_state={"k": 1})

    inside = asyncio.run(cell())
    outside = execute_sync(doc, tools, initial_state={"k": 1})
    for result in (inside, outside):
        assert statuses(result) == {"a": "succeeded", "b": "succeeded"}
        assert result.state == {"k": 1, "done": True}
        assert [r["output"] for r in result.result.to_dict()["results"]] == [
            {"done": "a"},
            {"async": "b"},
        ]


def test_the_end_state_shares_nothing_with_the_callers_proposal_or_state() -> None:
    model = car_verify.load({"actions": [tc("a", expected_effects={"x": [1]})]})
    initial = {"y": {"n": [1]}}
    for doc in (model, {"actions": [tc("a", "boom", expected_effects={"x": [1]})]}):
        result = execute_sync(doc, TOOLS, initial_state=initial)
        for value in result.state.values():
            (value["n"] if isinstance(value, dict) else value).append(2)
    assert model.actions[0].expected_effects == {"x": [1]}
    assert initial == {"y": {"n": [1]}}


def test_admission_rejects_the_whole_proposal_with_reasons() -> None:
    doc = {"actions": [tc("a"), tc("b", "nope"), tc("c", dependencies=["c"])]}
    result = execute_sync(doc, TOOLS)
    assert set(statuses(result).values()) == {"rejected"}
    assert any(r.startswith("unknown-tool") for r in result.rejected_by)
    assert any(r.startswith("dependency-cycle") for r in result.rejected_by)
    assert result.result.cost.tool_calls == 0 and result.result.cost.actions_rejected == 3
    # walk findings are advisory unless the caller makes them blocking
    gated = {"actions": [tc("a", preconditions=[{"key": "k"}], failure_behavior="skip"), tc("b")]}
    assert statuses(execute_sync(gated, TOOLS))["b"] == "succeeded"
    strict = execute_sync(gated, TOOLS, gate=Gate().also("precondition-unsatisfied"))
    assert set(statuses(strict).values()) == {"rejected"}


def test_parameters_are_validated_and_outputs_interpolated() -> None:
    seen: list[Any] = []

    def use(params: dict[str, Any]) -> Any:
        seen.append(params)
        return None

    schemas = [
        {"name": "make", "returns": {"type": "object", "required": ["path"]}},
        {"name": "use", "parameters": {"type": "object", "required": ["file"]}},
    ]
    doc = {
        "actions": [
            {"id": "m", "type": "tool_call", "tool": "make"},
            {
                "id": "u",
                "type": "tool_call",
                "tool": "use",
                "parameters": {
                    "file": "$m.output.path",
                    "all": ["$m.output"],
                    "text": "$m.outputs",
                },
            },
        ]
    }
    result = execute_sync(doc, {"make": lambda p: {"path": "/tmp/x"}, "use": use}, schemas=schemas)
    assert statuses(result) == {"m": "succeeded", "u": "succeeded"}
    assert seen == [{"file": "/tmp/x", "all": [{"path": "/tmp/x"}], "text": "$m.outputs"}]
    bad = execute_sync({"actions": [tc("x", "use")]}, {"use": use}, schemas=schemas)
    assert any(r.startswith("param-schema") for r in bad.rejected_by)


def test_rejections_and_failed_assertions_say_which_predicate() -> None:
    doc = {
        "actions": [
            tc(
                "a", preconditions=[{"key": "token", "operator": "exists"}], failure_behavior="skip"
            ),
            {
                "id": "c",
                "type": "assertion",
                "parameters": {"key": "n", "operator": "gt", "value": 2},
            },
        ]
    }
    result = execute_sync(doc, TOOLS, initial_state={"n": 1}, profile="strict")
    assert [(r.status, r.error) for r in result.result.results] == [
        (ActionStatus.REJECTED, "precondition token exists is false"),
        (ActionStatus.FAILED, "assertion n gt 2 is false"),
    ]
    # the runtime's assertion reads {key, expected}: n is 1, and null was expected
    result = execute_sync(doc, TOOLS, initial_state={"n": 1}, profile="car")
    assert [(r.status, r.error) for r in result.result.results] == [
        (ActionStatus.REJECTED, "precondition token exists is false"),
        (ActionStatus.FAILED, "assertion failed: state['n'] = Number(1), expected Null"),
    ]


def test_an_output_path_walks_objects_and_arrays_and_a_missing_part_rejects() -> None:
    seen: list[Any] = []

    def use(params: dict[str, Any]) -> Any:
        seen.append(params)
        return None

    def make(params: dict[str, Any]) -> Any:
        return {"items": [{"id": "i0"}, {"id": "i1"}]}

    def plan(ref: str) -> dict[str, Any]:
        return {
            "actions": [
                {"id": "m", "type": "tool_call", "tool": "make"},
                {
                    "id": "u",
                    "type": "tool_call",
                    "tool": "use",
                    "parameters": {"ref": ref},
                    "failure_behavior": "skip",
                },
            ]
        }

    tools = {"make": make, "use": use}
    assert statuses(execute_sync(plan("$m.output.items.1.id"), tools)) == {
        "m": "succeeded",
        "u": "succeeded",
    }
    assert seen == [{"ref": "i1"}]
    for ref, why in [
        ("$m.output.items.2", "the output has no '2'"),
        ("$m.output.count", "the output has no 'count'"),
    ]:
        result = execute_sync(plan(ref), tools)
        u = result.result.results[1]
        assert (u.status, u.error) == (ActionStatus.REJECTED, f"{ref!r}: {why}")
    assert len(seen) == 1  # a rejected action's tool is never called


@pytest.mark.parametrize(
    ("tool", "needle"),
    [
        (lambda p: {"not": "path"}, "violates its returns schema"),
        (lambda p: {"path": {1, 2}}, "not JSON"),
        (lambda p: (_ for _ in ()).throw(ValueError("bad input")), "ValueError: bad input"),
    ],
)
def test_a_tool_that_misbehaves_fails_its_action_cleanly(tool: Any, needle: str) -> None:
    schemas = [{"name": "make", "returns": {"type": "object", "required": ["path"]}}]
    result = execute_sync(
        {"actions": [tc("m", "make")]}, {"make": tool}, schemas=schemas, initial_state={"keep": 1}
    )
    (r,) = result.result.results
    assert r.status == "failed" and needle in (r.error or "")
    assert result.state == {"keep": 1}


def test_timeout_bounds_a_hanging_tool() -> None:
    async def hang(params: dict[str, Any]) -> Any:
        await asyncio.sleep(10)

    start = time.perf_counter()
    result = execute_sync({"actions": [tc("h", "hang", timeout_ms=50)]}, {"hang": hang})
    assert time.perf_counter() - start < 2
    assert result.result.results[0].error == "timed out after 50 ms"


def test_effects_are_applied_and_recorded_as_state_changes() -> None:
    doc = {
        "actions": [
            tc("a", expected_effects={"x": 1}),
            {"id": "w", "type": "state_write", "parameters": {"key": "y", "value": [1]}},
            {
                "id": "r",
                "type": "state_read",
                "parameters": {"keys": ["x", "y"]},
                "dependencies": ["a", "w"],
            },
            {
                "id": "check",
                "type": "assertion",
                "parameters": {"key": "x", "operator": "gte", "value": 1},
                "dependencies": ["a"],
            },
        ]
    }
    result = execute_sync(doc, TOOLS)
    assert result.state == {"x": 1, "y": [1]}
    by_id = {r.action_id: r for r in result.result.results}
    assert by_id["a"].state_changes == {"x": {"op": "set", "value": 1}}
    assert by_id["r"].output == {"x": 1, "y": [1]} and by_id["check"].status == "succeeded"


# --- caching and rate limits ----------


def test_cache_hits_do_not_call_the_tool() -> None:
    calls: list[int] = []

    def fetch(params: dict[str, Any]) -> Any:
        calls.append(1)
        return {"v": params["k"]}

    schemas = [{"name": "fetch", "idempotent": True, "cache_ttl_secs": 60}]
    doc = {
        "actions": [
            {
                "id": f"f{i}",
                "type": "tool_call",
                "tool": "fetch",
                "parameters": {"k": 1},
                "dependencies": [f"f{i - 1}"] if i else [],
            }
            for i in range(3)
        ]
    }
    result = execute_sync(doc, {"fetch": fetch}, schemas=schemas)
    assert len(calls) == 1 and result.result.cost.tool_calls == 1
    assert [r.output for r in result.result.results] == [{"v": 1}] * 3


def test_rate_limit_is_respected_under_concurrency() -> None:
    stamps: list[float] = []

    async def ping(params: dict[str, Any]) -> Any:
        stamps.append(time.monotonic())

    schemas = [{"name": "ping", "rate_limit": {"max_calls": 2, "interval_secs": 0.2}}]
    doc = {
        "actions": [
            {"id": f"p{i}", "type": "tool_call", "tool": "ping", "parameters": {"i": i}}
            for i in range(6)
        ]
    }
    execute_sync(doc, {"ping": ping}, schemas=schemas)
    stamps.sort()
    assert len(stamps) == 6
    for i in range(2, 6):  # the third call of any window waits for the first to age out
        assert stamps[i] - stamps[i - 2] >= 0.19


# --- budgets ----------


def test_budgets_reject_statically_and_stop_at_run_time() -> None:
    doc = {"actions": [tc(f"a{i}", dependencies=[f"a{i - 1}"] if i else []) for i in range(4)]}
    rejected = execute_sync(doc, TOOLS, budget=CostBudget(max_actions=3))
    assert set(statuses(rejected).values()) == {"rejected"}
    assert execute_sync(doc, TOOLS, budget=CostBudget(max_tool_calls=3)).rejected_by
    retrying = {
        "actions": [
            tc("a", "boom", failure_behavior="retry", max_retries=5),
            tc("b", dependencies=["a"]),
        ]
    }
    stopped = execute_sync(retrying, TOOLS, budget=CostBudget(max_tool_calls=2))
    # two calls made, then the budget: none succeeded (tool_calls counts those)
    assert "max_tool_calls" in (stopped.result.results[0].error or "")
    assert stopped.result.cost.tool_calls == 0 and statuses(stopped)["b"] == "skipped"

    async def slow(params: dict[str, Any]) -> Any:
        await asyncio.sleep(0.05)

    timed = execute_sync(doc, {"ok": slow}, budget=CostBudget(max_duration_ms=60))
    assert "skipped" in statuses(timed).values() and "max_duration_ms" in (timed.aborted_by or "")
    # under car a level runs one action a turn, and the budget holds between them
    level = {"actions": [tc(f"a{i}") for i in range(4)]}
    car = execute_sync(level, {"ok": slow}, budget=CostBudget(max_duration_ms=60), profile="car")
    assert "max_duration_ms" in (car.aborted_by or "")
    assert list(statuses(car).values())[-1] == "skipped"


# --- rollback ----------


def test_rollback_restores_state_and_runs_compensations_in_reverse() -> None:
    log: list[str] = []

    def make(name: str) -> Any:
        def tool(params: dict[str, Any]) -> Any:
            log.append(name)
            if name == "fail":
                raise RuntimeError("down")
            if name == "broken_undo":
                raise RuntimeError("cannot undo")
            return {"id": name}

        return tool

    tools = {
        n: make(n)
        for n in (
            "reserve",
            "charge",
            "email",
            "fail",
            "release",
            "refund",
            "broken_undo",
            "undo_log",
        )
    }
    doc = {
        "actions": [
            tc(
                "reserve",
                "reserve",
                expected_effects={"r": 1},
                reversibility="compensable",
                compensation={
                    "type": "tool",
                    "tool": "release",
                    "parameters": {"id": "$reserve.output.id"},
                },
            ),
            tc(
                "charge",
                "charge",
                dependencies=["reserve"],
                expected_effects={"c": 1},
                reversibility="compensable",
                compensation={"type": "action_ref", "action_id": "refund_action"},
            ),
            tc("email", "email", dependencies=["charge"]),
            tc(
                "logit",
                "undo_log",
                dependencies=["charge"],
                reversibility="compensable",
                compensation={"type": "tool", "tool": "broken_undo"},
            ),
            tc("ship", "fail", dependencies=["email", "logit"]),
            {
                "id": "refund_action",
                "type": "tool_call",
                "tool": "refund",
                "dependencies": ["ship"],
                "parameters": {"charge": "$charge.output.id"},
            },
        ]
    }
    result = execute_sync(doc, tools, initial_state={"s": 0})
    rb = result.rollback
    assert rb is not None and result.state == {"s": 0}
    assert rb.compensated == ["charge", "reserve"]
    assert rb.failed_to_compensate == [{"action_id": "logit", "error": "RuntimeError: cannot undo"}]
    assert rb.irreversible_reached == ["email"]
    assert log[-3:] == ["broken_undo", "refund", "release"]


# --- detached tools ----------


def test_detached_tools_poll_and_cancel() -> None:
    async def train(params: dict[str, Any]) -> Any:
        async def chunks() -> Any:
            yield {"kind": "progress", "fraction": 0.5}
            await asyncio.sleep(0.01)
            yield {"kind": "done", "result": {"accuracy": 0.9}}

        return chunks()

    async def forever(params: dict[str, Any]) -> Any:
        async def chunks() -> Any:
            while True:
                yield {"kind": "text", "text": "tick"}
                await asyncio.sleep(0.01)

        return chunks()

    async def scenario() -> None:
        doc = {
            "actions": [
                tc("t", "train", invocation_mode="long_running"),
                tc("s", "forever", invocation_mode="streaming"),
            ]
        }
        executor = Executor(doc, {"train": train, "forever": forever})
        result = await executor.run()
        outputs = {r.action_id: r.output for r in result.result.results}
        assert outputs["t"]["status"] == "running"
        handle = outputs["t"]["tool_handle"]["id"]
        await executor.wait(handle)
        first = executor.poll(handle)
        assert (
            first is not None and first.status == "succeeded" and first.result == {"accuracy": 0.9}
        )
        assert [c.kind for c in first.chunks] == ["progress", "done"]
        assert executor.poll(handle) is None  # consumed after the terminal status was seen
        stream = outputs["s"]["tool_handle"]["id"]
        await asyncio.sleep(0.03)
        assert executor.poll(stream).status == "running"  # type: ignore[union-attr]
        assert executor.cancel(stream)
        await executor.wait(stream)
        assert executor.poll(stream).status == "cancelled"  # type: ignore[union-attr]

    asyncio.run(scenario())


# --- cancellation, the event log, policies at dispatch ----------


def test_cancellation_mid_level_rolls_back_and_still_reports(tmp_path: Path) -> None:
    async def slow(params: dict[str, Any]) -> Any:
        await asyncio.sleep(5)

    async def scenario() -> Any:
        doc = {
            "context": {"session": "s-1"},
            "actions": [
                tc(
                    "fast",
                    expected_effects={"x": 1},
                    reversibility="compensable",
                    compensation={"type": "tool", "tool": "undo"},
                ),
                tc("slow1", "slow", dependencies=["fast"]),
                tc("slow2", "slow", dependencies=["fast"]),
            ],
        }
        undone: list[str] = []
        task = asyncio.ensure_future(
            execute(
                doc,
                {"ok": ok, "slow": slow, "undo": lambda p: undone.append("undo")},
                initial_state={},
                event_log=tmp_path / "events.jsonl",
            )
        )
        await asyncio.sleep(0.2)
        task.cancel()
        result = await task
        return result, undone

    result, undone = asyncio.run(scenario())
    assert result.aborted_by == "cancelled" and undone == ["undo"] and result.state == {}
    assert statuses(result)["fast"] == "succeeded" and statuses(result)["slow1"] == "skipped"
    events = read_events(tmp_path / "events.jsonl")
    kinds = [e.kind for e in events]
    assert kinds[0] == "proposal_started" and "rollback_started" in kinds and "compensated" in kinds
    assert all(e.data.get("context") == {"session": "s-1"} for e in events)


def test_event_log_survives_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    execute_sync({"actions": [tc("a"), tc("b")]}, TOOLS, event_log=path)
    whole = read_events(path)
    text = path.read_text()
    path.write_text(text + '{"event": "action_sta')
    assert [e.kind for e in read_events(path)] == [e.kind for e in whole]
    path.write_text("garbage\n" + text)
    with pytest.raises(car_verify.InputError, match="line 1"):
        read_events(path)


def test_policies_and_trace_rules_at_dispatch() -> None:
    policies = load_policy_text(
        'deny_tool = ["rm"]\n[[trace_rule]]\nrule = "never send after read_secret"\n'
    )
    doc = {
        "actions": [
            tc("s", "read_secret"),
            tc("m", "send", dependencies=["s"], failure_behavior="skip"),
            tc("x", "rm", failure_behavior="skip"),
        ]
    }
    tools = {"read_secret": ok, "send": ok, "rm": ok}
    result = execute_sync(doc, tools, policies=PolicyEngine(policies))
    assert statuses(result) == {"s": "succeeded", "m": "rejected", "x": "rejected"}
    assert {v.policy_name for v in result.violations} == {
        "deny_tool:rm",
        "trace_rule:never send after read_secret",
    }


def test_a_dispatch_callable_and_sync_tools_off_the_loop() -> None:
    seen: list[tuple[str, Any]] = []

    def dispatch(tool: str, params: dict[str, Any]) -> Any:
        seen.append((tool, params))
        return tool

    result = execute_sync({"actions": [tc("a", "x"), tc("b", "y")]}, dispatch)
    assert statuses(result) == {"a": "succeeded", "b": "succeeded"}
    assert sorted(t for t, _ in seen) == ["x", "y"]


def test_an_assertion_on_an_absent_depended_key_is_rejected_as_the_walk_blocks_it() -> None:
    """Found by the property below: the key gate applies to assertions too."""
    doc = {
        "actions": [
            {"id": "w", "type": "tool_call", "tool": "t", "write_set": ["x"]},
            {
                "id": "check",
                "type": "assertion",
                "parameters": {"key": "x", "operator": "neq", "value": 0},
                "expected_effects": {"x": 0},
                "state_dependencies": ["x"],
                "failure_behavior": "skip",
            },
        ]
    }
    result = execute_sync(doc, {"t": lambda p: None}, gate=Gate(blocking=frozenset()))
    status = {r.action_id: r.status for r in result.result.results}
    assert status["check"] is ActionStatus.REJECTED
    assert result.state == dict(car_verify.simulate(doc, profile="strict")) == {}


# --- properties ----------


def _skippable(doc: dict[str, Any]) -> dict[str, Any]:
    for action in doc["actions"]:
        action["failure_behavior"] = "skip"
        if action["type"] == "tool_call":
            action["tool"] = "t"
    return doc


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(proposals(max_actions=6, cycles=False), states)
def test_when_every_tool_succeeds_the_end_state_is_simulates(
    doc: dict[str, Any], state: dict[str, Any]
) -> None:
    doc = _skippable(doc)
    verdict = car_verify.verify(doc, initial_state=state, profile="strict")
    if any(
        i.code
        in ("unknown-dependency", "duplicate-id", "unknown-action-type", "state-write-without-key")
        for i in verdict.issues
    ):
        return
    result = execute_sync(doc, {"t": lambda p: None}, initial_state=state)
    assert not result.rejected_by
    assert result.state == dict(car_verify.simulate(doc, initial_state=state, profile="strict"))


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(proposals(max_actions=6, cycles=False), states, st.data())
def test_after_abort_and_rollback_the_state_is_the_initial_one(
    doc: dict[str, Any], state: dict[str, Any], data: st.DataObject
) -> None:
    failing = set(
        data.draw(st.lists(st.sampled_from([a["id"] for a in doc["actions"]] or ["-"]), max_size=3))
    )

    def dispatch(tool: str, params: dict[str, Any]) -> Any:
        if params.get("_id") in failing:
            raise RuntimeError("injected failure")
        return None

    for action in doc["actions"]:
        if action["type"] == "tool_call":
            action["parameters"] = {**action.get("parameters", {}), "_id": action["id"]}
    result = execute_sync(doc, dispatch, initial_state=state)
    if result.aborted_by is not None:
        assert result.state == state
    assert (
        result.result.cost.actions_executed
        + result.result.cost.actions_rejected
        + result.result.cost.actions_skipped
        == len(doc["actions"])
    )


_REFUSED_PLANS = (
    "unknown-dependency",
    "duplicate-id",
    "unknown-action-type",
    "state-write-without-key",
)


@settings(max_examples=80, suppress_health_check=[HealthCheck.too_slow])
@given(
    proposals(max_actions=6, cycles=False), states, st.sampled_from(["car", "strict"]), st.data()
)
def test_the_executor_ends_each_action_as_the_walk_does_with_the_same_outcomes(
    doc: dict[str, Any], state: dict[str, Any], profile: str, data: st.DataObject
) -> None:
    """The executor is the one walk driven with live calls: given calls that fail
    where the walk's outcome source says they fail, every action ends as the walk
    says (ran, failed, blocked) and the end state is the walk's, under both profiles."""
    from car_verify.ir.model import load
    from car_verify.semantics import semantics_of
    from car_verify.semantics.walk import walk

    doc = _skippable(doc)
    if profile == "car":  # an output not yet there rejects the call: no walk models it
        for action in doc["actions"]:
            action["parameters"].pop("ref", None)
            if action["type"] == "assertion":
                # the runtime's assertion, once its predicate holds, checks that its
                # key holds what it expects, which no walk models: a key nothing
                # writes holds the null expected
                action["parameters"] = {"key": "unwritten"}
    verdict = car_verify.verify(doc, initial_state=state, profile=profile)
    if any(i.code in _REFUSED_PLANS for i in verdict.issues):
        return
    ids = [a["id"] for a in doc["actions"]]
    failing = set(data.draw(st.lists(st.sampled_from(ids or ["-"]), max_size=3)))
    for action in doc["actions"]:
        action["parameters"]["_id"] = action["id"]

    def dispatch(tool: str, params: dict[str, Any]) -> Any:
        if params["_id"] in failing:
            raise RuntimeError("injected failure")
        return {}

    result = execute_sync(
        doc, dispatch, initial_state=state, profile=profile, gate=Gate(blocking=frozenset())
    )
    sem = semantics_of(profile)
    walked = walk(
        sem.order(load(doc)),
        state,
        mode="simulate",
        semantics=sem,
        dispatch=lambda i: ids[i] not in failing,
    )
    expected = {}
    for i, trace in enumerate(walked.traces):
        assert trace is not None
        if trace.blocked and all(c.kind == "assertion" for c in trace.causes):
            # a false assertion predicate is rejected as a false precondition is (car),
            # or is the assertion's work failing, skipped under skip (strict)
            expected[ids[i]] = "rejected" if sem.assertion_predicate_rejects else "skipped"
        elif trace.blocked:
            expected[ids[i]] = "rejected"
        elif i in walked.failed:
            expected[ids[i]] = "skipped"  # failure_behavior skip
        else:
            expected[ids[i]] = "succeeded"
    assert result.statuses == expected
    assert result.state == walked.state


def test_an_aborting_failure_stops_the_next_turn_not_the_rest_of_a_strict_level() -> None:
    """Under strict a level is dispatched at once: a call that fails and aborts does
    not stop its level's other calls, only the levels after it (then the rollback
    undoes them); under car the turn is one action, and the next one is not tried."""
    doc = {
        "actions": [
            tc("a", "boom", failure_behavior="abort"),
            tc("b"),
            tc("c", dependencies=["b"]),
        ]
    }
    strict = execute_sync(doc, TOOLS, profile="strict")
    assert strict.statuses == {"a": "failed", "b": "succeeded", "c": "skipped"}
    assert strict.rollback is not None and strict.rollback.restored_state == {}
    car = execute_sync(doc, TOOLS, profile="car")
    assert car.statuses == {"a": "failed", "b": "skipped", "c": "skipped"}


# --- the CLI ----------


def test_cli_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module = tmp_path / "mytools.py"
    module.write_text(
        "TOOLS = {'ok': lambda p: {'n': p.get('n')}, 'boom': lambda p: 1 / 0}\nLIMIT = 3\n"
    )
    proposal = tmp_path / "p.json"
    proposal.write_text(json.dumps({"actions": [tc("a"), tc("b", "boom", dependencies=["a"])]}))
    code = main(
        [
            "run",
            str(proposal),
            "--tool-module",
            f"{module}:TOOLS",
            "--format",
            "json",
            "--events",
            str(tmp_path / "ev.jsonl"),
        ]
    )
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert code == 1 and [r["status"] for r in doc["results"]] == ["succeeded", "failed"]
    assert "level: a" in err
    assert read_events(tmp_path / "ev.jsonl")[-1].kind == "proposal_finished"
    code = main(["run", str(proposal), "--tool-module", f"{module}:NOPE"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "no attribute 'NOPE'" in err
    code = main(["run", str(proposal), "--tool-module", f"{module}:LIMIT"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and f"{module}:LIMIT is 'int'; expected a mapping" in err
    code = main(["run", str(proposal), "--tool-module", str(module), "--quiet"])
    out, _ = capsys.readouterr()
    assert code == 1 and "rolled back" in out and "1 executed" not in out


def test_cli_run_lists_a_few_admission_reasons_and_counts_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """300 actions that share one id: the text line named all 299 duplicate-id errors."""
    module = tmp_path / "mytools.py"
    module.write_text("TOOLS = {'ok': lambda p: {}}\n")
    proposal = tmp_path / "p.json"
    proposal.write_text(json.dumps({"actions": [tc("x") for _ in range(300)]}))
    code = main(["run", str(proposal), "--tool-module", str(module)])
    out, _ = capsys.readouterr()
    (line,) = [x for x in out.splitlines() if x.startswith("rejected at admission: ")]
    assert code == 1 and line.count("duplicate-id") == 5
    assert line.endswith("; and 294 more (car-verify verify lists them all)")
    assert out.count("duplicate-id") == 5, "the reasons are listed once, not per action"
    assert out.splitlines()[0].split() == ["rejected", "x"]
    main(["verify", str(proposal)])
    assert capsys.readouterr().out.count("duplicate-id") == 299


def test_the_worked_example_rolls_back_files_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = Path(__file__).resolve().parents[1] / "examples" / "executor"
    monkeypatch.setenv("CAR_EXAMPLE_DIR", str(tmp_path))
    code = main(
        [
            "run",
            str(root / "proposal.json"),
            "--tools",  # the older spelling of --tool-module: read as it, and said
            str(root / "tools.py"),
            "--events",
            str(tmp_path / "events.jsonl"),
            "--quiet",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 1 and "compensated ['" in out
    assert "read as --tool-module" in err
    assert not (tmp_path / "release" / "notes.md").exists()
    assert not (tmp_path / "release" / "CHANGELOG").exists()
    assert not (tmp_path / "published.log").exists()
    events = read_events(tmp_path / "events.jsonl")
    kinds = [e.kind for e in events]
    assert kinds.count("compensated") == 2
    # notes and changelog run in one level: undone in the reverse of the order they ended
    ended = [e.action_id for e in events if e.kind == "action_succeeded"]
    undone = [e.action_id for e in events if e.kind == "compensated"]
    assert undone == [a for a in reversed(ended) if a in ("notes", "changelog")]


def test_an_action_the_rollback_undid_is_reported_as_the_newest_runtime_reports_it() -> None:
    """Issue 39: since car-runtime 0.54.0 an action that succeeded before a later
    failure aborted the run is `succeeded` with `rolled_back: true` (0.52.1:
    `failed`); its state effects are gone. car-verify reports the newest shape by
    default and 0.52.1's with results="0.52", and says what became of the external
    effects (here the compensation ran)."""
    plan = {
        "actions": [
            {"id": "a", "type": "tool_call", "tool": "ok", "expected_effects": {"x": 1},
             "reversibility": "compensable",
             "compensation": {"type": "tool", "tool": "undo", "parameters": {}}},
            {"id": "b", "type": "tool_call", "tool": "boom", "state_dependencies": ["x"]},
        ]
    }  # fmt: skip

    def boom(_params: dict[str, Any]) -> Any:
        raise RuntimeError("boom")

    tools = {"ok": lambda p: {"ok": True}, "undo": lambda p: {}, "boom": boom}
    newest = execute_sync(plan, tools)
    [a, b] = newest.result.results
    assert (a.status.value, a.rolled_back, a.state_changes) == ("succeeded", True, {})
    assert "rolled back; its compensation ran" in (a.error or "")
    assert b.status.value == "failed" and b.rolled_back is None
    assert newest.result.to_dict()["results"][0]["rolled_back"] is True
    assert "rolled_back" not in newest.result.to_dict()["results"][1]  # written when true
    old = execute_sync(plan, tools, results="0.52").result.results[0]
    assert (old.status.value, old.rolled_back) == ("failed", None)
    with pytest.raises(car_verify.UsageError, match="results must be one of"):
        execute_sync(plan, tools, results="0.53")
    # the command line offers the same shapes (spelt there, to keep start-up light)
    import argparse

    from car_verify.cli import _parser
    from car_verify.executor import RESULT_SHAPES

    [run] = [
        sub.choices["run"]
        for sub in _parser()._actions
        if isinstance(sub, argparse._SubParsersAction)
    ]
    [shapes] = [a.choices for a in run._actions if a.dest == "results"]
    assert tuple(shapes) == RESULT_SHAPES


def test_a_terminal_tool_error_fails_at_once_and_says_so() -> None:
    """A tool that raises TerminalToolError (car-verify's, or one named so, as the
    runtime's is) is not retried, and its result says `terminal: true`."""
    from car_verify.executor import TerminalToolError

    calls: list[int] = []

    def fatal(_params: dict[str, Any]) -> Any:
        calls.append(1)
        raise TerminalToolError("the account is closed")

    plan = {"actions": [{"id": "a", "type": "tool_call", "tool": "fatal",
                         "failure_behavior": "retry", "max_retries": 3}]}  # fmt: skip
    run = execute_sync(plan, {"fatal": fatal})
    [a] = run.result.results
    assert (a.status.value, a.terminal, len(calls), run.result.cost.retries) == (
        "failed", True, 1, 0,
    )  # fmt: skip
    assert run.result.to_dict()["results"][0]["terminal"] is True


def test_a_turn_of_one_action_is_awaited_in_place_with_gathers_answer() -> None:
    """The executor awaits a one-action turn (every turn under car) without a task
    of its own; it gives what ``asyncio.gather(..., return_exceptions=True)`` gives."""
    from car_verify.executor import _together

    async def value() -> int:
        await asyncio.sleep(0)
        return 7

    async def fails() -> int:
        await asyncio.sleep(0)
        raise ValueError("tool bug")

    async def both(make: Any) -> tuple[Any, Any]:
        plain = await asyncio.gather(make(), return_exceptions=True)
        return plain, await _together([make()])

    for make in (value, fails):
        plain, fast = asyncio.run(both(make))
        assert [repr(x) for x in plain] == [repr(x) for x in fast]
    assert asyncio.run(both(value))[1] == [7]
