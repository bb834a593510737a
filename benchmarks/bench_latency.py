"""What a read from memory costs on this machine, by the size of what is read.

A pointer chase in C (each read's address comes from the read before, over a
random cycle through a block of the given size, one cache line a step) has
nothing to overlap, so its time per step is the latency of the level that
holds the block. Where the time jumps is how much cache one process really
gets, which on a shared machine is far less than the L3 the processor reports
(``lscpu``). bench_instructions.py --misses models a last level of that size.
Needs a C compiler (cc). Run: python benchmarks/bench_latency.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
