"""What a read from memory costs on this machine, by the size of what is read.

A pointer chase in C (each read's address comes from the read before, over a
random cycle through a block of the given size, one cache line a step) has
nothing to overlap, so its time per step is the latency of the level that
holds the block. Where the time jumps is how much cache one process really
gets, which on a shared machine is far less than the L3 the processor reports
(``lscpu``). bench_instructions.py --misses models a last level of that size.

Then the same effect seen from Python: a ``dict.get`` by string keys, in the
table's own order and shuffled, for tables of the sizes verify builds (the wide
plan has a key per three actions and an id per action). A lookup reads the
table's slot, its entry and the stored key: once the table and its keys outgrow
the cache, a shuffled lookup pays misses that one in order does not.
Needs a C compiler (cc). Run: python benchmarks/bench_latency.py
"""

from __future__ import annotations

import gc
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHASE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv) {
    size_t lines = (size_t)atol(argv[1]) / 64, steps = 20000000, i, p = 0;
    size_t *block = aligned_alloc(64, lines * 64), *order = malloc(lines * sizeof *order);
    struct timespec start, end;
    for (i = 0; i < lines; i++) order[i] = i;
    srand(1);
    for (i = lines - 1; i > 0; i--) {
        size_t j = (size_t)rand() % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (i = 0; i < lines; i++) block[order[i] * 8] = order[(i + 1) % lines] * 8;
    for (i = 0; i < lines; i++) p = block[p];  /* once round, untimed */
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (i = 0; i < steps; i++) p = block[p];
    clock_gettime(CLOCK_MONOTONIC, &end);
    double ns = (end.tv_sec - start.tv_sec) * 1e9 + (end.tv_nsec - start.tv_nsec);
    printf("%.1f %zu\n", ns / steps, p & 1);
    return 0;
}
"""

SIZES_KB = [32, 256, 512, 1024, 2048, 3072, 4096, 8192, 32768, 131072]
#: Keys of the wide plan at 1,000 / 10,000 / 100,000 actions, and its ids at 10,000 / 100,000.
TABLE_SIZES = [333, 3_333, 10_000, 33_333, 100_000]


def lookup_ns(size: int, shuffled: bool, rounds: int = 5) -> float:
    """Nanoseconds per ``dict.get`` on a table of ``size`` string keys, asked with equal
    strings made apart from the keys (as json.loads makes a document's values), in
    the table's order or shuffled; the best of ``rounds``."""
    table = {f"resource.{j}": {"status": "done"} for j in range(size)}
    asked = ["".join(("resource.", str(j))) for j in range(size)]
    if shuffled:
        random.Random(size).shuffle(asked)
    get = table.get
    best = float("inf")
    gc.disable()
    try:
        for _ in range(rounds):
            start = time.perf_counter()
            for key in asked:
                get(key)
            best = min(best, time.perf_counter() - start)
    finally:
        gc.enable()
    return best / size * 1e9


def main() -> int:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        print("bench_latency needs a C compiler (cc)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        source, program = Path(tmp, "chase.c"), Path(tmp, "chase")
        source.write_text(CHASE)
        subprocess.run([compiler, "-O2", "-o", str(program), str(source)], check=True)
        print("block    ns per dependent read")
        for kb in SIZES_KB:
            out = subprocess.run(
                [str(program), str(kb * 1024)], capture_output=True, text=True, check=True
            )
            print(f"{kb:>7} KB  {float(out.stdout.split()[0]):6.1f}")
    print("\ndict.get, ns per lookup    in order   shuffled")
    for size in TABLE_SIZES:
        in_order, shuffled = lookup_ns(size, False), lookup_ns(size, True)
        print(f"{size:>8,} keys            {in_order:8.1f}   {shuffled:8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
