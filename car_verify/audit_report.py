"""The audit's HTML report: one self-contained page (plots embedded as PNG).

``write_report(out, path)`` reads ``out/trajectories.parquet`` and
``out/findings.parquet`` and writes a page with

- the summary: trajectories by status and by outcome, findings by severity;
- findings per code (how many findings, in how many trajectories, and the share
  of the successful and of the failed trajectories it was found in: the
  false-positive view of each heuristic), as a table and a chart;
- findings per model and per source format.

The plots need matplotlib (``pip install 'car-verify[audit]'``); without it the
page is written with the tables only, and says so.
"""

from __future__ import annotations

import base64
import io
from collections import Counter
from html import escape
from pathlib import Path
from typing import Any

from .errors import UsageError


def _tables(out: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError("the report reads Parquet: pip install 'car-verify[audit]'") from None
    trajectories = pq.read_table(out / "trajectories.parquet").to_pylist()
    findings = pq.read_table(out / "findings.parquet").to_pylist()
    return trajectories, findings


def per_code(
    trajectories: list[dict[str, Any]], findings: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Per code: findings, trajectories, and its rate among successful and failed
    trajectories (of those checked)."""
    checked = [t for t in trajectories if t["status"] == "checked"]
    totals = Counter(t["outcome"] or "unknown" for t in checked)
    found = Counter(f["code"] for f in findings)
    runs: dict[str, Counter[str]] = {}
    for t in checked:
        for code, _n in t["code_counts"] or []:
            runs.setdefault(code, Counter())[t["outcome"] or "unknown"] += 1
    rows = []
    for code in sorted(found, key=lambda c: (-found[c], c)):
        hit = runs.get(code, Counter())
        rows.append(
            {
                "code": code,
                "findings": found[code],
                "trajectories": sum(hit.values()),
                "success": hit["success"] / totals["success"] if totals["success"] else None,
                "failure": hit["failure"] / totals["failure"] if totals["failure"] else None,
            }
        )
    return rows


def _png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _charts(codes: list[dict[str, Any]]) -> list[tuple[str, str]]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    shown = codes[:15]
    if not shown:
        return []
    charts = []
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(shown) + 1))
    names = [r["code"] for r in shown][::-1]
    ax.barh(names, [r["findings"] for r in shown][::-1], color="#4a7ebb")
    ax.set_xlabel("findings")
    ax.set_title("Findings per code")
    charts.append(("Findings per code", _png(fig)))
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(shown) + 1))
    y = list(range(len(shown)))
    success = [100 * (r["success"] or 0) for r in shown][::-1]
    failure = [100 * (r["failure"] or 0) for r in shown][::-1]
    ax.barh([v + 0.2 for v in y], success, height=0.4, label="successful runs", color="#6aa84f")
    ax.barh([v - 0.2 for v in y], failure, height=0.4, label="failed runs", color="#cc4125")
    ax.set_yticks(y, names)
    ax.set_xlabel("% of trajectories with the finding")
    ax.set_title("Each code in successful and in failed runs")
    ax.legend(loc="lower right")
    charts.append(("Successful vs failed runs", _png(fig)))
    plt.close(fig)
    return charts


def _table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.1%}"
        return escape("-" if value is None else str(value))

    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{cell(row.get(c))}</td>" for c in columns) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def write_report(out: str | Path, path: str | Path) -> Path:
    """Write the report of the audit in ``out`` to ``path`` (see the module docs)."""
    folder = Path(out)
    trajectories, findings = _tables(folder)
    codes = per_code(trajectories, findings)
    status = Counter(t["status"] for t in trajectories)
    outcome = Counter(t["outcome"] or "unknown" for t in trajectories if t["status"] == "checked")
    severity = Counter(f["severity"] for f in findings)
    summary = [
        {"what": "trajectories checked", "count": status.get("checked", 0)},
        {"what": "past the budget (unknown)", "count": status.get("unknown", 0)},
        {"what": "malformed records", "count": status.get("malformed", 0)},
        *({"what": f"outcome {k}", "count": v} for k, v in sorted(outcome.items())),
        *({"what": f"{k} findings", "count": v} for k, v in sorted(severity.items())),
    ]
    by_model = Counter((f["model"] or "unknown") for f in findings)
    by_format = Counter(f["format"] or "unknown" for f in findings)
    charts = _charts(codes)
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>car-verify audit</title>",
        "<style>body{font:14px/1.4 Helvetica,Arial,sans-serif;margin:2em;max-width:60em}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
        "padding:.25em .6em;text-align:left}th{background:#f3f3f3}img{max-width:100%}</style>",
        "</head><body><h1>car-verify audit</h1>",
        f"<p>{escape(str(folder))}</p>",
        "<h2>Summary</h2>",
        _table(summary, ["what", "count"]),
        "<h2>Findings per code</h2>",
        "<p>For each code: its findings, the trajectories it was found in, and the share of "
        "the successful and of the failed trajectories it was found in. A heuristic found as "
        "often in successful runs as in failed ones predicts nothing.</p>",
        _table(codes, ["code", "findings", "trajectories", "success", "failure"]),
    ]
    if charts:
        for title, data in charts:
            image = f"<img alt='{escape(title)}' src='data:image/png;base64,{data}'>"
            parts.append(f"<h3>{escape(title)}</h3>{image}")
    else:
        missing = "matplotlib is not installed (pip install 'car-verify[audit]')"
        parts.append(f"<p><em>No plots: {missing}.</em></p>")
    parts += [
        "<h2>Findings per model</h2>",
        _table(
            [{"model": k, "findings": v} for k, v in by_model.most_common()], ["model", "findings"]
        ),
        "<h2>Findings per source format</h2>",
        _table(
            [{"format": k, "findings": v} for k, v in by_format.most_common()],
            ["format", "findings"],
        ),
        "</body></html>",
    ]
    target = Path(path)
    target.write_text("\n".join(parts), encoding="utf-8")
    return target
