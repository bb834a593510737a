"""What the framework integrations share: the rules, loaded once (and refused when
they would check nothing), a gate per run, the run a call belongs to while a
guarded tool runs, the run's state as a snapshot a framework can keep, and the
words a refused call is answered with.

**A run is the unit.** Each integration finds the run a tool call belongs to in
the framework's own context (the Agents SDK's run context, LangGraph's run and
thread) and asks that run's one :class:`~car_verify.plan.gate.CallGate`. While a
guarded tool runs, :data:`ACTIVE` names its run: an agent started from inside the
tool (a sub-agent, a graph invoked by the tool) is part of the same run, whichever
integration guards it. The runs are kept by the integrations for every guard in
the process (:data:`RUNS`), so that agents guarded separately share the run they
are in: one run is decided by one rule set, and a call that reaches a run through
a guard with other rules is refused (:func:`refused_mixed`)."""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ..base.errors import UsageError
from ..plan.gate import DECISIONS, CallGate, Decision, Verdict
from ..rules.policy import (
    LoadedPolicies,
    PolicyEngine,
    load_policies,
    policy_engine,
    state_keys,
)
from ..rules.trace import Outcome

__all__ = [
    "ACTIVE",
    "RUNS",
    "Rules",
    "Run",
    "RunsByObject",
    "active",
    "decide",
    "refusal",
    "refused_broken",
    "refused_mixed",
    "report",
]


@dataclass(slots=True, eq=False, weakref_slot=True)
class Run:
    """One agent run's gate and what the integration keeps of its calls.

    ``rules``: the key of the rule set the run is decided by (:attr:`Rules.key`).
    ``pending``: verdicts given before the call ran, by the framework's call id (an
    approval asked of a person, a call paused by an interrupt), each used once, and
    only by a call of the same ``turn`` (the integration's name for the model turn
    the verdict was given in; ``None`` where it has none): a call id can come back
    in a later turn, and a verdict no call took must not pass to it.
    ``admitted``: verdicts given to a call object the framework hands to the tool
    (the Agents SDK's tool context), taken when the tool is invoked. ``broken``: the
    gate failed once in this run (an error while deciding or recording an outcome),
    so its state cannot be trusted: every later call of the run is refused.
    ``seq``: how many events the gate has recorded; ``saved``: the ``seq`` of the
    last snapshot the framework keeps (:meth:`Rules.snapshot`). ``turns``: the
    model turns (their call ids) whose calls were decided together."""

    gate: CallGate
    rules: str
    pending: dict[str, list[tuple[str, Any, Any]]] = field(default_factory=dict)
    admitted: weakref.WeakKeyDictionary[Any, tuple[str, Verdict]] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    broken: str | None = None
    seq: int = 0
    saved: int = 0
    turns: set[tuple[str, ...]] = field(default_factory=set)
    tools: dict[int, Any] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)

    def take_pending(self, call_id: str, tool: str, params: Any, turn: Any = None) -> Any | None:
        """The verdict given earlier to this call (same turn, tool and arguments), once."""
        with self.lock:
            found = self.pending.get(call_id)
            if not found:
                return None
            for index, (name, verdict, its_turn) in enumerate(found):
                if (
                    name == tool
                    and its_turn == turn
                    and (not isinstance(verdict, Verdict) or verdict.sent == params)
                ):
                    del found[index]
                    if not found:
                        del self.pending[call_id]
                    return verdict
            return None

    def put_pending(self, call_id: str, tool: str, verdict: Any, turn: Any = None) -> None:
        with self.lock:
            self.pending.setdefault(call_id, []).append((tool, verdict, turn))

    def has_pending(self, call_id: str, turn: Any = None) -> bool:
        """Whether a verdict given in ``turn`` waits for this call id."""
        with self.lock:
            return any(t == turn for _, _, t in self.pending.get(call_id, ()))

    def drop_pending_of(self, call_id: str) -> None:
        """Forget the verdicts waiting for this call id (a new call has the id)."""
        with self.lock:
            self.pending.pop(call_id, None)

    def drop_pending(self, stale: Callable[[Any], bool]) -> None:
        """Forget the verdicts whose turn ``stale`` names (turns that are over: no call
        of theirs can take one any more)."""
        with self.lock:
            for call_id in list(self.pending):
                kept = [e for e in self.pending[call_id] if not stale(e[2])]
                if kept:
                    self.pending[call_id] = kept
                else:
                    del self.pending[call_id]

    def fork(self) -> Run:
        """A run that continues from this one's state as it is now (a paused run
        resumed from a copy of its state: the copy's calls go on from the pause, and
        two copies resumed do not see each other's calls). The same rules, trace
        and windows (the same clock), verdicts pending, and breakage."""
        with self.lock:
            engine = self.gate.engine.fresh(clock=self.gate.engine.clock)
            gate = CallGate(engine, on_unknown=self.gate.on_unknown, ask=self.gate.ask)
            gate.trace.restore(self.gate.trace.state)
            engine.restore_windows(self.gate.engine.windows)
            return Run(
                gate,
                self.rules,
                pending={k: list(v) for k, v in self.pending.items()},
                broken=self.broken,
                seq=self.seq,
                saved=self.saved,
                turns=set(self.turns),
            )


#: The run of the guarded tool running now, in this context (a thread, an asyncio
#: task, and whatever either starts): an agent run started inside the tool belongs
#: to it.
ACTIVE: ContextVar[Run | None] = ContextVar("car_verify_active_run", default=None)


@contextmanager
def active(run: Run) -> Iterator[None]:
    """:data:`ACTIVE` names ``run`` while a guarded tool runs."""
    token = ACTIVE.set(run)
    try:
        yield
    finally:
        ACTIVE.reset(token)


class Rules:
    """The rules, loaded once (a policies folder is read here, not per call), and a
    fresh gate over them for each run: the same rules, empty rate windows and an
    empty trace.

    ``policies``: a PolicyEngine, loaded policies, a PolicySet or a policies
    directory. A rule set that would check nothing is refused, as the command line
    refuses it: a folder that is not there or holds no rule, or one with entries the
    load skipped (``rules.tml``), is a :class:`UsageError` naming them, unless
    ``allow_empty=True`` says to run with what was loaded. ``on_unknown``: the answer
    to a rule that cannot be decided on a call; ``ask``: rule-name prefixes whose
    objections put the call to a person (the framework's own approval) instead of
    refusing it; ``clock``: the rate windows' clock."""

    def __init__(
        self,
        policies: Any,
        *,
        on_unknown: Decision,
        ask: Sequence[str] = (),
        clock: Callable[[], float] = time.monotonic,
        allow_empty: bool = False,
    ) -> None:
        if on_unknown not in DECISIONS:
            raise UsageError(f"on_unknown must be one of {', '.join(DECISIONS)}")
        if policies is None:
            raise UsageError(
                "policies must be given: a policies directory, loaded policies, a PolicySet "
                "or a PolicyEngine"
            )
        if isinstance(ask, str) or not all(isinstance(a, str) for a in ask):
            raise UsageError("ask must be a list of rule-name prefixes (deny_tool, trace_rule:…)")
        if isinstance(policies, (str, os.PathLike)):
            policies = load_policies(policies)
        if isinstance(policies, LoadedPolicies) and not allow_empty:
            _refuse_incomplete(policies)
        self.engine: PolicyEngine = policy_engine(policies)
        if not allow_empty and not self.engine.rules.count() and not self.engine.registered:
            raise UsageError(
                "the policy set holds no rule, so the gate would check nothing: give a "
                "policies folder (or rules) that holds some, or pass allow_empty=True to "
                "run every call unchecked"
            )
        self.on_unknown: Decision = on_unknown
        self.ask: tuple[str, ...] = tuple(ask)
        self.clock = clock
        self.key = self._key()
        self._keys: tuple[list[str], list[str]] | None = None

    @property
    def may_ask(self) -> bool:
        """Whether a call can be answered ``ask`` (put to a person)."""
        return self.on_unknown == "ask" or bool(self.ask)

    def _key(self) -> str:
        """A digest of what decides a call: the rules, the registered rules (by
        identity: a callback is code), ``on_unknown`` and ``ask``."""
        from ..rules.policy import rule_identities

        doc = [
            rule_identities(self.engine.rules),
            [[r.name, r.kind, r.target, id(r)] for r in self.engine.registered],
            self.on_unknown,
            list(self.ask),
        ]
        text = json.dumps(doc, sort_keys=True, ensure_ascii=False, default=repr)
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def _rule_keys(self) -> tuple[list[str], list[str]]:
        if self._keys is None:
            self._keys = state_keys(self.engine.rules)
        return self._keys

    def new_run(self) -> Run:
        gate = CallGate(
            self.engine.fresh(clock=self.clock), on_unknown=self.on_unknown, ask=self.ask
        )
        return Run(gate, self.key)

    # --- the run's state, for a framework that keeps it (a checkpointer's thread) -------------

    def snapshot(self, run: Run) -> dict[str, Any]:
        """The run's gate state as JSON: each trace rule's monitor state and each rate
        limit's window (as ages, in seconds), keyed by the rule's content, so that a
        rule keeps its state while the rules around it change. Marks it saved."""
        with run.lock:
            trace_keys, rate_keys = self._rule_keys()
            now = self.clock()
            windows = run.gate.engine.windows
            run.saved = run.seq
            return {
                "format": 1,
                "seq": run.seq,
                "broken": run.broken,
                "trace": {k: n for k, n in zip(trace_keys, run.gate.trace.state, strict=True) if n},
                "windows": {
                    k: [max(0.0, now - t) for t in windows[i]]
                    for i, k in enumerate(rate_keys)
                    if i in windows
                },
            }

    def restore(self, doc: Any) -> Run:
        """A run whose gate takes up a snapshot's state (a rule it does not name
        starts empty). A window restored in another process is measured from now: it
        can only be longer than it was, never shorter. A snapshot that cannot be read
        gives a broken run: every call refused."""
        run = self.new_run()
        try:
            if not isinstance(doc, Mapping) or doc.get("format") != 1:
                raise ValueError("not a snapshot of this format")
            trace_keys, rate_keys = self._rule_keys()
            trace, windows = doc["trace"], doc["windows"]
            run.gate.trace.restore(tuple(int(trace.get(k, 0)) for k in trace_keys))
            now = self.clock()
            run.gate.engine.restore_windows(
                {
                    i: sorted(now - float(age) for age in windows[k])
                    for i, k in enumerate(rate_keys)
                    if k in windows
                }
            )
            run.seq = run.saved = int(doc["seq"])
            broken = doc.get("broken")
            run.broken = None if broken is None else str(broken)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            run.broken = f"the saved policy state cannot be read: {type(err).__name__}"
        return run


def _refuse_incomplete(loaded: LoadedPolicies) -> None:
    """A UsageError for loaded policies that would not check what the folder says."""
    said = loaded.describe()
    if loaded.directory is None:
        raise UsageError(
            f"{said}: the gate would check nothing; name the policies folder, or pass "
            "allow_empty=True to run every call unchecked"
        )
    if loaded.skipped:
        raise UsageError(
            f"policies: {said}: a skipped entry holds no rule the gate reads (a policy file "
            "is *.toml); rename it, remove it, or pass allow_empty=True to run with the rules "
            "that were loaded"
        )
    if not loaded.rules.count():
        raise UsageError(
            f"policies: {said}: the policy set holds no rule, so the gate would check "
            "nothing; add rules, or pass allow_empty=True to run every call unchecked"
        )


class RunsByObject:
    """Each run's :class:`Run`, keyed by an object of the run by its identity (not
    its equality: the framework's run objects may compare equal, or not hash), and
    dropped when that object is collected."""

    def __init__(self) -> None:
        self._runs: dict[int, tuple[weakref.ref[Any], Run]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._runs)

    def of(self, key: Any, rules: Rules, make: Callable[[], Run] | None = None) -> Run:
        """The run ``key`` names (made at its first call: by ``make``, else a new
        run over ``rules``)."""
        with self._lock:
            found = self._runs.get(id(key))
            if found is not None and found[0]() is key:
                return found[1]
            run = make() if make is not None else rules.new_run()
            ident = id(key)
            self._runs[ident] = (weakref.ref(key, lambda _: self._drop(ident)), run)
            return run

    def _drop(self, ident: int) -> None:
        with self._lock:
            found = self._runs.get(ident)
            if found is not None and found[0]() is None:
                del self._runs[ident]


#: The runs of every guard in this process, keyed by an object of the run.
RUNS = RunsByObject()


def decide(run: Run, rules: Rules, tool: str, params: Mapping[str, Any]) -> Verdict | str:
    """The gate's verdict on a call, or, when the gate cannot answer (a run decided
    by other rules, an error inside the gate, or an earlier one in this run), the
    words that refuse it: the check fails closed."""
    with run.lock:
        if run.rules != rules.key:
            return refused_mixed()
        if run.broken is not None:
            return refused_broken(run.broken)
        try:
            verdict = run.gate.decide(tool, params)
        except Exception as err:  # any failure of the gate refuses the call
            run.broken = type(err).__name__
            return refused_broken(run.broken)
        if verdict.decision != "deny":
            run.seq += 1
        return verdict


def report(run: Run, tool: str, sent: Mapping[str, Any], outcome: Outcome) -> None:
    """Record an admitted call's outcome; a failure to record breaks the run's gate
    (every later call is refused) rather than leaving its trace wrong."""
    with run.lock:
        if run.broken is not None:
            return
        try:
            run.gate.report(tool, sent, outcome)
        except Exception as err:
            run.broken = type(err).__name__
        run.seq += 1


def refused_broken(error: str) -> str:
    return (
        f"refused: the policy check failed ({error}), so this call and every later call "
        "of the run are refused"
    )


def refused_mixed() -> str:
    return (
        "refused: this run's tools are guarded by two different rule sets; a run is decided "
        "by one: guard its agents with one guard (or the same policies and options)"
    )


def refusal(verdict: Verdict, *, person: str | None = None) -> str:
    """What the model is told of a call the gate did not allow: the rules by name
    and why, in words that hold no value of the call or of a rule. (The one place
    that builds the message.) ``person``, for a call put to a person: why it does
    not run: ``"rejected"`` (they did not approve it) or ``"unreachable"``
    (nothing can pause the run to ask)."""
    if verdict.decision == "ask":
        if person == "rejected":
            return f"refused: a person did not approve this call ({verdict.reason()})"
        if person == "unreachable":
            return f"refused: needs approval, and nothing can pause this run ({verdict.reason()})"
        return f"refused: needs approval ({verdict.reason()})"
    if verdict.denied:
        return f"denied by policy: {verdict.reason()}"
    return f"refused: a rule cannot be decided on this call ({verdict.reason()})"
