"""Rate limits compared as caps on calls per window.

A ``rate_limit_tool`` rule (tool, ``max_calls`` m, ``interval_secs`` w) caps the
calls of one tool at m in any window of w seconds. Set B denies every run of
calls that set A denies when no run B admits in full breaks one of A's caps.
:func:`candidate_runs` decides it per tool and capped rule of A by packing
calls as densely as B's caps allow (each call at the earliest time every one of
B's rules admits it): that run holds the most calls any window can under B, so
it breaks A's cap when any run B admits does. A run found so is replayed on both
engines (:func:`replay`, fake clocks) before it is reported: B admits every call
of it, A denies the last.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .policy import PolicyEngine, PolicySet, RateRule

__all__ = ["candidate_runs", "replay"]


def candidate_runs(
    a: Sequence[RateRule], b: Sequence[RateRule]
) -> Iterator[tuple[RateRule, list[float]]]:
    """Per cap of A that some run B admits in full breaks: the cap and that run
    (B's densest; see the module docs). None of them: B's caps hold A's."""
    for rule in a:
        run = _densest_run(rule, [r for r in b if r.tool == rule.tool])
        if run is not None:
            yield rule, run


def _densest_run(cap: RateRule, others: Sequence[RateRule]) -> list[float] | None:
    """The run that packs calls of ``cap``'s tool as densely as ``others`` allow, up
    to the first call that breaks ``cap``; None when none does."""
    if cap.max_calls == 0:
        return [0.0]  # the first call already breaks it, unless the others deny it too
    times: list[float] = []
    horizon = cap.interval_secs * (cap.max_calls + 2) + max(
        (r.interval_secs * (r.max_calls + 2) for r in others), default=0.0
    )
    while True:
        t = _earliest(times, others)
        if t is None or t > horizon:
            return None
        in_window = [s for s in times if t - s < cap.interval_secs]
        times.append(t)
        if len(in_window) >= cap.max_calls:
            return times


def _earliest(times: list[float], rules: Sequence[RateRule]) -> float | None:
    """The earliest time at or after the last call that every rule admits a call."""
    t = times[-1] if times else 0.0
    for rule in rules:
        if rule.max_calls == 0:
            return None
        if len(times) >= rule.max_calls:
            t = max(t, times[-rule.max_calls] + rule.interval_secs)
    return t


def replay(
    engine: PolicyEngine,
    tool: str,
    params: dict[str, Any],
    state: dict[str, Any] | None,
    run: Sequence[float],
) -> list[str]:
    """The rules of a fresh copy of ``engine`` (fake clock) that deny the last call
    of ``run``, when every call before it was admitted; ``["<earlier>"]`` when an
    earlier call was denied already."""
    from .model import Action

    clock = [0.0]
    fresh = PolicyEngine(
        PolicySet(**{k: list(getattr(engine.rules, k)) for k in engine.rules.__dataclass_fields__}),
        clock=lambda: clock[0],
    )
    fresh.registered = list(engine.registered)
    call = Action(id="call", type="tool_call", tool=tool, parameters=params)
    for n, t in enumerate(run):
        clock[0] = t
        denied = [v.policy_name for v in fresh.check(call, state)]
        if denied and n < len(run) - 1:
            return ["<earlier>"]
        if n == len(run) - 1:
            return denied
    return []
