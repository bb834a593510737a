"""The ``car`` profile: the upstream runtime's own reading of a proposal (docs/semantics.md §9).

``car_runtime`` (the Common Agent Runtime's verifier) reads a proposal more simply
than sections 1-8 do:

* **values** as serde_json compares them: ``1`` and ``1.0`` differ, an integer
  outside the 64-bit range is a float, ``neq`` on an absent key is false, and
  ``contains`` asks whether the needle's text is inside the value's text; a goal's
  ``equals`` compares two numbers by their f64 value (:meth:`CarSemantics.goal_equal`);
* **order**: a reader of a key in ``state_dependencies`` follows the key's *last*
  writer in the proposal, and only when that writer comes earlier; a
  ``state_write`` follows the previous ``state_write`` of its key; ``write_set``,
  ``dependencies`` and ``$id.output`` references order nothing, and nothing waits
  for another action (an edge orders, it never blocks);
* **effects**: a ``state_write``'s ``{key: value}``, then ``expected_effects``
  (which win on the same key);
* **the walk**: level by level, and inside a level in proposal order, each action
  seeing the effects of those before it;
* **refusals**: a proposal with an action ``type`` CAR does not know.

Where CAR is nondeterministic (its JSON key order), this module gives the answer
of CAR's documented rule, every time. ``docs/compat.md`` lists every difference.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from ..base.errors import InputError
from ..base.values import ABSENT, KNOWN_OPERATORS, is_number, json_equal
from ..ir._codec import MISSING
from .base import FlatOrder, Placement, Semantics, ToolSchemas, TxConflict, Where
from .profiles import Profile
from .value_domain import literal

if TYPE_CHECKING:
    from fractions import Fraction

    from ..ir.flat import FlatPlan
    from ..ir.model import Action, ActionProposal, Precondition
    from .dag import Dag

__all__ = [
    "CAR",
    "DEFAULT_MAX_ACTIONS",
    "CarEdges",
    "CarSemantics",
    "car_canonical",
    "car_conflicts",
    "car_edges",
    "car_effects",
    "car_equal",
    "car_evaluate",
    "car_holds",
    "car_order",
    "car_transaction_conflicts",
    "car_writers",
    "car_writes",
    "show",
    "transaction_sets",
]

#: CAR's ``max_actions`` when the caller gives none.
DEFAULT_MAX_ACTIONS = 30

_U64, _I64 = 2**64, 2**63
#: Up to this magnitude an integer converts to an f64 exactly.
_EXACT = 2**53


def _number(value: int | float) -> tuple[str, int | float]:
    """serde_json's Number: a u64, a negative i64, or an f64 (everything else)."""
    if isinstance(value, int):
        if 0 <= value < _U64:
            return ("u", value)
        if -_I64 <= value < 0:
            return ("i", value)
        try:
            return ("f", float(value))
        except OverflowError:
            return ("f", math.inf if value > 0 else -math.inf)
    return ("f", value)


def car_equal(a: object, b: object) -> bool:
    """JSON equality as CAR computes it: type-strict, and an integer never equals a float."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if is_number(a) and is_number(b):
        (ka, va), (kb, vb) = _number(a), _number(b)  # type: ignore[arg-type]
        return (ka == "f") == (kb == "f") and va == vb
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(car_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(car_equal(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is None and b is None
    return type(a) is type(b) and a == b


def _as_car(value: Any) -> Any:
    """A value with every number as CAR holds it (an out-of-range integer a float)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if is_number(value):
        kind, number = _number(value)
        return float(number) if kind == "f" else number
    if isinstance(value, list):
        return [_as_car(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_car(v) for k, v in value.items()}
    return value


_sorted_text = json.JSONEncoder(ensure_ascii=False, sort_keys=True, allow_nan=True).encode


def car_canonical(value: object) -> str:
    """A text two values share exactly when :func:`car_equal` says they are equal
    (sorted keys; ``1`` and ``1.0`` keep their different texts)."""
    return _sorted_text(_as_car(value))


def _f64(value: object) -> float | None:
    if not is_number(value):
        return None
    _, number = _number(value)  # type: ignore[arg-type]
    return float(number)


#: JSON text as CAR's messages show a value, keys sorted (one encoder for all:
#: json.dumps with options makes a new one per call). Also the loop check's
#: canonical form of a call's parameters.
show = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode
_string_text = json.JSONEncoder(ensure_ascii=False).encode


def float_text(number: float) -> str:
    """An f64 as the runtime writes it (in its JSON and in the text ``contains``
    reads): the shortest digits that read back (Python's ``repr``), positional from
    ``1e-5`` up to ``1e16`` and scientific outside, the exponent unpadded (``1e-7``,
    ``0.00001``, ``1e+16``, ``-0.0``); not finite, ``null``."""
    if not math.isfinite(number):
        return "null"
    text = repr(number)
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    power = int(exponent)
    if power == -5:  # repr's 1.5e-05 is the runtime's 0.000015
        sign, digits = ("-", mantissa[1:]) if mantissa.startswith("-") else ("", mantissa)
        return f"{sign}0.0000{digits.replace('.', '')}"
    return f"{mantissa}e{'+' if power > 0 else '-'}{abs(power)}"


def _compact(value: object) -> str:
    """A value's compact JSON text as the runtime writes it, which CAR's ``contains``
    reads: object keys sorted, numbers as CAR holds them (an integer outside the
    64-bit range an f64), f64s in the runtime's form (:func:`float_text`)."""
    if isinstance(value, str):
        return _string_text(value)
    if value is None or isinstance(value, bool):
        return "null" if value is None else "true" if value else "false"
    if is_number(value):
        kind, number = _number(value)  # type: ignore[arg-type]
        return float_text(number) if kind == "f" else str(number)
    if isinstance(value, list):
        return "[" + ",".join(_compact(v) for v in value) + "]"
    if isinstance(value, dict):
        items = sorted(value.items())
        return "{" + ",".join(f"{_string_text(k)}:{_compact(v)}" for k, v in items) + "}"
    return _string_text(str(value))


_ORDERED = {"gt": float.__gt__, "lt": float.__lt__, "gte": float.__ge__, "lte": float.__le__}


#: Whether :func:`car_evaluate` words its answer as the runtime does (see
#: :func:`runtime_words`) rather than in plain words.
_RUNTIME_WORDS: ContextVar[bool] = ContextVar("car_verify_runtime_words", default=False)


@contextmanager
def runtime_words() -> Iterator[None]:
    """Inside the block, :func:`car_evaluate` says why a precondition fails in the
    runtime's own words: values in Rust's debug text (``Number(1)``,
    ``String("a")``, ``Bool(true)``, ``Null``), an absent key found before an unknown
    operator, and no note on what ``cannot compare`` needs. The drop-in module's
    answers that carry such messages verbatim are computed in it."""
    token = _RUNTIME_WORDS.set(True)
    try:
        yield
    finally:
        _RUNTIME_WORDS.reset(token)


@contextmanager
def _plain_words() -> Iterator[None]:
    """:func:`runtime_words`' opposite: plain words inside the block."""
    token = _RUNTIME_WORDS.set(False)
    try:
        yield
    finally:
        _RUNTIME_WORDS.reset(token)


def rust_debug_str(text: str) -> str:
    """A string as Rust's ``{:?}`` writes it: quoted, with ``\\``, ``"`` and control
    characters escaped."""
    out = []
    for ch in text:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch in _RUST_ESCAPES:
            out.append(_RUST_ESCAPES[ch])
        elif ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F:
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


_RUST_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0"}


def _rust_float(number: float) -> str:
    """An f64 as the runtime's messages write it: the shortest digits that read
    back, in decimal from 1e-5 to below 1e16 (with ``.0`` when whole), otherwise
    as ``1.5e+16`` / ``2.5e-7``."""
    if number == 0:
        return "-0.0" if math.copysign(1.0, number) < 0 else "0.0"
    sign = "-" if number < 0 else ""
    mantissa, _, exponent = repr(abs(number)).partition("e")  # the shortest round trip
    whole, _, fraction = mantissa.partition(".")
    written = whole + fraction
    significant = written.lstrip("0")
    # the value is 0.<significant> x 10**power
    power = len(whole) + int(exponent or 0) - (len(written) - len(significant))
    significant = significant.rstrip("0")
    if -5 < power <= 16:
        if power <= 0:
            return f"{sign}0.{'0' * -power}{significant}"
        if len(significant) <= power:
            return f"{sign}{significant}{'0' * (power - len(significant))}.0"
        return f"{sign}{significant[:power]}.{significant[power:]}"
    body = significant[0] + ("." + significant[1:] if len(significant) > 1 else "")
    return f"{sign}{body}e{'+' if power > 0 else '-'}{abs(power - 1)}"


def rust_debug(value: object) -> str:
    """A JSON value as the runtime's messages print it (``serde_json::Value`` in
    Rust's debug text): ``Number(1)``, ``String("a")``, ``Bool(true)``, ``Null``,
    ``Array [..]``, ``Object {"a": ..}`` with the keys sorted."""
    if value is None:
        return "Null"
    if value is True or value is False:
        return f"Bool({'true' if value else 'false'})"
    if isinstance(value, int):
        if -(2**63) <= value < 2**64:
            return f"Number({value})"
        return f"Number({_rust_float(float(value))})"
    if isinstance(value, float):
        return f"Number({_rust_float(value)})"
    if isinstance(value, str):
        return f"String({rust_debug_str(value)})"
    if isinstance(value, list):
        return "Array [" + ", ".join(rust_debug(item) for item in value) + "]"
    if isinstance(value, dict):
        items = sorted(value.items())
        inner = ", ".join(f"{rust_debug_str(k)}: {rust_debug(v)}" for k, v in items)
        return "Object {" + inner + "}"
    return show(value)


def car_evaluate(key: str, operator: str, expected: object, state: Mapping[str, Any]) -> str | None:
    """``None`` if the precondition holds in ``state``, else why it fails, in plain words
    (in the runtime's words inside :func:`runtime_words`)."""
    runtime = _RUNTIME_WORDS.get()
    if operator not in KNOWN_OPERATORS and not (runtime and key not in state):
        return f"unknown operator {operator!r}"
    if operator == "exists":
        return None if key in state else f"key {key!r} does not exist"
    if operator == "not_exists":
        return f"key {key!r} exists" if key in state else None
    if key not in state:
        if operator == "contains":
            return f"key {key!r} has no value, cannot check contains"
        return f"key {key!r} has no value"
    shown = rust_debug if runtime else show
    actual = state[key]
    if operator == "eq":
        return (
            None
            if car_equal(actual, expected)
            else f"{key!r} is {shown(actual)}, need {shown(expected)}"
        )
    if operator == "neq":
        if not car_equal(actual, expected):
            return None
        if runtime:
            return f"{key!r} is {shown(actual)}, must not be"
        return f"{key!r} is {shown(actual)}, need neq {shown(expected)}"
    if operator == "contains":
        return (
            None
            if _contains(actual, expected)
            else f"key {key!r} does not contain {shown(expected)}"
        )
    left, right = _f64(actual), _f64(expected)
    if left is None or right is None:
        return f"cannot compare {key!r}: {shown(actual)} {operator} {shown(expected)}" + (
            "" if runtime else " (both sides must be numbers)"
        )
    if _ORDERED[operator](left, right):
        return None
    return f"{key!r} is {shown(actual)}, need {operator} {shown(expected)}"


def car_holds(operator: str, actual: object, expected: object) -> bool:
    """Whether a precondition holds, where ``actual`` is the key's value (``ABSENT``:
    the key is not in the state): exactly when :func:`car_evaluate` says nothing,
    in either words (a Hypothesis test holds the two to each other), without the
    words. Every precondition of a walk asks it."""
    if operator == "exists":
        return actual is not ABSENT
    if operator == "not_exists":
        return actual is ABSENT
    if actual is ABSENT:
        return False  # an absent key has no value: every other operator fails
    if operator == "eq" or operator == "neq":
        kind = type(actual)
        if kind is type(expected) and (kind is str or kind is bool or actual is None):
            same = actual == expected
        else:
            same = car_equal(actual, expected)
        return same if operator == "eq" else not same
    if operator == "contains":
        return _contains(actual, expected)
    compare = _ORDERED.get(operator)
    if compare is None:
        return False  # an unknown operator fails
    left, right = _f64(actual), _f64(expected)
    return left is not None and right is not None and compare(left, right)


def _text(value: object) -> str:
    """A value as CAR's ``contains`` reads it: a string as itself, anything else as
    its compact JSON text (:func:`_compact`)."""
    if isinstance(value, str):
        return value
    return _compact(value)


def _contains(actual: object, needle: object) -> bool:
    """CAR's ``contains``: the needle's text is a substring of the state value's text,
    whatever their types (so ``1`` is "in" ``[10]``, and ``"a"`` in ``["ab"]``)."""
    return _text(needle) in _text(actual)


# -- what an action reads and writes, as CAR sees it -------------------------------


def _state_write_key(action: Action) -> str | None:
    return action.param_key() if action.type == "state_write" else None


def car_written(action: Action) -> dict[str, Any]:
    """A ``state_write``'s own ``{key: value}`` (``value`` absent: null); ``{}``
    for any other action."""
    key = _state_write_key(action)
    return {} if key is None else {key: action.parameters.get("value")}


def car_effects(action: Action) -> dict[str, Any]:
    """The effects CAR applies: a ``state_write``'s ``{key: value}``, then
    ``expected_effects`` (which win on the same key)."""
    written = car_written(action)
    if not written:
        return action.expected_effects
    written.update(action.expected_effects)
    return written


def car_writes(action: Action) -> list[str]:
    """Keys CAR counts as written, for ordering and conflicts (``write_set`` is not)."""
    keys = list(action.expected_effects)
    key = _state_write_key(action)
    if key is not None and key not in action.expected_effects:
        keys.append(key)
    return keys


def car_order(proposal: ActionProposal) -> Dag:
    """CAR's DAG: a reader follows its keys' last writers, a ``state_write`` the
    previous ``state_write`` of its key. Every edge points forward: never a cycle."""
    from .dag import Dag

    actions = proposal.actions
    # CAR checks each state_dependencies entry as it is written, repeats included.
    keys = [action.state_dependencies for action in actions]
    types = [a.type for a in actions]
    parameters = [a.parameters for a in actions]
    effects = [a.expected_effects for a in actions]
    order = car_edges(types, parameters, effects, keys)
    return Dag.from_edges(
        proposal, order.edges, keys=keys, writers=car_writers(types, parameters, effects),
        preds=order.preds, level=order.level, levels=order.levels,
    )  # fmt: skip


class CarEdges(NamedTuple):
    """CAR's order of a proposal by position (:func:`car_edges`)."""

    #: The ``(predecessor, key)`` edges into each action, ascending.
    edges: list[Sequence[tuple[int, str]]]
    #: Each action's predecessors (ascending), its level, and each level's actions.
    preds: list[Sequence[int]]
    level: list[int]
    levels: list[list[int]]


def _own_keys(types: Sequence[str], parameters: Sequence[Mapping[str, Any]]) -> list[int]:
    """The positions of the ``state_write`` actions whose ``parameters.key`` is a
    string: the actions that write a key of their own (:func:`car_writes`)."""
    return [
        i
        for i, kind in enumerate(types)
        if kind == "state_write" and type(parameters[i].get("key")) is str
    ]


def car_writers(
    types: Sequence[str],
    parameters: Sequence[Mapping[str, Any]],
    effects: Sequence[Mapping[str, Any]],
) -> dict[str, list[int]]:
    """Each key's writers as CAR counts them (:func:`car_writes`: the effect keys, then
    a ``state_write``'s own key), ascending, keys in the order they are first written."""
    writers: dict[str, list[int]] = {}
    own = set(_own_keys(types, parameters))
    for index, written in enumerate(effects):
        for key in written:
            found = writers.get(key)
            if found is None:
                writers[key] = [index]
            else:
                found.append(index)
        if own and index in own:
            key = parameters[index]["key"]
            if key not in written:
                found = writers.get(key)
                if found is None:
                    writers[key] = [index]
                else:
                    found.append(index)
    return writers


def car_edges(
    types: Sequence[str],
    parameters: Sequence[Mapping[str, Any]],
    effects: Sequence[Mapping[str, Any]],
    state_dependencies: Sequence[Sequence[str]],
    *,
    keyed: bool = True,
) -> CarEdges:
    """CAR's ordering rule over the actions' fields by position (the one place it is
    written: :func:`car_order` and the flat plan's reader ask it): a reader follows
    the *last* writer (:func:`car_writers`) of each key of its
    ``state_dependencies`` when that writer comes earlier, a ``state_write`` the
    previous ``state_write`` of its key. Every edge points back, so each action's
    level is known when its edges are. ``keyed=False``: the edges' keys are not
    listed (``edges`` is empty), only the predecessors."""
    own = _own_keys(types, parameters)
    # The last writer of each key: a later writer's position replaces an earlier's.
    last_writer = {key: index for index, written in enumerate(effects) for key in written}
    for index in own:  # a state_write's own key, where no later effect writes it
        key = parameters[index]["key"]
        if last_writer.get(key, -1) < index:
            last_writer[key] = index
    own_key = {i: parameters[i]["key"] for i in own}
    edges: list[Sequence[tuple[int, str]]] = []
    preds: list[Sequence[int]] = []
    level: list[int] = []
    first: list[int] = []
    levels: list[list[int]] = [first]
    none: tuple[Any, ...] = ()  # shared by every action without an edge
    previous_state_write: dict[str, int] = {}
    for index, keys in enumerate(state_dependencies):
        into: dict[int, str] | None = None
        for key in keys:
            writer = last_writer.get(key)
            if writer is not None and writer < index:
                if into is None:
                    into = {writer: key}
                elif writer not in into:
                    into[writer] = key
        if own_key and index in own_key:
            key = own_key[index]
            if key in previous_state_write:
                if into is None:
                    into = {}
                into.setdefault(previous_state_write[key], key)
            previous_state_write[key] = index
        if into is None:
            if keyed:
                edges.append(none)
            preds.append(none)
            level.append(0)
            first.append(index)
            continue
        if len(into) == 1:
            (p,) = into
            ps: Sequence[int] = (p,)
            top = level[p] + 1
            if keyed:
                edges.append(list(into.items()))
        else:
            ps = sorted(into)
            top = 1 + max([level[p] for p in ps])
            if keyed:
                edges.append(sorted(into.items()))
        preds.append(ps)
        level.append(top)
        if top < len(levels):
            levels[top].append(index)
        else:
            levels.append([index])
    if not first:
        levels = []  # an empty proposal has no level
    return CarEdges(edges, preds, level, levels)


def car_conflicts(
    ids: Sequence[str],
    state_dependencies: Sequence[Sequence[str]],
    writers: Mapping[str, Sequence[int]],
) -> list[tuple[int, int, str]]:
    """CAR's write conflicts, by action position, sorted: the pairs of writers of a
    key, unless one of them lists the key in its ``state_dependencies``, ordered or
    not (compat.md). CAR looks a writer's dependencies up by its id, so with
    duplicate ids the last action of that id decides."""
    deps_by_id: dict[str, Sequence[str]] | None = None
    out: list[tuple[int, int, str]] = []
    for key, members in writers.items():
        if len(members) < 2:
            continue
        if deps_by_id is None:
            deps_by_id = dict(zip(ids, state_dependencies, strict=True))
        racing = [i for i in members if key not in deps_by_id[ids[i]]]
        out += [(a, b, key) for n, a in enumerate(racing) for b in racing[n + 1 :]]
    out.sort()
    return out


# -- transaction_check: the runtime's own check of one proposal ---------------------


def _tx_writes(action: Action) -> list[str]:
    """``transaction_check``'s write set: ``write_set`` together with the effect keys."""
    return list(dict.fromkeys([*action.write_set, *car_writes(action)]))


def transaction_sets(action: Action) -> tuple[list[str], list[str]]:
    """An action's read and write sets as ``transaction_check`` reads them (also
    the concurrency analysis's)."""
    return _tx_reads(action), _tx_writes(action)


def _tx_reads(action: Action) -> list[str]:
    """``transaction_check``'s read set: ``read_set`` together with the depended-on and
    assumed keys and a ``state_read``'s ``key``."""
    keys = [*action.read_set, *action.state_dependencies, *(a.key for a in action.assumptions)]
    key = action.param_key() if action.type == "state_read" else None
    if key is not None:  # a ``state_read``'s ``keys`` list is not read here
        keys.append(key)
    return list(dict.fromkeys(keys))


def car_transaction_conflicts(
    proposal: ActionProposal,
    versions: Mapping[str, int] | None,
    state: Mapping[str, Any] | None,
) -> list[TxConflict]:
    """CAR's ``transaction_check``: write-write and read-write races between actions
    CAR leaves unordered, and stale assumptions against ``versions`` / ``state``."""
    order = car_order(proposal)
    actions: Sequence[Action] = proposal.actions
    out: list[TxConflict] = []
    writes = [_tx_writes(a) for a in actions]
    reads = [_tx_reads(a) for a in actions]
    # Only pairs that share a key can conflict; their order is asked in one sweep.
    writers: dict[str, list[int]] = {}
    for index, keys in enumerate(writes):
        for key in keys:
            writers.setdefault(key, []).append(index)
    after = [
        sorted({b for k in keys for b in writers[k] if b > a}) for a, keys in enumerate(writes)
    ]
    against = [
        sorted({w for k in keys for w in writers.get(k, ()) if w != r})
        for r, keys in enumerate(reads)
    ]
    asked = [(a, b) for a, bs in enumerate(after) for b in bs]
    asked += [(r, w) if r < w else (w, r) for r, ws in enumerate(against) for w in ws]
    ordered = order.reachable(asked)
    for a, bs in enumerate(after):  # CAR's order: by pair, then by the first's keys
        for b in bs:
            if (a, b) not in ordered:
                out += [TxConflict("write_write", k, (a, b)) for k in writes[a] if k in writes[b]]
    for r, ws in enumerate(against):
        for w in ws:
            if ((r, w) if r < w else (w, r)) not in ordered:
                out += [TxConflict("read_write", k, (r, w)) for k in reads[r] if k in writes[w]]
    for index, action in enumerate(actions):
        for number, assumption in enumerate(action.assumptions):
            if assumption.read_version is not None:
                current = None if versions is None else versions.get(assumption.key)
                if current != assumption.read_version:
                    out.append(
                        TxConflict("stale_assumption", assumption.key, (index,), "version", number)
                    )
            # ``expected_value: null`` is no expectation at all (an absent Option).
            expected = assumption.expected_value
            checked = state is not None and expected is not MISSING and expected is not None
            if checked and (
                assumption.key not in state or not json_equal(state[assumption.key], expected)  # type: ignore[operator,index]
            ):
                out.append(
                    TxConflict("stale_assumption", assumption.key, (index,), "value", number)
                )
    return out


# -- CAR's parameter check: top-level `required` and each property's `type` -----------

_TYPE_TESTS: dict[str, Callable[[object], bool]] = {
    "string": lambda v: isinstance(v, str),
    "number": is_number,
    "integer": lambda v: is_number(v) and float(v).is_integer(),  # type: ignore[arg-type]
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if is_number(value):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def car_schema_problems(
    tool: str, schema: Any, parameters: Mapping[str, Any]
) -> list[tuple[str, tuple[str | int, ...]]]:
    """CAR's parameter check: top-level ``required`` and each property's ``type``
    (a schema part CAR does not read, a ``type`` of null or a number, a ``required``
    that is no list, checks nothing)."""
    out: list[tuple[str, tuple[str | int, ...]]] = []
    if not isinstance(schema, dict):
        return out
    required = schema.get("required")
    for name in required if isinstance(required, list) else []:
        if isinstance(name, str) and name not in parameters:
            out.append((f"tool {tool!r}: missing required parameter {name!r}", ()))
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return out
    for name, value in parameters.items():
        prop = properties.get(name)
        if not isinstance(prop, dict) or "type" not in prop:
            continue
        wanted = prop["type"]
        if isinstance(wanted, str):
            names = [wanted]
        elif isinstance(wanted, list):
            names = [t for t in wanted if isinstance(t, str)]
        else:  # null, a number, an object: CAR checks no type there
            continue
        tests = [_TYPE_TESTS[t] for t in names if t in _TYPE_TESTS]
        if not tests or any(test(value) for test in tests):
            continue
        out.append(
            (
                f"tool {tool!r}: parameter {name!r} has wrong type: "
                f"expected {'|'.join(names)}, got {_json_type(value)}",
                (name,),
            )
        )
    return out


#: The scalar types whose hash :meth:`CarSemantics.fingerprint` takes.
_HASHED = frozenset({str, bool, type(None)})
#: Set in a float's share of a fingerprint, so 1 and 1.0 tend to differ.
_FLOAT_TAG = 0x5BD1E995
#: Added to a nested object's or array's share (as :func:`~car_verify.base.values.fingerprint`).
_OBJECT_TAG = 0x2545F491
_ARRAY_TAG = 0x6C8E9CF5


def _car_fingerprint(items: Collection[Any], depth: int) -> int:
    """:meth:`CarSemantics.fingerprint`'s share of an object's values or an array's
    elements, looked into down to ``depth`` levels (below, their number)."""
    if depth <= 0:
        return len(items)
    combined = 0
    for item in items:
        kind = type(item)
        if kind in _HASHED or (kind is int and -_EXACT < item < _EXACT):
            combined ^= hash(item)
        elif kind is float and -_EXACT < item < _EXACT:
            combined ^= hash(item) ^ _FLOAT_TAG
        elif kind is dict:
            combined ^= _car_fingerprint(item.values(), depth - 1) + _OBJECT_TAG
        elif kind is list:
            combined ^= _car_fingerprint(item, depth - 1) + _ARRAY_TAG
    return combined


class CarSemantics(Semantics):
    """The upstream runtime's reading (see the module's docstring)."""

    profile: ClassVar[Profile] = Profile.CAR
    number_noun: ClassVar[str] = "a float"
    declassifier_on_any_path: ClassVar[bool] = True
    own_checks_decide: ClassVar[bool] = False
    sequential: ClassVar[bool] = True
    rejection_aborts: ClassVar[bool] = False
    spent_retry_aborts: ClassVar[bool] = False
    assertion_predicate_rejects: ClassVar[bool] = True
    optimize_rechecks: ClassVar[bool] = False
    placement: ClassVar[Placement] = Placement(
        proposal_id="proposal",
        repeats_on_proposal=True,
        over_budget_on_first=True,
        conflict_on_earlier=True,
        each_false_part=True,
    )
    default_max_actions: ClassVar[int | None] = DEFAULT_MAX_ACTIONS
    answers_repeated_op_ids: ClassVar[bool] = True
    skip_is_optional: ClassVar[bool] = False
    words: ClassVar[Mapping[str, str]] = MappingProxyType(
        {  # the runtime's messages (docs/compat.md: in plain words where they hold values)
            "too-many-actions": "excessive actions: {count} (limit {limit})",
            "repeated-call": "repeated identical tool call: {tool} ({count}x) \u2014 likely loop",
            "missing-tool-name": "tool_call action has no tool specified",
            "unknown-tool": "tool {tool!r} is not registered",
            "missing-compensation": "action declares reversibility 'compensable' but no "
            "compensation",
            "unknown-compensation-target:action": "compensation references action {target!r}, "
            "which is not in this proposal",
            "unknown-compensation-target:tool": "compensation names tool {target!r}, which is "
            "not registered",
            "write-conflict": "write conflict on {key!r} with action {other} (no dependency "
            "declared)",
        }
    )
    has_failure_words: ClassVar[bool] = True
    summary: ClassVar[str] = (
        "only state_dependencies (the key's last earlier writer) and state_write chains "
        "order an action; inside a level each action sees the effects before it"
    )

    def refuse(self, proposal: ActionProposal) -> None:
        """CAR rejects a whole proposal with an action ``type`` it does not know, or
        a ``timestamp`` it cannot read as an RFC 3339 date-time."""
        from ..ir.model import Action, timestamp_readable

        if not timestamp_readable(proposal.timestamp):
            raise InputError(
                f"{proposal.timestamp!r} is not an RFC 3339 date-time with an offset "
                "(the car profile, like the runtime, rejects the proposal)",
                ["timestamp"],
            )
        for index, action in enumerate(proposal.actions):
            if action.type not in Action.KNOWN_TYPES:
                known = ", ".join(sorted(Action.KNOWN_TYPES))
                raise InputError(
                    f"unknown action type {action.type!r} (the car profile, like the runtime, "
                    f"rejects the proposal; expected one of {known})",
                    ["actions", index, "type"],
                )

    def order(self, proposal: ActionProposal) -> Dag:
        return car_order(proposal)

    def conflicts(self, proposal: ActionProposal, dag: Dag) -> list[tuple[int, int, str]]:
        """CAR's rule (:func:`car_conflicts`)."""
        return car_conflicts(dag.ids, [a.state_dependencies for a in proposal.actions], dag.writers)

    def transaction_conflicts(
        self,
        proposal: ActionProposal,
        versions: Mapping[str, int] | None,
        state: Mapping[str, Any] | None,
    ) -> list[TxConflict]:
        return car_transaction_conflicts(proposal, versions, state)

    def optimize_candidates(self, proposal: ActionProposal) -> list[tuple[int, str, str]]:
        """CAR's ``optimize``: every ``state_dependencies`` entry on a key no action
        writes (by effects or a ``state_write`` key); ``read_set`` plays no part."""
        written = {key for action in proposal.actions for key in car_writes(action)}
        why = "no action writes this key (by expected_effects or a state_write key)"
        return [
            (index, key, why)
            for index, action in enumerate(proposal.actions)
            for key in dict.fromkeys(action.state_dependencies)
            if key not in written
        ]

    def ordering_edit(
        self, action: Mapping[str, Any], first: str, key: str
    ) -> tuple[str, str] | str:
        # CAR orders an action after every earlier writer of a key it depends on, and
        # ignores `dependencies`: the key itself is the edge.
        reads = action.get("read_set")
        if isinstance(reads, list) and reads and key not in reads:
            return (
                f"CAR orders only by state_dependencies, and {key!r} there would be phantom "
                "(outside the action's read_set), so optimize would take it out again"
            )
        return "state_dependencies", key

    #: :meth:`Semantics.holds`: :func:`car_holds` itself (the walk asks it of every
    #: precondition).
    holds = staticmethod(car_holds)

    def equal(self, a: object, b: object) -> bool:
        return car_equal(a, b)

    def goal_equal(self, actual: object, expected: object) -> bool:
        """The runtime's goal check (``evaluate_goal``, ``simulate_monte_carlo``): two
        numbers are equal when their f64 values are (``1`` meets ``1.0``, at the top
        only); anything else as serde_json compares (``[1]`` does not meet ``[1.0]``)."""
        a, b = _f64(actual), _f64(expected)
        if a is not None and b is not None:
            return a == b
        return car_equal(actual, expected)

    def canonical(self, value: object) -> str:
        return car_canonical(value)

    def fingerprint(self, parameters: Mapping[str, Any]) -> int:
        # Strings, booleans and null by their hash; a number by its hash and kind
        # (CAR never calls an integer equal to a float) only up to 2**53, where it
        # is exact: beyond, unequal integers can be one f64 to CAR. Objects and
        # arrays inside are looked into as the strict fingerprint does.
        return len(parameters) ^ _car_fingerprint(parameters.values(), 3)

    def failure_words(self, pre: Precondition | None, key: str, actual: Any) -> str | None:
        """The runtime's messages (in plain words, or its own inside
        :func:`runtime_words`)."""
        if pre is None:
            return f"state dependency {key!r} not available at this point"
        return self.flat_failure_words(pre.key, pre.operator, pre.value, actual)

    def words_mode(self) -> object:
        return _RUNTIME_WORDS.get()

    def words_in(self, mode: object) -> AbstractContextManager[object]:
        if _RUNTIME_WORDS.get() == bool(mode):
            return nullcontext()
        return runtime_words() if mode else _plain_words()

    def flat_failure_words(self, key: str, operator: str, expected: Any, actual: Any) -> str:
        seen = {} if actual is ABSENT else {key: actual}
        return f"precondition will fail: {car_evaluate(key, operator, expected, seen)}"

    # --- the flat plan ------------------------------------------------------------------

    def refuses_flat(self, plan: FlatPlan) -> bool:
        if plan.timestamp is None:
            return False  # the default timestamp, when it is made, is readable
        from ..ir.model import timestamp_readable

        return not timestamp_readable(plan.timestamp)

    def flat_order(self, plan: FlatPlan) -> FlatOrder:
        keys = plan.state_dependencies
        order = car_edges(plan.types, plan.parameters, plan.effects, keys, keyed=False)
        return FlatOrder(order.levels, order.level, order.preds, keys, plan, self)

    def flat_writers(self, plan: FlatPlan) -> dict[str, list[int]]:
        return car_writers(plan.types, plan.parameters, plan.effects)

    def flat_conflicts(self, plan: FlatPlan, order: FlatOrder) -> list[tuple[int, int, str]]:
        return car_conflicts(plan.ids, plan.state_dependencies, order.writers)

    def flat_effects(self, plan: FlatPlan) -> list[Mapping[str, Any]]:
        effects: list[Mapping[str, Any]] = plan.effects  # type: ignore[assignment]
        types, parameters = plan.types, plan.parameters
        for i, kind in enumerate(types):
            if kind == "state_write":
                key = parameters[i].get("key")
                if type(key) is str:  # car_effects: {key: value}, then expected_effects
                    if effects is plan.effects:
                        effects = list(effects)
                    effects[i] = {key: parameters[i].get("value"), **plan.effects[i]}
        return effects

    def parameter_problems(
        self, tools: ToolSchemas, tool: str, parameters: Mapping[str, Any]
    ) -> list[tuple[str, tuple[str | int, ...]]]:
        """CAR's check: ``type`` and ``required`` only (a registry of names only
        has no schemas, and checks nothing)."""
        if tools.names_only:
            return []
        return car_schema_problems(tool, tools[tool].parameters, parameters)

    def checks(self, action: Action) -> list[tuple[Precondition, Where]]:
        # CAR checks an assertion's preconditions only, not the one its parameters spell.
        return [(p, ("preconditions", i)) for i, p in enumerate(action.preconditions)]

    def effects(self, action: Action) -> Mapping[str, Any]:
        return car_effects(action)

    def run_assertion(self, action: Action, state: Mapping[str, Any]) -> tuple[bool, Any]:
        """The runtime's execute of an assertion whose preconditions hold: its
        ``parameters.key`` (a string, or the assertion fails) must hold
        ``parameters.expected`` (an absent key and an absent ``expected`` are
        ``null``), compared as serde_json compares values."""
        key = action.parameters.get("key") if isinstance(action.parameters, Mapping) else None
        if not isinstance(key, str):
            return False, "assertion requires 'key' parameter"
        actual = state.get(key)
        expected = action.parameters.get("expected")
        if not car_equal(actual, expected):
            return False, (
                f"assertion failed: state[{key!r}] = {rust_debug(actual)}, "
                f"expected {rust_debug(expected)}"
            )
        return True, {"asserted": key, "value": actual}

    # --- z3 -----------------------------------------------------------------------------

    def number_term(self, encoder: Any, value: int | float) -> Any:
        kind, number = _number(value)
        if kind == "f":
            if math.isinf(number) or math.isnan(number):
                encoder.unmodelled(f"the number {value!r} (not finite)")
            return encoder.J.number(encoder.real(number))
        return encoder.J.integer(encoder.z3.IntVal(number, ctx=encoder.ctx))

    def number_of(self, value: Fraction) -> int | float:
        return float(value)  # an f64: never equal to an integer

    def value_domain(self, encoder: Any, value: Any) -> Any:
        z3, J = encoder.z3, encoder.J
        i = J.i(value)
        return z3.Implies(J.is_integer(value), z3.And(i >= -_I64, i < _U64))

    def holds_term(
        self, encoder: Any, pre: Precondition, present: Any, value: Any, negative_zero: Any = None
    ) -> Any:
        z3, J = encoder.z3, encoder.J
        op, expected = pre.operator, pre.value
        if op == "exists":
            return present
        if op == "not_exists":
            return z3.Not(present)
        if op == "eq":
            return z3.And(present, value == encoder.const(expected))
        if op == "neq":  # an absent key has no value: neq fails as eq does
            return z3.And(present, value != encoder.const(expected))
        if op in ("gt", "lt", "gte", "lte"):
            bound = _f64(expected)
            if bound is None:
                return encoder.false
            if math.isinf(bound):
                encoder.unmodelled(f"an ordering against {show(expected)} (not a finite f64)")
            c = encoder.real(bound)

            def compare(n: Any) -> Any:
                return {"gt": n > c, "lt": n < c, "gte": n >= c, "lte": n <= c}[op]

            # An integer is compared as its f64 (rounded to nearest, ties to even past
            # 2**53). Against a bound under 2**53 that is the integer itself (one past
            # 2**53 rounds to 2**53 at least, on the same side); against a larger
            # one, rounding is monotone: the integer against a threshold.
            i = J.i(value)
            if abs(bound) < _EXACT:
                by_integer = compare(z3.ToReal(i))
            else:
                by_integer = _integer_ordering(z3, op, bound, i)
            as_integer = z3.And(J.is_integer(value), by_integer)
            as_float = z3.And(J.is_number(value), compare(J.n(value)))
            return z3.And(present, z3.Or(as_integer, as_float))
        if op == "contains":
            return z3.And(present, self._contains(encoder, value, expected, negative_zero))
        return encoder.false  # an unknown operator fails

    def _contains(self, encoder: Any, value: Any, needle: Any, negative_zero: Any) -> Any:
        """The needle's text inside the value's text (:func:`_text`): exact for a
        string, a known constant, ``null`` and booleans. For a number and an opaque
        array or object, an uninterpreted predicate of the value (any answer, the
        same for equal values), told what is true of every text: a number's text
        holds only ``-``, digits and (a float's) ``. + e``; an integer's holds ``-``
        only first and only when it is negative; a float's holds ``-`` only when it
        is negative or under 1 in size, ``+`` and ``e`` only when it is under 1 or
        from 10 on in size (:func:`_float_text_bounds`); a needle whose text is
        inside another's holds where that one does, and each number the plans name
        holds exactly the needles its text holds (:meth:`constant_facts`). ``0.0``
        and ``-0.0`` are equal and their texts differ, so at zero a needle inside
        ``-0.0`` only holds where the value's sign (``negative_zero``, carried beside
        it by the encoder) is negative; where the sign is not known, either way at
        each place it is asked."""
        z3, J = encoder.z3, encoder.J
        text = _text(needle)
        if text == "":
            return encoder.true  # the empty text is inside every text
        ctx = encoder.ctx
        needle_term = literal(z3, text, ctx)
        parts = [z3.And(J.is_string(value), z3.Contains(J.s(value), needle_term))]
        if text in "null":
            parts.append(J.is_null(value))
        for word, truth in (("true", True), ("false", False)):
            if text in word:
                parts.append(z3.And(J.is_boolean(value), J.b(value) == truth))
        arrays = [i for i, known in enumerate(encoder.known) if _contains(known, needle)]
        if arrays:
            parts.append(z3.And(J.is_known(value), z3.Or(*[J.k(value) == i for i in arrays])))
        index = z3.IntVal(encoder.needle(needle), ctx=ctx)
        free = encoder.text_contains(value, index)
        if text == "-":
            parts.append(z3.And(J.is_integer(value), J.i(value) < 0))
        elif set(text) <= set(_INTEGER_CHARS) and "-" not in text[1:] and text[:2] != "-0":
            # An integer's text is its digits (no leading 0) after a "-" where negative.
            negative = J.i(value) < 0 if text.startswith("-") else encoder.true
            parts.append(z3.And(J.is_integer(value), negative, free))
        if set(text) <= set(_FLOAT_CHARS):
            in_float = z3.And(free, _float_text_bounds(z3, text, J.n(value)))
            if text in "0.0":
                zero = encoder.true
            elif text in "-0.0":
                zero = (
                    negative_zero
                    if negative_zero is not None
                    else z3.FreshBool("zero_sign", ctx=ctx)
                )
            else:
                zero = encoder.false
            parts.append(z3.And(J.is_number(value), z3.If(J.n(value) == 0, zero, in_float)))
        parts.append(z3.And(J.is_opaque(value), free))
        return z3.Or(*parts)

    def constant_facts(self, encoder: Any) -> Any:
        """Each number the plans name (but a float zero, whose two signs are one
        value) holds, in ``contains``' open predicate, exactly the needles its text
        holds (of those a number's text can hold at all); and of every value, a
        needle whose text is inside another's holds wherever that one does (every
        value a run sees is a key's initial value or a constant, so it is said of
        the initial values: the constants' answers are exact)."""
        z3 = encoder.z3
        facts = []
        texts = [_text(needle) for needle in encoder.needles]
        pairs = [
            (z3.IntVal(outer, ctx=encoder.ctx), z3.IntVal(inner, ctx=encoder.ctx))
            for outer, big in enumerate(texts)
            for inner, small in enumerate(texts)
            if outer != inner and small in big and small != ""
        ]
        for _, value in encoder.initial.values():
            for outer, inner in pairs:
                facts.append(
                    z3.Implies(
                        encoder.text_contains(value, outer), encoder.text_contains(value, inner)
                    )
                )
        for constant in encoder.scalars:
            if not is_number(constant) or (isinstance(constant, float) and constant == 0):
                continue
            if isinstance(constant, float) and not math.isfinite(constant):
                continue
            term = self.number_term(encoder, constant)
            alphabet = _FLOAT_CHARS if _number(constant)[0] == "f" else _INTEGER_CHARS
            for index, needle in enumerate(encoder.needles):
                if not set(_text(needle)) <= set(alphabet):
                    continue  # never inside a number's text: _contains says so
                inside = _text(needle) in _text(constant)
                held = encoder.text_contains(term, z3.IntVal(index, ctx=encoder.ctx))
                facts.append(held if inside else z3.Not(held))
        return z3.And(*facts) if facts else encoder.true


#: The characters of an integer's text, and of a float's, as the runtime writes them.
_INTEGER_CHARS = "-0123456789"
_FLOAT_CHARS = "-+.0123456789e"


def _float_text_bounds(z3: Any, text: str, n: Any) -> Any:
    """What a nonzero f64 ``n`` must be for its text (:func:`float_text`) to hold
    ``text``. The text is ``[-]digits.digits`` (from ``1e-5`` up to ``1e16`` in
    size) or ``[-]digit[.digits]e(+|-)exponent`` (outside), the exponent unpadded:
    a ``-`` stands first (the sign) or after ``e`` (a negative exponent's, which
    only a number under ``1e-5`` in size has), and the sign before a ``0`` is a
    fraction's (under 1 in size); ``+`` stands after ``e`` only, and ``e`` in
    the scientific form only. The bounds are looser than the form's (1 and 10
    for ``1e-5`` and ``1e16``), so they hold of every text that holds ``text``."""
    small = z3.And(n > -1, n < 1)
    large = z3.Or(n >= 10, n <= -10)
    bounds = []
    for at, char in enumerate(text):
        after_e = at > 0 and text[at - 1] == "e"
        if char in "-+" and at > 0 and not after_e:
            return z3.BoolVal(False, ctx=n.ctx)  # a sign or an exponent's only
        if char == "-":
            if after_e:
                bounds.append(small)
            elif text[at + 1 : at + 2] == "0":
                bounds.append(z3.And(n > -1, n < 0))  # an exponent never starts with 0
            else:
                bounds.append(z3.Or(n < 0, small))
        elif char == "+":
            bounds.append(large)
        elif char == "e":
            bounds.append(z3.Or(small, large))
    return z3.And(*bounds) if bounds else z3.BoolVal(True, ctx=n.ctx)


def _integer_ordering(z3: Any, op: str, bound: float, i: Any) -> Any:
    """``float(i) op bound`` for a z3 integer ``i`` of CAR's range [-2**63, 2**64):
    float() rounds to nearest (ties to even) and is monotone, so the integers it
    holds for are those on one side of a threshold, found here with Python's own
    exact int-to-float rounding."""
    low, high = -_I64, _U64 - 1
    compare = _ORDERED[op]

    def holds(j: int) -> bool:
        return compare(float(j), bound)

    at_low, at_high = holds(low), holds(high)
    if at_low == at_high:  # monotone: it holds for all of them or for none
        return z3.BoolVal(at_low, ctx=i.ctx)
    lo, hi = low, high  # holds(lo) is at_low, holds(hi) is not: bisect the switch
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if holds(mid) == at_low else (lo, mid)
    # An up-set ("gt", "gte") from its least member on; a down-set up to its greatest.
    return i >= hi if op in ("gt", "gte") else i <= lo


#: The one car semantics object.
CAR = CarSemantics()
