"""The ``car`` profile against the runtime itself (docs/semantics.md §9).

A differential suite: generated small proposals go to ``car_runtime`` 0.52.1 (its
documented functions, black-box) and to car-verify under ``car``, and every field
the profile promises must agree. It runs whenever ``car_runtime`` can be imported;
``.ci/run`` installs it. The one place CAR is nondeterministic (its duplicate-call
fingerprint when the parameters have two or more keys) is left out of that case's
comparison, and ``test_compat.py`` pins down the answer car-verify gives instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from car_oracle import (
    assert_projection_matches,
    crowded_proposals,
    proposals,
    runtime,
    states,
    tool_registries,
    tx_projection,
)
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import car_verify as cv
from car_verify.base.errors import InputError

rt = runtime()
ROOT = Path(__file__).resolve().parents[1]
RUNS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    max_examples=400,
)


def agree(theirs: Callable[[], Any], ours: Callable[[], Any]) -> None:
    """Both sides give the same answer, or both reject the proposal (CAR raises
    ValueError, car-verify an InputError)."""
    try:
        their_answer = theirs()
    except ValueError:
        their_answer = "rejected"
    try:
        our_answer = ours()
    except InputError:
        our_answer = "rejected"
    assert our_answer == their_answer


@RUNS
@given(proposals(), states, tool_registries, st.sampled_from([None, None, 2, 4]))
def test_verify_agrees_with_the_runtime(
    proposal: dict[str, Any], state: Any, tools: Any, max_actions: Any
) -> None:
    assert_projection_matches(proposal, state, tools, max_actions)


@settings(RUNS, max_examples=150)
@given(crowded_proposals(), states, tool_registries)
# A tool named "" is a tool whose output goes untested (one with no tool is not):
# the region was left out, and past 12 regions the score with it (the parity
# report's fresh seed, issue 59).
@example(
    {"actions": [{"id": f"a{i}", "type": "tool_call", "tool": "t" if i else "",
                  "expected_effects": {"k": i}} for i in range(7)]
     + [{"id": "n", "type": "tool_call"}]},
    None,
    None,
)  # fmt: skip
def test_the_evidence_of_crowded_plans_agrees_with_the_runtime(
    proposal: dict[str, Any], state: Any, tools: Any
) -> None:
    """Many untested regions and many warnings: the runtime bounds the score's two
    deductions and lists the regions in their text order (issue 59)."""
    assert_projection_matches(proposal, state, tools)


@RUNS
@given(proposals(), states)
def test_simulate_agrees_with_the_runtime(proposal: dict[str, Any], state: Any) -> None:
    state_json = None if state is None else json.dumps(state)
    agree(
        lambda: json.loads(rt.simulate(json.dumps(proposal), state_json)),
        lambda: cv.simulate(proposal, state).to_dict(),
    )


@RUNS
@given(proposals())
def test_optimize_agrees_with_the_runtime(proposal: dict[str, Any]) -> None:
    agree(
        lambda: [
            a["state_dependencies"]
            for a in json.loads(rt.optimize(json.dumps(proposal)))["actions"]
        ],
        lambda: [a.state_dependencies for a in cv.optimize(proposal).proposal.actions],
    )


@RUNS
@given(
    proposals(),
    states,
    st.none() | st.dictionaries(st.sampled_from(["k", "j", "m"]), st.integers(0, 2)),
)
def test_transaction_check_agrees_with_the_runtime(
    proposal: dict[str, Any], state: Any, versions: Any
) -> None:
    agree(
        lambda: tx_projection(
            json.loads(
                rt.transaction_check(
                    json.dumps(proposal),
                    None if versions is None else json.dumps(versions),
                    None if state is None else json.dumps(state),
                )
            )
        ),
        lambda: tx_projection(
            cv.transaction_check(proposal, versions=versions, state=state).to_dict()
        ),
    )


@RUNS
@given(proposals(max_actions=4), proposals(max_actions=4))
def test_sampled_equivalent_agrees_with_the_runtime(a: dict[str, Any], b: dict[str, Any]) -> None:
    """On the runtime's two probes (``probe_constants=False``) car-verify's sampled
    answer is the runtime's: a difference found (False), or none (True there, an
    undecided ``no_difference_found`` here); with the plans' constants as probes
    too (the default) it finds every difference the runtime finds."""
    agree(
        lambda: rt.equivalent(json.dumps(a), json.dumps(b)),
        lambda: cv.equivalent(a, b, method="sampled", probe_constants=False).no_difference_found,
    )
    try:
        differs = not rt.equivalent(json.dumps(a), json.dumps(b))
    except ValueError:
        return
    if differs:
        assert cv.equivalent(a, b, method="sampled").equivalent is False


def _documents() -> list[Path]:
    return sorted([*ROOT.glob("examples/*/proposal.json"), *ROOT.glob("tests/corpus/*.json")])


@pytest.mark.parametrize("path", _documents(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_bundled_document_agrees_with_the_runtime(path: Path) -> None:
    doc = json.loads(path.read_text())
    proposal = doc.get("proposal", doc) if isinstance(doc, dict) else doc
    state_file, tools_file = path.with_name("state.json"), path.with_name("tools.json")
    state = json.loads(state_file.read_text()) if state_file.exists() else doc.get("initial_state")
    tools = json.loads(tools_file.read_text()) if tools_file.exists() else doc.get("tools")
    assert_projection_matches(proposal, state, tools, doc.get("max_actions"))
    state_json = None if state is None else json.dumps(state)
    agree(
        lambda: json.loads(rt.simulate(json.dumps(proposal), state_json)),
        lambda: cv.simulate(proposal, state).to_dict(),
    )


ODD_SCHEMAS = [
    {"type": "object", "properties": {"n": {"type": None}}},
    {"type": "object", "properties": {"n": {"type": [None, "string"]}}},
    {"type": "object", "properties": {"n": {"type": 5}}},
    {"type": "object", "properties": {"n": {"type": {"x": 1}}}},
    {"type": "object", "required": None},
    {"type": "object", "required": 5},
    {"type": "object", "required": ["n", 7, None]},
    {"type": "object", "properties": None},
    {"type": "object", "properties": {"n": None}},
]


@pytest.mark.parametrize("schema", ODD_SCHEMAS, ids=lambda s: json.dumps(s))
def test_odd_parameter_schemas_are_read_as_the_runtime_reads_them(schema: Any) -> None:
    """A registry whose schemas are not what CAR checks (a ``type`` of null or a
    number, a ``required`` that is no list) is no crash: CAR's answer, exactly."""
    proposal = {"actions": [{"id": "a", "type": "tool_call", "tool": "t", "parameters": {"n": 1}}]}
    assert_projection_matches(proposal, None, [{"name": "t", "parameters": schema}])


#: Values and needles for ``contains``: every kind, objects whose keys come in
#: another order, floats the runtime writes otherwise than Python (``1e-7``,
#: ``0.00001``), integers past 2**53 and 2**64, strings that look like JSON, escapes.
CONTAINS_VALUES: list[Any] = [
    None, True, False, 0, 1, -1, 10, 1.0, 2.5, -0.0, 1e16, 1e-7, 0.00001, -1e-5, 1e21,
    2**53 + 1, 2**64, "", "a", "1", "[1]", "null", "true", '"b":1,"a"', '"a":2,"b"',
    "\n", "é", [], [1], [1, 2], ["a"], [[1]], [None], ["é"], ["\n\u0001"],
    {}, {"a": 1}, {"k": "a"}, {"a": [1]}, {"b": 1, "a": 2}, {"a": 2, "b": 1},
    {"a": {"b": 1, "a": 2}}, [{"b": 1, "a": 2}], {"b": {"d": 1, "c": [2.5, 1e-7]}, "a": None},
]  # fmt: skip


def test_contains_reads_the_runtimes_text_of_every_value() -> None:
    """``contains`` tests the needle's text inside the value's text as the runtime
    writes them: object keys sorted, floats in the runtime's form. Every value of
    CONTAINS_VALUES against every one as the needle (and against no needle)."""
    differ = []
    for value in CONTAINS_VALUES:
        for needle in [*CONTAINS_VALUES, "no value"]:
            pre: dict[str, Any] = {"key": "m", "operator": "contains"}
            if needle != "no value":
                pre["value"] = needle
            gate = {"id": "g", "type": "state_write", "parameters": {"key": "z", "value": 1},
                    "preconditions": [pre]}  # fmt: skip
            plan = {"actions": [gate]}
            theirs = "z" in json.loads(rt.simulate(json.dumps(plan), json.dumps({"m": value})))
            ours = "z" in dict(cv.simulate(plan, {"m": value}))
            if theirs != ours:
                differ.append((value, needle, theirs))
    assert differ == []


def test_floats_are_written_as_the_runtime_writes_them() -> None:
    """The runtime's text of an f64 (what ``contains`` reads): 4,000 floats of every
    magnitude, read back from the runtime's own JSON."""
    import random
    import re

    from car_verify.semantics.car import float_text

    rng = random.Random(5)
    floats = [0.0, -0.0, 1e-5, 1e-6, 9.999999999999999e-06, 1e15, 1e16, 5e-324, 2.0**64]
    for _ in range(2000):
        floats.append(rng.choice([1, -1]) * rng.random() * 10.0 ** rng.randint(-300, 300))
        floats.append(float(rng.randint(-(10**6), 10**6)) * 10.0 ** rng.randint(-25, 25))
    state = {f"k{i}": f for i, f in enumerate(floats)}
    written = rt.simulate(json.dumps({"actions": []}), json.dumps(state))
    texts = dict(re.findall(r'"(k\d+)":([^,}]+)', written))
    assert [texts[f"k{i}"] for i in range(len(floats))] == [float_text(f) for f in floats]
