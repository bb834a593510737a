"""The command line: ``car-verify COMMAND``, one module per command.

Each module of this package declares its command (``add``: its parser, on the
shared declarations of :mod:`car_verify.cli.options`) and runs it; ``COMMANDS``
lists them in the order ``--help`` shows. Three modules here are not commands but
serve them: :mod:`.sources` (the input files a command reads), :mod:`.docgen`
(the generated reference: ``codes``, docs/cli.md) and :mod:`.mcp_server` (what
``car-verify mcp`` serves). ``main(argv) -> int`` never raises:
bad input or usage prints one line on stderr and returns 2 with nothing on
stdout. Set ``CAR_VERIFY_DEBUG=1`` to see the traceback of an internal error.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ..base.errors import TOO_DEEP, CarVerifyError, InputError, UsageError, is_too_deep, too_deep
from . import (
    audit,
    check_plan,
    codes,
    concurrency,
    dot,
    equivalent,
    flow,
    goal,
    hook,
    intent,
    lint,
    mcp,
    optimize,
    passes,
    permissions,
    policy,
    rank,
    receipts,
    risk,
    run,
    schedule,
    schema,
    simulate,
    txcheck,
    verify,
    workflow,
    wp,
)
from .options import EXIT_OK, EXIT_USAGE, ArgumentError, Parser, profile_option, reported

__all__ = ["main"]

#: The commands, in the order ``--help`` lists them: each module declares its own.
COMMANDS = (
    verify,
    simulate,
    equivalent,
    risk,
    workflow,
    check_plan,
    goal,
    receipts,
    concurrency,
    intent,
    flow,
    audit,
    permissions,
    optimize,
    rank,
    wp,
    schedule,
    txcheck,
    policy,
    hook,
    mcp,
    run,
    dot,
    lint,
    codes,
    schema,
    passes,
)


def _parser() -> Parser:
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
    for command in COMMANDS:
        command.add(sub, profiled)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    args: argparse.Namespace | None = None
    from .sources import reset_stdin

    reset_stdin()
    try:
        parser = _parser()
        args = parser.parse_args(argv)
        args._parser = parser  # for a command that reads the declarations (mcp)
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
