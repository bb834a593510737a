"""``car-verify concurrency``: concurrency anomalies of agents' ops (stale
generation, phantom tools, ...)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ._common import (
    EXIT_FINDINGS,
    EXIT_OK,
    _named_inputs,
    _profile,
    _read_file,
    _write,
    format_option,
)


def add(sub: Any, profiled: Any) -> None:
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
    p.add_argument("--gate", action="store_true", help="remediations and dispositions")
    p.add_argument(
        "--gate-policy",
        metavar="GATE.json",
        help="{abort_at_or_below, require_approval_at_or_below} (levels l0..l4)",
    )
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_concurrency)


def cmd_concurrency(args: argparse.Namespace) -> int:
    from ..plan.concurrency import analyze_concurrency, gate_concurrency, ops_from_proposal

    with _named_inputs({"ops": args.ops}):
        doc = _read_file(args.ops, object, "ops")
        if isinstance(doc, dict):  # a proposal: its actions as the executor schedules them
            ops: Any = ops_from_proposal(doc, profile=_profile(args))
        else:
            ops = doc
        report = analyze_concurrency(ops)
    gate = None
    if args.gate or args.gate_policy is not None:
        policy = (
            None if args.gate_policy is None else _read_file(args.gate_policy, dict, "gate policy")
        )
        gate = gate_concurrency(report, policy)
    if args.format == "json":
        doc_out = report.to_dict(extras=True)
        if gate is not None:
            doc_out["gate"] = gate.to_dict()
        _write(json.dumps(doc_out, indent=2, ensure_ascii=False) + "\n")
    else:
        for a in report.anomalies:
            _write(f"{a.anomaly} ({', '.join(a.ops)} on {a.key!r}): {a.explanation}\n")
        serial = (
            "serializable"
            if report.serializable
            else ("not serializable: " + " -> ".join(report.cycle))
        )
        _write(f"level {report.level}; {serial} (profile {_profile(args)})\n")
        if gate is not None:
            for r in gate.remediations:
                _write(f"    {r['disposition']}: {r['remediation']['kind']} ({r['anomaly']})\n")
            _write(f"gate: {'abort' if gate.abort else ('safe' if gate.safe else 'remediate')}\n")
    if gate is not None:
        return EXIT_OK if gate.safe else EXIT_FINDINGS
    return EXIT_OK if report.serializable and not report.anomalies else EXIT_FINDINGS
