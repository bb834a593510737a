"""A trace-rule error that verify reports holds whatever an undecided call sends.

A call whose tested parameter is another action's output (``$a0.output.v``) cannot
be decided before run time: verify warns (``policy-undecided``). A violation whose
one counterexample passes through such a call is looked for once more with those
calls taken as calls the rule does not name (a hostile review found a definite
violation hidden behind a warning that way). The properties here hold each error
to every value the undecided calls may send, and check that it is found.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import car_verify
from car_verify.rules.policy import PolicySet
from car_verify.rules.trace import parse_trace_rule

REFERENCE = "$a0.output.v"
#: What an undecided call may send in its place: the literals the rules test, and others.
SENT = ["x", "boss", "hi"]
RULES = [
    'never send after fetch where url == "x"',
    'never send where to == "boss"',
    'send where to == "boss" only after fetch',
    'send only after fetch where url == "x"',
    'at most 1 fetch where url == "x"',
    'never send where to == "boss" after fetch',
    'never fetch where url == "x" after fetch where url == "x"',
    'never send after any tool where url == "x"',
    'never any tool where url == "x"',
    'never any tool where to != "hi" after fetch',
    "never send where to exists",
    "never fetch after send where to exists",
    'send only after any tool where url == "x"',
    'never send after fetch where url contains "x" failed',
]


@st.composite
def plans(draw: st.DrawFn) -> dict[str, Any]:
    """Tool calls of fetch, send and read; some parameters are a0's output."""
    n = draw(st.integers(2, 6))
    actions: list[dict[str, Any]] = [{"id": "a0", "type": "tool_call", "tool": "read"}]
    for i in range(1, n):
        tool = draw(st.sampled_from(["fetch", "send"]))
        param = "url" if tool == "fetch" else "to"
        action: dict[str, Any] = {
            "id": f"a{i}",
            "type": "tool_call",
            "tool": tool,
            "parameters": {param: draw(st.sampled_from([*SENT, REFERENCE]))},
        }
        deps = draw(st.lists(st.sampled_from([f"a{j}" for j in range(i)]), unique=True, max_size=2))
        if action["parameters"][param] == REFERENCE and "a0" not in deps:
            deps.append("a0")  # the order the reference gives, written out (see below)
        if deps:
            action["dependencies"] = deps
        if draw(st.integers(0, 3)) == 0:
            action["failure_behavior"] = "skip"
        actions.append(action)
    return {"actions": actions}


def trace_errors(plan: dict[str, Any], rule: str, profile: str, schedules: str) -> set[str]:
    rules = PolicySet(trace_rule=[parse_trace_rule(rule)])
    result = car_verify.verify(plan, policies=rules, profile=profile, schedules=schedules)
    return {
        i.action_id or ""
        for i in result.issues
        if i.code.startswith("trace_rule:") and i.severity.value == "error"
    }


def sent_as(plan: dict[str, Any], values: tuple[str, ...]) -> dict[str, Any]:
    """The plan with each reference replaced by a value it may send (its order kept:
    the action depends on a0 already)."""
    it = iter(values)
    out = []
    for action in plan["actions"]:
        params = {
            k: next(it) if v == REFERENCE else v for k, v in action.get("parameters", {}).items()
        }
        out.append({**action, "parameters": params})
    return {"actions": out}


@pytest.mark.parametrize("profile", ["car", "strict"])
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=plans(), rule=st.sampled_from(RULES), schedules=st.sampled_from(["levels", "any"]))
def test_a_reported_trace_error_holds_whatever_the_undecided_calls_send(
    profile: str, plan: dict[str, Any], rule: str, schedules: str
) -> None:
    errors = trace_errors(plan, rule, profile, schedules)
    references = sum(
        v == REFERENCE for a in plan["actions"] for v in a.get("parameters", {}).values()
    )
    for values in itertools.product(SENT, repeat=references):
        assert errors <= trace_errors(sent_as(plan, values), rule, profile, schedules), values


@pytest.mark.parametrize("profile", ["car", "strict"])
@pytest.mark.parametrize("schedules", ["levels", "any"])
def test_a_definite_violation_is_not_hidden_behind_an_undecided_call(
    profile: str, schedules: str
) -> None:
    """The hostile review's reproducer: f1 sends url "x" before s in every run; f0's
    url is r's output. The violation by s holds whatever f0 sends."""
    plan = {
        "actions": [
            {"id": "r", "type": "tool_call", "tool": "read"},
            {"id": "f1", "type": "tool_call", "tool": "fetch", "parameters": {"url": "x"}},
            {
                "id": "f0",
                "type": "tool_call",
                "tool": "fetch",
                "parameters": {"url": "$r.output.u"},
                "dependencies": ["r"],
            },
            {"id": "s", "type": "tool_call", "tool": "send", "dependencies": ["f0", "f1"]},
        ]
    }
    assert trace_errors(plan, RULES[0], profile, schedules) == {"s"}


@pytest.mark.parametrize("profile", ["car", "strict"])
def test_a_repeated_id_does_not_hide_the_definite_call(profile: str) -> None:
    """Two actions share the id s: one sends to another action's output, the other to
    "boss". The second breaks the rule whatever the first sends."""
    plan = {
        "actions": [
            {"id": "a0", "type": "tool_call", "tool": "read"},
            {"id": "s", "type": "tool_call", "tool": "send", "parameters": {"to": REFERENCE}},
            {"id": "s", "type": "tool_call", "tool": "send", "parameters": {"to": "boss"}},
        ]
    }
    assert trace_errors(plan, RULES[1], profile, "levels") == {"s"}


def _call(action_id: str, tool: str, deps: list[str], **params: Any) -> dict[str, Any]:
    action: dict[str, Any] = {"id": action_id, "type": "tool_call", "tool": tool}
    if params:
        action["parameters"] = params
    if deps:
        action["dependencies"] = deps
    return action


@pytest.mark.parametrize("profile", ["car", "strict"])
@pytest.mark.parametrize(
    ("rule", "actions", "breaking"),
    [
        (  # the event names no tool: F alone opens the rule
            'never send after any tool where url == "x"',
            [
                _call("r", "read", []),
                _call("U", "fetch", ["r"], url="$r.output.u"),
                _call("F", "fetch", [], url="x"),
                _call("S", "send", ["U", "F"]),
            ],
            {"S"},
        ),
        (  # a reference is there whenever its call is sent: ``exists`` is decided
            "never send where to exists",
            [_call("r", "read", []), _call("s", "send", ["r"], to="$r.output.v")],
            {"s"},
        ),
    ],
)
def test_a_rule_of_any_tool_or_of_presence_is_decided_past_an_undecided_call(
    profile: str, rule: str, actions: list[dict[str, Any]], breaking: set[str]
) -> None:
    """A second hostile review's reproducers: the gate refuses a call in every run,
    whatever the undecided call sends; verify says so with an error."""
    assert trace_errors({"actions": actions}, rule, profile, "levels") == breaking
