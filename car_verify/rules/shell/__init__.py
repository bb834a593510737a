"""The commands a shell command line runs, read with a real shell parser.

``deny_command`` rules match these, not the command's text. The reading is
**understood or refused**: it reports every simple command the line would run
(its program, a base name; its flags; its words; the programs whose output
reaches it; and, when every word is known, its ``argv``), and it says
*undecided* (:class:`Undecided`, reported, never a silent allow) for anything it
does not evaluate the way bash would. What is read is a positive list, not a
list of dangerous spellings:

* **parsing** (:mod:`.parse`): tree-sitter's bash grammar, with line
  continuations removed where bash removes them; a line the grammar cannot read,
  over :data:`MAX_LINE` characters, holding a NUL byte, or past
  :data:`MAX_STEPS` steps of work raises :class:`ShellError` (callers deny);
* **words** (:mod:`.words`): literal text with bash's quoting and escapes
  (``\\rm``, ``r''m``, ``"rm"``, ``$'\\x72m'``, ``$'rm\\0x'`` are all ``rm``), and
  the expansions that only read a variable are evaluated or marked computed;
  arithmetic (``$((...))``, ``$[...]``), array subscripts, ``${!x}``,
  ``${x@P}`` and any form not listed are undecided;
* **the walk** (:mod:`.reader`): lists, pipelines, subshells, groups, ``if``,
  loops, ``case``, function bodies, ``$(...)``, backquotes and process
  substitutions anywhere, assignments (a variable bash or a program reads as
  code, ``PS4``, ``BASH_ENV``, ``BASH_FUNC_f%%``, ``GIT_SSH_COMMAND``, is
  undecided), ``declare`` (``-i``, ``-n`` undecided), ``[[ ]]`` (``-eq``,
  ``-v`` undecided), here-documents (unescaped as bash does) and here-strings;
* **programs** (the table, :mod:`.programs`; its dispatch, :mod:`.runners`; the
  handlers, :mod:`.builtins`, :mod:`.commands`, :mod:`.languages`, given a
  :class:`~.calls.Call`): bash builtins each read or
  undecided; shells (their ``-c`` string, a script on stdin, ``/dev/stdin``) read
  again as command lines, their options by a positive list (``-i``,
  ``--rcfile`` undecided); wrappers (``sudo``, ``env`` with ``-S`` split as GNU
  env does, ``nice``, ``timeout`` ...) read through their options; ``find
  -exec``, ``xargs``, ``eval``, ``trap``, ``watch``, ``su -c``, ``flock``,
  ``busybox`` read; interpreters (python, perl, node, ruby, awk, sed ...)
  understood only when they run a script file (or, for sed and awk, a script
  that runs no command); programs that run commands of their own undecided;
  git's options that name a command it runs (``--upload-pack``, ``--exec`` ...)
  read and undecided; programs known to take data read as such, and any other
  program's words that may name a program undecided for it (:mod:`.unknown`);
* **files** are not read: a script a shell runs, a Makefile, a test suite. A
  line that may write a file and also runs one (``echo ... > f; sh f``) is
  undecided.

:func:`read_commands` reads in a child process (:mod:`.isolate`);
:func:`has_flags` and :func:`matches_prefix` (:mod:`.match`) are what a rule asks
of a command.
"""

from __future__ import annotations

from .isolate import read_commands
from .match import FLAG_ALIASES, has_flags, matches_prefix
from .model import (
    MAX_LINE,
    MAX_NESTING,
    MAX_STEPS,
    Command,
    Reading,
    ShellError,
    Undecided,
)
from .programs import SHELLS, WRAPPERS
from .reader import read_plain

__all__ = [
    "FLAG_ALIASES",
    "MAX_LINE",
    "MAX_NESTING",
    "MAX_STEPS",
    "SHELLS",
    "WRAPPERS",
    "Command",
    "Reading",
    "ShellError",
    "Undecided",
    "commands",
    "has_flags",
    "matches_prefix",
    "read_commands",
    "read_plain",
]


def commands(line: str) -> list[Command]:
    """Every simple command ``line`` runs: ``read_commands(line).commands``."""
    return list(read_commands(line).commands)
