"""Start-up of the CLI, as a pre-commit hook pays it on every commit.

Times the bare interpreter, ``import car_verify``, ``car-verify --version``,
``car-verify verify`` of the bundled gated-deploy example (with its tools and
state) and ``car-verify lint examples``, each as a fresh process, the commands
taking turns; prints each one's median, what it adds to the interpreter and its
ratio to ``python -c pass`` measured in the same run, with the quartiles of
that ratio over the runs. Each command runs from an empty folder, so the
installed package is the one measured (run it with the Python of a
``pip install .`` venv).
Run: python benchmarks/bench_startup.py [RUNS]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "gated-deploy" / "proposal.json"


def times_s(argv: list[str], cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    py = sys.executable
    cli = [py, "-m", "car_verify"]
    gated = ROOT / "examples" / "gated-deploy"
    commands = {
        "python -c pass": [py, "-c", "pass"],
        "import car_verify": [py, "-c", "import car_verify"],
        "car-verify --version": [*cli, "--version"],
        "car-verify verify (gated-deploy)": [
            *cli,
            "verify",
            str(EXAMPLE),
            "--tools",
            str(gated / "tools.json"),
            "--state",
            str(gated / "state.json"),
        ],
        "car-verify lint examples": [*cli, "lint", str(ROOT / "examples"), "--no-progress"],
    }
    with tempfile.TemporaryDirectory() as empty:
        where = subprocess.run(
            [py, "-c", "import car_verify; print(car_verify.__file__)"],
            cwd=empty,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        print(f"car_verify from {where}; {runs} runs each, the commands taking turns")
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(runs):
            for name, argv in commands.items():
                times[name].append(times_s(argv, empty))
    bare = times["python -c pass"]
    for name, taken in times.items():
        ms = statistics.median(taken) * 1000
        if name == "python -c pass":
            print(f"{name:34s} {ms:6.0f} ms")
            continue
        ratios = sorted(t / b for t, b in zip(taken, bare, strict=True))
        low, high = ratios[len(ratios) // 4], ratios[(3 * len(ratios)) // 4]
        print(
            f"{name:34s} {ms:6.0f} ms  (+{ms - statistics.median(bare) * 1000:.0f} ms; "
            f"{statistics.median(ratios):.2f}x the interpreter, quartiles {low:.2f}-{high:.2f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
