"""The upstream runtime as a black-box oracle: ``car_runtime`` 0.52.1, its documented
functions only (JSON strings in and out), and the projection of its answers that the
``car`` profile promises to match (docs/semantics.md §9).

Tests import :data:`car_runtime` through :func:`runtime`, which skips them when the
package is not installed (``.ci/run`` installs it).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

import pytest
from hypothesis import strategies as st


def runtime() -> Any:
    return pytest.importorskip("car_runtime", reason="car-runtime==0.52.1 is not installed")


def car_verify(
    rt: Any,
    proposal: dict[str, Any],
    state: dict[str, Any] | None = None,
    tools: list[dict[str, Any]] | None = None,
    max_actions: int | None = None,
) -> dict[str, Any]:
    return json.loads(  # type: ignore[no-any-return]
        rt.verify(
            json.dumps(proposal),
            None if state is None else json.dumps(state),
            None,
            max_actions,
            None if tools is None else json.dumps(tools),
        )
    )


def verify_projection(result: dict[str, Any]) -> dict[str, Any]:
    """What the car profile must agree on: everything but messages, order and info findings."""
    issues = Counter(
        (i["action_id"], i["severity"], i["tier"])
        for i in result["issues"]
        if i["severity"] != "info"
    )
    return {
        "valid": result["valid"],
        "issues": sorted(issues.items()),
        "simulated_state": result["simulated_state"],
        "execution_levels": result["execution_levels"],
        "conflicts": sorted(map(tuple, result["conflicts"])),
        "checks": [(c["name"], c["ran"], c["findings"]) for c in result["evidence"]["checks"]],
    }


def tx_projection(report: dict[str, Any]) -> dict[str, Any]:
    return {
        "consistent": report["consistent"],
        "conflicts": sorted(
            (c["kind"], c["key"], tuple(c["actions"])) for c in report["conflicts"]
        ),
    }


# -- generated proposals ------------------------------------------------------------

KEYS = ["k", "j", "m"]
TOOLS = ["t", "u", "v"]
OPERATORS = ["eq", "neq", "gt", "lt", "gte", "lte", "exists", "not_exists", "contains", "foo"]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 3),
    st.sampled_from([1.0, 2.5, -0.0]),
    st.sampled_from(["", "a", "ab", "k"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(["a", "k"]), inner, max_size=2)
    ),
    max_leaves=3,
)
keys = st.sampled_from(KEYS)


@st.composite
def preconditions(draw: st.DrawFn) -> dict[str, Any]:
    pre: dict[str, Any] = {"key": draw(keys), "operator": draw(st.sampled_from(OPERATORS))}
    if draw(st.booleans()):
        pre["value"] = draw(values)
    return pre


@st.composite
def actions(draw: st.DrawFn, index: int, ids: list[str]) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(
            ["tool_call"] * 8
            + ["state_write"] * 2
            + ["state_read"] * 2
            + ["assertion"] * 2
            + ["shell"]
        )
    )
    action: dict[str, Any] = {"id": ids[index], "type": kind}
    if kind == "tool_call" and draw(st.integers(0, 9)) > 0:
        action["tool"] = draw(st.sampled_from([*TOOLS, "zz"]))
    if kind == "tool_call" and draw(st.booleans()):
        action["parameters"] = draw(
            st.dictionaries(st.sampled_from(["n", "s", "x"]), scalars, max_size=2)
        )
    if kind == "state_write":
        params: dict[str, Any] = {}
        if draw(st.integers(0, 5)) > 0:
            params["key"] = draw(keys)
        if draw(st.booleans()):
            params["value"] = draw(values)
        action["parameters"] = params
    if kind == "state_read":
        action["parameters"] = (
            {"key": draw(keys)}
            if draw(st.booleans())
            else {"keys": draw(st.lists(keys, max_size=2))}
        )
    if draw(st.booleans()):
        action["preconditions"] = draw(st.lists(preconditions(), max_size=2))
    if kind != "state_read" and draw(st.booleans()):
        action["expected_effects"] = draw(st.dictionaries(keys, values, max_size=2))
    if draw(st.booleans()):
        action["state_dependencies"] = draw(st.lists(keys, max_size=2))
    if draw(st.integers(0, 4)) == 0:
        action["read_set"] = draw(st.lists(keys, max_size=2))
    if draw(st.integers(0, 4)) == 0:
        action["write_set"] = draw(st.lists(keys, max_size=2))
    if draw(st.integers(0, 4)) == 0:
        action["assumptions"] = [
            {"key": draw(keys), "expected_value": draw(scalars)}
            if draw(st.booleans())
            else {"key": draw(keys), "read_version": draw(st.integers(0, 2))}
        ]
    if draw(st.integers(0, 4)) == 0:
        action["failure_behavior"] = draw(st.sampled_from(["skip", "retry", "abort"]))
    if draw(st.integers(0, 3)) == 0:
        action["reversibility"] = draw(st.sampled_from(["compensable", "reversible"]))
        if draw(st.booleans()):
            action["compensation"] = draw(
                st.one_of(
                    st.builds(
                        lambda t: {"type": "tool", "tool": t}, st.sampled_from([*TOOLS, "undo"])
                    ),
                    st.builds(
                        lambda a: {"type": "action_ref", "action_id": a},
                        st.sampled_from([*ids, "nobody"]),
                    ),
                )
            )
    if draw(st.integers(0, 5)) == 0:
        action["dependencies"] = draw(st.lists(st.sampled_from([*ids, "nobody"]), max_size=2))
    return action


@st.composite
def proposals(draw: st.DrawFn, max_actions: int = 6, min_actions: int = 0) -> dict[str, Any]:
    n = draw(st.integers(min_actions, max_actions))
    ids = [f"a{i}" for i in range(n)]
    if n >= 2 and draw(st.integers(0, 9)) == 0:
        ids[draw(st.integers(1, n - 1))] = ids[0]  # a duplicate id
    return {"actions": [draw(actions(i, ids)) for i in range(n)]}


states = st.none() | st.dictionaries(keys, values, max_size=3)
tool_registries = st.none() | st.just(
    [
        {
            "name": "t",
            "parameters": {
                "type": "object",
                "properties": {"n": {"type": "integer"}, "s": {"type": ["string", "null"]}},
                "required": ["n"],
            },
        },
        {"name": "u", "parameters": {"type": "object", "properties": {"x": {"type": "boolean"}}}},
        {"name": "undo"},
    ]
)


def loops_nondeterministic(proposal: dict[str, Any]) -> bool:
    """Whether CAR's loop rule may answer differently from run to run here: two or
    more identical calls whose parameters have two or more keys (docs/compat.md C18)."""
    seen: Counter[str] = Counter()
    for action in proposal["actions"]:
        params = action.get("parameters", {})
        if action.get("type") == "tool_call" and "tool" in action and len(params) >= 2:
            seen[json.dumps([action["tool"], params], sort_keys=True)] += 1
    return any(n >= 2 for n in seen.values())


def without_loops(projection: dict[str, Any]) -> dict[str, Any]:
    """A verify projection without what CAR's loop rule decides."""
    out = dict(projection)
    out["issues"] = [i for i in out["issues"] if i[0][0] != "proposal" or i[0][2] != "heuristic"]
    out["checks"] = [c for c in out["checks"] if c[0] != "loop_detection"]
    out["valid"] = None  # an error from the loop rule decides it
    return out


def verify_both(
    proposal: dict[str, Any],
    state: dict[str, Any] | None = None,
    tools: list[dict[str, Any]] | None = None,
    max_actions: int | None = None,
) -> tuple[Any, Any, bool]:
    """car-verify under ``car`` and the runtime on one proposal: each side's
    projection (``"rejected"`` when it refuses the proposal), and whether CAR's
    nondeterministic loop rule was left out of both."""
    import car_verify as cv
    from car_verify.base.errors import InputError

    rt = runtime()
    try:
        theirs: Any = verify_projection(car_verify(rt, proposal, state, tools, max_actions))
    except ValueError:
        theirs = "rejected"
    try:
        result = cv.verify(proposal, initial_state=state, tools=tools, max_actions=max_actions)
        ours: Any = verify_projection(result.to_dict())
    except InputError:
        ours = "rejected"
    stripped = (
        isinstance(ours, dict) and isinstance(theirs, dict) and loops_nondeterministic(proposal)
    )
    if stripped:
        ours, theirs = without_loops(ours), without_loops(theirs)
    return ours, theirs, stripped


def assert_projection_matches(
    proposal: dict[str, Any],
    state: dict[str, Any] | None = None,
    tools: list[dict[str, Any]] | None = None,
    max_actions: int | None = None,
) -> None:
    """car-verify under ``car`` and the runtime agree on this proposal (or both reject it)."""
    ours, theirs, _ = verify_both(proposal, state, tools, max_actions)
    assert ours == theirs


# -- simulate_monte_carlo, statistically ---------------------------------------------

#: How far a sampled number may lie from the exact one: this many standard errors.
SIGMAS = 5.0


def _within(estimate: float, p: float, trials: int) -> bool:
    """A sampled frequency within :data:`SIGMAS` binomial standard errors of ``p``."""
    return abs(estimate - p) <= SIGMAS * math.sqrt(max(p * (1 - p), 1e-12) / trials) + 1e-9


def _counts_agree(
    name: str, sampled: dict[str, Any], exact: dict[str, Any], trials: int
) -> list[str]:
    """A sampled count summary (``{mean, min, p50, p95, max}``) against the exact one:
    the mean within SIGMAS standard errors (a count between ``min`` and ``max`` has
    a standard deviation of at most half their distance), every sampled value inside
    the exact support, and an extreme exact where a sample cannot miss it: where the
    exact median is the minimum, P(min) >= 1/2 (a sample of ``trials`` misses it with
    probability 2^-trials); where the exact p95 is the maximum, P(max) > 1/20."""
    out = []
    low, high = exact["min"], exact["max"]
    spread = SIGMAS * (high - low) / 2 / math.sqrt(trials) + 1e-9
    if abs(sampled["mean"] - exact["mean"]) > spread:
        out.append(f"{name}.mean {sampled['mean']} vs exact {exact['mean']} (+-{spread:.3g})")
    for part in ("min", "p50", "p95", "max"):
        if not low <= sampled[part] <= high:
            out.append(f"{name}.{part} {sampled[part]} outside the exact [{low}, {high}]")
    if exact["p50"] == low and sampled["min"] != low:
        out.append(f"{name}.min {sampled['min']} vs exact {low}")
    if exact["p95"] == high and sampled["max"] != high:
        out.append(f"{name}.max {sampled['max']} vs exact {high}")
    return out


def monte_carlo_differences(theirs: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """Where the runtime's sampled ``simulate_monte_carlo`` answer (``theirs``, over
    its ``trials``) disagrees with car-verify's exact one (``ours``) beyond sampling
    error: the same fields, the same seed and actions; each probability within
    SIGMAS binomial standard errors; the counts as :func:`_counts_agree` says; each
    end-state key's chance to be present (a key the sample never saw, 0)."""
    trials = theirs["trials"]
    out = []
    if sorted(theirs) != sorted(ours):
        return [f"fields {sorted(theirs)} vs {sorted(ours)}"]
    if theirs["seed"] != ours["seed"] or trials != ours["trials"]:
        out.append("seed or trials")
    rows = zip(theirs["action_outcomes"], ours["action_outcomes"], strict=True)
    for n, (row, mine) in enumerate(rows):
        if row["action_id"] != mine["action_id"]:
            out.append(f"action_outcomes[{n}].action_id")
        for name in ("p_rejected", "p_failed", "p_effects_landed"):
            if not _within(row[name], mine[name], trials):
                out.append(f"action_outcomes[{n}].{name} {row[name]} vs exact {mine[name]}")
    for name in ("p_all_effects_landed", "p_goal_reached"):
        if (theirs[name] is None) != (ours[name] is None) or (
            ours[name] is not None and not _within(theirs[name], ours[name], trials)
        ):
            out.append(f"{name} {theirs[name]} vs exact {ours[name]}")
    if theirs["goal_underivable_conditions"] != ours["goal_underivable_conditions"]:
        out.append("goal_underivable_conditions")
    for name in ("tool_calls", "actions_executed"):
        out.extend(_counts_agree(name, theirs[name], ours[name], trials))
    present = {json.dumps(r["key"]): r["p_present"] for r in ours["state_distribution"]}
    seen = {json.dumps(r["key"]): r["p_present"] for r in theirs["state_distribution"]}
    for key in sorted(set(present) | set(seen)):
        p = present.get(key, 0.0)
        if not _within(seen.get(key, 0.0), p, trials):
            out.append(f"state_distribution {key}: p_present {seen.get(key)} vs exact {p}")
    return out


@st.composite
def monte_carlo_cases(draw: st.DrawFn, trials: int = 2000) -> tuple[Any, ...]:
    """``simulate_monte_carlo``'s arguments as JSON texts (or None): generated
    proposals whose tool calls sometimes name the tool ``""`` (a name to the
    runtime, dispatched like any other), states, per-tool rates (``""`` among
    them), a goal, and a configuration with ``retry_attempts`` and a default rate."""
    proposal = draw(proposals(max_actions=5))
    for action in proposal["actions"]:
        if action["type"] == "tool_call" and draw(st.integers(0, 5)) == 0:
            action["tool"] = ""
    state = draw(states)
    rates = draw(
        st.none()
        | st.dictionaries(
            st.sampled_from([*TOOLS, "zz", ""]), st.sampled_from([0.0, 0.2, 0.5, 0.9, 1.0, 1.5])
        )
    )
    goal = draw(
        st.none()
        | st.builds(lambda k, v: {"kind": "state_predicate", "key": k, "equals": v}, keys, scalars)
    )
    config: dict[str, Any] = {"trials": trials}
    if draw(st.booleans()):
        config["retry_attempts"] = draw(st.integers(0, 3))
    if draw(st.booleans()):
        config["default_success_rate"] = draw(st.sampled_from([0.0, 0.3, 0.5, 0.9, 1.0]))
    texts = [None if v is None else json.dumps(v) for v in (proposal, state, rates, goal)]
    return (*texts, json.dumps(config))
