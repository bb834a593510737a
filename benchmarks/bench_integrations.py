"""The gate's overhead per tool call inside each agent framework (target: under
100 microseconds per call), for a 50-rule set of every kind (bench_hook's), and
the memory the integrations hold once runs have ended.

Each round runs one agent whose scripted model makes CALLS tool calls, one per
turn (no network), once with the gate and once without, in alternation; the
overhead per call is the difference over the calls, the ratio the two runs'
times. Reports the median of the rounds and their spread (min-max), and the gate's own
work per call (decide and report, outside any framework). The frameworks' own
cost per tool call is milliseconds, so a run-to-run difference is noisy: the
ratio is the number to read, the gate alone the floor of the overhead.

Then RUNS runs (1,000 by default) of a guarded agent, one call each (and, for
LangGraph, as many threads of a checkpointer): the gates still held after them
and the memory still allocated (tracemalloc, after a collection), against the
same runs unguarded.

    python benchmarks/bench_integrations.py [ROUNDS] [CALLS] [RUNS]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from bench_hook import policy

from car_verify.rules.policy import load_policy_text

ARGS = {"file_path": "notes.txt"}


def openai_agents(calls: int, rules: Any) -> tuple[Callable[[], Any], Callable[[], Any]] | None:
    try:
        from agents import Agent, Runner, function_tool, set_tracing_disabled
        from agents.items import ModelResponse
        from agents.models.interface import Model
        from agents.usage import Usage
        from openai.types.responses import (
            ResponseFunctionToolCall,
            ResponseOutputMessage,
            ResponseOutputText,
        )
    except ImportError:
        return None
    from car_verify.integrations.openai_agents import guard_agent

    set_tracing_disabled(True)

    class Scripted(Model):
        def __init__(self) -> None:
            self.turn = 0

        async def get_response(self, *args: Any, **kw: Any) -> Any:
            self.turn += 1
            if self.turn > calls:
                text = ResponseOutputText(type="output_text", text="done", annotations=[])
                out: list[Any] = [ResponseOutputMessage(
                    id="m", type="message", role="assistant", status="completed", content=[text]
                )]  # fmt: skip
            else:
                out = [ResponseFunctionToolCall(
                    type="function_call", call_id=f"c{self.turn}", name="Read",
                    arguments=json.dumps(ARGS),
                )]  # fmt: skip
            return ModelResponse(output=out, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kw: Any) -> Any:
            # a scripted model answers whole turns (Runner.run); it has no stream to give
            raise TypeError("this scripted model does not stream: use Runner.run")

    def make(guarded: bool) -> Callable[[], Any]:
        @function_tool(name_override="Read")
        def read(file_path: str) -> str:
            """Read a file."""
            return "contents"

        agent = Agent(name="a", model=None, tools=[read])
        if guarded:
            guard_agent(agent, policies=rules)

        def run() -> Any:
            agent.model = Scripted()
            return asyncio.run(Runner.run(agent, "go", max_turns=calls + 2))

        return run

    return make(False), make(True)


def langchain(
    calls: int, rules: Any, *, threads: bool = False
) -> tuple[Callable[[], Any], Callable[[], Any]] | None:
    """A create_agent run; ``threads``: each run a thread of a checkpointer."""
    try:
        from langchain.agents import create_agent
        from langchain_core.language_models.chat_models import BaseChatModel
        from langchain_core.messages import AIMessage
        from langchain_core.outputs import ChatGeneration, ChatResult
        from langchain_core.tools import tool
    except ImportError:
        return None
    from car_verify.integrations.langchain import PolicyMiddleware

    class Scripted(BaseChatModel):
        turn: int = 0

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                      **kw: Any) -> Any:  # fmt: skip
            self.turn += 1
            if self.turn > calls:
                message = AIMessage(content="done")
            else:
                message = AIMessage(content="", tool_calls=[
                    {"name": "Read", "args": ARGS, "id": f"c{self.turn}", "type": "tool_call"}
                ])  # fmt: skip
            return ChatResult(generations=[ChatGeneration(message=message)])

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kw: Any) -> Any:
            return self

    @tool("Read")
    def read(file_path: str) -> str:
        """Read a file."""
        return "contents"

    from langgraph.checkpoint.memory import InMemorySaver

    def make(guarded: bool) -> Callable[[], Any]:
        middleware = [PolicyMiddleware(policies=rules)] if guarded else []
        saver = InMemorySaver() if threads else None
        numbers = iter(range(10**9))

        model = Scripted()
        agent = create_agent(model, [read], middleware=middleware, checkpointer=saver)

        def run() -> Any:
            model.turn = 0
            config: Any = {"recursion_limit": 4 * calls + 10}
            if threads:
                config["configurable"] = {"thread_id": f"t{next(numbers)}"}
            return agent.invoke({"messages": [{"role": "user", "content": "go"}]}, config)

        return run

    return make(False), make(True)


def measure(name: str, pair: Any, rounds: int, calls: int) -> None:
    if pair is None:
        print(f"{name}: not installed, skipped")
        return
    plain, guarded = pair
    plain(), guarded()  # warm: imports, schemas, the rule set
    ratios, overheads = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        plain()
        without = time.perf_counter() - start
        start = time.perf_counter()
        guarded()
        with_gate = time.perf_counter() - start
        ratios.append(with_gate / without)
        overheads.append((with_gate - without) / calls * 1e6)
    print(
        f"{name}: ratio {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max "
        f"{max(ratios):.3f}); overhead per call {statistics.median(overheads):.1f} us "
        f"(min {min(overheads):.1f}, max {max(overheads):.1f}); {rounds} rounds of {calls} "
        "calls, 50 rules"
    )


def gate_alone(rules: Any, calls: int, rounds: int) -> None:
    """The gate's own work per call (decide and report), outside any framework,
    beside the runtime's verify of a one-call plan in the same rounds (the issue's
    baseline), when car-runtime is installed."""
    from car_verify.plan.gate import CallGate
    from car_verify.rules.policy import PolicyEngine

    runtime: Any
    try:
        import car_runtime as runtime
    except ImportError:
        runtime = None
    one_call = json.dumps(
        {"actions": [{"id": "a", "type": "tool_call", "tool": "Read", "parameters": ARGS}]}
    )
    per_call, baseline = [], []
    for _ in range(rounds):
        gate = CallGate(PolicyEngine(rules))
        start = time.perf_counter()
        for _ in range(calls):
            verdict = gate.decide("Read", ARGS)
            gate.report("Read", verdict.sent, "succeeded")
        per_call.append((time.perf_counter() - start) / calls * 1e6)
        if runtime is not None:
            start = time.perf_counter()
            for _ in range(calls):
                runtime.verify(one_call)
            baseline.append((time.perf_counter() - start) / calls * 1e6)
    print(
        f"the gate alone: {statistics.median(per_call):.1f} us per call (min "
        f"{min(per_call):.1f}, max {max(per_call):.1f}); target 50 us"
    )
    if baseline:
        ratios = [g / b for g, b in zip(per_call, baseline, strict=True)]
        print(
            f"  as a multiple of car_runtime.verify of a one-call plan "
            f"({statistics.median(baseline):.1f} us): {statistics.median(ratios):.2f}x "
            f"(min {min(ratios):.2f}, max {max(ratios):.2f})"
        )


def held(name: str, pair: Any, runs: int, gates: Callable[[], int]) -> None:
    """The gates and memory held after ``runs`` runs of one call each (median of
    nothing: one measurement each way, after a collection)."""
    import gc
    import tracemalloc

    if pair is None:
        print(f"{name}: not installed, skipped")
        return
    plain, guarded = pair
    plain(), guarded()  # warm
    grown = {}
    for label, run in (("unguarded", plain), ("guarded", guarded)):
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(runs):
            run()
        gc.collect()
        grown[label] = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
    print(
        f"{name}: after {runs:,} runs, {gates()} gates held; memory still allocated "
        f"{grown['guarded'] / 1024:.0f} KiB guarded, {grown['unguarded'] / 1024:.0f} KiB "
        "unguarded"
    )


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    rules = load_policy_text(policy(50))
    assert rules.count() == 50
    gate_alone(rules, 1000, rounds)
    measure("openai-agents", openai_agents(calls, rules), rounds, calls)
    measure("langchain", langchain(calls, rules), rounds, calls)
    if not runs:
        return
    from car_verify.integrations._runs import RUNS

    held("openai-agents", openai_agents(1, rules), runs, lambda: len(RUNS))
    try:
        from car_verify.integrations.langchain import RUNS_IN_GRAPHS
    except ImportError:
        return
    held("langchain", langchain(1, rules), runs, RUNS_IN_GRAPHS.held)
    held("langgraph threads", langchain(1, rules, threads=True), runs, RUNS_IN_GRAPHS.held)


if __name__ == "__main__":
    main()
