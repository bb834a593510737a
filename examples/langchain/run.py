"""The gate in a LangChain agent (create_agent + PolicyMiddleware), with a
scripted chat model (no network).

    pip install 'car-verify[langchain]'
    python examples/langchain/run.py

The model tries to mail an outside address (refused: the tool never runs, the
model gets an error ToolMessage naming the rule), deploys before the tests ran
(refused), runs the tests and deploys (allowed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

from car_verify.integrations.langchain import PolicyMiddleware

SCRIPT: list[Any] = [
    ("send_email", {"to": "ceo@external.example", "body": "the numbers"}),
    ("deploy", {"env": "prod"}),
    ("run_tests", {}),
    ("deploy", {"env": "prod"}),
    "Deployed after the tests passed.",
]


class ScriptedChat(BaseChatModel):
    """Plays SCRIPT: one tool call per turn, then a final answer."""

    turn: int = 0

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        step = SCRIPT[self.turn]
        self.turn += 1
        if isinstance(step, str):
            message = AIMessage(content=step)
        else:
            name, args = step
            call = {"name": name, "args": args, "id": f"call{self.turn}", "type": "tool_call"}
            message = AIMessage(content="", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=message)])

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kw: Any) -> Any:
        return self


@tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    return f"sent to {to}"


@tool
def run_tests() -> str:
    """Run the test suite."""
    return "all tests passed"


@tool
def deploy(env: str) -> str:
    """Deploy to an environment."""
    return f"deployed to {env}"


def main() -> None:
    policies = Path(__file__).parent / ".car" / "policies"
    agent = create_agent(
        ScriptedChat(),
        [send_email, run_tests, deploy],
        middleware=[PolicyMiddleware(policies=str(policies))],
    )
    result = agent.invoke({"messages": [{"role": "user", "content": "Ship it."}]})
    for message in result["messages"]:
        if isinstance(message, ToolMessage):
            print(f"{message.tool_call_id} [{message.status}]: {message.content}")
    print(result["messages"][-1].content)


if __name__ == "__main__":
    main()
