"""``car-verify rank``: candidate proposals scored and ranked, best first."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING

from ..base.errors import InputError
from .options import (
    EXIT_FINDINGS,
    EXIT_OK,
    Parser,
    Report,
    Subcommands,
    emit,
    format_option,
    load_json,
    load_proposal,
    load_tools,
    proposal_argument,
    run_profile,
    tools_option,
)

if TYPE_CHECKING:
    from ..base.values import JSONValue


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "rank",
        parents=[profiled],
        help="score and rank candidate proposals, best first (exit 1 when none is valid)",
    )
    proposal_argument(p, many=True)
    tools_option(p)
    p.add_argument(
        "--cost-weight",
        type=_weight,
        metavar="W",
        help="the weight of cost against validity, in [0, 1] (default 0.2)",
    )
    format_option(p)
    p.set_defaults(run=cmd_rank)


def _weight(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}")
    return value


def cmd_rank(args: argparse.Namespace) -> int:
    from ..deciders.ranking import rank_proposals
    from .sources import YAML_SUFFIXES

    profile = run_profile(args)
    docs: list[JSONValue] = []
    for name in args.proposals:
        # A JSON file is ranked as its document: whether it gives a timestamp counts
        # in its tokens (the runtime's clock writes a longer one than car-verify's).
        yaml = name.lower().endswith(YAML_SUFFIXES)
        docs.append(load_proposal(name) if yaml else load_json(name, dict, "proposal"))
    registry = load_tools(args.tools)
    names = None if registry is None else list(registry)  # the runtime ranks by names
    try:
        ranked = rank_proposals(docs, names, args.cost_weight, profile=profile)
    except InputError as err:  # named by the candidate's index: name its file instead
        if err.source or not err.path or not isinstance(err.path[0], int):
            raise
        raise InputError(err.problem, err.path[1:], source=args.proposals[err.path[0]]) from None

    def text() -> str:
        header = ("rank", "score", "validity", "cost", "errors", "warnings", "tokens", "proposal")
        rows = [
            (
                str(n),
                f"{s.score:.4f}",
                f"{s.validity:.2f}",
                f"{s.cost_efficiency:.4f}",
                str(s.error_count),
                str(s.warning_count),
                str(s.token_estimate),
                args.proposals[s.index],
            )
            for n, s in enumerate(ranked, 1)
        ]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        out = [
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n"
            for row in [header, *rows]
        ]
        best = f"best: {args.proposals[ranked[0].index]}" if ranked[0].valid else "none is valid"
        out.append(f"{best} (profile {profile})\n")
        return "".join(out)

    doc = {
        "profile": profile,
        "ranked": [{**s.to_dict(), "file": args.proposals[s.index]} for s in ranked],
    }
    emit(args, Report.of(doc, text))
    return EXIT_OK if ranked[0].valid else EXIT_FINDINGS
