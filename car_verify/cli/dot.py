"""``car-verify dot``: draw the DAG: levels, edges, conflicts, findings."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..base.errors import InputError
from .options import (
    EXIT_OK,
    Parser,
    Subcommands,
    load_json,
    load_proposal,
    load_state,
    load_tools,
    note,
    output_option,
    policies_for,
    policies_option,
    positive,
    proposal_argument,
    rates_option,
    run_profile,
    state_option,
    tools_option,
    write,
)

if TYPE_CHECKING:
    from ..base.values import JSONObject
    from ..ir.model import ProposalResult


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "dot", parents=[profiled], help="draw the DAG: levels, edges, conflicts, findings"
    )
    proposal_argument(p)
    state_option(p)
    tools_option(p)
    p.add_argument(
        "--result",
        metavar="RESULT.json",
        help="a ProposalResult, or `run --format json`'s report: colour by status "
        "(compensated after a rollback)",
    )
    p.add_argument(
        "--max-nodes",
        metavar="N",
        type=positive,
        default=250,
        help="past N actions, summarise: levels in bands, actions with findings first "
        "(default 250)",
    )
    p.add_argument(
        "--max-edges",
        metavar="N",
        type=positive,
        default=None,
        help="with -o OUT.svg/.png/.pdf: refuse, before layout, a picture of more than N "
        "edges (default 600; Graphviz takes minutes past it)",
    )
    p.add_argument(
        "--risk",
        action="store_true",
        help="colour by each action's chance that its effects land (car-verify risk)",
    )
    rates_option(p, "tool success rates for --risk (implies it)")
    output_option(p, "OUT", "OUT.dot, OUT.svg or OUT.png (default: DOT on stdout)")
    policies_option(p)
    p.set_defaults(run=cmd_dot)


def cmd_dot(args: argparse.Namespace) -> int:
    from ..base.errors import TooLarge
    from ..base.progress import progress
    from ..ir.model import ProposalResult
    from ..reporters.dot import MAX_LAYOUT_EDGES, LayoutFailed, to_dot
    from ..reporters.dot import write as draw

    execution: ProposalResult | JSONObject | None = None
    if args.result is not None:
        data = load_json(args.result, dict, "result")
        try:  # a run report is a ProposalResult with more keys
            execution = ProposalResult.from_dict(data)
        except InputError as err:
            raise err.with_source(args.result) from None
        if isinstance(data.get("statuses"), dict):  # `run --format json`: `compensated` kept
            execution = data
    proposal = load_proposal(args.proposal)
    tools, state = load_tools(args.tools), load_state(args.state)
    policies = policies_for(args, args.proposal)
    risked = None
    if args.risk or args.rates:
        from ..plan.risk import risk

        rates = None if args.rates is None else load_json(args.rates, dict, "rates")
        risked = risk(proposal, state, rates, profile=run_profile(args))
    drawn = args.max_nodes
    with progress(4, "dot", "steps", show=None if len(proposal.actions) > 200 else False) as bar:
        while True:
            graph = to_dot(
                proposal,
                tools=tools,
                initial_state=state,
                execution=execution,
                profile=run_profile(args),
                policies=policies,
                max_nodes=drawn,
                progress=bar,
                risk=risked,
            )
            bar.note("render")
            if args.output is None:
                write(graph.to_string())
                break
            try:
                draw(graph, args.output, max_edges=args.max_edges or MAX_LAYOUT_EDGES)
                break
            except (TooLarge, LayoutFailed) as err:  # a coarser summary that draws
                coarser = _coarser(drawn, len(proposal.actions))
                if coarser is None:
                    raise
                note(args, f"dot: {_one_line(str(err))}; drawing {coarser} actions instead")
                drawn = coarser
        bar.update()
    if len(proposal.actions) > drawn:
        bound = f"more than --max-nodes {drawn}" if drawn == args.max_nodes else f"{drawn} drawn"
        note(
            args,
            f"dot: {len(proposal.actions):,} actions, {bound}: "
            "the picture is summarised (actions with findings first; the title says how)",
        )
    return EXIT_OK


#: The fewest actions a summary that Graphviz could not draw falls back to.
FEWEST_DRAWN = 30


def _coarser(drawn: int, actions: int) -> int | None:
    """The next summary to try when Graphviz cannot draw (or is not allowed to draw)
    ``drawn`` actions of ``actions``: half as many, down to :data:`FEWEST_DRAWN`;
    None when there is no smaller picture to draw."""
    shown = min(drawn, actions)
    if shown <= FEWEST_DRAWN:
        return None
    return max(FEWEST_DRAWN, shown // 2)


def _one_line(text: str) -> str:
    return " ".join(text.split()).split(": write a .dot file")[0].split(": draw fewer")[0]
