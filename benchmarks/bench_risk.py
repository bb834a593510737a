"""``risk``: the exact method's time as tool calls grow, and the sampled method
against the runtime's ``simulate_monte_carlo``, in one run.

    python benchmarks/bench_risk.py [ROUNDS]

1. Exact: plans of 2n actions, n of them tool calls (a mix of chains, fan-out and
   state writes, from a seeded generator), n = 5, 10, 15, 20, 25, 30: the wall time
   of ``risk()`` (``auto``: exact within its default budget, else sampled; min /
   median / max over ROUNDS), the method it used, and the time relative to n = 10.
   The target: the 40-action, 20-tool-call plan exactly in under 1 s.
2. Sampled, 1,000 trials: 2,000 proposals of 5-10 actions, proposals per second of
   car-verify's ``method="sampled"``, of its ``method="auto"`` (exact for these),
   and of ``car_runtime.simulate_monte_carlo`` when it is installed; ratios to
   the runtime in the same run.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
from typing import Any

from timing import timed

from car_verify.plan.risk import risk


def plan(n_tools: int, seed: int = 3) -> dict[str, Any]:
    rng = random.Random(seed)
    actions: list[dict[str, Any]] = []
    keys: list[str] = []
    for i in range(n_tools):
        deps = rng.sample(keys, k=min(len(keys), rng.choice([0, 1, 1, 2])))
        key = f"k{i}"
        actions.append(
            {"id": f"t{i}", "type": "tool_call", "tool": f"tool{i % 5}",
             "state_dependencies": deps, "expected_effects": {key: i}}
        )  # fmt: skip
        actions.append(
            {"id": f"w{i}", "type": "state_write", "parameters": {"key": f"log{i}", "value": i},
             "preconditions": [{"key": key, "operator": "exists"}] if rng.random() < 0.3 else []}
        )  # fmt: skip
        keys.append(key)
    return {"actions": actions}


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    rates = {f"tool{i}": r for i, r in enumerate([0.9, 0.8, 0.95, 0.7, 0.99])}
    print("risk (auto): 2n actions, n tool calls")
    base = None
    for n in (5, 10, 15, 20, 25, 30):
        doc = plan(n)
        method = risk(doc, tool_success_rates=rates).method
        times = timed(lambda doc=doc: risk(doc, tool_success_rates=rates), rounds)
        med = statistics.median(times)
        base = med if n == 10 else base
        ratio = f"{med / base:.1f}x n=10" if base else ""
        print(f"  n={n:<3} {min(times):.3f} / {med:.3f} / {max(times):.3f} s  {method:<8} {ratio}")
    rng = random.Random(11)
    docs = []
    for _ in range(2000):
        k = rng.randint(5, 10)
        docs.append(plan(k // 2 + 1, seed=rng.randrange(10**6)))
    texts = [json.dumps(d) for d in docs]
    results: dict[str, list[float]] = {}
    for name, f in (
        ("car-verify sampled", lambda: [risk(d, method="sampled") for d in docs]),
        ("car-verify auto (exact)", lambda: [risk(d) for d in docs]),
    ):
        results[name] = timed(f, rounds)
    try:
        import car_runtime

        results["car_runtime"] = timed(
            lambda: [car_runtime.simulate_monte_carlo(t, None, None, None, None) for t in texts],
            rounds,
        )
    except ImportError:
        pass
    print("1,000 trials, 2,000 proposals of 5-10 actions: proposals/s (min / median / max)")
    reference = statistics.median(results["car_runtime"]) if "car_runtime" in results else None
    for name, times in results.items():
        med = statistics.median(times)
        vs = f"  {reference / med:.2f}x the runtime's throughput" if reference else ""
        rates_seen = "/".join(f"{len(docs) / t:,.0f}" for t in (max(times), med, min(times)))
        print(f"  {name:<26} {rates_seen:>20}{vs}")


if __name__ == "__main__":
    main()
