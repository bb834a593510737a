"""The gate in the OpenAI Agents SDK (``pip install 'car-verify[agents]'``).

::

    from agents import Agent
    from car_verify.integrations.openai_agents import guard_agent

    triage = guard_agent(Agent(name="triage", tools=[...], handoffs=[billing],
                               mcp_servers=[server]), policies=".car/policies")

:func:`guard_agent` guards every path from an agent to a tool, recursively:
its function tools, the tools of its MCP servers, the agents it hands off to
and the agents it calls as tools, and what it is given later (a tool, a server,
a handoff: guarded when the run lists its tools; the agent a handoff gives,
when the handoff is taken). A tool the gate cannot see the calls of (a
hosted tool: web search, file search, code interpreter, computer use, hosted
MCP) is refused when the agent is guarded (a :class:`UsageError`) unless
``allow_unguarded=[its name, ...]`` says to let it run unchecked. Each function
tool gets

* a **tool input guardrail** (:func:`policy_guardrail`): before the tool runs,
  the run's :class:`~car_verify.plan.gate.CallGate` decides the call from the
  tool's name and its JSON arguments. A call it does not allow is rejected with
  the SDK's ``reject_content`` behaviour: the tool never runs, the model is told
  which rules refused it and why (never a value), and the run goes on. A rule
  that cannot be decided is answered by ``on_unknown``; an error inside the gate
  rejects the call, and every later call of the run (fails closed);
* its **invocation wrapped**: an admitted call runs with exactly the arguments
  the gate checked (its frozen copy, as JSON; for an MCP tool, the arguments the
  server receives), and its outcome is reported to the gate when it ends:
  ``failed`` when the tool raised, when the SDK's failure formatter turned its
  error into the model's answer, or when an MCP server answered ``isError``;
  else ``succeeded``;
* when a call can be put to a person (``on_unknown="ask"``, or ``ask=[rule-name
  prefixes]``), a **needs_approval** policy: the gate's ``ask`` interrupts the
  run with the SDK's approval item (``result.interruptions``); a call the person
  approves (``state.approve(item)``, then ``Runner.run(agent, state)``) runs,
  one they reject never does.

**One gate per run.** A run is one ``Runner.run`` (or ``run_streamed``) and its
resumptions from a ``RunState`` (``result.to_state()``), with everything it does:
handoffs, agents called as tools (their nested
runs share the run's usage record), parallel tool calls, and any agent run
started inside a guarded tool (a sub-agent: :data:`~car_verify.integrations._runs.ACTIVE`
names the calling run while the tool runs). The gates are kept for every guard
of the process by the identity of the run's usage record (``ToolContext.usage``),
held weakly: agents guarded separately share their run's gate, and a run's gate
goes when the run's objects do (its result, or a paused ``RunState``). A
``RunState``'s copy of the usage record names the run it was copied from (an
attribute the copy keeps): the resumed run goes on from the gate's state at the
pause (each copy on its own). A resumed run that names none (its state written
to JSON, or carried to another process) is stopped, not run on a fresh gate.
``run_key`` keys it by something else (``lambda ctx: ctx.context``: the context
object you pass to ``Runner.run``, to keep one trace across the runs that share
it). A run reached by guards with different rules refuses their calls. The
calls of one model turn are decided in the order the model wrote them, all
before any of them runs (each in its own task, which the SDK starts in order).

Limits: a guardrail attached by hand (``tool.tool_input_guardrails =
[policy_guardrail(...)]``) decides calls but sees no outcome and cannot change
the arguments the SDK sends; use :func:`guard_agent` or :func:`guard_tools`. A
run resumed from a ``RunState`` written to JSON (``to_json``/``from_json``) stops
(a ``UserError``) unless ``run_key`` names an object given back
(``context_override``). An agent run from inside a tool is part of the run only
when its own tools are guarded (``guard_agent`` it too).
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Callable, Iterable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

try:
    from agents import Agent, FunctionTool, Handoff
    from agents.exceptions import UserError
    from agents.run_context import RunContextWrapper
    from agents.tool_context import ToolContext
    from agents.tool_guardrails import (
        ToolGuardrailFunctionOutput,
        ToolInputGuardrail,
        ToolInputGuardrailData,
    )
except ImportError as err:  # the extra is not installed: say how to install it
    raise ImportError(
        f"car_verify.integrations.openai_agents needs the OpenAI Agents SDK ({err}): "
        "pip install 'car-verify[agents]'",
        name=err.name,
    ) from err

from ..base.errors import UsageError
from ..plan.gate import UNDECIDED, Decision, Verdict
from ._runs import ACTIVE, RUNS, Rules, Run, active, decide, refusal, refused_broken, report

__all__ = ["PolicyGuard", "guard_agent", "guard_tools", "policy_guardrail"]

#: The attribute the SDK's default failure formatter sets on a tool context when it
#: turned the tool's error into the answer the model sees.
_DEFAULT_FAILURE = "_function_tool_default_failure_handled"


@dataclass(slots=True)
class _Call:
    """One admitted call while its tool runs: what an MCP server may receive for it
    (once), and whether the server answered it as an error."""

    verdict: Verdict
    used: bool = False
    failed: bool = False


#: The admitted call whose tool is being invoked, for the MCP servers' wrappers.
_CALL: ContextVar[_Call | None] = ContextVar("car_verify_agents_call", default=None)


def _usage_key(context: RunContextWrapper[Any]) -> Any:
    return context.usage


#: The attribute of a run's usage record that names its run (see :class:`_Link`).
_LINK = "_car_verify_run"


class _Link:
    """A run's usage record names its run with this: a paused run's ``RunState``
    (``result.to_state()``) holds a copy of the usage record, which keeps the link
    (a copy of a link is the link), so the resumed run finds the run it continues.
    Written out of the process (pickled), it is a link to no run: the run it
    continues cannot be found, and its calls are refused."""

    __slots__ = ("run",)

    def __init__(self, run: Run | None) -> None:
        self.run = run

    def __copy__(self) -> _Link:
        return self

    def __deepcopy__(self, memo: Any) -> _Link:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Link, (None,))


#: The attribute of a run's usage record that names the run's invocation (see :class:`_Turns`).
_TURNS = "_car_verify_turns"


class _Turns:
    """Names one invocation of a run (a ``Runner.run`` and its resumptions: a copy of
    the usage record keeps it, as it keeps :class:`_Link`); with the count of model
    calls so far, the model turn a verdict was given in (:func:`_turn`)."""

    __slots__ = ()

    def __copy__(self) -> _Turns:
        return self

    def __deepcopy__(self, memo: Any) -> _Turns:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Turns, ())


def _turn(context: RunContextWrapper[Any]) -> tuple[_Turns, Any]:
    """The model turn of a call: its invocation and how many model calls it made
    (the calls of a turn are decided, and run, after its model call). A verdict
    given in one turn is taken by a call of that turn only: a call id can come
    back in a later turn (or a later run over the same gate, ``run_key``)."""
    usage = context.usage
    turns = getattr(usage, _TURNS, None)
    if not isinstance(turns, _Turns):
        turns = _Turns()
        setattr(usage, _TURNS, turns)
    return turns, getattr(usage, "requests", None)


def _decided_by_a_person(context: Any) -> bool:
    """Whether the run's context holds a person's decision on a call (an approval or
    a rejection): it does only in a run resumed from a pause."""
    return bool(getattr(context, "_approvals", None))


class _Untied(UserError):
    """A resumed run whose gate cannot be found: it is stopped, not run on a fresh
    gate (which would forget what the run did before its pause)."""


class PolicyGuard:
    """The rules, and a gate per run (see the module docs). :meth:`guardrail` is the
    tool input guardrail; :meth:`guard` guards one function tool; :meth:`guard_agent`
    an agent and everything it reaches."""

    def __init__(
        self,
        policies: Any,
        *,
        on_unknown: Decision = UNDECIDED["openai_agents"],
        ask: Sequence[str] = (),
        clock: Callable[[], float] = time.monotonic,
        run_key: Callable[[RunContextWrapper[Any]], Any] | None = None,
        allow_empty: bool = False,
        allow_unguarded: Iterable[str] = (),
    ) -> None:
        self.rules = Rules(
            policies, on_unknown=on_unknown, ask=ask, clock=clock, allow_empty=allow_empty
        )
        self.run_key = run_key or _usage_key
        if isinstance(allow_unguarded, str):
            raise UsageError("allow_unguarded must be a list of tool names")
        self.allow_unguarded = frozenset(allow_unguarded)
        self.guardrail: ToolInputGuardrail[Any] = ToolInputGuardrail(
            guardrail_function=self._check, name="car_verify_policy"
        )
        self._classes: dict[type[Any], type[Any]] = {}

    # --- the run -------------------------------------------------------------------------------

    def run(self, context: RunContextWrapper[Any]) -> Run:
        """The gate of the run this call belongs to: the run of the guarded tool
        running now, if any (a sub-agent started inside it), else the run the
        context's key names (made at its first call)."""
        found = ACTIVE.get()
        if found is not None:
            return found
        usage = context.usage
        run = RUNS.of(self.run_key(context), self.rules, lambda: self._begin(context))
        link = getattr(usage, _LINK, None)
        if not isinstance(link, _Link) or link.run is not run:
            setattr(usage, _LINK, _Link(run))
        return run

    def _begin(self, context: RunContextWrapper[Any]) -> Run:
        """The gate of a run at its first call: a resumed run continues the run its
        state was copied from; a resumed run that names none is refused (a
        :class:`UserError`: it stops); else a new gate."""
        link = getattr(context.usage, _LINK, None)
        if isinstance(link, _Link) and link.run is not None:
            return link.run.fork()
        if isinstance(link, _Link) or _decided_by_a_person(context):
            raise _Untied(
                "refused: this run was resumed from a RunState whose policy state is not in "
                "this process (written to JSON, or made in another process), so the rules "
                "cannot see what the run did before its pause; resume the RunState object "
                "(result.to_state()) in the process that paused it, or key runs by an object "
                "you keep and give back (run_key=lambda ctx: ctx.context, with "
                "RunState.from_json(..., context_override=that object))"
            )
        return self.rules.new_run()

    def _run_or_refusal(self, context: RunContextWrapper[Any]) -> Run | str:
        try:
            return self.run(context)
        except _Untied:
            raise
        except Exception as err:  # no run to key it by: refused
            return refused_broken(type(err).__name__)

    # --- deciding ------------------------------------------------------------------------------

    def _decided(self, context: ToolContext[Any]) -> tuple[Run | None, Verdict | str]:
        """The verdict for this call: the one its approval policy was given (a call
        put to a person), else decided now."""
        run = self._run_or_refusal(context)
        if isinstance(run, str):
            return None, run
        params = _params(context.tool_arguments)
        earlier = run.take_pending(context.tool_call_id, context.tool_name, params, _turn(context))
        if earlier is not None:
            return run, earlier
        return run, decide(run, self.rules, context.tool_name, params)

    @staticmethod
    def _runs_now(context: ToolContext[Any], verdict: Verdict) -> bool:
        """Whether an admitted verdict lets the call run now: ``allow``, or ``ask``
        that a person approved (the SDK's approval record for this call)."""
        if verdict.allowed:
            return True
        if verdict.decision != "ask":
            return False
        try:
            return context.is_tool_approved(context.tool_name, context.tool_call_id) is True
        except Exception:  # no approval record to read: not approved
            return False

    def _check(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        context = data.context
        unseen = self._unseen_paths(getattr(context, "agent", None))
        if unseen:  # the run reaches tools the gate cannot see: stop it, loudly
            raise UserError(unseen)
        run, verdict = self._decided(context)
        if not isinstance(verdict, Verdict):
            return ToolGuardrailFunctionOutput.reject_content(verdict)
        if not self._runs_now(context, verdict):
            info = {"decision": verdict.decision, "rules": verdict.rules}
            return ToolGuardrailFunctionOutput.reject_content(refusal(verdict), output_info=info)
        assert run is not None
        with run.lock:
            run.admitted[context] = (context.tool_name, verdict)
        return ToolGuardrailFunctionOutput.allow(output_info={"decision": verdict.decision})

    def _unseen_paths(self, agent: Any) -> str:
        """What of ``agent`` reaches tools past the gate, when it was not guarded as
        an agent (its tools guarded one by one): MCP servers, tools the gate cannot
        guard. '' when nothing."""
        if not isinstance(agent, Agent) or getattr(type(agent), "_car_verify_guard", None):
            return ""
        servers = [s for s in agent.mcp_servers if not isinstance(s, _GuardedServer)]
        hosted = [
            name
            for t in agent.tools
            if not isinstance(t, FunctionTool)
            and (name := str(getattr(t, "name", "") or type(t).__name__))
            not in self.allow_unguarded
            and type(t).__name__ not in self.allow_unguarded
        ]
        if not servers and not hosted:
            return ""
        what = (
            f"{len(servers)} MCP server(s)"
            if servers
            else f"tool(s) {', '.join(map(repr, hosted))}"
        )
        return (
            f"agent {agent.name!r} reaches {what} whose calls do not pass the policy gate: "
            "guard the agent (guard_agent(agent, policies=...)), not only its tools"
        )

    def _admitted(self, context: ToolContext[Any]) -> tuple[Run | None, Verdict | str]:
        """The verdict the guardrail gave this call (the same tool context); decided
        now when it gave none (the guardrail was removed from the tool, or the call
        came another way)."""
        run = self._run_or_refusal(context)
        if isinstance(run, str):
            return None, run
        with run.lock:
            found = run.admitted.pop(context, None)
        if found is not None and found[0] == context.tool_name:
            return run, found[1]
        return self._decided(context)

    def _needs_approval(self, tool: FunctionTool) -> Callable[..., Any]:
        """The tool's approval policy: the gate decides the call (once: the verdict
        waits for the guardrail), and a call it answers ``ask`` interrupts the run
        for a person; else the tool's own policy, if it had one, is asked."""
        theirs = tool.needs_approval
        name = tool.name

        async def needs(context: RunContextWrapper[Any], params: Any, call_id: str) -> bool:
            run = self._run_or_refusal(context)
            if isinstance(run, str):
                return False  # the guardrail refuses it
            sent = params if isinstance(params, dict) else {"_arguments": params}
            verdict = decide(run, self.rules, name, sent)
            # the model wrote this call now: a verdict an earlier call with its id
            # left untaken (a person rejected it; its run stopped) is not for it
            run.drop_pending_of(call_id)
            run.put_pending(call_id, name, verdict, _turn(context))
            if not isinstance(verdict, Verdict) or verdict.decision == "deny":
                return False  # refused by the guardrail: no one is asked
            if verdict.decision == "ask":
                return True
            if callable(theirs):
                answer = theirs(context, params, call_id)
                return bool(await answer if inspect.isawaitable(answer) else answer)
            return bool(theirs)

        needs._car_verify_guard = self  # type: ignore[attr-defined]
        return needs

    # --- guarding --------------------------------------------------------------------------------

    def guard(self, tool: FunctionTool) -> FunctionTool:
        """Attach the guardrail to ``tool`` (first, before its own), wrap its
        invocation and, when a call can be put to a person, its approval policy;
        the tool is changed in place and returned. A tool another guard with other
        rules holds is refused."""
        owner = getattr(tool.on_invoke_tool, "_car_verify_guard", None)
        if owner is self or (isinstance(owner, PolicyGuard) and owner.rules.key == self.rules.key):
            return tool
        if owner is not None:
            raise UsageError(
                f"tool {tool.name!r} is already guarded by other rules: a run is decided by "
                "one rule set; guard it with one guard"
            )
        guardrails = list(tool.tool_input_guardrails or [])
        tool.tool_input_guardrails = [self.guardrail, *guardrails]
        if self.rules.may_ask:
            tool.needs_approval = self._needs_approval(tool)
        invoke = tool.on_invoke_tool
        formatter = getattr(tool, "_failure_error_function", None)
        if formatter is not None and not getattr(formatter, "_car_verify_marks", False):
            tool._failure_error_function = _marking(formatter)

        async def guarded(context: ToolContext[Any], arguments: str) -> Any:
            run, verdict = self._admitted(context)
            if not isinstance(verdict, Verdict):
                return verdict  # refused here: the guardrail did not run for this call
            if not self._runs_now(context, verdict):
                return refusal(verdict)
            assert run is not None
            name = context.tool_name
            setattr(context, _DEFAULT_FAILURE, False)
            call = _Call(verdict)
            token = _CALL.set(call)
            try:
                with active(run):
                    result = await invoke(context, json.dumps(verdict.sent))
            except BaseException:
                report(run, name, verdict.sent, "failed")
                raise
            finally:
                _CALL.reset(token)
            failed = call.failed or bool(getattr(context, _DEFAULT_FAILURE, False))
            report(run, name, verdict.sent, "failed" if failed else "succeeded")
            return result

        guarded._car_verify_guard = self  # type: ignore[attr-defined]
        tool.on_invoke_tool = guarded
        nested = getattr(tool, "_agent_instance", None)
        if isinstance(nested, Agent):  # an agent called as a tool: its own tools too
            self.guard_agent(nested)
        return tool

    def guard_tools(self, tools: Iterable[Any]) -> list[Any]:
        """``tools`` with every function tool guarded (in place), in order; a tool the
        gate cannot guard is refused unless ``allow_unguarded`` names it."""
        return [self._guard_tool(t, where="the tools") for t in tools]

    def _guard_tool(self, tool: Any, *, where: str) -> Any:
        if isinstance(tool, FunctionTool):
            return self.guard(tool)
        name = str(getattr(tool, "name", "") or type(tool).__name__)
        if name in self.allow_unguarded or type(tool).__name__ in self.allow_unguarded:
            return tool
        raise UsageError(
            f"{where}: tool {name!r} ({type(tool).__name__}) runs where the gate cannot see "
            f"its calls (a hosted tool), so it would run unchecked; remove it, or pass "
            f"allow_unguarded=[{name!r}] to let it run unchecked"
        )

    def guard_agent(self, agent: Any) -> Any:
        """Guard ``agent`` and every agent it reaches (handoffs, agents called as
        tools), in place: their function tools, their MCP servers' tools (the
        servers are wrapped), and any tool, server or handoff they are given later
        (checked when the run lists the agent's tools, each turn; the agent a
        handoff gives is guarded when the handoff is taken). Returns ``agent``."""
        seen: set[int] = set()
        todo = [agent]
        while todo:
            current = todo.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            if not isinstance(current, Agent):
                raise UsageError(f"guard_agent: {current!r} is not an Agent")
            where = f"agent {current.name!r}"
            for tool in current.tools:  # a function tool is guarded in place
                self._guard_tool(tool, where=where)
            for index, server in enumerate(current.mcp_servers):
                if not isinstance(server, _GuardedServer):
                    current.mcp_servers[index] = self._server(server)
            for handoff in current.handoffs:
                target = self._guard_handoff(handoff, where=where)
                if target is not None:
                    todo.append(target)
            current.__class__ = self._agent_class(type(current))
        return agent

    def _guard_handoff(self, handoff: Any, *, where: str) -> Any:
        """The agent ``handoff`` reaches, to be guarded (None: nothing to guard); a
        :class:`Handoff` is changed in place so that the agent it gives when it is
        taken is guarded then (whatever agent that is). A handoff whose agent
        cannot be seen is refused unless ``allow_unguarded`` names it."""
        target = _handoff_target(handoff)
        if target is None:
            if _handoff_name(handoff) in self.allow_unguarded:
                return None
            raise UsageError(
                f"{where}: the agent behind handoff {_handoff_name(handoff)!r} cannot be "
                "seen, so its tools cannot be guarded; hand off to an Agent (or "
                "handoff(agent)), or pass allow_unguarded=[its name]"
            )
        if isinstance(handoff, Handoff):
            invoke = handoff.on_invoke_handoff
            if getattr(invoke, "_car_verify_guard", None) is None:
                guard = self

                async def invoked(context: RunContextWrapper[Any], arguments: str) -> Any:
                    agent = await invoke(context, arguments)
                    try:
                        guard.guard_agent(agent)
                    except UsageError as err:
                        raise UserError(str(err)) from None
                    return agent

                invoked._car_verify_guard = self  # type: ignore[attr-defined]
                handoff.on_invoke_handoff = invoked
        return target

    def _server(self, server: Any) -> Any:
        if isinstance(server, _GuardedServer):
            if server._car_verify_guard.rules.key != self.rules.key:
                raise UsageError("an MCP server is already guarded by other rules")
            return server
        return _GuardedServer(server, self)

    def _agent_class(self, cls: type[Any]) -> type[Any]:
        """``cls`` with ``get_all_tools`` checking what the run lists: every function
        tool guarded (one added after guard_agent, an MCP tool), any other refused."""
        if getattr(cls, "_car_verify_guard", None) is not None:
            if cls._car_verify_guard.rules.key != self.rules.key:
                raise UsageError("an agent is already guarded by other rules")
            return cls
        found = self._classes.get(cls)
        if found is not None:
            return found
        guard = self

        async def get_all_tools(self: Any, run_context: RunContextWrapper[Any]) -> list[Any]:
            where = f"agent {self.name!r}"
            try:
                # what the agent was given since it was guarded (a handoff appended,
                # a clone's handoffs, a server): guarded before the run can reach it
                guard.guard_agent(self)
                tools = await cls.get_all_tools(self, run_context)
                return [guard._guard_tool(t, where=where) for t in tools]
            except UsageError as err:
                raise UserError(str(err)) from None

        made = type(
            cls.__name__,
            (cls,),
            {
                "get_all_tools": get_all_tools,
                "_car_verify_guard": guard,
                "__qualname__": cls.__qualname__,
                "__module__": cls.__module__,
            },
        )
        self._classes[cls] = made
        return made


class _GuardedServer:
    """An MCP server whose tool calls come only through the gate: the admitted
    call's checked arguments are what the server receives, and an ``isError``
    answer is reported as the call's failure. A call that did not come through a
    guarded tool is refused. Everything else is the server's own."""

    def __init__(self, server: Any, guard: PolicyGuard) -> None:
        self._car_verify_server = server
        self._car_verify_guard = guard

    def __getattr__(self, name: str) -> Any:
        return getattr(self._car_verify_server, name)

    def __repr__(self) -> str:
        return f"guarded({self._car_verify_server!r})"

    async def __aenter__(self) -> Any:
        await self._car_verify_server.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._car_verify_server.__aexit__(*exc)

    async def call_tool(self, tool_name: str, arguments: Any, *args: Any, **kw: Any) -> Any:
        call = _CALL.get()
        if call is None or call.used:
            raise UserError(
                f"refused: a call of MCP tool {tool_name!r} did not come through the policy gate"
            )
        call.used = True
        result = await self._car_verify_server.call_tool(tool_name, call.verdict.sent, *args, **kw)
        if getattr(result, "is_error", None) or getattr(result, "isError", None):
            call.failed = True
        return result


def _handoff_target(handoff: Any) -> Any:
    if isinstance(handoff, Agent):
        return handoff
    if isinstance(handoff, Handoff):
        ref = getattr(handoff, "_agent_ref", None)
        return ref() if callable(ref) else None
    return None


def _handoff_name(handoff: Any) -> str:
    return str(getattr(handoff, "tool_name", "") or getattr(handoff, "name", "") or handoff)


def _params(arguments: str) -> dict[str, Any]:
    """The call's arguments as the rules read them: the JSON object the model wrote;
    anything else (text that is not JSON, a JSON value that is no object) under
    ``_arguments``, as the audit's importers keep it."""
    from ..ir.model import loads_finite

    if not arguments.strip():
        return {}
    try:
        value = loads_finite(arguments)
    except (ValueError, RecursionError):
        return {"_arguments": arguments}
    return value if isinstance(value, dict) else {"_arguments": value}


def _marking(formatter: Any) -> Any:
    """A tool's failure formatter that also marks the tool context as failed."""

    def marked(context: Any, error: Exception) -> Any:
        if isinstance(context, ToolContext):
            setattr(context, _DEFAULT_FAILURE, True)
        return formatter(context, error)

    marked._car_verify_marks = True  # type: ignore[attr-defined]
    return marked


def policy_guardrail(
    policies: Any = None,
    *,
    on_unknown: Decision = UNDECIDED["openai_agents"],
    clock: Callable[[], float] = time.monotonic,
    run_key: Callable[[RunContextWrapper[Any]], Any] | None = None,
    allow_empty: bool = False,
) -> ToolInputGuardrail[Any]:
    """A tool input guardrail that asks the gate about each call (see the module
    docs, and its limits when attached by hand rather than by :func:`guard_agent`).
    ``policies``: a policies directory, loaded policies, a PolicySet or a
    PolicyEngine (its rules; each run gets fresh rate windows)."""
    guard = PolicyGuard(
        policies, on_unknown=on_unknown, clock=clock, run_key=run_key, allow_empty=allow_empty
    )
    return guard.guardrail


def guard_tools(
    tools: Iterable[Any],
    policies: Any = None,
    *,
    on_unknown: Decision = UNDECIDED["openai_agents"],
    ask: Sequence[str] = (),
    clock: Callable[[], float] = time.monotonic,
    run_key: Callable[[RunContextWrapper[Any]], Any] | None = None,
    allow_empty: bool = False,
    allow_unguarded: Iterable[str] = (),
) -> list[Any]:
    """``tools`` with every function tool guarded (changed in place; an agent called
    as a tool is guarded with everything it reaches), in order: one set of rules for
    all of them, one gate per run. A tool the gate cannot guard (a hosted tool) is a
    :class:`UsageError` unless ``allow_unguarded`` names it."""
    guard = PolicyGuard(
        policies,
        on_unknown=on_unknown,
        ask=ask,
        clock=clock,
        run_key=run_key,
        allow_empty=allow_empty,
        allow_unguarded=allow_unguarded,
    )
    return guard.guard_tools(tools)


def guard_agent(
    agent: Any,
    policies: Any = None,
    *,
    on_unknown: Decision = UNDECIDED["openai_agents"],
    ask: Sequence[str] = (),
    clock: Callable[[], float] = time.monotonic,
    run_key: Callable[[RunContextWrapper[Any]], Any] | None = None,
    allow_empty: bool = False,
    allow_unguarded: Iterable[str] = (),
) -> Any:
    """``agent`` guarded, with every agent it reaches (see the module docs): changed
    in place and returned."""
    guard = PolicyGuard(
        policies,
        on_unknown=on_unknown,
        ask=ask,
        clock=clock,
        run_key=run_key,
        allow_empty=allow_empty,
        allow_unguarded=allow_unguarded,
    )
    return guard.guard_agent(agent)
