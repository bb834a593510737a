"""The bounds of the analyses that can blow up (docs/security.md, "Bounds"): each
slow input answers within seconds, decided or naming the bound that stopped it."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from car_verify.cli import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def trace_rules(*rules: str) -> str:
    return "".join(f"[[trace_rule]]\nrule = {json.dumps(r)}\n" for r in rules)


# --- an installed pass that cannot be built -------------------------------------------


def test_an_installed_pass_that_cannot_be_built_is_a_usage_error_naming_it(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    write(
        site / "half_pass.py",
        "from car_verify.passes import Pass\n\nclass Half(Pass):\n    name = 'half'\n",
    )
    info = site / "half_pass-0.1.dist-info"
    write(info / "METADATA", "Metadata-Version: 2.1\nName: half-pass\nVersion: 0.1\n")
    write(info / "entry_points.txt", "[car_verify.passes]\nhalf = half_pass:Half\n")
    plan = write(tmp_path / "p.json", json.dumps({"actions": []}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-P", "-m", "car_verify", "verify", str(plan), "--no-policies"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert "internal error" not in done.stderr
    assert "entry point 'half' (half_pass:Half)" in done.stderr


# --- tool schemas: patternProperties matched by RE2 -------------------------------------

_NESTED = "^(a+)+$"


def test_a_hostile_pattern_properties_key_answers_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = {"type": "object", "patternProperties": {_NESTED: {"type": "string"}}}
    tools = write(
        tmp_path / "tools.json",
        json.dumps([{"name": "t", "description": "d", "parameters": schema}]),
    )
    params = {"a" * 40 + "!": 1, "a" * 40: 2}  # Python's re: days for the first key
    plan = {"actions": [{"id": "x", "type": "tool_call", "tool": "t", "parameters": params}]}
    proposal = write(tmp_path / "p.json", json.dumps(plan))
    started = time.monotonic()
    code, out, _ = run(
        [
            "verify",
            str(proposal),
            "--tools",
            str(tools),
            "--no-policies",
            "--profile",
            "strict",
            "--format",
            "json",
        ],
        capsys,
    )
    assert time.monotonic() - started < 5
    assert code == 1
    messages = [i["message"] for i in json.loads(out)["issues"]]
    assert len(messages) == 1 and "is not of type" in messages[0]


def test_a_pattern_properties_key_re2_cannot_compile_is_an_input_error(tmp_path: Path) -> None:
    from car_verify.base.errors import InputError
    from car_verify.rules.tools import ToolRegistry

    schema = {"type": "object", "patternProperties": {"(?=a)": {}}}
    registry = ToolRegistry.coerce([{"name": "t", "description": "d", "parameters": schema}])
    with pytest.raises(InputError, match="RE2"):
        registry.check()


_KEYED = [
    {"type": "object", "patternProperties": {"^a": {"type": "string"}, "b$": {"type": "integer"}}},
    {"patternProperties": {"^a": {"type": "string"}}, "additionalProperties": False},
    {"patternProperties": {"a+": {"minLength": 2}}, "additionalProperties": {"type": "integer"}},
    {"patternProperties": {"^a": {"type": "string"}}, "unevaluatedProperties": False},
    {
        "allOf": [{"patternProperties": {"^a": {"type": "string"}, "a": {"minLength": 2}}}],
        "unevaluatedProperties": {"type": "integer"},
    },
    {
        "$schema": "https://json-schema.org/draft/2019-09/schema",
        "patternProperties": {"b": {"type": "string"}},
        "unevaluatedProperties": False,
    },
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "patternProperties": {"^a": {"type": "string"}},
        "additionalProperties": {"type": "integer"},
    },
]


@given(
    schema=st.sampled_from(_KEYED),
    value=st.dictionaries(
        st.text("ab.", max_size=4), st.one_of(st.integers(0, 3), st.text("ab", max_size=3))
    ),
)
@settings(max_examples=60)
def test_re2_pattern_keys_find_what_jsonschema_finds(schema: Any, value: Any) -> None:
    import jsonschema

    from car_verify.rules.tools import ToolRegistry

    registry = ToolRegistry.coerce([{"name": "t", "description": "d", "parameters": schema}])
    mine = sorted(e.json_path for e in registry.check_parameters("t", value))
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    theirs = sorted(
        "$" + "".join(f".{p}" for p in e.absolute_path) for e in cls(schema).iter_errors(value)
    )
    assert mine == theirs


# --- dot: the layout is bounded ---------------------------------------------------------


def banded(actions: int, width: int) -> dict[str, Any]:
    return {
        "id": "p",
        "source": "s",
        "actions": [
            {
                "id": f"a{i}",
                "type": "tool_call",
                "tool": "t",
                "parameters": {},
                "dependencies": [f"a{j}" for j in range(max(0, i - width), i)],
            }
            for i in range(actions)
        ],
    }


def test_dot_refuses_a_layout_past_its_edge_bound_before_graphviz_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from car_verify.base.errors import TooLarge
    from car_verify.reporters.dot import render, to_dot

    with pytest.raises(TooLarge, match=r"max_layout_edges=600.*--max-nodes.*--max-edges"):
        render(to_dot(banded(400, 60)), "svg")  # refused before Graphviz starts
    proposal = write(tmp_path / "dag.json", json.dumps(banded(400, 60)))
    out = tmp_path / "dag.svg"
    started = time.monotonic()
    code, _, err = run(["dot", str(proposal), "--no-policies", "-o", str(out)], capsys)
    assert time.monotonic() - started < 20
    # the command draws a coarser summary instead of the error (issue 59), and says so
    assert code == 0 and out.read_text().lstrip().startswith(("<?xml", "<svg"))
    assert "too large to lay out" in err and "max_layout_edges=600" in err
    assert "drawing 125 actions instead" in err
    # the DOT text itself is no layout: it is written whatever its size
    code, _, _ = run(["dot", str(proposal), "--no-policies", "-o", str(tmp_path / "d.dot")], capsys)
    assert code == 0 and (tmp_path / "d.dot").stat().st_size > 100_000


def test_the_edge_bound_is_a_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proposal = write(tmp_path / "dag.json", json.dumps(banded(30, 3)))
    code, _, err = run(
        ["dot", str(proposal), "--no-policies", "--max-edges", "10", "-o", str(tmp_path / "x.svg")],
        capsys,
    )
    assert code == 2 and "max_layout_edges=10" in err


@st.composite
def dags(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(1, 40))
    actions = []
    for i in range(n):
        earlier = [f"a{j}" for j in range(max(0, i - 8), i)]
        deps = draw(st.lists(st.sampled_from(earlier), unique=True)) if earlier else []
        actions.append(
            {
                "id": f"a{i}",
                "type": "tool_call",
                "tool": "t",
                "parameters": {},
                "dependencies": deps,
            }
        )
    return {"id": "p", "source": "s", "actions": actions}


@pytest.mark.skipif(not __import__("shutil").which("dot"), reason="needs Graphviz")
@given(proposal=dags(), max_edges=st.integers(1, 60))
@settings(max_examples=15)
def test_a_drawing_is_laid_out_or_refused_naming_its_bound(
    proposal: dict[str, Any], max_edges: int
) -> None:
    from car_verify.base.errors import TooLarge
    from car_verify.reporters.dot import render, to_dot

    graph = to_dot(proposal)
    edges = graph.to_string().count(" -> ")
    started = time.monotonic()
    try:
        svg = render(graph, "svg", max_edges=max_edges)
    except TooLarge as err:
        assert (err.bound, err.value, err.count) == ("max_layout_edges", max_edges, edges)
        assert edges > max_edges
    else:
        assert edges <= max_edges and svg.lstrip().startswith(b"<")
    assert time.monotonic() - started < 30


# --- workflow: trace rules over every path ----------------------------------------------


def ring(n: int, exit_at: int = 50) -> dict[str, Any]:
    stages = [f"s{i}" for i in range(n)]
    edges = [{"from": stages[i], "to": stages[(i + 1) % n]} for i in range(n)]
    edges.append({"from": stages[exit_at], "to": "end"})
    return {"entry": "s0", "terminals": ["end"], "stages": [*stages, "end"], "edges": edges}


def replays(graph: dict[str, Any], rule: str, path: Any) -> bool:
    """The path follows the graph's edges from its entry, the rule admits every
    stage of it but the last, and refuses the last."""
    from car_verify.rules.trace import TraceGate, parse_trace_rule

    edges = {(e["from"], e["to"]) for e in graph["edges"]}
    stages = list(path)
    if stages[0] != graph["entry"] or any(p not in edges for p in itertools.pairwise(stages)):
        return False
    gate = TraceGate([parse_trace_rule(rule)])
    for stage in stages[:-1]:
        if gate.dispatch(stage, {}):
            return False
        gate.record(stage, {}, "succeeded")
    return bool(gate.dispatch(stages[-1], {}))


def test_at_most_on_a_ring_is_decided_whatever_the_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = write(tmp_path / "ring.json", json.dumps(ring(100)))
    started = time.monotonic()
    code, out, _ = run(
        ["workflow", str(graph), "--rule", "at most 100000 s3", "--format", "json"], capsys
    )
    assert time.monotonic() - started < 10
    assert code == 1
    (found,) = json.loads(out)["trace_rules"]["counterexamples"]
    # the path to s3, then the loop walked 100,000 times: 100,001 calls of s3
    assert found["path"] == [f"s{i}" for i in range(4)]
    assert found["loop"] == [*(f"s{i}" for i in range(4, 100)), *(f"s{i}" for i in range(4))]
    assert (found["laps"], found["length"]) == (100_000, 4 + 100 * 100_000)


def test_a_loop_witness_replays_on_the_gate() -> None:
    from car_verify.deciders.workflow import check_workflow_trace_rules

    graph = ring(30, exit_at=7)
    for rule in ("at most 1000 s3", "at most 999 any tool", "at most 0 s29"):
        report = check_workflow_trace_rules(graph, [rule], max_states=1)  # no search at all
        (found,) = report.counterexamples
        assert replays(graph, rule, found.path), rule


def test_the_search_bound_answers_unknown_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = write(tmp_path / "ring.json", json.dumps(ring(100)))
    argv = ["workflow", str(graph), "--rule", "never s7 after s90", "--max-states", "50"]
    code, out, _ = run(argv, capsys)
    assert code == 3
    assert "unknown" in out and "max_states=50" in out
    code, out, _ = run([*argv, "--format", "json"], capsys)
    assert code == 3
    (unknown,) = json.loads(out)["trace_rules"]["unknown"]
    assert unknown["bound"] == {"name": "max_states", "value": 50}
    code, _, _ = run(argv[:-2], capsys)  # within the default bound: decided, broken
    assert code == 1


@st.composite
def workflow_graphs(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(1, 7))
    stages = [f"s{i}" for i in range(n)]
    pairs = draw(st.lists(st.tuples(st.sampled_from(stages), st.sampled_from(stages)), max_size=12))
    edges = [{"from": a, "to": b} for a, b in dict.fromkeys(pairs)]
    return {"entry": "s0", "terminals": [stages[-1]], "stages": stages, "edges": edges}


rule_texts = st.one_of(
    st.builds(
        "at most {} {}".format,
        st.one_of(st.integers(0, 4), st.integers(5, 10**6)),
        st.sampled_from(["s0", "s1", "s2", "any tool"]),
    ),
    st.builds(
        "never {} after {}".format, st.sampled_from(["s1", "s2"]), st.sampled_from(["s0", "s3"])
    ),
    st.builds("{} only after {}".format, st.sampled_from(["s1", "s4"]), st.sampled_from(["s2"])),
)


@given(graph=workflow_graphs(), rule=rule_texts, max_states=st.integers(1, 40))
@settings(max_examples=60)
def test_workflow_rules_are_decided_as_the_plain_search_does_or_name_the_bound(
    graph: dict[str, Any], rule: str, max_states: int
) -> None:
    from car_verify.deciders.workflow import check_workflow_trace_rules, parse_graph

    started = time.monotonic()
    report = check_workflow_trace_rules(graph, [rule], max_states=max_states)
    assert time.monotonic() - started < 10
    if report.unknown:
        (unknown,) = report.unknown
        assert unknown.bound == "max_states" and unknown.value == max_states
        assert not report.holds
        return
    # the plain search, with room for every state when the limit is small
    limit = int(rule.split()[2]) if rule.startswith("at most") else 0
    if limit <= 10:
        plain = check_workflow_trace_rules(parse_graph(graph), [rule], max_states=10**6)
        assert report.holds == plain.holds
    for found in report.counterexamples:
        if len(found.path) <= 10_000:
            assert replays(graph, rule, found.path)


# --- policy diff: the trace rules' product ----------------------------------------------


def policy_dirs(tmp_path: Path, old: list[str], new: list[str]) -> tuple[str, str]:
    write(tmp_path / "old" / "p.toml", trace_rules(*old))
    write(tmp_path / "new" / "p.toml", trace_rules(*new))
    return str(tmp_path / "old"), str(tmp_path / "new")


def test_two_counters_on_different_tools_are_compared_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = policy_dirs(tmp_path, ["at most 30000 s3"], ["at most 30000 s4"])
    started = time.process_time()
    code, out, _ = run(["policy", "diff", old, new, "--format", "json"], capsys)
    assert time.process_time() - started < 10
    assert code == 1
    doc = json.loads(out)
    assert doc["verdict"] == "incomparable" and not doc["unknown"]
    (allowed,) = doc["newly_allowed"]
    assert allowed["tool"] == "s3" and len(allowed["trace"]) == 30_000


def test_unrelated_never_after_pairs_are_searched_one_by_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old_rules = [f"never x{i} after y{i}" for i in range(14)]
    new_rules = [f"never x{i} after y{i} {o}" for i in range(14) for o in ("succeeded", "failed")]
    old, new = policy_dirs(tmp_path, old_rules, new_rules)
    started = time.process_time()
    code, out, _ = run(["policy", "diff", old, new], capsys)
    assert time.process_time() - started < 10
    assert code == 1 and out.startswith("looser")
    assert "awaiting its outcome" in out  # the call made while y awaits its outcome


def test_the_state_bound_answers_unknown_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = policy_dirs(tmp_path, ["at most 5000 s3"], ["at most 4999 s3"])
    code, out, _ = run(["policy", "diff", old, new, "--max-states", "100"], capsys)
    assert code == 3
    assert out.startswith("unknown") and "max_states=100" in out
    code, out, _ = run(
        ["policy", "diff", old, new, "--max-states", "100", "--format", "json"], capsys
    )
    assert code == 3 and json.loads(out)["bounds"] == [{"name": "max_states", "value": 100}]
    code, out, _ = run(["policy", "diff", new, old], capsys)  # within the default bound
    assert code == 1 and out.startswith("looser")


_TOOLS = ["a", "b", "c"]
trace_rule_texts = st.one_of(
    st.builds("at most {} {}".format, st.integers(0, 3), st.sampled_from(_TOOLS)),
    st.builds(
        "never {} after {}{}".format,
        st.sampled_from(_TOOLS),
        st.sampled_from(_TOOLS),
        st.sampled_from(["", " succeeded", " failed"]),
    ),
    st.builds("{} only after {}".format, st.sampled_from(_TOOLS), st.sampled_from(_TOOLS)),
    st.builds("never {}".format, st.sampled_from(_TOOLS)),
)


@given(
    old=st.lists(trace_rule_texts, max_size=3),
    new=st.lists(trace_rule_texts, max_size=3),
    max_states=st.sampled_from([5, 50, 10**6]),
)
@settings(max_examples=40)
def test_the_split_search_agrees_with_one_product_search_or_names_its_bound(
    old: list[str], new: list[str], max_states: int
) -> None:
    from car_verify.rules import trace_automata as ta
    from car_verify.rules.trace import parse_trace_rule

    a = [parse_trace_rule(r) for r in old]
    b = [parse_trace_rule(r) for r in new]
    letters = [ta.Letter(t, {}) for t in [*_TOOLS, "other"]]
    started = time.monotonic()
    found = ta.trace_containment(a, b, letters, max_states=max_states)
    assert time.monotonic() - started < 20
    # the plain reading: one search over the whole product, every letter judged
    plain = ta._search(a, b, letters, frozenset(range(len(letters))), [10**6], 10**6)
    if isinstance(found, str):
        assert f"max_states={max_states:,}" in found
        return
    assert (found is None) == (plain is None)
    if found is not None:
        assert len(found.steps) == len(plain.steps)  # both shortest


def test_policy_lint_of_400_rules_answers_within_its_budget(tmp_path: Path) -> None:
    """400 patterns on one parameter: the questions about shadowing and
    contradictions past the time budget are not asked, and a finding says so."""
    import time

    from car_verify.rules.policy import load_policy_text
    from car_verify.rules.policy_analysis import LINT_SECONDS, lint_policies

    lines = []
    for n in range(400):
        lines += ["[[deny_tool_param_matching]]", 'tool = "Bash"', 'param = "command"',
                  f'matches = "a{n}(b|c)*d{n % 7}"']  # fmt: skip
    rules = load_policy_text("\n".join(lines) + "\n")
    start = time.perf_counter()
    found = lint_policies(rules)
    took = time.perf_counter() - start
    assert took < LINT_SECONDS + 20  # the budget, and the rest on a loaded machine
    [incomplete] = [f for f in found if f.code == "policy-lint-incomplete"]
    assert f"lint_seconds={LINT_SECONDS:g}" in incomplete.message
