"""A reference gate, written plainly: one rule at a time, each rule kind by its
definition over the whole history of the run, no shared state, no monitor.

The one gate (``car_verify.plan.gate.CallGate``) and every face that asks it (the
executor, the agent hook) are held to this in ``tests/test_gate.py``.

The history is a list of events in the order they happened: a call's dispatch
(the gate admitted it) and, later, its reported outcome. The definitions:

* ``deny_tool T``: a call of ``T`` is denied.
* ``deny_tool_param T.p == v``: a call of ``T`` whose ``p`` equals ``v`` is denied.
* ``rate_limit_tool T max N`` (a window longer than the run): a call of ``T`` is
  denied when ``N`` calls of ``T`` took a slot before it; a call takes a slot
  when this rule admits it, whatever the other rules say.
* Trace rules are asked only about a call no rule above denies:
  * ``never C``: a call matching ``C`` is denied;
  * ``never C after E``: denied when some earlier dispatched call matches ``E``;
  * ``never C after E <outcome>``: denied when some earlier call matching ``E``
    reported that outcome;
  * ``C only after E``: denied unless some earlier call matching ``E`` reported an
    outcome (``E <outcome>``: that outcome);
  * ``at most N C``: denied when ``N`` dispatched calls matched ``C`` before it.
* A call that nothing denies is dispatched. The rules named are those of the
  first stage that denies (the policy rules, else the trace rules).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Outcome = Literal["succeeded", "failed"]


@dataclass(frozen=True)
class Pattern:
    tool: str | None  # None: any tool
    test: tuple[str, Any] | None = None  # (param, value): param == value
    outcome: Outcome | None = None  # for an event pattern

    def matches(self, tool: str, params: dict[str, Any]) -> bool:
        if self.tool is not None and self.tool != tool:
            return False
        if self.test is None:
            return True
        param, value = self.test
        return param in params and params[param] == value

    def text(self) -> str:
        out = self.tool or "any tool"
        if self.test is not None:
            out += f" where {self.test[0]} == {self.test[1]!r}".replace("'", '"')
        if self.outcome is not None:
            out += f" {self.outcome}"
        return out


@dataclass(frozen=True)
class Rule:
    kind: Literal[
        "deny_tool", "deny_param", "rate", "never", "never_after", "only_after", "at_most"
    ]
    name: str
    tool: str = ""
    param: tuple[str, Any] | None = None
    limit: int = 0
    call: Pattern | None = None
    event: Pattern | None = None

    @property
    def is_trace(self) -> bool:
        return self.kind in ("never", "never_after", "only_after", "at_most")

    def policy_name(self) -> str:
        if self.kind == "deny_tool":
            return f"deny_tool:{self.tool}"
        if self.kind == "deny_param":
            assert self.param is not None
            return f"deny_tool_param:{self.tool}.{self.param[0]}"
        if self.kind == "rate":
            return f"rate_limit_tool:{self.tool}"
        return f"trace_rule:{self.name}"

    def trace_text(self) -> str:
        assert self.call is not None
        if self.kind == "never":
            return f"never {self.call.text()}"
        if self.kind == "at_most":
            return f"at most {self.limit} {self.call.text()}"
        assert self.event is not None
        if self.kind == "never_after":
            return f"never {self.call.text()} after {self.event.text()}"
        return f"{self.call.text()} only after {self.event.text()}"


def toml(rules: list[Rule]) -> str:
    """The rules as a policy file."""
    lines: list[str] = []
    denied = [r.tool for r in rules if r.kind == "deny_tool"]
    if denied:
        lines.append("deny_tool = [" + ", ".join(f'"{t}"' for t in denied) + "]")
    for r in rules:
        if r.kind == "deny_param":
            assert r.param is not None
            lines += [
                "[[deny_tool_param]]",
                f'tool = "{r.tool}"',
                f'param = "{r.param[0]}"',
                f"equals = {r.param[1]!r}".replace("'", '"'),
            ]
        elif r.kind == "rate":
            lines += [
                "[[rate_limit_tool]]",
                f'tool = "{r.tool}"',
                f"max_calls = {r.limit}",
                "interval_secs = 86400",
            ]
        elif r.is_trace:
            lines += ["[[trace_rule]]", f'name = "{r.name}"', f"rule = '{r.trace_text()}'"]
    return "\n".join(lines) + "\n"


@dataclass
class _Call:
    tool: str
    params: dict[str, Any]


@dataclass
class ReferenceGate:
    rules: list[Rule]
    #: The events so far: ("dispatch", n) and ("outcome", n, outcome), n a call number.
    events: list[tuple[Any, ...]] = field(default_factory=list)
    calls: list[_Call] = field(default_factory=list)
    slots: dict[str, int] = field(default_factory=dict)  # rate rule name -> slots taken

    def pre(self, tool: str, params: dict[str, Any]) -> tuple[bool, list[str], int]:
        """Decide a call: (admitted, the rules that deny it, its call number)."""
        names: list[str] = []
        for r in self.rules:
            if r.kind == "deny_tool" and tool == r.tool:
                names.append(r.policy_name())
            elif r.kind == "deny_param" and tool == r.tool:
                assert r.param is not None
                if r.param[0] in params and params[r.param[0]] == r.param[1]:
                    names.append(r.policy_name())
        for index, r in enumerate(self.rules):
            if r.kind == "rate" and tool == r.tool:
                key = f"{index}"
                if self.slots.get(key, 0) >= r.limit:
                    names.append(r.policy_name())
                else:
                    self.slots[key] = self.slots.get(key, 0) + 1
        if not names:
            names = [
                r.policy_name() for r in self.rules if r.is_trace and self._refuses(r, tool, params)
            ]
        number = len(self.calls)
        self.calls.append(_Call(tool, dict(params)))
        if not names:
            self.events.append(("dispatch", number))
        return not names, list(dict.fromkeys(names)), number

    def post(self, number: int, outcome: Outcome) -> None:
        self.events.append(("outcome", number, outcome))

    def _dispatched(self, pattern: Pattern) -> int:
        return sum(
            1
            for e in self.events
            if e[0] == "dispatch"
            and pattern.matches(self.calls[e[1]].tool, self.calls[e[1]].params)
        )

    def _reported(self, pattern: Pattern, outcome: Outcome | None) -> bool:
        return any(
            e[0] == "outcome"
            and (outcome is None or e[2] == outcome)
            and pattern.matches(self.calls[e[1]].tool, self.calls[e[1]].params)
            for e in self.events
        )

    def _refuses(self, r: Rule, tool: str, params: dict[str, Any]) -> bool:
        assert r.call is not None
        if not r.call.matches(tool, params):
            return False
        if r.kind == "never":
            return True
        if r.kind == "at_most":
            return self._dispatched(r.call) >= r.limit
        assert r.event is not None
        if r.kind == "never_after":
            if r.event.outcome is None:
                return self._dispatched(r.event) > 0
            return self._reported(r.event, r.event.outcome)
        return not self._reported(r.event, r.event.outcome)
