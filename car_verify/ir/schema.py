"""JSON Schemas of the Agent IR's files, generated from the model itself.

Each schema is built from the wire classes' own field declarations (the JSON key,
its decoder, its default, whether it is required, its ``doc``), so it cannot drift
from what :func:`car_verify.load` reads: a field added to the model is in the
schema, and a decoder the generator does not know is an error, not a gap. An
editor given the schema (``"$schema"`` in the file, or a mapping of file names;
docs/schema.md) checks a proposal while it is typed.

The schema rejects what ``load`` rejects, with three limits that JSON Schema
cannot say (docs/schema.md): an integer written with a fraction (``3.0``) is an
integer to JSON Schema and not to ``load``; nesting past
:data:`car_verify.base.values.MAX_DEPTH` levels; and, in a tools file, a tool name
listed twice. It also rejects two things ``load`` keeps and ``verify`` then
refuses or reports, because they are the mistakes an editor should mark while
the plan is typed:

* a string outside the values the code knows (an action's ``type``: ``tool_cal``;
  a precondition's ``operator``), which every profile refuses;
* a *near miss* of a known field of the same object (:func:`near_miss`): the name
  in another case or with other ``_``/``-`` separators (``stateDependencies``),
  or, for a name of four or more characters, one edit away from it (one
  character added, removed or changed, or two neighbours swapped:
  ``precondition``, ``tools``). Any other unknown key is an *extension*: the
  schema allows it, as ``load`` keeps it (``verify`` and ``lint`` report it as an
  ``unknown-field``, which a project carrying its own fields can ignore).

The near misses are one ``patternProperties`` entry per object whose schema is
``false`` (an editor says "property ... is not allowed"), so the rule is JSON
Schema's own: :func:`near_miss` is its plain statement, and a test holds the two
to the same answers.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable
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

__all__ = ["KINDS", "json_schema", "near_miss", "near_miss_pattern"]

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
        if hasattr(decoder, "known"):  # load keeps any string; verify refuses the others
            return {"type": "string", "enum": sorted(decoder.known)}
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
        out["patternProperties"] = {near_miss_pattern(properties): False}
        return out


#: The shortest known name whose one-edit neighbours are near misses: below it, one
#: edit reaches too many plain words (``id`` -> ``ip``, ``key`` -> ``kid``).
EDITED_FROM: Final = 4
_SEPARATORS: Final = "_-"
_ASCII_LOWER: Final = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz", _SEPARATORS
)
#: Any one character, in the regular expressions of both JSON Schema (ECMA 262) and
#: Python (``.`` stops at a line end in both).
_ANY: Final = r"[\s\S]"


def _folded(name: str) -> str:
    """``name`` in ASCII lower case without ``_`` and ``-``."""
    return name.translate(_ASCII_LOWER)


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by exactly one character added, removed or
    changed, or by two neighbouring characters swapped."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    if len(a) < len(b):  # one added
        return a[i:] == b[i + 1 :]
    if a[i + 1 :] == b[i + 1 :]:  # one changed
        return True
    swapped = i + 1 < len(a) and a[i] == b[i + 1] and a[i + 1] == b[i]
    return swapped and a[i + 2 :] == b[i + 2 :]


def near_miss(key: str, known: Iterable[str]) -> str | None:
    """The known name ``key`` misspells, or None (``key`` is known, or an extension).

    A near miss is a name of ``known`` in another ASCII case or with other ``_``
    and ``-`` separators, or, for a name of :data:`EDITED_FROM` or more
    characters, one edit away (:func:`_one_edit`). This is the rule the schema's
    ``patternProperties`` states (:func:`near_miss_pattern`)."""
    names = list(known)
    if key in names:
        return None
    folded = _folded(key)
    for name in names:
        if _folded(name) == folded or (len(name) >= EDITED_FROM and _one_edit(key, name)):
            return name
    return None


def _escape(text: str) -> str:
    """``text`` as a regular expression that matches it: only the syntax characters
    escaped, so that the pattern reads the same in ECMA 262's unicode mode (where
    Python's ``re.escape`` of ``-`` would be an error)."""
    return "".join("\\" + c if c in _SYNTAX else c for c in text)


_SYNTAX: Final = frozenset("^$\\.*+?()[]{}|/")


def near_miss_pattern(known: Iterable[str]) -> str:
    """A regular expression (JSON Schema's and Python's) matching exactly the keys
    :func:`near_miss` finds for ``known``."""
    names = sorted(set(known))
    alternatives: set[str] = set()
    gap = f"[{_SEPARATORS}]*"
    for name in names:
        letters = [c for c in name if c not in _SEPARATORS]
        cased = [
            f"[{c.lower()}{c.upper()}]" if c.isascii() and c.isalpha() else _escape(c)
            for c in letters
        ]
        alternatives.add(gap + gap.join(cased) + gap)  # another case, other separators
        if len(name) < EDITED_FROM:
            continue
        for i in range(len(name) + 1):
            head, tail = _escape(name[:i]), _escape(name[i:])
            alternatives.add(head + _ANY + tail)  # one added
            if i < len(name):  # one removed or changed
                alternatives.add(head + _ANY + "?" + _escape(name[i + 1 :]))
            if i + 1 < len(name) and name[i] != name[i + 1]:  # two neighbours swapped
                alternatives.add(_escape(name[:i] + name[i + 1] + name[i] + name[i + 2 :]))
    exact = "|".join(_escape(name) for name in names)
    return f"^(?!(?:{exact})$)(?:{'|'.join(sorted(alternatives))})$"


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
