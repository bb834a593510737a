"""``car-verify simulate``: print the end state the executor would leave.

Exit 0 when every action runs, 1 when one is blocked or not walked (its effects
are not in the end state, as ``verify`` exits 1 on the plan), 2 on bad input."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from .options import (
    EXIT_FINDINGS,
    EXIT_OK,
    Parser,
    Report,
    Subcommands,
    emit,
    format_option,
    load_proposal,
    load_state,
    proposal_argument,
    run_profile,
    state_option,
)

if TYPE_CHECKING:
    from ..base.values import JSONValue


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "simulate",
        parents=[profiled],
        help="print the end state the executor would leave (exit 1 when an action is blocked)",
    )
    proposal_argument(p)
    state_option(p)
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--trace", action="store_true", help="print state and per-action trace as JSON"
    )
    group.add_argument("--explain", action="store_true", help="print the trace as readable text")
    format_option(
        p,
        ("json", "text"),
        "json",
        "json: the end state (the default; with --trace, the trace too); "
        "text: the trace as readable text (as --explain)",
    )
    p.set_defaults(run=cmd_simulate)


def cmd_simulate(args: argparse.Namespace) -> int:
    from ..api import simulate

    sim = simulate(
        load_proposal(args.proposal),
        initial_state=load_state(args.state),
        profile=run_profile(args),
    )
    doc: JSONValue
    if args.trace:
        doc = {
            "state": sim.to_dict(),
            "trace": sim.trace_dicts(),
            "unwalked": sim.unwalked,
            "profile": sim.profile,
        }
    else:
        doc = sim.to_dict()
    if args.explain:  # --format text under its older name, whatever --format says
        args.format = "text"
    emit(args, Report.of(doc, lambda: f"{sim.explain()}\n(profile {sim.profile})\n"))
    left_out = [*sim.blocked, *sim.unwalked]
    if not left_out:
        return EXIT_OK
    from ..base.values import listed, plural

    total = plural(len(sim.trace) + len(sim.unwalked), "action")
    what = [f"{len(sim.blocked)} of {total} blocked"] if sim.blocked else []
    if sim.unwalked:
        what.append(f"{len(sim.unwalked)} not walked (on or after a dependency cycle)")
    sys.stderr.write(
        f"car-verify: {'; '.join(what)} ({listed(left_out)}): the end state leaves out "
        "their effects (--explain says why)\n"
    )
    return EXIT_FINDINGS
