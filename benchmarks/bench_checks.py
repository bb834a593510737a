"""Issue 27's functions against the runtime's, on 2,000 generated small inputs each,
in one run: inputs per second (slowest / median / fastest of ROUNDS) and the ratio
to ``car_runtime`` (when installed).

    python benchmarks/bench_checks.py [ROUNDS]

Each car-verify function is given what a Python caller has (parsed JSON) and the
runtime its JSON text, as each is called; the runtime's time includes reading the
text, car-verify's its own input checks.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
from collections.abc import Callable
from typing import Any

from timing import timed

from car_verify.deciders.workflow import check_workflow_policies, verify_workflow_graph
from car_verify.plan.claims import check_plan, evaluate_goal, verify_tool_receipts
from car_verify.plan.concurrency import analyze_concurrency
from car_verify.plan.flow import check_information_flow
from car_verify.plan.intent import check_intent, check_intent_plan

N = 2000


def flow_case(rng: random.Random) -> tuple[Any, ...]:
    tools = ["t0", "t1", "t2", "t3"]
    actions = [
        {"id": f"a{i}", "type": "tool_call", "tool": rng.choice(tools),
         "state_dependencies": rng.sample(["k0", "k1", "k2"], rng.randint(0, 2)),
         "expected_effects": {k: 1 for k in rng.sample(["k0", "k1", "k2"], rng.randint(0, 2))}}
        for i in range(rng.randint(1, 7))
    ]  # fmt: skip
    levels = ["public", "secret"]
    labels = {t: {"capability": rng.choice("ABC"), "confidentiality": rng.choice(levels),
                  "sink": rng.random() < 0.3} for t in tools}  # fmt: skip
    return (
        {"id": "p", "source": "b", "actions": actions},
        labels,
        {"forbidden_sequences": [["A", "B"]]},
    )


def intent_case(rng: random.Random) -> tuple[Any, ...]:
    ids = ["a", "b", "c", "d"]
    actions = [
        {"id": i, "tool": rng.choice(["search", "send", "pay"]),
         "targets": rng.sample(["docs/x", "src/y"], 1),
         "depends_on": rng.sample(ids, rng.randint(0, 2)), "untrusted": rng.random() < 0.3}
        for i in ids[: rng.randint(1, 4)]
    ]  # fmt: skip
    return (
        {
            "intent": {"allowed_tools": ["search"], "allowed_resources": ["docs"]},
            "actions": actions,
        },
    )


def plan_intent_case(rng: random.Random) -> tuple[Any, ...]:
    actions = [
        {"id": f"a{i}", "type": "tool_call", "tool": rng.choice(["search", "send"]),
         "state_dependencies": rng.sample(["k", "j"], rng.randint(0, 1)),
         "expected_effects": {rng.choice(["k", "j", "docs"]): 1}}
        for i in range(rng.randint(1, 5))
    ]  # fmt: skip
    return (
        {
            "intent": {"allowed_tools": ["search"]},
            "actions": actions,
            "untrusted_tools": ["search"],
        },
    )


def ops_case(rng: random.Random) -> tuple[Any, ...]:
    ops = [
        {"id": i, "read_set": rng.sample(["k", "j"], rng.randint(0, 2)),
         "write_set": rng.sample(["k", "j"], rng.randint(0, 2)), "read_at": rng.randint(0, 3),
         "commit_at": rng.randint(0, 6),
         "depends_on": rng.sample(["a", "b", "c"], rng.randint(0, 1))}
        for i in ["a", "b", "c", "d"][: rng.randint(1, 4)]
    ]  # fmt: skip
    return (ops,)


def graph_case(rng: random.Random) -> tuple[Any, ...]:
    names = ["a", "b", "c", "d", "e"]
    edges = [{"from": rng.choice(names), "to": rng.choice(names)} for _ in range(6)]
    graph = {"entry": "a", "terminals": ["e"], "stages": names, "edges": edges}
    return (graph,)


def policy_case(rng: random.Random) -> tuple[Any, ...]:
    (graph,) = graph_case(rng)
    return graph, [{"kind": "precedes", "earlier": "b", "later": "d"}]


def strips_case(rng: random.Random) -> tuple[Any, ...]:
    facts = ["p", "q", "r", "s"]
    steps = [{"id": f"s{i}", "preconditions": rng.sample(facts, 1),
              "add_effects": rng.sample(facts, 1)} for i in range(rng.randint(1, 5))]  # fmt: skip
    return ({"initial": ["p"], "steps": steps, "goal": rng.sample(facts, 2)},)


def goal_case(rng: random.Random) -> tuple[Any, ...]:
    leaves = [{"kind": "plan_achieved"}, {"kind": "state_predicate", "key": "k", "equals": 1},
              {"kind": "model_judge", "id": "j"}]  # fmt: skip
    condition = {"kind": rng.choice(["all_of", "any_of"]), "conditions": rng.sample(leaves, 2)}
    inputs = {"plan_achieved": rng.random() < 0.5, "state": {"k": rng.randint(0, 1)},
              "model_verdicts": {"j": rng.random() < 0.5}}  # fmt: skip
    return ({"condition": condition, "inputs": inputs},)


def receipts_case(rng: random.Random) -> tuple[Any, ...]:
    tools = ["search", "email"]
    claims = [{"kind": rng.choice(["invoked", "count", "absence"]), "tool": rng.choice(tools),
               "count": rng.randint(0, 3)} for _ in range(3)]  # fmt: skip
    receipts = [{"tool": rng.choice(tools), "result_count": rng.randint(0, 3)} for _ in range(2)]
    return claims, receipts


CASES: list[tuple[str, Callable[..., Any], str, Callable[[random.Random], tuple[Any, ...]]]] = [
    ("check_information_flow", check_information_flow, "check_information_flow", flow_case),
    ("check_intent", check_intent, "check_intent", intent_case),
    ("check_intent_plan", check_intent_plan, "check_intent_plan", plan_intent_case),
    ("analyze_concurrency", analyze_concurrency, "analyze_concurrency", ops_case),
    ("verify_workflow_graph", verify_workflow_graph, "verify_workflow_graph", graph_case),
    ("check_workflow_policies", check_workflow_policies, "check_workflow_policies", policy_case),
    ("check_plan", check_plan, "check_plan", strips_case),
    ("evaluate_goal", evaluate_goal, "evaluate_goal", goal_case),
    ("verify_tool_receipts", verify_tool_receipts, "verify_tool_receipts", receipts_case),
]


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    try:
        import car_runtime
    except ImportError:
        car_runtime = None
    print(f"{N:,} generated inputs each: inputs/s (slowest / median / fastest); ratio of medians")
    for name, ours, theirs_name, make in CASES:
        rng = random.Random(13)
        cases = [make(rng) for _ in range(N)]
        mine = timed(lambda f=ours, cs=cases: [f(*c) for c in cs], rounds)  # type: ignore[misc]
        line = f"  {name:<24} car-verify {_rates(mine)}"
        if car_runtime is not None:
            theirs = getattr(car_runtime, theirs_name)
            texts = [tuple(json.dumps(part) for part in c) for c in cases]
            ref = timed(lambda f=theirs, ts=texts: [f(*t) for t in ts], rounds)  # type: ignore[misc]
            ratio = statistics.median(ref) / statistics.median(mine)
            line += f"  runtime {_rates(ref)}  {ratio:.2f}x"
        print(line)


def _rates(times: list[float]) -> str:
    return "/".join(f"{N / t:,.0f}" for t in (max(times), statistics.median(times), min(times)))


if __name__ == "__main__":
    main()
