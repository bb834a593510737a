"""The program table's dispatch: :func:`run` is called by the walk for every
simple command, after the command is recorded, and hands it to the program's
handler (:mod:`.builtins`, :mod:`.commands`, :mod:`.languages`) or its class in
:mod:`.programs`; a program in no table takes its words as data.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import builtins, commands, languages
from .calls import Call, Handler, Reader, RedirectInfo
from .model import Ctx
from .programs import (
    BUILTINS,
    FOREIGN_SHELLS,
    READ_ONLY,
    RUNS_COMMANDS,
    SHELLS,
    WRAPPERS,
    interpreter,
    names,
)
from .words import Word

__all__ = ["FILE_RUNNERS", "run"]

#: Programs that run what files of the project hold (a Makefile, package.json's
#: scripts, a test suite): not read, but a line that may have written such a file
#: first is undecided.
FILE_RUNNERS = names(
    "make gmake npm yarn pnpm cargo go gradle gradlew mvn ant rake bundle pytest tox nox "
    "just task ninja cmake meson scons bazel composer mix dotnet pip pip3 poetry uv pipenv"
)


def run(
    reader: Reader,
    program: str,
    args: Sequence[Word],
    ctx: Ctx,
    nest: int,
    wrapped: int,
    index: int,
    redirect: RedirectInfo,
) -> str | None:
    """Read what ``program`` runs, by the table (see :mod:`.programs`)."""
    if (
        program not in _TABLED
        and program[:1] not in _VERSIONED_STARTS
        and not program.startswith("git-")
    ):  # any other program: its words are data
        if program not in READ_ONLY:
            reader.writes.append(index)
        return None
    call = Call(reader, program, args, ctx, nest, wrapped, index, redirect)
    handler = _HANDLERS.get(program)
    if handler is not None:
        return handler(call)
    if program in WRAPPERS:
        return commands.wrapper(call)
    if program in BUILTINS:
        call.undecide("a shell builtin the reader does not read")
        return None
    if program in SHELLS:
        commands.shell(call)
        return None
    if program in FOREIGN_SHELLS:
        commands.foreign_shell(call)
        return None
    found = interpreter(program)
    if found is not None:
        languages.interpret(call, found)
        return None
    if program in RUNS_COMMANDS:
        call.undecide("a program that runs a command of its own the reader does not read")
        return None
    if program.startswith("git-"):
        call.undecide("one of git's subcommand programs", "git")
    if program in FILE_RUNNERS:
        call.runs_file()
    elif program not in READ_ONLY:
        call.writes()
    return None


_HANDLERS: dict[str, Handler] = {**builtins.HANDLERS, **commands.HANDLERS, **languages.HANDLERS}
#: Every name in a table (any other program takes its words as data), and the
#: first letters of the versioned interpreters' names (python3.12, luajit, nodejs).
_TABLED = frozenset(
    [*_HANDLERS, *WRAPPERS, *BUILTINS, *SHELLS, *FOREIGN_SHELLS, *RUNS_COMMANDS, *FILE_RUNNERS]
)
_VERSIONED_STARTS = frozenset("prlntw")
