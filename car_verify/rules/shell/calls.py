"""One program's call, as the handlers of the program table see it.

A handler (:mod:`.builtins`, :mod:`.commands`, :mod:`.languages`) is given a
:class:`Call`: the reader, the program and its words, the context; it reads
what the program runs through it, undecides what it cannot, and returns the
program's output when it is known text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from .model import Command, Ctx, Reading
from .words import Word

__all__ = [
    "XARGS_INPUT",
    "Call",
    "Handler",
    "Reader",
    "RedirectInfo",
    "assigns",
    "reads_stdin",
    "run_script",
]

#: What computes a word ``xargs`` adds to its command.
XARGS_INPUT = "xargs's input"


@dataclass(frozen=True, slots=True)
class RedirectInfo:
    """What a command's redirections do besides its stdin: whether one points the
    shell's own input elsewhere (``exec <``), and whether one writes a file."""

    own_input: bool = False
    writes: bool = False


class Reader(Protocol):
    """What a handler asks of the walk (:class:`~.reader.Reader`)."""

    found: list[Command]
    writes: list[int]
    file_runs: list[int]
    config_runs: list[int]

    def undecide(self, reason: str, program: str | None = None) -> None: ...

    def assigned(self, name: str | None, value: str | None = None) -> None: ...

    def line(self, text: str, ctx: Ctx, nest: int) -> None: ...

    def aside(self, text: str, nest: int) -> Reading | None: ...

    def simple(
        self,
        words: Sequence[Word],
        ctx: Ctx,
        nest: int,
        wrapped: int,
        info: RedirectInfo | None = None,
    ) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Call:
    """One program's call: the reader, the program and its arguments, the context,
    how deep the strings nest, how many wrappers it came through, and its index in
    the reader's commands."""

    reader: Reader
    program: str
    args: Sequence[Word]
    ctx: Ctx
    nest: int
    wrapped: int
    index: int
    redirect: RedirectInfo

    def undecide(self, reason: str, program: str | None = None) -> None:
        self.reader.undecide(reason, program)

    def simple(self, words: Sequence[Word], ctx: Ctx | None = None) -> str | None:
        return self.reader.simple(words, ctx or self.ctx, self.nest, self.wrapped + 1)

    def line(self, text: str, ctx: Ctx | None = None) -> None:
        self.reader.line(text, ctx or self.ctx, self.nest + 1)

    def literal(self) -> list[str] | None:
        """The arguments' values, or None when one is computed."""
        values = [w.value for w in self.args]
        return None if any(v is None for v in values) else [v for v in values if v is not None]

    def runs_file(self) -> None:
        self.reader.file_runs.append(self.index)
        self.reader.writes.append(self.index)

    def writes(self) -> None:
        self.reader.writes.append(self.index)


Handler = Callable[[Call], "str | None"]


def assigns(call: Call, name: str | None, value: str | None = None) -> None:
    call.reader.assigned(name, value)


def run_script(call: Call, script: Word, *, shell: bool) -> None:
    """A shell or an interpreter given a script to run."""
    path = script.value
    if path is None:
        if script.prefix == "/dev/fd/":
            call.undecide("a program runs the output of a process substitution")
        else:
            call.undecide("a program runs a computed file")
        return
    if path in ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"):
        reads_stdin(call, shell=shell)
    elif path.startswith(("/dev/", "/proc/")):
        call.undecide("a program runs what another descriptor holds")
    else:
        call.runs_file()


def reads_stdin(call: Call, *, shell: bool) -> None:
    stdin = call.ctx.stdin
    if stdin in ("none", "null"):
        return
    if stdin == "file":
        call.runs_file()
    elif stdin == "text" and shell:
        call.line(call.ctx.text, Ctx(call.ctx.inputs, "unknown"))
    elif stdin == "text":
        call.undecide("a program reads code of its own language from its stdin")
    else:
        call.undecide("a program reads its commands from a pipe or a descriptor")
