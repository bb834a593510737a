"""The ``car`` profile: the upstream runtime's own reading of a proposal (SEMANTICS section 9).

``car_runtime`` 0.52.1 (the Common Agent Runtime's verifier) reads a proposal more
simply than sections 1-8 do. Everything that reading needs lives here, in one
place, next to nothing else:

* **values** as serde_json compares them: ``1`` and ``1.0`` differ, an integer
  outside the 64-bit range is a float, ``neq`` on an absent key is false;
* **ordering** (:class:`CarOrder`): a reader of a key in ``state_dependencies``
  follows the key's *last* writer in the proposal, and only when that writer comes
  earlier; a ``state_write`` follows the previous ``state_write`` of its key;
  ``write_set``, ``dependencies`` and ``$id.output`` references order nothing;
* **the walk** (:func:`car_walk`): level by level, and inside a level in proposal
  order, each action seeing the effects of those before it;
* **verify's eight checks** with CAR's names, severities and ``ran`` flags, and
  ``simulate``, ``optimize`` and ``transaction_check`` as CAR answers them.

What car-verify adds on top is marked as such: ``info`` findings only
(``extension-ignored``, ``car-spec-deviation``, and the strict-only codes, which
CAR does not report), so CAR's verdict stays the verdict. Messages say in plain
words what CAR prints as Rust debug text. Where CAR is nondeterministic (its
duplicate-call fingerprint, its JSON key order), this module gives the answer of
CAR's documented rule, every time. ``docs/compat.md`` lists every difference.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ._codec import MISSING
from .dag import forward_reachable
from .errors import InputError, UsageError, json_pointer
from .findings import Issue, Severity, Tier
from .model import Action, ActionProposal, repeated_keys, unknown_fields
from .passes import CheckRecord
from .values import ABSENT, KNOWN_OPERATORS, is_number, json_equal
from .walk import Cause

__all__ = [
    "CAR_CHECKS",
    "CAR_CODES",
    "DEFAULT_MAX_ACTIONS",
    "CarCheck",
    "CarOrder",
    "CarVerdict",
    "CarWalk",
    "Profile",
    "car_equal",
    "car_evaluate",
    "car_optimize_removals",
    "car_simulate",
    "car_transaction_conflicts",
    "car_verify",
    "car_walk",
    "profile_of",
    "require_known_types",
    "strict_only",
]

E, W, I_ = Severity.ERROR, Severity.WARNING, Severity.INFO
D, H = Tier.DECISION_PROCEDURE, Tier.HEURISTIC

#: CAR's ``max_actions`` when the caller gives none.
DEFAULT_MAX_ACTIONS = 30

#: The action id CAR gives proposal-level findings.
PROPOSAL = "proposal"


class Profile(StrEnum):
    """Whose answers ``verify`` and friends give: CAR's (the default) or sections 1-8."""

    CAR = "car"
    STRICT = "strict"


def profile_of(value: str | Profile | None) -> Profile:
    """The profile named ``value`` (``None``: the default, ``car``)."""
    if value is None:
        return Profile.CAR
    try:
        return Profile(value)
    except ValueError:
        raise UsageError(f"unknown profile {value!r} (choose car or strict)") from None


def strict_only(profile: str | Profile | None, what: str) -> None:
    """For a function that models the strict profile's walk only: ``car`` is refused,
    saying so, rather than answered with the strict reading (docs/compat.md)."""
    if profile_of(profile) is Profile.CAR:
        raise UsageError(
            f"{what} models the strict profile's walk (SEMANTICS 1-8), not CAR's; "
            "run it with profile='strict' (the default here)"
        )


def require_known_types(proposal: ActionProposal) -> None:
    """CAR rejects a whole proposal with an action ``type`` it does not know."""
    for index, action in enumerate(proposal.actions):
        if action.type not in Action.KNOWN_TYPES:
            known = ", ".join(sorted(Action.KNOWN_TYPES))
            raise InputError(
                f"unknown action type {action.type!r} (the car profile, like the runtime, "
                f"rejects the proposal; expected one of {known})",
                ["actions", index, "type"],
            )


# -- values, as serde_json holds and compares them ---------------------------------

_U64, _I64 = 2**64, 2**63


def _number(value: int | float) -> tuple[str, int | float]:
    """serde_json's Number: a u64, a negative i64, or an f64 (everything else)."""
    if isinstance(value, int):
        if 0 <= value < _U64:
            return ("u", value)
        if -_I64 <= value < 0:
            return ("i", value)
        try:
            return ("f", float(value))
        except OverflowError:
            return ("f", math.inf if value > 0 else -math.inf)
    return ("f", value)


def car_equal(a: object, b: object) -> bool:
    """JSON equality as CAR computes it: type-strict, and an integer never equals a float."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if is_number(a) and is_number(b):
        (ka, va), (kb, vb) = _number(a), _number(b)  # type: ignore[arg-type]
        return (ka == "f") == (kb == "f") and va == vb
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(car_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(car_equal(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is None and b is None
    return type(a) is type(b) and a == b


def _f64(value: object) -> float | None:
    if not is_number(value):
        return None
    _, number = _number(value)  # type: ignore[arg-type]
    return float(number)


#: JSON text as CAR's messages show a value, keys sorted (one encoder for all:
#: json.dumps with options makes a new one per call). Also the loop check's
#: canonical form of a call's parameters.
_show = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode
#: A value's compact JSON text, as CAR's ``contains`` reads a non-string.
_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


_ORDERED = {"gt": float.__gt__, "lt": float.__lt__, "gte": float.__ge__, "lte": float.__le__}


def car_evaluate(key: str, operator: str, expected: object, state: Mapping[str, Any]) -> str | None:
    """``None`` if the precondition holds in ``state``, else why it fails, in plain words."""
    if operator not in KNOWN_OPERATORS:
        return f"unknown operator {operator!r}"
    if operator == "exists":
        return None if key in state else f"key {key!r} does not exist"
    if operator == "not_exists":
        return f"key {key!r} exists" if key in state else None
    if key not in state:
        if operator == "contains":
            return f"key {key!r} has no value, cannot check contains"
        return f"key {key!r} has no value"
    actual = state[key]
    if operator == "eq":
        return (
            None
            if car_equal(actual, expected)
            else f"{key!r} is {_show(actual)}, need {_show(expected)}"
        )
    if operator == "neq":
        return (
            f"{key!r} is {_show(actual)}, need neq {_show(expected)}"
            if car_equal(actual, expected)
            else None
        )
    if operator == "contains":
        return (
            None
            if _contains(actual, expected)
            else f"key {key!r} does not contain {_show(expected)}"
        )
    left, right = _f64(actual), _f64(expected)
    if left is None or right is None:
        return (
            f"cannot compare {key!r}: {_show(actual)} {operator} {_show(expected)} "
            "(both sides must be numbers)"
        )
    if _ORDERED[operator](left, right):
        return None
    return f"{key!r} is {_show(actual)}, need {operator} {_show(expected)}"


def _text(value: object) -> str:
    """A value as CAR's ``contains`` reads it: a string as itself, anything else as
    its compact JSON text."""
    if isinstance(value, str):
        return value
    return _compact(value)


def _contains(actual: object, needle: object) -> bool:
    """CAR's ``contains``: the needle's text is a substring of the state value's text,
    whatever their types (so ``1`` is "in" ``[10]``, and ``"a"`` in ``["ab"]``)."""
    return _text(needle) in _text(actual)


# -- what an action reads and writes, as CAR sees it -------------------------------


def _state_write_key(action: Action) -> str | None:
    return action.param_key() if action.type == "state_write" else None


def car_effects(action: Action) -> dict[str, Any]:
    """The effects CAR applies: a ``state_write``'s ``{key: value}``, then
    ``expected_effects`` (which win on the same key)."""
    effects: dict[str, Any] = {}
    key = _state_write_key(action)
    if key is not None:
        effects[key] = action.parameters.get("value")
    effects.update(action.expected_effects)
    return effects


def car_writes(action: Action) -> list[str]:
    """Keys CAR counts as written, for ordering and conflicts (``write_set`` is not)."""
    keys = list(action.expected_effects)
    key = _state_write_key(action)
    if key is not None and key not in action.expected_effects:
        keys.append(key)
    return keys


def _tx_writes(action: Action) -> list[str]:
    """``transaction_check``'s write set: ``write_set`` together with the effect keys."""
    return list(dict.fromkeys([*action.write_set, *car_writes(action)]))


def transaction_sets(action: Action) -> tuple[list[str], list[str]]:
    """An action's read and write sets as ``transaction_check`` reads them (also
    the concurrency analysis's)."""
    return _tx_reads(action), _tx_writes(action)


def _tx_reads(action: Action) -> list[str]:
    """``transaction_check``'s read set: ``read_set`` together with the depended-on and
    assumed keys and a ``state_read``'s ``key``."""
    keys = [*action.read_set, *action.state_dependencies, *(a.key for a in action.assumptions)]
    key = action.param_key() if action.type == "state_read" else None
    if key is not None:  # a ``state_read``'s ``keys`` list is not read here
        keys.append(key)
    return list(dict.fromkeys(keys))


# -- ordering ----------------------------------------------------------------------


class CarOrder:
    """CAR's DAG: who follows whom, the levels, and reachability.

    Every edge points forward in the proposal, so there is never a cycle.
    """

    def __init__(self, proposal: ActionProposal) -> None:
        actions = proposal.actions
        self.ids = [a.id for a in actions]
        #: Each key's writers (by effects or a ``state_write`` key), in proposal order.
        self.writers: dict[str, list[int]] = {}
        for index, action in enumerate(actions):
            for key in car_writes(action):
                self.writers.setdefault(key, []).append(index)
        last_writer = {key: members[-1] for key, members in self.writers.items()}
        preds: list[set[int]] = [set() for _ in actions]
        previous_state_write: dict[str, int] = {}
        for index, action in enumerate(actions):
            for key in action.state_dependencies:
                writer = last_writer.get(key)
                if writer is not None and writer < index:
                    preds[index].add(writer)
            written = _state_write_key(action)
            if written is not None:
                if written in previous_state_write:
                    preds[index].add(previous_state_write[written])
                previous_state_write[written] = index
        self.preds: list[tuple[int, ...]] = [tuple(sorted(p)) for p in preds]
        self.level: list[int] = []
        for index in range(len(actions)):
            self.level.append(1 + max((self.level[p] for p in self.preds[index]), default=-1))
        depth = 1 + max(self.level, default=-1)
        self.levels: list[list[int]] = [[] for _ in range(depth)]
        for index, level in enumerate(self.level):
            self.levels[level].append(index)

    @property
    def order(self) -> list[int]:
        """The walk's order: level by level, proposal order inside a level."""
        return [index for level in self.levels for index in level]

    def execution_levels(self) -> list[list[str]]:
        return [[self.ids[i] for i in level] for level in self.levels]

    def reachable(self, pairs: Iterable[tuple[int, int]]) -> set[tuple[int, int]]:
        """The pairs of ``pairs`` whose first action is ordered before the second, in
        one sweep: asked pair by pair, a long plan's questions would each walk it."""
        return forward_reachable(self.preds, pairs)


# -- the walk ----------------------------------------------------------------------


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
    order: CarOrder

    def blocked(self, index: int) -> bool:
        return bool(self.blockers[index])


def car_walk(
    proposal: ActionProposal,
    order: CarOrder,
    initial_state: Mapping[str, Any] | None,
    *,
    apply_blocked: bool,
) -> CarWalk:
    """Walk the actions in CAR's order; ``apply_blocked`` is verify (True) or simulate."""
    state: dict[str, Any] = dict(initial_state or {})
    blockers: list[list[Blocker]] = [[] for _ in proposal.actions]
    for index in order.order:
        action = proposal.actions[index]
        mine = blockers[index]
        for number, pre in enumerate(action.preconditions):
            why = car_evaluate(pre.key, pre.operator, pre.value, state)
            if why is None:
                continue
            if pre.operator not in KNOWN_OPERATORS:
                code = "unknown-operator"
            elif action.type == "assertion":
                code = "assertion-fails"
            else:
                code = "precondition-unsatisfied"
            pointer = f"/actions/{index}/preconditions/{number}"
            cause = Cause(
                "unknown-operator" if code == "unknown-operator" else "precondition",
                key=pre.key,
                precondition=pre,
                where=("preconditions", number),
                actual=state.get(pre.key, ABSENT),
            )
            mine.append(Blocker(code, f"precondition will fail: {why}", pointer, cause))
        for number, key in enumerate(action.state_dependencies):
            if key not in state:
                pointer = f"/actions/{index}/state_dependencies/{number}"
                message = f"state dependency {key!r} not available at this point"
                cause = Cause("missing-key", key=key)
                mine.append(Blocker("missing-dependency", message, pointer, cause))
        if apply_blocked or not mine:
            state.update(car_effects(action))
    return CarWalk(state, blockers, order)


def car_simulate(proposal: ActionProposal, initial_state: Mapping[str, Any] | None) -> CarWalk:
    """CAR's ``simulate``: blocked actions' effects are skipped."""
    return car_walk(proposal, CarOrder(proposal), initial_state, apply_blocked=False)


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
    {*CHECK_OF_CODE, "extension-ignored", "car-spec-deviation", "unknown-field", "duplicate-key"}
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
    def order(self) -> CarOrder:
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


def car_verify(
    proposal: ActionProposal,
    *,
    initial_state: Mapping[str, Any] | None = None,
    tools: Any = None,
    max_actions: int | None = None,
    repeat_threshold: int = 3,
) -> CarVerdict:
    """CAR's ``verify``: its issues, levels, conflicts, end state and evidence.

    ``tools`` is a :class:`~car_verify.tools.ToolRegistry` (or ``None``); with one,
    tool existence, the parameter schemas (``type`` and ``required`` only, as CAR
    checks them) and compensation tools are checked.
    """
    actions = proposal.actions
    order = CarOrder(proposal)
    found = _Findings(proposal)
    limit = DEFAULT_MAX_ACTIONS if max_actions is None else max_actions
    ids = set(order.ids)

    # resource_bounds
    if len(actions) > limit:
        found.add("too-many-actions", W, f"excessive actions: {len(actions)} (limit {limit})", 0)
    # loop_detection
    _loops(proposal, found, repeat_threshold)
    # preconditions and state_dependencies: the walk
    walked = car_walk(proposal, order, initial_state, apply_blocked=True)
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
    conflicts = _conflicts(proposal, order)
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
        "param_schema": tools is not None,
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
    if tool_calls and tools is None:
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
        confidence = confidence - 0.15 - 0.2
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
    verdict.extra = _beyond_car(proposal, verdict, limit)
    return verdict


def _loops(proposal: ActionProposal, found: _Findings, threshold: int) -> None:
    """Identical tool calls: twice is a warning, ``threshold`` (3) times an error.

    Calls are compared by tool and canonical JSON of the parameters (keys sorted),
    the rule CAR documents; CAR's own fingerprint depends on key order."""
    groups: dict[tuple[str, str], list[int]] = {}
    for index, action in enumerate(proposal.actions):
        if action.type == "tool_call" and action.tool is not None:
            fingerprint = _show(action.parameters)
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
    for name in schema.get("required") or []:
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
        names = [wanted] if isinstance(wanted, str) else [t for t in wanted if isinstance(t, str)]
        tests: list[Callable[[object], bool]] = [_TYPE_TESTS[t] for t in names if t in _TYPE_TESTS]
        if not tests or any(test(value) for test in tests):
            continue
        yield (
            f"tool {tool!r}: parameter {name!r} has wrong type: "
            f"expected {'|'.join(names)}, got {_json_type(value)}",
            json_pointer(["actions", index, "parameters", name]),
        )


def _conflicts(proposal: ActionProposal, order: CarOrder) -> list[tuple[int, int, str]]:
    """Pairs of writers of a key, unless one of them lists it in ``state_dependencies``.

    CAR looks a writer's dependencies up by its id, so with duplicate ids the last
    action of that id decides."""
    deps_by_id = {action.id: action.state_dependencies for action in proposal.actions}
    ids = order.ids
    out = []
    for key, members in order.writers.items():
        racing = [i for i in members if key not in deps_by_id[ids[i]]]
        out += [(a, b, key) for n, a in enumerate(racing) for b in racing[n + 1 :]]
    out.sort()
    return out


def _beyond_car(proposal: ActionProposal, verdict: CarVerdict, limit: int) -> list[Issue]:
    """car-verify's ``info`` findings: what CAR ignores, and where CAR contradicts its spec."""
    order = verdict.order
    found = _Findings(proposal)
    for repeat in repeated_keys(proposal):
        found.add("duplicate-key", W, repeat.message(), repeat.index, json_pointer(repeat.path))
    for field_ in unknown_fields(proposal):
        found.add("unknown-field", I_, field_.message(), field_.index, field_.pointer)
    for index, action in enumerate(proposal.actions):
        ignored = []
        if action.dependencies:
            ignored.append("`dependencies`")
        if action.output_refs():
            ignored.append("`$id.output` references")
        if ignored:
            members = order.levels[order.level[index]]
            beside = [order.ids[i] for i in members[:6] if i != index][:5]  # a few, not all
            where = f"level {order.level[index]}" + (
                f", beside {', '.join(beside)}" if beside else ""
            )
            found.add(
                "extension-ignored",
                I_,
                f"CAR ignores {' and '.join(ignored)}: it orders {action.id} only by "
                f"state_dependencies, so it runs in {where}",
                index,
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
        levels = ", ".join(str(order.level[w]) for w in writers[:3])
        found.add(
            "car-spec-deviation",
            I_,
            f"CAR does not order {proposal.actions[index].id} after {names}, "
            f"{'an earlier writer' if len(writers) == 1 else 'earlier writers'} of {key!r} "
            f"it depends on (levels {levels} and {order.level[index]}): the two can race "
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


# -- optimize and transaction_check ------------------------------------------------


def car_optimize_removals(proposal: ActionProposal) -> list[tuple[int, str]]:
    """CAR's ``optimize``: every ``state_dependencies`` entry on a key no action
    writes (by effects or a ``state_write`` key), as ``(action position, key)``."""
    written = {key for action in proposal.actions for key in car_writes(action)}
    return [
        (index, key)
        for index, action in enumerate(proposal.actions)
        for key in dict.fromkeys(action.state_dependencies)
        if key not in written
    ]


@dataclass(frozen=True, slots=True)
class TxConflict:
    """One of CAR's transaction conflicts, by action position."""

    kind: str
    key: str
    actions: tuple[int, ...]
    #: For a stale assumption: ``"version"`` or ``"value"``, and its position.
    detail: str = ""
    assumption: int = -1


def car_transaction_conflicts(
    proposal: ActionProposal,
    versions: Mapping[str, int] | None,
    state: Mapping[str, Any] | None,
) -> list[TxConflict]:
    """CAR's ``transaction_check``: write-write and read-write races between actions
    CAR leaves unordered, and stale assumptions against ``versions`` / ``state``."""
    order = CarOrder(proposal)
    actions: Sequence[Action] = proposal.actions
    out: list[TxConflict] = []
    writes = [_tx_writes(a) for a in actions]
    reads = [_tx_reads(a) for a in actions]
    # Only pairs that share a key can conflict; their order is asked in one sweep.
    writers: dict[str, list[int]] = {}
    for index, keys in enumerate(writes):
        for key in keys:
            writers.setdefault(key, []).append(index)
    after = [
        sorted({b for k in keys for b in writers[k] if b > a}) for a, keys in enumerate(writes)
    ]
    against = [
        sorted({w for k in keys for w in writers.get(k, ()) if w != r})
        for r, keys in enumerate(reads)
    ]
    asked = [(a, b) for a, bs in enumerate(after) for b in bs]
    asked += [(r, w) if r < w else (w, r) for r, ws in enumerate(against) for w in ws]
    ordered = order.reachable(asked)
    for a, bs in enumerate(after):  # CAR's order: by pair, then by the first's keys
        for b in bs:
            if (a, b) not in ordered:
                out += [TxConflict("write_write", k, (a, b)) for k in writes[a] if k in writes[b]]
    for r, ws in enumerate(against):
        for w in ws:
            if ((r, w) if r < w else (w, r)) not in ordered:
                out += [TxConflict("read_write", k, (r, w)) for k in reads[r] if k in writes[w]]
    for index, action in enumerate(actions):
        for number, assumption in enumerate(action.assumptions):
            if assumption.read_version is not None:
                current = None if versions is None else versions.get(assumption.key)
                if current != assumption.read_version:
                    out.append(
                        TxConflict("stale_assumption", assumption.key, (index,), "version", number)
                    )
            # ``expected_value: null`` is no expectation at all (an absent Option).
            expected = assumption.expected_value
            checked = state is not None and expected is not MISSING and expected is not None
            if checked and (
                assumption.key not in state or not json_equal(state[assumption.key], expected)  # type: ignore[operator,index]
            ):
                out.append(
                    TxConflict("stale_assumption", assumption.key, (index,), "value", number)
                )
    return out
