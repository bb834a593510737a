"""The ``car-verify`` executable: ``car-verify hook`` goes straight to
:func:`car_verify.hook.main` (it runs once per tool call of a coding agent, and the
full command line costs it about 90 ms of imports and parser); everything else to
:func:`car_verify.cli.main`."""

from __future__ import annotations

import sys


def main() -> int:
    argv = sys.argv[1:]
    if argv[:1] == ["hook"]:
        from .hook import main as hook

        return hook(argv[1:])
    from .cli import main as cli

    return cli(argv)
