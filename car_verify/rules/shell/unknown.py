"""A program in no table of :mod:`.programs`: what its words may make it run.

The reader cannot tell what a program it does not know does with its words, and
programs that run the command they are given are many (``setarch x86_64 rm -rf
x``, ``/lib64/ld-linux-x86-64.so.2 /bin/rm``, ``ssh-agent rm``, ``capsh -- -c
'rm -rf x'``, and every one not yet listed). So a word of such a program is not
taken as data when it may be a command:

* a word, or a part of it between ``=``, ``,``, ``:`` and blanks, may name a
  program (its base name, for a path; for a cluster of short options, any end
  of it, a value attached to the letters before: ``-crm``, ``-e/bin/sh``): a
  rule on that program is undecided; a program that runs code or commands of
  its own (a shell, an interpreter, a wrapper, a program of the table that runs
  a command) is undecided for every rule; and since a name may be a file the
  program runs, a line that also writes a file is undecided;
* a word holding a blank, a quote, a backslash or a shell operator (``;``, ``|``,
  ``&``, ``$``, a backquote, a parenthesis, a redirection), or its part after the
  first ``=``, is read as a command line (what ``sh -c`` would run): every
  program it runs is undecided as above, and what is undecided in it stays so; a
  text that cannot be read (code of another language, ``-c 'call system("...")'``,
  which the program may run) is undecided for every rule, but for a JSON
  document (data); every name-like run of such a text (``rm`` in
  ``system("rm -rf x")``) may name a program;
* a computed word may be any of these: undecided for every rule, unless it ends
  in a path (``"$D/rm"``, about ``rm``);
* a known text on its stdin (a here-string, a heredoc, ``echo`` piped in) is read
  as a command line too.

A line where this applies is not understood (:attr:`~.model.Reading.understood`),
so an allow list does not admit it either. Programs known to take their words as
data (:data:`~.programs.DATA`) and every program of the other tables are read by
their own entries instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from ...base.patterns import LazyPattern
from .calls import Call
from .model import MAX_NESTING

__all__ = ["unknown_program"]

#: What makes a word worth reading as a command line: a blank, a quote, a
#: backslash or a shell operator.
_LINE = LazyPattern(r"[\s;&|<>()`$'\"\\]")
#: Where a word is cut into the parts that may name a program.
_CUTS = LazyPattern(r"[=,:\s]+")
_NUMBER = LazyPattern(r"[0-9][0-9.]*")
#: The longest last segment of a cluster of short options taken apart.
_MAX_ENDS = 64

NAMED = "a program the reader does not know is given a word that may name a program it runs"
RUNNER = (
    "a program the reader does not know is given the name of a program that runs code or commands"
)
COMPUTED = "a program the reader does not know is given a computed word (it may name a program)"
LONG = "a program the reader does not know is given an option too long to take apart"
UNREADABLE = (
    "a program the reader does not know is given text that may be commands and cannot be read"
)


def unknown_program(call: Call, runs_code: Callable[[str], bool]) -> None:
    """Undecide what the words (and a known stdin) of ``call``'s program may run."""
    named: set[str] = set()
    for word in call.args:
        value = word.value
        if value is None:
            tail = word.tail if word.single else ""
            base = tail.rsplit("/", 1)[1] if "/" in tail else ""
            if base:
                named.add(base)
            else:
                call.undecide(COMPUTED)
            continue
        if not _names(value, named):
            call.undecide(LONG)
        texts = [value]
        if "=" in value:
            texts.append(value.partition("=")[2])
        for text in texts:
            if _LINE().search(text):
                _line(call, text, named)
                named.update(_words_in(text))  # code of another language: system("rm ...")
    if call.ctx.stdin == "text":
        _line(call, call.ctx.text, named)
        named.update(_words_in(call.ctx.text))
    if named:  # a name may be a file it runs: a line that also writes one is undecided
        call.reader.file_runs.append(call.index)
    for name in sorted(named):
        if runs_code(name):
            call.undecide(RUNNER)
        else:
            call.undecide(NAMED, name)


#: A name a text may give a program in code of any language: ``rm`` in
#: ``call system("rm -rf x")`` or ``:!rm -rf x``.
_WORD = LazyPattern(r"[A-Za-z_][A-Za-z0-9_.+-]*")


def _words_in(text: str) -> set[str]:
    """Every name-like run of ``text`` (what code of another language may run)."""
    return set(_WORD().findall(text))


def _json(text: str) -> bool:
    """Whether ``text`` is a JSON object or array."""
    try:
        return isinstance(json.loads(text), (dict, list))
    except ValueError:
        return False


def _names(value: str, named: set[str]) -> bool:
    """Add the programs a word's parts may name (a number is no name); False when
    a part is too long to take apart. A part starting with ``--`` is a long option
    (its value follows ``=``); one starting with ``-`` is a cluster of short
    options, any end of which may be a value attached to the letters before it
    (``-crm``, ``-e/bin/sh``): every end of its last path segment is a name."""
    for part in _CUTS().split(value):
        if part.startswith("--"):
            continue
        if not part.startswith("-"):
            base = part.rsplit("/", 1)[-1]
            if base not in ("", ".", "..") and not _NUMBER().fullmatch(base):
                named.add(base)
            continue
        last = part[2:].rsplit("/", 1)[-1]
        if len(last) > _MAX_ENDS:
            return False
        named.update(
            last[k:]
            for k in range(len(last))
            if last[k:] not in (".", "..") and not _NUMBER().fullmatch(last[k:])
        )
    return True


def _line(call: Call, text: str, named: set[str]) -> None:
    """``text`` read as a command line: the programs it runs, what it leaves
    undecided. One the grammar cannot read is undecided for every rule: bash would
    run none of it, but the program may read it as code of its own language
    (``vim.basic -c 'call system("rm -rf x")'``)."""
    if call.nest + 1 > MAX_NESTING:
        call.undecide(UNREADABLE)
        return
    reading = call.reader.aside(text, call.nest + 1)
    if reading is None:  # code of another language (vim's, a script's) may run anything;
        if not _json(text):  # a JSON document is data (a literal in any language)
            call.undecide(UNREADABLE)
        return
    for command in reading.commands:
        named.add(command.program)
    for undecided in reading.undecided:
        call.undecide(undecided.reason, undecided.program)
