"""Value semantics: the one place that says what JSON values mean (SEMANTICS section 2).

Everything that compares state values, evaluates a precondition or groups equal
parameters calls into this module, so the rules below hold everywhere at once:

* JSON equality is deep and type-strict: ``true`` never equals ``1``; numbers
  compare by value (``1 == 1.0``); object key order does not matter.
* An absent key is not ``null``: ``eq`` on an absent key is false, ``neq`` true;
  ``exists`` / ``not_exists`` test presence only.
* ``gt lt gte lte`` need two JSON numbers (booleans are not numbers).
* ``contains``: substring for two strings, deep-equal membership for an array
  state value, false otherwise.
* An unknown operator evaluates to false.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, Final

__all__ = [
    "ABSENT",
    "KNOWN_OPERATORS",
    "Absent",
    "canonical",
    "copy_json",
    "evaluate",
    "format_value",
    "is_number",
    "json_equal",
]


class Absent:
    """The marker for a key that is not in the state (distinct from JSON ``null``)."""

    _instance: Absent | None = None

    def __new__(cls) -> Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Final = Absent()

#: The operators of the spec's operator table, in table order.
KNOWN_OPERATORS: Final = frozenset(
    {"eq", "neq", "gt", "lt", "gte", "lte", "exists", "not_exists", "contains"}
)


def is_number(value: object) -> bool:
    """True for a JSON number: an int or float that is not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def json_equal(a: object, b: object) -> bool:
    """Deep, type-strict JSON equality (``true != 1``, ``1 == 1.0``)."""
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        return ta is tb and a is b
    if ta is str or tb is str:
        return ta is tb and a == b
    if a is None or b is None:
        return a is b
    if is_number(a):
        return is_number(b) and a == b
    if isinstance(a, Mapping):
        if not isinstance(b, Mapping) or len(a) != len(b):
            return False
        return all(key in b and json_equal(value, b[key]) for key, value in a.items())
    if isinstance(a, (list, tuple)):
        if not isinstance(b, (list, tuple)) or len(a) != len(b):
            return False
        return all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def canonical(value: object) -> Hashable:
    """A hashable key such that ``canonical(a) == canonical(b)`` iff ``json_equal(a, b)``."""
    t = type(value)
    if t is str:
        return value
    if t is bool:
        return ("b", value)
    if value is None:
        return ("z",)
    if is_number(value):
        number = value
        if isinstance(number, float) and number.is_integer():
            number = int(number)
        return ("n", number)
    if isinstance(value, Mapping):
        return ("o", frozenset((k, canonical(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("a", tuple(canonical(v) for v in value))
    return ("?", repr(value))


def _contains(state_value: object, needle: object) -> bool:
    if type(state_value) is str:
        return type(needle) is str and needle in state_value
    if isinstance(state_value, list):
        return any(json_equal(item, needle) for item in state_value)
    return False


def evaluate(operator: str, actual: object, expected: object) -> bool:
    """Evaluate one precondition operator.

    ``actual`` is the state's value for the key, or :data:`ABSENT`.
    Unknown operators evaluate to false.
    """
    if operator == "eq":
        return actual is not ABSENT and json_equal(actual, expected)
    if operator == "neq":
        return actual is ABSENT or not json_equal(actual, expected)
    if operator == "exists":
        return actual is not ABSENT
    if operator == "not_exists":
        return actual is ABSENT
    if operator == "contains":
        return actual is not ABSENT and _contains(actual, expected)
    if operator in ("gt", "lt", "gte", "lte"):
        if actual is ABSENT or not is_number(actual) or not is_number(expected):
            return False
        a: float = actual  # type: ignore[assignment]
        b: float = expected  # type: ignore[assignment]
        if operator == "gt":
            return a > b
        if operator == "lt":
            return a < b
        if operator == "gte":
            return a >= b
        return a <= b
    return False


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON tree (dicts, lists and scalars), faster than ``copy.deepcopy``."""
    t = type(value)
    if t is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if t is list:
        return [copy_json(v) for v in value]
    return value


def format_value(value: object) -> str:
    """Render a value for a message: JSON text, ``absent`` for a missing key."""
    import json

    if value is ABSENT:
        return "absent"
    try:
        text = json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
