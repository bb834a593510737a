"""A small declarative JSON codec for the IR dataclasses.

Each wire field is a dataclass field whose metadata names its JSON key, its
decoder and when it is omitted on output. ``decode`` checks types and collects
unknown keys into ``extra``; ``encode`` writes the canonical form (every field of
the spec's table, in table order, then the unknown keys as they came).

Decoders raise :class:`Bad` with a path *relative* to the value they decode;
each enclosing level prepends its key, so nothing is formatted on the happy path.

A class's decoder is Python code generated from its field specs, once per class,
as dataclasses generates ``__init__``: loading a large proposal spends most of its
time here, and the straight-line code is about four times as fast as the loop
over the specs. A document nobody else holds is taken apart as it is read
(:func:`decode_owned`). The loop over the specs, :func:`decode_plain`, stays beside
them as the plain reading; a Hypothesis test holds all three to the same models
and the same errors.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import Any, Final, TypeVar

from ..base.errors import InputError
from ..base.values import SCALAR_TYPES

__all__ = [
    "MISSING",
    "Bad",
    "Decoder",
    "decode",
    "decode_document",
    "decode_owned",
    "decode_plain",
    "encode",
    "wire",
    "wire_names",
]

T = TypeVar("T")
Decoder = Callable[[Any], Any]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()
_UNSET: Final = object()


class Bad(Exception):
    """A decoding failure at a relative path (internal; surfaces as InputError)."""

    def __init__(self, problem: str, path: list[str | int] | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.path: list[str | int] = path if path is not None else []

    def to_input_error(self, *prefix: str | int) -> InputError:
        return InputError(self.problem, [*prefix, *self.path])


def kind(value: object) -> str:
    """How a value reads in an error message: 'a string', 'an object', ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "an array"
    return f"a Python {type(value).__name__} (not JSON)"


def expected(what: str, value: object) -> Bad:
    return Bad(f"expected {what}, got {kind(value)}")


# --- decoders -----------------------------------------------------------------


def d_str(value: Any) -> str:
    if type(value) is not str:
        raise expected("a string", value)
    return value


def d_known_str(known: Iterable[str]) -> Decoder:
    """Any string; one of ``known`` (an action's type, an operator) is kept as the
    interned string that the code itself spells. Every action then holds the same
    few objects, which stay in the cache, and a comparison with a literal finds
    them identical: a pass that asks every action its type touches no string of
    the document's (a fresh copy for each action, as ``json.loads`` makes them)."""
    table = {name: name for name in map(sys.intern, known)}

    def decode_known_str(value: Any) -> str:
        if type(value) is not str:
            raise expected("a string", value)
        return table.get(value, value)

    decode_known_str.known = table  # type: ignore[attr-defined]  # read by _field_code
    return decode_known_str


def d_bool(value: Any) -> bool:
    if type(value) is not bool:
        raise expected("a boolean", value)
    return value


def d_uint(value: Any) -> int:
    if type(value) is not int or value < 0:
        if type(value) is int:
            raise Bad(f"expected a non-negative integer, got {value}")
        raise expected("a non-negative integer", value)
    return value


def d_number(value: Any) -> float:
    if type(value) is bool or not isinstance(value, (int, float)):
        raise expected("a number", value)
    return float(value)


def d_json(value: Any) -> Any:
    """Any JSON value; checked to be JSON all the way down (a dict input may hold anything)."""
    t = type(value)
    if t is str or t is bool or value is None or t is int:
        return value
    if t is float:
        if not math.isfinite(value):
            raise Bad(f"expected a finite number, got {value}")
        return value
    if t is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise Bad(f"object keys must be strings, got {kind(key)}")
            try:
                d_json(item)
            except Bad as bad:
                bad.path.insert(0, key)
                raise
        return value
    if t is list:
        for index, item in enumerate(value):
            try:
                d_json(item)
            except Bad as bad:
                bad.path.insert(0, index)
                raise
        return value
    # Not one of the exact types json.loads makes: a tuple or an OrderedDict would
    # read as "an array" or "an object" in kind()'s words, which JSON allows.
    raise Bad(f"expected a JSON value, got a Python {type(value).__name__} (not JSON)")


def d_object(value: Any) -> dict[str, Any]:
    """A JSON object. Its contents are checked to be JSON once, where a document enters
    (:func:`decode_document`), not again per field."""
    if type(value) is not dict:
        raise expected("an object", value)
    return value


def d_list(item: Decoder) -> Decoder:
    def decode_list(value: Any) -> list[Any]:
        if type(value) is not list:
            raise expected("an array", value)
        out = []
        for index, element in enumerate(value):
            try:
                out.append(item(element))
            except Bad as bad:
                bad.path.insert(0, index)
                raise
        return out

    decode_list.item = item  # type: ignore[attr-defined]  # read by _field_code and _plain
    return decode_list


def d_str_list(value: Any) -> list[str]:
    if type(value) is not list:
        raise expected("an array of strings", value)
    for index, element in enumerate(value):
        if type(element) is not str:
            raise Bad(f"expected a string, got {kind(element)}", [index])
    return value


def d_str_map(item: Decoder) -> Decoder:
    def decode_map(value: Any) -> dict[str, Any]:
        if type(value) is not dict:
            raise expected("an object", value)
        out = {}
        for key, element in value.items():
            try:
                out[key] = item(element)
            except Bad as bad:
                bad.path.insert(0, key)
                raise
        return out

    decode_map.value = item  # type: ignore[attr-defined]  # read by the JSON Schema
    return decode_map


def d_optional(inner: Decoder) -> Decoder:
    """``null`` reads as absent (``None``)."""

    def decode_optional(value: Any) -> Any:
        return None if value is None else inner(value)

    decode_optional.inner = inner  # type: ignore[attr-defined]  # read by _field_code and _plain
    return decode_optional


def d_enum(enum: type[Enum]) -> Decoder:
    members = {member.value: member for member in enum}
    choices = ", ".join(f'"{v}"' for v in members)

    def decode_enum(value: Any) -> Enum:
        if type(value) is not str:
            raise expected(f"one of {choices}", value)
        try:
            return members[value]
        except KeyError:
            raise Bad(f'unknown value "{value}"; expected one of {choices}') from None

    decode_enum.enum = enum  # type: ignore[attr-defined]  # read by the JSON Schema
    return decode_enum


def d_model(cls: type[T]) -> Callable[[Any], T]:
    def decode_model(value: Any) -> T:
        return decode(cls, value)

    decode_model.model = cls  # type: ignore[attr-defined]  # read by _field_code and _plain
    return decode_model


# --- field declaration ----------------------------------------------------------


def wire(
    name: str,
    decoder: Decoder,
    *,
    default: Any = _UNSET,
    factory: Callable[[], Any] | None = None,
    required: bool = False,
    omit_none: bool = False,
    encoder: Callable[[Any], Any] | None = None,
    doc: str = "",
) -> Any:
    """Declare a dataclass field that maps to the JSON key ``name`` (``doc``: what
    it means, for the JSON Schema of the format)."""
    meta = {
        "wire": name,
        "decoder": decoder,
        "required": required,
        "omit_none": omit_none,
        "encoder": encoder,
        "doc": doc,
    }
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    if default is not _UNSET:
        return dataclasses.field(default=default, metadata=meta)
    return dataclasses.field(metadata=meta)


class _Spec:
    __slots__ = (
        "attr",
        "decoder",
        "default",
        "doc",
        "encoder",
        "factory",
        "name",
        "omit_none",
        "required",
    )

    def __init__(self, field: dataclasses.Field[Any]) -> None:
        meta = field.metadata
        self.attr = field.name
        self.name: str = meta["wire"]
        self.decoder: Decoder = meta["decoder"]
        self.required: bool = meta["required"]
        self.omit_none: bool = meta["omit_none"]
        self.encoder: Callable[[Any], Any] | None = meta["encoder"]
        self.doc: str = meta.get("doc", "")
        self.default = field.default
        self.factory = field.default_factory


_SPECS: dict[type, tuple[tuple[_Spec, ...], frozenset[str]]] = {}


def _specs(cls: type) -> tuple[tuple[_Spec, ...], frozenset[str]]:
    found = _SPECS.get(cls)
    if found is None:
        specs = tuple(_Spec(f) for f in dataclasses.fields(cls) if "wire" in f.metadata)
        found = (specs, frozenset(s.name for s in specs))
        _SPECS[cls] = found
    return found


def field_specs(cls: type) -> tuple[_Spec, ...]:
    """A wire class's fields: JSON key, decoder, default, whether required, doc."""
    return _specs(cls)[0]


def wire_names(cls: type) -> frozenset[str]:
    """The JSON keys a wire class knows (its field specs' names)."""
    return _specs(cls)[1]


def decode(cls: type[T], obj: Any) -> T:
    """Build ``cls`` from a JSON object, or raise :class:`Bad` naming where it broke."""
    return _decoder_for(cls)(obj)  # type: ignore[no-any-return]


def decode_plain(cls: type[T], obj: Any) -> T:
    """:func:`decode` as a loop over the field specs: the reading the generated code
    must agree with (a Hypothesis test holds them to the same models and errors)."""
    if type(obj) is not dict:
        raise expected("an object", obj)
    specs, names = _specs(cls)
    out = object.__new__(cls)
    for spec in specs:
        value = obj.get(spec.name, MISSING)
        if value is MISSING:
            if spec.required:
                raise Bad(f"missing required field {spec.name!r}")
            factory = spec.factory
            value = factory() if callable(factory) else spec.default
        else:
            try:
                value = _plain(spec.decoder)(value)
            except Bad as bad:
                bad.path.insert(0, spec.name)
                raise
        object.__setattr__(out, spec.attr, value)
    object.__setattr__(out, "extra", {k: v for k, v in obj.items() if k not in names})
    post_init = getattr(out, "__post_init__", None)
    if post_init is not None:
        post_init()
    return out


def _plain(decoder: Decoder) -> Decoder:
    """``decoder``, with the models it decodes read by :func:`decode_plain`."""
    model = getattr(decoder, "model", None)
    if model is not None:
        return lambda value: decode_plain(model, value)
    item = getattr(decoder, "item", None)
    if item is not None:
        return d_list(_plain(item))
    inner = getattr(decoder, "inner", None)
    if inner is not None:
        return d_optional(_plain(inner))
    if decoder is d_json:
        return _as_is  # checked once where the document enters, as the generated code does
    return decoder


def _as_is(value: Any) -> Any:
    return value


def decode_owned(cls: type[T], obj: Any) -> T:
    """:func:`decode` for a document that nobody else holds (one just parsed, or a
    copy): it is taken apart as it is read. Each element of a list of models (a
    proposal's actions) is dropped from its list once decoded, so the document
    shrinks as the model grows, instead of both staying whole until the end (the
    collector then walks both, again and again: on the 10,000-step sequential plan,
    load costs 1.8x ``json.loads`` this way and 2.3-2.5x with :func:`decode`). The
    model and any error are those :func:`decode` gives (a Hypothesis test holds
    them to it); the document is left with ``None`` in the place of what was read."""
    return _decoder_for(cls, owned=True)(obj)  # type: ignore[no-any-return]


def _decoder_for(cls: type, *, owned: bool = False) -> Callable[[Any], Any]:
    decoders = _OWNED_DECODERS if owned else _DECODERS
    decoder = decoders.get(cls)
    if decoder is None:
        decoder = decoders[cls] = _generated_decoder(cls, owned)
    return decoder


#: One generated decoder per wire class (a fixed set: the IR's dataclasses), and
#: one that takes its document apart (decode_owned).
_DECODERS: dict[type, Callable[[Any], Any]] = {}
_OWNED_DECODERS: dict[type, Callable[[Any], Any]] = {}

# Decoders simple enough to inline as a type test in the generated code.
_INLINE: dict[Decoder, tuple[str, str]] = {
    d_str: ("str", "a string"),
    d_object: ("dict", "an object"),
    d_bool: ("bool", "a boolean"),
}


def _field_code(
    k: int, spec: _Spec, env: dict[str, Any], owned: bool = False
) -> tuple[list[str], list[str]]:
    """Field ``k``'s code: the lines that check its value ``v`` and store it, and the
    lines that store its default (or raise, for a required field). Unindented.
    ``owned``: a list of models is taken apart as it is read (:func:`decode_owned`)."""
    name, attr = spec.name, spec.attr
    inner: Decoder | None = getattr(spec.decoder, "inner", None)  # d_optional's
    optional = inner is not None and inner in _INLINE
    inline = _INLINE.get(inner) if inner is not None and optional else _INLINE.get(spec.decoder)
    model = getattr(getattr(spec.decoder, "item", None), "model", None)
    known: dict[str, str] | None = getattr(spec.decoder, "known", None)  # d_known_str's
    present: list[str]
    if spec.decoder is d_json:
        # Any JSON value: checked once where the document enters, as d_object's contents.
        present = [f"out.{attr} = v"]
    elif spec.decoder is d_str_list:
        # An array of strings, the common case checked inline; the decoder itself
        # runs only to name a bad element.
        env[f"decode_{k}"] = spec.decoder
        fail = _indent(_named_failure(k, name), 4)
        present = [
            "if type(v) is not list:",
            *fail,
            "for e in v:",
            "    if type(e) is not str:",
            *("    " + line for line in fail),
            f"out.{attr} = v",
        ]
    elif model is not None:
        # An array of models (actions, preconditions): a comprehension over the
        # item class's own decoder; on a failure the ordinary decoder runs again
        # to name the element's index. Owned, a loop (below).
        env[f"decode_{k}"] = spec.decoder
        env[f"item_{k}"] = _decoder_for(model)
        if owned:
            # A loop that drops each element from the list once it is decoded; it
            # knows the index of a failing one, so no second pass names it.
            present = [
                "if type(v) is not list:",
                *_indent(_named_failure(k, name), 4),
                "items = []",
                "append = items.append",
                "j = 0",
                "try:",
                "    for e in v:",
                "        v[j] = None",
                f"        append(item_{k}(e))",
                "        j += 1",
                "except Bad as bad:",
                f"    bad.path[:0] = [{name!r}, j]",
                "    raise",
                f"out.{attr} = items",
            ]
        else:
            present = [
                "try:",
                "    if type(v) is not list:",
                "        raise Bad('expected an array, got ' + kind(v))",
                f"    out.{attr} = [item_{k}(e) for e in v]",
                "except Bad:",
                *_indent(_named_failure(k, name), 4),
                "    raise",
            ]
    elif inline is not None or known is not None:
        type_name, what = inline or ("str", "a string")
        value = "v"
        if known is not None:  # a known string: the code's own object in its place
            env[f"known_{k}"] = known.get
            value = f"known_{k}(v, v)"
        present = [
            f"if type(v) is not {type_name}" + (" and v is not None:" if optional else ":"),
            f"    raise Bad('expected {what}, got ' + kind(v), [{name!r}])",
            f"out.{attr} = {value}",
        ]
    else:
        env[f"decode_{k}"] = spec.decoder
        present = [
            "try:",
            f"    out.{attr} = decode_{k}(v)",
            "except Bad as bad:",
            f"    bad.path.insert(0, {name!r})",
            "    raise",
        ]
    if spec.required:
        absent = [f"raise Bad({f'missing required field {name!r}'!r})"]
    elif spec.factory is list or spec.factory is dict:
        absent = [f"out.{attr} = {'[]' if spec.factory is list else '{}'}"]
    elif spec.factory is not dataclasses.MISSING:
        env[f"factory_{k}"] = spec.factory
        absent = [f"out.{attr} = factory_{k}()"]
    else:
        env[f"default_{k}"] = spec.default
        absent = [f"out.{attr} = default_{k}"]
    return present, absent


def _named_failure(k: int, name: str) -> list[str]:
    """Code that runs field ``k``'s own decoder on ``v`` to raise the error that
    names what is wrong and where, under the field's ``name``. Unindented."""
    return [
        "try:",
        f"    decode_{k}(v)",
        "except Bad as bad:",
        f"    bad.path.insert(0, {name!r})",
        "    raise bad from None",
    ]


def _indent(lines: list[str], depth: int) -> list[str]:
    return [" " * depth + line for line in lines]


def _environment(cls: type) -> dict[str, Any]:
    return {
        "MISSING": MISSING,
        "Bad": Bad,
        "kind": kind,
        "cls": cls,
        "names": _specs(cls)[1],
        "new": object.__new__,
    }


def _finish(cls: type, lines: list[str], env: dict[str, Any]) -> Callable[[Any], Any]:
    if hasattr(cls, "__post_init__"):
        lines.append("    out.__post_init__()")
    lines.append("    return out")
    exec("\n".join(lines), env)
    return env["decode"]  # type: ignore[no-any-return]


def _generated_decoder(cls: type, owned: bool = False) -> Callable[[Any], Any]:
    """Generate one straight-line decoding function per class, as dataclasses does
    for ``__init__``: the same checks as a loop over the field specs, without the loop,
    filling the instance's slots directly (loading large proposals spends most of its
    time here). Missing fields get the dataclass defaults; ``__post_init__`` runs."""
    specs, _ = _specs(cls)
    env = _environment(cls)
    lines = [
        "def decode(obj):",
        "    if type(obj) is not dict:",
        "        raise Bad('expected an object, got ' + kind(obj))",
        "    get = obj.get",
        "    out = new(cls)",
        "    found = 0",
    ]
    for k, spec in enumerate(specs):
        present, absent = _field_code(k, spec, env, owned)
        lines += [
            f"    v = get({spec.name!r}, MISSING)",
            "    if v is not MISSING:",
            "        found += 1",
            *_indent(present, 8),
            "    else:",
            *_indent(absent, 8),
        ]
    lines += [
        "    if len(obj) > found and not names.issuperset(obj):",
        "        out.extra = {k: v for k, v in obj.items() if k not in names}",
        "    else:",
        "        out.extra = {}",
    ]
    return _finish(cls, lines, env)


def decode_document(cls: type[T], obj: Any) -> T:
    """Decode a whole document given as data: its values are first checked to be JSON
    all the way down, which the field decoders then take as given."""
    d_json(obj)
    return decode(cls, obj)


def to_json(value: Any) -> Any:
    """Encode a modelled value (dataclass, enum, container) as fresh JSON data."""
    t = type(value)
    if t in SCALAR_TYPES:  # the JSON a model mostly holds, answered before the general tests
        return value
    if t is dict:
        return {k: to_json(v) for k, v in value.items()}
    if t is list:
        return [to_json(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return encode(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Mapping):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    return value


def encode(obj: Any) -> dict[str, Any]:
    specs, _ = _specs(type(obj))
    out: dict[str, Any] = {}
    for spec in specs:
        value = getattr(obj, spec.attr)
        if value is MISSING or (value is None and spec.omit_none):
            continue
        out[spec.name] = spec.encoder(value) if spec.encoder else to_json(value)
    extra = getattr(obj, "extra", None)
    if extra:
        for key, value in extra.items():
            if key not in out:
                out[key] = to_json(value)
    return out
