"""The gate in LangChain 1.x agents (``pip install 'car-verify[langchain]'``).

::

    from langchain.agents import create_agent
    from car_verify.integrations.langchain import PolicyMiddleware

    agent = create_agent(model, tools, middleware=[PolicyMiddleware(policies=".car/policies")])

:class:`PolicyMiddleware` is an agent middleware that wraps each tool call
(``wrap_tool_call``, and ``awrap_tool_call`` for ``ainvoke``/``astream``):

* the run's :class:`~car_verify.plan.gate.CallGate` decides the call from the
  tool's name and arguments. A call it does not allow never reaches the tool:
  the model gets a ``ToolMessage`` with ``status="error"`` naming the rules
  that refused it and why (never a value), and the agent goes on. A rule that
  cannot be decided is answered by ``on_unknown``; an error inside the gate
  refuses the call, and every later call of the run (fails closed);
* an admitted call runs with exactly the arguments the gate checked
  (``request.tool_call["args"]`` replaced by the verdict's frozen copy);
* its outcome is reported: ``failed`` when the tool (or a middleware inside this
  one) raised, or returned a ``ToolMessage`` with ``status="error"`` (a
  ``ToolException`` the tool handles, say); else ``succeeded``. An exception is
  raised on as it was.

**One gate per run.** The middleware adds a private key to the agent's state
(``car_verify_run``, kept out of the agent's input and output schemas): its
``before_agent`` hook gives a run that has none a fresh id, and the gates are
kept by that id. Without a checkpointer every ``invoke`` is a new run, and its
gate is dropped when the agent ends (``after_agent``); with a checkpointer and a
``thread_id`` the id is saved with the thread, so every invocation of one
thread continues one trace (the conversation is the run), and separate threads
have separate gates. The gates live in this process, in this middleware object:
another process, or a new middleware object, starts a thread's trace afresh.

The tool calls of one model turn run concurrently: the gate takes them one at a
time, in the order they reach it. Put this middleware first in ``middleware=[...]``
(the first is the outermost) so that no other middleware changes a call after it
was checked; one listed before it sees refused calls as error ``ToolMessage``\\s.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import ToolMessage

from ..plan.gate import UNDECIDED, Decision, Verdict
from ._runs import Rules, Run, decide, refusal, report

__all__ = ["PolicyMiddleware", "PolicyState"]

#: The state key that names the run a tool call belongs to.
RUN_KEY = "car_verify_run"


class PolicyState(AgentState[Any]):
    """The agent state with the run's id, private to the middleware."""

    car_verify_run: NotRequired[Annotated[str, PrivateStateAttr]]


class PolicyMiddleware(AgentMiddleware[PolicyState, Any]):
    """Each tool call through the gate (see the module docs). ``policies``: a
    policies directory, loaded policies, a PolicySet or a PolicyEngine (its rules;
    each run gets fresh rate windows); ``on_unknown``: the answer to a rule that
    cannot be decided; ``clock``: the rate windows' clock."""

    state_schema = PolicyState

    def __init__(
        self,
        policies: Any = None,
        *,
        on_unknown: Decision = UNDECIDED["langchain"],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.rules = Rules(policies, on_unknown=on_unknown, clock=clock)
        self.runs: dict[str, Run] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return "CarVerifyPolicy"

    # --- the run ---------------------------------------------------------------------------------

    def before_agent(self, state: PolicyState, runtime: Any) -> dict[str, Any] | None:
        if state.get(RUN_KEY):
            return None
        return {RUN_KEY: uuid.uuid4().hex}

    async def abefore_agent(self, state: PolicyState, runtime: Any) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)

    def after_agent(self, state: PolicyState, runtime: Any) -> dict[str, Any] | None:
        if not _thread_id():
            with self._lock:
                self.runs.pop(str(state.get(RUN_KEY, "")), None)
        return None

    async def aafter_agent(self, state: PolicyState, runtime: Any) -> dict[str, Any] | None:
        return self.after_agent(state, runtime)

    def run(self, state: Any) -> Run:
        """The gate of the run whose state this is (made at its first tool call). A
        state without the run's id (the tool node used without ``before_agent``) is
        keyed by the thread, else it is a run of its own."""
        key = state.get(RUN_KEY) if isinstance(state, dict) else getattr(state, RUN_KEY, None)
        key = key or _thread_id() or uuid.uuid4().hex
        with self._lock:
            found = self.runs.get(key)
            if found is None:
                found = self.runs[key] = self.rules.new_run()
            return found

    # --- each tool call --------------------------------------------------------------------------

    def _check(self, request: Any) -> tuple[Run | None, Any, Any]:
        """(the run, the request to send, None) or (None, None, the refusing message)."""
        call = request.tool_call
        tool = str(call.get("name", ""))
        try:
            run = self.run(request.state)
        except Exception as err:  # no run to key it by: refused
            return None, None, _refused(call, f"the policy check failed ({type(err).__name__})")
        args = call.get("args")
        verdict = decide(run, tool, args if isinstance(args, dict) else {"_arguments": args})
        if not isinstance(verdict, Verdict):
            return None, None, _refused(call, verdict)
        if not verdict.allowed:
            return None, None, _refused(call, refusal(verdict))
        checked = request.override(tool_call={**call, "args": verdict.sent})
        return run, checked, verdict

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        run, checked, verdict = self._check(request)
        if run is None:
            return verdict
        tool = str(request.tool_call.get("name", ""))
        try:
            result = handler(checked)
        except BaseException:
            report(run, tool, verdict.sent, "failed")
            raise
        report(run, tool, verdict.sent, _outcome(result))
        return result

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        run, checked, verdict = self._check(request)
        if run is None:
            return verdict
        tool = str(request.tool_call.get("name", ""))
        try:
            result = await handler(checked)
        except BaseException:
            report(run, tool, verdict.sent, "failed")
            raise
        report(run, tool, verdict.sent, _outcome(result))
        return result


def _outcome(result: Any) -> Any:
    failed = isinstance(result, ToolMessage) and result.status == "error"
    return "failed" if failed else "succeeded"


def _refused(call: Any, message: str) -> ToolMessage:
    return ToolMessage(
        content=message,
        tool_call_id=str(call.get("id") or ""),
        name=str(call.get("name", "")),
        status="error",
    )


def _thread_id() -> str | None:
    """The thread this agent run is part of, when it has one (a checkpointer's)."""
    try:
        from langgraph.config import get_config

        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # outside a run
        return None
    found = configurable.get("thread_id")
    return None if found is None else str(found)
