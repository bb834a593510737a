"""The one gate, held to the plain reference (tests/gate_reference.py): on generated
rule sets of two to six rules and generated call sequences with outcomes, the
gate itself, the agent hook (end to end, through PreToolUse / PostToolUse
payloads) and the executor give the reference's decision and rule names."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from gate_reference import Pattern, ReferenceGate, Rule, toml
from hypothesis import given
from hypothesis import strategies as st

from car_verify.plan.gate import CallGate
from car_verify.rules.policy import load_policy_text
from car_verify.rules.trace import TraceGate, parse_trace_rule

TOOLS = ["a", "b", "c"]
PARAMS: list[dict[str, Any]] = [{}, {"p": 1}, {"p": 2}, {"p": "x"}]

tests_ = st.sampled_from([None, ("p", 1), ("p", 2), ("p", "x")])


def patterns(event: bool = False) -> st.SearchStrategy[Pattern]:
    outcome = st.sampled_from([None, "succeeded", "failed"]) if event else st.just(None)
    return st.builds(Pattern, st.sampled_from([*TOOLS, None]), tests_, outcome)


@st.composite
def rules(draw: st.DrawFn) -> list[Rule]:
    n = draw(st.integers(2, 6))
    out: list[Rule] = []
    for i in range(n):
        kind = draw(
            st.sampled_from(
                ["deny_tool", "deny_param", "rate", "never", "never_after", "only_after",
                 "at_most", "never_after", "only_after", "at_most"]
            )
        )  # fmt: skip
        name = f"r{i}"
        tool = draw(st.sampled_from(TOOLS))
        if kind == "deny_tool":
            out.append(Rule("deny_tool", name, tool=tool))
        elif kind == "deny_param":
            value = draw(st.sampled_from([1, 2, "x"]))
            out.append(Rule("deny_param", name, tool=tool, param=("p", value)))
        elif kind == "rate":
            out.append(Rule("rate", name, tool=tool, limit=draw(st.integers(0, 3))))
        elif kind == "never":
            out.append(Rule("never", name, call=draw(patterns())))
        elif kind == "at_most":
            out.append(Rule("at_most", name, limit=draw(st.integers(0, 3)), call=draw(patterns())))
        else:
            out.append(Rule(kind, name, call=draw(patterns()), event=draw(patterns(event=True))))
    return out


#: A step: a call, and what becomes of its outcome if it is admitted: reported at
#: once, reported after the next call, or never (the agent's prompt refused it).
steps = st.lists(
    st.tuples(
        st.sampled_from(TOOLS),
        st.sampled_from(PARAMS),
        st.sampled_from(["succeeded", "failed"]),
        st.sampled_from(["now", "now", "later", "never"]),
    ),
    min_size=1,
    max_size=12,
)


def replay(rule_set: list[Rule], calls: list[Any], face: Any) -> list[tuple[bool, list[str]]]:
    """Drive the reference and ``face`` (pre(tool, params) -> (admitted, names);
    post(tool, params, outcome)) through the same events; both answers per call."""
    ref = ReferenceGate(rule_set)
    out = []
    late: list[tuple[int, str, dict[str, Any], str]] = []
    for tool, params, outcome, when in calls:
        ok, names, number = ref.pre(tool, params)
        got = face.pre(tool, params)
        out.append(((ok, sorted(names)), (got[0], sorted(got[1]))))
        for n, t, p, o in late:  # an outcome reported after the next call came
            ref.post(n, o)  # type: ignore[arg-type]
            face.post(t, p, o)
        late = []
        if ok and when == "now":
            ref.post(number, outcome)
            face.post(tool, params, outcome)
        elif ok and when == "later":
            late.append((number, tool, params, outcome))
    return out


class GateFace:
    def __init__(self, text: str) -> None:
        self.gate = CallGate(load_policy_text(text))

    def pre(self, tool: str, params: dict[str, Any]) -> tuple[bool, list[str]]:
        verdict = self.gate.decide(tool, params)
        return verdict.allowed, verdict.rules

    def post(self, tool: str, params: dict[str, Any], outcome: Any) -> None:
        self.gate.report(tool, params, outcome)


class HookFace:
    """The agent hook, end to end: each call a PreToolUse payload, each outcome a
    PostToolUse (or PostToolUseFailure) payload, one session."""

    def __init__(self, text: str, root: Path) -> None:
        from car_verify import hook

        self.hook = hook
        self.folder = root / "project" / ".car" / "policies"
        self.folder.mkdir(parents=True)
        (self.folder / "rules.toml").write_text(text, encoding="utf-8")
        self.state = root / "state"

    def _send(self, payload: dict[str, Any]) -> Any:
        base = {"session_id": "s", "cwd": str(self.folder.parent.parent)}
        _, answer = self.hook.answer(
            json.dumps({**base, **payload}), policies=self.folder, state_dir=self.state
        )
        return answer

    def pre(self, tool: str, params: dict[str, Any]) -> tuple[bool, list[str]]:
        answer = self._send(
            {"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": params}
        )
        return answer.decision == "allow", answer.rules

    def post(self, tool: str, params: dict[str, Any], outcome: str) -> None:
        event = "PostToolUse" if outcome == "succeeded" else "PostToolUseFailure"
        self._send({"hook_event_name": event, "tool_name": tool, "tool_input": params,
                    "tool_response": {}})  # fmt: skip


def agree(answers: list[Any]) -> None:
    for n, (expected, got) in enumerate(answers):
        assert got == expected, f"call {n}: reference {expected}, got {got}"


@given(rules(), steps)
def test_the_gate_gives_the_reference_decision(rule_set: list[Rule], calls: list[Any]) -> None:
    agree(replay(rule_set, calls, GateFace(toml(rule_set))))


@given(rules(), steps)
def test_the_hook_gives_the_reference_decision(
    tmp_path_factory: pytest.TempPathFactory, rule_set: list[Rule], calls: list[Any]
) -> None:
    root = tmp_path_factory.mktemp("hook")
    agree(replay(rule_set, calls, HookFace(toml(rule_set), root)))


@given(rule_set=rules(), calls=steps)
def test_the_executor_gives_the_reference_decision(rule_set: list[Rule], calls: list[Any]) -> None:
    """A plan of the calls in order (one level, which the car profile runs one action
    at a time in proposal order, as the runtime does; ``skip`` on failure); a tool
    fails where the step says so. Every outcome is reported as the call ends. (Under
    strict a level's calls are dispatched at once: the gate is the same object, and
    the single-call tests below run under both profiles.)"""
    profile = "car"
    from car_verify import execute_sync

    actions = []
    for n, (tool, params, outcome, _) in enumerate(calls):
        action: dict[str, Any] = {
            "id": f"s{n}",
            "type": "tool_call",
            "tool": tool,
            "parameters": {**params, "_outcome": outcome},
            "failure_behavior": "skip",
        }
        actions.append(action)

    def tool(params: dict[str, Any]) -> Any:
        if params["_outcome"] == "failed":
            raise RuntimeError("the step fails")
        return {}

    # The reference, with every outcome reported at once (the executor knows it then).
    ref = ReferenceGate(rule_set)
    expected = []
    for tool_name, params, outcome, _ in calls:
        ok, names, number = ref.pre(tool_name, {**params, "_outcome": outcome})
        expected.append((ok, sorted(names)))
        if ok:
            ref.post(number, outcome)  # type: ignore[arg-type]
    plan = {"actions": actions}
    result = execute_sync(
        plan,
        dict.fromkeys(TOOLS, tool),
        policies=load_policy_text(toml(rule_set)),
        profile=profile,
    )
    got = []
    for n, r in enumerate(result.result.results):
        names = sorted({v.policy_name for v in result.violations if v.action_id == f"s{n}"})
        got.append((r.status.value != "rejected", names))
    assert got == expected, f"reference {expected}, executor {got}"


# --- the cases found by hand -------------------------------------------------------------------


def test_a_rule_with_a_where_test_leaves_the_next_rule_its_tool() -> None:
    """The bug of b78b073: the first matching rule's text took the place of the
    tool's name for every later rule, so the second rule never fired."""
    g = TraceGate(
        [
            parse_trace_rule('at most 5 deploy where env == "prod"'),
            parse_trace_rule("never deploy after read_secret"),
        ]
    )
    assert g.dispatch("read_secret", {}) == []
    assert [v.policy_name for v in g.dispatch("deploy", {"env": "prod"})] == [
        "trace_rule:never deploy after read_secret"
    ]


def test_only_after_waits_for_the_outcome() -> None:
    """An admitted call that has not reported does not open the way."""
    gate = CallGate(
        load_policy_text('[[trace_rule]]\nname = "t"\nrule = "deploy only after run_tests"\n')
    )
    assert gate.decide("run_tests", {}).allowed
    assert not gate.decide("deploy", {}).allowed  # run_tests is pending
    gate.report("run_tests", {}, "failed")
    assert gate.decide("deploy", {}).allowed  # it ran (any outcome, as the rule says)


def test_a_deny_reason_holds_no_literal() -> None:
    secret = "sk-live-0123456789"
    text = (
        f'deny_keyword = ["{secret}"]\n'
        "[[trace_rule]]\n"
        f"rule = 'never http where body contains \"{secret}\"'\n"
        "[[trace_rule]]\n"
        'rule = \'never send where to == "boss@example.org" after read where path == "/etc"\'\n'
    )
    gate = CallGate(load_policy_text(text, source="/p/rules.toml"))
    first = gate.decide("http", {"body": f"x {secret} y"})
    gate.decide("read", {"path": "/etc"})
    gate.report("read", {"path": "/etc"}, "succeeded")
    second = gate.decide("send", {"to": "boss@example.org"})
    for verdict in (first, second):
        assert verdict.decision == "deny"
        for word in (secret, "boss@", "/etc"):
            assert word not in verdict.reason()
    assert "trace_rule:rules.toml:5" in second.reason()


def test_a_tool_that_changes_its_parameters_cannot_change_its_retry() -> None:
    """Every attempt is checked on a frozen copy of what is sent; a tool that
    mutates the dict it was handed and raises is retried with the checked copy."""
    from car_verify import execute_sync

    seen: list[str] = []

    def fetch(params: dict[str, Any]) -> Any:
        seen.append(params["url"])
        params["url"] = "http://169.254.169.254/latest"
        raise RuntimeError("try again")

    plan = {
        "actions": [
            {
                "id": "f",
                "type": "tool_call",
                "tool": "fetch",
                "parameters": {"url": "https://example.org"},
                "failure_behavior": "retry",
                "max_retries": 2,
            }
        ]
    }
    policy = '[[deny_tool_param]]\ntool = "fetch"\nparam = "url"\ncontains = "169.254"\n'
    for profile in ("car", "strict"):
        seen.clear()
        execute_sync(plan, {"fetch": fetch}, policies=load_policy_text(policy), profile=profile)
        assert seen == ["https://example.org"] * 3


def test_a_retry_is_checked_again() -> None:
    """A retry is a call: the gate decides it (here a rate limit of two calls)."""
    from car_verify import execute_sync

    calls: list[int] = []

    def flaky(params: dict[str, Any]) -> Any:
        calls.append(1)
        raise RuntimeError("down")

    plan = {
        "actions": [
            {"id": "f", "type": "tool_call", "tool": "flaky", "failure_behavior": "retry",
             "max_retries": 5}
        ]
    }  # fmt: skip
    policy = '[[rate_limit_tool]]\ntool = "flaky"\nmax_calls = 2\ninterval_secs = 60\n'
    result = execute_sync(plan, {"flaky": flaky}, policies=load_policy_text(policy))
    assert len(calls) == 2
    assert result.violations and result.violations[0].policy_name == "rate_limit_tool:flaky"


# --- the approval ledger on a full disk ---------------------------------------------------------


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Any:
    """A 16 kB tmpfs (root only; skipped where mounting is not permitted)."""
    import subprocess

    where = tmp_path / "disk"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(where)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_ledger_append_on_a_full_disk_is_all_or_nothing(
    tiny_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from car_verify.cli import main
    from car_verify.plan.permissions import Ledger

    ledger = tiny_disk / "ledger.jsonl"
    plan = tiny_disk.parent / "plan.json"
    plan.write_text(
        json.dumps({"actions": [{"id": "d", "type": "tool_call", "tool": "deploy_prod"}]})
    )
    base = ["permissions", str(plan), "--granted", "read_only", "--ledger", str(ledger)]
    assert main([*base, "--approve", "d", "--reviewer", "ann", "--reason", "ok"]) == 0
    before = ledger.read_bytes()
    # Fill the disk but for a few bytes: the next record cannot fit whole.
    filler = tiny_disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(OSError):
            while True:
                os.write(fd, b"x" * 64)
    finally:
        os.close(fd)
    capsys.readouterr()
    code = main([*base, "--reject", "d", "--reviewer", "bob", "--reason", "x" * 9000])
    err = capsys.readouterr().err
    assert code == 2 and "not recorded" in err
    assert ledger.read_bytes() == before  # no torn line, the first record whole
    read = Ledger(ledger)
    assert [r.decision for r in read.records()] == ["approved"] and read.torn == []


# --- found by a hostile agent -------------------------------------------------------------------


def test_ask_is_never_a_way_around_a_trace_rule() -> None:
    """With ``ask`` for rate limits, a call a rate limit and a trace rule both refuse
    is refused, not asked; a call only the rate limit refuses is asked, and recorded
    as dispatched (a person may let it run)."""
    text = (
        '[[rate_limit_tool]]\ntool = "send"\nmax_calls = 0\ninterval_secs = 60\n'
        '[[rate_limit_tool]]\ntool = "read_secret"\nmax_calls = 0\ninterval_secs = 60\n'
        '[[trace_rule]]\nname = "no-send"\nrule = "never send after read_secret"\n'
    )
    gate = CallGate(load_policy_text(text), ask=("rate_limit_tool:",))
    assert gate.decide("read_secret", {}).decision == "ask"  # asked, and counted
    verdict = gate.decide("send", {})
    assert verdict.decision == "deny"


def test_the_tier_is_checked_on_what_is_sent() -> None:
    """An output reference hides the value from the admission; the gate checks the
    tier of each call on the parameters it is sent."""
    from car_verify import execute_sync

    sent: list[Any] = []
    plan = {
        "actions": [
            {"id": "g", "type": "tool_call", "tool": "generate"},
            {"id": "t", "type": "tool_call", "tool": "terminal",
             "parameters": {"command": "$g.output"}, "dependencies": ["g"]},
        ]
    }  # fmt: skip
    tools = {"generate": lambda p: "rm -rf /", "terminal": lambda p: sent.append(p) or "ok"}
    result = execute_sync(plan, tools, granted_tier="sandbox_edit")
    assert sent == [] and result.statuses["t"] == "rejected"


def test_a_frozen_copy_shares_nothing_with_a_mapping_or_a_tuple() -> None:
    from collections import OrderedDict

    from car_verify.base.values import copy_json

    inner = OrderedDict(cmd="ls")
    nested = ([1], inner)
    copied = copy_json({"job": inner, "pair": nested})
    inner["cmd"] = "rm -rf /"
    nested[0].append(2)
    assert copied == {"job": {"cmd": "ls"}, "pair": [[1], {"cmd": "ls"}]}
    assert type(copied["job"]) is dict


def test_content_rules_read_nested_strings_and_keys_as_they_are() -> None:
    text = (
        "deny_keyword = ['C:\\Windows\\System32', 'DROP TABLE \"users\"']\n"
        '[[deny_tool_param]]\ntool = "sql"\nparam = "queries"\ncontains = \'DROP TABLE "users"\'\n'
    )
    gate = CallGate(load_policy_text(text))
    for params in (
        {"paths": ["C:\\Windows\\System32"]},
        {"queries": ['DROP TABLE "users"']},
        {"queries": [{"q": 'DROP TABLE "users"'}]},
        {'DROP TABLE "users"': 1},
    ):
        assert gate.decide("sql", params).decision == "deny", params


def test_content_rules_have_a_work_bound() -> None:
    import time

    keywords = ", ".join(f'"kw{n:05d}"' for n in range(20_000))
    gate = CallGate(load_policy_text(f"deny_keyword = [{keywords}]\n"))
    edits = [{"old_string": "x" * 100, "new_string": "y" * 100} for _ in range(1_000)]
    start = time.perf_counter()
    verdict = gate.decide("MultiEdit", {"edits": edits})
    assert time.perf_counter() - start < 5
    assert verdict.decision == "deny" and verdict.rules == ["deny_keyword:work-bound"]


def test_an_outcome_without_a_dispatch_opens_nothing() -> None:
    gate = CallGate(
        load_policy_text('[[trace_rule]]\nname = "t"\nrule = "deploy only after run_tests"\n')
    )
    gate.report("run_tests", {}, "succeeded")  # a PostToolUse for a call never admitted
    assert gate.decide("deploy", {}).decision == "deny"


def test_a_forged_rule_cache_entry_is_refused() -> None:
    from car_verify.rules.trace import parse_trace_rule, rule_from_dict, rule_to_dict

    doc = rule_to_dict(parse_trace_rule('never deploy where env != "staging"'))
    forgeries = [
        {**doc, "kind": "bogus"},
        {**doc, "call": {**doc["call"], "tool": "deploy after read_secret"}},
        {**doc, "call": {**doc["call"], "tests": [{**doc["call"]["tests"][0], "op": "x"}]}},
        {**doc, "limit": -1},
        {**doc, "call": {**doc["call"], "tests": [{**doc["call"]["tests"][0], "value": [1]}]}},
    ]
    for forged in forgeries:
        with pytest.raises(ValueError):
            rule_from_dict(forged)


def test_a_held_session_lock_denies_within_its_deadline(tmp_path: Path) -> None:
    import fcntl
    import time

    from car_verify import hook

    folder = tmp_path / "p" / ".car" / "policies"
    folder.mkdir(parents=True)
    (folder / "r.toml").write_text('deny_tool = ["x"]\n')
    payload = {"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "ls",
               "tool_input": {}}  # fmt: skip
    state = tmp_path / "state"
    hook.answer(json.dumps(payload), policies=folder, state_dir=state)
    [lock] = state.glob("*.lock")
    holder = os.open(lock, os.O_RDONLY)  # reading is enough to take an flock
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        start = time.perf_counter()
        _, answer = hook.answer(json.dumps(payload), policies=folder, state_dir=state)
        assert answer.decision == "deny" and "lock" in answer.reason
        assert time.perf_counter() - start < hook.LOCK_SECONDS + 3
    finally:
        os.close(holder)
