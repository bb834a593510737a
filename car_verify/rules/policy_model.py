"""The z3 model of one call that ``policy diff`` and ``policy lint`` judge rules on.

Every rule of a set that judges one call at a time is a condition on the call
(its tool, its parameters) and on the state. :class:`Model` holds z3 variables
for

- the tool's name, a string;
- per parameter any rule names: present or not, and a value that is either a
  string (any string: a z3 string variable) or one of finitely many other JSON
  values (the *variants*: every text-distinct form of each value a rule compares
  with ``equals``, and the JSON value each string of such a rule spells). Any
  other value behaves, for every rule, as the string of its own text does, so
  these values cover every call;
- one more parameter no rule names, a string (``deny_keyword`` reads every
  parameter);
- per state key a ``require_state`` names, the same as a parameter.

Each kind writes its rules' conditions over these (``Kind.pieces`` in
:mod:`car_verify.rules.kinds`), with the helpers here: ``contains`` and keywords
are z3 string containment on the parameter's string form (its compact JSON for a
value that is not a string), allow-lists membership of that form, ``equals`` JSON
equality, patterns z3 regular expressions (:mod:`car_verify.rules.policy_regex`).
What a kind cannot express (a shell's reading of a line, a pattern that does not
translate, a callback) is a free boolean: whatever it decides.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..base.values import ABSENT, json_equal
from ..semantics.value_domain import Local, Slot, contains_language, literal, text_of
from .kinds._values import Needs, coerce, texts_of

__all__ = [
    "MAX_FORMS",
    "Model",
    "Piece",
    "contains_local",
    "equals_local",
    "forms",
    "text_is",
]

#: A value compared with ``equals`` has at most this many text-distinct forms
#: modelled (key orders times number forms); beyond, the rule is approximated and
#: a direction that depends on it answers ``unknown`` rather than a guess.
MAX_FORMS = 64


class _Kind(Protocol):
    def tool_of(self, rule: Any) -> str | None: ...
    def pieces(self, rule: Any, model: Model, label: str) -> list[Piece]: ...


class Located(Protocol):
    """A rule as the model takes it: the rule, its kind and its label."""

    @property
    def rule(self) -> Any: ...
    @property
    def of(self) -> _Kind: ...
    @property
    def label(self) -> str: ...


# --- values --------------------------------------------------------------------------------------


def forms(value: Any) -> list[Any] | None:
    """The values JSON-equal to ``value`` whose compact JSON texts differ (number
    forms, key orders), at most MAX_FORMS; None past that."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return [value]
    if isinstance(value, (int, float)):
        if value == 0:  # zero has three texts: 0, 0.0 and -0.0
            return [value, *(z for z in (0, 0.0, -0.0) if coerce(z) != coerce(value))]
        if isinstance(value, float):
            return [value, int(value)] if value.is_integer() else [value]
        try:
            as_float = float(value)
        except OverflowError:
            return [value]
        return [value, as_float] if as_float == value else [value]
    if isinstance(value, list):
        options: list[list[Any]] = []
        for v in value:
            found = forms(v)
            if found is None:
                return None
            options.append(found)
        return _capped(list(p) for p in itertools.product(*options))
    if isinstance(value, dict):
        keys = list(value)
        if math.factorial(len(keys)) > MAX_FORMS:
            return None
        inner: dict[str, list[Any]] = {}
        for k, v in value.items():
            found = forms(v)
            if found is None:
                return None
            inner[k] = found
        out = []
        for order in itertools.permutations(keys):
            for choice in itertools.product(*(inner[k] for k in order)):
                out.append(dict(zip(order, choice, strict=True)))
                if len(out) > MAX_FORMS:
                    return None
        return out
    return [value]


def _capped(values: Iterable[Any]) -> list[Any] | None:
    out = []
    for v in values:
        out.append(v)
        if len(out) > MAX_FORMS:
            return None
    return out


def contains_local(z3: Any, slot: Slot, needle: str) -> Local:
    """The slot's value holds ``needle`` as the engine reads it: in its string form
    or any string inside it (:func:`~car_verify.rules.kinds._base.texts_of`)."""
    return slot.test(contains_language(z3, needle), lambda v: any(needle in t for t in texts_of(v)))


def equals_local(z3: Any, slot: Slot, expected: Any) -> Local:
    """The slot's value is JSON-equal to ``expected``."""
    strings = (
        z3.Re(literal(z3, expected))
        if isinstance(expected, str)
        else z3.Empty(z3.ReSort(z3.StringSort()))
    )
    return slot.test(strings, lambda v: not isinstance(v, str) and json_equal(v, expected))


def text_is(z3: Any, slot: Slot, text: str) -> Local:
    """The slot's string form is ``text``."""
    return slot.test(z3.Re(literal(z3, text)), lambda v: coerce(v) == text)


@dataclass(frozen=True, slots=True)
class Piece:
    """One way a rule denies a call of its tool: a test on one slot (``local``);
    or, with ``slot`` None, every call (``formula`` is true); or, where a free
    choice decides (``local`` None), only the z3 ``formula``."""

    slot: Slot | None
    formula: Any
    local: Local | None = None

    @staticmethod
    def of(slot: Slot, local: Local) -> Piece:
        return Piece(slot, slot.holds(local), local)


# --- the model ------------------------------------------------------------------------------------


class Model:
    """z3 variables for one call and one state, and the condition of each rule."""

    def __init__(
        self,
        needs: Sequence[tuple[str, Needs]],
        extra: Mapping[str, Sequence[Any]] | None = None,
    ) -> None:
        """``needs``: each rule's (label, :class:`Needs`); ``extra``: per parameter,
        more values its slot offers (those trace rules test; see
        :func:`car_verify.rules.trace_automata.pattern_values`)."""
        import z3

        self.z3 = z3
        self.tool = z3.String("tool")
        self.approximate: set[str] = set()  # rules whose equals value has too many forms
        params: dict[str, list[Any]] = {}
        keys: dict[str, list[Any]] = {}
        self._text_tested: set[str] = set()  # parameters a rule reads as text
        self._every_param = False  # a deny_keyword reads every parameter's text
        for label, need in needs:
            self._every_param |= need.every_param
            self._text_tested |= need.text
            for param, values in need.params.items():
                variants = params.setdefault(param, [])
                for value in values:
                    self._add_forms(label, value, variants)
            for key, values in need.state.items():
                variants = keys.setdefault(key, [])
                for value in values:
                    self._add_forms(label, value, variants)
        for param, values in (extra or {}).items():
            variants = params.setdefault(param, [])
            for value in values:
                for form in forms(value) or [value]:
                    if not any(
                        type(form) is type(v) and coerce(form) == coerce(v) for v in variants
                    ):
                        variants.append(form)
        self.params = {p: Slot(z3, f"param:{p}", v) for p, v in sorted(params.items())}
        other = "x"
        while other in self.params:
            other += "_"
        self.other = Slot(z3, f"param:{other}", [])
        self.other_name = other
        self.state = {k: Slot(z3, f"state:{k}", v) for k, v in sorted(keys.items())}
        self.free: dict[str, Any] = {}  # a rule this model cannot express: any verdict
        self._parts: dict[int, tuple[Located, tuple[str | None, list[Piece]]]] = {}
        self._conditions: dict[int, tuple[Located, Any]] = {}

    def _add_forms(self, label: str, value: Any, variants: list[Any]) -> None:
        found = forms(value)
        if found is None:
            self.approximate.add(label)
            found = [value]
        extra = [f for f in found if not isinstance(f, str)]
        if isinstance(value, str):  # a string that spells a JSON value: that value too
            try:
                spelled = json.loads(value)
            except ValueError:
                spelled = None
            else:
                if not isinstance(spelled, str) and coerce(spelled) == value:
                    extra.append(spelled)
        for f in extra:
            if not any(type(f) is type(v) and coerce(f) == coerce(v) for v in variants):
                variants.append(f)

    def reads_text(self, param: str) -> bool:
        """Whether a rule of one call reads ``param``'s text (not only its value)."""
        return self._every_param or param in self._text_tested

    def domain(self) -> Any:
        z3 = self.z3
        slots = [*self.params.values(), self.other, *self.state.values()]
        return z3.And(*(s.domain() for s in slots))

    def condition(self, ref: Located) -> Any:
        """The formula that holds exactly when ``ref`` denies the call (built once
        per rule, from its parts)."""
        key = id(ref)
        if key not in self._conditions:
            z3 = self.z3
            tool, pieces = self.parts(ref)
            denies = z3.Or(*(piece.formula for piece in pieces), z3.BoolVal(False))
            formula = denies if tool is None else z3.And(self.is_tool(tool), denies)
            self._conditions[key] = (ref, formula)
        return self._conditions[key][1]

    def parts(self, ref: Located) -> tuple[str | None, list[Piece]]:
        """``ref``'s condition in parts: the tool it judges (None: every tool) and
        the pieces (:class:`Piece`) it denies a call of that tool on, any one
        enough. Kept per rule: each piece is built once."""
        key = id(ref)
        if key not in self._parts:
            parts = (ref.of.tool_of(ref.rule), ref.of.pieces(ref.rule, self, ref.label))
            self._parts[key] = (ref, parts)
        return self._parts[key][1]

    def every(self) -> list[Piece]:
        """The pieces of a rule that denies every call of its tool."""
        return [Piece(None, self.z3.BoolVal(True))]

    def is_tool(self, name: str) -> Any:
        return self.tool == literal(self.z3, name)

    def free_choice(self, label: str, rule: Any) -> Any:
        """A boolean z3 decides freely: whatever the rule decides. Keyed by the rule
        itself, so the same rule in both sets decides alike."""
        key = f"{label} {rule!r}"
        if key not in self.free:
            self.free[key] = self.z3.Bool(f"free:{key}")
        return self.free[key]

    def call(self, model: Any) -> tuple[str, dict[str, Any], dict[str, Any] | None]:
        """The concrete call (tool, parameters) and state of a z3 model."""
        tool = text_of(model, self.tool)
        params: dict[str, Any] = {}
        for name, slot in [*self.params.items(), (self.other_name, self.other)]:
            value = slot.value(model)
            if value is not ABSENT:
                params[name] = value
        state: dict[str, Any] | None = None
        if self.state:
            state = {}
            for key, slot in self.state.items():
                value = slot.value(model)
                if value is not ABSENT:
                    state[key] = value
        return tool, params, state
