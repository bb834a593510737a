"""The fused kernel (``car_verify.passes.fused``) against its plain twin.

``verify`` of a plain document (the default passes, no tools, policies, labels or
intent) runs the fused kernel over the flat plan (``car_verify.ir.flat``); the
plain twin is the pass runner over the model (``api.assess`` of ``load``'s model).
Every property here draws plans of every kind and holds the two to the same
answer, finding by finding and pointer by pointer, under both profiles: the
result's dictionary, its ``Issue`` objects, its evidence, its model; the flat
plan's arrays to the model's fields; the drop-in's JSON to its plain path's.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from car_oracle import crowded_proposals
from car_oracle import proposals as car_proposals
from car_oracle import states as car_states
from hypothesis import example, given
from hypothesis import strategies as st
from strategies import proposals as strict_proposals
from strategies import states as strict_states

import car_verify
from car_verify.api import VerificationResult, assess
from car_verify.base.errors import CarVerifyError
from car_verify.base.values import ABSENT, json_shape
from car_verify.ir.flat import flat_plan, flat_plan_text
from car_verify.ir.model import load, repeated_keys
from car_verify.passes import Context, Options
from car_verify.semantics import semantics_of
from car_verify.semantics.car import car_evaluate, car_holds, runtime_words

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from shapes import LARGE_SHAPES

PROFILES = st.sampled_from(["car", "strict"])


def plain(document: Any, profile: str, **inputs: Any) -> VerificationResult:
    """The plain twin: the pass runner over ``load``'s model, the default passes."""
    sem = semantics_of(profile)
    model = load(document)
    sem.refuse(model)
    options = Options(
        max_actions=inputs.get("max_actions"),
        repeat_threshold=inputs.get("repeat_threshold", 3),
    )
    state = inputs.get("initial_state")
    ctx = Context(model, options=options, semantics=sem, initial_state=state)
    return assess(ctx)


def answer(run: Any) -> Any:
    try:
        return run()
    except CarVerifyError as err:
        return ("refused", type(err).__name__, str(err))


def assert_same(document: Any, profile: str, **inputs: Any) -> str:
    """``verify`` (the kernel where it models the run) and the plain twin give the
    same result; which ran (the evidence's ``runner``)."""
    ours = answer(lambda: car_verify.verify(document, profile=profile, **inputs))
    theirs = answer(lambda: plain(document, profile, **inputs))
    if isinstance(theirs, tuple) or isinstance(ours, tuple):
        assert ours == theirs
        return "refused"
    runner = ours.evidence.runner
    mine, twin = ours.to_dict(), theirs.to_dict()
    assert mine["evidence"].pop("runner") == runner
    assert twin["evidence"].pop("runner") == "passes"
    assert mine == twin
    assert ours.issues == theirs.issues  # positions and JSON pointers too
    assert ours.valid == theirs.valid
    assert [a.to_dict() for a in ours.proposal.actions] == [
        a.to_dict() for a in theirs.proposal.actions
    ]
    return str(runner)


def documents(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["car", "crowded", "strict"]))
    if kind == "car":
        return draw(car_proposals(max_actions=8))
    if kind == "crowded":
        return draw(crowded_proposals())
    return draw(strict_proposals())


@st.composite
def plans(draw: st.DrawFn) -> dict[str, Any]:
    """Plans of every kind: every action type and operator, duplicate ids, unknown
    references, output references, cycles, optional actions, compensations, sets."""
    return documents(draw)


@given(plans(), PROFILES, st.none() | car_states | strict_states)
def test_the_kernel_gives_the_plain_runners_answer(
    document: dict[str, Any], profile: str, state: Any
) -> None:
    assert_same(document, profile, initial_state=state)


@given(plans(), PROFILES, st.sampled_from([None, 0, 1, 4]), st.sampled_from([1, 2, 3, 5]))
def test_budgets_and_thresholds_are_the_plain_runners(
    document: dict[str, Any], profile: str, limit: Any, threshold: int
) -> None:
    assert_same(document, profile, max_actions=limit, repeat_threshold=threshold)


@pytest.mark.parametrize("shape", sorted(LARGE_SHAPES))
@pytest.mark.parametrize("profile", ["car", "strict"])
def test_the_benchmark_shapes_get_the_plain_runners_answer(shape: str, profile: str) -> None:
    """The large shapes, at a size where the DAG routes edges through cover nodes."""
    document = LARGE_SHAPES[shape](120)
    assert assert_same(json.dumps(document), profile, initial_state={"env": "prod"}) == "fused"


def test_the_evidence_says_which_ran() -> None:
    document = {"actions": [{"id": "a", "type": "tool_call", "tool": "t"}]}
    assert car_verify.verify(document).evidence.runner == "fused"
    assert car_verify.verify(document, passes=["structure"]).evidence.runner == "passes"
    assert car_verify.verify(document, tools=[{"name": "t"}]).evidence.runner == "passes"
    assert car_verify.verify(load(document)).evidence.runner == "passes"  # a model, as given
    cycle = {
        "actions": [
            {"id": "a", "type": "tool_call", "tool": "t", "dependencies": ["b"]},
            {"id": "b", "type": "tool_call", "tool": "t", "dependencies": ["a"]},
        ]
    }
    assert car_verify.verify(cycle, profile="strict").evidence.runner == "passes"


def test_the_verdict_is_known_before_the_findings_are_made() -> None:
    """``valid`` is the kernel's count of errors; the issues, made later, agree; a
    change to the model a caller asks for reaches no finding (they are made first)."""
    document = {
        "actions": [
            {"id": "a", "type": "tool_call", "tool": "t", "expected_effects": {"k": 1}},
            {"id": "b", "type": "tool_call", "tool": "t", "expected_effects": {"k": 2}},
            {"id": "c", "type": "tool_call", "tool": "t", "preconditions": [{"key": "z"}]},
        ]
    }
    result = car_verify.verify(document)
    assert result.valid is False
    twin = plain(document, "car")
    model = result.proposal
    model.actions[1].expected_effects.clear()
    model.actions[1].parameters["x"] = {"y": 1}
    assert result.issues == twin.issues and result.conflicts == twin.conflicts


@pytest.mark.parametrize("profile", ["car", "strict"])
@pytest.mark.parametrize("use", ["valid", "issues", "to_dict", "evidence", "proposal"])
def test_a_run_is_freed_when_its_result_is_dropped(profile: str, use: str) -> None:
    """A run and its findings are no reference cycle (a lazy message holds its run
    weakly): they are freed by their count of references when the caller drops the
    result, not left to the cyclic collector (issue 61: the collector's share)."""
    import weakref

    from bench_small import proposal

    rng = random.Random(7)
    texts = [json.dumps(proposal(rng, rng.randint(3, 10))) for _ in range(20)]
    texts.append(json.dumps(LARGE_SHAPES["synth"](60)))
    for text in texts:
        result = car_verify.verify(text, profile=profile)
        getattr(result, use)
        if use == "to_dict":
            result.to_dict()
        held = weakref.ref(result._run)  # type: ignore[attr-defined]
        del result
        assert held() is None, text


@pytest.mark.parametrize("profile", ["car", "strict"])
def test_a_fused_result_reruns_and_repairs_as_the_plain_ones(profile: str) -> None:
    """The fused result's inputs are the plain runner's (``rerun`` of another plan
    gives the same answer), and its repairs (``to_dict(fixes=True)``) too."""
    document = {
        "actions": [
            {"id": "a", "type": "tool_call", "tool": "t", "reversibility": "compensable"},
            {"id": "b", "type": "tool_call", "tool": "t", "state_dependencies": ["k"]},
        ]
    }
    other = {"actions": [{"id": "c", "type": "tool_call", "tool": "u"}]}
    state = {"env": "prod"}
    ours = car_verify.verify(document, profile=profile, initial_state=state, max_actions=5)
    assert ours.evidence.runner == "fused"
    twin = plain(document, profile, initial_state=state, max_actions=5)
    assert ours.inputs == twin.inputs
    assert ours.rerun(other).to_dict() == twin.rerun(other).to_dict()
    mine, theirs = ours.to_dict(fixes=True), twin.to_dict(fixes=True)
    mine["evidence"].pop("runner"), theirs["evidence"].pop("runner")
    assert mine == theirs
    assert any("fix" in issue for issue in mine["issues"])


@st.composite
def broken_documents(draw: st.DrawFn) -> Any:
    """Documents with one field of a wrong type, an unknown field, a missing type or
    an unknown one, and documents that are not objects."""
    document: Any = draw(plans())
    actions = document["actions"]
    where = draw(st.sampled_from(["action", "precondition", "proposal", "whole"]))
    wrong = draw(st.sampled_from([None, 1, "x", [], {}, [1], True, 1.5]))
    if where == "whole":
        return wrong
    if where == "proposal":
        field = draw(st.sampled_from(["id", "source", "timestamp", "actions", "context", "misc"]))
        document[field] = wrong
        return document
    if not actions:
        return document
    action = actions[draw(st.integers(0, len(actions) - 1))]
    if where == "precondition":
        action["preconditions"] = [
            {draw(st.sampled_from(["key", "operator", "description", "value", "misc"])): wrong}
        ]
        return document
    field = draw(
        st.sampled_from(
            [
                "id", "type", "tool", "parameters", "preconditions", "expected_effects",
                "state_dependencies", "dependencies", "read_set", "write_set", "assumptions",
                "invocation_mode", "reversibility", "compensation", "idempotent",
                "max_retries", "failure_behavior", "timeout_ms", "metadata", "misc",
            ]
        )
    )  # fmt: skip
    if draw(st.booleans()):
        action.pop(field, None)
    else:
        action[field] = wrong
    return document


@given(broken_documents())
@example({"actions": [{"id": "a", "type": "tool_call", "max_retries": True}]})
@example({"actions": [{"id": "a", "type": "tool_call", "compensation": {"type": "tool"}}]})
@example({"$schema": "x"})
def test_the_flat_plan_models_what_load_models(document: Any) -> None:
    """Where the flat plan reads a document, ``load`` models it the same: its arrays
    are the model's fields, its members those of the document's objects, its model
    ``load``'s; where ``load`` refuses a document, the flat plan does not read it."""
    try:
        model = load(json.dumps(document))
    except CarVerifyError:
        model = None
    plan = flat_plan(document)
    if model is None:
        assert plan is None
        return
    if plan is None:
        return  # unusual (an unknown field, say): the model's own reader answers
    actions = model.actions
    given = [i for i, a in enumerate(document["actions"]) if "id" not in a]
    assert plan.given_ids == given  # an id made here, as the model makes one
    for i in given:
        actions[i].id = plan.ids[i]
    assert plan.ids == [a.id for a in actions]
    assert plan.types == [a.type for a in actions]
    assert plan.tools == [a.tool for a in actions]
    assert plan.parameters == [a.parameters for a in actions]
    assert plan.effects == [a.expected_effects for a in actions]
    for mine, field in (
        (plan.state_dependencies, "state_dependencies"),
        (plan.dependencies, "dependencies"),
        (plan.write_sets, "write_set"),
        (plan.read_sets, "read_set"),
    ):
        assert [list(keys) for keys in mine] == [getattr(a, field) for a in actions]
    assert [[p.get("key") for p in pres] for pres in plan.preconditions] == [
        [p.key for p in a.preconditions] for a in actions
    ]
    assert plan.members == json_shape(document)[1]
    assert plan.model().to_dict()["actions"] == model.to_dict()["actions"]


_KEY_TEXT = st.sampled_from(["id", "type", "tool", "key", 'q"', ":", "a b"])


@st.composite
def repeated_texts(draw: st.DrawFn) -> str:
    """Proposal text whose objects may repeat a key, with white space before colons
    and strings that hold quotes and colons."""
    space = st.sampled_from(["", " ", "\n", "\t "])

    def member(key: str, value: str) -> str:
        return f"{json.dumps(key)}{draw(space)}:{draw(space)}{value}"

    actions = []
    for n in range(draw(st.integers(0, 3))):
        members = [member("id", json.dumps(f"a{n}")), member("type", '"tool_call"')]
        for _ in range(draw(st.integers(0, 2))):
            members.append(member(draw(_KEY_TEXT), json.dumps(draw(_KEY_TEXT))))
        draw(st.randoms()).shuffle(members)
        actions.append("{" + ",".join(members) + "}")
    return '{"actions": [' + ",".join(actions) + "]}"


@given(repeated_texts())
@example('{"actions": [{"id": "a", "type": "tool_call", "id": "b"}]}')
@example('{"actions": [{"id": "a" , "type": "tool_call", "id" :"b"}]}')
def test_the_flat_plan_reads_no_text_that_repeats_a_key(text: str) -> None:
    """A repeated key is found by the model's reader (``duplicate-key``): the flat plan
    reads only text whose objects hold every key it writes."""
    try:
        model = load(text)
    except CarVerifyError:
        model = None
    plan = flat_plan_text(text)
    if plan is not None:
        assert model is not None and not repeated_keys(model)
    for profile in ("car", "strict"):
        assert_same(text, profile)


_VALUES = st.sampled_from(
    [ABSENT, None, True, False, 0, 1, -1, 1.0, -0.0, 2.5, 2**53 + 1, 2**64, 2**64 + 1,
     -(2**63) - 1, "", "a", "1", "ab", "true", "[1]", [], [1], [1.0], {"a": 1}, [None]]
)  # fmt: skip


@given(
    st.sampled_from(
        ["eq", "neq", "gt", "lt", "gte", "lte", "exists", "not_exists", "contains", "EQ", "foo"]
    ),
    _VALUES,
    _VALUES.filter(lambda v: v is not ABSENT),
    st.booleans(),
)
def test_car_holds_is_car_evaluates_truth(
    operator: str, actual: Any, expected: Any, runtime: bool
) -> None:
    """The walk's question (car_holds) against the runtime's rule with its words."""
    state = {} if actual is ABSENT else {"k": actual}
    if runtime:
        with runtime_words():
            said = car_evaluate("k", operator, expected, state)
    else:
        said = car_evaluate("k", operator, expected, state)
    assert car_holds(operator, actual, expected) == (said is None)


@given(plans(), st.none() | car_states, st.sampled_from([None, 2, 40]))
def test_the_drop_ins_json_is_its_plain_paths(
    document: dict[str, Any], state: Any, limit: Any
) -> None:
    """``car_verify.runtime.verify`` writes the kernel's answer as JSON without the
    result's objects: the text its plain path writes, byte for byte."""
    import car_verify.runtime as drop_in

    text = json.dumps(document)
    state_text = None if state is None else json.dumps(state)

    def run(flat: bool) -> Any:
        original = drop_in._verify_flat
        if not flat:
            drop_in._verify_flat = lambda *args: None  # type: ignore[assignment]
        try:
            return drop_in.verify(text, state_text, None, limit, None)
        except ValueError as err:
            return ("rejected", str(err))
        finally:
            drop_in._verify_flat = original  # type: ignore[assignment]

    assert run(True) == run(False)


def test_a_generated_corpus_of_every_shape_agrees() -> None:
    """Seeded plans of the small benchmark's mix, under both profiles, all fused."""
    from bench_small import proposal

    rng = random.Random(61)
    for _ in range(60):
        text = json.dumps(proposal(rng, rng.randint(0, 10)))
        for profile in ("car", "strict"):
            assert assert_same(text, profile) == "fused"
