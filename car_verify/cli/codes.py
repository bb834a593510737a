"""``car-verify codes``: list every finding code, or explain one."""

from __future__ import annotations

import argparse
from typing import Any

from ..base.errors import UsageError
from ._common import (
    EXIT_OK,
    _write,
    emit,
    format_option,
)


def add(sub: Any, profiled: Any) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser("codes", parents=[profiled], help="list every finding code, or explain one")
    p.add_argument("code", nargs="?", help="explain this code: what, why, how to fix")
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_codes)


def cmd_codes(args: argparse.Namespace) -> int:
    from ..base.codes import CODES

    if args.code is not None:
        from .docgen import explain_code

        explained = explain_code(args.code)
        if explained is None:
            raise UsageError(f"unknown code {args.code!r}; 'car-verify codes' lists them")
        _write(explained)
        return EXIT_OK
    codes = CODES  # verify's, then lint's own (about files)
    doc = [
        {
            "code": c.name,
            "severity": {"strict": c.column("strict"), "car": c.column("car")},
            "tier": c.tier.value,
            "blocks": c.blocks,
            "summary": c.summary,
        }
        for c in codes.values()
    ]

    def text() -> None:
        width = max(len(c) for c in codes)
        # The two severity columns: under the strict profile, and under car ("-": not
        # reported there); then the evidence tier.
        _write(f"{'code':<{width}}  {'strict':<7}  {'car':<7}  {'tier':<18}  summary\n")
        for c in codes.values():
            severities = f"{c.column('strict'):<7}  {c.column('car'):<7}"
            _write(f"{c.name:<{width}}  {severities}  {c.tier.value:<18}  {c.summary}\n")

    emit(args, doc, text)
    return EXIT_OK
