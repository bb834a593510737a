"""The Python API: ``verify`` and ``simulate``, and their result types."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .base.display import HtmlDisplay
from .base.errors import InputError, deep_values_are_input_errors
from .base.findings import Fix, Issue, Severity
from .base.schedules import SCHEDULES, Schedules
from .base.values import copy_json
from .ir._codec import Bad, d_json, expected
from .ir.flat import FlatPlan, flat_source
from .ir.model import ActionProposal, Readable, load
from .passes import (
    CheckRecord,
    Context,
    Options,
    Pass,
    Requirement,
    gathered,
    run_and_say,
)
from .passes.fused import fused_verify, runnable
from .passes.registry import default_selection, registry_build
from .rules.tools import ToolRegistry
from .semantics import Profile, ProfileLike, semantics_of
from .semantics.base import Semantics
from .semantics.dag import Dag
from .semantics.profiles import DEFAULT_PROFILE
from .semantics.walk import ActionTrace, describe, walk

if TYPE_CHECKING:
    from .passes.fused import Fused

__all__ = ["Evidence", "Inputs", "Simulation", "VerificationResult", "simulate", "verify"]

ProposalLike = ActionProposal | Mapping[str, Any] | str | bytes | os.PathLike[str] | Readable


@dataclass(slots=True)
class Evidence:
    """What was checked, what was assumed, and what was left untested."""

    checks: list[CheckRecord]
    assumptions: list[str]
    untested_regions: list[str]
    residual_risks: list[str]
    #: A score given by the profile (the ``car`` profile reports CAR's own).
    score: float | None = None
    #: What ran the checks: ``"passes"``, the pass runner (every pass, every input),
    #: or ``"fused"``, the default passes fused over the flat plan
    #: (:mod:`car_verify.passes.fused`), which give the same findings.
    runner: str = "passes"

    @property
    def confidence(self) -> float:
        """The share of applicable checks that ran (coverage, not a probability),
        or the profile's own score."""
        if self.score is not None:
            return self.score
        if not self.checks:
            return 0.0
        return sum(1 for c in self.checks if c.ran) / len(self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "checks": [c.to_dict() for c in self.checks],
            "assumptions": list(self.assumptions),
            "untested_regions": list(self.untested_regions),
            "residual_risks": list(self.residual_risks),
            "confidence": self.confidence,
            "runner": self.runner,
        }


@dataclass(frozen=True, slots=True)
class Inputs:
    """What a verify run was given beside the proposal (its registry, initial state,
    options, policies, labels, intent, semantics and the passes asked for), so that
    another proposal can be checked the same way (:meth:`VerificationResult.rerun`)."""

    tools: ToolRegistry | None
    initial_state: Mapping[str, Any] | None
    options: Options
    policies: Any
    labels: Any
    flow_policy: Any
    intent: Any
    semantics: Any
    passes: Iterable[str | Pass | type[Pass]] | None

    @classmethod
    def of(cls, ctx: Context, passes: Iterable[str | Pass | type[Pass]] | None) -> Inputs:
        return cls(
            ctx.tools,
            ctx.initial_state if ctx.state_given else None,
            ctx.options,
            ctx.policies,
            ctx.labels,
            ctx.flow_policy,
            ctx.intent,
            ctx.semantics,
            passes,
        )

    def context(self, proposal: ActionProposal) -> Context:
        return Context(
            proposal,
            tools=self.tools,
            initial_state=self.initial_state,
            options=self.options,
            policies=self.policies,
            labels=self.labels,
            flow_policy=self.flow_policy,
            intent=self.intent,
            semantics=self.semantics,
        )


@dataclass(slots=True)
class VerificationResult(HtmlDisplay):
    """The verification result of the spec, plus ``evidence``.

    ``to_dict()`` is exactly the wire object: ``valid``, ``issues``,
    ``simulated_state``, ``execution_levels``, ``conflicts``, ``evidence``.
    """

    issues: list[Issue]
    simulated_state: dict[str, Any]
    execution_levels: list[list[str]]
    conflicts: list[list[str]]
    evidence: Evidence
    proposal: ActionProposal = field(repr=False)
    _dag: Dag | None = field(default=None, repr=False, compare=False)
    #: The profile whose answers these are (docs/semantics.md §9).
    profile: Profile = DEFAULT_PROFILE
    #: What the run was given beside the proposal (None: not known).
    inputs: Inputs | None = field(default=None, repr=False, compare=False)
    _fixes: list[Fix] | None = field(default=None, repr=False, compare=False)

    @property
    def fixes(self) -> list[Fix]:
        """The repairs of the findings, derived on first read (each re-verified:
        ``car_verify.deciders.repair``): one :class:`~car_verify.base.findings.Fix`
        per finding that has one, in the findings' order. Reading them also attaches
        each to its finding in :attr:`issues` (``Issue.fix``), so the wire object
        then carries them. Derived only when asked: ``verify`` itself does not."""
        if self._fixes is None:
            from .base.deferred import deriver

            self._fixes = deriver("fixes")(self)
        return self._fixes

    def rerun(self, proposal: ProposalLike) -> VerificationResult:
        """``verify`` of another proposal with this run's inputs (registry, initial
        state, options, policies, labels, intent, profile and passes)."""
        if self.inputs is None:
            raise ValueError("this result does not know the inputs it was verified with")
        model = load(proposal)
        self.inputs.semantics.refuse(model)
        return assess(self.inputs.context(model), self.inputs.passes)

    @property
    def dag(self) -> Dag:
        """The proposal's :class:`~car_verify.semantics.dag.Dag`, built on first use.

        ``verify`` does not keep the one its passes used, so a kept result does not
        pin that index in memory (the executor keeps the one it admitted with).
        """
        if self._dag is None:
            self._dag = Dag(self.proposal)
        return self._dag

    @property
    def valid(self) -> bool:
        """False if any issue has severity ``error``."""
        return not any(i.severity is Severity.ERROR for i in self.issues)

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Issue]:
        return [i for i in self.issues if i.severity is Severity.WARNING]

    def codes(self) -> set[str]:
        return {i.code for i in self.issues}

    def to_dict(self, *, fixes: bool = False) -> dict[str, Any]:
        """The wire object; with ``fixes``, each finding with its repair (:attr:`fixes`)."""
        if fixes:
            self.fixes  # noqa: B018 - attaches each fix to its finding
        return {
            "valid": self.valid,
            "issues": [i.to_dict() for i in self.issues],
            "simulated_state": json.loads(json.dumps(self.simulated_state)),
            "execution_levels": [list(level) for level in self.execution_levels],
            "conflicts": [list(c) for c in self.conflicts],
            "evidence": self.evidence.to_dict(),
            "profile": self.profile.value,
        }

    def to_json(self, *, indent: int | None = 2, fixes: bool = False) -> str:
        return json.dumps(self.to_dict(fixes=fixes), indent=indent, ensure_ascii=False)


class _FusedResult(VerificationResult):
    """A :class:`VerificationResult` of the fused kernel (:mod:`car_verify.passes.fused`):
    the verdict is known, each field is made on first use (the ``info`` notes, the
    :class:`Issue` objects, the evidence, the model of the proposal), and
    :meth:`to_dict` writes what is not made yet without making it."""

    __slots__ = ("_given", "_run")

    _run: Fused
    #: What the run was given beside the proposal: the initial state (None: none), the
    #: budget and repeat threshold as given, and the schedules (for :attr:`inputs`).
    _given: tuple[dict[str, Any] | None, int | None, int, Schedules]

    def __init__(
        self, run: Fused, given: tuple[dict[str, Any] | None, int | None, int, Schedules]
    ) -> None:
        self._run = run
        self._given = given
        self._dag = None
        self._fixes = None
        self.profile = run.semantics.profile

    @staticmethod
    def _made(slot: Any, result: VerificationResult) -> Any:
        try:
            return slot.__get__(result)
        except AttributeError:
            return _UNMADE

    @property
    def issues(self) -> list[Issue]:
        made = self._made(_SLOTS["issues"], self)
        if made is _UNMADE:
            made = self.issues = self._run.issues()
        return made  # type: ignore[no-any-return]

    @issues.setter
    def issues(self, value: list[Issue]) -> None:
        _SLOTS["issues"].__set__(self, value)

    @property
    def simulated_state(self) -> dict[str, Any]:
        made = self._made(_SLOTS["simulated_state"], self)
        if made is _UNMADE:
            self._run.rest()  # the state holds the document's values, as the model does
            made = self.simulated_state = self._run.state
        return made  # type: ignore[no-any-return]

    @simulated_state.setter
    def simulated_state(self, value: dict[str, Any]) -> None:
        _SLOTS["simulated_state"].__set__(self, value)

    @property
    def execution_levels(self) -> list[list[str]]:
        made = self._made(_SLOTS["execution_levels"], self)
        if made is _UNMADE:
            ids = self._run.plan.ids
            made = self.execution_levels = [[ids[i] for i in level] for level in self._run.levels]
        return made  # type: ignore[no-any-return]

    @execution_levels.setter
    def execution_levels(self, value: list[list[str]]) -> None:
        _SLOTS["execution_levels"].__set__(self, value)

    @property
    def conflicts(self) -> list[list[str]]:
        made = self._made(_SLOTS["conflicts"], self)
        if made is _UNMADE:
            ids = self._run.plan.ids
            made = self.conflicts = [[ids[a], ids[b], key] for a, b, key in self._run.conflicts]
        return made  # type: ignore[no-any-return]

    @conflicts.setter
    def conflicts(self, value: list[list[str]]) -> None:
        _SLOTS["conflicts"].__set__(self, value)

    @property
    def evidence(self) -> Evidence:
        made = self._made(_SLOTS["evidence"], self)
        if made is _UNMADE:
            from .passes.fused import evidence_parts

            checks, assumptions, untested, risks, score = evidence_parts(self._run)
            made = self.evidence = Evidence(checks, assumptions, untested, risks, score, "fused")
        return made  # type: ignore[no-any-return]

    @evidence.setter
    def evidence(self, value: Evidence) -> None:
        _SLOTS["evidence"].__set__(self, value)

    @property
    def proposal(self) -> ActionProposal:
        made = self._made(_SLOTS["proposal"], self)
        if made is _UNMADE:
            # The model shares the document's values: what is left to find is found
            # first, so that no change made to it through the model can reach it.
            self._run.rest()
            made = self.proposal = self._run.plan.model()
        return made  # type: ignore[no-any-return]

    @proposal.setter
    def proposal(self, value: ActionProposal) -> None:
        _SLOTS["proposal"].__set__(self, value)

    @property
    def inputs(self) -> Inputs | None:
        made = self._made(_SLOTS["inputs"], self)
        if made is _UNMADE:
            state, max_actions, repeat_threshold, schedules = self._given
            options = Options(
                max_actions=max_actions, repeat_threshold=repeat_threshold, schedules=schedules
            )
            sem = self._run.semantics
            made = self.inputs = Inputs(None, state, options, None, None, None, None, sem, None)
        return made  # type: ignore[no-any-return]

    @inputs.setter
    def inputs(self, value: Inputs | None) -> None:
        _SLOTS["inputs"].__set__(self, value)

    @property
    def valid(self) -> bool:
        if self._made(_SLOTS["issues"], self) is _UNMADE:
            return self._run.errors == 0  # the notes are never errors
        return VerificationResult.valid.fget(self)  # type: ignore[attr-defined,no-any-return]

    def to_dict(self, *, fixes: bool = False) -> dict[str, Any]:
        """:meth:`VerificationResult.to_dict`, writing what is not made yet without
        making it (its findings from the kernel's until the :class:`Issue` objects are)."""
        if fixes:
            self.fixes  # noqa: B018 - attaches each fix to its finding
        run = self._run
        issues = self._made(_SLOTS["issues"], self)
        listed = run.issue_dicts() if issues is _UNMADE else [i.to_dict() for i in issues]
        state = self._made(_SLOTS["simulated_state"], self)
        return {
            "valid": self.valid,
            "issues": listed,
            "simulated_state": json.loads(json.dumps(run.state if state is _UNMADE else state)),
            "execution_levels": [list(level) for level in self.execution_levels],
            "conflicts": [list(c) for c in self.conflicts],
            "evidence": self.evidence.to_dict(),
            "profile": self.profile.value,
        }


_UNMADE: Any = object()
#: The slots of VerificationResult's fields, which _FusedResult's properties fill.
_SLOTS: dict[str, Any] = {
    name: VerificationResult.__dict__[name]
    for name in ("issues", "simulated_state", "execution_levels", "conflicts", "evidence",
                 "proposal", "inputs")
}  # fmt: skip


class Simulation(dict[str, Any], HtmlDisplay):
    """The end state of ``simulate`` (it *is* that dict), with the per-action ``trace``.

    ``trace`` holds one :class:`~car_verify.semantics.walk.ActionTrace` per walked action:
    its level, whether it runs or is blocked and by what, and which action (or the
    initial state, ``None``) supplied each value it relied on. ``unwalked`` lists
    the ids of actions on or after a dependency cycle.
    """

    trace: list[ActionTrace]
    unwalked: list[str]
    #: The profile whose walk this is.
    profile: str = DEFAULT_PROFILE.value

    @property
    def state(self) -> dict[str, Any]:
        return dict(self)

    @property
    def blocked(self) -> list[str]:
        return [t.action_id for t in self.trace if t.blocked]

    def to_dict(self) -> dict[str, Any]:
        """The end state as a fresh JSON object (what ``car-verify simulate`` prints)."""
        return json.loads(json.dumps(dict(self)))  # type: ignore[no-any-return]

    def trace_dicts(self) -> list[dict[str, Any]]:
        return [t.to_dict() for t in self.trace]

    def explain(self) -> str:
        """The trace as readable text, one line per action, level by level (in
        proposal order within a level)."""
        lines = []
        for t in sorted(self.trace, key=lambda t: t.level):
            if t.blocked:
                why = "; ".join(describe(c) for c in t.causes)
                lines.append(f"level {t.level}  {t.action_id}: blocked: {why}")
            else:
                parts = [
                    f"{key} from {who or 'the initial state'}" for key, who in t.supplied.items()
                ]
                if t.after:
                    parts.append("after " + ", ".join(t.after))
                got = f" ({'; '.join(parts)})" if parts else ""
                lines.append(f"level {t.level}  {t.action_id}: runs{got}")
        for action_id in self.unwalked:
            lines.append(f"no level  {action_id}: not walked (on or after a dependency cycle)")
        return "\n".join(lines)


#: An initial state: a JSON object, or the path of a file that holds one.
StateLike = Mapping[str, Any] | str | os.PathLike[str] | None


def _state_file(initial_state: StateLike) -> Mapping[str, Any] | None:
    """``initial_state=`` as ``tools=`` takes it: a path (``str`` or ``PathLike``)
    is a JSON (or YAML, by its suffix) file holding an object, read here; errors
    name the file. Anything else is returned as given."""
    if not isinstance(initial_state, (str, os.PathLike)):
        return initial_state
    from pathlib import Path

    from .ir.model import YAML_SUFFIXES, read_json

    path = Path(initial_state)
    if path.suffix.lower() in YAML_SUFFIXES:
        import yaml

        from .base.locate import yaml_documents
        from .ir.model import read_text_file

        try:
            documents = yaml_documents(read_text_file(path))
        except OSError as err:
            raise InputError(f"cannot read file: {err.strerror or err}", source=str(path)) from None
        except yaml.YAMLError as err:
            raise InputError(f"not valid YAML: {err}", source=str(path)) from None
        data = documents[0][0] if len(documents) == 1 else None
    else:
        data = read_json(path, name=str(path))
    if not isinstance(data, dict):
        raise InputError(expected("an object", data).problem, ["initial_state"], source=str(path))
    try:
        return dict(d_json(data))
    except Bad as bad:
        raise InputError(bad.problem, bad.path, source=str(path)) from None


def _state(initial_state: Mapping[str, Any] | None) -> dict[str, Any]:
    if initial_state is None:
        return {}
    try:
        if not isinstance(initial_state, Mapping):
            raise expected("an object", initial_state)
        return dict(d_json(dict(initial_state)))
    except Bad as bad:
        raise InputError(bad.problem, ["initial_state", *bad.path]) from None


@deep_values_are_input_errors
def verify(
    proposal: ProposalLike,
    *,
    tools: Any = None,
    initial_state: StateLike = None,
    max_actions: int | None = None,
    passes: Iterable[str | Pass | type[Pass]] | None = None,
    repeat_threshold: int = 3,
    policies: Any = None,
    profile: ProfileLike = None,
    labels: Any = None,
    flow_policy: Any = None,
    intent: Any = None,
    schedules: Schedules = "levels",
) -> VerificationResult:
    """Run the analysis passes over a proposal.

    ``proposal``: anything :func:`car_verify.load` accepts. ``tools``: a tool
    registry (a list of ToolSchema objects or dicts, a mapping, a path or open file, or a
    :class:`ToolRegistry`); without one the tool checks do not run. ``initial_state``:
    a JSON object, or the path of a file holding one. ``passes``:
    names (or Pass classes / instances) of the passes to run; all by default.
    ``policies``: a PolicyEngine, a PolicySet, loaded policies or a policies
    directory; their violations become issues named after the rule.
    ``profile``: ``"car"`` (the default: the runtime's own answers) or ``"strict"``
    (docs/semantics.md §1-8). ``labels`` (tool -> ``{capability, confidentiality,
    trust, sink, declassifier}``) and ``flow_policy`` (``{min_confidential,
    forbidden_sequences}``) add the information-flow pass (``docs/flow.md``);
    ``intent`` (``{allowed_tools, allowed_resources, forbidden_capabilities}``, or
    ``{intent, untrusted_tools}``) the intent pass (``docs/intent.md``).
    ``schedules``: the trace rules are checked over the executor's schedules
    (``"levels"``, the default) or every order the DAG allows (``"any"``).
    Malformed input raises :class:`InputError`; a bad plan is a result.
    """
    if (
        tools is None
        and passes is None
        and policies is None
        and labels is None
        and flow_policy is None
        and intent is None
        and schedules in SCHEDULES
    ):
        # The default passes and nothing they do not read: the fused kernel, where it
        # models the document (else the plain runner, which raises what is wrong).
        fused = _fused(proposal, profile, initial_state, max_actions, repeat_threshold, schedules)
        if fused is not None:
            return fused
    flow = _flow_inputs(labels, flow_policy)
    declared = _intent_input(intent)
    initial_state = _state_file(initial_state)
    sem = semantics_of(profile)
    model = load(proposal)
    sem.refuse(model)
    options = Options(
        max_actions=max_actions, repeat_threshold=repeat_threshold, schedules=schedules
    )
    registry = None if tools is None else _registry(tools)
    engine = None
    if policies is not None:
        from .rules.policy import policy_engine

        engine = policy_engine(policies)
    ctx = Context(
        model,
        tools=registry,
        initial_state=None if initial_state is None else _state(initial_state),
        options=options,
        policies=engine,
        labels=flow[0],
        flow_policy=flow[1],
        intent=declared,
        semantics=sem,
    )
    result = assess(ctx, passes)
    if _shares_values(proposal, initial_state):
        result.simulated_state = copy_json(result.simulated_state)
    return result


def _fused(
    proposal: ProposalLike | FlatPlan,
    profile: ProfileLike,
    initial_state: StateLike,
    max_actions: int | None,
    repeat_threshold: int,
    schedules: Schedules = "levels",
    *,
    complete: bool = False,
) -> VerificationResult | None:
    """``verify`` by the fused kernel (:mod:`car_verify.passes.fused`) where it models
    the run and the document, else None: the plain runner answers, in the same
    order of checks (the state file, the profile, the document, the profile's
    refusal, the options), and raises what is wrong with the input."""
    if initial_state is not None and type(initial_state) is not dict:
        initial_state = _state_file(initial_state)
    sem = semantics_of(profile)
    plan = proposal if isinstance(proposal, FlatPlan) else flat_source(proposal)
    if plan is None or sem.refuses_flat(plan):
        return None
    if max_actions is not None or repeat_threshold != 3:
        Options(max_actions=max_actions, repeat_threshold=repeat_threshold)  # checked
    has_state = initial_state is not None
    limit = sem.default_max_actions if max_actions is None else max_actions
    chosen = _SELECTIONS.get((sem, has_state, limit is not None))
    if chosen is None or chosen[1] != registry_build():
        given = {Requirement.INITIAL_STATE} if has_state else set()
        if limit is not None:
            given.add(Requirement.MAX_ACTIONS)
        selection = default_selection(sem.profile.value, given.__contains__)
        chosen = (selection if selection is not None and runnable(selection) else None,
                  registry_build())  # fmt: skip
        _SELECTIONS[(sem, has_state, limit is not None)] = chosen
    passes = chosen[0]
    if passes is None:
        return None
    state = None if initial_state is None else _state(initial_state)
    run = fused_verify(plan, sem, passes, state, limit, repeat_threshold, complete=complete)
    if run is None:
        return None
    result = _FusedResult(run, (state, max_actions, repeat_threshold, schedules))
    if has_state and _shares_values(proposal, initial_state):
        result.simulated_state = copy_json(run.state)
    return result


#: The fused kernel's selection of passes by (semantics, whether a state is given,
#: whether a budget is in force): the passes, or None where the kernel does not model
#: them; with the registry's build they were chosen from.
_SELECTIONS: dict[tuple[Semantics, bool, bool], tuple[tuple[Pass, ...] | None, int]] = {}


def _registry(tools: Any) -> ToolRegistry:
    """``tools=`` as a registry; an error in a Python value names the argument
    (``tools[0]: expected an object``), one in a file names the file."""
    try:
        return ToolRegistry.coerce(tools)
    except InputError as err:
        if err.source is not None:
            raise
        problem = err.problem
        names_only = (
            len(err.path) == 1
            and isinstance(tools, (list, tuple))
            and isinstance(err.path[0], int)
            and isinstance(tools[err.path[0]], str)
        )
        if names_only:
            problem += (
                " (a tool registry is a list of ToolSchema objects, "
                '[{"name": "deploy", "parameters": {...}}], not of names)'
            )
        raise InputError(problem, ["tools", *err.path]) from None


def _intent_input(intent: Any) -> Any:
    """An intent, parsed (errors name the field), with its untrusted tools; or None."""
    if intent is None:
        return None
    from .plan.intent import Intent, parse_intent_file

    if isinstance(intent, tuple) and intent and isinstance(intent[0], Intent):
        return intent
    return parse_intent_file(intent)


def _flow_inputs(labels: Any, flow_policy: Any) -> tuple[Any, Any]:
    """Labels and a flow policy, parsed (errors name the field), or ``(None, None)``."""
    if labels is None:
        if flow_policy is not None:
            from .base.errors import UsageError

            raise UsageError("a flow policy is checked against tool labels: give labels too")
        return None, None
    from .plan.flow import parse_labels, parse_policy

    return parse_labels(labels), parse_policy(flow_policy)


def verify_context(ctx: Context) -> VerificationResult:
    """``verify`` of a prepared :class:`Context` under its semantics (the executor's
    admission); the context's DAG is the one the passes read."""
    return assess(ctx)


def _shares_values(proposal: object, initial_state: Mapping[str, Any] | None) -> bool:
    """Whether an end state could hold the caller's own arrays and objects: those of
    a model the caller passed (``load`` copies anything else), or of its initial state."""
    return isinstance(proposal, ActionProposal) or (
        initial_state is not None and any(type(v) in (dict, list) for v in initial_state.values())
    )


def assess(
    ctx: Context, passes: Iterable[str | Pass | type[Pass]] | None = None
) -> VerificationResult:
    """Run the passes over a prepared :class:`Context` (``verify`` without the input
    handling): by default those of its profile (under car, CAR's eight checks; under
    strict, docs/semantics.md's), plus the ones its inputs ask for."""
    from .passes.registry import resolve_passes  # the passes load with the first run

    if passes is not None and not isinstance(passes, str) and isinstance(passes, Iterable):
        passes = tuple(passes)  # kept for a rerun: read twice (anything else: refused below)
    chosen = resolve_passes(passes, ctx)
    issues, said = run_and_say(ctx, chosen)
    assumptions, untested, risks, score = gathered(said)
    dag = ctx.dag
    if dag.unlevelled:
        untested.append(
            "actions on or after a dependency cycle are not walked: "
            + ", ".join(dag.ids[i] for i in dag.unlevelled[:20])
            + (" ..." if len(dag.unlevelled) > 20 else "")
        )
    checks = [record for one in said for record in one.checks]
    ids = dag.ids
    return VerificationResult(
        issues=issues,
        simulated_state=ctx.walk.state,
        execution_levels=dag.execution_levels(),
        conflicts=[[ids[a], ids[b], key] for a, b, key in ctx.conflicts],
        evidence=Evidence(checks, assumptions, untested, risks, score),
        proposal=ctx.proposal,
        profile=ctx.semantics.profile,
        inputs=Inputs.of(ctx, passes),
    )


@deep_values_are_input_errors
def simulate(
    proposal: ProposalLike,
    initial_state: StateLike = None,
    *,
    profile: ProfileLike = None,
) -> Simulation:
    """Predict the state the executor leaves behind (blocked actions' effects skipped).

    ``profile``: ``"car"`` (the default) walks as the runtime does; ``"strict"``
    as docs/semantics.md §4 says. One walk serves both (:mod:`car_verify.semantics.walk`)."""
    initial_state = _state_file(initial_state)
    sem = semantics_of(profile)
    model = load(proposal)
    sem.refuse(model)
    dag = sem.order(model)
    result = walk(dag, _state(initial_state), mode="simulate", semantics=sem)
    state = copy_json(result.state) if _shares_values(proposal, initial_state) else result.state
    sim = Simulation(state)
    sim.trace = [t for t in result.traces if t is not None]
    sim.unwalked = [dag.ids[i] for i in dag.unlevelled]
    sim.profile = sem.profile.value
    return sim
