"""``car-verify equivalent``: do two proposals leave the same state?"""

from __future__ import annotations

import argparse
from typing import Any

from ..base.errors import InputError
from ._common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_UNKNOWN,
    _first_line_names_profile,
    _load_proposal,
    _profile,
    _read_file,
    _timeout_ms,
    _timeout_option,
    _write,
    format_option,
)


def add(sub: Any, profiled: Any) -> None:
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
    p.add_argument(
        "--method",
        choices=("auto", "sampled", "z3"),
        default="auto",
        help="auto (default): z3 where it can model the plans, else sampled, which is "
        "then unknown (exit 3) when the probes agree; sampled: the probes only (no "
        "difference found exits 0, tier sampled: not a proof); z3: decide",
    )
    _timeout_option(p)
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_equivalent)


def _load_states(name: str | None) -> list[dict[str, Any]] | None:
    if name is None:
        return None
    from ..ir._codec import expected

    data = _read_file(name, list, "states")
    for index, state in enumerate(data):
        if not isinstance(state, dict):
            raise InputError(expected("an object", state).problem, [index], source=name)
    if not data:
        raise InputError("the states file must hold at least one state", source=name)
    return list(data)


def cmd_equivalent(args: argparse.Namespace) -> int:
    from ..deciders.equivalence import equivalent

    result = equivalent(
        _load_proposal(args.a, "first proposal"),
        _load_proposal(args.b, "second proposal"),
        _load_states(args.states),
        method=args.method,
        timeout_ms=_timeout_ms(args),
        profile=_profile(args),
        probe_constants=True,
    )
    if args.format == "json":
        _write(result.to_json() + "\n")
    else:
        _write(_first_line_names_profile(result.explain(), result.profile) + "\n")
    if result.equivalent is None:
        return EXIT_UNKNOWN
    return EXIT_OK if result.equivalent else EXIT_FINDINGS
