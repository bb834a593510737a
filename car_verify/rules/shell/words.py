"""The value of a word, as bash would compute it, or what computes it.

A word is evaluated from its parse tree by a positive list: literal text (quoted
or not, with bash's escapes: backslashes, ``"..."``, ``$'...'`` up to its first
NUL, a here-document's body) has its value; ``$NAME``, ``${NAME}`` and the
``${NAME...}`` operators that only read a variable (``:-``, ``#``, ``%``, ``/``,
``^``, ``,``, ``${#NAME}``, ``${NAME:1:2}`` with literal numbers ...), ``$(...)``,
``<(...)``, a glob, ``~`` and a brace expansion are *computed* (value unknown; the
substitutions are read as commands by the caller). Anything else bash expands at
run time in a way not evaluated here is a *problem*: an arithmetic expansion, an
array subscript that is not a literal number, ``@`` or ``*`` (indexed arrays
evaluate it as arithmetic, which expands variables recursively and runs
``$(...)`` found in their values), ``${!NAME}`` (indirection), a parameter
transformation (``${NAME@P}`` expands prompt escapes), an assignment by
``${NAME:=...}`` to a variable bash reads as code, and any node type not listed.
A problem makes the line undecided.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...base.patterns import LazyPattern
from .model import Budget, ShellError

if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = [
    "Computed",
    "Scan",
    "Source",
    "Word",
    "ansi_c",
    "assigned_name_problem",
    "code_variable",
]


@dataclass(frozen=True, slots=True)
class Computed:
    """A part of a word the shell computes: why, and the text it is known to
    start with (``/dev/fd/`` for ``<(...)``, ``~`` for a tilde)."""

    why: str
    lead: str = ""
    #: whether it stays one word (quoted, a tilde, ``<(...)``): bash splits an
    #: unquoted expansion into any number of words
    single: bool = False


# A piece of a word: literal text (and whether it was quoted) or a computed part.
Piece = tuple[str, bool] | Computed


@dataclass(frozen=True, slots=True)
class Word:
    """A word: its value, or None when computed; as written (when computed); the
    literal text before the first computed part (with what that part is known to
    start with) and after the last one; why it is computed; whether it holds an
    unquoted glob."""

    value: str | None
    text: str
    prefix: str
    tail: str
    why: str
    pattern: bool = False
    #: whether it is one word whatever its value (no unquoted expansion, glob or
    #: brace expansion, which bash may turn into none or several)
    single: bool = True

    @classmethod
    def literal(cls, value: str) -> Word:
        return cls(value, value, value, value, "")

    @classmethod
    def computed(cls, why: str, text: str = "", prefix: str = "") -> Word:
        return cls(None, text, prefix, "", why)

    @property
    def may_be_flag(self) -> bool:
        """Whether the word may start with ``-`` (a computed one whose known start
        is empty or a dash)."""
        if self.value is not None:
            return self.value.startswith("-")
        return not self.prefix or self.prefix.startswith("-")


@dataclass(slots=True)
class Scan:
    """What evaluating words found besides their values: the substitutions in them
    (to be read as commands) and the problems (constructs not evaluated)."""

    subs: list[Node] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


_EXPANSIONS = frozenset(
    {
        "simple_expansion",
        "expansion",
        "command_substitution",
        "process_substitution",
        "arithmetic_expansion",
        "translated_string",
    }
)
_WHY = {
    "simple_expansion": "a variable",
    "expansion": "a variable",
    "command_substitution": "a command substitution",
    "process_substitution": "a process substitution",
    "arithmetic_expansion": "an arithmetic expansion",
    "translated_string": "a translated string",
    "brace_expression": "a brace expansion",
}
_DQ_ESCAPES = LazyPattern(r"\\([\\$`\"\n])")
_HEREDOC_ESCAPES = LazyPattern(r"\\([\\$`\n])")
# In the skeleton of a word (unquoted text as written; quoted text masked as \x01,
# computed parts as \x00): a brace expansion, a glob.
_BRACE = re.compile(r"\{[^{}]*?(?:,|\.\.)[^{}]*\}")
_GLOB = re.compile(r"[*?]|\[[^\]]+\]")
_PLAIN = re.compile(r"[^\\*?\[{~ \t\n]*")  # a word with nothing to unquote or expand
_SIMPLE_EXPANSION = LazyPattern(r"\$(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[-*@#?$!_])")
_ESCAPED = re.compile(r"\\.", re.DOTALL)
_BLANK = re.compile(r"[ \t\n]")
_NUMBER = LazyPattern(r"-?[0-9]+")
#: Arithmetic on numbers alone: it names no variable, so evaluates no subscript.
NUMERIC_ARITHMETIC = re.compile(r"[0-9\s+\-*/%()<>=!&|^~?:,;]*")
_NUMERIC_ARITHMETIC = NUMERIC_ARITHMETIC
#: An arithmetic expansion's text: ``$((body))``, or bash's old form ``$[body]``.
_ARITHMETIC = LazyPattern(r"\$\(\((.*)\)\)|\$\[(.*)\]", re.DOTALL)
# In text the grammar took as literal: an unescaped backquote or $-expansion, which
# bash would still expand (the grammar does not parse a backquote inside ${...}).
_UNPARSED = re.compile(r"(?<!\\)(?:\\\\)*(?:`|\$[A-Za-z0-9_{(\[@*#?$!-])")
_UNPARSED_WHY = "an expansion the shell parser leaves as text"
_ANSI = LazyPattern(
    r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c\\\\|c[^\\]|.)",
    re.DOTALL,
)
_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


def ansi_c(body: str) -> str:
    """The value of ``$'body'`` as bash computes it: escapes decoded, and the text
    ended at the first NUL one gives (``$'rm\\0x'`` is ``rm``)."""

    def one(m: re.Match[str]) -> str:
        e = m.group(1)
        if e[0] in "xuU" and len(e) > 1:
            code = int(e[1:], 16)
            return chr(code) if code <= 0x10FFFF else "\ufffd"
        if e[0] in "01234567":
            return chr(int(e, 8) & 0xFF)
        if e[0] == "c" and len(e) >= 2:
            letter = e[1]
            return "\x7f" if letter == "?" else chr(ord(letter.upper()) & 0x1F)
        return _ANSI_SIMPLE.get(e, "\\" + e)

    return _ANSI().sub(one, body).split("\0", 1)[0]


def _dq_escape(m: re.Match[str]) -> str:
    return "" if m.group(1) == "\n" else m.group(1)


#: Variables bash reads as code, or as settings that change how it reads a line
#: (``PS4`` is expanded by ``set -x``, ``BASH_ENV`` names a file a shell runs
#: first, ``BASHOPTS`` turns on ``expand_aliases`` in a child shell ...).
BASH_CODE_VARIABLES = frozenset(
    {
        "BASH_ENV",
        "ENV",
        "PS0",
        "PS1",
        "PS2",
        "PS3",
        "PS4",
        "PROMPT_COMMAND",
        "SHELLOPTS",
        "BASHOPTS",
        "BASH_CMDS",
        "BASH_ALIASES",
        "BASH_COMPAT",
        "POSIXLY_CORRECT",
        "BASH_LOADABLES_PATH",
    }
)
#: Names of variables other programs run as a command or read as options or code
#: (``GIT_SSH_COMMAND``, ``PAGER``, ``EDITOR``, ``LESSOPEN``, ``NODE_OPTIONS``,
#: ``PERL5OPT``, ``MAKEFLAGS`` ...): a name the line sets that matches makes it
#: undecided. A variable naming a file (``PATH``, ``PYTHONPATH``, ``LD_PRELOAD``)
#: is not: what files hold is not read (see the package docs). Programs read
#: these by their exact names, upper case: a shell's own ``opt`` or ``flags`` is
#: not one of them.
_COMMAND_VARIABLE = LazyPattern(
    r"(?:COMMAND|CMD|EDITOR|VISUAL|PAGER|ASKPASS|BROWSER|OPT|OPTS|OPTIONS|FLAGS|HOOK|HOOKS)$"
    r"|^(?:GIT_|LESS|PERL|RUBY|NODE_|BASH_FUNC_)",
)
_IDENTIFIER = LazyPattern(r"[A-Za-z_][A-Za-z0-9_]*")


def code_variable(name: str) -> bool:
    """Whether setting ``name`` may make bash or a program run code the line does
    not show (:data:`BASH_CODE_VARIABLES`, and names of commands and options)."""
    return name in BASH_CODE_VARIABLES or bool(_COMMAND_VARIABLE().search(name))


#: Variables bash evaluates as arithmetic when they are assigned (bash 5.2: an
#: assigned ``a[$(cmd)]`` runs ``cmd``).
INTEGER_VARIABLES = frozenset({"RANDOM", "SRANDOM", "OPTIND", "HISTCMD", "SECONDS", "LINENO"})


def assigned_name_problem(name: str | None, value: str | None = None) -> str | None:
    """Why assigning ``value`` (None: not known) to ``name`` is not understood, or
    None: a computed name, one that is no plain identifier (``a[i]``: a subscript;
    ``BASH_FUNC_f%%``: an exported function), a :func:`code_variable`, or a
    variable bash evaluates as arithmetic given anything but a number."""
    if name is None:
        return "a variable name is computed"
    if not _IDENTIFIER().fullmatch(name):
        return "an assignment to a name that is no plain variable (a subscript, a function)"
    if code_variable(name):
        return "a variable that runs code or holds a command is set"
    if name in INTEGER_VARIABLES and (value is None or not _NUMBER().fullmatch(value)):
        return "an assignment bash evaluates as arithmetic"
    return None


def heredoc_text(body: str, expands: bool) -> str:
    """A here-document's text as the command reads it: as written under a quoted
    delimiter; else with ``\\\\``, ``\\$`` and ``\\``` unescaped (the caller has
    made sure it holds no expansion and no line continuation)."""
    return _HEREDOC_ESCAPES().sub(_dq_escape, body) if expands else body


class Source:
    """The text a parse tree points into, and the words read from it."""

    def __init__(self, src: bytes, budget: Budget) -> None:
        self.src = src
        self.budget = budget

    def text(self, node: Node) -> str:
        return self.span(node.start_byte, node.end_byte)

    def span(self, start: int, end: int) -> str:
        return self.src[start:end].decode("utf-8", "surrogateescape")

    # Words ------------------------------------------------------------------

    def word(self, node: Node, scan: Scan) -> Word:
        """The word ``node`` is; its substitutions and problems added to ``scan``."""
        self.budget.spend()
        if node.type == "word":
            text = self.text(node)
            if _PLAIN.fullmatch(text):
                self.budget.spend(len(text) // 64)
                return Word(text, text, text, text, "")
        pieces = self.pieces(node, scan)
        self.budget.spend(4 + len(pieces))
        return _assemble(pieces, self.text(node))

    def pieces(self, node: Node, scan: Scan) -> list[Piece]:
        kind = node.type
        if kind == "word":
            text = self.text(node)
            _check_one_word(text)
            if _UNPARSED.search(text):
                scan.problems.append(_UNPARSED_WHY)
            return _unquoted(text, first=True)
        if kind == "number":
            text = self.text(node)
            _check_one_word(text)
            return [(text, False)]
        if kind == "raw_string":
            return [(self.text(node)[1:-1], True)]
        if kind == "ansi_c_string":
            return [(ansi_c(self.text(node)[2:-1]), True)]
        if kind == "string":
            return self._string(node, scan)
        if kind == "command_name":
            out: list[Piece] = []
            for child in node.named_children:
                out.extend(self.pieces(child, scan))
            return out
        if kind == "concatenation":
            return self._concatenation(node, scan)
        if kind in ("command_substitution", "process_substitution"):
            scan.subs.append(node)
            if kind == "process_substitution":
                return [Computed(_WHY[kind], "/dev/fd/", single=True)]
            return [Computed(_WHY[kind])]
        if kind == "simple_expansion":
            if not _SIMPLE_EXPANSION().fullmatch(self.text(node)):
                raise ShellError("the shell parser misreads a $ expansion")
            return [Computed(_WHY[kind])]
        if kind == "expansion":
            self._expansion(node, scan)
            return [Computed(_WHY[kind])]
        if kind == "translated_string":
            for child in node.named_children:
                self.pieces(child, scan)  # its substitutions run
            return [Computed(_WHY[kind], single=True)]
        if kind == "brace_expression":
            return [Computed(_WHY[kind])]
        if kind == "extglob_pattern":
            return [(self.text(node), False)]
        if kind == "arithmetic_expansion":
            # $((...)) and the old form $[...]: both evaluated by bash alike
            inner = _ARITHMETIC().fullmatch(self.text(node))
            body = None if inner is None else inner.group(1) or inner.group(2) or ""
            if body is None or not _NUMERIC_ARITHMETIC.fullmatch(body):
                scan.problems.append(
                    "an arithmetic expansion (it may run code in array subscripts)"
                )
            return [Computed(_WHY[kind])]
        if not node.is_named and kind == "$":
            return [("$", False)]
        scan.problems.append("a word the reader does not evaluate")
        return [Computed("a computed word")]

    def _concatenation(self, node: Node, scan: Scan) -> list[Piece]:
        out: list[Piece] = []
        children = node.children
        i = 0
        while i < len(children):
            child = children[i]
            if (
                child.type == "$"
                and i + 1 < len(children)
                and children[i + 1].type == "string"
                and children[i + 1].start_byte == child.end_byte
            ):  # $"..." inside a word: a translated string
                self.pieces(children[i + 1], scan)
                out.append(Computed(_WHY["translated_string"], single=True))
                i += 2
                continue
            got = self.pieces(child, scan)
            if out and child.type == "word":  # only a word's first character is a tilde
                got = _unquoted(self.text(child), first=False)
            out.extend(got)
            i += 1
        return out

    def _string(self, node: Node, scan: Scan) -> list[Piece]:
        out: list[Piece] = []
        at = node.start_byte + 1
        end = node.end_byte - 1
        for child in node.children:
            if child.type in _EXPANSIONS or (child.is_named and child.type != "string_content"):
                literal = self.span(at, child.start_byte)
                if _UNPARSED.search(literal):
                    scan.problems.append(_UNPARSED_WHY)
                out.append((_DQ_ESCAPES().sub(_dq_escape, literal), True))
                out.extend(
                    Computed(p.why, p.lead, single=True) if isinstance(p, Computed) else p
                    for p in self.pieces(child, scan)
                )
                at = child.end_byte
        literal = self.span(at, max(at, end))
        if _UNPARSED.search(literal):
            scan.problems.append(_UNPARSED_WHY)
        out.append((_DQ_ESCAPES().sub(_dq_escape, literal), True))
        return [p for p in out if not (isinstance(p, tuple) and p[0] == "")]

    def _expansion(self, node: Node, scan: Scan) -> None:
        """Check a ``${...}`` against the forms that only read a variable; read the
        words in its operands (their substitutions run)."""
        children = node.children[1:-1]  # between ${ and }
        if not children:
            scan.problems.append("an empty parameter expansion")
            return
        first = children[0]
        if first.type == "!":
            scan.problems.append("an indirect expansion (${!...})")
            return
        if first.type == "#" and len(children) >= 2:
            children = children[1:]  # ${#NAME}: a length
        name = children[0]
        if name.type == "subscript":
            if not self._plain_subscript(name):
                scan.problems.append("an array subscript (arithmetic that may run code)")
                return
        elif name.type not in ("variable_name", "special_variable_name"):
            scan.problems.append("a parameter expansion the reader does not evaluate")
            return
        rest = children[1:]
        if not rest:
            return
        operator = rest[0].type
        if operator in ("@",):
            scan.problems.append("a parameter transformation (${...@...})")
            return
        if operator == ":":
            if not all(c.type == "number" or c.type == ":" for c in rest) or not all(
                _NUMBER().fullmatch(self.text(c).strip()) for c in rest if c.type == "number"
            ):
                scan.problems.append("a substring offset (arithmetic that may run code)")
            return
        if operator in (":=", "="):
            problem = assigned_name_problem(self.text(name) if name.type == "variable_name" else "")
            if problem is not None and name.type == "variable_name":
                scan.problems.append(problem)
        if operator not in _READING_OPERATORS:
            scan.problems.append("a parameter expansion the reader does not evaluate")
            return
        for operand in rest[1:]:
            if operand.is_named:
                self._operand(operand, scan)

    def _operand(self, node: Node, scan: Scan) -> None:
        if node.type == "regex":
            # The grammar does not parse a pattern's expansions: one holding any
            # is not read.
            if re.search(r"[$`]", self.text(node)):
                scan.problems.append("a pattern with an expansion the reader does not read")
            return
        self.pieces(node, scan)

    def _plain_subscript(self, node: Node) -> bool:
        index = node.child_by_field_name("index")
        if index is None:
            inner = [c for c in node.children if c.is_named and c.type != "variable_name"]
            index = inner[0] if len(inner) == 1 else None
        return index is not None and re.fullmatch(r"[0-9]+|@|\*", self.text(index)) is not None

    # Statements' text -------------------------------------------------------

    def plain_text(self, node: Node) -> str | None:
        """The value of a word node when literal; None when computed or a problem."""
        scan = Scan()
        word = self.word(node, scan)
        return None if scan.subs or scan.problems else word.value


#: ``${NAME<operator>...}`` operators that only read the variable (and ``:=`` /
#: ``=``, which also assign to it: checked apart).
_READING_OPERATORS = frozenset(
    {":-", "-", ":=", "=", ":+", "+", ":?", "?", "#", "##", "%", "%%"}
    | {"/", "//", "/#", "/%", "^", "^^", ",", ",,"}
)


def _check_one_word(text: str) -> None:
    """A word the grammar gives must be one word to bash: an unquoted blank in it
    means the grammar misread the line (it takes ``$ rm`` for one expansion)."""
    if _BLANK.search(_ESCAPED.sub("", text)):
        raise ShellError("the shell parser misreads a word")


def _unquoted(text: str, *, first: bool) -> list[Piece]:
    """An unquoted word's text: a backslash quotes the next character; a leading
    ``~`` is a tilde expansion."""
    out: list[Piece] = []
    if first and text.startswith("~"):
        end = text.find("/")
        end = len(text) if end < 0 else end
        if "\\" not in text[:end]:
            out.append(Computed("a tilde expansion", "~", single=True))
            text = text[end:]
    if "\\" not in text:
        return [*out, (text, False)] if text else out
    plain: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            if plain:
                out.append(("".join(plain), False))
                plain = []
            if text[i + 1] != "\n":
                out.append((text[i + 1], True))
            i += 2
        else:
            plain.append(text[i])
            i += 1
    if plain:
        out.append(("".join(plain), False))
    return out


def _assemble(pieces: list[Piece], written: str) -> Word:
    skeleton = "".join(
        ("\x01" * len(p[0]) if p[1] else p[0]) if isinstance(p, tuple) else "\x00" for p in pieces
    )
    glob = _GLOB.search(skeleton)
    pattern = glob is not None
    brace = _BRACE.search(skeleton)
    if brace is not None:
        # It becomes several words: what is known is the first one's start.
        literal = "".join(p[0] if isinstance(p, tuple) else "\x00" for p in pieces)
        head = literal[: brace.start()].split("\x00", 1)[0]
        return Word(None, written, head, "", _WHY["brace_expression"], pattern, single=False)
    computed = [p for p in pieces if isinstance(p, Computed)]
    if glob is not None:
        # File names: what is known is the text before the first wildcard (a
        # name starting with "-" is a flag to the program: rm -r * and a file -f).
        literal = "".join(p[0] if isinstance(p, tuple) else "\x00" for p in pieces)
        head = literal[: glob.start()].split("\x00", 1)[0]
        return Word(None, written, head, "", "a glob", pattern, single=False)
    if not computed:
        value = "".join(p[0] for p in pieces if isinstance(p, tuple))
        return Word(value, value, value, value, "", pattern)
    before: list[str] = []
    for p in pieces:
        if isinstance(p, Computed):
            before.append(p.lead)
            break
        before.append(p[0])
    tail: list[str] = []
    for p in reversed(pieces):
        if isinstance(p, Computed):
            break
        tail.append(p[0])
    single = all(c.single for c in computed)
    return Word(
        None, written, "".join(before), "".join(reversed(tail)), computed[0].why, pattern, single
    )


def iter_named(node: Node) -> Iterator[Node]:
    """``node``'s named children."""
    return iter(node.named_children)
