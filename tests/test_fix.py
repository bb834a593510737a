"""``--fix`` / ``--diff`` (issue 25, item 10; issue 60): the findings' fixes, the
safe ones only unless ``--unsafe-fixes``; an ordering is safe when z3 proves it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import car_verify
from car_verify.base.codes import CODES
from car_verify.base.values import json_equal
from car_verify.cli import main
from car_verify.deciders.fix import dump_like, fix_document

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
    assert '+      "dependencies": [' in out and '"stale"' not in out  # no finding there
    assert (tmp_path / "p.json").read_text() == before  # --diff writes nothing
    assert main([*args, "--fix"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("p.json: fixed [write-conflict] b: add 'a' to b's dependencies")
    assert "z3: the end state is the same in every initial state" in out[0]
    assert out[-1].startswith("valid: 0 errors, 0 warnings")  # the conflict is gone
    fixed = json.loads((tmp_path / "p.json").read_text())
    assert fixed["actions"][1]["dependencies"] == ["a"]
    assert fixed["actions"][2] == CONFLICT["actions"][2]  # a phantom is optimize's, not --fix's
    assert main([*args, "--diff"]) == 0 and capsys.readouterr().out == ""  # nothing left


def test_an_ordering_that_would_change_the_end_state_is_unsafe_with_a_counterexample(
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
    checked = car_verify.verify(plan, profile="strict")
    assert checked.fixes
    fixes = {i.code: i.fix for i in checked.issues if i.fix is not None}
    conflict = fixes["write-conflict"]  # ordering b after a lets b run: k ends 2, not 1
    assert conflict.applicability.value == "unsafe"
    assert "it changes the end state, e.g. from" in conflict.message
    # b's precondition is false where its level begins: its own fix orders it after a
    assert fixes["precondition-unsatisfied"].applicability.value == "safe"
    _write(tmp_path / "p.json", plan)
    assert main(["verify", "p.json", "--profile", "strict", "--fix"]) == 0
    captured = capsys.readouterr()
    assert "fixed [precondition-unsatisfied] b: depend on 'k'" in captured.out
    assert "warning[write-conflict]" not in captured.out  # ordered by the same edit
    assert json.loads((tmp_path / "p.json").read_text())["actions"][1]["state_dependencies"] == [
        "k"
    ]


def test_under_car_the_writers_are_ordered_by_state_dependencies_as_the_runtime_orders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36: CAR orders actions by state_dependencies alone, so the later writer
    now depends on the key; the runtime itself then reports no conflict and leaves
    the same end state."""
    from .car_oracle import runtime

    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "p.json", CONFLICT)
    assert main(["verify", "p.json", "--diff"]) == 1
    captured = capsys.readouterr()
    assert '+        "k"' in captured.out and '"dependencies"' not in captured.out
    assert main(["verify", "p.json", "--fix"]) == 1  # 'stale' is written by nothing
    out = capsys.readouterr().out
    assert "fixed [write-conflict] a: add 'k' to b's state_dependencies" in out
    assert "error[missing-dependency] c: state dependency 'stale' not available" in out
    fixed = json.loads((tmp_path / "p.json").read_text())
    assert fixed["actions"][1]["state_dependencies"] == ["k"]
    rt = runtime()
    before = json.loads(rt.verify(json.dumps(CONFLICT), json.dumps({"stale": 0}), None, None, None))
    after = json.loads(rt.verify(json.dumps(fixed), None, None, None, None))
    assert before["conflicts"] and not after["conflicts"]
    for state in ({}, {"k": 0}, {"k": "x", "stale": 1}):
        original = json.loads(rt.simulate(json.dumps(CONFLICT), json.dumps(state)))
        repaired = json.loads(rt.simulate(json.dumps(fixed), json.dumps(state)))
        assert repaired == original, state
    assert main(["verify", "p.json", "--diff"]) == 0  # nothing left: fixed once, it stays


def test_under_car_an_ordering_optimize_would_undo_is_only_shown() -> None:
    """A key outside the later writer's explicit read_set would be a phantom
    dependency: optimize would take it out, and --fix would undo itself."""
    plan = copy.deepcopy(CONFLICT)
    plan["actions"][1]["read_set"] = ["other"]
    result = fix_document(plan, unsafe=True)
    assert not result.fixes
    checked = car_verify.verify(plan)
    (conflict,) = [i for i in checked.issues if i.code == "write-conflict"]
    assert conflict.fix is None and checked.fixes  # derived on first read
    fix = next(i.fix for i in checked.issues if i.code == "write-conflict")
    assert fix is not None and fix.applicability.value == "display" and not fix.edits
    assert "optimize would take it out again" in fix.message


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
    assert "plans/p.json: fixed [write-conflict] b" in captured.out
    assert "--fix rewrites .json files only; 1 other files not repaired" in captured.err
    assert "warning[write-conflict]" not in captured.out
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


# Each example applies fixes round after round, asking z3 about orderings: a fixed,
# small number keeps CI's time (the other properties of fixes: tests/test_repair.py).
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(proposals(max_actions=5, cycles=False), states, st.sampled_from(["strict", "car"]))
@example(  # CAR's optimize drops a dependency on a key nothing writes: x absent, a0 ran
    {
        "actions": [
            {
                "id": "a0",
                "type": "tool_call",
                "tool": "t",
                "expected_effects": {"y": 0},
                "state_dependencies": ["x"],
            }
        ]
    },
    {},
    "car",
)
def test_a_repair_never_adds_a_finding_and_a_proven_ordering_keeps_the_end_state(
    doc: dict[str, Any], state: dict[str, Any], profile: str
) -> None:
    """The contract of --fix under each profile: verify reports nothing new (but what
    a fix lets it see: an operator spelled right is evaluated), and
    where the fixes are write conflicts' orderings (proven by z3), the repaired
    plan leaves, from any initial state, the state the original leaves."""
    original = copy.deepcopy(doc)
    repaired = fix_document(doc, profile=profile, timeout_ms=5_000)
    assert doc == original  # the caller's document is not modified
    after = repaired.document
    if all(f.code == "write-conflict" for f in repaired.fixes):
        assert json_equal(
            dict(car_verify.simulate(after, initial_state=state, profile=profile)),
            dict(car_verify.simulate(doc, initial_state=state, profile=profile)),
        )

    def found(d: dict[str, Any]) -> set[tuple[Any, ...]]:
        result = car_verify.verify(d, profile=profile)
        return {(i.action_id, i.code, i.severity.value) for i in result.issues}

    from car_verify.deciders.repair import REVEALS

    # nothing new, but what a fix lets the checks see (an operator now evaluated)
    revealed = {code for fix in repaired.fixes for code in REVEALS.get(fix.code, ())}
    assert {f for f in found(after) - found(doc) if f[1] not in revealed} == set()
    for fix in repaired.fixes:  # every edit is a finding's safe fix, said back
        assert fix.code in CODES and fix.fix.applicability.value == "safe"
