"""The policy pass leaves out work that can find nothing; the plain version does it
all. The two must say the same, finding for finding, on any plan and rule set:

- the round of calls through the gate is left out when no rule of one call is
  given (only trace rules);
- the output references are read only when some rule reads a parameter;
- the schedule check asks the trace gate only about the calls of tools the rule
  mentions (a rule's monitor ignores every other tool).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import car_verify
from car_verify.analyses.policies import findings
from car_verify.passes import Context, Options
from car_verify.rules.policy import (
    AllowRule,
    CommandRule,
    MatchRule,
    ParamRule,
    PolicyEngine,
    PolicySet,
    RateRule,
)
from car_verify.rules.trace import TraceGate, _check_rule, _Plan, parse_trace_rule

TOOLS = ["fetch", "send", "cleanup", "Bash"]

#: At least 300 examples; more under a longer profile (``--hypothesis-profile=deep``).
EXAMPLES = max(300, settings().max_examples)

TRACE_RULES = [
    "never send after fetch failed",
    "send only after fetch succeeded",
    "never cleanup after send",
    "at most 1 send",
    "send only after fetch",
    "never send",
    'send where to == "boss" only after fetch',
    "never send where body exists after fetch",
    "never any tool after cleanup failed",
    'at most 1 fetch where url contains "x"',
]

PARAMS = st.dictionaries(
    st.sampled_from(["to", "body", "url", "command"]),
    st.sampled_from(["boss", "x", "rm -rf /", "hi", 1, ["x"], "$a0.output.v"]),
    max_size=3,
)


@st.composite
def plans(draw: st.DrawFn) -> dict[str, Any]:
    """Small plans of tool calls (some reading another's output, some with a tool
    compensation), with dependencies, a state write now and then, and failures that
    skip."""
    n = draw(st.integers(1, 6))
    actions: list[dict[str, Any]] = []
    for i in range(n):
        action: dict[str, Any]
        if draw(st.integers(0, 5)) == 0:
            action = {
                "id": f"a{i}",
                "type": "state_write",
                "parameters": {"key": "k", "value": draw(st.sampled_from([1, "x"]))},
            }
        else:
            params = draw(PARAMS)
            if i == 0:  # the first action has no output to read yet
                params = {k: v for k, v in params.items() if v != "$a0.output.v"}
            action = {
                "id": f"a{i}",
                "type": "tool_call",
                "tool": draw(st.sampled_from(TOOLS)),
                "parameters": params,
            }
            if draw(st.integers(0, 4)) == 0:
                action["reversibility"] = "compensable"
                action["compensation"] = {"type": "tool", "tool": draw(st.sampled_from(TOOLS))}
        if i:
            earlier = [f"a{j}" for j in range(i)]
            deps = draw(st.lists(st.sampled_from(earlier), unique=True, max_size=2))
            if deps:
                action["dependencies"] = deps
        if draw(st.booleans()):
            action["failure_behavior"] = "skip"
        actions.append(action)
    return {"actions": actions}


@st.composite
def engines(draw: st.DrawFn) -> PolicyEngine:
    """Rule sets of every kind: none, only trace rules, only rules of one call, both;
    registered rules now and then (a state requirement among them)."""
    rules = PolicySet()
    if draw(st.booleans()):
        rules.deny_tool = draw(st.lists(st.sampled_from(TOOLS), max_size=1))
        rules.deny_keyword = draw(st.lists(st.sampled_from(["rm", "boss"]), max_size=1))
        rules.deny_tool_param = draw(
            st.lists(
                st.builds(ParamRule, st.sampled_from(TOOLS), st.sampled_from(["to", "body"])),
                max_size=1,
            )
        )
        rules.allow_tool_param = draw(
            st.lists(st.just(AllowRule("send", "to", ("boss",))), max_size=1)
        )
        rules.deny_tool_param_matching = draw(
            st.lists(st.just(MatchRule("fetch", "url", "x+")), max_size=1)
        )
        rules.deny_command = draw(st.lists(st.just(CommandRule("rm", ("-r",))), max_size=1))
        rules.rate_limit_tool = draw(st.lists(st.just(RateRule("fetch", 1, 60.0)), max_size=1))
    rules.trace_rule = [
        parse_trace_rule(text)
        for text in draw(st.lists(st.sampled_from(TRACE_RULES), unique=True, max_size=3))
    ]
    engine = PolicyEngine(rules)
    if draw(st.integers(0, 3)) == 0:
        engine.register_policy("no-cleanup", "deny_tool", "cleanup")
    if draw(st.integers(0, 3)) == 0:
        engine.register_policy("k-set", "require_state", key="k", value_json="1")
    return engine


def _said(issues: Any) -> list[tuple[Any, ...]]:
    return [
        (i.code, i.severity, i.tier, i.message, i.action_id, i.index, i.pointer) for i in issues
    ]


@settings(deadline=None, max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@given(plans(), engines(), st.sampled_from(["car", "strict"]), st.sampled_from(["levels", "any"]))
def test_the_pass_says_what_its_plain_version_says(
    doc: dict[str, Any], engine: PolicyEngine, profile: str, schedules: str
) -> None:
    def context() -> Context:
        return Context(
            car_verify.load(doc),
            policies=engine,
            options=Options(schedules=schedules),  # type: ignore[arg-type]
            semantics=profile,
        )

    fast = _said(findings(context()))
    plain = _said(findings(context(), shortcuts=False))
    assert fast == plain


def test_a_trace_rule_set_skips_the_round_of_calls_and_still_finds_its_violation() -> None:
    doc = {
        "actions": [
            {"id": "a0", "type": "tool_call", "tool": "send", "parameters": {"to": "x"}},
            {"id": "a1", "type": "tool_call", "tool": "fetch", "dependencies": ["a0"]},
        ]
    }
    rules = PolicySet(trace_rule=[parse_trace_rule("send only after fetch")])
    ctx = Context(car_verify.load(doc), policies=PolicyEngine(rules), semantics="car")
    found = list(findings(ctx))
    assert [i.action_id for i in found] == ["a0"]
    assert found[0].code == "trace_rule:send only after fetch"
    assert "walk" not in vars(ctx)  # the round of calls (which reads the walk) was left out


@pytest.mark.parametrize("text", TRACE_RULES)
@settings(
    deadline=None, max_examples=max(60, EXAMPLES // 5), suppress_health_check=[HealthCheck.too_slow]
)
@given(
    tool=st.sampled_from(["other", "noop", "think"]),
    params=PARAMS,
    outcome=st.sampled_from(["succeeded", "failed"]),
    history=st.lists(st.tuples(st.sampled_from(TOOLS), PARAMS), max_size=4),
)
def test_a_rule_s_monitor_ignores_a_tool_it_does_not_mention(
    text: str, tool: str, params: dict[str, Any], outcome: Any, history: Any
) -> None:
    rule = parse_trace_rule(text)
    if rule.mentions(tool):  # "any tool": every tool is mentioned
        return
    gate = TraceGate([rule])
    for earlier, earlier_params in history:
        if not gate.dispatch(earlier, earlier_params):
            gate.record(earlier, earlier_params, "succeeded")
    before = gate.state
    assert gate.check(tool, params) == []
    assert gate.dispatch(tool, params) == [] and gate.state == before
    gate.record(tool, params, outcome)
    assert gate.state == before


@settings(deadline=None, max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@given(
    plans(),
    st.sampled_from(TRACE_RULES),
    st.sampled_from(["levels", "any"]),
    st.sampled_from([3, 10, 100_000]),
)
def test_the_schedule_check_agrees_with_asking_the_gate_about_every_call(
    doc: dict[str, Any], text: str, mode: Any, budget: int
) -> None:
    rule = parse_trace_rule(text)
    for profile in ("car", "strict"):
        ctx = Context(car_verify.load(doc), semantics=profile)
        plan = _Plan(ctx.proposal, ctx.dag)
        fast = _check_rule(plan, rule, budget, mode)
        plain = _check_rule(plan, rule, budget, mode, ask_every_call=True)
        assert (fast.violations, fast.explored, fast.complete) == (
            plain.violations,
            plain.explored,
            plain.complete,
        )
