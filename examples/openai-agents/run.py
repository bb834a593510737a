"""The gate in an OpenAI Agents SDK agent, with a scripted model (no network).

    pip install 'car-verify[agents]'
    python examples/openai-agents/run.py

The model tries to mail an outside address (denied: the tool never runs, the
model is told the rule), deploys before the tests ran (denied), runs the tests
and deploys (allowed).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from car_verify.integrations.openai_agents import guard_agent

SCRIPT: list[Any] = [
    ("send_email", {"to": "ceo@external.example", "body": "the numbers"}),
    ("deploy", {"env": "prod"}),
    ("run_tests", {}),
    ("deploy", {"env": "prod"}),
    "Deployed after the tests passed.",
]


class ScriptedModel(Model):
    """Plays SCRIPT: one tool call per turn, then a final answer."""

    def __init__(self) -> None:
        self.turn = 0

    async def get_response(self, *args: Any, **kw: Any) -> ModelResponse:
        step = SCRIPT[self.turn]
        self.turn += 1
        if isinstance(step, str):
            text = ResponseOutputText(type="output_text", text=step, annotations=[])
            out: list[Any] = [
                ResponseOutputMessage(
                    id="m", type="message", role="assistant", status="completed", content=[text]
                )
            ]
        else:
            name, arguments = step
            out = [
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=f"call{self.turn}",
                    name=name,
                    arguments=json.dumps(arguments),
                )
            ]
        return ModelResponse(output=out, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kw: Any) -> Any:
        # a scripted model answers whole turns (Runner.run); it has no stream to give
        raise TypeError("this scripted model does not stream: use Runner.run, not run_streamed")


@function_tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    return f"sent to {to}"


@function_tool
def run_tests() -> str:
    """Run the test suite."""
    return "all tests passed"


@function_tool
def deploy(env: str) -> str:
    """Deploy to an environment."""
    return f"deployed to {env}"


def main() -> None:
    set_tracing_disabled(True)
    policies = Path(__file__).parent / ".car" / "policies"
    agent = Agent(name="ops", model=ScriptedModel(), tools=[send_email, run_tests, deploy])
    guard_agent(agent, policies=str(policies))  # its tools, MCP servers, handoffs, agents as tools
    result = asyncio.run(Runner.run(agent, "Ship it."))
    for item in result.new_items:
        if item.type == "tool_call_output_item":
            print(f"{item.raw_item['call_id']}: {item.output}")
    print(result.final_output)


if __name__ == "__main__":
    main()
