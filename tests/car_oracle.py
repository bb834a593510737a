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
    """What the car profile must agree on: everything but messages, order, info
    findings and the warning car-verify adds (``dependency-overtaken``)."""
    from car_verify.passes.car import ADDED_CODES

    issues = Counter(
        (i["action_id"], i["severity"], i["tier"])
        for i in result["issues"]
        if i["severity"] != "info" and i.get("code") not in ADDED_CODES
    )
    return {
        "valid": result["valid"],
        "issues": sorted(issues.items()),
        "simulated_state": result["simulated_state"],
        "execution_levels": result["execution_levels"],
        "conflicts": sorted(map(tuple, result["conflicts"])),
        "checks": [(c["name"], c["ran"], c["findings"]) for c in result["evidence"]["checks"]],
        "evidence": evidence_projection(result["evidence"]),
    }


def evidence_projection(evidence: dict[str, Any]) -> dict[str, Any]:
    """The evidence block but its check records (``verify_projection`` compares their
    names, flags and counts; their words are car-verify's): what was assumed, the
    untested regions in the runtime's order, the residual risks and the coverage
    score, exactly."""
    return {
        "assumptions": evidence["assumptions"],
        "untested_regions": evidence["untested_regions"],
        "residual_risks": evidence["residual_risks"],
        "confidence": evidence["confidence"],
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
#: A key, now and then the empty one (a name like any other to the runtime).
keys = st.sampled_from([*KEYS * 3, ""])


@st.composite
def preconditions(draw: st.DrawFn) -> dict[str, Any]:
    pre: dict[str, Any] = {"key": draw(keys), "operator": draw(st.sampled_from(OPERATORS))}
    if draw(st.booleans()):
        pre["value"] = draw(values)
    return pre


@st.composite
def actions(draw: st.DrawFn, index: int, ids: list[str], unknown: bool = True) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(
            ["tool_call"] * 8
            + ["state_write"] * 2
            + ["state_read"] * 2
            + ["assertion"] * 2
            + ["shell"] * unknown  # a type the runtime does not know: it refuses the plan
        )
    )
    action: dict[str, Any] = {"id": ids[index], "type": kind}
    if kind == "tool_call" and draw(st.integers(0, 9)) > 0:
        action["tool"] = draw(st.sampled_from([*TOOLS, *TOOLS, "zz", ""]))
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
        if action["failure_behavior"] == "retry" and draw(st.booleans()):
            action["max_retries"] = draw(st.integers(0, 3))
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
def proposals(
    draw: st.DrawFn, max_actions: int = 6, min_actions: int = 0, unknown: bool = True
) -> dict[str, Any]:
    """Proposals of ``min_actions`` to ``max_actions`` actions; now and then (1 in 10,
    when ``max_actions`` is the default) a long one of 10 to 24, so a plan reaches
    many warnings and many untested regions. Ids now and then repeat (the first
    id again, or any earlier one, more than once), and one may be the empty id.
    ``unknown``: an action type the runtime does not know now and then (never in a
    long plan, or few would be answered)."""
    long = max_actions == 6 and min_actions == 0 and draw(st.integers(0, 9)) == 0
    n = draw(st.integers(10, 24) if long else st.integers(min_actions, max_actions))
    ids = [f"a{i}" for i in range(n)]
    if n >= 2 and draw(st.integers(0, 9)) == 0:
        ids[draw(st.integers(1, n - 1))] = ids[0]  # a duplicate id
    for i in range(1, n):
        if draw(st.integers(0, 11)) == 0:
            ids[i] = ids[draw(st.integers(0, i - 1))]  # any earlier id, again
    if n and draw(st.integers(0, 11)) == 0:
        ids[draw(st.integers(0, n - 1))] = ""  # the empty id
    # a long plan without an action type the runtime refuses, or few would be answered
    return {"actions": [draw(actions(i, ids, unknown=unknown and not long)) for i in range(n)]}


@st.composite
def crowded_proposals(draw: st.DrawFn) -> dict[str, Any]:
    """Proposals of up to 24 actions, most of them tool calls on a few shared keys:
    many untested regions (past the runtime's bound of 12 on their deduction, with ids
    whose text order is not their document order: a2 after a10), many warnings
    (write conflicts and identical calls, past the bound of 4), and the findings of
    :func:`actions` beside them."""
    n = draw(st.integers(0, 24))
    ids = [f"a{i}" for i in range(n)]
    out = []
    for i in range(n):
        if draw(st.integers(0, 3)) == 0:
            out.append(draw(actions(i, ids)))
            continue
        action: dict[str, Any] = {"id": ids[i], "type": "tool_call"}
        if draw(st.integers(0, 9)) > 0:
            action["tool"] = draw(st.sampled_from(TOOLS))
        if draw(st.booleans()):
            action["parameters"] = {"n": draw(st.integers(0, 2))}
        if draw(st.integers(0, 2)) > 0:
            action["expected_effects"] = draw(st.dictionaries(keys, scalars, min_size=1))
        if draw(st.integers(0, 3)) == 0:
            action["state_dependencies"] = draw(st.lists(keys, max_size=2))
        out.append(action)
    return {"actions": out}


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
    # A duplicate-call warning counts in the residual risks and the score.
    out["evidence"] = {
        k: v for k, v in out["evidence"].items() if k not in ("residual_risks", "confidence")
    }
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


# -- equivalence pairs, for z3's decided share --------------------------------------

#: Values the generated plans test and write: scalars of every kind (integers and
#: floats that CAR tells apart, an integer past 2**53, floats whose text holds a
#: sign or an exponent), strings that look like JSON or a piece of a number's
#: text, and arrays and objects, nested too.
PAIR_VALUES: list[Any] = [
    None, True, False, 0, 1, 2, -1, 10, 1.0, 2.5, 2**53 + 1,
    -2.5, -0.5, 1e-7, 1e16,
    "", "a", "ab", "1", "[1]", "true", "null", "-", "-0", "e-",
    [], [1], [1, 2], ["a"], [[1]], [None], {}, {"a": 1}, {"k": "a"}, {"a": [1]},
]  # fmt: skip
#: ``contains`` is drawn as often as the other operators together, and with
#: needles of every kind: strings, numbers, arrays and objects.
PAIR_OPERATORS = [
    "eq", "neq", "gt", "lt", "gte", "lte", "exists", "not_exists", "foo",
    *["contains"] * 8,
]  # fmt: skip


def equivalence_pairs(seed: int, count: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``count`` pairs of plans from a seeded stream (the same every run): plans of
    1-5 actions over three keys (tool calls, state writes, reads and assertions,
    their predicate in the spec's form or the runtime executor's, now and then an
    action type CAR does not know, an id used twice, a ``retry`` with its
    ``max_retries``, a ``skip``), with preconditions of every operator (``contains``
    most of all, its needle a string, number, array or object), state
    dependencies and effects; the second plan the first after one edit (none, an
    action dropped, two swapped, an effect, a tested value or an operator
    changed) or another plan."""
    import random

    rng = random.Random(seed)
    keys = ["k", "j", "m"]

    def precondition() -> dict[str, Any]:
        pre: dict[str, Any] = {"key": rng.choice(keys), "operator": rng.choice(PAIR_OPERATORS)}
        if rng.random() < 0.9:
            pre["value"] = rng.choice(PAIR_VALUES)
        return pre

    def action(i: int) -> dict[str, Any]:
        kind = rng.choice(["tool_call"] * 4 + ["state_write"] * 2 + ["state_read", "assertion"])
        if rng.random() < 0.02:
            kind = "shell"  # an action type CAR does not know: the pair is refused
        out: dict[str, Any] = {"id": f"a{i}", "type": kind}
        if kind == "tool_call":
            out["tool"] = rng.choice(["t", "u"])
            if rng.random() < 0.2:
                out["failure_behavior"] = "retry"
                out["max_retries"] = rng.randint(0, 3)
            elif rng.random() < 0.1:
                out["failure_behavior"] = "skip"
        if kind == "state_write":
            out["parameters"] = {"key": rng.choice(keys), "value": rng.choice(PAIR_VALUES)}
        if kind == "state_read":
            out["parameters"] = {"key": rng.choice(keys)}
        if kind == "assertion" and rng.random() < 0.5:  # the spec's {key, operator, value}
            out["parameters"] = {**precondition(), "value": rng.choice(PAIR_VALUES)}
        elif kind == "assertion":  # the runtime executor's {key, expected}
            out["parameters"] = {"key": rng.choice(keys), "expected": rng.choice(PAIR_VALUES)}
        pres = [precondition() for _ in range(rng.choice([0, 1, 1, 2]))]
        if pres:
            out["preconditions"] = pres
        if kind != "state_read" and rng.random() < 0.5:
            out["expected_effects"] = {rng.choice(keys): rng.choice(PAIR_VALUES)}
        if rng.random() < 0.3:
            out["state_dependencies"] = [rng.choice(keys)]
        return out

    def plan() -> list[dict[str, Any]]:
        actions = [action(i) for i in range(rng.randint(1, 5))]
        if len(actions) >= 2 and rng.random() < 0.1:
            actions[-1]["id"] = actions[0]["id"]  # an id used twice
        return actions

    pairs = []
    for _ in range(count):
        a = plan()
        b = json.loads(json.dumps(a))
        edit = rng.choice(["same", "drop", "swap", "effect", "value", "operator", "other"])
        if edit == "drop" and len(b) > 1:
            b.pop(rng.randrange(len(b)))
        elif edit == "swap" and len(b) >= 2:
            i = rng.randrange(len(b) - 1)
            b[i], b[i + 1] = b[i + 1], b[i]
        elif edit == "effect":
            rng.choice(b)["expected_effects"] = {rng.choice(keys): rng.choice(PAIR_VALUES)}
        elif edit in ("value", "operator"):
            tested = [p for x in b for p in x.get("preconditions", [])]
            if tested:
                pre = rng.choice(tested)
                if edit == "value":
                    pre["value"] = rng.choice(PAIR_VALUES)
                else:
                    pre["operator"] = rng.choice(PAIR_OPERATORS)
        elif edit == "other":
            b = plan()
        pairs.append(({"actions": a}, {"actions": b}))
    return pairs


def equivalence_wrong(
    a: dict[str, Any], b: dict[str, Any], result: Any, profile: str, runtime: Any = None
) -> str | None:
    """Why a decided ``equivalent`` answer is wrong, or None: a "different" must come
    with a counterexample on which the two plans' ``simulate`` end states differ
    (under ``car``, in ``runtime.simulate`` too when the runtime is given); an
    "equivalent" must hold on every probe state the sampled method builds from the
    plans' constants (``probe_constants``), in the runtime's walk too."""
    import car_verify as cv
    from car_verify.deciders.equivalence import DEFAULT_PROBES, named_probes
    from car_verify.semantics import semantics_of

    sem = semantics_of(profile)

    def ends(state: dict[str, Any]) -> list[Any]:
        ours = [dict(cv.simulate(p, state, profile=profile)) for p in (a, b)]
        if runtime is None or profile != "car":
            return [ours]
        theirs = []
        for p in (a, b):
            try:
                theirs.append(json.loads(runtime.simulate(json.dumps(p), json.dumps(state))))
            except ValueError:
                theirs.append("rejected")
        return [ours, theirs]

    def differ(pair: Any) -> bool:
        x, y = pair
        if not (isinstance(x, dict) and isinstance(y, dict)):
            return x != y
        return x.keys() != y.keys() or any(not sem.equal(x[k], y[k]) for k in x)

    if result.equivalent is False:
        state = result.counterexample
        if state is None:
            return "different, with no counterexample"
        for walked in ends(state):
            if not differ(walked):
                return f"different, but the counterexample {state} does not separate them"
        return None
    if result.equivalent is True:
        for probe in [*DEFAULT_PROBES, *named_probes([a, b], profile)]:
            for walked in ends(probe):
                if differ(walked):
                    return f"equivalent, but the probe {probe} separates them"
    return None


@st.composite
def equivalence_pair(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """One pair of :func:`equivalence_pairs`' kind, drawn by Hypothesis (so it
    shrinks): plans of 1-4 actions over three keys whose preconditions (and
    assertions) use every operator, ``contains`` most, with values and needles of
    every kind (:data:`PAIR_VALUES`, and ``-0.0``), the second plan the first
    after one edit."""
    keys = st.sampled_from(["k", "j", "m"])
    values = st.sampled_from([*PAIR_VALUES, -0.0, 1e-7])
    pre = st.fixed_dictionaries(
        {"key": keys, "operator": st.sampled_from(PAIR_OPERATORS)}, optional={"value": values}
    )

    @st.composite
    def action(draw: st.DrawFn, i: int) -> dict[str, Any]:
        kind = draw(st.sampled_from(["tool_call", "state_write", "assertion", "state_read"]))
        out: dict[str, Any] = {"id": f"a{i}", "type": kind}
        if kind == "tool_call":
            out["tool"] = "t"
        elif kind == "state_write":
            out["parameters"] = {"key": draw(keys), "value": draw(values)}
        elif kind == "assertion" and draw(st.booleans()):  # the spec's {key, operator, value}
            out["parameters"] = {**draw(pre), "value": draw(values)}
        elif kind == "assertion":  # the runtime executor's {key, expected}
            out["parameters"] = {"key": draw(keys), "expected": draw(values)}
        else:
            out["parameters"] = {"key": draw(keys)}
        if draw(st.booleans()):
            out["preconditions"] = draw(st.lists(pre, min_size=1, max_size=2))
        if kind != "state_read" and draw(st.booleans()):
            out["expected_effects"] = draw(st.dictionaries(keys, values, min_size=1, max_size=2))
        if draw(st.integers(0, 3)) == 0:
            out["state_dependencies"] = [draw(keys)]
        return out

    n = draw(st.integers(1, 4))
    a = [draw(action(i)) for i in range(n)]
    b = json.loads(json.dumps(a))
    edit = draw(st.sampled_from(["same", "drop", "swap", "effect", "value", "other"]))
    if edit == "drop" and len(b) > 1:
        b.pop(draw(st.integers(0, len(b) - 1)))
    elif edit == "swap" and len(b) >= 2:
        i = draw(st.integers(0, len(b) - 2))
        b[i], b[i + 1] = b[i + 1], b[i]
    elif edit == "effect":
        b[draw(st.integers(0, len(b) - 1))]["expected_effects"] = {draw(keys): draw(values)}
    elif edit == "value":
        tested = [p for x in b for p in x.get("preconditions", [])]
        if tested:
            tested[draw(st.integers(0, len(tested) - 1))]["value"] = draw(values)
    elif edit == "other":
        b = [draw(action(i)) for i in range(draw(st.integers(1, 4)))]
    return {"actions": a}, {"actions": b}
