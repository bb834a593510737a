"""The gate in LangChain 1.x agents and LangGraph graphs (``pip install
'car-verify[langchain]'``).

::

    from langchain.agents import create_agent
    from car_verify.integrations.langchain import PolicyMiddleware

    agent = create_agent(model, tools, middleware=[PolicyMiddleware(policies=".car/policies")])

    # a hand-built graph, or create_react_agent(model, tools=node):
    policy = PolicyMiddleware(policies=".car/policies")
    node = ToolNode(tools, wrap_tool_call=policy.wrap_tool_call,
                    awrap_tool_call=policy.awrap_tool_call)

:class:`PolicyMiddleware` wraps each tool call (``wrap_tool_call``, and
``awrap_tool_call`` for ``ainvoke``/``astream``). It does not decide there: it
hands the calls below it a **checked tool** (``request.tool`` replaced), so the
check runs last, right before the tool runs: every retry (``ToolRetryMiddleware``)
and every request another middleware rewrites is decided again, on the arguments
the tool will get, and a tool a middleware below puts in the request
(``request.override(tool=...)``: the request it is handed keeps any tool set in
it checked) is the one checked. A middleware below that builds a new
``ToolCallRequest`` itself, instead of from the one it was given, hands the node
a tool this middleware never saw, which runs unchecked: list the middleware last
(innermost). Then

* the run's :class:`~car_verify.plan.gate.CallGate` decides the call from the
  tool's name and arguments (the model's: arguments LangGraph injects, such as
  the state or the runtime, are not the model's and are not read). A call it
  does not allow never reaches the tool: the caller gets a ``ToolMessage`` with
  ``status="error"`` naming the rules that refused it and why (never a value),
  and the agent goes on. A rule that cannot be decided is answered by
  ``on_unknown``; an error inside the gate refuses the call, and every later
  call of the run (fails closed);
* a call answered ``ask`` (``on_unknown="ask"``, or ``ask=[rule-name
  prefixes]``) is put to a person with LangGraph's ``interrupt``: resume with
  ``Command(resume=True)`` (or ``{"type": "approve"}``) to run it, anything else
  refuses it. Pausing needs a checkpointer; without one the call is refused;
* an admitted call runs with exactly the arguments the gate checked, and its
  outcome is reported: ``failed`` when the tool raised, or returned a
  ``ToolMessage`` with ``status="error"``; else ``succeeded``.

The calls of one model turn run at once, in threads or tasks in any order: the
middleware decides them in the order the model wrote them, all before any runs
(at the first of them to arrive), as the Agents SDK does, so that a trace rule's
verdict on a turn never depends on which thread came first. A verdict belongs to
its turn: a call that never took it (a middleware above answered it) leaves it to
no later call with the same id.

**One gate per run.** Without a checkpointer, a run is one invocation of the
outermost graph (``invoke``, ``stream`` and their async forms), with everything
inside it: parallel tool calls, nested graphs (subgraph nodes), and agents or
graphs invoked from inside a tool. They are one run by LangGraph's run-scoped
``Runtime.control``, which the outermost invocation makes and everything inside
it shares; a run's gate is freed when the run has ended (at the latest when the
next run starts). With a checkpointer, a run is a **thread** (``thread_id``):
every invocation of the thread, a resume after an ``interrupt`` included,
continues one trace. A ``create_agent`` graph keeps the thread's gate state in
the thread's own state (a private key, ``car_verify_gate``, written with each
tool call's result, in one update with its ``ToolMessage``, and before each model
call and at the end), so the gate is freed between invocations and taken
up again from the checkpoint at the thread's next tool call, in this process or
another; a thread whose last invocation failed or paused keeps its gate in
memory until it is invoked again.
A hand-built graph, or an agent nested in another graph, keeps its threads'
gates in memory while the checkpointer object lives. The gates are kept for
every middleware object of the process: two agents with the same rules in one
run share its gate; with other rules, a run refuses their calls.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState
    from langchain.agents.middleware.types import PrivateStateAttr
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import BaseTool
    from langgraph.errors import GraphBubbleUp
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.types import Command
    from pydantic import ConfigDict
except ImportError as err:  # the extra is not installed: say how to install it
    raise ImportError(
        f"car_verify.integrations.langchain needs LangChain 1.x ({err}): "
        "pip install 'car-verify[langchain]'",
        name=err.name,
    ) from err

from ..plan.gate import UNDECIDED, Decision, Verdict
from ._runs import (
    ACTIVE,
    RUNS,
    Rules,
    Run,
    active,
    decide,
    refusal,
    refused_broken,
    report,
)

__all__ = ["PolicyMiddleware", "PolicyState"]

#: The state key that holds a thread's gate state between invocations.
GATE_KEY = "car_verify_gate"


def _later_gate(current: Any, update: Any) -> Any:
    """The state key's reducer: of two gate states written in one step (the calls
    of a turn each write theirs with their result), the later (the higher ``seq``:
    they are snapshots of one gate); an empty value is no state."""
    if not update:
        return current
    if not isinstance(current, Mapping) or not current:
        return update
    try:
        return current if int(current["seq"]) > int(update["seq"]) else update
    except (KeyError, TypeError, ValueError):
        return update  # not a snapshot: restoring it refuses the thread's calls


class PolicyState(AgentState[Any]):
    """The agent state with the thread's gate state, private to the middleware."""

    car_verify_gate: NotRequired[Annotated[dict[str, Any], PrivateStateAttr, _later_gate]]


class PolicyMiddleware(AgentMiddleware[PolicyState, Any]):
    """Each tool call through the gate (see the module docs). ``policies``: a
    policies directory, loaded policies, a PolicySet or a PolicyEngine (its rules;
    each run gets fresh rate windows); a rule set that would check nothing is
    refused unless ``allow_empty=True``. ``on_unknown``: the answer to a rule that
    cannot be decided; ``ask``: rule-name prefixes whose objections put the call to
    a person; ``clock``: the rate windows' clock."""

    state_schema = PolicyState

    def __init__(
        self,
        policies: Any = None,
        *,
        on_unknown: Decision = UNDECIDED["langchain"],
        ask: Sequence[str] = (),
        clock: Callable[[], float] = time.monotonic,
        allow_empty: bool = False,
    ) -> None:
        super().__init__()
        self.rules = Rules(
            policies, on_unknown=on_unknown, ask=ask, clock=clock, allow_empty=allow_empty
        )

    @property
    def name(self) -> str:
        return "CarVerifyPolicy"

    # --- the run ---------------------------------------------------------------------------------

    def run(self, state: Any = None) -> Run:
        """The gate of the run this call belongs to (see the module docs): the run of
        the guarded tool running now, if any, else the thread's (taken up from the
        state's saved gate when this process holds none), else the invocation's."""
        found = ACTIVE.get()
        if found is not None:
            return found
        where = _where()
        if where.thread is not None:
            return RUNS_IN_GRAPHS.thread(where, self.rules, _saved(state))
        if where.control is not None:
            return RUNS_IN_GRAPHS.invocation(where.control, self.rules)
        if where.writer is not None:  # a LangGraph without Runtime.control
            return RUNS.of(where.writer, self.rules)
        raise RuntimeError("outside a LangGraph run: no run to key the gate by")

    def _run_or_refusal(self, state: Any) -> Run | str:
        try:
            return self.run(state)
        except Exception as err:
            return refused_broken(type(err).__name__)

    def before_model(self, state: PolicyState, runtime: Any) -> dict[str, Any] | None:
        return self._save(state, end=False)

    async def abefore_model(self, state: PolicyState, runtime: Any) -> dict[str, Any] | None:
        return self._save(state, end=False)

    def after_agent(self, state: PolicyState, runtime: Any) -> dict[str, Any] | None:
        return self._save(state, end=True)

    async def aafter_agent(self, state: PolicyState, runtime: Any) -> dict[str, Any] | None:
        return self._save(state, end=True)

    def _save(self, state: Any, *, end: bool) -> dict[str, Any] | None:
        """A thread's gate state, into the thread's state (when it changed). At the
        end of the outermost agent the gate is freed: the state holds it now; an
        invocation with no thread frees its gate then too."""
        if ACTIVE.get() is not None:
            return None  # an agent run inside a tool: the calling run keeps the gate
        where = _where()
        if where.thread is None and not (end and where.outermost):
            return None
        run = self._run_or_refusal(state)
        if isinstance(run, str):
            return None
        update = None
        if where.thread is not None and run.rules == self.rules.key:
            # written when it differs from the state's (a tool's own value under the
            # key never reaches the state: _with_gate replaces it with the gate's)
            snapshot = self.rules.snapshot(run)
            if _saved(state) != snapshot:
                update = {GATE_KEY: snapshot}
        if end and where.outermost:
            RUNS_IN_GRAPHS.release(where, run)
        return update

    # --- each tool call --------------------------------------------------------------------------

    def _checked(self, request: Any) -> Any:
        """The request with its tool replaced by the checked tool of its run, as a
        request that keeps whatever tool a middleware below puts in it checked
        (``request.override(tool=...)``, LangChain's dynamic tools: the tool that
        runs is the one checked, and a request with no tool may be given one)."""
        if isinstance(request, _CheckedRequest) and request.checker.middleware.rules.key == (
            self.rules.key
        ):
            return request, None  # checked above (another middleware with these rules)
        run = self._run_or_refusal(request.state)
        if isinstance(run, str):
            return None, _refused(request.tool_call, run)
        self._decide_turn(run, request)
        checker = _Checker(self, run)
        fields = {name: getattr(request, name) for name in _REQUEST_FIELDS}
        return _CheckedRequest(**fields, checker=checker), None

    def _checked_tool(self, run: Run, tool: Any) -> Any:
        """``tool`` behind the gate of ``run`` (one checked tool a tool and run)."""
        if not isinstance(tool, BaseTool):
            return tool  # None (no tool: the node answers), or not a tool the node runs
        if isinstance(tool, _Checked) and tool.checker.middleware.rules.key == self.rules.key:
            return tool
        with run.lock:
            found = run.tools.get(id(tool))
            if not isinstance(found, _Checked) or found.inner is not tool:
                found = run.tools[id(tool)] = _Checked.model_construct(
                    name=tool.name,
                    description=tool.description,
                    args_schema=tool.args_schema,
                    return_direct=tool.return_direct,
                    response_format=tool.response_format,
                    inner=tool,
                    checker=_Checker(self, run),
                )
        return found

    def _decide_turn(self, run: Run, request: Any) -> None:
        """Decide every call of this call's model turn, in the order the model wrote
        them, before any of them runs (once a turn): the turn's calls run at once, in
        threads or tasks in any order, and a trace rule must not depend on which came
        first. Each call then takes its verdict when it runs (an attempt that differs
        from the call the model wrote, a retry, is decided then). A verdict belongs to
        its turn: a call no one ran (a middleware above answered it) leaves one that
        no later turn can take, and the verdicts of a graph's earlier steps are
        dropped as a later step's calls arrive."""
        key, turn, messages = _turn_of(request)
        if key is None:
            return
        namespace, step = key[0], key[1]
        if isinstance(step, int):
            run.drop_pending(
                lambda t: (
                    isinstance(t, tuple)
                    and t[0] == namespace
                    and isinstance(t[1], int)
                    and t[1] < step
                )
            )
        if len(turn) < 2:
            return
        tools = {t.name: t for t in (getattr(request.runtime, "tools", None) or [])}
        if request.tool is not None:
            tools[request.tool.name] = request.tool
        answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
        with run.lock:
            if key in run.turns:
                return
            run.turns.add(key)
            for call in turn:
                ident, name = call.get("id"), str(call.get("name", ""))
                tool = tools.get(name)
                if not ident or ident in answered or run.has_pending(str(ident), key):
                    continue  # done before, or waiting on a person
                if tool is None:
                    continue  # not a tool here
                args = call.get("args")
                args = args if isinstance(args, dict) else {"_arguments": args}
                injected = _injected(tool)
                params = {k: v for k, v in args.items() if k not in injected}
                run.put_pending(str(ident), name, decide(run, self.rules, name, params), key)

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        checked, refused = self._checked(request)
        if refused is not None:
            return refused
        token = _TURN.set(_turn_of(request)[0])
        try:
            result = handler(checked)
        finally:
            _TURN.reset(token)
        return self._with_gate(checked, result)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        checked, refused = self._checked(request)
        if refused is not None:
            return refused
        token = _TURN.set(_turn_of(request)[0])
        try:
            result = await handler(checked)
        finally:
            _TURN.reset(token)
        return self._with_gate(checked, result)

    def _with_gate(self, request: Any, result: Any) -> Any:
        """The call's result with the thread's gate state beside it, in one update
        (a ``Command``), so that the checkpoint holding the call's result holds the
        gate's record of the call: a thread taken up from it (another process, or
        after an invocation that stopped before the next model call) cannot forget
        the call. Only where the state has the key (a ``create_agent`` thread)."""
        checker = getattr(request, "checker", None)
        state = request.state
        if (
            checker is None
            or checker.middleware is not self
            or ACTIVE.get() is not None
            or not isinstance(state, Mapping)
            or GATE_KEY not in state
            or _where().thread is None
            or checker.run.rules != self.rules.key
        ):
            return result
        snapshot = self.rules.snapshot(checker.run)
        if isinstance(result, ToolMessage):
            return Command(update={"messages": [result], GATE_KEY: snapshot})
        if isinstance(result, Command) and result.graph is None:
            update = result.update
            if isinstance(update, dict):  # the tool's own value under the key is replaced
                return dataclasses.replace(result, update={**update, GATE_KEY: snapshot})
            if isinstance(update, (list, tuple)):  # (key, value) pairs
                pairs = [p for p in update if not (isinstance(p, tuple) and p[:1] == (GATE_KEY,))]
                return dataclasses.replace(result, update=[*pairs, (GATE_KEY, snapshot)])
        return result  # a Command to the parent graph: the next model call saves the state


@dataclass(slots=True)
class _Checker:
    """The gate of one run in front of a tool: decides each execution of the tool,
    sends it what was checked, reports its outcome."""

    middleware: PolicyMiddleware
    run: Run

    def before(self, inner: BaseTool, given: Any) -> tuple[Any, Any]:
        """(the input to send, the verdict) or (None, the refusing ToolMessage)."""
        call, args, call_id = _call_of(given)
        injected = _injected(inner)
        params = {k: v for k, v in args.items() if k not in injected}
        kept = {k: v for k, v in args.items() if k in injected}
        name = inner.name
        rules = self.middleware.rules
        turn = _TURN.get()
        verdict = None
        if call_id and turn is not None:  # no turn known: decided now
            verdict = self.run.take_pending(call_id, name, params, turn)
        if verdict is None:
            verdict = decide(self.run, rules, name, params)
        if not isinstance(verdict, Verdict):
            return None, _refused(call, verdict)
        if verdict.decision == "ask":
            if not _paused_can_resume():
                return None, _refused(call, refusal(verdict, person="unreachable"))
            if call_id and turn is not None:
                self.run.put_pending(call_id, name, verdict, turn)
            from langgraph.types import interrupt

            answer = interrupt(
                {"car_verify": {"tool": name, "rules": verdict.rules, "reason": verdict.reason()}}
            )
            if call_id and turn is not None:
                self.run.take_pending(call_id, name, params, turn)
            if not _approved(answer):
                return None, _refused(call, refusal(verdict, person="rejected"))
        elif not verdict.allowed:
            return None, _refused(call, refusal(verdict))
        sent = {**verdict.sent, **kept}
        return ({**call, "args": sent} if call is not None else sent), verdict

    def paused(self, call_id: str | None, name: str, verdict: Verdict) -> None:
        """The tool paused (an interrupt inside it): it runs again when resumed, with
        the verdict it was given."""
        turn = _TURN.get()
        if call_id and turn is not None:
            self.run.put_pending(call_id, name, verdict, turn)

    def after(self, name: str, verdict: Verdict, result: Any) -> None:
        report(self.run, name, verdict.sent, _outcome(result))

    def run_sync(self, inner: BaseTool, given: Any, config: Any, **kw: Any) -> Any:
        sent, verdict = self.before(inner, given)
        if sent is None:
            return verdict
        try:
            with active(self.run):
                result = inner.invoke(sent, config, **kw)
        except GraphBubbleUp:
            self.paused(_call_of(given)[2], inner.name, verdict)
            raise
        except BaseException:
            report(self.run, inner.name, verdict.sent, "failed")
            raise
        self.after(inner.name, verdict, result)
        return result

    async def run_async(self, inner: BaseTool, given: Any, config: Any, **kw: Any) -> Any:
        sent, verdict = self.before(inner, given)
        if sent is None:
            return verdict
        try:
            with active(self.run):
                result = await inner.ainvoke(sent, config, **kw)
        except GraphBubbleUp:
            self.paused(_call_of(given)[2], inner.name, verdict)
            raise
        except BaseException:
            report(self.run, inner.name, verdict.sent, "failed")
            raise
        self.after(inner.name, verdict, result)
        return result


_REQUEST_FIELDS = tuple(f.name for f in dataclasses.fields(ToolCallRequest))


@dataclasses.dataclass
class _CheckedRequest(ToolCallRequest):
    """A tool call request whose tool is always a checked tool of its run: the
    tool it is made with, and any a middleware below puts in its place
    (``override`` and ``dataclasses.replace`` make one of this class; setting
    ``tool`` is checked too), so the tool the node runs is the one checked."""

    checker: Any = dataclasses.field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._check_tool()

    def _check_tool(self) -> None:
        checker = self.checker
        if checker is not None:
            tool = checker.middleware._checked_tool(checker.run, self.tool)
            object.__setattr__(self, "tool", tool)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "checker":  # set once, as the request is made
            object.__setattr__(self, name, value)
            return
        super().__setattr__(name, value)
        if name == "tool" and self.checker is not None:
            self._check_tool()


class _Checked(BaseTool):
    """A tool behind the gate: every execution is decided first (see _Checker)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    inner: BaseTool
    checker: Any

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        # ``BaseTool.run`` (and ``arun``, through it) would call the tool without the
        # gate's decision: refused, never run. ``invoke``/``ainvoke`` are the path.
        raise PermissionError(
            f"car-verify: {self.name} is behind the policy gate: call it through invoke or "
            "ainvoke (run/arun would skip the decision, so they are refused)"
        )

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return self.checker.run_sync(self.inner, input, config, **kwargs)

    async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return await self.checker.run_async(self.inner, input, config, **kwargs)


# --- the runs of graphs ----------------------------------------------------------------------


@dataclass(slots=True)
class _Where:
    """Where a call runs: its thread (a checkpointer's), the run-scoped control of
    the outermost invocation, the invocation level's stream writer (the key when a
    LangGraph has no control), the checkpointer, and whether this is the outermost
    graph."""

    thread: str | None = None
    control: Any = None
    writer: Any = None
    saver: Any = None
    outermost: bool = False


def _where() -> _Where:
    try:
        from langgraph.config import get_config
        from langgraph.runtime import get_runtime

        config = get_config()
        runtime = get_runtime()
    except Exception:  # outside a graph
        return _Where()
    configurable = config.get("configurable") or {}
    info = getattr(runtime, "execution_info", None)
    thread = getattr(info, "thread_id", None) or configurable.get("thread_id")
    namespace = str(getattr(info, "checkpoint_ns", None) or configurable.get("checkpoint_ns", ""))
    return _Where(
        thread=None if thread is None else str(thread),
        control=getattr(runtime, "control", None),
        writer=getattr(runtime, "stream_writer", None),
        saver=configurable.get("__pregel_checkpointer"),
        outermost="|" not in namespace,
    )


#: The model turn of the call whose request this middleware is handling now (see
#: :func:`_turn_of`), for the checked tool below it: the verdicts given to a turn's
#: calls are taken by calls of that turn only.
_TURN: ContextVar[tuple[Any, ...] | None] = ContextVar("car_verify_lc_turn", default=None)


def _turn_of(request: Any) -> tuple[tuple[Any, ...] | None, list[Any], list[Any]]:
    """(the key of the call's model turn, the turn's calls, the state's messages).
    The key names the turn as it is written in the graph: the graph (checkpoint
    namespace) and its step, the model message's place and id, and its call ids
    (a model may write the same call ids again in a later turn). When the state
    holds no model message with the call, the graph, its step and the call's id;
    ``None`` outside a graph step."""
    call_id = request.tool_call.get("id")
    messages = _saved_messages(request.state)
    step, namespace = _step()
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage) and any(
            c.get("id") == call_id for c in message.tool_calls
        ):
            ids = tuple(str(c.get("id")) for c in message.tool_calls)
            return (namespace, step, index, message.id, ids), list(message.tool_calls), messages
    if step is None:
        return None, [], messages
    return (namespace, step, None, None, (str(call_id),)), [], messages


def _step() -> tuple[int | None, str]:
    """The graph step running now and the namespace of its graph (None, '' outside)."""
    try:
        from langgraph.config import get_config

        config = get_config()
    except Exception:  # outside a graph
        return None, ""
    meta = config.get("metadata") or {}
    configurable = config.get("configurable") or {}
    step = meta.get("langgraph_step")
    namespace = str(meta.get("langgraph_checkpoint_ns") or configurable.get("checkpoint_ns", ""))
    # the graph, not the task: each call of a turn is a task of its own ("tools:<id>")
    *outer, task = namespace.split("|")
    return (step if isinstance(step, int) else None), "|".join([*outer, task.split(":")[0]])


def _paused_can_resume() -> bool:
    """Whether an interrupt here can be resumed: the graph has a checkpointer."""
    return _where().thread is not None


def _saved_messages(state: Any) -> list[Any]:
    found = state.get("messages") if isinstance(state, dict) else getattr(state, "messages", None)
    if isinstance(state, list):
        found = state
    return list(found) if isinstance(found, list) else []


def _saved(state: Any) -> Any:
    """The thread's saved gate state, or None (an empty value, the key's start, is none)."""
    found = state.get(GATE_KEY) if isinstance(state, dict) else getattr(state, GATE_KEY, None)
    return found if found or not isinstance(found, Mapping) else None


@dataclass(slots=True)
class _Invocation:
    control: Any
    run: Run


@dataclass(slots=True)
class _Thread:
    run: Run
    saver: weakref.ref[Any] | None = None


class _GraphRuns:
    """The runs of graphs, for every middleware of the process.

    An invocation's run is keyed by its ``Runtime.control`` (held here while the
    run lasts, so its identity cannot pass to another object) and freed once the
    graph's own objects no longer hold that control: the run has ended, whichever
    way. A thread's run is kept until the outermost agent saved it into the
    thread's state (then freed), or, where nothing saves it, while the
    checkpointer object lives."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._invocations: dict[int, _Invocation] = {}
        self._threads: dict[tuple[int, str], _Thread] = {}

    def held(self) -> int:
        """How many gates are held (after dropping those of ended runs)."""
        with self._lock:
            self._sweep()
            return len(self._invocations) + len(self._threads)

    def invocation(self, control: Any, rules: Rules) -> Run:
        with self._lock:
            found = self._invocations.get(id(control))
            if found is not None and found.control is control:
                return found.run
            self._sweep()
            run = rules.new_run()
            self._invocations[id(control)] = _Invocation(control, run)
            return run

    def thread(self, where: _Where, rules: Rules, saved: Any) -> Run:
        key = self._thread_key(where)
        with self._lock:
            found = self._threads.get(key)
            if found is not None:
                return found.run
            self._sweep()
            run = rules.restore(saved) if saved is not None else rules.new_run()
            saver = None
            if where.saver is not None:
                try:
                    saver = weakref.ref(where.saver, lambda _: self._drop_saver(key[0]))
                except TypeError:  # a checkpointer that cannot be weakly held: kept
                    saver = None
            self._threads[key] = _Thread(run, saver)
            return run

    def release(self, where: _Where, run: Run) -> None:
        """The outermost agent ended: a thread saved into its state, or an invocation,
        needs no gate held here."""
        with self._lock:
            if where.thread is not None:
                key = self._thread_key(where)
                found = self._threads.get(key)
                if found is not None and found.run is run and run.seq == run.saved:
                    del self._threads[key]
            elif where.control is not None:
                found_run = self._invocations.get(id(where.control))
                if found_run is not None and found_run.run is run:
                    del self._invocations[id(where.control)]

    @staticmethod
    def _thread_key(where: _Where) -> tuple[int, str]:
        assert where.thread is not None
        return (0 if where.saver is None else id(where.saver), where.thread)

    def _drop_saver(self, ident: int) -> None:
        with self._lock:
            for key in [k for k, t in self._threads.items() if k[0] == ident]:
                found = self._threads[key]
                if found.saver is not None and found.saver() is None:
                    del self._threads[key]

    def _sweep(self) -> None:
        """Drop the runs whose control nothing but this registry holds."""
        for ident in [i for i, held in self._invocations.items() if not _in_use(held)]:
            del self._invocations[ident]


def _references(held: _Invocation) -> int:
    return sys.getrefcount(held.control)


#: The references to a control that only this registry holds (measured, not assumed).
_UNUSED = _references(_Invocation(object(), None))  # type: ignore[arg-type]


def _in_use(held: _Invocation) -> bool:
    """Whether anything but the registry still holds the run's control (the graph's
    runtime objects, while the run lasts)."""
    return _references(held) > _UNUSED


RUNS_IN_GRAPHS = _GraphRuns()


# --- calls and results ----------------------------------------------------------------------------


def _call_of(given: Any) -> tuple[dict[str, Any] | None, dict[str, Any], str | None]:
    """(the tool call, its arguments, its id) of what a tool is invoked with: a
    ToolCall (``{"type": "tool_call", ...}``), or the arguments themselves."""
    if isinstance(given, dict) and given.get("type") == "tool_call":
        args = given.get("args")
        call_id = given.get("id")
        return (
            given,
            args if isinstance(args, dict) else {"_arguments": args},
            None if call_id is None else str(call_id),
        )
    if isinstance(given, dict):
        return None, given, None
    return None, {"_arguments": given}, None


_INJECTED: dict[int, tuple[weakref.ref[BaseTool], frozenset[str]]] = {}


def _injected(tool: BaseTool) -> frozenset[str]:
    """The arguments LangGraph gives the tool, not the model (state, store, runtime):
    those of its input schema that the model's schema leaves out (read once a tool)."""
    found = _INJECTED.get(id(tool))
    if found is not None and found[0]() is tool:
        return found[1]
    names = _injected_names(tool)
    ident = id(tool)
    with contextlib.suppress(TypeError):  # a tool that cannot be weakly held: read each time
        _INJECTED[ident] = (weakref.ref(tool, lambda _: _INJECTED.pop(ident, None)), names)
    return names


def _injected_names(tool: BaseTool) -> frozenset[str]:
    try:
        model = tool.tool_call_schema
        if isinstance(model, dict):
            return frozenset()
        full: Any = tool.get_input_schema()
        given: Any = model
        return frozenset(full.model_fields) - frozenset(given.model_fields)
    except Exception:  # no schema to read: every argument is the model's
        return frozenset()


def _approved(answer: Any) -> bool:
    """Whether a person's answer to an interrupt approves the call."""
    if answer is True:
        return True
    if isinstance(answer, str):
        return answer.strip().lower() in ("approve", "approved", "yes")
    if isinstance(answer, dict):
        return answer.get("type") == "approve" or answer.get("approve") is True
    return False


def _outcome(result: Any) -> Any:
    messages: list[Any] = [result]
    if isinstance(result, Command) and isinstance(result.update, dict):
        messages = list(result.update.get("messages") or [])
    failed = any(isinstance(m, ToolMessage) and m.status == "error" for m in messages)
    return "failed" if failed else "succeeded"


def _refused(call: Any, message: str) -> ToolMessage:
    call = call or {}
    return ToolMessage(
        content=message,
        tool_call_id=str(call.get("id") or ""),
        name=str(call.get("name", "")),
        status="error",
    )
