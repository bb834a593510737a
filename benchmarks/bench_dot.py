"""``car-verify dot`` of large plans rendered to SVG, against ``verify`` of the same file.

    python benchmarks/bench_dot.py [ROUNDS]

For 1,000 and 10,000 actions, in two shapes (``wide_dag``: many independent actions
and conflicts; ``sequential``: a long chain), interleaved ROUNDS times (default 3),
as fresh processes:

- ``car-verify verify F --format json`` (the baseline: the analysis the picture shows);
- ``car-verify dot F -o F.svg`` (verify, simulate, the graph, and Graphviz's layout).

Prints each run's wall time (min / median / max), its ratio to the baseline of the
same round, and whether it is under the target (10 s for 1,000 actions, 60 s for
10,000). The sequential 10,000 runs under ``strict`` only: under ``car`` its
verify is CAR's own quadratic conflict list (see docs/performance.md).
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shapes import sequential, wide_dag

CLI = [sys.executable, "-m", "car_verify.cli"]
TARGET = {1_000: 10.0, 10_000: 60.0}


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    if shutil.which("dot") is None:
        sys.exit("Graphviz's dot is not installed")
    cases = [
        ("wide", 1_000, "car"),
        ("wide", 10_000, "car"),
        ("sequential", 1_000, "strict"),
        ("sequential", 10_000, "strict"),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'case':<28} {'dot s (min/med/max)':<22} {'x verify':<18} target")
        for shape, n, profile in cases:
            doc = (wide_dag if shape == "wide" else sequential)(n)
            path = Path(tmp, f"{shape}{n}.json")
            path.write_text(json.dumps(doc))
            base = [*CLI, "verify", str(path), "--profile", profile, "--format", "json"]
            dot = [*CLI, "dot", str(path), "--profile", profile, "-o", str(path) + ".svg"]
            times, ratios = [], []
            for _ in range(rounds):
                b = timed([*base, "--no-policies"])
                d = timed([*dot, "--no-policies"])
                times.append(d)
                ratios.append(d / b)
            med = statistics.median(times)
            ok = "met" if max(times) < TARGET[n] else "NOT met"
            print(
                f"{shape} {n:,} ({profile})".ljust(28)
                + f"{min(times):.2f}/{med:.2f}/{max(times):.2f}".ljust(22)
                + f"{min(ratios):.2f}/{statistics.median(ratios):.2f}/{max(ratios):.2f}".ljust(18)
                + f"< {TARGET[n]:.0f} s: {ok}"
            )


if __name__ == "__main__":
    main()
