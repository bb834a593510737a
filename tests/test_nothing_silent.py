"""Nothing passes silently (issue 25, items 1, 3 and 4): each reproducer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import car_verify
from car_verify.cli import main
from car_verify.errors import InputError

PLAN = {
    "actions": [
        {
            "id": "deploy",
            "type": "tool_call",
            "tool": "deploy",
            "precondition": [{"key": "tests_passed", "value": True}],
        }
    ]
}


@pytest.mark.parametrize(("profile", "severity"), [("car", "info"), ("strict", "warning")])
def test_a_misspelled_field_is_named_with_the_nearest_known_one(
    profile: str, severity: str
) -> None:
    result = car_verify.verify(PLAN, profile=profile)
    (issue,) = [i for i in result.issues if i.code == "unknown-field"]
    assert issue.severity.value == severity and issue.action_id == "deploy"
    assert "`precondition`" in issue.message and "did you mean `preconditions`?" in issue.message
    assert issue.pointer == "/actions/0/precondition"
    assert car_verify.load(PLAN).to_dict()["actions"][0]["precondition"]  # still kept


def test_a_state_or_tools_file_given_as_the_proposal_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"tests_passed": True}))
    assert main(["verify", str(state)]) == 2
    assert "not a proposal" in capsys.readouterr().err
    with pytest.raises(InputError, match="not a proposal"):
        car_verify.load({"action": []})  # `action` for `actions`


def test_equivalent_defaults_to_auto_and_never_passes_a_sample_off_as_a_proof(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def plan(z: int) -> dict[str, object]:
        return {
            "actions": [
                {
                    "id": "a",
                    "type": "tool_call",
                    "tool": "t",
                    "preconditions": [{"key": "mode", "value": "blue"}],
                    "expected_effects": {"z": z},
                }
            ]
        }

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(plan(1)))
    b.write_text(json.dumps(plan(2)))
    # car: sampling only, and equal probes are unknown (exit 3), said on the first line
    assert main(["equivalent", str(a), str(b)]) == 3
    assert capsys.readouterr().out.startswith("unknown (sampled")
    # strict: z3 decides; they differ where no probe looks
    assert main(["equivalent", str(a), str(b), "--profile", "strict"]) == 1
    capsys.readouterr()
    assert main(["equivalent", str(a), str(b), "--method", "sampled", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["tier"] == "sampled"


def test_a_broken_pyproject_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.car-verify\n")
    (tmp_path / "p.json").write_text(json.dumps({"actions": []}))
    monkeypatch.chdir(tmp_path)
    assert main(["lint", "p.json"]) == 2
    err = capsys.readouterr().err
    assert "pyproject.toml" in err and "not valid TOML" in err


@pytest.mark.parametrize("where", ["--select", "--ignore", "config"])
def test_an_unknown_code_is_an_error(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "p.json").write_text(json.dumps({"actions": []}))
    monkeypatch.chdir(tmp_path)
    args = ["lint", "p.json"]
    if where == "config":
        (tmp_path / "pyproject.toml").write_text('[tool.car-verify]\nignore = ["write-conflit"]\n')
    else:
        args += [where, "write-conflit"]
    assert main(args) == 2
    assert "unknown code 'write-conflit'" in capsys.readouterr().err
    if where != "config":  # a known code and a policy rule name are accepted
        assert main(["lint", "p.json", "--select", "deny_tool:rm,write-conflict"]) == 0
