"""Policies: every sentence of the spec's policy section, and trace rules."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import car_verify
from car_verify import InputError
from car_verify.cli import main
from car_verify.ir.model import Action
from car_verify.rules.policy import PolicyEngine, load_policies, load_policy_text
from car_verify.rules.trace import TraceGate, check_schedules, parse_trace_rule

pytestmark = pytest.mark.usefixtures("strict_cli")


def call(tool: str | None, action_id: str = "a1", **params: Any) -> Action:
    doc: dict[str, Any] = {"id": action_id, "type": "tool_call", "parameters": params}
    if tool is not None:
        doc["tool"] = tool
    return car_verify.load({"actions": [doc]}).actions[0]


def names(engine: PolicyEngine, action: Action, state: dict[str, Any] | None = None) -> list[str]:
    return [v.policy_name for v in engine.check(action, state)]


def engine(text: str, clock: list[float] | None = None) -> PolicyEngine:
    now = clock if clock is not None else [0.0]
    return PolicyEngine(load_policy_text(text), clock=lambda: now[0])


# --- registered rules ----------------------------------------------------------------------


def test_registered_rules() -> None:
    e = PolicyEngine()
    e.register_policy("no_shell", "deny_tool", "shell")
    e.register_policy("no_rm_rf", "deny_tool_param", "shell", "command", "rm -rf")
    e.register_policy("require_tests", "require_state", None, "tests_passed", None, "true")
    violations = e.check(call("shell", command="sudo rm -rf /tmp/x"), {"tests_passed": True})
    assert [v.to_dict() for v in violations] == [
        {"policy_name": "no_shell", "action_id": "a1", "reason": "tool 'shell' is denied"},
        {
            "policy_name": "no_rm_rf",
            "action_id": "a1",
            "reason": "param 'command' matches a denied pattern",
        },
    ]
    assert names(e, call("ls"), {"tests_passed": True}) == []
    assert names(e, call("ls"), {"tests_passed": 1}) == [
        "require_tests"
    ]  # JSON equality: true != 1
    assert names(e, call("ls"), {}) == ["require_tests"]
    with pytest.raises(car_verify.UsageError):
        e.register_policy("x", "deny_everything")


def test_callable_in_place_of_the_js_callback() -> None:
    e = PolicyEngine()
    e.register_callback(
        "big_batches", lambda tool, params, action: params.get("n", 0) > 100, "import"
    )
    e.register_callback(
        "why", lambda tool, params, action: "no deploys on Friday" if tool == "deploy" else ""
    )
    assert names(e, call("import", n=500)) == ["big_batches"]
    assert names(e, call("import", n=5)) == []
    assert names(e, call("other", n=500)) == []
    (violation,) = e.check(call("deploy"))
    assert violation.policy_name == "why" and violation.reason == "no deploys on Friday"


# --- file rules ----------------------------------------------------------------------------


def test_deny_tool_and_deny_keyword() -> None:
    e = engine('deny_tool = ["deploy", "rm"]\ndeny_keyword = ["DROP TABLE", "rm -rf /"]\n')
    assert names(e, call("deploy")) == ["deny_tool:deploy"]
    # a keyword rule is named by its number: its text may be a secret
    assert names(e, call("sql", q="select 1; DROP TABLE users")) == ["deny_keyword:1"]
    assert names(e, call("sql", q="drop table users")) == []  # case-sensitive
    assert names(e, call("x", a=["rm -rf /"])) == ["deny_keyword:2"]  # string-coerced
    assert names(e, call("rm", cmd="rm -rf /")) == ["deny_tool:rm", "deny_keyword:2"]


def test_deny_tool_param_equals_contains_presence() -> None:
    e = engine(
        '[[deny_tool_param]]\ntool = "http_request"\nparam = "url"\ncontains = "169.254.169.254"\n'
        '[[deny_tool_param]]\ntool = "shell"\nparam = "command"\nequals = "shutdown"\n'
        '[[deny_tool_param]]\ntool = "db"\nparam = "level"\nequals = 1\ncontains = "1"\n'
        '[[deny_tool_param]]\ntool = "mail"\nparam = "bcc"\n'
    )
    assert names(e, call("http_request", url="http://169.254.169.254/x")) == [
        "deny_tool_param:http_request.url"
    ]
    assert names(e, call("shell", command="shutdown")) == ["deny_tool_param:shell.command"]
    assert names(e, call("shell", command="shutdown now")) == []  # equals is exact
    assert names(e, call("db", level=1)) == ["deny_tool_param:db.level"]
    assert names(e, call("db", level="1")) == []  # both must hold: "1" is not the JSON value 1
    assert names(e, call("mail", bcc="")) == ["deny_tool_param:mail.bcc"]  # presence
    assert names(e, call("mail", to="x")) == []  # an absent parameter is never a violation


def test_allow_tool_param_fails_closed_three_ways() -> None:
    e = engine(
        '[[allow_tool_param]]\ntool = "deploy"\nparam = "target"\nallow = ["staging", "preview"]\n'
        '[[allow_tool_param]]\ntool = "nuke"\nparam = "x"\n'
    )
    rule = ["allow_tool_param:deploy.target"]
    assert names(e, call("deploy", target="staging")) == []
    assert names(e, call("deploy")) == rule  # absent
    assert names(e, call("deploy", target="prod")) == rule  # unlisted
    assert names(e, call("deploy", target="Staging")) == rule  # case-sensitive
    assert names(e, call("nuke", x="anything")) == ["allow_tool_param:nuke.x"]  # empty allow
    assert names(e, call("build", target="prod")) == []  # other tools untouched


def test_deny_tool_param_matching() -> None:
    e = engine(
        '[[deny_tool_param_matching]]\ntool = "http_request"\nparam = "body"\n'
        'matches = "sk-[A-Za-z0-9]{20,}"\n'
        '[[deny_tool_param_matching]]\ntool = "http_request"\nparam = "method"\n'
        'matches = "^DELETE$"\n'
    )
    secret = "sk-" + "A" * 24
    (v,) = e.check(call("http_request", body=f"token={secret}&x=1"))
    assert v.policy_name == "deny_tool_param_matching:http_request.body"
    assert secret not in v.reason and "token" not in v.reason  # no matched text
    assert names(e, call("http_request", method="XDELETE")) == []  # anchored by the author
    assert names(e, call("http_request", url="x")) == []  # absent parameter


@pytest.mark.parametrize(
    "pattern", ["(unclosed", "(a)\\1", "(?=a)b", "(?<!a)b", "(?:[ab]{1,1000}){1,1000}c"]
)
def test_a_pattern_re2_cannot_compile_fails_the_load_naming_file_key_and_rule(pattern: str) -> None:
    """Never loaded without a word to deny every call of its tool: the load fails,
    naming the file, the key and the rule, and says how to fix it."""
    text = f"[[deny_tool_param_matching]]\ntool = 'http'\nparam = 'body'\nmatches = '{pattern}'\n"
    with pytest.raises(InputError) as caught:
        load_policy_text(text, source="/p/rules.toml")
    said = str(caught.value)
    assert "rules.toml" in said and "deny_tool_param_matching[0].matches" in said
    assert "deny_tool_param_matching:http.body" in said and "RE2 cannot compile" in said
    # A rule built in code, never read from a file, still fails closed.
    from car_verify.rules.policy import MatchRule, PolicySet

    e = PolicyEngine(PolicySet(deny_tool_param_matching=[MatchRule("http", "body", pattern)]))
    assert names(e, call("http", body="fine")) == ["deny_tool_param_matching:http.body"]


def test_regex_is_linear_time() -> None:
    e = engine('[[deny_tool_param_matching]]\ntool = "t"\nparam = "p"\nmatches = "(a+)+$"\n')
    assert names(e, call("t", p="a" * 100_000 + "!")) == []  # a backtracking engine would hang here


def test_rate_limit_window_arithmetic() -> None:
    clock = [0.0]
    e = engine('[[rate_limit_tool]]\ntool = "http"\nmax_calls = 2\ninterval_secs = 10.0\n', clock)
    verdicts = []
    for t in (0, 1, 2, 9.9, 10, 10.5, 11):
        clock[0] = t
        verdicts.append(names(e, call("http")) == [])
    assert verdicts == [True, True, False, False, True, False, True]


def test_rate_limit_windows_carry_to_a_fresh_engine() -> None:
    """An engine restored from another's ``windows`` answers as the other would (the
    agent hook runs one engine per process over one session's windows)."""
    text = '[[rate_limit_tool]]\ntool = "http"\nmax_calls = 2\ninterval_secs = 10.0\n'
    clock = [0.0]
    verdicts = []
    windows: dict[int, tuple[float, ...]] = {}
    for t in (0, 1, 2, 9.9, 10, 10.5, 11):
        clock[0] = t
        fresh = engine(text, clock)
        fresh.restore_windows(windows)
        verdicts.append(names(fresh, call("http")) == [])
        windows = fresh.windows
    assert verdicts == [True, True, False, False, True, False, True]
    assert windows == {0: (10.0, 11.0)}


def test_rate_limit_budget_rules() -> None:
    clock = [0.0]
    e = engine(
        'deny_keyword = ["evil"]\n'
        '[[rate_limit_tool]]\ntool = "http"\nmax_calls = 1\ninterval_secs = 5\n',
        clock,
    )
    # A call refused by a different rule still takes its slot.
    assert names(e, call("http", q="evil")) == ["deny_keyword:1"]
    assert names(e, call("http")) == ["rate_limit_tool:http"]
    # A call refused by this rule is free: retrying into a full window does not push it out.
    for t in (1, 2, 3, 4.9):
        clock[0] = t
        assert names(e, call("http")) == ["rate_limit_tool:http"]
    clock[0] = 5.0
    assert names(e, call("http")) == []
    zero = engine('[[rate_limit_tool]]\ntool = "http"\nmax_calls = 0\ninterval_secs = 1\n')
    assert names(zero, call("http")) == ["rate_limit_tool:http"]
    # Per rule and per engine; a new engine starts empty.
    text = '[[rate_limit_tool]]\ntool = "http"\nmax_calls = 1\ninterval_secs = 60\n'
    first, second = engine(text), engine(text)
    assert names(first, call("http")) == [] and names(second, call("http")) == []
    assert names(first, call("http")) == ["rate_limit_tool:http"]


def test_no_rule_name_or_reason_carries_a_keywords_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A deny_keyword entry may be a secret (a token that must never reach a tool):
    its name and reason, in findings, SARIF, the hook's answer and the event log,
    never carry it, nor the matched text."""
    import json as _json

    from car_verify.cli import main
    from car_verify.rules.policy_analysis import lint_policies

    secret = "sk-live-51Hx9"
    folder = tmp_path / ".car" / "policies"
    folder.mkdir(parents=True)
    (folder / "a.toml").write_text('deny_keyword = ["harmless"]\n')
    (folder / "b.toml").write_text(f'deny_keyword = ["{secret}"]\n')
    plan = tmp_path / "plan.json"
    doc = {"actions": [{"id": "a", "type": "tool_call", "tool": "t", "parameters": {"k": secret}}]}
    plan.write_text(_json.dumps(doc))
    args = ["policy", "check", str(plan), "--policies", str(folder)]
    for form in ("sarif", "json", "text"):
        assert main([*args, "--format", form]) == 1
        said = capsys.readouterr()
        assert "deny_keyword:2" in said.out and secret not in said.out + said.err
    result = car_verify.verify(doc, policies=folder)
    assert [i.code for i in result.issues if i.code.startswith("deny_keyword")] == [
        "deny_keyword:2"
    ]
    for issue in result.issues:
        assert secret not in issue.code and secret not in issue.message
    assert all(secret not in f.message for f in lint_policies(folder))


def test_every_violation_is_reported_and_none_carries_the_value() -> None:
    e = engine(
        'deny_tool = ["http"]\ndeny_keyword = ["hunter2"]\n'
        '[[deny_tool_param]]\ntool = "http"\nparam = "pw"\ncontains = "hunter"\n'
        '[[allow_tool_param]]\ntool = "http"\nparam = "mode"\nallow = ["safe"]\n'
        '[[deny_tool_param_matching]]\ntool = "http"\nparam = "pw"\nmatches = "h.nter[0-9]"\n'
    )
    violations = e.check(call("http", pw="hunter2", mode="rm -rf"))
    assert [v.policy_name for v in violations] == [
        "deny_tool:http",
        "deny_keyword:1",
        "deny_tool_param:http.pw",
        "allow_tool_param:http.mode",
        "deny_tool_param_matching:http.pw",
    ]
    for v in violations:
        assert "hunter2" not in v.reason and "rm -rf" not in v.reason
        assert set(v.to_dict()) == {"policy_name", "action_id", "reason"}


# --- loading --------------------------------------------------------------------------------


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def test_loading_is_sorted_merged_and_strict(tmp_path: Path) -> None:
    policies = tmp_path / ".car" / "policies"
    write(policies, "b.toml", 'deny_keyword = ["second"]\n')
    write(policies, "a.toml", 'deny_keyword = ["first"]\ndeny_tool = ["x"]\n')
    write(policies, "notes.txt", "not a policy")
    loaded = load_policies(tmp_path)
    assert loaded.rules.deny_keyword == ["first", "second"]
    assert [f.name for f in loaded.files] == ["a.toml", "b.toml"]
    assert str(policies.resolve()) in loaded.describe()
    write(policies, "c.toml", "deny_tool = [")
    with pytest.raises(InputError) as err:
        load_policies(tmp_path)
    assert "c.toml" in str(err.value)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('deny_tools = ["x"]\n', "deny_tools: unknown key"),
        ('deny_tool = "x"\n', 'deny_tool: expected an array of strings (deny_tool = ["rm"])'),
        ("deny_tool = [1]\n", 'deny_tool[0]: expected a string (deny_tool = ["rm"])'),
        ('[[deny_tool_param]]\ntool = "t"\n', "missing required key 'param'"),
        (
            '[[deny_tool_param]]\ntool = "t"\nparam = "p"\nregex = "x"\n',
            "deny_tool_param[0].regex: unknown key",
        ),
        (
            '[[allow_tool_param]]\ntool = "t"\nparam = "p"\nallow = "x"\n',
            'allow_tool_param[0].allow: expected an array, got str (allow = ["staging"])',
        ),
        (
            '[[rate_limit_tool]]\ntool = "t"\nmax_calls = "3"\ninterval_secs = 1\n',
            "max_calls: expected an integer, got str (max_calls = 3)",
        ),
        ('[[rate_limit_tool]]\ntool = "t"\nmax_calls = true\ninterval_secs = 1\n', "got a boolean"),
        (
            '[[rate_limit_tool]]\ntool = "t"\nmax_calls = -1\ninterval_secs = 1\n',
            "must not be negative",
        ),
        ('[[trace_rule]]\nrule = "never deploy before tests"\n', "trace_rule[0].rule"),
        ('[[trace_rule]]\nrule = "never x"\nlevel = 1\n', "trace_rule[0].level: unknown key"),
    ],
)
def test_a_bad_file_fails_the_whole_load_naming_file_and_key(
    tmp_path: Path, text: str, needle: str
) -> None:
    path = write(tmp_path / "p", "rules.toml", text)
    with pytest.raises(InputError) as err:
        load_policies(tmp_path / "p")
    assert str(path) in str(err.value) and needle in str(err.value)


def test_trace_rule_errors_give_line_and_column(tmp_path: Path) -> None:
    write(
        tmp_path / "p", "t.toml", '# header\n\n[[trace_rule]]\nrule = "deploy only befor tests"\n'
    )
    with pytest.raises(InputError) as err:
        load_policies(tmp_path / "p")
    # the file's line and column, where an editor should jump: "befor" on line 4
    assert (err.value.line, err.value.column) == (4, 21)
    assert "t.toml: line 4, column 21: trace_rule[0].rule: " in str(err.value)
    write(tmp_path / "p", "t.toml", "[[trace_rule]]\nrule = '''\nrun_tests before\n  deploy'''\n")
    with pytest.raises(InputError) as err:
        load_policies(tmp_path / "p")
    assert (err.value.line, err.value.column) == (3, 11)  # a multi-line rule
    write(tmp_path / "p", "t.toml", '[[trace_rule]]\nrule = "deploy \\u0020only befor tests"\n')
    with pytest.raises(InputError) as err:
        load_policies(tmp_path / "p")
    # written with an escape, the rule is not found in the file: its own position
    assert err.value.line is None and "line 1 column 14 of the rule" in str(err.value)


def test_discovery_walks_up_to_the_repository_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / ".car" / "policies"
    write(outside, "outside.toml", 'deny_tool = ["outside"]\n')
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    deep = repo / "src" / "agents"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    loaded = load_policies()
    assert loaded.directory is None and "no .car/policies" in loaded.describe()  # stops at the root
    write(repo / ".car" / "policies", "repo.toml", 'deny_tool = ["inside"]\n')
    loaded = load_policies()
    assert loaded.rules.deny_tool == ["inside"] and str(repo.resolve()) in loaded.describe()
    monkeypatch.chdir(tmp_path / "repo" / "src")
    assert load_policies().rules.deny_tool == ["inside"]


# --- trace rules ------------------------------------------------------------------------------


def test_trace_gate_semantics() -> None:
    gate = TraceGate(
        [
            parse_trace_rule("never send_email after read_secret"),
            parse_trace_rule('deploy where env == "prod" only after run_tests succeeded'),
            parse_trace_rule("at most 2 http_request"),
            parse_trace_rule('never any tool where url contains "169.254"'),
        ]
    )
    assert gate.dispatch("send_email", {}) == []
    assert gate.dispatch("deploy", {"env": "dev"}) == []  # the rule is about prod only
    assert [v.policy_name for v in gate.dispatch("deploy", {"env": "prod"})] == [
        "trace_rule:deploy where env == … only after run_tests succeeded"  # no literal
    ]
    assert gate.dispatch("run_tests", {}) == []
    gate.record("run_tests", {}, "failed")
    assert gate.dispatch("deploy", {"env": "prod"})  # failing tests do not count
    gate.record("run_tests", {}, "succeeded")
    assert gate.dispatch("deploy", {"env": "prod"}) == []
    assert gate.dispatch("read_secret", {}) == []
    assert gate.dispatch("send_email", {})
    assert gate.dispatch("http_request", {}) == [] and gate.dispatch("http_request", {}) == []
    assert gate.dispatch("http_request", {})
    assert gate.dispatch("fetch", {"url": "http://169.254.169.254"})


@st.composite
def dags(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(1, 6))
    actions = []
    for i in range(n):
        deps = (
            draw(st.lists(st.sampled_from([f"a{j}" for j in range(i)]), unique=True, max_size=2))
            if i
            else []
        )
        tool = draw(st.sampled_from(["read_secret", "send_email", "run_tests", "deploy", "noop"]))
        actions.append(
            {
                "id": f"a{i}",
                "type": "tool_call",
                "tool": tool,
                "dependencies": deps,
                "parameters": {"env": draw(st.sampled_from(["prod", "dev"]))},
            }
        )
    return {"actions": actions}


RULES = st.sampled_from(
    [
        "never send_email after read_secret",
        'deploy where env == "prod" only after run_tests succeeded',
        "at most 1 deploy",
        "never any tool after send_email",
        "send_email only after deploy",
    ]
)


def linearizations(doc: dict[str, Any]) -> list[list[int]]:
    actions = doc["actions"]
    ids = [a["id"] for a in actions]
    out = []
    for order in itertools.permutations(range(len(actions))):
        position = {i: k for k, i in enumerate(order)}
        if all(
            position[ids.index(d)] < position[i] for i in order for d in actions[i]["dependencies"]
        ):
            out.append(list(order))
    return out


def replay(rule: Any, doc: dict[str, Any], order: list[int]) -> bool:
    """True when the gate refuses some call of this schedule."""
    gate = TraceGate([rule])
    for i in order:
        a = doc["actions"][i]
        if gate.dispatch(a["tool"], a["parameters"]):
            return True
        gate.record(a["tool"], a["parameters"], "succeeded")
    return False


@settings(max_examples=150)
@given(dags(), RULES)
def test_static_check_agrees_with_the_gate_on_every_linearization(
    doc: dict[str, Any], text: str
) -> None:
    rule = parse_trace_rule(text)
    (result,) = check_schedules(car_verify.load(doc), [rule], schedules="any")
    assert result.complete
    some_schedule_violates = any(replay(rule, doc, order) for order in linearizations(doc))
    assert (result.schedule is not None) == some_schedule_violates
    if result.schedule is not None:
        ids = [a["id"] for a in doc["actions"]]
        prefix = [ids.index(x) for x in result.schedule]
        order = prefix + [i for i in range(len(ids)) if i not in prefix]
        gate = TraceGate([rule])
        refused = False
        for i in prefix:
            a = doc["actions"][i]
            refused = bool(gate.dispatch(a["tool"], a["parameters"]))
            if refused:
                break
            gate.record(a["tool"], a["parameters"], "succeeded")
        assert refused and len(order) == len(ids)


def test_budget_exhaustion_is_reported_as_sampled_never_a_silent_pass() -> None:
    doc = {
        "actions": [{"id": f"s{i}", "type": "tool_call", "tool": "send_email"} for i in range(12)]
    }
    rule = parse_trace_rule("never send_email after read_secret")
    (result,) = check_schedules(car_verify.load(doc), [rule], budget=50, schedules="any")
    assert not result.complete and result.explored == 50 and result.schedule is None
    policies = load_policy_text(
        '[[trace_rule]]\nname = "secret"\nrule = "never send_email after read_secret"\n'
    )
    pe = PolicyEngine(policies)
    result_v = car_verify.verify(doc, policies=pe, passes=["policies"], profile="strict")
    assert result_v.issues == []  # the default budget covers 2^12 states
    from car_verify.analyses.policies import PolicyPass
    from car_verify.passes import Context, Options

    ctx = Context(
        car_verify.load(doc), options=Options(trace_budget=50), policies=pe, semantics="strict"
    )
    (issue,) = list(PolicyPass().run(ctx))
    assert (
        issue.tier == "sampled" and issue.severity == "warning" and "explored 50" in issue.message
    )


# --- verify and the CLI -----------------------------------------------------------------------

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_verify_reports_policy_violations_named_after_the_rule() -> None:
    result = car_verify.verify(
        EXAMPLES / "policies" / "proposal.json", policies=EXAMPLES / "policies", profile="strict"
    )
    codes = [(i.code, i.action_id, i.tier.value) for i in result.issues]
    assert ("allow_tool_param:deploy.env", "deploy", "decision_procedure") in codes
    assert ("deny_tool_param:http_request.url", "metadata", "decision_procedure") in codes
    assert ("rate_limit_tool:send_message", "followup", "decision_procedure") in codes
    assert ("trace_rule:tested-before-deploy", "deploy", "decision_procedure") in codes
    assert ("trace_rule:no-secrets-out", "announce", "decision_procedure") in codes
    assert not result.valid


def test_require_state_sees_the_state_at_the_actions_level() -> None:
    e = PolicyEngine()
    e.register_policy("tested", "require_state", None, "tests_passed", None, "true")
    doc = {
        "actions": [
            {
                "id": "t",
                "type": "tool_call",
                "tool": "run_tests",
                "expected_effects": {"tests_passed": True},
            },
            {"id": "d", "type": "tool_call", "tool": "deploy", "dependencies": ["t"]},
        ]
    }
    issues = car_verify.verify(doc, policies=e, profile="strict").issues
    assert [(i.code, i.action_id) for i in issues] == [("tested", "t")]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_policy_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    proposal = str(EXAMPLES / "policies" / "proposal.json")
    code, out, _ = run(
        ["policy", "check", proposal, "--policies", str(EXAMPLES / "policies")], capsys
    )
    assert code == 1 and "6 violations (loaded 10 rules from 2 files in" in out
    code, out, _ = run(
        ["policy", "check", proposal, "--policies", str(EXAMPLES / "policies"), "--format", "json"],
        capsys,
    )
    assert code == 1 and len(json.loads(out)["violations"]) == 6
    monkeypatch.chdir(tmp_path)
    assert (
        run(["policy", "check", proposal], capsys)[0] == 1
    )  # discovered from the proposal's own folder, wherever the command runs
    payment = str(EXAMPLES / "payment" / "proposal.json")
    policies = str(EXAMPLES / "policies")
    code, out, _ = run(["policy", "check", payment, "--policies", policies], capsys)
    assert code == 0 and out.startswith("0 violations")
    monkeypatch.chdir(EXAMPLES / "policies")  # the working directory's policies are not its
    code, out, err = run(["policy", "check", payment], capsys)
    assert code == 2 and "nothing was checked" in err
    code, out, _ = run(["policy", "lint", str(EXAMPLES / "policies")], capsys)
    assert code == 0 and "trace_rule: 2" in out
    write(tmp_path / "bad", "x.toml", "deny_tool = 3\n")
    code, out, err = run(["policy", "lint", str(tmp_path / "bad")], capsys)
    assert code == 2 and out == "" and "x.toml" in err and err.count("\n") == 1
    code, out, _ = run(["verify", proposal, "--policies", str(EXAMPLES / "policies")], capsys)
    assert code == 1 and "allow_tool_param:deploy.env" in out


def _grammar() -> Any:
    from lark import Lark

    from car_verify.rules.trace import _grammar_text

    return Lark(_grammar_text(), parser="lalr", strict=True)


def _spaced(strategy: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return strategy.map(lambda s: f" {s} ")


@pytest.mark.slow
@settings(max_examples=60)
@given(st.data())
def test_grammar_fuzz_parse_print_parse(data: st.DataObject) -> None:
    """Sentences of the grammar parse, print back and parse to the same rule.

    Keywords are drawn with spaces around them: the language needs whitespace
    between words (``atmost`` is a name, not ``at most``)."""
    from hypothesis.extra.lark import from_lark

    grammar = _grammar()
    explicit = {
        t.name: _spaced(st.just(t.pattern.value))
        for t in grammar.terminals
        if t.pattern.type == "str"
    }
    name = next(t for t in grammar.terminals if t.name == "NAME").pattern.value
    explicit["NAME"] = _spaced(st.from_regex(name, fullmatch=True))
    explicit["INT"] = _spaced(st.integers(0, 10**6).map(str))
    explicit["SIGNED_NUMBER"] = _spaced(
        st.one_of(st.integers(-(10**6), 10**6).map(str), st.floats(-1e6, 1e6).map(repr))
    )
    explicit["ESCAPED_STRING"] = _spaced(st.text(max_size=8).map(json.dumps))
    text = data.draw(from_lark(grammar, start="start", explicit=explicit))
    rule = parse_trace_rule(text)
    again = parse_trace_rule(rule.to_text())
    assert (again.kind, again.call, again.event, again.limit) == (
        rule.kind,
        rule.call,
        rule.event,
        rule.limit,
    )


@pytest.mark.parametrize(
    ("text", "column", "hint"),
    [
        ("never deploy before tests", 14, '"after"'),
        ("deploy only", 8, '"after"'),
        ("at most three deploy", 9, "a number"),
        ("never deploy where env = 1", 24, None),
        ('never deploy where env == "\\q"', 27, "string"),
        ("", 1, None),
    ],
)
def test_parse_errors_are_friendly(text: str, column: int, hint: str | None) -> None:
    with pytest.raises(InputError) as err:
        parse_trace_rule(text, source="rules.toml")
    assert err.value.column == column and err.value.source == "rules.toml"
    if hint:
        assert hint in str(err.value)


def test_check_call_hands_a_callback_an_action_made_from_the_call() -> None:
    seen: list[Any] = []
    e = engine("")
    e.register_callback("cb", lambda tool, params, action: seen.append(action) or "no", "http")
    assert e.check_call("http", {"url": "x"}) == [("cb", "no")]
    assert (seen[0].type, seen[0].tool, seen[0].parameters) == ("tool_call", "http", {"url": "x"})
    violations = e.check(call("http", url="x"))
    assert [(v.policy_name, v.reason) for v in violations] == [("cb", "no")]


def test_the_work_of_one_match_is_bounded_and_past_it_the_call_is_denied() -> None:
    """RE2 is linear, but a costly pattern on megabytes takes seconds: a match past
    MAX_MATCH_WORK (program size times text length) denies, it does not run."""
    import time

    from car_verify.rules.policy import MAX_MATCH_WORK

    e = engine(
        '[[deny_tool_param_matching]]\ntool = "Bash"\nparam = "command"\nmatches = "(.*a){40}"\n'
    )
    long = "b" * (MAX_MATCH_WORK // 100)  # past the bound for a 444-instruction program
    started = time.perf_counter()
    [(name, reason)] = e.check_call("Bash", {"command": long})
    assert time.perf_counter() - started < 1.0
    assert name == "deny_tool_param_matching:Bash.command" and "work bound" in reason
    assert e.check_call("Bash", {"command": "b" * 1000}) == []  # short texts still match
    assert e.check_call("Bash", {"command": "a" * 40})


SHELL_VARIANTS = [
    "rm -rf /",
    "rm -r -f /",
    "rm -fr /",
    "r''m -rf /",
    "/bin/rm -rf /",
    "sudo rm -rf /",
    "sudo -u root rm -rf /",
    "X=1 rm -rf /",
    "true && rm -rf /",
    "ls; rm -rf /",
    "echo $(rm -rf /)",
    "echo `rm -rf /`",
    'bash -c "rm -rf /"',
    "ls | xargs rm -rf",
]


@pytest.mark.parametrize("command", SHELL_VARIANTS)
def test_a_command_rule_reads_the_line_as_a_shell_does(command: str) -> None:
    """``deny_command`` matches the commands a shell runs, not the text: quoting,
    split flags, paths, wrappers, chains and substitutions are seen through, and the
    tool's name is compared without case."""
    e = engine('[[deny_command]]\nprogram = "rm"\nflags = ["-rf"]\n')
    for tool in ("Bash", "bash"):
        [(name, reason)] = e.check_call(tool, {"command": command})
        assert name == "deny_command:Bash.rm" and "runs rm with the flags" in reason
        assert "-r" not in reason and "-f" not in reason  # no literal of the rule
    substring = engine(
        '[[deny_tool_param]]\ntool = "Bash"\nparam = "command"\ncontains = "rm -rf"\n'
    )
    if "rm -rf" not in command:
        assert substring.check_call("Bash", {"command": command}) == []  # what it misses


def test_a_command_rule_denies_what_it_cannot_read_and_leaves_the_rest() -> None:
    e = engine('[[deny_command]]\nprogram = "rm"\nflags = ["-r"]\n')
    assert e.check_call("Bash", {"command": "rm -f x"}) == []  # no -r
    assert e.check_call("Bash", {"command": 'echo "rm -r /"'}) == []  # an argument, not run
    [(_, reason)] = e.check_call("Bash", {"command": 'rm -r "unclosed'})
    assert "cannot be read as a shell command line" in reason
    with pytest.raises(InputError, match=r"deny_command\[0\]\.flags\[0\]"):
        engine('[[deny_command]]\nprogram = "rm"\nflags = ["r"]\n')


def test_policy_diff_of_a_command_rule_is_unknown_never_a_guess(tmp_path: Path) -> None:
    from car_verify.plan.policy_diff import policy_diff

    old = tmp_path / "old"
    new = tmp_path / "new"
    old.mkdir()
    new.mkdir()
    (old / "a.toml").write_text('[[deny_command]]\nprogram = "rm"\nflags = ["-r"]\n')
    (new / "a.toml").write_text('deny_tool = ["x"]\n')
    assert policy_diff(old, new).verdict == "unknown"


# --- the load: one open per entry, and what it skipped ------------------------------------------


def test_a_folder_whose_only_file_is_misnamed_says_what_it_skipped(tmp_path: Path) -> None:
    folder = tmp_path / ".car" / "policies"
    folder.mkdir(parents=True)
    (folder / "rules.tml").write_text('deny_tool = ["rm"]\n')
    loaded = load_policies(folder)
    assert loaded.rules.count() == 0
    assert loaded.skipped == [(folder / "rules.tml", "not a .toml file")]
    assert "skipped rules.tml (not a .toml file)" in loaded.describe()


def test_the_text_checked_is_the_text_read_once(tmp_path: Path) -> None:
    folder = tmp_path / "policies"
    folder.mkdir()
    (folder / "p.toml").write_text('deny_tool = ["rm"]\n')
    loaded = load_policies(folder)
    assert loaded.texts == {folder / "p.toml": 'deny_tool = ["rm"]\n'}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_among_the_policies_fails_closed_at_once(tmp_path: Path) -> None:
    folder = tmp_path / "policies"
    folder.mkdir()
    os.mkfifo(folder / "p.toml")
    with pytest.raises(InputError, match="not a regular file"):
        load_policies(folder)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_symlink_swapped_to_a_fifo_never_blocks_the_load(tmp_path: Path) -> None:
    """An agent swaps p.toml between a link to the rules and a link to a FIFO while
    the rules load: every load ends, each with the rules or with an error."""
    import threading

    folder = tmp_path / "policies"
    folder.mkdir()
    rules = tmp_path / "rules.toml"
    rules.write_text('deny_tool = ["rm"]\n')
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = folder / "p.toml"
    link.symlink_to(rules)
    for i in range(300):  # entries read after p.toml widen the old window between check and open
        (folder / f"z{i:03}.toml").write_text("")
    stop = threading.Event()

    def swap() -> None:
        targets = itertools.cycle([fifo, rules])
        while not stop.is_set():
            spare = folder / ".swap"
            spare.symlink_to(next(targets))
            os.replace(spare, link)

    swapper = threading.Thread(target=swap, daemon=True)
    outcomes: list[str] = []

    def load_many() -> None:
        for _ in range(100):
            try:
                loaded = load_policies(folder)
            except InputError:
                outcomes.append("closed")
            else:
                # a load that raced past the spare link may skip it; never lose the rule
                assert loaded.rules.deny_tool == ["rm"] or not loaded.files
                outcomes.append("read" if loaded.files else "none")

    loader = threading.Thread(target=load_many, daemon=True)
    swapper.start()
    loader.start()
    loader.join(timeout=60)
    stop.set()
    swapper.join(timeout=5)
    assert not loader.is_alive(), "a policy load blocked on a swapped-in FIFO"
    assert len(outcomes) == 100
