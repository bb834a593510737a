"""Policy sets analysed (issue 29): ``policy diff`` and ``policy lint`` checked
against brute force over a small finite universe of calls (Hypothesis), the RE2
translation against RE2 itself, rate limits and trace rules, and the CLI."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from car_verify.cli import main
from car_verify.ir.model import Action
from car_verify.plan.policy_diff import policy_diff
from car_verify.rules import policy
from car_verify.rules.policy import PolicyEngine, PolicySet
from car_verify.rules.policy_analysis import lint_policies
from car_verify.rules.policy_regex import search_language

#: Generated policy-set pairs per property: the fuzz of ``policy diff`` and
#: ``policy lint``, five times as many in CI.
PAIRS = 300 if os.environ.get("CI") else 60

TOOLS = ["a", "b"]
PARAMS = ["p", "q"]
# 0, 0.0 and -0.0 are one JSON value with three texts (issue 37): a rule on
# the value and one on the text ("-") must be compared as one.
VALUES: list[Any] = ["x", "xy", "y", "1", 1, 1.0, 0, -0.0, True, "", ["x"], {"k": "x"}, "true"]
PATTERNS = ["^x", "y$", "x.y", "[0-9]", "(?!x)", "x|^$", "x{2}"]


def load_policy_text(text: str) -> PolicySet:
    """The rules as ``policy lint`` reads them: a pattern RE2 cannot compile (which
    every face refuses to load) is kept, failing closed, and analysed as such."""
    return policy.load_policy_text(text, strict=False)


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return json.dumps(v)


@st.composite
def rule_sets(draw: st.DrawFn) -> str:
    tool, param = st.sampled_from(TOOLS), st.sampled_from(PARAMS)
    lines = []
    denied = draw(st.lists(st.sampled_from([*TOOLS, "c"]), unique=True, max_size=1))
    if denied:
        lines.append(f"deny_tool = {json.dumps(denied)}")
    words = draw(st.lists(st.sampled_from(["y", "k"]), unique=True, max_size=1))
    if words:
        lines.append(f"deny_keyword = {json.dumps(words)}")
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["param", "allow", "matching"]))
        t, p = draw(tool), draw(param)
        if kind == "param":
            lines += ["[[deny_tool_param]]", f'tool = "{t}"', f'param = "{p}"']
            if draw(st.booleans()):
                lines.append(f"equals = {toml_value(draw(st.sampled_from(VALUES)))}")
            if draw(st.booleans()):
                needle = draw(st.sampled_from(["x", "y", "1", "-"]))
                lines.append(f"contains = {json.dumps(needle)}")
        elif kind == "allow":
            allow = draw(st.lists(st.sampled_from(["x", "xy", "1", "true"]), unique=True))
            lines += ["[[allow_tool_param]]", f'tool = "{t}"', f'param = "{p}"',
                      f"allow = {json.dumps(allow)}"]  # fmt: skip
        else:
            lines += ["[[deny_tool_param_matching]]", f'tool = "{t}"', f'param = "{p}"',
                      f"matches = {json.dumps(draw(st.sampled_from(PATTERNS)))}"]  # fmt: skip
    return "\n".join(lines) + "\n"


def universe() -> list[tuple[str, dict[str, Any]]]:
    out = []
    slot = [None, *VALUES]
    for tool in [*TOOLS, "c"]:
        for p, q, z in itertools.product(slot, slot, [None, "y"]):
            params = {k: v for k, v in (("p", p), ("q", q), ("z", z)) if v is not None}
            out.append((tool, params))
    return out


UNIVERSE = universe()


def denied(rules: PolicySet, tool: str, params: dict[str, Any]) -> bool:
    action = Action(id="x", type="tool_call", tool=tool, parameters=params)
    return bool(PolicyEngine(rules).check(action))


@settings(deadline=None, max_examples=PAIRS, suppress_health_check=[HealthCheck.too_slow])
@given(rule_sets(), rule_sets())
@example(  # a pattern reads the strings inside an array, as the engine does
    '[[deny_tool_param_matching]]\ntool = "a"\nparam = "q"\nmatches = "^x"\n',
    '[[deny_tool_param]]\ntool = "a"\nparam = "q"\nequals = ["x"]\n',
)
def test_diff_agrees_with_brute_force_and_its_counterexamples_split(old: str, new: str) -> None:
    a, b = load_policy_text(old), load_policy_text(new)
    diff = policy_diff(a, b)
    newly_allowed = [c for c in UNIVERSE if denied(a, *c) and not denied(b, *c)]
    newly_denied = [c for c in UNIVERSE if denied(b, *c) and not denied(a, *c)]
    assert diff.new_covers_old is not None and diff.old_covers_new is not None, diff.unknown
    if diff.new_covers_old:
        assert not newly_allowed, (diff.verdict, newly_allowed[:3])
    if diff.old_covers_new:
        assert not newly_denied, (diff.verdict, newly_denied[:3])
    for c in diff.newly_allowed:
        assert denied(a, c.tool, c.parameters) and not denied(b, c.tool, c.parameters)
    for c in diff.newly_denied:
        assert denied(b, c.tool, c.parameters) and not denied(a, c.tool, c.parameters)
    expected = {
        (True, True): "equivalent",
        (True, False): "stricter",
        (False, True): "looser",
        (False, False): "incomparable",
    }[(diff.new_covers_old, diff.old_covers_new)]
    assert diff.verdict == expected


def only(rules: PolicySet, index: int) -> tuple[PolicySet, PolicySet]:
    """The rule at ``index`` of the flattened set alone, and the others."""
    kinds = ["deny_tool", "deny_keyword", "deny_tool_param", "allow_tool_param",
             "deny_tool_param_matching"]  # fmt: skip
    flat = [(k, r) for k in kinds for r in getattr(rules, k)]
    mine, rest = PolicySet(), PolicySet()
    for n, (kind, rule) in enumerate(flat):
        getattr(mine if n == index else rest, kind).append(rule)
    return mine, rest


@settings(deadline=None, max_examples=PAIRS, suppress_health_check=[HealthCheck.too_slow])
@given(rule_sets())
def test_dead_and_shadowed_rules_agree_with_brute_force(text: str) -> None:
    rules = load_policy_text(text)
    findings = lint_policies(rules)
    from car_verify.rules.policy_analysis import gather as _rules

    refs = [r for r in _rules(rules)[0] if r.kind not in ("rate_limit_tool", "trace_rule")]
    for finding in findings:
        index = next(n for n, r in enumerate(refs) if r.label == str(finding.rule))
        mine, rest = only(rules, index)
        if finding.code in ("policy-dead-rule", "policy-shadowed-rule"):
            # every call it denies is denied without it
            assert all(denied(rest, *c) for c in UNIVERSE if denied(mine, *c)), finding
        if finding.witness is not None and finding.code != "policy-contradiction":
            judge = mine if finding.code != "policy-allow-cancelled" else rest
            assert denied(judge, finding.witness["tool"], finding.witness["parameters"]), finding
    # and a rule some call of the universe needs (only it denies the call) is never
    # reported redundant: that is the check above, read the other way round


@settings(deadline=None, max_examples=PAIRS, suppress_health_check=[HealthCheck.too_slow])
@given(rule_sets(), rule_sets())
@example(
    '[[deny_tool_param]]\ntool = "a"\nparam = "p"\ncontains = "x"\n'
    '[[deny_tool_param_matching]]\ntool = "a"\nparam = "p"\nmatches = "^x"\n',
    'deny_keyword = ["y"]\n[[allow_tool_param]]\ntool = "a"\nparam = "q"\nallow = []\n',
)
def test_lint_answers_slot_by_slot_as_it_does_whole(first: str, second: str) -> None:
    """Issue 37 (lint of 100 rules took 19 s): lint asks its questions one slot
    at a time, each a single regular-language membership. The plain reading,
    every question asked whole, gives the same findings on generated sets (two
    sets merged, so that rules pile up on the same tool and parameter)."""
    from car_verify.rules.policy_analysis import _redundancy
    from car_verify.rules.policy_analysis import gather as _rules

    one, two = load_policy_text(first), load_policy_text(second)
    both = PolicySet()
    both.extend(one)
    both.extend(two)
    refs = _rules(both)[0]
    # The witness is whichever model z3 returns first: not compared.
    # Without the time budget: the plain reading is the slow one it stands beside.
    fast = [(f.code, f.rule.label, f.message, f.others) for f in _redundancy(refs, seconds=None)]
    plain = [
        (f.code, f.rule.label, f.message, f.others)
        for f in _redundancy(refs, sliced=False, seconds=None)
    ]
    assert fast == plain


@settings(deadline=None, max_examples=200)
@given(
    st.sampled_from(
        [p for p in PATTERNS if p != "(?!x)"] + ["a+b*", "[^x]y?", r"\d\s", "(x|y){1,2}z"]
    ),
    st.text(alphabet="xyz1ab \n", max_size=6),
)
def test_the_regex_translation_agrees_with_re2(pattern: str, text: str) -> None:
    import re2
    import z3

    found = bool(re2.search(pattern, text))
    assert z3.is_true(z3.simplify(z3.InRe(z3.StringVal(text), search_language(pattern)))) == found


def test_an_untranslatable_pattern_is_unknown_not_a_guess() -> None:
    old = load_policy_text(
        '[[deny_tool_param_matching]]\ntool = "a"\nparam = "p"\nmatches = "\\\\bx"\n'
    )
    new = load_policy_text("")
    diff = policy_diff(old, new)
    # the split is found and checked on the engines even so ("x" matches \bx)
    assert diff.verdict == "looser" and diff.newly_allowed
    assert policy_diff(old, old).verdict == "equivalent"  # the same rule decides alike
    narrower = load_policy_text(
        '[[deny_tool_param_matching]]\ntool = "a"\nparam = "p"\nmatches = "\\\\bxy"\n'
    )
    diff = policy_diff(old, narrower)
    assert diff.newly_allowed and diff.newly_allowed[0].parameters["p"]  # checked on RE2
    assert diff.verdict == "unknown" and diff.old_covers_new is None
    assert any("deny_tool_param_matching:a.p" in u for u in diff.unknown)


def test_a_solver_out_of_time_says_so_and_names_the_inexact_rules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a busy machine z3 may give no answer in its time limit: the diff is unknown,
    says why, and still names the rule it holds only approximately."""
    import z3

    monkeypatch.setattr(z3.Solver, "check", lambda self, *args: z3.unknown)
    old = load_policy_text(
        '[[deny_tool_param_matching]]\ntool = "a"\nparam = "p"\nmatches = "\\\\bx"\n'
    )
    diff = policy_diff(old, load_policy_text(""))
    assert diff.verdict == "unknown" and not diff.newly_allowed
    said = [u for u in diff.unknown if "time limit" in u]
    assert said and all("deny_tool_param_matching:a.p" in u for u in said)


def test_rate_limits_compared_as_caps() -> None:
    two = load_policy_text(
        '[[rate_limit_tool]]\ntool = "send"\nmax_calls = 2\ninterval_secs = 10\n'
    )
    three = load_policy_text(
        '[[rate_limit_tool]]\ntool = "send"\nmax_calls = 3\ninterval_secs = 10\n'
    )
    longer = load_policy_text(
        '[[rate_limit_tool]]\ntool = "send"\nmax_calls = 2\ninterval_secs = 20\n'
    )
    assert policy_diff(two, three).verdict == "looser"
    [run] = policy_diff(two, three).newly_allowed
    assert len(run.calls_at or ()) == 3 and run.denied_by == ("rate_limit_tool:send",)
    # A longer window is not stricter: a call it denies takes no slot, so 0 s,
    # 5 s, 5 s, 20 s... (see the module docs of car_verify.rules.rate_compare).
    assert policy_diff(two, longer).verdict == "incomparable"
    assert policy_diff(two, two).verdict == "equivalent"


def rate_set(caps: list[tuple[int, int]]) -> PolicySet:
    return load_policy_text(
        "".join(
            f'[[rate_limit_tool]]\ntool = "send"\nmax_calls = {m}\ninterval_secs = {w}\n'
            for m, w in caps
        )
    )


def last_denied(rules: PolicySet, run: list[float]) -> bool:
    clock = [0.0]
    engine = PolicyEngine(rules, clock=lambda: clock[0])
    verdict = False
    for t in run:
        clock[0] = t
        verdict = bool(engine.check_call("send", {}))
    return verdict


CAPS = st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from([2, 3, 5, 10])), min_size=0, max_size=2
)


@settings(deadline=None, max_examples=PAIRS * 2, suppress_health_check=[HealthCheck.too_slow])
@given(CAPS, CAPS, st.lists(st.lists(st.integers(0, 8), max_size=10), min_size=20, max_size=20))
def test_rate_limit_verdicts_agree_with_replayed_runs(
    old: list[tuple[int, int]], new: list[tuple[int, int]], gaps: list[list[int]]
) -> None:
    """Issue 37: {1/5s} and {1/5s, 2/10s} were "equivalent" (a call one limit
    denies still takes a slot in the other). Every coverage claim holds on 20
    random runs replayed on both engines, and every counterexample replays."""
    a, b = rate_set(old), rate_set(new)
    diff = policy_diff(a, b)
    runs = [[sum(g[: i + 1]) / 2 for i in range(len(g))] for g in gaps]
    for covers, denies, admits in (
        (diff.new_covers_old, a, b),
        (diff.old_covers_new, b, a),
    ):
        if covers:
            assert not any(last_denied(denies, r) and not last_denied(admits, r) for r in runs)
    for found, denies, admits in ((diff.newly_allowed, a, b), (diff.newly_denied, b, a)):
        for c in found:
            # A limit of no calls denies a call by itself: a one-call counterexample.
            run = [0.0] if c.calls_at is None else list(c.calls_at)
            assert last_denied(denies, run) and not last_denied(admits, run), c


def test_trace_rule_sets_compared_with_a_counterexample_trace() -> None:
    old = load_policy_text('[[trace_rule]]\nrule = "never send after read_secret"\n')
    new = load_policy_text('[[trace_rule]]\nrule = "never send after read_secret succeeded"\n')
    diff = policy_diff(old, new)
    assert diff.verdict == "looser"
    [c] = diff.newly_allowed
    assert c.tool == "send" and c.trace == ("read_secret() failed",)
    both = load_policy_text(
        '[[trace_rule]]\nrule = "never send after read_secret"\n'
        '[[trace_rule]]\nrule = "at most 1 send"\n'
    )
    assert policy_diff(old, both).verdict == "stricter"
    membership = load_policy_text('[[trace_rule]]\nrule = "never mail where to contains \\"m\\""\n')
    equal = load_policy_text('[[trace_rule]]\nrule = "never mail where to == \\"m\\""\n')
    diff = policy_diff(membership, equal)
    assert diff.verdict == "looser" and diff.newly_allowed[0].parameters["to"] != "m"


def test_policy_diff_and_lint_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    (old / "p.toml").write_text('deny_tool = ["rm"]\n')
    (new / "p.toml").write_text(
        'deny_tool = ["rm", "drop"]\n[[deny_tool_param]]\ntool = "rm"\nparam = "path"\n'
    )
    assert main(["policy", "diff", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("stricter:") and "newly denied: drop({}), denied by deny_tool:drop" in out
    assert main(["policy", "diff", str(new), str(old), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "looser" and doc["newly_allowed"][0]["tool"] == "drop"
    assert main(["policy", "lint", str(new)]) == 0
    out = capsys.readouterr().out
    assert "p.toml:2: warning[policy-dead-rule] deny_tool_param:rm.path: deny_tool:rm denies" in out
    (new / "bad.toml").write_text(
        '[[deny_tool_param_matching]]\ntool = "fetch"\nparam = "url"\nmatches = "(?!x)"\n'
    )
    assert main(["policy", "lint", str(new), "--format", "json"]) == 1
    captured = capsys.readouterr()
    [bad] = [
        f for f in json.loads(captured.out)["findings"] if f["code"] == "policy-invalid-pattern"
    ]
    assert (
        bad["file"].endswith("bad.toml")
        and bad["line"] == 1
        and "invalid perl operator" in bad["message"]
    )
    assert captured.err == ""  # nothing of RE2's own reaches stderr


def test_typos_in_rule_names_are_warned_with_the_nearest_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pol").mkdir()
    (tmp_path / "pol" / "p.toml").write_text(
        'deny_tool = ["update_pasword"]\n'
        '[[deny_tool_param]]\ntool = "update_password"\nparam = "usr"\n'
    )
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": "update_password", "parameters": {
        "type": "object", "properties": {"user": {"type": "string"}}}}]))  # fmt: skip
    assert main(["policy", "lint", str(tmp_path / "pol"), "--tools", str(tools)]) == 0
    out = capsys.readouterr().out
    assert "no tool 'update_pasword' in the registry (did you mean 'update_password'?)" in out
    assert "has no parameter 'usr' (did you mean 'user'?)" in out
    plan = tmp_path / "plan.json"
    call = {"id": "a", "type": "tool_call", "tool": "update_password", "parameters": {}}
    plan.write_text(json.dumps({"actions": [call]}))
    main(
        ["verify", str(plan), "--tools", str(tools), "--policies", str(tmp_path / "pol"), "--quiet"]
    )
    err = capsys.readouterr().err
    assert "warning: policies:" in err and "did you mean 'update_password'" in err


def test_an_invalid_pattern_writes_nothing_of_re2_to_stderr(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "pol").mkdir()
    (tmp_path / "pol" / "p.toml").write_text(
        '[[deny_tool_param_matching]]\ntool = "fetch"\nparam = "url"\nmatches = "(?!x)"\n'
    )
    plan = tmp_path / "p.json"
    call = {"id": "a", "type": "tool_call", "tool": "fetch", "parameters": {"url": "y"}}
    plan.write_text(json.dumps({"actions": [call]}))
    for command, code in (
        (["policy", "check", str(plan), "--policies", str(tmp_path / "pol"), "--format", "json"],
         2),
        (["policy", "lint", str(tmp_path / "pol")], 1),
    ):  # fmt: skip
        done = subprocess.run(  # from tmp_path: `-m` finds the installed package
            [sys.executable, "-m", "car_verify", *command],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert done.returncode == code, (command, done.stderr)
        if code == 1:  # lint reports it as a finding: nothing on fd 2 itself
            assert done.stderr == "", (command, done.stderr)
        else:  # the check refuses to load it: our one line, naming file, key and rule
            [line] = done.stderr.splitlines()
            assert line.startswith("car-verify: error:") and "p.toml" in line
            assert "deny_tool_param_matching:fetch.url" in line and "matches" in line


def test_a_cancelled_allow_names_only_the_rules_that_deny_its_witness(tmp_path: Path) -> None:
    """With deploy.env == "staging" denied beside the examples' allow list, the
    finding names that rule alone: each rule it names denies its own witness on the
    engine (the keyword rules, which deny only calls carrying a keyword, are not)."""
    import shutil

    from car_verify.rules.policy import PolicyEngine, load_policies
    from car_verify.rules.policy_analysis import lint_policies

    root = Path(__file__).resolve().parents[1]
    folder = tmp_path / "policies"
    shutil.copytree(root / "examples" / "policies" / ".car" / "policies", folder)
    with (folder / "10-security.toml").open("a") as f:
        f.write('\n[[deny_tool_param]]\ntool = "deploy"\nparam = "env"\nequals = "staging"\n')
    [finding] = [f for f in lint_policies(folder) if f.code == "policy-allow-cancelled"]
    assert finding.others == ("deny_tool_param:deploy.env",)
    engine = PolicyEngine(load_policies(folder).rules)
    assert finding.witness is not None
    call = finding.witness
    denied = {name for name, _ in engine.check_call(call["tool"], call["parameters"])}
    assert set(finding.others) <= denied


def test_a_backslash_u_in_a_toml_literal_string_is_no_escape_to_the_solver(
    tmp_path: Path,
) -> None:
    r"""``'\u003cscript'`` (a TOML literal string: a backslash, then ``u003c``) is not
    ``"<script"``: z3 reads such escapes in string constants, so each is written
    as the literal text it is, and the diff finds the call that tells them apart."""
    from car_verify.plan.policy_diff import policy_diff

    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    (old / "a.toml").write_text("deny_keyword = ['\\u003cscript']\n")
    (new / "a.toml").write_text('deny_keyword = ["<script"]\n')
    result = policy_diff(old, new)
    assert result.verdict != "equivalent", result
    same = tmp_path / "same"
    same.mkdir()
    (same / "a.toml").write_text("deny_keyword = ['\\u003cscript']\n")
    assert policy_diff(old, same).verdict == "equivalent"


@pytest.mark.parametrize("zero", ["0", "0.0", "-0.0"])
def test_negative_zero_is_a_form_of_zero_with_its_own_text(tmp_path: Path, zero: str) -> None:
    """``equals = 0`` with ``contains = "-"`` denies ``-0.0`` alone (JSON-equal to
    0, its text holds a minus): the diff must find that call, whichever of the
    three texts of zero the rule spells."""
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    (old / "a.toml").write_text(
        f'[[deny_tool_param]]\ntool = "pay"\nparam = "amount"\nequals = {zero}\ncontains = "-"\n'
    )
    (new / "a.toml").write_text('deny_tool = ["other"]\n')
    result = policy_diff(old, new)
    assert result.verdict == "incomparable", result
    [allowed] = result.newly_allowed
    assert allowed.tool == "pay"
    value = allowed.parameters["amount"]
    assert value == 0 and str(value) == "-0.0"
    engine = PolicyEngine(load_policy_text((old / "a.toml").read_text()))
    assert engine.check_call("pay", {"amount": value})


def test_trace_rules_that_count_far_compare_in_linear_time_with_a_short_text() -> None:
    """Issue 37: two ``at most N`` rules (84 bytes) ran past 120 s: every state
    copied its whole trace. The trace is a linked list now, the counterexample
    is the 99,999 calls and the one more, and the text says the repeat once."""
    old = load_policy_text('[[trace_rule]]\nrule = "at most 100000 s3"\n')
    new = load_policy_text('[[trace_rule]]\nrule = "at most 99999 s3"\n')
    diff = policy_diff(old, new)
    assert diff.verdict == "stricter"
    [c] = diff.newly_denied
    assert c.trace is not None and len(c.trace) == 99_999
    assert set(c.trace) == {"s3() succeeded"}
    assert c.describe() == (
        "after s3() succeeded x 99,999: s3({}), denied by trace_rule:at most 99999 s3"
    )


def test_a_trace_product_past_its_budget_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    from car_verify.rules import trace_automata

    monkeypatch.setattr(trace_automata, "MAX_STATES", 1000)
    old = load_policy_text('[[trace_rule]]\nrule = "at most 5000 s3"\n')
    new = load_policy_text('[[trace_rule]]\nrule = "at most 4999 s3"\n')
    diff = policy_diff(old, new)
    assert diff.verdict == "unknown"
    assert any("more than 1,000 states" in u for u in diff.unknown), diff.unknown


def test_a_call_still_awaiting_its_outcome_is_part_of_a_trace() -> None:
    """Issue 37: ``never deploy after run_tests`` and the two rules on its outcomes
    were "equivalent", but a deploy made while run_tests awaits its outcome is
    refused by the first set alone; the diff says so, and the gates agree."""
    from car_verify.rules.trace import TraceGate

    one = load_policy_text('[[trace_rule]]\nrule = "never deploy after run_tests"\n')
    two = load_policy_text(
        '[[trace_rule]]\nrule = "never deploy after run_tests succeeded"\n'
        '[[trace_rule]]\nrule = "never deploy after run_tests failed"\n'
    )
    diff = policy_diff(two, one)
    assert diff.verdict == "stricter"
    [c] = diff.newly_denied
    assert c.trace == ("run_tests() awaiting its outcome",) and c.tool == "deploy"
    gates = TraceGate(one.trace_rule), TraceGate(two.trace_rule)
    for gate in gates:
        assert not gate.dispatch("run_tests", {})
    assert gates[0].dispatch("deploy", {}) and not gates[1].dispatch("deploy", {})
    # A late outcome: only after it comes does the set on outcomes refuse.
    later = policy_diff(
        load_policy_text('[[trace_rule]]\nrule = "never deploy after run_tests succeeded"\n'),
        load_policy_text('[[trace_rule]]\nrule = "never deploy after run_tests succeeded"\n'),
    )
    assert later.verdict == "equivalent"


TRACE_RULES = [
    "never a",
    "never b after a",
    "never b after a succeeded",
    "never b after a failed",
    "b only after a",
    "b only after a succeeded",
    "at most 1 a",
    "at most 2 b",
]


def admit(engine: PolicyEngine, gate: Any, tool: str, params: dict[str, Any]) -> list[str]:
    """Why a call is refused, in the order every face asks (a plain restatement, for
    the brute force): the rules of one call; for a call they all allow, the trace
    rules, which record it as dispatched when they admit it too."""
    found = [name for name, _ in engine.check_call(tool, params)]
    if not found:
        found = [v.policy_name for v in gate.dispatch(tool, params)]
    return found


CALLS: list[tuple[str, dict[str, Any]]] = [
    (tool, params) for tool in ("a", "b", "c") for params in ({}, {"p": "x"})
]


def splits_by_brute_force(refuses: PolicySet, admits: PolicySet, length: int = 4) -> bool:
    """Some run of up to ``length`` events (a call tried under both sets; a
    pending call's outcome, where it ran) after which ``refuses`` refuses a call
    ``admits`` admits, found on the engines and gates as the hook applies them
    (the rules of one call first). A call only ``admits`` refuses runs under
    ``refuses`` alone."""
    from car_verify.rules.trace import TraceGate

    engines = PolicyEngine(refuses), PolicyEngine(admits)
    gates = TraceGate(refuses.trace_rule), TraceGate(admits.trace_rule)
    Pending = tuple[str, dict[str, Any], tuple[Any, ...]]

    def walk(pending: tuple[Pending, ...], left: int) -> bool:
        for tool, params in CALLS:
            states = [g.state for g in gates]
            refused = [bool(admit(e, g, tool, params)) for e, g in zip(engines, gates, strict=True)]
            if refused[0] and not refused[1]:
                return True
            ran = tuple(g for g, r in zip(gates, refused, strict=True) if not r)
            if not refused[0] and left > 1 and walk((*pending, (tool, params, ran)), left - 1):
                return True
            for g, saved in zip(gates, states, strict=True):
                g.restore(saved)
        for i, (tool, params, ran) in enumerate(pending):
            for outcome in ("succeeded", "failed"):
                states = [g.state for g in gates]
                for g in ran:
                    g.record(tool, params, outcome)
                rest = pending[:i] + pending[i + 1 :]
                if left > 1 and walk(rest, left - 1):
                    return True
                for g, saved in zip(gates, states, strict=True):
                    g.restore(saved)
        return False

    return walk((), length)


@settings(deadline=None, max_examples=PAIRS, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(TRACE_RULES), unique=True, max_size=3),
    st.lists(st.sampled_from(TRACE_RULES), unique=True, max_size=3),
)
@example(["never b after a succeeded", "never b after a failed"], ["never b after a"])
def test_trace_rule_verdicts_agree_with_brute_force_over_events(
    old: list[str], new: list[str]
) -> None:
    """Every containment claim of two trace-rule sets holds on every run of up to
    four events (calls, and outcomes that come late or never) on the gates, and
    every counterexample short enough is found by brute force too."""

    def rules(texts: list[str]) -> PolicySet:
        return load_policy_text("".join(f'[[trace_rule]]\nrule = "{t}"\n' for t in texts))

    a, b = rules(old), rules(new)
    diff = policy_diff(a, b)
    assert diff.new_covers_old is not None and diff.old_covers_new is not None
    if diff.new_covers_old:
        assert not splits_by_brute_force(a, b)
    if diff.old_covers_new:
        assert not splits_by_brute_force(b, a)
    for found, refuses, admits in ((diff.newly_allowed, a, b), (diff.newly_denied, b, a)):
        for c in found:
            assert c.trace is not None
            assert replays_to_a_split(c.trace, c.tool, c.parameters, refuses, admits), c


def replays_to_a_split(
    trace: tuple[str, ...],
    tool: str,
    params: dict[str, Any],
    refuses: PolicySet,
    admits: PolicySet,
    times: tuple[float, ...] | None = None,
) -> bool:
    """The counterexample's steps, read from their text and made on both engines
    and gates (each call at its time, when it has times): each call admitted by
    the first, and by the second unless the step says it refuses it (the call
    then runs under the first alone); then the call refused by the first and
    admitted by the second."""
    import re

    from car_verify.rules.trace import TraceGate

    clock = [0.0]
    at = iter(times or ())
    engines = (
        PolicyEngine(refuses, clock=lambda: clock[0]),
        PolicyEngine(admits, clock=lambda: clock[0]),
    )
    gates = TraceGate(refuses.trace_rule), TraceGate(admits.trace_rule)
    for step in trace:
        late = re.fullmatch(
            r"the outcome of (\w+)\((.*?)\)( \(it ran under one set\))?: (\w+)", step
        )
        if late:
            name, args, alone, outcome = late.groups()
            for g in gates[:1] if alone else gates:
                g.record(name, json.loads(args) if args else {}, outcome)  # type: ignore[arg-type]
            continue
        found = re.fullmatch(r"(\w+)\((.*?)\) ([\w ]+?)( \(the other set refuses it: .*\))?", step)
        assert found, step
        name, args, rest, other = found.groups()
        call = json.loads(args) if args else {}
        clock[0] = next(at, clock[0])
        refused = [bool(admit(e, g, name, call)) for e, g in zip(engines, gates, strict=True)]
        if refused != [False, other is not None]:
            return False
        if rest != "awaiting its outcome":
            for g in gates[:1] if other else gates:
                g.record(name, call, rest)  # type: ignore[arg-type]
    clock[0] = next(at, clock[0])
    return bool(admit(engines[0], gates[0], tool, params)) and not admit(
        engines[1], gates[1], tool, params
    )


ONE_CALL_RULES = [
    'deny_tool = ["a"]',
    'deny_tool = ["b"]',
    '[[deny_tool_param]]\ntool = "a"\nparam = "p"\nequals = "x"',
    '[[deny_tool_param]]\ntool = "b"\nparam = "p"',
    '[[rate_limit_tool]]\ntool = "c"\nmax_calls = 0\ninterval_secs = 5',
]
WHERE_RULES = [*TRACE_RULES, 'never a where p == "x"', 'b only after a where p == "x"']


@settings(deadline=None, max_examples=PAIRS, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(ONE_CALL_RULES), unique=True, max_size=2),
    st.lists(st.sampled_from(WHERE_RULES), unique=True, max_size=2),
    st.lists(st.sampled_from(ONE_CALL_RULES), unique=True, max_size=2),
    st.lists(st.sampled_from(WHERE_RULES), unique=True, max_size=2),
)
@example(['deny_tool = ["b"]'], ["never a after b"], ['deny_tool = ["b"]'], [])
@example(['deny_tool = ["a"]'], [], [], ["a only after b"])
@example([], ["never b after a"], [], ["never a"])
def test_rules_of_one_call_and_trace_rules_are_compared_together(
    old_one: list[str], old_trace: list[str], new_one: list[str], new_trace: list[str]
) -> None:
    """Issue 37: the rules of one call and the trace rules were compared apart, so
    {deny_tool b, never a after b} was "stricter" than {deny_tool b} on the trace
    "b, then a", which the first set never lets happen; and {deny_tool a} against
    {a only after b} claimed the call a alone. And runs were only those both sets
    admit, so {never a} was "stricter" than {never b after a}, though in the run
    "a, b" only the old set refuses b. Every claim now holds on every run of up
    to four events, each call tried under both sets, made on the engines, and
    every counterexample replays."""

    def rules(one: list[str], trace: list[str]) -> PolicySet:
        deny = [r for r in one if r.startswith("deny_tool =")]
        tables = [r for r in one if not r.startswith("deny_tool =")]
        if len(deny) == 2:
            deny = ['deny_tool = ["a", "b"]']
        text = "".join(f"{r}\n" for r in deny + tables)
        text += "".join(f"[[trace_rule]]\nrule = {json.dumps(t)}\n" for t in trace)
        return load_policy_text(text)

    a, b = rules(old_one, old_trace), rules(new_one, new_trace)
    diff = policy_diff(a, b)
    assert diff.new_covers_old is not None and diff.old_covers_new is not None, diff.unknown
    if diff.new_covers_old:
        assert not splits_by_brute_force(a, b)
    if diff.old_covers_new:
        assert not splits_by_brute_force(b, a)
    for found, refuses, admits in ((diff.newly_allowed, a, b), (diff.newly_denied, b, a)):
        for c in found:
            steps = c.trace or ()
            assert replays_to_a_split(steps, c.tool, c.parameters, refuses, admits), c
    if old_one == new_one == ['deny_tool = ["b"]'] and old_trace == ["never a after b"]:
        assert diff.verdict == "equivalent"
    if (old_trace, new_trace) == (["never b after a"], ["never a"]) and not old_one + new_one:
        # One agent's run, tried under both: a then b. The new set refuses a, so b
        # runs after it; the old set ran a, so it refuses b. Not "stricter".
        assert diff.verdict == "incomparable"


RATE_RULES = [
    '[[rate_limit_tool]]\ntool = "a"\nmax_calls = 1\ninterval_secs = 5',
    '[[rate_limit_tool]]\ntool = "b"\nmax_calls = 1\ninterval_secs = 5',
    '[[rate_limit_tool]]\ntool = "b"\nmax_calls = 2\ninterval_secs = 10',
]


def last_verdicts(
    sets: tuple[PolicySet, PolicySet], run: list[tuple[str, dict[str, Any], float]]
) -> list[bool]:
    """Whether each set refuses the last call of ``run`` (tool, parameters, time),
    each call made on fresh engines with fake clocks and the gates, succeeding
    where it is admitted."""
    from car_verify.rules.trace import TraceGate

    clock = [0.0]
    sides = [(PolicyEngine(r, clock=lambda: clock[0]), TraceGate(r.trace_rule)) for r in sets]
    verdicts: list[bool] = []
    for tool, params, at in run:
        clock[0] = at
        verdicts = []
        for engine, gate in sides:
            refused = bool(admit(engine, gate, tool, params))
            if not refused:
                gate.record(tool, params, "succeeded")
            verdicts.append(refused)
    return verdicts


def splits_in_time(refuses: PolicySet, admits: PolicySet, length: int = 4) -> bool:
    """Some run of up to ``length`` calls, each 0, 3 or 20 s after the one before,
    after which ``refuses`` refuses a call that ``admits`` admits."""

    def walk(history: tuple[tuple[str, dict[str, Any], float], ...]) -> bool:
        for tool in ("a", "b", "c"):
            for gap in (0.0, 3.0, 20.0):
                run = (*history, (tool, {}, (history[-1][2] if history else 0.0) + gap))
                if last_verdicts((refuses, admits), list(run)) == [True, False]:
                    return True
                if len(run) < length and walk(run):
                    return True
        return False

    return walk(())


# The brute force replays every run of up to four timed calls from the start: at 300
# examples it was the suite's longest test (two minutes of CPU in CI); at 120 each rule
# of the small pools above is still drawn on both sides many times over.
@settings(deadline=None, max_examples=min(PAIRS, 120), suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(RATE_RULES), unique=True, max_size=2),
    st.lists(st.sampled_from(TRACE_RULES), unique=True, max_size=2),
    st.lists(st.sampled_from(RATE_RULES), unique=True, max_size=2),
    st.lists(st.sampled_from(TRACE_RULES), unique=True, max_size=2),
)
@example([RATE_RULES[0]], ["at most 2 a"], [], ["at most 2 a"])
def test_rate_limits_and_trace_rules_together_agree_with_runs_in_time(
    old_rate: list[str], old_trace: list[str], new_rate: list[str], new_trace: list[str]
) -> None:
    """Issue 37: the trace search spaces calls wider than every window. Where the
    two sets limit a tool differently and a trace rule records its calls, that is
    not enough, and the answer is unknown; every other claim holds on every run
    of up to four timed calls, and every counterexample replays."""

    def rules(rate: list[str], trace: list[str]) -> PolicySet:
        text = "".join(f"{r}\n" for r in rate)
        text += "".join(f"[[trace_rule]]\nrule = {json.dumps(t)}\n" for t in trace)
        return load_policy_text(text)

    a, b = rules(old_rate, old_trace), rules(new_rate, new_trace)
    diff = policy_diff(a, b)
    if diff.new_covers_old:
        assert not splits_in_time(a, b), diff
    if diff.old_covers_new:
        assert not splits_in_time(b, a), diff
    for found, refuses, admits in ((diff.newly_allowed, a, b), (diff.newly_denied, b, a)):
        for c in found:
            if c.calls_at is not None and c.trace is None:
                run = [(c.tool, c.parameters, at) for at in c.calls_at]
                assert last_verdicts((refuses, admits), run) == [True, False], c
            else:
                steps = c.trace or ()
                assert replays_to_a_split(
                    steps, c.tool, c.parameters, refuses, admits, c.calls_at
                ), c


def test_the_same_rules_and_counters_in_step_are_decided_without_a_search() -> None:
    """Issue 58: ``{at most 1000000 a, at most 1000000 b}`` against itself ran 239 s
    to answer unknown. Two sets of the same rules are equivalent at once; a part of
    the trace search whose rules are the same on both sides is not searched (here
    with a bound of 1,000 states, which a search of either counter would pass)."""
    counters = (
        '[[trace_rule]]\nrule = "at most 1000000 a"\n[[trace_rule]]\nrule = "at most 1000000 b"\n'
    )
    a = load_policy_text(counters)
    reordered = load_policy_text("\n".join(reversed(counters.split("\n[[")))
                                 .replace("trace_rule]]", "[[trace_rule]]", 1))  # fmt: skip
    assert [r.text for r in reordered.trace_rule] == ["at most 1000000 b", "at most 1000000 a"]
    for old, new in ((a, a), (a, reordered)):
        assert policy_diff(old, new, max_states=1_000).verdict == "equivalent"
    more = load_policy_text(counters + '[[trace_rule]]\nrule = "never x"\n')
    diff = policy_diff(a, more, max_states=1_000)
    assert diff.verdict == "stricter" and diff.newly_denied[0].tool == "x"
    fewer = load_policy_text('[[trace_rule]]\nrule = "at most 999999 a"\n' + counters)
    assert policy_diff(a, fewer, max_states=1_000).verdict == "unknown"  # a real search
