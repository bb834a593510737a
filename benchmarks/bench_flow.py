"""``check_information_flow`` against the runtime's, and the over-every-schedule
check on a wide DAG, in one run.

    python benchmarks/bench_flow.py [ROUNDS]

1. 2,000 generated small plans (1-7 actions, labelled tools, a policy): plans per
   second of car-verify's check (``car`` profile: the runtime's two checks plus
   the schedule and integrity checks it reports beside them), of the gate, and of
   ``car_runtime.check_information_flow`` when it is installed; ratios to the
   runtime in the same run (min / median / max over ROUNDS).
2. A 30-action DAG of width 6 (five levels of six, each action depending on two
   of the level before) with forbidden pairs between every capability: the
   strict profile's check, over every schedule. The target: under 1 s.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
from typing import Any

from timing import timed

from car_verify.plan.flow import check_information_flow, gate_information_flow

TOOLS = ["t0", "t1", "t2", "t3", "t4"]
KEYS = ["k0", "k1", "k2", "k3"]


def small(rng: random.Random) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    actions = []
    for i in range(rng.randint(1, 7)):
        a: dict[str, Any] = {"id": f"a{i}", "type": "tool_call", "tool": rng.choice(TOOLS)}
        a["state_dependencies"] = rng.sample(KEYS, rng.randint(0, 2))
        a["expected_effects"] = {k: 1 for k in rng.sample(KEYS, rng.randint(0, 2))}
        actions.append(a)
    labels = {
        t: {
            "capability": rng.choice("ABC"),
            "confidentiality": rng.choice(["public", "internal", "secret"]),
            "trust": rng.choice(["trusted", "trusted", "untrusted"]),
            "sink": rng.random() < 0.3,
        }
        for t in TOOLS
    }
    policy = {"forbidden_sequences": [["A", "B"], ["B", "C"]]}
    return {"id": "p", "source": "bench", "actions": actions}, labels, policy


def wide(width: int = 6, depth: int = 5) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    rng = random.Random(5)
    actions = []
    for level in range(depth):
        for j in range(width):
            deps = [] if level == 0 else [f"k{level - 1}_{x}" for x in rng.sample(range(width), 2)]
            actions.append(
                {"id": f"a{level}_{j}", "type": "tool_call", "tool": f"t{(level + j) % 5}",
                 "state_dependencies": deps, "expected_effects": {f"k{level}_{j}": 1}}
            )  # fmt: skip
    labels = {f"t{i}": {"capability": "ABCDE"[i], "trust": "untrusted" if i == 0 else "trusted",
                        "sink": i == 4} for i in range(5)}  # fmt: skip
    pairs = [[a, b] for a in "ABCDE" for b in "ABCDE"]
    return (
        {"id": "wide", "source": "bench", "actions": actions},
        labels,
        {"forbidden_sequences": pairs},
    )


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    rng = random.Random(7)
    cases = [small(rng) for _ in range(2000)]
    texts = [tuple(json.dumps(part) for part in case) for case in cases]
    reports = [check_information_flow(*case) for case in cases]
    results: dict[str, list[float]] = {
        "car-verify check": timed(lambda: [check_information_flow(*c) for c in cases], rounds),
        "car-verify gate": timed(lambda: [gate_information_flow(r) for r in reports], rounds),
    }
    try:
        import car_runtime

        results["car_runtime check"] = timed(
            lambda: [car_runtime.check_information_flow(*t) for t in texts], rounds
        )
        raw = [car_runtime.check_information_flow(*t) for t in texts]
        results["car_runtime gate"] = timed(
            lambda: [car_runtime.gate_information_flow(r, None) for r in raw], rounds
        )
    except ImportError:
        pass
    print("2,000 small plans: plans/s (slowest / median / fastest)")
    for name, times in results.items():
        med = statistics.median(times)
        ref = results.get(name.replace("car-verify", "car_runtime"))
        vs = (
            f"  {statistics.median(ref) / med:.2f}x the runtime"
            if ref and "car-verify" in name
            else ""
        )
        seen = "/".join(f"{len(cases) / t:,.0f}" for t in (max(times), med, min(times)))
        print(f"  {name:<20} {seen:>22}{vs}")
    proposal, labels, policy = wide()
    times = timed(
        lambda: check_information_flow(proposal, labels, policy, profile="strict"), rounds
    )
    found = check_information_flow(proposal, labels, policy, profile="strict")
    print(
        f"30 actions, width 6, every schedule (strict): {min(times):.3f} / "
        f"{statistics.median(times):.3f} / {max(times):.3f} s, {len(found.violations)} violations"
        " (target: under 1 s)"
    )


if __name__ == "__main__":
    main()
