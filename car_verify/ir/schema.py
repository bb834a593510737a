"""JSON Schemas of the Agent IR's files, generated from the model itself.

Each schema is built from the wire classes' own field declarations (the JSON key,
its decoder, its default, whether it is required, its ``doc``), so it cannot drift
from what :func:`car_verify.load` reads: a field added to the model is in the
schema, and a decoder the generator does not know is an error, not a gap. An
editor given the schema (``"$schema"`` in the file, or a mapping of file names;
docs/schema.md) checks a proposal while it is typed.

The schema accepts and rejects what ``load`` does, with three limits that JSON
Schema cannot say (docs/schema.md): an integer written with a fraction (``3.0``)
is an integer to JSON Schema and not to ``load``; nesting past
:data:`car_verify.base.values.MAX_DEPTH` levels; and, in a tools file, a tool name
listed twice. Unknown fields are allowed, as ``load`` keeps them (``verify``
then reports each one).
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Final

from ._codec import (
    d_bool,
    d_json,
    d_number,
    d_object,
    d_str,
    d_str_list,
    d_uint,
    field_specs,
)

__all__ = ["KINDS", "json_schema"]

DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"
#: The files a schema is made for.
KINDS: Final = ("proposal", "tools", "state")

_PLAIN: Final[dict[Any, dict[str, Any]]] = {
    d_str: {"type": "string"},
    d_bool: {"type": "boolean"},
    d_uint: {"type": "integer", "minimum": 0},
    d_number: {"type": "number"},
    d_json: {},
    d_object: {"type": "object"},
    d_str_list: {"type": "array", "items": {"type": "string"}},
}


class _Builder:
    """Schemas of decoders; each wire class once, under ``$defs``."""

    def __init__(self) -> None:
        self.defs: dict[str, dict[str, Any]] = {}

    def of(self, decoder: Any) -> dict[str, Any]:
        if decoder in _PLAIN:
            return dict(_PLAIN[decoder])
        if hasattr(decoder, "json_schema"):
            return dict(decoder.json_schema)
        if hasattr(decoder, "known"):  # any string; these are the ones the code knows
            return {"type": "string", "examples": sorted(decoder.known)}
        if hasattr(decoder, "inner"):  # null reads as absent
            return {"anyOf": [self.of(decoder.inner), {"type": "null"}]}
        if hasattr(decoder, "enum"):
            return {"enum": [member.value for member in decoder.enum]}
        if hasattr(decoder, "model"):
            return self.ref(decoder.model)
        if hasattr(decoder, "tagged"):
            tag, variants = decoder.tagged
            return {"oneOf": [self.ref(cls, tag=(tag, value)) for value, cls in variants.items()]}
        if hasattr(decoder, "value"):  # d_str_map
            return {"type": "object", "additionalProperties": self.of(decoder.value)}
        if hasattr(decoder, "item"):  # d_list
            return {"type": "array", "items": self.of(decoder.item)}
        raise TypeError(f"no JSON Schema for the decoder {decoder!r}: teach car_verify.ir.schema")

    def ref(self, cls: type, tag: tuple[str, str] | None = None) -> dict[str, Any]:
        name = cls.__name__
        if name not in self.defs:
            self.defs[name] = {}  # a class that holds itself refers to its own entry
            self.defs[name] = self.model(cls, tag)
        return {"$ref": f"#/$defs/{name}"}

    def model(self, cls: type, tag: tuple[str, str] | None = None) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        required: list[str] = []
        for spec in field_specs(cls):
            prop = self.of(spec.decoder)
            if tag is not None and spec.name == tag[0]:
                prop = {"const": tag[1]}
            if spec.doc:
                prop["description"] = spec.doc
            default = _default(spec)
            if default is not None:
                prop["default"] = default
            properties[spec.name] = prop
            if spec.required or (tag is not None and spec.name == tag[0]):
                required.append(spec.name)
        out: dict[str, Any] = {
            "type": "object",
            "description": (cls.__doc__ or "").strip().splitlines()[0],
            "properties": properties,
        }
        if required:
            out["required"] = required
        return out


def _default(spec: Any) -> Any:
    """A field's default as JSON, where it is a fixed value (not one made per
    document, as an id or a timestamp is)."""
    value = spec.default
    if value is dataclasses.MISSING:
        factory = spec.factory
        if factory in (list, dict):
            return factory()
        return None
    if isinstance(value, enum.Enum):
        return value.value
    if value is None or isinstance(value, (str, int, float, bool)):
        return None if value is None else value
    return None


def json_schema(kind: str = "proposal") -> dict[str, Any]:
    """The JSON Schema of a ``proposal``, ``tools`` or ``state`` file."""
    from .model import PROPOSAL_FIELDS, ActionProposal, ToolSchema

    build = _Builder()
    base = {"$schema": DIALECT}
    if kind == "proposal":
        body = build.model(ActionProposal)
        # An object with none of the proposal's fields is not one (a state file given
        # as the proposal, `action` misspelled): load says so (docs/semantics.md §1).
        body["anyOf"] = [{"required": [name]} for name in PROPOSAL_FIELDS]
        title = "car-verify: an Agent IR ActionProposal"
    elif kind == "tools":
        body = {
            "type": "array",
            "description": "A tool registry: each tool a call may name",
            "items": build.ref(ToolSchema),
        }
        title = "car-verify: a tool registry (an array of ToolSchema)"
    elif kind == "state":
        body = {"type": "object", "description": "A state: key -> any JSON value"}
        title = "car-verify: an initial state"
    else:
        raise ValueError(f"unknown schema {kind!r}: choose one of {', '.join(KINDS)}")
    out = {**base, "title": title, **body}
    if build.defs:
        out["$defs"] = dict(sorted(build.defs.items()))
    return out
