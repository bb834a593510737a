"""One JSON value as z3 sees it, for the policy and trace-rule analyses.

A :class:`Slot` is a parameter (or a state key) of one call: absent, or a string
(any string: a z3 string variable), or one of finitely many other JSON values,
its *variants*. An analysis chooses the variants so that every other value
behaves, under the rules it reads, as some string or some variant does; a test
on a slot is then a z3 formula for strings and a Python decision, made here, for
each variant (:meth:`Slot.where`), so a variant is judged by the very function
the engine uses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..base.values import ABSENT
from .solving import check

__all__ = [
    "Local",
    "Slot",
    "constant_text",
    "contains",
    "contains_language",
    "equals",
    "literal",
    "one_of_language",
    "text_of",
]

# Every test on a string is a regular-expression membership: z3's solver for
# regular expressions answers these in milliseconds, where a mix of ``Contains``,
# ``==`` and ``InRe`` on one string can run to its time limit.


def literal(z3: Any, text: str, ctx: Any = None) -> Any:
    """A z3 string constant that holds ``text`` exactly. ``z3.StringVal`` reads
    ``\\u003c``-style escapes in what it is given, so the TOML literal
    ``'\\u003cscript'`` would be ``<script`` to the solver: every backslash is
    written as the escape of one (``\\u{5c}``), and nothing else is read."""
    safe = text.replace("\\", "\\u{5c}")
    return z3.StringVal(safe) if ctx is None else z3.StringVal(safe, ctx=ctx)


def constant_text(z3: Any, term: Any) -> str:
    """The Python string of a z3 string constant, read character by character
    (its printed form escapes some characters, ambiguously)."""
    length = z3.simplify(z3.Length(term)).as_long()
    return "".join(
        chr(z3.simplify(z3.StrToCode(z3.SubString(term, i, 1))).as_long()) for i in range(length)
    )


def _anything(z3: Any) -> Any:
    return z3.Star(z3.AllChar(z3.ReSort(z3.StringSort())))


def contains_language(z3: Any, needle: str) -> Any:
    """The strings ``needle`` occurs in, as a z3 regular expression."""
    return z3.Concat(_anything(z3), z3.Re(literal(z3, needle)), _anything(z3))


def one_of_language(z3: Any, values: Any) -> Any:
    """The strings ``values`` (none: the empty language), as a z3 regular expression."""
    options = [z3.Re(literal(z3, v)) for v in values]
    if not options:
        return z3.Empty(z3.ReSort(z3.StringSort()))
    return options[0] if len(options) == 1 else z3.Union(*options)


def contains(z3: Any, text: Any, needle: str) -> Any:
    """``needle`` occurs in the z3 string ``text``."""
    return z3.InRe(text, contains_language(z3, needle))


def equals(z3: Any, text: Any, value: str) -> Any:
    """The z3 string ``text`` is ``value``."""
    return z3.InRe(text, z3.Re(literal(z3, value)))


def text_of(model: Any, expr: Any) -> str:
    """The Python string a z3 string expression has in ``model``, read character by
    character (z3's printed form escapes some characters, ambiguously)."""
    import z3

    value = model.eval(expr, model_completion=True)
    length = model.eval(z3.Length(value), model_completion=True).as_long()
    return "".join(
        chr(model.eval(z3.StrToCode(z3.SubString(value, i, 1)), model_completion=True).as_long())
        for i in range(length)
    )


class Slot:
    """A parameter or state key: absent, a string, or one of ``variants``."""

    def __init__(self, z3: Any, name: str, variants: list[Any]) -> None:
        self.z3 = z3
        self.name = name
        self.variants = variants
        self.present = z3.Bool(f"present:{name}")
        self.is_string = z3.Bool(f"string:{name}")
        self.text = z3.String(f"text:{name}")
        self.pick = z3.Int(f"variant:{name}")

    def domain(self) -> Any:
        """The constraint that keeps a model's value in the domain."""
        z3 = self.z3
        if not self.variants:
            return self.is_string
        return z3.Or(self.is_string, z3.And(self.pick >= 0, self.pick < len(self.variants)))

    def where(self, on_text: Any, on_value: Any) -> Any:
        """Present, and ``on_text`` (a z3 formula of the string) for a string value
        or ``on_value(v)`` (decided in Python) for a variant ``v``."""
        z3 = self.z3
        picks = [self.pick == k for k, v in enumerate(self.variants) if on_value(v)]
        return z3.And(
            self.present, z3.If(self.is_string, on_text, z3.Or(*picks, z3.BoolVal(False)))
        )

    def test(self, strings: Any, on_value: Callable[[Any], bool]) -> Local:
        """Present, and a string of the language ``strings`` or a variant ``v``
        with ``on_value(v)`` (decided in Python): :meth:`where` as a :class:`Local`."""
        picks = frozenset(k for k, v in enumerate(self.variants) if on_value(v))
        return Local(False, picks, strings, len(self.variants))

    def every(self, *, absent: bool = True) -> Local:
        """Every value (``absent=False``: every value, when present)."""
        z3 = self.z3
        strings = z3.Star(z3.AllChar(z3.ReSort(z3.StringSort())))
        return Local(absent, frozenset(range(len(self.variants))), strings, len(self.variants))

    def holds(self, local: Local) -> Any:
        """The z3 formula of ``local`` on this slot."""
        z3 = self.z3
        picks = [self.pick == k for k in sorted(local.variants)]
        present = z3.If(
            self.is_string, z3.InRe(self.text, local.strings), z3.Or(*picks, z3.BoolVal(False))
        )
        return z3.If(self.present, present, z3.BoolVal(local.absent))

    def can_hold(self, local: Local, limit_ms: int = 10_000) -> bool | None:
        """Whether some value of the slot meets ``local`` (None: z3 gave no answer
        within ``limit_ms``)."""
        if local.absent or local.variants:
            return True
        z3 = self.z3
        solver = z3.SimpleSolver()
        solver.add(z3.InRe(z3.String("text"), local.strings))
        answer = check(solver, limit_ms)
        return None if answer == z3.unknown else answer == z3.sat

    def value(self, model: Any) -> Any:
        """The slot's value in a z3 model (ABSENT when not present)."""
        z3 = self.z3
        if not z3.is_true(model.eval(self.present, model_completion=True)):
            return ABSENT
        if z3.is_true(model.eval(self.is_string, model_completion=True)) or not self.variants:
            return text_of(model, self.text)
        return self.variants[model.eval(self.pick, model_completion=True).as_long()]


@dataclass(frozen=True, slots=True)
class Local:
    """A test on one slot, decided case by case: whether it holds when the slot
    is absent, the variants (by index) it holds for, and the strings it holds for
    as one z3 regular language. Tests combine without z3's string solver (``&``,
    ``|``, ``~``), and whether one can hold at all is one membership question
    (:meth:`Slot.can_hold`), which z3 answers in milliseconds where the same
    question as several memberships of one string can take seconds."""

    absent: bool
    variants: frozenset[int]
    strings: Any
    size: int  # how many variants the slot has

    def __and__(self, other: Local) -> Local:
        import z3

        return Local(
            self.absent and other.absent,
            self.variants & other.variants,
            z3.Intersect(self.strings, other.strings),
            self.size,
        )

    def __or__(self, other: Local) -> Local:
        import z3

        return Local(
            self.absent or other.absent,
            self.variants | other.variants,
            z3.Union(self.strings, other.strings),
            self.size,
        )

    def __invert__(self) -> Local:
        import z3

        every = frozenset(range(self.size))
        return Local(not self.absent, every - self.variants, z3.Complement(self.strings), self.size)
