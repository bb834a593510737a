"""``car-verify audit``: audit a corpus of agent trajectories into Parquet tables of findings."""

from __future__ import annotations

import argparse

from ..base.errors import UsageError
from .options import (
    EXIT_OK,
    Parser,
    Subcommands,
    flow_policy_option,
    labels_option,
    load_json,
    named_inputs,
    no_progress_option,
    note,
    output_option,
    policies_option,
    positive,
    run_profile,
    seconds,
    workers_option,
    write,
)


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "audit",
        parents=[profiled],
        help="audit a corpus of agent trajectories into Parquet tables of findings",
    )
    p.add_argument(
        "sources",
        metavar="SOURCE",
        nargs="+",
        help="files, folders or globs (.json, .jsonl, .gz, .parquet; chat transcripts, "
        "ATIF, tau-bench runs, proposals)",
    )
    output_option(p, "OUT", "the output folder", required=True)
    policies_option(p, "policy directory (rules and trace rules)", lookup=False)
    p.add_argument(
        "--compare-policies",
        metavar="DIR",
        help="replay: which calls replacing --policies with these would newly deny, no "
        "longer deny and still deny (replay.parquet: the rows of policy impact)",
    )
    labels_option(p, "tool labels: the flow checks too")
    flow_policy_option(p, "the flow policy for --labels")
    workers_option(p, "processes (1)", 1)
    p.add_argument(
        "--engine",
        choices=("local", "ray", "dask"),
        default="local",
        help="who runs the shards: a local process pool (default), Ray Data, a Dask bag",
    )
    p.add_argument("--address", metavar="ADDR", help="an existing Ray cluster (--engine ray)")
    p.add_argument("--scheduler", metavar="ADDR", help="an existing Dask scheduler (--engine dask)")
    p.add_argument(
        "--shard-size", type=positive, default=1000, metavar="N", help="trajectories per shard"
    )
    p.add_argument(
        "--budget",
        type=seconds,
        default=10.0,
        metavar="SECONDS",
        help="per trajectory; past it the row says unknown (default 10)",
    )
    p.add_argument(
        "--max-record-size",
        type=_mebibytes,
        metavar="MiB",
        help="one record (a line, a .json document), decompressed; past it the record is "
        "a malformed row (default 64)",
    )
    p.add_argument(
        "--max-file-size",
        type=_mebibytes,
        metavar="MiB",
        help="one compressed file, decompressed; past it the file is cut off, said as a "
        "malformed row (default 512)",
    )
    p.add_argument("--top", type=positive, default=15, metavar="N", help="codes in the summary")
    p.add_argument(
        "--report", metavar="REPORT.html", help="a self-contained HTML report (plots: matplotlib)"
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="start over: drop the shards a previous audit left in OUT (else they are reused)",
    )
    no_progress_option(p)
    p.set_defaults(run=cmd_audit)


def _mebibytes(text: str) -> int:
    """A size in MiB (a positive number, fractions allowed) as bytes."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value * 1024 * 1024 >= 1 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive size in MiB, got {text!r}")
    return int(value * 1024 * 1024)


def cmd_audit(args: argparse.Namespace) -> int:
    from collections import Counter

    from ..base.progress import progress
    from ..base.values import plural
    from ..corpora.audit import AuditSettings, audit, rates_by_outcome
    from ..importers.base import MAX_FILE, MAX_RECORD

    labels = flow_policy = None
    if args.labels is not None:
        labels = load_json(args.labels, dict, "labels")
        from ..plan.flow import parse_labels

        with named_inputs({"labels": args.labels}):
            parse_labels(labels)  # a bad labels file fails before any work
    if args.flow_policy is not None:
        if labels is None:
            raise UsageError("--flow-policy is checked against tool labels: give --labels")
        flow_policy = load_json(args.flow_policy, dict, "flow policy")
    settings = AuditSettings(
        profile=run_profile(args).value,
        policies=args.policies,
        compare_policies=args.compare_policies,
        labels=labels,
        flow_policy=flow_policy,
        budget=args.budget,
        max_record=args.max_record_size or MAX_RECORD,
        max_file=args.max_file_size or MAX_FILE,
    )
    with progress(None, "audit", "trajectories", show=False if args.no_progress else None) as bar:
        summary = audit(
            args.sources,
            args.output,
            settings=settings,
            workers=args.workers,
            shard_size=args.shard_size,
            progress=bar,
            fresh=args.fresh,
            engine=args.engine,
            address=args.address or args.scheduler,
            say=lambda text: note(args, text),
        )
    for problem in summary.problems:
        note(args, f"skipped a record: {problem}")
    if not summary.trajectories:  # this run's shards, and those a run before wrote
        bad = f" ({plural(summary.malformed, 'malformed record')})" if summary.malformed else ""
        before = (
            f"; {summary.skipped} of {plural(summary.shards, 'shard')} written by an earlier "
            f"run into {summary.out} (--fresh starts over)"
            if summary.skipped
            else ""
        )
        raise UsageError(
            f"{', '.join(args.sources)}: no readable trajectory{bad}, so nothing was "
            f"audited{before}"
        )
    done = (
        f" ({summary.skipped} of {plural(summary.shards, 'shard')} done before)"
        if summary.skipped
        else ""
    )
    extra = ""
    if summary.malformed:
        extra += f", {plural(summary.malformed, 'malformed record')}"
    if summary.unknown:
        extra += f", {summary.unknown} past the budget (unknown)"
    write(
        f"{plural(summary.trajectories, 'trajectory')}{extra}, "
        f"{plural(summary.findings, 'finding')} in "
        f"{summary.out}{done}: findings.parquet, trajectories.parquet "
        f"(profile {settings.profile})\n"
    )
    if args.compare_policies:
        import pyarrow.parquet as pq

        changes = Counter(
            pq.read_table(summary.out / "replay.parquet", columns=["change"]).column(0).to_pylist()
        )
        write(
            f"replacing {args.policies} with {args.compare_policies}: "
            f"{plural(changes.get('newly_denied', 0), 'call')} newly denied, "
            f"{changes.get('no_longer_denied', 0)} no longer denied, "
            f"{changes.get('still_denied', 0)} still denied, in "
            f"{plural(sum(changes.values()), 'call')} (replay.parquet: the rows of "
            "car-verify policy impact, which adds the intervals)\n"
        )
    if args.report:
        from ..corpora.audit_report import write_report

        note(args, f"report: {write_report(summary.out, args.report)}")
    rates = rates_by_outcome(summary.out)
    if rates:
        write(f"{'code':<34} {'trajectories':>12} {'success':>8} {'failure':>8}\n")
        for row in sorted(rates, key=lambda r: -r["trajectories"])[: args.top]:
            cells = [
                f"{row[k]:.0%}" if row[k] is not None else "-"
                for k in ("rate_success", "rate_failure")
            ]
            write(f"{row['code']:<34} {row['trajectories']:>12} {cells[0]:>8} {cells[1]:>8}\n")
    return EXIT_OK
