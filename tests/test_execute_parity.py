"""The executor under ``car`` against the runtime's in-process ``execute`` (issue 39):
on generated plans of tool calls, state writes and assertions, with tools that
succeed, fail, or fail once and succeed on a retry, preconditions that hold or
not, and assertions whose key holds what they expect or not, each action ends as
the runtime's does and the cost is counted as it counts it.

The results are compared in the shape of the runtime installed: 0.52.1's (an
action rolled back is ``failed``) or the newest (``succeeded``, ``rolled_back``).
What the runtime's execute does differently by design, and the plans here leave
out, is in docs/compat.md: it applies no declared ``expected_effects``, and a
tool it does not know is rejected alone where car-verify's admission refuses the
plan."""

from __future__ import annotations

import json
from typing import Any

from car_oracle import runtime
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from car_verify.executor import execute_sync

rt = runtime()
SHAPE = "0.52" if str(getattr(rt, "__version__", "0.52.1")).startswith("0.52") else "newest"
TOOLS = ("a", "b", "boom", "flaky")


class Tools:
    """The same tools for both: ``boom`` always raises, ``flaky`` raises on each
    action's first attempt."""

    def __init__(self) -> None:
        self.attempts: dict[str, int] = {}

    def outcome(self, name: str, params: dict[str, Any]) -> dict[str, Any]:
        key = str(params.get("n"))
        self.attempts[key] = self.attempts.get(key, 0) + 1
        if name == "boom" or (name == "flaky" and self.attempts[key] == 1):
            raise RuntimeError(f"{name} failed")
        return {"ok": name}

    def runtime_fn(self, name: str, params: str) -> str:
        return json.dumps(self.outcome(name, json.loads(params)))

    def ours(self) -> dict[str, Any]:
        return {t: (lambda p, t=t: self.outcome(t, p)) for t in TOOLS}


@st.composite
def plans(draw: Any) -> dict[str, Any]:
    actions = []
    for n in range(draw(st.integers(1, 5))):
        ident = f"x{n}"
        kind = draw(st.integers(0, 5))
        if kind == 0:
            action: dict[str, Any] = {
                "id": ident,
                "type": "state_write",
                "parameters": {"key": f"k{n}", "value": n},
            }
        elif kind == 1:
            # an assertion: its key (an earlier write's, one never written, or none)
            # must hold the value expected (absent: null)
            params: dict[str, Any] = {}
            if draw(st.integers(0, 4)) > 0:
                params["key"] = draw(st.sampled_from([f"k{m}" for m in range(n)] + ["never"]))
            if draw(st.booleans()):
                params["expected"] = draw(st.sampled_from([None, 0, 1, 2, 1.0]))
            action = {"id": ident, "type": "assertion", "parameters": params}
        else:
            action = {
                "id": ident,
                "type": "tool_call",
                "tool": draw(st.sampled_from(TOOLS)),
                "parameters": {"n": ident},  # distinct: no call repeats
            }
        behaviour = draw(st.sampled_from(["abort", "skip", "retry", None]))
        if behaviour is not None:
            action["failure_behavior"] = behaviour
        if behaviour == "retry":
            action["max_retries"] = draw(st.integers(0, 2))
        if draw(st.integers(0, 3)) == 0:
            operator = draw(st.sampled_from(["exists", "not_exists"]))
            action["preconditions"] = [{"key": "never", "operator": operator}]
        actions.append(action)
    return {"id": "p", "source": "test", "actions": actions}


def theirs(plan: dict[str, Any]) -> tuple[list[tuple[str, str, bool]], dict[str, int]]:
    tools = Tools()
    answer = json.loads(rt.execute(json.dumps(plan), list(TOOLS), tools.runtime_fn))
    results = [(r["action_id"], r["status"], bool(r.get("rolled_back"))) for r in answer["results"]]
    cost = {k: answer["cost"][k] for k in COUNTS}
    return results, cost


def ours(plan: dict[str, Any]) -> tuple[list[tuple[str, str, bool]], dict[str, int]]:
    run = execute_sync(plan, Tools().ours(), results=SHAPE)
    results = [(r.action_id, r.status.value, bool(r.rolled_back)) for r in run.result.results]
    cost = {k: getattr(run.result.cost, k) for k in COUNTS}
    return results, cost


COUNTS = ("tool_calls", "actions_executed", "actions_rejected", "actions_skipped", "retries")


def tc(ident: str, tool: str, **fields: Any) -> dict[str, Any]:
    return {"id": ident, "type": "tool_call", "tool": tool, "parameters": {"n": ident}, **fields}


@settings(
    deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow]
)  # fmt: skip
@given(plans())
# a failure inside a level: the rest of the level is skipped, what ran is rolled back
@example({"actions": [tc("x", "a"), tc("y", "boom"), tc("z", "b")]})
# skip: the failed action is "skipped"; a precondition rejection does not stop the run
@example({"actions": [tc("x", "boom", failure_behavior="skip"), tc("y", "b")]})
@example(
    {"actions": [tc("x", "a", preconditions=[{"key": "k", "operator": "exists"}]), tc("y", "b")]}
)
# a retried call counts once, its retries apart
@example({"actions": [tc("x", "flaky", failure_behavior="retry", max_retries=1), tc("y", "b")]})
# an assertion whose predicate is false is rejected, and the run goes on
@example(
    {
        "actions": [
            tc("x", "a"),
            {"id": "t", "type": "assertion", "preconditions": [{"key": "k", "operator": "exists"}]},
            tc("y", "b"),
        ]
    }
)
# one that holds runs its check: the key must hold what it expects, or it fails
@example(
    {
        "actions": [
            {"id": "w", "type": "state_write", "parameters": {"key": "k", "value": 1}},
            {"id": "t", "type": "assertion", "parameters": {"key": "k", "expected": 2}},
            {"id": "u", "type": "assertion", "parameters": {"key": "k", "expected": 1}},
            tc("y", "b"),
        ]
    }
)
@example({"actions": [{"id": "t", "type": "assertion"}, tc("y", "b")]})
@example(
    {
        "actions": [
            {"id": "t", "type": "assertion", "parameters": {"key": "k", "expected": 1},
             "failure_behavior": "retry", "max_retries": 2},
            {"id": "u", "type": "assertion", "failure_behavior": "skip"},
            tc("y", "b"),
        ]
    }
)  # fmt: skip
def test_the_executor_ends_each_action_as_the_runtime_does(plan: dict[str, Any]) -> None:
    assert ours(plan) == theirs(plan)
