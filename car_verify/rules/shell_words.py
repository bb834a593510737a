"""The commands a shell command line runs, read with a real shell parser.

``deny_command`` rules match these, not the command's text. The line is parsed
with tree-sitter's bash grammar and every simple command it would run is reported
with its program (the base name of the first word: ``/bin/rm``, ``\\rm``,
``r''m``, ``"rm"`` and ``$'\\x72m'`` are all ``rm``), its flags (short ones split,
``-rf`` is ``-r`` and ``-f``; long ones whole, ``--force=yes`` is ``--force``;
none after ``--``), its words and the programs whose output reaches it.

What is read as run:

* every part of a list or a pipeline (``;``, ``&&``, ``||``, ``|``, ``|&``, ``&``,
  newlines, ``!``), subshells ``( )``, groups ``{ ; }``, the bodies of ``if``,
  ``while``, ``until``, ``for``, ``select`` and ``case``, and a function
  definition's body (counted as run whether or not the function is called);
* ``$(...)``, backquotes and process substitutions ``<(...)`` / ``>(...)``
  anywhere: in words, assignments, redirections, ``for`` lists, ``[[ ]]`` tests;
* a shell (:data:`SHELLS`) given ``-c STRING`` (also ``-xc``, ``-lc``, after
  ``-o OPT``, ``--`` ...): the string is read as a command line; a shell reading
  its commands from stdin reads a here-string (``bash <<< 'rm -rf x'``), a
  heredoc (``sh <<EOF``) or the output of ``echo`` / ``cat`` earlier in a
  pipeline, each read as a command line;
* ``eval`` of literal words (joined with spaces, as eval does), an ``alias``
  value (conservatively run), ``watch`` (its words run by ``sh -c``), ``su -c``;
* the command a wrapper (:data:`WRAPPERS`) runs, its own options skipped (an
  option that takes a value consumes it), and every ``find -exec`` /
  ``-execdir`` / ``-ok`` / ``-okdir`` command;
* leading ``NAME=value`` assignments and redirections are skipped.

What is undecided (:class:`Undecided`, reported, never a silent allow): a program
word the shell computes (``$CMD``, ``${X}``, ``$(echo rm)``, a glob or a brace
expansion), ``eval`` of a computed string, ``source`` / ``.``, a shell running a
computed ``-c`` string or reading commands from a pipe or a process substitution,
an alias or a function defined in the line (it may redefine the program, or add
words to it), a wrapper whose options are not understood, ``xargs`` (its input
adds words, which may be flags, or names the program), a ``git -c alias.*``, and
a computed word before ``--`` that may be a flag (``rm -$F x``, ``rm "$f"``). A
glob in an argument is taken as file names, not flags.

Not read: files (a script run by ``sh FILE``, ``./x.sh``, ``make``), what a
program does with its arguments beyond the wrappers listed, and the syntax of
``fish``, ``csh`` and ``tcsh`` (their ``-c`` strings and stdin are undecided).

A line over :data:`MAX_LINE` characters, a nesting of re-read strings and
substitutions deeper than :data:`MAX_NESTING`, or a line the parser cannot read
(an unclosed quote, an ``if`` without ``fi``) raises :class:`ShellError`: callers
deny (fail closed).

Flag spellings: :func:`has_flags` matches a rule's flags through
:data:`FLAG_ALIASES`, a per-program table of equivalent spellings (``rm -R`` is
``rm -r``; ``git push +main`` is a force push).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tree_sitter import Language, Node, Parser

__all__ = [
    "FLAG_ALIASES",
    "MAX_LINE",
    "MAX_NESTING",
    "SHELLS",
    "WRAPPERS",
    "Command",
    "Reading",
    "ShellError",
    "Undecided",
    "commands",
    "has_flags",
    "hazards",
    "read_commands",
    "read_plain",
]

#: The longest command line read, in characters; a longer one raises ShellError.
MAX_LINE = 100_000
#: How deeply re-read strings (``-c``, heredocs, here-strings, ``eval``) and
#: substitutions may nest; deeper raises ShellError.
MAX_NESTING = 8
#: How deeply the parse tree of one line may nest (subshells in subshells ...).
_MAX_TREE_DEPTH = 200
#: How many wrappers one command may pass through (``sudo nice env ... rm``).
_MAX_WRAPPERS = 32

#: Shells whose ``-c`` string, here-string, heredoc or piped ``echo`` is read.
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "posh", "yash"})
#: Shells whose syntax is not read: their ``-c`` string or stdin is undecided.
_FOREIGN_SHELLS = frozenset({"fish", "csh", "tcsh"})

#: Equivalent spellings of a flag, per program (``git push``: per subcommand). A
#: rule's flag matches a command that gives any spelling of its class; a long one
#: may also be abbreviated, as GNU getopt and git accept (``--rec`` is
#: ``--recursive``). ``+REFSPEC`` stands for a ``git push`` refspec starting with
#: ``+`` (``git push origin +main``), which forces that ref. ``--force-with-lease``
#: and ``--mirror`` (which force-updates refs) count as ``--force``: a rule denying a
#: force push denies those too. ``--force-if-includes`` alone forces nothing. ``chmod
#: -r`` is a mode (remove read permission), not ``-R``; ``mv`` has no recursive flag.
FLAG_ALIASES: dict[str, tuple[frozenset[str], ...]] = {
    "rm": (frozenset({"-r", "-R", "--recursive"}), frozenset({"-f", "--force"})),
    "cp": (frozenset({"-r", "-R", "--recursive"}), frozenset({"-f", "--force"})),
    "mv": (frozenset({"-f", "--force"}),),
    "chmod": (frozenset({"-R", "--recursive"}),),
    "chown": (frozenset({"-R", "--recursive"}),),
    "chgrp": (frozenset({"-R", "--recursive"}),),
    "git push": (frozenset({"-f", "--force", "--force-with-lease", "--mirror", "+REFSPEC"}),),
}


class ShellError(ValueError):
    """A command line that cannot be read: callers deny it (fail closed)."""


@dataclass(frozen=True, slots=True)
class Command:
    """One simple command: its program (a base name), its flags (short ones split,
    ``-rf`` is ``-r`` and ``-f``; long ones whole, without an ``=value``), its words
    (the program's word first; a word the shell computes is given as written), and
    ``inputs``: the programs whose output reaches it (earlier stages of its
    pipeline, ``$(...)``, ``<(...)`` and ``< <(...)`` in its words and redirections,
    and so on for the commands a wrapper or a shell runs)."""

    program: str
    flags: frozenset[str]
    words: tuple[str, ...]
    inputs: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Undecided:
    """A part of the line that could not be resolved: why (a short phrase, never the
    command's text), and the program it is about, or None when the program itself
    is unknown (any rule may apply)."""

    reason: str
    program: str | None


@dataclass(frozen=True, slots=True)
class Reading:
    """Every simple command the line runs, as resolved, and what was undecided."""

    commands: tuple[Command, ...]
    undecided: tuple[Undecided, ...]


def read_commands(line: str) -> Reading:
    """Read ``line`` as bash would (see the module docs), in a child process of its
    own where one can be forked (:func:`_isolated`); :func:`read_plain` is the same
    reading in this process, and a test holds the two to the same answers."""
    if len(line) > MAX_LINE:
        raise ShellError(f"the command line is over {MAX_LINE:,} characters")
    if not hasattr(os, "fork"):
        return read_plain(line)
    kind, value = _isolated(line)
    if kind == "error":
        raise ShellError(value)
    reading: Reading = value
    return reading


#: How long a child reading one line may take before it is killed (the line is then
#: refused, never let through unread).
ISOLATED_SECONDS = 5.0


@lru_cache(maxsize=2048)
def _isolated(line: str) -> tuple[str, Any]:
    """:func:`read_plain` in a child process (see :class:`_Child`). The bash
    grammar's parser is C code that, on some random inputs, corrupts memory and
    crashes the process it runs in (seen with tree-sitter 0.26.1 and
    tree-sitter-bash 0.25.1, a few times in 1,000 runs of random text, never twice
    on one input). A crash there must not take the agent hook or the executor down
    with it: a hook that dies answers nothing, and some agents then run the call.
    A child that crashes, or does not answer within :data:`ISOLATED_SECONDS`, makes
    the line a :class:`ShellError` (the rule fails closed), and the next line gets a
    new child. The answer (a reading, or why the line cannot be read) is cached per
    line: a line is read once however many rules ask about it."""
    with _CHILD_LOCK:
        global _CHILD
        if _CHILD is None or os.getpid() != _CHILD.owner:  # none yet, or forked since
            _CHILD = _Child()
        try:
            return _CHILD.ask(line)
        except ShellError as err:
            _CHILD = None
            return ("error", str(err))


class _Child:
    """A forked process that reads lines for this one: a request is a pickled line,
    an answer a pickled ``(kind, value)``, each behind its length. It ends when this
    process closes its end of the pipe (or exits, or is killed)."""

    def __init__(self) -> None:
        import pickle

        _language()  # loaded once, before the fork: the child inherits it
        to_child, self._requests = os.pipe()
        self._answers, from_child = os.pipe()
        self.owner = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child: answer until the pipe closes, then leave at once
            status = 0
            try:
                _keep_only(to_child, from_child)
                while True:
                    request = _receive(to_child, None)
                    if request is None:
                        break
                    try:
                        answer: tuple[str, Any] = ("reading", read_plain(pickle.loads(request)))
                    except ShellError as err:
                        answer = ("error", str(err))
                    _send(from_child, pickle.dumps(answer))
            except BaseException:
                status = 1
            finally:
                os._exit(status)
        os.close(to_child)
        os.close(from_child)
        self.pid = pid

    def ask(self, line: str) -> tuple[str, Any]:
        import pickle

        try:
            _send(self._requests, pickle.dumps(line))
            answer = _receive(self._answers, time.monotonic() + ISOLATED_SECONDS)
        except OSError:
            answer = None
        if answer is None:
            self.close()
            raise ShellError("the shell parser failed on this line")
        result: tuple[str, Any] = pickle.loads(answer)
        return result

    def close(self) -> None:
        import signal

        for fd in (self._requests, self._answers):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitpid(self.pid, 0)


def _keep_only(*keep: int) -> None:
    """In the child: close every inherited descriptor but ``keep`` (a lock the
    parent holds, its output, a socket), the standard three pointed at /dev/null."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    try:
        open_fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        open_fds = list(range(3, 1024))
    for fd in open_fds:
        if fd > 2 and fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


_CHILD: _Child | None = None
_CHILD_LOCK = threading.Lock()


def _send(fd: int, data: bytes) -> None:
    data = len(data).to_bytes(8, "big") + data
    while data:
        data = data[os.write(fd, data) :]


def _receive(fd: int, deadline: float | None) -> bytes | None:
    """One message from ``fd``; None at its end, or past ``deadline``."""
    import select

    head = _exactly(fd, 8, deadline, select)
    if head is None:
        return None
    return _exactly(fd, int.from_bytes(head, "big"), deadline, select)


def _exactly(fd: int, size: int, deadline: float | None, select: Any) -> bytes | None:
    chunks: list[bytes] = []
    while size:
        if deadline is not None:
            ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                return None
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_plain(line: str) -> Reading:
    """:func:`read_commands` in this process."""
    if len(line) > MAX_LINE:
        raise ShellError(f"the command line is over {MAX_LINE:,} characters")
    reader = _Reader()
    try:
        reader.line(line, _Ctx(), 0)
    except RecursionError:  # each re-read string may nest again: bounded as a whole
        raise ShellError("the command line nests too deeply") from None
    undecided = [*reader.undecided, *hazards(line)]
    return Reading(tuple(reader.found), tuple(dict.fromkeys(undecided)))


#: Constructs the reader does not model, each of which can run a command or change
#: what a name runs in ways a reading of the line's words does not see: a line
#: holding one is undecided for every rule (answered by ``--on-unknown``, with a
#: warning), never a silent allow. Found by testing the reader as an attacker; see
#: docs/policies.md.
HAZARDS: tuple[tuple[str, str], ...] = (
    (r"\bcoproc\b", "a coprocess"),
    (r"[\w.-]+\s*\(\s*\)\s*[{(]|\bfunction\s+[\w.-]+", "a function defined in the line"),
    (r"\btrap\b", "trap runs a string later"),
    (r"\blet\b|\(\(|\[\[\s*-v\b|\bprintf\s+-v\b", "arithmetic evaluates array subscripts"),
    (r"\b(?:mapfile|readarray)\b", "mapfile runs a callback"),
    (r"\bhash\s+-p\b|\bBASH_CMDS\b|\benable\b", "a name is bound to another program"),
    (
        r"\b(?:BASH_ENV|ENV|PS4|PROMPT_COMMAND|PS0|PS1|SHELLOPTS|BASHOPTS)=",
        "a shell variable that runs code",
    ),
    (r"@[PEAKaQUuL]\}", "a parameter transformation"),
    (
        r"\bGIT_[A-Z_]+=|\bgit\b[^;&|\n]*\s-c\s|\bgit\s+config\b|\bgit-[a-z-]+\b",
        "git's configuration or its subcommand programs",
    ),
    (r"\bexec\s+\d*[<>]|<&|>&\s*\d", "a redirection of the shell's own input or output"),
    (r"\$\{[^}]*`", "a command substitution inside a parameter expansion"),
    (r"\\`", "an escaped command substitution"),
    (r"<<-?\s*[^\s'\"\\]*[A-Za-z_][\s\S]*(?:`|\$\(|\$\{)", "a here-document that expands"),
    (r"\b(?:echo|printf)\b[^|;&\n]*\\[^|;&\n]*\|", "escapes in text piped on"),
    (
        r"(?<![\w./-])(?:chroot|flock|script|setpriv|unshare|nsenter|firejail|systemd-run"
        r"|runuser|taskset|numactl|prlimit|parallel|ssh|expect|proot|bwrap|faketime"
        r"|torsocks|proxychains4?|catchsegv|valgrind|gdb|awk|gawk|mawk)(?![\w./-])",
        "a program that runs its arguments or a script of its own",
    ),
    (
        r"\b(?:python[0-9.]*|perl|ruby|node|php|lua|tclsh)\s+-[A-Za-z]*[ceEr]\b"
        r"|\bsed\b[^|;&\n]*(?:\be\b|/e\b)",
        "code given to an interpreter",
    ),
)


@lru_cache(maxsize=1)
def _hazard_patterns() -> tuple[tuple[Any, str], ...]:
    return tuple((re.compile(pattern), why) for pattern, why in HAZARDS)


def hazards(line: str) -> list[Undecided]:
    """The constructs of :data:`HAZARDS` in ``line``, each as undecided for any program."""
    return [Undecided(why, None) for pattern, why in _hazard_patterns() if pattern.search(line)]


def commands(line: str) -> list[Command]:
    """Every simple command ``line`` runs: ``read_commands(line).commands``."""
    return list(read_commands(line).commands)


def has_flags(command: Command, flags: Iterable[str]) -> bool:
    """Whether ``command`` gives every one of ``flags`` in any spelling
    :data:`FLAG_ALIASES` holds for its program."""
    given = set(command.flags)
    key = command.program
    if command.program == "git":
        sub, rest = _git_subcommand(command.words[1:])
        if sub is not None:
            key = f"git {sub}"
        if sub == "push" and any(w.startswith("+") and len(w) > 1 for w in rest):
            given.add("+REFSPEC")
    classes = FLAG_ALIASES.get(key, ())
    for wanted in flags:
        spellings = next((c for c in classes if wanted in c), frozenset({wanted}))
        if not any(_spells(g, spellings, abbreviated=bool(classes)) for g in given):
            return False
    return True


def _spells(given: str, spellings: frozenset[str], *, abbreviated: bool) -> bool:
    if given in spellings:
        return True
    return (
        abbreviated
        and given.startswith("--")
        and len(given) > 2
        and any(s.startswith(given) for s in spellings if s.startswith("--"))
    )


_GIT_VALUE_OPTIONS = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"}
)


def _git_subcommand(args: Sequence[str]) -> tuple[str | None, Sequence[str]]:
    """git's subcommand (its global options skipped) and the words after it."""
    i = 0
    while i < len(args):
        word = args[i]
        if word in _GIT_VALUE_OPTIONS:
            i += 2
        elif word.startswith("-"):
            i += 1
        else:
            return word, args[i + 1 :]
    return None, ()


# --- the parser -----------------------------------------------------------------


@lru_cache(maxsize=1)
def _language() -> Language:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Language(tree_sitter_bash.language())


def _parser() -> Parser:
    """A fresh parser for each parse (about a microsecond): no state is carried from
    one line to the next, and threads never share one."""
    import tree_sitter

    return tree_sitter.Parser(_language())


#: Node types whose text the shell takes literally: a backslash-newline in them stays.
_LITERAL_TEXT = frozenset({"raw_string", "comment", "heredoc_body", "ansi_c_string"})
_CONTINUATION = re.compile(rb"\\+\n")


def _parse(src: bytes) -> tuple[Node, bytes]:
    tree = _parser().parse(src)
    root = tree.root_node
    # A backslash-newline inside a word joins it (``r\<newline>m`` is ``rm``); the
    # grammar splits the word there, so they are removed and the line parsed again.
    cut = [
        m.end() - 2
        for m in _CONTINUATION.finditer(src)
        if (m.end() - m.start() - 1) % 2 == 1 and not _in_literal(root, m.end() - 2)
    ]
    if cut:
        pieces, at = [], 0
        for k in cut:
            pieces.append(src[at:k])
            at = k + 2
        pieces.append(src[at:])
        src = b"".join(pieces)
        root = _parser().parse(src).root_node
    if root.has_error:
        raise ShellError("the command line has a syntax error the shell parser cannot read")
    return root, src


def _in_literal(root: Node, at: int) -> bool:
    node: Node | None = root.descendant_for_byte_range(at, at + 1)
    while node is not None:
        if node.type in _LITERAL_TEXT:
            return True
        node = node.parent
    return False


# --- words ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Computed:
    """A part of a word the shell computes."""

    why: str


# A piece of a word: literal text (quoted or not) or a computed part.
_Piece = tuple[str, bool] | _Computed


@dataclass(frozen=True, slots=True)
class _Word:
    value: str | None  # None: computed
    text: str  # the value, or the word as written when computed
    prefix: str  # the literal text before the first computed part
    tail: str  # the literal text after the last computed part
    why: str  # what computes it ("" when literal)
    pattern: bool = False  # it holds an unquoted glob: ``*``, ``?``, ``[``

    @classmethod
    def literal(cls, value: str) -> _Word:
        return cls(value, value, value, value, "")


_EXPANSIONS = frozenset(
    {
        "simple_expansion",
        "expansion",
        "command_substitution",
        "process_substitution",
        "arithmetic_expansion",
    }
)
_WHY = {
    "simple_expansion": "a variable",
    "expansion": "a variable",
    "command_substitution": "a command substitution",
    "process_substitution": "a process substitution",
    "arithmetic_expansion": "an arithmetic expansion",
}
_DQ_ESCAPES = re.compile(r"\\([\\$`\"\n])")
_BRACE = re.compile(r"\{[^{}\x00]*(,|\.\.)[^{}\x00]*\}")
_PLAIN = re.compile(r"[^\\*?\[{]*")  # a word with nothing to unquote or expand
_GLOB = re.compile(r"[*?]|\[[^\]]+\]")
_ANSI = re.compile(
    r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)", re.DOTALL
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


def _ansi_c(body: str) -> str:
    def one(m: re.Match[str]) -> str:
        e = m.group(1)
        if e[0] in "xuU" and len(e) > 1:
            code = int(e[1:], 16)
            return chr(code) if code <= 0x10FFFF else ""
        if e[0] in "01234567":
            return chr(int(e, 8) & 0xFF)
        if e[0] == "c" and len(e) == 2:
            return chr(ord(e[1]) & 0x1F)
        return _ANSI_SIMPLE.get(e, "\\" + e)

    return _ANSI.sub(one, body)


def _dq_escape(m: re.Match[str]) -> str:
    return "" if m.group(1) == "\n" else m.group(1)


class _Source:
    def __init__(self, src: bytes) -> None:
        self.src = src

    def text(self, node: Node) -> str:
        return self.src[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")

    def span(self, start: int, end: int) -> str:
        return self.src[start:end].decode("utf-8", "surrogateescape")

    def pieces(self, node: Node) -> list[_Piece]:
        kind = node.type
        if kind == "word":
            return _unquoted(self.text(node))
        if kind == "raw_string":
            return [(self.text(node)[1:-1], True)]
        if kind == "number":
            return [(self.text(node), False)]
        if kind == "ansi_c_string":
            return [(_ansi_c(self.text(node)[2:-1]), True)]
        if kind in ("translated_string", "command_name"):
            out: list[_Piece] = []
            for child in node.named_children:
                out.extend(self.pieces(child))
            return out
        if kind == "string":
            return self._string(node)
        if kind == "concatenation":
            out = []
            for child in node.children:
                out.extend(self.pieces(child))
            return out
        if kind == "process_substitution":
            return [("/dev/fd/", True), _Computed(_WHY[kind])]
        if kind in _WHY:
            return [_Computed(_WHY[kind])]
        if not node.is_named:
            return [(self.text(node), False)]
        return [_Computed("a computed word")]

    def _string(self, node: Node) -> list[_Piece]:
        out: list[_Piece] = []
        at = node.start_byte + 1
        end = node.end_byte - 1
        for child in node.children:
            if child.type in _EXPANSIONS or (child.is_named and child.type != "string_content"):
                out.append((_DQ_ESCAPES.sub(_dq_escape, self.span(at, child.start_byte)), True))
                out.append(_Computed(_WHY.get(child.type, "a computed word")))
                at = child.end_byte
        out.append((_DQ_ESCAPES.sub(_dq_escape, self.span(at, max(at, end))), True))
        return [p for p in out if not (isinstance(p, tuple) and p[0] == "")]

    def word(self, node: Node) -> _Word:
        if node.type == "word":
            text = self.text(node)
            if _PLAIN.fullmatch(text):
                return _Word(text, text, text, text, "")
        pieces = self.pieces(node)
        # Unquoted text as written, anything quoted or computed masked: what a glob
        # or a brace expansion is looked for in.
        skeleton = "".join(
            ("\x00" * len(p[0]) if p[1] else p[0]) if isinstance(p, tuple) else "\x00"
            for p in pieces
        )
        pattern = bool(_GLOB.search(skeleton))
        brace = _BRACE.search(skeleton)
        if brace is not None:
            # It becomes several words: what is known is the first one's start.
            literal = "".join(p[0] if isinstance(p, tuple) else "\x00" for p in pieces)
            head = literal[: brace.start()].split("\x00", 1)[0]
            return _Word(None, self.text(node), head, "", "a brace expansion", pattern)
        computed = [p for p in pieces if isinstance(p, _Computed)]
        if not computed:
            value = "".join(p[0] for p in pieces if isinstance(p, tuple))
            return _Word(value, value, value, value, "", pattern)
        before: list[str] = []
        for p in pieces:
            if isinstance(p, _Computed):
                break
            before.append(p[0])
        tail: list[str] = []
        for p in reversed(pieces):
            if isinstance(p, _Computed):
                break
            tail.append(p[0])
        return _Word(
            None,
            self.text(node),
            "".join(before),
            "".join(reversed(tail)),
            computed[0].why,
            pattern,
        )


def _unquoted(text: str) -> list[_Piece]:
    """An unquoted word's text: a backslash quotes the next character."""
    if "\\" not in text:
        return [(text, False)]
    out: list[_Piece] = []
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


# --- what a command line runs ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Ctx:
    """What a command inherits: the programs whose output reaches it, and its stdin:
    "tty" (not redirected), "pipe" (an unknown producer), "text" (known: ``text``),
    "computed" or "file"."""

    inputs: frozenset[str] = frozenset()
    stdin: str = "tty"
    text: str = ""


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_STATEMENT_SKIP = frozenset({"comment", "heredoc_body", "heredoc_start", "heredoc_end"})


class _Reader:
    def __init__(self) -> None:
        self.found: list[Command] = []
        self.undecided: list[Undecided] = []
        self.src = _Source(b"")

    def undecide(self, reason: str, program: str | None) -> None:
        self.undecided.append(Undecided(reason, program))

    def line(self, text: str, ctx: _Ctx, nest: int) -> None:
        if nest > MAX_NESTING:
            raise ShellError(f"strings and substitutions nest more than {MAX_NESTING} deep")
        if len(text) > MAX_LINE:
            raise ShellError(f"a string to run is over {MAX_LINE:,} characters")
        root, src = _parse(text.encode("utf-8", "surrogatepass"))
        outer = self.src
        self.src = _Source(src)
        try:
            self.walk(root, ctx, nest, 0)
        finally:
            self.src = outer

    # Statements -------------------------------------------------------------

    def walk(self, node: Node, ctx: _Ctx, nest: int, depth: int) -> str | None:
        """Read every command under ``node``; a command's output when known."""
        if depth > _MAX_TREE_DEPTH:
            raise ShellError("the command line nests too deeply")
        kind = node.type
        if kind == "command":
            return self.command(node, ctx, nest, depth, [], [])
        if kind == "redirected_statement":
            return self.redirected(node, ctx, nest, depth)
        if kind == "pipeline":
            self.pipeline(node.children, ctx, nest, depth, None, None)
            return None
        if kind == "list":
            rights: list[list[Node]] = []
            while node.type == "list":  # left-nested: a && b && c is ((a && b) && c)
                rights.append(node.children[1:])
                node = node.children[0]
            self.walk(node, ctx, nest, depth + 1)
            for parts in reversed(rights):
                for child in parts:
                    self.walk(child, ctx, nest, depth + 1)
            return None
        if kind in ("command_substitution", "process_substitution"):
            if nest >= MAX_NESTING:
                raise ShellError(f"strings and substitutions nest more than {MAX_NESTING} deep")
            for child in node.children:
                self.walk(child, ctx, nest + 1, depth + 1)
            return None
        if kind == "function_definition":
            name = node.child_by_field_name("name")
            if name is not None:
                self.undecide(
                    "a function defined in the line may redefine the program",
                    self.src.word(name).value,
                )
        for child in node.children:
            if child.type not in ("comment",):
                self.walk(child, ctx, nest, depth + 1)
        return None

    def pipeline(
        self,
        stages: Sequence[Node],
        ctx: _Ctx,
        nest: int,
        depth: int,
        fed: frozenset[str] | None,
        out: str | None,
    ) -> None:
        """The stages of a pipeline (``|``/``|&`` tokens among them are skipped);
        ``fed``/``out``: what an earlier stage outside ``stages`` sends on."""
        for stage in stages:
            if stage.type in ("|", "|&"):
                continue
            if fed is None:
                here = ctx
            elif out is not None:
                here = _Ctx(ctx.inputs | fed, "text", out)
            else:
                here = _Ctx(ctx.inputs | fed, "pipe")
            start = len(self.found)
            out = self.walk(stage, here, nest, depth + 1)
            fed = (fed or frozenset()) | _feeding(self.found[start:])

    def redirected(self, node: Node, ctx: _Ctx, nest: int, depth: int) -> str | None:
        body = node.child_by_field_name("body")
        redirects = node.children_by_field_name("redirect")
        later: list[Node] = []  # what the grammar hangs under a heredoc: the rest of a list
        args: list[Node] = []  # words after a heredoc: more arguments of the command
        for redirect in redirects:
            if redirect.type != "heredoc_redirect":
                continue
            _check_heredoc_start(self.src, redirect)
            for i, child in enumerate(redirect.children):
                field = redirect.field_name_for_child(i)
                if field == "argument":
                    args.append(child)
                elif child.is_named and child.type not in _STATEMENT_SKIP and field != "redirect":
                    later.append(child)
        start = len(self.found)
        if body is not None and body.type == "command":
            out = self.command(body, ctx, nest, depth + 1, redirects, args)
        else:
            here, fed, writes = self.redirections(redirects, ctx, nest, depth)
            at = len(self.found)
            if body is not None:
                out = self.walk(body, replace(here, inputs=here.inputs | fed), nest, depth + 1)
            else:
                out = None
            self.read_output(writes, _feeding(self.found[at:]), nest, depth)
        fed_on = _feeding(self.found[start:])
        for child in later:
            if (
                child.type == "pipeline"
                and child.children
                and child.children[0].type
                in (
                    "|",
                    "|&",
                )
            ):
                self.pipeline(child.children, ctx, nest, depth + 1, fed_on, out)
            else:
                self.walk(child, ctx, nest, depth + 1)
        return None if later else out

    def redirections(
        self, redirects: Sequence[Node], ctx: _Ctx, nest: int, depth: int
    ) -> tuple[_Ctx, frozenset[str], list[Node]]:
        """Read the substitutions in ``redirects``; the stdin they give, the programs
        whose output they feed in, and the output process substitutions (``>
        >(...)``), which read what the command writes: for the caller to read."""
        here = ctx
        start = len(self.found)
        later: list[Node] = []
        for redirect in redirects:
            kind = redirect.type
            if kind == "heredoc_redirect":
                body = next((c for c in redirect.children if c.type == "heredoc_body"), None)
                strip = any(c.type == "<<-" for c in redirect.children)
                text = self.src.text(body) if body is not None else ""
                if strip:
                    text = re.sub(r"(?m)^\t+", "", text)
                if body is not None:
                    for child in body.children:
                        self.walk(child, ctx, nest, depth + 1)
                here = _Ctx(here.inputs, "text", text)
            elif kind == "herestring_redirect":
                for child in redirect.children:
                    self.walk(child, ctx, nest, depth + 1)
                target = redirect.named_children[-1] if redirect.named_children else None
                word = self.src.word(target) if target is not None else _Word.literal("")
                if word.value is None:
                    here = _Ctx(here.inputs, "computed")
                else:
                    here = _Ctx(here.inputs, "text", word.value + "\n")
            elif kind == "file_redirect":
                operator = next((c.type for c in redirect.children if not c.is_named), "")
                descriptor = redirect.child_by_field_name("descriptor")
                fd = self.src.text(descriptor) if descriptor is not None else ""
                destination = redirect.child_by_field_name("destination")
                writes = operator in (">", ">>", ">|", "&>", "&>>") and fd in ("", "1", "2")
                for child in redirect.children:
                    if writes and child == destination and child.type == "process_substitution":
                        later.append(child)
                    else:
                        self.walk(child, ctx, nest, depth + 1)
                if operator in ("<", "<>") and fd in ("", "0"):
                    piped = destination is not None and destination.type == "process_substitution"
                    here = _Ctx(here.inputs, "pipe" if piped else "file")
            else:
                self.walk(redirect, ctx, nest, depth + 1)
        return here, _feeding(self.found[start:]), later

    def read_output(self, subs: Iterable[Node], fed: frozenset[str], nest: int, depth: int) -> None:
        """Read output process substitutions, fed what ``fed`` writes."""
        for sub in subs:
            self.walk(sub, _Ctx(fed, "pipe"), nest, depth + 1)

    def command(
        self,
        node: Node,
        ctx: _Ctx,
        nest: int,
        depth: int,
        redirects: Sequence[Node],
        more_args: Sequence[Node],
    ) -> str | None:
        name = node.child_by_field_name("name")
        arguments = [*node.children_by_field_name("argument"), *more_args]
        own_redirects = node.children_by_field_name("redirect")
        start = len(self.found)
        for child in node.children:
            if child.type == "variable_assignment":
                self.walk(child, ctx, nest, depth + 1)
        if name is None:
            _, _, outputs = self.redirections([*own_redirects, *redirects], ctx, nest, depth)
            self.read_output(outputs, ctx.inputs, nest, depth)
            return None
        words = [self.src.word(name), *(self.src.word(a) for a in arguments)]
        # Substitutions run before the command; an output process substitution
        # ``>(...)`` reads what the command writes.
        writes: list[Node] = []
        for part in [name, *arguments]:
            for sub in _substitutions(part):
                if sub.type == "process_substitution" and sub.children[0].type == ">(":
                    writes.append(sub)
                else:
                    self.walk(sub, ctx, nest, depth + 1)
        fed = _feeding(self.found[start:])
        here, more, redirected = self.redirections([*own_redirects, *redirects], ctx, nest, depth)
        here = _Ctx(here.inputs | fed | more, here.stdin, here.text)
        first = len(self.found)
        out = self.simple(words, here, nest, 0)
        self.read_output([*writes, *redirected], _feeding(self.found[first:]), nest, depth)
        return out

    # Simple commands --------------------------------------------------------

    def simple(self, words: Sequence[_Word], ctx: _Ctx, nest: int, wrapped: int) -> str | None:
        """Read one simple command given as words; its output when known."""
        if not words:
            return None
        if wrapped > _MAX_WRAPPERS:
            raise ShellError(f"a command passes through more than {_MAX_WRAPPERS} wrappers")
        program = _program(words[0])
        if program is None:
            why = "a pattern" if words[0].pattern else words[0].why
            self.undecide(f"{why} names the program", None)
            return None
        args = words[1:]
        flags, computed = _flags(args)
        written = tuple(w.text for w in words if w.text or w.why != _XARGS_INPUT)
        self.found.append(Command(program, flags, written, ctx.inputs))
        if computed:
            self.undecide("a computed word may be a flag", program)
        runner = _RUNNERS.get(program)
        if runner is not None:
            return runner(self, program, args, ctx, nest, wrapped)
        if program in SHELLS:
            self.shell(program, args, ctx, nest)
        elif program in _FOREIGN_SHELLS and (
            ctx.stdin in ("pipe", "text", "computed")
            or any(w.value is None or (w.value.startswith("-") and "c" in w.value) for w in args)
        ):
            self.undecide("a shell whose syntax is not read runs commands", None)
        return None

    def shell(self, program: str, args: Sequence[_Word], ctx: _Ctx, nest: int) -> None:
        i, string, stdin = 0, False, False
        while i < len(args):
            word = args[i]
            if word.value is None:
                if not string and word.prefix.startswith(("-", "+")):
                    self.undecide("a shell's options are computed", None)
                    return
                break
            value = word.value
            if value in ("--", "-"):
                i += 1
                break
            if value.startswith("--"):
                i += 2 if value in ("--rcfile", "--init-file") else 1
                continue
            if value[:1] in ("-", "+") and len(value) > 1:
                letters = value[1:]
                string = string or (value[0] == "-" and "c" in letters)
                stdin = stdin or "s" in letters
                i += 1 + sum(letters.count(x) for x in "oO")
                continue
            break
        rest = args[i:]
        if string:
            if not rest:
                return
            if rest[0].value is None:
                self.undecide("a shell runs a computed string", None)
            else:
                self.line(rest[0].value, ctx, nest + 1)
        elif rest and not stdin:
            if rest[0].value is None and rest[0].prefix == "/dev/fd/":
                self.undecide("a shell runs the output of a process substitution", None)
            # else: a script file, which is not read
        elif ctx.stdin == "text":
            self.line(ctx.text, _Ctx(ctx.inputs), nest + 1)
        elif ctx.stdin == "pipe":
            self.undecide("a shell reads its commands from a pipe", None)
        elif ctx.stdin == "computed":
            self.undecide("a shell reads computed commands", None)


def _feeding(found: Sequence[Command]) -> frozenset[str]:
    """The programs whose output leaves these commands: theirs and their inputs."""
    if not found:
        return frozenset()
    out: set[str] = set()
    for c in found:
        out.add(c.program)
        out.update(c.inputs)
    return frozenset(out)


def _substitutions(node: Node) -> Iterable[Node]:
    """The substitutions in a word (not those nested in them)."""
    if node.child_count == 0:
        return
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in ("command_substitution", "process_substitution"):
            yield current
        else:
            stack.extend(reversed(current.children))


def _check_heredoc_start(src: _Source, redirect: Node) -> None:
    """The grammar takes ``<<E;`` as a delimiter ``E;``: bash ends it at ``;``."""
    start = next((c for c in redirect.children if c.type == "heredoc_start"), None)
    if start is None:
        return
    unquoted = re.sub(r"'[^']*'|\"[^\"]*\"|\\.", "", src.text(start))
    if re.search(r"[;&|()<>\s]", unquoted):
        raise ShellError("a heredoc delimiter the shell parser cannot read")


def _program(word: _Word) -> str | None:
    """The program a word names (its base name), or None when the shell computes it;
    ``$HOME/bin/rm`` names ``rm``."""
    if word.pattern:
        return None
    if word.value is not None:
        return os.path.basename(word.value) or None
    if "/" in word.tail and word.tail.rsplit("/", 1)[1]:
        return word.tail.rsplit("/", 1)[1]
    return None


def _flags(args: Sequence[_Word]) -> tuple[frozenset[str], bool]:
    """The flags in ``args`` (none after ``--``); whether a computed word may be one."""
    flags: set[str] = set()
    computed = False
    for word in args:
        value = word.value
        if value is None:
            prefix = word.prefix
            if not prefix or prefix.startswith("-"):
                computed = True
                if not prefix.startswith("--"):
                    flags.update(f"-{c}" for c in prefix[1:])
            continue
        if value == "--":
            break
        if value.startswith("--"):
            flags.add(value.split("=", 1)[0])
        elif value.startswith("-") and len(value) > 1:
            flags.update(f"-{c}" for c in value[1:] if c != "-")
    return frozenset(flags), computed


# --- wrappers and the programs that run their arguments ---------------------------


@dataclass(frozen=True, slots=True)
class _Spec:
    """A wrapper's options: which take a value (short letters, long names), which
    take none, which stop it from running a command, and what comes before the
    command it runs."""

    values: str = ""  # short options that take a value: -u USER, -uUSER
    flags: str = ""  # short options that take none
    optional: str = ""  # short options whose value, if any, is attached: -i[R]
    long_values: frozenset[str] = frozenset()  # --user USER, --user=USER
    long_flags: frozenset[str] = frozenset()  # --login; --name=value also accepted
    stops: str = ""  # short options with which no command runs (command -v)
    long_stops: frozenset[str] = frozenset()
    positional: int = 0  # words before the command: timeout's DURATION
    assignments: bool = False  # NAME=value words before the command (env, sudo)
    numeric: bool = False  # -N is an option (nice -5)
    shell: str = ""  # options that run a shell when no command is given (sudo -s)
    split: str = ""  # an option whose value is split into words (env -S)


def _f(names: str) -> frozenset[str]:
    return frozenset(names.split())


_HELP = _f("--help --version")

#: The wrappers: programs that run the command in their arguments. Each one's
#: options are skipped as its manual page gives them; an option not listed makes
#: the command undecided (never read as the command).
WRAPPERS: dict[str, _Spec] = {
    "sudo": _Spec(
        values="ugpChrtTURD",
        flags="AbEeHiKklnPSsVv",
        long_values=_f(
            "--user --group --prompt --close-from --host --role --type "
            "--command-timeout --other-user --chroot --chdir"
        ),
        long_flags=_f(
            "--askpass --background --preserve-env --set-home --login "
            "--remove-timestamp --reset-timestamp --non-interactive "
            "--preserve-groups --stdin --shell --bell"
        ),
        stops="elvKV",
        long_stops=_f("--edit --list --validate --help --version"),
        assignments=True,
        shell="is",
    ),
    "doas": _Spec(values="uC", flags="nsL", stops="CL", shell="s"),
    "env": _Spec(
        values="uCS",
        flags="i0v",
        long_values=_f("--unset --chdir --split-string"),
        long_flags=_f(
            "--ignore-environment --null --debug --block-signal --default-signal "
            "--ignore-signal --list-signal-handling"
        ),
        long_stops=_HELP,
        assignments=True,
        split="S",
    ),
    "nice": _Spec(values="n", long_values=_f("--adjustment"), long_stops=_HELP, numeric=True),
    "nohup": _Spec(long_stops=_HELP),
    "time": _Spec(
        values="fo",
        flags="pavq",
        long_values=_f("--format --output"),
        long_flags=_f("--portability --append --verbose --quiet"),
        long_stops=_HELP,
    ),
    "timeout": _Spec(
        values="sk",
        flags="v",
        long_values=_f("--signal --kill-after"),
        long_flags=_f("--preserve-status --foreground --verbose"),
        long_stops=_HELP,
        positional=1,
    ),
    "command": _Spec(flags="pvV", stops="vV"),
    "builtin": _Spec(),
    "exec": _Spec(values="a", flags="cl"),
    "coproc": _Spec(),
    "setsid": _Spec(flags="cfw", long_flags=_f("--ctty --fork --wait"), long_stops=_HELP),
    "stdbuf": _Spec(values="ioe", long_values=_f("--input --output --error"), long_stops=_HELP),
    "ionice": _Spec(
        values="cnpPu",
        flags="t",
        long_values=_f("--class --classdata --pid --pgid --uid"),
        long_flags=_f("--ignore"),
        stops="pPu",
        long_stops=_f("--pid --pgid --uid --help --version"),
    ),
    "chrt": _Spec(
        values="TPD",
        flags="abdfioRrv",
        long_values=_f("--sched-runtime --sched-period --sched-deadline"),
        long_flags=_f(
            "--all-tasks --batch --deadline --fifo --idle --other --reset-on-fork --rr --verbose"
        ),
        stops="mp",
        long_stops=_f("--max --pid --help --version"),
        positional=1,
    ),
    "taskset": _Spec(
        flags="ac",
        long_flags=_f("--all-tasks --cpu-list"),
        stops="p",
        long_stops=_f("--pid --help --version"),
        positional=1,
    ),
    "strace": _Spec(
        values="abeEIoOpPsSuUX",
        flags="cCdDfFhiknqrtTvVwxyYzZ",
        long_stops=_HELP,
    ),
    "ltrace": _Spec(
        values="aADeFlnopsuwx",
        flags="bcCfhiLrStTV",
        long_stops=_HELP,
    ),
}

_XARGS = _Spec(
    values="aEdILnPs",
    flags="0oprtx",
    optional="eil",
    long_values=_f("--arg-file --delimiter --max-args --max-procs --max-chars --process-slot-var"),
    long_flags=_f(
        "--null --open-tty --interactive --no-run-if-empty --verbose --exit "
        "--replace --eof --max-lines"
    ),
    long_stops=_f("--show-limits --help --version"),
)
_WATCH = _Spec(
    values="nq",
    flags="bcCegprtwx",
    optional="d",
    long_values=_f("--interval --equexit"),
    long_flags=_f(
        "--beep --color --no-color --errexit --chgexit --precise --no-rerun "
        "--no-title --no-wrap --exec --differences"
    ),
    long_stops=_HELP,
)
_SU = _Spec(
    values="cgGswC",
    flags="flmPpT",
    long_values=_f(
        "--command --session-command --group --supp-group --shell --whitelist-environment"
    ),
    long_flags=_f("--fast --login --preserve-environment --pty"),
    long_stops=_HELP,
)


@dataclass(slots=True)
class _Options:
    """What :func:`_skip_options` found: the words from the command on, the
    options' values, or why no command can be told (``stop``: none runs)."""

    rest: list[_Word]
    values: dict[str, str | None]
    undecided: str = ""
    stop: bool = False


def _long(spec: _Spec, name: str) -> str | None:
    """A long option's full name: as given, or the one known name it abbreviates."""
    known = spec.long_values | spec.long_flags | spec.long_stops
    if name in known:
        return name
    matches = [k for k in known if k.startswith(name)]
    return matches[0] if len(matches) == 1 else None


def _skip_options(spec: _Spec, args: Sequence[_Word]) -> _Options:
    words = list(args)
    values: dict[str, str | None] = {}
    i = 0
    while i < len(words):
        word = words[i]
        value = word.value
        if value is None:
            if word.prefix.startswith("-"):
                return _Options([], values, "a wrapper's options are computed")
            break  # the command, or a positional word (timeout "$T" rm)
        if value == "--":
            i += 1
            break
        if spec.assignments and _ASSIGNMENT.match(value):
            i += 1
            continue
        if value.startswith("--"):
            given, eq, attached = value.partition("=")
            name = _long(spec, given)
            if name is None:
                return _Options([], values, "a wrapper's option is not understood")
            if name in spec.long_stops:
                return _Options([], values, stop=True)
            if name in spec.long_values and not eq:
                if i + 1 >= len(words):
                    return _Options([], values, stop=True)
                values[name] = words[i + 1].value
                i += 2
            else:
                values[name] = attached if eq else ""
                i += 1
            if name == "--split-string":
                split = values[name]
                if split is None:
                    return _Options([], values, "a wrapper splits a computed string")
                words = [*_split(split), *words[i:]]
                i = 0
            continue
        if spec.numeric and value[1:].isdigit() and value.startswith("-"):
            i += 1
            continue
        if not value.startswith("-") or value == "-":
            break
        step = 1
        for j in range(1, len(value)):
            letter = value[j]
            if letter in spec.stops:
                return _Options([], values, stop=True)
            if letter in spec.values:
                if j + 1 < len(value):
                    values[f"-{letter}"] = value[j + 1 :]
                elif i + 1 < len(words):
                    values[f"-{letter}"] = words[i + 1].value
                    step = 2
                else:
                    return _Options([], values, stop=True)
                break
            if letter in spec.optional:
                values[f"-{letter}"] = value[j + 1 :]
                break
            if letter not in spec.flags:
                return _Options([], values, "a wrapper's option is not understood")
            values[f"-{letter}"] = ""
        i += step
        if spec.split and f"-{spec.split}" in values:
            split = values.pop(f"-{spec.split}")
            if split is None:
                return _Options([], values, "a wrapper splits a computed string")
            words = [*_split(split), *words[i:]]
            i = 0
    rest = words[i + spec.positional :] if i + spec.positional <= len(words) else []
    return _Options(rest, values)


def _split(text: str) -> list[_Word]:
    try:
        return [_Word.literal(w) for w in shlex.split(text)]
    except ValueError as err:
        raise ShellError(f"a string a wrapper splits cannot be read ({err})") from None


_Runner = Callable[["_Reader", str, Sequence[_Word], _Ctx, int, int], "str | None"]


def _run_wrapper(
    reader: _Reader, program: str, args: Sequence[_Word], ctx: _Ctx, nest: int, wrapped: int
) -> str | None:
    spec = WRAPPERS[program]
    found = _skip_options(spec, args)
    if found.undecided:
        reader.undecide(found.undecided, None)
    elif found.rest:
        return reader.simple(found.rest, ctx, nest, wrapped + 1)
    elif not found.stop and any(f"-{s}" in found.values for s in spec.shell):
        reader.simple([_Word.literal("sh")], ctx, nest, wrapped + 1)  # sudo -s: a shell
    return None


def _run_xargs(
    reader: _Reader, program: str, args: Sequence[_Word], ctx: _Ctx, nest: int, wrapped: int
) -> str | None:
    found = _skip_options(_XARGS, args)
    if found.undecided:
        reader.undecide(found.undecided, None)
        return None
    if not found.rest:
        return None  # echo
    replace_with = found.values.get("-I") or found.values.get("--replace")
    if replace_with is None and "-i" in found.values:
        replace_with = found.values["-i"] or "{}"
    if "--replace" in found.values and not replace_with:
        replace_with = "{}"
    if replace_with:
        rest = [
            _Word(None, w.text, "", "", _XARGS_INPUT)
            if w.value is not None and replace_with in w.value
            else w
            for w in found.rest
        ]
    else:  # the words xargs reads are added after the command's own
        rest = [*found.rest, _Word(None, "", "", "", _XARGS_INPUT)]
    return reader.simple(rest, ctx, nest, wrapped + 1)


_XARGS_INPUT = "xargs's input"
_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def _run_find(
    reader: _Reader, program: str, args: Sequence[_Word], ctx: _Ctx, nest: int, wrapped: int
) -> str | None:
    i = 0
    while i < len(args):
        if args[i].value not in _EXEC:
            i += 1
            continue
        j = i + 1
        while j < len(args) and not (
            args[j].value == ";" or (args[j].value == "+" and args[j - 1].value == "{}")
        ):
            j += 1
        reader.simple(args[i + 1 : j], ctx, nest, wrapped + 1)
        i = j + 1
    return None


def _run_multicall(
    reader: _Reader, program: str, args: Sequence[_Word], ctx: _Ctx, nest: int, wrapped: int
) -> str | None:
    if args and not (args[0].value or "-").startswith("-"):
        return reader.simple(args, ctx, nest, wrapped + 1)
    if args and args[0].value is None:
        reader.undecide(f"{args[0].why} names the program", None)
    return None


def _run_eval(
    reader: _Reader, program: str, args: Sequence[_Word], ctx: _Ctx, nest: int, wrapped: int
) -> str | None:
    texts = [w.value for w in args]
    if any(t is None for t in texts):
        reader.undecide("eval runs a computed string", None)
    else:
        reader.line(" ".join(t for t in texts if t is not None), ctx, nest + 1)
    return None


def _run_source(
    reader: _Reader, program: str, args: Sequence[_Word], ctx: _Ctx, nest: int, wrapped: int
) -> str | None:
    reader.undecide("a sourced file's commands are not read", None)
    return None


def _run_alias(
    reader: _Reader, program: str, args: Sequence[_Word], ctx: _Ctx, nest: int, wrapped: int
) -> str | None:
    for word in args:
        if word.value is None:
            reader.undecide("an alias is given a computed value", None)
            continue
        name, eq, value = word.value.partition("=")
        if not eq:
            continue
        reader.undecide("an alias defined in the line may redefine the program", name)
        start = len(reader.found)
        reader.line(value, _Ctx(), nest + 1)  # conservatively run
        for c in reader.found[start:]:
            reader.undecide("an alias may add words to the command", c.program)
    return None


def _run_watch(
    reader: _Reader, program: str, args: Sequence[_Word], ctx: _Ctx, nest: int, wrapped: int
) -> str | None:
    found = _skip_options(_WATCH, args)
    if found.undecided:
        reader.undecide(found.undecided, None)
    elif "-x" in found.values or "--exec" in found.values:
        reader.simple(found.rest, ctx, nest, wrapped + 1)
    elif found.rest:
        texts = [w.value for w in found.rest]
        if any(t is None for t in texts):
            reader.undecide("watch runs a computed string", None)
        else:
            reader.line(" ".join(t for t in texts if t is not None), ctx, nest + 1)
    return None


def _run_su(
    reader: _Reader, program: str, args: Sequence[_Word], ctx: _Ctx, nest: int, wrapped: int
) -> str | None:
    # su [options] [-] [user [args]]: options may also follow the user.
    words = [w for w in args if w.value != "-"]
    given: list[str | None] = []
    while True:
        found = _skip_options(_SU, words)
        if found.undecided:
            reader.undecide(found.undecided, None)
            return None
        if found.stop:
            return None
        for key in ("-c", "-C", "--command", "--session-command"):
            if key in found.values:
                given.append(found.values[key])
        if not found.rest:
            break
        words = found.rest[1:]  # the user
    if not given:
        return reader.simple([_Word.literal("sh")], ctx, nest, wrapped + 1)
    for text in given:
        if text is None:
            reader.undecide("a shell runs a computed string", None)
        else:
            reader.line(text, ctx, nest + 1)
    return None


def _run_git(
    reader: _Reader, program: str, args: Sequence[_Word], ctx: _Ctx, nest: int, wrapped: int
) -> str | None:
    for i, word in enumerate(args):
        value = (word.value or "").casefold()
        if value in ("-c", "--config-env") and i + 1 < len(args):
            value = (args[i + 1].value or "alias.").casefold()
        elif value.startswith("--config-env="):
            value = value.removeprefix("--config-env=")
        elif value.startswith("-c"):
            value = value[2:]
        else:
            continue
        if value.startswith("alias."):
            reader.undecide("a git alias defined in the line", "git")
            break
    return None


def _run_echo(
    reader: _Reader, program: str, args: Sequence[_Word], ctx: _Ctx, nest: int, wrapped: int
) -> str | None:
    texts = [w.value for w in args]
    if any(t is None for t in texts):
        return None
    words = [t for t in texts if t is not None]
    newline, escapes = True, False
    while words and re.fullmatch(r"-[neE]+", words[0]):
        newline = newline and "n" not in words[0]
        escapes = escapes or "e" in words[0]
        words = words[1:]
    out = " ".join(words)
    return (_ansi_c(out) if escapes else out) + ("\n" if newline else "")


def _run_cat(
    reader: _Reader, program: str, args: Sequence[_Word], ctx: _Ctx, nest: int, wrapped: int
) -> str | None:
    if all(w.value == "-" for w in args) and ctx.stdin == "text":
        return ctx.text
    return None


_RUNNERS: dict[str, _Runner] = {
    **{name: _run_wrapper for name in WRAPPERS},
    "xargs": _run_xargs,
    "find": _run_find,
    "busybox": _run_multicall,
    "toybox": _run_multicall,
    "eval": _run_eval,
    "source": _run_source,
    ".": _run_source,
    "alias": _run_alias,
    "watch": _run_watch,
    "su": _run_su,
    "runuser": _run_su,
    "git": _run_git,
    "echo": _run_echo,
    "cat": _run_cat,
}
