"""``car_verify.runtime`` as a drop-in for ``car_runtime`` (issue 39): the same
names, parameters and defaults, JSON text in and out, ``ValueError`` of the
runtime's message class for rejected input; and the same answers, checked by
calling both modules through one harness on the same generated inputs (the
projections are the parity suite's: what the car profile promises)."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from car_oracle import (
    loops_nondeterministic,
    monte_carlo_cases,
    monte_carlo_differences,
    proposals,
    runtime,
    states,
    tool_registries,
    tx_projection,
    verify_projection,
    without_loops,
)
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import car_verify.runtime as ours

rt = runtime()
ROOT = Path(__file__).resolve().parents[1]
RUNS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    max_examples=150,
)


def both(name: str, *args: Any) -> tuple[Any, Any]:
    """``name(*args)`` in each module: the parsed answer, or ``("rejected", the
    message class)`` for a ValueError."""

    def run(module: ModuleType) -> Any:
        try:
            answer = getattr(module, name)(*args)
        except (ValueError, RuntimeError) as err:  # verify_workflow raises RuntimeError
            return ("rejected", type(err).__name__, str(err).split(":", 1)[0])
        return json.loads(answer) if isinstance(answer, str) else answer

    return run(rt), run(ours)


def test_every_function_has_the_runtimes_name_parameters_and_defaults() -> None:
    for name in ours.__all__:
        theirs = inspect.signature(getattr(rt, name)).parameters
        mine = inspect.signature(getattr(ours, name)).parameters
        assert list(mine) == list(theirs), name
        for param in theirs:
            assert mine[param].default == theirs[param].default, (name, param)


BAD_JSON = [
    ("verify", ["x"]),
    ("verify", ["{}", "x"]),
    ("verify", ["{}", None, None, None, "x"]),
    ("simulate", ["{}", "x"]),
    ("optimize", ["x"]),
    ("equivalent", ["x", "{}"]),
    ("equivalent", ["{}", "x"]),
    ("transaction_check", ["{}", "x"]),
    ("transaction_check", ["{}", None, "x"]),
    ("simulate_monte_carlo", ["{}", None, "x"]),
    ("simulate_monte_carlo", ["{}", None, None, "x"]),
    ("simulate_monte_carlo", ["{}", None, None, None, "x"]),
    ("permission_classify", ["x"]),
    ("permission_evaluate", ["{}", "bogus"]),
    ("check_information_flow", ["{}", "x"]),
    ("check_information_flow", ["{}", "{}", "x"]),
    ("gate_information_flow", ["x"]),
    ("enforce_information_flow", ["x"]),
    ("check_intent", ["x"]),
    ("check_intent_plan", ["x"]),
    ("gate_intent", ["x"]),
    ("enforce_intent", ["x"]),
    ("analyze_concurrency", ["x"]),
    ("gate_concurrency", ["x"]),
    ("verify_workflow_graph", ["x"]),
    ("check_workflow_policies", ["x", "[]"]),
    ("verify_workflow", ["x"]),
    ("check_plan", ["x"]),
    ("evaluate_goal", ["x"]),
    ("verify_tool_receipts", ["x", "[]"]),
    ("verify_tool_receipts", ["[]", "x"]),
    ("analyze_schedule", ["x"]),
    ("rank_proposals", ["{}"]),
    ("simulate_with_predictions", ['{"actions": []}', "x", 0.5]),
    ("transaction_check_with_predictions", ['{"actions": []}', "x"]),
]


@pytest.mark.parametrize(
    ("name", "args"), BAD_JSON, ids=[f"{n}{i}" for i, (n, _) in enumerate(BAD_JSON)]
)
def test_rejected_input_is_a_value_error_of_the_runtimes_class(name: str, args: list[Any]) -> None:
    theirs, mine = both(name, *args)
    assert theirs[0] == mine[0] == "rejected" and mine == theirs


def _documents() -> list[str]:
    found = []
    for path in sorted([*ROOT.glob("examples/*/proposal.json"), *ROOT.glob("tests/corpus/*.json")]):
        doc = json.loads(path.read_text())
        if isinstance(doc.get("proposal"), dict):
            doc = doc["proposal"]
        found.append(json.dumps(doc))
    return found


def _verify(answer: Any, proposal: dict[str, Any]) -> Any:
    if isinstance(answer, tuple):
        return answer[0]
    projected = verify_projection(answer)
    return without_loops(projected) if loops_nondeterministic(proposal) else projected


def _same(name: str, text: str, *rest: Any) -> None:
    theirs, mine = both(name, text, *rest)
    if name == "verify":
        proposal = json.loads(text)
        theirs, mine = _verify(theirs, proposal), _verify(mine, proposal)
    elif name == "transaction_check":
        theirs, mine = (tx_projection(x) if isinstance(x, dict) else x[0] for x in (theirs, mine))
    elif name == "optimize":
        theirs, mine = (
            [a["state_dependencies"] for a in x["actions"]] if isinstance(x, dict) else x[0]
            for x in (theirs, mine)
        )
    elif isinstance(theirs, tuple) or isinstance(mine, tuple):
        theirs, mine = (x[0] if isinstance(x, tuple) else "answered" for x in (theirs, mine))
    assert mine == theirs, (name, text[:200])


@pytest.mark.parametrize("text", _documents())
def test_the_bundled_documents_get_the_runtimes_answers(text: str) -> None:
    for name in ("verify", "simulate", "optimize", "transaction_check", "permission_classify"):
        _same(name, text)
    _same("permission_evaluate", text, "sandbox_edit")
    _same("equivalent", text, text)


@RUNS
@given(proposals(), states, tool_registries)
def test_generated_proposals_get_the_runtimes_answers(
    proposal: dict[str, Any], state: Any, tools: Any
) -> None:
    text = json.dumps(proposal)
    state_text = None if state is None else json.dumps(state)
    tools_text = None if tools is None else json.dumps(tools)
    _same("verify", text, state_text, None, None, tools_text)
    _same("simulate", text, state_text)
    _same("optimize", text)
    _same("transaction_check", text, None, state_text)
    _same("permission_classify", text)
    _same("equivalent", text, json.dumps({**proposal, "actions": proposal["actions"][::-1]}))


@RUNS
@given(
    st.lists(st.sampled_from(["a", "b", "c"]), max_size=3),
    st.lists(
        st.fixed_dictionaries(
            {"id": st.sampled_from(["s1", "s2", "s3"])},
            optional={
                "preconditions": st.lists(st.sampled_from(["a", "b", "c"]), max_size=2),
                "add_effects": st.lists(st.sampled_from(["a", "b", "c"]), max_size=2),
                "del_effects": st.lists(st.sampled_from(["a", "b", "c"]), max_size=2),
            },
        ),
        max_size=3,
    ),
    st.lists(st.sampled_from(["a", "b", "c"]), max_size=2),
)
def test_plans_get_the_runtimes_answers(
    initial: list[str], steps: list[dict[str, Any]], goal: list[str]
) -> None:
    request = json.dumps({"initial": initial, "steps": steps, "goal": goal})
    theirs, mine = both("check_plan", request)
    assert mine == theirs


@RUNS
@given(
    proposals(),
    states,
    st.dictionaries(
        st.sampled_from(["a0", "a1", "a2", "zz"]),
        st.fixed_dictionaries(
            {
                "effects": st.dictionaries(st.sampled_from(["k", "j", "m"]), st.integers(0, 2)),
                "accuracy": st.sampled_from([0.0, 0.5, 0.9, 1.0]),
            }
        ),
        max_size=3,
    ),
    st.sampled_from([0.0, 0.5, 0.95]),
)
def test_predicted_effects_give_the_runtimes_end_state(
    proposal: dict[str, Any], state: Any, predictions: dict[str, Any], min_accuracy: float
) -> None:
    text, state_text = json.dumps(proposal), None if state is None else json.dumps(state)
    theirs, mine = both(
        "simulate_with_predictions", text, json.dumps(predictions), min_accuracy, state_text
    )
    assert mine == theirs


@RUNS
@given(
    proposals(),
    st.dictionaries(
        st.sampled_from(["a0", "a1", "a2", "zz"]),
        st.lists(st.sampled_from(["k", "j", "m"]), max_size=2),
        max_size=3,
    ),
)
def test_predicted_writes_give_the_runtimes_conflicts(
    proposal: dict[str, Any], predictions: dict[str, Any]
) -> None:
    theirs, mine = both(
        "transaction_check_with_predictions", json.dumps(proposal), json.dumps(predictions)
    )
    theirs, mine = (tx_projection(x) if isinstance(x, dict) else x[0] for x in (theirs, mine))
    assert mine == theirs


NOT_A_MAP = [
    (name, args)
    for value in ("[1,2]", "5", '"x"', "null", "true", "1.5", " \n [1]")
    for name, args in [
        ("verify", ['{"actions": []}', value]),
        ("simulate", ['{"actions": []}', value]),
        ("transaction_check", ['{"actions": []}', value]),
        ("transaction_check", ['{"actions": []}', None, value]),
        ("simulate_monte_carlo", ['{"actions": []}', value]),
        ("simulate_with_predictions", ['{"actions": []}', "{}", 0.5, value]),
        ("transaction_check_with_predictions", ['{"actions": []}', "{}", None, value]),
    ]
]


@pytest.mark.parametrize(
    ("name", "args"), NOT_A_MAP, ids=[f"{n}{i}" for i, (n, _) in enumerate(NOT_A_MAP)]
)
def test_a_state_or_version_map_that_is_no_object_is_refused_in_the_runtimes_words(
    name: str, args: list[Any]
) -> None:
    said = []
    for module in (rt, ours):
        with pytest.raises(ValueError) as caught:
            getattr(module, name)(*args)
        said.append(str(caught.value))
    assert said[1] == said[0]


@RUNS
@given(proposals(), st.lists(st.sampled_from(["t", "u", "v", "zz"]), max_size=3))
@example({"actions": [{"id": "a", "type": "tool_call", "tool": "t"}]}, ["t"])
def test_tool_names_without_schemas_check_existence_only(
    proposal: dict[str, Any], names: list[str]
) -> None:
    """Tool names (no schemas): the tools' existence is checked, their parameters
    are not, and the evidence says so, as the runtime's does."""
    text = json.dumps(proposal)
    theirs, mine = both("verify", text, None, names)
    if isinstance(theirs, tuple) or isinstance(mine, tuple):
        assert _verify(mine, proposal) == _verify(theirs, proposal)
        return
    assert _verify(mine, proposal) == _verify(theirs, proposal)
    assert mine["evidence"]["assumptions"] == theirs["evidence"]["assumptions"]
    checks = [(c, mine, theirs) for c in ("tool_existence", "param_schema")]
    for name, *answers in checks:
        ran = [next(c for c in a["evidence"]["checks"] if c["name"] == name) for a in answers]
        assert ran[0] == ran[1], name
    # the coverage score is outside the parity promise (docs/semantics.md §9): where
    # car-verify's equals the runtime's without names, it equals it with them
    if loops_nondeterministic(proposal):
        return  # the runtime's warnings, so its score, vary from run to run here
    theirs_alone, mine_alone = both("verify", text)
    if mine_alone["evidence"]["confidence"] == theirs_alone["evidence"]["confidence"]:
        assert mine["evidence"]["confidence"] == theirs["evidence"]["confidence"]


def test_simulate_monte_carlo_past_the_exact_budget_still_gives_the_runtimes_fields_only() -> None:
    """Past the exact method's budget the drop-in samples, as the runtime does, and
    says nothing more (why it sampled is car_verify.risk's ``reason``)."""
    actions = [
        {"id": f"a{i}", "type": "tool_call", "tool": "t", "expected_effects": {f"k{i}": i}}
        for i in range(22)
    ]
    actions.append(
        {"id": "end", "type": "tool_call", "tool": "t",
         "state_dependencies": [f"k{i}" for i in range(22)]}
    )  # fmt: skip
    text = json.dumps({"actions": actions})
    theirs, mine = both("simulate_monte_carlo", text, None, None, None, '{"trials": 300}')
    assert sorted(mine) == sorted(theirs)
    assert (
        mine["tool_calls"]
        == theirs["tool_calls"]
        == {"mean": 22.0, "min": 22, "p50": 22, "p95": 22, "max": 22}
    )


@RUNS
@given(monte_carlo_cases())
def test_simulate_monte_carlo_gives_the_runtimes_fields_only(case: tuple[str | None, ...]) -> None:
    """The drop-in's answer has the runtime's fields, no more (what car-verify says
    besides, the rates' provenance, the method, the tier, is car_verify.risk's), and
    the runtime's numbers within sampling error: each probability, the counts'
    means (``tool_calls`` counting every attempt of a retried call), their extremes
    where a sample cannot miss them (car_oracle.monte_carlo_differences)."""
    theirs, mine = both("simulate_monte_carlo", *case)
    if isinstance(theirs, tuple) or isinstance(mine, tuple):
        assert (mine[0] if isinstance(mine, tuple) else "answered") == (
            theirs[0] if isinstance(theirs, tuple) else "answered"
        )
        return
    assert sorted(mine) == sorted(theirs)
    assert monte_carlo_differences(theirs, mine) == []
