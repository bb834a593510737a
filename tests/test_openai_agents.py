"""The gate in the OpenAI Agents SDK, driven by a scripted model (no network):
refused calls never run and the run goes on, trace rules and rate limits see the
run's calls in order with their outcomes, an error in the gate fails closed, and
each run has its own gate."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="the [agents] extra is not installed")

from agents import Agent, FunctionTool, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from car_verify.integrations.openai_agents import (
    PolicyGuard,
    guard_tools,
    policy_guardrail,
)
from car_verify.rules.policy import PolicyEngine, load_policy_text

set_tracing_disabled(True)

Turn = str | Sequence[tuple[str, dict[str, Any]]]


class ScriptedModel(Model):
    """Answers each model call with the next turn of its script: tool calls, or a
    final text. Records what it was given, so a test reads what the model saw."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        self.turns = list(turns)
        self.inputs: list[Any] = []

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kw: Any
    ) -> Any:
        self.inputs.append(input)
        turn = self.turns.pop(0)
        if isinstance(turn, str):
            text = ResponseOutputText(type="output_text", text=turn, annotations=[])
            out: list[Any] = [
                ResponseOutputMessage(
                    id="m", type="message", role="assistant", status="completed", content=[text]
                )
            ]
        else:
            out = [
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=f"call{len(self.inputs)}_{i}",
                    name=name,
                    arguments=json.dumps(args),
                )
                for i, (name, args) in enumerate(turn)
            ]
        return ModelResponse(output=out, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kw: Any) -> Any:
        raise NotImplementedError

    def answers(self) -> dict[str, str]:
        """Each tool call's output as the model was given it, by call id."""
        return {
            item["call_id"]: item["output"]
            for given in self.inputs
            if isinstance(given, list)
            for item in given
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        }


class Tools:
    """Tools that record their calls; ``fail`` names those that raise."""

    def __init__(self, *names: str, fail: Sequence[str] = ()) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []
        self.raw: list[str] = []
        self.tools = [self._tool(n, n in fail) for n in names]

    def _tool(self, name: str, fails: bool) -> FunctionTool:
        def body(
            to: str | None = None,
            q: int | None = None,
            n: float | None = None,
            command: str | None = None,
        ) -> str:
            given = {"to": to, "q": q, "n": n, "command": command}
            self.ran.append((name, {k: v for k, v in given.items() if v is not None}))
            if fails:
                raise RuntimeError("the tool broke")
            return f"{name} done"

        made = function_tool(body, name_override=name, strict_mode=False)
        invoke = made.on_invoke_tool

        async def recorded(ctx: Any, arguments: str) -> Any:
            self.raw.append(arguments)
            return await invoke(ctx, arguments)

        made.on_invoke_tool = recorded
        return made


def run(tools: Tools, policy: str, turns: Sequence[Turn], **options: Any) -> ScriptedModel:
    model = ScriptedModel([*turns, "finished"])
    guarded = guard_tools(tools.tools, policies=load_policy_text(policy), **options)
    result = asyncio.run(Runner.run(Agent(name="a", model=model, tools=guarded), "go"))
    assert result.final_output == "finished"  # the run went on to its end
    return model


def test_a_denied_call_never_runs_and_the_model_is_told_the_rule() -> None:
    tools = Tools("send", "read")
    policy = '[[deny_tool_param]]\ntool = "send"\nparam = "to"\ncontains = "evil"\n'
    model = run(
        tools, policy, [[("send", {"to": "evil.com"}), ("read", {})], [("send", {"to": "ok"})]]
    )
    assert tools.ran == [("read", {}), ("send", {"to": "ok"})]
    answers = model.answers()
    assert answers["call1_0"].startswith("denied by policy: deny_tool_param:send.to")
    assert "evil" not in answers["call1_0"]  # the reason holds no value of the call
    assert answers["call1_1"] == "read done" and answers["call2_0"] == "send done"


def test_a_trace_rule_sees_the_runs_calls_in_order() -> None:
    tools = Tools("read_secret", "send")
    policy = '[[trace_rule]]\nrule = "never send after read_secret"\nname = "exfil"\n'
    model = run(tools, policy, [[("send", {})], [("read_secret", {})], [("send", {})]])
    assert [t for t, _ in tools.ran] == ["send", "read_secret"]
    assert "trace_rule:exfil" in model.answers()["call3_0"]


def test_a_failed_tool_is_reported_failed() -> None:
    policy = (
        '[[trace_rule]]\nrule = "deploy only after test succeeded"\nname = "tested"\n'
        '[[trace_rule]]\nrule = "never deploy after test failed"\nname = "red"\n'
    )
    failing = Tools("test", "deploy", fail=["test"])
    model = run(failing, policy, [[("test", {})], [("deploy", {})]])
    assert [t for t, _ in failing.ran] == ["test"]
    answer = model.answers()["call2_0"]
    assert "trace_rule:red" in answer and "trace_rule:tested" in answer
    assert "error" in model.answers()["call1_0"].lower()  # the SDK told the model it failed
    passing = Tools("test", "deploy")
    run(passing, policy, [[("test", {})], [("deploy", {})]])
    assert [t for t, _ in passing.ran] == ["test", "deploy"]


def test_a_rate_limit_counts_the_runs_calls() -> None:
    tools = Tools("search")
    policy = '[[rate_limit_tool]]\ntool = "search"\nmax_calls = 2\ninterval_secs = 60\n'
    model = run(tools, policy, [[("search", {"q": i})] for i in range(3)], clock=lambda: 0.0)
    assert [p for _, p in tools.ran] == [{"q": 0}, {"q": 1}]
    assert "rate_limit_tool:search" in model.answers()["call3_0"]


def test_each_run_has_its_own_gate() -> None:
    tools = Tools("send")
    rules = load_policy_text('[[trace_rule]]\nrule = "at most 1 send"\n')
    guarded = guard_tools(tools.tools, policies=rules)
    for _ in range(2):
        model = ScriptedModel([[("send", {})], [("send", {})], "finished"])
        asyncio.run(Runner.run(Agent(name="a", model=model, tools=guarded), "go"))
        assert "trace_rule:at most 1 send" in model.answers()["call2_0"]
    assert len(tools.ran) == 2  # one send in each run


def test_the_tool_gets_exactly_the_checked_arguments() -> None:
    tools = Tools("send")
    model = ScriptedModel([[("send", {"to": "a"})], "finished"])
    model.turns[0] = [("send", {"to": "a", "n": 1.0})]
    run_ = guard_tools(tools.tools, policies=load_policy_text('deny_tool = ["other"]\n'))
    asyncio.run(Runner.run(Agent(name="a", model=model, tools=run_), "go"))
    assert tools.raw == [json.dumps({"to": "a", "n": 1.0})]


def test_an_error_in_the_gate_rejects_this_call_and_the_rest_of_the_run() -> None:
    engine = PolicyEngine()

    def broken(tool: str, params: Any, action: Any) -> bool:
        raise ValueError("the callback broke")

    engine.register_callback("cb", broken, target="send")
    tools = Tools("send", "read")
    model = ScriptedModel([[("send", {})], [("read", {})], "finished"])
    guarded = guard_tools(tools.tools, policies=engine)
    asyncio.run(Runner.run(Agent(name="a", model=model, tools=guarded), "go"))
    assert tools.ran == []
    answers = model.answers()
    assert "policy check failed (ValueError)" in answers["call1_0"]
    assert "policy check failed" in answers["call2_0"]


@pytest.fixture
def undecidable(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule that cannot be decided on any call of ``shell``: the engine's answer
    for a command line whose program is computed (no file rule reads one so today)."""
    judge = PolicyEngine.judge

    def judged(self: PolicyEngine, tool: Any, *args: Any, **kw: Any) -> Any:
        denied, undecided = judge(self, tool, *args, **kw)
        if tool == "shell":
            undecided = [*undecided, ("deny_command:shell.rm", "the program is computed")]
        return denied, undecided

    monkeypatch.setattr(PolicyEngine, "judge", judged)


@pytest.mark.parametrize(("on_unknown", "runs"), [("deny", False), ("ask", False), ("allow", True)])
def test_a_rule_that_cannot_be_decided_follows_on_unknown(
    undecidable: None, on_unknown: Any, runs: bool
) -> None:
    tools = Tools("shell")
    model = run(
        tools, 'deny_tool = ["x"]\n', [[("shell", {"command": "$X /"})]], on_unknown=on_unknown
    )
    assert bool(tools.ran) is runs
    if not runs:
        answer = model.answers()["call1_0"]
        assert "deny_command:shell.rm" in answer
        assert ("needs approval" if on_unknown == "ask" else "cannot be decided") in answer


def test_arguments_that_are_not_an_object_are_checked_as_the_audit_reads_them() -> None:
    from car_verify.integrations.openai_agents import _params

    assert _params("[1]") == {"_arguments": [1]} and _params("{x") == {"_arguments": "{x"}
    assert _params("  ") == {} and _params('{"a": 1}') == {"a": 1}


def test_a_guardrail_attached_by_hand_decides_calls(tmp_path: Path) -> None:
    folder = tmp_path / ".car" / "policies"
    folder.mkdir(parents=True)
    (folder / "p.toml").write_text('deny_tool = ["send"]\n', encoding="utf-8")
    tools = Tools("send")
    tools.tools[0].tool_input_guardrails = [policy_guardrail(policies=str(folder))]
    model = ScriptedModel([[("send", {})], "finished"])
    asyncio.run(Runner.run(Agent(name="a", model=model, tools=tools.tools), "go"))
    assert tools.ran == [] and "deny_tool:send" in model.answers()["call1_0"]


def test_guarding_twice_wraps_once() -> None:
    tools = Tools("send")
    guard = PolicyGuard(load_policy_text('deny_tool = ["x"]\n'))
    once = guard.guard(tools.tools[0]).on_invoke_tool
    assert guard.guard(tools.tools[0]).on_invoke_tool is once
    assert tools.tools[0].tool_input_guardrails == [guard.guardrail]
