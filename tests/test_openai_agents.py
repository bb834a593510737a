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

    def __init__(self, turns: Sequence[Turn], prefix: str = "call") -> None:
        self.turns = list(turns)
        self.inputs: list[Any] = []
        self.prefix = prefix

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
                    call_id=f"{self.prefix}{len(self.inputs)}_{i}",
                    name=name,
                    arguments=json.dumps(args),
                )
                for i, (name, args) in enumerate(turn)
            ]
        return ModelResponse(output=out, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kw: Any) -> Any:
        # a scripted model answers whole turns (Runner.run); it has no stream to give
        raise TypeError("this scripted model does not stream: use Runner.run, not run_streamed")

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


@pytest.mark.parametrize(("on_unknown", "runs"), [("deny", False), ("allow", True)])
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
        assert "cannot be decided" in answer


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


# --- the run is the unit (issue 57): every path to a tool, one gate per run ------------------

EXFIL = '[[trace_rule]]\nrule = "never send after read_secret"\nname = "exfil"\n'
ONCE = '[[trace_rule]]\nrule = "at most 1 deploy"\nname = "once"\n'


def go(agent: Agent[Any], **kw: Any) -> Any:
    return asyncio.run(Runner.run(agent, "go", **kw))


def test_agents_guarded_separately_share_the_run_across_a_handoff() -> None:
    """The per-agent pattern: each agent's tools guarded by their own call. After
    read_secret, the handoff target's send runs under the same trace."""
    first, second = Tools("read_secret"), Tools("send")
    rules = load_policy_text(EXFIL)
    target_model = ScriptedModel([[("send", {})], "finished"], prefix="b")
    target = Agent(name="b", model=target_model, tools=guard_tools(second.tools, policies=rules))
    source_model = ScriptedModel([[("read_secret", {})], [("transfer_to_b", {})]])
    source = Agent(
        name="a",
        model=source_model,
        tools=guard_tools(first.tools, policies=rules),
        handoffs=[target],
    )
    assert go(source).final_output == "finished"
    assert [t for t, _ in first.ran] == ["read_secret"] and second.ran == []
    assert "trace_rule:exfil" in target_model.answers()["b1_0"]


def test_a_rate_of_the_run_counts_an_agent_called_as_a_tool() -> None:
    outer, inner = Tools("deploy"), Tools("deploy")
    rules = load_policy_text(ONCE)
    helper_model = ScriptedModel([[("deploy", {})], "helped"], prefix="h")
    helper = Agent(
        name="helper", model=helper_model, tools=guard_tools(inner.tools, policies=rules)
    )
    as_tool = helper.as_tool(tool_name="helper", tool_description="helps")
    main_model = ScriptedModel([[("deploy", {})], [("helper", {"input": "deploy"})], "finished"])
    main = Agent(
        name="main", model=main_model, tools=guard_tools([*outer.tools, as_tool], policies=rules)
    )
    assert go(main).final_output == "finished"
    assert len(outer.ran) + len(inner.ran) == 1  # at most 1 deploy in the run
    assert "trace_rule:once" in helper_model.answers()["h1_0"]


def test_a_sub_agent_run_from_inside_a_tool_is_part_of_the_run() -> None:
    rules = load_policy_text(EXFIL)
    inner = Tools("send")
    sub_model = ScriptedModel([[("send", {})], "sub done"], prefix="s")
    sub = Agent(name="sub", model=sub_model, tools=guard_tools(inner.tools, policies=rules))

    @function_tool
    async def delegate() -> str:
        """Runs the sub-agent, a run of its own as far as the SDK knows."""
        return str((await Runner.run(sub, "send it")).final_output)

    outer = Tools("read_secret")
    main_model = ScriptedModel([[("read_secret", {})], [("delegate", {})], "finished"])
    main = Agent(
        name="main",
        model=main_model,
        tools=guard_tools([*outer.tools, delegate], policies=rules),
    )
    assert go(main).final_output == "finished"
    assert inner.ran == [] and "trace_rule:exfil" in sub_model.answers()["s1_0"]
    alone = ScriptedModel([[("send", {})], "sub done"])  # outside a run: a run of its own
    assert go(Agent(name="sub", model=alone, tools=sub.tools)).final_output == "sub done"
    assert inner.ran == [("send", {})]


def test_parallel_calls_of_one_turn_take_their_slots_one_at_a_time() -> None:
    tools = Tools("deploy")
    model = run(tools, ONCE, [[("deploy", {"q": 1}), ("deploy", {"q": 2})]])
    assert len(tools.ran) == 1
    answers = model.answers()
    assert sum("trace_rule:once" in answers[c] for c in ("call1_0", "call1_1")) == 1


class FakeServer:
    """An MCP server in this process (the SDK's MCPServer interface): its tools
    record what they receive; ``broken`` ones answer isError."""

    def __init__(self, *names: str, broken: Sequence[str] = ()) -> None:
        from agents.mcp import MCPServer

        outer = self

        class Server(MCPServer):
            @property
            def name(self) -> str:
                return "fake"

            async def connect(self) -> None:
                return None

            async def cleanup(self) -> None:
                return None

            async def list_tools(self, run_context: Any = None, agent: Any = None) -> Any:
                import mcp.types as mt

                schema = {"type": "object", "properties": {"to": {"type": "string"}}}
                return [mt.Tool(name=n, description=n, input_schema=schema) for n in names]

            async def call_tool(self, tool_name: str, arguments: Any, meta: Any = None) -> Any:
                import mcp.types as mt

                outer.received.append((tool_name, dict(arguments or {})))
                failed = tool_name in broken
                text = mt.TextContent(
                    type="text", text=f"{tool_name} {'broke' if failed else 'done'}"
                )
                return mt.CallToolResult(content=[text], is_error=failed)

            async def list_prompts(self) -> Any:
                import mcp.types as mt

                return mt.ListPromptsResult(prompts=[])

            async def get_prompt(self, name: str, arguments: Any = None) -> Any:
                raise ValueError(f"no prompt {name!r}: this server has none")

        self.received: list[tuple[str, dict[str, Any]]] = []
        self.server = Server()


def test_an_mcp_servers_tools_pass_the_gate() -> None:
    from car_verify.integrations.openai_agents import guard_agent

    server = FakeServer("send", "test", "deploy", broken=["test"])
    policy = (
        'deny_tool = ["send"]\n'
        '[[trace_rule]]\nrule = "never deploy after test failed"\nname = "red"\n'
    )
    model = ScriptedModel(
        [[("send", {"to": "x"})], [("test", {})], [("deploy", {"to": "prod"})], "finished"]
    )
    agent = guard_agent(
        Agent(name="a", model=model, mcp_servers=[server.server]),
        policies=load_policy_text(policy),
    )
    assert go(agent).final_output == "finished"
    assert server.received == [("test", {})]  # send denied; deploy after a failed test too
    answers = model.answers()
    assert "deny_tool:send" in answers["call1_0"] and "trace_rule:red" in answers["call3_0"]


def test_an_mcp_server_receives_the_checked_arguments_and_nothing_else() -> None:
    from car_verify.integrations.openai_agents import guard_agent

    server = FakeServer("send")
    model = ScriptedModel([[("send", {"to": "a"})], "finished"])
    agent = guard_agent(
        Agent(name="a", model=model, mcp_servers=[server.server]),
        policies=load_policy_text('deny_tool = ["other"]\n'),
    )
    go(agent)
    assert server.received == [("send", {"to": "a"})]
    guarded = agent.mcp_servers[0]
    with pytest.raises(Exception, match="did not come through the policy gate"):
        asyncio.run(guarded.call_tool("send", {"to": "evil"}))  # not through a guarded tool
    assert server.received == [("send", {"to": "a"})]


def test_guard_agent_covers_handoffs_agents_as_tools_and_tools_given_later() -> None:
    from car_verify.integrations.openai_agents import guard_agent

    deep = Tools("deploy")
    late = Tools("deploy")
    helper_model = ScriptedModel([[("deploy", {})], "ok"], prefix="h")
    helper = Agent(name="helper", model=helper_model, tools=deep.tools)
    billing_model = ScriptedModel(
        [[("helper", {"input": "x"})], [("deploy", {})], "finished"], prefix="b"
    )
    billing = Agent(
        name="billing",
        model=billing_model,
        tools=[helper.as_tool(tool_name="helper", tool_description="h")],
    )
    main = Agent(
        name="main", model=ScriptedModel([[("transfer_to_billing", {})]]), handoffs=[billing]
    )
    guard_agent(main, policies=load_policy_text(ONCE))
    billing.tools.append(late.tools[0])  # given after guard_agent: guarded when listed
    assert go(main).final_output == "finished"
    assert len(deep.ran) == 1 and late.ran == []
    assert "trace_rule:once" in billing_model.answers()["b2_0"]


def test_a_hosted_tool_is_refused_unless_allowed_unguarded() -> None:
    from agents import WebSearchTool

    from car_verify.base.errors import UsageError
    from car_verify.integrations.openai_agents import guard_agent

    rules = load_policy_text('deny_tool = ["x"]\n')
    with pytest.raises(UsageError, match=r"'web_search'.*allow_unguarded"):
        guard_tools([WebSearchTool()], policies=rules)
    with pytest.raises(UsageError, match="web_search"):
        guard_agent(Agent(name="a", tools=[WebSearchTool()]), policies=rules)
    kept = guard_tools([WebSearchTool()], policies=rules, allow_unguarded=["web_search"])
    assert isinstance(kept[0], WebSearchTool)


@pytest.mark.parametrize(
    ("files", "said"),
    [({}, "holds no rule"), ({"rules.tml": 'deny_tool = ["x"]\n'}, "rules.tml"),
     ({"p.toml": 'deny_tool = ["x"]\n', "notes.md": "x"}, "notes.md")],
)  # fmt: skip
def test_a_folder_that_would_check_nothing_is_refused_by_name(
    tmp_path: Path, files: dict[str, str], said: str
) -> None:
    from car_verify.base.errors import InputError, UsageError

    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    tools = Tools("send")
    with pytest.raises(UsageError, match=said.replace(".", r"\.")) as raised:
        guard_tools(tools.tools, policies=str(tmp_path))
    assert "allow_empty=True" in str(raised.value)
    guard_tools(Tools("send").tools, policies=str(tmp_path), allow_empty=True)
    with pytest.raises(InputError, match="no such policies directory"):
        guard_tools(Tools("send").tools, policies=str(tmp_path / "missing"))


def test_ask_interrupts_the_run_and_a_person_decides(undecidable: None) -> None:
    for approve in (True, False):
        tools = Tools("shell")
        model = ScriptedModel([[("shell", {"command": "$X /"})], "finished"])
        agent = Agent(
            name="a",
            model=model,
            tools=guard_tools(tools.tools, policies=load_policy_text(ONCE), on_unknown="ask"),
        )
        result = go(agent)
        assert tools.ran == [] and len(result.interruptions) == 1
        state = result.to_state()
        (state.approve if approve else state.reject)(result.interruptions[0])
        resumed = asyncio.run(Runner.run(agent, state))
        assert resumed.final_output == "finished"
        assert bool(tools.ran) is approve


def test_a_run_is_decided_by_one_rule_set() -> None:
    rules_a, rules_b = load_policy_text(ONCE), load_policy_text(EXFIL)
    first, second = Tools("read"), Tools("send")
    model = ScriptedModel([[("read", {})], [("send", {})], "finished"])
    tools = [
        *guard_tools(first.tools, policies=rules_a),
        *guard_tools(second.tools, policies=rules_b),
    ]
    go(Agent(name="a", model=model, tools=tools))
    assert first.ran == [("read", {})] and second.ran == []
    assert "two different rule sets" in model.answers()["call2_0"]


def gates_after(runs: int) -> tuple[int, int]:
    """(gates held before, alive after) ``runs`` runs of a guarded agent: in the
    registry, or anywhere (a cache that holds a run's gate keeps its memory)."""
    import gc
    import weakref

    from car_verify.integrations._runs import RUNS, Rules

    made: list[weakref.ref[Any]] = []
    new_run = Rules.new_run

    def tracked(self: Rules) -> Any:
        run = new_run(self)
        made.append(weakref.ref(run))
        return run

    tools = Tools("send")
    agent = Agent(
        name="a", tools=guard_tools(tools.tools, policies=load_policy_text(ONCE)), model=None
    )
    gc.collect()
    before = len(RUNS)
    Rules.new_run = tracked  # type: ignore[method-assign]
    try:
        for i in range(runs):
            agent.model = ScriptedModel([[("send", {"q": i})], "finished"])
            go(agent)
    finally:
        Rules.new_run = new_run  # type: ignore[method-assign]
    gc.collect()
    assert len(tools.ran) == runs and len(made) == runs
    return before, len(RUNS) + sum(1 for r in made if r() is not None)


def test_the_gates_of_ended_runs_are_freed() -> None:
    before, after = gates_after(20)
    assert after <= before  # no gate is held for an ended run


@pytest.mark.slow
def test_no_gate_is_held_after_a_thousand_runs() -> None:
    before, after = gates_after(1000)
    assert after <= before


def test_tools_guarded_one_by_one_beside_an_unguarded_mcp_server_stop_the_run() -> None:
    """guard_tools sees only the tools it is given: an agent that also reaches an
    MCP server is stopped at its first guarded call, loudly, not run half-checked."""
    server = FakeServer("send")
    tools = Tools("read")
    model = ScriptedModel([[("read", {})], "finished"])
    guarded = guard_tools(tools.tools, policies=load_policy_text(EXFIL))
    agent = Agent(name="a", model=model, tools=guarded, mcp_servers=[server.server])
    with pytest.raises(Exception, match="guard_agent"):
        go(agent)
    assert tools.ran == []


def test_a_streamed_run_is_guarded_as_a_run() -> None:
    tools = Tools("deploy")
    model = ScriptedModel([[("deploy", {})], [("deploy", {})], "finished"])
    agent = Agent(name="a", model=model, tools=guard_tools(tools.tools, load_policy_text(ONCE)))

    async def stream() -> None:
        result = Runner.run_streamed(agent, "go")
        async for _ in result.stream_events():
            pass

    model.stream_response = _streamed(model)  # type: ignore[method-assign]
    asyncio.run(stream())
    assert len(tools.ran) == 1 and "trace_rule:once" in model.answers()["call2_0"]


def _streamed(model: ScriptedModel) -> Any:
    """The scripted model's answers as a stream: one completed response each."""
    from openai.types.responses import Response, ResponseCompletedEvent

    async def stream(*args: Any, **kw: Any) -> Any:
        answer = await model.get_response(*args[:2])
        response = Response(
            id="r", created_at=0, model="m", object="response", output=answer.output,
            parallel_tool_calls=True, tool_choice="auto", tools=[],
        )  # fmt: skip
        yield ResponseCompletedEvent(
            type="response.completed", response=response, sequence_number=0
        )

    return stream


def test_a_hosted_tool_given_after_guard_agent_stops_the_run() -> None:
    from agents import WebSearchTool

    from car_verify.integrations.openai_agents import guard_agent

    tools = Tools("read")
    model = ScriptedModel([[("read", {})], "finished"])
    agent = guard_agent(Agent(name="a", model=model, tools=tools.tools), load_policy_text(ONCE))
    agent.tools.append(WebSearchTool())
    with pytest.raises(Exception, match=r"web_search.*allow_unguarded"):
        go(agent)
    assert tools.ran == []
