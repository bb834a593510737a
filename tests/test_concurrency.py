"""Concurrency (issue 27, item 3): the runtime's four anomalies, its level and its
serializability decision, its gate; the cycle named; ops from a proposal."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import car_verify.runtime as drop_in
from car_verify.base.errors import InputError
from car_verify.cli import main
from car_verify.plan.concurrency import analyze_concurrency, gate_concurrency, ops_from_proposal
from tests.car_oracle import runtime

SETTINGS = settings(deadline=None, max_examples=400, suppress_health_check=[HealthCheck.too_slow])
KEYS = st.lists(st.sampled_from(["k", "j"]), max_size=2, unique=True)
TOOLS = st.lists(st.sampled_from(["t", "u"]), max_size=2, unique=True)


#: Op ids out of alphabetical order (the runtime breaks a tie of commit times by
#: id, not by position), the empty id, and ids that sort as text, not as numbers.
IDS = ["b", "a", "d", "c", "", "10", "9"]


@st.composite
def schedules(draw: Any, repeats: bool = True) -> list[dict[str, Any]]:
    """Up to five ops; with ``repeats``, now and then an id that an earlier op has
    (so ``depends_on`` names two ops); times over a small range, so commits tie."""
    n = draw(st.integers(0, 5))
    ids = draw(st.lists(st.sampled_from(IDS), min_size=n, max_size=n, unique=not repeats))
    ops = []
    for name in ids:
        op = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "agent": st.sampled_from(["x", "y"]),
                    "read_set": KEYS, "write_set": KEYS,
                    "tools_read": TOOLS, "tools_written": TOOLS,
                    "depends_on": st.lists(st.sampled_from([*IDS[:4], "gone"]), max_size=2),
                    "read_at": st.integers(0, 3), "commit_at": st.integers(0, 4),
                },
            )
        )  # fmt: skip
        ops.append({"id": name, **op})
    return ops


def norm(report: dict[str, Any]) -> tuple[Any, ...]:
    # the runtime takes a key shared by two writers from a hash set, in an order
    # that varies from run to run: the anomalies are compared as a multiset
    anomalies = Counter(json.dumps(a, sort_keys=True) for a in report["anomalies"])
    return report["level"], report["serializable"], anomalies


@SETTINGS
@given(schedules())
def test_the_analysis_and_the_gate_agree_with_the_runtime(ops: list[dict[str, Any]]) -> None:
    rt = runtime()
    theirs = json.loads(rt.analyze_concurrency(json.dumps(ops)))
    ours = analyze_concurrency(ops)
    assert norm(ours.to_dict()) == norm(theirs)
    assert norm(json.loads(drop_in.analyze_concurrency(json.dumps(ops)))) == norm(theirs)
    for policy in (None, {"abort_at_or_below": "l1", "require_approval_at_or_below": "l3"}):
        expected = json.loads(
            rt.gate_concurrency(json.dumps(theirs), None if policy is None else json.dumps(policy))
        )
        assert gate_concurrency(theirs, policy).to_dict() == expected


@SETTINGS
@given(schedules(repeats=False))
def test_a_reported_cycle_is_a_cycle_of_conflicts(ops: list[dict[str, Any]]) -> None:
    report = analyze_concurrency(ops)
    if report.serializable:
        assert report.cycle == []
        return
    cycle = report.cycle
    assert cycle[0] == cycle[-1] and len(cycle) >= 3
    by_id = {o["id"]: o for o in ops}

    def reads(o: dict[str, Any]) -> set[Any]:
        return {*o.get("read_set", []), *(("t", t) for t in o.get("tools_read", []))}

    def writes(o: dict[str, Any]) -> set[Any]:
        return {*o.get("write_set", []), *(("t", t) for t in o.get("tools_written", []))}

    def before(a: dict[str, Any], b: dict[str, Any], i: int, j: int) -> bool:
        ra, ca = a.get("read_at", 0), a.get("commit_at", 0)
        rb, cb = b.get("read_at", 0), b.get("commit_at", 0)
        return bool(
            (writes(a) & writes(b) and (ca < cb or (ca == cb and a["id"] <= b["id"])))
            or (writes(a) & reads(b) and ca <= rb)
            or (reads(a) & writes(b) and ra < cb)
            or a["id"] in b.get("depends_on", [])
        )

    index = {o["id"]: n for n, o in enumerate(ops)}
    for x, y in itertools.pairwise(cycle):
        assert before(by_id[x], by_id[y], index[x], index[y]), (x, y)


def test_write_skew_is_l4_and_not_serializable() -> None:
    report = analyze_concurrency(
        [{"id": "a", "read_set": ["k"], "write_set": ["j"], "read_at": 0, "commit_at": 2},
         {"id": "b", "read_set": ["j"], "write_set": ["k"], "read_at": 1, "commit_at": 3}]
    )  # fmt: skip
    assert (report.level, report.serializable, report.anomalies) == ("l4", False, [])
    assert report.cycle == ["a", "b", "a"]


def test_ops_from_a_proposal_follow_its_levels() -> None:
    proposal = {"id": "p", "source": "t", "actions": [
        {"id": "w", "type": "tool_call", "tool": "t", "expected_effects": {"k": 1}},
        {"id": "r", "type": "tool_call", "tool": "t", "state_dependencies": ["k"],
         "write_set": ["j"]},
    ]}  # fmt: skip
    ops = ops_from_proposal(proposal)
    assert [(o.id, o.read_at, o.commit_at, o.depends_on) for o in ops] == [
        ("w", 0, 1, ()),
        ("r", 2, 3, ("w",)),
    ]
    assert analyze_concurrency(ops).serializable


def test_the_command(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ops.json"
    path.write_text(json.dumps(
        [{"id": "a", "read_set": ["k"], "write_set": ["k"], "read_at": 0, "commit_at": 2},
         {"id": "b", "read_set": ["k"], "write_set": ["k"], "read_at": 1, "commit_at": 3}]
    ))  # fmt: skip
    assert main(["concurrency", str(path), "--gate"]) == 1
    out = capsys.readouterr().out
    assert (
        "stale_generation" in out and "not serializable" in out and "reread_and_regenerate" in out
    )


# --- the indexed pairing against the plain all-pairs one (both in the module) ---------

from car_verify.plan import concurrency as conc  # noqa: E402


@SETTINGS
@given(schedules())
def test_the_indexed_analysis_equals_the_plain_all_pairs_one(ops: list[dict[str, Any]]) -> None:
    """Pairing each op only with those that share a key, a tool or a dependency
    finds the same anomalies, in the same order, and the same graph."""
    try:
        parsed = conc.parse_ops(ops)
    except InputError:
        return
    assert conc._anomalies(parsed) == conc._anomalies(parsed, indexed=False)
    assert conc._edges(parsed) == conc._edges(parsed, indexed=False)


def test_ops_that_share_nothing_cost_linear_work() -> None:
    """Six thousand ops on keys of their own: no pair is compared (a quadratic
    pairing took 37 s); the answer is serializable with no anomaly."""
    ops = [
        {"id": f"o{i}", "read_set": [f"k{i}"], "write_set": [f"k{i}"], "read_at": 0,
         "commit_at": 1}
        for i in range(6000)
    ]  # fmt: skip
    report = analyze_concurrency(ops)
    assert report.serializable and not report.anomalies


@SETTINGS
@given(schedules(), st.data())
def test_a_repeated_op_id_gets_the_runtimes_answer_and_a_note_under_car(
    ops: list[dict[str, Any]], data: st.DataObject
) -> None:
    """Two ops of one id (``depends_on`` names both): under ``car`` the runtime's
    answer (issue 59: it was refused), with a note naming the ops; under ``strict``
    refused, naming the repeat (the profile's ``answers_repeated_op_ids``)."""
    if not ops:
        return
    ops = [*ops, {**data.draw(st.sampled_from(ops)), "agent": "z"}]
    text = json.dumps(ops)
    theirs = json.loads(runtime().analyze_concurrency(text))
    report = analyze_concurrency(ops)
    assert norm(report.to_dict()) == norm(theirs)
    assert norm(json.loads(drop_in.analyze_concurrency(text))) == norm(theirs)
    repeated = {o["id"] for o in ops if [p["id"] for p in ops].count(o["id"]) > 1}
    assert len(report.notes) == len(repeated)
    assert all(f"op id {name!r} is used by ops[" in " ".join(report.notes) for name in repeated)
    assert "notes" not in json.loads(drop_in.analyze_concurrency(text))  # the runtime's fields
    with pytest.raises(InputError, match=r"op id '\w*' is also ops\[\d+\]'s: give each op"):
        analyze_concurrency(ops, profile="strict")


#: The runtime's readings of an id that repeats, one case each (ids x twice).
REPEATS = [
    # causal_cascade compares with the first op of the id: [x at 9, x at 1] -> one
    ([{"id": "x", "commit_at": 9}, {"id": "x", "commit_at": 1},
      {"id": "y", "depends_on": ["x"], "commit_at": 5}], "l0", True),
    ([{"id": "x", "commit_at": 1}, {"id": "x", "commit_at": 9},
      {"id": "y", "depends_on": ["x"], "commit_at": 5}], "l4", True),
    # the graph's dependency edge comes from the last op of the id: y -> x1 -> y
    ([{"id": "x", "commit_at": 9}, {"id": "x", "write_set": ["k"], "commit_at": 9},
      {"id": "y", "depends_on": ["x"], "write_set": ["k"], "commit_at": 1}], "l0", False),
    ([{"id": "x", "write_set": ["k"], "commit_at": 9}, {"id": "x", "commit_at": 9},
      {"id": "y", "depends_on": ["x"], "write_set": ["k"], "commit_at": 1}], "l0", True),
    # a node per op: x0 -> y -> x1 is a path, not a cycle
    ([{"id": "x", "write_set": ["k"], "commit_at": 1},
      {"id": "y", "read_set": ["k"], "write_set": ["j"], "read_at": 2, "commit_at": 3},
      {"id": "x", "read_set": ["j"], "read_at": 4, "commit_at": 5}], "l4", True),
    # two writes of one id committed at once: each before the other
    ([{"id": "x", "write_set": ["k"], "commit_at": 1},
      {"id": "x", "write_set": ["k"], "commit_at": 1}], "l3", False),
    # a tie of commit times is broken by id: b before d, whatever the order of the list
    ([{"id": "d", "write_set": ["j", "k"], "read_at": 1, "commit_at": 1},
      {"id": "b", "read_set": ["j"], "write_set": ["k"], "read_at": 1, "commit_at": 1}],
     "l3", False),
]  # fmt: skip


@pytest.mark.parametrize(("ops", "level", "serializable"), REPEATS)
def test_the_runtimes_reading_of_repeated_ids_and_ties(
    ops: list[dict[str, Any]], level: str, serializable: bool
) -> None:
    report = analyze_concurrency(ops)
    assert (report.level, report.serializable) == (level, serializable)
    theirs = json.loads(runtime().analyze_concurrency(json.dumps(ops)))
    assert (theirs["level"], theirs["serializable"]) == (level, serializable)


def test_the_command_answers_a_repeated_id_with_a_warning(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ops.json"
    path.write_text(json.dumps([{"id": "a", "write_set": ["k"], "commit_at": 1},
                                {"id": "a", "write_set": ["k"], "commit_at": 2}]))  # fmt: skip
    assert main(["concurrency", str(path)]) == 1  # a reorder
    out = capsys.readouterr().out
    assert "warning: op id 'a' is used by ops[0], ops[1]" in out and "tool_effect_reorder" in out
    assert main(["concurrency", str(path), "--profile", "strict"]) == 2
    assert "give each op its own id" in capsys.readouterr().err
