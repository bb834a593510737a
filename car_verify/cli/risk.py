"""``car-verify risk``: how likely the plan reaches its goal when tools fail."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .options import (
    EXIT_OK,
    Parser,
    Report,
    Subcommands,
    emit,
    format_option,
    load_json,
    load_proposal,
    load_state,
    method_option,
    named_inputs,
    non_negative,
    note,
    positive,
    proposal_argument,
    rates_option,
    renamed_option,
    run_profile,
    state_option,
    with_profile,
)

if TYPE_CHECKING:
    from ..base.values import JSONValue


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "risk", parents=[profiled], help="how likely the plan reaches its goal when tools fail"
    )
    proposal_argument(p)
    state_option(p)
    rates_option(
        p,
        "tool name -> success rate in [0, 1] (Python: rates=, or the runtime's "
        "tool_success_rates=)",
    )
    p.add_argument(
        "--history",
        metavar="PATH",
        action="append",
        help="event logs (run --events) and ProposalResult files with the proposals they "
        "ran (files, or folders of *.jsonl / *.json): each tool's rate "
        "(succeeded+1)/(dispatched+2); --rates wins per tool (repeatable)",
    )
    p.add_argument("--goal", metavar="GOAL.json", help="a GoalCondition (state_predicate, ...)")
    p.add_argument(
        "--risk-config",
        metavar="CONFIG.json",
        help="{trials, seed, default_success_rate, retry_attempts} (Python: config=); "
        "the flags below win over it",
    )
    renamed_option(
        p, "--config", "--risk-config", "risk_config", "--config names lint's configuration file"
    )
    p.add_argument("--trials", type=positive, metavar="N", help="sampled trials (1000)")
    p.add_argument("--seed", type=non_negative, metavar="N", help="the sampling seed")
    p.add_argument("--default-rate", type=float, metavar="P", help="rate of an unlisted tool")
    p.add_argument("--retries", type=non_negative, metavar="N", help="retry attempts per call")
    method_option(
        p,
        ("auto", "exact", "sampled"),
        "auto (default): exact when it fits its budget, else sampled (and said)",
    )
    p.add_argument(
        "--sensitivity",
        action="store_true",
        help="exact d p(goal) / d rate per tool (two exact passes per tool call)",
    )
    p.add_argument(
        "--failure-behavior",
        action="store_true",
        help="model each action's failure_behavior (abort stops the run, retry draws "
        "again up to max_retries, skip goes on); the runtime does not",
    )
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_risk)


def cmd_risk(args: argparse.Namespace) -> int:
    from ..base.values import plural
    from ..plan.risk import risk

    config: dict[str, JSONValue] = {}
    if args.risk_config is not None:
        config.update(load_json(args.risk_config, dict, "config"))
    for key, value in (
        ("trials", args.trials),
        ("seed", args.seed),
        ("default_success_rate", args.default_rate),
        ("retry_attempts", args.retries),
    ):
        if value is not None:
            config[key] = value
    history = None
    if args.history:
        from ..plan.risk import rates_from_history

        history = rates_from_history(args.history)
        for said in history.notes:
            note(args, said)
        note(
            args,
            f"history: {plural(len(history.files), 'file')}, "
            f"{plural(len(history.dispatched), 'tool')}",
        )
    from ..base.progress import progress

    trials = config.get("trials", 1000)
    with (
        progress(trials if isinstance(trials, int) else None, "risk", "trials") as bar,
        named_inputs(
            {"goal": args.goal, "tool_success_rates": args.rates, "config": args.risk_config}
        ),
    ):
        result = risk(
            load_proposal(args.proposal),
            load_state(args.state),
            None if args.rates is None else load_json(args.rates, dict, "rates"),
            None if args.goal is None else load_json(args.goal, dict, "goal"),
            config,
            method=args.method,
            profile=run_profile(args),
            history=history,
            sensitivity=args.sensitivity,
            failure_behavior=args.failure_behavior,
            progress=bar,
        )
    profile = run_profile(args)
    emit(args, Report.of(result.to_dict(), lambda: with_profile(result.explain(), profile) + "\n"))
    return EXIT_OK
