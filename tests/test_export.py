"""The pydot exporter, rendering, and the Jupyter HTML views."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

import car_verify
from car_verify.cli import main
from car_verify.executor import execute_sync as _execute_sync
from car_verify.reporters.dot import GraphvizMissing, render, to_dot, to_dot_text


# These tests pin the executor's strict walk (docs/semantics.md §1-8: dependencies order and
# block, a level on its start state); tests/test_semantics.py runs it under car.
def execute_sync(*args: Any, **kwargs: Any) -> Any:
    kwargs.setdefault("profile", "strict")
    return _execute_sync(*args, **kwargs)


pytestmark = pytest.mark.usefixtures("strict_cli")

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).parent / "golden"
CASES = {
    "data-pipeline": ROOT / "examples" / "data-pipeline" / "proposal.json",
    "gated-deploy": ROOT / "examples" / "gated-deploy" / "proposal.json",
    "cycle": Path(__file__).parent / "corpus" / "cycle.json",
}
HAS_DOT = shutil.which("dot") is not None


def proposal(name: str) -> car_verify.ActionProposal:
    path = CASES[name]
    if path.parent.name == "corpus":
        import json

        return car_verify.load({"id": path.stem, **json.loads(path.read_text())["proposal"]})
    return car_verify.load(path)


@pytest.mark.parametrize("name", sorted(CASES))
def test_dot_output_matches_the_golden_file(name: str) -> None:
    """Regenerate with: python scripts/gen_docs.py --golden"""
    text = to_dot_text(proposal(name), profile="strict")
    assert text == (GOLDEN / f"{name}.dot").read_text()
    assert to_dot_text(proposal(name), profile="strict") == text  # deterministic


def test_every_element_is_on_the_graph() -> None:
    text = to_dot_text(proposal("data-pipeline"), profile="strict")
    # one rank per level, labelled
    for level in range(3):
        assert f'level{level} [label="level {level}"' in text
    assert text.count("rank=same") == 3
    # edges labelled by why they exist: state keys and an output reference
    assert 'a0 -> a2 [label="orders_extracted, staging_table"]' in text
    assert 'a2 -> a3 [label="$transform.output.table, revenue_table"]' in text
    # the conflict: red, dashed, labelled with the key, not a constraint
    assert (
        'a0 -> a1 [label="conflict: staging_table", color="#cc0000", fontcolor="#cc0000", '
        "style=dashed, dir=none, constraint=false]"
    ) in text
    # colour by worst finding, tooltip with tool and parameters, legend
    assert 'a1 [label="extract_refunds\\nsql_query", shape=box, fillcolor="#fbe5a6"' in text
    assert 'tooltip="tool_call sql_query {\\"day\\": \\"2026-05-02\\"' in text
    assert "subgraph cluster_legend" in text
    gated = to_dot_text(proposal("gated-deploy"), profile="strict")
    assert 'a2 [label="gate", shape=diamond' in gated  # shape by action type
    assert 'a3 -> a4 [label="depends, deployed"]' in gated  # the reason, and the key


def test_cycles_and_errors() -> None:
    text = to_dot_text(proposal("cycle"), profile="strict")
    assert 'label="no level (cycle)"' in text
    assert 'fillcolor="#f4b6b6"' in text  # the error on the cycle's first action


def test_execution_results_colour_by_status() -> None:
    doc = {
        "actions": [
            {"id": "a", "type": "tool_call", "tool": "ok"},
            {"id": "b", "type": "tool_call", "tool": "bad", "dependencies": ["a"]},
        ]
    }
    outcome = execute_sync(doc, {"ok": lambda p: 1, "bad": lambda p: 1 / 0})
    text = to_dot_text(doc, execution=outcome, profile="strict")
    assert 'a0 [label="a\\nok\\n[succeeded]", shape=box, fillcolor="#d5ecd4"' in text
    assert 'a1 [label="b\\nbad\\n[failed]", shape=box, fillcolor="#f4b6b6"' in text


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz is not installed")
def test_svg_renders_with_every_action_id() -> None:
    p = proposal("gated-deploy")
    svg = render(to_dot(p, profile="strict"), "svg").decode()
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    for action in p.actions:
        assert action.id in svg
    assert render(to_dot(p, profile="strict"), "png").startswith(b"\x89PNG")


def test_missing_graphviz_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(GraphvizMissing, match="apt-get install graphviz"):
        render(to_dot(proposal("gated-deploy"), profile="strict"), "svg")
    out = tmp_path / "g.svg"
    assert main(["dot", str(CASES["gated-deploy"]), "-o", str(out)]) == 2
    _, err = capsys.readouterr()
    assert err.count("\n") == 1 and "Graphviz" in err
    assert main(["dot", str(CASES["gated-deploy"]), "-o", str(tmp_path / "g.dot")]) == 0
    assert (tmp_path / "g.dot").read_text().startswith("digraph proposal {")


def test_an_unwritable_output_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "no" / "such" / "dir" / "g.dot"
    assert main(["dot", str(CASES["gated-deploy"]), "-o", str(out)]) == 2
    _, err = capsys.readouterr()
    assert err == f"car-verify: error: cannot write {out}: No such file or directory\n"


def test_cli_dot_to_stdout_and_with_a_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dot", str(CASES["data-pipeline"])]) == 0
    out, _ = capsys.readouterr()
    assert out == to_dot_text(proposal("data-pipeline"), profile="strict")
    outcome = execute_sync(CASES["data-pipeline"], lambda tool, params: {"table": "t"})
    result = tmp_path / "r.json"
    result.write_text(outcome.result.to_json())
    assert main(["dot", str(CASES["data-pipeline"]), "--result", str(result)]) == 0
    out, _ = capsys.readouterr()
    assert "[succeeded]" in out


# --- HTML --------------------------------------------------------------------------------------


def well_formed(html: str) -> ET.Element:
    return ET.fromstring(f"<div>{html}</div>")


def test_html_reprs_are_valid_and_hold_the_findings() -> None:
    p = proposal("data-pipeline")
    result = car_verify.verify(p, profile="strict")
    html = result._repr_html_()
    well_formed(html)
    assert "write-conflict" in html and "extract_refunds" in html and "valid" in html
    assert ("<svg" in html) == HAS_DOT
    well_formed(p._repr_html_())
    sim = car_verify.simulate(p, profile="strict")
    assert (
        "transform" in well_formed(sim._repr_html_()).itertext().__next__()
        or "transform" in sim._repr_html_()
    )
    eq = car_verify.equivalent(p, p, profile="strict")
    assert "equivalent" in eq._repr_html_()
    outcome = execute_sync(p, lambda tool, params: {"table": "t"})
    html = outcome._repr_html_()
    well_formed(html)
    assert "succeeded" in html


def test_permission_transaction_and_ranking_answers_show_themselves() -> None:
    """PermissionReport, TransactionReport and ScoredProposal printed as their
    dataclass repr in a notebook: no text and no HTML of their own."""
    plan = proposal("data-pipeline")
    report = car_verify.permission_classify(plan)
    text = str(report)
    assert text.splitlines()[-1].startswith("declared rollback contract: ")
    assert "PermissionReport(" not in text and "extract_orders: " in text
    assert "extract_orders" in "".join(well_formed(report._repr_html_()).itertext())
    tx = car_verify.transaction_check(plan)
    assert str(tx).splitlines()[-1] == "inconsistent: 1 hazard in 1 proposal"
    assert "staging_table" in "".join(well_formed(tx._repr_html_()).itertext())
    (scored,) = car_verify.rank_proposals([plan])
    assert str(scored).startswith("candidate 0: score ")
    assert "token_estimate" in "".join(well_formed(scored._repr_html_()).itertext())


@pytest.mark.parametrize("graphviz", [True, False], ids=["graphviz", "no-graphviz"])
def test_large_proposals_collapse_and_say_so(
    graphviz: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from car_verify.reporters import html as notebook

    if graphviz and not HAS_DOT:
        pytest.skip("Graphviz's dot is not installed")
    if not graphviz:
        monkeypatch.setattr(shutil, "which", lambda name: None)

    doc = {
        "actions": [
            {"id": f"a{i}", "type": "tool_call", "tool": "t", "preconditions": [{"key": "k"}]}
            for i in range(notebook.GRAPH_LIMIT + 1)
        ]
    }
    html = car_verify.verify(doc, profile="strict")._repr_html_()
    well_formed(html)
    assert "61 actions: the graph is summarised (at most 60 drawn" in html  # either way
    assert ("<svg" in html) == graphviz and "+ 1 more action" in html


def test_html_without_graphviz_shows_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    html = car_verify.verify(CASES["gated-deploy"], profile="strict")._repr_html_()
    well_formed(html)
    assert "Graphviz is not installed" in html and "digraph proposal" in html


# --- issue 25, items 11 and 12: pictures that do not mislead ----------


def test_blocked_actions_are_drawn_blocked_and_preconditions_name_their_keys() -> None:
    poll = car_verify.load(ROOT / "examples" / "poll-loop" / "proposal.json")
    text = to_dot_text(poll, profile="strict")
    (report,) = [line for line in text.splitlines() if 'label="report' in line]
    assert "[blocked]" in report and 'style="filled,dashed"' in report
    assert "dashed, dark border: blocked (simulate)" in text  # and the legend says so
    gated = to_dot_text(proposal("gated-deploy"), profile="strict")
    assert "tests_passed (precondition)" in gated
    assert "[blocked]" not in gated and "blocked (simulate)" not in gated


def test_a_label_never_says_the_same_name_twice() -> None:
    doc = {"actions": [{"id": "deploy", "type": "tool_call", "tool": "deploy"}]}
    text = to_dot_text(doc, profile="strict")
    assert 'label="deploy"' in text and "deploy\\ndeploy" not in text


def test_the_legend_shows_only_what_the_picture_uses() -> None:
    gated = to_dot_text(proposal("gated-deploy"), profile="strict")
    legend = gated[gated.index("subgraph cluster_legend") :]
    assert "box: tool_call" in legend and "diamond: assertion" in legend
    assert "cylinder" not in legend and "worst finding: error" not in legend
    assert "succeeded" not in legend and "write conflict" not in legend
    assert legend.count("legend_table") == 1  # one narrow column, not a row of samples


def test_policy_violations_are_on_the_picture(capsys: pytest.CaptureFixture[str]) -> None:
    examples = ROOT / "examples" / "policies"
    assert main(["dot", str(examples / "proposal.json"), "--policies", str(examples)]) == 0
    text = capsys.readouterr().out
    (metadata,) = [line for line in text.splitlines() if 'label="metadata' in line]
    assert "policy: deny_tool_param:http_request.url" in metadata and "penwidth" in metadata
    assert "red border: policy violation" in text


def test_after_a_run_the_compensated_actions_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = ROOT / "examples" / "executor"
    monkeypatch.setenv("CAR_EXAMPLE_DIR", str(tmp_path))
    report = tmp_path / "run.json"
    args = ["run", str(root / "proposal.json"), "--tool-module", str(root / "tools.py")]
    assert main([*args, "--quiet", "--format", "json"]) == 1
    report.write_text(capsys.readouterr().out)
    undone = json.loads(report.read_text())["rollback"]["compensated"]
    assert undone
    assert main(["dot", str(root / "proposal.json"), "--result", str(report)]) == 0
    text = capsys.readouterr().out
    for action_id in undone:
        assert f"{action_id}\\n" in text and "[compensated]" in text
    assert 'fillcolor="#d9d2e9"' in text and "compensated</TD>" in text


def test_a_large_plan_is_summarised_and_says_so() -> None:
    import re

    actions: list[dict[str, object]] = [
        {"id": f"a{i}", "type": "tool_call", "tool": "t", "parameters": {"i": i}}
        for i in range(1_000)
    ]
    actions[777]["preconditions"] = [{"key": "never.written", "value": 1}]
    text = to_dot_text({"actions": actions}, profile="strict", max_nodes=120)
    assert "summarised: 1,000 actions in 1 levels; 120 drawn, actions with findings first" in text
    nodes = re.findall(r"^a(\d+) \[", text, re.M)
    assert len(nodes) == 120 and "777" in nodes  # its error keeps it drawn
    assert "+ 880 more actions" in text
    spec = importlib.util.spec_from_file_location("shapes", ROOT / "benchmarks" / "shapes.py")
    assert spec is not None and spec.loader is not None
    shapes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shapes)
    deep = to_dot_text(shapes.sequential(2_000), profile="strict", max_nodes=120)
    assert len(re.findall(r"^a(\d+) \[", deep, re.M)) <= 120
    assert deep.count("rank=same") <= 41 and "levels 0-" in deep  # levels in bands
    small = to_dot_text(proposal("gated-deploy"), profile="strict")
    assert "summarised" not in small and "more actions" not in small


def test_the_picture_coloured_by_the_chance_that_effects_land(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 26, item 6: the DAG picture coloured by p_effects_landed."""
    from car_verify.plan.risk import risk

    doc = {
        "actions": [
            {"id": "b", "type": "tool_call", "tool": "build", "expected_effects": {"img": 1}},
            {"id": "d", "type": "tool_call", "tool": "deploy", "state_dependencies": ["img"]},
        ]
    }
    result = risk(doc, tool_success_rates={"build": 0.9, "deploy": 0.6})
    text = to_dot_text(doc, risk=result)
    (build,) = [line for line in text.splitlines() if line.startswith("a0 [")]
    (deploy,) = [line for line in text.splitlines() if line.startswith("a1 [")]
    assert "lands 90%" in build and 'fillcolor="#b6d7a8"' in build
    assert "lands 54%" in deploy and 'fillcolor="#ffe599"' in deploy
    assert "lands 80-99% (risk: p effects land)" in text and "worst finding" not in text
    plan, rates = tmp_path / "p.json", tmp_path / "rates.json"
    plan.write_text(json.dumps(doc))
    rates.write_text(json.dumps({"build": 0.9, "deploy": 0.6}))
    assert main(["dot", str(plan), "--rates", str(rates)]) == 0  # strict here (strict_cli)
    assert "lands 54%" in capsys.readouterr().out


def _fake_dot(folder: Path, body: str) -> None:
    script = folder / "dot"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)


def test_a_layout_failure_falls_back_and_is_otherwise_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Graphviz 2.43 fails some summaries ("trouble in init_rank") with newrank: the
    layout is tried again without it; failing that, or running past its time, the
    command says so in one line, and nothing binary reaches stdout."""
    from car_verify.reporters import dot as export

    plan = tmp_path / "p.json"
    plan.write_text(json.dumps({"actions": [{"id": "a", "type": "tool_call", "tool": "t"}]}))
    out = tmp_path / "out.svg"
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")
    _fake_dot(bin_, 'if grep -q "newrank=true"; then echo "trouble in init_rank" >&2; exit 1; fi\n'
              'echo "<svg>fallback</svg>"\n')  # fmt: skip
    assert main(["dot", str(plan), "-o", str(out)]) == 0
    assert out.read_text().strip() == "<svg>fallback</svg>"
    capsys.readouterr()
    _fake_dot(bin_, 'cat >/dev/null; echo "trouble in init_rank" >&2; exit 1\n')
    assert main(["dot", str(plan), "-o", str(tmp_path / "no.png")]) == 2
    said = capsys.readouterr()
    assert said.out == "" and "trouble in init_rank" in said.err and len(said.err) < 400
    _fake_dot(bin_, "sleep 5\n")
    monkeypatch.setattr(export, "RENDER_TIMEOUT", 0.5)
    with pytest.raises(car_verify.CarVerifyError, match=r"within 0\.5 s"):
        export.render(export.to_dot(json.loads(plan.read_text())), "svg", timeout=0.5)


def test_a_layout_graphviz_cannot_rank_falls_back_to_one_that_draws(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 59: Debian's Graphviz 2.43 fails the default picture of a 1,000-action
    plan ("trouble in init_rank"). Without the levels' rows it ranks; a picture too
    large for it is drawn as a coarser summary, and the command says so."""
    from car_verify.reporters import dot as export

    bin_ = tmp_path / "bin"
    bin_.mkdir()
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")
    _fake_dot(bin_, 'if grep -q "rank=same"; then echo "trouble in init_rank" >&2; exit 1; fi\n'
              'echo "<svg>no rows</svg>"\n')  # fmt: skip
    graph = export.to_dot(proposal("gated-deploy"))
    assert export.render(graph, "svg") == b"<svg>no rows</svg>\n"
    # A fake Graphviz that cannot lay out more than 40 actions: the summary shrinks.
    _fake_dot(bin_, 'n=$(grep -c "^a[0-9]* \\[")\n'
              'if [ "$n" -gt 40 ]; then echo "trouble in init_rank" >&2; exit 1; fi\n'
              'echo "<svg>$n</svg>"\n')  # fmt: skip
    plan = tmp_path / "p.json"
    actions = [{"id": f"a{i}", "type": "tool_call", "tool": f"t{i}"} for i in range(1_000)]
    plan.write_text(json.dumps({"actions": actions}))
    out = tmp_path / "p.svg"
    assert main(["dot", str(plan), "-o", str(out)]) == 0
    drawn = int(out.read_text().strip()[5:-6])
    assert 30 <= drawn <= 40
    err = capsys.readouterr().err
    assert "trouble in init_rank); drawing 125 actions instead" in err
    assert "drawing 31 actions instead" in err and "31 drawn: the picture is summarised" in err


def test_the_picture_draws_findings_about_the_whole_proposal_and_one_label_per_pair() -> None:
    """A finding about no one action (a duplicate call under car) was drawn nowhere;
    two keys in conflict between the same two actions drew two labels on one spot."""
    doc = {
        "actions": [
            {"id": "a", "type": "tool_call", "tool": "t", "expected_effects": {"x": 1, "y": 1}},
            {"id": "b", "type": "tool_call", "tool": "t", "expected_effects": {"x": 2, "y": 2}},
        ]
    }
    text = to_dot_text(doc, profile="car")
    (note,) = [line for line in text.splitlines() if line.startswith("proposal_findings [")]
    assert "the whole proposal" in note and "warning[duplicate-call]" in note
    assert "proposal_findings -> level0 [style=invis]" in text
    assert "note at the top: findings about the whole proposal" in text
    conflicts = [line for line in text.splitlines() if "conflict:" in line]
    assert len(conflicts) == 1 and 'label="conflict: x, y"' in conflicts[0]
