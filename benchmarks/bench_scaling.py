"""Near-linear scaling where the cheap reachability tests cannot help, in one run.

Two shapes built to defeat them (see shapes.py): writers of a key far apart on
one long chain (``conflicts`` must settle every pair exactly), and one flag
written by a chain of half the actions and needed by the other half (each
failing precondition's message counts the writers it races with). Target
(issue 2's "near-linear"): 100,000 actions within 11x the 10,000-action time.
Run: python benchmarks/bench_scaling.py
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from shapes import far_writers, shared_flag

import car_verify


def seconds(text: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        car_verify.verify(text)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    ok = True
    shapes: tuple[tuple[str, Callable[[int], dict[str, Any]]], ...] = (
        ("far-writers", far_writers),
        ("shared-flag", shared_flag),
    )
    for name, shape in shapes:
        small = json.dumps(shape(10_000))
        large = json.dumps(shape(100_000))
        t10 = seconds(small, 3)
        t100 = seconds(large, 2)
        ratio = t100 / t10
        print(
            f"[{name}] verify 10k {t10 * 1e3:.0f} ms, 100k {t100 * 1e3:.0f} ms: "
            f"100k / 10k = {ratio:.2f}x (target <= 11x)"
        )
        ok &= ratio <= 11
    print("PASS" if ok else "FAIL: a target was missed")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
