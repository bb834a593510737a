"""Compact HTML for Jupyter: the views behind ``_repr_html_`` of proposals and results.

Each view registers itself with :mod:`car_verify.base.display` when this module loads
(``car_verify/__init__.py`` imports it), so the classes it draws never import it.

A header with the verdict, a table of findings (code, action, severity, tier,
message) and the DAG as inline SVG (DOT text when Graphviz is absent). Large
proposals stay readable: past ``GRAPH_LIMIT`` actions the graph is summarised
(see :func:`car_verify.reporters.dot.to_dot`) and past ``ROW_LIMIT`` findings the table
is cut, and the page says so. The output is
well-formed XHTML.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from html import escape
from typing import Any

from ..base.display import html_view, register_html
from ..base.values import plural

__all__ = ["GRAPH_LIMIT", "ROW_LIMIT", "html_for"]

GRAPH_LIMIT = 60
ROW_LIMIT = 200

_STYLE = (
    "font-family:Helvetica,Arial,sans-serif;font-size:13px;"
    "border:1px solid #ddd;border-radius:4px;padding:8px;max-width:100%;overflow:auto"
)
_BADGES = {"valid": "#2e7d32", "invalid": "#c62828", "unknown": "#6d6d6d", "equivalent": "#2e7d32"}


def _badge(text: str, colour: str) -> str:
    return (
        f'<span style="background:{colour};color:#fff;border-radius:3px;padding:1px 6px">'
        f"{escape(text)}</span>"
    )


def _table(headers: list[str], rows: Iterable[list[str]], limit: int = ROW_LIMIT) -> str:
    rows = list(rows)
    head = "".join(f'<th style="text-align:left;padding:2px 8px">{escape(h)}</th>' for h in headers)
    body = "".join(
        "<tr>" + "".join(f'<td style="padding:2px 8px">{escape(c)}</td>' for c in row) + "</tr>"
        for row in rows[:limit]
    )
    more = (
        f"<p><em>{len(rows) - limit} more rows not shown (limit {limit}).</em></p>"
        if len(rows) > limit
        else ""
    )
    return f'<table style="border-collapse:collapse"><tr>{head}</tr>{body}</table>{more}'


def _graph(proposal: Any, **options: Any) -> str:
    count = len(proposal.actions)
    if count == 0:
        return ""
    from ..base.errors import CarVerifyError
    from .dot import GraphvizMissing, render, to_dot

    graph = to_dot(proposal, max_nodes=GRAPH_LIMIT, **options)
    note = (
        f"<p><em>{count:,} actions: the graph is summarised (at most {GRAPH_LIMIT} drawn, actions "
        "with findings first; the rest of each level as one node). "
        "car_verify.reporters.dot.to_dot(..., max_nodes=N) or car-verify dot --max-nodes N draws "
        "more.</em></p>"
        if count > GRAPH_LIMIT
        else ""
    )
    try:
        svg = render(graph, "svg").decode("utf-8")
    except CarVerifyError as err:  # no Graphviz, or a layout it could not make
        why = "Graphviz is not installed" if isinstance(err, GraphvizMissing) else str(err)
        return (
            f"{note}<p><em>{escape(why)}; the DAG as DOT text:</em></p>"
            f"<pre>{escape(graph.to_string())}</pre>"
        )
    svg = re.sub(r"<\?xml[^>]*\?>", "", svg)
    svg = re.sub(r"<!DOCTYPE[^>]*>", "", svg)
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)
    return f'{note}<div style="overflow:auto">{svg.strip()}</div>'


def _findings(issues: list[Any]) -> str:
    if not issues:
        return "<p>No findings.</p>"
    rows = [
        [i.code, i.action_id or "(proposal)", i.severity.value, i.tier.value, i.message]
        for i in issues
    ]
    return _table(["code", "action", "severity", "tier", "message"], rows)


def verification_html(result: Any) -> str:
    errors, warnings = len(result.errors), len(result.warnings)
    verdict = "valid" if result.valid else "invalid"
    header = (
        f"<p><strong>verify</strong> {_badge(verdict, _BADGES[verdict])} "
        f"{plural(errors, 'error')}, {plural(warnings, 'warning')}; "
        f"{len(result.execution_levels)} levels; confidence {result.evidence.confidence:.2f}</p>"
    )
    graph = _graph(result.proposal, result=result)
    return f'<div style="{_STYLE}">{header}{_findings(result.issues)}{graph}</div>'


def proposal_html(proposal: Any) -> str:
    from ..api import verify

    result = verify(proposal)
    header = (
        f"<p><strong>proposal</strong> {escape(proposal.id)} from {escape(proposal.source)}: "
        f"{len(proposal.actions)} actions, rollback contract "
        f"{escape(proposal.rollback_contract().value)}</p>"
    )
    body = verification_html(result)
    return f'<div style="{_STYLE}">{header}{body}</div>'


def simulation_html(sim: Any) -> str:
    rows = []
    for t in sim.trace:
        if t.blocked:
            from ..semantics.walk import describe

            what = "blocked: " + "; ".join(describe(c) for c in t.causes)
        else:
            parts = [f"{k} from {v or 'the initial state'}" for k, v in t.supplied.items()]
            what = "runs" + (f" ({'; '.join(parts)})" if parts else "")
        rows.append([str(t.level), t.action_id, what])
    for action_id in sim.unwalked:
        rows.append(["-", action_id, "not walked (on or after a dependency cycle)"])
    state = escape(json.dumps(dict(sim), indent=2, sort_keys=True, ensure_ascii=False))
    header = f"<p><strong>simulate</strong>: {len(sim.blocked)} blocked of {len(sim.trace)}</p>"
    return (
        f'<div style="{_STYLE}">{header}{_table(["level", "action", "what"], rows)}'
        f"<p>end state</p><pre>{state}</pre></div>"
    )


def equivalence_html(result: Any) -> str:
    if result.equivalent is None:
        verdict, colour = "unknown", _BADGES["unknown"]
    elif result.equivalent:
        verdict, colour = "equivalent", _BADGES["equivalent"]
    else:
        verdict, colour = "not equivalent", _BADGES["invalid"]
    header = (
        f"<p><strong>equivalent</strong> ({escape(result.method)}, tier "
        f"{escape(result.tier.value)}) {_badge(verdict, colour)}</p>"
    )
    body = f"<pre>{escape(result.explain())}</pre>"
    return f'<div style="{_STYLE}">{header}{body}</div>'


def execution_html(outcome: Any) -> str:
    cost = outcome.result.cost
    verdict = "aborted" if outcome.aborted_by else "completed"
    colour = _BADGES["invalid" if outcome.aborted_by else "valid"]
    header = (
        f"<p><strong>run</strong> {_badge(verdict, colour)} "
        f"{cost.actions_executed} executed, {cost.actions_rejected} rejected, "
        f"{cost.actions_skipped} skipped; {cost.tool_calls} tool calls</p>"
    )
    rows = [[r.action_id, r.status.value, r.error or ""] for r in outcome.result.results]
    table = _table(["action", "status", "error"], rows)
    graph = _graph(outcome.executor.proposal, execution=outcome.result) if outcome.executor else ""
    return f'<div style="{_STYLE}">{header}{table}{graph}</div>'


def permission_html(report: Any) -> str:
    header = (
        f"<p><strong>permissions</strong> declared rollback contract: "
        f"{escape(report.declared_rollback_contract)}</p>"
    )
    rows = [
        [
            c.action_id,
            c.tool or "",
            c.required_tier,
            c.reversibility + (" (no compensation)" if c.missing_compensation else ""),
            "; ".join(c.because),
        ]
        for c in report.classifications
    ]
    table = _table(["action", "tool", "tier", "reversibility", "because"], rows)
    return f'<div style="{_STYLE}">{header}{table}</div>'


def transaction_html(report: Any) -> str:
    verdict = "valid" if report.consistent else "invalid"
    word = "consistent" if report.consistent else "inconsistent"
    header = (
        f"<p><strong>transaction check</strong> {_badge(word, _BADGES[verdict])} "
        f"{plural(len(report.hazards), 'hazard')} in "
        f"{plural(len(report.proposals), 'proposal')} (profile {escape(report.profile.value)})</p>"
    )
    rows = [
        [h.kind, h.key, ", ".join(f"{p}:{a}" for p, a in h.actions), h.message]
        for h in report.hazards
    ]
    table = _table(["kind", "key", "actions", "what"], rows) if rows else ""
    return f'<div style="{_STYLE}">{header}{table}</div>'


def scored_html(scored: Any) -> str:
    verdict = "valid" if scored.valid else "invalid"
    header = (
        f"<p><strong>candidate {scored.index}</strong> score {scored.score:.4f} "
        f"{_badge(verdict, _BADGES[verdict])}</p>"
    )
    rows = [[name, str(value)] for name, value in scored.to_dict().items()]
    return f'<div style="{_STYLE}">{header}{_table(["field", "value"], rows)}</div>'


def html_for(obj: Any) -> str:
    """The HTML of any displayable car-verify object."""
    view = html_view(obj)
    if view is None:
        raise TypeError(f"no HTML view for {type(obj).__name__}")
    return view(obj)


# Registered by name, so the executor and the deciders load only when used.
for _name, _view in (
    ("car_verify.ir.model.ActionProposal", proposal_html),
    ("car_verify.api.VerificationResult", verification_html),
    ("car_verify.api.Simulation", simulation_html),
    ("car_verify.deciders.equivalence.EquivalenceResult", equivalence_html),
    ("car_verify.executor.ExecutionResult", execution_html),
    ("car_verify.plan.permissions.PermissionReport", permission_html),
    ("car_verify.deciders.transactions.TransactionReport", transaction_html),
    ("car_verify.deciders.ranking.ScoredProposal", scored_html),
):
    register_html(_name, _view)
