"""The committed notebooks execute without error (nbclient), from their own folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("strict_cli")

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_at_least_three_notebooks() -> None:
    assert len(NOTEBOOKS) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    book = nbformat.read(path, as_version=4)
    assert any(cell.get("outputs") for cell in book.cells if cell.cell_type == "code"), (
        "notebooks are committed with their outputs"
    )
    client = nbclient.NotebookClient(
        book, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()  # raises CellExecutionError naming the failing cell
    errors = [
        out
        for cell in book.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert errors == []


def test_the_audit_notebook_verifies_each_case_with_its_own_state_and_tools() -> None:
    """Issue 25, item 13: notebook 02 listed `assertion-holds.json` (whose initial
    state makes the assertion hold) as failing, having verified it without its state."""
    import json

    book = json.loads((NOTEBOOKS[0].parent / "02-audit-a-folder.ipynb").read_text())
    source = "".join(book["cells"][1]["source"])
    assert "initial_state=case.get('initial_state')" in source
    outputs = [
        "".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/html", ""))
        for cell in book["cells"]
        for out in cell.get("outputs", [])
    ]
    said = "\n".join(outputs)
    assert "every corpus case finds what it expects" in said
    assert "assertion-holds.json" not in said and "examples/payment" not in said


def test_the_risk_notebook_audits_a_plan_end_to_end() -> None:
    """Issue 26, item 6: a notebook that audits a plan's risk end to end: exact
    numbers, the sampled interval around them, outcomes, the picture, sensitivity."""
    import json

    book = json.loads((NOTEBOOKS[0].parent / "05-risk-of-a-plan.ipynb").read_text())
    said = "\n".join(
        "".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))
        for cell in book["cells"]
        for out in cell.get("outputs", [])
    )
    assert "p(goal reached) = 0.684 (exact)" in said
    assert "exact 0.6840; sampled" in said and "critical: build, test, deploy" in said
    kinds = {k for c in book["cells"] for o in c.get("outputs", []) for k in o.get("data", {})}
    assert {"text/html", "image/svg+xml"} <= kinds  # the outcome bars and the picture


def test_the_risk_notebook_says_what_it_needs_first() -> None:
    import json

    book = json.loads((NOTEBOOKS[0].parent / "05-risk-of-a-plan.ipynb").read_text())
    first = "".join(book["cells"][0]["source"])
    assert "Graphviz" in first and "DOT text" in first


@pytest.mark.slow
def test_the_risk_notebook_runs_without_graphviz(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 38: notebook 05 died without Graphviz, with the command line's advice
    (``-o out.dot``). Without ``dot`` on PATH it shows the DOT text instead."""
    import shutil
    import sys

    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{tmp_path}")
    assert shutil.which("dot") is None
    path = NOTEBOOKS[0].parent / "05-risk-of-a-plan.ipynb"
    book = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        book, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()
    said = "\n".join(
        "".join(out.get("text", ""))
        for cell in book.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
    )
    assert "here is the picture's DOT text" in said and "digraph proposal {" in said
    assert "-o out.dot" not in said


def test_the_audit_notebook_asks_its_question_of_the_corpus() -> None:
    """Issue 28, item 3: the tau-bench corpus audited, a trace rule's rate in
    successful and failed runs, and a chart."""
    import json

    book = json.loads((NOTEBOOKS[0].parent / "04-audit-a-benchmark-run.ipynb").read_text())
    said = "\n".join(
        "".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))
        for cell in book["cells"]
        for out in cell.get("outputs", [])
    )
    assert "200 trajectories, 1164 calls, 14 tools" in said
    assert (
        "trace_rule:auth-before-flight-change: broken in 10.7% of successful and 10.3% of failed"
        in said
    )
    assert "duplicate-call: 2.4% of successful, 9.5% of failed runs" in said
    kinds = {k for c in book["cells"] for o in c.get("outputs", []) for k in o.get("data", {})}
    assert "image/png" in kinds
    # its conclusion is the report's statistics: the duplicate call's higher rate is
    # not a difference Fisher's exact test supports, and the text claims none
    assert "2 of 84 (0.7% to 8.3%) against 11 of 116 (5.4% to 16.2%)" in said
    assert "Fisher's exact p = 0.0775: none shown (p >= 0.05)" in said
    assert "a difference shown at p < 0.05: none" in said
    prose = "\n".join("".join(c["source"]) for c in book["cells"] if c["cell_type"] == "markdown")
    assert "better predictor" not in prose and "does not support a difference" in prose
    audit_doc = (NOTEBOOKS[0].parents[1] / "docs" / "audit.md").read_text()
    assert "better predictor" not in audit_doc and "p = 0.0775" in audit_doc
