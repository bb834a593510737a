"""z3 equivalence of two realistic proposals: the scaling curve, measured in one run.

Target (issue 3): two 200-action proposals decided in under 2 s. The pairs are
the gated-deploy shape scaled up: build/test/deploy chains with preconditions,
state dependencies and effects, the second proposal a re-ordered but equivalent
rewrite (decided equivalent: the solver must prove it for all states), and a
variant with one changed effect value (decided not equivalent, with a replayed
counterexample). Run: python benchmarks/bench_z3.py
"""

from __future__ import annotations

import copy
import time
from typing import Any

import car_verify


def pipeline(n: int) -> dict[str, Any]:
    """n actions in stages of four: build, test (gated), deploy (gated), record."""
    actions: list[dict[str, Any]] = []
    for s in range(n // 4):
        svc = f"svc{s}"
        actions += [
            {
                "id": f"build_{s}",
                "type": "tool_call",
                "tool": "build",
                "parameters": {"service": svc},
                "preconditions": [{"key": "branch", "operator": "exists"}],
                "expected_effects": {f"{svc}.artifact": f"{svc}:v1"},
            },
            {
                "id": f"test_{s}",
                "type": "tool_call",
                "tool": "run_tests",
                "parameters": {"service": svc},
                "state_dependencies": [f"{svc}.artifact"],
                "expected_effects": {f"{svc}.tests": True, f"{svc}.coverage": 0.9},
            },
            {
                "id": f"deploy_{s}",
                "type": "tool_call",
                "tool": "deploy",
                "parameters": {"service": svc, "env": "staging"},
                "preconditions": [
                    {"key": f"{svc}.tests", "value": True},
                    {"key": f"{svc}.coverage", "operator": "gte", "value": 0.8},
                    {"key": "freeze", "operator": "neq", "value": True},
                ],
                "dependencies": [f"test_{s}"],
                "expected_effects": {f"{svc}.deployed": True, "last_deploy": svc},
            },
            {
                "id": f"record_{s}",
                "type": "tool_call",
                "tool": "record",
                "parameters": {"service": svc},
                "dependencies": [f"deploy_{s}"],
                "preconditions": [{"key": "audit", "operator": "contains", "value": "on"}],
                "expected_effects": {f"{svc}.recorded": True},
            },
        ]
    return {"actions": actions}


def reordered(doc: dict[str, Any]) -> dict[str, Any]:
    """The same plan with the stages listed in reverse order (last_deploy is then a
    different race winner, so it is dropped from both to keep them equivalent)."""
    out = copy.deepcopy(doc)
    for action in out["actions"]:
        action.get("expected_effects", {}).pop("last_deploy", None)
    stages = [out["actions"][i : i + 4] for i in range(0, len(out["actions"]), 4)]
    return {"actions": [a for stage in reversed(stages) for a in stage]}


def main() -> int:
    ok = True
    print("actions  equivalent(s)  not-equivalent(s)")
    for n in (50, 100, 200, 400):
        base = reordered(pipeline(n))
        same = reordered(reordered(pipeline(n)))  # stages back in their first order
        changed = copy.deepcopy(base)
        changed["actions"][-2]["expected_effects"]["svc0.deployed"] = "yes"
        start = time.perf_counter()
        first = car_verify.equivalent(base, same, method="z3")
        t_eq = time.perf_counter() - start
        start = time.perf_counter()
        second = car_verify.equivalent(base, changed, method="z3")
        t_neq = time.perf_counter() - start
        print(f"{n:7d}  {t_eq:13.2f}  {t_neq:17.2f}   ({first.equivalent}, {second.equivalent})")
        if n == 200:
            ok &= t_eq < 2 and t_neq < 2
        ok &= first.equivalent is True and second.equivalent is False
    print("PASS" if ok else "FAIL: a target was missed")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
