"""car-verify lint: locations, formats (SARIF against the official schema),
configuration, suppressions, baselines, broken files, exit codes, pre-commit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import proposals

import car_verify
from car_verify.cli import main
from car_verify.corpora.lint import LintConfig, find_config, lint_file, lint_paths, load_config

pytestmark = pytest.mark.usefixtures("strict_cli")

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).resolve().parents[1]

BAD = {
    "id": "p",
    "actions": [
        {"id": "ok", "type": "tool_call", "tool": "t", "parameters": {"n": 1}},
        {
            "id": "gated",
            "type": "tool_call",
            "tool": "deploy",
            "preconditions": [{"key": "tests_passed", "value": True}],
        },
        *({"id": f"poll{i}", "type": "tool_call", "tool": "poll"} for i in range(3)),
    ],
}


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- locations ----------


def test_locations_in_pretty_and_minified_json_and_yaml(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(repo / "plans" / "pretty.json", json.dumps(BAD, indent=2))
    minified = json.dumps(BAD, separators=(",", ":"))
    write(repo / "plans" / "mini.json", minified)
    yaml_text = (
        "id: p\nactions:\n  - id: ok\n    type: tool_call\n    tool: t\n"
        "  - id: gated\n    type: tool_call\n    tool: deploy\n    preconditions:\n"
        "      - {key: tests_passed, value: true}\n"
    )
    write(repo / "plans" / "plan.yaml", yaml_text)
    jsonl = "\n".join(
        [
            json.dumps({"actions": [{"id": "a", "type": "tool_call", "tool": "t"}]}),
            json.dumps(
                {
                    "actions": [
                        {
                            "id": "x",
                            "type": "tool_call",
                            "tool": "d",
                            "preconditions": [{"key": "k"}],
                        }
                    ]
                }
            ),
        ]
    )
    write(repo / "plans" / "many.jsonl", jsonl)
    code, out, _ = run(["lint", "plans", "--no-progress"], capsys)
    assert code == 1
    lines = out.splitlines()
    pretty = json.dumps(BAD, indent=2).splitlines()
    gated_line = next(i for i, line in enumerate(pretty, 1) if '"id": "gated"' in line) - 1
    assert f"plans/pretty.json:{gated_line}:5: error[precondition-unsatisfied] gated:" in out
    column = minified.index('{"id":"gated"') + 1
    assert f"plans/mini.json:1:{column}: error[precondition-unsatisfied] gated:" in out
    assert "plans/plan.yaml:6:5: error[precondition-unsatisfied] gated:" in out
    assert any(line.startswith("plans/many.jsonl:2:") for line in lines)
    poll3_line = next(i for i, line in enumerate(pretty, 1) if '"id": "poll2"' in line) - 1
    assert f"plans/pretty.json:{poll3_line}:5: warning[repeated-call] poll2:" in out


def test_a_broken_file_among_good_ones(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(repo / "a.json", json.dumps({"actions": [{"id": "a", "type": "tool_call", "tool": "t"}]}))
    write(repo / "b.json", '{\n  "actions": [\n    {"id": "x",}\n  ]\n}\n')
    write(repo / "c.yaml", "actions:\n  - id: [unclosed\n")
    write(
        repo / "d.json",
        json.dumps({"actions": [{"id": "d", "type": "tool_call", "preconditions": "x"}]}),
    )
    write(repo / "tools.json", json.dumps([{"name": "t"}]))
    write(
        repo / "e.json",
        json.dumps(
            {
                "actions": [
                    {"id": "e", "type": "tool_call", "tool": "t", "preconditions": [{"key": "k"}]}
                ]
            }
        ),
    )
    code, out, _ = run(["lint", ".", "--no-progress"], capsys)
    assert code == 1
    assert "b.json:3:" in out and "error[invalid-file] not valid JSON" in out
    assert "c.yaml:" in out and "not valid YAML" in out
    assert "d.json:1:" in out and "actions[0].preconditions: expected an array" in out
    assert "tools.json" not in out.split("\n")[0] and "tool registry x1" in out  # read as one
    assert "e.json:1:" in out and "precondition-unsatisfied" in out  # linting went on


def test_odd_documents_get_a_finding_that_says_what_is_wrong(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(repo / "a.jsonl", '{"actions": 3}\n{"id": "not a plan"}\n')
    write(repo / "deep.json", "[" * 100_000 + "]" * 100_000)
    write(repo / "d.yaml", "actions:\n  - type: tool_call\n    tool: t\n    when: 2024-01-01\n")
    write(repo / "ok.json", json.dumps({"actions": [{"type": "tool_call", "tool": "t"}]}))
    code, out, _ = run(["lint", ".", "--no-progress"], capsys)
    assert code == 1
    assert out.splitlines() == [
        "a.jsonl:1:1: error[invalid-file] actions: expected an array, got a number",
        "a.jsonl:2:1: warning[not-a-proposal] no proposal here: expected an object with an "
        "`actions` array",
        "d.yaml:2:5: error[invalid-file] actions[0].when: expected a JSON value, got a Python date "
        "(not JSON); quote the value in the YAML to keep it a string",
        "deep.json:1:1: error[invalid-file] the document is nested too deeply to read",
        "4 findings (3 errors, 1 warning) in 4 files (profile strict)",
    ]


def test_nan_and_overflowing_numbers_are_invalid_files(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``json.loads`` reads ``NaN`` and turns ``1e400`` into infinity; the model
    refuses both, naming where they are."""
    head = '{"actions": [\n  {"id": "a", "type": "tool_call", "tool": "t"},\n  '
    write(
        repo / "nan.json", head + '{"id": "b", "type": "tool_call", "parameters": {"n": NaN}}\n]}'
    )
    write(
        repo / "big.jsonl",
        '{"actions": [{"id": "c", "type": "state_write", "parameters": '
        '{"key": "k", "value": 1e400}}]}',
    )
    code, out, _ = run(["lint", ".", "--no-progress"], capsys)
    assert code == 1
    assert "nan.json:3:3: error[invalid-file]" in out and "actions[1].parameters.n" in out
    assert "big.jsonl:1:" in out and "actions[0].parameters.value" in out
    assert "finite number" in out


def test_each_line_of_a_jsonl_file_is_a_proposal_located_by_its_line(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        json.dumps({"actions": [{"id": "a", "type": "tool_call", "tool": "t"}]}),
        '{"actions": [',
        "",
        json.dumps({"actions": [{"id": "b", "type": "nope"}]}),
    ]
    write(repo / "plans.jsonl", "\n".join(lines) + "\n")
    code, out, _ = run(["lint", ".", "--no-progress"], capsys)
    assert code == 1
    assert out.splitlines()[:2] == [
        "plans.jsonl:2:14: error[invalid-file] not valid JSON: Expecting value",
        "plans.jsonl:4:14: error[unknown-action-type] b: unknown action type 'nope'; "
        "expected one of tool_call, state_write, state_read, assertion",
    ]


# --- formats ----------


def test_sarif_validates_against_the_official_schema(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from jsonschema import Draft4Validator

    write(repo / "p.json", json.dumps(BAD, indent=2))
    write(repo / "broken.json", "{")
    docs = "https://docs.example.org/car-verify"
    _, out, _ = run(["lint", ".", "--format", "sarif", "--no-progress", "--docs-url", docs], capsys)
    log = json.loads(out)
    schema = json.loads((FIXTURES / "sarif-schema-2.1.0.json").read_text())
    checker = Draft4Validator.FORMAT_CHECKER
    errors = sorted(Draft4Validator(schema, format_checker=checker).iter_errors(log), key=str)
    assert errors == []
    run_ = log["runs"][0]
    rules = {r["id"]: r for r in run_["tool"]["driver"]["rules"]}
    assert {"precondition-unsatisfied", "repeated-call", "invalid-file"} <= set(rules)
    assert rules["repeated-call"]["help"]["text"] and rules["repeated-call"]["helpUri"].endswith(
        "#repeated-call"
    )
    result = next(r for r in run_["results"] if r["ruleId"] == "precondition-unsatisfied")
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] > 1 and region["startColumn"] == 5
    assert run_["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "precondition-unsatisfied"


def test_json_and_github_formats(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = {
        "actions": [
            {"id": "a,b", "type": "tool_call", "tool": "t", "preconditions": [{"key": "k"}]}
        ]
    }
    write(repo / "x: y.json", json.dumps(doc))
    code, out, _ = run(["lint", ".", "--format", "json", "--no-progress"], capsys)
    data = json.loads(out)
    assert code == 1 and data["summary"]["errors"] == 1
    assert set(data["findings"][0]) == {
        "path",
        "line",
        "column",
        "code",
        "severity",
        "tier",
        "message",
        "action_id",
        "pointer",
    }
    code, out, _ = run(["lint", ".", "--format", "github", "--no-progress"], capsys)
    assert out.startswith("::error file=x%3A y.json,line=1,col=")
    assert ",title=precondition-unsatisfied::" in out


# --- configuration ----------


def test_configuration_discovery_and_precedence(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(repo / "p.json", json.dumps(BAD))
    write(
        repo / "pyproject.toml",
        '[tool.car-verify]\nignore = ["repeated-call"]\nfail-on = "warning"\n',
    )
    sub = repo / "deep" / "er"
    sub.mkdir(parents=True)
    os.chdir(sub)
    assert find_config() == repo / "pyproject.toml"
    write(repo / ".car" / "verify.toml", 'select = ["repeated-call"]\n')
    assert find_config() == repo / ".car" / "verify.toml"  # .car/verify.toml first
    os.chdir(repo)
    code, out, _ = run(["lint", "p.json", "--no-progress"], capsys)
    assert "repeated-call" in out and "precondition-unsatisfied" not in out
    assert code == 0  # fail-on defaults to error: the repeated call is a warning
    code, out, _ = run(
        ["lint", "p.json", "--no-progress", "--select", "precondition-unsatisfied"], capsys
    )
    assert code == 1 and "precondition-unsatisfied" in out  # the flag wins
    (repo / ".car" / "verify.toml").unlink()
    code, out, _ = run(["lint", "p.json", "--no-progress"], capsys)
    assert "repeated-call" not in out and code == 1


def test_configuration_settings(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(repo / "tools.json", json.dumps([{"name": "t"}, {"name": "deploy"}, {"name": "poll"}]))
    write(repo / "state.json", json.dumps({"tests_passed": True}))
    write(repo / "plans" / "p.json", json.dumps(BAD))
    write(repo / "legacy" / "old.json", json.dumps(BAD))
    write(
        repo / ".car" / "verify.toml",
        "\n".join(
            [
                'tools = ["tools.json"]',
                'state = "state.json"',
                "max-actions = 4",
                'exclude = ["tools.json", "state.json"]',
                "repeat-threshold = 4",
                "[severity]",
                '"too-many-actions" = "warning"',
                "[per-path-ignores]",
                '"legacy/*" = ["too-many-actions"]',
                "",
            ]
        ),
    )
    code, out, _ = run(["lint", ".", "--no-progress"], capsys)
    assert "plans/p.json:1:1: warning[too-many-actions]" in out and "legacy/old.json:1:1" not in out
    assert "precondition-unsatisfied" not in out and "repeated-call" not in out
    assert "suppressed: too-many-actions x1" in out
    assert "not-a-proposal" not in out and code == 0


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("selct = []\n", "selct: unknown key"),
        ('select = "x"\n', "select: expected an array of strings"),
        ("max-actions = -1\n", "max-actions: expected an integer >= 0"),
        ('[severity]\nx = "fatal"\n', "severity.x: expected one of"),
        ('fail-on = "sometimes"\n', "fail-on"),
        ("[per-path-ignores]\nx = 3\n", "per-path-ignores.x"),
        ("per-path-ignores = 3\n", "per-path-ignores: expected a table of glob = [codes]"),
        ("severity = 3\n", "severity: expected a table"),
        ("tools = 5\n", "tools: expected an array of strings"),
        ("state = 5\n", "state: expected a path (a string)"),
        ('exclude = ["a", 3]\n', "exclude: expected an array of strings"),
        ("[tool\n", "not valid TOML"),
    ],
)
def test_bad_configuration_names_file_and_key(
    repo: Path, capsys: pytest.CaptureFixture[str], text: str, needle: str
) -> None:
    write(repo / ".car" / "verify.toml", text)
    write(repo / "p.json", json.dumps(BAD))
    code, out, err = run(["lint", ".", "--no-progress"], capsys)
    assert code == 2 and out == "" and "verify.toml" in err and needle in err
    if not text.startswith("["):
        write(repo / "pyproject.toml", "[tool.car-verify]\n" + text)
        (repo / ".car" / "verify.toml").unlink()
        with pytest.raises(Exception) as raised:
            load_config(repo / "pyproject.toml")
        assert "tool.car-verify" in str(raised.value)


# --- suppressions and baselines ----------


def test_per_action_suppression_is_reported(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads(json.dumps(BAD))
    doc["actions"][4]["metadata"] = {"car-verify": {"ignore": ["repeated-call"]}}
    write(repo / "p.json", json.dumps(doc))
    _, out, _ = run(["lint", ".", "--no-progress"], capsys)
    assert "repeated-call" not in out.splitlines()[0] and "suppressed: repeated-call x1" in out
    _, out, _ = run(["lint", ".", "--no-progress", "--format", "json"], capsys)
    assert [f["code"] for f in json.loads(out)["suppressed"]] == ["repeated-call"]


def test_baselines_match_by_file_action_and_code_not_line(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(repo / "p.json", json.dumps(BAD, indent=2))
    code, _, err = run(["lint", ".", "--no-progress", "--write-baseline", "baseline.json"], capsys)
    assert code == 0 and "wrote 2 findings" in err
    code, out, _ = run(["lint", "p.json", "--no-progress", "--baseline", "baseline.json"], capsys)
    assert code == 0 and "2 in the baseline" in out
    moved = {"actions": [{"id": "pad", "type": "tool_call", "tool": "x"}, *BAD["actions"]]}
    write(repo / "p.json", json.dumps(moved, indent=4))  # every line moves
    code, out, _ = run(["lint", "p.json", "--no-progress", "--baseline", "baseline.json"], capsys)
    assert code == 0 and out.startswith("0 findings")
    new = json.loads(json.dumps(moved))
    new["actions"].append(
        {"id": "late", "type": "tool_call", "tool": "y", "preconditions": [{"key": "q"}]}
    )
    write(repo / "p.json", json.dumps(new))
    code, out, _ = run(["lint", "p.json", "--no-progress", "--baseline", "baseline.json"], capsys)
    assert code == 1 and "error[precondition-unsatisfied] late: precondition q" in out


def test_exit_codes_and_fail_on(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(
        repo / "w.json",
        json.dumps(
            {"actions": [{"id": f"p{i}", "type": "tool_call", "tool": "poll"} for i in range(3)]}
        ),
    )
    assert run(["lint", "w.json", "--no-progress"], capsys)[0] == 0
    assert run(["lint", "w.json", "--no-progress", "--fail-on", "warning"], capsys)[0] == 1
    assert run(["lint", "missing.json", "--no-progress"], capsys)[0] == 2
    assert run(["lint", "w.json", "--tools", "nope.json", "--no-progress"], capsys)[0] == 2


def test_an_unwritable_baseline_is_a_one_line_error(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(repo / "p.json", json.dumps({"actions": []}))
    code, out, err = run(
        ["lint", "p.json", "--no-progress", "--write-baseline", "p.json/b.json"], capsys
    )  # a missing folder is made (.car/baseline.json in a new repository); a file is no folder
    assert (code, out) == (2, "")
    assert err == "car-verify: error: p.json: File exists\n"


def test_tool_files_are_checked_one_by_one(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bad schema or a tool defined twice is an input error naming the file, and
    the tool's index in that file, not in the merged registry."""
    write(repo / "p.json", json.dumps({"actions": []}))
    write(repo / "a.json", json.dumps([{"name": "x"}]))
    write(repo / "b.json", json.dumps([{"name": "y"}, {"name": "x"}]))
    write(repo / "c.json", json.dumps([{"name": "z"}, {"name": "w", "parameters": {"type": 1}}]))
    base = ["lint", "p.json", "--no-progress", "--tools"]
    code, out, err = run([*base, "a.json", "--tools", "b.json"], capsys)
    assert code == 2 and out == ""
    assert 'b.json: [1].name: tool "x" is already defined in' in err and "a.json" in err
    code, out, err = run([*base, "a.json", "--tools", "c.json"], capsys)
    assert code == 2 and "c.json: [1].parameters.type: invalid JSON Schema" in err
    assert run([*base, "a.json", "--tools", "a.json"], capsys)[0] == 2


def test_many_files_use_workers_and_agree(repo: Path) -> None:
    for i in range(70):
        write(repo / "many" / f"p{i:03}.json", json.dumps(BAD if i % 7 == 0 else {"actions": []}))
    serial = lint_paths(["many"], LintConfig(), workers=1, progress=False)
    parallel = lint_paths(["many"], LintConfig(), workers=2, progress=False)
    assert [f.to_dict() for f in serial.findings] == [f.to_dict() for f in parallel.findings]
    assert len(serial.files) == 70


def test_progress_bar_only_on_a_terminal(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(repo / "p.json", json.dumps(BAD))
    lint_paths(["p.json"], LintConfig(), progress=True)
    err = capsys.readouterr().err
    assert "lint:" in err and "/1 [" in err and "files/s" in err  # tqdm, on stderr
    lint_paths(["p.json"], LintConfig())  # stderr is not a terminal under pytest
    assert capsys.readouterr().err == ""


# --- pre-commit ----------


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_pre_commit_try_repo(tmp_path: Path) -> None:
    pre_commit = Path(sys.executable).parent / "pre-commit"
    if not pre_commit.exists():
        pytest.skip("pre-commit is not installed")
    work = tmp_path / "work"
    work.mkdir()
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "cache"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=work, env=env, check=True, capture_output=True)

    git("init", "-q")
    write(work / "plan.json", json.dumps(BAD))
    write(work / "package.json", json.dumps({"name": "x"}))  # not plans: never linted
    write(work / ".github" / "workflows" / "ci.yml", "on: push\n")
    git("add", "plan.json", "package.json", ".github")
    done = subprocess.run(
        [str(pre_commit), "try-repo", str(ROOT), "car-verify", "--all-files"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "precondition-unsatisfied" in output and "plan.json" in output
    assert "package.json" not in output and "ci.yml" not in output
    write(
        work / "plan.json", json.dumps({"actions": [{"id": "a", "type": "tool_call", "tool": "t"}]})
    )
    done = subprocess.run(
        [str(pre_commit), "try-repo", str(ROOT), "car-verify", "--all-files"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(proposals(), st.sampled_from([None, 2]), st.sampled_from([".json", ".yaml", ".jsonl"]))
def test_lint_reports_what_verify_finds_where_each_action_starts(
    tmp_path: Path, doc: dict[str, Any], indent: int | None, suffix: str
) -> None:
    """lint is verify per file: the same findings (code, severity, action, message),
    each at the line where its action's object starts in the file, in any layout."""
    import yaml

    text = (
        yaml.safe_dump(doc, sort_keys=False)
        if suffix == ".yaml"
        else json.dumps(doc, indent=None if suffix == ".jsonl" else indent)
    )
    path = tmp_path / f"plan{suffix}"
    path.write_text(text)
    found = lint_file(path, LintConfig(profile="strict"))
    expected = car_verify.verify(doc, profile="strict").issues
    assert [(f.code, f.severity, f.action_id, f.message) for f in found.findings] == [
        (i.code, i.severity.value, i.action_id, i.message) for i in expected
    ]
    lines = text.splitlines()
    for finding, issue in zip(found.findings, expected, strict=True):
        if issue.index is None:
            assert (finding.line, finding.column) == (1, 1)
        elif suffix == ".jsonl" or (indent is None and suffix == ".json"):
            assert finding.line == 1
            rest = lines[0][finding.column - 1 :]
            assert rest.startswith('{"id": ' + json.dumps(doc["actions"][issue.index]["id"]))
        else:
            here = lines[finding.line - 1][finding.column - 1 :]
            assert here.lstrip("- ").startswith(("{", "id:")), (here, finding)


def test_nothing_to_lint_is_said_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 25, item 6: a folder with no proposals said "0 files" and exited 0."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("no plans here")
    code, out, err = run(["lint", ".", "--no-progress"], capsys)
    assert code == 2 and out == "" and "no proposal files" in err and "nothing was linted" in err


def test_file_codes_select_and_ignore_like_any_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 25, item 6: not-a-proposal and invalid-file ignored --select / --ignore."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "notes.json", json.dumps({"k": 1}))  # neither a plan nor an input it knows
    write(tmp_path / "broken.json", "{")
    _, out, _ = run(["lint", ".", "--format", "json", "--no-progress"], capsys)
    assert {f["code"] for f in json.loads(out)["findings"]} == {"not-a-proposal", "invalid-file"}
    args = ["lint", ".", "--format", "json", "--no-progress", "--ignore", "not-a-proposal"]
    _, out, _ = run(args, capsys)
    assert {f["code"] for f in json.loads(out)["findings"]} == {"invalid-file"}
    args = ["lint", ".", "--format", "json", "--no-progress", "--select", "not-a-proposal"]
    _, out, _ = run(args, capsys)
    assert {f["code"] for f in json.loads(out)["findings"]} == {"not-a-proposal"}


# --- which files (issue 25, item 6) ----------


def _bad_plan() -> str:
    return json.dumps(BAD)


def test_a_folder_walk_lints_plans_not_manifests_workflows_or_ignored_files(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pre-commit hook linted `.pre-commit-config.yaml`, workflow files and
    `package.json`, and `.gitignore` was not respected."""
    write(repo / "plans" / "deploy.json", _bad_plan())
    write(repo / "package.json", json.dumps({"name": "x", "version": "1.0.0"}))
    write(repo / "tsconfig.json", json.dumps({"compilerOptions": {}}))
    write(repo / ".pre-commit-config.yaml", "repos: []\n")
    write(repo / ".github" / "workflows" / "ci.yml", "on: push\njobs: {}\n")
    write(repo / "node_modules" / "x" / "plan.json", _bad_plan())
    write(repo / ".gitignore", "out/\n*.tmp.json\n!keep.tmp.json\n")
    write(repo / "out" / "plan.json", _bad_plan())
    write(repo / "plans" / "scratch.tmp.json", _bad_plan())
    write(repo / "plans" / "keep.tmp.json", _bad_plan())
    code, out, _ = run(["lint", ".", "--format", "json", "--no-progress"], capsys)
    assert code == 1
    files = {f["path"] for f in json.loads(out)["findings"]}
    assert files == {"plans/deploy.json", "plans/keep.tmp.json"}
    # .gitignore can be switched off, as in ruff
    _, out, _ = run(
        ["lint", ".", "--format", "json", "--no-progress", "--no-respect-gitignore"], capsys
    )
    files = {f["path"] for f in json.loads(out)["findings"]}
    assert files == {"plans/deploy.json", "plans/keep.tmp.json", "plans/scratch.tmp.json",
                     "out/plan.json"}  # fmt: skip
    # --exclude adds to the patterns
    _, out, _ = run(
        ["lint", ".", "--format", "json", "--no-progress", "--exclude", "keep.*"], capsys
    )
    assert {f["path"] for f in json.loads(out)["findings"]} == {"plans/deploy.json"}


def test_the_configured_tools_and_state_files_are_inputs_not_proposals(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = {"actions": [{"id": "a", "type": "tool_call", "tool": "t"}]}
    write(repo / "plan.json", json.dumps(plan))
    write(repo / "registry" / "tools.json", json.dumps([{"name": "t"}]))
    write(repo / "state.json", json.dumps({"k": 1}))
    write(repo / "other.json", json.dumps({"k": 1}))
    write(
        repo / "pyproject.toml",
        '[tool.car-verify]\ntools = ["registry/tools.json"]\nstate = "state.json"\n',
    )
    code, out, _ = run(["lint", ".", "--format", "json", "--no-progress"], capsys)
    found = json.loads(out)["findings"]
    assert [(f["path"], f["code"]) for f in found] == [("other.json", "not-a-proposal")]
    assert code == 0 and json.loads(out)["summary"]["files"] == 2


def test_include_and_exclude_from_the_configuration(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(repo / "a.plan.json", _bad_plan())
    write(repo / "b.json", _bad_plan())
    write(repo / "gen" / "c.plan.json", _bad_plan())
    write(repo / ".car" / "verify.toml", 'include = ["*.plan.json"]\nextend-exclude = ["gen/*"]\n')
    _, out, _ = run(["lint", ".", "--format", "json", "--no-progress"], capsys)
    assert {f["path"] for f in json.loads(out)["findings"]} == {"a.plan.json"}
    write(repo / ".car" / "verify.toml", "respect-gitignore = 1\n")
    code, _, err = run(["lint", ".", "--no-progress"], capsys)
    assert code == 2 and "respect-gitignore: expected true or false" in err


def test_named_files_are_linted_unless_force_exclude_says_the_patterns_decide(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pre-commit names every staged file; its hook passes --force-exclude."""
    write(repo / "package.json", json.dumps({"name": "x"}))
    write(repo / ".github" / "workflows" / "ci.yml", "on: push\n")
    write(repo / "plan.json", _bad_plan())
    code, out, _ = run(["lint", "package.json", "--no-progress"], capsys)
    assert code == 0 and "package.json:1:1: warning[not-a-proposal]" in out
    args = ["lint", "package.json", ".github/workflows/ci.yml", "--no-progress", "--force-exclude"]
    code, out, err = run(args, capsys)
    assert code == 0 and out == "" and "2 files named and left out" in err
    args = ["lint", "package.json", "plan.json", "--no-progress", "--force-exclude"]
    code, out, _ = run([*args, "--format", "json"], capsys)
    assert code == 1 and {f["path"] for f in json.loads(out)["findings"]} == {"plan.json"}
    hook = (ROOT / ".pre-commit-hooks.yaml").read_text()
    assert "car-verify lint --no-progress --force-exclude" in hook


def test_a_proposal_the_profile_refuses_is_a_finding_on_its_file_and_the_lint_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under car the runtime rejects a proposal with an action type it does not
    know: that file gets an error naming it, and every other file is still linted."""
    (tmp_path / "a.json").write_text('{"actions": [{"id": "x", "type": "shell"}]}')
    (tmp_path / "b.json").write_text(
        '{"actions": [{"id": "p", "type": "tool_call", "tool": "t", "state_dependencies": ["k"]}]}'
    )
    assert main(["lint", str(tmp_path), "--profile", "car"]) == 1
    out = capsys.readouterr().out
    assert "a.json:1:" in out and "error[invalid-file]" in out and "'shell'" in out
    assert "b.json" in out and "missing-dependency" in out
    assert "in 2 files" in out


def test_what_car_only_notes_lint_shows_as_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under car, a duplicate id, a misspelled field and a full JSON Schema violation
    keep CAR's verdict (info on verify), and lint shows them by default: the
    misspelled field as an error (it gates nothing), the others as warnings."""
    (tmp_path / "tools.json").write_text(
        '[{"name": "t", "parameters": {"type": "object", "properties": '
        '{"n": {"type": "integer", "minimum": 3}}}}]'
    )
    plan = tmp_path / "p.json"
    plan.write_text(
        '{"actions": [{"id": "a", "type": "tool_call", "tool": "t", "parameters": {"n": 1},'
        ' "precondition": []}, {"id": "a", "type": "tool_call", "tool": "t"}]}'
    )
    verify = ["verify", str(plan), "--tools", str(tmp_path / "tools.json"), "-q"]
    assert main([*verify, "--profile", "car"]) == 0
    out = capsys.readouterr().out
    for code in ("info[param-schema-full]", "info[duplicate-id]", "info[unknown-field]"):
        assert code in out, out  # printed, -q or not
    main(["lint", str(plan), "--profile", "car", "--fail-on", "warning"])
    out = capsys.readouterr().out
    assert "warning[duplicate-id]" in out and "error[unknown-field]" in out


@pytest.mark.parametrize("profile", ["car", "strict"])
def test_a_misspelt_field_and_an_unevaluated_assertion_fail_lint_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], profile: str
) -> None:
    """Issue 59: ``precondition`` for ``preconditions`` and an assertion predicate
    the runtime never evaluates gate nothing; lint's default ``--fail-on error``
    fails the file under either profile, and verify under car keeps CAR's verdict."""
    plan = tmp_path / "p.json"
    misspelt = {"id": "a", "type": "tool_call", "tool": "t",
                "precondition": [{"key": "k", "operator": "eq", "value": 1}]}  # fmt: skip
    plan.write_text(json.dumps({"actions": [misspelt]}))
    assert main(["lint", str(plan), "--profile", profile]) == 1
    assert "error[unknown-field]" in capsys.readouterr().out
    unevaluated = {"id": "c", "type": "assertion",
                   "parameters": {"key": "k", "operator": "eq", "value": 1}}  # fmt: skip
    plan.write_text(json.dumps({"actions": [unevaluated]}))
    code = main(["lint", str(plan), "--profile", profile])
    out = capsys.readouterr().out
    if profile == "car":  # strict evaluates the predicate: assertion-fails says so
        assert code == 1 and "error[assertion-not-evaluated]" in out, out
        assert main(["verify", str(plan), "--profile", "car"]) == 0
        assert "info[assertion-not-evaluated]" in capsys.readouterr().out
    else:
        assert code == 1 and "error[assertion-fails]" in out, out


def test_selection_adds_up_takes_all_and_prefixes_and_a_misspelled_rule_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".car" / "policies").mkdir(parents=True)
    (tmp_path / ".car" / "policies" / "r.toml").write_text(
        '[[trace_rule]]\nname = "tested-before-deploy"\nrule = "deploy only after test"\n'
    )
    plan = tmp_path / "p.json"
    plan.write_text(
        '{"actions": [{"id": "d", "type": "tool_call", "tool": "deploy",'
        ' "state_dependencies": ["k"]}]}'
    )
    base = ["lint", str(plan), "--profile", "strict", "--fail-on", "never"]
    main([*base, "--select", "missing-dependency", "--select", "trace_rule:tested-before-deploy"])
    out = capsys.readouterr().out
    assert "missing-dependency" in out and "trace_rule:tested-before-deploy" in out  # both kept
    main([*base, "--select", "ALL"])
    assert "missing-dependency" in capsys.readouterr().out
    main([*base, "--select", "missing-"])
    assert "missing-dependency" in capsys.readouterr().out
    # a rule name no loaded policy has, selected or ignored, is a usage error naming
    # it and the closest rule there is, as a misspelled built-in code is
    for option in ("--select", "--ignore"):
        assert main([*base, option, "trace_rule:tested-befor-deploy"]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert f"{option} trace_rule:tested-befor-deploy: no rule of that name" in err
        assert "the closest is 'trace_rule:tested-before-deploy'" in err
    assert main([*base, "--select", "trace_rule:tested-before-deploy", "--no-policies"]) == 2
    assert "no policies were loaded" in capsys.readouterr().err
    (tmp_path / "pyproject.toml").write_text(
        '[tool.car-verify]\nselect = ["trace_rule:tested-befor-deploy"]\n'
    )
    assert main([*base]) == 2
    assert "`select` in " in capsys.readouterr().err
    assert main([*base, "--select", "missing-dependenc"]) == 2
    assert "the closest is 'missing-dependency'" in capsys.readouterr().err


def test_the_configuration_names_only_known_codes_and_baselines_hide_no_broken_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        '[tool.car-verify.severity]\n"repeated-cal" = "error"\n'
    )
    plan = tmp_path / "p.json"
    plan.write_text('{"actions": [{"id": "a", "type": "tool_call", "tool": "t"}]}')
    assert main(["lint", str(plan)]) == 2
    assert "unknown code 'repeated-cal'" in capsys.readouterr().err
    (tmp_path / "pyproject.toml").write_text('[tool.car-verify]\nprofile = "strict"\n')
    baseline = tmp_path / ".car" / "baseline.json"  # .car/ does not exist yet
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert main(["lint", str(plan), str(broken), "--write-baseline", str(baseline)]) == 0
    assert baseline.exists()
    capsys.readouterr()
    assert main(["lint", str(plan), str(broken), "--baseline", str(baseline)]) == 1
    assert "invalid-file" in capsys.readouterr().out  # never hidden by a baseline


def test_a_folders_registry_and_state_are_used_and_not_linted_as_plans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``lint examples``: each proposal is checked with the tools.json and
    state.json beside it, and those (and other car-verify inputs) are read as what
    they are, not warned about as plans that are missing."""
    (tmp_path / ".git").mkdir()
    folder = tmp_path / "ex"
    folder.mkdir()
    (folder / "tools.json").write_text('[{"name": "deploy"}]')
    (folder / "state.json").write_text('{"ready": true}')
    (folder / "graph.json").write_text('{"entry": "a", "stages": ["a"], "edges": []}')
    (folder / "proposal.json").write_text(
        '{"actions": [{"id": "d", "type": "tool_call", "tool": "deploy",'
        ' "preconditions": [{"key": "ready", "value": true}]},'
        ' {"id": "x", "type": "tool_call", "tool": "nope"}]}'
    )
    assert main(["lint", str(tmp_path), "--profile", "strict"]) == 1
    out = capsys.readouterr().out
    assert "not-a-proposal" not in out
    assert "unknown-tool" in out and "precondition-unsatisfied" not in out  # both read
    assert "read as other inputs, not plans:" in out and "tool registry x1" in out
    assert "state x1" in out and "workflow graph x1" in out


def test_lint_reads_stdin_for_a_dash(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    action = {"id": "a", "type": "tool_call", "tool": "t", "state_dependencies": ["k"]}
    plan = json.dumps({"actions": [action]})
    monkeypatch.setattr("sys.stdin", io.StringIO(plan))
    assert main(["lint", "-", "--profile", "strict"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("<stdin>:1:") and "missing-dependency" in out and "in 1 file" in out
