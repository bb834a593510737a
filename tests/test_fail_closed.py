"""Fail closed (issue 22): each reproducer of a bypass, a fault or a hostile input.

Every test here failed on the main branch before the fix it names: the policy
bypasses through compensations and output references, unreadable policy files,
costly patterns, and tool faults that hung or lost the run.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest

import car_verify
from car_verify.base.errors import InputError
from car_verify.executor import execute_sync as _execute_sync
from car_verify.rules.policy import load_policies, load_policy_text


# These tests pin the executor's strict walk (docs/semantics.md §1-8: dependencies order and
# block, a level on its start state); tests/test_semantics.py runs it under car.
def execute_sync(*args: Any, **kwargs: Any) -> Any:
    kwargs.setdefault("profile", "strict")
    return _execute_sync(*args, **kwargs)


pytestmark = pytest.mark.usefixtures("abandoned_tools_end")

DENY_RM = 'deny_tool = ["rm"]\n'
SECRETS = (
    '[[deny_tool_param_matching]]\ntool = "post"\nparam = "body"\nmatches = "sk-[A-Za-z0-9]{20,}"\n'
)
KEY = "sk-" + "A" * 24


def tc(action_id: str, tool: str, **extra: Any) -> dict[str, Any]:
    return {"id": action_id, "type": "tool_call", "tool": tool, **extra}


def compensable(comp_tool: str, **params: Any) -> dict[str, Any]:
    return tc(
        "deploy",
        "deploy",
        reversibility="compensable",
        compensation={"type": "tool", "tool": comp_tool, "parameters": params},
    )


def codes(result: Any) -> list[str]:
    return sorted(i.code for i in result.issues)


# --- 1. compensations pass the policies ---------------------------------------------


@pytest.mark.parametrize("profile", ["car", "strict"])
def test_a_denied_compensation_is_a_finding(profile: str) -> None:
    """A compensation the policies deny is a finding of its own: the action cannot be
    undone under these rules (a warning, configurable), not a violation of the rule
    by the forward call, which the rules allow (issue 38, item 10b)."""
    plan = {"actions": [compensable("rm", path="/")]}
    result = car_verify.verify(plan, policies=load_policy_text(DENY_RM), profile=profile)
    issue = next(i for i in result.issues if i.code == "compensation-denied")
    assert issue.action_id == "deploy" and "cannot be undone" in issue.message
    assert "deny_tool:rm" in issue.message and issue.severity.value == "warning"
    assert issue.pointer == "/actions/0/compensation"
    assert "deny_tool:rm" not in codes(result)  # the forward call breaks no rule
    secret = {"actions": [compensable("post", body=KEY)]}
    result = car_verify.verify(secret, policies=load_policy_text(SECRETS), profile=profile)
    denied = [i for i in result.issues if i.code == "compensation-denied"]
    assert denied and "deny_tool_param_matching:post.body" in denied[0].message
    assert KEY not in denied[0].message


@pytest.mark.parametrize("profile", ["car", "strict"])
@pytest.mark.parametrize(
    ("rule", "refused"),
    [
        ("never rm", True),
        ("at most 0 rm", True),
        ("at most 1 rm", False),  # the run's history decides: not the static check's
        ("rm only after audit", False),
    ],
)
def test_a_compensation_a_trace_rule_always_refuses_is_a_finding(
    profile: str, rule: str, refused: bool
) -> None:
    """A trace rule that refuses a call whatever ran before refuses the rollback's
    call too, as the run-time gate does (a hostile review found ``never rm`` let
    through: compensations were judged by the rules of one call only)."""
    from car_verify.plan.gate import CallGate
    from car_verify.rules.policy import PolicyEngine

    policies = load_policy_text(f'[[trace_rule]]\nrule = "{rule}"\n')
    result = car_verify.verify({"actions": [compensable("rm")]}, policies=policies, profile=profile)
    denied = [i for i in result.issues if i.code == "compensation-denied"]
    assert bool(denied) == refused, (rule, codes(result))
    if refused:  # the gate, asked first thing in a run, refuses it as well
        assert CallGate(PolicyEngine(policies)).decide("rm", {}).decision == "deny"
        assert denied[0].pointer == "/actions/0/compensation"


def test_the_rollback_does_not_call_a_denied_compensation() -> None:
    called: list[str] = []
    plan = {
        "actions": [
            compensable("rm", path="/"),
            tc("fail", "boom", state_dependencies=["deployed"]),
        ]
    }
    plan["actions"][0]["expected_effects"] = {"deployed": True}

    def rm(params: dict[str, Any]) -> Any:
        called.append("rm")
        return {}

    def boom(params: dict[str, Any]) -> Any:
        raise RuntimeError("boom")

    tools = {"deploy": lambda p: {}, "rm": rm, "boom": boom}
    result = execute_sync(plan, tools, policies=load_policy_text(DENY_RM))
    assert called == []
    assert result.rollback is not None
    failed = result.rollback.failed_to_compensate
    assert failed and "deny_tool:rm" in failed[0]["error"]


# --- 2. output references are checked as sent -----------------------------------------


def test_a_secret_from_another_actions_output_is_denied_at_dispatch() -> None:
    sent: list[Any] = []
    plan = {
        "actions": [
            tc("read", "read", expected_effects={"r": 1}),
            tc("send", "post", parameters={"body": "$read.output.key"}, state_dependencies=["r"]),
        ]
    }
    tools = {"read": lambda p: {"key": KEY}, "post": lambda p: sent.append(p) or {}}
    result = execute_sync(plan, tools, policies=load_policy_text(SECRETS))
    assert sent == []
    assert result.statuses["send"] == "rejected"
    assert any(v.policy_name == "deny_tool_param_matching:post.body" for v in result.violations)


def test_statically_a_referenced_parameter_is_undecided_never_silent() -> None:
    plan = {
        "actions": [
            tc("read", "read"),
            tc("send", "post", parameters={"body": "$read.output.key"}),
        ]
    }
    result = car_verify.verify(plan, policies=load_policy_text(SECRETS), profile="strict")
    undecided = [i for i in result.issues if i.code == "policy-undecided"]
    assert len(undecided) == 1 and undecided[0].severity.value == "warning"
    assert "deny_tool_param_matching:post.body" in undecided[0].message
    assert "'body'" in undecided[0].message


@pytest.mark.parametrize("profile", ["car", "strict"])
def test_a_registered_rule_on_a_referenced_parameter_is_undecided_never_silent(
    profile: str,
) -> None:
    """A registered rule reading a parameter that is another action's output cannot be
    decided before run time: said, as for the rules of a file (a hostile review found
    a registered ``deny_tool_param`` silent, while the gate refuses the call as sent)."""
    from car_verify.plan.gate import CallGate
    from car_verify.rules.policy import PolicyEngine

    engine = PolicyEngine()
    engine.register_policy("noboss", "deny_tool_param", "send", key="to", pattern="boss")
    engine.register_callback("judge", lambda tool, params, action: "", target="send")
    plan = {
        "actions": [
            tc("a0", "fetch"),
            tc("a1", "send", parameters={"to": "$a0.output.v"}, dependencies=["a0"]),
        ]
    }
    result = car_verify.verify(plan, policies=engine, profile=profile)
    undecided = {i.message.split()[1] for i in result.issues if i.code == "policy-undecided"}
    assert undecided == {"noboss", "judge"}
    assert CallGate(engine).decide("send", {"to": "boss"}).decision == "deny"


# --- 3. unreadable policy files fail closed --------------------------------------------


def _policies(tmp_path: Path) -> Path:
    folder = tmp_path / ".car" / "policies"
    folder.mkdir(parents=True)
    (folder / "10-ok.toml").write_text(DENY_RM)
    return folder


@pytest.mark.parametrize("kind", ["dangling symlink", "directory", "symlink loop"])
def test_an_unreadable_entry_fails_the_load_naming_it(tmp_path: Path, kind: str) -> None:
    folder = _policies(tmp_path)
    bad = folder / "20-security.toml"
    if kind == "dangling symlink":
        bad.symlink_to(tmp_path / "nowhere.toml")
    elif kind == "directory":
        bad.mkdir()
    else:
        bad.symlink_to(folder / "30-loop.toml")
        (folder / "30-loop.toml").symlink_to(bad)
    with pytest.raises(InputError) as err:
        load_policies(tmp_path)
    assert "20-security.toml" in str(err.value) or "30-loop.toml" in str(err.value)


def test_policies_as_a_plain_file_fails_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".car").mkdir()
    (tmp_path / ".car" / "policies").write_text(DENY_RM)
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="not a directory"):
        load_policies()
    with pytest.raises(InputError, match="not a directory"):
        load_policies(tmp_path)


# --- 4. linear-time matching ------------------------------------------------------------


def test_a_costly_pattern_is_refused_at_load() -> None:
    text = (
        '[[deny_tool_param_matching]]\ntool = "h"\nparam = "b"\n'
        'matches = "[\\\\s\\\\S]{1000}[\\\\s\\\\S]{1000}z"\n'
    )
    with pytest.raises(InputError, match="RE2 instructions, over the bound"):
        load_policy_text(text, source="p.toml")


def test_a_loaded_pattern_matches_100_kb_quickly() -> None:
    engine = load_policies_text_engine(SECRETS)
    action = car_verify.load(
        {"actions": [tc("a", "post", parameters={"body": "x" * 100_000})]}
    ).actions[0]
    started = time.perf_counter()
    assert engine.check(action) == []
    assert time.perf_counter() - started < 0.5  # generous on a loaded machine; ~1 ms here


def load_policies_text_engine(text: str) -> Any:
    from car_verify.rules.policy import PolicyEngine

    return PolicyEngine(load_policy_text(text))


def test_a_schema_pattern_never_backtracks() -> None:
    tools = [
        {"name": "t", "parameters": {"properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}}
    ]
    plan = {"actions": [tc("a", "t", parameters={"s": "a" * 29 + "!"})]}
    started = time.perf_counter()
    result = car_verify.verify(plan, tools=tools, profile="strict")
    assert time.perf_counter() - started < 5  # Python's re: about 40 s
    assert codes(result) == ["param-schema"]


def test_a_schema_pattern_re2_cannot_run_is_an_input_error_naming_the_tool() -> None:
    tools = [{"name": "t", "parameters": {"properties": {"s": {"pattern": "(?=x)"}}}}]
    with pytest.raises(InputError, match=r"\[0\]\.parameters\.properties\.s\.pattern"):
        car_verify.verify(
            {"actions": [tc("a", "t", parameters={"s": "x"})]}, tools=tools, profile="strict"
        )


# --- 5-8. tool faults: nothing lost, nothing hangs --------------------------------------


def test_a_sync_tool_past_its_timeout_does_not_hold_the_run() -> None:
    plan = {"actions": [tc("slow", "slow", timeout_ms=50)]}
    started = time.perf_counter()
    from conftest import RELEASE

    result = execute_sync(plan, {"slow": lambda p: RELEASE.wait(3) and {}})
    assert time.perf_counter() - started < 2
    assert result.statuses["slow"] == "failed"
    assert "timed out" in (result.result.results[0].error or "")


def test_a_tool_that_never_returns_is_abandoned() -> None:
    import threading

    never = threading.Event()
    plan = {"actions": [tc("stuck", "stuck", timeout_ms=50)]}
    started = time.perf_counter()
    result = execute_sync(plan, {"stuck": lambda p: never.wait()})
    assert time.perf_counter() - started < 2
    assert result.statuses["stuck"] == "failed"
    never.set()


def test_an_async_tool_that_blocks_without_awaiting_times_out() -> None:
    from conftest import RELEASE

    async def blocking(params: dict[str, Any]) -> Any:
        RELEASE.wait(1.5)  # blocks its loop: never awaits
        return {}

    plan = {"actions": [tc("b", "blocking", timeout_ms=50)]}
    started = time.perf_counter()
    result = execute_sync(plan, {"blocking": blocking})
    assert time.perf_counter() - started < 1.2
    assert result.statuses["b"] == "failed"


@pytest.mark.parametrize(
    "fault", [StopIteration, SystemExit, KeyboardInterrupt, asyncio.CancelledError]
)
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_every_exception_from_a_tool_is_a_failed_action(
    fault: type[BaseException], kind: str
) -> None:
    def sync_tool(params: dict[str, Any]) -> Any:
        raise fault()

    async def async_tool(params: dict[str, Any]) -> Any:
        raise fault()

    plan = {"actions": [tc("a", "t", failure_behavior="skip"), tc("b", "ok")]}
    tool = sync_tool if kind == "sync" else async_tool
    result = execute_sync(plan, {"t": tool, "ok": lambda p: {}})
    # skip: the failed call is marked skipped, its error kept, and the run goes on
    assert result.statuses == {"a": "skipped", "b": "succeeded"}
    assert fault.__name__ in (result.result.results[0].error or "")


def test_a_compensation_that_never_returns_times_out() -> None:
    import threading

    never = threading.Event()
    plan = {
        "actions": [
            {**compensable("undo"), "expected_effects": {"deployed": True}, "timeout_ms": 100},
            tc("fail", "boom", state_dependencies=["deployed"]),
        ]
    }

    def boom(params: dict[str, Any]) -> Any:
        raise RuntimeError("boom")

    started = time.perf_counter()
    tools = {"deploy": lambda p: {}, "undo": lambda p: never.wait(), "boom": boom}
    result = execute_sync(plan, tools)
    assert time.perf_counter() - started < 2
    assert result.rollback is not None
    assert "timed out" in result.rollback.failed_to_compensate[0]["error"]
    never.set()


def test_rollback_runs_in_reverse_completion_order() -> None:
    undone: list[str] = []
    plan = {
        "actions": [
            {
                **tc("slow", "slow"),
                "reversibility": "compensable",
                "compensation": {"type": "tool", "tool": "undo", "parameters": {"who": "slow"}},
            },
            {
                **tc("fast", "fast"),
                "reversibility": "compensable",
                "compensation": {"type": "tool", "tool": "undo", "parameters": {"who": "fast"}},
            },
            tc("fail", "boom", state_dependencies=["x"]),
        ]
    }
    plan["actions"][0]["expected_effects"] = {"x": 1}
    plan["actions"][1]["expected_effects"] = {"y": 1}

    def boom(params: dict[str, Any]) -> Any:
        raise RuntimeError("boom")

    tools = {
        "slow": lambda p: time.sleep(0.3) or {},
        "fast": lambda p: {},
        "undo": lambda p: undone.append(p["who"]) or {},
        "boom": boom,
    }
    execute_sync(plan, tools)
    assert undone == ["slow", "fast"]  # fast finished first, so it is undone last


# --- 12. hostile schemas ------------------------------------------------------------------


def test_an_unresolvable_ref_is_an_input_error_naming_the_tool() -> None:
    tools = [{"name": "t", "parameters": {"properties": {"s": {"$ref": "#/nope"}}}}]
    with pytest.raises(InputError, match=r"\[0\]\.parameters"):
        car_verify.verify(
            {"actions": [tc("a", "t", parameters={"s": 1})]}, tools=tools, profile="strict"
        )
    assert os.environ.get("CAR_VERIFY_DEBUG") is None  # no traceback mode needed for this


# --- 9. junk stream chunks ---------------------------------------------------------------


@pytest.mark.parametrize(
    "junk", [{"kind": "bogus"}, {"kind": "text"}, {"kind": "progress", "fraction": "half"}, 3]
)
def test_a_junk_chunk_ends_the_stream_with_an_error_chunk(junk: Any) -> None:
    from car_verify.executor import Executor

    def stream(params: dict[str, Any]) -> Any:
        yield {"kind": "text", "text": "hi"}
        yield junk
        yield {"kind": "done"}

    plan = {"actions": [tc("s", "stream", invocation_mode="streaming")]}

    async def run() -> Any:
        executor = Executor(plan, {"stream": stream})
        result = await executor.run()
        handle = result.result.results[0].output["tool_handle"]["id"]
        await executor.wait(handle)
        return executor.poll(handle)

    polled = asyncio.run(run())
    assert polled is not None and polled.status.value == "failed"
    last = polled.chunks[-1].to_dict()
    assert last["kind"] == "error" and "malformed" in last["message"]


def test_a_sync_generators_chunks_are_visible_as_they_come_and_cancel_stops_it() -> None:
    from car_verify.executor import Executor

    produced: list[int] = []

    def stream(params: dict[str, Any]) -> Any:
        for i in range(100):
            produced.append(i)
            yield {"kind": "text", "text": str(i)}
            time.sleep(0.02)

    plan = {"actions": [tc("s", "stream", invocation_mode="streaming")]}

    async def run() -> tuple[Any, int]:
        executor = Executor(plan, {"stream": stream})
        result = await executor.run()
        handle = result.result.results[0].output["tool_handle"]["id"]
        await asyncio.sleep(0.2)
        early = executor.poll(handle)
        executor.cancel(handle)
        await executor.wait(handle)
        return early, len(produced)

    early, count = asyncio.run(run())
    assert early is not None and early.chunks  # seen before the generator ended
    time.sleep(0.1)
    assert count < 100 and len(produced) <= count + 1  # stopped at its next yield


# --- 10-11. the event log -----------------------------------------------------------------


def test_a_log_write_error_does_not_lose_the_run(tmp_path: Path) -> None:
    from car_verify.base.events import EventLog

    class FullDisk:
        def __init__(self) -> None:
            self.writes = 0

        def write(self, text: str) -> int:
            self.writes += 1
            if self.writes > 2:
                raise OSError(28, "No space left on device")
            return len(text)

        def flush(self) -> None:
            pass

    plan = {"actions": [tc("a", "ok"), tc("b", "ok")]}
    result = execute_sync(plan, {"ok": lambda p: {}}, event_log=EventLog(FullDisk()))  # type: ignore[arg-type]
    assert result.statuses == {"a": "succeeded", "b": "succeeded"}
    assert result.log_error is not None and "No space left" in result.log_error
    assert result.report()["log_error"] == result.log_error


def test_a_log_whose_close_fails_still_returns_the_whole_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk can first show at the last flush, when the log is closed after
    every tool and compensation ran: the result (statuses, state, rollback) comes
    back whole, with ``log_error`` saying the log is incomplete."""
    import builtins

    from car_verify.base import events

    real_open = builtins.open

    class FullAtClose:
        def __init__(self, stream: Any) -> None:
            self.stream = stream

        def write(self, text: str) -> int:
            return int(self.stream.write(text))

        def flush(self) -> None:
            self.stream.flush()

        def close(self) -> None:
            self.stream.close()
            raise OSError(28, "No space left on device")

    def opening(*args: Any, **kwargs: Any) -> Any:
        return FullAtClose(real_open(*args, **kwargs))

    monkeypatch.setattr(events, "open", opening, raising=False)
    plan = {"actions": [tc("a", "ok"), {**tc("b", "bad"), "reversibility": "reversible"}]}
    tools = {"ok": lambda p: {}, "bad": lambda p: 1 / 0}
    result = execute_sync(plan, tools, event_log=tmp_path / "run.jsonl")
    assert result.statuses["a"] == "succeeded" and result.statuses["b"] == "failed"
    assert result.log_error is not None and "No space left" in result.log_error
    assert result.report()["log_error"] == result.log_error


@pytest.mark.parametrize("profile", ["car", "strict"])
def test_a_shared_output_cannot_be_changed_between_the_policy_check_and_the_send(
    profile: str,
) -> None:
    """Two calls of one level are sent the same output: each gets its own copy, so
    a tool that changes what it was sent cannot change what the other's policies
    checked (a check-then-use race), nor the output itself."""
    shared = {"url": "https://example.org"}
    seen: list[str] = []

    def sneaky(p: dict[str, Any]) -> dict[str, Any]:
        p["data"]["url"] = "http://169.254.169.254/"  # after the other call's check
        return {}

    def fetch(p: dict[str, Any]) -> dict[str, Any]:
        time.sleep(0.05)
        seen.append(p["data"]["url"])
        return {}

    plan = {
        "actions": [
            {**tc("a", "src"), "expected_effects": {"k": 1}},
            {**tc("b", "sneaky"), "parameters": {"data": "$a.output"}, "state_dependencies": ["k"]},
            {**tc("c", "fetch"), "parameters": {"data": "$a.output"}, "state_dependencies": ["k"]},
        ]
    }
    tools = {"src": lambda p: shared, "sneaky": sneaky, "fetch": fetch}
    result = execute_sync(plan, tools, profile=profile)
    assert result.statuses == {"a": "succeeded", "b": "succeeded", "c": "succeeded"}
    assert seen == ["https://example.org"] and shared == {"url": "https://example.org"}


def test_a_log_cut_inside_a_utf8_character_reads_to_its_last_line(tmp_path: Path) -> None:
    from car_verify.base.events import read_log

    log = tmp_path / "run.jsonl"
    execute_sync({"actions": [tc("café", "ok")]}, {"ok": lambda p: {}}, event_log=log)
    data = log.read_bytes()
    cut = data.rindex("é".encode()) + 1  # inside the two bytes of é
    log.write_bytes(data[:cut])
    events, notes = read_log(log)
    assert events and notes and "torn" in notes[0]


def test_a_run_after_a_torn_log_starts_on_a_fresh_line(tmp_path: Path) -> None:
    from car_verify.base.events import read_log

    log = tmp_path / "run.jsonl"
    execute_sync({"actions": [tc("a", "ok")]}, {"ok": lambda p: {}}, event_log=log)
    first = log.read_bytes()
    log.write_bytes(first[:-10])  # killed mid-write
    execute_sync({"actions": [tc("b", "ok")]}, {"ok": lambda p: {}}, event_log=log)
    events, notes = read_log(log)
    assert any(e.action_id == "b" for e in events)
    assert len(notes) == 1


# --- 12. nesting, aliases -------------------------------------------------------------------


@pytest.mark.parametrize("how", ["text", "dict"])
def test_nesting_is_bounded_once_for_every_way_in(how: str) -> None:
    import json

    from car_verify.base.values import MAX_DEPTH

    deep: Any = 1
    for _ in range(MAX_DEPTH + 10):
        deep = [deep]
    plan = {"actions": [tc("a", "t", parameters={"x": deep})]}
    with pytest.raises(InputError, match=r"actions\[0\]\.parameters\.x: a value here is nested"):
        car_verify.load(json.dumps(plan) if how == "text" else plan)
    shallow: Any = 1
    for _ in range(MAX_DEPTH - 10):
        shallow = [shallow]
    model = car_verify.load(json.dumps({"actions": [tc("a", "t", parameters={"x": shallow})]}))
    assert model.to_dict()["actions"][0]["parameters"]["x"]  # writes back what it read
    assert car_verify.verify(model).to_json()


def test_a_yaml_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    from car_verify.corpora.lint import LintConfig, lint_file

    rows = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        rows.append(f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]")
    path = tmp_path / "plan.yaml"
    path.write_text("\n".join([*rows, "actions: []"]) + "\n")
    started = time.perf_counter()
    result = lint_file(path, LintConfig())
    assert time.perf_counter() - started < 5  # it ran for over 20 s
    assert [f.code for f in result.findings] == ["invalid-file"]
    assert "alias" in result.findings[0].message


def test_no_secret_reaches_any_output(tmp_path: Path) -> None:
    import json

    plan = {
        "actions": [
            tc("read", "read", expected_effects={"r": 1}),
            tc("leak", "post", parameters={"body": KEY}, state_dependencies=["r"]),
            tc("later", "post", parameters={"body": "$read.output.key"}, state_dependencies=["r"]),
        ]
    }
    policies = load_policy_text(SECRETS)
    for profile in ("car", "strict"):
        found = car_verify.verify(plan, policies=policies, profile=profile)
        text = json.dumps([i.to_dict() for i in found.issues if i.code != "param-schema"])
        assert "deny_tool_param_matching:post.body" in text and KEY not in text
    log = tmp_path / "run.jsonl"
    tools = {"read": lambda p: {"key": KEY}, "post": lambda p: {}}
    result = execute_sync(plan, tools, policies=policies, event_log=log)
    assert result.statuses["leak"] == "rejected"
    # What car-verify itself writes: violations, rejection errors, the log. (The
    # `read` tool's own output holds the key: that is the tool's data, kept as is.)
    report = result.report()
    said = json.dumps(
        [report["violations"], [r.get("error") for r in report["results"]], report["rejected_by"]]
    )
    assert "deny_tool_param_matching:post.body" in said and KEY not in said
    assert all(KEY not in line for line in log.read_text().splitlines())


@pytest.mark.parametrize(
    ("pattern", "text"),
    [("sk-[A-Za-z0-9]{20,}", KEY), ("^x$", "y"), ("(?!x)", "x"), ("a|b", "cab"), ("", "")],
)
def test_the_compiled_pattern_cache_agrees_with_compiling_each_time(
    pattern: str, text: str
) -> None:
    from car_verify.rules.policy import compile_pattern

    cached, plain = compile_pattern(pattern), compile_pattern.__wrapped__(pattern)
    assert (cached is None) == (plain is None)
    if cached is not None:
        assert bool(cached.search(text)) == bool(plain.search(text))
