"""``risk`` (issue 26): exact where the runtime samples, seeded where it samples too.

Exact answers against hand-computed ones and against brute-force enumeration of
every outcome of every tool call (Hypothesis); sampled answers within their
interval of the exact ones; seeded runs identical; and the runtime's own Monte
Carlo estimate within its binomial interval of car-verify's exact value.
"""

from __future__ import annotations

import importlib
import itertools
import json
import math
from typing import Any

import pytest
from car_oracle import monte_carlo_cases, monte_carlo_differences
from car_oracle import proposals as car_proposals
from car_oracle import states as car_states
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from strategies import proposals as strict_proposals

import car_verify
from car_verify.base.errors import InputError, UsageError
from car_verify.cli import main
from car_verify.ir.model import load
from car_verify.plan.risk import DEFAULT_SEED, effective_rate, risk
from car_verify.semantics.car import car_effects, car_evaluate, car_order

RUNS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=120)


def chain(n: int, tool: str = "t") -> dict[str, Any]:
    return {
        "actions": [
            {
                "id": f"a{i}",
                "type": "tool_call",
                "tool": tool,
                "expected_effects": {f"k{i}": True},
                "state_dependencies": [f"k{i - 1}"] if i else [],
            }
            for i in range(n)
        ]
    }


def goal_key(key: str, value: Any = True) -> dict[str, Any]:
    return {"kind": "state_predicate", "key": key, "equals": value}


# --- hand-computed ----------


def test_a_chain_of_ten_at_one_half_is_two_to_the_minus_ten() -> None:
    """The issue's example: CAR reports 0.003 from 1,000 samples; it is 0.00098."""
    result = risk(chain(10), goal=goal_key("k9"))
    assert result.method == "exact" and result.tier.value == "decision_procedure"
    assert result.p_goal_reached == 2**-10 and result.p_all_effects_landed == 2**-10
    first = result.action_outcomes[0]
    assert first == {
        "action_id": "a0",
        "p_rejected": 0.0,
        "p_failed": 0.5,
        "p_effects_landed": 0.5,
        "mean_blast_radius": 9.0,  # a0's failure rejects the nine after it
    }
    assert result.tool_calls["min"] == 1 and result.tool_calls["max"] == 10
    assert result.tool_calls["mean"] == pytest.approx(sum(2**-i for i in range(10)))


def test_a_diamond_and_a_gate_with_a_precondition() -> None:
    diamond = {
        "actions": [
            {"id": "top", "type": "tool_call", "tool": "t", "expected_effects": {"a": 1}},
            {"id": "l", "type": "tool_call", "tool": "l", "expected_effects": {"b": 1},
             "state_dependencies": ["a"]},
            {"id": "r", "type": "tool_call", "tool": "r", "expected_effects": {"c": 1},
             "state_dependencies": ["a"]},
            {"id": "end", "type": "tool_call", "tool": "e", "expected_effects": {"d": 1},
             "state_dependencies": ["b", "c"]},
        ]
    }  # fmt: skip
    rates = {"t": 0.9, "l": 0.8, "r": 0.7, "e": 0.6}
    result = risk(diamond, tool_success_rates=rates, goal=goal_key("d", 1))
    assert result.p_goal_reached == pytest.approx(0.9 * 0.8 * 0.7 * 0.6)
    gate = {
        "actions": [
            {"id": "test", "type": "tool_call", "tool": "test", "expected_effects": {"ok": True}},
            {"id": "deploy", "type": "tool_call", "tool": "deploy",
             "preconditions": [{"key": "ok", "value": True}], "expected_effects": {"up": True}},
        ]
    }  # fmt: skip
    gated = risk(gate, tool_success_rates={"test": 0.75, "deploy": 1.0}, goal=goal_key("up"))
    assert gated.p_goal_reached == pytest.approx(0.75)
    deploy = gated.action_outcomes[1]
    assert deploy["p_rejected"] == pytest.approx(0.25) and deploy["p_failed"] == 0.0


def test_rates_are_clamped_retried_and_their_provenance_said() -> None:
    assert effective_rate(0.5, 1) == 0.75 and effective_rate(7, 0) == 1.0
    assert effective_rate(-1, 3) == 0.0
    result = risk(chain(2), tool_success_rates={"t": 0.5}, config={"retry_attempts": 1})
    assert result.action_outcomes[0]["p_effects_landed"] == 0.75
    assert result.rate_provenance == {"t": {"rate": 0.75, "source": "caller"}}
    other = risk(chain(1, "x"), config={"default_success_rate": 0.9})
    assert other.rate_provenance == {"x": {"rate": 0.9, "source": "default"}}


def test_goals_that_a_simulation_cannot_decide_fail_closed_and_are_named() -> None:
    goal = {
        "kind": "any_of",
        "conditions": [goal_key("k0"), {"kind": "command", "id": "c1", "expect_exit": 0}],
    }
    result = risk(chain(1), goal=goal)
    assert result.p_goal_reached == 0.5 and result.goal_underivable_conditions == ["command:c1"]
    judged = {"kind": "all_of", "conditions": [goal_key("k0"), {"kind": "model_judge", "id": "j"}]}
    closed = risk(chain(1), goal=judged)
    assert closed.p_goal_reached == 0.0 and closed.goal_underivable_conditions == ["model_judge:j"]
    assert risk(chain(1)).p_goal_reached is None
    with pytest.raises(InputError, match=r"goal\.key: expected a string"):
        risk(chain(1), goal={"kind": "state_predicate", "key": 3, "equals": 1})


def test_bad_configuration_is_an_input_error_naming_the_field() -> None:
    with pytest.raises(InputError, match=r"config\.trials: expected an integer >= 1"):
        risk(chain(1), config={"trials": 0})
    with pytest.raises(InputError, match=r"config\.trails: unknown key"):
        risk(chain(1), config={"trails": 10})
    with pytest.raises(InputError, match=r"tool_success_rates\.t: expected a number"):
        risk(chain(1), tool_success_rates={"t": "high"})
    with pytest.raises(UsageError, match="unknown profile"):
        risk(chain(1), profile="lenient")


# --- exact against brute force ----------


def brute_force(
    proposal: dict[str, Any],
    state: dict[str, Any] | None,
    rates: dict[str, float],
    default: float,
    behaviour: bool = False,
    retries: int = 0,
) -> dict[str, Any]:
    """Every success or failure of every tool call, walked as the module's docstring
    says (with ``behaviour``: abort and retry stop the run at a failure or a
    rejection, retry after ``max_retries`` more rounds of attempts); and the
    distribution of the attempts made (``calls``), each dispatched call's attempts
    convolved in: ``retries + 1`` of them (times ``max_retries + 1`` for a modelled
    retry), each succeeding with the tool's rate, a success at the k-th after k - 1
    failures, a failure after all of them."""
    model = load(proposal)
    order = [i for level in car_order(model).levels for i in level]
    tools = [i for i in order if model.actions[i].type == "tool_call"]
    rejected = [0.0] * len(model.actions)
    failed = [0.0] * len(model.actions)
    landed = [0.0] * len(model.actions)
    all_landed = 0.0
    present: dict[str, float] = {}
    calls: dict[int, float] = {}
    base: dict[int, float] = {}
    attempts: dict[int, int] = {}
    for i in tools:
        action = model.actions[i]
        base[i] = min(1.0, max(0.0, rates.get(action.tool or "", default)))
        attempts[i] = retries + 1
        if behaviour and action.failure_behavior.value == "retry":
            attempts[i] *= action.max_retries + 1
    for outcome in itertools.product([True, False], repeat=len(tools)):
        ok = dict(zip(tools, outcome, strict=True))
        weight = 1.0
        for i, success in ok.items():  # a failure's chance as a product, not 1 - rate
            fail = (1 - base[i]) ** attempts[i]
            weight *= 1 - fail if success else fail
        if weight == 0:
            continue
        made = {0: weight}  # the attempts made so far -> probability, with this outcome
        current = dict(state or {})
        every = True
        stopped = False
        for i in order:
            action = model.actions[i]
            stops = behaviour and action.failure_behavior.value in ("abort", "retry")
            if stopped:
                rejected[i] += weight
                every = False
                continue
            blocked = (
                (action.type == "tool_call" and action.tool is None)
                or any(
                    car_evaluate(p.key, p.operator, p.value, current) is not None
                    for p in action.preconditions
                )
                or any(k not in current for k in action.state_dependencies)
            )
            if blocked:
                rejected[i] += weight
                every = False
                stopped = stops
            elif action.type == "tool_call" and not ok[i]:
                failed[i] += weight
                every = False
                stopped = stops
                made = {c + attempts[i]: w for c, w in made.items()}
            else:
                current.update(car_effects(action))
                landed[i] += weight
                if action.type == "tool_call":  # its attempts, given that it succeeded
                    p, n = base[i], attempts[i]
                    whole = 1 - (1 - p) ** n
                    given = {k: p * (1 - p) ** (k - 1) / whole for k in range(1, n + 1)}
                    convolved: dict[int, float] = {}
                    for c, w in made.items():
                        for k, q in given.items():
                            convolved[c + k] = convolved.get(c + k, 0.0) + w * q
                    made = convolved
        all_landed += weight if every else 0.0
        for key in current:
            present[key] = present.get(key, 0.0) + weight
        for c, w in made.items():
            calls[c] = calls.get(c, 0.0) + w
    return {
        "rejected": rejected,
        "failed": failed,
        "landed": landed,
        "all": all_landed,
        "present": present,
        "calls": calls,
    }


def assert_counts(shown: dict[str, Any], dist: dict[int, float]) -> None:
    """A count summary ``{mean, min, p50, p95, max}`` is ``dist``'s: its mean, its
    support's ends (every count of a chance above 0, however small: a call that
    fails after 16 attempts at 0.9 is possible), and its nearest-rank quantiles
    (the least count whose cumulative probability reaches q, as the runtime ranks
    its samples); where a cumulative probability lies within 1e-9 of q, either
    count beside it."""
    support = sorted(c for c, w in dist.items() if w > 0)
    assert shown["mean"] == pytest.approx(sum(c * dist[c] for c in support), abs=1e-9)
    assert (shown["min"], shown["max"]) == (support[0], support[-1])
    for name, q in (("p50", 0.5), ("p95", 0.95)):
        cumulative = list(itertools.accumulate(dist[c] for c in support))
        first = next(c for c, acc in zip(support, cumulative, strict=True) if acc >= q - 1e-9)
        last = next(c for c, acc in zip(support, cumulative, strict=True) if acc >= q + 1e-9)
        assert first <= shown[name] <= last, (name, shown, dist)


def with_empty_tools(proposal: dict[str, Any]) -> dict[str, Any]:
    """The plan with its second tool call (if any) naming the tool ``""``: a name, to
    the runtime (its calls are dispatched), unlike a call with no ``tool``."""
    calls = [a for a in proposal["actions"] if a["type"] == "tool_call"]
    if len(calls) >= 2:
        calls[1]["tool"] = ""
    return proposal


known_types = car_proposals(max_actions=5).filter(
    lambda p: all(a["type"] != "shell" for a in p["actions"])
)
#: Any generated plan, ``dependencies`` and cycles included (the strict walk's input).
proposals_any = strict_proposals(max_actions=5)
rate_maps = st.dictionaries(
    st.sampled_from(["t", "u", "v", "zz", ""]), st.sampled_from([0.0, 0.25, 0.5, 0.9, 1.0])
)


#: A tool call with no ``tool`` (rejected, never dispatched) beside two named ``""``
#: (dispatched at the rate given for ``""``); the last a ``retry`` of 16 attempts
#: at 0.9, so that both failing (20 attempts) has a chance near 1e-18.
NAMELESS_AND_EMPTY = {
    "actions": [
        {"id": "a0", "type": "tool_call", "failure_behavior": "skip"},
        {"id": "a1", "type": "tool_call", "tool": "", "failure_behavior": "skip"},
        {"id": "a2", "type": "tool_call", "tool": "", "failure_behavior": "retry"},
    ]
}
#: A ``retry`` of 24 attempts at 0.9: its failure (1e-24) is rarer than 2**-53.
RARE_FAILURE = {
    "actions": [
        {"id": "a0", "type": "tool_call", "tool": "t", "expected_effects": {"k": 1},
         "failure_behavior": "retry", "max_retries": 5},
        {"id": "a1", "type": "tool_call", "tool": "u", "state_dependencies": ["k"]},
    ]
}  # fmt: skip
#: A call with no tool first, under ``abort``: its rejection stops the run, so
#: the call named ``""`` after it makes no attempt (with ``failure_behavior``).
NAMELESS_STOPS = {
    "actions": [
        {"id": "a0", "type": "tool_call"},
        {"id": "a1", "type": "tool_call", "tool": "", "expected_effects": {"k": 1}},
    ]
}


@RUNS
@given(
    known_types.map(with_empty_tools),
    car_states,
    rate_maps,
    st.sampled_from([0.5, 0.3, 1.0, 0.0]),
    st.booleans(),
    st.integers(0, 3),
)
@example(NAMELESS_AND_EMPTY, None, {"t": 0.0, "u": 0.0, "": 0.9}, 0.5, True, 3)
@example(NAMELESS_AND_EMPTY, None, {"": 0.9}, 0.5, False, 3)
@example(RARE_FAILURE, None, {"t": 0.9}, 0.5, True, 3)
@example(NAMELESS_STOPS, None, {"": 0.5}, 0.5, True, 2)
@example(NAMELESS_STOPS, None, {"": 0.5}, 0.5, False, 2)
def test_the_exact_method_agrees_with_enumerating_every_outcome(
    proposal: dict[str, Any],
    state: dict[str, Any] | None,
    rates: dict[str, float],
    default: float,
    behaviour: bool,
    retries: int,
) -> None:
    config = {"default_success_rate": default, "retry_attempts": retries}
    result = risk(proposal, state, rates, config=config, method="exact", failure_behavior=behaviour)
    expected = brute_force(proposal, state, rates, default, behaviour, retries)
    assert_counts(result.tool_calls, expected["calls"])
    for i, row in enumerate(result.action_outcomes):
        assert row["p_rejected"] == pytest.approx(expected["rejected"][i], abs=1e-9)
        assert row["p_failed"] == pytest.approx(expected["failed"][i], abs=1e-9)
        assert row["p_effects_landed"] == pytest.approx(expected["landed"][i], abs=1e-9)
        total = row["p_rejected"] + row["p_failed"] + row["p_effects_landed"]
        assert total == pytest.approx(1.0)
    assert result.p_all_effects_landed == pytest.approx(expected["all"], abs=1e-9)
    shown = {row["key"]: row["p_present"] for row in result.state_distribution}
    assert shown == pytest.approx({k: v for k, v in expected["present"].items() if v > 0})


NEVER = {"key": "car-verify:failed", "operator": "exists"}


def brute_force_strict(
    proposal: dict[str, Any], state: dict[str, Any] | None, rates: dict[str, float], default: float
) -> dict[str, Any]:
    """Every outcome of every tool call under the strict walk, each walked by the
    strict ``simulate`` itself: a call that fails is one whose turn cannot pass (an
    impossible precondition), which is what a failure is to the strict walk (its
    effects do not land, and what waits for it is rejected)."""
    model = load(proposal)
    n = len(model.actions)
    calls = [i for i, a in enumerate(model.actions) if a.type == "tool_call"]
    rejected, failed, landed = [0.0] * n, [0.0] * n, [0.0] * n
    all_landed = 0.0
    for outcome in itertools.product([True, False], repeat=len(calls)):
        weight = 1.0
        doc = json.loads(json.dumps(proposal))
        for i, ok in zip(calls, outcome, strict=True):
            action = model.actions[i]
            rate = min(1.0, max(0.0, rates.get(action.tool or "", default)))
            weight *= rate if ok else 1 - rate
            if not ok:
                doc["actions"][i]["preconditions"] = [
                    *doc["actions"][i].get("preconditions", []),
                    NEVER,
                ]
        if weight == 0:
            continue
        sim = car_verify.simulate(doc, state, profile="strict")
        traced = {t.index: t for t in sim.trace}
        every = True
        for i in range(n):
            trace = traced.get(i)
            if trace is None or trace.blocked:
                own = (
                    []
                    if trace is None
                    else [
                        c
                        for c in trace.causes
                        if not (c.precondition is not None and c.precondition.key == NEVER["key"])
                    ]
                )
                no_tool = model.actions[i].type == "tool_call" and model.actions[i].tool is None
                if trace is None or own or no_tool:
                    rejected[i] += weight
                else:
                    failed[i] += weight
                every = False
            else:
                landed[i] += weight
        all_landed += weight if every else 0.0
    return {"rejected": rejected, "failed": failed, "landed": landed, "all": all_landed}


@RUNS
@given(proposals_any, car_states, rate_maps, st.sampled_from([0.5, 0.3, 1.0]))
def test_the_exact_method_under_strict_agrees_with_the_strict_walk(
    proposal: dict[str, Any],
    state: dict[str, Any] | None,
    rates: dict[str, float],
    default: float,
) -> None:
    """Under ``strict`` a level sees the state it began with and a failed
    dependency rejects what waits for it, exactly as the strict ``simulate``."""
    config = {"default_success_rate": default}
    result = risk(proposal, state, rates, config=config, method="exact", profile="strict")
    expected = brute_force_strict(proposal, state, rates, default)
    for i, row in enumerate(result.action_outcomes):
        assert row["p_rejected"] == pytest.approx(expected["rejected"][i], abs=1e-9), i
        assert row["p_failed"] == pytest.approx(expected["failed"][i], abs=1e-9), i
        assert row["p_effects_landed"] == pytest.approx(expected["landed"][i], abs=1e-9), i
    assert result.p_all_effects_landed == pytest.approx(expected["all"], abs=1e-9)
    sampled = risk(proposal, state, rates, config={**config, "trials": 400}, profile="strict")
    assert (
        sampled.to_json()
        == risk(
            proposal, state, rates, config={**config, "trials": 400}, profile="strict"
        ).to_json()
    )


@RUNS
@given(known_types.map(with_empty_tools), car_states, st.integers(0, 3))
def test_sampled_answers_lie_within_their_interval_of_the_exact_ones(
    proposal: dict[str, Any], state: dict[str, Any] | None, retries: int
) -> None:
    config = {"trials": 2000, "retry_attempts": retries}
    exact = risk(proposal, state, method="exact", config=config)
    sampled = risk(proposal, state, method="sampled", config=config)
    assert sampled.tier.value == "sampled"
    first = risk(proposal, state, method="sampled", config=config)
    assert first.to_json() == sampled.to_json()  # seeded: the same bytes
    for name in ("tool_calls", "actions_executed"):  # the counts, retries' attempts too
        mine, row = getattr(sampled, name), getattr(exact, name)
        spread = 5 * (row["max"] - row["min"]) / 2 / math.sqrt(2000) + 1e-9
        assert abs(mine["mean"] - row["mean"]) <= spread, (name, mine, row)
        assert row["min"] <= mine["min"] <= mine["max"] <= row["max"], (name, mine, row)
    pairs = zip(sampled.action_outcomes, exact.action_outcomes, strict=True)
    for i, (mine, row) in enumerate(pairs):
        for name in ("p_rejected", "p_failed", "p_effects_landed"):
            p, n = row[name], 2000
            spread = 5 * math.sqrt(max(p * (1 - p), 1e-12) / n) + 1e-9
            assert abs(mine[name] - p) <= spread, (name, mine, row)
            low, high = sampled.intervals[f"action_outcomes[{i}].{name}"]
            assert low <= mine[name] <= high


def test_past_its_budget_the_exact_method_says_so_and_auto_samples() -> None:
    independent = {
        "actions": [
            {"id": f"a{i}", "type": "tool_call", "tool": "t", "expected_effects": {f"k{i}": i}}
            for i in range(12)
        ]
    }
    # every key is read by the last action, so no state merges: 2**11 states
    independent["actions"].append(
        {"id": "end", "type": "tool_call", "tool": "t",
         "state_dependencies": [f"k{i}" for i in range(12)]}
    )  # fmt: skip
    with pytest.raises(UsageError, match=r"outgrew its budget of 100 states .* visited"):
        risk(independent, method="exact", budget=100)
    auto = risk(independent, budget=100)
    assert auto.method == "sampled" and "outgrew its budget" in (auto.reason or "")
    assert risk(independent).method == "exact"


def test_the_exact_method_merges_what_the_future_does_not_read() -> None:
    """Twenty independent tool calls, each writing its own key that nothing reads:
    2**20 outcomes, a handful of states (the issue's 40-action, 20-call case)."""
    actions = []
    for i in range(20):
        actions.append(
            {"id": f"t{i}", "type": "tool_call", "tool": f"tool{i % 4}",
             "expected_effects": {f"k{i}": i}}
        )  # fmt: skip
        actions.append(
            {"id": f"w{i}", "type": "state_write", "parameters": {"key": f"log{i}", "value": i}}
        )
    result = risk({"actions": actions}, budget=10_000, method="exact")
    assert result.p_all_effects_landed == pytest.approx(0.5**20)
    assert result.tool_calls["p50"] == 20


# --- against the runtime ----------


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=60)
@given(monte_carlo_cases())
def test_the_runtimes_estimate_lies_within_its_interval_of_the_exact_value(
    case: tuple[str | None, ...],
) -> None:
    """The runtime's Monte Carlo estimate against ``risk``'s exact answer, every
    number of it within sampling error (``car_oracle.monte_carlo_differences``):
    retries (each attempt a call in ``tool_calls``), tools named ``""``, goals and
    default rates included."""
    rt = pytest.importorskip("car_runtime")
    try:
        theirs = json.loads(rt.simulate_monte_carlo(*case))
    except ValueError:
        return  # refused: the drop-in's refusals are tests/test_runtime_module.py's
    proposal, state, rates, goal, config = (None if t is None else json.loads(t) for t in case)
    ours = risk(proposal, state, rates, goal, config, method="exact").to_dict()
    assert theirs["seed"] == DEFAULT_SEED
    assert monte_carlo_differences(theirs, {k: ours[k] for k in theirs}) == []


# --- the goal check: the runtime's, through the profile's semantics ----------

#: Numbers where equalities part: an int and the float of its value, integers past
#: f64's exact range and past 64 bits (a float to serde_json), signed zeros.
EDGE_NUMBERS = [
    *(0, 1, -1, 0.0, -0.0, 1.0, -1.0, 1.5, 1e20, -(2**63)),
    *(2**53, 2**53 + 1, float(2**53), 2**63, 2**63 + 1, float(2**63)),
    *(2**64, 2**64 + 1, float(2**64)),
]
goal_scalars = (
    st.sampled_from(EDGE_NUMBERS)
    | st.integers(-(2**66), 2**66)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.booleans()
    | st.none()
    | st.sampled_from(["", "1", "1.0", "true", "a"])
)
goal_values = st.recursive(
    goal_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("ab"), inner),
    max_leaves=5,
)


def _retyped(value: Any, flips: list[bool]) -> Any:
    """``value`` with some of its numbers retyped (an int as a float, an integral float
    as an int), ``flips`` saying which, in document order: a twin that one equality
    calls equal and another does not."""
    if isinstance(value, list):
        return [_retyped(v, flips) for v in value]
    if isinstance(value, dict):
        return {k: _retyped(v, flips) for k, v in value.items()}
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not flips:
        return value
    if not flips.pop():
        return value
    if isinstance(value, int):
        return float(value) if abs(value) < 2**1000 else value
    return int(value) if value.is_integer() else value


@st.composite
def goal_pairs(draw: st.DrawFn) -> tuple[Any, Any]:
    """A state value and a goal's ``equals``: unrelated, the same, or a retyped twin."""
    actual = draw(goal_values)
    how = draw(st.sampled_from(["other", "same", "twin", "twin"]))
    if how == "other":
        return actual, draw(goal_values)
    if how == "same":
        return actual, actual
    return actual, _retyped(actual, draw(st.lists(st.booleans(), min_size=1, max_size=8)))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(goal_pairs(), st.booleans())
def test_the_goal_check_is_the_runtimes_in_evaluate_goal_and_risk(
    pair: tuple[Any, Any], written: bool
) -> None:
    """The runtime's evaluate_goal and simulate_monte_carlo judge a state_predicate
    alike: two numbers by their f64 value at the top (``1`` meets ``1.0``), anything
    else as serde_json compares (``[1]`` does not meet ``[1.0]``). Under car,
    car-verify's evaluate_goal and risk give the same verdicts (one evaluator,
    ``Semantics.goal_equal``); risk's, whether the value was in the initial state
    or written by the plan."""
    from car_verify.plan.claims import evaluate_goal

    rt = pytest.importorskip("car_runtime")
    actual, expected = pair
    goal = goal_key("x", expected)
    request = {"condition": goal, "inputs": {"state": {"x": actual}}}
    theirs = json.loads(rt.evaluate_goal(json.dumps(request)))
    assert evaluate_goal(request).met == theirs["met"], (actual, expected)
    if written:
        plan = {"actions": [{"id": "w", "type": "state_write",
                             "parameters": {"key": "x", "value": actual}}]}  # fmt: skip
        state = None
    else:
        plan, state = {"actions": []}, {"x": actual}
    sampled = json.loads(
        rt.simulate_monte_carlo(
            json.dumps(plan),
            None if state is None else json.dumps(state),
            None,
            json.dumps(goal),
            json.dumps({"trials": 10}),
        )
    )
    assert sampled["p_goal_reached"] == (1.0 if theirs["met"] else 0.0)  # the runtime's two agree
    assert risk(plan, state, goal=goal).p_goal_reached == sampled["p_goal_reached"]


def test_a_goal_compares_values_as_the_profile_does() -> None:
    """Under car the runtime's goal check; under strict docs/semantics.md §2's
    equality (numbers by value at any depth). Plans writing ``1`` and ``1.0`` are
    not equivalent under car, yet both meet ``equals: 1.0``: the runtime's answers."""
    from car_verify.plan.claims import evaluate_goal

    def met(actual: Any, expected: Any, profile: str) -> tuple[bool, float | None]:
        request = {"condition": goal_key("x", expected), "inputs": {"state": {"x": actual}}}
        writes = {"actions": [{"id": "w", "type": "state_write",
                               "parameters": {"key": "x", "value": actual}}]}  # fmt: skip
        p = risk(writes, goal=goal_key("x", expected), profile=profile).p_goal_reached
        return evaluate_goal(request, profile=profile).met, p

    assert met(1, 1.0, "car") == met(1, 1.0, "strict") == (True, 1.0)
    assert met([1], [1.0], "car") == (False, 0.0)
    assert met([1], [1.0], "strict") == (True, 1.0)
    assert met(2**53 + 1, float(2**53), "car") == (True, 1.0)  # f64 values
    assert met(2**53 + 1, float(2**53), "strict") == (False, 0.0)  # exact values
    assert met(True, 1, "car") == met(True, 1, "strict") == (False, 0.0)
    one, other = (
        {"actions": [{"id": "w", "type": "state_write", "parameters": {"key": "x", "value": v}}]}
        for v in (1, 1.0)
    )
    assert not car_verify.equivalent(one, other, profile="car").equivalent


# --- the command line ----------


def test_the_risk_command(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "p.json"
    plan.write_text(json.dumps(chain(3)))
    goal = tmp_path / "goal.json"
    goal.write_text(json.dumps(goal_key("k2")))
    rates = tmp_path / "rates.json"
    rates.write_text(json.dumps({"t": 0.5}))
    assert main(["risk", str(plan), "--goal", str(goal), "--rates", str(rates)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("p(goal reached) = 0.125 (exact)")
    assert "a0: lands 0.5, fails 0.5, rejected 0" in out
    args = ["risk", str(plan), "--method", "sampled", "--trials", "500", "--format", "json"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["trials"] == 500 and doc["tier"] == "sampled" and doc["intervals"]
    assert main(["risk", str(plan), "--trials", "0"]) == 2
    assert "--trials" in capsys.readouterr().err
    goal.write_text(json.dumps({"kind": "all_of"}))  # an error names the file it is in
    assert main(["risk", str(plan), "--goal", str(goal)]) == 2
    assert capsys.readouterr().err == (
        f"car-verify: error: {goal}: conditions: expected an array of conditions\n"
    )


def test_rates_from_history_are_laplace_smoothed_and_the_caller_wins(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from car_verify.executor import execute_sync
    from car_verify.plan.risk import rates_from_history

    doc = {
        "actions": [
            # skip: a failure does not stop the level (steady runs every time)
            {"id": "a", "type": "tool_call", "tool": "flaky", "failure_behavior": "skip"},
            {"id": "b", "type": "tool_call", "tool": "steady"},
        ]
    }
    calls = {"n": 0}

    def flaky(params: dict[str, Any]) -> int:
        calls["n"] += 1
        if calls["n"] % 2:
            raise RuntimeError("down")
        return 1

    log = tmp_path / "logs" / "events.jsonl"
    log.parent.mkdir()
    for _ in range(4):  # flaky: 2 of 4 succeed; steady: 4 of 4
        execute_sync(doc, {"flaky": flaky, "steady": lambda p: 1}, event_log=log)
    history = rates_from_history([tmp_path / "logs"])
    assert history.dispatched == {"flaky": 4, "steady": 4}
    assert history.succeeded == {"flaky": 2, "steady": 4}
    result = risk(doc, tool_success_rates={"steady": 0.9}, history=history)
    assert result.rate_provenance == {
        "flaky": {"rate": 0.5, "source": "history", "dispatched": 4, "succeeded": 2},
        "steady": {"rate": 0.9, "source": "caller"},
    }
    plan = tmp_path / "p.json"
    plan.write_text(json.dumps(doc))
    assert main(["risk", str(plan), "--history", str(log), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    steady = out["rate_provenance"]["steady"]
    assert steady["rate"] == pytest.approx(5 / 6) and steady["source"] == "history"
    assert (steady["dispatched"], steady["succeeded"]) == (4, 4)
    assert main(["risk", str(plan), "--history", str(tmp_path / "nowhere")]) == 2


def test_critical_actions_and_exact_sensitivity() -> None:
    """Beyond CAR: the calls whose failure alone loses the goal, and how much the
    goal's probability moves per unit of each tool's rate (exact derivatives)."""
    doc = {
        "actions": [
            {"id": "build", "type": "tool_call", "tool": "build", "expected_effects": {"img": 1}},
            {"id": "notify", "type": "tool_call", "tool": "chat", "expected_effects": {"said": 1}},
            {"id": "deploy", "type": "tool_call", "tool": "deploy",
             "state_dependencies": ["img"], "expected_effects": {"up": True}},
        ]
    }  # fmt: skip
    rates = {"build": 0.9, "deploy": 0.8, "chat": 0.5}
    result = risk(doc, tool_success_rates=rates, goal=goal_key("up"), sensitivity=True)
    assert result.critical_actions == ["build", "deploy"]  # notify's failure loses nothing
    assert result.p_goal_reached == pytest.approx(0.72)
    assert result.sensitivity == pytest.approx({"build": 0.8, "chat": 0.0, "deploy": 0.9})
    # the derivative agrees with a finite difference of the exact answer
    bumped = risk(doc, tool_success_rates={**rates, "build": 0.9 + 1e-6}, goal=goal_key("up"))
    slope = (bumped.p_goal_reached - result.p_goal_reached) / 1e-6  # type: ignore[operator]
    assert slope == pytest.approx(0.8, rel=1e-4)
    assert risk(doc, tool_success_rates=rates).critical_actions is None  # no goal
    again = {"id": "again", "type": "tool_call", "tool": "deploy",
             "state_dependencies": ["up"], "expected_effects": {"sure": True}}  # fmt: skip
    twice = {"actions": [*doc["actions"], again]}
    shared = risk(twice, tool_success_rates=rates, goal=goal_key("sure"), sensitivity=True)
    # p = 0.9 * r * r: d/dr = 2 * 0.9 * r
    assert shared.sensitivity is not None
    assert shared.sensitivity["deploy"] == pytest.approx(2 * 0.9 * 0.8)


def test_failure_behavior_modelled_beyond_car() -> None:
    """CAR does not model failure_behavior; with ``failure_behavior=True`` abort
    (the default) stops the run, retry draws again up to max_retries, skip goes on."""
    doc = {
        "actions": [
            {"id": "a", "type": "tool_call", "tool": "t", "failure_behavior": "abort"},
            {"id": "b", "type": "tool_call", "tool": "t", "failure_behavior": "skip"},
        ]
    }
    car = risk(doc)
    assert car.action_outcomes[1]["p_rejected"] == 0.0  # CAR: b runs whatever a does
    modelled = risk(doc, failure_behavior=True)
    assert modelled.action_outcomes[1]["p_rejected"] == 0.5  # a's failure stops the run
    doc["actions"][0].update(failure_behavior="retry", max_retries=2)
    retried = risk(doc, failure_behavior=True)
    assert retried.action_outcomes[0]["p_effects_landed"] == pytest.approx(1 - 0.5**3)
    assert retried.action_outcomes[1]["p_rejected"] == pytest.approx(0.5**3)
    doc["actions"][0]["failure_behavior"] = "skip"
    assert risk(doc, failure_behavior=True).action_outcomes[1]["p_rejected"] == 0.0


def test_under_strict_a_stop_leaves_the_rest_of_its_level_dispatched() -> None:
    """Under strict a level is dispatched at once (as the executor runs it): a
    failing call that aborts stops the levels after it, not its own level."""
    doc = {
        "actions": [
            {"id": "a", "type": "tool_call", "tool": "t", "failure_behavior": "abort"},
            {"id": "b", "type": "tool_call", "tool": "sure", "expected_effects": {"y": 1}},
            {"id": "c", "type": "tool_call", "tool": "sure", "dependencies": ["b"]},
        ]
    }
    rates = {"t": 0.0, "sure": 1.0}
    for method in ("exact", "sampled"):
        strict = risk(doc, tool_success_rates=rates, failure_behavior=True, profile="strict",
                      method=method)  # fmt: skip
        rows = {r["action_id"]: r for r in strict.action_outcomes}
        assert rows["b"]["p_effects_landed"] == 1.0, method
        assert rows["c"]["p_rejected"] == 1.0, method
        car = risk(doc, tool_success_rates=rates, failure_behavior=True, profile="car",
                   method=method)  # fmt: skip
        assert {r["action_id"]: r for r in car.action_outcomes}["b"]["p_rejected"] == 1.0


def test_rates_from_proposal_results_need_the_proposal_they_ran(tmp_path: Any) -> None:
    from car_verify.plan.risk import rates_from_history

    plan = {
        "id": "p1",
        "source": "t",
        "actions": [
            {"id": "a", "type": "tool_call", "tool": "flaky"},
            {"id": "b", "type": "tool_call", "tool": "steady"},
            {"id": "w", "type": "state_write", "expected_effects": {"k": 1}},
        ],
    }

    def result(proposal_id: str, a: str, b: str) -> dict[str, Any]:
        rows = [{"action_id": "a", "status": a}, {"action_id": "b", "status": b}]
        rows.append({"action_id": "w", "status": "succeeded"})
        return {"proposal_id": proposal_id, "results": rows}

    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "proposal.json").write_text(json.dumps(plan))
    outcomes = [("failed", "succeeded"), ("succeeded", "succeeded"), ("failed", "rejected")]
    for n, (a, b) in enumerate(outcomes):
        (runs / f"result-{n}.json").write_text(json.dumps(result("p1", a, b)))
    (runs / "orphan.json").write_text(json.dumps(result("p2", "succeeded", "succeeded")))
    (runs / "notes.json").write_text("[1, 2]")
    history = rates_from_history([runs])
    # rejected calls never reached the tool; the orphan's proposal is unknown
    assert history.dispatched == {"flaky": 3, "steady": 2}
    assert history.succeeded == {"flaky": 1, "steady": 2}
    assert history.rate("flaky") == pytest.approx(2 / 5)
    assert any("orphan.json" in n and "'p2'" in n for n in history.notes)
    assert any("notes.json" in n and "skipped" in n for n in history.notes)
    (runs / "bad.json").write_text(json.dumps({"proposal_id": "p1", "results": [3]}))
    with pytest.raises(InputError, match=r"bad\.json: results\[0\]"):
        rates_from_history([runs])


@RUNS
@given(
    st.one_of(
        known_types.map(with_empty_tools),
        proposals_any.filter(lambda p: all(a["type"] != "shell" for a in p["actions"])),
    ),
    car_states,
    rate_maps,
    st.booleans(),
    st.sampled_from([0, 16]),
    st.sampled_from(["car", "strict"]),
    st.integers(0, 3),
)
def test_the_memoised_sampler_counts_what_the_plain_one_does(
    proposal: dict[str, Any],
    state: dict[str, Any] | None,
    rates: dict[str, float],
    behaviour: bool,
    full_trie: int,
    profile: str,
    retries: int,
) -> None:
    """The trie of trials (grown whole, or a branch per trial), risk's compiled walk,
    against the one walk (``car_verify.semantics.walk``) run from the start for every
    trial with a seeded draw per call as its outcome source: the same trials, the
    same counts, the same bytes, under either profile."""
    from car_verify.semantics import semantics_of

    module = importlib.import_module("car_verify.plan.risk")

    model = load(proposal)
    sem = semantics_of(profile)
    goal = module._Goal(None, sem)
    rates = {t: 0.5 for t in rates} | rates
    plan = module._compile(model, rates, goal, behaviour, semantics=sem, retries=retries)
    config = module.RiskConfig.of({"trials": 300, "seed": 7, "retry_attempts": retries})
    start = dict(state or {})
    asked = {"trials": 300, "retry_attempts": retries}
    plain = module._trials_plain(plan, start, goal, config, None)
    old = module._FULL_TRIE
    module._FULL_TRIE = full_trie  # type: ignore[misc]
    try:
        memo = module._trials_memo(plan, start, goal, config, None)
        fast = risk(proposal, state, rates, config=asked, method="sampled", profile=profile)
    finally:
        module._FULL_TRIE = old  # type: ignore[misc]
    assert memo == plain
    assert sum(plain.values()) == 300
    tallies = [module._sampled(plan, dict(start), goal, config, memo=m) for m in (True, False)]
    assert vars_of(tallies[0]) == vars_of(tallies[1])
    again = risk(proposal, state, rates, config=asked, method="sampled", profile=profile)
    assert fast.to_json() == again.to_json()


def vars_of(tally: Any) -> dict[str, Any]:
    return {
        name: getattr(tally, name)
        for name in (
            "rejected",
            "failed",
            "landed",
            "goal",
            "all_landed",
            "tool_calls",
            "executed",
            "blast",
        )
    } | {"values": {k: dict(v) for k, v in tally.values.items()}}


def test_a_rate_that_is_no_probability_and_an_assumed_rate_are_said() -> None:
    doc = {
        "actions": [
            {"id": "b", "type": "tool_call", "tool": "build"},
            {"id": "d", "type": "tool_call", "tool": "deploy"},
        ]
    }
    result = risk(doc, tool_success_rates={"build": 1.5}, method="exact")
    assert result.action_outcomes[0]["p_effects_landed"] == 1.0  # clamped, as the runtime does
    assert result.rate_provenance["build"]["clamped_from"] == 1.5
    text = result.explain()
    assert "clamped to [0, 1]: build 1.5 -> 1 (caller)" in text
    assert "no rate given for deploy: assumed the default success rate 0.5" in text
    quiet = risk(doc, tool_success_rates={"build": 0.9, "deploy": 0.8}, method="exact")
    assert quiet.notes == [] and "note:" not in quiet.explain()


@RUNS
@given(proposals_any, car_states, st.sampled_from(["car", "strict"]), st.integers(0, 63))
def test_risks_compiled_rejection_rule_is_the_walks(
    proposal: dict[str, Any], state: dict[str, Any] | None, profile: str, notok: int
) -> None:
    """risk compiles each step's rejection rule once (the enumeration asks it for every
    outcome); the walk's ``blockers`` is the plain rule. On any state and any set of
    actions that did not succeed, a step is rejected exactly when the walk names a
    cause, or it is a tool call that names no tool (never dispatched)."""
    from car_verify.plan.risk import _blocked, _compile, _Goal
    from car_verify.semantics import semantics_of
    from car_verify.semantics.walk import blockers

    sem = semantics_of(profile)
    model = load(proposal)
    plan = _compile(model, {}, _Goal(None, sem), False, semantics=sem)
    current = dict(state or {})
    for step in plan.steps:
        plain = blockers(
            plan.order, step.index, current, lambda t: bool(notok >> t & 1), semantics=sem
        )
        nameless = (
            model.actions[step.index].type == "tool_call" and model.actions[step.index].tool is None
        )  # a tool named "" is a name: dispatched
        assert _blocked(plan, step, current, notok) == (bool(plain) or nameless), step.action_id
