"""``car-verify goal``: evaluate a goal condition on gathered inputs."""

from __future__ import annotations

import argparse
from typing import Any

from ._common import (
    EXIT_FINDINGS,
    EXIT_OK,
    _named_inputs,
    _profile,
    _read_file,
    _write,
    emit,
    format_option,
)


def add(sub: Any, profiled: Any) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "goal", parents=[profiled], help="evaluate a goal condition on gathered inputs"
    )
    p.add_argument("request", metavar="REQUEST.json", help="{condition, inputs}, or - for stdin")
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_goal)


def cmd_goal(args: argparse.Namespace) -> int:
    from ..plan.claims import evaluate_goal

    with _named_inputs({"request": args.request}):
        verdict = evaluate_goal(
            _read_file(args.request, dict, "goal request"), profile=_profile(args)
        )

    def text() -> None:
        grounded = "" if verdict.grounded else " (ungrounded: it rests on a model judge)"
        met = "met" if verdict.met else "not met"
        _write(f"{met}{grounded}: {verdict.reason} (profile {_profile(args)})\n")

    emit(args, verdict.to_dict(), text)
    return EXIT_OK if verdict.met else EXIT_FINDINGS
