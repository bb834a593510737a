"""Wall-clock timing shared by the in-process benchmarks (each reports the spread of
its rounds, so one timing loop serves them all)."""

from __future__ import annotations

import gc
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


def once(f: Callable[[], Any]) -> float:
    """The seconds of one call of ``f``, after a full collection (so no earlier
    round's garbage is collected inside it)."""
    gc.collect()
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def once_paused(f: Callable[[], Any]) -> float:
    """:func:`once` with the cyclic collector paused by the caller: the time without
    the collector's passes (the package itself never drives the collector,
    tests/test_gc.py; a batch job that owns its process may pause it)."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        f()
        return time.perf_counter() - start
    finally:
        gc.enable()
