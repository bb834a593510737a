"""The gate in the OpenAI Agents SDK (``pip install 'car-verify[agents]'``).

::

    from agents import Agent, function_tool
    from car_verify.integrations.openai_agents import guard_tools

    agent = Agent(name="ops", tools=guard_tools([deploy, send_email], policies=".car/policies"))

:func:`guard_tools` gives each function tool of a list

* a **tool input guardrail** (:func:`policy_guardrail`): before the tool runs,
  the run's :class:`~car_verify.plan.gate.CallGate` decides the call from the
  tool's name and its JSON arguments. A call it does not allow is rejected with
  the SDK's ``reject_content`` behaviour: the tool never runs, the model is told
  which rules refused it and why (never a value), and the run goes on. A rule
  that cannot be decided is answered by ``on_unknown``; an error inside the gate
  rejects the call, and every later call of the run (fails closed);
* its **invocation wrapped**: an admitted call runs with exactly the arguments
  the gate checked (its frozen copy, as JSON), not the model's text read a
  second time; its outcome is reported to the gate when it ends: ``failed`` when
  the tool raised, or when the SDK's failure formatter turned its error into the
  model's answer (the default formatter, or one given as
  ``failure_error_function``), else ``succeeded``. Outcomes come from the
  invocation, not from an output guardrail, because only the invocation sees
  whether the tool failed.

**One gate per run.** The gates are kept by the identity of the run's usage
record, held weakly (``ToolContext.usage``), the object the SDK creates once
per ``Runner.run`` and hands to every tool call of that run: trace rules and
rate limits see the run's calls in order, and a run's state goes when the run
does. ``run_key`` keys it by something else (``lambda ctx: ctx.context``: the
context object you pass to ``Runner.run``, to keep one trace across the runs
that share it); it must be an object a weak reference can point to.

Limits: a guardrail attached by hand (``tool.tool_input_guardrails =
[policy_guardrail(...)]``) decides calls but sees no outcome and cannot change
the arguments the SDK sends: ``X only after Y`` then never opens (it fails
closed) and ``... after Y failed`` never fires; use :func:`guard_tools`. A run
resumed from a saved ``RunState`` gets a new usage record, so a new trace,
unless ``run_key`` names an object that outlives it. Hosted tools (web search,
file search, computer use) are not function tools and are not guarded.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from typing import Any

from agents import FunctionTool
from agents.tool_context import ToolContext
from agents.tool_guardrails import (
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
)

from ..plan.gate import UNDECIDED, Decision, Verdict
from ._runs import Rules, Run, RunsByObject, decide, refusal, refused_broken, report

__all__ = ["PolicyGuard", "guard_tools", "policy_guardrail"]

#: The attribute the SDK's default failure formatter sets on a tool context when it
#: turned the tool's error into the answer the model sees.
_DEFAULT_FAILURE = "_function_tool_default_failure_handled"


def _usage_key(context: ToolContext[Any]) -> Any:
    return context.usage


class PolicyGuard:
    """The rules, and a gate per run (see the module docs). :meth:`guardrail` is the
    tool input guardrail; :meth:`guard` attaches it to a function tool and wraps the
    tool's invocation."""

    def __init__(
        self,
        policies: Any,
        *,
        on_unknown: Decision = UNDECIDED["openai_agents"],
        clock: Callable[[], float] = time.monotonic,
        run_key: Callable[[ToolContext[Any]], Any] | None = None,
    ) -> None:
        self.rules = Rules(policies, on_unknown=on_unknown, clock=clock)
        self.run_key = run_key or _usage_key
        self._runs = RunsByObject(self.rules)
        self.guardrail: ToolInputGuardrail[Any] = ToolInputGuardrail(
            guardrail_function=self._check, name="car_verify_policy"
        )

    def run(self, context: ToolContext[Any]) -> Run:
        """The gate of the run this tool call belongs to (made at its first call)."""
        return self._runs.of(self.run_key(context))

    def _verdict(self, context: ToolContext[Any], arguments: str) -> tuple[Run | None, Any]:
        """(the run, the verdict) or (the run or None, the words refusing the call)."""
        try:
            run = self.run(context)
        except Exception as err:  # no run to key it by: refused
            return None, refused_broken(type(err).__name__)
        return run, decide(run, context.tool_name, _params(arguments))

    def _check(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        context = data.context
        run, verdict = self._verdict(context, context.tool_arguments)
        if not isinstance(verdict, Verdict):
            return ToolGuardrailFunctionOutput.reject_content(verdict)
        if not verdict.allowed:
            info = {"decision": verdict.decision, "rules": verdict.rules}
            return ToolGuardrailFunctionOutput.reject_content(refusal(verdict), output_info=info)
        assert run is not None
        with run.lock:
            run.admitted[context.tool_call_id] = (context.tool_name, verdict)
        return ToolGuardrailFunctionOutput.allow(output_info={"decision": "allow"})

    def guard(self, tool: FunctionTool) -> FunctionTool:
        """Attach the guardrail to ``tool`` (first, before its own) and wrap its
        invocation; the tool is changed in place and returned."""
        guardrails = list(tool.tool_input_guardrails or [])
        if self.guardrail not in guardrails:
            tool.tool_input_guardrails = [self.guardrail, *guardrails]
        if getattr(tool.on_invoke_tool, "_car_verify_guard", None) is self:
            return tool
        invoke = tool.on_invoke_tool
        formatter = getattr(tool, "_failure_error_function", None)
        if formatter is not None and not getattr(formatter, "_car_verify_marks", False):
            tool._failure_error_function = _marking(formatter)

        async def guarded(context: ToolContext[Any], arguments: str) -> Any:
            run, verdict = self._admitted(context, arguments)
            if not isinstance(verdict, Verdict):
                return verdict  # refused here: the guardrail did not run for this call
            if not verdict.allowed:
                return refusal(verdict)
            assert run is not None
            name = context.tool_name
            setattr(context, _DEFAULT_FAILURE, False)
            try:
                result = await invoke(context, json.dumps(verdict.sent))
            except BaseException:
                report(run, name, verdict.sent, "failed")
                raise
            failed = bool(getattr(context, _DEFAULT_FAILURE, False))
            report(run, name, verdict.sent, "failed" if failed else "succeeded")
            return result

        guarded._car_verify_guard = self  # type: ignore[attr-defined]
        tool.on_invoke_tool = guarded
        return tool

    def _admitted(self, context: ToolContext[Any], arguments: str) -> tuple[Run | None, Any]:
        """The verdict the guardrail gave this call; decided now when it gave none
        (the guardrail was removed from the tool, or the call came another way)."""
        try:
            run = self.run(context)
        except Exception as err:
            return None, refused_broken(type(err).__name__)
        with run.lock:
            found = run.admitted.pop(context.tool_call_id, None)
        if found is not None and found[0] == context.tool_name:
            return run, found[1]
        return self._verdict(context, arguments)


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
    run_key: Callable[[ToolContext[Any]], Any] | None = None,
) -> ToolInputGuardrail[Any]:
    """A tool input guardrail that asks the gate about each call (see the module
    docs, and its limits when attached by hand rather than by :func:`guard_tools`).
    ``policies``: a policies directory, loaded policies, a PolicySet or a
    PolicyEngine (its rules; each run gets fresh rate windows)."""
    return PolicyGuard(policies, on_unknown=on_unknown, clock=clock, run_key=run_key).guardrail


def guard_tools(
    tools: Iterable[Any],
    policies: Any = None,
    *,
    on_unknown: Decision = UNDECIDED["openai_agents"],
    clock: Callable[[], float] = time.monotonic,
    run_key: Callable[[ToolContext[Any]], Any] | None = None,
) -> list[Any]:
    """``tools`` with every function tool guarded (changed in place), the others as
    they are, in order: one set of rules for all of them, one gate per run."""
    guard = PolicyGuard(policies, on_unknown=on_unknown, clock=clock, run_key=run_key)
    return [guard.guard(t) if isinstance(t, FunctionTool) else t for t in tools]
