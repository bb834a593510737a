"""The tool registry: ToolSchemas by name, each with its parameter validator built once."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from ..base.errors import InputError
from ..ir.model import ToolSchema, locate_tools

__all__ = ["SchemaError", "ToolRegistry"]


class SchemaError:
    """One parameter-schema violation: where in ``parameters`` and what is wrong."""

    __slots__ = ("message", "path")

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        self.path = path
        self.message = message

    @property
    def json_path(self) -> str:
        out = "$"
        for part in self.path:
            out += f"[{part}]" if isinstance(part, int) else f".{part}"
        return out


class ToolRegistry(Mapping[str, ToolSchema]):
    """Registered tools by name. Validators (jsonschema) are built lazily, once per tool."""

    def __init__(
        self,
        tools: Iterable[ToolSchema],
        *,
        source: str | None = None,
        places: Sequence[str | int] | None = None,
    ) -> None:
        # Where each schema came from, for errors found later (a schema that is not
        # valid JSON Schema shows when its validator is built): the file, and the
        # schema's index in its array (or its name in an object of schemas).
        self.source = source
        self._tools: dict[str, ToolSchema] = {}
        self._position: dict[str, str | int] = {}
        for index, tool in enumerate(tools):
            place = places[index] if places is not None else index
            if tool.name in self._tools:
                raise InputError(
                    f'duplicate tool name "{tool.name}"', [place, "name"], source=source
                )
            self._tools[tool.name] = tool
            self._position[tool.name] = place
        #: Per ``field:name``: the schema's jsonschema validator, and its fast yes
        #: (car_verify.base._accept; None outside its subset), built together once.
        self._validators: dict[str, tuple[Any, Callable[[Any], bool] | None]] = {}
        #: The tools are known by name only (the runtime's ``tool_names``): which
        #: tools exist is known, their parameters are not.
        self.names_only = False

    @classmethod
    def of_names(cls, names: Iterable[str]) -> ToolRegistry:
        """The tools of these names, with no schema for their parameters (a name
        given twice is one tool)."""
        from ..ir.model import ToolSchema

        registry = cls(ToolSchema(name=name) for name in dict.fromkeys(names))
        registry.names_only = True
        return registry

    @classmethod
    def coerce(cls, tools: Any) -> ToolRegistry:
        """A registry from a registry, a list of schemas, a mapping, a path."""
        if isinstance(tools, ToolRegistry):
            return tools
        schemas, places, source = locate_tools(tools)
        return cls(schemas, source=source, places=places)

    @classmethod
    def merge(cls, parts: Sequence[ToolRegistry]) -> ToolRegistry:
        """One registry of the tools of several (several ``--tools`` files). A tool
        defined twice is an input error naming the second file and place; validators
        already built are kept."""
        merged = cls([])
        came_from: dict[str, str | None] = {}
        for part in parts:
            for name, tool in part._tools.items():
                if name in merged._tools:
                    raise InputError(
                        f'tool "{name}" is already defined'
                        + (f" in {came_from[name]}" if came_from[name] else ""),
                        [part._position[name], "name"],
                        source=part.source,
                    )
                came_from[name] = part.source
                merged._tools[name] = tool
                merged._position[name] = part._position[name]
            merged._validators.update(part._validators)
        return merged

    def check(self) -> None:
        """Build every validator now: raise :class:`InputError` for the first schema
        that is not valid JSON Schema (otherwise found when the tool is first used)."""
        for name, tool in self._tools.items():
            self._validator(name)
            if tool.returns is not None:
                self._validator(name, "returns")

    def __getitem__(self, name: str) -> ToolSchema:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def _validator(
        self, name: str, field: str = "parameters"
    ) -> tuple[Any, Callable[[Any], bool] | None]:
        key = f"{field}:{name}"
        checker = self._validators.get(key)
        if checker is None:
            jsonschema = _jsonschema()
            exceptions, validators = jsonschema.exceptions, jsonschema.validators
            schema = getattr(self._tools[name], field)
            cls = validators.validator_for(schema, default=validators.Draft202012Validator)
            try:
                cls.check_schema(schema)
            except exceptions.SchemaError as err:
                raise InputError(
                    f"invalid JSON Schema: {err.message}",
                    [self._position[name], field, *err.path],
                    source=self.source,
                ) from None
            for where, pattern in _patterns(schema):
                problem = _pattern_problem(pattern)
                if problem is not None:
                    raise InputError(
                        problem, [self._position[name], field, *where], source=self.source
                    )
            from ..base._accept import accepter

            linear = validators.extend(cls, _linear_keywords(cls))
            checker = self._validators[key] = (linear(schema), accepter(schema))
        return checker

    def check_parameters(self, name: str, parameters: Mapping[str, Any]) -> list[SchemaError]:
        """Every violation of tool ``name``'s parameter schema, in a stable order."""
        return self._checked(name, "parameters", parameters)

    def check_returns(self, name: str, value: Any) -> list[SchemaError]:
        """Every violation of tool ``name``'s ``returns`` schema (none when it has none)."""
        if name not in self._tools or self._tools[name].returns is None:
            return []
        return self._checked(name, "returns", value)

    def _checked(self, name: str, field: str, value: Any) -> list[SchemaError]:
        from referencing.exceptions import Unresolvable

        validator, accept = self._validator(name, field)  # the schema is checked once, first
        if accept is not None and accept(value):
            return []  # surely valid (see _accept.py); else jsonschema words each violation
        try:
            return _violations(validator, value)
        except Unresolvable as err:  # an unresolvable $ref
            raise InputError(
                f"the JSON Schema cannot be used: {err}",
                [self._position[name], field],
                source=self.source,
            ) from None


def _patterns(
    schema: Any, at: tuple[str | int, ...] = ()
) -> list[tuple[tuple[str | int, ...], str]]:
    """Every regex in a schema, with where it is: each ``pattern`` keyword's and
    each key of a ``patternProperties``."""
    found: list[tuple[tuple[str | int, ...], str]] = []
    stack: list[tuple[tuple[str | int, ...], Any]] = [(at, schema)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                found.append(((*where, "pattern"), node["pattern"]))
            keyed = node.get("patternProperties")
            if isinstance(keyed, dict):  # each key is a regex too
                found.extend(((*where, "patternProperties", k), k) for k in keyed)
            stack.extend(((*where, k), v) for k, v in node.items() if k != "pattern")
        elif isinstance(node, list):
            stack.extend(((*where, i), v) for i, v in enumerate(node))
    return sorted(found, key=lambda item: [str(p) for p in item[0]])


def _pattern_problem(pattern: str) -> str | None:
    """Why a schema ``pattern`` cannot be matched in linear time, or None."""
    from .policy import MAX_PATTERN_PROGRAM, pattern_cost

    cost = pattern_cost(pattern)
    if cost is None:
        return (
            "the pattern does not compile for RE2, the linear-time engine car-verify "
            "matches schema patterns with (no lookaround or backreferences)"
        )
    if cost > MAX_PATTERN_PROGRAM:
        return (
            f"the pattern compiles to {cost:,} RE2 instructions, over the bound of "
            f"{MAX_PATTERN_PROGRAM:,}"
        )
    return None


def _linear_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    """The ``pattern`` keyword matched with RE2 (linear time), not Python's ``re``."""
    from .policy import compile_pattern

    if validator.is_type(instance, "string") and not compile_pattern(pattern).search(instance):
        yield _jsonschema().exceptions.ValidationError(f"{instance!r} does not match {pattern!r}")


def _linear_pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Any:
    """``patternProperties`` with each key matched by RE2, not Python's ``re`` (whose
    backtracking takes seconds per character on ``^(a+)+$``)."""
    from .policy import compile_pattern

    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        compiled = compile_pattern(pattern)
        for key, value in instance.items():
            if compiled is not None and compiled.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional(instance: Any, schema: Any) -> list[str]:
    """The keys of ``instance`` that neither ``properties`` nor (by RE2)
    ``patternProperties`` of ``schema`` names."""
    from .policy import compile_pattern

    properties = schema.get("properties", {})
    compiled = [compile_pattern(p) for p in schema.get("patternProperties", {})]
    return [
        key
        for key in instance
        if key not in properties and not any(c is not None and c.search(key) for c in compiled)
    ]


def _linear_additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Any:
    """``additionalProperties`` as jsonschema words it, the ``patternProperties``
    keys matched by RE2."""
    if not validator.is_type(instance, "object"):
        return
    extras = _additional(instance, schema)
    error = _jsonschema().exceptions.ValidationError
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif not extra and extras:
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            yield error(f"{joined} {verb} not match any of the regexes: {patterns}")
        else:
            names = sorted(extras, key=str)
            listed = ", ".join(repr(n) for n in names)
            verb = "was" if len(names) == 1 else "were"
            yield error(f"Additional properties are not allowed ({listed} {verb} unexpected)")


def _linear_keywords(cls: Any) -> dict[str, Any]:
    """The keywords that match a regex, each with RE2 (linear time), for the draft
    validator ``cls``: ``pattern``, ``patternProperties``, ``additionalProperties``
    and (in the drafts that have it) ``unevaluatedProperties``."""
    keywords: dict[str, Any] = {
        "pattern": _linear_pattern,
        "patternProperties": _linear_pattern_properties,
        "additionalProperties": _linear_additional_properties,
    }
    own = cls.VALIDATORS.get("unevaluatedProperties")
    if own is not None:

        def unevaluated_properties(
            validator: Any, unevaluated: Any, instance: Any, schema: Any
        ) -> Any:
            # The draft's own keyword over a copy of the schema in which each
            # patternProperties is spelt for this instance's keys (a key RE2 finds
            # the pattern in becomes the literal ^key$): no pattern reaches ``re``.
            if not validator.is_type(instance, "object"):
                return
            spelt = _spelt(schema, list(instance))
            yield from own(validator.evolve(schema=spelt), unevaluated, instance, spelt)

        keywords["unevaluatedProperties"] = unevaluated_properties
    return keywords


def _spelt(node: Any, keys: list[str]) -> Any:
    """``node`` with each ``patternProperties`` written for ``keys``: a key RE2 finds
    the pattern in is matched by the escaped literal ``^key$`` instead."""
    import re

    from .policy import compile_pattern

    if isinstance(node, list):
        return [_spelt(v, keys) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _spelt(v, keys) for k, v in node.items()}
    keyed = node.get("patternProperties")
    if isinstance(keyed, dict):
        literal: dict[str, Any] = {}
        for pattern, subschema in keyed.items():
            compiled = compile_pattern(pattern)
            for key in keys:
                if compiled is not None and compiled.search(key):
                    spelt, name = _spelt(subschema, keys), f"^{re.escape(key)}$"
                    # Two patterns that match one key: both subschemas apply.
                    literal[name] = {"allOf": [literal[name], spelt]} if name in literal else spelt
        out["patternProperties"] = literal
    return out


def _jsonschema() -> Any:
    """The jsonschema package, imported without ``rfc3987_syntax``.

    When that optional package is installed (Jupyter's dependencies bring it),
    importing jsonschema imports it too, and it builds a grammar for 1.6 to 3 s,
    only to check the ``iri`` formats, which car-verify never asserts (it checks
    no ``format``; the metaschemas use none of those). So for the one import it
    is hidden, and then put back as it was: code that imports it later gets it.

    Only that one: jsonschema registers its format checkers at its import, so a
    package hidden then is lost to every later user of jsonschema in the process
    (here the ``iri`` checkers, when ``rfc3987_syntax`` is their only provider).
    Hiding the other optional checkers saved about 15 ms and took ``uri`` and
    ``date`` from code that checks formats after a verify; it was undone."""
    import sys

    if "jsonschema" not in sys.modules:
        hidden = "rfc3987_syntax"
        before = sys.modules.get(hidden, _MISSING)
        if before is _MISSING:
            sys.modules[hidden] = None  # type: ignore[assignment, unused-ignore]  # ImportError
        try:
            import jsonschema.exceptions
            import jsonschema.validators
        finally:
            if before is _MISSING:
                del sys.modules[hidden]
    import jsonschema

    return jsonschema


_MISSING = object()


#: jsonschema quotes the value it rejects, and the schema's value, whole; in a
#: message, a quote longer than this is cut to its start and its length.
QUOTE_LIMIT = 120


def _violations(validator: Any, value: Any) -> list[SchemaError]:
    errors = [
        SchemaError(tuple(err.absolute_path), _message(err)) for err in validator.iter_errors(value)
    ]
    errors.sort(key=lambda e: ([str(p) for p in e.path], e.message))
    return errors


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _message(err: Any) -> str:
    """jsonschema's message with the values it quotes written as JSON (``true``,
    ``null``, ``"x"``), not as Python (``True``, ``None``, ``'x'``), and a long quote
    of the rejected value or of the schema's value (an ``enum`` of hundreds, a
    parameter of megabytes) cut short: the finding names the path, where the whole
    value still is."""
    message: str = err.message

    def text_of(value: Any) -> str:
        text = _json_text(value)
        if len(text) > QUOTE_LIMIT:
            return f"{text[: QUOTE_LIMIT // 2]}... ({len(text):,} characters)"
        return text

    # jsonschema writes the rejected value first and the schema's value last: each is
    # replaced where it stands, never inside the other.
    head, tail = repr(err.instance), repr(err.validator_value)
    if message.startswith(head):
        message = text_of(err.instance) + message[len(head) :]
    if message.endswith(tail):
        message = message[: len(message) - len(tail)] + text_of(err.validator_value)
    return message
