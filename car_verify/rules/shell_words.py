"""The commands a shell command line runs, as a shell would split them.

``deny_command`` rules match these, not the command's text: ``rm -r -f /``,
``rm -rf /``, ``r''m -fr /``, ``/bin/rm -rf /``, ``sudo rm -rf /``,
``true && rm -rf /`` and ``echo $(rm -rf /)`` all run ``rm`` with ``-r`` and
``-f``. The command line is cut at ``;``, ``&&``, ``||``, ``|``, ``&`` and
newlines, and every ``$(...)`` and backquoted part is read as a command line of
its own; each simple command is tokenised by :mod:`shlex` (POSIX rules: quotes and
backslashes removed); leading ``NAME=value`` assignments and the wrappers that run
their arguments (``sudo``, ``env``, ``command``, ``exec``, ``nohup``, ``time``,
``nice``, ``xargs``) are skipped; the program is the first word's base name.

What it does not read: variables (``$CMD -rf /``), aliases and functions, ``eval``
and ``sh -c`` strings are read as commands of their own only for ``sh``/``bash``
``-c`` (its next word); anything else a shell computes at run time is not known
here. A command line the lexer cannot read (an unclosed quote) is reported as such,
so a rule over it fails closed.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass

__all__ = ["Command", "Reading", "ShellError", "Undecided", "commands", "read_commands"]

#: The words that run the command after them (their own options skipped).
WRAPPERS = frozenset({"sudo", "env", "command", "exec", "nohup", "time", "nice", "xargs"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_SUBSTITUTION = re.compile(r"\$\(([^()]*)\)|`([^`]*)`")


class ShellError(ValueError):
    """A command line the lexer cannot read."""


@dataclass(frozen=True, slots=True)
class Command:
    """One simple command: its program (a base name) and its flags, short ones
    split (``-rf`` is ``-r`` and ``-f``), long ones whole (``--force``)."""

    program: str
    flags: frozenset[str]
    words: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Undecided:
    """A part of a line that cannot be resolved before it runs, and the program it
    concerns (None: any program)."""

    reason: str
    program: str | None = None


@dataclass(frozen=True, slots=True)
class Reading:
    """What a line runs: the commands resolved, and what could not be."""

    commands: tuple[Command, ...]
    undecided: tuple[Undecided, ...] = ()


def read_commands(line: str) -> Reading:
    """The commands ``line`` runs, and what of it cannot be resolved."""
    return Reading(tuple(commands(line)))


def commands(line: str, depth: int = 0) -> list[Command]:
    """Every simple command ``line`` runs (see the module docs)."""
    if depth > 8:
        raise ShellError("command substitutions nested too deeply")
    found: list[Command] = []
    for inner in _SUBSTITUTION.finditer(line):
        found.extend(commands(inner.group(1) or inner.group(2) or "", depth + 1))
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError as err:
        raise ShellError(str(err)) from None
    words: list[str] = []
    for token in [*tokens, ";"]:
        if token and set(token) <= set(";&|\n"):
            if words:
                found.extend(_simple(words, depth))
            words = []
        else:
            words.append(token)
    return found


def _simple(words: list[str], depth: int) -> list[Command]:
    rest = list(words)
    while rest and _ASSIGNMENT.match(rest[0]):
        rest.pop(0)  # NAME=value before the command
    if not rest:
        return []
    program = os.path.basename(rest[0])
    args = rest[1:]
    flags: set[str] = set()
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("--"):
            flags.add(arg.split("=", 1)[0])
        elif arg.startswith("-") and len(arg) > 1:
            flags.update(f"-{c}" for c in arg[1:])
    out = [Command(program, frozenset(flags), tuple(rest))]
    if program in WRAPPERS:
        # The wrapped command starts at one of the next words that is no option (an
        # option's argument, as in ``sudo -u me rm``, cannot be told apart here): each
        # is read as a start, so a rule on the wrapped program sees it (fails closed).
        starts = [k for k, arg in enumerate(args) if not arg.startswith("-")][:8]
        for k in starts:
            out.extend(_simple(args[k:], depth))
    if program in _SHELLS and "-c" in args:
        at = args.index("-c") + 1
        out.extend(commands(args[at] if at < len(args) else "", depth + 1))
    return out
