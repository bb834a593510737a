"""``car-verify hook``: a coding agent's hook (Claude Code, Codex).

The executable routes ``car-verify hook`` to :mod:`car_verify.hook` without
loading the command line; this declaration serves ``--help`` and :func:`main`."""

from __future__ import annotations

import argparse

from .options import Parser, Subcommands


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "hook",
        help="a coding agent's hook (Claude Code, Codex): the policies and trace rules "
        "before each tool call, its outcome after it",
    )
    from ..hook import add_arguments as add_hook_arguments

    add_hook_arguments(p)
    p.set_defaults(run=cmd_hook)


def cmd_hook(args: argparse.Namespace) -> int:
    """One hook call: a payload on stdin, the answer on stdout, warnings on stderr."""
    from ..hook import run

    return run(args)
