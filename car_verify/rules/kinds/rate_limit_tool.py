"""rate_limit_tool: the call of a tool that would be one too many in a trailing window.

What it decides:
    A call of `tool` is denied when `max_calls` calls of it were admitted by this
    rule within the last `interval_secs` seconds (a sliding window per rule and per
    engine, empty when a run starts); `max_calls = 0` denies every call. A call
    takes a slot when this rule admits it, even if another rule denies it (every
    rule is asked); a call this rule denies takes none, so retrying into a full
    window does not push it further out. The deny reason says when the window's
    next slot opens.

    In `verify` and `policy check` the whole plan falls in one window, so the calls
    past `max_calls` in dispatch order are reported.

Undecided:
    Never.

In policy diff:
    A limit of no calls is a rule of one call; the others are compared on runs of
    calls (`car_verify.rules.rate_compare`), each run replayed through the gate.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._base import ALLOW, Answer, Call, Example, Key, Kind, Reader, Step, denied

if TYPE_CHECKING:
    from ..policy_model import Model, Piece


@dataclass(frozen=True, slots=True)
class RateRule:
    tool: str
    max_calls: int
    interval_secs: float

    @property
    def name(self) -> str:
        return f"rate_limit_tool:{self.tool}"


class RateLimitTool(Kind[RateRule]):
    name = key = "rate_limit_tool"
    summary = "the call of a tool past `max_calls` in a trailing window"
    name_form = "rate_limit_tool:TOOL"
    windowed = True
    rule_type = RateRule
    keys = (
        Key("tool", (str,), "the tool whose calls it counts", required=True),
        Key("max_calls", (int,), "the most calls admitted in the window", required=True,
            sample="3"),
        Key("interval_secs", (int, float), "the window's length in seconds", required=True,
            sample="60"),
    )  # fmt: skip
    examples = (
        Example(
            "two calls a minute",
            (
                Step("send_message", {"to": "a"}, "allow"),
                Step("send_message", {"to": "b"}, "allow"),
                Step("send_message", {"to": "c"}, "deny"),
                Step("read_inbox", {}, "allow"),
            ),
            policy='[[rate_limit_tool]]\ntool = "send_message"\nmax_calls = 2\n'
            "interval_secs = 60\n",
        ),
    )

    def build(self, reader: Reader, table: Any, index: int) -> RateRule:
        if table["max_calls"] < 0:
            raise reader.fail([self.key, index, "max_calls"], "must not be negative")
        interval = table["interval_secs"]
        if not math.isfinite(interval) or interval < 0:
            raise reader.fail([self.key, index, "interval_secs"], "must be a non-negative number")
        return RateRule(table["tool"], table["max_calls"], float(interval))

    def start(self, rule: RateRule) -> deque[float]:
        return deque()

    def decide(self, rule: RateRule, call: Call, memory: Any) -> Answer:
        """Admit (and take a slot) or deny (taking nothing): the sliding window."""
        window: deque[float] = memory
        now = call.now
        while window and now - window[0] >= rule.interval_secs:
            window.popleft()
        if len(window) < rule.max_calls:
            window.append(now)
            return ALLOW
        limit = (
            f"{call.tool!r} may be called at most {rule.max_calls} times in "
            f"{rule.interval_secs:g} s"
        )
        if not rule.max_calls:
            return denied(f"{limit}: no call of it is admitted")
        opens = window[0] + rule.interval_secs - now
        return denied(f"{limit}: the window's next slot opens in {_seconds(opens)} s")

    def params(self, rule: RateRule) -> frozenset[str] | None:
        return frozenset()

    def one_call(self, rule: RateRule) -> bool:
        return rule.max_calls == 0  # a limit of no calls denies every call by itself

    def pieces(self, rule: RateRule, model: Model, label: str) -> list[Piece]:
        return model.every()  # a limit of no calls (see one_call)


def _seconds(value: float) -> str:
    """A time in seconds, to a tenth below 100 s (``0.5``, ``59.5``, ``3,600``)."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}".removesuffix(".0")


KIND = RateLimitTool()
