"""The ``car`` profile's verify: the upstream runtime's eight checks (docs/semantics.md §9).

What CAR's reading of a proposal *is* (its values, order, effects and walk) lives
in :mod:`car_verify.semantics.car`; this module holds what CAR's ``verify``,
``optimize`` and ``transaction_check`` report on top of that reading: the eight
evidence checks with CAR's names, severities and ``ran`` flags, run as one pass
(:class:`CarChecks`, the car profile's default) through the one pass runner.

What it checks:
    What ``car_runtime.verify`` checks, each under CAR's name: the action count
    against ``max_actions`` (30 without one), identical tool calls, preconditions
    and state dependencies on CAR's walk, tool existence and parameter types, that
    compensations resolve, and writers of a key that do not list it in
    ``state_dependencies``. Beside the verdict, ``info`` notes say what CAR ignores
    (``dependencies``, output references), where it departs from its spec, and
    what the strict profile would report that CAR does not.

Why it matters:
    These are the runtime's own answers: a plan it would refuse, car-verify
    refuses under the default profile, for the same reasons, and a plan it
    accepts is accepted. The notes say where those answers are weaker than the
    spec, without changing them.

How to fix:
    Each code's own entry says how. To have the spec's checks instead (explicit
    ``dependencies`` honoured, a repeated call judged per group), run with
    ``--profile strict``.

Why this tier:
    ``decision_procedure`` for seven of the checks (each is exact on the plan as
    written), ``heuristic`` for the loop detection: identical calls are a proxy
    for a runaway loop.

What car-verify adds on top is marked as such: ``info`` findings only
(``extension-ignored``, ``car-spec-deviation``, and the strict-only codes, which
CAR does not report), so CAR's verdict stays the verdict. Messages say in plain
words what CAR prints as Rust debug text. Where CAR is nondeterministic (its
duplicate-call fingerprint, its JSON key order), this module gives the answer of
CAR's documented rule, every time. ``docs/compat.md`` lists every difference.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..base.errors import InputError, json_pointer
from ..base.findings import Issue, Severity, Tier
from ..base.values import ABSENT as _ABSENT
from ..base.values import KNOWN_OPERATORS, format_predicate, is_number
from ..ir.model import Action, ActionProposal, repeated_keys, unknown_fields
from ..semantics.car import CAR, car_evaluate, car_order, show
from ..semantics.dag import Dag
from ..semantics.walk import Cause, Walk, walk
from . import CheckRecord, Context, Example, Pass, Said

__all__ = [
    "CAR_CHECKS",
    "CAR_CODES",
    "DEFAULT_MAX_ACTIONS",
    "CarCheck",
    "CarChecks",
    "CarVerdict",
    "CarWalk",
    "car_walk",
]

E, W, I_ = Severity.ERROR, Severity.WARNING, Severity.INFO
D, H = Tier.DECISION_PROCEDURE, Tier.HEURISTIC

#: CAR's ``max_actions`` when the caller gives none.
DEFAULT_MAX_ACTIONS = 30

#: The action id CAR gives proposal-level findings.
PROPOSAL = "proposal"


# -- the walk, as verify reports it ------------------------------------------------


@dataclass(slots=True)
class Blocker:
    """One reason an action cannot run: a failed precondition or a missing key."""

    code: str
    message: str
    pointer: str
    cause: Cause


@dataclass(slots=True)
class CarWalk:
    """The walk's end state and, per action position, what blocked it."""

    state: dict[str, Any]
    blockers: list[list[Blocker]]
    order: Dag

    def blocked(self, index: int) -> bool:
        return bool(self.blockers[index])


def car_walk(
    proposal: ActionProposal,
    order: Dag,
    initial_state: Mapping[str, Any] | None,
    *,
    apply_blocked: bool,
) -> CarWalk:
    """The one walk (:func:`car_verify.semantics.walk.walk`) under CAR's semantics, each
    cause said as CAR's check reports it; ``apply_blocked`` is verify (True) or
    simulate."""
    walked = walk(
        order, initial_state, mode="verify" if apply_blocked else "simulate", semantics=CAR
    )
    return _car_causes(proposal, walked, order)


def _car_causes(proposal: ActionProposal, walked: Walk, order: Dag) -> CarWalk:
    """A walk's end state, and what blocked each action said as CAR's check says it."""
    blockers: list[list[Blocker]] = [[] for _ in proposal.actions]
    for trace in walked.traces:
        if trace is not None and trace.blocked:
            blockers[trace.index] = _blockers(
                proposal.actions[trace.index],
                trace.index,
                trace.causes,
                walked.initial_state,
                walked,
            )
    return CarWalk(walked.state, blockers, order)


def _blockers(
    action: Action, index: int, causes: Sequence[Cause], initial: Any, walked: Any
) -> list[Blocker]:
    """CAR's findings for one blocked action: one per failed precondition, then one
    per ``state_dependencies`` entry absent at its turn (repeats included)."""
    out: list[Blocker] = []
    missing_seen: dict[str, int] = {}
    for cause in causes:
        if cause.kind == "missing-key":
            key = cause.key or ""
            start = missing_seen.get(key, 0)
            number = action.state_dependencies.index(key, start)
            missing_seen[key] = number + 1
            out.append(
                Blocker(
                    "missing-dependency",
                    f"state dependency {key!r} not available at this point",
                    f"/actions/{index}/state_dependencies/{number}",
                    cause,
                )
            )
            continue
        parts = (
            [(cause.precondition, cause.where, cause.actual)]
            if cause.precondition is not None
            else list(cause.failed)
        )
        for pre, where, actual in parts:
            assert pre is not None
            if pre.operator not in KNOWN_OPERATORS:
                code = "unknown-operator"
            elif action.type == "assertion":
                code = "assertion-fails"
            else:
                code = "precondition-unsatisfied"
            seen = {} if actual is _ABSENT else {pre.key: actual}
            why = car_evaluate(pre.key, pre.operator, pre.value, seen)
            one = Cause(
                "unknown-operator" if code == "unknown-operator" else "precondition",
                key=pre.key,
                precondition=pre,
                where=where,
                actual=actual,
            )
            out.append(
                Blocker(
                    code,
                    f"precondition will fail: {why}",
                    f"/actions/{index}/{'/'.join(str(w) for w in where)}",
                    one,
                )
            )
    return out


def car_simulate(proposal: ActionProposal, initial_state: Mapping[str, Any] | None) -> CarWalk:
    """CAR's ``simulate``: blocked actions' effects are skipped."""
    return car_walk(proposal, car_order(proposal), initial_state, apply_blocked=False)


# -- verify ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CarCheck:
    """One of CAR's eight evidence checks: its name, tier and declared scope."""

    name: str
    tier: Tier
    verifies: str
    cannot_verify: str
    #: What ``verifies`` says when the check did not run, and when it ran without
    #: a tool registry (on what it can check without one).
    skipped: str = ""
    unregistered: str = ""


CAR_CHECKS = (
    CarCheck(
        "resource_bounds",
        D,
        "action count is within the limit ({limit})",
        "per-action cost, wall-clock time, or memory at runtime",
    ),
    CarCheck(
        "loop_detection",
        H,
        "no identical tool call is repeated enough to look like a loop",
        "semantically redundant calls with differing arguments",
    ),
    CarCheck(
        "preconditions",
        D,
        "declared preconditions hold against the statically-known state",
        "preconditions over keys whose values are only known at runtime",
    ),
    CarCheck(
        "state_dependencies",
        D,
        "each declared state dependency is produced before it is read",
        "undeclared reads \u2014 state a tool consumes without listing it",
    ),
    CarCheck(
        "tool_existence",
        D,
        "every tool_call names a registered tool",
        "whether the registered tool behaves as its name/description implies",
        "(skipped \u2014 no tool registry supplied)",
        "tool_call structural well-formedness (a tool is named); "
        "registry not supplied so existence unchecked",
    ),
    CarCheck(
        "param_schema",
        D,
        "tool_call parameters match the registered JSON Schema (types + required)",
        "value-level constraints beyond type/required (ranges, formats, cross-field)",
        "(skipped \u2014 no tool schemas supplied; existence only)",
    ),
    CarCheck(
        "compensation_resolution",
        D,
        "a declared compensation names a registered tool or an action in this proposal, "
        "and a `compensable` action declares one at all",
        "whether the named compensation actually undoes the effect \u2014 that it is the "
        "right inverse, and that it will still work later",
    ),
    CarCheck(
        "write_conflicts",
        D,
        "concurrent writers to the same key declare an ordering dependency",
        "semantic conflicts \u2014 two actions whose effects are logically incompatible",
    ),
)

#: Which of CAR's checks reports each code (car-verify's own ``info`` codes: none).
CHECK_OF_CODE = {
    "too-many-actions": "resource_bounds",
    "duplicate-call": "loop_detection",
    "repeated-call": "loop_detection",
    "precondition-unsatisfied": "preconditions",
    "unknown-operator": "preconditions",
    "assertion-fails": "preconditions",
    "missing-dependency": "state_dependencies",
    "missing-tool-name": "tool_existence",
    "unknown-tool": "tool_existence",
    "param-schema": "param_schema",
    "missing-compensation": "compensation_resolution",
    "unknown-compensation-target": "compensation_resolution",
    "write-conflict": "write_conflicts",
}


#: Every code the car profile reports: CAR's, and car-verify's own notes beside them.
CAR_CODES = frozenset(
    {
        *CHECK_OF_CODE,
        "extension-ignored",
        "car-spec-deviation",
        "unknown-field",
        "duplicate-key",
        "duplicate-id",
        "state-write-without-key",
        "param-schema-full",
    }
)


@dataclass(slots=True)
class CarVerdict:
    """What CAR's verify computes, before it is dressed as a VerificationResult."""

    issues: list[Issue]
    walk: CarWalk
    conflicts: list[tuple[int, int, str]]
    checks: list[CheckRecord]
    assumptions: list[str]
    untested_regions: list[str]
    residual_risks: list[str]
    confidence: float
    extra: list[Issue] = field(default_factory=list)

    @property
    def order(self) -> Dag:
        return self.walk.order


class _Findings:
    """Issues as CAR's checks report them, each located in the proposal."""

    def __init__(self, proposal: ActionProposal) -> None:
        self.ids = [a.id for a in proposal.actions]
        self.issues: list[Issue] = []

    def add(
        self,
        code: str,
        severity: Severity,
        message: str,
        index: int | None,
        pointer: str = "",
        *,
        tier: Tier = D,
    ) -> None:
        action_id = PROPOSAL if index is None else self.ids[index]
        if not pointer and index is not None:
            pointer = f"/actions/{index}"
        self.issues.append(Issue(code, severity, tier, message, action_id, index, pointer))


def _verdict(ctx: Context) -> CarVerdict:
    """CAR's ``verify`` of ``ctx``: its issues, conflicts and evidence, on the
    context's DAG and walk (CAR's, the car semantics'). With a tool registry, tool
    existence, the parameter schemas (``type`` and ``required`` only, as CAR checks
    them) and compensation tools are checked."""
    proposal = ctx.proposal
    actions = proposal.actions
    order = ctx.dag
    tools = ctx.tools
    found = _Findings(proposal)
    limit = ctx.options.max_actions
    limit = DEFAULT_MAX_ACTIONS if limit is None else limit
    repeat_threshold = ctx.options.repeat_threshold
    ids = set(order.ids)

    # resource_bounds
    if len(actions) > limit:
        found.add("too-many-actions", W, f"excessive actions: {len(actions)} (limit {limit})", 0)
    # loop_detection
    _loops(proposal, found, repeat_threshold)
    # preconditions and state_dependencies: the walk
    walked = _car_causes(proposal, ctx.walk, order)
    for index, blockers in enumerate(walked.blockers):
        for blocker in blockers:
            found.add(blocker.code, E, blocker.message, index, blocker.pointer)
    # tool_existence and param_schema
    for index, action in enumerate(actions):
        if action.type != "tool_call":
            continue
        if action.tool is None:
            found.add("missing-tool-name", E, "tool_call action has no tool specified", index)
        elif tools is not None:
            if action.tool not in tools:
                found.add("unknown-tool", E, f"tool {action.tool!r} is not registered", index)
            else:
                for message, pointer in _schema_problems(
                    action.tool, tools[action.tool].parameters, action.parameters, index
                ):
                    found.add("param-schema", E, message, index, pointer)
    # compensation_resolution
    compensation_checkable = tools is not None
    for index, action in enumerate(actions):
        comp = action.compensation
        pointer = f"/actions/{index}/compensation"
        if comp is None:
            if action.reversibility == "compensable":
                found.add(
                    "missing-compensation",
                    E,
                    "action declares reversibility 'compensable' but no compensation",
                    index,
                    f"/actions/{index}/reversibility",
                )
            continue
        if comp.type == "action_ref":
            compensation_checkable = True
            if comp.action_id not in ids:
                found.add(
                    "unknown-compensation-target",
                    E,
                    f"compensation references action {comp.action_id!r}, "
                    "which is not in this proposal",
                    index,
                    pointer,
                )
        elif tools is not None and comp.tool not in tools:
            found.add(
                "unknown-compensation-target",
                E,
                f"compensation names tool {comp.tool!r}, which is not registered",
                index,
                pointer,
            )
    # write_conflicts
    conflicts = ctx.conflicts
    for a, b, key in conflicts:
        found.add(
            "write-conflict",
            W,
            f"write conflict on {key!r} with action {order.ids[b]} (no dependency declared)",
            a,
        )

    counts: dict[str, int] = {}
    for issue in found.issues:
        owner = CHECK_OF_CODE[issue.code]
        counts[owner] = counts.get(owner, 0) + 1
    ran = {
        "tool_existence": tools is not None or counts.get("tool_existence", 0) > 0,
        "param_schema": tools is not None and not tools.names_only,
        "compensation_resolution": compensation_checkable
        or counts.get("compensation_resolution", 0) > 0,
    }
    checks = []
    for check in CAR_CHECKS:
        did = ran.get(check.name, True)
        if not did and check.skipped:
            verifies = check.skipped
        elif did and tools is None and check.unregistered:
            verifies = check.unregistered
        else:
            verifies = check.verifies
        checks.append(
            CheckRecord(
                check.name,
                did,
                verifies.format(limit=limit),
                check.cannot_verify,
                counts.get(check.name, 0),
                check.tier,
            )
        )
    tool_calls = [(i, a) for i, a in enumerate(actions) if a.type == "tool_call"]
    assumptions = [
        "supplied initial-state values are accurate",
        "tool implementations honor their declared effects and side effects",
    ]
    schemas = tools is not None and not tools.names_only
    if tool_calls and not schemas:
        assumptions.append(
            "tool_call parameters are well-formed (no schemas supplied to check them)"
        )
    named = [(i, a) for i, a in tool_calls if a.tool is not None]
    untested = [f"runtime output of tool '{a.tool}' (action {a.id})" for _, a in named]
    untested += [
        f"state key '{key}' (value set at runtime by action {a.id})"
        for _, a in tool_calls
        for key in a.expected_effects
    ]
    untested = list(dict.fromkeys(untested))
    warnings = sum(1 for issue in found.issues if issue.severity is W)
    risks = []
    if conflicts:
        risks.append(
            f"{len(conflicts)} undeclared write conflict(s) \u2014 last-writer-wins at runtime"
        )
    if warnings:
        risks.append(f"{warnings} warning(s) not blocking the verdict")
    if untested:
        risks.append(
            "outcomes depending on runtime tool output or runtime-set state are unverified"
        )
    # CAR's coverage score (outside the parity promise, matched where measured).
    confidence = 1.0
    if tool_calls and tools is None:
        confidence = confidence - 0.15  # existence unchecked
    if tool_calls and not schemas:
        confidence = confidence - 0.2  # parameters unchecked
    confidence = max(0.0, confidence - 0.02 * len(untested) - 0.05 * warnings)
    verdict = CarVerdict(
        found.issues,
        walked,
        conflicts,
        checks,
        assumptions,
        untested,
        risks,
        confidence,
    )
    verdict.extra = _beyond_car(proposal, verdict, limit, tools)
    return verdict


_CALL = {"type": "tool_call", "tool": "get_status", "parameters": {"job": "j-1"}}
_TOOLS: list[dict[str, Any]] = [
    {
        "name": "deploy",
        "parameters": {
            "type": "object",
            "required": ["env"],
            "properties": {"env": {"type": "string", "enum": ["prod", "staging"]}},
        },
    },
    {"name": "undeploy"},
]


class CarChecks(Pass):
    """CAR's eight checks as one pass: the car profile's verdict (docs/semantics.md §9).

    It runs on the context's DAG and walk, which are CAR's under the car semantics,
    and says eight check records for the evidence, CAR's lists and CAR's coverage
    score, as ``car_runtime.verify`` does. Its ``info`` notes (what CAR ignores, where
    it departs from its spec) are car-verify's own and count in no record.
    """

    name = "car"
    tier = D
    profiles = frozenset({"car"})
    codes = tuple(sorted(CAR_CODES))
    verifies = "the upstream runtime's eight checks, as its verify runs them"
    cannot_verify = "what each of the eight says it cannot verify (its evidence record)"
    examples = (
        Example("a sound one-call plan", {"actions": [{**_CALL, "id": "a"}]}),
        Example(
            "one call repeated (twice: a warning; three times: an error), over the limit",
            {
                "actions": [{**_CALL, "id": f"p{n}"} for n in range(3)]
                + [
                    {**_CALL, "id": "q1", "tool": "ping"},
                    {**_CALL, "id": "q2", "tool": "ping"},
                ]
            },
            ("repeated-call", "duplicate-call", "too-many-actions", "car-spec-deviation"),
            max_actions=4,
        ),
        Example(
            "a false precondition, an unknown operator, a failing assertion, a missing key",
            {
                "actions": [
                    {
                        "id": "a",
                        "type": "tool_call",
                        "tool": "t",
                        "preconditions": [
                            {"key": "env", "value": "prod"},
                            {"key": "env", "operator": "like", "value": "p"},
                        ],
                    },
                    {
                        "id": "b",
                        "type": "assertion",
                        "preconditions": [{"key": "env", "operator": "exists"}],
                        "state_dependencies": ["ready"],
                    },
                ]
            },
            (
                "precondition-unsatisfied",
                "unknown-operator",
                "assertion-fails",
                "missing-dependency",
            ),
        ),
        Example(
            "tools CAR cannot find or whose parameters do not fit",
            {
                "actions": [
                    {"id": "a", "type": "tool_call"},
                    {"id": "b", "type": "tool_call", "tool": "rm"},
                    {"id": "c", "type": "tool_call", "tool": "deploy", "parameters": {"env": 1}},
                    {
                        "id": "d",
                        "type": "tool_call",
                        "tool": "deploy",
                        "parameters": {"env": "dev"},
                    },
                ]
            },
            ("missing-tool-name", "unknown-tool", "param-schema", "param-schema-full"),
            tools=_TOOLS,
        ),
        Example(
            "compensations CAR cannot resolve",
            {
                "actions": [
                    {
                        "id": "a",
                        "type": "tool_call",
                        "tool": "deploy",
                        "parameters": {"env": "prod"},
                        "reversibility": "compensable",
                    },
                    {
                        "id": "b",
                        "type": "tool_call",
                        "tool": "deploy",
                        "parameters": {"env": "prod"},
                        "compensation": {"type": "action_ref", "action_id": "z"},
                    },
                ]
            },
            ("missing-compensation", "unknown-compensation-target", "duplicate-call"),
            tools=_TOOLS,
        ),
        Example(
            "two writers of a key, unordered",
            {
                "actions": [
                    {"id": "a", "type": "state_write", "parameters": {"key": "k", "value": 1}},
                    {"id": "b", "type": "tool_call", "tool": "t", "expected_effects": {"k": 2}},
                ]
            },
            ("write-conflict",),
        ),
        Example(
            "what CAR ignores or reads otherwise than the spec: notes beside its verdict",
            '{"actions": [{"id": "a", "type": "tool_call", "tool": "t", "tool": "u"}, '
            '{"id": "a", "type": "state_write", "parameters": {}, "dependencies": ["a"], '
            '"colour": "blue"}]}',
            (
                "duplicate-key",
                "duplicate-id",
                "state-write-without-key",
                "extension-ignored",
                "unknown-field",
            ),
        ),
    )

    def __init__(self) -> None:
        #: Each context's verdict, from its run() to its said() (one instance may
        #: serve several contexts at once, one per thread).
        self._verdicts: dict[int, CarVerdict] = {}

    def run(self, ctx: Context) -> list[Issue]:
        verdict = self._verdicts[id(ctx)] = _verdict(ctx)
        return [*verdict.issues, *verdict.extra]

    def said(self, ctx: Context, found: Sequence[Issue]) -> Said:
        verdict = self._verdicts.pop(id(ctx))  # run() came first, for this context
        return Said(
            verdict.checks,
            verdict.assumptions,
            verdict.untested_regions,
            verdict.residual_risks,
            verdict.confidence,
        )


def _full_schema(
    proposal: ActionProposal, verdict: CarVerdict, tools: Any, found: _Findings
) -> None:
    """Each violation of a tool's full JSON Schema that CAR's check (``type`` and
    ``required`` only) lets through, as an ``info`` finding (``param-schema-full``)."""
    reported = {issue.pointer for issue in verdict.issues if issue.code == "param-schema"}
    for index, action in enumerate(proposal.actions):
        if action.type != "tool_call" or action.tool is None or action.tool not in tools:
            continue
        mine = {p for p in reported if p.startswith(f"/actions/{index}/")}
        try:
            errors = tools.check_parameters(action.tool, action.parameters)
        except InputError as err:  # a schema CAR reads in part but JSON Schema rejects
            found.add(
                "param-schema-full",
                I_,
                f"tool {action.tool!r}: the parameter schema is not a valid JSON Schema "
                f"({err.problem}): only CAR's type/required check ran",
                index,
                f"/actions/{index}/parameters",
            )
            continue
        for error in errors:
            pointer = json_pointer(["actions", index, "parameters", *error.path])
            if pointer in mine or (not error.path and mine):
                continue  # CAR reports this one itself
            found.add(
                "param-schema-full",
                I_,
                f"tool {action.tool!r}: {error.message} (the tool's full JSON Schema; CAR "
                "checks only type and required)",
                index,
                pointer,
            )


def _loops(proposal: ActionProposal, found: _Findings, threshold: int) -> None:
    """Identical tool calls: twice is a warning, ``threshold`` (3) times an error.

    Calls are compared by tool and canonical JSON of the parameters (keys sorted),
    the rule CAR documents; CAR's own fingerprint depends on key order."""
    groups: dict[tuple[str, str], list[int]] = {}
    for index, action in enumerate(proposal.actions):
        if action.type == "tool_call" and action.tool is not None:
            fingerprint = show(action.parameters)
            groups.setdefault((action.tool, fingerprint), []).append(index)
    for (tool, _), members in sorted(groups.items(), key=lambda item: item[1][0]):
        count = len(members)
        if count >= threshold:
            found.add(
                "repeated-call",
                E,
                f"repeated identical tool call: {tool} ({count}x) \u2014 likely loop",
                None,
                tier=H,
            )
        elif count >= 2:
            found.add("duplicate-call", W, f"duplicate tool call: {tool} ({count}x)", None, tier=H)


_TYPE_TESTS: dict[str, Callable[[object], bool]] = {
    "string": lambda v: isinstance(v, str),
    "number": is_number,
    "integer": lambda v: is_number(v) and float(v).is_integer(),  # type: ignore[arg-type]
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if is_number(value):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _schema_problems(
    tool: str, schema: Any, parameters: Mapping[str, Any], index: int
) -> Iterable[tuple[str, str]]:
    """CAR's parameter check: top-level ``required`` and each property's ``type``."""
    if not isinstance(schema, dict):
        return
    required = schema.get("required")
    for name in required if isinstance(required, list) else []:
        if isinstance(name, str) and name not in parameters:
            yield (
                f"tool {tool!r}: missing required parameter {name!r}",
                f"/actions/{index}/parameters",
            )
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return
    for name, value in parameters.items():
        prop = properties.get(name)
        if not isinstance(prop, dict) or "type" not in prop:
            continue
        wanted = prop["type"]
        if isinstance(wanted, str):
            names = [wanted]
        elif isinstance(wanted, list):
            names = [t for t in wanted if isinstance(t, str)]
        else:  # null, a number, an object: CAR checks no type there
            continue
        tests: list[Callable[[object], bool]] = [_TYPE_TESTS[t] for t in names if t in _TYPE_TESTS]
        if not tests or any(test(value) for test in tests):
            continue
        yield (
            f"tool {tool!r}: parameter {name!r} has wrong type: "
            f"expected {'|'.join(names)}, got {_json_type(value)}",
            json_pointer(["actions", index, "parameters", name]),
        )


def _beyond_car(
    proposal: ActionProposal, verdict: CarVerdict, limit: int, tools: Any = None
) -> list[Issue]:
    """car-verify's ``info`` findings: what CAR ignores, where CAR contradicts its
    spec, and what the strict profile would report that CAR does not (a duplicate
    id, a state_write without a key, a full JSON Schema violation): nothing hidden,
    CAR's verdict kept."""
    order = verdict.order
    found = _Findings(proposal)
    for repeat in repeated_keys(proposal):
        found.add("duplicate-key", W, repeat.message(), repeat.index, json_pointer(repeat.path))
    for field_ in unknown_fields(proposal):
        found.add("unknown-field", I_, field_.message(), field_.index, field_.pointer)
    first: dict[str, int] = {}
    for index, action in enumerate(proposal.actions):
        if action.id in first:
            found.add(
                "duplicate-id",
                I_,
                f"id {action.id!r} is also action {first[action.id]}'s: CAR runs both, and "
                "whatever names the id (a dependency, a compensation, an approval) is ambiguous",
                index,
                f"/actions/{index}/id",
            )
        else:
            first[action.id] = index
        if action.type == "state_write" and action.param_key() is None:
            found.add(
                "state-write-without-key",
                I_,
                "state_write without parameters.key: CAR writes nothing for it",
                index,
                f"/actions/{index}/parameters",
            )
    if tools is not None:
        _full_schema(proposal, verdict, tools, found)
    for index, action in enumerate(proposal.actions):
        ignored = []
        if action.dependencies:
            ignored.append("`dependencies`")
        if action.output_refs():
            ignored.append("`$id.output` references")
        if ignored:
            members = order.levels[order.level_of(index)]
            beside = [order.ids[i] for i in members[:6] if i != index][:5]  # a few, not all
            where = f"level {order.level_of(index)}" + (
                f", beside {', '.join(beside)}" if beside else ""
            )
            found.add(
                "extension-ignored",
                I_,
                f"CAR ignores {' and '.join(ignored)}: it orders {action.id} only by "
                f"state_dependencies, so it runs in {where}",
                index,
            )
    # An assertion's `parameters` predicate: CAR checks its preconditions only.
    for index, action in enumerate(proposal.actions):
        spelled = [pre for pre, where in action.predicate() if where == ("parameters",)]
        if action.type == "assertion" and spelled:
            pre = spelled[0]
            found.add(
                "extension-ignored",
                I_,
                f"CAR does not evaluate an assertion's `parameters` predicate "
                f"({format_predicate(pre.key, pre.operator, pre.value)}): it checks "
                f"{action.id}'s preconditions only, so this predicate gates nothing; "
                "write it as a precondition",
                index,
                f"/actions/{index}/parameters",
            )
    # A conflict between actions CAR orders: one note per key, on the first such pair.
    ordered = order.reachable((a, b) for a, b, _ in verdict.conflicts)
    by_key: dict[str, list[tuple[int, int]]] = {}
    for a, b, key in verdict.conflicts:
        if (a, b) in ordered:
            by_key.setdefault(key, []).append((a, b))
    for key, pairs in by_key.items():
        a, b = pairs[0]
        more = f" (and {len(pairs) - 1:,} more pairs)" if len(pairs) > 1 else ""
        found.add(
            "car-spec-deviation",
            I_,
            f"CAR reports a write conflict on {key!r} between {order.ids[a]} and "
            f"{order.ids[b]}{more} although it orders them (spec: conflicts are writers "
            "'without ordering')",
            b,
        )
    # A reader left unordered with earlier writers of a key it depends on: one note
    # per reader and key, naming the writers.
    asked = [
        (w, index, key)
        for index, action in enumerate(proposal.actions)
        for key in dict.fromkeys(action.state_dependencies)
        for w in order.writers.get(key, [])
        if w < index
    ]
    reached = order.reachable((w, index) for w, index, _ in asked)
    racing: dict[tuple[int, str], list[int]] = {}
    for w, index, key in asked:
        if (w, index) not in reached:
            racing.setdefault((index, key), []).append(w)
    for (index, key), writers in racing.items():
        names = ", ".join(order.ids[w] for w in writers[:3])
        if len(writers) > 3:
            names += f" and {len(writers) - 3:,} more"
        levels = ", ".join(str(order.level_of(w)) for w in writers[:3])
        found.add(
            "car-spec-deviation",
            I_,
            f"CAR does not order {proposal.actions[index].id} after {names}, "
            f"{'an earlier writer' if len(writers) == 1 else 'earlier writers'} of {key!r} "
            f"it depends on (levels {levels} and {order.level_of(index)}): the two can race "
            "at run time (spec: 'actions in the same layer are independent')",
            index,
        )
    if len(proposal.actions) > limit:
        found.add(
            "car-spec-deviation",
            I_,
            f"CAR returns valid: true for {len(proposal.actions)} actions over the limit of "
            f"{limit} (spec: such proposals 'are rejected at verification time')",
            None,
        )
    return found.issues
