"""``car-verify risk``: how likely the plan reaches its goal when tools fail."""

from __future__ import annotations

import argparse
from typing import Any

from ._common import (
    EXIT_OK,
    _first_line_names_profile,
    _load_proposal,
    _load_state,
    _named_inputs,
    _non_negative,
    _note,
    _positive,
    _profile,
    _read_file,
    _write,
    format_option,
    proposal_argument,
    state_option,
)


def add(sub: Any, profiled: Any) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "risk", parents=[profiled], help="how likely the plan reaches its goal when tools fail"
    )
    proposal_argument(p)
    state_option(p)
    p.add_argument(
        "--rates",
        metavar="RATES.json",
        help="tool name -> success rate in [0, 1] (Python: rates=, or the runtime's "
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
    p.add_argument("--config", metavar="CONFIG.json", help="{trials, seed, ...}")
    p.add_argument("--trials", type=_positive, metavar="N", help="sampled trials (1000)")
    p.add_argument("--seed", type=_non_negative, metavar="N", help="the sampling seed")
    p.add_argument("--default-rate", type=float, metavar="P", help="rate of an unlisted tool")
    p.add_argument("--retries", type=_non_negative, metavar="N", help="retry attempts per call")
    p.add_argument(
        "--method",
        choices=("auto", "exact", "sampled"),
        default="auto",
        help="auto (default): exact when it fits its budget, else sampled (and said)",
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
    from ..plan.risk import risk

    config: dict[str, Any] = {}
    if args.config is not None:
        config.update(_read_file(args.config, dict, "config"))
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
        for note in history.notes:
            _note(args, note)
        _note(args, f"history: {len(history.files)} files, {len(history.dispatched)} tools")
    from ..base.progress import progress

    trials = config.get("trials", 1000)
    with (
        progress(trials if isinstance(trials, int) else None, "risk", "trials") as bar,
        _named_inputs({"goal": args.goal, "tool_success_rates": args.rates, "config": args.config}),
    ):
        result = risk(
            _load_proposal(args.proposal),
            _load_state(args.state),
            None if args.rates is None else _read_file(args.rates, dict, "rates"),
            None if args.goal is None else _read_file(args.goal, dict, "goal"),
            config,
            method=args.method,
            profile=_profile(args),
            history=history,
            sensitivity=args.sensitivity,
            failure_behavior=args.failure_behavior,
            progress=bar,
        )
    if args.format == "json":
        _write(result.to_json() + "\n")
    else:
        _write(_first_line_names_profile(result.explain(), _profile(args)) + "\n")
    return EXIT_OK
