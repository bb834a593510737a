"""How the policy and trace-rule analyses ask z3 a question within a time limit.

z3's string and regular-expression solver is erratic on the queries those
analyses make: one query, asked again in the same process, decides in 50 ms or
runs to its whole 10 s limit, as the random seed and the state of the z3 context
happen to fall (on ``\\bx`` against ``\\bxy``, five diffs in a row took 0.1, 10,
0.05, 0.06 and 9.3 s). :func:`check` asks in tries: each with a fresh seed and a
resource limit (z3's ``rlimit``, counted in its own steps, so the cut-off is the
same on a fast machine and a slow one) twice the last, all within the time
limit. A query one seed finds hard is then usually decided by the next within a
second, and a query that is hard for every seed still gets the whole limit.

:func:`check_once` is the plain version, one check with the whole limit; a test
holds the two to the same verdicts.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["FIRST_TRY", "check", "check_once"]

#: The first try's resource limit, in z3's steps (about 0.1 s of string solving).
FIRST_TRY = 200_000

_UNLIMITED = 0  # z3's rlimit: no limit


def check(solver: Any, timeout_ms: int) -> Any:
    """``solver.check()`` in tries with growing resource limits and fresh seeds,
    within ``timeout_ms`` in all; z3's verdict (``unknown`` when the time is spent,
    or when z3 gives up for a reason other than the resource limit). The solver
    is left without a resource limit."""
    import z3

    deadline = time.monotonic() + timeout_ms / 1000
    steps, seed = FIRST_TRY, 0
    try:
        while True:
            left = int((deadline - time.monotonic()) * 1000)
            if left <= 0:
                return z3.unknown
            solver.set("timeout", left)
            solver.set("random_seed", seed)
            solver.set("rlimit", steps)
            answer = solver.check()
            if answer != z3.unknown or not _spent(solver.reason_unknown()):
                return answer
            steps, seed = steps * 2, seed + 1
    finally:
        solver.set("rlimit", _UNLIMITED)


def _spent(reason: str) -> bool:
    """Whether z3 stopped for its limits (the resource limit is reported as
    "canceled" by some of its theories), not because it cannot decide the query."""
    return reason in ("canceled", "timeout") or "resource limit" in reason


def check_once(solver: Any, timeout_ms: int) -> Any:
    """The plain version of :func:`check`: one ``solver.check()`` with the whole
    time limit."""
    solver.set("timeout", timeout_ms)
    return solver.check()
