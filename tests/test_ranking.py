"""``rank_proposals`` (issue 39): the runtime's scores and ranking on generated
candidates, exactly (floats included); the timestamp rule its token estimate and
its refusals read; the ranking under the strict profile; the ``rank`` command."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from car_oracle import loops_nondeterministic, proposals, runtime
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import car_verify.runtime as drop_in
from car_verify import load, verify
from car_verify.base.errors import InputError
from car_verify.cli import main
from car_verify.deciders.ranking import rank_proposals, token_estimate
from car_verify.ir.model import timestamp_readable, timestamp_utc

rt = runtime()
RUNS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    max_examples=300,
)

#: Timestamps the runtime reads (each normalised differently) and refuses.
TIMESTAMPS = [
    "2026-01-01T00:00:00Z",
    "2026-01-01T00:00:00+02:00",
    "2026-01-01T00:00:00+0200",
    "2026-01-01t00:00:00z",
    "2026-01-01 00:00:00UTC",
    " +2026-1-1T00:00:00 -05:30 ",
    "2026-01-01T00:00:00.5Z",
    "2026-01-01T00:00:00.123456789123Z",
    "2026-01-01T00:00:00.000100Z",
    "2024-02-29T23:59:60.25+01:00",
    "0000-01-01T00:00:00Z",
    "2026-02-30T00:00:00Z",
    "2026-01-01T24:00:00Z",
    "2026-01-01T00:00:00+02",
    "2026-01-01T00:00:00+24:00",
    "2026-01-01T00:00:00,5Z",
    "2026-01-01",
    "x",
]


def tc(i: int, **fields: Any) -> dict[str, Any]:
    return {"id": f"a{i}", "type": "tool_call", "tool": f"t{i}", **fields}


def plan(*actions: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "id": "p",
        "source": "m",
        "timestamp": "2026-01-01T00:00:00Z",
        "actions": list(actions),
        **fields,
    }


def answers(candidates: list[dict[str, Any]], tools: Any, weight: Any) -> tuple[Any, Any]:
    text = json.dumps(candidates)
    out = []
    for module in (rt, drop_in):
        try:
            out.append(json.loads(module.rank_proposals(text, tools, weight)))
        except ValueError as err:
            # An unknown action type is refused in the runtime's words, where it is.
            said = str(err)
            out.append(("rejected", said if said.startswith("unknown variant") else None))
    return out[0], out[1]


# Every candidate gives a timestamp: without one the runtime's clock writes it, and its
# length (so the token estimate) varies from call to call (the clock test below).
candidates = st.lists(
    st.tuples(
        # now and then over the runtime's budget of 30 actions, which its ranking ignores
        # (without unknown action types: one in 30 actions refused nearly every list);
        # and short ones, half of them without unknown types (else 3 lists in 4 were refused)
        st.one_of(
            proposals(),
            proposals(unknown=False),
            proposals(max_actions=33, min_actions=29, unknown=False),
        ),
        st.sampled_from(TIMESTAMPS),
    ).map(lambda pair: {**pair[0], "timestamp": pair[1]}),
    max_size=4,
)
tool_names = st.none() | st.lists(st.sampled_from(["t", "u", "zz", "build"]), max_size=3)
weights = st.none() | st.floats(-0.5, 1.5) | st.just(math.nan)


@RUNS
@given(candidates, tool_names, weights)
@example(
    [plan(tc(0)), plan(tc(0), tc(1)), plan(), plan(tc(0, tool="t"), tc(1, tool="t"))], None, 0.0
)
@example([plan(tc(0, expected_effects={"k": 1}), tc(1, expected_effects={"k": 2}))], ["t0"], None)
@example([plan(*[tc(i, tool="t") for i in range(12)])], None, None)  # validity floors at 0.1
@example([plan(tc(0))], None, math.nan)
# a duplicate call and two write conflicts: the runtime's validity is 0.39999999999999997
@example([plan(*[tc(i, tool="u", expected_effects={"k": None, "m": None}) for i in (0, 1)])],
         None, None)  # fmt: skip
# more than 30 actions: no budget warning in the ranking (verify gives one)
@example([plan(*[tc(i) for i in range(31)]), plan(tc(0))], None, None)
# an unknown action type: the runtime's reader refuses the candidates, at its position
@example([plan(tc(0)), plan(tc(0), {"id": "s", "type": "shell"})], None, None)
def test_the_runtimes_scores_and_ranking_exactly(cands: list[Any], tools: Any, weight: Any) -> None:
    if any(loops_nondeterministic(c) for c in cands):
        return  # the runtime's loop rule is nondeterministic (docs/compat.md)
    theirs, mine = answers(cands, tools, weight)
    assert mine == theirs


@pytest.mark.parametrize("text", TIMESTAMPS)
def test_a_timestamp_is_read_as_the_runtime_reads_it(text: str) -> None:
    try:
        theirs = json.loads(rt.optimize(json.dumps(plan(timestamp=text))))["timestamp"]
    except ValueError:
        theirs = None
    assert timestamp_utc(text) == theirs
    assert timestamp_readable(text) is (theirs is not None)  # the car profile's refusal


def test_a_timestamp_the_runtime_refuses_is_refused_under_car_and_read_under_strict() -> None:
    bad = plan(tc(0), timestamp="yesterday")
    with pytest.raises(InputError) as caught:
        verify(bad)
    assert caught.value.path == ["timestamp"] and "RFC 3339" in caught.value.problem
    with pytest.raises(ValueError, match="invalid proposal JSON"):
        drop_in.verify(json.dumps(bad))
    assert verify(bad, profile="strict").valid


def test_the_token_estimate_counts_the_runtimes_clock_when_no_timestamp_was_given() -> None:
    doc = {"id": "p", "source": "m", "actions": [tc(0)]}
    ours = rank_proposals([doc])[0].token_estimate
    # The runtime's clock drops trailing zero digits of a second (one time in a
    # thousand it writes 6 or 3): its most frequent answer is the rule's.
    answers = [
        json.loads(rt.rank_proposals(json.dumps([doc])))[0]["token_estimate"] for _ in range(5)
    ]
    assert ours == max(set(answers), key=answers.count)
    model = load(doc)
    assert token_estimate(model, timestamp_given=False) == ours
    # car-verify's clock writes 6 digits of a second, the runtime's 9.
    assert len(model.timestamp) == 27


def test_under_strict_dependencies_order_the_plan_and_cost_its_parallelism() -> None:
    # `dependencies` orders b after a under strict; CAR ignores it (one level).
    doc = plan(tc(0), tc(1, dependencies=["a0"]))
    car, strict = rank_proposals([doc])[0], rank_proposals([doc], profile="strict")[0]
    assert (car.parallelism_levels, strict.parallelism_levels) == (1, 2)
    assert math.isclose(car.cost_efficiency - strict.cost_efficiency, 0.75 * 0.2 * 0.5)


def test_a_candidate_that_does_not_load_is_named_by_its_index() -> None:
    with pytest.raises(InputError) as caught:
        rank_proposals([plan(), {"actions": [{"id": "x", "type": 3}]}])
    assert caught.value.path[:3] == [1, "actions", 0]
    with pytest.raises(ValueError, match="invalid type"):
        drop_in.rank_proposals("{}")
    with pytest.raises(TypeError):
        drop_in.rank_proposals("[]", "t0")  # type: ignore[arg-type]


def test_the_rank_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = {
        "a.json": plan(tc(0), tc(1)),
        "b.json": plan(tc(0, expected_effects={"k": 1}), tc(1, expected_effects={"k": 2})),
        "c.json": plan(tc(0, state_dependencies=["nowhere"])),
    }
    for name, doc in files.items():
        (tmp_path / name).write_text(json.dumps(doc))
    names = [str(tmp_path / n) for n in ("c.json", "b.json", "a.json")]
    assert main(["rank", *names]) == 0
    out = capsys.readouterr().out
    assert [line.split()[-1] for line in out.splitlines()[1:4]] == names[::-1]
    assert out.splitlines()[-1] == f"best: {names[2]} (profile car)"

    assert main(["rank", names[0], "--format", "json", "--profile", "strict"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["profile"] == "strict" and doc["ranked"][0]["file"] == names[0]
    theirs = json.loads(rt.rank_proposals(json.dumps([files["c.json"]])))[0]
    assert {k: doc["ranked"][0][k] for k in theirs} == theirs

    (tmp_path / "bad.json").write_text('{"actions": [{"id": "x", "type": "zz"}]}')
    assert main(["rank", names[0], str(tmp_path / "bad.json")]) == 2
    assert "bad.json: actions[0].type" in capsys.readouterr().err
