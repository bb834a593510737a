"""Start-up of the CLI, as a pre-commit hook pays it on every commit.

Times the bare interpreter, ``import car_verify``, ``car-verify verify`` of the
bundled gated-deploy example and ``car-verify lint examples``, each as a fresh
process, and prints the medians with what the CLI adds to the interpreter. Each
command runs from an empty folder, so the installed package is the one measured
(run it with the Python of a ``pip install .`` venv).
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


def median_ms(argv: list[str], cwd: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    py = sys.executable
    cli = [py, "-m", "car_verify.cli"]
    commands = {
        "python -c pass": [py, "-c", "pass"],
        "import car_verify": [py, "-c", "import car_verify"],
        "car-verify verify (gated-deploy)": [*cli, "verify", str(EXAMPLE)],
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
        print(f"car_verify from {where}; median of {runs} runs each")
        medians = {name: median_ms(argv, empty, runs) for name, argv in commands.items()}
    bare = medians["python -c pass"]
    for name, ms in medians.items():
        extra = "" if name == "python -c pass" else f"  (+{ms - bare:.0f} ms over the interpreter)"
        print(f"{name:34s} {ms:6.0f} ms{extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
