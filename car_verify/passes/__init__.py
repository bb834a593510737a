"""The pass framework: what a pass declares, the analyses it reads, and the runner.

A pass is a class with a ``name``, the ``tier`` of its findings, the ``codes`` it
may emit, what it ``verifies`` and ``cannot_verify``, and what it ``requires``
(a tool registry, a ``max_actions`` budget). The runner skips a pass whose
requirement is missing and records ``ran: false`` and why in the evidence.

Shared facts are *analyses* computed once per proposal and cached on the
:class:`Context`: the :class:`~car_verify.semantics.dag.Dag` and the verify-mode
:class:`~car_verify.semantics.walk.Walk`. Checks read them and emit :class:`Issue` records;
they never format output.

This module knows no pass by name: the built-in passes (``car_verify.analyses``)
and the third-party ones (the ``car_verify.passes`` entry-point group) are found
by :mod:`car_verify.passes.registry`, which sits above both and hands them to
:func:`run_passes`.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from ..base.codes import Code, lookup
from ..base.errors import TOO_DEEP, CarVerifyError, InputError, PassError, UsageError, json_pointer
from ..base.findings import Issue, Severity, Tier
from ..base.schedules import SCHEDULES, Schedules
from ..base.values import shown
from ..ir.model import ActionProposal
from ..rules.tools import ToolRegistry
from ..semantics import semantics_of
from ..semantics.base import Semantics
from ..semantics.dag import Dag
from ..semantics.walk import Walk, walk

if TYPE_CHECKING:
    from ..base.config import ProfileName

__all__ = [
    "CheckRecord",
    "Context",
    "Example",
    "Options",
    "Pass",
    "Preserves",
    "Requirement",
    "Said",
    "gathered",
    "identical_groups",
    "key_pointer_in",
    "named_actions",
    "run_and_say",
    "run_passes",
]


class Requirement(StrEnum):
    """Inputs a pass may need beyond the proposal."""

    TOOLS = "tools"
    MAX_ACTIONS = "max_actions"
    INITIAL_STATE = "initial_state"
    POLICIES = "policies"
    LABELS = "labels"
    INTENT = "intent"
    Z3 = "z3"


class Preserves(StrEnum):
    """Edits of a proposal under which a pass's findings are known not to change.

    A pass declares what it preserves (``Pass.preserves``), as an LLVM pass declares
    the analyses it keeps valid, so a transformation can skip re-running it without
    naming passes. One kind of edit is known today.
    """

    #: Dropping a ``state_dependencies`` entry that leaves the DAG's order as it was.
    #: The findings then change only through the walk's ``missing-dependency`` of
    #: the edited action's own key (which ``optimize`` accounts for).
    ORDER_KEEPING_DEPENDENCY_EDIT = "order-keeping-dependency-edit"


@dataclass(frozen=True, slots=True)
class Options:
    """Settings of a verify run beyond its inputs (checked when made)."""

    max_actions: int | None = None
    repeat_threshold: int = 3
    #: How many (finished actions, monitor state) pairs a trace rule may explore.
    trace_budget: int = 100_000
    #: Which schedules the trace rules are checked over: the executor's (``levels``:
    #: levels in order, any interleaving inside one) or every order the DAG allows.
    schedules: Schedules = "levels"

    def __post_init__(self) -> None:
        limit = self.max_actions
        if limit is not None and (type(limit) is not int or limit < 0):
            raise UsageError(f"max_actions must be a non-negative integer, got {shown(limit)}")
        threshold = self.repeat_threshold
        if type(threshold) is not int or threshold < 1:
            raise UsageError(f"repeat_threshold must be a positive integer, got {shown(threshold)}")
        if self.schedules not in SCHEDULES:
            known = " or ".join(f'"{s}"' for s in SCHEDULES)
            raise UsageError(f"schedules must be {known}, got {shown(self.schedules)}")


@dataclass(frozen=True)
class Example:
    """A small proposal a pass must accept (``codes == ()``) or flag with ``codes``:
    parsed JSON, or JSON text (for what only text can say: a repeated key).

    The examples are run as tests and rendered into the documentation.
    """

    title: str
    proposal: Mapping[str, Any] | str
    codes: tuple[str, ...] = ()
    tools: Sequence[Mapping[str, Any]] | None = None
    initial_state: Mapping[str, Any] | None = None
    max_actions: int | None = None
    #: Policy rules as ``.car/policies`` TOML text.
    policies: str | None = None
    #: Tool labels and a flow policy (``car-verify flow``'s inputs).
    labels: Mapping[str, Any] | None = None
    flow_policy: Mapping[str, Any] | None = None
    #: An intent (``.car/intent.json``'s content).
    intent: Mapping[str, Any] | None = None
    #: The profile the example's codes are those of (every pass runs under both;
    #: the tests also run each example under the other one).
    profile: str = "strict"

    @property
    def valid(self) -> bool:
        return not self.codes

    def document(self) -> dict[str, Any] | str:
        """The proposal to verify: a fresh dict, or the JSON text as written."""
        return self.proposal if isinstance(self.proposal, str) else dict(self.proposal)

    def inputs(self) -> dict[str, Any]:
        """What ``verify`` takes beside the proposal and the profile: the example's
        inputs (its policies read from their text). The tests and the documentation
        verify an example with them."""
        from ..rules.policy import load_policy_text

        return {
            "policies": None if self.policies is None else load_policy_text(self.policies),
            "labels": self.labels,
            "flow_policy": self.flow_policy,
            "intent": self.intent,
            "tools": self.tools,
            "initial_state": self.initial_state,
            "max_actions": self.max_actions,
        }

    def shown(self) -> str:
        """The proposal as the documentation prints it."""
        if isinstance(self.proposal, str):
            return self.proposal.strip()
        return json.dumps(self.proposal, indent=2)


class Context:
    """One proposal plus its inputs, with the analyses computed on first use."""

    def __init__(
        self,
        proposal: ActionProposal,
        *,
        tools: ToolRegistry | None = None,
        initial_state: Mapping[str, Any] | None = None,
        options: Options | None = None,
        policies: Any = None,
        labels: Mapping[str, Any] | None = None,
        flow_policy: Any = None,
        intent: Any = None,
        semantics: Semantics | str | None,
    ) -> None:
        self.proposal = proposal
        self.tools = tools
        #: A :class:`car_verify.rules.policy.PolicyEngine`, when policies were given.
        self.policies = policies
        #: Tool labels (``car_verify.plan.flow.Label`` by tool), when given, and the flow
        #: policy (``car_verify.plan.flow.FlowPolicy``) they are checked against.
        self.labels = labels
        self.flow_policy = flow_policy
        #: The user's intent (``car_verify.plan.intent.Intent``) and the tools whose
        #: results are untrusted, when an intent was given.
        self.intent = intent
        #: The semantics the passes run under (its DAG, its walk, its severities).
        self.semantics: Semantics = semantics_of(semantics)
        #: Its profile's name.
        self.profile: ProfileName = self.semantics.profile.value
        self.initial_state: dict[str, Any] = dict(initial_state or {})
        self.state_given = initial_state is not None
        self.options = options or Options()

    @property
    def max_actions(self) -> int | None:
        """The action budget: the one given, else the profile's default (None: none)."""
        given = self.options.max_actions
        return self.semantics.default_max_actions if given is None else given

    def reports(self, code: str) -> bool:
        """Whether the run's profile reports ``code`` (a pass asks before it makes a
        finding whose code one profile does not report)."""
        return self.semantics.reports(code)

    @cached_property
    def parameter_problems(self) -> dict[int, list[tuple[str, tuple[str | int, ...]]]]:
        """Each tool call's parameter problems under the profile's check
        (:meth:`Semantics.parameter_problems`), by action position: the tool calls
        of a registered tool, when a registry is given."""
        tools = self.tools
        if tools is None:
            return {}
        check = self.semantics.parameter_problems
        return {
            i: check(tools, action.tool, action.parameters)
            for i, action in enumerate(self.proposal.actions)
            if action.type == "tool_call" and action.tool is not None and action.tool in tools
        }

    @cached_property
    def dag(self) -> Dag:
        """The proposal's DAG under the context's semantics."""
        return self.semantics.order(self.proposal)

    @cached_property
    def conflicts(self) -> list[tuple[int, int, str]]:
        """The write conflicts under the context's semantics, by action position."""
        return self.semantics.conflicts(self.proposal, self.dag)

    @cached_property
    def walk(self) -> Walk:
        """The verify-mode walk (blocked actions' effects applied)."""
        return walk(self.dag, self.initial_state, mode="verify", semantics=self.semantics)

    @cached_property
    def identical_calls(self) -> list[list[int]]:
        """The groups of tool calls of one tool whose parameters the profile calls
        equal (:meth:`Semantics.equal`), each in proposal order, by first member:
        those of two or more when the profile reports ``duplicate-call``, else those
        of ``repeat_threshold`` or more (the loop checks read nothing smaller)."""
        threshold = self.options.repeat_threshold
        at_least = min(2, threshold) if self.reports("duplicate-call") else threshold
        calls = [
            (i, action.tool, action.parameters)
            for i, action in enumerate(self.proposal.actions)
            if action.type == "tool_call" and action.tool is not None
        ]
        return identical_groups(calls, self.semantics, at_least)

    def has(self, requirement: Requirement) -> bool:
        if requirement is Requirement.TOOLS:
            return self.tools is not None
        if requirement is Requirement.MAX_ACTIONS:
            return self.max_actions is not None
        if requirement is Requirement.INITIAL_STATE:
            return self.state_given
        if requirement is Requirement.POLICIES:
            return self.policies is not None
        if requirement is Requirement.LABELS:
            return self.labels is not None
        if requirement is Requirement.INTENT:
            return self.intent is not None
        if requirement is Requirement.Z3:
            import importlib.util

            return importlib.util.find_spec("z3") is not None
        return False  # pragma: no cover

    def issue(
        self,
        code: str,
        message: str,
        *,
        index: int | None = None,
        where: Sequence[str | int] = (),
        severity: Severity | None = None,
        tier: Tier | None = None,
    ) -> Issue:
        """A finding located at action ``index`` (None: the proposal), with the
        severity the profile gives the code there (:meth:`Semantics.severity`, from
        the code table) and the code's tier.

        A code outside the table (a policy rule's name) needs ``severity`` and
        ``tier``. A code the profile does not report is a programming error: ask
        :meth:`reports` first.
        """
        # A large plan makes thousands of findings: the severity is the semantics'
        # (which remembers its answers), and the Issue is made by position.
        action = None if index is None else self.proposal.actions[index]
        if severity is None or tier is None:
            spec = lookup(code)
            code = spec.name
            tier = tier or spec.tier
            if severity is None:
                severity = self.semantics.severity(code, action)
        if severity is None:
            raise UsageError(
                f"finding code {code!r} is not reported under the {self.profile} profile"
            )
        pointer = json_pointer(where) if where else ""
        if action is None:
            where_id = self.semantics.placement.proposal_id
            return Issue(code, severity, tier, message, where_id, None, pointer)
        return Issue(code, severity, tier, message, action.id, index, f"/actions/{index}{pointer}")


def identical_groups(
    calls: Iterable[tuple[int, str, Mapping[str, Any]]], semantics: Semantics, at_least: int
) -> list[list[int]]:
    """The groups of at least ``at_least`` of ``calls`` (position, tool, parameters:
    the tool calls that name a tool, in proposal order) of one tool whose parameters
    ``semantics`` calls equal, each in proposal order, sorted by first member
    (:attr:`Context.identical_calls`; the flat plan's reader asks it too)."""
    fingerprint, canonical = semantics.fingerprint, semantics.canonical
    # A cheap fingerprint first; only crowded buckets are compared exactly. A bucket
    # is its first call's position until a second call falls in it (then a list):
    # no object per call (at 10,000 calls, the collector's share).
    buckets: dict[tuple[str, int], int | list[int]] = {}
    given: dict[int, Mapping[str, Any]] = {}
    for i, tool, parameters in calls:
        given[i] = parameters
        key = (tool, fingerprint(parameters))
        found = buckets.get(key)
        if found is None:
            buckets[key] = i
        elif isinstance(found, int):
            buckets[key] = [found, i]
        else:
            found.append(i)
    groups: list[list[int]] = []
    for members in buckets.values():
        if isinstance(members, int) or len(members) < at_least:
            continue
        exact: dict[str, list[int]] = {}
        texts: dict[int, str] = {}  # by object: the calls that share one parameters object
        for i in members:
            parameters = given[i]
            text = texts.get(id(parameters))
            if text is None:
                text = texts[id(parameters)] = canonical(parameters)
            exact.setdefault(text, []).append(i)
        groups += [group for group in exact.values() if len(group) >= at_least]
    groups.sort()
    return groups


def named_actions(ids: Sequence[str], positions: Sequence[int], total: int | None = None) -> str:
    """The first five actions by id, and how many more of ``total`` there are (how
    ``strips``' messages name writers)."""
    total = len(positions) if total is None else total
    shown = ", ".join([ids[i] for i in positions[:5]])
    return shown + (f" and {total - 5} more" if total > 5 else "")


def key_pointer_in(
    state_dependencies: Sequence[str], parameters: Mapping[str, Any], key: str, start: int = 0
) -> tuple[str | int, ...]:
    """Where an action given by its ``state_dependencies`` and ``parameters`` names
    a depended-on key (in ``state_dependencies``, its first entry from ``start``
    on): ``strips``' pointer of a missing key, and the fused kernel's."""
    if key in state_dependencies[start:]:
        return ("state_dependencies", state_dependencies.index(key, start))
    if parameters.get("key") == key:
        return ("parameters", "key")
    keys = parameters.get("keys")
    if isinstance(keys, list) and key in keys:
        return ("parameters", "keys", keys.index(key))
    return ()


class Pass(abc.ABC):
    """Base class of an analysis pass. Subclasses set the class attributes and ``run``."""

    name: ClassVar[str]
    tier: ClassVar[Tier]
    codes: ClassVar[tuple[str, ...]]
    verifies: ClassVar[str]
    cannot_verify: ClassVar[str]
    requires: ClassVar[frozenset[Requirement]] = frozenset()
    #: Codes a third-party pass adds to the table.
    new_codes: ClassVar[tuple[Code, ...]] = ()
    #: What the pass takes for granted (collected into ``evidence.assumptions``).
    assumes: ClassVar[tuple[str, ...]] = ()
    #: What may still go wrong although the pass is silent (``evidence.residual_risks``).
    residual_risks: ClassVar[tuple[str, ...]] = ()
    examples: ClassVar[tuple[Example, ...]] = ()
    #: Run when no selection is given. Opt-in passes (False) run only when named...
    default: ClassVar[bool] = True
    #: ...or, when set, by default whenever this input is given (and are not listed
    #: in the evidence otherwise: without the input they do not apply).
    when_given: ClassVar[Requirement | None] = None
    #: The pass reports codes defined by its input (policy rule names), not the table.
    dynamic_codes: ClassVar[bool] = False
    #: Edits under which the pass's findings stay as they were (none is assumed).
    preserves: ClassVar[frozenset[Preserves]] = frozenset()

    #: The passes whose check records this pass's records stand for in the evidence
    #: (CAR's evidence mapping: its eight checks count the findings of the passes
    #: that make them). When it runs, their records and its own are replaced by what
    #: its :meth:`sum_up` says. None: the pass says its own record only.
    stands_for: ClassVar[frozenset[str] | None] = None

    @abc.abstractmethod
    def run(self, ctx: Context) -> Iterable[Issue]:
        """Yield the findings for ``ctx.proposal``."""

    def sum_up(
        self, ctx: Context, found: Sequence[Issue], records: Mapping[str, CheckRecord]
    ) -> Said:
        """What the pass says in the place of itself and the passes of
        ``stands_for``: ``found`` is their findings, ``records`` their own records by
        pass name (a pass that was not selected has none)."""
        return self.said(ctx, found)

    def said(self, ctx: Context, found: Sequence[Issue]) -> Said:
        """What the pass says for the evidence once it has run and found ``found``:
        one check record, its declared ``assumes`` and ``residual_risks``. A pass that
        is several checks (the car profile's, CAR's eight) says more."""
        # A decision procedure that fell back to sampling somewhere says so.
        tier = Tier.SAMPLED if any(i.tier is Tier.SAMPLED for i in found) else self.tier
        record = CheckRecord(self.name, True, self.verifies, self.cannot_verify, len(found), tier)
        return Said([record], self.assumes, (), self.residual_risks)


@dataclass(slots=True)
class CheckRecord:
    """One entry of ``evidence.checks``."""

    name: str
    ran: bool
    verifies: str
    cannot_verify: str
    findings: int
    tier: Tier
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "ran": self.ran,
            "verifies": self.verifies,
            "cannot_verify": self.cannot_verify,
            "findings": self.findings,
            "tier": self.tier._value_,  # as .value, without the enum's descriptor
        }
        if self.reason is not None:
            out["reason"] = self.reason
        return out


@dataclass(slots=True)
class Said:
    """What one pass says beside its findings: its check records, what it assumed,
    what it left untested, what may still go wrong, and a score of its own (the car
    profile's: CAR's coverage score) or None."""

    checks: list[CheckRecord]
    assumptions: Sequence[str] = ()
    untested_regions: Sequence[str] = ()
    residual_risks: Sequence[str] = ()
    score: float | None = None


_REASONS = {
    Requirement.TOOLS: "no tool registry was given",
    Requirement.MAX_ACTIONS: "no max_actions was given",
    Requirement.INITIAL_STATE: "no initial state was given",
    Requirement.POLICIES: "no policies were given",
    Requirement.Z3: "z3-solver cannot be imported",
}


def run_passes(ctx: Context, passes: Sequence[Pass]) -> tuple[list[Issue], list[CheckRecord]]:
    """Run each pass whose requirements are met; findings sorted by action, then code."""
    issues, said = run_and_say(ctx, passes)
    return issues, [record for one in said for record in one.checks]


def run_and_say(ctx: Context, passes: Sequence[Pass]) -> tuple[list[Issue], list[Said]]:
    """Run each pass whose requirements are met, and what each says for
    the evidence (a skipped pass: one record with ``ran: false`` and why). Findings
    sorted by action, then code."""
    issues: list[Issue] = []
    said: list[Said | None] = []
    runs: list[tuple[Pass, list[Issue] | None]] = []  # None: skipped
    for p in passes:
        reason = _why_skipped(ctx, p) if p.requires else None
        if reason is not None:
            record = CheckRecord(p.name, False, p.verifies, p.cannot_verify, 0, p.tier, reason)
            untested = f"{p.name}: {p.verifies} (not checked: {reason})"
            said.append(Said([record], untested_regions=(untested,)))
            runs.append((p, None))
            continue
        try:
            found = list(p.run(ctx))
        except CarVerifyError:
            raise
        except RecursionError:  # a value too deep to follow: the input's fault, named here
            raise InputError(f"{TOO_DEEP} (in pass {p.name!r})") from None
        except Exception as err:
            raise PassError(p.name, err) from err
        if not p.dynamic_codes:
            allowed = p.codes
            for issue in found:
                if issue.code not in allowed:
                    raise PassError(p.name, ValueError(f"emitted undeclared code {issue.code!r}"))
        issues.extend(found)
        said.append(p.said(ctx, found))
        runs.append((p, found))
    for p, ran in runs:
        if p.stands_for is not None and ran is not None:
            _sum_up(ctx, p, runs, said)
    issues.sort(key=Issue.sort_key)
    return issues, [one for one in said if one is not None]


def _sum_up(
    ctx: Context,
    summing: Pass,
    runs: list[tuple[Pass, list[Issue] | None]],
    said: list[Said | None],
) -> None:
    """Replace the entries of ``summing`` and the passes it stands for in ``said``
    (aligned with ``runs``) by its summary, at the first one's place."""
    names = (summing.stands_for or frozenset()) | {summing.name}
    members = [n for n, (p, _) in enumerate(runs) if p.name in names and said[n] is not None]
    found = [issue for n in members for issue in runs[n][1] or ()]
    records = {runs[n][0].name: one.checks[0] for n in members if (one := said[n]) and one.checks}
    summary = summing.sum_up(ctx, found, records)
    for n in members:
        said[n] = None
    said[members[0]] = summary


def _why_skipped(ctx: Context, p: Pass) -> str | None:
    """Why ``p`` does not run on ``ctx`` (an input it needs is missing), or None.
    Every pass runs under every profile: what differs, it reads from
    ``ctx.semantics``."""
    missing = [r for r in sorted(p.requires) if not ctx.has(r)]
    return "; ".join(_REASONS[r] for r in missing) if missing else None


def gathered(said: Sequence[Said]) -> tuple[list[str], list[str], list[str], float | None]:
    """``assumptions``, ``untested_regions``, ``residual_risks`` and the score of the
    evidence, from what each pass said (each line once, in the passes' order)."""
    assumptions: dict[str, None] = {}
    untested: dict[str, None] = {}
    risks: dict[str, None] = {}
    score = None
    for one in said:
        assumptions.update(dict.fromkeys(one.assumptions))
        untested.update(dict.fromkeys(one.untested_regions))
        risks.update(dict.fromkeys(one.residual_risks))
        if one.score is not None:
            score = one.score
    return list(assumptions), list(untested), list(risks), score
