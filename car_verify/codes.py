"""Every finding code, defined once: default severity, tier and a one-line summary.

Codes are never reused; a renamed code stays here as an alias of its new name.
Passes emit only codes listed here (or codes a third-party pass declares), and
the test suite fails on a code no pass emits.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from types import MappingProxyType

from .errors import UsageError
from .findings import Severity, Tier

__all__ = ["ALIASES", "CODES", "Code", "lookup", "register_codes"]

E, W = Severity.ERROR, Severity.WARNING
D, H = Tier.DECISION_PROCEDURE, Tier.HEURISTIC


@dataclass(frozen=True, slots=True)
class Code:
    """A finding code: its stable name, default severity and tier, and a one-line summary."""

    name: str
    severity: Severity
    tier: Tier
    summary: str


_TABLE = [
    Code("empty-proposal", W, D, "the proposal has no actions"),
    Code("duplicate-id", E, D, "two actions share an id"),
    Code("unknown-action-type", E, D, "`type` is not one of the four action types"),
    Code("missing-tool-name", E, D, "a `tool_call` without `tool`"),
    Code("state-write-without-key", E, D, "a `state_write` without a string `parameters.key`"),
    Code("unknown-dependency", E, D, "`dependencies` or a `$id.output` reference names no action"),
    Code("dependency-cycle", E, D, "the dependency graph has a cycle"),
    Code("unknown-operator", E, D, "a precondition operator is not in the operator table"),
    Code(
        "precondition-unsatisfied", E, D, "a precondition is false when the action's level begins"
    ),
    Code(
        "missing-dependency",
        E,
        D,
        "a depended-on state key is absent when the action's level begins",
    ),
    Code("assertion-fails", E, D, "an assertion's predicate is false in the walk"),
    Code(
        "write-conflict",
        W,
        D,
        "two actions write the same key and neither is ordered before the other",
    ),
    Code(
        "repeated-call", W, H, "the same tool is called with deep-equal parameters 3 or more times"
    ),
    Code("too-many-actions", E, D, "the proposal has more actions than `max_actions`"),
    Code("unknown-tool", E, D, "a `tool_call` names a tool that is not in the registry"),
    Code("param-schema", E, D, "parameters violate the tool's `parameters` JSON Schema"),
    Code("missing-compensation", W, D, "`reversibility: compensable` without a `compensation`"),
    Code("never-runs", E, D, "no initial state lets the action run (decided with z3)"),
    Code(
        "read-write-hazard",
        W,
        D,
        "an action reads a key that an unordered action of the same proposal writes",
    ),
    Code(
        "belief-divergence",
        W,
        D,
        "an assumption's expected_value differs from the given initial state",
    ),
    Code(
        "unknown-compensation-target",
        E,
        D,
        "a compensation names no action of the proposal, or an unregistered tool",
    ),
]

_codes: dict[str, Code] = {}
for _code in _TABLE:
    if _code.name in _codes:  # pragma: no cover - guarded by the tests
        raise RuntimeError(f"duplicate finding code {_code.name}")
    _codes[_code.name] = _code

#: Every known code, by name (read-only view).
CODES = MappingProxyType(_codes)

#: Old name -> current name. Codes are never reused.
ALIASES: MappingProxyType[str, str] = MappingProxyType({})


def lookup(name: str) -> Code:
    """The code called ``name`` (or its current name, for a renamed one)."""
    name = ALIASES.get(name, name)
    try:
        return _codes[name]
    except KeyError:
        raise UsageError(f"unknown finding code {name!r}") from None


def register_codes(codes: Iterable[Code], *, owner: str) -> None:
    """Add a third-party pass's codes; a name that is already taken is an error."""
    for code in codes:
        existing = _codes.get(code.name)
        if existing is not None and existing != code:
            raise UsageError(f"pass {owner!r} redefines finding code {code.name!r}")
        _codes[code.name] = code
