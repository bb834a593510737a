"""A lightweight executor that runs a proposal behind the same passes that verify it.

* **Admission**: the verify passes run first. Findings certain to break the run
  (unknown tool, parameter schema, cycle, duplicate id, budget, ...) reject the
  whole proposal before anything runs; the walk's precondition and dependency
  findings are advisory, as upstream, unless the caller makes them blocking.
* **Execution**: the one walk (:func:`car_verify.semantics.walk.turns`) driven
  with live calls, turn by turn in the levels verify computes: under ``strict`` a
  whole level at once, concurrently, on the state as the level began; under
  ``car`` one action at a time, seeing those before it. Before each dispatch: the
  live preconditions and dependencies the walk judged at that turn, every policy,
  and the trace rules (:class:`~car_verify.rules.trace.TraceGate`). Then
  ``$id.output[.path]`` interpolation, the tool's rate limit and result cache,
  ``timeout_ms``, retries, ``returns`` validation. What succeeded lands as the
  walk lands it (after the level, in proposal order, under ``strict``), as
  :func:`car_verify.simulate` does, and is recorded as ``state_changes``.
* **Rollback**: on abort the state map is restored to what it was before the
  proposal and the declared compensations of the succeeded compensable actions
  run in reverse completion order; the report says what was compensated, what
  failed to compensate, and which irreversible actions had already reached the world.

Tools are Python callables, sync (run in a worker thread) or async, given as a
mapping ``name -> callable(params)`` or as one dispatch callable
``(tool, params) -> result``. A detached tool (``invocation_mode`` ``streaming`` /
``long_running``) returns an iterator or async iterator of chunks; dispatch
starts it and returns ``{"tool_handle": {"id": ...}, "status": "running"}``;
:meth:`Executor.poll` drains chunks, :meth:`Executor.cancel` cancels cooperatively.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import inspect
import json
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from .api import ProposalLike, VerificationResult, _state, verify_context
from .base.codes import BLOCKING
from .base.display import HtmlDisplay
from .base.errors import UsageError, deep_values_are_input_errors
from .base.events import EventLog
from .base.findings import Severity
from .base.values import canonical, copy_json, format_predicate
from .ir.model import (
    Action,
    ActionProposal,
    ActionRefCompensation,
    ActionResult,
    ActionStatus,
    CostSummary,
    FailureBehavior,
    PolicyViolation,
    ProposalResult,
    Reversibility,
    ToolCompensation,
    ToolHandle,
    ToolInvocationMode,
    ToolPollResult,
    ToolSchema,
    ToolStatus,
    chunk_from_dict,
    load,
)
from .passes import Context, Options
from .rules.tools import ToolRegistry
from .semantics.walk import Cause, Outcome, turns

if TYPE_CHECKING:
    from .semantics import ProfileLike

__all__ = [
    "DEFAULT_BLOCKING",
    "RESULT_SHAPES",
    "CostBudget",
    "ExecutionResult",
    "Executor",
    "Gate",
    "ResultShape",
    "RollbackReport",
    "TerminalToolError",
    "ToolError",
    "execute",
    "execute_sync",
]

#: Admission findings that reject the whole proposal by default: the code table's
#: blocking codes, and the cost budget's own check.
DEFAULT_BLOCKING = BLOCKING | {"budget-exceeded"}

_T = TypeVar("_T")

#: The causes that reject an action for a dependency that did not succeed.
_DEPENDENCY = ("blocked-dependency", "failed-dependency")

_REF = re.compile(r"\$([^.]+)\.output(?:\.(.+))?")


class ToolError(Exception):
    """Raised by a tool (or by the executor for it) to fail an action with a message."""


@dataclass(frozen=True, slots=True)
class Gate:
    """Which admission codes reject the proposal (add walk codes to make them blocking)."""

    blocking: frozenset[str] = DEFAULT_BLOCKING

    def also(self, *codes: str) -> Gate:
        return Gate(self.blocking | set(codes))


@dataclass(frozen=True, slots=True)
class CostBudget:
    """Hard limits: checked at admission when decidable, enforced at run time otherwise."""

    max_actions: int | None = None
    max_tool_calls: int | None = None
    max_duration_ms: float | None = None


@dataclass(slots=True)
class RollbackReport:
    restored_state: dict[str, Any]
    compensated: list[str] = field(default_factory=list)
    failed_to_compensate: list[dict[str, str]] = field(default_factory=list)
    irreversible_reached: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "restored_state": self.restored_state,
            "compensated": list(self.compensated),
            "failed_to_compensate": list(self.failed_to_compensate),
            "irreversible_reached": list(self.irreversible_reached),
        }


@dataclass(slots=True)
class ExecutionResult(HtmlDisplay):
    """The ProposalResult (``result``, the wire object) plus what a caller needs to act on."""

    result: ProposalResult
    state: dict[str, Any]
    admission: VerificationResult
    rejected_by: list[str] = field(default_factory=list)
    violations: list[PolicyViolation] = field(default_factory=list)
    aborted_by: str | None = None
    rollback: RollbackReport | None = None
    executor: Executor | None = field(default=None, repr=False)

    @property
    def log_error(self) -> str | None:
        """Why the event log is incomplete (a write failed part-way), or None."""
        log = None if self.executor is None else self.executor.log
        if log is None or log.complete:
            return None
        return f"the event log is incomplete: {log.error} ({log.lost} events not written)"

    @property
    def statuses(self) -> dict[str, str]:
        return {r.action_id: r.status.value for r in self.result.results}

    @property
    def shown_statuses(self) -> dict[str, str]:
        """The statuses as a person reads them after a rollback: a succeeded action
        whose compensation ran is ``compensated`` (the wire status stays ``succeeded``,
        the spec's ActionStatus has no such value)."""
        undone = set(self.rollback.compensated) if self.rollback is not None else set()
        return {a: ("compensated" if a in undone else s) for a, s in self.statuses.items()}

    def to_dict(self) -> dict[str, Any]:
        return self.result.to_dict()

    def report(self) -> dict[str, Any]:
        """The result with the admission reasons, violations, abort cause and rollback."""
        return {
            **self.result.to_dict(),
            "state": self.state,
            "rejected_by": list(self.rejected_by),
            "violations": [v.to_dict() for v in self.violations],
            "aborted_by": self.aborted_by,
            "rollback": None if self.rollback is None else self.rollback.to_dict(),
            "statuses": self.shown_statuses,
            "log_error": self.log_error,
            "profile": self.admission.profile.value,
        }


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


class _Tools:
    """Resolves tool names to callables and calls them (sync ones off the event loop)."""

    def __init__(self, tools: Any) -> None:
        if isinstance(tools, Mapping):
            self.mapping: dict[str, Callable[..., Any]] | None = dict(tools)
            self.dispatch: Callable[..., Any] | None = None
        elif callable(tools):
            self.mapping, self.dispatch = None, tools
        else:
            raise UsageError(
                "tools must be a mapping of name -> callable, or one dispatch callable"
            )

        self._async: dict[int, bool] = {}

    def names(self) -> list[str] | None:
        return None if self.mapping is None else list(self.mapping)

    def has(self, name: str) -> bool:
        return self.mapping is None or name in self.mapping

    async def call(self, name: str, params: dict[str, Any], *, bounded: bool = False) -> Any:
        """Call a tool. A sync tool runs on a worker thread of its own that is never
        waited for past the caller's deadline; so does an async one when ``bounded``
        (it has a timeout), on a loop of its own, so that blocking without awaiting
        cannot stall the run. Whatever a tool raises, ``StopIteration``,
        ``SystemExit``, ``KeyboardInterrupt`` and a stray ``CancelledError``
        included, comes back as a :class:`ToolError`."""
        if self.mapping is not None:
            fn = self.mapping[name]
            args: tuple[Any, ...] = (params,)
        else:
            assert self.dispatch is not None
            fn, args = self.dispatch, (name, params)
        is_async = self._async.get(id(fn))
        if is_async is None:
            is_async = self._async[id(fn)] = inspect.iscoroutinefunction(fn)
        if is_async and not bounded:
            try:
                return await fn(*args)
            except asyncio.CancelledError:
                if _being_cancelled():
                    raise
                raise ToolError(f"tool {name!r} raised CancelledError") from None
            except (SystemExit, KeyboardInterrupt, StopIteration, GeneratorExit) as err:
                raise ToolError(f"tool {name!r} raised {type(err).__name__}") from None
        if is_async:
            return await _abandonable(name, lambda: asyncio.run(fn(*args)))
        result = await _abandonable(name, lambda: fn(*args))
        if inspect.isawaitable(result):
            return await result
        return result


def _being_cancelled() -> bool:
    """Whether the running task itself is being cancelled (not merely handed a
    CancelledError by a tool)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def _abandonable(name: str, work: Callable[[], Any]) -> Any:
    """Run ``work`` on a daemon thread and wait for its answer. A caller that stops
    waiting (a timeout, a cancel) abandons the thread: its answer, when it comes, is
    dropped, and the process can still exit (docs/executor.md)."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if answer.done():  # abandoned: nobody waits for it any more
            return
        if error is None:
            answer.set_result(value)
        else:
            answer.set_exception(error)

    def run() -> None:
        try:
            value, error = work(), None
        except BaseException as err:  # every fault of a tool is the tool's result
            value = None
            error = (
                err
                if isinstance(err, Exception) and not isinstance(err, StopIteration)
                else ToolError(f"tool {name!r} raised {type(err).__name__}")
            )
        with contextlib.suppress(RuntimeError):  # the run is over and its loop closed
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=run, name=f"car-verify tool {name}", daemon=True).start()
    return await answer


class _RateLimiter:
    """A tool's ``rate_limit``: wait for a free slot in the sliding window."""

    def __init__(self, max_calls: int, interval_secs: float) -> None:
        self.max_calls, self.interval = max_calls, interval_secs
        self.calls: deque[float] = deque()
        self.lock = asyncio.Lock()

    async def acquire(self) -> None:
        if self.max_calls <= 0:
            raise ToolError("the tool's rate limit allows no calls")
        async with self.lock:
            while True:
                now = time.monotonic()
                while self.calls and now - self.calls[0] >= self.interval:
                    self.calls.popleft()
                if len(self.calls) < self.max_calls:
                    self.calls.append(now)
                    return
                await asyncio.sleep(self.interval - (now - self.calls[0]))


@dataclass(slots=True)
class _Detached:
    handle: str
    tool: str
    action_id: str
    task: asyncio.Task[None] | None = None
    chunks: list[dict[str, Any]] = field(default_factory=list)
    status: ToolStatus = ToolStatus.RUNNING
    result: Any = None
    error: str | None = None
    consumed: bool = False


class Executor:
    """Runs one proposal. Keep it to :meth:`poll` / :meth:`cancel` detached tools."""

    def __init__(
        self,
        proposal: ProposalLike,
        tools: Any,
        *,
        schemas: Any = None,
        initial_state: Mapping[str, Any] | None = None,
        policies: Any = None,
        gate: Gate | None = None,
        budget: CostBudget | None = None,
        event_log: Any = None,
        progress: Callable[[str, str | None, Mapping[str, Any]], None] | None = None,
        compensation_timeout_ms: int | None = None,
        profile: ProfileLike = None,
        granted_tier: str | None = None,
        ledger: Any = None,
        labels: Any = None,
        flow_policy: Any = None,
        results: ResultShape = "newest",
    ) -> None:
        from .semantics import semantics_of

        if results not in RESULT_SHAPES:
            raise UsageError(f"results must be one of {', '.join(RESULT_SHAPES)}, not {results!r}")
        #: How a rolled-back action is reported: as the newest runtime does
        #: (``succeeded``, ``rolled_back``), or as 0.52.1 did (``failed``).
        self.results: ResultShape = results

        #: The semantics it admits, orders and walks by (``car`` by default).
        self.semantics = semantics_of(profile)
        self.proposal: ActionProposal = load(proposal)
        self.semantics.refuse(self.proposal)
        #: The bound on a compensation whose action has no ``timeout_ms``.
        self.compensation_timeout_ms = compensation_timeout_ms
        #: The run's gate (car_verify.plan.gate.CallGate), set when the run starts:
        #: every attempt of every call and every compensation asks it.
        self.call_gate: Any = None
        self.progress = progress
        self.tools = _Tools(tools)
        if schemas is not None:
            self.schemas: ToolRegistry | None = ToolRegistry.coerce(schemas)
        elif self.tools.names() is not None:
            self.schemas = ToolRegistry([ToolSchema(name=n) for n in self.tools.names() or []])
        else:
            self.schemas = None
        # The executor's own copy: nothing it returns shares arrays or objects with the
        # caller's initial state.
        self.initial_state = copy_json(_state(initial_state))
        self.policy_engine: Any = None
        if policies is not None:
            from .rules.policy import policy_engine

            self.policy_engine = policy_engine(policies)
        self.gate = gate or Gate()
        self.budget = budget or CostBudget()
        #: The standing permission tier the run is granted (None: not gated on tiers),
        #: and the approval ledger the gate consults.
        self.granted_tier = granted_tier
        self.ledger: Any = None
        #: Tool labels and a flow policy: the flow gate at admission (docs/flow.md).
        self.labels: Any = None
        self.flow_policy: Any = None
        if labels is not None:
            from .plan.flow import parse_labels, parse_policy

            self.labels, self.flow_policy = parse_labels(labels), parse_policy(flow_policy)
        elif flow_policy is not None:
            raise UsageError("a flow policy is checked against tool labels: give labels too")
        if ledger is not None and granted_tier is None and labels is None:
            raise UsageError("an approval ledger is consulted only with granted_tier or labels")
        if granted_tier is not None:
            from .plan.permissions import check_tier

            check_tier(granted_tier)
        if ledger is not None:
            from .plan.permissions import open_ledger

            self.ledger = open_ledger(ledger)
        if event_log is None or isinstance(event_log, EventLog):
            self.log: EventLog | None = event_log
        else:
            self.log = EventLog(event_log)
        self._owns_log = event_log is not None and not isinstance(event_log, EventLog)
        if self.log is not None:
            self.log.context = self.proposal.context
        self.detached: dict[str, _Detached] = {}
        self._cache: dict[tuple[str, str], tuple[float, Any]] = {}
        self._limiters: dict[str, _RateLimiter] = {}

    def _admit(self, ctx: Context) -> VerificationResult:
        """The admission: ``verify`` of the proposal under the run's semantics."""
        return verify_context(ctx)

    # --- events ------------------------------------------------------------------------------

    def _event(self, kind: str, action_id: str | None = None, **data: Any) -> None:
        if self.log is not None:
            self.log.write(kind, self.proposal.id, action_id, **data)
        if self.progress is not None:
            self.progress(kind, action_id, data)

    # --- the run -------------------------------------------------------------------------------

    async def run(self) -> ExecutionResult:
        try:
            return await self._run()
        finally:
            if self._owns_log and self.log is not None:
                self.log.close()

    async def _run(self) -> ExecutionResult:
        proposal = self.proposal
        started = time.perf_counter()
        self._event("proposal_started", actions=len(proposal.actions))
        sem = self.semantics
        # the admission's DAG is kept for the schedule
        admitting = Context(
            proposal,
            tools=self.schemas,
            initial_state=self.initial_state,
            options=Options(max_actions=self.budget.max_actions),
            semantics=sem,
        )
        admission = self._admit(admitting)
        reasons = [
            f"{i.code}: {i.message}" + (f" ({i.action_id})" if i.action_id else "")
            for i in admission.issues
            if i.code in self.gate.blocking and i.severity is not Severity.INFO  # a note
        ]
        calls = sum(1 for a in proposal.actions if a.type == "tool_call")
        if self.budget.max_tool_calls is not None and calls > self.budget.max_tool_calls:
            limit = self.budget.max_tool_calls
            reasons.append(f"budget-exceeded: {calls} tool calls; max_tool_calls is {limit}")
        reasons.extend(self._held_by_tier())
        reasons.extend(self._held_by_flow())
        if reasons:
            return self._reject(admission, reasons, started)

        dag = admitting.dag
        actions = proposal.actions
        results: dict[int, ActionResult] = {}  # by position, as each action ends
        outputs: dict[str, Any] = {}
        cost = CostSummary()
        violations: list[PolicyViolation] = []
        completion: list[int] = []
        if self.policy_engine is not None or self.granted_tier is not None:
            from .plan.gate import UNDECIDED, CallGate

            # A fresh trace per run; the engine (and its rate windows) is the executor's.
            # The tier is checked again per call, on what is sent: the admission saw
            # the plan's parameters, an output reference's value only arrives now.
            self.call_gate = CallGate(
                self.policy_engine,
                granted_tier=self.granted_tier,
                ledger=self.ledger,
                on_unknown=UNDECIDED["executor"],
            )
        aborted_by: str | None = None
        run = _Run(self, outputs, cost, violations)
        # The one walk, driven with live calls: it says who may run at each turn (a
        # whole level under strict, one action under car) on which state, and lands
        # what the calls produced.
        walking = turns(dag, self.initial_state, mode="simulate", semantics=sem)
        # The end state: the walk's when it finishes; a run that ends early is aborted,
        # and the rollback gives it.
        state: Mapping[str, Any] = self.initial_state
        said: list[Outcome] | None = None
        finished: list[int] = []  # the order the level's actions ended in
        succeeded: dict[int, dict[str, Any]] = {}  # the level's, with their effects

        def level_over(level_no: int) -> None:
            completion.extend(i for i in finished if i in succeeded)
            level = dag.levels[level_no]
            self._event(
                "level_finished",
                statuses=[results[i].status.value for i in level if i in results],
            )
            for i, change in succeeded.items():
                results[i].state_changes = {k: {"op": "set", "value": v} for k, v in change.items()}

        async def ended(
            i: int, causes: list[Cause], seen: Mapping[str, Any], done: list[int]
        ) -> tuple[ActionResult, dict[str, Any]]:
            try:
                return await run.action(i, causes, seen)
            finally:
                done.append(i)

        try:
            while aborted_by is None:
                try:
                    turn = next(walking) if said is None else walking.send(said)
                except StopIteration as end:
                    state = end.value.state
                    break
                if self._over_time(started):  # at every turn: under car, between actions
                    aborted_by = "budget: max_duration_ms reached"
                    if not turn.opens:
                        level_over(turn.level)
                    break
                if turn.opens:
                    level = dag.levels[turn.level]
                    self._event("level_started", actions=[dag.ids[i] for i in level])
                    finished, succeeded = [], {}

                outcomes = await _together(
                    [
                        ended(i, causes, turn.state, finished)
                        for i, causes in zip(turn.members, turn.causes, strict=True)
                    ]
                )
                said = []
                for i, outcome in zip(turn.members, outcomes, strict=True):
                    if isinstance(outcome, asyncio.CancelledError):
                        raise outcome
                    if isinstance(outcome, BaseException):  # a bug in a tool adapter
                        outcome = _failed(actions[i], f"executor error: {outcome!r}", 0.0)
                    result, effects = outcome
                    results[i] = result
                    if result.status is ActionStatus.SUCCEEDED:
                        outputs[actions[i].id] = result.output
                        succeeded[i] = effects
                        said.append(Outcome(True, effects=effects))
                        continue
                    stops = run.aborts(actions[i], result)
                    if stops and aborted_by is None:
                        aborted_by = f"{actions[i].id}: {result.error}"
                    rejected = result.status is ActionStatus.REJECTED
                    said.append(Outcome(False, failed=not rejected, stops=stops))
                if turn.closes or aborted_by is not None:  # the level is over
                    level_over(turn.level)
                    spent = (
                        self.budget.max_tool_calls is not None
                        and run.calls >= self.budget.max_tool_calls
                    )
                    if spent and aborted_by is None and len(results) < dag.n:
                        aborted_by = "budget: max_tool_calls reached"
        except asyncio.CancelledError:
            aborted_by = "cancelled"
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()  # finish the rollback, then report
            await self._cancel_all()
        for i, action in enumerate(actions):
            if i not in results:
                results[i] = _result(action, ActionStatus.SKIPPED, error=aborted_by or "not walked")
        rollback = None
        if aborted_by is not None:
            self._event("aborted", reason=aborted_by)
            rollback = await self._rollback(completion, outputs, cost)
            state = rollback.restored_state
            for i in completion:
                results[i] = self._rolled_back(results[i], rollback)
        ordered = [results[i] for i in range(dag.n)]
        _count(cost, actions, ordered, started, cached=run.cached)
        final = ProposalResult(proposal_id=proposal.id, results=ordered, cost=cost)
        self._event("proposal_finished", cost=cost.to_dict(), aborted_by=aborted_by)
        # The end state holds the effects' values, which are the proposal's own.
        detached = copy_json(dict(state))
        return ExecutionResult(
            final, detached, admission, [], violations, aborted_by, rollback, self
        )

    def _rolled_back(self, result: ActionResult, rollback: RollbackReport) -> ActionResult:
        """A completed action after the run aborted: its state effects are gone, and
        what became of its external effects (compensated, not undoable) is said."""
        if result.status is not ActionStatus.SUCCEEDED:
            return result
        action_id = result.action_id
        failed = {f["action_id"]: f["error"] for f in rollback.failed_to_compensate}
        if action_id in rollback.compensated:
            fate = "its compensation ran"
        elif action_id in failed:
            fate = f"its compensation failed ({failed[action_id]}): external effects may remain"
        else:
            fate = "external effects may remain and were not undone"
        result.error = f"proposal aborted; state effects were rolled back; {fate}"
        result.state_changes = {}
        if self.results == "0.52":
            result.status = ActionStatus.FAILED
        else:
            result.rolled_back = True
        return result

    def _held_by_tier(self) -> list[str]:
        """The permission gate, as the runtime admits a proposal: an action the granted
        tier does not cover (or any ``full_access`` one) that the ledger has not
        approved holds back the whole proposal, naming its fingerprint."""
        if self.granted_tier is None:
            return []
        from .plan.permissions import evaluate_actions

        held = []
        for d in evaluate_actions(self.proposal, self.granted_tier, self.ledger):
            if d.decision != "allow":
                self._event(
                    "permission_decision",
                    d.action_id,
                    decision=d.decision,
                    fingerprint=d.fingerprint,
                    required=d.required,
                    reason=d.reason,
                )
                held.append(
                    f"permission-{d.decision}: {d.reason} ({d.action_id}; fingerprint "
                    f"{d.fingerprint})"
                )
        return held

    def _held_by_flow(self) -> list[str]:
        """The information-flow gate: with labels, the flow check over the run's own
        order (every hazard, car-verify's beyond the runtime's included: the gate
        holds back what may happen), gated as ``gate_information_flow`` gates it and
        settled against the ledger: a hazard that blocks, or that needs an approval
        the ledger does not hold, holds back the whole proposal."""
        if self.labels is None:
            return []
        from .plan.flow import (
            FlowReport,
            enforce_information_flow,
            flow_violations,
            gate_information_flow,
        )

        runtime, beyond = flow_violations(
            self.proposal, self.labels, self.flow_policy, semantics=self.semantics
        )
        found = [*runtime, *beyond]
        report = FlowReport(not found, found, [], self.semantics.profile.value)
        decision = gate_information_flow(report)
        enforced = enforce_information_flow(decision, self.ledger)
        held = []
        for v in enforced.blocked:
            held.append(f"flow-{v['kind']}: {v['explanation']}")
        for item in enforced.pending:
            violation = item["violation"]
            held.append(
                f"flow-{violation['kind']} needs approval: {violation['explanation']} "
                f"(fingerprint {item['fingerprint']})"
            )
        if held:
            self._event("flow_gate", decision=decision.action, reasons=held)
        return held

    def _reject(
        self, admission: VerificationResult, reasons: list[str], started: float
    ) -> ExecutionResult:
        self._event("admission_rejected", reasons=reasons)
        results = [
            _result(a, ActionStatus.REJECTED, error="; ".join(reasons))
            for a in self.proposal.actions
        ]
        cost = CostSummary()
        _count(cost, self.proposal.actions, results, started)
        result = ProposalResult(proposal_id=self.proposal.id, results=results, cost=cost)
        return ExecutionResult(result, dict(self.initial_state), admission, reasons, executor=self)

    def _over_time(self, started: float) -> bool:
        limit = self.budget.max_duration_ms
        return limit is not None and (time.perf_counter() - started) * 1e3 >= limit

    # --- rollback ------------------------------------------------------------------------------

    async def _rollback(
        self, completion: list[int], outputs: dict[str, Any], cost: CostSummary
    ) -> RollbackReport:
        actions = self.proposal.actions
        report = RollbackReport(restored_state=dict(self.initial_state))
        self._event("rollback_started", restored_keys=sorted(self.initial_state))
        by_id = {a.id: a for a in actions}
        for i in reversed(completion):
            action = actions[i]
            if action.reversibility is Reversibility.IRREVERSIBLE:
                report.irreversible_reached.append(action.id)
                continue
            comp = action.compensation
            if action.reversibility is not Reversibility.COMPENSABLE or comp is None:
                continue
            try:
                if isinstance(comp, ToolCompensation):
                    tool, params = comp.tool, comp.parameters
                else:
                    assert isinstance(comp, ActionRefCompensation)
                    target = by_id.get(comp.action_id)
                    if target is None or target.tool is None:
                        raise ToolError(
                            f"compensation action {comp.action_id!r} has no tool to run"
                        )
                    tool, params = target.tool, target.parameters
                if not self.tools.has(tool):
                    raise ToolError(f"compensation tool {tool!r} is not available")
                resolved = _interpolate(params, outputs)
                sent = self._admit_compensation(action, tool, resolved)
                timeout_ms = action.timeout_ms or self.compensation_timeout_ms
                call = self.tools.call(tool, sent, bounded=timeout_ms is not None)
                try:
                    await (call if timeout_ms is None else asyncio.wait_for(call, timeout_ms / 1e3))
                except TimeoutError:
                    self._report(tool, resolved, failed=True)
                    raise ToolError(f"compensation timed out after {timeout_ms} ms") from None
                except Exception:
                    self._report(tool, resolved, failed=True)
                    raise
                self._report(tool, resolved, failed=False)
                report.compensated.append(action.id)
                self._event("compensated", action.id, tool=tool)
            except Exception as err:  # a compensation that fails is reported, not raised
                report.failed_to_compensate.append({"action_id": action.id, "error": _message(err)})
                self._event("compensation_failed", action.id, error=_message(err))
        self._event("rollback_finished", **report.to_dict())
        return report

    @property
    def trace_gate(self) -> Any:
        """The run's trace monitor (None without policies)."""
        return None if self.call_gate is None else self.call_gate.trace

    def _decide(
        self, action: Action, tool: str, params: dict[str, Any], state: Mapping[str, Any] | None
    ) -> tuple[list[PolicyViolation], dict[str, Any]]:
        """Ask the gate about one attempt of a call: the violations (each logged) and
        the frozen parameters it checked, which are what is sent. Without policies,
        a copy of the parameters (a tool that changes what it was sent changes no
        later attempt)."""
        if self.call_gate is None:
            return [], copy_json(params)
        call = _as_sent(action, params) if action.tool == tool else None
        verdict = self.call_gate.decide(tool, params, state, action=call)
        found = (
            []
            if verdict.allowed
            else [
                PolicyViolation(policy_name=d.rule, action_id=action.id, reason=d.reason)
                for d in verdict.objections
            ]
        )
        for v in found:
            self._event("policy_violation", action.id, policy_name=v.policy_name, reason=v.reason)
        return found, verdict.sent

    def _report(self, tool: str, params: Mapping[str, Any], failed: bool) -> None:
        """A dispatched call's outcome, for the trace rules."""
        if self.call_gate is not None:
            self.call_gate.report(tool, params, "failed" if failed else "succeeded")

    def _admit_compensation(
        self, action: Action, tool: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        """A compensation is a call like any other: the gate decides it. Returns the
        frozen parameters it checked, which are what is sent."""
        found, sent = self._decide(
            Action(id=action.id, type="tool_call", tool=tool), tool, params, None
        )
        if found:
            raise ToolError(
                "compensation denied: " + "; ".join(f"{v.policy_name}: {v.reason}" for v in found)
            )
        return sent

    # --- detached tools --------------------------------------------------------------------------

    def poll(self, handle: str | ToolHandle) -> ToolPollResult | None:
        """Drain a detached tool's chunks; None once its terminal status was observed."""
        key = handle.id if isinstance(handle, ToolHandle) else handle
        record = self.detached.get(key)
        if record is None or record.consumed:
            return None
        chunks, record.chunks = record.chunks, []
        if record.status is not ToolStatus.RUNNING:
            record.consumed = True
        result = ToolPollResult(
            handle=ToolHandle(id=key),
            tool=record.tool,
            action_id=record.action_id,
            status=record.status,
            chunks=[chunk_from_dict(c) for c in chunks],
            error=record.error,
        )
        if record.status is ToolStatus.SUCCEEDED:
            result.result = record.result
        return result

    def cancel(self, handle: str | ToolHandle) -> bool:
        """Ask a detached tool to stop (cooperative: it is cancelled at its next await)."""
        key = handle.id if isinstance(handle, ToolHandle) else handle
        record = self.detached.get(key)
        if record is None or record.status is not ToolStatus.RUNNING or record.task is None:
            return False
        record.task.cancel()
        return True

    async def wait(self, handle: str | ToolHandle) -> None:
        key = handle.id if isinstance(handle, ToolHandle) else handle
        record = self.detached.get(key)
        if record is not None and record.task is not None:
            await asyncio.gather(record.task, return_exceptions=True)

    async def _cancel_all(self) -> None:
        for record in self.detached.values():
            if record.task is not None and not record.task.done():
                record.task.cancel()

    async def _start_detached(self, action: Action, params: dict[str, Any]) -> dict[str, Any]:
        assert action.tool is not None
        tool = action.tool
        checked = copy_json(params)  # what the stream's outcome is reported for
        stream = await self.tools.call(tool, params)
        handle = uuid.uuid4().hex[:16]
        record = _Detached(handle, action.tool, action.id)
        self.detached[handle] = record

        async def drain() -> None:
            iterator = None
            try:
                if hasattr(stream, "__aiter__"):
                    async for chunk in stream:
                        if self._chunk(record, chunk):
                            break
                else:  # one chunk at a time: each is visible as it comes
                    iterator = iter(stream)
                    while True:
                        chunk = await asyncio.to_thread(next, iterator, _END)
                        if chunk is _END or self._chunk(record, chunk):
                            break
                if record.status is ToolStatus.RUNNING:
                    record.status = ToolStatus.SUCCEEDED
            except asyncio.CancelledError:
                record.status = ToolStatus.CANCELLED
            except Exception as err:
                record.status, record.error = ToolStatus.FAILED, _message(err)
            finally:  # its outcome is its terminal status
                self._report(tool, checked, failed=record.status is not ToolStatus.SUCCEEDED)
                close = getattr(iterator, "close", None)
                if close is not None:  # a cancelled generator stops at its next yield
                    with contextlib.suppress(Exception):
                        close()

        record.task = asyncio.ensure_future(drain())
        return {"tool_handle": {"id": handle}, "status": "running"}

    def _chunk(self, record: _Detached, chunk: Any) -> bool:
        """Record one chunk; True when it ends the stream. A chunk that breaks the
        streaming contract becomes a terminal ``error`` chunk (the status is still
        seen by :meth:`poll`)."""
        problem = _chunk_problem(chunk)
        if problem is not None:
            message = f"the tool sent a malformed stream chunk: {problem}"
            record.chunks.append({"kind": "error", "message": message})
            record.status, record.error = ToolStatus.FAILED, message
            return True
        doc = chunk.to_dict() if hasattr(chunk, "to_dict") else dict(chunk)
        record.chunks.append(doc)
        if doc["kind"] == "done":
            record.status, record.result = ToolStatus.SUCCEEDED, doc.get("result")
            return True
        if doc["kind"] == "error":
            record.status, record.error = ToolStatus.FAILED, doc["message"]
            return True
        return False


_END = object()

#: Each chunk kind and the fields it must carry, with their JSON types.
_CHUNK_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "text": {"text": (str,)},
    "data": {},
    "progress": {"fraction": (int, float)},
    "done": {},
    "error": {"message": (str,)},
}


def _chunk_problem(chunk: Any) -> str | None:
    """Why ``chunk`` is not a ToolStreamChunk, or None."""
    doc = chunk.to_dict() if hasattr(chunk, "to_dict") else chunk
    if not isinstance(doc, Mapping):
        return f"expected an object, got {type(doc).__name__}"
    kind = doc.get("kind")
    if kind not in _CHUNK_FIELDS:
        return f"unknown kind {kind!r} (expected one of {', '.join(_CHUNK_FIELDS)})"
    for name, types in _CHUNK_FIELDS[kind].items():
        value = doc.get(name)
        if not isinstance(value, types) or isinstance(value, bool):
            return f"a {kind} chunk needs {name!r} as a {'number' if types != (str,) else 'string'}"
    if (
        kind == "progress"
        and doc.get("message") is not None
        and not isinstance(doc["message"], str)
    ):
        return "a progress chunk's 'message' must be a string"
    return None


class _Run:
    """The per-run state one action needs; ``action`` runs one action of a level."""

    def __init__(
        self,
        executor: Executor,
        outputs: dict[str, Any],
        cost: CostSummary,
        violations: list[PolicyViolation],
    ) -> None:
        self.x = executor
        self.outputs = outputs
        self.cost = cost
        self.violations = violations
        #: Actions rejected only because a dependency did not succeed.
        self.cascaded: set[str] = set()
        #: Actions whose tool failed for good (TerminalToolError).
        self.terminal: set[str] = set()
        #: Actions rejected before they ran, for what the state or the outputs lacked
        #: (not for a policy): whether that stops the run is the profile's.
        self.unmet: set[str] = set()
        #: Tool-call actions answered from the result cache (no call was made).
        self.cached: set[str] = set()
        #: Tool calls made, retries included: what ``max_tool_calls`` bounds (the
        #: cost's ``tool_calls`` counts the calls that succeeded, as the runtime does).
        self.calls = 0

    async def action(
        self, i: int, causes: list[Cause], state: Mapping[str, Any]
    ) -> tuple[ActionResult, dict[str, Any]]:
        """Run action ``i`` at its turn: ``causes``, why the walk says it cannot run on
        ``state``, the state it sees."""
        x, action = self.x, self.x.proposal.actions[i]
        started = time.perf_counter()
        x._event("action_started", action.id, tool=action.tool)
        why = self._blocked(action, causes)
        if why is not None:
            x._event("action_rejected", action.id, reason=why)
            self.unmet.add(action.id)
            return _result(action, ActionStatus.REJECTED, error=why), {}
        try:
            params = _interpolate(action.parameters, self.outputs)
        except ToolError as err:
            self.unmet.add(action.id)
            return _result(action, ActionStatus.REJECTED, error=str(err)), {}
        sent: dict[str, Any] = params
        if action.type == "tool_call":
            assert action.tool is not None
            # The parameters as they will be sent, output references replaced: the
            # gate checks a frozen copy, and that copy is what the first attempt sends.
            found, sent = x._decide(action, action.tool, params, state)
            if found:
                self.violations.extend(found)
                reason = "; ".join(f"{v.policy_name}: {v.reason}" for v in found)
                return _result(action, ActionStatus.REJECTED, error=reason), {}
        effects = self.x.semantics.effects(action)
        if action.type != "tool_call":
            return self._local(action, causes, state, started), dict(effects)
        output, error = await self._dispatch(action, params, sent, state)
        duration = (time.perf_counter() - started) * 1e3
        if error is not None:
            x._event("action_failed", action.id, error=error)
            # failure_behavior skip: "mark this action skipped and continue" (the spec)
            skip = action.failure_behavior is FailureBehavior.SKIP
            status = ActionStatus.SKIPPED if skip else ActionStatus.FAILED
            failed = _result(action, status, error=error, duration=duration)
            if action.id in self.terminal:
                failed.terminal = True
            return failed, {}
        x._event("action_succeeded", action.id, duration_ms=duration)
        return _result(action, ActionStatus.SUCCEEDED, output=output, duration=duration), dict(
            effects
        )

    def aborts(self, action: Action, result: ActionResult) -> bool:
        """Whether this outcome stops the run: abort (and retry, once retries are spent).

        An action rejected only because a dependency did not succeed does not abort on
        its own: that dependency's own failure behaviour already decided. One rejected
        for what the state or the outputs lacked, and a retry whose retries are spent,
        abort where the profile says so."""
        if result.status not in (ActionStatus.FAILED, ActionStatus.REJECTED):
            return False
        if action.id in self.cascaded:
            return False
        sem = self.x.semantics
        if action.id in self.unmet and not sem.rejection_aborts:
            return False
        if (
            action.failure_behavior is FailureBehavior.RETRY
            and result.status is ActionStatus.FAILED
        ):
            return sem.spent_retry_aborts
        return action.failure_behavior is not FailureBehavior.SKIP

    def _blocked(self, action: Action, causes: list[Cause]) -> str | None:
        """Why an action is rejected at its turn, of the causes the walk found
        (:func:`car_verify.semantics.walk.turns`): first a dependency that did not
        succeed, then an absent key, then a false precondition. An assertion's
        predicate is its work: it fails when run, it is not rejected."""
        for kinds in (_DEPENDENCY, ("missing-key",)):
            for cause in causes:
                if cause.kind in kinds:
                    return self._reason(action, cause)
        for cause in causes:
            if cause.precondition is not None:
                return self._reason(action, cause)
        return None

    def _reason(self, action: Action, cause: Cause) -> str:
        if cause.kind in _DEPENDENCY:
            self.cascaded.add(action.id)
            return f"dependency {cause.dependency_id!r} did not succeed"
        if cause.kind == "missing-key":
            return f"state key {cause.key!r} is absent"
        pre = cause.precondition
        assert pre is not None
        return f"precondition {format_predicate(pre.key, pre.operator, pre.value)} is false"

    def _local(
        self, action: Action, causes: list[Cause], state: Mapping[str, Any], started: float
    ) -> ActionResult:
        duration = (time.perf_counter() - started) * 1e3
        if action.type == "assertion":
            sem = self.x.semantics
            for cause in causes:
                if cause.kind == "assertion":
                    pre = cause.failed[0][0]
                    predicate = format_predicate(pre.key, pre.operator, pre.value)
                    if sem.assertion_predicate_rejects:  # as any false precondition
                        error = f"precondition {predicate} is false"
                        self.x._event("action_rejected", action.id, reason=error)
                        self.unmet.add(action.id)
                        return _result(action, ActionStatus.REJECTED, error=error)
                    return self._assertion_failed(
                        action, f"assertion {predicate} is false", duration
                    )
            held, said = sem.run_assertion(action, state)
            if not held:
                return self._assertion_failed(action, str(said), duration)
            return _result(action, ActionStatus.SUCCEEDED, output=said, duration=duration)
        if action.type == "state_read":
            output = {k: state.get(k) for k in action.state_read_keys()}
            return _result(action, ActionStatus.SUCCEEDED, output=output, duration=duration)
        return _result(action, ActionStatus.SUCCEEDED, output=None, duration=duration)

    def _assertion_failed(self, action: Action, error: str, duration: float) -> ActionResult:
        """A failed assertion ends as a failed tool call does: ``skipped`` under
        ``failure_behavior: skip``, and under ``retry`` checked again ``max_retries``
        times (each a retry), in vain, since nothing changed the state."""
        self.x._event("action_failed", action.id, error=error)
        if action.failure_behavior is FailureBehavior.RETRY:
            self.cost.retries += action.max_retries
        skip = action.failure_behavior is FailureBehavior.SKIP
        status = ActionStatus.SKIPPED if skip else ActionStatus.FAILED
        return _result(action, status, error=error, duration=duration)

    async def _dispatch(
        self,
        action: Action,
        params: dict[str, Any],
        sent: dict[str, Any],
        state: Mapping[str, Any] | None,
    ) -> tuple[Any, str | None]:
        """The call's attempts: the first sends ``sent`` (what the gate checked);
        each retry asks the gate again about ``params`` and sends its new frozen
        copy, so a tool that changed what it was sent changes no retry. Each
        attempt's outcome is reported to the gate (a detached call's when its
        stream ends)."""
        x = self.x
        tool = action.tool
        assert tool is not None
        schema = x.schemas.get(tool) if x.schemas is not None else None
        detached = action.invocation_mode is not ToolInvocationMode.ONE_SHOT
        cache_key = None
        if (
            not detached
            and schema is not None
            and schema.cache_ttl_secs is not None
            and (action.idempotent or schema.idempotent)
        ):
            cache_key = (tool, canonical(params))
            hit = x._cache.get(cache_key)
            if hit is not None and hit[0] > time.monotonic():
                x._event("cache_hit", action.id, tool=tool)
                self.cached.add(action.id)
                x._report(tool, params, failed=False)
                return hit[1], None
        attempts = 1 + (
            action.max_retries if action.failure_behavior is FailureBehavior.RETRY else 0
        )
        error = "no attempt"
        for attempt in range(attempts):
            if attempt:
                self.cost.retries += 1
                x._event("retry", action.id, attempt=attempt, error=error)
                found, sent = x._decide(action, tool, params, state)
                if found:  # every attempt is a call the gate decides
                    self.violations.extend(found)
                    why = "; ".join(f"{v.policy_name}: {v.reason}" for v in found)
                    return None, f"{error}; its retry was refused: {why}"
            if x.budget.max_tool_calls is not None and self.calls >= x.budget.max_tool_calls:
                return None, "budget: max_tool_calls reached"
            self.calls += 1
            try:
                output = await self._attempt(action, tool, sent, schema, detached)
            except asyncio.CancelledError:
                if _being_cancelled():
                    raise
                error = f"tool {tool!r} raised CancelledError"
                x._report(tool, params, failed=True)
                continue
            except Exception as err:
                error = _message(err)
                x._report(tool, params, failed=True)
                if _is_terminal(err):  # failed for good: no retry
                    self.terminal.add(action.id)
                    break
                continue
            if not detached:  # a detached call's outcome is its stream's end
                x._report(tool, params, failed=False)
            if cache_key is not None and schema is not None and schema.cache_ttl_secs is not None:
                x._cache[cache_key] = (time.monotonic() + schema.cache_ttl_secs, output)
            return output, None
        return None, error

    async def _attempt(
        self,
        action: Action,
        tool: str,
        params: dict[str, Any],
        schema: ToolSchema | None,
        detached: bool,
    ) -> Any:
        x = self.x
        timeout = None if action.timeout_ms is None else action.timeout_ms / 1000

        async def call() -> Any:
            if schema is not None and schema.rate_limit is not None:
                limiter = x._limiters.get(tool)
                if limiter is None:
                    limit = schema.rate_limit
                    limiter = x._limiters[tool] = _RateLimiter(limit.max_calls, limit.interval_secs)
                await limiter.acquire()  # the wait counts against the timeout
            if detached:
                return await x._start_detached(action, params)
            return await x.tools.call(tool, params, bounded=timeout is not None)

        try:
            output = await (call() if timeout is None else asyncio.wait_for(call(), timeout))
        except TimeoutError:
            raise ToolError(f"timed out after {action.timeout_ms} ms") from None
        if detached:
            return output
        try:
            json.dumps(output, allow_nan=False)
        except (TypeError, ValueError) as err:
            raise ToolError(f"tool {tool!r} returned data that is not JSON ({err})") from None
        if x.schemas is not None and tool in x.schemas:
            problems = x.schemas.check_returns(tool, output)
            if problems:
                first = problems[0]
                raise ToolError(
                    f"tool {tool!r} returned data that violates its returns schema at "
                    f"{first.json_path}: {first.message}"
                )
        return output


async def _together(runs: list[Coroutine[Any, Any, _T]]) -> list[_T | BaseException]:
    """Run a turn's actions at once: ``asyncio.gather(..., return_exceptions=True)``.
    A turn of one action (every turn under car) is awaited in place, without a task
    of its own, for the same answer: its result, or the exception it raised."""
    if len(runs) != 1:
        return await asyncio.gather(*runs, return_exceptions=True)
    try:
        return [await runs[0]]
    except Exception as err:  # as gather gives it back; a cancellation propagates
        return [err]


def _as_sent(action: Action, params: dict[str, Any]) -> Action:
    """``action`` with the parameters it will be dispatched with (a shallow copy)."""
    sent = copy.copy(action)
    sent.parameters = params
    return sent


def _message(err: BaseException) -> str:
    text = str(err)
    return (
        text
        if isinstance(err, ToolError)
        else f"{type(err).__name__}: {text}"
        if text
        else type(err).__name__
    )


class TerminalToolError(Exception):
    """Raised by a tool that failed for good: the action fails at once, with no
    retry, and its result says ``terminal`` (as the runtime's own
    ``TerminalToolError``, which is recognised too)."""


def _is_terminal(err: BaseException) -> bool:
    return any(cls.__name__ == "TerminalToolError" for cls in type(err).__mro__)


ResultShape = Literal["newest", "0.52"]
#: How results are shaped: as the newest runtime reports them, or as 0.52.1 did.
RESULT_SHAPES: tuple[ResultShape, ...] = ("newest", "0.52")


def _result(
    action: Action,
    status: ActionStatus,
    *,
    output: Any = None,
    error: str | None = None,
    duration: float = 0.0,
) -> ActionResult:
    return ActionResult(
        action_id=action.id,
        status=status,
        output=output,
        error=error,
        duration_ms=duration,
        timestamp=_now(),
    )


def _failed(action: Action, error: str, duration: float) -> tuple[ActionResult, dict[str, Any]]:
    return _result(action, ActionStatus.FAILED, error=error, duration=duration), {}


def _count(
    cost: CostSummary,
    actions: Sequence[Action],
    results: Sequence[ActionResult],
    started: float,
    cached: set[str] | frozenset[str] = frozenset(),
) -> None:
    """The spec's CostSummary of a run's results; ``tool_calls``, as the runtime counts
    them, the tool calls that succeeded (a rolled-back one too, but not under the
    0.52 results, where it is failed), and not an answer from the cache."""
    cost.tool_calls = sum(
        1
        for a, r in zip(actions, results, strict=True)
        if a.type == "tool_call" and r.status is ActionStatus.SUCCEEDED and a.id not in cached
    )
    for r in results:
        if r.status in (ActionStatus.SUCCEEDED, ActionStatus.FAILED):
            cost.actions_executed += 1
        elif r.status is ActionStatus.REJECTED:
            cost.actions_rejected += 1
        elif r.status is ActionStatus.SKIPPED:
            cost.actions_skipped += 1
    cost.total_duration_ms = (time.perf_counter() - started) * 1e3


def _interpolate(value: Any, outputs: Mapping[str, Any]) -> Any:
    """Replace every ``$id.output[.path]`` string (in full) by a copy of that action's
    output: what the policies checked is what is sent, and no other tool (one running
    beside it in the level) can change it in between."""
    if isinstance(value, str):
        match = _REF.fullmatch(value) if value[:1] == "$" else None
        if match is None:
            return value
        action_id, path = match.group(1), match.group(2)
        if action_id not in outputs:
            raise ToolError(f"{value!r}: action {action_id!r} has no output")
        current = outputs[action_id]
        for part in (path or "").split(".") if path else ():
            if isinstance(current, dict) and part in current:
                current = current[part]
            elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
                current = current[int(part)]
            else:
                raise ToolError(f"{value!r}: the output has no {part!r}")
        return copy_json(current)
    if isinstance(value, dict):
        return {k: _interpolate(v, outputs) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v, outputs) for v in value]
    return value


@deep_values_are_input_errors
async def execute(
    proposal: ProposalLike,
    tools: Any,
    *,
    schemas: Any = None,
    initial_state: Mapping[str, Any] | None = None,
    policies: Any = None,
    gate: Gate | None = None,
    budget: CostBudget | None = None,
    event_log: Any = None,
    progress: Callable[[str, str | None, Mapping[str, Any]], None] | None = None,
    compensation_timeout_ms: int | None = None,
    profile: ProfileLike = None,
    granted_tier: str | None = None,
    ledger: Any = None,
    labels: Any = None,
    flow_policy: Any = None,
    results: ResultShape = "newest",
) -> ExecutionResult:
    """Run a proposal behind the verify passes (see the module docs). It admits,
    orders and walks as the profile's semantics says (``car`` by default: CAR's
    levels, each action seeing the effects before it in its level; ``strict``:
    docs/semantics.md §1-8, a level on its start state). ``results``: an action
    the rollback undid is reported as the newest runtime reports it (``succeeded``
    with ``rolled_back``), or with ``"0.52"`` as car-runtime 0.52.1 did
    (``failed``)."""
    executor = Executor(
        proposal,
        tools,
        schemas=schemas,
        initial_state=initial_state,
        policies=policies,
        gate=gate,
        budget=budget,
        event_log=event_log,
        progress=progress,
        compensation_timeout_ms=compensation_timeout_ms,
        profile=profile,
        granted_tier=granted_tier,
        ledger=ledger,
        labels=labels,
        flow_policy=flow_policy,
        results=results,
    )
    return await executor.run()


def execute_sync(proposal: ProposalLike, tools: Any, **options: Any) -> ExecutionResult:
    """:func:`execute` from synchronous code.

    Called where an event loop is already running in this thread (a Jupyter cell,
    an async framework), the run gets a loop of its own in a worker thread and the
    call waits for it: ``asyncio.run`` cannot nest. Async tools then run on that
    loop, not the caller's; a tool bound to the caller's loop needs ``await
    execute(...)`` instead.
    """

    def run() -> ExecutionResult:
        return asyncio.run(execute(proposal, tools, **options))

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run()
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1, thread_name_prefix="car-verify-execute") as worker:
        return worker.submit(run).result()
