"""The command line: ``car-verify COMMAND``, one module per command.

Each module of this package declares its command (``add``: its parser, on the
shared declarations of :mod:`car_verify.cli.options`) and runs it; ``COMMANDS``
names them in the order ``--help`` shows, and a command line loads and declares
only the command it runs. Three modules here are not commands but
serve them: :mod:`.sources` (the input files a command reads), :mod:`.docgen`
(the generated reference: ``codes``, docs/cli.md) and :mod:`.mcp_server` (what
``car-verify mcp`` serves). ``main(argv) -> int`` never raises:
bad input or usage prints one line on stderr and returns 2 with nothing on
stdout. Set ``CAR_VERIFY_DEBUG=1`` to see the traceback of an internal error.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from ..base.errors import TOO_DEEP, CarVerifyError, InputError, UsageError, is_too_deep, too_deep
from .options import EXIT_OK, EXIT_USAGE, ArgumentError, Parser, profile_option, reported

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["main"]

#: The commands, in the order ``--help`` lists them, and the module of this package
#: that declares each (its ``add``) and runs it.
COMMANDS: Mapping[str, str] = MappingProxyType(
    {
        "verify": "verify",
        "simulate": "simulate",
        "equivalent": "equivalent",
        "risk": "risk",
        "workflow": "workflow",
        "check-plan": "check_plan",
        "goal": "goal",
        "receipts": "receipts",
        "concurrency": "concurrency",
        "intent": "intent",
        "flow": "flow",
        "audit": "audit",
        "permissions": "permissions",
        "optimize": "optimize",
        "rank": "rank",
        "wp": "wp",
        "schedule": "schedule",
        "txcheck": "txcheck",
        "policy": "policy",
        "hook": "hook",
        "mcp": "mcp",
        "run": "run",
        "dot": "dot",
        "lint": "lint",
        "codes": "codes",
        "schema": "schema",
        "passes": "passes",
    }
)


def _module(command: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{COMMANDS[command]}")


def _parser(command: str | None = None) -> Parser:
    """The command line's parser. Without ``command``, every command declared by
    its module: the plain reading (``--help``, docs/cli.md and the MCP server's
    tool descriptions read it). With ``command``, that one command declared and
    the others named only, so that they are choices and nothing more
    (:func:`_parser_for`)."""
    parser = Parser(
        prog="car-verify",
        description="Check Agent IR action proposals before they run.",
    )
    from .._version import __version__

    parser.add_argument("--version", action="version", version=f"car-verify {__version__}")
    profiled = Parser(add_help=False)
    profile_option(profiled)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for name in COMMANDS:
        if command is None or name == command:
            _module(name).add(sub, profiled)
        else:
            sub.add_parser(name, add_help=False)
    return parser


def _parser_for(argv: Sequence[str]) -> Parser:
    """The parser a command line needs: the command it names declared, the other 26
    not (a pre-commit hook starts the command line on every commit, and declaring
    every command cost more than a small command's work); the whole parser when it
    asks for the top-level help. A command line parses the same with either
    (tests/test_cli_options.py holds them to it)."""
    first = argv[0] if argv else ""
    if first == "-h" or (len(first) > 2 and "--help".startswith(first)):
        return _parser()
    return _parser(first if first in COMMANDS else "")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    args: argparse.Namespace | None = None
    try:
        given = sys.argv[1:] if argv is None else list(argv)
        args = _parser_for(given).parse_args(given)
        from .sources import reset_stdin  # (after --version and --help: they read no input)

        reset_stdin()
        run: Callable[[argparse.Namespace], int] = args.run
        target = getattr(args, "output_file", None)
        if target is None:
            return reported(args, run(args))
        captured = io.StringIO()
        with contextlib.redirect_stdout(captured):
            code = run(args)
        try:  # only a finished report is written: never half of one
            Path(target).write_text(captured.getvalue(), encoding="utf-8")
        except OSError as err:
            raise UsageError(f"--output-file: {target}: {err.strerror or err}") from None
        return reported(args, code)
    except SystemExit as exit_:  # --help / --version
        return int(exit_.code or 0)
    except CarVerifyError as err:
        if isinstance(err, InputError) and is_too_deep(err) and args is not None:
            err = _locate_deep(args) or err
        elif isinstance(err, InputError) and not err.source and args is not None:
            with contextlib.suppress(Exception):  # a nicety: never a traceback for it
                err = _placed(args, err) or err
        sys.stderr.write(f"car-verify: error: {_one_line(str(err))}\n")
        if isinstance(err, ArgumentError):  # as ruff and mypy do: the usage, a hint
            sys.stderr.write(f"{err.usage}\n{err.hint}\n")
        return EXIT_USAGE
    except RecursionError:  # what the API entry points report as TOO_DEEP, elsewhere
        found = None if args is None else _locate_deep(args)
        sys.stderr.write(f"car-verify: error: {found or TOO_DEEP}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("car-verify: interrupted\n")
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as err:  # never a traceback for users
        if isinstance(err, OSError) and err.filename is not None:
            # A file the user named that cannot be written (an output, the event log).
            sys.stderr.write(f"car-verify: error: {err.filename}: {err.strerror or err}\n")
            return EXIT_USAGE
        if os.environ.get("CAR_VERIFY_DEBUG"):
            raise
        sys.stderr.write(
            f"car-verify: internal error: {type(err).__name__}: {_one_line(str(err))}\n"
        )
        return EXIT_USAGE


def _one_line(text: str) -> str:
    from ..reporters.text import one_line  # only when there is an error to say

    return one_line(text)


#: The attributes that hold a command's main input file, by the commands' names.
_INPUTS = ("proposal", "request", "input", "graph", "a", "b", "proposals")


def _placed(args: argparse.Namespace, err: InputError) -> InputError | None:
    """An input error that names no file (``actions[1].type: unknown action type``,
    ``condition.kind: unknown goal kind``, found after the file was read): the one
    input file whose document holds the error's path, with the line and column of
    the deepest part of the path found there. None when no single file holds it."""
    from ..base.errors import json_pointer
    from ..base.locate import json_positions
    from ..ir.model import read_json, read_text_file

    if not err.path:
        return None
    names: list[str] = []
    for attr in _INPUTS:
        value = getattr(args, attr, None)
        names.extend(v for v in (value if isinstance(value, list) else [value]) if v)
    holding = []
    for name in dict.fromkeys(names):
        if name == "-" or not isinstance(name, str) or not os.path.isfile(name):
            continue
        try:
            doc: object = read_json(Path(name), name=name)
        except (CarVerifyError, OSError):
            continue
        for key in err.path[:1]:
            inside = isinstance(doc, dict) and key in doc
            inside |= isinstance(doc, list) and isinstance(key, int) and 0 <= key < len(doc)
            if inside:
                holding.append(name)
    if not holding and names == ["-"]:  # the one input was stdin
        return err.with_source("<stdin>")
    if len(holding) != 1:
        return None
    name = holding[0]
    line = column = None
    if not name.lower().endswith((".yaml", ".yml")):
        try:
            positions = json_positions(read_text_file(name), depth=len(err.path))
        except (CarVerifyError, OSError, ValueError):
            positions = {}
        for end in range(len(err.path), 0, -1):  # the deepest part of the path located
            found = positions.get(json_pointer(err.path[:end]))
            if found is not None:
                line, column = found
                break
    return InputError(err.problem, err.path, source=name, line=line, column=column)


def _locate_deep(args: argparse.Namespace) -> InputError | None:
    """:data:`TOO_DEEP`, naming the input file and the place of its deepest value
    (the inputs are read again: this runs only when something was too deep)."""
    from ..base.values import deepest
    from ..ir.model import read_json

    names: list[str] = []
    for attr in ("proposal", "a", "b", "proposals", "state", "tools"):
        value = getattr(args, attr, None)
        names.extend(value if isinstance(value, list) else [value] if value else [])
    worst: tuple[int, str, list[str | int]] | None = None
    for name in names:
        if name == "-":
            continue
        try:
            path, depth = deepest(read_json(Path(name), name=name))
        except (CarVerifyError, OSError):
            continue
        if worst is None or depth > worst[0]:
            worst = (depth, name, path)
    if worst is None:
        return None
    depth, name, path = worst
    return too_deep(path, depth, source=name)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
