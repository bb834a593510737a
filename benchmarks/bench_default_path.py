"""The default path against ``car_runtime.verify``, in one run (issue 61's targets).

    python benchmarks/bench_default_path.py [ROUNDS] [SECTION ...]

Sections (all by default): ``small``, ``large``, ``growth``.

- ``small``: 1,000 generated plans of 5-10 actions (``bench_small.py``'s mix: every
  action type and operator) as JSON text. Each round times, in a rotating order on
  the same texts, ``car_runtime.verify``, ``car_verify.verify`` under ``car`` and
  ``strict`` (the Python API: load and verdict), the same followed by ``to_dict()``
  (every finding, message and evidence made), and the drop-in
  ``car_verify.runtime.verify`` (JSON text out, as the runtime's). Prints each
  one's throughput as a share of the runtime's in the same round. Targets: API
  >= 0.5x, drop-in >= 0.35x.
- ``large``: 10,000 actions of ``synth``, ``wide_dag``, ``dense_dependencies`` and
  ``shared_keys`` (``shapes.py``) with an initial state; each round times the
  runtime, then ``verify`` under ``car`` and ``strict``, each after a full
  collection. Prints the time as a multiple of the runtime's. Targets: <= 2x,
  ``shared_keys`` <= 3x. The plain pass runner over the model (what ``verify``
  ran before the fused kernel, and still runs for any other input) is timed
  beside them as the baseline of the same run.
- ``growth``: 10,000 -> 100,000 actions of ``synth`` and ``wide_dag``: each
  subject's growth (its time at 100k over its time at 10k, paired in a round) and
  its time at 100k as a multiple of the runtime's; then ``verify``'s growth over
  the plain runner's (the baseline: "no worse than today", <= 1x).

Every ratio is printed as min / median / max over the rounds and judged on its
median. The library never touches the collector; neither does this script,
beyond the full collection before each timed call of ``large`` and ``growth``.
"""

from __future__ import annotations

import gc
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_small import proposal
from shapes import INITIAL_STATE, LARGE_SHAPES

import car_verify
import car_verify.runtime as drop_in
from car_verify.api import VerificationResult, assess
from car_verify.ir.model import load
from car_verify.passes import Context
from car_verify.semantics import semantics_of

STATE_TEXT = json.dumps(INITIAL_STATE)
LARGE = ("synth", "wide_dag", "dense_dependencies", "shared_keys")
GROWTH = ("synth", "wide_dag")


def spread(values: list[float]) -> str:
    return f"{min(values):.3f} / {statistics.median(values):.3f} / {max(values):.3f}"


def verdict(values: list[float], target: float, *, at_least: bool) -> str:
    middle = statistics.median(values)
    met = middle >= target if at_least else middle <= target
    return f"(target {'>=' if at_least else '<='} {target}x: {'met' if met else 'NOT met'})"


def plain(text: str, profile: str, state: dict[str, Any] | None) -> VerificationResult:
    """The plain twin: the pass runner over ``load``'s model, the default passes."""
    sem = semantics_of(profile)
    model = load(text)
    sem.refuse(model)
    return assess(Context(model, semantics=sem, initial_state=state))


def once(f: Callable[[], object]) -> float:
    gc.collect()  # no earlier call's garbage is collected inside this one
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def small(rounds: int, runtime: Any) -> None:
    rng = random.Random(24)
    texts = [json.dumps(proposal(rng, rng.randint(5, 10))) for _ in range(1000)]
    subjects: dict[str, Callable[[], object]] = {
        "runtime": lambda: [runtime.verify(t) for t in texts],
        "API, car": lambda: [car_verify.verify(t).valid for t in texts],
        "API, strict": lambda: [car_verify.verify(t, profile="strict").valid for t in texts],
        "API + to_dict, car": lambda: [car_verify.verify(t).to_dict() for t in texts],
        "API + to_dict, strict": lambda: [
            car_verify.verify(t, profile="strict").to_dict() for t in texts
        ],
        "drop-in JSON": lambda: [drop_in.verify(t) for t in texts],
    }
    for fn in subjects.values():  # warm up: imports, caches
        fn()
    seconds: dict[str, list[float]] = {name: [] for name in subjects}
    names = list(subjects)
    for r in range(rounds):
        turn = names[r % len(names) :] + names[: r % len(names)]  # a rotating order
        for name in turn:
            start = time.perf_counter()
            subjects[name]()
            seconds[name].append(time.perf_counter() - start)
    base = seconds["runtime"]
    rate = len(texts) / statistics.median(base)
    print(f"[small] {len(texts):,} plans of 5-10 actions, {rounds} rounds; runtime {rate:,.0f}/s")
    for name in names[1:]:
        ratios = [b / t for t, b in zip(seconds[name], base, strict=True)]
        ours = len(texts) / statistics.median(seconds[name])
        target = 0.35 if name.startswith("drop-in") else 0.5 if "to_dict" not in name else None
        said = "" if target is None else " " + verdict(ratios, target, at_least=True)
        print(f"[small]   {name:22} {ours:>8,.0f}/s, x runtime's throughput {spread(ratios)}{said}")


def large_subjects(text: str) -> dict[str, Callable[[], object]]:
    state = INITIAL_STATE
    return {
        "car": lambda: car_verify.verify(text, initial_state=state),
        "strict": lambda: car_verify.verify(text, initial_state=state, profile="strict"),
        "plain runner, car": lambda: plain(text, "car", state),
        "plain runner, strict": lambda: plain(text, "strict", state),
    }


def large(rounds: int, runtime: Any, n: int = 10_000) -> None:
    for shape in LARGE:
        text = json.dumps(LARGE_SHAPES[shape](n))
        subjects = large_subjects(text)
        ratios: dict[str, list[float]] = {name: [] for name in subjects}
        base: list[float] = []
        for _ in range(rounds):
            took = once(lambda: runtime.verify(text, STATE_TEXT, None, None, None))  # noqa: B023
            base.append(took)
            for name, fn in subjects.items():
                ratios[name].append(once(fn) / took)
        target = 3.0 if shape == "shared_keys" else 2.0
        print(f"[large] {shape} {n:,}: runtime {statistics.median(base) * 1e3:.0f} ms (median)")
        for name, values in ratios.items():
            said = "" if name.startswith("plain") else " " + verdict(values, target, at_least=False)
            print(f"[large]   {name:22} x runtime's time {spread(values)}{said}")


def growth(rounds: int, runtime: Any) -> None:
    for shape in GROWTH:
        texts = [json.dumps(LARGE_SHAPES[shape](n)) for n in (10_000, 100_000)]
        subjects: dict[str, Callable[[str], object]] = {
            "runtime": lambda t: runtime.verify(t, STATE_TEXT, None, None, None),
            "car": lambda t: car_verify.verify(t, initial_state=INITIAL_STATE),
            "strict": lambda t: car_verify.verify(t, initial_state=INITIAL_STATE, profile="strict"),
            "plain runner, car": lambda t: plain(t, "car", INITIAL_STATE),
            "plain runner, strict": lambda t: plain(t, "strict", INITIAL_STATE),
        }
        grew: dict[str, list[float]] = {name: [] for name in subjects}
        at_large: dict[str, list[float]] = {name: [] for name in subjects}
        for _ in range(rounds):
            for name, fn in subjects.items():
                low = once(lambda: fn(texts[0]))  # noqa: B023
                high = once(lambda: fn(texts[1]))  # noqa: B023
                grew[name].append(high / low)
                at_large[name].append(high)
        base = grew["runtime"]
        print(
            f"[growth] {shape} 10k -> 100k: runtime x{statistics.median(base):.1f} "
            f"({statistics.median(at_large['runtime']) * 1e3:.0f} ms at 100k)"
        )
        for name in list(subjects)[1:]:
            times = [a / b for a, b in zip(at_large[name], at_large["runtime"], strict=True)]
            print(
                f"[growth]   {name:22} x{spread(grew[name])} (min / median / max); "
                f"x runtime's time at 100k {spread(times)}"
            )
        for profile in ("car", "strict"):
            ratios = [
                g / p for g, p in zip(grew[profile], grew[f"plain runner, {profile}"], strict=True)
            ]
            print(
                f"[growth]   {profile}: growth / the plain runner's {spread(ratios)} "
                f"{verdict(ratios, 1.0, at_least=False)}"
            )


SECTIONS = {"small": small, "large": large, "growth": growth}


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv and argv[0].isdigit() else 7
    names = [a for a in argv if not a.isdigit()] or list(SECTIONS)
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        print(f"unknown sections {unknown}; known: {', '.join(SECTIONS)}", file=sys.stderr)
        return 2
    try:
        import car_runtime
    except ImportError:
        print("car-runtime is not installed: nothing to measure against", file=sys.stderr)
        return 2
    print(f"car_runtime {getattr(car_runtime, '__version__', '?')}; {rounds} rounds")
    for name in names:
        SECTIONS[name](rounds, car_runtime)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
