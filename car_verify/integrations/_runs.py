"""What the framework integrations share: the rules loaded once, a gate per run,
and the words a refused call is answered with."""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..base.errors import UsageError
from ..plan.gate import DECISIONS, CallGate, Decision, Verdict
from ..rules.policy import PolicyEngine, policy_engine
from ..rules.trace import Outcome


@dataclass(slots=True)
class Run:
    """One agent run's gate, and the verdicts of its admitted calls not yet sent
    (by the framework's call id). ``broken``: the gate failed once in this run
    (an error while deciding or recording an outcome), so its state cannot be
    trusted: every later call of the run is refused."""

    gate: CallGate
    admitted: dict[str, tuple[str, Verdict]] = field(default_factory=dict)
    broken: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class Rules:
    """The rules, loaded once (a policies folder is read here, not per call), and a
    fresh gate over them for each run: the same rules, empty rate windows and an
    empty trace. ``policies``: a PolicyEngine, loaded policies, a PolicySet or a
    policies directory; ``on_unknown``: the answer to a rule that cannot be decided
    on a call; ``clock``: the rate windows' clock."""

    def __init__(
        self,
        policies: Any,
        *,
        on_unknown: Decision,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if on_unknown not in DECISIONS:
            raise UsageError(f"on_unknown must be one of {', '.join(DECISIONS)}")
        if policies is None:
            raise UsageError(
                "policies must be given: a policies directory, loaded policies, a PolicySet "
                "or a PolicyEngine"
            )
        self.engine: PolicyEngine = policy_engine(policies)
        self.on_unknown: Decision = on_unknown
        self.clock = clock

    def new_run(self) -> Run:
        return Run(CallGate(self.engine.fresh(clock=self.clock), on_unknown=self.on_unknown))


class RunsByObject:
    """Each run's :class:`Run`, keyed by an object of the run by its identity (not
    its equality: the framework's run objects may compare equal, or not hash), and
    dropped when that object is collected."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self._runs: dict[int, tuple[weakref.ref[Any], Run]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._runs)

    def of(self, key: Any) -> Run:
        with self._lock:
            found = self._runs.get(id(key))
            if found is not None and found[0]() is key:
                return found[1]
            run = self.rules.new_run()
            ident = id(key)
            self._runs[ident] = (weakref.ref(key, lambda _: self._drop(ident)), run)
            return run

    def _drop(self, ident: int) -> None:
        with self._lock:
            found = self._runs.get(ident)
            if found is not None and found[0]() is None:
                del self._runs[ident]


def decide(run: Run, tool: str, params: Mapping[str, Any]) -> Verdict | str:
    """The gate's verdict on a call, or, when the gate cannot answer (an error
    inside it, or an earlier one in this run), the words that refuse it: the
    check fails closed."""
    with run.lock:
        if run.broken is not None:
            return refused_broken(run.broken)
        try:
            return run.gate.decide(tool, params)
        except Exception as err:  # any failure of the gate refuses the call
            run.broken = type(err).__name__
            return refused_broken(run.broken)


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


def refused_broken(error: str) -> str:
    return (
        f"refused: the policy check failed ({error}), so this call and every later call "
        "of the run are refused"
    )


def refusal(verdict: Verdict) -> str:
    """What the model is told of a call the gate did not allow: the rules by name
    and why, in words that hold no value of the call or of a rule."""
    if verdict.decision == "ask":
        return f"refused: needs approval ({verdict.reason()})"
    if verdict.denied:
        return f"denied by policy: {verdict.reason()}"
    return f"refused: a rule cannot be decided on this call ({verdict.reason()})"
