"""A fast yes for parameters a simple JSON Schema accepts; jsonschema has the last word.

Checking a 10,000-step plan's parameters with jsonschema costs about 100 us a call,
most of a whole ``verify``. Tool schemas are mostly simple: an object, typed
properties, ``required``, ``additionalProperties: false``, string lengths, number
bounds, a string ``enum``. :func:`accepter` compiles such a schema (Draft 2020-12,
the registry's default) into a plain predicate that answers True only when it is
sure the value is valid. Anything else (a keyword it does not know, a value it
cannot vouch for, an invalid value) answers False, and the caller asks jsonschema,
which finds and words every violation. So the findings are always jsonschema's;
the predicate only spares it the valid calls. A Hypothesis test holds the
predicate to that: whenever it says yes, jsonschema finds nothing, and within the
subset it says yes exactly when jsonschema finds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["Accept", "accepter"]

Accept = Callable[[Any], bool]

#: Keywords that only annotate (Draft 2020-12): they never make a value invalid
#: (``format`` too, as the registry validates without a format checker).
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
     "writeOnly", "format", "$id", "$anchor", "contentMediaType", "contentEncoding"}
)  # fmt: skip
_KNOWN = frozenset(
    {"type", "properties", "required", "additionalProperties", "enum", "minLength",
     "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "items",
     "minItems", "maxItems", "minProperties", "maxProperties"}
)  # fmt: skip
_DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


def _never(value: Any) -> bool:
    return False


def _always(value: Any) -> bool:
    return True


def _is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float


_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: type(v) is str,
    "number": _is_number,
    "integer": lambda v: type(v) is int or (type(v) is float and v.is_integer()),
    "boolean": lambda v: type(v) is bool,
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "null": lambda v: v is None,
}


def accepter(schema: Any) -> Accept | None:
    """The predicate for a parameters schema, or None when the schema is outside the
    subset at its root (then every call goes to jsonschema)."""
    if isinstance(schema, Mapping) and schema.get("$schema", _DRAFT_2020_12) != _DRAFT_2020_12:
        return None
    accept = _compile(schema)
    return None if accept is _never else accept


def _compile(schema: Any) -> Accept:
    if schema is True:
        return _always
    if not isinstance(schema, Mapping):
        return _never  # `false`, or not a schema: jsonschema decides
    keys = set(schema) - _ANNOTATIONS
    if keys - _KNOWN:
        return _never
    tests: list[Accept] = []
    if "type" in schema:
        tests.append(_type_test(schema["type"]))
    if "enum" in schema:
        choices = schema["enum"]
        if not all(type(c) is str for c in choices):
            return _never
        allowed = frozenset(choices)
        tests.append(lambda v: type(v) is str and v in allowed)
    tests += _string_tests(schema) + _number_tests(schema)
    tests += _object_tests(schema) + _array_tests(schema)
    if any(test is _never for test in tests):
        return _never
    if not tests:
        return _always
    if len(tests) == 1:
        return tests[0]
    return lambda v: all(test(v) for test in tests)


def _type_test(kind: Any) -> Accept:
    names = [kind] if isinstance(kind, str) else list(kind)
    checks = [_TYPES[name] for name in names if name in _TYPES]
    if len(checks) != len(names):
        return _never
    return lambda v: any(check(v) for check in checks)


def _length_tests(
    schema: Mapping[str, Any], kind: type[str] | type[list[Any]], least: str, most: str
) -> list[Accept]:
    """``minLength``/``maxLength`` of a string, ``minItems``/``maxItems`` of an array:
    a bound on ``len`` of a value of type ``kind`` (other values pass)."""
    tests: list[Accept] = []
    low, high = schema.get(least), schema.get(most)
    if low is not None:
        tests.append(lambda v: type(v) is not kind or len(v) >= low)
    if high is not None:
        tests.append(lambda v: type(v) is not kind or len(v) <= high)
    return tests


def _string_tests(schema: Mapping[str, Any]) -> list[Accept]:
    return _length_tests(schema, str, "minLength", "maxLength")


def _number_tests(schema: Mapping[str, Any]) -> list[Accept]:
    tests: list[Accept] = []
    for keyword, holds in _BOUNDS.items():
        if keyword in schema:
            bound = schema[keyword]
            if not _is_number(bound):
                return [_never]
            tests.append(_bounded(holds, bound))
    return tests


_BOUNDS: dict[str, Callable[[Any, Any], bool]] = {
    "minimum": lambda v, b: v >= b,
    "maximum": lambda v, b: v <= b,
    "exclusiveMinimum": lambda v, b: v > b,
    "exclusiveMaximum": lambda v, b: v < b,
}


def _bounded(holds: Callable[[Any, Any], bool], bound: Any) -> Accept:
    return lambda v: not _is_number(v) or holds(v, bound)


def _object_tests(schema: Mapping[str, Any]) -> list[Accept]:
    properties = schema.get("properties", {})
    compiled = [(name, _compile(sub)) for name, sub in properties.items()]
    if any(test is _never for _, test in compiled):
        return [_never]
    required = list(schema.get("required", []))
    extra = schema.get("additionalProperties", True)
    other = None if extra is True or extra is False else _compile(extra)
    if other is _never:
        return [_never]
    closed = extra is False
    named = frozenset(properties)
    low, high = schema.get("minProperties", 0), schema.get("maxProperties")

    def test(v: Any) -> bool:  # one pass over an object: the common case of a call
        if type(v) is not dict:
            return True
        for name in required:
            if name not in v:
                return False
        for name, check in compiled:
            if name in v and not check(v[name]):
                return False
        if closed or other is not None:
            for key, item in v.items():
                if key not in named and (closed or not other(item)):  # type: ignore[misc]
                    return False
        return len(v) >= low and (high is None or len(v) <= high)

    plain = not (compiled or required or closed or other is not None or low or high is not None)
    return [] if plain else [test]


def _array_tests(schema: Mapping[str, Any]) -> list[Accept]:
    tests: list[Accept] = []
    if "items" in schema:
        each = _compile(schema["items"])
        if each is _never:
            return [_never]
        tests.append(lambda v: type(v) is not list or all(each(item) for item in v))
    return tests + _length_tests(schema, list, "minItems", "maxItems")
