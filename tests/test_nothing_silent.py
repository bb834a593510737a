"""Nothing passes silently (issue 25, items 1, 3 and 4): each reproducer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import car_verify
from car_verify.base.errors import InputError
from car_verify.cli import main
from car_verify.deciders.workflow import check_workflow_policies, parse_graph
from car_verify.plan.flow import parse_labels, parse_policy

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


@pytest.mark.parametrize(("profile", "severity"), [("car", "info"), ("strict", "error")])
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
    # z3 decides under both profiles; they differ where no probe looks
    for profile in ("car", "strict"):
        assert main(["equivalent", str(a), str(b), "--profile", profile]) == 1
        assert capsys.readouterr().out.startswith("not equivalent (tier decision_procedure)")
    # sampling on the command line probes the constants the plans name, too
    assert main(["equivalent", str(a), str(b), "--method", "sampled", "--format", "json"]) == 1
    found = json.loads(capsys.readouterr().out)
    assert found["tier"] == "sampled" and found["equivalent"] is False


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
    if where != "config":  # a known code and a loaded policy's rule name are accepted
        (tmp_path / ".car" / "policies").mkdir(parents=True)
        (tmp_path / ".car" / "policies" / "p.toml").write_text('deny_tool = ["rm"]\n')
        assert main(["lint", "p.json", "--select", "deny_tool:rm,write-conflict"]) == 0


@pytest.mark.parametrize("profile", ["car", "strict"])
def test_sarif_points_each_result_at_its_own_rule(profile: str) -> None:
    """A policy finding pointed at rule 0 (`assertion-fails`) before (issue 24)."""
    from car_verify.reporters import render_sarif
    from car_verify.rules.policy import load_policy_text

    plan = {"actions": [{"id": "wipe", "type": "tool_call", "tool": "rm"}]}
    result = car_verify.verify(
        plan, policies=load_policy_text('deny_tool = ["rm"]\n'), profile=profile
    )
    run = json.loads(render_sarif(result))["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert run["results"]
    for found in run["results"]:
        assert rules[found["ruleIndex"]]["id"] == found["ruleId"]
    assert "deny_tool:rm" in {found["ruleId"] for found in run["results"]}


def test_run_json_carries_the_rollback_and_the_abort_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 9: `run --format json` printed only the wire ProposalResult."""
    module = tmp_path / "mytools.py"
    module.write_text(
        "TOOLS = {'charge': lambda p: {}, 'refund': lambda p: {}, 'boom': lambda p: 1 / 0}\n"
    )
    plan = {
        "actions": [
            {
                "id": "charge",
                "type": "tool_call",
                "tool": "charge",
                "expected_effects": {"charged": True},
                "reversibility": "compensable",
                "compensation": {"type": "tool", "tool": "refund"},
            },
            {"id": "ship", "type": "tool_call", "tool": "boom", "state_dependencies": ["charged"]},
        ]
    }
    proposal = tmp_path / "p.json"
    proposal.write_text(json.dumps(plan))
    code = main(
        ["run", str(proposal), "--tool-module", f"{module}:TOOLS", "--format", "json", "--quiet"]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    assert doc["aborted_by"].startswith("ship")
    assert doc["rollback"]["compensated"] == ["charge"]
    assert doc["statuses"] == {"charge": "compensated", "ship": "failed"}
    assert [r["status"] for r in doc["results"]] == ["succeeded", "failed"]  # the wire's own
    assert main(["run", str(proposal), "--tool-module", f"{module}:TOOLS", "--quiet"]) == 1
    assert "compensated charge" in capsys.readouterr().out.replace("  ", " ")


@pytest.mark.parametrize("profile", ["car", "strict"])
def test_a_requested_pass_that_cannot_run_is_an_error(
    profile: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 2: `verify --passes policies` with no policies said "0 of 1 checks ran", exit 0."""
    plan = tmp_path / "p.json"
    plan.write_text(json.dumps({"actions": [{"id": "a", "type": "tool_call", "tool": "t"}]}))
    code = main(["verify", str(plan), "--passes", "policies", "--profile", profile])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "policies" in err


@pytest.mark.parametrize("command", ["verify", "lint", "dot"])
def test_the_projects_policies_are_found_and_said(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Item 2: `policy check` found 5 violations that `verify` and `lint` did not see."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".car" / "policies").mkdir(parents=True)
    (tmp_path / ".car" / "policies" / "security.toml").write_text('deny_tool = ["rm"]\n')
    sub = tmp_path / "plans"
    sub.mkdir()
    (sub / "p.json").write_text(
        json.dumps({"actions": [{"id": "wipe", "type": "tool_call", "tool": "rm"}]})
    )
    monkeypatch.chdir(sub)  # found by walking up
    main([command, "p.json"])
    out, err = capsys.readouterr()
    assert "deny_tool:rm" in out and "policies:" in err and "--no-policies" in err
    main([command, "p.json", "--no-policies"])
    out, err = capsys.readouterr()
    assert "deny_tool:rm" not in out and "policies:" not in err


def test_a_utf16_file_is_read_alike_everywhere_and_its_bad_bytes_are_named_in_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A UTF-16 file (with its byte order mark) was read by verify and refused by
    lint and the YAML reader as "not UTF-8 text: byte ff" at 1:1; one that ends
    inside a character was placed by its byte offset (column 30 for the 15th
    character) and called "not UTF-8"."""
    from car_verify.corpora.lint import LintConfig, lint_file

    text = '{"actions": [\n  {"id": "a", "type": "tool_call", "tool": "t"}]}'
    good = tmp_path / "good.json"
    good.write_bytes(text.encode("utf-16"))
    assert car_verify.load(good).actions[0].id == "a"
    assert lint_file(good, LintConfig()).findings == []
    yaml_file = tmp_path / "good.yaml"
    yaml_file.write_bytes("actions:\n  - {id: a, type: tool_call, tool: t}\n".encode("utf-16"))
    assert main(["verify", str(yaml_file), "--no-policies"]) == 0
    cut = tmp_path / "cut.json"
    cut.write_bytes('{"actions": [\n  {"id": "a"}]}'.encode("utf-16")[:-1])
    with pytest.raises(InputError) as err:
        car_verify.load(cut)
    assert (err.value.line, err.value.column) == (2, 15)
    assert err.value.problem == "not UTF-16 text: the file ends inside a character (byte 7d)"
    (finding,) = lint_file(cut, LintConfig()).findings
    assert (finding.line, finding.column, finding.code) == (2, 15, "invalid-file")


def test_a_huge_integer_and_non_utf8_bytes_are_named_by_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 8: Python's advice (`sys.set_int_max_str_digits`) and codec text leaked."""
    from car_verify.corpora.lint import LintConfig, lint_file

    big = tmp_path / "big.json"
    big.write_text('{"actions": [\n  {"id": "a", "n": ' + "9" * 5000 + "}]}")
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"actions": [{"id": "a\xff"}]}')
    with pytest.raises(InputError) as err:
        car_verify.load(big)
    assert (err.value.line, err.value.column) == (2, 20)
    assert "5,000 digits" in err.value.problem and "set_int_max_str_digits" not in str(err.value)
    with pytest.raises(InputError) as err:
        car_verify.load(bad)
    assert (err.value.line, err.value.column) == (1, 23) and "not UTF-8" in err.value.problem
    for path, at in ((big, (2, 20)), (bad, (1, 23))):
        (finding,) = lint_file(path, LintConfig()).findings
        assert (finding.line, finding.column) == at and finding.code == "invalid-file"


# --- issue 25, item 7: several files, YAML, stdin ----------


def _stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))


def test_verify_takes_several_files_and_yaml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    good = {"actions": [{"id": "a", "type": "tool_call", "tool": "t"}]}
    (tmp_path / "good.json").write_text(json.dumps(good))
    (tmp_path / "bad.yaml").write_text(
        "actions:\n  - id: ok\n    type: tool_call\n    tool: t\n"
        "  - id: gated\n    type: tool_call\n    tool: deploy\n"
        "    preconditions:\n      - {key: tests_passed, value: true}\n"
    )
    args = ["verify", "good.json", "bad.yaml", "--profile", "strict"]
    assert main(args) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("good.json: valid: 0 errors, 0 warnings (7 of 9 checks ran")
    assert out[1].startswith("bad.yaml:5:5: error[precondition-unsatisfied] gated: ")
    assert out[2].startswith("bad.yaml: invalid: 1 error")
    assert main([*args, "--format", "json"]) == 1
    docs = json.loads(capsys.readouterr().out)
    assert [(d["file"], d["result"]["valid"]) for d in docs] == [
        ("good.json", True),
        ("bad.yaml", False),
    ]
    assert main(["verify", "good.json", "--profile", "strict"]) == 0  # one file: one line
    assert capsys.readouterr().out.startswith("valid: ")
    # a YAML error names the file and the line; one document per file
    (tmp_path / "wrong.yaml").write_text(
        "actions:\n  - id: a\n    type: tool_call\n    preconditions: 3\n"
    )
    assert main(["verify", "wrong.yaml"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "car-verify: error: wrong.yaml: line 2, column 5: actions[0].preconditions: "
        "expected an array, got a number\n"
    )
    (tmp_path / "two.yaml").write_text("actions: []\n---\nactions: []\n")
    assert main(["verify", "two.yaml"]) == 2
    assert "holds 2 YAML documents" in capsys.readouterr().err


def test_stdin_everywhere_and_named_twice_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    plan = {"actions": [{"id": "d", "type": "tool_call", "tool": "t",
                         "preconditions": [{"key": "ok", "value": True}]}]}  # fmt: skip
    (tmp_path / "p.json").write_text(json.dumps(plan))
    _stdin(monkeypatch, json.dumps({"ok": True}))
    assert main(["verify", "p.json", "--state", "-", "--profile", "strict"]) == 0
    capsys.readouterr()
    _stdin(monkeypatch, json.dumps(plan))
    assert main(["equivalent", "-", "-"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "car-verify: error: stdin (-) is named twice: the first proposal is read from it, "
        "and it can be read only once; give the second proposal as a file\n"
    )
    _stdin(monkeypatch, json.dumps(plan))
    assert main(["verify", "-", "--state", "-"]) == 2
    err = capsys.readouterr().err  # the state is read first, then the proposal
    assert "the state file is read from it" in err and "give the proposal as a file" in err


def _chain(n: int, last: int) -> dict[str, object]:
    """A chain of guarded writes on a few keys: enough for the solver to need time."""
    actions = []
    for i in range(n):
        actions.append(
            {
                "id": f"a{i}",
                "type": "state_write",
                "parameters": {"key": f"k{i % 7}", "value": last if i == n - 1 else i},
                "preconditions": [{"key": f"k{(i + 3) % 7}", "operator": "gt", "value": i % 5}],
                "dependencies": [f"a{i - 1}"] if i else [],
            }
        )
    return {"actions": actions}


def test_timeout_on_the_solver_commands_ends_in_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 25, item 7: `--timeout` on every command that calls z3, ending in
    unknown (exit 3), never a hang; a timeout that is no positive number is refused."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_chain(300, 299)))
    b.write_text(json.dumps(_chain(300, -1)))
    args = ["equivalent", str(a), str(b), "--profile", "strict", "--method", "z3"]
    assert main([*args, "--timeout", "0.001", "--format", "json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["equivalent"] is None and "time budget (1 ms; --timeout)" in doc["reason"]
    for bad in ("0", "-1", "soon", "inf"):
        assert main([*args, "--timeout", bad]) == 2
        assert "--timeout" in capsys.readouterr().err
    assert main(["wp", str(a), "--timeout", "nan"]) == 2


def test_color_follows_the_flag_the_terminal_and_no_color() -> None:
    """Issue 25, item 7: colour on a terminal (`--color auto|always|never`), never
    when NO_COLOR is set (unless `--color always`), never in a pipe."""
    import io

    from car_verify.reporters.text import color_wanted

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert color_wanted("auto", Tty(), {}) is True
    assert color_wanted("auto", io.StringIO(), {}) is False
    assert color_wanted("auto", Tty(), {"NO_COLOR": "1"}) is False
    assert color_wanted("auto", Tty(), {"TERM": "dumb"}) is False
    assert color_wanted("auto", io.StringIO(), {"FORCE_COLOR": "1"}) is True
    assert color_wanted("always", io.StringIO(), {"NO_COLOR": "1"}) is True
    assert color_wanted("never", Tty(), {"FORCE_COLOR": "1"}) is False


def test_color_statistics_quiet_and_show_settings_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_COLOR", raising=False)
    plan = {
        "actions": [
            {"id": f"p{i}", "type": "tool_call", "tool": "poll", "parameters": {"n": 1}}
            for i in range(3)
        ]
        + [{"id": "d", "type": "tool_call", "tool": "t", "preconditions": [{"key": "ok"}]}]
    }
    (tmp_path / "p.json").write_text(json.dumps(plan, indent=2))
    base = ["verify", "p.json", "--profile", "strict"]
    assert main([*base, "--color", "always"]) == 1
    out = capsys.readouterr().out
    assert "\x1b[1;31merror[precondition-unsatisfied]\x1b[0m" in out and "\x1b[1mp.json:" in out
    assert main(base) == 1 and "\x1b[" not in capsys.readouterr().out  # a pipe: no colour
    monkeypatch.setenv("NO_COLOR", "1")
    assert main([*base, "--color", "auto"]) == 1 and "\x1b[" not in capsys.readouterr().out
    # --statistics: one line per code, most frequent first, then the verdict
    assert main([*base, "--statistics"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["1", "precondition-unsatisfied", "error"]
    assert lines[1].split()[:3] == ["1", "repeated-call", "warning"]
    assert lines[-1].startswith("invalid: 1 error, 1 warning")
    assert main([*base, "--statistics", "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out) == [
        {"code": "precondition-unsatisfied", "severity": "error", "count": 1},
        {"code": "repeated-call", "severity": "warning", "count": 1},
    ]
    # -q: the findings only
    assert main([*base, "-q"]) == 1
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 2 and "invalid:" not in out
    assert main(["lint", ".", "-q", "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 2 and "finding" not in out.splitlines()[-1][:12]
    # --show-settings: what would run, and nothing is checked
    (tmp_path / ".car").mkdir()
    (tmp_path / ".car" / "verify.toml").write_text('profile = "strict"\nextend-exclude = ["x*"]\n')
    assert main(["lint", "--show-settings"]) == 0
    out = capsys.readouterr().out
    assert f'config = "{tmp_path / ".car" / "verify.toml"}"' in out
    assert 'extend-exclude = ["x*"]' in out and 'profile = "strict"' in out
    assert main(["verify", "p.json", "--show-settings", "--format", "json"]) == 0
    settings = json.loads(capsys.readouterr().out)
    assert settings["profile"] == "strict" and settings["profile-from"].endswith("verify.toml")


DUPLICATED = """{
  "actions": [
    {"id": "deploy", "type": "tool_call", "tool": "deploy",
     "preconditions": [{"key": "tests_passed", "value": true}],
     "preconditions": [],
     "parameters": {"env": "staging", "env": "prod"}}
  ]
}
"""


@pytest.mark.parametrize(("profile", "severity"), [("car", "warning"), ("strict", "error")])
def test_a_repeated_key_is_a_finding_naming_the_key_and_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], profile: str, severity: str
) -> None:
    """Issue 25, item 1: duplicate JSON object keys were accepted silently (the last
    value won: here the deploy's gate was dropped without a word)."""
    result = car_verify.verify(DUPLICATED, profile=profile)
    found = [(i.code, i.severity.value, i.action_id, i.pointer) for i in result.issues]
    assert ("duplicate-key", severity, "deploy", "/actions/0") in found
    assert ("duplicate-key", severity, "deploy", "/actions/0/parameters") in found
    (gate,) = [i for i in result.issues if i.pointer == "/actions/0"]
    assert "key `preconditions` appears more than once" in gate.message
    assert "(again at line 5, column 6)" in gate.message
    path = tmp_path / "p.json"
    path.write_text(DUPLICATED)
    assert main(["lint", str(path), "--no-progress", "--profile", profile]) == int(
        severity == "error"
    )
    assert f"p.json:3:5: {severity}[duplicate-key] deploy: key `env`" in capsys.readouterr().out
    # a state file with a repeated key is an input error naming the place
    state = tmp_path / "state.json"
    state.write_text('{"tests_passed": false,\n "tests_passed": true}')
    assert main(["verify", str(path), "--state", str(state)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"car-verify: error: {state}: line 2, column 2: key `tests_passed`")
    # a dict has no repeats: nothing to report, and nothing is invented
    assert "duplicate-key" not in car_verify.verify(json.loads(DUPLICATED)).codes()


def test_every_command_that_reports_takes_format_json(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 25, item 7: one `--format` on every command (text for people, JSON for
    machines); `policy lint` had none."""
    root = Path(__file__).resolve().parents[1] / "examples" / "policies"
    assert main(["policy", "lint", str(root), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["total"] == 10 and len(doc["files"]) == 2 and doc["rules"]
    assert main(["policy", "lint", str(root)]) == 0
    assert capsys.readouterr().out.startswith("loaded 10 rules from 2 files")


GRAPH = {"entry": "a", "stages": ["a"], "edges": []}


@pytest.mark.parametrize(
    ("read", "message"),
    [
        (lambda: parse_labels({"t": {"sinks": 1}}),
         "labels.t.sinks: unknown field 'sinks' (expected one of capability, "
         "confidentiality, trust, sink, declassifier, approval)"),
        (lambda: parse_policy({"min": 1}),
         "policy.min: unknown field 'min' (expected min_confidential or forbidden_sequences)"),
        (lambda: parse_graph({**GRAPH, "x": 1}),
         "graph.x: unknown field 'x' (expected one of entry, terminals, stages, edges)"),
        (lambda: parse_graph(
            {**GRAPH, "edges": [{"from": "a", "to": "a", "if": 1}]}),
         "graph.edges[0].if: unknown field 'if' (expected from, to, condition)"),
        (lambda: check_workflow_policies(
            GRAPH, [{"kind": "precedes", "earlier": "a", "later": "a", "why": 1}]),
         "policies[0].why: unknown field 'why' (expected kind, earlier, later, name)"),
    ],
)  # fmt: skip
def test_a_strict_json_reader_names_the_unknown_field_and_the_known_ones(
    read: Any, message: str
) -> None:
    with pytest.raises(InputError) as caught:
        read()
    assert str(caught.value) == message


def test_policies_are_found_from_the_proposals_folder_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As ruff finds its configuration: a proposal is checked against the
    .car/policies above its own file, wherever the command runs from; what was
    loaded, or that none was found, is said on stderr."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".car" / "policies").mkdir(parents=True)
    (repo / ".car" / "policies" / "rules.toml").write_text('deny_tool = ["rm"]\n')
    plan = repo / "plans" / "p.json"
    plan.parent.mkdir()
    plan.write_text('{"actions": [{"id": "a", "type": "tool_call", "tool": "rm"}]}')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["verify", str(plan)]) == 1
    said = capsys.readouterr()
    assert "deny_tool:rm" in said.out and str(repo / ".car" / "policies") in said.err
    other = elsewhere / "q.json"
    other.write_text('{"actions": [{"id": "a", "type": "tool_call", "tool": "rm"}]}')
    assert main(["verify", str(other)]) == 0
    assert "no .car/policies at or above" in capsys.readouterr().err  # said, not silent
    assert main(["verify", str(plan), str(other)]) == 1  # each file its own policies
    out = capsys.readouterr().out
    assert out.count("deny_tool:rm") == 1


def test_a_command_that_has_nothing_to_check_says_so_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No policies, an empty policy set, a request without actions, a rule on no
    stage, a plan without steps: each says nothing was checked, exit 2."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    plan = tmp_path / "p.json"
    plan.write_text('{"actions": [{"id": "a", "type": "tool_call", "tool": "t"}]}')
    examples = Path(__file__).resolve().parents[1] / "examples"
    cases: list[tuple[list[str], str]] = [
        (["policy", "check", str(plan)], "no .car/policies at or above"),
        (["intent", str(examples / "prompt-injection" / "intent.json")], "no actions"),
        (
            ["workflow", str(examples / "workflow" / "graph.json"), "--rule",
             "deploy only after approve"],
            "no stage is named 'deploy'",
        ),
        (["check-plan", _write(tmp_path, "e.json", "{}")], "no steps and no goal"),
    ]  # fmt: skip
    for argv, said in cases:
        assert main(argv) == 2, argv
        out = capsys.readouterr()
        assert out.out == "" and said in out.err and "nothing was" in out.err, (argv, out.err)
    (tmp_path / ".car" / "policies").mkdir(parents=True)
    assert main(["policy", "check", str(plan)]) == 2
    assert "holds no rule" in capsys.readouterr().err


def _write(folder: Path, name: str, text: str) -> str:
    (folder / name).write_text(text)
    return str(folder / name)


def test_optimize_prints_the_users_own_document_with_only_the_removed_entries_gone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "p.json"
    plan.write_text(
        '{"actions": [{"id": "a", "type": "tool_call", "tool": "t", "x-note": 1,'
        ' "state_dependencies": ["ghost", "k"], "read_set": ["k"]},'
        ' {"id": "w", "type": "tool_call", "tool": "t", "expected_effects": {"k": 1}}]}'
    )
    assert main(["optimize", str(plan), "--profile", "car"]) == 0
    first = capsys.readouterr().out
    assert main(["optimize", str(plan), "--profile", "car"]) == 0
    assert capsys.readouterr().out == first  # the same bytes every time
    doc = json.loads(first)
    assert set(doc) == {"actions"}  # no id, source or timestamp invented
    assert doc["actions"][0] == {
        "id": "a", "type": "tool_call", "tool": "t", "x-note": 1,
        "state_dependencies": ["k"], "read_set": ["k"],
    }  # fmt: skip


def test_api_arguments_are_named_and_take_what_the_command_line_takes(tmp_path: Path) -> None:
    """A newcomer's first hour: `tools=[names]` said `[0]: expected an object`
    without naming `tools`; `load("x.yaml")` refused YAML the command line reads;
    `initial_state=` took no path though `tools=` did; `--rates` had no Python
    name of its own."""
    plan = {"actions": [{"id": "a", "type": "tool_call", "tool": "deploy"}]}
    with pytest.raises(InputError) as err:
        car_verify.verify(plan, tools=["deploy"])
    assert str(err.value).startswith("tools[0]: expected an object, got a string")
    assert "not of names" in str(err.value)
    with pytest.raises(InputError, match=r"^tools\[0\]\.parameters: expected an object"):
        car_verify.verify(plan, tools=[{"name": "deploy", "parameters": 5}])
    yaml_plan = tmp_path / "plan.yaml"
    yaml_plan.write_text("actions:\n  - id: a\n    type: tool_call\n    tool: deploy\n")
    assert car_verify.load(str(yaml_plan)).actions[0].tool == "deploy"
    assert car_verify.verify(yaml_plan).valid
    bad_yaml = tmp_path / "bad.yml"
    bad_yaml.write_text("actions:\n  - id: a\n    type: 5\n")
    with pytest.raises(InputError) as err:
        car_verify.load(bad_yaml)
    assert (err.value.source, err.value.line) == (str(bad_yaml), 2)
    state = tmp_path / "state.json"
    state.write_text('{"env": "staging"}')
    assert car_verify.verify(plan, initial_state=state).simulated_state == {"env": "staging"}
    assert car_verify.simulate(plan, str(state)) == {"env": "staging"}
    state.write_text("[1]")
    with pytest.raises(InputError, match=r"state\.json: initial_state: expected an object"):
        car_verify.verify(plan, initial_state=state)
    given = car_verify.risk(plan, rates={"deploy": 0.25})
    assert given.to_dict() == car_verify.risk(plan, None, {"deploy": 0.25}).to_dict()
    with pytest.raises(car_verify.UsageError, match="once"):
        car_verify.risk(plan, None, {"deploy": 1}, rates={"deploy": 0.5})
