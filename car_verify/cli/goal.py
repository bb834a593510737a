"""``car-verify goal``: evaluate a goal condition on gathered inputs."""

from __future__ import annotations

import argparse

from .options import (
    EXIT_FINDINGS,
    EXIT_OK,
    Parser,
    Report,
    Subcommands,
    emit,
    format_option,
    load_json,
    named_inputs,
    run_profile,
)


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "goal", parents=[profiled], help="evaluate a goal condition on gathered inputs"
    )
    p.add_argument("request", metavar="REQUEST.json", help="{condition, inputs}, or - for stdin")
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_goal)


def cmd_goal(args: argparse.Namespace) -> int:
    from ..plan.claims import evaluate_goal

    with named_inputs({"request": args.request}):
        verdict = evaluate_goal(
            load_json(args.request, dict, "goal request"), profile=run_profile(args)
        )

    def text() -> str:
        grounded = "" if verdict.grounded else " (ungrounded: it rests on a model judge)"
        met = "met" if verdict.met else "not met"
        return f"{met}{grounded}: {verdict.reason} (profile {run_profile(args)})\n"

    emit(args, Report.of(verdict.to_dict(), text))
    return EXIT_OK if verdict.met else EXIT_FINDINGS
