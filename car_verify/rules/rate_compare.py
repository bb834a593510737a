"""Rate limits compared on runs of calls.

A ``rate_limit_tool`` rule (tool, ``max_calls`` m, ``interval_secs`` w) keeps the
times of the calls it admitted; a call is over the limit when m of them lie less
than w seconds before it, and a call a rule admits takes a slot in that rule's
window *whatever the other rules decide* (the engine's order: the rate limits
come last, and each judges every call of its tool that reaches it). So each rate
limit is a small automaton over the times at which its tool is called, and two
sets' limits on one tool are compared on the same run of calls: set B denies
every call set A's limits deny when no run of calls ends in one A denies and B
admits.

:func:`rate_splits` decides that per tool:

- *covered*: each of A's limits has one in B with the same window and at most
  as many calls (or a limit of none); such a limit is over whenever A's is (the
  property test in ``tests/test_policy_analysis.py`` replays random runs on
  both engines);
- else a run that splits them, found by z3 over runs of up to :data:`MAX_RUN`
  calls whose times are multiples of half the windows' common divisor, and
  replayed through the gate on both sets (``car_verify.plan.policy_diff``) before
  it is reported;
- else *unknown*: no short run splits them, and a longer one may.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from .kinds.rate_limit_tool import RateRule

__all__ = ["MAX_RUN", "RateSplit", "rate_splits"]

#: The longest run of calls the search for a split tries.
MAX_RUN = 12


@dataclass(frozen=True, slots=True)
class RateSplit:
    """Of one tool: the times of a run whose last call A's limits deny and B's
    admit (``run``), or why neither that nor coverage could be shown (``unknown``)."""

    tool: str
    run: tuple[float, ...] | None = None
    unknown: str | None = None


def rate_splits(a: Sequence[RateRule], b: Sequence[RateRule]) -> list[RateSplit]:
    """Per tool A limits and B does not plainly cover: a split run, or unknown."""
    out = []
    for tool in sorted({r.tool for r in a}):
        mine = [r for r in a if r.tool == tool]
        theirs = [r for r in b if r.tool == tool]
        if all(_covered(r, theirs) for r in mine):
            continue
        run = _search(mine, theirs)
        if run is not None:
            out.append(RateSplit(tool, run=run))
        else:
            out.append(
                RateSplit(
                    tool,
                    unknown=f"rate_limit_tool:{tool}: no run of up to {MAX_RUN} calls sets "
                    "the limits apart, but a longer one may (each limit counts the calls it "
                    "admits, whatever the others decide)",
                )
            )
    return out


def _covered(rule: RateRule, others: Sequence[RateRule]) -> bool:
    return any(
        o.max_calls == 0
        or (o.interval_secs == rule.interval_secs and o.max_calls <= rule.max_calls)
        for o in others
    )


def _unit(rules: Sequence[RateRule]) -> Fraction:
    """Half the largest time that divides every window (1 s when none has one)."""
    windows = [Fraction(r.interval_secs) for r in rules if r.interval_secs > 0]
    if not windows:
        return Fraction(1)
    den = math.lcm(*(w.denominator for w in windows))
    num = math.gcd(*(int(w * den) for w in windows))
    return Fraction(num, den) / 2


def _search(a: Sequence[RateRule], b: Sequence[RateRule]) -> tuple[float, ...] | None:
    """The shortest run (times from 0) whose last call one of ``a`` denies and
    every one of ``b`` admits; None when no run of MAX_RUN calls is one (or z3
    ran out of time)."""
    import z3

    rules = [*a, *b]
    unit = _unit(rules)
    n = MAX_RUN
    at = [z3.Int(f"t{i}") for i in range(n)]
    solver = z3.Solver()
    solver.set("timeout", 10_000)
    solver.add(at[0] == 0, *(at[i - 1] <= at[i] for i in range(1, n)))
    admits = [[z3.Bool(f"admit{r}_{i}") for i in range(n)] for r in range(len(rules))]
    for r, rule in enumerate(rules):
        width = Fraction(rule.interval_secs) / unit  # the window in units
        for i in range(n):
            # call j is in call i's window: it took a slot, less than the width before
            in_window = [
                z3.And(admits[r][j], (at[i] - at[j]) * width.denominator < width.numerator)
                for j in range(i)
            ]
            solver.add(
                admits[r][i] == (z3.Sum(0, *(z3.If(w, 1, 0) for w in in_window)) < rule.max_calls)
            )
    ends = [
        z3.And(
            z3.Or(*(z3.Not(admits[r][i]) for r in range(len(a)))),
            *(admits[r][i] for r in range(len(a), len(rules))),
        )
        for i in range(n)
    ]
    for last, end in enumerate(ends):  # the shortest run first
        answer = solver.check(end)
        if answer == z3.sat:
            model = solver.model()
            return tuple(
                float(model.eval(at[i], model_completion=True).as_long() * unit)
                for i in range(last + 1)
            )
        if answer != z3.unsat:
            return None
    return None
