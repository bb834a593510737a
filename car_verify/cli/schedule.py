"""``car-verify schedule``: a static execution DAG's critical path, makespan,
parallelism and levels; or a proposal's own DAG as one, under the profile."""

from __future__ import annotations

import argparse

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
    run_profile,
)


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "schedule",
        parents=[profiled],
        help="critical path, makespan, parallelism and levels of a schedule graph or a "
        "proposal's DAG (exit 1 when serial or cyclic)",
    )
    p.add_argument(
        "input",
        metavar="GRAPH.json",
        help="a schedule graph {units: [{id, duration?, depends_on?}]}, or a proposal "
        "(its DAG under the profile, each action lasting its timeout_ms, else 1), or -",
    )
    format_option(p)
    p.set_defaults(run=cmd_schedule)


def cmd_schedule(args: argparse.Namespace) -> int:
    from ..plan.schedule_analysis import analyze_schedule, schedule_of

    doc = load_json(args.input, dict, "schedule graph or proposal")
    try:
        graph = schedule_of(doc, profile=run_profile(args)) if "actions" in doc else doc
        result = analyze_schedule(graph)
    except InputError as err:  # about the file's content: it names the file
        if err.source:
            raise
        raise err.with_source("<stdin>" if args.input == "-" else args.input) from None

    def text() -> str:
        path = " -> ".join(result.critical_path) or "(none: nothing takes time)"
        out = [f"critical path: {path} (makespan {result.makespan})\n"]
        out += [f"level {n}: {', '.join(level)}\n" for n, level in enumerate(result.levels)]
        if result.cyclic:
            out.append(f"on or after a cycle, not scheduled: {', '.join(result.cyclic)}\n")
        shape = "serial: one unit ready at a time" if result.serial else "parallel"
        out.append(
            f"{shape}; at most {result.max_parallelism} at once"
            f"{'; it has a cycle' if result.has_cycle else ''} (profile {run_profile(args)})\n"
        )
        return "".join(out)

    emit(args, Report.of(result.to_dict(extras=True), text))
    return EXIT_FINDINGS if result.serial or result.has_cycle else EXIT_OK
