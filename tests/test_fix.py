"""``--fix`` / ``--diff`` (issue 25, item 10): only the repairs car-verify can prove."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

import car_verify
from car_verify.cli import main
from car_verify.fix import dump_like, fix_document
from car_verify.values import json_equal

from .strategies import proposals, states

CONFLICT = {
    "actions": [
        {"id": "a", "type": "state_write", "parameters": {"key": "k", "value": 1}},
        {"id": "b", "type": "state_write", "parameters": {"key": "k", "value": 2}},
        {
            "id": "c",
            "type": "tool_call",
            "tool": "t",
            "read_set": ["k"],
            "state_dependencies": ["k", "stale"],
            "metadata": {"team": "kept"},
        },
    ]
}


def _write(path: Path, doc: Any) -> str:
    text = json.dumps(doc, indent=2) + "\n"
    path.write_text(text)
    return text


def test_diff_shows_the_repairs_and_fix_applies_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    before = _write(tmp_path / "p.json", CONFLICT)
    (tmp_path / "state.json").write_text(json.dumps({"stale": 0}))
    args = ["verify", "p.json", "--profile", "strict", "--state", "state.json"]
    assert main([*args, "--diff"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("--- p.json\n+++ p.json\n@@")
    assert '-        "stale"' in out and '+      "dependencies": [' in out
    assert (tmp_path / "p.json").read_text() == before  # --diff writes nothing
    assert main([*args, "--fix"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("p.json: fixed [remove-phantom-dependency] c: removed 'stale'")
    assert out[1].startswith("p.json: fixed [order-writers] b: added 'a' to dependencies")
    assert out[-1].startswith("valid: 0 errors, 0 warnings")  # the conflict is gone
    fixed = json.loads((tmp_path / "p.json").read_text())
    assert fixed["actions"][1]["dependencies"] == ["a"]
    assert fixed["actions"][2] == {**CONFLICT["actions"][2], "state_dependencies": ["k"]}
    assert main([*args, "--diff"]) == 0 and capsys.readouterr().out == ""  # nothing left


def test_an_ordering_that_would_change_the_end_state_is_declined_with_a_counterexample(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    plan = {
        "actions": [
            {"id": "a", "type": "state_write", "parameters": {"key": "k", "value": 1}},
            {
                "id": "b",
                "type": "state_write",
                "parameters": {"key": "k", "value": 2},
                "preconditions": [{"key": "k", "operator": "exists"}],
            },
        ]
    }
    before = _write(tmp_path / "p.json", plan)
    assert main(["verify", "p.json", "--profile", "strict", "--fix"]) == 1
    captured = capsys.readouterr()
    assert "fixed" not in captured.out and "warning[write-conflict]" in captured.out
    assert "not repaired: ordering a before b (write conflict on 'k'): changes the end state" in (
        captured.err
    )
    assert (tmp_path / "p.json").read_text() == before


def test_under_car_only_the_phantoms_are_repaired_and_it_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "p.json", CONFLICT)
    assert main(["verify", "p.json", "--diff"]) == 1
    captured = capsys.readouterr()
    assert '-        "stale"' in captured.out and '"dependencies"' not in captured.out
    assert "write conflicts are not repaired under the car profile" in captured.err


def test_lint_fix_repairs_json_files_and_says_what_it_cannot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / "plans").mkdir()
    _write(tmp_path / "plans" / "p.json", CONFLICT)
    (tmp_path / "plans" / "q.yaml").write_text("actions: []\n")
    assert main(["lint", ".", "--profile", "strict", "--fix", "--no-progress"]) == 1
    captured = capsys.readouterr()
    assert "plans/p.json: fixed [order-writers] b" in captured.out
    assert "--fix rewrites .json files only; 1 other files not repaired" in captured.err
    assert "write-conflict" not in captured.out
    assert json.loads((tmp_path / "plans" / "p.json").read_text())["actions"][1]["dependencies"]


def test_the_file_keeps_its_layout() -> None:
    doc = {"actions": [{"id": "é", "type": "tool_call"}]}
    assert (
        dump_like(doc, json.dumps(doc, indent=4) + "\n")
        == json.dumps(doc, indent=4, ensure_ascii=False) + "\n"
    )
    minified = json.dumps(doc, separators=(",", ":"))
    assert dump_like(doc, minified) == json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    assert dump_like(doc, json.dumps(doc)) == json.dumps(doc, ensure_ascii=False)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(proposals(max_actions=5, cycles=False), states)
def test_a_repair_never_changes_the_end_state_nor_adds_a_finding(
    doc: dict[str, Any], state: dict[str, Any]
) -> None:
    """The contract of --fix under strict: from any initial state, the repaired plan
    leaves the state the original leaves, and verify reports nothing new."""
    original = copy.deepcopy(doc)
    repaired = fix_document(doc, profile="strict", timeout_ms=5_000)
    assert doc == original  # the caller's document is not modified
    after = repaired.document
    assert json_equal(
        dict(car_verify.simulate(after, initial_state=state, profile="strict")),
        dict(car_verify.simulate(doc, initial_state=state, profile="strict")),
    )

    def found(d: dict[str, Any]) -> set[tuple[Any, ...]]:
        result = car_verify.verify(d, profile="strict")
        return {(i.action_id, i.code, i.severity.value, i.message) for i in result.issues}

    assert found(after) <= found(doc)
    for fix in repaired.fixes:  # every edit is one the user can read back
        assert fix.kind in ("remove-phantom-dependency", "order-writers")
