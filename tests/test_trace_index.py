"""The trace monitor's index by tool (car_verify/rules/trace.py, ``TraceGate``) is a
speed trick: it visits only the rules whose pattern names the call's tool or no
tool. Held here to the plain monitor, which visits every rule at every call, on
generated rule sets and traces: the same verdicts, reasons and state at each step."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from car_verify.rules.trace import TraceGate, TraceRule, parse_trace_rule

TOOLS = ["a", "b", "c", ""]
NAMES = ["a", "b", '"c"', '""', "any tool"]
CONDITIONS = ["", " where x == 1", " where x != 1", " where x exists", ' where x contains "1"']
OUTCOMES = ["", " succeeded", " failed"]


@st.composite
def rules(draw: st.DrawFn) -> TraceRule:
    call = draw(st.sampled_from(NAMES)) + draw(st.sampled_from(CONDITIONS))
    event = (
        draw(st.sampled_from(NAMES))
        + draw(st.sampled_from(CONDITIONS))
        + draw(st.sampled_from(OUTCOMES))
    )
    text = draw(
        st.sampled_from(
            [
                f"never {call}",
                f"never {call} after {event}",
                f"{call} only after {event}",
                f"at most {draw(st.integers(0, 3))} {call}",
            ]
        )
    )
    return parse_trace_rule(text)


params = st.sampled_from([{}, {"x": 1}, {"x": 2}, {"x": "1"}, {"x": [1]}, {"y": 1}])
steps = st.tuples(
    st.sampled_from(["dispatch", "dispatched", "record"]),
    st.sampled_from([*TOOLS, "d"]),
    params,
    st.sampled_from(["succeeded", "failed"]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(rules(), max_size=8), st.lists(steps, max_size=20))
def test_the_index_by_tool_answers_as_the_plain_monitor(
    ruleset: list[TraceRule], trace: list[tuple[str, str, dict[str, Any], Any]]
) -> None:
    fast, plain = TraceGate(ruleset), TraceGate(ruleset, indexed=False)
    for action, tool, args, outcome in trace:
        assert fast.check(tool, args) == plain.check(tool, args)
        if action == "dispatch":
            assert fast.dispatch(tool, args) == plain.dispatch(tool, args)
        elif action == "dispatched":
            fast.dispatched(tool, args)
            plain.dispatched(tool, args)
        else:
            fast.record(tool, args, outcome)
            plain.record(tool, args, outcome)
        assert fast.state == plain.state


def test_a_tool_no_rule_names_meets_only_the_rules_naming_none() -> None:
    """The index does not hide a rule over any tool from a call of an unnamed tool,
    and a rule over another tool never sees it (the trick's whole claim)."""
    gate = TraceGate(
        [parse_trace_rule("never any tool after secret"), parse_trace_rule("at most 0 deploy")]
    )
    assert not gate.dispatch("secret", {})
    assert [v.policy_name for v in gate.check("zzz", {})] == [gate.rules[0].policy_name]
    assert gate.state == (1, 0)
