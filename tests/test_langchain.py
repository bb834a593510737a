"""The gate in LangChain 1.x agents (create_agent with PolicyMiddleware), driven by
a scripted chat model (no network): refused calls never run and the agent goes
on, trace rules and rate limits see the run's calls in order with their
outcomes, an error in the gate fails closed, and each run (an invocation, or a
thread with a checkpointer) has its own gate."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import pytest

pytest.importorskip("langchain.agents", reason="the [langchain] extra is not installed")

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import InjectedToolCallId, StructuredTool, ToolException
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedState, ToolNode

from car_verify.integrations.langchain import RUNS_IN_GRAPHS, PolicyMiddleware
from car_verify.rules.policy import PolicyEngine, load_policy_text

Turn = str | Sequence[tuple[str, dict[str, Any]]]


class ScriptedChat(BaseChatModel):
    """Answers each model call with the next turn: tool calls, or a final text."""

    turns: list[Any]
    at: int = 0

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        turn = self.turns[self.at]
        self.at += 1
        if isinstance(turn, str):
            message = AIMessage(content=turn)
        else:
            calls = [
                {"name": n, "args": a, "id": f"call{self.at}_{i}", "type": "tool_call"}
                for i, (n, a) in enumerate(turn)
            ]
            message = AIMessage(content="", tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=message)])

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kw: Any) -> Any:
        return self


class Tools:
    """Tools that record their calls; ``fail``: those that fail as a handled
    ``ToolException`` (an error ToolMessage); ``crash``: those that raise."""

    def __init__(self, *names: str, fail: Sequence[str] = (), crash: Sequence[str] = ()) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []
        self.tools = [self._tool(n, n in fail, n in crash) for n in names]

    def _tool(self, name: str, fails: bool, crashes: bool) -> StructuredTool:
        def body(to: str | None = None, q: int | None = None, n: float | None = None) -> str:
            given = {"to": to, "q": q, "n": n}
            self.ran.append((name, {k: v for k, v in given.items() if v is not None}))
            if fails:
                raise ToolException("the tool broke")
            if crashes:
                raise RuntimeError("the tool crashed")
            return f"{name} done"

        return StructuredTool.from_function(
            body, name=name, description=name, handle_tool_error=fails
        )


def held() -> int:
    """The gates held for graph runs, once what an earlier test left in reference
    cycles (a traceback that holds a run's runtime) is collected."""
    gc.collect()
    return RUNS_IN_GRAPHS.held()


def answers(result: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in result["messages"] if isinstance(m, ToolMessage)}


def run(
    tools: Tools, policy: str | PolicyEngine, turns: Sequence[Turn], *, extra: Sequence[Any] = (),
    **options: Any,
) -> dict[str, ToolMessage]:  # fmt: skip
    rules = load_policy_text(policy) if isinstance(policy, str) else policy
    model = ScriptedChat(turns=[*turns, "finished"])
    agent = create_agent(
        model, tools.tools, middleware=[*extra, PolicyMiddleware(policies=rules, **options)]
    )
    result = agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    assert result["messages"][-1].content == "finished"  # the agent went on to its end
    assert "car_verify_run" not in result  # private to the middleware
    return answers(result)


def test_a_denied_call_never_runs_and_the_model_gets_an_error_naming_the_rule() -> None:
    tools = Tools("send", "read")
    policy = '[[deny_tool_param]]\ntool = "send"\nparam = "to"\ncontains = "evil"\n'
    got = run(
        tools, policy, [[("send", {"to": "evil.com"})], [("read", {})], [("send", {"to": "ok"})]]
    )
    assert tools.ran == [("read", {}), ("send", {"to": "ok"})]
    refused = got["call1_0"]
    assert refused.status == "error" and "deny_tool_param:send.to" in refused.content
    assert "evil" not in refused.content
    assert got["call3_0"].status == "success"


def test_a_trace_rule_sees_the_runs_calls_in_order() -> None:
    tools = Tools("read_secret", "send")
    policy = '[[trace_rule]]\nrule = "never send after read_secret"\nname = "exfil"\n'
    got = run(tools, policy, [[("send", {})], [("read_secret", {})], [("send", {})]])
    assert [t for t, _ in tools.ran] == ["send", "read_secret"]
    assert "trace_rule:exfil" in got["call3_0"].content


POLICY_OUTCOMES = (
    '[[trace_rule]]\nrule = "deploy only after test succeeded"\nname = "tested"\n'
    '[[trace_rule]]\nrule = "never deploy after test failed"\nname = "red"\n'
)


def test_an_error_tool_message_is_a_failed_outcome() -> None:
    failing = Tools("test", "deploy", fail=["test"])
    got = run(failing, POLICY_OUTCOMES, [[("test", {})], [("deploy", {})]])
    assert got["call1_0"].status == "error" and [t for t, _ in failing.ran] == ["test"]
    assert "trace_rule:red" in got["call2_0"].content
    passing = Tools("test", "deploy")
    run(passing, POLICY_OUTCOMES, [[("test", {})], [("deploy", {})]])
    assert [t for t, _ in passing.ran] == ["test", "deploy"]


class Catch(AgentMiddleware[Any, Any]):
    """A middleware outside the gate that turns a raised tool error into an error
    message, so the agent goes on."""

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        try:
            return handler(request)
        except RuntimeError as err:
            return ToolMessage(
                content=str(err), tool_call_id=request.tool_call["id"], status="error"
            )


def test_a_raised_error_is_a_failed_outcome_and_is_raised_on() -> None:
    crashing = Tools("test", "deploy", crash=["test"])
    got = run(crashing, POLICY_OUTCOMES, [[("test", {})], [("deploy", {})]], extra=[Catch()])
    assert "trace_rule:red" in got["call2_0"].content
    alone = Tools("test", crash=["test"])
    agent = create_agent(
        ScriptedChat(turns=[[("test", {})], "finished"]), alone.tools,
        middleware=[PolicyMiddleware(policies=load_policy_text(POLICY_OUTCOMES))],
    )  # fmt: skip
    with pytest.raises(RuntimeError, match="crashed"):
        agent.invoke({"messages": [{"role": "user", "content": "go"}]})


def test_a_rate_limit_counts_the_runs_calls() -> None:
    tools = Tools("search")
    policy = '[[rate_limit_tool]]\ntool = "search"\nmax_calls = 2\ninterval_secs = 60\n'
    got = run(tools, policy, [[("search", {"q": i})] for i in range(3)], clock=lambda: 0.0)
    assert [p for _, p in tools.ran] == [{"q": 0}, {"q": 1}]
    assert "rate_limit_tool:search" in got["call3_0"].content


def test_the_tool_runs_with_the_checked_arguments() -> None:
    seen: list[Any] = []

    class Inner(AgentMiddleware[Any, Any]):
        def wrap_tool_call(self, request: Any, handler: Any) -> Any:
            seen.append(request.tool_call["args"])
            return handler(request)

    tools = Tools("send")
    rules = load_policy_text('deny_tool = ["x"]\n')
    middleware = PolicyMiddleware(policies=rules)
    model = ScriptedChat(turns=[[("send", {"to": "a", "n": 1.0})], "finished"])
    agent = create_agent(model, tools.tools, middleware=[middleware, Inner()])
    agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    assert seen == [{"to": "a", "n": 1.0}] and tools.ran == [("send", {"to": "a", "n": 1.0})]
    assert held() == 0  # the invocation's gate went with it


def test_an_error_in_the_gate_refuses_this_call_and_the_rest_of_the_run() -> None:
    engine = PolicyEngine()

    def broken(tool: str, params: Any, action: Any) -> bool:
        raise ValueError("the callback broke")

    engine.register_callback("cb", broken, target="send")
    tools = Tools("send", "read")
    got = run(tools, engine, [[("send", {})], [("read", {})]])
    assert tools.ran == []
    assert "policy check failed (ValueError)" in got["call1_0"].content
    assert got["call2_0"].status == "error"


def test_each_invocation_is_a_run_and_a_thread_is_one_run() -> None:
    tools = Tools("send")
    middleware = PolicyMiddleware(
        policies=load_policy_text('[[trace_rule]]\nrule = "at most 1 send"\n')
    )
    model = ScriptedChat(turns=[[("send", {})], "one", [("send", {})], "two"] * 3)
    agent = create_agent(model, tools.tools, middleware=[middleware])
    for _ in range(2):
        agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    assert len(tools.ran) == 2  # a send in each invocation
    threaded = create_agent(
        model, tools.tools, middleware=[middleware], checkpointer=InMemorySaver()
    )
    config: Any = {"configurable": {"thread_id": "t1"}}
    threaded.invoke({"messages": [{"role": "user", "content": "go"}]}, config)
    result = threaded.invoke({"messages": [{"role": "user", "content": "again"}]}, config)
    assert len(tools.ran) == 3  # the thread's second send is refused
    assert "at most 1 send" in answers(result)["call7_0"].content
    other: Any = {"configurable": {"thread_id": "t2"}}
    threaded.invoke({"messages": [{"role": "user", "content": "go"}]}, other)
    assert len(tools.ran) == 4
    # the threads' gates are kept in their checkpoints, not in memory: another
    # middleware object over the same rules (another process) takes them up
    assert held() == 0
    again = create_agent(
        model,
        tools.tools,
        middleware=[
            PolicyMiddleware(policies=load_policy_text('[[trace_rule]]\nrule = "at most 1 send"\n'))
        ],
        checkpointer=threaded.checkpointer,
    )
    result = again.invoke({"messages": [{"role": "user", "content": "more"}]}, config)
    last = [m for m in result["messages"] if isinstance(m, ToolMessage)][-1]
    assert len(tools.ran) == 4 and "at most 1 send" in last.content


def test_the_async_path_decides_and_reports_as_the_sync_one() -> None:
    tools = Tools("read_secret", "send")
    policy = '[[trace_rule]]\nrule = "never send after read_secret"\n'
    model = ScriptedChat(turns=[[("read_secret", {})], [("send", {})], "finished"])
    agent = create_agent(
        model, tools.tools, middleware=[PolicyMiddleware(policies=load_policy_text(policy))]
    )
    result = asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": "go"}]}))
    assert [t for t, _ in tools.ran] == ["read_secret"]
    assert "never send after read_secret" in answers(result)["call2_0"].content


# --- the run is the unit (issue 57): every path to a tool, one gate per run ------------------

ONCE = '[[trace_rule]]\nrule = "at most 1 deploy"\nname = "once"\n'
GO = {"messages": [{"role": "user", "content": "go"}]}


def policy(text: str, **options: Any) -> PolicyMiddleware:
    return PolicyMiddleware(policies=load_policy_text(text), **options)


def test_a_sub_agent_invoked_inside_a_tool_shares_the_run() -> None:
    middleware = policy('[[trace_rule]]\nrule = "never send after read_secret"\nname = "exfil"\n')
    inner = Tools("send")
    sub = create_agent(
        ScriptedChat(turns=[[("send", {})], "sub done"]), inner.tools, middleware=[middleware]
    )

    def delegate() -> str:
        result = sub.invoke({"messages": [{"role": "user", "content": "send it"}]})
        return str(answers(result)["call1_0"].content)

    outer = Tools("read_secret")
    tools = [*outer.tools, StructuredTool.from_function(delegate, name="delegate", description="d")]
    model = ScriptedChat(turns=[[("read_secret", {})], [("delegate", {})], "finished"])
    result = create_agent(model, tools, middleware=[middleware]).invoke(GO)
    assert inner.ran == [] and "trace_rule:exfil" in answers(result)["call2_0"].content


@pytest.mark.parametrize("policy_first", [True, False])
def test_every_retry_is_checked_whatever_the_order(policy_first: bool) -> None:
    """ToolRetryMiddleware resent a call 3 times unchecked under a 1-per-hour limit
    when the policy middleware was listed first (the old documented order)."""
    from langchain.agents.middleware import ToolRetryMiddleware

    crashing = Tools("deploy", crash=["deploy"])
    limit = '[[rate_limit_tool]]\ntool = "deploy"\nmax_calls = 1\ninterval_secs = 3600\n'
    retry = ToolRetryMiddleware(max_retries=3, initial_delay=0, jitter=False)
    gate = policy(limit)
    model = ScriptedChat(turns=[[("deploy", {})], "finished"])
    layers = [gate, retry] if policy_first else [retry, gate]
    result = create_agent(model, crashing.tools, middleware=layers).invoke(GO)
    assert len(crashing.ran) == 1  # the retries were refused by the rate limit
    assert result["messages"][-1].content == "finished"


def tool_graph(tools: Tools, middleware: PolicyMiddleware, turns: Sequence[Turn]) -> Any:
    """A hand-built graph: a model node and a ToolNode behind the gate."""
    chat = ScriptedChat(turns=[*turns, "finished"])

    def model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [chat.invoke(state["messages"])]}

    def route(state: MessagesState) -> str:
        return "tools" if getattr(state["messages"][-1], "tool_calls", None) else END

    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_node(
        "tools",
        ToolNode(
            tools.tools,
            wrap_tool_call=middleware.wrap_tool_call,
            awrap_tool_call=middleware.awrap_tool_call,
        ),
    )
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route)
    graph.add_edge("tools", "model")
    return graph


def test_a_tool_node_in_a_hand_built_graph_has_one_gate_per_invocation() -> None:
    tools = Tools("search")
    limit = '[[rate_limit_tool]]\ntool = "search"\nmax_calls = 2\ninterval_secs = 60\n'
    graph = tool_graph(tools, policy(limit), [[("search", {"q": i})] for i in range(4)]).compile()
    graph.invoke(GO)
    assert [p for _, p in tools.ran] == [{"q": 0}, {"q": 1}]
    ordered = Tools("run_tests", "deploy")
    rule = '[[trace_rule]]\nrule = "deploy only after run_tests succeeded"\n'
    turns: list[Turn] = [[("run_tests", {})], [("deploy", {})]]
    tool_graph(ordered, policy(rule), turns).compile().invoke(GO)
    assert [t for t, _ in ordered.ran] == ["run_tests", "deploy"]
    assert held() == 0


def test_create_react_agent_with_a_guarded_tool_node() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        tools = Tools("deploy")
        middleware = policy(ONCE)
        node = ToolNode(tools.tools, wrap_tool_call=middleware.wrap_tool_call)
        model = ScriptedChat(turns=[[("deploy", {})], [("deploy", {})], "finished"])
        agent = create_react_agent(model, tools=node)
    result = agent.invoke(GO)
    assert len(tools.ran) == 1 and "trace_rule:once" in answers(result)["call2_0"].content


def test_nested_graphs_share_the_run_of_the_outermost_invocation() -> None:
    middleware = policy(ONCE)
    first, second = Tools("deploy"), Tools("deploy")
    graph = StateGraph(MessagesState)
    for name, tools in (("first", first), ("second", second)):
        model = ScriptedChat(turns=[[("deploy", {})], "done"])
        graph.add_node(name, create_agent(model, tools.tools, middleware=[middleware]))
    graph.add_edge(START, "first")
    graph.add_edge("first", "second")
    graph.add_edge("second", END)
    graph.compile().invoke(GO)
    assert len(first.ran) + len(second.ran) == 1


def test_parallel_calls_of_one_turn_take_their_slots_one_at_a_time() -> None:
    tools = Tools("deploy")
    got = run(tools, ONCE, [[("deploy", {"q": 1}), ("deploy", {"q": 2})]])
    assert len(tools.ran) == 1
    assert sum("trace_rule:once" in got[c].content for c in ("call1_0", "call1_1")) == 1


def test_ask_pauses_the_thread_for_a_person(monkeypatch: pytest.MonkeyPatch) -> None:
    from langgraph.types import Command

    asked = '[[trace_rule]]\nrule = "at most 0 deploy"\nname = "nod"\n'
    for answer, runs in ((True, True), ({"type": "approve"}, True), ("no", False)):
        tools = Tools("deploy")
        model = ScriptedChat(turns=[[("deploy", {})], "finished"])
        agent = create_agent(
            model,
            tools.tools,
            middleware=[policy(asked, ask=["trace_rule:nod"])],
            checkpointer=InMemorySaver(),
        )
        config: Any = {"configurable": {"thread_id": "t"}}
        paused = agent.invoke(GO, config)
        assert tools.ran == [] and paused["__interrupt__"][0].value["car_verify"]["rules"] == [
            "trace_rule:nod"
        ]
        done = agent.invoke(Command(resume=answer), config)
        assert bool(tools.ran) is runs and done["messages"][-1].content == "finished"
    tools = Tools("deploy")
    got = run(tools, asked, [[("deploy", {})]], ask=["trace_rule:nod"])
    assert tools.ran == [] and "nothing can pause this run" in got["call1_0"].content


def test_a_folder_that_would_check_nothing_is_refused(tmp_path: Path) -> None:
    from car_verify.base.errors import UsageError

    (tmp_path / "rules.tml").write_text('deny_tool = ["x"]\n', encoding="utf-8")
    with pytest.raises(UsageError, match=r"rules\.tml.*allow_empty=True"):
        PolicyMiddleware(policies=str(tmp_path))
    assert (
        PolicyMiddleware(policies=str(tmp_path), allow_empty=True).rules.engine.rules.count() == 0
    )


def gates_after(runs: int, threads: int) -> int:
    """The gates held after ``runs`` invocations of a hand-built graph, and of
    create_agent, and ``threads`` threads of create_agent: in the registry, or
    anywhere (a cache that holds a run's gate keeps its memory)."""
    import weakref

    from car_verify.integrations._runs import Rules

    made: list[weakref.ref[Any]] = []
    new_run = Rules.new_run

    def tracked(self: Rules) -> Any:
        run = new_run(self)
        made.append(weakref.ref(run))
        return run

    tools = Tools("deploy")
    middleware = policy(ONCE)
    each: list[Turn] = [[("deploy", {})], "finished"]
    graph = tool_graph(tools, middleware, (each * runs)[:-1]).compile()
    model = ScriptedChat(turns=[[("deploy", {})], "finished"] * (threads + 10))
    agent = create_agent(model, tools.tools, middleware=[middleware])
    threaded = create_agent(
        model, tools.tools, middleware=[middleware], checkpointer=InMemorySaver()
    )
    Rules.new_run = tracked  # type: ignore[method-assign]
    try:
        for _ in range(runs):  # each invocation: one deploy, then "finished"
            graph.invoke(GO)
        for _ in range(10):
            agent.invoke(GO)
        for i in range(threads):
            threaded.invoke(GO, {"configurable": {"thread_id": f"t{i}"}})
    finally:
        Rules.new_run = new_run  # type: ignore[method-assign]
    assert len(tools.ran) == runs + 10 + threads and made
    return held() + sum(1 for r in made if r() is not None)


def test_the_gates_of_ended_runs_and_threads_are_freed() -> None:
    assert gates_after(20, 10) == 0


@pytest.mark.slow
def test_no_gate_is_held_after_a_thousand_runs_and_a_hundred_threads() -> None:
    assert gates_after(1000, 100) == 0


def test_arguments_the_graph_injects_are_not_the_models() -> None:
    seen: list[Any] = []

    def count(n: int, state: Annotated[dict[str, Any], InjectedState]) -> str:
        seen.append((n, len(state["messages"])))
        return "counted"

    tool = StructuredTool.from_function(count, name="count", description="c")
    rule = '[[deny_tool_param]]\ntool = "count"\nparam = "n"\nequals = 2\n'
    model = ScriptedChat(turns=[[("count", {"n": 1})], [("count", {"n": 2})], "finished"])
    result = create_agent(model, [tool], middleware=[policy(rule)]).invoke(GO)
    assert seen == [(1, 2)] and "deny_tool_param:count.n" in answers(result)["call2_0"].content


def test_a_tool_that_writes_the_gate_key_cannot_reset_the_thread() -> None:
    """A tool returning Command(update=...) with the middleware's key (a generic
    "update the state" tool the model steers) is overwritten before it is saved."""
    from langgraph.types import Command

    forged = {"format": 1, "seq": 0, "broken": None, "trace": {}, "windows": {}}

    def remember(call_id: Annotated[str, InjectedToolCallId]) -> Any:
        message = ToolMessage(content="noted", tool_call_id=call_id)
        return Command(update={"messages": [message], "car_verify_gate": forged})

    tools = Tools("deploy")
    note = StructuredTool.from_function(remember, name="remember", description="r")
    model = ScriptedChat(
        turns=[[("deploy", {})], [("remember", {})], "one", [("deploy", {})], "two"]
    )
    agent = create_agent(
        model, [*tools.tools, note], middleware=[policy(ONCE)], checkpointer=InMemorySaver()
    )
    config: Any = {"configurable": {"thread_id": "forged"}}
    agent.invoke(GO, config)
    result = agent.invoke(GO, config)
    assert len(tools.ran) == 1 and "trace_rule:once" in answers(result)["call4_0"].content


def test_the_async_path_takes_parallel_calls_one_at_a_time() -> None:
    tools = Tools("deploy")
    model = ScriptedChat(turns=[[("deploy", {"q": 1}), ("deploy", {"q": 2})], "finished"])
    agent = create_agent(model, tools.tools, middleware=[policy(ONCE)])
    result = asyncio.run(agent.ainvoke(GO))
    assert len(tools.ran) == 1
    got = answers(result)
    assert sum("trace_rule:once" in got[c].content for c in ("call1_0", "call1_1")) == 1


def test_a_checked_tool_called_through_run_is_refused_and_never_runs() -> None:
    """``BaseTool.run``/``arun`` would skip the gate's decision: a checked tool
    refuses them (a path that does not meet the gate is refused, never allowed)."""
    import asyncio

    from langchain_core.tools import tool as make_tool

    from car_verify.integrations.langchain import _Checked

    ran: list[str] = []

    @make_tool
    def wipe(target: str) -> str:
        """Wipe a target."""
        ran.append(target)
        return "wiped"

    checked = _Checked.model_construct(name="wipe", description="w", inner=wipe, checker=None)
    with pytest.raises(PermissionError, match="behind the policy gate"):
        checked.run({"target": "x"})
    with pytest.raises(PermissionError, match="behind the policy gate"):
        asyncio.run(checked.arun({"target": "x"}))
    assert ran == []
