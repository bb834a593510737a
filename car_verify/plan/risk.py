"""``risk``: how likely a plan is to reach its goal when tools can fail.

The runtime answers this by sampling (``car_runtime.simulate_monte_carlo``, 1,000
trials by default). A trial is the profile's ``simulate`` walk in which each
dispatched ``tool_call`` succeeds with its tool's rate. Under ``car`` (the
default) that is CAR's walk: level by level, proposal order inside a level, each
action seeing the effects of the ones before it. Under ``strict`` it is
docs/semantics.md §4's: a level sees the state it began with, its effects land after it, and
an action whose ``dependencies`` or ``$id.output`` reference did not succeed is
rejected. In both:

- an action whose precondition is false, or one of whose ``state_dependencies``
  is absent, when its turn comes is **rejected** (not dispatched, no effects); so
  is a ``tool_call`` that names no tool (no ``tool``; ``""`` is a name), always;
- a dispatched tool call that fails has **failed**: its effects do not land;
- every other action's effects **land** (a ``state_write``, an assertion, a tool
  call that succeeded).

So a failure cascades exactly as ``simulate``'s blocking does. The rates: the
caller's per tool, else ``default_success_rate``; clamped to [0, 1]; with
``retry_attempts: n`` a dispatched call makes up to ``n + 1`` attempts at rate ``p``,
so it succeeds with ``1 - (1 - p)^(n + 1)``. ``tool_calls`` counts the attempts, as
the runtime does: ``k`` for a success at the k-th, ``n + 1`` for a failure, none
for a rejected action; its ``p50`` and ``p95`` (and ``actions_executed``'s) are
nearest-rank quantiles, the runtime's rule for its samples.

``method="exact"`` computes every number exactly (tier ``decision_procedure``): a
dynamic programme over the walk whose states are the parts of the state still
read later (a key no later action reads or writes, and the goal does not name,
is tallied into the end-state distribution and dropped, so independent branches
merge), with the counts the result reports; the blast radius of each tool call
is one more programme, kept to the runs in which that call failed. Past
``budget`` states visited in all (a bound on the work, so on the time) it stops;
``method="auto"`` (the default) then samples and says so. ``method="sampled"``
runs seeded trials (the same numbers, and the same bytes, for the same seed) and
gives each probability a 95% Wilson interval.

The goal is a ``GoalCondition``: ``{kind: "state_predicate", key, equals}`` or
``{kind: "all_of" | "any_of", conditions}``. Any other kind (tool receipts, a
command's exit, a model's judgement) cannot be decided by a simulation: it fails
closed and is named in ``goal_underivable_conditions``.

``mean_blast_radius`` of an action is, over the trials in which it failed, the
mean number of actions it orders (directly or not) that were rejected.

Beyond the runtime, on request: ``failure_behavior=True`` models each action's
``failure_behavior`` (``abort``, the default, and ``retry`` once its
``max_retries`` more draws have failed, stop the run at a failure or a rejection:
every action of a later turn is rejected, the next action under ``car``, the next
level under ``strict``, as the executor runs them; ``skip`` goes on); ``sensitivity``
gives the exact derivative of ``p_goal_reached`` in each tool's rate; and with a
goal, ``critical_actions`` names the calls whose failure alone loses it.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ..base.errors import InputError, UsageError, deep_values_are_input_errors
from ..base.findings import Tier
from ..base.progress import Progress
from ..ir.model import ActionProposal, load
from ..semantics import ProfileLike, semantics_of
from ..semantics.base import Semantics
from ..semantics.dag import Dag
from ..semantics.walk import GOING, STOPPED, Dispatch, Walk, blockers, next_phase, schedule, walk
from .claims import judge_goal

__all__ = ["DEFAULT_SEED", "History", "RiskConfig", "RiskResult", "rates_from_history", "risk"]

#: The runtime's fixed default seed (it echoes it back), so that runs repeat.
DEFAULT_SEED = 910022485546699937
#: The most programme states the exact method visits, over all its passes, before
#: it gives up (about a second or two of work).
DEFAULT_BUDGET = 300_000


@dataclass(frozen=True, slots=True)
class RiskConfig:
    """``{trials, seed, default_success_rate, retry_attempts}``, each optional."""

    trials: int = 1000
    seed: int = DEFAULT_SEED
    default_success_rate: float = 0.5
    retry_attempts: int = 0

    @classmethod
    def of(cls, config: Mapping[str, Any] | RiskConfig | None) -> RiskConfig:
        if config is None:
            return cls()
        if isinstance(config, RiskConfig):
            return config
        if not isinstance(config, Mapping):
            raise InputError("expected an object {trials, seed, ...}", ["config"])
        known = {"trials", "seed", "default_success_rate", "retry_attempts"}
        for key in config:
            if key not in known:
                raise InputError(f"unknown key (expected one of {', '.join(sorted(known))})",
                                 ["config", key])  # fmt: skip

        def whole(key: str, default: int, least: int) -> int:
            value = config.get(key, default)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise InputError(f"expected an integer >= {least}", ["config", key])
            return value

        rate = config.get("default_success_rate", 0.5)
        if not isinstance(rate, (int, float)) or isinstance(rate, bool) or math.isnan(rate):
            raise InputError("expected a number", ["config", "default_success_rate"])
        return cls(
            trials=whole("trials", 1000, 1),
            seed=whole("seed", DEFAULT_SEED, 0),
            default_success_rate=float(rate),
            retry_attempts=whole("retry_attempts", 0, 0),
        )


def _clamp(rate: float) -> float:
    return min(1.0, max(0.0, rate))


def effective_rate(rate: float, retry_attempts: int) -> float:
    """A rate clamped to [0, 1], then with ``retry_attempts`` retries."""
    p = _clamp(rate)
    return 1.0 - (1.0 - p) ** (retry_attempts + 1)


# --- rates from history -------------------------------------------------------------


@dataclass(slots=True)
class History:
    """Per tool, how many of its calls were dispatched and how many succeeded, read
    from event logs and ProposalResults; and what was passed over, said."""

    dispatched: dict[str, int] = field(default_factory=dict)
    succeeded: dict[str, int] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def count(self, tool: str, *, succeeded: bool) -> None:
        """One dispatch of ``tool``."""
        self.dispatched[tool] = self.dispatched.get(tool, 0) + 1
        if succeeded:
            self.succeeded[tool] = self.succeeded.get(tool, 0) + 1

    def rate(self, tool: str) -> float | None:
        """Laplace-smoothed ``(succeeded + 1) / (dispatched + 2)``; None if never seen."""
        n = self.dispatched.get(tool, 0)
        if n == 0:
            return None
        return (self.succeeded.get(tool, 0) + 1) / (n + 2)


def rates_from_history(paths: Sequence[str | os.PathLike[str]]) -> History:
    """Tool success counts from execution records: files, or folders searched for
    ``*.jsonl`` and ``*.json``.

    - An event log (``car-verify run --events``, JSON lines): a dispatch is an
      ``action_started`` event that names a tool; it succeeded when the same run's
      next outcome for that action is ``action_succeeded`` (a retry's failure in
      between does not count against it).
    - ``car-verify audit``'s ``tool_rates.json``: per tool, the calls of an audited
      corpus and those whose result was not an error.
    - A ``ProposalResult`` (JSON): each ``succeeded`` or ``failed`` result of a
      ``tool_call`` is a dispatch of its tool (``rejected`` and ``skipped`` ones
      never reached it). A result names its action, not the tool, so the proposal
      it ran (its ``id`` is the result's ``proposal_id``) must be among the files;
      a result whose proposal is not is passed over, and said.
    Any other JSON file is passed over, and said.
    """
    from ..base.events import read_log

    history = History()
    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir() and (path / "tool_rates.json").is_file():
            files.append(path / "tool_rates.json")  # an audit's output folder: its rates
        elif path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.suffix in (".jsonl", ".json")))
        elif path.exists():
            files.append(path)
        else:
            raise UsageError(f"--history: no such file or directory: {given}")
    results: list[tuple[Path, dict[str, Any]]] = []
    tools_of: dict[str, dict[str, str]] = {}  # proposal id -> action id -> tool
    for file in files:
        history.files.append(str(file))
        if file.suffix != ".jsonl":
            doc = _json_record(file)
            if isinstance(doc, dict) and doc.get("format") == "car-verify tool rates":
                _audited(history, doc, file)  # car-verify audit's tool_rates.json
            elif isinstance(doc, dict) and isinstance(doc.get("results"), list):
                results.append((file, doc))
            elif isinstance(doc, dict) and isinstance(doc.get("actions"), list):
                try:
                    tools_of[str(doc.get("id", ""))] = _tools_by_action(load(doc))
                except InputError as error:
                    raise error.with_source(str(file)) from None
            else:
                history.notes.append(f"{file}: neither a ProposalResult nor a proposal; skipped")
            continue
        events, notes = read_log(file)
        history.notes.extend(notes)
        pending: dict[tuple[str, str | None], str] = {}
        for event in events:
            key = (event.proposal_id, event.action_id)
            tool = event.data.get("tool")
            if event.kind == "action_started" and isinstance(tool, str) and tool:
                history.count(tool, succeeded=False)
                pending[key] = tool
            elif event.kind == "action_succeeded" and key in pending:
                done = pending.pop(key)
                history.succeeded[done] = history.succeeded.get(done, 0) + 1
            elif event.kind in ("action_failed", "action_rejected"):
                pending.pop(key, None)
    for file, doc in results:
        proposal_id = str(doc.get("proposal_id", ""))
        tools = tools_of.get(proposal_id)
        if tools is None:
            history.notes.append(
                f"{file}: the proposal {proposal_id!r} it ran is not among the history "
                "files (a result names actions, not tools); its results are not counted"
            )
            continue
        for n, row in enumerate(doc["results"]):
            if not isinstance(row, dict) or not isinstance(row.get("action_id"), str):
                where: list[str | int] = ["results", n]
                raise InputError(
                    "expected a result {action_id, status, ...}", where, source=str(file)
                )
            tool = tools.get(row["action_id"])
            if tool and row.get("status") in ("succeeded", "failed"):
                history.count(tool, succeeded=row["status"] == "succeeded")
    return history


def _audited(history: History, doc: dict[str, Any], file: Path) -> None:
    tools = doc.get("tools")
    if not isinstance(tools, dict):
        raise InputError("expected an object of tools", ["tools"], source=str(file))
    for tool, counts in tools.items():
        made = counts.get("dispatched") if isinstance(counts, dict) else None
        good = counts.get("succeeded") if isinstance(counts, dict) else None
        if not (isinstance(made, int) and isinstance(good, int) and 0 <= good <= made):
            raise InputError(
                "expected {dispatched, succeeded} counts", ["tools", tool], source=str(file)
            )
        history.dispatched[tool] = history.dispatched.get(tool, 0) + made
        history.succeeded[tool] = history.succeeded.get(tool, 0) + good


def _json_record(file: Path) -> Any:
    from ..ir.model import read_json

    return read_json(file)


def _tools_by_action(proposal: ActionProposal) -> dict[str, str]:
    return {a.id: a.tool for a in proposal.actions if a.type == "tool_call" and a.tool}


# --- the goal ----------------------------------------------------------------------


class _Goal:
    """A ``GoalCondition`` compiled: which keys it reads, and its value in a state
    (judged by ``evaluate_goal``'s evaluator, its values compared as the profile
    reads a goal)."""

    def __init__(self, goal: Mapping[str, Any] | None, semantics: Semantics) -> None:
        self.goal = goal
        self.semantics = semantics
        self.keys: set[str] = set()
        self.underivable: list[str] = []
        if goal is not None:
            self._scan(goal, ["goal"])

    def _scan(self, node: Any, path: list[str | int]) -> None:
        if not isinstance(node, Mapping) or not isinstance(node.get("kind"), str):
            raise InputError("expected a goal condition {kind, ...}", path)
        kind = node["kind"]
        if kind in ("all_of", "any_of"):
            conditions = node.get("conditions")
            if not isinstance(conditions, list):
                raise InputError("expected an array of conditions", [*path, "conditions"])
            for n, child in enumerate(conditions):
                self._scan(child, [*path, "conditions", n])
        elif kind == "state_predicate":
            if not isinstance(node.get("key"), str):
                raise InputError("expected a string", [*path, "key"])
            if "equals" not in node:
                raise InputError("missing `equals`", path)
            self.keys.add(node["key"])
        else:  # receipts, commands, model judges: not decidable here, fail closed
            ident = node.get("id")
            self.underivable.append(f"{kind}:{ident}" if isinstance(ident, str) else kind)

    def holds(self, state: Mapping[str, Any]) -> bool:
        """Whether the goal is met in ``state``: the one goal evaluator's verdict, with
        the state as the only input gathered (every other leaf fails closed)."""
        if self.goal is None:
            return False
        return judge_goal(self.goal, {"state": state}, self.semantics).met


# --- the plan, compiled for the walk ----------------------------------------------------


@dataclass(slots=True)
class _Step:
    index: int
    action_id: str
    tool: str | None  # a tool_call's tool (it is dispatched, and may fail); "" is a name
    rate: float
    preconditions: list[tuple[str, str, Any]]
    depends: list[str]
    effects: dict[str, Any]
    #: With ``failure_behavior`` modelled: a failure or a rejection here stops the
    #: run (every action of a later turn is rejected). Never, in CAR's model.
    stops: bool = False
    #: The actions (a bit mask by position) whose not succeeding rejects this one:
    #: ``strict``'s explicit and output-reference dependencies; none under ``car``.
    waits: int = 0
    #: A tool call that names no tool (no ``tool`` field): rejected, never dispatched.
    nameless: bool = False
    #: The chance a dispatched call succeeds at its first, second, ... attempt (they
    #: sum to ``rate``); it fails after the last. Every attempt is one of
    #: ``tool_calls``, as the runtime counts them: ``retry_attempts`` more attempts
    #: per call, and with ``failure_behavior`` modelled a ``retry`` action's own
    #: ``max_retries`` more rounds of them.
    tries: tuple[float, ...] = (1.0,)
    #: The chance a dispatched call fails, after all its attempts: ``(1 - p)^n`` as
    #: such, not ``1 - rate`` (which rounds a failure less likely than 2**-53 to
    #: impossible, and loses its digits well before that).
    fail: float = 0.0
    #: The step is the last of its turn (the walk's ``schedule``): the effects that
    #: landed so far take effect after it, and a stop stops the run (``next_phase``).
    #: Every step under ``car`` (each action sees those before it), a level's last
    #: under ``strict`` (a level sees the state it began with).
    flush: bool = True

    def outcome(self, u: float) -> int:
        """A dispatched call's outcome when its draw is ``u`` in [0, 1): it succeeds
        when ``u < rate`` (one draw per call, whatever its attempts), at the first
        attempt ``k`` whose cumulative share exceeds ``u`` (the outcome ``k``);
        else it fails (0)."""
        if u >= self.rate:
            return 0
        if len(self.tries) == 1:
            return 1
        acc = 0.0
        for k, share in enumerate(self.tries[:-1], 1):
            acc += share
            if u < acc:
                return k
        return len(self.tries)  # the last attempt's share

    def calls(self, outcome: int) -> int:
        """The attempts behind an outcome: ``k`` for a success at the k-th, all of
        them for a failure."""
        return outcome or len(self.tries)


def _tries(rate: float, attempts: int) -> tuple[float, tuple[float, ...], float]:
    """A call of success ``rate`` per attempt (in [0, 1]) given ``attempts``
    attempts: its chance to succeed at all, to succeed at each attempt, and to fail.
    Each is its own product (``p (1 - p)^(k - 1)``, ``(1 - p)^n``), never a
    difference: a remainder such as ``1 - whole`` cancels to nothing once the
    failure is rarer than 2**-53, and the exact method would call it impossible (a
    count missing from ``tool_calls``, ``p_failed: 0``)."""
    whole = effective_rate(rate, attempts - 1)
    shares = tuple(rate * (1.0 - rate) ** k for k in range(attempts))
    return whole, shares, (1.0 - rate) ** attempts


@dataclass(slots=True)
class _Plan:
    steps: list[_Step]
    order: Dag
    #: Per position in the walk: the keys still read or written after it.
    live_after: list[set[str]]
    #: Per action position, the actions it orders (directly or not), as a bit mask
    #: (bit j: action j), built in one sweep against the walk's order.
    descendants: list[int]
    #: The semantics the walk follows (its operators, order and levels).
    semantics: Semantics
    #: Per position in the walk: the actions some later step waits for (a mask).
    waited_after: list[int] = field(default_factory=list)


def _compile(
    proposal: ActionProposal,
    rates: Mapping[str, float],
    goal: _Goal,
    failure_behavior: bool,
    semantics: Semantics,
    retries: int = 0,
) -> _Plan:
    """The plan as the walk's steps; ``rates``: each tool's success rate per attempt
    (clamped to [0, 1]), ``retries``: the attempts after the first (``retry_attempts``)."""
    order = semantics.order(proposal)
    walk_order = [i for level in order.levels for i in level]
    steps = []
    for _, turn, _, _ in schedule(order, semantics):  # the walk's order of turns
        for place, index in enumerate(turn):
            action = proposal.actions[index]
            tool = action.tool if action.type == "tool_call" else None
            base = _clamp(rates.get(tool, 1.0)) if tool is not None else 1.0
            attempts = retries + 1
            behaviour = action.failure_behavior.value
            if failure_behavior and behaviour == "retry" and tool is not None:
                attempts *= action.max_retries + 1  # then, failing, it aborts
            rate, tries, fail = _tries(base, attempts)
            waits = 0
            for t in order.waits_for(index):
                waits |= 1 << t
            steps.append(
                _Step(
                    index,
                    action.id,
                    tool,
                    rate,
                    [(p.key, p.operator, p.value) for p, _ in semantics.checks(action)],
                    list(order.keys[index]),
                    dict(semantics.effects(action)),
                    stops=failure_behavior and behaviour in ("abort", "retry"),
                    waits=waits,
                    nameless=action.type == "tool_call" and action.tool is None,
                    tries=tries,
                    fail=fail,
                    flush=place == len(turn) - 1,
                )
            )
    live_after: list[set[str]] = [set() for _ in steps]
    live = set(goal.keys)
    for n in range(len(steps) - 1, -1, -1):
        live_after[n] = set(live)
        step = steps[n]
        live.update(key for key, _, _ in step.preconditions)
        live.update(step.depends)
        live.update(step.effects)
    waited_after = [0] * len(steps)
    waited = 0
    for n in range(len(steps) - 1, -1, -1):
        waited_after[n] = waited
        waited |= steps[n].waits
    succs: list[list[int]] = [[] for _ in proposal.actions]
    for index in range(order.n):
        for p in order.preds(index):
            succs[p].append(index)
    descendants = [0] * len(proposal.actions)
    for index in reversed(walk_order):  # every successor is done before its predecessor
        mask = 0
        for j in succs[index]:
            mask |= (1 << j) | descendants[j]
        descendants[index] = mask
    return _Plan(steps, order, live_after, descendants, semantics, waited_after)


def _blocked(plan: _Plan, step: _Step, state: Mapping[str, Any], notok: int) -> bool:
    """Whether the step is rejected at its turn: a tool call naming no tool, a false
    part of its predicate, an absent key it depends on, or (``strict``) an action it
    waits for that did not succeed (``notok``: a mask of those)."""
    if step.nameless:  # a tool call naming no tool is never dispatched
        return True
    waited = (lambda t: notok >> t & 1 == 1) if step.waits else None
    return bool(blockers(plan.order, step.index, state, waited, plan.semantics))


# --- the result ----------------------------------------------------------------------


@dataclass(slots=True)
class RiskResult:
    """CAR's result shape (``to_dict``), and how it was computed."""

    trials: int
    seed: int
    p_goal_reached: float | None
    goal_underivable_conditions: list[str]
    p_all_effects_landed: float
    tool_calls: dict[str, float]
    actions_executed: dict[str, float]
    state_distribution: list[dict[str, Any]]
    action_outcomes: list[dict[str, Any]]
    rate_provenance: dict[str, dict[str, Any]]
    method: str
    tier: Tier
    #: Why the exact method was not used (``auto`` past its budget), if it was not.
    reason: str | None = None
    #: 95% Wilson intervals of the sampled probabilities, by their path in the
    #: result (``p_goal_reached``, ``action_outcomes[2].p_failed``).
    intervals: dict[str, list[float]] = field(default_factory=dict)
    #: Beyond CAR: the tool calls whose failure alone (every other call succeeding)
    #: loses a goal that is reached when every call succeeds; None without a goal.
    critical_actions: list[str] | None = None
    #: Beyond CAR (``sensitivity=True``, exact): d p_goal_reached / d rate, per tool,
    #: the rate being the effective one (after retries).
    sensitivity: dict[str, float] | None = None
    #: What was assumed or changed of the inputs, in words: a rate that was no
    #: probability (clamped, as the runtime clamps it), tools at the default rate.
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "trials": self.trials,
            "seed": self.seed,
            "p_goal_reached": self.p_goal_reached,
            "goal_underivable_conditions": list(self.goal_underivable_conditions),
            "p_all_effects_landed": self.p_all_effects_landed,
            "tool_calls": dict(self.tool_calls),
            "actions_executed": dict(self.actions_executed),
            "state_distribution": self.state_distribution,
            "action_outcomes": self.action_outcomes,
            "rate_provenance": self.rate_provenance,
            "method": self.method,
            "tier": self.tier.value,
        }
        if self.reason is not None:
            out["reason"] = self.reason
        if self.intervals:
            out["intervals"] = self.intervals
        if self.critical_actions is not None:
            out["critical_actions"] = list(self.critical_actions)
        if self.sensitivity is not None:
            out["sensitivity"] = dict(self.sensitivity)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    def explain(self) -> str:
        """A few lines for people: the goal, where probability is lost."""
        lines = []
        how = "exact" if self.method == "exact" else f"sampled, {self.trials:,} trials"
        if self.p_goal_reached is not None:
            lines.append(f"p(goal reached) = {_pct(self.p_goal_reached)} ({how})")
        lines.append(f"p(all effects landed) = {_pct(self.p_all_effects_landed)}")
        if self.goal_underivable_conditions:
            names = ", ".join(self.goal_underivable_conditions)
            lines.append(f"not decidable here (fail closed): {names}")
        if self.critical_actions:
            lines.append(f"critical (their failure alone loses the goal): "
                         f"{', '.join(self.critical_actions)}")  # fmt: skip
        if self.sensitivity:
            moves = ", ".join(f"{tool} {d:+.4g}" for tool, d in self.sensitivity.items())
            lines.append(f"d p(goal) / d rate: {moves}")
        if self.reason:
            lines.append(f"note: {self.reason}")
        lines.extend(f"note: {note}" for note in self.notes)
        for row in self.action_outcomes:
            lines.append(
                f"  {row['action_id']}: lands {_pct(row['p_effects_landed'])}, "
                f"fails {_pct(row['p_failed'])}, rejected {_pct(row['p_rejected'])}"
            )
        return "\n".join(lines)


def _pct(p: float) -> str:
    return f"{p:.4g}"


# --- the two methods ------------------------------------------------------------------


class _Budget(Exception):
    """The exact method's states outgrew its budget."""


class _Work:
    """The states visited so far, against the budget."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.visited = 0

    def add(self, count: int, where: str) -> None:
        self.visited += count
        if self.visited > self.budget:
            raise _Budget(f"{self.visited:,} states visited, {where}")


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class _Tally:
    """What the result reports, summed over trials (sampled: weight 1/trials each)
    or over the exact programme's states (weight: probability)."""

    def __init__(self, plan: _Plan) -> None:
        n = len(plan.steps)
        self.rejected = [0.0] * n
        self.failed = [0.0] * n
        self.landed = [0.0] * n
        self.goal = 0.0
        self.all_landed = 0.0
        self.tool_calls: dict[int, float] = defaultdict(float)
        self.executed: dict[int, float] = defaultdict(float)
        self.values: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.shown: dict[str, Any] = {}
        #: (failed step position, rejected action position) -> probability of both.
        self.blast: dict[int, float] = defaultdict(float)

    def scale(self, trials: int, state: Mapping[str, Any], plan: _Plan) -> None:
        """Counts over ``trials`` trials -> probabilities (and the values each end
        state's canonical text stands for)."""
        self.rejected = [c / trials for c in self.rejected]
        self.failed = [c / trials for c in self.failed]
        self.landed = [c / trials for c in self.landed]
        self.goal /= trials
        self.all_landed /= trials
        for dist in (self.tool_calls, self.executed):
            for k in dist:
                dist[k] /= trials
        for by_text in self.values.values():
            for text in by_text:
                by_text[text] /= trials
        for n in self.blast:
            self.blast[n] /= trials
        values = [*state.values(), *(v for step in plan.steps for v in step.effects.values())]
        for value in values:
            self.shown[_canon(value)] = value

    def end_text(self, key: str, text: str, value: Any, weight: float) -> None:
        """``key`` ends with ``value`` (canonical ``text``) with probability ``weight``."""
        self.shown.setdefault(text, value)
        self.values[key][text] += weight


@dataclass(frozen=True, slots=True)
class _Trial:
    """Everything the result counts about one trial (equal trials are tallied once)."""

    rejected: tuple[int, ...]  # step positions
    failed: tuple[int, ...]
    landed: tuple[int, ...]
    calls: int
    goal: bool
    end: tuple[tuple[str, str], ...]  # the end state, as (key, canonical JSON) pairs
    blast: tuple[int, ...]  # per failed step: how many actions it orders were rejected


class _Run:
    """A trial part-way through the walk."""

    __slots__ = (
        "calls", "failed", "landed", "notok", "pending", "phase", "rejected", "state",
    )  # fmt: skip

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state
        #: Effects that landed and take effect at the next flush (see _Step.flush).
        self.pending: dict[str, Any] = {}
        self.rejected: list[int] = []
        self.failed: list[int] = []
        self.landed: list[int] = []
        #: The actions that did not succeed (a mask by action position).
        self.notok = 0
        self.calls = 0
        #: The walk's stop rule (``next_phase``): once ``STOPPED``, every later step is
        #: rejected; a step that stops the run stops it at the end of its turn.
        self.phase = GOING

    def copy(self) -> _Run:
        run = _Run(dict(self.state))
        run.pending = dict(self.pending)
        run.rejected, run.failed, run.landed = (
            list(self.rejected),
            list(self.failed),
            list(self.landed),
        )
        run.calls, run.phase, run.notok = self.calls, self.phase, self.notok
        return run

    def end_of(self, step: _Step) -> None:
        """The step is done: when it ends its turn (it flushes), what landed takes
        effect, and a stop stops the run (the rest of a strict level was dispatched
        with the step that stopped it)."""
        if step.flush:
            if self.pending:
                self.state.update(self.pending)
                self.pending.clear()
            self.phase = next_phase(self.phase, False, True)


def _advance(plan: _Plan, run: _Run, n: int) -> int | None:
    """Walk from step ``n`` to the next dispatched tool call (its position: its draw
    decides what follows), or to the end (None)."""
    steps = plan.steps
    while n < len(steps):
        step = steps[n]
        if run.phase == STOPPED or _blocked(plan, step, run.state, run.notok):
            run.rejected.append(n)
            run.notok |= 1 << step.index
            run.phase = next_phase(run.phase, step.stops, False)
        elif step.tool is not None:
            return n
        else:
            run.pending.update(step.effects)
            run.landed.append(n)
        run.end_of(step)
        n += 1
    return None


def _decide(plan: _Plan, run: _Run, n: int, outcome: int) -> int:
    """The tool call at step ``n`` had ``outcome`` (:meth:`_Step.outcome`: 0 failed,
    ``k`` succeeded at its k-th attempt); the next step."""
    step = plan.steps[n]
    run.calls += step.calls(outcome)
    if outcome:
        run.pending.update(step.effects)
        run.landed.append(n)
    else:
        run.failed.append(n)
        run.notok |= 1 << step.index
        run.phase = next_phase(run.phase, step.stops, False)
    run.end_of(step)
    return n + 1


def _finish(plan: _Plan, run: _Run, goal: _Goal) -> _Trial:
    return _trial(plan, run.rejected, run.failed, run.landed, run.calls, run.state, goal)


def _trial(
    plan: _Plan,
    rejected: list[int],
    failed: list[int],
    landed: list[int],
    calls: int,
    state: Mapping[str, Any],
    goal: _Goal,
) -> _Trial:
    """The trial of a finished run: its step positions by outcome, its dispatched
    calls and its end state."""
    mask = 0
    for n in rejected:
        mask |= 1 << plan.steps[n].index
    blast = tuple((plan.descendants[plan.steps[n].index] & mask).bit_count() for n in failed)
    end = tuple((k, _canon(v)) for k, v in state.items())
    return _Trial(
        tuple(rejected), tuple(failed), tuple(landed), calls, goal.holds(state), end, blast
    )


def _trials_plain(
    plan: _Plan, state: dict[str, Any], goal: _Goal, config: RiskConfig, shown: Progress | None
) -> dict[_Trial, int]:
    """Every trial walked from the start by the one walk (:func:`walk`), its outcome
    source a draw per dispatched tool call, in walk order, from the seeded stream
    (its attempts, :meth:`_Step.outcome`, counted as the trial's calls). The
    reference for :func:`_trials_memo`, the compiled walk."""
    rng = random.Random(config.seed)
    calls = [0]

    def draw(step: _Step) -> bool:
        outcome = step.outcome(rng.random())
        calls[0] += step.calls(outcome)
        return outcome > 0

    dispatch = _dispatch(plan, draw)
    counts: dict[_Trial, int] = defaultdict(int)
    for _ in range(config.trials):
        if shown is not None:
            shown.update()
        calls[0] = 0
        walked = _walked(plan, state, dispatch)
        counts[_trial_of(plan, walked, goal, calls[0])] += 1
    return counts


def _walked(plan: _Plan, state: Mapping[str, Any], dispatch: Dispatch) -> Walk:
    """One run of the plan by the one walk: its outcomes from ``dispatch``, and with
    ``failure_behavior`` modelled, a step that stops the run stopping it."""
    aborts = {step.index for step in plan.steps if step.stops}
    return walk(
        plan.order,
        state,
        mode="simulate",
        semantics=plan.semantics,
        dispatch=dispatch,
        aborts=aborts,
    )


def _dispatch(plan: _Plan, outcome: Callable[[_Step], bool]) -> Dispatch:
    """The walk's outcome source for ``outcome`` (per step): a tool call that names
    no tool is never dispatched (the runtime rejects it)."""
    step_of = {step.index: step for step in plan.steps}

    def dispatch(i: int) -> bool | str:
        step = step_of[i]
        return "it names no tool" if step.nameless else outcome(step)

    return dispatch


def _trial_of(plan: _Plan, walked: Walk, goal: _Goal, calls: int) -> _Trial:
    """What the result counts about one walked run (see :class:`_Trial`) that made
    ``calls`` tool calls."""
    rejected, failed, landed = [], [], []
    did_fail = set(walked.failed)
    for n, step in enumerate(plan.steps):
        trace = walked.traces[step.index]
        if trace is not None and trace.blocked:
            rejected.append(n)
        elif step.index in did_fail:
            failed.append(n)
        else:
            landed.append(n)
    return _trial(plan, rejected, failed, landed, calls, walked.state, goal)


class _Node:
    """A point of the trie of trials: a draw still to make (``n``, the walk so far)
    or a finished trial (``trial``)."""

    __slots__ = ("children", "count", "n", "run", "step", "trial")

    def __init__(self, plan: _Plan, run: _Run, n: int | None, goal: _Goal) -> None:
        self.n = n
        self.run: _Run | None = None if n is None else run
        self.step = None if n is None else plan.steps[n]
        #: By the draw's outcome: [failed, succeeded at the first attempt, ...].
        self.children: list[_Node | None] = [None] * (1 + len(self.step.tries) if self.step else 0)
        self.trial = _finish(plan, run, goal) if n is None else None
        self.count = 0  # trials that ended here


#: Up to this many tool calls, :func:`_trials_memo` builds each trial's whole path.
_FULL_TRIE: Final = 16


def _trials_memo(
    plan: _Plan, state: dict[str, Any], goal: _Goal, config: RiskConfig, shown: Progress | None
) -> dict[_Trial, int]:
    """:func:`_trials_plain`, with the walk shared between trials that made the same
    draws so far. The trials form a trie whose branch points are the draws. A trial
    follows the trie as far as it is built and grows it where it is not: to its end
    when the plan has at most :data:`_FULL_TRIE` tool calls (so the trie stays
    small, and a trial soon costs its draws only), else by one branch, keeping a
    copy of the walk there for the next trial that takes it, and walks the rest
    alone (so it costs no more than walking it). The same draws from the same
    stream: the same counts."""
    rng = random.Random(config.seed)
    counts: dict[_Trial, int] = defaultdict(int)
    leaves: list[_Node] = []
    root_run = _Run(dict(state))
    root = _Node(plan, root_run, _advance(plan, root_run, 0), goal)
    full = sum(step.tool is not None for step in plan.steps) <= _FULL_TRIE
    for _ in range(config.trials):
        if shown is not None:
            shown.update()
        node = root
        while node.trial is None:
            assert node.run is not None and node.n is not None and node.step is not None
            outcome = node.step.outcome(rng.random())
            child = node.children[outcome]
            if child is None:  # a branch no trial took yet: grow it, walk on alone
                run = node.run.copy()
                child = node.children[outcome] = _Node(
                    plan, run, _advance(plan, run, _decide(plan, run, node.n, outcome)), goal
                )
                if child.trial is None and not full:
                    assert child.run is not None
                    alone, n = child.run.copy(), child.n
                    while n is not None:
                        outcome = plan.steps[n].outcome(rng.random())
                        n = _advance(plan, alone, _decide(plan, alone, n, outcome))
                    counts[_finish(plan, alone, goal)] += 1
                    break
            node = child
        else:
            if not node.count:
                leaves.append(node)
            node.count += 1
    for leaf in leaves:  # a trial is its draws: a leaf is one trial
        assert leaf.trial is not None
        counts[leaf.trial] += leaf.count
    return counts


def _sampled(
    plan: _Plan,
    state: dict[str, Any],
    goal: _Goal,
    config: RiskConfig,
    shown: Progress | None = None,
    *,
    memo: bool = True,
) -> _Tally:
    """Seeded trials (see :func:`_trials_plain`), tallied: counts summed as integers,
    then divided by the number of trials, so the two ways give the same bytes."""
    counts = (_trials_memo if memo else _trials_plain)(plan, state, goal, config, shown)
    tally = _Tally(plan)
    # a trial is its draws (what failed, what landed): in that order, float sums agree
    for trial, c in sorted(counts.items(), key=lambda tc: (tc[0].failed, tc[0].landed)):
        for n in trial.rejected:
            tally.rejected[n] += c
        for n in trial.failed:
            tally.failed[n] += c
        for n in trial.landed:
            tally.landed[n] += c
        tally.tool_calls[trial.calls] += c
        tally.executed[len(trial.landed)] += c
        if not trial.failed and not trial.rejected:
            tally.all_landed += c
        if trial.goal:
            tally.goal += c
        for key, text in trial.end:
            tally.end_text(key, text, None, c)
        for n, hit in zip(trial.failed, trial.blast, strict=True):
            tally.blast[n] += c * hit
    tally.scale(config.trials, state, plan)
    return tally


def _exact(
    plan: _Plan, state: dict[str, Any], goal: _Goal, work: _Work, forced: int | None = None
) -> _Tally:
    """The dynamic programme over the walk (see the module's docstring). With
    ``forced`` (a step position), only the runs in which that step failed are kept:
    their probabilities are joint with its failure (for the blast radius).

    A programme state is the live part of the walk's state, as sorted ``(key,
    canonical JSON text)`` pairs (values are compared by their text, so each is
    encoded once), with the counts the result reports."""
    tally = _Tally(plan)
    values: dict[str, Any] = {}

    def text_of(value: Any) -> str:
        text = _canon(value)
        values.setdefault(text, value)
        return text

    effects = [{k: text_of(v) for k, v in step.effects.items()} for step in plan.steps]
    start = {k: text_of(v) for k, v in state.items()}
    first_live = (_reads_or_writes(plan.steps[0]) | plan.live_after[0]) if plan.steps else goal.keys
    for k, text in start.items():
        if k not in first_live:
            tally.end_text(k, text, values[text], 1.0)
    kept = tuple(sorted((k, t) for k, t in start.items() if k in first_live))
    # (live state, effects landed but not yet in effect, the actions later steps wait
    # for that did not succeed, tool calls so far, landed so far, all landed,
    # descendants of the forced step rejected so far, the phase under the walk's stop
    # rule: GOING, STOPPING or STOPPED) -> probability
    State = tuple[tuple[Any, ...], tuple[Any, ...], int, int, int, bool, int, int]
    states: dict[State, float] = {(kept, (), 0, 0, 0, True, 0, GOING): 1.0}
    forced_desc = plan.descendants[plan.steps[forced].index] if forced is not None else 0
    counted = forced is None  # a blast-radius pass reports its blast radius only: no calls
    for n, step in enumerate(plan.steps):
        nxt: dict[tuple[Any, ...], float] = defaultdict(float)
        push = _Layer(nxt, plan.live_after[n], tally, values, step.flush, plan.waited_after[n]).push
        bit = 1 << step.index
        for (items, pend, notok, calls, landed, all_landed, hit, stopped), p in states.items():
            texts, pending = dict(items), dict(pend)
            current = {k: values[t] for k, t in items}
            stops = next_phase(stopped, step.stops, False)
            if stopped == STOPPED or _blocked(plan, step, current, notok):
                tally.rejected[n] += p
                if forced is not None and n == forced:
                    continue  # the forced step did not fail here: not one of its runs
                more = (forced_desc >> step.index) & 1
                counts = (calls, landed, False, hit + more, stops)
                push(texts, pending, notok | bit, counts, p)
                continue
            if step.tool is None:
                tally.landed[n] += p
                counts = (calls, landed + 1, all_landed, hit, stopped)
                push(texts, {**pending, **effects[n]}, notok, counts, p)
                continue
            ok, bad = step.rate, step.fail
            if forced is not None and n == forced:
                ok = 0.0
            if ok > 0.0:  # a success at each attempt, with its attempts as calls
                tally.landed[n] += p * ok
                landing = {**pending, **effects[n]}
                for attempt, share in enumerate(step.tries if counted else (ok,), 1):
                    counts = (calls + attempt * counted, landed + 1, all_landed, hit, stopped)
                    push(texts, landing, notok, counts, p * share)
            if bad > 0.0:  # a failure after every attempt
                tally.failed[n] += p * bad
                counts = (calls + len(step.tries) * counted, landed, False, hit, stops)
                push(texts, pending, notok | bit, counts, p * bad)
        states = nxt
        pass_name = "the outcome pass" if forced is None else "a blast-radius pass"
        work.add(len(states), f"in {pass_name} at action {n + 1} of {len(plan.steps)}")
    for (items, _, _, calls, landed, all_landed, hit, _), p in states.items():
        current = {k: values[t] for k, t in items}
        tally.tool_calls[calls] += p
        tally.executed[landed] += p
        if all_landed:
            tally.all_landed += p
        if goal.holds(current):
            tally.goal += p
        for k, t in items:
            tally.end_text(k, t, values[t], p)
        if forced is not None:
            tally.blast[forced] += p * hit
    return tally


def _reads_or_writes(step: _Step) -> set[str]:
    return {k for k, _, _ in step.preconditions} | set(step.depends) | set(step.effects)


class _Layer:
    """The next layer of the programme, as its states are pushed."""

    __slots__ = ("flush", "live", "nxt", "tally", "values", "waited")

    def __init__(
        self,
        nxt: dict[tuple[Any, ...], float],
        live: set[str],
        tally: _Tally,
        values: dict[str, Any],
        flush: bool,
        waited: int,
    ) -> None:
        self.nxt, self.live, self.tally, self.values = nxt, live, tally, values
        #: Whether the step's turn ends what is pending; what later steps wait for.
        self.flush, self.waited = flush, waited

    def push(
        self,
        items: dict[str, str],
        pending: dict[str, str],
        notok: int,
        counts: tuple[int, int, bool, int, int],
        p: float,
    ) -> None:
        """Add a run's state, tallying (and dropping) the keys no later action reads
        or writes and the goal does not name: their value is final. What landed but
        is not yet in effect (``pending``) is kept whole until the step flushes; of
        the actions that did not succeed, only those a later step waits for."""
        if self.flush and pending:  # what landed takes effect now
            items, pending = {**items, **pending}, {}
        if self.flush:  # the turn is over: a stop takes effect (the walk's next_phase)
            phase = next_phase(counts[-1], False, True)
            if phase != counts[-1]:
                counts = (*counts[:-1], phase)
        out = []
        for k, t in items.items():
            if k in self.live:
                out.append((k, t))
            else:
                self.tally.end_text(k, t, self.values[t], p)
        key = (tuple(sorted(out)), tuple(sorted(pending.items())), notok & self.waited, *counts)
        self.nxt[key] += p


# --- the entry point -------------------------------------------------------------------


def _stats(dist: Mapping[int, float]) -> dict[str, float]:
    """``{mean, min, p50, p95, max}`` of a distribution over counts (nearest rank)."""
    support = sorted(v for v, p in dist.items() if p > 0)
    if not support:
        return {"mean": 0.0, "min": 0, "p50": 0, "p95": 0, "max": 0}
    total = sum(dist[v] for v in support)

    def quantile(q: float) -> int:
        acc = 0.0
        for v in support:
            acc += dist[v] / total
            if acc >= q - 1e-12:
                return v
        return support[-1]

    mean = sum(v * dist[v] for v in support) / total
    return {
        "mean": _round(mean),
        "min": support[0],
        "p50": quantile(0.5),
        "p95": quantile(0.95),
        "max": support[-1],
    }


def _round(p: float) -> float:
    """Probabilities as stable decimals (15 significant digits: float sums agree)."""
    return float(f"{p:.15g}")


def _wilson(p: float, n: int) -> list[float]:
    z = 1.959963984540054
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low = 0.0 if p <= 0 else max(0.0, centre - half)
    high = 1.0 if p >= 1 else min(1.0, centre + half)
    return [_round(min(low, p)), _round(max(high, p))]


@deep_values_are_input_errors
def risk(
    proposal: Any,
    initial_state: Mapping[str, Any] | None = None,
    tool_success_rates: Mapping[str, Any] | None = None,
    goal: Mapping[str, Any] | None = None,
    config: Mapping[str, Any] | RiskConfig | None = None,
    *,
    method: str = "auto",
    budget: int = DEFAULT_BUDGET,
    profile: ProfileLike = None,
    history: History | None = None,
    sensitivity: bool = False,
    failure_behavior: bool = False,
    progress: Progress | None = None,
    rates: Mapping[str, Any] | None = None,
) -> RiskResult:
    """The chance of reaching ``goal`` and where it is lost (see the module docs),
    over the walk of the profile's semantics (``car`` by default, or ``strict``).

    ``tool_success_rates`` (the runtime's name; ``rates=``, as the command line's
    ``--rates``, is the same argument): tool name -> success rate in [0, 1]."""
    if rates is not None:
        if tool_success_rates is not None:
            raise UsageError("give the success rates once: rates= or tool_success_rates=")
        tool_success_rates = rates
    sem = semantics_of(profile)
    if method not in ("auto", "exact", "sampled"):
        raise UsageError(f"unknown method {method!r}; expected auto, exact or sampled")
    model = load(proposal)
    sem.refuse(model)
    settings = RiskConfig.of(config)
    state = dict(initial_state or {})
    caller: dict[str, float] = {}
    for name, rate in (tool_success_rates or {}).items():
        if not isinstance(rate, (int, float)) or isinstance(rate, bool) or math.isnan(rate):
            raise InputError("expected a number", ["tool_success_rates", name])
        caller[name] = float(rate)
    tools = sorted({a.tool for a in model.actions if a.type == "tool_call" and a.tool is not None})
    provenance: dict[str, dict[str, Any]] = {}
    base: dict[str, float] = {}  # per attempt, clamped
    clamped: list[str] = []
    for tool in tools:  # the caller's rate wins, then the history's, then the default
        given = caller.get(tool)
        seen = history.rate(tool) if history is not None else None
        entry: dict[str, Any]
        if given is not None:
            raw, entry = given, {"source": "caller"}
        elif seen is not None and history is not None:
            raw = seen
            entry = {
                "source": "history",
                "dispatched": history.dispatched[tool],
                "succeeded": history.succeeded.get(tool, 0),
            }
        else:
            raw, entry = settings.default_success_rate, {"source": "default"}
        if not 0.0 <= raw <= 1.0:  # clamped, as the runtime clamps it: but said
            entry["clamped_from"] = raw
            clamped.append(f"{tool} {raw:g} -> {_clamp(raw):g} ({entry['source']})")
        base[tool] = _clamp(raw)
        provenance[tool] = {"rate": _round(effective_rate(raw, settings.retry_attempts)), **entry}
    compiled_goal = _Goal(goal, sem)
    plan = _compile(model, base, compiled_goal, failure_behavior, sem, settings.retry_attempts)
    reason = None
    tally = None
    if method in ("auto", "exact"):
        try:
            work = _Work(budget)
            tally = _exact(plan, state, compiled_goal, work)
            blast = {}
            for n, step in enumerate(plan.steps):
                if step.tool is not None and tally.failed[n] > 0 and plan.descendants[step.index]:
                    blast[n] = _exact(plan, state, compiled_goal, work, forced=n).blast[n]
            tally.blast = defaultdict(float, blast)
        except _Budget as over:
            if method == "exact":
                raise UsageError(
                    f"the exact method outgrew its budget of {budget:,} states ({over}); "
                    "use method auto or sampled"
                ) from None
            reason = f"sampled: the exact method outgrew its budget of {budget:,} states ({over})"
            tally = None
    exact = tally is not None
    derivatives = None
    if exact and sensitivity and compiled_goal.goal is not None:
        try:
            derivatives = _sensitivity(plan, state, compiled_goal, _Work(budget))
        except _Budget as over:
            reason = f"sensitivity not computed: past the budget of {budget:,} states ({over})"
    elif sensitivity:
        reason = (reason + "; " if reason else "") + (
            "sensitivity needs a goal" if compiled_goal.goal is None else
            "sensitivity is computed by the exact method only"
        )  # fmt: skip
    if tally is None:
        if progress is not None:
            progress.note("sampling")
        tally = _sampled(plan, state, compiled_goal, settings, progress)
    result = _result(model, plan, tally, compiled_goal, settings, provenance, exact, reason)
    if compiled_goal.goal is not None:
        result.critical_actions = _critical(plan, state, compiled_goal)
    result.sensitivity = derivatives
    if clamped:
        result.notes.append(
            "success rates are probabilities: clamped to [0, 1]: " + ", ".join(clamped)
        )
    written = {key for step in plan.steps for key in step.effects}
    unwritten = sorted(compiled_goal.keys - written)
    if unwritten:
        names = ", ".join(repr(key) for key in unwritten)
        result.notes.append(
            f"the goal reads {names}, which no action writes: the initial state alone "
            "decides it (a misspelt key, or an effect the plan does not declare?)"
        )
    assumed = sorted(t for t, e in provenance.items() if e["source"] == "default")
    if assumed:
        rate = _clamp(settings.default_success_rate)
        result.notes.append(
            f"no rate given for {', '.join(assumed)}: assumed the default success rate "
            f"{rate:g} (--rates, --history or --default-rate)"
        )
    return result


def _walk_once(plan: _Plan, state: dict[str, Any], failing: int | None) -> dict[str, Any]:
    """The end state of one run with every tool call succeeding but the step at
    position ``failing``."""
    index = None if failing is None else plan.steps[failing].index
    return _walked(plan, state, _dispatch(plan, lambda step: step.index != index)).state


def _critical(plan: _Plan, state: dict[str, Any], goal: _Goal) -> list[str]:
    """The tool calls whose failure alone loses a goal every success reaches."""
    if not goal.holds(_walk_once(plan, state, None)):
        return []
    return [
        step.action_id
        for n, step in enumerate(plan.steps)
        if step.tool is not None and not goal.holds(_walk_once(plan, state, n))
    ]


def _sensitivity(plan: _Plan, state: dict[str, Any], goal: _Goal, work: _Work) -> dict[str, float]:
    """d p_goal / d rate for each tool. p_goal is multilinear in the calls' rates, so
    its partial derivative in one call's rate is exactly p(that call always
    succeeds) - p(it always fails); a tool's derivative is the sum over its calls."""
    from dataclasses import replace

    out: dict[str, float] = {}
    for n, step in enumerate(plan.steps):
        if step.tool is None:
            continue
        ends = []
        for rate in (1.0, 0.0):
            steps = list(plan.steps)
            steps[n] = replace(step, rate=rate, tries=(rate,), fail=1.0 - rate)
            fixed = replace(plan, steps=steps)
            ends.append(_exact(fixed, state, goal, work).goal)
        out[step.tool] = out.get(step.tool, 0.0) + ends[0] - ends[1]
    return {tool: _round(value) for tool, value in sorted(out.items())}


def _result(
    model: ActionProposal,
    plan: _Plan,
    tally: _Tally,
    goal: _Goal,
    settings: RiskConfig,
    provenance: dict[str, dict[str, Any]],
    exact: bool,
    reason: str | None,
) -> RiskResult:
    rows_by_index: dict[int, dict[str, Any]] = {}
    for n, step in enumerate(plan.steps):
        failed = tally.failed[n]
        rows_by_index[step.index] = {
            "action_id": step.action_id,
            "p_rejected": _round(tally.rejected[n]),
            "p_failed": _round(failed),
            "p_effects_landed": _round(tally.landed[n]),
            "mean_blast_radius": _round(tally.blast.get(n, 0.0) / failed) if failed > 0 else 0.0,
        }
    never = {"p_rejected": 1.0, "p_failed": 0.0, "p_effects_landed": 0.0, "mean_blast_radius": 0.0}
    outcomes = [  # an action on or after a dependency cycle (strict) never runs
        rows_by_index.get(i) or {"action_id": a.id, **never} for i, a in enumerate(model.actions)
    ]
    distribution = []
    for key in sorted(tally.values):
        by_value = tally.values[key]
        present = sum(by_value.values())
        ranked = sorted(by_value.items(), key=lambda kv: (-kv[1], kv[0]))
        distribution.append(
            {
                "key": key,
                "p_present": _round(present),
                "values": [
                    {"value": tally.shown[text], "probability": _round(p)} for text, p in ranked
                ],
            }
        )
    p_goal = None if goal.goal is None else _round(tally.goal)
    result = RiskResult(
        trials=settings.trials,
        seed=settings.seed,
        p_goal_reached=p_goal,
        goal_underivable_conditions=list(goal.underivable),
        # an action that is never walked (on or after a cycle) never lands
        p_all_effects_landed=_round(tally.all_landed) if len(plan.steps) == len(outcomes) else 0.0,
        tool_calls=_stats(tally.tool_calls),
        actions_executed=_stats(tally.executed),
        state_distribution=distribution,
        action_outcomes=outcomes,
        rate_provenance=provenance,
        method="exact" if exact else "sampled",
        tier=Tier.DECISION_PROCEDURE if exact else Tier.SAMPLED,
        reason=reason,
    )
    if not exact:
        n = settings.trials
        if p_goal is not None:
            result.intervals["p_goal_reached"] = _wilson(p_goal, n)
        result.intervals["p_all_effects_landed"] = _wilson(result.p_all_effects_landed, n)
        for i, row in enumerate(outcomes):
            for name in ("p_rejected", "p_failed", "p_effects_landed"):
                result.intervals[f"action_outcomes[{i}].{name}"] = _wilson(row[name], n)
    return result
