"""RE2 patterns as z3 regular expressions, for the subset that translates exactly.

``deny_tool_param_matching`` denies a call when RE2 *finds* its pattern in the
parameter's string form. :func:`search_language` gives the z3 regular expression
of every string in which the pattern is found, or raises :class:`Untranslatable`
naming what it cannot express; the policy analysis then answers ``unknown`` for
the rule instead of guessing.

The subset: literals and escaped punctuation; ``.`` (any character but a
newline, as RE2 by default); character classes with ranges and negation;
``\\d \\w \\s`` and their negations; groups ``(...)``, ``(?:...)``, ``(?P<n>...)``;
alternation; ``* + ?`` and ``{n}``, ``{n,}``, ``{n,m}``, greedy or lazy (a
search's language does not depend on laziness); ``^`` at the start and ``$`` at
the end of a top-level branch. Flags, word boundaries, ``\\A \\z``, Unicode
classes (``\\pL``) and anchors elsewhere are not translated.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Untranslatable", "search_language"]


class Untranslatable(ValueError):
    """The pattern uses something the translation does not express exactly."""


_DIGIT = [("0", "9")]
_WORD = [("0", "9"), ("A", "Z"), ("a", "z"), ("_", "_")]
_SPACE = [("\t", "\n"), ("\f", "\r"), (" ", " ")]
_CLASSES = {"d": (_DIGIT, False), "w": (_WORD, False), "s": (_SPACE, False)}
_CLASSES.update({k.upper(): (v, True) for k, (v, _) in list(_CLASSES.items())})
_CONTROL = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}


def search_language(pattern: str, *, over: bool = False) -> Any:
    """The z3 regular expression of the strings in which RE2 finds ``pattern``.

    ``over``: a zero-width assertion it cannot express (``\\b``, ``\\B``, ``\\A``,
    ``\\z``, an anchor inside a group) matches the empty string instead, which
    gives a language that *contains* the pattern's: every string the pattern is
    found in, and perhaps more (a search space for candidates that are then
    checked on RE2 itself)."""
    import z3

    parser = _Parser(pattern)
    parser.over = over
    anything = z3.Star(z3.AllChar(z3.ReSort(z3.StringSort())))
    branches = []
    while True:  # each top-level branch, with its own anchors
        anchored_start = parser.peek() == "^"
        if anchored_start:
            parser.at += 1
        body = parser.concatenation()
        anchored_end = parser.peek() == "$"
        if anchored_end:
            parser.at += 1
        parts = [*(() if anchored_start else (anything,)), body]
        parts += [] if anchored_end else [anything]
        branches.append(z3.Concat(*parts) if len(parts) > 1 else parts[0])
        if parser.peek() != "|":
            break
        parser.at += 1
    if parser.at != len(pattern):
        raise Untranslatable(f"{pattern[parser.at]!r} at offset {parser.at}")
    return branches[0] if len(branches) == 1 else z3.Union(*branches)


class _Parser:
    def __init__(self, pattern: str) -> None:
        import z3

        self.z3 = z3
        self.text = pattern
        self.at = 0
        self.char = z3.AllChar(z3.ReSort(z3.StringSort()))
        self.depth = 0  # groups open: anchors are translated only outside them
        self.over = False

    def peek(self) -> str | None:
        return self.text[self.at] if self.at < len(self.text) else None

    def take(self) -> str:
        if self.at >= len(self.text):
            raise Untranslatable("the pattern ends too early")
        c = self.text[self.at]
        self.at += 1
        return c

    def alternation(self) -> Any:
        branches = [self.concatenation()]
        while self.peek() == "|":
            self.at += 1
            branches.append(self.concatenation())
        return branches[0] if len(branches) == 1 else self.z3.Union(*branches)

    def concatenation(self) -> Any:
        z3 = self.z3
        items: list[Any] = []
        while True:
            c = self.peek()
            if c is None or c in "|)":
                break
            if c == "$" and self.depth == 0 and self.text[self.at + 1 : self.at + 2] in ("", "|"):
                break  # a branch's end anchor, taken by the caller
            items.append(self.repeat(self.atom()))
        if not items:
            return z3.Re(z3.StringVal(""))
        return items[0] if len(items) == 1 else z3.Concat(*items)

    def repeat(self, atom: Any) -> Any:
        z3 = self.z3
        while True:
            c = self.peek()
            if c == "*":
                self.at += 1
                atom = z3.Star(atom)
            elif c == "+":
                self.at += 1
                atom = z3.Plus(atom)
            elif c == "?":
                self.at += 1
                atom = z3.Option(atom)
            elif c == "{" and self._counted():
                low, high = self._bounds()
                if high is None:
                    atom = z3.Concat(z3.Loop(atom, low, low), z3.Star(atom))
                else:
                    atom = z3.Loop(atom, low, high)
            else:
                return atom
            if self.peek() == "?":  # lazy: the same language
                self.at += 1

    def _counted(self) -> bool:
        rest = self.text[self.at :]
        close = rest.find("}")
        inside = rest[1:close] if close > 0 else ""
        low, _, high = inside.partition(",")
        return close > 0 and low.isdigit() and (high == "" or high.isdigit())

    def _bounds(self) -> tuple[int, int | None]:
        close = self.text.index("}", self.at)
        inside = self.text[self.at + 1 : close]
        self.at = close + 1
        low, comma, high = inside.partition(",")
        if not comma:
            return int(low), int(low)
        if high == "":
            return int(low), None
        if int(high) < int(low):
            raise Untranslatable(f"a repetition {{{inside}}} whose bounds are reversed")
        return int(low), int(high)

    def atom(self) -> Any:
        z3 = self.z3
        c = self.take()
        if c == "(":
            if self.text.startswith("?:", self.at):
                self.at += 2
            elif self.text.startswith("?P<", self.at):
                self.at = self.text.index(">", self.at) + 1
            elif self.peek() == "?":
                raise Untranslatable(f"the group syntax (?{self.text[self.at + 1 : self.at + 2]}")
            self.depth += 1
            inner = self.alternation()
            self.depth -= 1
            if self.take() != ")":
                raise Untranslatable("a group that is not closed")
            return inner
        if c == "[":
            return self.klass()
        if c == ".":
            return z3.Intersect(self.char, z3.Complement(z3.Re(z3.StringVal("\n"))))
        if c == "\\":
            return self.escape()
        if c in "^$":
            if self.over:
                return z3.Re(z3.StringVal(""))
            raise Untranslatable(f"the anchor {c!r} inside the pattern")
        if c in "*+?":
            raise Untranslatable(f"a repetition {c!r} of nothing")
        return z3.Re(z3.StringVal(c))

    def escape(self) -> Any:
        z3 = self.z3
        c = self.take()
        if c in _CLASSES:
            ranges, negated = _CLASSES[c]
            return self._ranges(ranges, negated)
        if c in _CONTROL:
            return z3.Re(z3.StringVal(_CONTROL[c]))
        if c == "x":
            return z3.Re(z3.StringVal(self._hex()))
        if c in "bBAz" and self.over:
            return z3.Re(z3.StringVal(""))
        if c.isalnum():
            raise Untranslatable(f"the escape \\{c}")
        return z3.Re(z3.StringVal(c))

    def _hex(self) -> str:
        if self.peek() == "{":
            close = self.text.index("}", self.at)
            digits, self.at = self.text[self.at + 1 : close], close + 1
        else:
            digits, self.at = self.text[self.at : self.at + 2], self.at + 2
        try:
            return chr(int(digits, 16))
        except ValueError:
            raise Untranslatable(f"the escape \\x{digits}") from None

    def _ranges(self, ranges: list[tuple[str, str]], negated: bool) -> Any:
        z3 = self.z3
        parts = [z3.Range(lo, hi) for lo, hi in ranges]
        union = parts[0] if len(parts) == 1 else z3.Union(*parts)
        return z3.Intersect(self.char, z3.Complement(union)) if negated else union

    def klass(self) -> Any:
        z3 = self.z3
        negated = self.peek() == "^"
        if negated:
            self.at += 1
        parts: list[Any] = []
        first = True
        while True:
            c = self.take()
            if c == "]" and not first:
                break
            first = False
            if c == "[" and self.peek() == ":":
                raise Untranslatable("a POSIX class [:name:]")
            if c == "\\":
                e = self.take()
                if e in _CLASSES:
                    ranges, neg = _CLASSES[e]
                    parts.append(self._ranges(ranges, neg))
                    continue
                if e in _CONTROL:
                    c = _CONTROL[e]
                elif e == "x":
                    c = self._hex()
                elif e.isalnum():
                    raise Untranslatable(f"the escape \\{e} in a class")
                else:
                    c = e
            if self.peek() == "-" and self.text[self.at + 1 : self.at + 2] not in ("]", ""):
                self.at += 1
                hi = self.take()
                if hi == "\\":
                    e = self.take()
                    hi = _CONTROL.get(e, e)
                    if e.isalnum() and e not in _CONTROL:
                        raise Untranslatable(f"the escape \\{e} in a range")
                if hi < c:
                    raise Untranslatable(f"the range {c}-{hi}")
                parts.append(z3.Range(c, hi))
            else:
                parts.append(z3.Re(z3.StringVal(c)))
        union = parts[0] if len(parts) == 1 else z3.Union(*parts)
        return z3.Intersect(self.char, z3.Complement(union)) if negated else union
