"""Where verify's time goes: each stage as a multiple of json.loads, in one run.

Stages: decoding the JSON into the model, the DAG, the verify walk, each pass in
turn (over the analyses the earlier stages cached), and assembling the result's
levels and conflicts. Each is the best of RUNS rounds with the collector paused,
as inside ``verify``. Use it to see which stage a change should aim at.
Run: python benchmarks/bench_stages.py [wide|sequential] [ACTIONS] [RUNS]
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from shapes import INITIAL_STATE, sequential, wide_dag

from car_verify.ir.model import load
from car_verify.passes import Context, Options
from car_verify.passes.registry import resolve_passes
from car_verify.semantics.profiles import DEFAULT_PROFILE


def stage_times(text: str) -> dict[str, float]:
    times: dict[str, float] = {}

    def timed(name: str, fn: Callable[[], object]) -> None:
        start = time.perf_counter()
        fn()
        times[name] = time.perf_counter() - start

    gc.collect()
    gc.disable()
    try:
        timed("json.loads", lambda: json.loads(text))
        start = time.perf_counter()
        model = load(text)
        times["decode"] = time.perf_counter() - start - times["json.loads"]
        # verify's stages under verify's default profile
        ctx = Context(
            model, initial_state=INITIAL_STATE, options=Options(), semantics=DEFAULT_PROFILE
        )
        timed("dag", lambda: ctx.dag)
        timed("walk", lambda: ctx.walk)
        for p in resolve_passes(None, ctx):
            if all(ctx.has(r) for r in p.requires):
                timed(f"pass {p.name}", lambda p=p: list(p.run(ctx)))  # type: ignore[misc]
        timed(
            "levels + conflicts",
            lambda: (
                ctx.dag.execution_levels(),
                [[ctx.dag.ids[a], ctx.dag.ids[b], key] for a, b, key in ctx.conflicts],
            ),
        )
    finally:
        gc.enable()
    return times


def main() -> int:
    shape = {"wide": wide_dag, "sequential": sequential}[
        sys.argv[1] if len(sys.argv) > 1 else "wide"
    ]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 7
    text = json.dumps(shape(n))
    best: dict[str, float] = {}
    for _ in range(runs):
        for name, seconds in stage_times(text).items():
            best[name] = min(best.get(name, seconds), seconds)
    base = best["json.loads"]
    print(f"{shape.__name__}, {n:,} actions, best of {runs} (decode excludes its json.loads)")
    for name, seconds in best.items():
        print(f"{name:24s} {seconds * 1e3:8.1f} ms  {seconds / base:5.2f}x")
    own = sum(s for name, s in best.items() if name != "json.loads")
    print(f"{'all but json.loads':24s} {own * 1e3:8.1f} ms  {own / base:5.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
