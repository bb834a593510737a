"""The audit's HTML report: one self-contained page (plots embedded as PNG).

``write_report(out, path)`` reads ``out/trajectories.parquet`` and
``out/findings.parquet`` and writes a page with

- the summary: trajectories by status and by outcome, findings by severity;
- where it came from: the sources, the profile, the policies' digest, the
  budget, and the car-verify version that wrote the page;
- findings per code (how many findings, in how many trajectories, and the share
  of the successful and of the failed trajectories it was found in, each with its
  counts and a 95% Wilson interval, and Fisher's exact test of the difference:
  the false-positive view of each heuristic), as a table and a chart; a
  difference the test does not support (p >= 0.05) is said to be none;
- findings per model and per source format.

The statistics are SciPy's (``scipy.stats``: ``binomtest``, ``fisher_exact``),
in the ``audit`` extra; without it the intervals and tests are left out, and the
page says so.

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

from ..base.errors import UsageError
from ..semantics.profiles import DEFAULT_PROFILE


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
        ok, bad = totals["success"], totals["failure"]
        row: dict[str, Any] = {
            "code": code,
            "findings": found[code],
            "trajectories": sum(hit.values()),
            "success": hit["success"] / ok if ok else None,
            "failure": hit["failure"] / bad if bad else None,
            "in_success": f"{hit['success']} of {ok}",
            "in_failure": f"{hit['failure']} of {bad}",
        }
        row.update(_statistics(hit["success"], ok, hit["failure"], bad))
        rows.append(row)
    return rows


def _statistics(a: int, n: int, b: int, m: int) -> dict[str, Any]:
    """95% Wilson intervals of a/n and b/m, and Fisher's exact test of the
    difference (SciPy's); empty without SciPy or without trajectories."""
    try:
        from scipy.stats import binomtest, fisher_exact
    except ImportError:
        return {}
    out: dict[str, Any] = {}
    for name, k, total in (("success_ci", a, n), ("failure_ci", b, m)):
        if total:
            ci = binomtest(k, total).proportion_ci(method="wilson")
            out[name] = f"{ci.low:.1%} to {ci.high:.1%}"
    if n and m:
        p = float(fisher_exact([[a, n - a], [b, m - b]]).pvalue)
        out["p"] = f"{p:.3g}"
        out["difference"] = "significant (p < 0.05)" if p < 0.05 else "none shown (p >= 0.05)"
    return out


def _provenance(folder: Path) -> list[dict[str, Any]]:
    """What the audit read and how: from ``audit.json``, and this car-verify's version."""
    import json

    from .._version import __version__

    rows: list[dict[str, Any]] = [{"what": "car-verify", "value": __version__}]
    try:
        manifest = json.loads((folder / "audit.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        rows.append({"what": "settings", "value": "audit.json not found: not known"})
        return rows
    for source in manifest.get("sources", []):
        rows.append({"what": "source", "value": f"{source[0]} ({source[1]:,} bytes)"})
    rows.append({"what": "profile", "value": manifest.get("profile") or DEFAULT_PROFILE.value})
    policies = manifest.get("policies")
    rows.append({"what": "policies", "value": f"sha256 {policies}" if policies else "none"})
    rows.append({"what": "budget", "value": _seconds(manifest.get("budget"))})
    return rows


def _seconds(budget: Any) -> str:
    """The per-trajectory budget in seconds, as a duration (``10 s per trajectory``)."""
    if isinstance(budget, bool) or not isinstance(budget, (int, float)):
        return "not recorded" if budget is None else str(budget)
    if budget <= 0:
        return "none (no time limit)"
    return f"{budget:g} s per trajectory"


#: The columns of the per-code table.
CODE_COLUMNS = [
    "code", "findings", "trajectories", "success", "in_success", "success_ci",
    "failure", "in_failure", "failure_ci", "p", "difference",
]  # fmt: skip

#: The per-code table's headings, each naming its statistic.
CODE_HEADINGS = {
    "success": "share of successful runs",
    "in_success": "successful runs",
    "success_ci": "95% Wilson interval",
    "failure": "share of failed runs",
    "in_failure": "failed runs",
    "failure_ci": "95% Wilson interval",
    "p": "p (Fisher's exact test, two-sided)",
    "difference": "difference at p < 0.05",
}

#: What the statistics of the per-code table are, said under it.
STATISTICS_NOTE = (
    "Each share is found / checked trajectories with that outcome. Its interval is the "
    "95% Wilson score interval of that proportion (scipy.stats.binomtest(k, n)"
    ".proportion_ci(method='wilson')). p is the two-sided Fisher's exact test of the "
    "2\u00d72 table (found or not, in successful or failed runs; scipy.stats.fisher_exact): "
    "the chance of a split at least this uneven were the code found as often in both. A "
    "difference is shown only when p < 0.05; otherwise the data show none, however far "
    "apart the two shares look."
)


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


def _table(
    rows: list[dict[str, Any]], columns: list[str], headings: dict[str, str] | None = None
) -> str:
    """An HTML table; a float cell is a share (``12.5%``): give other numbers as text."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.1%}"
        return escape("-" if value is None else str(value))

    named = headings or {}
    head = "".join(f"<th>{escape(named.get(c, c))}</th>" for c in columns)
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
    by_model = Counter((f["model"] or "not recorded by the source") for f in findings)
    by_format = Counter(f["format"] or "unknown" for f in findings)
    charts = _charts(codes)
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>car-verify audit</title>",
        "<style>body{font:14px/1.4 Helvetica,Arial,sans-serif;margin:2em;max-width:60em}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
        "padding:.25em .6em;text-align:left}th{background:#f3f3f3}img{max-width:100%}</style>",
        "</head><body><h1>car-verify audit</h1>",
        f"<p>{escape(str(folder))}</p>",
        "<h2>Where this comes from</h2>",
        _table(_provenance(folder), ["what", "value"]),
        "<h2>Summary</h2>",
        _table(summary, ["what", "count"]),
        "<h2>Findings per code</h2>",
        "<p>For each code: its findings, the trajectories it was found in, and the share of "
        "the successful and of the failed trajectories it was found in. A heuristic found as "
        "often in successful runs as in failed ones predicts nothing.</p>",
        _table(codes, CODE_COLUMNS, CODE_HEADINGS),
    ]
    if codes and "p" in codes[0]:
        parts.append(f"<p>{escape(STATISTICS_NOTE)}</p>")
    if codes and "p" not in codes[0]:
        parts.append(
            "<p><em>No intervals or tests: SciPy is not installed "
            "(pip install 'car-verify[audit]').</em></p>"
        )
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
