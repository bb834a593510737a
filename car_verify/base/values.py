"""Value semantics: the one place that says what JSON values mean (docs/semantics.md §2).

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

import json
import json.encoder
import math
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, TypeAlias

from .patterns import LazyPattern

__all__ = [
    "ABSENT",
    "KNOWN_OPERATORS",
    "MAX_DEPTH",
    "SCALAR_TYPES",
    "Absent",
    "JSONObject",
    "JSONValue",
    "canonical",
    "copy_json",
    "deepest",
    "evaluate",
    "fingerprint",
    "format_predicate",
    "format_value",
    "is_number",
    "json_equal",
    "json_nodes",
    "json_shape",
    "nesting_depth",
    "plural",
]


#: Any JSON value (``null``, a boolean, a number, a string, an array, an object), as
#: :func:`json.loads` returns it: the one meaning of ``Any`` in a signature of the
#: package. It is ``Any`` to the type checker (as ``json.loads`` is typed) because
#: a reader of JSON checks the value's shape at run time, where a wrong one is an
#: input error naming its place, not a type error.
JSONValue: TypeAlias = Any
#: A JSON object: its keys are strings, its values any JSON values.
JSONObject: TypeAlias = dict[str, JSONValue]


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


# Where compact sorted JSON may hold a float: a number token after ":", "[" or ","
# with a "." or an exponent. A match inside a string only costs a needless rewrite.
_FLOAT_TOKEN = LazyPattern(r"[:\[,]-?\d+[.eE]")

_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
if _c_make_encoder is not None:  # the C encoder, built once (json.dumps builds one per call)
    _c_encode = _c_make_encoder(
        None, None, json.encoder.encode_basestring_ascii, None, ":", ",", True, False, False
    )

    def _sorted_json(value: Any) -> str:
        return "".join(_c_encode(value, 0))

else:  # pragma: no cover - Python implementations without the C accelerator
    _encoder = json.JSONEncoder(sort_keys=True, allow_nan=False, separators=(",", ":"))

    def _sorted_json(value: Any) -> str:
        return _encoder.encode(value)


def _integral_floats_to_int(value: Any) -> Any:
    t = type(value)
    if t is float:
        return int(value) if value.is_integer() else value
    if t is dict:
        return {k: _integral_floats_to_int(v) for k, v in value.items()}
    if t is list:
        return [_integral_floats_to_int(v) for v in value]
    return value


def canonical(value: Any) -> str:
    """A text such that ``canonical(a) == canonical(b)`` iff ``json_equal(a, b)``.

    Sorted-key JSON already tells ``true`` from ``1`` and ignores key order; the
    one difference left is an integral float (``1.0``) against an int (``1``), so
    integral floats are rewritten as ints, only when the text holds a float at all.
    """
    text = _sorted_json(value)
    if _FLOAT_TOKEN().search(text) or type(value) is float:
        text = _sorted_json(_integral_floats_to_int(value))
    return text


_json_string: Final = json.encoder.encode_basestring_ascii
#: The Python types of JSON's scalars (``json.loads`` makes no others).
SCALAR_TYPES: Final = frozenset({str, int, float, bool, type(None)})


def fingerprint(value: Mapping[str, Any], depth: int = 3) -> int:
    """A cheap number that JSON-equal objects always share (a necessary condition only).

    The number of keys, combined with the hashes of the scalar values, in a way that
    order does not change; an object or array inside is looked into the same way
    down to ``depth`` levels (below, its size stands for it). JSON-equal objects
    have the same keys and JSON-equal values; JSON-equal numbers are equal and hash
    alike in Python (``1 == 1.0``), and equal arrays hold the same elements. Keys
    are left out, and a boolean may share a number's hash: :func:`canonical`
    decides between objects that share a fingerprint. (Hashing each key with its
    value, as a tuple, was slower: see docs/performance.md. Calls whose parameters
    differ only inside a nested object shared one fingerprint before the nesting
    was looked into: 10,000 such calls were all compared by their canonical text.)
    """
    return len(value) ^ _nested(value.values(), depth)


def _nested(items: Collection[Any], depth: int) -> int:
    """:func:`fingerprint`'s share of an object's values or an array's elements."""
    if depth <= 0:
        return len(items)
    combined = 0
    for item in items:
        kind = type(item)
        if kind in SCALAR_TYPES:
            combined ^= hash(item)
        elif kind is dict:
            combined ^= _nested(item.values(), depth - 1) + _OBJECT_TAG
        elif kind is list:
            combined ^= _nested(item, depth - 1) + _ARRAY_TAG
    return combined


#: Added to a nested object's or array's share of a fingerprint (so that ``[x]``
#: and ``{"k": x}`` tend to differ, and a level's share from the level below).
_OBJECT_TAG: Final = 0x2545F491
_ARRAY_TAG: Final = 0x6C8E9CF5


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
    """A deep copy of a JSON tree (dicts, lists and scalars), faster than ``copy.deepcopy``.
    Any other mapping (an ``OrderedDict``, a ``defaultdict``) becomes a dict, and a
    tuple a list: nothing of the copy is shared with the original."""
    t = type(value)
    if t is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if t is list:
        return [copy_json(v) for v in value]
    if t is str or t is int or t is float or t is bool or value is None:
        return value
    if isinstance(value, Mapping):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [copy_json(v) for v in value]
    return value


def json_nodes(value: Any) -> Iterator[tuple[list[str | int], Any]]:
    """Every value of a JSON tree with its path, in document order (iterative: for
    trees too deep to recurse through)."""
    stack: list[tuple[list[str | int], Any]] = [([], value)]
    while stack:
        path, node = stack.pop()
        yield path, node
        if type(node) is dict:
            stack.extend(([*path, k], v) for k, v in reversed(node.items()))
        elif type(node) is list:
            stack.extend(([*path, j], node[j]) for j in range(len(node) - 1, -1, -1))


#: The deepest nesting car-verify models, reads or writes (load, to_dict, JSON output
#: alike): past it a document is an input error, never a RecursionError later on.
MAX_DEPTH: Final = 256


def nesting_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How many levels of arrays and objects ``value`` nests, stopping once past
    ``limit``. Level by level, visiting containers only (no recursion): it runs on
    every load, where a walk over every value cost 40% of ``load`` (docs/performance.md)."""
    return json_shape(value, limit)[0]


def json_shape(value: Any, limit: int = MAX_DEPTH) -> tuple[int, int]:
    """:func:`nesting_depth`, and how many members the objects of ``value`` hold in all
    (counted only down to ``limit``): one walk over the containers gives both (a
    document is loaded with one, and the members tell whether a key may repeat)."""
    level = [value] if type(value) is dict or type(value) is list else []
    depth = members = 0
    while level:
        depth += 1
        if depth > limit:
            return depth, members
        deeper = []
        for node in level:
            if type(node) is dict:
                members += len(node)
                children: Iterable[Any] = node.values()
            else:
                children = node
            for child in children:
                if type(child) is dict or type(child) is list:
                    deeper.append(child)
        level = deeper
    return depth, members


def deepest(value: Any) -> tuple[list[str | int], int]:
    """The path to the most deeply nested value in a JSON tree (the first in document
    order) and how many levels it lies below the top."""
    best: tuple[list[str | int], int] = ([], 0)
    for path, _ in json_nodes(value):
        if len(path) > best[1]:
            best = (path, len(path))
    return best


#: Operators that test presence only: their ``value`` is not part of what they say.
_PRESENCE_OPERATORS: Final = frozenset({"exists", "not_exists"})


def plural(n: int, noun: str, many: str | None = None) -> str:
    """A count as messages write it: ``1 action``, ``2 actions``, ``2 trajectories``
    (a consonant's ``y`` becomes ``ies``); ``many`` is the plural where it is
    neither (``plural(2, "policy violation")`` needs none: the last word takes the
    ending)."""
    if n == 1:
        return f"1 {noun}"
    if many is None:
        ies = noun.endswith("y") and noun[-2:-1] not in ("", "a", "e", "i", "o", "u")
        many = noun[:-1] + "ies" if ies else noun + "s"
    return f"{n} {many}"


def shown(value: object) -> str:
    """A value a caller passed, as an error says it: a JSON scalar as JSON text
    (``true``, ``3``, ``"x"``, ``null``), an array or object by its kind, anything
    else by its Python type (``a Python set``); never a Python repr (``True``)."""
    if value is None or isinstance(value, (bool, int, str)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        return json.dumps(value) if math.isfinite(value) else f"the number {value}"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"a Python {type(value).__name__}"


def listed(names: Sequence[str], limit: int = 5, *, total: int | None = None) -> str:
    """Names as messages list them: the first ``limit``, then how many more
    (``a, b, c, d, e and 7 more``), so that a cut list never reads as the whole.
    ``total``: how many there are, where ``names`` holds only the first few."""
    count = len(names) if total is None else total
    shown = ", ".join(names[:limit])
    return shown + (f" and {count - min(limit, len(names))} more" if count > limit else "")


def format_predicate(key: str, operator: str, value: object) -> str:
    """A predicate as messages write it: ``tests_passed eq true``, ``token exists``."""
    if operator in _PRESENCE_OPERATORS:
        return f"{key} {operator}"
    return f"{key} {operator} {format_value(value)}"


def format_value(value: object) -> str:
    """Render a value for a message: JSON text, ``absent`` for a missing key."""
    if value is ABSENT:
        return "absent"
    t = type(value)
    if type(value) is str:
        text = _json_string(value)  # what json.dumps writes, without building an encoder
    elif t is bool or value is None:
        text = "true" if value is True else "false" if value is False else "null"
    elif t is int:
        text = int.__repr__(value)
    else:
        try:
            text = json.dumps(value, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError):
            text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
