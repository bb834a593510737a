"""The Agent IR model: every wire type of ``agent-ir-spec.md`` as a typed dataclass.

Reading is strict about JSON types and lenient about unknown fields: a value of
the wrong type raises :class:`~car_verify.base.errors.InputError` naming its JSON path,
an unknown field is kept in ``extra`` and written back by ``to_dict()``.
``to_dict()`` writes the canonical form: every field of the spec's table with its
value, in table order, except ``compensation`` and the optional fields without a
default (``tool``, ``timeout_ms``, ...), which are omitted when absent.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Final,
    Literal,
    Protocol,
    Self,
    TypeAlias,
    TypeGuard,
)

from ..base.display import HtmlDisplay
from ..base.errors import InputError, format_path, json_pointer, too_deep
from ..base.values import (
    KNOWN_OPERATORS,
    MAX_DEPTH,
    copy_json,
    deepest,
    json_nodes,
    json_shape,
    nesting_depth,
)
from ._codec import (
    MISSING,
    Bad,
    d_bool,
    d_enum,
    d_json,
    d_known_str,
    d_list,
    d_model,
    d_number,
    d_object,
    d_optional,
    d_str,
    d_str_list,
    d_str_map,
    d_uint,
    decode,
    decode_document,
    decode_owned,
    encode,
    expected,
    kind,
    wire,
    wire_names,
)

if TYPE_CHECKING:
    from datetime import datetime

__all__ = [
    "Action",
    "ActionProposal",
    "ActionRefCompensation",
    "ActionResult",
    "ActionStatus",
    "ActionType",
    "Compensation",
    "CostSummary",
    "CostTarget",
    "DataChunk",
    "DoneChunk",
    "ErrorChunk",
    "FailureBehavior",
    "OutputRef",
    "PolicyViolation",
    "Precondition",
    "ProgressChunk",
    "ProposalResult",
    "Readable",
    "Reversibility",
    "StateAssumption",
    "StateMutation",
    "TextChunk",
    "ToolCompensation",
    "ToolControl",
    "ToolHandle",
    "ToolInvocationMode",
    "ToolPollResult",
    "ToolRateLimit",
    "ToolSchema",
    "ToolStatus",
    "ToolStreamChunk",
    "ToolStreamEvent",
    "chunk_from_dict",
    "json_value",
    "load",
    "load_parsed",
    "load_tools",
    "loads_finite",
    "read_json",
    "timestamp_readable",
    "timestamp_utc",
    "weighted_score",
]


# uuid and datetime load on first use: most proposals carry their ids and
# timestamps, and a CLI run should not pay for the imports.


def _now() -> str:
    from datetime import UTC, datetime

    return _stamp(datetime.now(UTC))


def _stamp(moment: datetime) -> str:
    """A UTC moment as a proposal's default timestamp, ``YYYY-MM-DDTHH:MM:SS.ffffffZ``:
    what ``moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")`` writes (the plain version, held
    to it in tests/test_model.py) in half the time; every load of a plan without a
    timestamp makes one."""
    return moment.isoformat(timespec="microseconds")[:-6] + "Z"


#: A proposal's ``timestamp`` as the runtime reads it: RFC 3339, relaxed (``T``, ``t``
#: or a space between date and time, a 1-2 digit month or day, a ``+`` before the
#: year, ``Z``, ``UTC`` or an offset with or without its colon, white space around).
_TIMESTAMP = re.compile(
    r"\s*\+?(\d{4})-(\d{1,2})-(\d{1,2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"\s*(?:([Zz]|[Uu][Tt][Cc])|([+-])(\d{2}):?(\d{2}))\s*"
)


def timestamp_utc(text: str) -> str | None:
    """``text`` as the runtime writes a timestamp it has read (UTC, ``Z``, the
    fraction in 0, 3, 6 or 9 digits, as few as hold it), or None when the runtime
    refuses it: not RFC 3339, or a date or offset out of range."""
    from datetime import UTC, datetime, timedelta

    read = _read_timestamp(text)
    if read is None:
        return None
    year, month, day, hour, minute, second, fraction, offset = read
    # Python's dates start at year 1; year 0 is a leap year, computed as 2000.
    proxy = year or 2000
    leap = second == 60  # a leap second is kept as written
    moment = datetime(proxy, month, day, hour, minute, 59 if leap else second, tzinfo=UTC)
    moment -= timedelta(minutes=offset)
    nanos = int((fraction or "0")[:9].ljust(9, "0"))
    digits = 0 if nanos == 0 else 3 if nanos % 10**6 == 0 else 6 if nanos % 10**3 == 0 else 9
    shown = f".{nanos:09d}"[: digits + 1] if digits else ""
    seconds = 60 if leap else moment.second
    return f"{moment.year - proxy + year:04d}-{moment:%m-%dT%H:%M}:{seconds:02d}{shown}Z"


def timestamp_readable(text: str) -> bool:
    """Whether the runtime reads ``text`` as a timestamp (:func:`timestamp_utc` is not
    None), without writing it out (the car profile asks this of every proposal)."""
    return _read_timestamp(text) is not None


def _read_timestamp(text: str) -> tuple[int, int, int, int, int, int, str | None, int] | None:
    """Year, month, day, hour, minute, second, the fraction's digits and the offset in
    minutes of a timestamp the runtime reads; None when it refuses ``text``."""
    import calendar

    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, _, sign, off_h, off_m = match.groups()[6:]
    proxy = year or 2000  # year 0 is a leap year, as 2000
    if not (1 <= month <= 12 and 1 <= day <= calendar.monthrange(proxy, month)[1]):
        return None
    if hour > 23 or minute > 59 or second > 60:
        return None
    offset = 0
    if sign is not None:
        if int(off_h) > 23 or int(off_m) > 59:
            return None
        offset = (1 if sign == "+" else -1) * (int(off_h) * 60 + int(off_m))
    return year, month, day, hour, minute, second, fraction, offset


def _new_action_id() -> str:
    """A full UUIDv4 (the spec: "UUID-derived")."""
    import uuid

    return str(uuid.uuid4())


def _new_proposal_id() -> str:
    """12 hex digits of a UUIDv4, as the spec says."""
    import uuid

    return uuid.uuid4().hex[:12]


class Wire:
    """Shared by every wire type: ``from_dict`` / ``to_dict`` / ``to_json``."""

    __slots__ = ()

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """Model ``data`` (a JSON object), or raise InputError naming the JSON path."""
        try:
            return decode_document(cls, data)
        except Bad as bad:
            raise bad.to_input_error() from None

    def to_dict(self) -> dict[str, Any]:
        """The canonical wire object, as fresh JSON data."""
        return encode(self)

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)


# --- enums ----------------------------------------------------------------------


class ActionType(StrEnum):
    TOOL_CALL = "tool_call"
    STATE_WRITE = "state_write"
    STATE_READ = "state_read"
    ASSERTION = "assertion"


#: The values of :class:`ActionType`.
_ACTION_TYPES: Final = frozenset(t.value for t in ActionType)


class Reversibility(StrEnum):
    REVERSIBLE = "reversible"
    COMPENSABLE = "compensable"
    IRREVERSIBLE = "irreversible"

    @property
    def rank(self) -> int:
        """How hard it is to undo: reversible 0 < compensable 1 < irreversible 2."""
        return _REVERSIBILITY_RANK[self]


_REVERSIBILITY_RANK = {
    Reversibility.REVERSIBLE: 0,
    Reversibility.COMPENSABLE: 1,
    Reversibility.IRREVERSIBLE: 2,
}


class FailureBehavior(StrEnum):
    ABORT = "abort"
    RETRY = "retry"
    SKIP = "skip"


class ToolInvocationMode(StrEnum):
    ONE_SHOT = "one_shot"
    STREAMING = "streaming"
    LONG_RUNNING = "long_running"


class ActionStatus(StrEnum):
    PROPOSED = "proposed"
    VALIDATED = "validated"
    REJECTED = "rejected"
    EXECUTING = "executing"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"


class ToolStatus(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class ToolControl(StrEnum):
    POLL = "poll"
    CANCEL = "cancel"


# --- tagged unions ----------------------------------------------------------------


def d_tagged(tag: str, variants: Mapping[str, type[Any]]) -> Any:
    """Decode an object tagged by ``tag`` into the class registered for its value."""
    choices = ", ".join(f'"{v}"' for v in variants)

    def decode_tagged(value: Any) -> Any:
        if type(value) is not dict:
            raise expected("an object", value)
        if tag not in value:
            raise Bad(f'missing required field "{tag}"')
        name = value[tag]
        cls = variants.get(name) if type(name) is str else None
        if cls is None:
            shown = f'"{name}"' if type(name) is str else kind(name)
            raise Bad(f"unknown {tag} {shown}; expected one of {choices}", [tag])
        return decode(cls, value)

    decode_tagged.tagged = (tag, dict(variants))  # type: ignore[attr-defined]  # the JSON Schema
    return decode_tagged


def _d_schema(value: Any) -> Any:
    """A JSON Schema: an object or a boolean."""
    if type(value) is bool:
        return value
    return d_object(value)


_d_schema.json_schema = {"type": ["object", "boolean"]}  # type: ignore[attr-defined]


# --- preconditions, assumptions, compensation -------------------------------------


@dataclass(slots=True, kw_only=True)
class Precondition(Wire):
    """A state predicate: ``state[key] <operator> value``."""

    key: str = wire("key", d_str, required=True, doc="the state key the predicate reads")
    operator: str = wire(
        "operator",
        d_known_str(KNOWN_OPERATORS),
        default="eq",
        doc="eq (default), neq, gt, gte, lt, lte, exists, not_exists, contains",
    )
    value: Any = wire(
        "value", d_json, default=None, doc="the value the state's value is compared with"
    )
    description: str = wire(
        "description", d_str, default="", doc="what the precondition is for, in words"
    )
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(slots=True, kw_only=True)
class StateAssumption(Wire):
    """An assumption about shared state the action did not produce."""

    key: str = wire(
        "key", d_str, required=True, doc="a shared state key this action did not produce"
    )
    expected_value: Any = wire(
        "expected_value", d_json, default=MISSING, doc="the value the action assumes the key holds"
    )
    read_version: int | None = wire(
        "read_version",
        d_optional(d_uint),
        default=None,
        omit_none=True,
        doc="the version of the key the action read",
    )
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def has_expected_value(self) -> bool:
        return self.expected_value is not MISSING


@dataclass(slots=True, kw_only=True)
class ToolCompensation(Wire):
    """Undo by invoking a tool."""

    type: Literal["tool"] = wire(
        "type", d_str, default="tool", doc='"tool": undo by calling a tool'
    )
    tool: str = wire("tool", d_str, required=True, doc="the tool that undoes the action")
    parameters: dict[str, Any] = wire("parameters", d_object, factory=dict, doc="its parameters")
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(slots=True, kw_only=True)
class ActionRefCompensation(Wire):
    """Undo by running another action of the same proposal."""

    type: Literal["action_ref"] = wire(
        "type", d_str, default="action_ref", doc='"action_ref": undo by running another action'
    )
    action_id: str = wire(
        "action_id",
        d_str,
        required=True,
        doc="the id of the action of this proposal that undoes it",
    )
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


Compensation: TypeAlias = ToolCompensation | ActionRefCompensation
_d_compensation = d_tagged("type", {"tool": ToolCompensation, "action_ref": ActionRefCompensation})


# --- Action -------------------------------------------------------------------------

_OUTPUT_REF = re.compile(r"\$([^.]+)\.output(?:\.(.+))?")


@dataclass(frozen=True, slots=True)
class OutputRef:
    """A parameter value ``$<action_id>.output[.<path>]`` found at ``pointer``."""

    action_id: str
    path: str | None
    pointer: tuple[str | int, ...]


def _has_dollar_string(value: dict[str, Any] | list[Any]) -> bool:
    """Fast scan: does any string inside ``value`` start with ``$``?"""
    stack: list[Any] = [value]
    while stack:
        container = stack.pop()
        for item in container.values() if type(container) is dict else container:
            t = type(item)
            if t is str:
                if item.startswith("$"):
                    return True
            elif t is dict or t is list:
                stack.append(item)
    return False


def _find_output_refs(value: Any, at: tuple[str | int, ...], out: list[OutputRef]) -> None:
    """Append every output reference inside ``value`` (found at ``at``) to ``out``.

    A nested value is entered only when a fast scan finds a "$" string in it: most
    parameters hold no reference, and most references sit at the top level."""
    items = value.items() if type(value) is dict else enumerate(value)
    for key, item in items:
        t = type(item)
        if t is str:
            if item.startswith("$"):
                match = _OUTPUT_REF.fullmatch(item)
                if match:
                    out.append(OutputRef(match.group(1), match.group(2), (*at, key)))
        elif (t is dict or t is list) and _has_dollar_string(item):
            _find_output_refs(item, (*at, key), out)


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items)) if len(items) > 1 else items


# docs/semantics.md §3, over an action's fields (Action's methods, and the flat plan's
# readers, which have the fields and no Action): what it reads and writes.


def state_read_keys_of(parameters: Mapping[str, Any]) -> list[str]:
    """The keys a ``state_read`` with these ``parameters`` names: ``key`` then ``keys``."""
    keys: list[str] = []
    key = parameters.get("key")
    if type(key) is str:
        keys.append(key)
    many = parameters.get("keys")
    if type(many) is list:
        keys.extend(k for k in many if type(k) is str)
    return _unique(keys)


def depended_keys_of(
    kind: str, state_dependencies: Sequence[str], parameters: Mapping[str, Any]
) -> list[str]:
    """:meth:`Action.depended_keys` of an action given by its fields."""
    if kind == "state_read":
        return _unique([*state_dependencies, *state_read_keys_of(parameters)])
    if len(state_dependencies) > 1:
        return list(dict.fromkeys(state_dependencies))
    return state_dependencies if type(state_dependencies) is list else list(state_dependencies)


def writes_of(
    kind: str,
    write_set: Sequence[str],
    effects: Mapping[str, Any],
    parameters: Mapping[str, Any],
) -> list[str]:
    """:meth:`Action.writes` of an action given by its fields."""
    if write_set:
        return _unique(write_set if type(write_set) is list else list(write_set))
    keys = list(effects)
    if kind == "state_write":
        key = parameters.get("key")
        if type(key) is str and key not in effects:
            keys.append(key)
    return keys


def output_refs_of(parameters: Mapping[str, Any]) -> list[OutputRef]:
    """:meth:`Action.output_refs` of an action given by its ``parameters``."""
    out: list[OutputRef] = []
    _find_output_refs(parameters, ("parameters",), out)
    return out


@dataclass(slots=True, kw_only=True)
class Action(Wire):
    """A single unit of agent intent (spec: Action)."""

    id: str = wire(
        "id", d_str, factory=_new_action_id, doc="unique within the proposal (a UUID when absent)"
    )
    type: str = wire(
        "type",
        d_known_str(_ACTION_TYPES),
        required=True,
        doc="tool_call, state_write, state_read or assertion",
    )
    tool: str | None = wire(
        "tool", d_optional(d_str), default=None, omit_none=True, doc="the tool a tool_call invokes"
    )
    parameters: dict[str, Any] = wire(
        "parameters",
        d_object,
        factory=dict,
        doc="the tool's arguments; a state_write's {key, value}",
    )
    preconditions: list[Precondition] = wire(
        "preconditions",
        d_list(d_model(Precondition)),
        factory=list,
        doc="predicates over the state that must hold first",
    )
    expected_effects: dict[str, Any] = wire(
        "expected_effects",
        d_object,
        factory=dict,
        doc="the state changes the action claims (key -> value)",
    )
    state_dependencies: list[str] = wire(
        "state_dependencies",
        d_str_list,
        factory=list,
        doc="state keys that must exist first; they order the plan",
    )
    dependencies: list[str] = wire(
        "dependencies",
        d_str_list,
        factory=list,
        doc="ids of actions that must succeed first (car-verify's extension)",
    )
    read_set: list[str] = wire(
        "read_set",
        d_str_list,
        factory=list,
        doc="the keys it reads (default: dependencies and assumption keys)",
    )
    write_set: list[str] = wire(
        "write_set", d_str_list, factory=list, doc="the keys it writes (default: its effect keys)"
    )
    assumptions: list[StateAssumption] = wire(
        "assumptions",
        d_list(d_model(StateAssumption)),
        factory=list,
        doc="what it assumes of shared state it did not produce",
    )
    invocation_mode: ToolInvocationMode = wire(
        "invocation_mode",
        d_enum(ToolInvocationMode),
        default=ToolInvocationMode.ONE_SHOT,
        doc="one_shot (default), streaming or long_running",
    )
    reversibility: Reversibility = wire(
        "reversibility",
        d_enum(Reversibility),
        default=Reversibility.IRREVERSIBLE,
        doc="reversible, compensable or irreversible (default)",
    )
    compensation: Compensation | None = wire(
        "compensation",
        d_optional(_d_compensation),
        default=None,
        omit_none=True,
        doc="how to undo it: a tool call or another action",
    )
    idempotent: bool = wire(
        "idempotent",
        d_bool,
        default=False,
        doc="whether running it twice is safe (enables caching)",
    )
    max_retries: int = wire(
        "max_retries", d_uint, default=3, doc="retries under failure_behavior retry (default 3)"
    )
    failure_behavior: FailureBehavior = wire(
        "failure_behavior",
        d_enum(FailureBehavior),
        default=FailureBehavior.ABORT,
        doc="abort (default), retry or skip",
    )
    timeout_ms: int | None = wire(
        "timeout_ms",
        d_optional(d_uint),
        default=None,
        omit_none=True,
        doc="the tool call's time limit in milliseconds",
    )
    metadata: dict[str, Any] = wire(
        "metadata", d_object, factory=dict, doc="anything; not interpreted"
    )
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    KNOWN_TYPES: ClassVar[frozenset[str]] = _ACTION_TYPES

    # docs/semantics.md §3 and 4: what an action reads, writes and does to the state.

    def param_key(self) -> str | None:
        """``parameters.key`` when it is a string, else None."""
        key = self.parameters.get("key")
        return key if type(key) is str else None

    def state_read_keys(self) -> list[str]:
        """The keys a ``state_read`` names: ``parameters.key`` then ``parameters.keys``."""
        if self.type != "state_read":
            return []
        return state_read_keys_of(self.parameters)

    def depended_keys(self) -> list[str]:
        """Keys that order and block this action: ``state_dependencies`` + ``state_read`` keys."""
        return depended_keys_of(self.type, self.state_dependencies, self.parameters)

    def reads(self) -> list[str]:
        """reads(A): ``read_set`` if non-empty, else dependencies + assumption keys + read keys."""
        if self.read_set:
            return _unique(self.read_set)
        keys = list(self.state_dependencies)
        keys.extend(a.key for a in self.assumptions)
        keys.extend(self.state_read_keys())
        return _unique(keys)

    def writes(self) -> list[str]:
        """writes(A): ``write_set`` if non-empty, else effect keys + a ``state_write``'s key."""
        return writes_of(self.type, self.write_set, self.expected_effects, self.parameters)

    def effects(self) -> dict[str, Any]:
        """What the walk applies: ``expected_effects``, then a state_write's ``{key: value}``."""
        if self.type == "state_write":
            key = self.param_key()
            if key is not None:
                effects = dict(self.expected_effects)
                effects[key] = self.parameters.get("value")
                return effects
        return self.expected_effects

    def output_refs(self) -> list[OutputRef]:
        """Every ``$<id>.output[.<path>]`` string inside ``parameters``, at any depth."""
        return output_refs_of(self.parameters)

    def predicate(self) -> list[tuple[Precondition, tuple[str | int, ...]]]:
        """An assertion's predicate: its preconditions plus the one its parameters spell.

        Each entry comes with its location relative to the action.
        """
        out: list[tuple[Precondition, tuple[str | int, ...]]] = [
            (p, ("preconditions", i)) for i, p in enumerate(self.preconditions)
        ]
        key = self.param_key()
        if self.type == "assertion" and key is not None:
            operator = self.parameters.get("operator", "eq")
            spelled = Precondition(
                key=key,
                operator=operator if type(operator) is str else json.dumps(operator),
                value=self.parameters.get("value"),
            )
            out.append((spelled, ("parameters",)))
        return out

    def missing_required_compensation(self) -> bool:
        """True when the action is ``compensable`` but declares no ``compensation``."""
        return self.reversibility is Reversibility.COMPENSABLE and self.compensation is None


# --- ActionProposal -----------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class ActionProposal(Wire, HtmlDisplay):
    """A batch of actions submitted in one verify-then-execute round."""

    id: str = wire(
        "id", d_str, factory=_new_proposal_id, doc="the proposal's id (12 hex digits when absent)"
    )
    source: str = wire("source", d_str, default="unknown", doc="who proposed it (a model's name)")
    timestamp: str = wire("timestamp", d_str, factory=_now, doc="when, as an RFC 3339 date-time")
    actions: list[Action] = wire(
        "actions", d_list(d_model(Action)), factory=list, doc="the plan: a DAG of actions"
    )
    context: dict[str, Any] = wire(
        "context", d_object, factory=dict, doc="anything the proposer adds; not interpreted"
    )
    schema_ref: str | None = wire(
        "$schema",
        d_optional(d_str),
        default=None,
        omit_none=True,
        doc="the JSON Schema an editor checks this file against; no check reads it",
    )
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: Keys the JSON text repeated in one object (read with ``repeated_keys(p)``).
    repeated_keys: tuple[RepeatedKey, ...] = field(default=(), repr=False, compare=False)

    def rollback_contract(self) -> Reversibility:
        """The worst declared reversibility; ``reversible`` for an empty batch."""
        worst = Reversibility.REVERSIBLE
        for action in self.actions:
            if action.reversibility.rank > worst.rank:
                worst = action.reversibility
        return worst


# --- tools ------------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class ToolRateLimit(Wire):
    """At most ``max_calls`` calls of the tool per ``interval_secs`` seconds."""

    max_calls: int = wire("max_calls", d_uint, required=True, doc="at most this many calls")
    interval_secs: float = wire(
        "interval_secs", d_number, required=True, doc="per this many seconds"
    )
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(slots=True, kw_only=True)
class ToolSchema(Wire):
    """A registered tool: its parameter schema, return schema, caching and rate limit."""

    name: str = wire(
        "name", d_str, required=True, doc="the tool's name, as a tool_call's tool names it"
    )
    description: str = wire("description", d_str, default="", doc="what the tool does")
    parameters: Any = wire(
        "parameters", _d_schema, factory=dict, doc="the JSON Schema of its parameters"
    )
    returns: Any = wire(
        "returns",
        d_optional(_d_schema),
        default=None,
        omit_none=True,
        doc="the JSON Schema of its output",
    )
    idempotent: bool = wire(
        "idempotent", d_bool, default=False, doc="whether calling it twice is safe"
    )
    cache_ttl_secs: int | None = wire(
        "cache_ttl_secs",
        d_optional(d_uint),
        default=None,
        omit_none=True,
        doc="how long its results may be reused",
    )
    rate_limit: ToolRateLimit | None = wire(
        "rate_limit",
        d_optional(d_model(ToolRateLimit)),
        default=None,
        omit_none=True,
        doc="how often it may be called",
    )
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


# --- costs and results ------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class CostSummary(Wire):
    """Post-execution accounting attached to every ProposalResult."""

    tool_calls: int = wire("tool_calls", d_uint, default=0)
    actions_executed: int = wire("actions_executed", d_uint, default=0)
    actions_rejected: int = wire("actions_rejected", d_uint, default=0)
    actions_skipped: int = wire("actions_skipped", d_uint, default=0)
    total_duration_ms: float = wire("total_duration_ms", d_number, default=0.0)
    retries: int = wire("retries", d_uint, default=0)
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(slots=True, kw_only=True)
class CostTarget(Wire):
    """The soft scoring target used to rank candidate proposals."""

    target_tool_calls: int = wire("target_tool_calls", d_uint, default=5)
    target_duration_ms: float = wire("target_duration_ms", d_number, default=5000.0)
    target_actions: int = wire("target_actions", d_uint, default=10)
    cost_weight: float = wire("cost_weight", d_number, default=0.2)
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.cost_weight <= 1.0:
            raise InputError(f"must be in [0.0, 1.0], got {self.cost_weight}", ["cost_weight"])

    def score(self, success_likelihood: float, cost_efficiency: float) -> float:
        return weighted_score(success_likelihood, cost_efficiency, self.cost_weight)


def weighted_score(success_likelihood: float, cost_efficiency: float, cost_weight: float) -> float:
    """The spec's score: ``success_likelihood * (1 - w) + cost_efficiency * w``."""
    return success_likelihood * (1 - cost_weight) + cost_efficiency * cost_weight


@dataclass(frozen=True, slots=True)
class StateMutation:
    """One entry of ``state_changes``: ``{"op": "set", "value": v}`` or ``{"op": "delete"}``."""

    op: Literal["set", "delete"]
    value: Any = None

    @classmethod
    def set(cls, value: Any) -> StateMutation:
        return cls("set", value)

    @classmethod
    def delete(cls) -> StateMutation:
        return cls("delete")

    @classmethod
    def from_dict(cls, data: Any) -> StateMutation:
        try:
            return _d_mutation(data)
        except Bad as bad:
            raise bad.to_input_error() from None

    def to_dict(self) -> dict[str, Any]:
        return {"op": "set", "value": self.value} if self.op == "set" else {"op": "delete"}


def _d_mutation(value: Any) -> StateMutation:
    if type(value) is not dict:
        raise expected("an object", value)
    op = value.get("op", MISSING)
    if op == "set":
        return StateMutation("set", d_json(value.get("value")))
    if op == "delete":
        return StateMutation("delete")
    if op is MISSING:
        raise Bad('missing required field "op"')
    raise Bad('expected "set" or "delete"', ["op"])


@dataclass(slots=True, kw_only=True)
class ActionResult(Wire):
    """What running one action did (spec: ProposalResult ``results``): its status,
    output or error, and its ``state_changes`` as tagged StateMutation objects."""

    action_id: str = wire("action_id", d_str, required=True)
    status: ActionStatus = wire("status", d_enum(ActionStatus), required=True)
    output: Any = wire("output", d_json, default=None)
    error: str | None = wire("error", d_optional(d_str), default=None)
    state_changes: dict[str, Any] = wire("state_changes", d_str_map(d_json), factory=dict)
    duration_ms: float = wire("duration_ms", d_number, default=0.0)
    timestamp: str = wire("timestamp", d_str, factory=_now)
    #: The run aborted after this action succeeded, and its effects were rolled back
    #: (the runtime's field since 0.54.0; written only when true).
    rolled_back: bool | None = wire("rolled_back", d_optional(d_bool), default=None, omit_none=True)
    #: The tool failed for good (it raised ``TerminalToolError``): no retry was made
    #: (the runtime's field since 0.54.0; written only when true).
    terminal: bool | None = wire("terminal", d_optional(d_bool), default=None, omit_none=True)
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def mutations(self) -> dict[str, StateMutation]:
        """``state_changes`` read as typed StateMutations."""
        return {k: StateMutation.from_dict(v) for k, v in self.state_changes.items()}


@dataclass(slots=True, kw_only=True)
class ProposalResult(Wire):
    """What executing a proposal returns: one ActionResult per action, and its cost."""

    proposal_id: str = wire("proposal_id", d_str, required=True)
    results: list[ActionResult] = wire("results", d_list(d_model(ActionResult)), factory=list)
    cost: CostSummary = wire("cost", d_model(CostSummary), factory=CostSummary)
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(slots=True, kw_only=True)
class PolicyViolation(Wire):
    """A policy denied an action: which policy, which action, and why."""

    policy_name: str = wire("policy_name", d_str, required=True)
    action_id: str = wire("action_id", d_str, required=True)
    reason: str = wire("reason", d_str, required=True)
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


# --- streaming / long-running tools -------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class ToolHandle(Wire):
    """The opaque handle of a detached (streaming or long-running) tool invocation."""

    id: str = wire("id", d_str, required=True)
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(slots=True, kw_only=True)
class TextChunk(Wire):
    """A streamed chunk of text."""

    kind: Literal["text"] = wire("kind", d_str, default="text")
    text: str = wire("text", d_str, required=True)
    terminal: ClassVar[bool] = False
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(slots=True, kw_only=True)
class DataChunk(Wire):
    """A streamed chunk of JSON data."""

    kind: Literal["data"] = wire("kind", d_str, default="data")
    data: Any = wire("data", d_json, default=None)
    terminal: ClassVar[bool] = False
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(slots=True, kw_only=True)
class ProgressChunk(Wire):
    """Progress of a detached tool: ``fraction`` done, with an optional message."""

    kind: Literal["progress"] = wire("kind", d_str, default="progress")
    fraction: float = wire("fraction", d_number, required=True)
    message: str | None = wire("message", d_optional(d_str), default=None, omit_none=True)
    terminal: ClassVar[bool] = False
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(slots=True, kw_only=True)
class DoneChunk(Wire):
    """The terminal chunk of a tool that finished, with its ``result`` if any."""

    kind: Literal["done"] = wire("kind", d_str, default="done")
    result: Any = wire("result", d_json, default=MISSING)
    terminal: ClassVar[bool] = True
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(slots=True, kw_only=True)
class ErrorChunk(Wire):
    """The terminal chunk of a tool that failed."""

    kind: Literal["error"] = wire("kind", d_str, default="error")
    message: str = wire("message", d_str, required=True)
    terminal: ClassVar[bool] = True
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


ToolStreamChunk: TypeAlias = TextChunk | DataChunk | ProgressChunk | DoneChunk | ErrorChunk
_d_chunk = d_tagged(
    "kind",
    {
        "text": TextChunk,
        "data": DataChunk,
        "progress": ProgressChunk,
        "done": DoneChunk,
        "error": ErrorChunk,
    },
)


def chunk_from_dict(data: Any) -> ToolStreamChunk:
    """Decode one ToolStreamChunk by its ``kind``."""
    try:
        return _d_chunk(data)  # type: ignore[no-any-return]
    except Bad as bad:
        raise bad.to_input_error() from None


@dataclass(slots=True, kw_only=True)
class ToolStreamEvent(Wire):
    """A chunk tagged with the handle of the invocation that produced it."""

    handle: ToolHandle = wire("handle", d_model(ToolHandle), required=True)
    chunk: ToolStreamChunk = wire("chunk", _d_chunk, required=True)
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(slots=True, kw_only=True)
class ToolPollResult(Wire):
    """What a poll of a detached tool returns: its status and the chunks since the last
    poll, then its result or error once it has ended."""

    handle: ToolHandle = wire("handle", d_model(ToolHandle), required=True)
    tool: str = wire("tool", d_str, required=True)
    action_id: str = wire("action_id", d_str, required=True)
    status: ToolStatus = wire("status", d_enum(ToolStatus), required=True)
    chunks: list[ToolStreamChunk] = wire("chunks", d_list(_d_chunk), factory=list)
    result: Any = wire("result", d_json, default=MISSING)
    error: str | None = wire("error", d_optional(d_str), default=None, omit_none=True)
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


# --- loading ------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400: valid JSON text, but no number Python holds
        raise ValueError(f"the number {text} is out of range")
    return value


class Readable(Protocol):
    """An open file, or anything with ``read()``, as ``json.load`` takes it."""

    def read(self) -> str | bytes: ...


def _is_open_file(source: object) -> TypeGuard[Readable]:
    """Anything with a ``read`` method that is not text, bytes or a path (asked as
    ``json.load`` asks it: a ``runtime_checkable`` Protocol test costs more than
    the parse of a small plan)."""
    if isinstance(source, (str, bytes, bytearray, os.PathLike)):
        return False
    return callable(getattr(source, "read", None))


def _file_name(file: Readable) -> str | None:
    """An open file's name, for errors (``<stdin>`` too); None for an in-memory one."""
    name = getattr(file, "name", None)
    return str(name) if isinstance(name, (str, os.PathLike)) else None


#: Set by the decoder when an object repeats a key (per thread: lint and the
#: executor may decode in several at once).
_REPEATS = threading.local()


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as ``json`` builds one, noting when a key repeats (the last
    value wins, and the others would be lost without a word)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        _REPEATS.seen = True
    return obj


_FINITE_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def loads_finite(text: str) -> Any:
    """JSON text as the wire format has it: ``NaN``, ``Infinity`` and a number
    past a float's range (``1e999``) are a ``ValueError``, not a value no reader
    of the document could hold (the importers decode records with it)."""
    return _FINITE_DECODER.decode(text)


#: The decoders, one for every document (json.loads with hooks makes a new one per
#: call): each without the hook that notes a repeated key, and with it. A document
#: is decoded without it (the hook is a Python call per object, and a list of pairs
#: per object for the collector to walk: 1.7x the decoding of a 10,000-action plan);
#: with it only when a key may repeat (:func:`_key_marks`).
_DECODERS = (
    _FINITE_DECODER,
    json.JSONDecoder(
        parse_constant=_reject_constant, parse_float=_finite_float, object_pairs_hook=_object
    ),
)
#: ``json.loads`` as it is, but for the note of repeated keys (``lint`` reads with it,
#: and reports NaN and big numbers itself, where they are in the file).
_PLAIN_DECODERS = (json.JSONDecoder(), json.JSONDecoder(object_pairs_hook=_object))


def decode_text(text: str, *, first_line: int = 1) -> tuple[Any, list[RepeatedKey]]:
    """``json.loads(text)`` (raising what it raises), and the keys ``text`` repeats
    in one object, their lines counted from ``first_line``."""
    data, repeats, _ = _decode(_PLAIN_DECODERS, text, first_line)
    return data, repeats


def _decode(
    decoders: tuple[json.JSONDecoder, json.JSONDecoder], text: str, first_line: int = 1
) -> tuple[Any, list[RepeatedKey], int]:
    """``text`` decoded, its repeated keys, and how deeply it nests: the one place
    repeats are found. The hook's flag (:func:`_decode_noting`, the plain version)
    is asked only when the text may write more keys than the objects hold."""
    plain, noting = decoders
    data = plain.decode(text)
    depth, members = json_shape(data)
    if may_repeat_keys(text, members) and _decode_noting(noting, text):
        return data, _repeated_keys(text, first_line), depth
    return data, [], depth


def _decode_noting(decoder: json.JSONDecoder, text: str) -> bool:
    """Whether ``text`` repeats a key in one object, as the hook of ``decoder`` notes."""
    _REPEATS.seen = False
    decoder.decode(text)
    return bool(_REPEATS.seen)


def _key_marks(text: str) -> int:
    """At least as many as the keys written in JSON ``text`` (so that, when the
    decoded objects hold as many members, no key repeats).

    A key ends with an unescaped quote, white space perhaps, and a colon. So each
    key end is a ``":`` (or a quote, white space and a colon, counted apart), unless
    the quote is escaped (``\\":`` inside a string), which is not a key end unless
    its backslash is escaped in turn (``\\\\":``). Counting ``":``, taking off the
    escaped ones and adding back those after an escaped backslash never undercounts
    (three backslashes are counted once too often); a string holding ``":`` counts
    too often as well: then the hook decides. str.count is one fast scan each.
    """
    marks = text.count('":')
    if "\\" in text:
        marks += text.count('\\\\":') - text.count('\\":')
    if _spaced(text):
        marks += len(_SPACED_KEY_END.findall(text))
    return marks


def _spaced(text: str) -> bool:
    """Whether ``text`` may hold a spaced key end: white space just before a colon.
    Looked for as such a pair (a scan of the text by the regular expression costs a
    third of decoding it), a line end, a tab or a return first only where the text
    has one at all (a one-character search is the fast one)."""
    return (
        " :" in text
        or ("\n" in text and "\n:" in text)
        or ("\t" in text and "\t:" in text)
        or ("\r" in text and "\r:" in text)
    ) and _SPACED_KEY_END.search(text) is not None


def may_repeat_keys(text: str, members: int) -> bool:
    """Whether JSON ``text``, whose decoded objects hold ``members`` members in all,
    may write a key twice in one object: it writes more keys than that (every key
    is followed by a colon, so when the text has no more colons than members, no
    key repeats; else the key ends are counted, :func:`_key_marks`)."""
    return text.count(":") > members and _key_marks(text) > members


#: A quote, white space and a colon: a key end with room before its colon.
_SPACED_KEY_END = re.compile(r'"[ \t\r\n]+:')


def _repeated_keys(text: str, first_line: int) -> list[RepeatedKey]:
    """Where ``text`` repeats keys (a slow token walk: run once a repeat is known)."""
    from ..base.locate import duplicate_keys

    return [
        RepeatedKey(path, key, line + first_line - 1, column)
        for path, key, line, column in duplicate_keys(text)
    ]


@dataclass(frozen=True, slots=True)
class RepeatedKey:
    """A key that appears twice in one JSON object: the object's path, the key, and
    where the repeat is; the last value is the one read."""

    path: tuple[str | int, ...]
    key: str
    line: int
    column: int

    @property
    def index(self) -> int | None:
        """The action it is in (None: the proposal itself)."""
        if len(self.path) >= 2 and self.path[0] == "actions" and isinstance(self.path[1], int):
            return self.path[1]
        return None

    def error(self, label: str | None) -> InputError:
        """The repeat as an input error (in a file that is no proposal)."""
        return InputError(
            f"key `{self.key}` appears more than once in this object: which value is meant "
            "is unclear",
            self.path,
            source=label,
            line=self.line,
            column=self.column,
        )

    def message(self) -> str:
        where = f" in {format_path(self.path)}" if self.path else ""
        return (
            f"key `{self.key}` appears more than once{where} (again at line {self.line}, "
            f"column {self.column}): the last value is read and the others are lost"
        )


def json_value(value: Any) -> Any:
    """An argument that may be JSON text: a ``str`` or ``bytes`` read as
    :func:`read_json` reads a document (an InputError with line and column), any
    other value as it is. The newer checks take their inputs so (plans, goals,
    claims, intents, schedule graphs, predictions)."""
    return read_json(value) if isinstance(value, (str, bytes)) else value


def read_json(
    source: str | bytes | os.PathLike[str] | Readable,
    *,
    name: str | None = None,
    repeats: list[RepeatedKey] | None = None,
) -> Any:
    """Parse JSON text, bytes, a path or an open file, raising InputError with the
    line and column (and the file's name). A key repeated in an object is added to
    ``repeats`` when the caller gives a list (a proposal reports it as a finding),
    and is an input error otherwise (a state or tools file: which value is meant?)."""
    return _read_json(source, name=name, repeats=repeats)[0]


def _read_json(
    source: str | bytes | os.PathLike[str] | Readable,
    *,
    name: str | None = None,
    repeats: list[RepeatedKey] | None = None,
) -> tuple[Any, int]:
    """:func:`read_json`, and how deeply the document nests (found on the way)."""
    label = name
    text: str | bytes | bytearray
    if _is_open_file(source):
        label = label or _file_name(source)
        try:
            content: object = source.read()
        except OSError as err:
            raise InputError(f"cannot read file: {err.strerror or err}", source=label) from None
        except UnicodeDecodeError as err:
            raise InputError(f"not valid JSON: {err}", source=label) from None
        if not isinstance(content, (str, bytes, bytearray)):
            raise InputError(
                f"read() gave {type(content).__name__}, not text or bytes", source=label
            )
        text = content
    elif isinstance(source, os.PathLike):
        path = Path(source)
        label = label or str(path)
        try:
            text = path.read_bytes()
        except OSError as err:
            raise InputError(f"cannot read file: {err.strerror or err}", source=label) from None
        except ValueError as err:  # a path with a NUL in it
            raise InputError(f"cannot read file: {err}", source=label) from None
    elif isinstance(source, (str, bytes, bytearray)):
        text = source
    else:
        raise InputError(
            f"expected JSON text, bytes, a path or an open file, got {type(source).__name__}",
            source=label,
        )
    if not isinstance(text, str):  # as json.loads reads bytes
        text = decode_bytes(text, label)
    try:
        data, found, depth = _decode(_DECODERS, text)
    except json.JSONDecodeError as err:
        raise InputError(
            f"not valid JSON: {err.msg}", source=label, line=err.lineno, column=err.colno
        ) from None
    except ValueError as err:  # NaN / Infinity, or an integer of thousands of digits
        raise unreadable_value(err, text, label) from None
    except RecursionError:
        raise InputError("the JSON is nested too deeply to read", source=label) from None
    where = lone_surrogate(text, data)
    if where is not None:
        raise InputError(LONE_SURROGATE, where, source=label)
    if found:
        if repeats is None:
            raise found[0].error(label)
        repeats.extend(found)
    return data, depth


def _line_column(data: str | bytes | bytearray, offset: int) -> tuple[int, int]:
    newline: Any = b"\n" if isinstance(data, (bytes, bytearray)) else "\n"
    line = data.count(newline, 0, offset) + 1
    return line, offset - (data.rfind(newline, 0, offset) + 1) + 1


#: The encodings a file may be in (JSON's rule: UTF-8, UTF-16 or UTF-32, told by
#: the byte order mark or by where the zero bytes are), by their names in messages.
_ENCODING_NAMES = {
    "utf-8": "UTF-8",
    "utf-8-sig": "UTF-8",
    "utf-16": "UTF-16",
    "utf-16-le": "UTF-16",
    "utf-16-be": "UTF-16",
    "utf-32": "UTF-32",
    "utf-32-le": "UTF-32",
    "utf-32-be": "UTF-32",
}


def decode_bytes(data: bytes | bytearray, label: str | None = None) -> str:
    """The text of a file's bytes: UTF-8 (a byte order mark is dropped), or UTF-16 or
    UTF-32 as its byte order mark or zero bytes say, as JSON is read. Bytes that do not
    decode are an InputError naming their line and column in characters (counted
    from the text before them, the mark left out) and the bytes themselves."""
    raw = bytes(data)
    encoding = json.detect_encoding(raw)
    try:
        return raw.decode(encoding, "surrogatepass")
    except UnicodeDecodeError as err:
        raise not_decodable(err, raw, encoding, label) from None


def not_decodable(
    err: UnicodeDecodeError, data: bytes, encoding: str, label: str | None
) -> InputError:
    """Bytes that do not decode in ``encoding``, named by their line and column in
    characters and by the bytes (not Python's codec text)."""
    before = data[: err.start].decode(encoding, "surrogatepass")
    line = before.count("\n") + 1
    column = len(before) - (before.rfind("\n") + 1) + 1
    bad = data[err.start : err.end]
    name = _ENCODING_NAMES.get(encoding, encoding)
    shown = f"{'byte' if len(bad) == 1 else 'bytes'} {bad.hex(' ')}"
    if "truncated" in err.reason or "unexpected end" in err.reason:
        problem = f"not {name} text: the file ends inside a character ({shown})"
    else:
        problem = f"not {name} text: {shown} cannot start or continue a character"
    return InputError(problem, source=label, line=line, column=column)


def read_text_file(path: str | os.PathLike[str], label: str | None = None) -> str:
    """A file's text, decoded as :func:`decode_bytes` decodes it (``OSError``
    propagates: the caller says it cannot read the file)."""
    return decode_bytes(Path(path).read_bytes(), label if label is not None else str(path))


def unreadable_value(
    err: ValueError, text: str | bytes | bytearray, label: str | None
) -> InputError:
    """``NaN``/``Infinity``, or an integer too long to read, in car-verify's words."""
    import re

    pattern: Any = rb"-?\d{4300,}" if isinstance(text, (bytes, bytearray)) else r"-?\d{4300,}"
    if "digits" in str(err):
        found = re.search(pattern, text)
        if found is not None:
            line, column = _line_column(text, found.start())
            digits = found.end() - found.start()
            return InputError(
                f"an integer of {digits:,} digits: car-verify reads integers of up to 4,300 "
                "digits (write a longer number as a string)",
                source=label,
                line=line,
                column=column,
            )
    return InputError(f"not valid JSON: {err}", source=label)


#: The problem of a string that ``json.loads`` read from a ``\ud800``-style escape
#: with no partner: no UTF-8 encodes it, so nothing could print it, and the upstream
#: runtime's parser (serde) refuses the document.
LONE_SURROGATE: Final = (
    "not valid JSON: a string holds half of a UTF-16 surrogate pair (a lone \\ud800 to "
    "\\udfff escape), which is not Unicode text"
)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89abcdefABCDEF]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(text: str | bytes | bytearray, data: Any) -> list[str | int] | None:
    """The path to the first key or string of ``data`` (parsed from ``text``) that holds
    a lone surrogate, else None; a key on the path shows a surrogate as its escape
    (``\\ud800``), so that the path can be printed. Only text that escapes a
    surrogate is searched (a backslash is looked for first: one ``memchr``, where
    the two-character ``"\\u"`` costs a tenth of ``json.loads``)."""
    if isinstance(text, str):
        if "\\" not in text or not _SURROGATE_ESCAPE.search(text):
            return None
    elif b"\\" not in text or not _SURROGATE_ESCAPE_BYTES.search(text):
        return None
    for path, value in json_nodes(data):
        if type(value) is str:
            bad = path if _SURROGATE.search(value) else None
        elif type(value) is dict:
            bad = next(([*path, k] for k in value if _SURROGATE.search(k)), None)
        else:
            continue
        if bad is not None:
            return [_escaped(p) if type(p) is str else p for p in bad]
    return None


def _escaped(text: str) -> str:
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _looks_like_json_text(text: str) -> bool:
    """Whether a ``str`` given to a loader is JSON text rather than a path: it is
    empty, starts (after white space) with ``{``, ``[`` or ``"``, which no file name
    does, or is a JSON scalar as a whole (``42``, ``null``: the error then says a
    document must be an object). Anything else is a path, so that ``true.json``
    and ``notes/plan.json`` are read as files."""
    stripped = text.lstrip()
    if not stripped or stripped[0] in '{["':
        return True
    if stripped[0] not in "0123456789-tfn" or len(stripped) > 64:
        return False
    try:
        json.loads(stripped)
    except ValueError:
        return False
    return True


#: A path with one of these suffixes is a YAML document (as the command line reads it).
YAML_SUFFIXES = (".yaml", ".yml")


def load_yaml(
    path: str | os.PathLike[str],
) -> tuple[ActionProposal, dict[str, tuple[int, int]]]:
    """The proposal in a YAML file (one document), and the line and column of its
    values by JSON pointer. An error names the file and the line."""
    import yaml

    from ..base.locate import yaml_documents

    name = str(path)
    try:
        text = read_text_file(path, name)
    except OSError as err:
        raise InputError(f"cannot read file: {err.strerror or err}", source=name) from None
    try:
        documents = yaml_documents(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or str(err)
        raise InputError(
            f"not valid YAML: {problem}",
            source=name,
            line=mark.line + 1 if mark is not None else None,
            column=mark.column + 1 if mark is not None else None,
        ) from None
    if len(documents) != 1:
        raise InputError(
            f"holds {len(documents)} YAML documents; a command takes one proposal per file "
            "(`car-verify lint` reads every document)",
            source=name,
        )
    data, positions = documents[0]
    try:
        proposal = load_parsed(data)
    except InputError as err:
        line, column = _nearest(positions, err.path)
        raise InputError(err.problem, err.path, source=name, line=line, column=column) from None
    return proposal, positions


def _nearest(positions: dict[str, tuple[int, int]], path: list[str | int]) -> tuple[int, int]:
    for depth in range(len(path), -1, -1):
        found = positions.get(json_pointer(path[:depth]))
        if found is not None:
            return found
    return positions.get("", (1, 1))


def load(
    source: ActionProposal | Mapping[str, Any] | str | bytes | os.PathLike[str] | Readable,
) -> ActionProposal:
    """Model a proposal from a dict, JSON text, bytes, a path, or an open file.

    A ``str`` is JSON text when it starts with ``{``, ``[`` or ``"`` (after white
    space) or is a JSON scalar as a whole, otherwise a path. A path ending in
    ``.yaml`` or ``.yml`` is read as YAML, one document, as the command line reads it.
    Raises :class:`InputError` naming the JSON path (and file) of what is wrong;
    nothing is half-read.
    """
    if isinstance(source, ActionProposal):
        return source
    return _load(source)


def _load(
    source: Mapping[str, Any] | str | bytes | os.PathLike[str] | Readable,
) -> ActionProposal:
    if isinstance(source, Mapping):
        # The model must not share mutable JSON with the caller's dict.
        return _model(dict(source), is_json=False, copy=True)
    if not _is_document_source(source):
        # A JSON array or scalar, say: decode says what was expected.
        return _model(source, is_json=False)
    path = source if isinstance(source, os.PathLike) else None
    if isinstance(source, str) and not _looks_like_json_text(source):
        path = Path(source)
    if path is not None and str(path).lower().endswith(YAML_SUFFIXES):
        return load_yaml(path)[0]
    data, label, repeats, depth = _read_source(source)
    proposal = _model(data, is_json=True, label=label, depth=depth)
    if repeats:
        proposal.repeated_keys = tuple(repeats)
    return proposal


def _is_document_source(source: object) -> TypeGuard[str | bytes | os.PathLike[str] | Readable]:
    """Whether a loader was given a document to read (text, bytes, a path or an
    open file) rather than data already parsed."""
    return isinstance(source, (str, bytes, bytearray, os.PathLike)) or _is_open_file(source)


def _read_source(
    source: str | bytes | os.PathLike[str] | Readable,
) -> tuple[Any, str | None, list[RepeatedKey], int]:
    """Parse a document given to a loader, with its file's name for errors (None
    for text), the keys it repeats and how deeply it nests. A ``str`` is a path
    unless it looks like JSON text."""
    if _is_open_file(source):
        label = _file_name(source)
    else:
        if isinstance(source, str) and not _looks_like_json_text(source):
            source = Path(source)
        label = str(source) if isinstance(source, os.PathLike) else None
    repeats: list[RepeatedKey] = []
    data, depth = _read_json(source, name=label, repeats=repeats)
    return data, label, repeats, depth


def load_parsed(data: Any) -> ActionProposal:
    """Model data the caller parsed and hands over. It is checked to be JSON (YAML
    also makes dates and sets; ``json.loads`` lets ``NaN`` and ``1e400`` through) but
    not copied, so the model may share its objects and arrays."""
    return _model(data, is_json=False)


def load_owned(data: Any) -> ActionProposal:
    """Model data the caller checked to be JSON (``d_json``) and gives up whole:
    taken apart as it is read, as ``load`` takes apart what it parsed (the
    document must not be read again). Its nesting is bounded as ``load`` bounds it."""
    return _model(data, is_json=True)


def _model(
    data: Any,
    *,
    is_json: bool,
    copy: bool = False,
    label: str | None = None,
    depth: int | None = None,
) -> ActionProposal:
    if isinstance(data, dict) and not any(k in data for k in PROPOSAL_FIELDS):
        import difflib

        keys = [k for k in list(data)[:5] if isinstance(k, str)]
        found = ", ".join(f"`{k}`" for k in keys) or "no keys at all"
        near = [
            (k, close[0])
            for k in keys
            if (close := difflib.get_close_matches(k, PROPOSAL_FIELDS, n=1, cutoff=0.75))
        ]
        hint = (
            f"; did you mean `{near[0][1]}` for `{near[0][0]}`?"
            if near
            else " (a state or tools file?)"
        )
        raise InputError(
            f"not a proposal: the object has none of the proposal's fields "
            f"({', '.join(PROPOSAL_FIELDS)}), but {found}{hint}",
            source=label,
        )
    if depth is None:  # (a document's depth is found as it is decoded)
        depth = nesting_depth(data)
    if depth > MAX_DEPTH:  # one bound, for every way in
        path, depth = deepest(data)
        raise too_deep(path, depth, label)
    try:
        if not is_json:
            d_json(data)
        if copy:
            data = copy_json(data)
        if is_json or copy:  # nobody else holds the document: taken apart as it is read
            return decode_owned(ActionProposal, data)
        return decode(ActionProposal, data)
    except Bad as bad:
        error = bad.to_input_error()
        raise (error.with_source(label) if label else error) from None
    except RecursionError:
        raise InputError("the document is nested too deeply to model", source=label) from None


#: The proposal's own fields (docs/semantics.md §1): an object with none of them is
#: not a proposal (a state or tools file given by mistake).
PROPOSAL_FIELDS = ("id", "source", "timestamp", "actions", "context")


@dataclass(frozen=True, slots=True)
class UnknownField:
    """A key of the document that no field of the IR knows: kept, and ignored."""

    path: tuple[str | int, ...]
    name: str
    #: The nearest known name ("did you mean"), if one is close.
    suggestion: str | None
    #: The position of the action it sits in (None: the proposal itself).
    index: int | None

    @property
    def pointer(self) -> str:
        return json_pointer(self.path)

    def message(self) -> str:
        hint = f" (did you mean `{self.suggestion}`?)" if self.suggestion else ""
        return f"unknown field `{self.name}`{hint}: it is kept, and ignored by every check"


def repeated_keys(proposal: ActionProposal) -> tuple[RepeatedKey, ...]:
    """The keys the proposal's JSON text repeated in one object (none when it was
    built from data, not text)."""
    return getattr(proposal, "repeated_keys", ())


def unknown_fields(proposal: ActionProposal) -> list[UnknownField]:
    """Every unknown key of a proposal, its actions, their preconditions, assumptions
    and compensation, in document order."""
    import difflib

    out: list[UnknownField] = []

    def visit(obj: Any, at: tuple[str | int, ...], index: int | None) -> None:
        extra = getattr(obj, "extra", None)
        if not extra:
            return
        known = sorted(wire_names(type(obj)))
        for key in extra:
            near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            out.append(UnknownField((*at, key), key, near[0] if near else None, index))

    visit(proposal, (), None)
    for i, action in enumerate(proposal.actions):
        visit(action, ("actions", i), i)
        for j, pre in enumerate(action.preconditions):
            visit(pre, ("actions", i, "preconditions", j), i)
        for j, assumption in enumerate(action.assumptions):
            visit(assumption, ("actions", i, "assumptions", j), i)
        if action.compensation is not None:
            visit(action.compensation, ("actions", i, "compensation"), i)
    return out


def load_tools(source: Any) -> list[ToolSchema]:
    """Model a tool registry: an array of ToolSchema objects (or a dict name -> schema)."""
    return locate_tools(source)[0]


def locate_tools(source: Any) -> tuple[list[ToolSchema], list[str | int], str | None]:
    """:func:`load_tools`, also returning where each schema stands (its index in an
    array, its name in an object) and the file it came from, for later errors."""
    label: str | None = None
    if _is_document_source(source):
        source, label, repeats, _ = _read_source(source)
        if repeats:
            raise repeats[0].error(label)

    def error(message: str, path: Sequence[str | int] = ()) -> InputError:
        found = InputError(message, path)
        return found.with_source(label) if label else found

    # An array of schemas, or {name: schema} (where each schema may leave out its
    # name): errors are located by index or by name accordingly.
    entries: list[tuple[str | int, Any]]
    if isinstance(source, Mapping) and isinstance(source.get("name"), str):
        raise error(
            "expected an array of tool schemas (or an object of them by name), "
            "got one tool schema: put it in an array"
        )
    if isinstance(source, Mapping) and all(
        isinstance(v, (Mapping, ToolSchema)) for v in source.values()
    ):
        entries = []
        for name, item in source.items():
            given = item.get("name", name) if isinstance(item, Mapping) else item.name
            if given != name:
                raise error(f"the name {given!r} differs from its key {name!r}", [name, "name"])
            if isinstance(item, Mapping):
                item = {**item, "name": name}
            entries.append((name, item))
    elif isinstance(source, (list, tuple)):
        entries = list(enumerate(source))
    else:
        raise error(f"expected an array of tool schemas, got {kind(source)}")
    tools: list[ToolSchema] = []
    for where, item in entries:
        if isinstance(item, ToolSchema):
            tools.append(item)
            continue
        try:
            tools.append(decode_document(ToolSchema, item))
        except Bad as bad:
            found = bad.to_input_error(where)
            raise (found.with_source(label) if label else found) from None
    return tools, [where for where, _ in entries], label
