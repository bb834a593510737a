"""The tool registry: ToolSchemas by name, each with its parameter validator built once."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from .errors import InputError
from .model import ToolSchema, locate_tools

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
        self._validators: dict[str, Any] = {}

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

    def _validator(self, name: str, field: str = "parameters") -> Any:
        validator = self._validators.get(f"{field}:{name}")
        if validator is None:
            from jsonschema import exceptions, validators

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
            validator = self._validators[f"{field}:{name}"] = cls(schema)
        return validator

    def check_parameters(self, name: str, parameters: Mapping[str, Any]) -> list[SchemaError]:
        """Every violation of tool ``name``'s parameter schema, in a stable order."""
        return _violations(self._validator(name), parameters)

    def check_returns(self, name: str, value: Any) -> list[SchemaError]:
        """Every violation of tool ``name``'s ``returns`` schema (none when it has none)."""
        if name not in self._tools or self._tools[name].returns is None:
            return []
        return _violations(self._validator(name, "returns"), value)


#: jsonschema quotes the value it rejects, and the schema's value, whole; in a
#: message, a quote longer than this is cut to its start and its length.
QUOTE_LIMIT = 120


def _violations(validator: Any, value: Any) -> list[SchemaError]:
    errors = [
        SchemaError(tuple(err.absolute_path), _message(err)) for err in validator.iter_errors(value)
    ]
    errors.sort(key=lambda e: ([str(p) for p in e.path], e.message))
    return errors


def _message(err: Any) -> str:
    """jsonschema's message, with a long quote of the rejected value or of the schema's
    value (an ``enum`` of hundreds, a parameter of megabytes) cut short: the finding
    names the path, where the whole value still is."""
    message: str = err.message
    if len(message) <= QUOTE_LIMIT:
        return message
    for value in (err.instance, err.validator_value):
        quote = repr(value)
        if len(quote) > QUOTE_LIMIT and quote in message:
            cut = f"{quote[: QUOTE_LIMIT // 2]}... ({len(quote):,} characters)"
            message = message.replace(quote, cut, 1)
    return message
