"""``car-verify policy impact``: each trajectory replayed under two policy sets,
held to the gate replayed one trajectory at a time, to the plain reference gate
on generated rule sets and corpora, and to ``policy diff``: when NEW denies
everything OLD denies, no call is no longer denied."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from gate_reference import (
    DenyTool,
    DenyToolParam,
    Pattern,
    RateLimit,
    ReferenceGate,
    Rule,
    TraceRule,
    toml,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from car_verify.cli import main
from car_verify.corpora.impact import impact, wilson
from car_verify.importers import importers, read_file
from car_verify.plan.gate import CallGate
from car_verify.rules.policy import load_policy_text

pytest.importorskip("pyarrow", reason="the [audit] extra is not installed")

FIXTURE = Path(__file__).parent / "fixtures" / "tau-bench-airline-sample.json"

OLD = 'deny_tool = ["think"]\n'
NEW = (
    "[[trace_rule]]\n"
    'rule = "never calculate after book_reservation"\n'
    'name = "no-sums-after-booking"\n'
    "[[trace_rule]]\n"
    'rule = "update_reservation_flights only after get_reservation_details succeeded"\n'
    'name = "look-first"\n'
    "[[rate_limit_tool]]\n"
    'tool = "search_direct_flight"\nmax_calls = 1\ninterval_secs = 60\n'
)


def folder(root: Path, name: str, text: str) -> Path:
    made = root / name / ".car" / "policies"
    made.mkdir(parents=True)
    (made / "rules.toml").write_text(text, encoding="utf-8")
    return made


def by_hand(text: str, trace: list[Any]) -> list[tuple[str, list[str]]]:
    """A trajectory through one gate, call by call, each outcome reported."""
    gate = CallGate(load_policy_text(text), clock=lambda: 0.0)
    out = []
    for tool, params, outcome in trace:
        verdict = gate.decide(tool, params)
        if verdict.decision != "deny":
            gate.report(tool, verdict.sent, outcome)
        out.append((verdict.decision, verdict.rules))
    return out


def test_the_tau_bench_sample_replays_as_the_gate_does_one_trajectory_at_a_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = folder(tmp_path, "old", OLD), folder(tmp_path, "new", NEW)
    found = impact(str(old), str(new), [str(FIXTURE)])
    trajectories = list(read_file(FIXTURE, importers()))
    assert found.trajectories == len(trajectories) == 6 and not found.problems
    expected = []
    for t in trajectories:
        trace = t.trace()
        for index, (a, b) in enumerate(zip(by_hand(OLD, trace), by_hand(NEW, trace), strict=True)):
            expected.append((t.id, index, trace[index][0], a[0], b[0], a[1], b[1]))
    assert [
        (r.trajectory, r.index, r.tool, r.old_decision, r.new_decision,
         list(r.old_rules), list(r.new_rules))
        for r in found.rows
    ] == expected  # fmt: skip
    changes = {r.change for r in found.rows}
    assert {"newly_denied", "no_longer_denied"} <= changes
    out = tmp_path / "calls.parquet"
    code = main(["policy", "impact", str(old), str(new), str(FIXTURE), "-o", str(out)])
    text = capsys.readouterr().out
    assert code == 1  # a call is no longer denied
    assert "no longer denied:" in text and "deny_tool:think" in text
    import pyarrow.parquet as pq

    table = pq.read_table(out).to_pylist()
    assert len(table) == len(found.rows)
    assert table[0].keys() >= {"trajectory", "index", "tool", "old_decision", "new_decision",
                               "old_rules", "new_rules"}  # fmt: skip
    assert [r["new_rules"] for r in table] == [list(r.new_rules) for r in found.rows]
    code = main(["policy", "impact", str(old / "rules.toml"), str(new), str(FIXTURE),
                 "--format", "json"])  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["calls"] == len(found.rows)
    moved = doc["changes"]["no_longer_denied"]
    assert moved["calls"] == sum(r.change == "no_longer_denied" for r in found.rows)
    assert moved["calls_ci95"] == list(wilson(moved["calls"], doc["calls"]))
    assert moved["example"]["tool"] == "think"


def test_duckdb_reads_the_table(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    old, new = folder(tmp_path, "old", OLD), folder(tmp_path, "new", NEW)
    out = tmp_path / "calls.parquet"
    main(["policy", "impact", str(old), str(new), str(FIXTURE), "-o", str(out)])
    rows = duckdb.sql(f"select change, count(*) from '{out}' group by change").fetchall()
    assert sum(n for _, n in rows) > 0


def test_the_wilson_interval() -> None:
    assert wilson(0, 0) == (0.0, 1.0)
    low, high = wilson(5, 10)
    assert low == pytest.approx(0.2366, abs=1e-4) and high == pytest.approx(0.7634, abs=1e-4)
    assert wilson(0, 50)[0] == 0.0 and wilson(50, 50)[1] == 1.0


# --- generated rule sets and corpora ---------------------------------------------------------

TOOLS = ["a", "b", "c"]
PARAMS: list[dict[str, Any]] = [{}, {"p": 1}, {"p": 2}]


def patterns(event: bool = False) -> st.SearchStrategy[Pattern]:
    outcome = st.sampled_from([None, "succeeded", "failed"]) if event else st.just(None)
    tests = st.sampled_from([None, ("p", 1), ("p", 2)])
    return st.builds(Pattern, st.sampled_from([*TOOLS, None]), tests, outcome)


@st.composite
def rule_sets(draw: st.DrawFn) -> list[Rule]:
    out: list[Rule] = []
    for i in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["deny_tool", "deny_param", "rate", "never_after",
                                     "only_after", "at_most"]))  # fmt: skip
        tool, name = draw(st.sampled_from(TOOLS)), f"r{i}"
        if kind == "deny_tool":
            out.append(DenyTool(tool))
        elif kind == "deny_param":
            value = draw(st.sampled_from([1, 2]))
            out.append(DenyToolParam(tool, "p", value, has_equals=True))
        elif kind == "rate":
            out.append(RateLimit(tool, draw(st.integers(0, 2))))
        elif kind == "at_most":
            out.append(TraceRule("at_most", name, draw(patterns()), limit=draw(st.integers(0, 2))))
        else:
            out.append(TraceRule(kind, name, draw(patterns()), draw(patterns(event=True))))
    return out


calls = st.tuples(st.sampled_from(TOOLS), st.sampled_from(PARAMS), st.booleans())
corpora = st.lists(st.lists(calls, min_size=1, max_size=6), min_size=1, max_size=4)


def tau_record(n: int, trajectory: list[tuple[str, dict[str, Any], bool]]) -> dict[str, Any]:
    """A trajectory as a tau-bench record: each call and its result (``Error``: failed)."""
    traj: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i, (tool, params, failed) in enumerate(trajectory):
        call = {"id": f"c{i}", "type": "function",
                "function": {"name": tool, "arguments": json.dumps(params)}}  # fmt: skip
        traj.append({"role": "assistant", "content": None, "tool_calls": [call]})
        traj.append({"role": "tool", "tool_call_id": f"c{i}", "name": tool,
                     "content": "Error: it broke" if failed else "ok"})  # fmt: skip
    return {"task_id": n, "reward": 1.0, "traj": traj}


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rule_sets(), rule_sets(), corpora)
def test_generated_corpora_agree_with_the_reference_and_with_policy_diff(
    tmp_path_factory: pytest.TempPathFactory, old: list[Rule], new: list[Rule], corpus: list[Any]
) -> None:
    from car_verify.plan.policy_diff import policy_diff

    root = tmp_path_factory.mktemp("impact")
    source = root / "runs.jsonl"
    source.write_text("".join(json.dumps(tau_record(n, t)) + "\n" for n, t in enumerate(corpus)))
    old_rules, new_rules = load_policy_text(toml(old)), load_policy_text(toml(new))
    found = impact(old_rules, new_rules, [str(source)])
    rows = iter(found.rows)
    for trajectory in corpus:
        before, after = ReferenceGate(old), ReferenceGate(new)
        for tool, params, failed in trajectory:
            row = next(rows)
            for ref, decision, rules in (
                (before, row.old_decision, row.old_rules),
                (after, row.new_decision, row.new_rules),
            ):
                expected, names, number = ref.pre(tool, params)
                assert decision == expected and sorted(rules) == sorted(names)
                if expected != "deny":
                    ref.post(number, "failed" if failed else "succeeded")
    assert next(rows, None) is None
    if policy_diff(old_rules, new_rules).new_covers_old is True:
        assert all(r.change != "no_longer_denied" for r in found.rows)
