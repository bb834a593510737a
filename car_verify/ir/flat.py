"""One load of a proposal into per-position arrays: the flat plan.

:func:`flat_plan` reads a parsed proposal once: each action's fields go into a
list per field (ids, types, tools, parameters, preconditions, effects, the key
lists), and the same walk checks every field's JSON type, counts the members of
its objects (against which the text's key marks tell whether a key may repeat)
and bounds how deeply it nests. Nothing is copied and no object is made per
action: the lists hold the document's own values, so the collector has a few
long lists to walk, not a model of a dozen objects per action. The
:class:`~car_verify.ir.model.ActionProposal` is made from the same document when
a caller asks for it (:meth:`FlatPlan.model`), with the ids and the position of
every action as the flat plan has them.

A document the flat plan does not model gives None, and its reader takes the
model's own path (:func:`car_verify.ir.model.load`), which raises the error that
names what is wrong, or models what is unusual: a field of the wrong type, an
unknown action type, an unknown field, a repeated key, nesting near the bound,
a lone surrogate. The flat plan never answers differently from the model: a
Hypothesis test holds its arrays to the model's fields, and its model to
``load``'s, on generated documents of every kind.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, Final

from ..base.errors import InputError
from ..base.values import MAX_DEPTH, copy_json
from ._codec import MISSING, Bad, d_json, decode
from .model import (
    _DECODERS,
    _FINITE_DECODER,
    ActionProposal,
    _decode_noting,
    _looks_like_json_text,
    decode_bytes,
    lone_surrogate,
    may_repeat_keys,
)

__all__ = ["FlatPlan", "flat_plan", "flat_plan_text", "flat_source"]

#: The action types, each as the interned string the code spells (the model's too).
_TYPES: Final = {name: name for name in map(sys.intern, ("tool_call", "state_write",
                                                         "state_read", "assertion"))}  # fmt: skip
_ENUMS: Final = {
    "invocation_mode": frozenset({"one_shot", "streaming", "long_running"}),
    "reversibility": frozenset({"reversible", "compensable", "irreversible"}),
    "failure_behavior": frozenset({"abort", "retry", "skip"}),
}
_PROPOSAL_FIELDS: Final = ("id", "source", "timestamp", "actions", "context", "$schema")
#: The deepest any value sits below the top of the document, before its own levels:
#: a precondition's value (document, actions, action, preconditions, precondition).
_BASE_DEPTH: Final = 5

_EMPTY: Final[dict[str, Any]] = {}
_NONE: Final[tuple[Any, ...]] = ()


class FlatPlan:
    """A proposal as per-position arrays (see the module's docstring).

    ``types[i]`` is the interned action type, ``tools[i]`` the tool or None; the
    other arrays hold the document's own values, or a shared empty one where a
    field is absent (read them; never write to them): ``parameters``,
    ``preconditions`` (the precondition objects as written, each checked: a string
    ``key``, a string ``operator`` and ``description`` if any, no other field),
    ``effects``, ``state_dependencies``. The fields few actions have are read when
    asked: ``dependencies``, ``read_sets``, ``write_sets`` (each made on first use,
    from the actions ``sets`` lists), and ``field(i, name)`` for those of the actions
    ``long`` lists (reversibility, compensation, failure behaviour...).
    """

    __slots__ = (
        "_dependencies",
        "_read_sets",
        "_write_sets",
        "doc",
        "effects",
        "given_ids",
        "ids",
        "keyless",
        "long",
        "members",
        "n",
        "parameters",
        "preconditions",
        "raw",
        "sets",
        "state_dependencies",
        "timestamp",
        "toolless",
        "tools",
        "types",
    )

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.raw: list[dict[str, Any]] = []
        self.ids: list[str] = []
        self.types: list[str] = []
        self.tools: list[str | None] = []
        self.parameters: list[dict[str, Any]] = []
        self.preconditions: list[list[dict[str, Any]] | tuple[()]] = []
        self.effects: list[dict[str, Any]] = []
        self.state_dependencies: list[list[str] | tuple[()]] = []
        #: The positions of the actions with ``dependencies``, ``read_set`` or
        #: ``write_set``, and of those with the fields beyond the common ones.
        self.sets: list[int] = []
        self.long: list[int] = []
        #: The positions whose id was made here (the document has none for them).
        self.given_ids: list[int] = []
        #: The tool calls without a tool, and the state writes whose ``parameters.key``
        #: is not a string.
        self.toolless: list[int] = []
        self.keyless: list[int] = []
        self.timestamp: str | None = None
        self.members = 0
        self.n = 0
        self._dependencies: list[list[str] | tuple[()]] | None = None
        self._read_sets: list[list[str] | tuple[()]] | None = None
        self._write_sets: list[list[str] | tuple[()]] | None = None

    def field(self, i: int, name: str, default: Any = None) -> Any:
        """Action ``i``'s field ``name`` as written (``default`` when absent)."""
        return self.raw[i].get(name, default)

    def _sparse(self, name: str) -> list[list[str] | tuple[()]]:
        out: list[list[str] | tuple[()]] = [_NONE] * self.n
        raw = self.raw
        for i in self.sets:
            out[i] = raw[i].get(name, _NONE)
        return out

    @property
    def dependencies(self) -> list[list[str] | tuple[()]]:
        """Each action's ``dependencies``."""
        if self._dependencies is None:
            self._dependencies = self._sparse("dependencies")
        return self._dependencies

    @property
    def read_sets(self) -> list[list[str] | tuple[()]]:
        """Each action's ``read_set``."""
        if self._read_sets is None:
            self._read_sets = self._sparse("read_set")
        return self._read_sets

    @property
    def write_sets(self) -> list[list[str] | tuple[()]]:
        """Each action's ``write_set``."""
        if self._write_sets is None:
            self._write_sets = self._sparse("write_set")
        return self._write_sets

    def model(self) -> Any:
        """The :class:`~car_verify.ir.model.ActionProposal` of the same document (made
        on each call: a caller keeps the one it asked for). A field the document
        leaves out gets its default now (the proposal's id and timestamp); an
        action without an id has the one the flat plan gave it."""
        proposal = decode(ActionProposal, self.doc)
        actions = proposal.actions
        ids = self.ids
        for i in self.given_ids:
            actions[i].id = ids[i]
        return proposal


def flat_plan(doc: Any) -> FlatPlan | None:
    """The flat plan of a parsed proposal, or None where the model's own reader must
    answer (see the module's docstring). ``doc`` is not changed; it must not change
    while the plan is read."""
    if type(doc) is not dict:
        return None
    plan = FlatPlan(doc)
    members = len(doc)
    found = 0
    nested: list[Any] = []
    for name in _PROPOSAL_FIELDS:
        value = doc.get(name, MISSING)
        if value is MISSING:
            continue
        found += 1
        t = type(value)
        if name == "actions":
            if t is not list:
                return None
        elif name == "context":
            if t is not dict:
                return None
            if value:
                nested.append(value)
        elif name == "$schema":
            if value is not None and t is not str:
                return None
        elif t is not str:
            return None
        elif name == "timestamp":
            plan.timestamp = value
    if found != members or found == ("$schema" in doc):  # an unknown field, or no proposal
        return None
    actions = doc.get("actions", _NONE)
    raw = plan.raw
    ids, types, tools = plan.ids, plan.types, plan.tools
    parameters, preconditions, effects = plan.parameters, plan.preconditions, plan.effects
    sdeps, sets = plan.state_dependencies, plan.sets
    known_types, more_fields = _TYPES, _MORE_FIELDS
    tool_call, state_write = _TYPES["tool_call"], _TYPES["state_write"]
    empty, none = _EMPTY, _NONE
    index = 0
    for action in actions:
        if type(action) is not dict:
            return None
        members += len(action)
        value = kind = tool = None
        params = out = empty
        pres: list[Any] | tuple[()] = none
        keys: list[Any] | tuple[()] = none
        more = listed = False
        # Each field the action has, in its order (the common ones first), checked.
        for name, field in action.items():
            if name == "id":
                if type(field) is not str:
                    return None
                value = field
            elif name == "type":
                if type(field) is not str or (kind := known_types.get(field)) is None:
                    return None  # not a string, or not a type the IR has
            elif name == "tool":
                if field is not None and type(field) is not str:
                    return None
                tool = field
            elif name == "parameters":
                if type(field) is not dict:
                    return None
                params = field
                if field:
                    nested.append(field)
            elif name == "expected_effects":
                if type(field) is not dict:
                    return None
                out = field
                if field:
                    nested.append(field)
            elif name == "preconditions":
                if type(field) is not list:
                    return None
                pres = field
                for pre in field:
                    if type(pre) is not dict:
                        return None
                    count = len(pre)
                    members += count
                    if type(pre.get("key")) is not str:
                        return None
                    seen = 1
                    if count > 1:
                        operator = pre.get("operator", MISSING)
                        if operator is not MISSING:
                            if type(operator) is not str:
                                return None
                            seen += 1
                        if "value" in pre:
                            seen += 1
                            expected = pre["value"]
                            if type(expected) is dict or type(expected) is list:
                                nested.append(expected)
                        described = pre.get("description", MISSING)
                        if described is not MISSING:
                            if type(described) is not str:
                                return None
                            seen += 1
                        if seen != count:
                            return None  # an unknown field
            elif name == "state_dependencies" or name == "dependencies" or name == "read_set" \
                    or name == "write_set":  # fmt: skip
                if type(field) is not list:
                    return None
                for item in field:
                    if type(item) is not str:
                        return None
                if name == "state_dependencies":
                    keys = field
                else:
                    listed = True
            elif name in more_fields:
                more = True
            else:
                return None  # an unknown field
        if kind is None:
            return None  # no type
        if tool is None and kind is tool_call:
            plan.toolless.append(index)
        elif kind is state_write and type(params.get("key")) is not str:
            plan.keyless.append(index)
        if value is None:
            import uuid

            value = str(uuid.uuid4())
            plan.given_ids.append(index)
        if more:
            inside = _rest(action, nested)
            if inside < 0:
                return None
            members += inside
            plan.long.append(index)
        raw.append(action)
        ids.append(value)
        types.append(kind)
        tools.append(tool)
        parameters.append(params)
        preconditions.append(pres)
        effects.append(out)
        sdeps.append(keys)
        if listed:
            sets.append(index)
        index += 1
    plan.n = index
    if nested:
        deeper, inner = _shape(nested, MAX_DEPTH - _BASE_DEPTH)
        if deeper:
            return None
        members += inner
    plan.members = members
    return plan


#: The fields of an action beyond the common ones (the flat plan checks them apart).
_MORE_FIELDS: Final = frozenset(
    {
        "assumptions",
        "invocation_mode",
        "reversibility",
        "compensation",
        "idempotent",
        "max_retries",
        "failure_behavior",
        "timeout_ms",
        "metadata",
    }
)


def _rest(action: dict[str, Any], nested: list[Any]) -> int:
    """The members of ``action``'s assumptions, its fields beyond the common ones each
    checked; -1 when one is of the wrong type."""
    members = 0
    for name in action.keys() & _MORE_FIELDS:
        value = action[name]
        allowed = _ENUMS.get(name)
        if allowed is not None:
            if type(value) is not str or value not in allowed:
                return -1
        elif name == "metadata":
            if type(value) is not dict:
                return -1
            if value:
                nested.append(value)
        elif name == "idempotent":
            if type(value) is not bool:
                return -1
        elif name == "max_retries" or name == "timeout_ms":
            if not (value is None and name == "timeout_ms") and (
                type(value) is not int or value < 0
            ):
                return -1
        elif name == "assumptions":
            if type(value) is not list:
                return -1
            for assumption in value:
                if type(assumption) is not dict or type(assumption.get("key")) is not str:
                    return -1
                members += len(assumption)
                seen = 1
                if "expected_value" in assumption:
                    seen += 1
                    nested.append([assumption["expected_value"]])
                if "read_version" in assumption:
                    version = assumption["read_version"]
                    if version is not None and (type(version) is not int or version < 0):
                        return -1
                    seen += 1
                if seen != len(assumption):
                    return -1
        elif value is not None:  # the compensation
            if not _compensation(value):
                return -1
            nested.append(value)
    return members


def _compensation(value: Any) -> bool:
    """Whether ``value`` is a compensation the model reads without an error."""
    if type(value) is not dict:
        return False
    kind = value.get("type")
    if kind == "tool":
        if type(value.get("tool")) is not str:
            return False
        params = value.get("parameters", _EMPTY)
        return type(params) is dict and len(value) == 2 + ("parameters" in value)
    if kind == "action_ref":
        return type(value.get("action_id")) is str and len(value) == 2
    return False


def _shape(roots: list[Any], limit: int) -> tuple[bool, int]:
    """Whether ``roots`` nest past ``limit`` levels (counting each root as one), and
    how many members the objects among them and inside them hold. Level by level
    over the containers, as :func:`~car_verify.base.values.json_shape` walks a
    document."""
    level = roots
    depth = members = 0
    while level:
        depth += 1
        if depth > limit:
            return True, members
        deeper = []
        for node in level:
            if type(node) is dict:
                members += len(node)
                children: Any = node.values()
            else:
                children = node
            for child in children:
                t = type(child)
                if t is dict or t is list:
                    deeper.append(child)
        level = deeper
    return False, members


_SCAN: Final = _FINITE_DECODER.scan_once  # type: ignore[attr-defined]


def flat_plan_text(text: str) -> FlatPlan | None:
    """:func:`flat_plan` of JSON text: decoded as ``load`` decodes it (no ``NaN``, no
    number out of a float's range), with the same checks (a lone surrogate, a key
    repeated in one object); None where ``load`` must answer."""
    # JSONDecoder.decode without its two matches of a regular expression: the
    # document is an object (white space, as JSON has it, around it).
    start = 0 if text[:1] == "{" else len(text) - len(text.lstrip(" \t\n\r"))
    try:
        data, end = _SCAN(text, start)
    except (StopIteration, ValueError, RecursionError):
        return None
    if end != len(text) and text[end:].strip(" \t\n\r"):
        return None  # text after the document: load says where
    plan = flat_plan(data)
    if plan is None or lone_surrogate(text, data) is not None:
        return None
    if may_repeat_keys(text, plan.members) and _decode_noting(_DECODERS[1], text):
        return None
    return plan


def flat_source(source: object) -> FlatPlan | None:
    """The flat plan of what ``load`` is given, where it is JSON text (a ``str`` that
    ``load`` reads as text, or bytes) or a mapping (copied, as ``load`` copies it),
    and the flat plan models it; None otherwise (``load`` answers)."""
    kind = type(source)
    if kind is str:
        text: str = source  # type: ignore[assignment]
        return flat_plan_text(text) if _looks_like_json_text(text) else None
    if kind is bytes or kind is bytearray:
        try:
            return flat_plan_text(decode_bytes(source))  # type: ignore[arg-type]
        except InputError:
            return None
    if isinstance(source, Mapping) and not isinstance(source, ActionProposal):
        data = dict(source)
        try:
            d_json(data)
            return flat_plan(copy_json(data))
        except (Bad, RecursionError):
            return None
    return None
