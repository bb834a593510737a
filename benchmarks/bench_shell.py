"""The shell reader on 100 kB lines: each shape read within a couple of seconds.

For each shape of line the reader is timed (``read_plain``, in this process) and
compared with the grammar's parse of the same bytes alone, measured in the same
run: the ratio is what reading adds to parsing. Each is repeated; the spread is
min / median / max, in wall-clock seconds and in this process's CPU seconds (on
a shared, loaded machine the CPU time is what the reading costs; the target is
checked on it). The steps each line takes (the reader's bound is a count of
steps, ``MAX_STEPS``, never a clock) are printed too: they are the same on any
machine. Run: python benchmarks/bench_shell.py [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from timing import timed

from car_verify.rules.shell import MAX_LINE, MAX_STEPS, ShellError, read_plain
from car_verify.rules.shell.model import Budget
from car_verify.rules.shell.parse import language

SHAPES = {
    "commands": ('rm -rf /tmp/x && echo "$HOME" | grep -v foo; ' * 3000)[:MAX_LINE],
    "semicolons": "a;" * (MAX_LINE // 2),
    "words": "echo " + "a " * (MAX_LINE // 2 - 3),
    "quoted words": "echo " + '"$a" ' * (MAX_LINE // 5 - 2),
    "heredoc into sh": "cat <<EOF | sh\n" + "echo hi\n" * (MAX_LINE // 8 - 3) + "EOF",
    "sh -c string": "sh -c '" + "ls; " * (MAX_LINE // 4 - 3) + "'",
    "wrappers": "sudo " * (MAX_LINE // 5),
    "continuations": "echo a\\\n" * (MAX_LINE // 8),
}
TARGET_SECONDS = 2.0


def _parse(line: str) -> None:
    import tree_sitter

    tree_sitter.Parser(language()).parse(line.encode())


def _read(line: str) -> None:
    with suppress(ShellError):
        read_plain(line)


def _cpu(f: Callable[[], object], rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        start = time.process_time()
        f()
        out.append(time.process_time() - start)
    return out


def _spread(values: list[float]) -> str:
    return f"{min(values):5.2f} {statistics.median(values):5.2f} {max(values):5.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    print(
        f"{'shape':16} {'wall min/med/max s':>18} {'cpu min/med/max s':>18} "
        f"{'parse s':>8} {'ratio':>6} {'steps':>10}"
    )
    worst = 0.0
    for name, line in SHAPES.items():
        budget = Budget()
        with suppress(ShellError):
            read_plain(line, budget)
        steps = budget.total - budget.left
        base = statistics.median(timed(lambda line=line: _parse(line), rounds))
        wall = timed(lambda line=line: _read(line), rounds)
        cpu = _cpu(lambda line=line: _read(line), rounds)
        worst = max(worst, statistics.median(cpu))
        ratio = statistics.median(wall) / base
        print(
            f"{name:16} {_spread(wall):>18} {_spread(cpu):>18} {base:8.3f} {ratio:6.1f} {steps:10,}"
        )
    print(f"bound: {MAX_STEPS:,} steps; worst median CPU {worst:.2f} s (target {TARGET_SECONDS} s)")
    return 0 if worst <= TARGET_SECONDS else 1


if __name__ == "__main__":
    raise SystemExit(main())
