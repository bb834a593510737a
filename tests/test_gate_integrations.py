"""The gate inside the agent frameworks, held to the plain reference
(tests/gate_reference.py) as tests/test_gate.py holds the gate itself.

Generated multi-agent runs, with the frameworks' own scripted models (no
network): in the OpenAI Agents SDK, handoffs, an agent called as a tool, a
sub-agent run from inside a tool, an MCP server's tool, parallel calls, agents
guarded together or one by one; in LangChain/LangGraph, a sub-agent invoked
inside a tool, nested graphs, a retry middleware, parallel calls, with and
without a checkpointer (a thread over several invocations). Every decision and
every reported outcome of the gate is logged, and:

* each run is decided by one gate (a run that reached two gates is a bypass);
* the reference, driven through the same events in the same order, gives each
  call the same decision and rule names;
* the calls the tools actually received are exactly the admitted ones, with the
  checked arguments, and the outcomes reported are those the tools had.

A few examples by default; ``CI=1`` or ``--run-slow`` runs more (the ``slow``
tests)."""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from gate_reference import ReferenceGate, Rule, toml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_gate import FILE_KINDS, lines
from test_gate import rules as kinds_rules

from car_verify.plan.gate import CallGate
from car_verify.rules.policy import load_policy_text

FEW = settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
MORE = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))

#: A call a model makes: (tool, params), the params holding the outcome the tool
#: will have (``o``).
Call = tuple[str, dict[str, Any]]

#: The tools of the frameworks' agents (``c`` is the MCP server's when a script has
#: one) and their parameters; ``command`` is a shell line, which the shell kinds read.
TOOLS = ["a", "b", "c"]
PARAMS: list[dict[str, Any]] = [{}, {"p": 1}, {"p": 2}, {"p": "x"}]


def rules() -> st.SearchStrategy[list[Rule]]:
    """Rule sets of every kind a policy file holds (the frameworks take files)."""
    return kinds_rules(FILE_KINDS)


def commands() -> st.SearchStrategy[dict[str, Any]]:
    """No shell line, mostly; else one (as text: the tools take a string)."""
    line = lines().filter(lambda v: isinstance(v, str)).map(lambda v: {"command": v})
    return st.one_of(st.just({}), st.just({}), line)


def calls(max_parallel: int = 3) -> st.SearchStrategy[list[Call]]:
    """One model turn: 1-``max_parallel`` calls of the reference's tools."""
    one = st.tuples(
        st.sampled_from(TOOLS),
        st.sampled_from(PARAMS),
        commands(),
        st.sampled_from(["succeeded", "failed"]),
    ).map(lambda c: (c[0], {**c[1], **c[2], "o": c[3]}))
    return st.lists(one, min_size=1, max_size=max_parallel)


def turns(max_turns: int = 4) -> st.SearchStrategy[list[list[Call]]]:
    return st.lists(calls(), min_size=1, max_size=max_turns)


# --- the log of the gate, and the reference driven through it ---------------------------------


@dataclass
class Log:
    """Every decision and reported outcome of every gate, in order; what the tools
    received and how each ended."""

    events: list[tuple[Any, ...]] = field(default_factory=list)
    received: list[tuple[str, dict[str, Any], str]] = field(default_factory=list)


@contextmanager
def logged() -> Iterator[Log]:
    log = Log()
    decide, report = CallGate.decide, CallGate.report

    def logged_decide(self: CallGate, tool: str, params: Any, *args: Any, **kw: Any) -> Any:
        verdict = decide(self, tool, params, *args, **kw)
        log.events.append(("decide", id(self), tool, dict(verdict.sent), verdict))
        return verdict

    def logged_report(self: CallGate, tool: str, params: Any, outcome: Any) -> None:
        report(self, tool, params, outcome)
        log.events.append(("report", id(self), tool, dict(params), outcome))

    CallGate.decide = logged_decide  # type: ignore[method-assign]
    CallGate.report = logged_report  # type: ignore[method-assign]
    try:
        yield log
    finally:
        CallGate.decide = decide  # type: ignore[method-assign]
        CallGate.report = report  # type: ignore[method-assign]


def held_to_the_reference(
    rule_set: list[Rule], log: Log, runs: int = 1, *, one_trace: bool = False
) -> None:
    """The log, one run after another (``runs`` runs, each of its own gate), against
    the reference; the tools' calls against the admitted ones. ``one_trace``: the
    events are one run's whatever gate object decided them (a checkpointer's
    thread, whose gate is saved in the thread between invocations and taken up
    again)."""
    gates = list(dict.fromkeys(e[1] for e in log.events))
    if one_trace:
        gates, log.events = [0], [(e[0], 0, *e[2:]) for e in log.events]
    assert len(gates) <= runs, f"{len(gates)} gates for {runs} runs: a run reached two gates"
    admitted: Counter[Any] = Counter()
    reported: Counter[Any] = Counter()
    for gate in gates:
        ref = ReferenceGate(rule_set)
        open_calls: dict[Any, list[int]] = {}
        for event in (e for e in log.events if e[1] == gate):
            kind, _, tool, params, result = event
            key = (tool, repr(sorted(params.items())))
            if kind == "decide":
                decision, names, number = ref.pre(tool, params)
                ok = decision != "deny"  # a framework's answer to undecided is deny
                got = (result.decision != "deny", sorted(result.rules) if not ok else [])
                assert got == (ok, sorted(names) if not ok else []), (event, ok, names)
                if ok:
                    open_calls.setdefault(key, []).append(number)
                    admitted[key] += 1
            else:
                assert open_calls.get(key), f"an outcome with no admitted call: {event}"
                ref.post(open_calls[key].pop(0), result)
                reported[(key, result)] += 1
    received = Counter((t, repr(sorted(p.items()))) for t, p, _ in log.received)
    assert received == admitted, f"tools received {received}, the gate admitted {admitted}"
    ended = Counter(((t, repr(sorted(p.items()))), o) for t, p, o in log.received)
    assert reported == ended, f"outcomes reported {reported}, the tools had {ended}"


# --- the OpenAI Agents SDK ---------------------------------------------------------------------

agents_sdk = pytest.importorskip("agents", reason="the [agents] extra is not installed")


@dataclass
class SdkScript:
    """A run of agents: the main agent's turns (lists of parallel calls); a helper
    agent it calls as a tool, a sub-agent a tool of it runs, an agent it hands off
    to at the end (each with its own turns, or None); whether tool ``c`` of the
    main agent comes from an MCP server; whether the agents are guarded together
    (``guard_agent``) or one by one (``guard_tools`` per agent)."""

    main: list[list[Call]]
    helper: list[list[Call]] | None
    sub: list[list[Call]] | None
    handoff: list[list[Call]] | None
    mcp: bool
    together: bool


@st.composite
def sdk_scripts(draw: st.DrawFn) -> SdkScript:
    main = draw(turns())
    helper = draw(st.none() | turns(2))
    sub = draw(st.none() | turns(2))
    for name, agent in (("helper", helper), ("delegate", sub)):
        if agent is not None:  # called once, alone or beside other calls of a turn
            at = draw(st.integers(0, len(main) - 1))
            main[at] = [*main[at], (name, {"input": "go"} if name == "helper" else {})]
    return SdkScript(
        main=main,
        helper=helper,
        sub=sub,
        handoff=draw(st.none() | turns(2)),
        mcp=draw(st.booleans()),
        together=draw(st.booleans()),
    )


def _sdk_tools(log: Log, names: list[str]) -> list[Any]:
    from agents import function_tool

    def make(name: str) -> Any:
        def body(
            p: int | str | None = None, o: str | None = None, command: str | None = None
        ) -> str:
            params: dict[str, Any] = {"o": o} if p is None else {"p": p, "o": o}
            if command is not None:
                params["command"] = command
            log.received.append((name, params, "failed" if o == "failed" else "succeeded"))
            if o == "failed":
                raise RuntimeError("the step fails")
            return f"{name} done"

        return function_tool(body, name_override=name, strict_mode=False)

    return [make(n) for n in names]


class _Server:
    """An MCP server in the process, serving tool ``c`` (isError when it fails)."""

    def __init__(self, log: Log) -> None:
        from agents.mcp import MCPServer

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

                schema = {"type": "object", "properties": {}, "additionalProperties": True}
                return [mt.Tool(name="c", description="c", input_schema=schema)]

            async def call_tool(self, tool_name: str, arguments: Any, meta: Any = None) -> Any:
                import mcp.types as mt

                params = dict(arguments or {})
                failed = params.get("o") == "failed"
                log.received.append((tool_name, params, "failed" if failed else "succeeded"))
                text = mt.TextContent(type="text", text="c broke" if failed else "c done")
                return mt.CallToolResult(content=[text], is_error=failed)

            async def list_prompts(self) -> Any:
                import mcp.types as mt

                return mt.ListPromptsResult(prompts=[])

            async def get_prompt(self, name: str, arguments: Any = None) -> Any:
                raise ValueError(f"no prompt {name!r}: this server has none")

        self.server = Server()


def _steps(script: list[list[Call]], prefix: str, end: list[Call] | None = None) -> list[Any]:
    """A scripted model's steps: each turn's calls, then a final text (or ``end``)."""
    from agents.testing import assistant_message, function_call

    ids = itertools.count()
    out: list[Any] = [
        [function_call(t, p, call_id=f"{prefix}{next(ids)}") for t, p in turn] for turn in script
    ]
    if end is not None:
        out.append([function_call(t, p, call_id=f"{prefix}{next(ids)}") for t, p in end])
    else:
        out.append([assistant_message(f"{prefix} done")])
    return out


def _delegate(sub: Any, log: Log) -> Any:
    """A tool that runs the sub-agent (a run of its own, as far as the SDK knows)."""
    from agents import Runner, function_tool

    @function_tool(name_override="delegate", strict_mode=False)
    async def delegate() -> str:
        """Runs the sub-agent."""
        result = await Runner.run(sub, "go")
        log.received.append(("delegate", {}, "succeeded"))
        return str(result.final_output)

    return delegate


def run_sdk(rule_set: list[Rule], script: SdkScript, log: Log, runs: int = 1) -> None:
    from agents import Agent, Runner
    from agents.testing import ScriptedModel

    from car_verify.integrations.openai_agents import guard_agent, guard_tools

    policies = load_policy_text(toml(rule_set))
    for n in range(runs):
        guarded: list[Any] = []

        def guard(agent: Any, _: list[Any] = guarded) -> Any:
            if script.together:
                _.append(agent)
                return agent
            agent.tools = guard_tools(agent.tools, policies=policies)
            return guard_agent(agent, policies=policies)

        tools = _sdk_tools(log, ["a", "b"] if script.mcp else TOOLS)
        servers = [_Server(log).server] if script.mcp else []
        handoffs: list[Any] = []
        if script.handoff is not None:
            target = Agent(
                name="h",
                model=ScriptedModel(_steps(script.handoff, f"r{n}h")),
                tools=_sdk_tools(log, TOOLS),
            )
            handoffs = [guard(target)]
        if script.helper is not None:
            helper = Agent(
                name="helper",
                model=ScriptedModel(_steps(script.helper, f"r{n}t")),
                tools=_sdk_tools(log, TOOLS),
            )
            as_tool = guard(helper).as_tool(tool_name="helper", tool_description="helps")
            invoke = as_tool.on_invoke_tool

            async def recorded(context: Any, arguments: str, _invoke: Any = invoke) -> Any:
                log.received.append(("helper", {"input": "go"}, "succeeded"))
                return await _invoke(context, arguments)

            as_tool.on_invoke_tool = recorded
            tools.append(as_tool)
        if script.sub is not None:
            sub = guard(
                Agent(
                    name="sub",
                    model=ScriptedModel(_steps(script.sub, f"r{n}s")),
                    tools=_sdk_tools(log, TOOLS),
                )
            )
            if script.together:  # not reachable from the main agent: guarded on its own
                guard_agent(sub, policies=policies)

            tools.append(_delegate(sub, log))
        end = [("transfer_to_h", {})] if handoffs else None
        main = Agent(
            name="main",
            model=ScriptedModel(_steps(script.main, f"r{n}m", end)),
            tools=tools,
            handoffs=handoffs,
            mcp_servers=servers,
        )
        main = guard(main)
        if script.together:
            guard_agent(main, policies=policies)
        result = asyncio.run(Runner.run(main, "go", max_turns=30))
        assert result.final_output is not None


def _sdk_property(rule_set: list[Rule], script: SdkScript) -> None:
    with logged() as log:
        run_sdk(rule_set, script, log, runs=2)
    held_to_the_reference(rule_set, log, runs=2)


@FEW
@given(rules(), sdk_scripts())
def test_agents_sdk_runs_give_the_reference_decisions(
    rule_set: list[Rule], script: SdkScript
) -> None:
    _sdk_property(rule_set, script)


@pytest.mark.slow
@MORE
@given(rules(), sdk_scripts())
def test_agents_sdk_runs_give_the_reference_decisions_at_length(
    rule_set: list[Rule], script: SdkScript
) -> None:
    _sdk_property(rule_set, script)


# --- LangChain agents and LangGraph graphs ---------------------------------------------------


@dataclass
class GraphScript:
    """Runs of a LangChain agent: the main agent's turns in each invocation; a
    sub-agent a tool of it invokes (in the first invocation), with the same
    middleware object or another over the same rules; a second agent run after the
    main one as a node of an outer graph (a nested graph); a retry middleware
    (retries, 0: none; listed before or after the policy); a checkpointer (the
    invocations are one thread)."""

    invocations: list[list[list[Call]]]
    sub: list[list[Call]] | None
    shared: bool
    nested: list[list[Call]] | None
    retries: int
    retry_outside: bool
    checkpointer: bool


@st.composite
def graph_scripts(draw: st.DrawFn) -> GraphScript:
    invocations = draw(st.lists(turns(3), min_size=1, max_size=2))
    sub = draw(st.none() | turns(2))
    if sub is not None:
        first = invocations[0]
        at = draw(st.integers(0, len(first) - 1))
        first[at] = [*first[at], ("delegate", {})]
    return GraphScript(
        invocations=invocations,
        sub=sub,
        shared=draw(st.booleans()),
        nested=draw(st.none() | turns(2)),
        retries=draw(st.sampled_from([0, 0, 1, 2])),
        retry_outside=draw(st.booleans()),
        checkpointer=draw(st.booleans()),
    )


def _chat(script: list[list[list[Call]]], prefix: str) -> Any:
    """LangChain's own fake chat model, answering each invocation's turns then a
    final text, in order."""
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage

    class Scripted(FakeMessagesListChatModel):
        def bind_tools(self, tools: Any, **kw: Any) -> Any:
            return self

    ids = itertools.count()
    responses: list[Any] = []
    for invocation in script:
        for turn in invocation:
            tool_calls = [
                {"name": t, "args": p, "id": f"{prefix}{next(ids)}", "type": "tool_call"}
                for t, p in turn
            ]
            responses.append(AIMessage(content="", tool_calls=tool_calls))
        responses.append(AIMessage(content=f"{prefix} done"))
    return Scripted(responses=responses)


def _lc_tools(log: Log, crash: bool) -> list[Any]:
    from langchain_core.tools import StructuredTool, ToolException

    def make(name: str) -> Any:
        def body(
            p: int | str | None = None, o: str | None = None, command: str | None = None
        ) -> str:
            params: dict[str, Any] = {"o": o} if p is None else {"p": p, "o": o}
            if command is not None:
                params["command"] = command
            log.received.append((name, params, "failed" if o == "failed" else "succeeded"))
            if o == "failed":
                raise (RuntimeError if crash else ToolException)("the step fails")
            return f"{name} done"

        return StructuredTool.from_function(
            body, name=name, description=name, handle_tool_error=not crash
        )

    return [make(n) for n in TOOLS]


def run_graph(rule_set: list[Rule], script: GraphScript, log: Log) -> int:
    """Run the script; the number of runs it makes (a thread is one)."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import ToolRetryMiddleware
    from langchain_core.tools import StructuredTool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, MessagesState, StateGraph

    from car_verify.integrations.langchain import PolicyMiddleware

    policies = load_policy_text(toml(rule_set))
    middleware = PolicyMiddleware(policies=policies)
    crash = script.retries > 0

    def layers(gate: Any) -> list[Any]:
        if not crash:
            return [gate]
        retry = ToolRetryMiddleware(max_retries=script.retries, initial_delay=0, jitter=False)
        return [retry, gate] if script.retry_outside else [gate, retry]

    tools = _lc_tools(log, crash)
    if script.sub is not None:
        gate = middleware if script.shared else PolicyMiddleware(policies=policies)
        sub = create_agent(_chat([script.sub], "s"), _lc_tools(log, crash), middleware=layers(gate))

        def delegate() -> str:
            result = sub.invoke({"messages": [{"role": "user", "content": "go"}]})
            log.received.append(("delegate", {}, "succeeded"))
            return str(result["messages"][-1].content)

        tools.append(StructuredTool.from_function(delegate, name="delegate", description="d"))
    main = create_agent(_chat(script.invocations, "m"), tools, middleware=layers(middleware))
    saver = InMemorySaver() if script.checkpointer else None
    if script.nested is not None:
        runs = [script.nested] * len(script.invocations)
        second = create_agent(
            _chat(runs, "n"), _lc_tools(log, crash), middleware=layers(middleware)
        )
        outer = StateGraph(MessagesState)
        outer.add_node("main", main)
        outer.add_node("second", second)
        outer.add_edge(START, "main")
        outer.add_edge("main", "second")
        outer.add_edge("second", END)
        graph = outer.compile(checkpointer=saver)
    else:
        graph = create_agent(
            _chat(script.invocations, "m"), tools, middleware=layers(middleware), checkpointer=saver
        )
    config: Any = {"configurable": {"thread_id": "t"}} if saver is not None else {}
    for _ in script.invocations:
        graph.invoke({"messages": [{"role": "user", "content": "go"}]}, config)
    return 1 if saver is not None else len(script.invocations)


def _graph_property(rule_set: list[Rule], script: GraphScript) -> None:
    with logged() as log:
        runs = run_graph(rule_set, script, log)
    held_to_the_reference(rule_set, log, runs=runs, one_trace=script.checkpointer)


@FEW
@given(rules(), graph_scripts())
def test_langchain_runs_give_the_reference_decisions(
    rule_set: list[Rule], script: GraphScript
) -> None:
    _graph_property(rule_set, script)


@pytest.mark.slow
@MORE
@given(rules(), graph_scripts())
def test_langchain_runs_give_the_reference_decisions_at_length(
    rule_set: list[Rule], script: GraphScript
) -> None:
    _graph_property(rule_set, script)


# --- parallel calls: both frameworks decide a turn the same way --------------------------------

TURN_CASES = [
    # (rule, the turn's calls in the model's order, the calls that run)
    ("deploy only after test succeeded", ["test", "deploy"], ["test"]),
    ("never deploy after test", ["test", "deploy"], ["test"]),
    ("never deploy after test", ["deploy", "test"], ["deploy", "test"]),
    ("at most 1 deploy", ["deploy", "test", "deploy"], ["deploy", "test"]),
]


@pytest.mark.parametrize(("rule", "turn", "ran"), TURN_CASES)
def test_both_frameworks_decide_a_turn_in_the_models_order_before_it_runs(
    rule: str, turn: list[str], ran: list[str]
) -> None:
    """The calls of one model turn run at once (tasks in the Agents SDK, threads in
    LangGraph): each framework decides them in the order the model wrote them,
    all before any runs, so the same turn gets the same verdicts everywhere."""
    text = f'[[trace_rule]]\nrule = "{rule}"\n'
    for _ in range(3):  # threads may start in any order: the verdicts may not
        assert sorted(_sdk_turn(text, turn)) == sorted(ran)
        assert sorted(_graph_turn(text, turn)) == sorted(ran)


def _sdk_turn(text: str, turn: list[str]) -> list[str]:
    from agents import Agent, Runner, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call

    from car_verify.integrations.openai_agents import guard_agent

    ran: list[str] = []

    def make(name: str) -> Any:
        def body() -> str:
            ran.append(name)
            return "done"

        return function_tool(body, name_override=name, strict_mode=False)

    calls = [function_call(t, {}, call_id=f"c{i}") for i, t in enumerate(turn)]
    model = ScriptedModel([calls, [assistant_message("done")]])
    agent = Agent(name="a", model=model, tools=[make("test"), make("deploy")])
    guard_agent(agent, policies=load_policy_text(text))
    asyncio.run(Runner.run(agent, "go"))
    return ran


def _graph_turn(text: str, turn: list[str]) -> list[str]:
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from langchain_core.tools import StructuredTool

    from car_verify.integrations.langchain import PolicyMiddleware

    ran: list[str] = []

    def make(name: str) -> Any:
        def body() -> str:
            ran.append(name)
            return "done"

        return StructuredTool.from_function(body, name=name, description=name)

    chat = _chat([], "x")
    calls = [
        {"name": t, "args": {}, "id": f"c{i}", "type": "tool_call"} for i, t in enumerate(turn)
    ]
    chat.responses = [AIMessage(content="", tool_calls=calls), AIMessage(content="done")]
    agent = create_agent(
        chat,
        [make("test"), make("deploy")],
        middleware=[PolicyMiddleware(policies=load_policy_text(text))],
    )
    agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    return ran


# --- a run resumed, a handoff given late, a tool a middleware substitutes ---------------------
#
# Each held against a false allow a review found: a paused run resumed on a fresh
# gate, a handoff given after guard_agent reaching unchecked tools, a tool a
# middleware puts in the request running unchecked, an MCP call's own rules in
# place of the server's.


def _sdk_script(*turns: list[str] | str, prefix: str = "c") -> Any:
    """The SDK's own scripted model (it streams too): each turn, tool calls by
    name (no arguments; ``helper``'s: an input) or a final text; call ids
    ``{prefix}{turn}_{index}``."""
    from agents.testing import ScriptedModel, assistant_message, function_call

    steps: list[Any] = []
    for at, turn in enumerate(turns):
        if isinstance(turn, str):
            steps.append([assistant_message(turn)])
        else:
            calls = [
                function_call(
                    t, {"input": "x"} if t == "helper" else {}, call_id=f"{prefix}{at}_{i}"
                )
                for i, t in enumerate(turn)
            ]
            steps.append(calls)
    return ScriptedModel(steps)


def _told(model: Any) -> dict[str, str]:
    """What the model was told of each call, by call id."""
    return {
        item["call_id"]: str(item["output"])
        for call in model.calls
        if isinstance(call.input, list)
        for item in call.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    }


def _recording(ran: list[str], *names: str) -> list[Any]:
    from agents import function_tool

    def make(name: str) -> Any:
        def body() -> str:
            ran.append(name)
            return f"{name} done"

        return function_tool(body, name_override=name, strict_mode=False)

    return [make(n) for n in names]


async def _sdk_go(agent: Any, given: Any, streamed: bool = False, **kw: Any) -> Any:
    from agents import RunConfig, Runner

    kw["run_config"] = RunConfig(tracing_disabled=True)
    if not streamed:
        return await Runner.run(agent, given, **kw)
    result = Runner.run_streamed(agent, given, **kw)
    async for _ in result.stream_events():
        pass
    return result


ONCE_AND_ASK = 'deny_tool = ["risky"]\n[[trace_rule]]\nname = "once"\nrule = "at most 1 deploy"\n'


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("person", ["approve", "reject"])
def test_a_run_resumed_after_a_pause_goes_on_with_its_gate(streamed: bool, person: str) -> None:
    """A run paused for a person (needs_approval) and resumed from its RunState
    object is the same run: the rules still see what it did before the pause."""
    from agents import Agent

    from car_verify.integrations.openai_agents import guard_agent

    ran: list[str] = []
    model = _sdk_script(["deploy"], ["risky"], ["deploy"], "finished")
    agent = Agent(name="a", model=model, tools=_recording(ran, "deploy", "risky"))
    guard_agent(agent, policies=load_policy_text(ONCE_AND_ASK), ask=["deny_tool"])

    async def go() -> Any:
        result = await _sdk_go(agent, "go", streamed)
        assert [i.name for i in result.interruptions] == ["risky"] and ran == ["deploy"]
        state = result.to_state()
        getattr(state, person)(result.interruptions[0])
        return await _sdk_go(agent, state, streamed)

    assert asyncio.run(go()).final_output == "finished"
    assert ran == (["deploy", "risky"] if person == "approve" else ["deploy"])
    assert "trace_rule:once" in _told(model)["c2_0"]


@FEW
@given(rules(), turns(), st.data())
def test_a_run_paused_and_resumed_gives_the_reference_decisions(
    rule_set: list[Rule], script: list[list[Call]], data: st.DataObject
) -> None:
    """Generated runs paused for a person at generated turns (a tool that needs
    approval, beside the turn's other calls) and resumed from their RunState, each
    time, by Runner.run or run_streamed: the whole run is one trace, decided as the
    reference decides it unpaused."""
    from agents import Agent
    from agents.testing import ScriptedModel

    from car_verify.integrations.openai_agents import guard_agent

    at = data.draw(st.sets(st.integers(0, len(script) - 1), min_size=1, max_size=2))
    streamed = data.draw(st.booleans())
    main = [[*t, ("pause", {"o": "succeeded"})] if i in at else t for i, t in enumerate(script)]
    with logged() as log:
        tools = _sdk_tools(log, [*TOOLS, "pause"])
        tools[-1].needs_approval = True
        agent = Agent(name="main", model=ScriptedModel(_steps(main, "p")), tools=tools)
        guard_agent(agent, policies=load_policy_text(toml(rule_set)))

        async def go() -> int:
            result = await _sdk_go(agent, "go", streamed, max_turns=30)
            pauses = 0
            while result.interruptions:
                pauses += 1
                state = result.to_state()
                for item in result.interruptions:
                    state.approve(item)
                result = await _sdk_go(agent, state, streamed, max_turns=30)
            assert result.final_output == "p done"
            return pauses

        assert asyncio.run(go()) >= 1
    held_to_the_reference(rule_set, log, one_trace=True)


def test_a_secret_read_before_a_pause_is_remembered_after_it() -> None:
    from agents import Agent

    from car_verify.integrations.openai_agents import guard_agent

    rules = 'deny_tool = ["wire"]\n[[trace_rule]]\nrule = "never send after read_secret"\n'
    ran: list[str] = []
    model = _sdk_script(["read_secret"], ["wire"], ["send"], "finished")
    agent = Agent(name="a", model=model, tools=_recording(ran, "read_secret", "wire", "send"))
    guard_agent(agent, policies=load_policy_text(rules), ask=["deny_tool"])

    async def go() -> None:
        result = await _sdk_go(agent, "go")
        while result.interruptions:
            state = result.to_state()
            for item in result.interruptions:
                state.approve(item)
            result = await _sdk_go(agent, state)

    asyncio.run(go())
    assert ran == ["read_secret", "wire"]


def test_an_agent_called_as_a_tool_paused_inside_resumes_with_the_run() -> None:
    """A pause inside an agent called as a tool pauses the run; resumed, the
    nested agent's calls are still decided with the run's calls before the pause."""
    from agents import Agent

    from car_verify.integrations.openai_agents import guard_agent

    ran: list[str] = []
    inner = _sdk_script(["risky"], ["deploy"], "helped", prefix="h")
    helper = Agent(name="helper", model=inner, tools=_recording(ran, "deploy", "risky"))
    outer = _sdk_script(["deploy"], ["helper"], "finished")
    tools = [*_recording(ran, "deploy"), helper.as_tool(tool_name="helper", tool_description="h")]
    main = Agent(name="main", model=outer, tools=tools)
    guard_agent(main, policies=load_policy_text(ONCE_AND_ASK), ask=["deny_tool"])

    async def go() -> Any:
        result = await _sdk_go(main, "go")
        while result.interruptions:
            state = result.to_state()
            for item in result.interruptions:
                state.approve(item)
            result = await _sdk_go(main, state)
        return result

    assert asyncio.run(go()).final_output == "finished"
    assert ran == ["deploy", "risky"] and "trace_rule:once" in _told(inner)["h1_0"]


def test_two_copies_of_a_paused_run_each_go_on_from_the_pause() -> None:
    """A RunState is the run as it was at the pause: each copy resumed goes on
    from there, as the SDK's own state does, and does not see the other's calls."""
    from agents import Agent

    from car_verify.integrations.openai_agents import guard_agent

    rules = 'deny_tool = ["risky"]\n[[trace_rule]]\nname = "twice"\nrule = "at most 2 deploy"\n'
    ran: list[str] = []
    model = _sdk_script(["deploy"], ["risky"], ["deploy"], "a", ["deploy"], ["deploy"], "b")
    agent = Agent(name="a", model=model, tools=_recording(ran, "deploy", "risky"))
    guard_agent(agent, policies=load_policy_text(rules), ask=["deny_tool"])

    async def go() -> None:
        paused = await _sdk_go(agent, "go", False)
        for _ in range(2):
            state = paused.to_state()
            state.approve(paused.interruptions[0])
            await _sdk_go(agent, state, False)

    asyncio.run(go())
    # the first copy: risky, deploy (2nd); the second: risky, deploy (2nd), deploy (3rd: refused)
    assert ran == ["deploy", "risky", "deploy", "risky", "deploy"]
    assert "trace_rule:twice" in _told(model)["c5_0"]


@pytest.mark.parametrize("how", ["json", "pickled", "json, keyed"])
def test_a_resumed_state_that_cannot_be_tied_to_its_gate_stops(how: str) -> None:
    """A RunState written to JSON (or carried to another process) holds no gate
    state: resumed, its run stops with an error saying how to resume, instead of
    starting over on a fresh gate. Keyed by an object given back (run_key,
    context_override), it goes on with its gate."""
    import pickle

    from agents import Agent, RunState
    from agents.exceptions import UserError

    from car_verify.integrations.openai_agents import guard_agent

    class Context:
        pass

    ran: list[str] = []
    context = Context()
    model = _sdk_script(["deploy"], ["risky"], ["deploy"], "finished")
    agent = Agent(name="a", model=model, tools=_recording(ran, "deploy", "risky"))
    keyed = {"run_key": lambda ctx: ctx.context} if how.endswith("keyed") else {}
    guard_agent(agent, policies=load_policy_text(ONCE_AND_ASK), ask=["deny_tool"], **keyed)

    async def go() -> Any:
        result = await _sdk_go(agent, "go", context=context)
        state = result.to_state()
        state.approve(result.interruptions[0])
        if how == "pickled":  # its usage record, as another process would get it
            state._context.usage = pickle.loads(pickle.dumps(state._context.usage))
            return await _sdk_go(agent, state)
        back = await RunState.from_json(agent, state.to_json(), context_override=context)
        return await _sdk_go(agent, back)

    if how.endswith("keyed"):
        assert asyncio.run(go()).final_output == "finished"
        assert ran == ["deploy", "risky"] and "trace_rule:once" in _told(model)["c2_0"]
    else:
        with pytest.raises(UserError, match=r"resumed from a RunState.*run_key"):
            asyncio.run(go())
        assert ran == ["deploy"]


@pytest.mark.parametrize("how", ["appended", "clone", "handoff() appended", "another agent"])
def test_a_handoff_given_after_guard_agent_reaches_only_guarded_tools(how: str) -> None:
    """guard_agent guards what the agent is given later: a handoff appended, a
    clone's handoffs, a Handoff whose agent is another than the one it names (the
    agent it gives is guarded when it is taken)."""
    from agents import Agent, handoff

    from car_verify.integrations.openai_agents import guard_agent

    ran: list[str] = []
    model = _sdk_script(["transfer_to_ops"], ["wipe"], "done")
    ops = Agent(name="ops", model=model, tools=_recording(ran, "wipe"))
    triage = Agent(name="triage", model=model)
    if how == "another agent":  # given before guard_agent, naming an agent it does not give
        given = handoff(Agent(name="ops", model=model))
        named = given.on_invoke_handoff

        async def gives_ops(context: Any, arguments: str) -> Any:
            await named(context, arguments)
            return ops

        given.on_invoke_handoff = gives_ops
        triage.handoffs.append(given)
    guard_agent(triage, policies=load_policy_text('deny_tool = ["wipe"]\n'))
    entry = triage
    if how == "appended":
        triage.handoffs.append(ops)
    elif how == "clone":
        entry = triage.clone(handoffs=[ops])
    elif how == "handoff() appended":
        triage.handoffs.append(handoff(ops))
    result = asyncio.run(_sdk_go(entry, "go"))
    assert ran == [] and result.final_output == "done"
    assert "deny_tool:wipe" in _told(model)["c1_0"]


def test_an_mcp_server_given_after_guard_agent_is_guarded_when_listed() -> None:
    """A server appended to a guarded agent is wrapped when the run lists the
    agent's tools: its answers' isError reach the trace rules as failures."""
    from agents import Agent
    from test_openai_agents import FakeServer

    from car_verify.integrations.openai_agents import guard_agent

    server = FakeServer("test", "deploy", broken=["test"])
    model = _sdk_script(["test"], ["deploy"], "finished")
    rules = '[[trace_rule]]\nrule = "never deploy after test failed"\nname = "red"\n'
    agent = guard_agent(Agent(name="a", model=model), policies=load_policy_text(rules))
    agent.mcp_servers.append(server.server)
    asyncio.run(_sdk_go(agent, "go"))
    assert server.received == [("test", {})]
    assert "trace_rule:red" in _told(model)["c1_0"]


@pytest.mark.parametrize("order", ["policy first", "policy last"])
@pytest.mark.parametrize("how", ["override", "a tool of the node replaced", "set"])
def test_a_tool_a_middleware_puts_in_the_request_is_the_one_checked(order: str, how: str) -> None:
    """LangChain's dynamic tools: a middleware gives the request its tool
    (``request.override(tool=...)``) below PolicyMiddleware or above it; the tool
    that runs is the one checked, in any order."""
    import warnings

    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.messages import AIMessage
    from langchain_core.tools import StructuredTool

    from car_verify.integrations.langchain import PolicyMiddleware

    ran: list[str] = []
    wipe = StructuredTool.from_function(
        lambda: ran.append("wipe") or "wiped", name="wipe", description="wipe"
    )
    noop = StructuredTool.from_function(
        lambda: ran.append("noop") or "ok", name="noop", description="noop"
    )
    asked = "noop" if how == "a tool of the node replaced" else "wipe"

    class DynamicTools(AgentMiddleware[Any, Any]):
        def wrap_tool_call(self, request: Any, handler: Any) -> Any:
            if how == "set":
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    request.tool = wipe
                return handler(request)
            return handler(request.override(tool=wipe))

    middleware = [
        PolicyMiddleware(policies=load_policy_text('deny_tool = ["wipe"]\n')),
        DynamicTools(),
    ]
    if order == "policy last":
        middleware.reverse()
    chat = _chat([], "x")
    call = {"name": asked, "args": {}, "id": "c0", "type": "tool_call"}
    chat.responses = [AIMessage(content="", tool_calls=[call]), AIMessage(content="done")]
    agent = create_agent(chat, [noop], middleware=middleware)
    out = agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    assert ran == []
    answer = next(m for m in out["messages"] if getattr(m, "type", "") == "tool")
    assert "deny_tool:wipe" in str(answer.content) and answer.status == "error"


def test_the_policies_argument_of_policy_check_adds_to_the_servers_rules(tmp_path: Any) -> None:
    """An MCP call's ``policies`` argument adds rules; the server's stay in force
    (the agent writes the arguments)."""
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    from car_verify.cli.mcp_server import Settings, call

    (tmp_path / ".git").mkdir()
    (tmp_path / ".car" / "policies").mkdir(parents=True)
    (tmp_path / ".car" / "policies" / "r.toml").write_text('deny_tool = ["rm"]\n')
    plan = {"actions": [{"id": "a", "type": "tool_call", "tool": "rm"},
                        {"id": "b", "type": "tool_call", "tool": "curl"}]}  # fmt: skip
    found = Settings(start=str(tmp_path))
    named = Settings(policies=str(tmp_path / ".car" / "policies"), start="/")
    for server in (found, named):
        for added in ('deny_tool = ["nothing"]\n', {"deny_tool": ["curl"]}):
            doc, said, failed = call(
                "policy_check", {"proposal": plan, "policies": added}, settings=server
            )
            codes = sorted(i["code"] for i in doc["issues"])
            extra = ["deny_tool:curl"] if isinstance(added, dict) else []
            assert not failed and codes == sorted(["deny_tool:rm", *extra]), said
            assert "r.toml" in said or "1 file" in said
            assert "and 1 rule from the policies argument" in said.splitlines()[0]


# --- a verdict belongs to its model turn; a thread's checkpoint holds its calls ---------------


def _lc_recording(ran: list[str], *names: str) -> list[Any]:
    from langchain_core.tools import StructuredTool

    def make(name: str) -> Any:
        def body(to: str = "") -> str:
            ran.append(name)
            return f"{name} done"

        return StructuredTool.from_function(body, name=name, description=name)

    return [make(n) for n in names]


def _lc_turns(*turns: list[tuple[str, str]] | str) -> Any:
    """A chat model answering with these turns: calls as (tool, call id), or a text."""
    from langchain_core.messages import AIMessage

    chat = _chat([], "x")
    chat.responses = [
        AIMessage(content=t)
        if isinstance(t, str)
        else AIMessage(
            content="",
            tool_calls=[
                {"name": n, "args": {"to": "x"}, "id": i, "type": "tool_call"} for n, i in t
            ],
        )
        for t in turns
    ]
    return chat


@pytest.mark.parametrize("above", ["a cache", "a person (HumanInTheLoop, per call)"])
def test_a_verdict_no_call_took_is_not_given_to_a_later_call_with_its_id(above: str) -> None:
    """A turn's calls are decided together; one that a middleware above answers
    without running it (a cache; a person rejecting it) leaves its verdict untaken.
    The model writes the same call (id, tool, arguments) in a later turn, after
    read_secret: it is decided on the trace as it is then, and refused."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware, HumanInTheLoopMiddleware
    from langchain_core.messages import ToolMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    from car_verify.integrations.langchain import PolicyMiddleware

    class Cache(AgentMiddleware[Any, Any]):
        def __init__(self) -> None:
            super().__init__()
            self.hits = 0

        def wrap_tool_call(self, request: Any, handler: Any) -> Any:
            if request.tool_call["name"] == "send" and not self.hits:
                self.hits += 1
                return ToolMessage(content="cached", tool_call_id=request.tool_call["id"])
            return handler(request)

    ran: list[str] = []
    rules = load_policy_text('[[trace_rule]]\nrule = "never send after read_secret"\n')
    chat = _lc_turns(
        [("noop", "c0"), ("send", "c1")], [("read_secret", "c2")], [("send", "c1")], "done"
    )
    first: Any = Cache()
    if above != "a cache":
        first = HumanInTheLoopMiddleware(interrupt_on={"send": True}, interrupt_mode="per_call")
    agent = create_agent(
        chat,
        _lc_recording(ran, "send", "read_secret", "noop"),
        middleware=[first, PolicyMiddleware(policies=rules)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    out = agent.invoke({"messages": [{"role": "user", "content": "go"}]}, config)
    answers = iter([{"type": "reject", "message": "no"}, {"type": "approve"}])
    while out.get("__interrupt__"):
        out = agent.invoke(Command(resume=next(answers)), config)
    assert ran == ["noop", "read_secret"]
    last = [m for m in out["messages"] if isinstance(m, ToolMessage)][-1]
    assert last.status == "error" and "trace_rule:" in str(last.content)


def test_a_thread_stopped_after_a_tools_step_keeps_the_steps_calls() -> None:
    """The gate's record of a call is written with the call's result, in the same
    update: a thread whose invocation stops after the tools step, before the next
    model call (here an error in a middleware's before_model), and is taken up by
    another checkpointer object over the same storage (another process, a saver
    per request) still counts the call: no second deploy under `at most 1`."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.messages import ToolMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from car_verify.integrations.langchain import PolicyMiddleware

    class Flaky(AgentMiddleware[Any, Any]):
        failed = False

        def before_model(self, state: Any, runtime: Any) -> None:
            tools_ran = any(isinstance(m, ToolMessage) for m in state["messages"])
            if tools_ran and not Flaky.failed:
                Flaky.failed = True
                raise RuntimeError("a transient failure")

    ran: list[str] = []
    rules = load_policy_text('[[trace_rule]]\nname = "once"\nrule = "at most 1 deploy"\n')
    chat = _lc_turns([("deploy", "a0"), ("test", "a1")], [("deploy", "b0")], "done")
    tools = _lc_recording(ran, "deploy", "test")
    config: Any = {"configurable": {"thread_id": "t"}}
    saver = InMemorySaver()
    middleware = [Flaky(), PolicyMiddleware(policies=rules)]
    with pytest.raises(RuntimeError, match="transient"):
        create_agent(chat, tools, middleware=middleware, checkpointer=saver).invoke(
            {"messages": [{"role": "user", "content": "go"}]}, config
        )
    assert sorted(ran) == ["deploy", "test"]
    other = InMemorySaver()  # the same storage, another checkpointer object
    other.storage, other.writes, other.blobs = saver.storage, saver.writes, saver.blobs
    agent = create_agent(chat, tools, middleware=middleware, checkpointer=other)
    out = agent.invoke({"messages": [{"role": "user", "content": "go on"}]}, config)
    assert sorted(ran) == ["deploy", "test"]
    last = [m for m in out["messages"] if isinstance(m, ToolMessage)][-1]
    assert last.status == "error" and "trace_rule:once" in str(last.content)


def test_agents_sdk_a_rejected_calls_verdict_is_not_given_to_a_later_call_with_its_id() -> None:
    """The Agents SDK decides a turn's calls in their approval policies: a call a
    person rejects never takes its verdict. Runs keyed by a context kept across
    them are one gate: a later run's call with the same id, after read_secret, is
    decided on the trace as it is then (refused), not given the old allow, also
    when the person approved every call of the tool (no approval policy asked)."""
    from agents import Agent, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call

    from car_verify.integrations.openai_agents import guard_agent

    ran: list[str] = []

    def make(name: str, theirs: bool) -> Any:
        def body() -> str:
            ran.append(name)
            return "done"

        return function_tool(body, name_override=name, strict_mode=False, needs_approval=theirs)

    model = ScriptedModel(
        [
            [function_call("send", {}, call_id="c1")],
            [assistant_message("stopped")],
            [function_call("send", {}, call_id="c9")],
            [function_call("read_secret", {}, call_id="c2")],
            [function_call("send", {}, call_id="c1")],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="a", model=model, tools=[make("send", True), make("read_secret", False)])
    rules = load_policy_text('[[trace_rule]]\nrule = "never send after read_secret"\n')
    guard_agent(agent, policies=rules, ask=["deny_tool"], run_key=lambda ctx: ctx.context)

    class Kept:
        """Any object the application keeps (held weakly): the runs' key."""

    kept = Kept()

    async def go() -> None:
        paused = await _sdk_go(agent, "go", context=kept)
        state = paused.to_state()
        state.reject(paused.interruptions[0])
        await _sdk_go(agent, state)
        # the next run: the person approves every send (so no approval policy is
        # asked for the later ones), then the model writes c1 again
        paused = await _sdk_go(agent, "again", context=kept)
        state = paused.to_state()
        state.approve(paused.interruptions[0], always_approve=True)
        await _sdk_go(agent, state)

    asyncio.run(go())
    assert ran == ["send", "read_secret"]
    assert "trace_rule:" in _told(model)["c1"]


def test_listed_last_the_middleware_checks_a_brand_new_request_from_above() -> None:
    """The docs' order: a middleware that builds a brand-new ToolCallRequest (not
    ``override``) hands the node a request PolicyMiddleware never made; listed
    last, PolicyMiddleware is below it, and the request's tool is checked."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.messages import AIMessage
    from langchain_core.tools import StructuredTool
    from langgraph.prebuilt.tool_node import ToolCallRequest

    from car_verify.integrations.langchain import PolicyMiddleware

    ran: list[str] = []
    wipe = StructuredTool.from_function(
        lambda: ran.append("wipe") or "wiped", name="wipe", description="wipe"
    )

    class Fresh(AgentMiddleware[Any, Any]):
        def wrap_tool_call(self, request: Any, handler: Any) -> Any:
            made = ToolCallRequest(
                tool_call=request.tool_call, tool=wipe, state=request.state, runtime=request.runtime
            )
            return handler(made)

    chat = _chat([], "x")
    call = {"name": "wipe", "args": {}, "id": "c0", "type": "tool_call"}
    chat.responses = [AIMessage(content="", tool_calls=[call]), AIMessage(content="done")]
    rules = load_policy_text('deny_tool = ["wipe"]\n')
    agent = create_agent(chat, [], middleware=[Fresh(), PolicyMiddleware(policies=rules)])
    out = agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    assert ran == []
    answer = next(m for m in out["messages"] if getattr(m, "type", "") == "tool")
    assert "deny_tool:wipe" in str(answer.content) and answer.status == "error"
