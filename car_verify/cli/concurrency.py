"""``car-verify concurrency``: concurrency anomalies of agents' ops (stale
generation, phantom tools, ...)."""

from __future__ import annotations

import argparse

from .options import (
    EXIT_FINDINGS,
    EXIT_OK,
    Parser,
    Report,
    Subcommands,
    emit,
    format_option,
    gate_options,
    load_json,
    named_inputs,
    run_profile,
)


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "concurrency",
        parents=[profiled],
        help="concurrency anomalies of agents' ops (stale generation, phantom tools, ...) "
        "and serializability",
    )
    p.add_argument(
        "ops",
        metavar="OPS.json",
        help="an array of AgentOps {id, read_set, write_set, read_at, commit_at, ...}, or a "
        "proposal (its actions, a level per step of time)",
    )
    gate_options(
        p,
        "{abort_at_or_below, require_approval_at_or_below} (levels l0..l4)",
        "remediations and dispositions",
        ledger=False,
    )
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_concurrency)


def cmd_concurrency(args: argparse.Namespace) -> int:
    from ..plan.concurrency import analyze_concurrency, gate_concurrency, ops_from_proposal

    with named_inputs({"ops": args.ops}):
        doc = load_json(args.ops, object, "ops")
        # a proposal: its actions as the executor schedules them
        ops = ops_from_proposal(doc, profile=run_profile(args)) if isinstance(doc, dict) else doc
        report = analyze_concurrency(ops, profile=run_profile(args))
    gate = None
    if args.gate or args.gate_policy is not None:
        policy = (
            None if args.gate_policy is None else load_json(args.gate_policy, dict, "gate policy")
        )
        gate = gate_concurrency(report, policy)
    doc_out = report.to_dict(extras=True)
    if gate is not None:
        doc_out["gate"] = gate.to_dict()

    def text() -> str:
        out = [f"warning: {note}\n" for note in report.notes]
        out += [
            f"{a.anomaly} ({', '.join(a.ops)} on {a.key!r}): {a.explanation}\n"
            for a in report.anomalies
        ]
        serial = (
            "serializable"
            if report.serializable
            else ("not serializable: " + " -> ".join(report.cycle))
        )
        out.append(f"level {report.level}; {serial} (profile {run_profile(args)})\n")
        if gate is not None:
            for r in gate.remediations:
                out.append(f"    {r['disposition']}: {r['remediation']['kind']} ({r['anomaly']})\n")
            out.append(
                f"gate: {'abort' if gate.abort else ('safe' if gate.safe else 'remediate')}\n"
            )
        return "".join(out)

    emit(args, Report.of(doc_out, text))
    if gate is not None:
        return EXIT_OK if gate.safe else EXIT_FINDINGS
    return EXIT_OK if report.serializable and not report.anomalies else EXIT_FINDINGS
