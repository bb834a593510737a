"""Hypothesis properties for every invariant the contract states (issue 2)."""

from __future__ import annotations

import json
from typing import Any

import oracle
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import json_values, proposals, states

import car_verify
from car_verify import InputError
from car_verify.base.values import canonical, fingerprint, format_value, json_equal
from car_verify.ir._codec import Bad, decode, decode_owned, decode_plain
from car_verify.ir.model import ActionProposal, Precondition
from car_verify.semantics import _reach as dag_module
from car_verify.semantics.dag import Dag


@given(json_values)
def test_load_models_any_json_or_raises_input_error(value: Any) -> None:
    try:
        car_verify.load({"actions": value} if isinstance(value, list) else {"x": value})
        car_verify.load(json.dumps(value))
    except InputError:
        pass


@given(proposals(), st.data())
def test_load_mutated_proposal_models_or_raises_input_error(
    doc: dict[str, Any], data: st.DataObject
) -> None:
    """Replace one field anywhere with a random JSON value: a model or an InputError."""
    if doc["actions"]:
        action = data.draw(st.sampled_from(doc["actions"]))
        field = data.draw(
            st.sampled_from([*action, "preconditions", "compensation", "max_retries"])
        )
        action[field] = data.draw(json_values)
    try:
        proposal = car_verify.load(doc)
    except InputError as err:
        assert err.path, "an InputError names where it is"
        return
    car_verify.verify(proposal, profile="strict")  # a modelled proposal never makes verify raise


@given(proposals(), states)
def test_verify_never_raises_and_valid_means_no_error(
    doc: dict[str, Any], state: dict[str, Any]
) -> None:
    result = car_verify.verify(doc, initial_state=state, profile="strict")
    assert result.valid == (not any(i.severity == "error" for i in result.issues))
    wire = result.to_dict()
    assert wire["valid"] == result.valid
    assert json.loads(json.dumps(wire)) == wire


@given(proposals())
def test_preds_and_succs_are_the_real_edges_between_actions(doc: dict[str, Any]) -> None:
    """The DAG's question API speaks of actions only: no helper node, in or out."""
    dag = Dag(car_verify.load(doc))
    edges, _ = oracle.edges(doc["actions"])
    for i in range(dag.n):
        assert dag.preds(i) == sorted({p for p, a in edges if a == i})
        assert dag.succs(i) == sorted({a for p, a in edges if p == i})


@given(proposals())
def test_levels_respect_every_edge(doc: dict[str, Any]) -> None:
    dag = Dag(car_verify.load(doc))
    edges, _ = oracle.edges(doc["actions"])
    for p, a in edges:
        if dag.level_of(p) >= 0 and dag.level_of(a) >= 0:
            assert dag.level_of(p) < dag.level_of(a)
    assert [
        dag.level_of(i) if dag.level_of(i) >= 0 else None for i in range(dag.n)
    ] == oracle.levels(doc["actions"])


@given(proposals(max_actions=8))
def test_conflicts_equal_brute_force_oracle(doc: dict[str, Any]) -> None:
    result = car_verify.verify(doc, profile="strict")
    assert result.conflicts == oracle.conflicts(doc["actions"])


def assert_conflicts_and_reachability_match_the_oracle(dag: Dag, doc: dict[str, Any]) -> None:
    ids = dag.ids
    assert [[ids[a], ids[b], k] for a, b, k in dag.conflicts] == oracle.conflicts(doc["actions"])
    edges, _ = oracle.edges(doc["actions"])
    reach = oracle.closure(dag.n, edges)
    pairs = [(a, b) for a in range(dag.n) for b in range(dag.n)]
    assert dag.reachable(pairs) == {(a, b) for a, b in pairs if b in reach[a] and a != b}


@given(proposals(max_actions=8), st.integers(1, 3))
def test_batched_bitsets_agree_with_the_oracle(doc: dict[str, Any], batch: int) -> None:
    """Conflicts and reachability are the same however the sources are cut into batches."""
    dag = Dag(car_verify.load(doc))
    dag.MIN_BATCH, dag.BITSET_BUDGET = batch, 1
    assert_conflicts_and_reachability_match_the_oracle(dag, doc)


@given(proposals(max_actions=8), st.sampled_from([0, 1, 64]), st.sampled_from([0, 1, 1 << 16]))
def test_conflicts_agree_however_pairs_are_settled(
    doc: dict[str, Any], near: int, limit: int
) -> None:
    """Force open pairs (no short search), an early stop of the first pass, tiny batches."""
    dag = Dag(car_verify.load(doc))
    dag.MIN_BATCH, dag.BITSET_BUDGET = 1, 1
    dag.NEAR_SEARCH, dag.GUESS_SEARCH, dag.OPEN_PAIR_LIMIT = near, near, limit
    assert_conflicts_and_reachability_match_the_oracle(dag, doc)


@given(proposals(max_actions=8))
def test_each_cycle_is_shown_by_a_shortest_real_cycle_through_its_first_action(
    doc: dict[str, Any],
) -> None:
    """A dependency cycle's path starts and ends at its first action, every step is a
    real edge of the proposal, and no cycle through that action has fewer actions."""
    dag = Dag(car_verify.load(doc))
    edges, _ = oracle.edges(doc["actions"])
    for cycle in dag.cycles:
        start = cycle.members[0]
        assert cycle.path[0] == cycle.path[-1] == start
        assert all(step in edges for step in zip(cycle.path, cycle.path[1:], strict=False))
        assert set(cycle.path) <= set(cycle.members)
        # the shortest way back to start, by a search over the real edges
        frontier, seen, length = {start}, set(), 0
        while start not in seen:
            frontier = {b for a, b in edges if a in frontier} - seen
            seen |= frontier
            length += 1
        assert len(cycle.path) - 1 == length


#: Every tuning threshold of the DAG at the value that sends its work down the
#: rarely taken branch: cover nodes for every key, no short search, pair-by-pair
#: questions never, chains of one writer, one-bit batches, an early stop of the
#: first conflict pass, no guesses, every dependency list walked as shared, one-bit
#: windows.
EXTREMES = {
    "DIRECT_WRITERS": 0,
    "NEAR_SEARCH": 0,
    "PAIRS_PER_ACTION": 0,
    "CHAIN_MIN": 1,
    "MIN_BATCH": 1,
    "BITSET_BUDGET": 1,
    "OPEN_PAIR_LIMIT": 0,
    "GUESSES_PER_WRITER": 0,
    "GUESS_SEARCH": 0,
    "SHARED_TASKS": 0,
}


@given(proposals(max_actions=8), states)
def test_thresholds_tune_speed_never_the_answer(doc: dict[str, Any], state: dict[str, Any]) -> None:
    """verify gives the same wire object, and simulate the same trace, with every DAG
    threshold at its extreme: the branches that only large plans take on their own
    agree with the small ones."""

    def answers() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        walked = car_verify.simulate(doc, initial_state=state, profile="strict")
        return car_verify.verify(
            doc, initial_state=state, profile="strict"
        ).to_dict(), walked.trace_dicts()

    expected = answers()
    saved = {name: getattr(Dag, name) for name in EXTREMES}
    window = dag_module._WINDOW
    try:
        for name, value in EXTREMES.items():
            setattr(Dag, name, value)
        dag_module._WINDOW = 1
        assert answers() == expected
    finally:
        for name, value in saved.items():
            setattr(Dag, name, value)
        dag_module._WINDOW = window


def scribble(value: Any) -> None:
    """Change every array and object inside ``value`` in place."""
    if isinstance(value, dict):
        for item in list(value.values()):
            scribble(item)
        value["scribbled"] = True
    elif isinstance(value, list):
        for item in value:
            scribble(item)
        value.append("scribbled")


@given(
    proposals(),
    st.dictionaries(st.sampled_from(["x", "y", "z"]), st.builds(lambda: {"n": [1]})),
)
def test_results_never_share_values_with_what_the_caller_gave(
    doc: dict[str, Any], state: dict[str, Any]
) -> None:
    """Changing a result's end state in place leaves the caller's proposal (a model
    it holds) and initial state as they were, whatever values they share."""
    model = car_verify.load(doc)
    for action in model.actions:  # effects with arrays and objects to share
        action.expected_effects = {k: {"v": [v]} for k, v in action.expected_effects.items()}
    before = (json.dumps(model.to_dict(), sort_keys=True), json.dumps(state, sort_keys=True))
    scribble(car_verify.verify(model, initial_state=state, profile="strict").simulated_state)
    scribble(dict(car_verify.simulate(model, state, profile="strict")))
    assert (
        json.dumps(model.to_dict(), sort_keys=True),
        json.dumps(state, sort_keys=True),
    ) == before


@given(proposals(), states)
def test_walks_match_the_reference_reading(doc: dict[str, Any], state: dict[str, Any]) -> None:
    for mode in ("verify", "simulate"):
        expected_state, expected_blocked = oracle.walk(doc["actions"], state, mode)
        if mode == "simulate":
            sim = car_verify.simulate(doc, initial_state=state, profile="strict")
            assert json_equal(dict(sim), expected_state)
            ids = [a["id"] for a in doc["actions"]]
            assert sorted(sim.blocked) == sorted(ids[i] for i in expected_blocked)
        else:
            result = car_verify.verify(doc, initial_state=state, profile="strict")
            assert json_equal(result.simulated_state, expected_state)


@given(proposals(), states)
def test_simulate_end_state_applies_exactly_the_unblocked_effects(
    doc: dict[str, Any], state: dict[str, Any]
) -> None:
    model = car_verify.load(doc)
    sim = car_verify.simulate(model, initial_state=state, profile="strict")
    replay = dict(state)
    by_level: dict[int, list[int]] = {}
    for t in sim.trace:
        by_level.setdefault(t.level, []).append(t.index)
    for level in sorted(by_level):
        for i in sorted(by_level[level]):
            if not sim.trace[[t.index for t in sim.trace].index(i)].blocked:
                replay.update(model.actions[i].effects())
    assert dict(sim) == replay


@given(proposals())
def test_load_to_dict_round_trips(doc: dict[str, Any]) -> None:
    proposal = car_verify.load(doc)
    again = car_verify.load(proposal.to_dict())
    assert again == proposal
    assert again.to_dict() == proposal.to_dict()
    assert car_verify.load(json.dumps(proposal.to_dict())).to_dict() == proposal.to_dict()


@given(json_values, json_values)
def test_canonical_agrees_with_json_equal(a: Any, b: Any) -> None:
    assert (canonical(a) == canonical(b)) == json_equal(a, b)
    assert canonical(a) == canonical(json.loads(json.dumps(a)))


@given(st.dictionaries(st.sampled_from("abcd"), json_values, max_size=4), st.randoms())
def test_json_equal_objects_share_a_fingerprint(a: dict[str, Any], rnd: Any) -> None:
    """Key order and integral floats never split a loops-pass bucket."""
    keys = list(a)
    rnd.shuffle(keys)
    b = {k: float(a[k]) if type(a[k]) is int and abs(a[k]) < 2**53 else a[k] for k in keys}
    assert json_equal(a, b)
    assert fingerprint(a) == fingerprint(b)


@given(json_values)
def test_messages_render_values_as_json(a: Any) -> None:
    text = json.dumps(a, sort_keys=True)
    assert format_value(a) == (text if len(text) <= 80 else text[:77] + "...")


@given(json_values)
def test_json_equal_is_reflexive_and_type_strict(a: Any) -> None:
    assert json_equal(a, a)
    if isinstance(a, bool):
        assert not json_equal(a, int(a))


@given(proposals(cycles=False), states)
def test_acyclic_proposals_level_every_action(doc: dict[str, Any], state: dict[str, Any]) -> None:
    result = car_verify.verify(doc, initial_state=state, profile="strict")
    levelled = [i for level in result.execution_levels for i in level]
    assert sorted(levelled) == sorted(a["id"] for a in doc["actions"])
    assert "dependency-cycle" not in result.codes()


@pytest.mark.parametrize("seed", range(3))
def test_issue_order_is_deterministic(seed: int) -> None:
    doc = {
        "actions": [
            {
                "id": f"a{i}",
                "type": "tool_call",
                "tool": "t",
                "expected_effects": {"k": i},
                "preconditions": [{"key": "q"}],
            }
            for i in range(4 + seed)
        ]
    }
    first = car_verify.verify(doc, profile="strict").to_json()
    assert all(car_verify.verify(doc, profile="strict").to_json() == first for _ in range(3))


@given(proposals(), st.data())
def test_the_generated_decoder_decodes_as_the_plain_loop(
    doc: dict[str, Any], data: st.DataObject
) -> None:
    """The generated decoders (the speed tricks of loading: straight-line code, and
    decode_owned, which takes the document apart as it reads it) and decode_plain (a
    loop over the field specs) give the same proposal, or the same error at the same
    path, however its actions are broken; decode and decode_plain leave the document
    whole."""
    doc.update(id="p", timestamp="t")  # not generated: the same in both models
    for action in doc["actions"]:
        action.setdefault("id", "x")
        if data.draw(st.booleans()):
            field = data.draw(st.sampled_from([*action, "tool", "max_retries", "x-ext"]))
            action[field] = data.draw(json_values)
        if data.draw(st.booleans()):
            action.pop(data.draw(st.sampled_from(sorted(action))), None)
            action.setdefault("id", "x")
    if doc["actions"] and data.draw(st.booleans()):
        doc["actions"][data.draw(st.integers(0, len(doc["actions"]) - 1))] = data.draw(json_values)
    if data.draw(st.integers(0, 9)) == 0:
        doc["actions"] = data.draw(json_values)
    text = json.dumps(doc)
    generated = _outcome(lambda d: decode(ActionProposal, d), doc)
    assert _outcome(lambda d: decode_plain(ActionProposal, d), doc) == generated
    assert json.dumps(doc) == text
    # decode_owned takes apart a document nobody else holds (one just parsed), and
    # makes the same model or the same error
    assert _outcome(lambda d: decode_owned(ActionProposal, d), json.loads(text)) == generated


@given(
    st.dictionaries(
        st.sampled_from(["key", "operator", "value", "description", "x-ext"]),
        st.one_of(st.sampled_from(["k", "eq", "exists", ""]), json_values),
    )
)
def test_the_generated_decoder_decodes_preconditions_as_the_plain_loop(
    obj: dict[str, Any],
) -> None:
    assert _outcome(lambda d: decode(Precondition, d), obj) == _outcome(
        lambda d: decode_plain(Precondition, d), obj
    )


def _outcome(decode: Any, obj: Any) -> Any:
    """What a decoder makes of ``obj``: the object's wire form, or its error and path."""
    try:
        decoded = decode(obj).to_dict()
    except Bad as bad:
        return (bad.problem, bad.path)
    if "id" not in obj:
        decoded.pop("id", None)  # an action's id is generated, different each time
    return decoded


@given(
    st.integers(1, 40).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=80),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=60),
            st.integers(1, 5),
        )
    )
)
def test_forward_reachability_equals_a_search_of_the_edges(
    case: tuple[int, list[tuple[int, int]], list[tuple[int, int]], int],
) -> None:
    """The car profile's batched sweep (any batch size) answers as a plain search."""
    from car_verify.semantics.dag import forward_reachable

    n, edges, pairs, batch = case
    preds: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        if a < b:
            preds[b].append(a)

    def search(a: int, b: int) -> bool:
        stack, seen = [b], set()
        while stack:
            node = stack.pop()
            for p in preds[node]:
                if p == a:
                    return True
                if p not in seen:
                    seen.add(p)
                    stack.append(p)
        return False

    expected = {(a, b) for a, b in pairs if search(a, b)}
    assert forward_reachable(preds, pairs, batch=batch) == expected


_NAMES = st.sampled_from(["a", "b", "c"])
_TYPE_NAMES = st.sampled_from(["string", "number", "integer", "boolean", "object", "array", "null"])


def _subset_schemas() -> st.SearchStrategy[Any]:
    """Schemas of car_verify.base._accept's subset, and some just outside it."""
    leaf = st.fixed_dictionaries(
        {},
        optional={
            "type": st.one_of(_TYPE_NAMES, st.lists(_TYPE_NAMES, min_size=1, max_size=3)),
            "enum": st.lists(st.sampled_from(["x", "y", ""]), min_size=1, max_size=3),
            "minLength": st.integers(0, 3),
            "maxLength": st.integers(0, 3),
            "minimum": st.integers(-2, 2),
            "exclusiveMaximum": st.floats(-2, 2, allow_nan=False),
            "description": st.just("d"),
            "pattern": st.just("^x"),  # outside the subset: jsonschema decides
        },
    )
    return st.recursive(
        leaf,
        lambda inner: st.fixed_dictionaries(
            {"type": st.just("object")},
            optional={
                "properties": st.dictionaries(_NAMES, inner, max_size=3),
                "required": st.lists(_NAMES, unique=True, max_size=3),
                "additionalProperties": st.one_of(st.booleans(), inner),
                "items": inner,
                "maxItems": st.integers(0, 3),
                "minProperties": st.integers(0, 2),
            },
        ),
        max_leaves=6,
    )


@given(_subset_schemas(), st.dictionaries(_NAMES, json_values, max_size=4))
def test_the_schema_fast_yes_never_accepts_what_jsonschema_rejects(
    schema: dict[str, Any], value: dict[str, Any]
) -> None:
    """The fast yes of parameter checking (car_verify.base._accept) is sound against the
    plain check, jsonschema: a yes means no violation; and where the schema is in its
    subset (no `pattern`) it says yes exactly when jsonschema finds nothing."""
    from jsonschema import Draft202012Validator

    from car_verify.base._accept import accepter

    accept = accepter(schema)
    valid = Draft202012Validator(schema).is_valid(value)
    if accept is not None and accept(value):
        assert valid
    if "pattern" not in json.dumps(schema):
        assert accept is not None
        assert accept(value) == valid
