"""A newcomer's pass over the command line (issue 59): nothing exits 0 where nothing
was checked, messages name only what the user gave, and counts read as English.

Each test runs the command as a user would (``main(argv)``), in its own folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from car_verify.base.values import listed, plural
from car_verify.cli import main

CALL = {"id": "a", "type": "tool_call", "tool": "t"}


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, doc: object) -> str:
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return str(path)


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()  # the walk up for .car stops here
    monkeypatch.chdir(tmp_path)


# --- exit 0 only where something was checked ------------------------------------------


def test_policy_impact_with_no_readable_run_exits_2_as_audit_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write(tmp_path / "old.toml", 'deny_tool = ["a"]\n')
    new = write(tmp_path / "new.toml", 'deny_tool = ["b"]\n')
    runs = write(tmp_path / "runs.jsonl", '{"x": 1}\n')
    code, out, err = run(["policy", "impact", old, new, runs], capsys)
    assert code == 2 and out == ""
    assert "no readable trajectory (1 record could not be read), so nothing was replayed" in err
    assert main(["audit", runs, "-o", str(tmp_path / "out")]) == 2


def test_a_second_audit_into_the_folder_of_a_failed_one_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = write(tmp_path / "runs.jsonl", '{"x": 1}\n')
    out_dir = str(tmp_path / "out")
    assert main(["audit", runs, "-o", out_dir]) == 2
    capsys.readouterr()
    code, out, err = run(["audit", runs, "-o", out_dir], capsys)
    assert code == 2 and out == "", out
    assert "no readable trajectory (1 malformed record), so nothing was audited" in err
    assert "written by an earlier run" in err and "--fresh" in err


def test_intent_without_an_intent_is_not_safe_but_unchecked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    proposal = write(tmp_path / "p.json", {"actions": [CALL]})
    code, out, err = run(["intent", proposal], capsys)
    assert code == 2 and "safe" not in out
    assert "has no `intent`, so no call was checked" in err
    empty = write(tmp_path / "e.json", {"intent": {"allowed_tools": []}, "actions": [CALL]})
    code, _, err = run(["intent", empty], capsys)
    assert code == 2 and "declares nothing" in err
    given = {"intent": {"allowed_tools": ["t"]}, "actions": [{"id": "a", "tool": "t"}]}
    assert main(["intent", write(tmp_path / "g.json", given)]) == 0


def test_policy_lint_of_a_folder_holding_only_rules_tml_names_it_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "pol"
    folder.mkdir()
    (folder / "rules.tml").write_text('deny_tool = ["x"]\n')
    code, out, err = run(["policy", "lint", str(folder)], capsys)
    assert code == 2 and out == ""
    assert "skipped rules.tml (not a .toml file)" in err and "nothing was linted" in err
    (folder / "rules.toml").write_text('deny_tool = ["x"]\n')
    code, out, _ = run(["policy", "lint", str(folder)], capsys)
    assert code == 0 and "loaded 1 rule from 1 file" in out and "skipped rules.tml" in out


def test_simulate_exits_1_when_actions_are_blocked_as_verify_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def gated(name: str, value: int) -> dict[str, object]:
        pre = [{"key": "k", "operator": "eq", "value": value}]
        return {"id": name, "type": "tool_call", "tool": "t", "preconditions": pre}

    write_z = {"id": "w", "type": "state_write", "parameters": {"key": "z", "value": 1}}
    plan = {"actions": [gated("a", 1), gated("b", 2), gated("c", 3), write_z]}
    proposal = write(tmp_path / "p.json", plan)
    code, out, err = run(["simulate", proposal], capsys)
    assert code == 1 and json.loads(out) == {"z": 1}
    assert "3 of 4 actions blocked (a, b, c)" in err
    assert main(["verify", proposal]) == 1
    capsys.readouterr()
    state = write(tmp_path / "s.json", {"k": 1})
    plan = {"actions": [gated("a", 1), write_z]}
    assert main(["simulate", write(tmp_path / "ok.json", plan), "--state", state]) == 0


# --- what messages say ----------------------------------------------------------------


def test_counts_read_as_english() -> None:
    assert plural(0, "trajectory") == "0 trajectories"
    assert plural(1, "trajectory") == "1 trajectory"
    assert plural(2, "key") == "2 keys" and plural(2, "policy violation") == "2 policy violations"
    assert plural(1, "finding") == "1 finding" and plural(3, "finding") == "3 findings"
    assert listed(["a", "b"]) == "a, b"
    assert listed([str(i) for i in range(8)]) == "0, 1, 2, 3, 4 and 3 more"
    assert listed(["a", "b"], total=9) == "a, b and 7 more"


def test_policy_impact_and_audit_say_one_trajectory_and_one_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_policy_impact import tau_record

    runs = write(tmp_path / "runs.json", [tau_record(0, [("a", {}, False), ("b", {}, False)])])
    old = write(tmp_path / "old.toml", 'deny_tool = ["a"]\n')
    new = write(tmp_path / "new.toml", 'deny_tool = ["b"]\n')
    code, out, _ = run(["policy", "impact", old, new, runs], capsys)
    assert code == 1
    assert out.startswith("2 calls in 1 trajectory replayed under both sets\n"), out
    assert "in 1 of 1 trajectory (95% CI" in out and "trajectorys" not in out
    baseline = tmp_path / "b.json"
    plan = write(tmp_path / "p.json", {"actions": [{**CALL, "precondition": []}]})
    main(["lint", plan, "--write-baseline", str(baseline)])
    assert "wrote 1 finding to" in capsys.readouterr().err


def test_policy_diff_takes_what_policy_impact_takes_and_names_the_argument_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write(tmp_path / "old.toml", 'deny_tool = ["a"]\n')
    new = write(tmp_path / "new.toml", 'deny_tool = ["a", "b"]\n')
    code, out, _ = run(["policy", "diff", old, new], capsys)
    assert code == 0 and out.startswith("stricter"), out
    code, _, err = run(["policy", "diff", old, str(tmp_path / "nope")], capsys)
    assert code == 2 and "NEW " in err and "--policies" not in err
    runs = write(tmp_path / "runs.jsonl", "")
    code, _, err = run(["policy", "impact", old, str(tmp_path / "nope"), runs], capsys)
    assert code == 2 and "NEW " in err and "--policies" not in err, err
    code, _, err = run(["policy", "lint", str(tmp_path / "nope")], capsys)
    assert code == 2 and "DIR " in err and "--policies" not in err, err


# --- the docs say what a real run prints ----------------------------------------------


def test_the_policy_impact_example_in_policies_md_is_a_real_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The console block of docs/policies.md is this command's output, as it is now."""
    import re

    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "policies.md").read_text(encoding="utf-8")
    block = re.search(r"```console\n\$ (car-verify policy impact [^\n]*)\n(.*?)```", page, re.S)
    assert block is not None
    argv = [str(root / a) if a.startswith("examples/") else a for a in block[1].split()[1:]]
    code, out, _ = run(argv, capsys)
    assert code == 1 and out == block[2]


# --- a user's module: what went wrong in it, said as such -----------------------------


def test_workflow_names_what_went_wrong_with_the_module(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "raises.py").write_text('raise RuntimeError("boom at import")\n')
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(3)\n")
    (tmp_path / "needs_langgraph.py").write_text(
        'raise ModuleNotFoundError("No module named \'langgraph\'", name="langgraph")\n'
    )
    code, out, err = run(["workflow", "raises:graph"], capsys)
    assert code == 2 and out == "" and "internal error" not in err
    assert "importing 'raises' raised RuntimeError: boom at import" in err
    code, _, err = run(["workflow", "exits:graph"], capsys)
    assert code == 2 and "raised SystemExit: 3" in err
    code, _, err = run(["workflow", "needs_langgraph:graph"], capsys)
    assert code == 2 and "pip install 'car-verify[langchain]'" in err
    code, _, err = run(["workflow", "raises.py:graph"], capsys)
    assert code == 2 and "without .py: car-verify workflow raises:graph" in err
    code, _, err = run(["workflow", "absent:graph"], capsys)
    assert code == 2 and "no module 'absent'" in err


def test_run_names_the_flag_the_tools_were_given_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "tools.py").write_text('raise ValueError("bad tools")\n')
    plan = write(tmp_path / "p.json", {"actions": [CALL]})
    code, _, err = run(["run", plan, "--tool-module", str(tmp_path / "tools.py")], capsys)
    assert code == 2 and err.startswith("car-verify: error: --tool-module: importing"), err
    assert "ValueError: bad tools" in err and "--tools" not in err
    code, _, err = run(["run", plan, "--tool-module", "tools:MISSING"], capsys)
    assert code == 2 and "--tool-module: " in err and "--tools" not in err
