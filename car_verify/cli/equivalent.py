"""``car-verify equivalent``: do two proposals leave the same state?"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..base.errors import InputError
from .options import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_UNKNOWN,
    Parser,
    Report,
    Subcommands,
    emit,
    format_option,
    load_json,
    load_proposal,
    method_option,
    run_profile,
    timeout_ms,
    timeout_option,
    with_profile,
)

if TYPE_CHECKING:
    from ..base.values import JSONObject


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "equivalent", parents=[profiled], help="do two proposals leave the same state?"
    )
    p.add_argument("a", metavar="A", help="first proposal (or -)")
    p.add_argument("b", metavar="B", help="second proposal")
    p.add_argument(
        "--states",
        metavar="STATES.json",
        help='probe states (sampled method; default: {} and {"x": 1, "y": 2}, and '
        "states built from the constants the plans name)",
    )
    method_option(
        p,
        ("auto", "sampled", "z3"),
        "auto (default): z3 where it can model the plans, else sampled, which is "
        "then unknown (exit 3) when the probes agree; sampled: the probes only (a "
        "difference exits 1; none found is undecided, exit 3: not a proof); z3: decide",
    )
    timeout_option(p)
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_equivalent)


def _load_states(name: str | None) -> list[JSONObject] | None:
    if name is None:
        return None
    from ..ir._codec import expected

    data = load_json(name, list, "states")
    for index, state in enumerate(data):
        if not isinstance(state, dict):
            raise InputError(expected("an object", state).problem, [index], source=name)
    if not data:
        raise InputError("the states file must hold at least one state", source=name)
    return list(data)


def cmd_equivalent(args: argparse.Namespace) -> int:
    from ..deciders.equivalence import equivalent

    result = equivalent(
        load_proposal(args.a, "first proposal"),
        load_proposal(args.b, "second proposal"),
        _load_states(args.states),
        method=args.method,
        timeout_ms=timeout_ms(args),
        profile=run_profile(args),
    )
    profile = run_profile(args)  # the profile whose walks were compared
    emit(args, Report.of(result.to_dict(), lambda: with_profile(result.explain(), profile) + "\n"))
    if result.equivalent is None:
        return EXIT_UNKNOWN
    return EXIT_OK if result.equivalent else EXIT_FINDINGS
