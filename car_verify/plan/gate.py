"""The gate: the one object that decides a tool call at run time.

Every face that enforces asks it: the executor (each attempt of each call, and
each compensation), the agent hook (each ``PreToolUse``, and each reported
outcome), the MCP server's ``policy_check`` and the audit's replay of a real
run. A rule therefore means one thing everywhere, and a fix lands once.

A :class:`CallGate` holds

* the loaded rule set (deny rules, ``deny_command``, rate limits, registered
  rules: a :class:`~car_verify.rules.policy.PolicyEngine`), and the trace rules
  with the run's trace state (a :class:`~car_verify.rules.trace.TraceGate`:
  what was dispatched, what is pending, what succeeded or failed);
* optionally a granted permission tier and an approval ledger.

A rule that cannot be decided on a call (``undecided``: a shell line whose program
is computed, a parameter that is no command line) is answered by the gate's
``on_unknown``; each face passes its own answer from :data:`UNDECIDED`, the one
table of them (docs/policies.md shows it). Undecided is never allowed by default.

:meth:`CallGate.decide` judges one call. It first takes a **frozen copy** of
the parameters: the copy is what every rule reads and what the caller must send
(:attr:`Verdict.sent`), so nothing the caller, the agent or a tool changes
afterwards changes what was checked. The order is the runtime's: the policy
rules (all of them, every violation reported), then the permission tier, then,
for a call those allow, the trace rules. A call is admitted when nothing denies
it and nothing is left undecided (or ``on_unknown`` allows the undecided);
an admitted call (``allow`` or ``ask``) is recorded as dispatched.
:meth:`CallGate.report` records a dispatched call's outcome when it is known
(a tool's result, a ``PostToolUse``): ``X only after Y`` counts ``Y`` from then.

Deny reasons name the rule and the tools, never a value: neither a literal of
the rule (which may be a secret) nor a value of the call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from ..base.errors import UsageError
from ..base.values import copy_json
from ..rules.policy import PolicyEngine, policy_engine
from ..rules.trace import Outcome, TraceGate

if TYPE_CHECKING:
    from ..ir.model import Action

__all__ = ["FACES", "UNDECIDED", "CallGate", "Decision", "Denial", "Face", "Verdict"]

Decision = Literal["allow", "deny", "ask"]
DECISIONS: tuple[Decision, ...] = ("allow", "deny", "ask")


@dataclass(frozen=True, slots=True)
class Face:
    """One face that asks the gate: its key, where it is, and what it answers a
    rule that cannot be decided on a call."""

    key: str
    where: str
    undecided: Decision
    why: str


#: Every face that asks the gate, with its answer to an undecided rule: the one
#: table of them (each face reads its answer here; docs/policies.md shows it, and
#: a test holds each face to it). None allows: a line the rules cannot decide is
#: refused, or, in the agent hook, put to the person at the agent's prompt.
FACES: tuple[Face, ...] = (
    Face("executor", "`execute`, `car-verify run`: each attempt and compensation", "deny",
         "no one is asked during a run"),
    Face("policy check", "`policy check`, `verify --policies`, the MCP server's `policy_check` "
         "and `verify`: each call of the plan, on the values the plan writes", "deny",
         "reported as a violation (a value that is another action's output is not known "
         "before the run: a `policy-undecided` warning, and the run's gate decides the "
         "value sent)"),
    Face("openai_agents", "the OpenAI Agents SDK guardrail (`integrations.openai_agents`)",
         "deny", "the model is told why, and may write the call another way"),
    Face("langchain", "the LangChain middleware (`integrations.langchain`)", "deny",
         "the model is told why, and may write the call another way"),
    Face("hook", "`car-verify hook` (a coding agent's `PreToolUse`)", "ask",
         "the agent's prompt names the rule and why the call was not understood"),
    Face("audit", "`car-verify audit`: each call of a recorded run", "deny",
         "counted as a call the rules refuse"),
    Face("policy impact", "`policy impact`: each call replayed under both sets", "deny",
         "`--on-unknown` chooses another answer, said in the report"),
    Face("policy diff", "`policy diff`: each counterexample replayed", "deny",
         "a set refuses what it cannot decide"),
)  # fmt: skip
#: Each face's answer to an undecided rule, by its key.
UNDECIDED: Mapping[str, Decision] = MappingProxyType({f.key: f.undecided for f in FACES})


@dataclass(frozen=True, slots=True)
class Denial:
    """One rule's objection: its stable name and why, in words that name tools and
    parameters but never a value."""

    rule: str
    reason: str

    def text(self) -> str:
        return f"{self.rule}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """The gate's answer for one call.

    ``denied``: the rules that refuse it. ``undecided``: the rules that cannot be
    decided on it (a shell line whose program is computed, say), answered with
    the gate's ``on_unknown``. ``approval``: the permission tier it needs and the
    ledger does not hold (answered ``ask``). ``sent``: the frozen parameters
    every rule read, which is what must be sent when the call is admitted."""

    decision: Decision
    denied: tuple[Denial, ...] = ()
    undecided: tuple[Denial, ...] = ()
    approval: tuple[Denial, ...] = ()
    sent: dict[str, Any] = field(default_factory=dict)

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"

    @property
    def rules(self) -> list[str]:
        """The names of the rules behind the decision, each once, in order."""
        return list(dict.fromkeys(d.rule for d in self.objections))

    @property
    def objections(self) -> tuple[Denial, ...]:
        return (*self.denied, *self.approval, *self.undecided)

    def reason(self) -> str:
        """Every objection, ``rule: why``, joined (empty for a plain allow)."""
        return "; ".join(d.text() for d in self.objections)


class CallGate:
    """Decides calls one at a time against the rules in force and the run's trace
    (see the module docs). ``policies``: a PolicyEngine (used as it is, its rate
    windows included), loaded policies, a PolicySet or a policies directory;
    ``clock`` drives the rate windows of an engine the gate builds; ``on_unknown``
    answers a rule that cannot be decided (``deny`` by default: fail closed; a
    face passes its own, from :data:`UNDECIDED`);
    ``granted_tier`` and ``ledger`` add the permission gate per call."""

    def __init__(
        self,
        policies: Any = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_unknown: Decision = "deny",
        granted_tier: str | None = None,
        ledger: Any = None,
        ask: Sequence[str] = (),
    ) -> None:
        if on_unknown not in DECISIONS:
            raise UsageError(f"on_unknown must be one of {', '.join(DECISIONS)}")
        if policies is None:
            self.engine = PolicyEngine(clock=clock)
        elif isinstance(policies, PolicyEngine):
            self.engine = policies
        else:
            built = policy_engine(policies)
            self.engine = PolicyEngine(built.rules, clock=clock)
        self.trace = TraceGate(self.engine.trace_rules)
        self.on_unknown: Decision = on_unknown
        #: Rule-name prefixes whose objections put the call to a person (``ask``)
        #: instead of refusing it, when every objection to it has one.
        self.ask = tuple(ask)
        self.granted_tier = granted_tier
        self.ledger: Any = None
        if granted_tier is not None:
            from .permissions import check_tier, open_ledger

            check_tier(granted_tier)
            self.ledger = open_ledger(ledger)
        elif ledger is not None:
            raise UsageError("an approval ledger is consulted only with a granted tier")

    # --- deciding --------------------------------------------------------------------------------

    def decide(
        self,
        tool: str,
        params: Mapping[str, Any],
        state: Mapping[str, Any] | None = None,
        *,
        action: Action | None = None,
    ) -> Verdict:
        """Judge a call of ``tool`` with ``params`` (``state``: the run's state, for
        ``require_state``; ``action``: the plan's action, for callback rules), and
        record it as dispatched when it is admitted."""
        sent = copy_json(dict(params))
        denied, undecided = self.engine.judge(tool, sent, state, action=action)
        approval: list[Denial] = []
        objections = [Denial(n, r) for n, r in denied]
        if not objections and self.granted_tier is not None:
            tier_denied, approval = self._tier(tool, sent, action)
            objections.extend(tier_denied)
        # The trace rules are asked in any case (they record nothing here): a call
        # the policy rules refuse is named by those alone, as the runtime names it,
        # but it is put to a person only when the trace rules would let it run too.
        tracing = [Denial(v.policy_name, v.reason) for v in self.trace.check(tool, sent)]
        behind = tracing if objections else []
        if not objections:
            objections = tracing
        unknown = tuple(Denial(n, r) for n, r in undecided)
        decision: Decision
        if objections:
            askable = self.ask and all(
                d.rule.startswith(self.ask) for d in (*objections, *behind, *unknown)
            )
            decision = "ask" if askable else "deny"
        elif unknown and self.on_unknown != "allow":
            decision = self.on_unknown
        elif approval:
            decision = "ask"
        else:
            decision = "allow"
        if decision != "deny":  # it may run: the trace counts it from now
            self.trace.dispatched(tool, sent)
        return Verdict(decision, tuple(objections), unknown, tuple(approval), sent)

    def replay(
        self, calls: Iterable[tuple[str, Mapping[str, Any], Outcome | None]]
    ) -> list[Verdict]:
        """Decide the calls of a recorded run in order, as they would have been
        decided at run time: each admitted call's recorded outcome (None: none was
        recorded) is reported before the next call comes."""
        out = []
        for tool, params, outcome in calls:
            verdict = self.decide(tool, params)
            if verdict.decision != "deny" and outcome is not None:
                self.report(tool, params, outcome)
            out.append(verdict)
        return out

    def report(self, tool: str, params: Mapping[str, Any], outcome: Outcome) -> None:
        """A dispatched call's outcome, once it is known (``succeeded``/``failed``)."""
        self.trace.record(tool, params, outcome)

    def _tier(
        self, tool: str, sent: dict[str, Any], action: Action | None
    ) -> tuple[list[Denial], list[Denial]]:
        """The permission gate for one call: (denials, approvals it needs)."""
        from ..ir.model import Action
        from .permissions import classify_action, decide, fingerprint, ledger_key

        assert self.granted_tier is not None
        if action is not None:  # the plan's action, with what is sent
            import copy

            call = copy.copy(action)
            call.tool, call.parameters = tool, sent
        else:
            call = Action(id="call", type="tool_call", tool=tool, parameters=sent)
        fp = fingerprint(call)
        row = decide(classify_action(call), fp, self.granted_tier, self.ledger, ledger_key(call))
        if row.decision == "allow":
            return [], []
        found = Denial(f"permission-{row.decision}", f"{row.reason} (fingerprint {fp})")
        return ([found], []) if row.decision == "deny" else ([], [found])

    # --- the trace state, for a face that keeps it between processes ---------------------------

    @property
    def trace_rules(self) -> Sequence[Any]:
        return self.trace.rules
