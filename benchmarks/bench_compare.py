"""load+verify / json.loads of this checkout against an earlier revision, interleaved.

Wall times on a shared machine drift by 10% or more between runs minutes apart,
which is as much as a change usually gains. So both versions are measured in
alternating child processes, each printing the median over its rounds of
(load+verify) / json.loads with both timed back to back, as bench_verify.py
does; the medians of those are compared. The earlier revision is installed from
``git archive`` into a temporary directory (``pip install --no-deps --target``).
Run: python benchmarks/bench_compare.py REV [wide|sequential] [PAIRS] [ACTIONS] [car|strict]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# One child: the median ratio of its rounds, on the bundled shapes (from this checkout,
# so both versions verify the same documents).
CHILD = """
import gc, json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
from shapes import INITIAL_STATE, sequential, wide_dag
import car_verify
text = json.dumps({"wide": wide_dag, "sequential": sequential}[sys.argv[3]](int(sys.argv[4])))
def timed(fn):
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
ratios = []
for _ in range(7):
    json.loads(text)
    t_json = timed(lambda: json.loads(text))
    run = lambda: car_verify.verify(text, initial_state=INITIAL_STATE, profile=sys.argv[5])
    ratios.append(timed(run) / t_json)
print(statistics.median(ratios), car_verify.__file__)
"""


def install(rev: str, into: Path) -> Path:
    """The package of ``rev``, installed without dependencies into ``into``."""
    source = into / "src"
    source.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    site = into / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
         str(source)],
        check=True,
    )  # fmt: skip
    return site


def median_ratio(site: Path, shape: str, actions: int, profile: str) -> float:
    child = [str(site), str(ROOT / "benchmarks"), shape, str(actions), profile]
    out = subprocess.run(
        [sys.executable, "-c", CHILD, *child],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if not out[1].startswith(str(site)):
        raise SystemExit(f"measured {out[1]}, not the copy in {site}")
    return float(out[0])


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    rev = sys.argv[1]
    shape = sys.argv[2] if len(sys.argv) > 2 else "wide"
    pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    actions = int(sys.argv[4]) if len(sys.argv) > 4 else 10_000
    profile = sys.argv[5] if len(sys.argv) > 5 else "car"
    with tempfile.TemporaryDirectory() as tmp:
        base = install(rev, Path(tmp, "base"))
        here = install("HEAD", Path(tmp, "head"))
        if subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", "HEAD"]).returncode:
            print("note: uncommitted changes are not measured (HEAD is)")
        results: dict[str, list[float]] = {rev: [], "HEAD": []}
        for _ in range(pairs):
            results[rev].append(median_ratio(base, shape, actions, profile))
            results["HEAD"].append(median_ratio(here, shape, actions, profile))
    print(
        f"{shape}, {actions:,} actions, profile {profile}: load+verify / json.loads, "
        "median of 7 rounds per process"
    )
    for name, ratios in results.items():
        shown = ", ".join(f"{r:.2f}x" for r in ratios)
        print(f"{name:>12}: {statistics.median(ratios):.2f}x  ({shown})")
    change = statistics.median(results["HEAD"]) / statistics.median(results[rev]) - 1
    print(f"HEAD against {rev}: {change:+.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
