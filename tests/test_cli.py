"""The CLI contract (docs/semantics.md §7): output, formats, exit codes, errors."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import proposals, states

from car_verify.cli import main

pytestmark = pytest.mark.usefixtures("strict_cli")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, name: str, doc: object) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


BAD = {
    "actions": [
        {
            "id": "d",
            "type": "tool_call",
            "tool": "deploy",
            "preconditions": [{"key": "tests_passed", "value": True}],
        }
    ]
}


def test_verify_text_lists_issues_then_a_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["verify", write(tmp_path, "p.json", BAD)], capsys)
    lines = out.splitlines()
    # stderr says only that no policies apply here (issue 38: not a silent pass)
    assert code == 1 and err.startswith("car-verify: policies: no .car/policies at or above")
    # issue 25, item 7: one layout everywhere, `path:line:col: severity[code] ...`
    path = str(tmp_path / "p.json")
    assert lines[0].startswith(f"{path}:1:")
    assert ": error[precondition-unsatisfied] d: precondition tests_passed" in lines[0]
    assert lines[-1].startswith("invalid: 1 error, 0 warnings")
    stdin = io.TextIOWrapper(io.BytesIO((tmp_path / "p.json").read_bytes()))
    with pytest.MonkeyPatch.context() as patch:  # from stdin there is no file to point at
        patch.setattr(sys, "stdin", stdin)
        code, out, _ = run(["verify", "-"], capsys)
    assert out.startswith("error[precondition-unsatisfied] d: precondition tests_passed")


def test_verify_json_is_the_wire_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["verify", write(tmp_path, "p.json", BAD), "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 1
    assert set(doc) == {
        "profile",
        "valid",
        "issues",
        "simulated_state",
        "execution_levels",
        "conflicts",
        "evidence",
    }
    assert doc["issues"][0] == {
        "action_id": "d",
        "severity": "error",
        "tier": "decision_procedure",
        "code": "precondition-unsatisfied",
        "message": doc["issues"][0]["message"],
    }


def test_verify_valid_exits_zero_with_tools_state_and_budget(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ex = EXAMPLES / "gated-deploy"
    code, out, _ = run(
        [
            "verify",
            str(ex / "proposal.json"),
            "--tools",
            str(ex / "tools.json"),
            "--state",
            str(ex / "state.json"),
            "--max-actions",
            "10",
        ],
        capsys,
    )
    assert code == 0 and out.startswith(
        "valid: 0 errors, 0 warnings (9 of 9 checks ran; profile strict)"
    )
    code, out, _ = run(["verify", str(ex / "proposal.json"), "--max-actions", "2"], capsys)
    assert code == 1 and "too-many-actions" in out


def test_verify_reads_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(BAD).encode())))
    code, out, _ = run(["verify", "-", "--format", "json"], capsys)
    assert code == 1 and json.loads(out)["valid"] is False
    bad = io.TextIOWrapper(io.BytesIO(b'{"actions": [{"type": 3}]}'))
    monkeypatch.setattr(sys, "stdin", bad)
    code, out, err = run(["simulate", "-"], capsys)
    assert (code, out) == (2, "")
    assert err == "car-verify: error: <stdin>: actions[0].type: expected a string, got a number\n"


def test_sarif_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["verify", write(tmp_path, "p.json", BAD), "--format", "sarif"], capsys)
    log = json.loads(out)
    assert code == 1 and log["version"] == "2.1.0"
    run_ = log["runs"][0]
    rule_ids = [r["id"] for r in run_["tool"]["driver"]["rules"]]
    result = run_["results"][0]
    assert result["ruleId"] == "precondition-unsatisfied" and result["level"] == "error"
    assert rule_ids[result["ruleIndex"]] == "precondition-unsatisfied"
    from jsonschema import Draft4Validator

    schema = json.loads(
        (Path(__file__).parent / "fixtures" / "sarif-schema-2.1.0.json").read_text()
    )
    assert list(Draft4Validator(schema).iter_errors(log)) == []


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["verify", "/nonexistent/p.json"], "cannot read file"),
        (["verify"], "required"),
        (["frobnicate"], "invalid choice"),
        (["verify", "{p}", "--max-actions", "-1"], "non-negative"),
        (["verify", "{p}", "--format", "xml"], "invalid choice"),
        (["verify", "{bad}"], "actions[0].preconditions: expected an array"),
        (["verify", "{notjson}"], "line 1"),
        (["verify", "{p}", "--state", "{list}"], "must hold a JSON object"),
        (["verify", "{p}", "--tools", "{p}"], "expected an array of tool schemas"),
        (["verify", "{p}", "--passes", "nope"], "unknown pass"),
        (["verify", "{p}", "--repeat-threshold", "0"], "--repeat-threshold: expected a positive"),
        (["lint", "{p}", "--workers", "0"], "--workers: expected a positive"),
        # A schema that is not JSON Schema shows only when verify builds its validator;
        # the error still names the tools file and the schema's place in it.
        (["verify", "{p}", "--tools", "{badschema}"], "badschema.json: [0].parameters.type"),
        (["simulate", "{bad}"], "expected an array"),
    ],
)
def test_bad_input_is_one_line_on_stderr_and_exit_2(
    argv: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {
        "p": write(tmp_path, "p.json", BAD),
        "bad": write(tmp_path, "bad.json", {"actions": [{"type": "t", "preconditions": "x"}]}),
        "list": write(tmp_path, "list.json", [1]),
        "badschema": write(
            tmp_path, "badschema.json", [{"name": "deploy", "parameters": {"type": "nope"}}]
        ),
        "notjson": str(tmp_path / "nj.json"),
    }
    Path(files["notjson"]).write_text("{nope")
    code, out, err = run([a.format(**files) for a in argv], capsys)
    assert code == 2 and out == ""
    first, *rest = err.splitlines()
    assert first.startswith("car-verify: error: ") and needle in first
    if rest:  # a command line argparse refused: its usage, then where to read more
        assert rest[0].startswith("usage: car-verify") and rest[-1].endswith("--help' for more.")
    else:  # bad input: one line
        assert err.count("\n") == 1


def test_a_usage_error_shows_the_usage_and_a_help_hint(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 25, item 7: as ruff and mypy do."""
    code, out, err = run(["verify"], capsys)
    lines = err.splitlines()
    assert code == 2 and out == ""
    assert lines[0] == "car-verify: error: the following arguments are required: PROPOSAL"
    assert lines[1].startswith("usage: car-verify verify ")
    assert lines[-1] == "Try 'car-verify verify --help' for more."
    code, _, err = run(["verify", "x.json", "--format", "xml"], capsys)
    assert code == 2 and "invalid choice: 'xml'" in err.splitlines()[0] and "usage:" in err


def test_simulate_prints_the_end_state(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["simulate", str(EXAMPLES / "gated-deploy" / "proposal.json")], capsys)
    assert code == 0
    assert json.loads(out) == {
        "build_artifact": "billing-service:fix-rounding",
        "tests_passed": True,
        "coverage": 0.87,
        "gate_passed": True,
        "deployed": True,
    }


def test_simulate_explains_level_by_level(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--explain listed the actions in document order, so the levels jumped
    (0, 1, 0, 1, 0 for the gated deploy under car)."""
    # the gated deploy as it was before issue 60, ordered by `dependencies` alone
    doc = json.loads((EXAMPLES / "gated-deploy" / "proposal.json").read_text())
    doc["actions"][3]["state_dependencies"] = ["build_artifact"]
    del doc["actions"][4]["state_dependencies"]
    plan = write(tmp_path, "p.json", doc)
    code, out, _ = run(["simulate", plan, "--explain", "--profile", "car"], capsys)
    lines = [line for line in out.splitlines() if line.startswith("level ")]
    levels = [int(line.split()[1]) for line in lines]
    assert code == 0 and levels == sorted(levels) == [0, 0, 1, 1, 2]
    assert [line.split()[2] for line in lines] == ["build:", "notify:", "test:", "deploy:", "gate:"]


def test_simulate_explains_and_traces(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write(tmp_path, "p.json", BAD)
    code, out, _ = run(["simulate", p, "--explain"], capsys)
    # exit 1: an action is blocked, as verify exits 1 on the plan (issue 59)
    assert code == 1 and "d: blocked: precondition tests_passed eq true is false" in out
    code, out, _ = run(["simulate", p, "--trace"], capsys)
    doc = json.loads(out)
    assert doc["state"] == {} and doc["trace"][0]["runs"] is False


def test_repeat_threshold_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = {"actions": [{"id": f"p{i}", "type": "tool_call", "tool": "poll"} for i in range(3)]}
    p = write(tmp_path, "p.json", doc)
    assert "repeated-call" in run(["verify", p], capsys)[1]
    assert "repeated-call" not in run(["verify", p, "--repeat-threshold", "4"], capsys)[1]


def test_codes_and_passes_listings(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["codes", "--format", "json"], capsys)
    assert code == 0 and {c["code"] for c in json.loads(out)} >= {
        "repeated-call",
        "dependency-cycle",
        "invalid-file",  # lint's
    }
    code, out, _ = run(["passes", "--profile", "car"], capsys)
    assert "references [reports under strict only]:" in out
    assert code == 0 and "car [reports under car only]:" in out
    lines = out.splitlines()
    assert lines[-1] == (
        "run by default (profile car): structure, operators, strips, conflicts, loops, "
        "budget, tools, compensation, car; "
        "when their input is given: policies, flow, intent"
    )
    code, strict, _ = run(["passes", "--profile", "strict"], capsys)
    assert strict.splitlines()[-1].startswith(
        "run by default (profile strict): structure, operators"
    )
    policies = lines[lines.index(next(x for x in lines if x.startswith("policies:"))) + 1]
    assert policies == (
        "    codes: policy-undecided, compensation-denied, "
        "the name of each rule (deny_tool:rm, ...)"
    )


def test_codes_and_the_lint_page_show_lints_severity_beside_verifys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """duplicate-id is info in verify and a warning in lint under car: said only in
    compat.md before. Every code whose lint severity differs is shown as such, and
    the shown severity is what lint reports."""
    from car_verify.base.codes import CODES

    raised_notes = {c.name: c.lint.value for c in CODES.values() if c.lint is not None}
    assert raised_notes == {
        "duplicate-id": "warning", "state-write-without-key": "warning",
        "param-schema-full": "warning", "empty-proposal": "warning",
        # a linter's job is the author's intent (issue 59): these gate nothing
        "unknown-field": "error", "assertion-not-evaluated": "error",
    }  # fmt: skip
    out = run(["codes", "--format", "json"], capsys)[1]
    doc = {c["code"]: c for c in json.loads(out)}
    assert doc["duplicate-id"]["severity"]["car"] == "info"
    assert doc["duplicate-id"]["lint_severity"] == {"strict": "error", "car": "warning"}
    assert doc["write-conflict"]["lint_severity"] == doc["write-conflict"]["severity"]
    out = run(["codes"], capsys)[1]
    header, *rows = out.splitlines()
    assert "car lint" in header
    for name, raised in raised_notes.items():
        row = next(r for r in rows if r.split()[:1] == [name])
        assert row.split()[2:4] == ["info", raised], row
    assert run(["codes", "unknown-field"], capsys)[1].startswith(
        "unknown-field (strict error, car info (lint: error), "
    )
    page = (Path(__file__).resolve().parents[1] / "docs" / "lint.md").read_text()
    for name, raised in raised_notes.items():
        assert f"| `{name}` | info | {raised} |" in page
    plan = write(tmp_path, "p.json", {"actions": [{"id": "a", "type": "tool_call", "tool": "t",
                                                   "colour": "blue"}]})  # fmt: skip
    code, out, _ = run(["lint", plan, "--profile", "car"], capsys)
    assert "error[unknown-field]" in out and code == 1
    out = run(["verify", plan, "--profile", "car"], capsys)[1]
    assert "info[unknown-field]" in out


def test_codes_explains_one_code(capsys: pytest.CaptureFixture[str]) -> None:
    """``codes CODE`` prints the code's line and its pass's documentation (the one
    place each explanation is written), like ``ruff rule``."""
    code, out, _ = run(["codes", "write-conflict"], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(
        "write-conflict (strict warning, car warning, tier decision_procedure): "
    )
    assert "Pass 'conflicts'" in out and "How to fix:" in out and "Order the two writers" in out
    assert lines[-1] == "Examples: docs/codes.md#write-conflict"
    code, out, _ = run(["codes", "invalid-file"], capsys)
    assert code == 0 and "docs/lint.md" in out
    code, out, _ = run(["codes", "deny_tool:rm"], capsys)
    assert code == 0 and "Pass 'policies'" in out
    code, out, err = run(["codes", "nope"], capsys)
    assert (code, out) == (2, "") and "unknown code 'nope'" in err


def test_console_script_runs_and_does_not_import_heavy_dependencies(tmp_path: Path) -> None:
    p = write(tmp_path, "p.json", BAD)
    code = (
        "import sys; from car_verify.cli import main; rc = main(['verify', sys.argv[1]]);"
        "heavy = [m for m in ('z3', 'pydot', 'networkx', 'jsonschema', 'lark',"
        " 'importlib.metadata', 'importlib.abc', 'car_verify.rules.trace', 'hashlib')"
        " if m in sys.modules];"
        "print('HEAVY', heavy); raise SystemExit(rc)"
    )
    done = subprocess.run([sys.executable, "-P", "-c", code, p], capture_output=True, text=True)
    assert done.returncode == 1
    assert "HEAVY []" in done.stdout


FRAMEWORKS = (
    "mcp",
    "opentelemetry",
    "agents",
    "openai",
    "langchain",
    "langchain_core",
    "langgraph",
)


@pytest.mark.parametrize(
    "code",
    [
        "import car_verify, car_verify.integrations",
        "from car_verify.cli import main; main(['--version'])",
        "from car_verify.cli import main; main(['policy', 'lint', '.'])",
        "from car_verify.cli import main; main(['workflow', 'graph.json'])",
    ],
)
def test_start_up_loads_no_framework(tmp_path: Path, code: str) -> None:
    """``import car_verify`` and the command line load none of the frameworks the
    integrations, the MCP server and the trace importer use: each is loaded by the
    module (or the command) that needs it."""
    (tmp_path / "graph.json").write_text(
        '{"entry": "a", "terminals": ["a"], "stages": ["a"], "edges": []}', encoding="utf-8"
    )
    probe = (
        f"import sys\ntry:\n    {code}\nexcept SystemExit:\n    pass\n"
        f"print('LOADED', sorted(m for m in {FRAMEWORKS!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-P", "-c", probe], capture_output=True, text=True, cwd=tmp_path
    )
    assert "LOADED []" in done.stdout, done.stdout + done.stderr


def test_the_first_schema_check_leaves_the_iri_grammar_unbuilt() -> None:
    """Issue 37: jsonschema imports rfc3987_syntax when it is installed (Jupyter
    brings it), which builds a grammar for about 3 s at the first schema check,
    for formats car-verify never asserts. The check does not load it, and code
    that imports it afterwards still gets it."""
    pytest.importorskip("rfc3987_syntax")
    code = (
        "import sys; from car_verify.rules.tools import ToolRegistry; "
        "r = ToolRegistry.coerce([{'name': 't', 'parameters': {'type': 'object', "
        "'properties': {'u': {'type': 'string', 'format': 'iri'}}}}]); "
        "print(len(r.check_parameters('t', {'u': 3})) == 1, "
        "'rfc3987_syntax' in sys.modules); "
        "import rfc3987_syntax; print(rfc3987_syntax.__name__)"
    )
    done = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True)
    assert done.stdout.split("\n")[:2] == ["True False", "rfc3987_syntax"], done.stderr


def test_the_schema_check_leaves_jsonschemas_own_format_checking_as_it_was() -> None:
    """jsonschema registers its format checkers once, when it is imported: a package
    hidden for that import is lost to the whole process. The schema check hides only
    the iri grammar (above), so code that validates formats with jsonschema after it
    gets every other checker (``uri``, ``date``, ``email``, ...) a plain import gives."""

    def formats(first: str) -> set[str]:
        code = f"{first}; import jsonschema; print(*sorted(jsonschema.FormatChecker().checkers))"
        done = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return set(done.stdout.split())

    plain = formats("pass")
    after = formats(
        "from car_verify.rules.tools import ToolRegistry; "
        "ToolRegistry.coerce([{'name': 't', 'parameters': {'type': 'object'}}])"
        ".check_parameters('t', {})"
    )
    assert plain - after <= {"iri", "iri-reference"}, plain - after


def test_import_leaves_the_deciding_tools_for_later() -> None:
    code = (
        "import sys, car_verify; "
        "print(sorted(m for m in ('car_verify.deciders.equivalence', 'car_verify.deciders.wp', "
        "'car_verify.deciders.transactions') if m in sys.modules)); "
        "print(car_verify.equivalent.__name__, car_verify.optimize.__name__)"
    )
    done = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True)
    assert done.stdout.split("\n")[:2] == ["[]", "equivalent optimize"]


# Every command on any modelled proposal: an answer, never a usage error or a crash.
_COMMANDS = [
    ["verify"],
    ["verify", "--format", "json"],
    ["verify", "--format", "sarif"],
    ["simulate", "--explain"],
    ["simulate", "--trace"],
    ["optimize", "--diff"],
    ["wp"],
    ["dot"],
    ["txcheck"],
    ["equivalent", "{p}"],
]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(proposals(), states, st.sampled_from(_COMMANDS))
def test_every_command_answers_any_modelled_proposal(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    doc: dict[str, Any],
    state: dict[str, Any],
    command: list[str],
) -> None:
    """A plan that models is never bad input: each command exits 0, 1 or 3 with its
    answer on stdout, and no error line (bad input, internal error) on stderr."""
    p = write(tmp_path, "p.json", doc)
    s = write(tmp_path, "s.json", state)
    name, *rest = command
    argv = [name, p, *(a.format(p=p) for a in rest)]
    if name not in ("equivalent", "wp"):  # wp and equivalent range over initial states
        argv += ["--state", s]
    code, out, err = run(argv, capsys)
    assert code in (0, 1, 3), (argv, err)
    said = ("car-verify: policies:", *(("car-verify: ",) if name == "simulate" else ()))
    noise = [line for line in err.splitlines() if not line.startswith(said)]
    if name == "simulate":  # what it left out, said: never an error line
        noise += [line for line in err.splitlines() if "error" in line]
    assert out and not noise, (argv, err)


def test_simulate_and_passes_take_format(capsys: pytest.CaptureFixture[str]) -> None:
    """One --format on every command (issue 25, item 7): text for people, JSON for machines."""
    plan = str(EXAMPLES / "gated-deploy" / "proposal.json")
    _, explained, _ = run(["simulate", plan, "--explain"], capsys)
    code, text, _ = run(["simulate", plan, "--format", "text"], capsys)
    assert code == 0 and text == explained and text.startswith("level 0")
    _, state, _ = run(["simulate", plan, "--format", "json"], capsys)
    assert isinstance(json.loads(state), dict)
    code, out, _ = run(["passes", "--format", "json"], capsys)
    listed = {p["name"]: p for p in json.loads(out)}
    assert code == 0 and "strips" in listed and "tools" in listed["tools"]["requires"]
    assert listed["strips"]["preserves"] == ["order-keeping-dependency-edit"]
    assert listed["policies"]["preserves"] == []


def test_txcheck_names_the_file_of_each_action(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 8 of issue 25: two files with one proposal id read as one proposal."""
    plan = {"id": "same", "actions": [{"id": "w", "type": "state_write",
            "parameters": {"key": "k", "value": 1}}]}  # fmt: skip
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    for path in (first, second):
        path.write_text(json.dumps(plan))
    code, out, _ = run(["txcheck", str(first), str(second), "--profile", "strict"], capsys)
    assert code == 1 and f"{first}:w and {second}:w both write 'k'" in out
    code, out, _ = run(["txcheck", str(first), str(first), "--profile", "strict"], capsys)
    assert f"{first}#1:w and {first}#2:w" in out


@pytest.mark.parametrize("docs_url", [None, "https://docs.example.org/car-verify/"])
def test_sarif_validates_with_format_checking_and_has_regions(
    docs_url: str | None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 25, item 5: relative helpUri broke the schema's `uri` format, and verify's
    results had no regions."""
    from jsonschema import Draft4Validator

    if docs_url:
        monkeypatch.setenv("CAR_VERIFY_DOCS_URL", docs_url)
    plan = str(EXAMPLES / "poll-loop" / "proposal.json")
    _, out, _ = run(["verify", plan, "--format", "sarif", "--profile", "strict"], capsys)
    log = json.loads(out)
    schema = json.loads(
        (Path(__file__).parent / "fixtures" / "sarif-schema-2.1.0.json").read_text()
    )
    checker = Draft4Validator.FORMAT_CHECKER
    assert "uri" in checker.checkers, "format checking needs jsonschema[format-nongpl]"
    assert list(Draft4Validator(schema, format_checker=checker).iter_errors(log)) == []
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert all(("helpUri" in r) == bool(docs_url) for r in rules)
    if docs_url:
        assert rules[0]["helpUri"].startswith(docs_url) and "#" in rules[0]["helpUri"]
    for result in log["runs"][0]["results"]:
        where = result["locations"][0]["physicalLocation"]
        assert where["artifactLocation"]["uri"] == plan and where["region"]["startLine"] >= 1
    report = next(r for r in log["runs"][0]["results"] if r["ruleId"] == "precondition-unsatisfied")
    assert report["locations"][0]["physicalLocation"]["region"]["startLine"] > 1


def test_output_file_and_exit_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 25, item 7: -o/--output-file and --exit-zero, as ruff has them."""
    plan = str(EXAMPLES / "poll-loop" / "proposal.json")
    code, printed, _ = run(["verify", plan, "--format", "json"], capsys)
    assert code == 1
    out = tmp_path / "report.json"
    code, stdout, _ = run(["verify", plan, "--format", "json", "-o", str(out)], capsys)
    assert code == 1 and stdout == "" and json.loads(out.read_text()) == json.loads(printed)
    code, _, _ = run(["verify", plan, "--exit-zero"], capsys)
    assert code == 0
    code, _, err = run(["verify", str(tmp_path / "missing.json"), "--exit-zero"], capsys)
    assert code == 2 and "cannot read file" in err
    code, _, err = run(["verify", plan, "-o", str(tmp_path / "no" / "such" / "dir.txt")], capsys)
    assert code == 2 and "--output-file" in err
    code, _, _ = run(["lint", plan, "--no-progress", "--exit-zero", "-o", str(out)], capsys)
    assert code == 0 and "repeated-call" in out.read_text()


def test_the_readme_python_example_runs_from_the_checkout_root(tmp_path: Path) -> None:
    """From a source checkout (the README's own folder), the checkout's package
    shadows the installed one: its links car_verify/analyses and car_verify/grammars
    reach the top-level folders the install maps, so the passes and the trace-rule
    grammar are found."""
    import shutil
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    for name in ("car_verify", "analyses", "grammars"):
        shutil.copytree(
            root / name,
            tmp_path / name,
            symlinks=True,  # the links as they are in the checkout
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    assert (tmp_path / "car_verify" / "analyses").is_symlink()
    code = (
        "import car_verify\n"
        "p = {'actions': [{'id': 'a', 'type': 'tool_call', 'tool': 't', 'read_set': ['x'],"
        " 'state_dependencies': ['k']}]}\n"
        "print(car_verify.optimize(p, profile='strict').depth_after)\n"
        "from car_verify.rules.trace import parse_trace_rule\n"
        "print(parse_trace_rule('never t after u').kind)\n"
        "print(car_verify.__file__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split()
    assert lines[:2] == ["1", "never_after"] and lines[2].startswith(str(tmp_path))


def test_a_large_proposal_is_announced_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check of many actions takes seconds: on a terminal it is said, in a pipe not."""
    import json as json_

    from car_verify.cli import main

    plan = tmp_path / "big.json"
    actions = [{"id": f"a{n}", "type": "tool_call", "tool": "t"} for n in range(5_000)]
    plan.write_text(json_.dumps({"actions": actions}))
    import io

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert main(["verify", str(plan), "-q", "--exit-zero", "--max-actions", "10000"]) == 0
    assert "checking 5,000 actions" not in capsys.readouterr().err
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    main(["verify", str(plan), "-q", "--exit-zero", "--max-actions", "10000"])
    assert "checking 5,000 actions" in terminal.getvalue()
