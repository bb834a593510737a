"""Wall-clock timing shared by the in-process benchmarks (each reports the spread of
its rounds, so one timing loop serves them all)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def timed(f: Callable[[], Any], rounds: int) -> list[float]:
    """The seconds of each of ``rounds`` calls of ``f``, in order."""
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        f()
        out.append(time.perf_counter() - start)
    return out
