"""A newcomer's pass over the command line (issue 59): nothing exits 0 where nothing
was checked, messages name only what the user gave, and counts read as English.

Each test runs the command as a user would (``main(argv)``), in its own folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# --- the rule language writes any stage name ------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=12), st.text(max_size=6))
def test_any_name_is_written_by_the_rule_language_and_read_back(tool: str, param: str) -> None:
    """A name that is no bare word (``node2:sub2``, ``run tests``, a keyword) is quoted
    in a rule's text, and the text parses back to the same rule."""
    from car_verify.rules.trace import Call, Test, TraceRule, parse_trace_rule

    rule = TraceRule("never", Call(tool, (Test(param, "present"),)))
    assert parse_trace_rule(rule.to_text()).call == rule.call


def test_workflow_rules_name_subgraph_stages_and_names_with_spaces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = {
        "entry": "start",
        "terminals": ["end"],
        "stages": ["start", "node2:sub2", "run tests", "end"],
        "edges": [
            {"from": "start", "to": "node2:sub2"},
            {"from": "node2:sub2", "to": "run tests"},
            {"from": "run tests", "to": "end"},
        ],
    }
    path = write(tmp_path / "g.json", graph)
    code, out, err = run(
        ["workflow", path, "--rule", 'never "run tests" after "node2:sub2"'], capsys
    )
    assert code == 1, err
    assert "(path: start -> node2:sub2 -> run tests)" in out
    code, out, err = run(
        ["workflow", path, "--rule", '"run tests" only after "node2:sub2"'], capsys
    )
    assert code == 0, (out, err)
    code, _, err = run(["workflow", path, "--rule", 'never "" after start'], capsys)
    assert code == 2 and "no stage is named ''" in err  # "" is a name: of no stage here


def test_a_trace_rule_typo_is_reported_where_the_rule_stands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rule's text was looked up as the file's first occurrence: a comment or a
    ``name`` that held the same text, or an earlier rule that held it whole, took
    the error (and the rule's origin) to the wrong line and column."""
    folder = tmp_path / "pol"
    folder.mkdir()
    (folder / "r.toml").write_text(
        "# never send_email aftr read_secret (the old rule, kept)\n"
        "[[trace_rule]]\n"
        'name = "never send_email aftr read_secret"\n'
        'rule = "never send_email aftr read_secret"\n'
    )
    code, _, err = run(["policy", "lint", str(folder)], capsys)
    assert code == 2 and "r.toml: line 4, column 26: trace_rule[0].rule" in err, err
    (folder / "r.toml").write_text(
        '[[trace_rule]]\nrule = "never deploy after build"\n'
        '[[trace_rule]]\nrule = "never deploy"\n'
        '[[trace_rule]]\nrule = """\nnever deploy where env aftr x"""\n'
    )
    code, _, err = run(["policy", "lint", str(folder)], capsys)
    assert code == 2 and "r.toml: line 7, column 24: trace_rule[2].rule" in err, err
    assert 'expected "!=", "==", "contains", "exists"' in err  # not "__anon_0"
    from car_verify.rules.policy import load_policies

    (folder / "r.toml").write_text(
        '[[trace_rule]]\nrule = "never deploy after build"\n[[trace_rule]]\nrule = "never deploy"\n'
    )
    origins = [r.origin for r in load_policies(folder).rules.trace_rule]
    assert origins == ["r.toml:2", "r.toml:4"]


# --- papercuts ------------------------------------------------------------------------


def test_policy_impact_writes_what_the_suffix_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_policy_impact import tau_record

    runs = write(tmp_path / "runs.json", [tau_record(0, [("a", {}, False), ("b", {}, True)])])
    old = write(tmp_path / "old.toml", 'deny_tool = ["a"]\n')
    new = write(tmp_path / "new.toml", 'deny_tool = ["b"]\n')
    assert main(["policy", "impact", old, new, runs, "-o", str(tmp_path / "calls.csv")]) == 1
    lines = (tmp_path / "calls.csv").read_text().splitlines()
    assert lines[0].startswith("trajectory,source,index,tool,old_decision,new_decision")
    assert lines[1].endswith(",0,a,deny,allow,deny_tool:a,,no_longer_denied,success")
    capsys.readouterr()
    code, out, err = run(["policy", "impact", old, new, runs, "-o", "calls.txt"], capsys)
    assert code == 2 and out == "" and "Parquet (-o calls.parquet) or CSV" in err
    assert not (tmp_path / "calls.txt").exists()


def test_policy_check_takes_q_and_says_a_large_check_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    (tmp_path / "pol").mkdir()
    (tmp_path / "pol" / "p.toml").write_text('deny_tool = ["t"]\n')
    plan = write(tmp_path / "p.json", {"actions": [CALL]})
    code, out, _ = run(["policy", "check", plan, "--policies", str(tmp_path / "pol"), "-q"], capsys)
    assert code == 1 and out.count("\n") == 1 and "error[deny_tool:t]" in out
    actions = [{**CALL, "id": f"a{i}", "tool": f"t{i}"} for i in range(5000)]
    plan = write(tmp_path / "big.json", {"actions": actions})
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, _, err = run(["policy", "check", plan, "--policies", str(tmp_path / "pol")], capsys)
    assert code == 0 and "checking 5,000 actions ..." in err
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)  # a pipe: nothing said
    code, _, err = run(["policy", "check", plan, "--policies", str(tmp_path / "pol")], capsys)
    assert code == 0 and err == ""


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [("openai_agents", "agents", "agents"), ("langchain", "langchain", "langchain")],
)
def test_a_missing_extra_says_how_to_install_it(module: str, blocked: str, extra: str) -> None:
    import subprocess
    import sys

    code = f"import sys; sys.modules[{blocked!r}] = None; import car_verify.integrations.{module}"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 1
    assert f"pip install 'car-verify[{extra}]'" in done.stderr.splitlines()[-1]


def test_did_you_mean_for_commands_options_codes_and_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["verfiy", "p.json"], capsys)
    assert code == 2 and "invalid choice: 'verfiy'; did you mean 'verify'?" in err
    code, _, err = run(["policy", "chek", "p.json"], capsys)
    assert code == 2 and "did you mean 'check'?" in err
    code, _, err = run(["codes", "write-conflcit"], capsys)
    assert code == 2 and "did you mean 'write-conflict'?" in err
    plan = write(tmp_path / "p.json", {"action": []})
    code, _, err = run(["verify", plan], capsys)
    assert code == 2 and "did you mean `actions` for `action`?" in err
    plan = write(tmp_path / "q.json", {"actions": [CALL]})
    code, _, err = run(["verify", plan, "--profle", "car"], capsys)
    assert code == 2 and "unrecognized arguments: --profle car (did you mean --profile?)" in err
    (tmp_path / ".car").mkdir()
    (tmp_path / ".car" / "verify.toml").write_text('selct = ["x"]\n')
    code, _, err = run(["lint", plan], capsys)
    assert code == 2 and "selct: unknown key (did you mean 'select'?" in err


def test_an_unknown_argument_prints_the_commands_usage_not_the_top_levels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = write(tmp_path / "p.json", {"actions": [CALL]})
    code, out, err = run(["verify", plan, "--bogus"], capsys)
    lines = err.splitlines()
    assert (
        code == 2 and out == "" and lines[0] == "car-verify: error: unrecognized arguments: --bogus"
    )
    assert lines[1].startswith("usage: car-verify verify ") and lines[-1].startswith(
        "Try 'car-verify verify --help'"
    )
    code, _, err = run(["policy", "check", "--bogus", plan], capsys)
    assert code == 2 and "usage: car-verify policy check " in err


def test_errors_found_after_reading_name_the_file_and_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad_type = {"actions": [CALL, {"id": "b", "type": "tool_cal", "tool": "t"}]}
    plan = tmp_path / "p.json"
    plan.write_text(json.dumps(bad_type, indent=2))
    for command in ("verify", "simulate", "optimize"):
        code, _, err = run([command, str(plan)], capsys)
        assert code == 2 and f"error: {plan}: line 10, column 15: actions[1].type: unknown" in err
    goal = write(tmp_path / "goal.json", {"condition": {"kind": "bogus"}, "inputs": {}})
    code, _, err = run(["goal", goal], capsys)
    assert code == 2 and f"error: {goal}: line 1, column 24: condition.kind: unknown goal" in err
    graph = write(tmp_path / "g.json", {"units": [{"id": "a", "duration": -1}]})
    code, _, err = run(["schedule", graph], capsys)
    assert code == 2 and f"error: {graph}: units[0].duration:" in err


def test_mcp_missing_argument_names_the_misspelt_key() -> None:
    from car_verify.cli.mcp_server import call

    found = call("verify", {"proposl": {"actions": []}})
    assert found[1] == "missing argument proposal (given 'proposl' for 'proposal': a misspelling?)"
    assert call("verify", {})[1] == "missing argument proposal"


def test_optimize_format_text_is_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parents[1]
    plan = str(root / "examples" / "gated-deploy" / "proposal.json")
    code, out, _ = run(["optimize", plan, "--format", "text"], capsys)
    assert code == 0 and not out.lstrip().startswith("{") and "(profile car)" in out
    _, diff, _ = run(["optimize", plan, "--diff"], capsys)
    assert out == diff
    assert json.loads(run(["optimize", plan], capsys)[1])["actions"]  # the default: the plan
    assert "removed" in json.loads(run(["optimize", plan, "--diff", "--format", "json"], capsys)[1])


def test_a_proposal_is_not_taken_as_the_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = write(tmp_path / "p.json", {"actions": [CALL]})
    (tmp_path / "pol").mkdir()
    (tmp_path / "pol" / "p.toml").write_text('deny_tool = ["x"]\n')
    for command in (["verify"], ["simulate"], ["policy", "check", "--policies", "pol"]):
        code, out, err = run([*command, plan, "--state", plan], capsys)
        assert code == 2 and out == "" and "this is a proposal" in err, (command, err)
    state = write(tmp_path / "s.json", {"actions": ["a", "b"], "k": 1})  # a key of that name
    assert main(["simulate", plan, "--state", state]) == 0


def test_an_empty_proposal_keeps_cars_verdict_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = write(tmp_path / "p.json", {"actions": []})
    code, out, _ = run(["verify", plan, "--profile", "car"], capsys)
    assert code == 0 and "info[empty-proposal]" in out
    code, out, _ = run(["lint", plan, "--profile", "car"], capsys)
    assert code == 0 and "warning[empty-proposal]" in out


def test_api_errors_say_values_as_json_not_python() -> None:
    import car_verify as cv
    from car_verify.base.errors import UsageError

    for kwargs, said in [
        ({"max_actions": True}, "got true"),
        ({"schedules": "x"}, 'must be "levels" or "any", got "x"'),
        ({"profile": True}, "unknown profile true"),
        ({"passes": 3}, "passes must be pass names"),
    ]:
        with pytest.raises(UsageError) as caught:
            cv.verify({"actions": []}, **kwargs)  # type: ignore[arg-type]
        assert said in str(caught.value) and "True" not in str(caught.value)


def test_an_audit_rerun_says_which_settings_differ_and_writes_no_null_strings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_policy_impact import tau_record

    runs = write(tmp_path / "runs.json", [tau_record(0, [("a", {}, False)])])
    out_dir = tmp_path / "out"
    assert main(["audit", runs, "-o", str(out_dir), "--no-progress"]) == 0
    manifest = json.loads((out_dir / "audit.json").read_text())
    assert manifest["labels"] is None and manifest["flow_policy"] is None
    capsys.readouterr()
    argv = ["audit", runs, "-o", str(out_dir), "--no-progress", "--profile", "strict"]
    code, _, err = run([*argv, "--budget", "5"], capsys)
    assert (
        code == 2 and "(the profile: car before, strict now; --budget: 10.0 before, 5.0 now)" in err
    )


def test_lint_says_where_yaml_1_1_reads_a_scalar_as_another_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "p.yaml"
    plan.write_text(
        "actions:\n"
        "  - id: a\n"
        "    type: tool_call\n"
        "    tool: t\n"
        "    parameters:\n"
        "      country: NO\n"
        "      code: 010\n"
        "      time: 1:20\n"
        '      quoted: "no"\n'
        "      plain: true\n"
        "      hex: 0x1F\n"
    )
    code, out, _ = run(["lint", str(plan)], capsys)
    found = [line.split(" ", 1) for line in out.splitlines() if "yaml-coercion" in line]
    assert [at.rsplit(":", 3)[1:3] for at, _ in found] == [["6", "16"], ["7", "13"], ["8", "13"]]
    assert '`NO` is read as false (YAML 1.1): quote it ("NO")' in found[0][1]
    assert "`010` is read as 8" in found[1][1] and "`1:20` is read as 80" in found[2][1]
    assert code == 0  # warnings: the default --fail-on error passes


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.text(max_size=5), st.one_of(st.text(max_size=5), st.integers(), st.booleans())
    )
)
def test_yaml_as_a_yaml_writer_writes_it_has_no_coercion(parameters: dict[str, object]) -> None:
    """PyYAML's own writer quotes every ambiguous string: nothing to flag."""
    import yaml

    from car_verify.corpora.lint import yaml_coercions

    assert yaml_coercions(yaml.safe_dump({"actions": [{"parameters": parameters}]})) == []


def test_lint_md_says_truly_which_of_lints_options_verify_takes() -> None:
    """lint.md said "verify takes the same options": it takes the table's options but
    the file patterns, and none of lint's own."""
    import re

    from car_verify.cli import _parser
    from car_verify.cli.options import command_tree

    parsers = {name: parser for name, parser, _ in command_tree(_parser())}

    def options(command: str) -> set[str]:
        found = parsers[f"car-verify {command}"]._actions
        return {o for a in found for o in a.option_strings if o.startswith("--")}

    page = (Path(__file__).resolve().parents[1] / "docs" / "lint.md").read_text()
    table = page.split("## Options a ruff user expects", 1)[1].split("## Baselines", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    claim = table.split("`verify` takes the options of this table", 1)[1]
    patterns, lint_only = claim.split("The rest of", 1)
    in_table = {o for row in rows for o in re.findall(r"`(--[a-z-]+)", row.split("|")[1])}
    said_patterns = set(re.findall(r"`(--[a-z-]+)`", patterns))
    said_lint_only = set(re.findall(r"`(--[a-z-]+)`", lint_only))
    assert said_patterns and said_lint_only
    assert in_table - said_patterns <= options("verify")
    assert not (said_patterns | said_lint_only) & options("verify")
    assert said_patterns | said_lint_only <= options("lint")
