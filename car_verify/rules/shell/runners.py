"""The program table's dispatch: :func:`run` is called by the walk for every
simple command, after the command is recorded, and hands it to the program's
handler (:mod:`.builtins`, :mod:`.commands`, :mod:`.languages`) or its class in
:mod:`.programs`; a program known to take data (:data:`~.programs.DATA`) takes
its words as data, and one in no table is read by :mod:`.unknown` (its words may
name the program it runs).
"""

from __future__ import annotations

from collections.abc import Sequence

from . import builtins, commands, languages
from .calls import Call, Handler, Reader, RedirectInfo
from .model import Ctx
from .programs import (
    BUILTINS,
    DATA,
    FOREIGN_SHELLS,
    READ_ONLY,
    RUNS_COMMANDS,
    SHELLS,
    WRAPPERS,
    family,
    interpreter,
    is_loader,
    names,
)
from .unknown import unknown_program
from .words import Word

__all__ = ["FILE_RUNNERS", "run", "runs_code"]

#: Programs that run what files of the project hold (a Makefile, package.json's
#: scripts, a test suite): not read, but a line that may have written such a file
#: first is undecided.
FILE_RUNNERS = names(
    "make gmake npm yarn pnpm cargo go gradle gradlew mvn ant rake bundle pytest tox nox "
    "just task ninja cmake meson scons bazel composer mix dotnet pip pip3 poetry uv pipenv "
    "mypy pylint pyright eslint prettier tsc jest vitest webpack vite rollup alembic flask "
    "django-admin uvicorn gunicorn"
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
    if program in DATA and program not in _TABLED:  # its words are data
        if program not in READ_ONLY:
            reader.writes.append(index)
        return None
    if program not in _TABLED:
        program = family(program)  # vim.basic is vim, rbash is bash
    call = Call(reader, program, args, ctx, nest, wrapped, index, redirect)
    handler = _HANDLERS.get(program)
    if handler is not None:
        return handler(call)
    if is_loader(program):
        return commands.loader(call)
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
        return None
    if program not in READ_ONLY:
        call.writes()
    if program.endswith("sh") and "." not in program and not program.startswith("git-"):
        commands.foreign_shell(call)  # a shell on no list (rbash's kin): its code not read
    if not program.startswith("git-"):
        unknown_program(call, runs_code)  # in no table: its words may name a program
    return None


#: Builtins that are programs too, running the command in their words.
_CODE_BUILTINS = names("command time")
#: Builtins that are no program (a program can run only a program: ``exec`` or
#: ``eval`` named by one runs nothing).
_SHELL_ONLY = names("exec builtin eval source . trap coproc")


def runs_code(program: str) -> bool:
    """Whether ``program`` runs code or commands of its own or given to it (a
    shell, an interpreter, a wrapper, a program the table reads for the command
    it runs): named by a program the reader does not know, any rule may apply."""
    if program in _SHELL_ONLY:
        return False
    if program not in _TABLED and program not in DATA:
        program = family(program)
    if program in WRAPPERS or program in _CODE_BUILTINS:
        return True
    if program in DATA or program in BUILTINS or program in builtins.HANDLERS:
        return False
    return program in _TABLED or interpreter(program) is not None or is_loader(program)


_HANDLERS: dict[str, Handler] = {**builtins.HANDLERS, **commands.HANDLERS, **languages.HANDLERS}
#: Every name in a table but :data:`~.programs.DATA`.
_TABLED = frozenset(
    [*_HANDLERS, *WRAPPERS, *BUILTINS, *SHELLS, *FOREIGN_SHELLS, *RUNS_COMMANDS, *FILE_RUNNERS]
)
