"""equivalent (sampled and z3), weakest precondition, optimize, transaction_check."""

from __future__ import annotations

import copy
import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import VALUES, proposals, states

import car_verify
from car_verify.base.findings import Tier
from car_verify.cli import main
from car_verify.deciders.equivalence import differing_keys, equivalent
from car_verify.deciders.optimize import optimize, phantom_entries, proves_guarantee
from car_verify.deciders.transactions import transaction_check
from car_verify.deciders.wp import runs_unblocked

pytestmark = pytest.mark.usefixtures("strict_cli")

ROOT = Path(__file__).resolve().parents[1]
# The module (the package's `optimize` attribute is the function).
optimize_module = importlib.import_module("car_verify.deciders.optimize")


def write_z(value: Any, gate: dict[str, Any] | None = None) -> dict[str, Any]:
    action: dict[str, Any] = {
        "id": "w",
        "type": "state_write",
        "parameters": {"key": "z", "value": value},
    }
    if gate:
        action["preconditions"] = [gate]
    return {"actions": [action]}


# --- equivalent ----------------------------------------------------------------------------


def test_named_probes_try_the_constants_the_plans_name_and_their_neighbours() -> None:
    from car_verify.deciders.equivalence import named_probes

    a = write_z(1, {"key": "n", "operator": "gt", "value": 5})
    b = write_z(True, {"key": "mode", "operator": "exists"})
    probes = named_probes([a, b])
    for state in ({"n": 5}, {"n": 4}, {"n": 6}, {"n": 5.0}, {"z": 2}, {"z": False}):
        assert state in probes
    assert any(set(state) == {"n", "z", "mode"} for state in probes)  # every key at once
    assert probes == named_probes([a, b])  # the same probes every time
    assert len({json.dumps(s, sort_keys=True) for s in probes}) == len(probes)


def test_sampling_probes_the_plans_constants_in_python_as_on_the_command_line() -> None:
    """Issue 59: ``method="sampled"`` answered True from the runtime's two probes
    where the command line found the difference from the plans' constants. One
    default for both now (the constants too); ``probe_constants=False`` keeps the
    runtime's two (the drop-in's); no difference found is undecided, never True."""
    a = write_z(1, {"key": "n", "operator": "eq", "value": 7})
    b = write_z(1, {"key": "n", "operator": "eq", "value": 8})
    for profile in ("car", "strict"):
        named = equivalent(a, b, method="sampled", profile=profile)
        assert named.equivalent is False and named.tier is Tier.SAMPLED
        assert named.counterexample in ({"n": 7}, {"n": 8})
        runtime_probes = equivalent(a, b, method="sampled", profile=profile, probe_constants=False)
        assert runtime_probes.equivalent is None and runtime_probes.no_difference_found
        assert runtime_probes.probes == 2 and not runtime_probes.decided
        assert runtime_probes.reason == (
            "no difference on 2 probe states; sampled, not decided (method z3 decides)"
        )
        given = equivalent(a, b, [{}], method="sampled", profile=profile)
        assert given.no_difference_found and given.probes == 1  # the caller's probes only
        assert given.to_dict()["equivalent"] is None


def test_the_specs_example_sampled_equal_but_z3_not() -> None:
    """Two proposals writing different values to a key no probe state reaches."""
    a = write_z(1, {"key": "mode", "value": "blue"})
    b = write_z(2, {"key": "mode", "value": "blue"})
    sampled = equivalent(a, b, method="sampled", profile="strict", probe_constants=False)
    assert sampled.no_difference_found and sampled.tier is Tier.SAMPLED  # the spec's probes
    decided = equivalent(a, b, method="z3", profile="strict")
    assert decided.equivalent is False and decided.tier is Tier.DECISION_PROCEDURE
    assert decided.counterexample == {"mode": "blue"} and decided.differing_keys == ["z"]
    end_a = car_verify.simulate(a, initial_state=decided.counterexample, profile="strict")
    end_b = car_verify.simulate(b, initial_state=decided.counterexample, profile="strict")
    assert dict(end_a) == {"mode": "blue", "z": 1} and dict(end_b) == {"mode": "blue", "z": 2}


def test_sampled_names_the_first_differing_probe_and_keys() -> None:
    a = write_z(1, {"key": "x", "value": 1})
    b = write_z(1)
    result = equivalent(a, b, method="sampled", profile="strict")
    assert result.to_dict() == {
        "equivalent": False,
        "tier": "sampled",
        "counterexample": {},
        "differing_keys": ["z"],
        "profile": "strict",
    }
    result = equivalent(a, b, [{"x": 1}, {"x": 5}], method="sampled", profile="strict")
    assert result.counterexample == {"x": 5}
    with pytest.raises(car_verify.InputError):
        equivalent(a, b, [], profile="strict")


@pytest.mark.parametrize(
    ("states", "message"),
    [
        ([], "test_states: must not be empty"),
        ("x", "test_states: expected an array of JSON objects"),
        ([{}, [1]], "test_states[1]: expected an object, got an array"),
        ([{}, {"n": {"m": float("nan")}}], "test_states[1].n.m: expected a finite number"),
    ],
)
def test_bad_probe_states_are_named_by_their_path(states: object, message: str) -> None:
    a = write_z(1)
    with pytest.raises(car_verify.InputError) as caught:
        equivalent(a, a, states, profile="strict")  # type: ignore[arg-type]
    assert str(caught.value).startswith(message)


def test_explain_says_how_far_the_answer_goes_and_shows_each_differing_key() -> None:
    a = write_z(1, {"key": "mode", "value": "blue"})
    b = write_z(2, {"key": "mode", "value": "blue"})
    assert (
        equivalent(a, b, method="sampled", profile="strict", probe_constants=False).explain()
        == "no difference on 2 probe states (not a proof; --method z3 decides) (tier sampled)"
    )
    assert equivalent(a, a, method="z3", profile="strict").explain() == (
        "equivalent for every initial state (tier decision_procedure)"
    )
    assert equivalent(a, b, method="z3", profile="strict").explain().splitlines() == [
        "not equivalent (tier decision_procedure): they differ on z",
        'counterexample initial state: {"mode": "blue"}',
        "  z: 1 vs 2",
    ]
    assert equivalent(
        write_z(1, {"key": "x", "value": 1}), write_z(1), method="sampled", profile="strict"
    ).explain().splitlines() == [
        "not equivalent (tier sampled): they differ on z",
        "counterexample initial state: {}",
        "  z: absent vs 1",
    ]
    with pytest.raises(car_verify.InputError, match="array"):
        equivalent(a, b, {"x": 1}, profile="strict")  # type: ignore[arg-type]


def test_z3_decides_equivalence_through_operators() -> None:
    gte = write_z(1, {"key": "n", "operator": "gte", "value": 3})
    not_lt = {
        "actions": [
            {
                "id": "w",
                "type": "state_write",
                "parameters": {"key": "z", "value": 1},
                "preconditions": [{"key": "n", "operator": "gt", "value": 2.5}],
            }
        ]
    }
    result = equivalent(gte, not_lt, method="z3", profile="strict")
    assert result.equivalent is False  # n = 2.75 separates them
    assert 2.5 < result.counterexample["n"] < 3  # type: ignore[index]
    same = equivalent(
        write_z(1.0, {"key": "k", "value": True}),
        write_z(1, {"key": "k", "value": True}),
        method="z3",
        profile="strict",
    )
    assert same.equivalent is True
    strings = equivalent(
        write_z(1, {"key": "tags", "operator": "contains", "value": "prod"}),
        write_z(1, {"key": "tags", "operator": "contains", "value": "pro"}),
        method="z3",
        profile="strict",
    )
    assert strings.equivalent is False
    arrays = equivalent(
        write_z(1, {"key": "tags", "operator": "contains", "value": 7}),
        write_z(1, {"key": "tags", "operator": "contains", "value": 8}),
        method="z3",
        profile="strict",
    )
    assert arrays.equivalent is False and isinstance(arrays.counterexample["tags"], list)  # type: ignore[index]


@settings(max_examples=60)
@given(proposals(max_actions=5), proposals(max_actions=5), st.lists(states, min_size=1, max_size=3))
def test_z3_agrees_with_sampling_and_its_counterexamples_replay(
    a: dict[str, Any], b: dict[str, Any], probes: list[dict[str, Any]]
) -> None:
    decided = equivalent(a, b, method="z3", profile="strict")
    assert decided.equivalent is not None, decided.reason
    if decided.equivalent:
        assert equivalent(a, b, probes, method="sampled", profile="strict").no_difference_found
    else:
        ce = decided.counterexample
        assert ce is not None
        end_a = car_verify.simulate(a, initial_state=ce, profile="strict")
        end_b = car_verify.simulate(b, initial_state=ce, profile="strict")
        assert differing_keys(end_a, end_b) == decided.differing_keys != []
    assert equivalent(b, a, method="z3", profile="strict").equivalent == decided.equivalent


@settings(max_examples=40)
@given(proposals(max_actions=6))
def test_a_proposal_is_equivalent_to_itself_and_to_its_round_trip(doc: dict[str, Any]) -> None:
    assert equivalent(doc, doc, method="z3", profile="strict").equivalent is True
    again = car_verify.load(doc).to_dict()
    assert equivalent(doc, again, method="z3", profile="strict").equivalent is True
    assert equivalent(doc, doc, profile="strict").equivalent is True


@settings(max_examples=40)
@given(proposals(max_actions=5), st.data())
def test_changing_one_effect_value_is_caught_when_it_matters(
    doc: dict[str, Any], data: st.DataObject
) -> None:
    changed = copy.deepcopy(doc)
    writers = [a for a in changed["actions"] if a.get("expected_effects")]
    if not writers:
        return
    action = data.draw(st.sampled_from(writers))
    key = data.draw(st.sampled_from(sorted(action["expected_effects"])))
    action["expected_effects"][key] = data.draw(VALUES)
    decided = equivalent(doc, changed, method="z3", profile="strict")
    assert decided.equivalent is not None
    if decided.equivalent is False:
        ce = decided.counterexample
        assert differing_keys(
            car_verify.simulate(doc, initial_state=ce, profile="strict"),
            car_verify.simulate(changed, initial_state=ce, profile="strict"),
        )


# --- weakest precondition ------------------------------------------------------------------


def test_wp_prints_a_readable_condition_and_an_example() -> None:
    doc = {
        "actions": [
            {
                "id": "deploy",
                "type": "tool_call",
                "tool": "deploy",
                "preconditions": [
                    {"key": "tests_passed", "value": True},
                    {"key": "coverage", "operator": "gte", "value": 0.8},
                ],
            }
        ]
    }
    condition = runs_unblocked(doc, profile="strict")
    assert condition.satisfiable is True
    assert condition.formula == "tests_passed == true and coverage >= 0.8"
    assert runs_unblocked({"actions": []}, profile="strict").formula == "always"
    assert condition.example is not None
    assert not car_verify.simulate(doc, initial_state=condition.example, profile="strict").blocked


@pytest.mark.parametrize(
    ("preconditions", "formula"),
    [
        ([{"key": "k", "operator": "neq", "value": "x"}], 'k is absent or k != "x"'),
        ([{"key": "k", "operator": "exists"}], "k exists"),
        ([{"key": "k", "operator": "not_exists"}], "k is absent"),
        # a substring and a membership test read alike: said once
        ([{"key": "k", "operator": "contains", "value": "ab"}], 'k contains "ab"'),
        ([{"key": "k", "operator": "contains", "value": {"a": 1}}], 'k contains {"a": 1}'),
        # an order implies that k exists and is a number, negated by the solver or not
        ([{"key": "k", "operator": "lt", "value": 2.5}], "k < 2.5"),
        (
            [
                {"key": "k", "operator": "gt", "value": 1},
                {"key": "k", "operator": "lte", "value": 10},
            ],
            "k > 1 and k <= 10",
        ),
        ([{"key": "k", "value": None}], "k == null"),
        ([{"key": "k", "value": {"a": [1]}}], 'k == {"a": [1]}'),
        (
            [
                {"key": "k", "operator": "contains", "value": 1},
                {"key": "k", "operator": "neq", "value": [1]},
            ],
            "(k == [1] or k contains 1) and (k is absent or k != [1])",
        ),
    ],
)
def test_wp_prints_each_operator_as_a_reader_would_write_it(
    preconditions: list[dict[str, Any]], formula: str
) -> None:
    doc = {
        "actions": [{"id": "a", "type": "tool_call", "tool": "t", "preconditions": preconditions}]
    }
    condition = runs_unblocked(doc, profile="strict")
    assert condition.formula == formula
    assert not car_verify.simulate(doc, initial_state=condition.example, profile="strict").blocked


def test_an_opaque_array_is_marked_only_when_it_would_equal_a_constant() -> None:
    def example(preconditions: list[dict[str, Any]]) -> Any:
        doc = {
            "actions": [
                {"id": "a", "type": "tool_call", "tool": "t", "preconditions": preconditions}
            ]
        }
        return runs_unblocked(doc, profile="strict").example

    assert example([{"key": "k", "operator": "contains", "value": {"a": 1}}]) == {"k": [{"a": 1}]}
    marked = example(
        [
            {"key": "k", "operator": "contains", "value": 1},
            {"key": "k", "operator": "neq", "value": [1]},
        ]
    )["k"]
    assert marked[0] == 1 and len(marked) == 2 and marked[1].startswith("car-verify:opaque:")


@settings(max_examples=100)
@given(proposals(max_actions=6), st.lists(states, min_size=1, max_size=3))
def test_wp_asks_the_run_where_all_ran_and_that_is_exact(
    doc: dict[str, Any], probes: list[dict[str, Any]]
) -> None:
    """No action is blocked in the real run exactly when none is in the run that applies
    every effect (what ``runs_unblocked`` asks for every action); and the condition's
    answer on a concrete state is what simulate shows."""
    from car_verify.ir.model import load
    from car_verify.semantics.symbolic import Encoder

    model = load(doc)
    encoder = Encoder([model], "strict")
    z3 = encoder.z3
    real, all_ran = encoder.run(model), encoder.run(model, assume_unblocked=True)
    walked = [i for i in range(real.dag.n) if real.dag.level_of(i) >= 0]
    runs = z3.And(encoder.true, *[z3.Not(real.blocked[i]) for i in walked])
    runs_too = z3.And(encoder.true, *[z3.Not(all_ran.blocked[i]) for i in walked])
    solver = z3.Solver(ctx=encoder.ctx)
    solver.add(encoder.domain(), runs != runs_too)
    assert solver.check() == z3.unsat
    condition = runs_unblocked(doc, profile="strict")
    if condition.satisfiable is False:
        for probe in probes:
            assert (
                car_verify.simulate(doc, initial_state=probe, profile="strict").blocked
                or real.dag.unlevelled
            )


@pytest.mark.slow
def test_wp_of_a_long_chain_is_the_condition_on_the_initial_state() -> None:
    """Each step needs the flag the previous one sets: only the first step's own
    preconditions are left (before, the terms grew with every level: 6 steps took
    two minutes and printed raw solver terms)."""
    steps = [
        {
            "id": f"s{i}",
            "type": "tool_call",
            "tool": "step",
            "preconditions": [
                {"key": "env", "value": "prod"},
                {"key": "counter", "operator": "gte", "value": 0},
                *([{"key": f"done.{i - 1}", "value": True}] if i else []),
            ],
            "expected_effects": {f"done.{i}": True, "counter": i},
            "state_dependencies": ["counter"],
            **({"dependencies": [f"s{i - 1}"]} if i else {}),
        }
        for i in range(40)
    ]
    condition = runs_unblocked({"actions": steps}, profile="strict")
    assert condition.formula == 'env == "prod" and counter >= 0'
    assert (
        runs_unblocked({"actions": steps}, "s39", profile="strict").formula
        == 'env == "prod" and counter >= 0'
    )


@settings(max_examples=100)
@given(proposals(max_actions=6))
def test_feasibility_flags_exactly_the_actions_no_state_lets_run(doc: dict[str, Any]) -> None:
    """The pass settles everything with one check when some state runs every action;
    its findings are still the definition's: one solver question per action."""
    from car_verify.ir.model import load
    from car_verify.semantics.symbolic import Encoder

    model = load(doc)
    encoder = Encoder([model], "strict")
    z3 = encoder.z3
    run = encoder.run(model)
    never = set()
    for i in range(run.dag.n):
        if run.dag.level_of(i) >= 0:
            solver = z3.Solver(ctx=encoder.ctx)
            solver.add(encoder.domain(), z3.Not(run.blocked[i]))
            if solver.check() == z3.unsat:
                never.add(i)
    found = car_verify.verify(doc, passes=["feasibility"], profile="strict").issues
    assert {issue.index for issue in found} == never


def test_wp_never_names_the_action_that_cannot_run() -> None:
    doc = {
        "actions": [
            {"id": "ok", "type": "tool_call", "tool": "t"},
            {
                "id": "bad",
                "type": "tool_call",
                "tool": "t",
                "preconditions": [{"key": "x", "value": 1}, {"key": "x", "value": 2}],
            },
        ]
    }
    condition = runs_unblocked(doc, profile="strict")
    assert condition.satisfiable is False and "bad can never run" in (condition.reason or "")
    assert runs_unblocked(doc, "ok", profile="strict").formula == "always"
    with pytest.raises(car_verify.UsageError):
        runs_unblocked(doc, "ghost", profile="strict")


def test_wp_sees_effects_ordered_before_an_action() -> None:
    doc = json.loads((ROOT / "examples/poll-loop/proposal.json").read_text())
    assert runs_unblocked(doc, "report", profile="strict").satisfiable is False
    assert runs_unblocked(doc, "poll_1", profile="strict").satisfiable is True


# --- optimize ------------------------------------------------------------------------------


def test_optimize_removes_only_phantom_entries_and_keeps_unknown_fields() -> None:
    doc = {
        "x-top": 1,
        "actions": [
            {"id": "a", "type": "tool_call", "tool": "t", "expected_effects": {"k": 1}},
            {
                "id": "b",
                "type": "tool_call",
                "tool": "u",
                "read_set": ["x"],
                "state_dependencies": ["k", "x"],
                "x-ext": True,
            },
            {"id": "c", "type": "tool_call", "tool": "v", "state_dependencies": ["x"]},
        ],
    }
    result = optimize(doc, initial_state={"x": 1}, profile="strict")
    out = result.proposal.to_dict()
    assert out["actions"][1]["state_dependencies"] == ["x"] and out["actions"][1]["x-ext"] is True
    assert out["actions"][2]["state_dependencies"] == ["x"]  # no read_set: nothing is phantom
    assert out["x-top"] == 1
    assert [(c.action_id, c.key) for c in result.removed] == [("b", "k")]
    assert (result.depth_before, result.depth_after) == (2, 1)


def test_optimize_keeps_an_entry_whose_removal_changes_findings() -> None:
    doc = {
        "actions": [
            {"id": "a", "type": "tool_call", "tool": "t", "expected_effects": {"k": 1}},
            {
                "id": "b",
                "type": "tool_call",
                "tool": "u",
                "read_set": ["x"],
                "state_dependencies": ["k"],
                "expected_effects": {"k": 2},
            },
        ]
    }
    result = optimize(doc, profile="strict")
    assert result.removed == [] and result.kept[0].key == "k"
    assert "findings" in result.kept[0].reason  # a write-conflict would appear


@settings(max_examples=40)
@given(proposals(max_actions=6, cycles=False), states, st.data())
def test_optimize_guarantees(
    doc: dict[str, Any], state: dict[str, Any], data: st.DataObject
) -> None:
    for action in doc["actions"]:  # give some actions an explicit read set
        if data.draw(st.booleans()):
            action["read_set"] = data.draw(
                st.lists(st.sampled_from(["x", "y", "z"]), min_size=1, max_size=2)
            )
    before = car_verify.verify(doc, initial_state=state, profile="strict")
    result = optimize(doc, initial_state=state, profile="strict")
    after = car_verify.verify(result.proposal, initial_state=state, profile="strict")
    assert {(i.action_id, i.code, i.severity) for i in after.issues} == {
        (i.action_id, i.code, i.severity) for i in before.issues
    }
    assert after.simulated_state == before.simulated_state
    assert len(after.execution_levels) <= len(before.execution_levels)
    assert [a["id"] for a in result.proposal.to_dict()["actions"]] == [
        a["id"] for a in doc["actions"]
    ]
    for change in result.removed:
        assert change.key in phantom_entries(car_verify.load(doc).actions[change.index])
    if result.removed:
        assert proves_guarantee(doc, result.proposal, profile="strict") is True


@settings(max_examples=150)
@given(proposals(max_actions=7, cycles=False), states, st.data())
def test_optimize_decides_the_same_with_and_without_its_shortcut(
    doc: dict[str, Any], state: dict[str, Any], data: st.DataObject
) -> None:
    """The shortcut (a removal that keeps the DAG's order needs no verify) changes
    nothing optimize decides: the same entries removed and kept, for the same reasons."""
    keys = ["x", "y", "z"]
    for action in doc["actions"]:
        if data.draw(st.booleans()):
            action["read_set"] = data.draw(st.lists(st.sampled_from(keys), min_size=1, max_size=2))
            action["state_dependencies"] = data.draw(
                st.lists(st.sampled_from(keys), min_size=1, max_size=3, unique=True)
            )
    fast = optimize(copy.deepcopy(doc), initial_state=state, profile="strict")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(optimize_module._Shortcut, "make", classmethod(lambda *_: None))
        slow = optimize(copy.deepcopy(doc), initial_state=state, profile="strict")
    assert fast.removed == slow.removed and fast.kept == slow.kept
    assert fast.proposal.to_dict() == slow.proposal.to_dict()
    assert (fast.depth_before, fast.depth_after) == (slow.depth_before, slow.depth_after)


def test_optimize_settles_redundant_entries_without_a_verify_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each step reads the previous step's key and, needlessly, the one before. From
    a3 on, that entry's writer reaches the step through the previous one anyway, so
    its removal needs no verify; a2's does (a0 does not reach a1)."""
    actions: list[dict[str, Any]] = []
    for i in range(60):
        action: dict[str, Any] = {
            "id": f"a{i}",
            "type": "tool_call",
            "tool": "t",
            "expected_effects": {f"k{i}": i},
        }
        if i > 1:
            action["read_set"] = [f"k{i - 1}"]
            action["state_dependencies"] = [f"k{i - 1}", f"k{i - 2}"]
        actions.append(action)
    calls = {"verify": 0}
    api = importlib.import_module("car_verify.api")
    real = api.run_and_say

    def counted(*args: Any, **kwargs: Any) -> Any:  # every verify run passes here
        calls["verify"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(api, "run_and_say", counted)
    result = optimize({"actions": actions}, profile="strict")
    assert [c.key for c in result.removed] == [f"k{i - 2}" for i in range(2, 60)]
    assert calls["verify"] == 2  # the base run and a2's trial (the final levels are the DAG's)
    assert (result.depth_before, result.depth_after) == (59, 59)  # a0 and a1 share level 0


def test_runs_unblocked_asks_about_implied_conjuncts_one_group_of_keys_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """200 actions, each needing its own key and sharing one more: a question per
    conjunct that held all the others made 200 questions of 200 facts."""
    from car_verify.semantics.symbolic import Questions

    actions = [
        {"id": f"a{i}", "type": "tool_call", "tool": "t",
         "preconditions": [{"key": f"k{i}", "operator": "gte", "value": i}]}
        for i in range(200)
    ]  # fmt: skip
    actions.append(
        {"id": "z", "type": "tool_call", "tool": "t",
         "preconditions": [{"key": "k7", "operator": "gte", "value": 3}]}
    )  # fmt: skip
    sizes: list[int] = []
    real = Questions.ask

    def counted(self: Questions, *facts: Any, **options: Any) -> Any:
        sizes.append(len(facts))
        return real(self, *facts, **options)

    monkeypatch.setattr(Questions, "ask", counted)
    condition = runs_unblocked({"actions": actions}, profile="strict")
    assert condition.formula.count(" and ") == 199  # k7 >= 3 is implied by k7 >= 7
    assert "k7 >= 3" not in condition.formula and "k7 >= 7" in condition.formula
    assert max(sizes) <= 8, max(sizes)  # was: every other conjunct, hundreds


def test_z3_encodes_waiting_for_a_shared_id_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """400 actions named "x" and 400 that depend on "x": each dependent's condition
    was built from 400 terms, 160,000 in all (a plan of 3,000 took minutes)."""
    z3 = pytest.importorskip("z3")
    n = 400
    plan = {
        "actions": [
            *({"id": "x", "type": "tool_call", "tool": "t",
               "preconditions": [{"key": f"k{i}", "operator": "exists"}]} for i in range(n)),
            *({"id": f"d{i}", "type": "tool_call", "tool": "t", "dependencies": ["x"],
               "expected_effects": {f"out{i}": 1}} for i in range(n)),
        ]
    }  # fmt: skip
    changed = json.loads(json.dumps(plan))
    changed["actions"][-1]["expected_effects"] = {f"out{n - 1}": 2}
    built = {"Not": 0}
    real = z3.Not

    def counted(*args: Any, **kwargs: Any) -> Any:
        built["Not"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(z3, "Not", counted)
    result = equivalent(plan, changed, method="z3", profile="strict")
    assert result.equivalent is False and result.counterexample is not None
    assert built["Not"] <= 20 * n


# --- transaction_check ---------------------------------------------------------------------


@settings(max_examples=200)
@given(proposals(max_actions=8))
def test_transaction_hazards_within_a_proposal_equal_the_brute_force_oracle(
    doc: dict[str, Any],
) -> None:
    import oracle

    report = transaction_check(doc, profile="strict")
    found = sorted(
        (h.kind, h.key, tuple(action_id for _, action_id in h.actions))
        for h in report.hazards
        if h.kind in ("write-write", "read-write")
    )
    assert found == oracle.hazards(doc["actions"])


def test_transaction_check_does_not_ask_about_every_pair_of_writers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """1,000 writers of one key on a chain closed into a cycle (so not "one chain"):
    asking whether each pair is ordered was 500,000 questions and 6 s."""
    from car_verify.semantics.dag import Dag

    n = 3000
    actions: list[dict[str, Any]] = []
    for i in range(n):
        action: dict[str, Any] = {"id": f"c{i}", "type": "tool_call", "tool": "t"}
        action["dependencies"] = [f"c{i - 1}"] if i else []
        if i == n // 2:
            action["dependencies"].append(f"c{n - 1}")
        if i % 3 == 0:
            action["expected_effects"] = {"k": i}
        actions.append(action)
    asked = {"pairs": 0}
    real = Dag.reachable

    def counted(self: Dag, pairs: Any) -> Any:
        pairs = list(pairs)
        asked["pairs"] += len(pairs)
        return real(self, pairs)

    monkeypatch.setattr(Dag, "reachable", counted)
    assert transaction_check({"actions": actions}, profile="strict").hazards == []
    assert asked["pairs"] <= n


def test_transaction_check_names_the_proposal_that_does_not_model() -> None:
    ok = {"actions": [{"id": "a", "type": "tool_call", "tool": "t"}]}
    with pytest.raises(car_verify.InputError, match=r"^\[1\]\.actions\[0\]\.type: expected"):
        transaction_check([ok, {"actions": [{"type": 3}]}], profile="strict")
    with pytest.raises(car_verify.InputError, match=r"^actions: expected an array"):
        transaction_check({"actions": 3}, profile="strict")  # one proposal: no index


def test_transaction_check_within_and_across_proposals() -> None:
    a = {
        "id": "A",
        "actions": [
            {
                "id": "r",
                "type": "tool_call",
                "tool": "t",
                "read_set": ["bal"],
                "assumptions": [{"key": "bal", "expected_value": 5, "read_version": 1}],
            },
            {"id": "w", "type": "tool_call", "tool": "t", "expected_effects": {"bal": 1}},
            {
                "id": "after",
                "type": "tool_call",
                "tool": "t",
                "expected_effects": {"bal": 2},
                "dependencies": ["w"],
            },
        ],
    }
    b = {
        "id": "B",
        "actions": [{"id": "w2", "type": "tool_call", "tool": "t", "write_set": ["bal"]}],
    }
    report = transaction_check([a, b], versions={"bal": 2}, state={"bal": 7}, profile="strict")
    found = [(h.kind, h.key, h.actions) for h in report.hazards]
    assert ("write-write", "bal", (("A", "w"), ("B", "w2"))) in found
    assert ("write-write", "bal", (("A", "after"), ("B", "w2"))) in found
    assert ("read-write", "bal", (("A", "r"), ("A", "w"))) in found
    assert ("read-write", "bal", (("A", "r"), ("B", "w2"))) in found
    assert ("stale-read", "bal", (("A", "r"),)) in found
    assert ("belief-divergence", "bal", (("A", "r"),)) in found
    assert not any(h.actions == (("A", "w"), ("A", "after")) for h in report.hazards)  # ordered
    assert (
        transaction_check(a, versions={"bal": 1}, profile="strict").hazards[-1].kind == "read-write"
    )
    with pytest.raises(car_verify.InputError):
        transaction_check(a, versions={"bal": "new"}, profile="strict")


# --- the opt-in passes and the CLI -----------------------------------------------------------


def test_z3_pass_reports_that_it_did_not_run_without_z3(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "z3" else real(name, *a)
    )
    result = car_verify.verify({"actions": []}, passes=["feasibility"], profile="strict")
    check = result.evidence.checks[0]
    assert not check.ran and check.reason == "z3-solver cannot be imported"


def test_equivalent_z3_unknown_when_z3_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from car_verify.semantics import symbolic

    def missing() -> Any:
        raise symbolic.Z3Unavailable("z3-solver is not installed (test)")

    monkeypatch.setattr(symbolic, "load_z3", missing)
    result = equivalent(write_z(1), write_z(2), method="z3", profile="strict")
    assert result.equivalent is None and "not installed" in (result.reason or "")
    assert result.to_dict()["reason"]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_equivalent_optimize_wp_txcheck(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(write_z(1, {"key": "mode", "value": "blue"})))
    b.write_text(json.dumps(write_z(2, {"key": "mode", "value": "blue"})))
    # The default, --method auto, decides: they differ when mode is blue, which
    # neither of the runtime's probe states sets (issue 25). The command line's
    # sampling also probes the constants the plans name, so it finds mode = blue.
    assert run(["equivalent", str(a), str(b)], capsys)[0] == 1
    code, out, _ = run(["equivalent", str(a), str(b), "--method", "sampled"], capsys)
    assert code == 1 and 'counterexample initial state: {"mode": "blue"}' in out
    # given only the runtime's probes, sampling finds no difference, and says it is no proof
    states = tmp_path / "probes.json"
    states.write_text('[{}, {"x": 1, "y": 2}]')
    code, out, _ = run(
        ["equivalent", str(a), str(b), "--method", "sampled", "--states", str(states)], capsys
    )
    assert (code, out) == (
        3,  # undecided, as --method auto on the same answer
        "no difference on 2 probe states (not a proof; --method z3 decides) (tier sampled) "
        "(profile strict)\n",
    )
    code, out, _ = run(["equivalent", str(a), str(b), "--method", "z3", "--format", "json"], capsys)
    assert code == 1 and set(json.loads(out)) == {
        "equivalent",
        "tier",
        "counterexample",
        "differing_keys",
        "profile",
    }
    states = tmp_path / "s.json"
    states.write_text("[]")
    code, out, err = run(["equivalent", str(a), str(b), "--states", str(states)], capsys)
    assert code == 2 and out == "" and "at least one state" in err
    states.write_text('[{"x": 1}, 3]')
    code, out, err = run(["equivalent", str(a), str(b), "--states", str(states)], capsys)
    assert code == 2 and out == "" and "s.json: [1]: expected an object, got a number" in err
    p = tmp_path / "p.json"
    p.write_text(
        json.dumps(
            {
                "actions": [
                    {"id": "a", "type": "tool_call", "tool": "t", "expected_effects": {"k": 1}},
                    {
                        "id": "b",
                        "type": "tool_call",
                        "tool": "u",
                        "read_set": ["x"],
                        "state_dependencies": ["k"],
                        "x-ext": 1,
                    },
                ]
            }
        )
    )
    code, out, _ = run(["optimize", str(p)], capsys)
    assert (
        code == 0
        and json.loads(out)["actions"][1] | {}
        and json.loads(out)["actions"][1]["x-ext"] == 1
    )
    assert json.loads(out)["actions"][1]["state_dependencies"] == []
    code, out, _ = run(["optimize", str(p), "--diff"], capsys)
    assert "- actions[1] (b).state_dependencies: 'k'" in out
    code, out, _ = run(["wp", str(a)], capsys)
    assert code == 0 and 'mode == "blue"' in out
    code, out, _ = run(["wp", str(a), "--format", "json"], capsys)
    assert json.loads(out)["satisfiable"] is True
    code, out, _ = run(["txcheck", str(a), str(b)], capsys)
    assert code == 1 and "write-write [z]" in out


def test_wp_under_car_prints_keys_and_values_and_the_profile_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under car the condition was z3's own terms (``If(And(Not(i(value[k]) <= ...``),
    over several lines, with ``(profile car)`` spliced into it; and a plain
    ``coverage >= 0.8`` was unknown (its example, an integer beyond 2**53, did not
    replay)."""
    plan = tmp_path / "p.json"
    pre = [
        {"key": "tests_passed", "value": True},
        {"key": "coverage", "operator": "gte", "value": 0.8},
        {"key": "tags", "operator": "contains", "value": "x"},
    ]
    plan.write_text(json.dumps({"actions": [{"id": "d", "type": "tool_call", "tool": "t",
                                             "preconditions": pre}]}))  # fmt: skip
    code, out, _ = run(["wp", str(plan), "--profile", "car"], capsys)
    lines = out.splitlines()
    assert code == 0 and lines[0] == "(profile car)" and out.count("profile") == 1
    assert lines[1] == (
        "every action runs unblocked iff: tests_passed == true and coverage >= 0.8 "
        'and tags contains "x"'
    )
    assert lines[2].startswith("for example: ")
    example = json.loads(lines[2].removeprefix("for example: "))
    assert example["tests_passed"] is True and example["tags"] == "x"
    assert example["coverage"] >= 0.8  # an integer too: CAR compares it as its f64, exactly
    assert len(lines) == 3  # nothing left open: no note
    for term in ("If(", "ToReal", "value[", "text_contains"):
        assert term not in out
    code, out, _ = run(["wp", str(plan), "--profile", "strict"], capsys)
    assert out.splitlines()[0] == "(profile strict)" and "note:" not in out


def test_several_proposals_are_checked_together_under_car_on_cars_order() -> None:
    """Issue 36: under car, transaction_check refused several proposals ("use the
    strict profile"). They are checked together as under strict, each on CAR's
    order: `dependencies` order nothing there, so two writers of one key that they
    order are concurrent under car and not under strict."""
    from car_verify.deciders.transactions import transaction_check

    one = {
        "id": "A",
        "actions": [
            {"id": "w1", "type": "state_write", "parameters": {"key": "k", "value": 1}},
            {
                "id": "w2",
                "type": "tool_call",
                "tool": "t",
                "expected_effects": {"k": 2},
                "dependencies": ["w1"],
            },
        ],
    }
    other = {
        "id": "B",
        "actions": [{"id": "x", "type": "state_write", "parameters": {"key": "k", "value": 3}}],
    }

    def hazards(profile: str) -> set[tuple[str, ...]]:
        report = transaction_check([one, other], profile=profile)
        return {(h.kind, h.key, *h.actions) for h in report.hazards}

    car, strict = hazards("car"), hazards("strict")
    across = {h for h in strict if any("B" in a for a in h[2:])}
    assert across and across <= car  # across proposals: the same under both
    within = car - strict
    assert within and all(h[0] == "write-write" for h in within)  # CAR ignores dependencies
