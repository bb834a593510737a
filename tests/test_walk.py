"""The simulate trace: each action's level, whether it runs or what blocks it, and who
supplied each value it relied on (issue 2, item 6)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import car_verify
from tests.strategies import proposals

# One action for each way to run or be blocked, and a cycle that is not walked.
PLAN: dict[str, Any] = {
    "actions": [
        {"id": "a", "type": "tool_call", "tool": "t", "expected_effects": {"x": 1}},
        {
            "id": "b",
            "type": "tool_call",
            "tool": "t",
            "preconditions": [{"key": "x", "value": 1}],
            "state_dependencies": ["x"],
        },
        {
            "id": "c",
            "type": "tool_call",
            "tool": "t",
            "dependencies": ["b"],
            "preconditions": [{"key": "env", "value": "prod"}],
            "parameters": {"input": "$a.output.path"},
        },
        {
            "id": "d",
            "type": "tool_call",
            "tool": "t",
            "state_dependencies": ["missing"],
            "expected_effects": {"y": 1},
        },
        {
            "id": "e",
            "type": "assertion",
            "parameters": {"key": "x", "value": 2},
            "preconditions": [{"key": "env", "operator": "exists"}],
        },
        {"id": "f", "type": "tool_call", "tool": "t", "dependencies": ["d"]},
        {
            "id": "u",
            "type": "tool_call",
            "tool": "t",
            "preconditions": [{"key": "env", "operator": "EQ", "value": "prod"}],
        },
        {"id": "g", "type": "tool_call", "tool": "t", "dependencies": ["h"]},
        {"id": "h", "type": "tool_call", "tool": "t", "dependencies": ["g"]},
    ]
}


def test_the_trace_says_who_supplied_each_value_and_what_blocks_each_action() -> None:
    sim = car_verify.simulate(PLAN, initial_state={"env": "prod"}, profile="strict")
    assert sim.trace_dicts() == [
        {
            "action_id": "a",
            "level": 0,
            "runs": True,
            "blocked_by": [],
            "supplied_by": {},
            "after": [],
        },
        {
            "action_id": "b",
            "level": 1,
            "runs": True,
            "blocked_by": [],
            "supplied_by": {"x": "a"},
            "after": [],
        },
        {
            "action_id": "c",
            "level": 2,
            "runs": True,
            "blocked_by": [],
            "supplied_by": {"env": None},  # None: the initial state
            "after": ["b", "a"],  # the explicit dependency, then the output reference
        },
        {
            "action_id": "d",
            "level": 0,
            "runs": False,
            "blocked_by": ["state key 'missing' is absent"],
            "supplied_by": {},
            "after": [],
        },
        {
            "action_id": "e",
            "level": 0,
            "runs": False,
            # level 0 sees the initial state: a's write lands after the level
            "blocked_by": ["assertion is false: x eq 2 (x is absent)"],
            "supplied_by": {"env": None},
            "after": [],
        },
        {
            "action_id": "f",
            "level": 1,
            "runs": False,
            "blocked_by": ["depends on 'd', which is blocked"],
            "supplied_by": {},
            "after": [],
        },
        {
            "action_id": "u",
            "level": 0,
            "runs": False,
            "blocked_by": ["precondition env EQ \"prod\": unknown operator 'EQ'"],
            "supplied_by": {},
            "after": [],
        },
    ]
    assert sim.unwalked == ["g", "h"]
    assert sim.blocked == ["d", "e", "f", "u"]
    assert sim.state == {"env": "prod", "x": 1}  # d is blocked: its y is not applied


def test_explain_prints_one_line_per_action_level_by_level() -> None:
    sim = car_verify.simulate(PLAN, initial_state={"env": "prod"}, profile="strict")
    assert sim.explain().splitlines() == [
        "level 0  a: runs",
        "level 0  d: blocked: state key 'missing' is absent",
        "level 0  e: blocked: assertion is false: x eq 2 (x is absent)",
        "level 0  u: blocked: precondition env EQ \"prod\": unknown operator 'EQ'",
        "level 1  b: runs (x from a)",
        "level 1  f: blocked: depends on 'd', which is blocked",
        "level 2  c: runs (env from the initial state; after b, a)",
        "no level  g: not walked (on or after a dependency cycle)",
        "no level  h: not walked (on or after a dependency cycle)",
    ]


def test_a_value_overwritten_later_is_credited_to_the_last_writer_before_the_level() -> None:
    plan = {
        "actions": [
            {"id": "w1", "type": "state_write", "parameters": {"key": "k", "value": 1}},
            {
                "id": "w2",
                "type": "state_write",
                "parameters": {"key": "k", "value": 2},
                "dependencies": ["w1"],
            },
            {
                "id": "r",
                "type": "state_read",
                "parameters": {"key": "k"},
                "preconditions": [{"key": "k", "operator": "gte", "value": 2}],
            },
        ]
    }
    sim = car_verify.simulate(plan, initial_state={"k": 0}, profile="strict")
    reader = sim.trace[2]
    assert (reader.action_id, reader.level, reader.supplied) == ("r", 2, {"k": "w2"})
    # The initial state supplied a key no action wrote before the reader's level.
    early = car_verify.simulate(
        {"actions": [{"id": "r", "type": "state_read", "parameters": {"key": "k"}}]},
        initial_state={"k": 0},
        profile="strict",
    )
    assert early.trace[0].supplied == {"k": None}


def test_verify_reports_each_blocking_reason_once_and_applies_blocked_effects() -> None:
    result = car_verify.verify(PLAN, initial_state={"env": "prod"}, profile="strict")
    assert [(i.action_id, i.code) for i in result.issues] == [
        ("d", "missing-dependency"),
        ("d", "repeated-call"),  # a, b and d call t with the same (empty) parameters
        ("e", "assertion-fails"),
        ("u", "unknown-operator"),  # and not also precondition-unsatisfied
        ("g", "dependency-cycle"),
    ]
    # "depends on a blocked action" is a simulate cause, never a verify finding
    assert not [i for i in result.issues if i.action_id == "f"]
    assert result.simulated_state == {"env": "prod", "x": 1, "y": 1}


def test_messages_say_a_presence_test_without_a_value_and_agree_in_number() -> None:
    plan = {
        "actions": [
            {"id": "w1", "type": "tool_call", "tool": "t", "write_set": ["k"]},
            {
                "id": "r",
                "type": "tool_call",
                "tool": "u",
                "state_dependencies": ["k"],
                "preconditions": [
                    {"key": "token", "operator": "exists"},
                    {"key": "lock", "operator": "not_exists"},
                ],
            },
            {"id": "w2", "type": "tool_call", "tool": "v", "write_set": ["j"]},
            {"id": "w3", "type": "tool_call", "tool": "v", "write_set": ["j"], "parameters": {}},
            {"id": "s", "type": "tool_call", "tool": "x", "state_dependencies": ["j"]},
        ]
    }
    messages = [
        i.message
        for i in car_verify.verify(plan, initial_state={"lock": 1}, profile="strict").issues
    ]
    assert "depends on state key 'k': w1 names it in write_set but no declared effect sets it" in (
        messages
    )
    assert "precondition token exists is false: 'token' is absent and no action writes it" in (
        messages
    )
    assert "precondition lock not_exists is false: 'lock' is 1 and no action writes it" in (
        messages
    )
    assert (
        "depends on state key 'j': w2, w3 name it in write_set but no declared effect sets it"
        in (messages)
    )
    sim = car_verify.simulate(plan, initial_state={"lock": 1}, profile="strict")
    assert sim.trace[1].to_dict()["blocked_by"][:2] == [
        "precondition token exists is false (token is absent)",
        "precondition lock not_exists is false (lock is 1)",
    ]


# --- outcome sources: the same walk with calls that fail, stop the run, or are refused


def _walk(doc: dict[str, Any], profile: str, **kw: Any) -> Any:
    from car_verify.ir.model import load
    from car_verify.semantics import semantics_of
    from car_verify.semantics.walk import walk

    sem = semantics_of(profile)
    model = load(doc)
    return walk(sem.order(model), {}, mode="simulate", semantics=sem, **kw)


CHAIN: dict[str, Any] = {
    "actions": [
        {"id": "a", "type": "tool_call", "tool": "t", "expected_effects": {"x": 1}},
        {"id": "b", "type": "tool_call", "tool": "t", "dependencies": ["a"],
         "expected_effects": {"y": 1}},
        {"id": "c", "type": "tool_call", "tool": "t", "state_dependencies": ["y"],
         "expected_effects": {"z": 1}},
    ]
}  # fmt: skip


def test_a_failed_call_lands_nothing_and_its_waiters_say_it_failed() -> None:
    import pytest

    from car_verify.semantics.walk import describe

    plain = _walk(CHAIN, "strict")
    every = _walk(CHAIN, "strict", dispatch=lambda i: True)
    assert plain.state == every.state == {"x": 1, "y": 1, "z": 1} and every.failed == []
    failed = _walk(CHAIN, "strict", dispatch=lambda i: i != 0)
    assert failed.failed == [0] and failed.state == {}
    assert not failed.traces[0].blocked  # it ran, and failed
    assert [describe(c) for c in failed.traces[1].causes] == ["depends on 'a', whose call failed"]
    assert [describe(c) for c in failed.traces[2].causes] == ["state key 'y' is absent"]
    # under car, `dependencies` order nothing: b runs although a failed
    assert _walk(CHAIN, "car", dispatch=lambda i: i != 0).state == {"y": 1, "z": 1}
    with pytest.raises(ValueError, match="simulate mode only"):
        car_verify.semantics.walk.walk(
            plain.dag, {}, semantics=plain.semantics, dispatch=lambda i: True
        )


def test_an_aborting_action_that_does_not_succeed_stops_the_run() -> None:
    from car_verify.semantics.walk import describe

    for profile in ("car", "strict"):
        stopped = _walk(CHAIN, profile, dispatch=lambda i: i != 0, aborts={0})
        assert stopped.state == {} and stopped.failed == [0]
        said = [describe(c) for t in stopped.traces[1:] for c in t.causes]
        assert "the run stopped when 'a' did not succeed" in said
        refused = _walk(CHAIN, profile, dispatch=lambda i: "no such tool" if i == 0 else True)
        assert [describe(c) for c in refused.traces[0].causes] == [
            "its call was refused: no such tool"
        ]
        assert refused.traces[0].blocked and refused.failed == []


def test_a_stop_takes_effect_at_the_next_turn() -> None:
    """A turn is one action under car and a whole level under strict: an aborting
    call that fails stops every later turn, but not the rest of a strict level,
    which was dispatched with it."""
    from car_verify.semantics.walk import describe

    level = {
        "actions": [
            {"id": "a", "type": "tool_call", "tool": "t", "expected_effects": {"x": 1}},
            {"id": "b", "type": "tool_call", "tool": "t", "expected_effects": {"y": 1}},
            {"id": "c", "type": "tool_call", "tool": "t", "dependencies": ["b"]},
        ]
    }  # fmt: skip
    strict = _walk(level, "strict", dispatch=lambda i: i != 0, aborts={0})
    assert [t.blocked for t in strict.traces] == [False, False, True]
    assert strict.state == {"y": 1}
    assert [describe(c) for c in strict.traces[2].causes] == [
        "the run stopped when 'a' did not succeed"
    ]
    car = _walk(level, "car", dispatch=lambda i: i != 0, aborts={0})
    assert [t.blocked for t in car.traces] == [False, True, True] and car.state == {}


def test_turns_hands_each_turn_to_its_driver_and_lands_what_it_says() -> None:
    """The coroutine under the walk: a turn per action under car, per level under
    strict, each with its members' causes and the state they see; the effects a
    driver reports land instead of the declared ones."""
    import pytest

    from car_verify.ir.model import load
    from car_verify.semantics import semantics_of
    from car_verify.semantics.walk import RAN, Outcome, turns

    doc = {
        "actions": [
            {"id": "a", "type": "tool_call", "tool": "t", "expected_effects": {"x": 1}},
            {"id": "b", "type": "tool_call", "tool": "t",
             "preconditions": [{"key": "x", "operator": "eq", "value": 1}]},
        ]
    }  # fmt: skip
    for profile, shape in (("car", [[0], [1]]), ("strict", [[0, 1]])):
        sem = semantics_of(profile)
        run = turns(sem.order(load(doc)), {}, semantics=sem)
        seen: list[list[int]] = []
        turn = next(run)
        with pytest.raises(StopIteration) as end:
            while True:
                seen.append(list(turn.members))
                said = [Outcome(True, effects={"x": 2}) if i == 0 else RAN for i in turn.members]
                turn = run.send(said)
        assert seen == shape, profile
        walked = end.value.value
        assert walked.state == {"x": 2}
        assert walked.traces[1].blocked  # it saw x = 2 (car), or the level's start (strict)
    with pytest.raises(StopIteration):  # verify mode dispatches nothing
        car = semantics_of("car")
        next(turns(car.order(load(doc)), {}, mode="verify", semantics=car))
    strict = semantics_of("strict")
    run = turns(strict.order(load(doc)), {}, semantics=strict)
    next(run)
    with pytest.raises(ValueError, match="a turn of 2 actions was answered with 1"):
        run.send([RAN])


# --- the one skeleton: the order of turns and the stop rule ---------------------------

SKELETON = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _plain_turns(levels: list[list[int]], profile: str) -> list[tuple[int, tuple[int, ...]]]:
    """The order of turns as docs/semantics.md says it: level by level; a turn per
    action under car (in proposal order), a turn per level under strict."""
    if profile == "car":
        return [(n, (i,)) for n, level in enumerate(levels) for i in level]
    return [(n, tuple(level)) for n, level in enumerate(levels)]


@SKELETON
@given(proposals(), st.sampled_from(["car", "strict"]))
def test_the_skeleton_gives_the_turns_of_the_plain_definition(
    doc: dict[str, Any], profile: str
) -> None:
    """``schedule`` gives the plain order of turns, each turn's first and last of its
    level marked; and every reader takes its turns from it: the walk's coroutine,
    ``Walk.action_states``, risk's compiled steps (a step flushes at its turn's end)."""
    from car_verify.ir.model import load
    from car_verify.plan.risk import _compile, _Goal
    from car_verify.semantics import semantics_of
    from car_verify.semantics.walk import RAN, schedule, turns, walk

    sem = semantics_of(profile)
    dag = sem.order(load(doc))
    slots = list(schedule(dag, sem))
    plain = _plain_turns([list(level) for level in dag.levels], profile)
    assert [(level, tuple(members)) for level, members, _, _ in slots] == plain
    for k, (level, _, opens, closes) in enumerate(slots):
        assert opens == (k == 0 or slots[k - 1][0] != level)
        assert closes == (k == len(slots) - 1 or slots[k + 1][0] != level)

    driven: list[tuple[int, tuple[int, ...], bool, bool]] = []
    run = turns(dag, {}, semantics=sem)
    try:
        turn = next(run)
        while True:
            driven.append((turn.level, tuple(turn.members), turn.opens, turn.closes))
            turn = run.send([RAN] * len(turn.members))
    except StopIteration:
        pass
    assert driven == [(level, tuple(members), o, c) for level, members, o, c in slots]
    walked = walk(dag, {}, mode="simulate", semantics=sem)
    assert [i for i, _ in walked.action_states()] == [i for _, turn in plain for i in turn]
    steps = _compile(load(doc), {}, _Goal(None, sem), False, semantics=sem).steps
    assert [(step.index, step.flush) for step in steps] == [
        (i, k == len(turn) - 1) for _, turn in plain for k, i in enumerate(turn)
    ]


def test_the_stop_rule_takes_effect_when_the_turn_is_over() -> None:
    from car_verify.semantics.walk import GOING, STOPPED, STOPPING, next_phase

    assert next_phase(GOING, False, False) == next_phase(GOING, False, True) == GOING
    assert next_phase(GOING, True, False) == STOPPING  # the rest of its turn still runs
    assert next_phase(GOING, True, True) == STOPPED  # it was the turn's last member
    assert next_phase(STOPPING, False, False) == STOPPING
    assert next_phase(STOPPING, False, True) == STOPPED
    assert next_phase(STOPPED, True, False) == next_phase(STOPPED, False, True) == STOPPED


@SKELETON
@given(proposals(), st.sampled_from(["car", "strict"]), st.data())
def test_a_stop_aborts_every_later_turn_and_nothing_before(
    doc: dict[str, Any], profile: str, data: st.DataObject
) -> None:
    """With calls that fail and actions whose not succeeding stops the run, an action
    carries an ``aborted`` cause exactly when its turn comes after the turn of the
    first action that stopped it (in the plain order of turns)."""
    from car_verify.ir.model import load
    from car_verify.semantics import semantics_of
    from car_verify.semantics.walk import walk

    sem = semantics_of(profile)
    dag = sem.order(load(doc))
    indices = list(range(dag.n))
    failing = set(data.draw(st.lists(st.sampled_from(indices or [0]), max_size=3)))
    aborts = set(data.draw(st.lists(st.sampled_from(indices or [0]), max_size=3)))
    walked = walk(
        dag, {}, mode="simulate", semantics=sem, dispatch=lambda i: i not in failing, aborts=aborts
    )
    plain = _plain_turns([list(level) for level in dag.levels], profile)
    first = next(
        (
            k
            for k, (_, turn) in enumerate(plain)
            for i in turn
            if i in aborts and (walked.traces[i].blocked or i in walked.failed)
        ),
        len(plain),
    )
    for k, (_, turn) in enumerate(plain):
        for i in turn:
            trace = walked.traces[i]
            aborted = any(c.kind == "aborted" for c in trace.causes)
            assert aborted == (k > first), (k, first, trace)
