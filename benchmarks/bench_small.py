"""Small plans: load+verify per proposal against json.loads and car_runtime.verify.

    python benchmarks/bench_small.py [N] [ROUNDS]

N generated proposals of 5-10 actions (a seeded generator: every action type,
preconditions, effects, state dependencies), as JSON text. Each round times, back
to back on the same texts: ``json.loads`` of each, car-verify's ``verify`` of each
under the ``car`` and the ``strict`` profile, and, when ``car-runtime`` is
installed, ``car_runtime.verify``. Prints proposals per second and the ratio to
``json.loads`` of each round's times, as min / median / max over the rounds, then
each profile's throughput as a share of the runtime's (issue 50's target: 0.25x).
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from shapes import mixed

import car_verify

KEYS = [f"k{i}" for i in range(8)]


def proposal(rng: random.Random, n: int) -> dict[str, Any]:
    return {"id": "p", "source": "bench", "actions": mixed(rng, n, KEYS)}


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    rng = random.Random(24)
    texts = [json.dumps(proposal(rng, rng.randint(5, 10))) for _ in range(count)]
    try:
        import car_runtime
    except ImportError:
        car_runtime = None
    subjects: dict[str, Callable[[], object]] = {
        "json.loads": lambda: [json.loads(t) for t in texts],
        "car-verify (car)": lambda: [car_verify.verify(t) for t in texts],
        "car-verify (strict)": lambda: [car_verify.verify(t, profile="strict") for t in texts],
    }
    if car_runtime is not None:
        subjects["car_runtime.verify"] = lambda: [car_runtime.verify(t) for t in texts]
    for fn in subjects.values():  # warm up
        fn()
    times: dict[str, list[float]] = {name: [] for name in subjects}
    for _ in range(rounds):
        for name, fn in subjects.items():
            times[name].append(timed(fn))
    base = times["json.loads"]
    print(f"{count} proposals of 5-10 actions, {rounds} rounds")
    print(f"{'':22} {'proposals/s (median)':>22}   x json.loads (min / median / max)")
    for name, series in times.items():
        ratios = [t / b for t, b in zip(series, base, strict=True)]
        rate = count / statistics.median(series)
        print(
            f"{name:22} {rate:>22,.0f}   {min(ratios):.1f} / {statistics.median(ratios):.1f} / "
            f"{max(ratios):.1f}"
        )
    if car_runtime is None:
        print("car-runtime is not installed: the ratios against the runtime are left out")
        return
    # Issue 50's target: at least 0.25x the runtime's throughput, under both profiles,
    # judged on the median of the rounds' ratios (each round times both back to back).
    theirs = times["car_runtime.verify"]
    for profile in ("car", "strict"):
        ratios = sorted(
            b / t for t, b in zip(times[f"car-verify ({profile})"], theirs, strict=True)
        )
        median = statistics.median(ratios)
        print(
            f"throughput / car_runtime.verify's, {profile}: {ratios[0]:.3f} / {median:.3f} / "
            f"{ratios[-1]:.3f} (target >= 0.25x: {'met' if median >= 0.25 else 'NOT met'})"
        )


if __name__ == "__main__":
    main()
