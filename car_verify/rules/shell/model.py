"""What a reading of a command line is made of, and the bounds on making one."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "MAX_LINE",
    "MAX_NESTING",
    "MAX_STEPS",
    "Budget",
    "Command",
    "Reading",
    "ShellError",
    "Undecided",
]

#: The longest command line read, in characters; a longer one raises ShellError.
MAX_LINE = 100_000
#: How deeply re-read strings (``-c``, heredocs, here-strings, ``eval``) and
#: substitutions may nest; deeper raises ShellError.
MAX_NESTING = 8
#: How many steps one reading may take (a step: a parse tree node visited, a byte
#: parsed; a word evaluated and a command read cost a few, so that steps follow
#: time: about 2 microseconds each). A line that needs more raises ShellError: the
#: bound is a count, so the answer never depends on the machine's load. 100 kB of
#: ordinary commands takes a sixth of it; the densest 100 kB (50,000 commands
#: ``a;a;...``) about half.
MAX_STEPS = 1_500_000


class ShellError(ValueError):
    """A command line that cannot be read: callers deny it (fail closed)."""


@dataclass(frozen=True, slots=True)
class Command:
    """One simple command: its program (a base name), its flags (short ones split,
    ``-rf`` is ``-r`` and ``-f``; long ones whole, without an ``=value``), its words
    (the program's word first; a word the shell computes is given as written),
    ``inputs``: the programs whose output reaches it (earlier stages of its
    pipeline, ``$(...)``, ``<(...)`` and ``< <(...)`` in its words and redirections,
    and so on for the commands a wrapper or a shell runs), and ``argv``: every
    word's value, the program's word as given, when every one is known (None when
    the shell computes any of them: ``$X``, ``$(...)``, a glob, ``~``, ``{a,b}``,
    or a word ``xargs`` or ``find`` adds). An allow list matches ``argv``
    (:func:`~car_verify.rules.shell.match.matches_prefix`)."""

    program: str
    flags: frozenset[str]
    words: tuple[str, ...]
    inputs: frozenset[str] = frozenset()
    argv: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Undecided:
    """A part of the line that could not be resolved: why (a short phrase, never the
    command's text), and the program it is about, or None when the program itself
    is unknown or the construct may run anything (any rule may apply)."""

    reason: str
    program: str | None


@dataclass(frozen=True, slots=True)
class Reading:
    """Every simple command the line runs, as resolved, and what was undecided. A
    line is *understood* when ``undecided`` is empty: then every command it runs
    is in ``commands``, each with its ``argv``."""

    commands: tuple[Command, ...]
    undecided: tuple[Undecided, ...]

    @property
    def understood(self) -> bool:
        """Whether every program the line runs and every word it gives them is
        known: nothing undecided, and every command's ``argv`` known."""
        return not self.undecided and all(c.argv is not None for c in self.commands)


@dataclass(frozen=True, slots=True)
class Ctx:
    """What a command inherits: the programs whose output reaches it, and its stdin:
    "none" (not redirected: the caller's), "null" (``/dev/null``, closed), "text"
    (known: ``text``), "file" (a file the line names) or "unknown" (a pipe from a
    program whose output is not known, a computed word, another descriptor)."""

    inputs: frozenset[str] = frozenset()
    stdin: str = "none"
    text: str = ""


class Budget:
    """The steps one reading may still take (:data:`MAX_STEPS`)."""

    __slots__ = ("left", "total")

    def __init__(self, steps: int = MAX_STEPS) -> None:
        self.left = steps
        self.total = steps

    def spend(self, steps: int = 1) -> None:
        self.left -= steps
        if self.left < 0:
            raise ShellError(
                f"the command line takes more than {self.total:,} steps to read: "
                "refused (split it into shorter lines)"
            )
