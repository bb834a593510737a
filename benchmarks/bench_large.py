"""Large plans under both profiles against ``car_runtime.verify``, in one run.

Targets (issue 36): in-process ``verify`` within 1.5x of ``car_runtime.verify`` at
10,000 and 30,000 actions under both profiles, on every shape of shapes.py's
``LARGE_SHAPES`` (the realistic mix, a deep chain, one wide level, many shared
keys, dense state dependencies, long parameter objects); and growth from 10,000
to 100,000 actions within 1.1x of ``json.loads``' growth on the same files.

Each round times ``json.loads``, the runtime, and car-verify under ``car`` and
``strict`` back to back on the same JSON text, so a ratio compares runs made
under the same machine load; a ratio is printed as min / median / max over the
rounds, and judged on its median. Without car-runtime installed the runtime's
columns are left out (said so).

Run: python benchmarks/bench_large.py [ROUNDS] [SHAPE ...]
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from shapes import INITIAL_STATE, LARGE_SHAPES
from timing import once, once_paused

import car_verify

STATE_TEXT = json.dumps(INITIAL_STATE)


def spread(values: list[float]) -> str:
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


def runtime_verify() -> Callable[[str], object] | None:
    try:
        import car_runtime
    except ImportError:
        return None
    return lambda text: car_runtime.verify(text, STATE_TEXT, None, None, None)


def ours(profile: str) -> Callable[[str], object]:
    return lambda text: car_verify.verify(text, initial_state=INITIAL_STATE, profile=profile)


def against_runtime(name: str, n: int, rounds: int, rt: Callable[[str], object]) -> bool:
    """Print car / runtime and strict / runtime at ``n`` actions; True if both medians
    are within 1.5x."""
    text = json.dumps(LARGE_SHAPES[name](n))
    ratios: dict[str, list[float]] = {"car": [], "strict": [], "car, paused": []}
    seconds: dict[str, list[float]] = {"json": [], "runtime": [], "car": [], "strict": []}
    for _ in range(rounds):
        seconds["json"].append(once(lambda: json.loads(text)))
        base = once(lambda: rt(text))
        seconds["runtime"].append(base)
        for profile in ("car", "strict"):
            took = once(lambda: ours(profile)(text))  # noqa: B023 - called at once
            seconds[profile].append(took)
            ratios[profile].append(took / base)
        ratios["car, paused"].append(once_paused(lambda: ours("car")(text)) / base)
    medians = {k: statistics.median(v) * 1e3 for k, v in seconds.items()}
    print(
        f"[{name} {n:,}] ms (median): json.loads {medians['json']:.0f}, runtime "
        f"{medians['runtime']:.0f}, car {medians['car']:.0f}, strict {medians['strict']:.0f}"
    )
    ok = True
    for profile, values in ratios.items():
        met = statistics.median(values) <= 1.5
        if profile.endswith("paused"):
            print(
                f"[{name} {n:,}]   {profile} / runtime = {spread(values)} (the collector's share)"
            )
            continue
        ok &= met
        print(
            f"[{name} {n:,}]   {profile} / runtime = {spread(values)} "
            f"(target <= 1.5x: {'met' if met else 'NOT met'})"
        )
    return ok


def growth(name: str, rounds: int) -> bool:
    """How verify grows from 10,000 to 100,000 actions against json.loads' growth."""
    small, large = (json.dumps(LARGE_SHAPES[name](n)) for n in (10_000, 100_000))
    ok = True
    for profile in ("car", "strict"):
        verify = ours(profile)
        ratios = []
        for _ in range(rounds):
            grew = once(lambda: verify(large)) / once(lambda: verify(small))  # noqa: B023
            loads = once(lambda: json.loads(large)) / once(lambda: json.loads(small))
            ratios.append(grew / loads)
        met = statistics.median(ratios) <= 1.1
        ok &= met
        print(
            f"[{name}] 10k -> 100k, {profile}: growth / json.loads' growth = {spread(ratios)} "
            f"(target <= 1.1x: {'met' if met else 'NOT met'})"
        )
    return ok


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv else 3
    names = argv[1:] or list(LARGE_SHAPES)
    unknown = [n for n in names if n not in LARGE_SHAPES]
    if unknown:
        print(f"unknown shapes {unknown}; known: {', '.join(LARGE_SHAPES)}", file=sys.stderr)
        return 2
    rt = runtime_verify()
    ok = True
    if rt is None:
        print("car-runtime is not installed: the ratios against the runtime are left out")
    else:
        for name in names:
            for n in (10_000, 30_000):
                ok &= against_runtime(name, n, rounds, rt)
    for name in names:
        ok &= growth(name, rounds)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
