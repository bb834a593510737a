"""Trace rules over the executor's schedules (issue 29): levels in order with any
interleaving inside one, calls that fail without stopping the run, every violating
action reported, and the rule language's values (`contains` on arrays, integers
beyond 2**53, names that begin with a keyword)."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import car_verify
from car_verify import InputError
from car_verify.executor import Executor as _Executor
from car_verify.rules.policy import PolicyEngine, load_policy_text
from car_verify.rules.trace import TraceGate, check_schedules, parse_trace_rule


def Executor(*args: Any, **kwargs: Any) -> Any:
    kwargs.setdefault("profile", "strict")
    return _Executor(*args, **kwargs)


# --- a brute-force executor ----------------------------------------------------------------


def levels_of(doc: dict[str, Any]) -> list[list[int]]:
    """The executor's levels of a plan whose only edges are its dependencies."""
    ids = [a["id"] for a in doc["actions"]]
    level: list[int] = []
    for a in doc["actions"]:
        level.append(1 + max((level[ids.index(d)] for d in a["dependencies"]), default=-1))
    return [[i for i, lvl in enumerate(level) if lvl == k] for k in range(max(level) + 1)]


def runs(doc: dict[str, Any], mode: str) -> list[tuple[list[int], dict[int, bool]]]:
    """Every (order, outcomes) the executor can take: the order in which actions are
    picked, and whether each call fails."""
    actions = doc["actions"]
    ids = [a["id"] for a in actions]
    if mode == "levels":
        orders = [
            [i for level in choice for i in level]
            for choice in itertools.product(
                *(list(itertools.permutations(level)) for level in levels_of(doc))
            )
        ]
    else:
        orders = []
        for order in itertools.permutations(range(len(actions))):
            at = {i: k for k, i in enumerate(order)}
            if all(at[ids.index(d)] < at[i] for i in order for d in actions[i]["dependencies"]):
                orders.append(list(order))
    out = []
    for order in orders:
        for fails in itertools.product([False, True], repeat=len(actions)):
            out.append((order, dict(enumerate(fails))))
    return out


def violators(rule: Any, doc: dict[str, Any], mode: str) -> set[str]:
    """The actions some run refuses, each run simulated as the executor does it:
    a dependency that did not succeed rejects; a refused call is not recorded (and
    the run goes on past it, as the static check does to find every violator); a
    failure under `skip` goes on, any other stops the run after its level
    (`any`: at once)."""
    actions = doc["actions"]
    ids = [a["id"] for a in actions]
    level = {i: k for k, members in enumerate(levels_of(doc)) for i in members}
    found: set[str] = set()
    for order, fails in runs(doc, mode):
        gate = TraceGate([rule])
        bad: set[int] = set()
        stop_after: int | None = None
        for i in order:
            if stop_after is not None and (mode == "any" or level[i] > stop_after):
                break
            a = actions[i]
            if any(ids.index(d) in bad for d in a["dependencies"]):
                bad.add(i)
                continue
            if gate.dispatch(a["tool"], a["parameters"]):
                found.add(a["id"])
                continue
            failed = fails[i]
            gate.record(a["tool"], a["parameters"], "failed" if failed else "succeeded")
            if failed:
                bad.add(i)
                if a.get("failure_behavior") != "skip":
                    stop_after = level[i]
    return found


@st.composite
def plans(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(1, 5))
    actions = []
    for i in range(n):
        deps = (
            draw(st.lists(st.sampled_from([f"a{j}" for j in range(i)]), unique=True, max_size=2))
            if i
            else []
        )
        action: dict[str, Any] = {
            "id": f"a{i}",
            "type": "tool_call",
            "tool": draw(st.sampled_from(["fetch", "send", "cleanup", "noop"])),
            "dependencies": deps,
            "parameters": {},
        }
        if draw(st.booleans()):
            action["failure_behavior"] = "skip"
        actions.append(action)
    return {"actions": actions}


RULES = st.sampled_from(
    [
        "never send after fetch failed",
        "send only after fetch succeeded",
        "never cleanup after send",
        "at most 1 send",
        "send only after fetch",
        "never send",
    ]
)


def replays(rule: Any, doc: dict[str, Any], found: Any) -> bool:
    """The counterexample's schedule, replayed on the gate, ends in a refusal."""
    by_id = {a["id"]: a for a in doc["actions"]}
    gate = TraceGate([rule])
    for step in found.schedule[:-1]:
        a = by_id[step]
        refused = bool(gate.dispatch(a["tool"], a["parameters"]))
        if refused != (step in found.refused):
            return False
        if not refused:
            outcome = "failed" if step in found.failed else "succeeded"
            gate.record(a["tool"], a["parameters"], outcome)
    last = by_id[found.schedule[-1]]
    return bool(gate.dispatch(last["tool"], last["parameters"]))


@settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(plans(), RULES, st.sampled_from(["levels", "any"]))
def test_every_violating_action_of_every_run_the_executor_can_take(
    doc: dict[str, Any], text: str, mode: str
) -> None:
    rule = parse_trace_rule(text)
    (result,) = check_schedules(car_verify.load(doc), [rule], schedules=mode)  # type: ignore[arg-type]
    assert result.complete
    assert {v.action_id for v in result.violations} == violators(rule, doc, mode)
    for found in result.violations:
        assert found.schedule[-1] == found.action_id and replays(rule, doc, found)
        assert shortest_on_its_own(rule, doc, found)


#: How many steps the shortest run that breaks each kind of rule has (issue 59: a
#: counterexample listed every call of the schedule, 130 unrelated ones too).
SHORTEST = {"never": 1, "only_after": 1, "never_after": 2}


def shortest_on_its_own(rule: Any, doc: dict[str, Any], found: Any) -> bool:
    """The steps the counterexample shows (``relevant``) are a subsequence of its
    schedule ending with the violating action; replayed on their own they break
    the rule (each admitted, its outcome recorded, the last refused); and there are
    as few as the rule's kind needs (``at most N``: N + 1)."""
    shown = list(found.relevant)
    it = iter(found.schedule)
    if not all(step in it for step in shown) or shown[-1] != found.action_id:
        return False
    refused_steps = {k for k, step in enumerate(found.schedule) if step in found.refused}
    if any(found.schedule.index(step) in refused_steps for step in shown[:-1]):
        return False
    stripped = type(found)(
        found.action_id, found.index, tuple(shown), found.failed, found.violation
    )
    need = rule.limit + 1 if rule.kind == "at_most" else SHORTEST[rule.kind]
    if rule.kind == "only_after":  # and the calls of its event that ran, in vain
        by_id = {a["id"]: a for a in doc["actions"]}
        need += sum(
            1
            for k, step in enumerate(found.schedule[:-1])
            if k not in refused_steps and rule.event.matches(by_id[step]["tool"], {})
        )
    return replays(rule, doc, stripped) and len(shown) == need


# --- the issue's cases ---------------------------------------------------------------------


def test_a_level_that_always_runs_first_is_not_reported() -> None:
    doc = {
        "actions": [
            {"id": "fetch", "type": "tool_call", "tool": "fetch"},
            {"id": "cleanup", "type": "tool_call", "tool": "cleanup"},
            {"id": "send", "type": "tool_call", "tool": "send", "dependencies": ["fetch"]},
        ]
    }
    rule = parse_trace_rule("never cleanup after send")
    (levels,) = check_schedules(car_verify.load(doc), [rule])
    assert levels.violations == [] and levels.complete
    (anything,) = check_schedules(car_verify.load(doc), [rule], schedules="any")
    assert [v.schedule for v in anything.violations] == [("fetch", "send", "cleanup")]
    policies = load_policy_text('[[trace_rule]]\nrule = "never cleanup after send"\n')
    for schedules, expected in (("levels", []), ("any", ["cleanup"])):
        result = car_verify.verify(
            doc,
            policies=PolicyEngine(policies),
            passes=["policies"],
            schedules=schedules,
            profile="strict",  # under car, dependencies order nothing: send may go first
        )
        assert [i.action_id for i in result.issues] == expected


def test_a_failure_that_does_not_stop_the_run_is_a_schedule() -> None:
    doc = {
        "actions": [
            {"id": "fetch", "type": "tool_call", "tool": "fetch", "failure_behavior": "skip"},
            {"id": "send", "type": "tool_call", "tool": "send"},
        ]
    }
    rule = parse_trace_rule("never send after fetch failed")
    (result,) = check_schedules(car_verify.load(doc), [rule])
    [found] = result.violations
    assert found.describe() == "fetch (failed), send" and found.failed == ("fetch",)
    doc["actions"][0]["failure_behavior"] = "abort"  # a failure stops the run: send never runs
    doc["actions"][1]["dependencies"] = ["fetch"]
    (result,) = check_schedules(car_verify.load(doc), [rule])
    assert result.violations == []


def test_every_violating_action_is_reported() -> None:
    doc = {"actions": [{"id": f"s{i}", "type": "tool_call", "tool": "send"} for i in range(3)]}
    policies = load_policy_text('[[trace_rule]]\nname = "quiet"\nrule = "never send"\n')
    result = car_verify.verify(doc, policies=PolicyEngine(policies), passes=["policies"])
    assert [(i.code, i.action_id) for i in result.issues] == [
        ("trace_rule:quiet", "s0"),
        ("trace_rule:quiet", "s1"),
        ("trace_rule:quiet", "s2"),
    ]


def test_budget_overrun_is_sampled_in_the_evidence_and_no_violation(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from car_verify.cli import main

    doc = {"actions": [{"id": f"s{i}", "type": "tool_call", "tool": "send"} for i in range(20)]}
    (tmp_path / "p.json").write_text(__import__("json").dumps(doc))
    (tmp_path / "pol").mkdir()
    (tmp_path / "pol" / "r.toml").write_text(
        '[[trace_rule]]\nname = "s"\nrule = "never send after fetch"\n'
    )
    code = main(["policy", "check", str(tmp_path / "p.json"), "--policies", str(tmp_path / "pol")])
    out = capsys.readouterr().out
    assert code == 0 and "0 violations" in out and "None" not in out
    assert "warning[trace_rule:s]" in out and "not every schedule was checked" in out
    result = car_verify.verify(
        tmp_path / "p.json", policies=tmp_path / "pol", passes=["policies"], profile="strict"
    )
    [check] = [c for c in result.evidence.checks if c.name == "policies"]
    assert check.tier == "sampled"


# --- values and names ----------------------------------------------------------------------


def test_contains_is_membership_in_an_array_and_a_substring_of_a_string() -> None:
    rule = parse_trace_rule('never send_email where recipients contains "mark@x.com"')
    for params, refused in (
        ({"recipients": ["mark@x.com"]}, True),
        ({"recipients": ["amark@x.com"]}, False),
        ({"recipients": "to: mark@x.com"}, True),
        ({"recipients": {"mark@x.com": 1}}, False),
    ):
        assert bool(TraceGate([rule]).dispatch("send_email", params)) is refused, params
        doc = {"actions": [{"id": "a", "type": "tool_call", "tool": "send_email",
                            "parameters": params}]}  # fmt: skip
        (result,) = check_schedules(car_verify.load(doc), [rule])
        assert bool(result.violations) is refused
    numbers = parse_trace_rule("never pay where ids contains 3")
    assert TraceGate([numbers]).dispatch("pay", {"ids": [1, 3.0]})
    assert not TraceGate([numbers]).dispatch("pay", {"ids": ["3"]})


def test_integers_compare_by_value_however_large() -> None:
    rule = parse_trace_rule("never pay where amount == 9007199254740993")
    assert TraceGate([rule]).dispatch("pay", {"amount": 9007199254740993})
    assert not TraceGate([rule]).dispatch("pay", {"amount": 9007199254740992})
    assert rule.to_text() == "never pay where amount == 9007199254740993"
    assert parse_trace_rule("never pay where amount == 2.5").call.tests[0].value == 2.5
    with pytest.raises(InputError, match="too large"):
        parse_trace_rule("never pay where amount == 1e999")


@pytest.mark.parametrize(
    "text", ["never tool.read", "never-x only after at-home", "at most 2 at_home", "never and.x"]
)
def test_names_may_begin_with_a_keyword(text: str) -> None:
    assert parse_trace_rule(parse_trace_rule(text).to_text()) == parse_trace_rule(text)


def test_the_keywords_themselves_stay_reserved() -> None:
    with pytest.raises(InputError, match="unexpected"):
        parse_trace_rule("never tool")


# --- a detached call's outcome -------------------------------------------------------------


def test_a_streaming_call_succeeds_for_the_rules_when_its_stream_ends() -> None:
    release = asyncio.Event()

    async def train(params: dict[str, Any]) -> Any:
        async def chunks() -> Any:
            await release.wait()
            yield {"kind": "done", "result": 1}

        return chunks()

    policies = load_policy_text('[[trace_rule]]\nrule = "deploy only after train succeeded"\n')

    async def scenario() -> tuple[Any, Any]:
        doc = {
            "actions": [
                {"id": "t", "type": "tool_call", "tool": "train",
                 "invocation_mode": "long_running"},
                {"id": "d", "type": "tool_call", "tool": "deploy", "dependencies": ["t"]},
            ]
        }  # fmt: skip
        executor = Executor(
            doc, {"train": train, "deploy": lambda p: "ok"}, policies=PolicyEngine(policies)
        )
        result = await executor.run()
        before = executor.trace_gate.state
        release.set()
        handle = next(r.output for r in result.result.results if r.action_id == "t")
        await executor.wait(handle["tool_handle"]["id"])
        return result, (before, executor.trace_gate.state)

    result, (before, after) = asyncio.run(scenario())
    statuses = {r.action_id: r.status.value for r in result.result.results}
    assert statuses == {"t": "succeeded", "d": "rejected"}  # started, not finished
    assert before == (2,) and after == (3,)  # dispatched; then reported when the stream ended


def test_the_fast_parser_is_the_strict_one() -> None:
    from car_verify.rules.trace import _parser, _strict_parser

    strict = _strict_parser()  # raises if two terminals could match the same text
    for text in [
        "never send_email after read_secret",
        'deploy where env == "prod" only after run_tests succeeded',
        "at most 3 http_request",
        "never any tool where n contains 3 and x exists after tool.read failed",
        "never-x only after at-home",
    ]:
        assert _parser().parse(text) == strict.parse(text)


@pytest.mark.parametrize("profile", ["car", "strict"])
@pytest.mark.parametrize("test", ['url contains "169.254"', 'url != "x"'])
def test_a_trace_test_on_an_output_reference_is_undecided_statically_and_decided_at_dispatch(
    profile: str, test: str
) -> None:
    doc = {
        "actions": [
            {"id": "a0", "type": "tool_call", "tool": "lookup"},
            {
                "id": "a1",
                "type": "tool_call",
                "tool": "http_request",
                "parameters": {"url": "$a0.output.url"},
                "dependencies": ["a0"],
            },
        ]
    }
    policies = load_policy_text(f"[[trace_rule]]\nrule = 'never http_request where {test}'\n")
    result = car_verify.verify(doc, policies=PolicyEngine(policies), profile=profile)
    found = {(i.code, i.action_id, i.severity.value) for i in result.issues}
    assert ("policy-undecided", "a1", "warning") in found
    assert not [i for i in result.issues if i.code.startswith("trace_rule")], found
    # at dispatch the rule sees what is sent
    tools = {"lookup": lambda p: {"url": "http://169.254.169.254/"}, "http_request": lambda p: {}}
    ran = Executor(doc, tools, policies=PolicyEngine(policies), profile=profile)
    outcome = asyncio.run(ran.run())
    assert outcome.statuses["a1"] == "rejected" and outcome.statuses["a0"] == "succeeded"


def test_the_budget_is_one_for_the_whole_check_not_one_per_rule() -> None:
    """Ten rules over a plan with many interleavings cost one budget, not ten: a
    rule reached with the budget spent is reported unchecked, never passed."""
    doc = {"actions": [{"id": f"c{i}", "type": "tool_call", "tool": f"t{i}"} for i in range(18)]}
    rules = [parse_trace_rule(f"at most {20 + i} any tool") for i in range(10)]
    results = check_schedules(car_verify.load(doc), rules, budget=3_000)
    assert sum(r.explored for r in results) <= 3_000 and results[0].explored > 2_000
    assert not any(r.complete for r in results)  # each said unchecked, none passed
    few = {"actions": doc["actions"][:10]}  # 2**10 states a rule
    small = check_schedules(car_verify.load(few), rules[:1] * 2, budget=3_000)
    assert all(r.complete for r in small)  # with budget enough, each is checked whole
