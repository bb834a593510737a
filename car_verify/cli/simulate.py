"""``car-verify simulate``: print the end state the executor would leave."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ._common import (
    EXIT_OK,
    _load_proposal,
    _load_state,
    _profile,
    _write,
    format_option,
    proposal_argument,
    state_option,
)


def add(sub: Any, profiled: Any) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "simulate", parents=[profiled], help="print the end state the executor would leave"
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
        _load_proposal(args.proposal),
        initial_state=_load_state(args.state),
        profile=_profile(args),
    )
    if args.explain or args.format == "text":
        _write(f"{sim.explain()}\n(profile {sim.profile})\n")
    elif args.trace:
        doc = {
            "state": sim.to_dict(),
            "trace": sim.trace_dicts(),
            "unwalked": sim.unwalked,
            "profile": sim.profile,
        }
        _write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    else:
        _write(json.dumps(sim.to_dict(), indent=2, ensure_ascii=False) + "\n")
    return EXIT_OK
