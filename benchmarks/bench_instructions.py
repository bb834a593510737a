"""Instructions executed by load+verify, as a multiple of json.loads's: exact, in one run.

Wall times on a shared machine drift by 10% or more, so a change of 1% to 3% cannot
be seen in them (bench_compare.py narrows that to about 3%). Instruction counts do
not drift: valgrind's callgrind counts what the interpreter executes, the same
for the same code, input and hash seed whatever else the machine is doing. They
are not time (a cache miss costs no instruction, and freeing cold memory costs
more time than its count says), so the targets stay judged by bench_verify.py;
this script tells whether a change does less work, and how much.

Each count is taken in a child process under callgrind, less the count of the
same child stopping before the measured call (imports, reading the document,
and one load that makes the shape decoders, as a benchmark's later rounds find
them). With REV, the package at that revision is counted too, on the same
documents; with --stages, each of verify's stages is counted instead (HEAD only).
With --growth, HEAD is counted at 10,000 and at 100,000 actions: how much more
work the larger plan takes, for json.loads (with the collector paused, as verify
runs its own work: else its passes dominate) and for load+verify. It tells work
that grows faster than the plan from time that does (misses, with --misses).

With --misses, what is counted is data misses of a modelled last-level cache
(valgrind's cachegrind) of 4 MB, which is what one process gets of this
machine's L3 (bench_latency.py: about 17 ns a read up to 3 MB, 76 ns to 250 ns
from 4 MB up). A miss there costs as much as some hundred instructions, so a change
that touches less memory can be worth more than one that executes less.
Needs valgrind (--growth: some minutes). Run:
python benchmarks/bench_instructions.py [REV | --stages | --growth] [--misses]
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_compare import ROOT, install
from shapes import sequential, wide_dag

# One child: everything but the measured call, then the call (MODE none: nothing).
CHILD = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
mode, text = sys.argv[2], open(sys.argv[3]).read()
import car_verify, car_verify.analyses
car_verify.load(text)
state = {"env": "prod", "counter": 0}
if mode == "json":
    json.loads(text)
elif mode == "json-paused":  # as verify runs its own work: without the collector's passes
    import gc
    gc.disable()
    json.loads(text)
elif mode == "verify":
    car_verify.verify(text, initial_state=state)
elif mode.startswith("upto:"):  # verify's stages, up to and with this one
    import gc
    from car_verify.passes import Context, Options
    from car_verify.passes.registry import resolve_passes
    from car_verify.semantics.profiles import DEFAULT_PROFILE
    stop = mode[5:]
    model = car_verify.load(text)
    gc.disable()  # as inside verify
    ctx = Context(model, initial_state=state, options=Options(), semantics=DEFAULT_PROFILE)
    stages = {"dag": lambda: ctx.dag, "walk": lambda: ctx.walk}
    for p in resolve_passes(None, ctx):
        if all(ctx.has(r) for r in p.requires):
            stages[p.name] = lambda p=p: list(p.run(ctx))
    if stop != "decode":
        for name, run in stages.items():
            run()
            if name == stop:
                break
    print(" ".join(["decode", *stages]), flush=True)
os._exit(0)  # no interpreter shutdown: its collection would walk whatever is still alive
"""

_COLLECTED = re.compile(r"Collected : (\d+)")
_MISSES = re.compile(r"LLd misses:\s+([\d,]+)")
#: What --misses asks of cachegrind: the last level as this machine gives it to a process.
LAST_LEVEL = "--LL=4194304,16,64"


def count(site: Path | str, mode: str, document: Path, misses: bool = False) -> int:
    """Instructions the child executes in ``mode``, from start to exit (``misses``:
    its last-level data misses instead)."""
    return counted(site, mode, document, misses)[0]


def counted(site: Path | str, mode: str, document: Path, misses: bool = False) -> tuple[int, str]:
    """What :func:`count` counts, and what the child printed."""
    tool = (
        ["--tool=cachegrind", "--cache-sim=yes", LAST_LEVEL, "--cachegrind-out-file=/dev/null"]
        if misses
        else ["--tool=callgrind", "--callgrind-out-file=/dev/null"]
    )
    done = subprocess.run(
        [
            "valgrind", *tool,
            sys.executable, "-c", CHILD, str(site), mode, str(document),
        ],
        capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    found = (_MISSES if misses else _COLLECTED).search(done.stderr)
    if found is None:
        raise SystemExit(f"valgrind reported no count:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", "")), done.stdout


def measure(
    site: Path | str, document: Path, misses: bool = False, loads_mode: str = "json"
) -> tuple[int, int]:
    """Instructions (or misses) of json.loads (``loads_mode``: "json-paused" without the
    collector) and of load+verify of ``document`` (the three children run side by
    side: a count does not depend on what else runs)."""
    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        base, loads, verify = pool.map(
            lambda mode: count(site, mode, document, misses), ("none", loads_mode, "verify")
        )
    return loads - base, verify - base


def stages(site: Path | str, document: Path, misses: bool = False) -> dict[str, int]:
    """Instructions of each of verify's stages (as in bench_stages.py: decoding after
    json.loads, the DAG, the walk, each pass; the rest is what verify adds, the
    result and freeing the model and the analyses), each the count up to and with
    it less the count up to the one before."""
    names = counted(site, "upto:decode", document)[1].split()
    modes = ["json", *(f"upto:{name}" for name in names), "verify"]
    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        totals = list(pool.map(lambda mode: count(site, mode, document, misses), modes))
    base = count(site, "none", document, misses)
    labels = ["json.loads", *names, "the rest"]
    befores = [base, *totals[:-1]]
    return {label: t - b for label, b, t in zip(labels, befores, totals, strict=True)}


def main() -> int:
    if shutil.which("valgrind") is None:
        print("bench_instructions needs valgrind (apt-get install valgrind)", file=sys.stderr)
        return 2
    args = [arg for arg in sys.argv[1:] if arg != "--misses"]
    misses = len(args) < len(sys.argv) - 1
    what = "last-level data misses (4 MB)" if misses else "instructions"
    if args == ["--stages"]:
        with tempfile.TemporaryDirectory() as tmp:
            site = install("HEAD", Path(tmp, "head"))
            for shape in (wide_dag, sequential):
                document = Path(tmp, f"{shape.__name__}.json")
                document.write_text(json.dumps(shape(10_000)))
                by_stage = stages(site, document, misses)
                base = by_stage["json.loads"]
                print(f"{shape.__name__}, 10,000 actions: millions of {what}")
                for name, n in by_stage.items():
                    print(f"  {name:14s} {n / 1e6:8.1f}M  {n / base:5.2f}x")
        return 0
    if args == ["--growth"]:
        with tempfile.TemporaryDirectory() as tmp:
            site = install("HEAD", Path(tmp, "head"))
            print(f"HEAD; millions of {what}, less the child's start")
            for shape in (wide_dag, sequential):
                sizes = {}
                for n in (10_000, 100_000):
                    document = Path(tmp, f"{shape.__name__}-{n}.json")
                    document.write_text(json.dumps(shape(n)))
                    sizes[n] = measure(site, document, misses, loads_mode="json-paused")
                    loads, verify = sizes[n]
                    print(
                        f"{shape.__name__:10s} {n:>7,}: json.loads (paused) {loads / 1e6:8.2f}M, "
                        f"load+verify {verify / 1e6:8.2f}M"
                    )
                (small_loads, small), (large_loads, large) = sizes[10_000], sizes[100_000]
                print(
                    f"{shape.__name__:10s} 100,000 / 10,000: json.loads "
                    f"{large_loads / small_loads:.2f}x, load+verify {large / small:.2f}x"
                )
        return 0
    rev = args[0] if args else None
    with tempfile.TemporaryDirectory() as tmp:
        sites: dict[str, Path | str] = {"HEAD": install("HEAD", Path(tmp, "head"))}
        if rev is not None:
            sites[rev] = install(rev, Path(tmp, "base"))
        if subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", "HEAD"]).returncode:
            print("note: uncommitted changes are not counted (HEAD is)")
        print(f"10,000 actions; millions of {what}, less the child's start")
        for shape in (wide_dag, sequential):
            document = Path(tmp, f"{shape.__name__}.json")
            document.write_text(json.dumps(shape(10_000)))
            counts = {name: measure(site, document, misses) for name, site in sites.items()}
            for name, (loads, verify) in counts.items():
                print(
                    f"{shape.__name__:10s} {name:>10s}: json.loads {loads / 1e6:7.2f}M, "
                    f"load+verify {verify / 1e6:7.2f}M, {verify / loads:.3f}x"
                )
            if rev is not None:
                change = counts["HEAD"][1] / counts[rev][1] - 1
                print(f"{shape.__name__:10s} HEAD against {rev}: {change:+.2%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
