"""``policy diff``: two policy sets compared over every call and every run of calls.

Each rule of one call is a z3 condition on the call (its kind writes it: the
model is :mod:`car_verify.rules.policy_model`). NEW denies everything OLD denies
when ``deny(OLD) and not deny(NEW)`` is unsatisfiable. Each satisfiable direction
gives a counterexample call, turned into a concrete call and decided by the gate
(:class:`~car_verify.plan.gate.CallGate`) over each set before it is reported;
one the gates do not split (a free boolean's doing: a shell line, a pattern that
does not translate, a callback) leaves that direction ``unknown``. Rate limits are
compared on runs of calls (:mod:`car_verify.rules.rate_compare`); trace rules
together with every rule of one call, over the letters of :func:`_letters`, by
:mod:`car_verify.rules.trace_automata`. Every run found is replayed through a
fresh gate for each set, as one agent's run replayed against two hooks: the
counterexamples are what the gate decides, not what a model of it says.

Two sets that hold the same rules (in any order, from any files) are equivalent
at once, whatever they hold: ``{at most 1000000 a, at most 1000000 b}`` against
itself is not searched.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from ..rules.policy import PolicyEngine, PolicySet, rule_identities
from ..rules.policy_analysis import gather, one_call, rules_model
from ..rules.trace import TraceGate
from ..semantics.solving import check
from ..semantics.value_domain import literal
from .gate import UNDECIDED, CallGate

if TYPE_CHECKING:
    from ..rules.policy_model import Model
    from ..rules.trace import Call
    from ..rules.trace_automata import Letter

__all__ = ["Counterexample", "PolicyDiff", "policy_diff"]

#: Each question's time limit (see :func:`car_verify.semantics.solving.check`).
_LIMIT_MS = 10_000

Verdict = Literal["equivalent", "stricter", "looser", "incomparable", "unknown"]


@dataclass(frozen=True, slots=True)
class Counterexample:
    """A call (or a run of calls) one set allows and the other denies, decided by
    the gate over both: ``denied_by`` the rules that deny it."""

    tool: str
    parameters: dict[str, Any]
    state: dict[str, Any] | None
    denied_by: tuple[str, ...]
    calls_at: tuple[float, ...] | None = None  # rate limits: the times of the calls
    trace: tuple[str, ...] | None = None  # trace rules: the events before the call

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "tool": self.tool,
            "parameters": self.parameters,
            "denied_by": list(self.denied_by),
        }
        if self.state is not None:
            out["state"] = self.state
        if self.calls_at is not None:
            out["calls_at"] = list(self.calls_at)
        if self.trace is not None:
            out["trace"] = list(self.trace)
        return out

    def describe(self) -> str:
        from ..rules.policy_analysis import call_text

        text = call_text(self.to_dict())
        if self.trace is not None:
            text = f"after {_trace_text(self.trace)}: {text}"
        return f"{text}, denied by {', '.join(self.denied_by)}"


def _trace_text(trace: Sequence[str]) -> str:
    """Steps joined by commas, a step repeated in a row said once with its count
    (``s3() succeeded x 99,999``); the JSON output keeps every step."""
    runs = [(step, len(list(group))) for step, group in itertools.groupby(trace)]
    return ", ".join(step if n == 1 else f"{step} x {n:,}" for step, n in runs) or "nothing"


@dataclass(slots=True)
class PolicyDiff:
    """What NEW does to the calls OLD decides.

    ``verdict``: ``equivalent`` (each denies what the other does), ``stricter``
    (NEW denies all OLD does, and more), ``looser`` (the converse),
    ``incomparable``, or ``unknown`` (a direction could not be decided: see
    ``unknown``). ``newly_denied`` / ``newly_allowed``: a counterexample per
    direction where there is one.
    """

    verdict: Verdict
    newly_denied: list[Counterexample] = field(default_factory=list)
    newly_allowed: list[Counterexample] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    #: The bounds that stopped a direction (``{"name", "value"}``): a reason in
    #: ``unknown`` says which.
    bounds: list[dict[str, Any]] = field(default_factory=list)

    @property
    def new_covers_old(self) -> bool | None:
        """Whether NEW denies everything OLD denies (None: unknown)."""
        return _covers(self.newly_allowed, self.unknown, "allowed")

    @property
    def old_covers_new(self) -> bool | None:
        return _covers(self.newly_denied, self.unknown, "denied")

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "new_denies_everything_old_denies": self.new_covers_old,
            "old_denies_everything_new_denies": self.old_covers_new,
            "newly_denied": [c.to_dict() for c in self.newly_denied],
            "newly_allowed": [c.to_dict() for c in self.newly_allowed],
            "unknown": self.unknown,
            "bounds": self.bounds,
        }


def _covers(split: list[Counterexample], unknown: list[str], direction: str) -> bool | None:
    if split:
        return False
    return None if any(u.startswith(f"newly {direction}") for u in unknown) else True


# --- the gates ----------------------------------------------------------------------------------


def _gate(engine: PolicyEngine, clock: Any = None) -> CallGate:
    """A fresh gate over every rule of ``engine`` (its windows empty, its clock
    ``clock``), answering an undecided rule as ``policy diff`` does."""
    fresh = engine.fresh(clock=clock or (lambda: 0.0))
    return CallGate(fresh, on_unknown=UNDECIDED["policy diff"])


class _OneCall:
    """The gate over a set's rules of one call alone (trace rules and rate limits of
    some calls left out): it remembers nothing between calls, so one serves every
    question."""

    def __init__(self, engine: PolicyEngine) -> None:
        rules = PolicySet()
        for kind, items in engine.rules.kinds():
            rules.of(kind).extend(r for r in items if kind.one_call(r))
        judge = PolicyEngine(rules, clock=lambda: 0.0)
        judge.registered = list(engine.registered)
        self.gate = CallGate(judge, on_unknown=UNDECIDED["policy diff"])

    def denials(self, tool: str, params: dict[str, Any], state: Any) -> list[str]:
        """The rules of one call that refuse the call by itself."""
        return self.gate.decide(tool, params, state).rules


def _identical(old: PolicyEngine, new: PolicyEngine) -> bool:
    """Whether the two sets hold the same rules, in any order: then they decide
    every call and every run alike."""
    if Counter(rule_identities(old.rules)) != Counter(rule_identities(new.rules)):
        return False
    left = list(new.registered)
    for rule in old.registered:  # the same registered rules, as many times each
        if rule not in left:
            return False
        left.remove(rule)
    return not left


# --- diff ------------------------------------------------------------------------------------


def policy_diff(old: Any, new: Any, *, max_states: int | None = None) -> PolicyDiff:
    """Compare two policy sets over every possible tool call (see the module docs):
    a directory, loaded policies, a PolicySet or an engine each. The search of the
    trace rules' monitors visits at most ``max_states`` states in each direction
    (default :data:`~car_verify.rules.trace_automata.MAX_STATES`); past them that
    direction is unknown and ``bounds`` names the bound."""
    from ..rules.rate_compare import rate_splits
    from ..rules.trace_automata import MAX_STATES, call_patterns, pattern_values

    states = MAX_STATES if max_states is None else max_states

    old_refs, old_engine = gather(old)
    new_refs, new_engine = gather(new)
    result = PolicyDiff("unknown")
    if _identical(old_engine, new_engine):
        result.verdict = "equivalent"
        return result
    patterns = call_patterns([*old_engine.trace_rules, *new_engine.trace_rules])
    values = pattern_values(patterns)
    model = rules_model(
        one_call([*old_refs, *new_refs]), {} if isinstance(values, str) else values[0]
    )
    z3 = model.z3
    deny_old = z3.Or(*(model.condition(r) for r in one_call(old_refs)), z3.BoolVal(False))
    deny_new = z3.Or(*(model.condition(r) for r in one_call(new_refs)), z3.BoolVal(False))
    judges = {id(e): _OneCall(e) for e in (old_engine, new_engine)}
    directions = (
        ("newly allowed", old_engine, new_engine, deny_old, deny_new, result.newly_allowed),
        ("newly denied", new_engine, old_engine, deny_new, deny_old, result.newly_denied),
    )
    # One call at a time. A split holds as it stands when B's trace rules admit the
    # call at the start of a run; one they refuse there is left to the joint search.
    left_to_traces: set[str] = set()
    for label, a, b, denies, allows, found in directions:
        split = _split(model, z3.And(denies, z3.Not(allows)), judges[id(a)], judges[id(b)])
        if isinstance(split, Counterexample):
            if TraceGate(b.trace_rules).check(split.tool, split.parameters):
                left_to_traces.add(label)
            else:
                found.append(split)
        elif split is not None:
            result.unknown.append(f"{label}: {split}")
    for label, a, b, _, _, found in directions:
        for rate in rate_splits(a.rules.rate_limit_tool, b.rules.rate_limit_tool):
            # A call of the tool both sets admit one at a time, made at the run's times.
            admitted = _admitted_call(model, rate.tool, deny_old, deny_new)
            if admitted is None:
                continue  # a set denies every call of the tool: its rate limit never decides
            if found:
                break
            if rate.run is None:
                result.unknown.append(f"{label}: {rate.unknown}")
                continue
            params, state = admitted
            denied = _replay_run(a, rate.tool, params, state, rate.run)
            if denied and not _replay_run(b, rate.tool, params, state, rate.run):
                found.append(Counterexample(rate.tool, params, state, tuple(denied), rate.run))
            else:  # a trace rule refuses a call of the run too: not modelled here
                result.unknown.append(
                    f"{label}: the run of {rate.tool} at times {list(rate.run)} splits the "
                    "rate limits but not the whole sets (their trace rules decide too)"
                )
    # Trace rules, with every rule of one call: one search over calls both sets admit.
    needed = [d for d in directions if not d[5] and (d[1].trace_rules or d[0] in left_to_traces)]
    if not needed:
        result.verdict = _verdict(result)
        return result
    letters = (
        values
        if isinstance(values, str)
        else _letters(model, patterns, values[1], (deny_old, deny_new),
                      (judges[id(old_engine)], judges[id(new_engine)]))
    )  # fmt: skip
    apart = _rates_apart(old_engine, new_engine)
    if apart is not None and not isinstance(letters, str):
        letters.inexact.append(apart)
    for label, a, b, _, _, found in needed:
        answer = _trace_split(letters, a, b, swapped=label == "newly denied", max_states=states)
        if isinstance(answer, Counterexample):
            found.append(answer)
        elif answer is not None:
            result.unknown.append(f"{label}: {answer}")
            if "max_states=" in answer and not result.bounds:
                result.bounds.append({"name": "max_states", "value": states})
    result.verdict = _verdict(result)
    return result


def _replay_run(
    engine: PolicyEngine,
    tool: str,
    params: dict[str, Any],
    state: dict[str, Any] | None,
    run: Sequence[float],
) -> list[str]:
    """The rules that deny the last call of ``run`` through a fresh gate over every
    rule of ``engine`` (its clock at each call's time), every call of it made with
    ``params`` whatever the earlier verdicts (an admitted call succeeds)."""
    clock = [0.0]
    gate = _gate(engine, lambda: clock[0])
    denied: list[str] = []
    for t in run:
        clock[0] = t
        verdict = gate.decide(tool, params, state)
        denied = verdict.rules
        if verdict.decision != "deny":
            gate.report(tool, params, "succeeded")
    return denied


class _Letters(NamedTuple):
    """The trace search's calls, and why some may not stand for their whole kind."""

    letters: list[Letter]
    inexact: list[str]


def _letters(
    model: Model,
    patterns: Sequence[Call],
    needles: Mapping[str, int],
    denials: tuple[Any, Any],
    judges: tuple[_OneCall, _OneCall],
) -> Any:
    """One concrete call (a :class:`Letter`) per combination of the trace rules'
    patterns and the two sets' denials of one call that some call has (a call
    both sets deny cannot be a step nor a split), or why they could not all be
    found. Each call carries the old and the new set's own denials of it, decided
    by their gates once for both directions."""
    from ..rules.trace_automata import MAX_LETTERS, Letter, pattern_formula

    deny_old, deny_new = denials
    z3 = model.z3
    flags = [pattern_formula(z3, model.tool, model.params, p) for p in patterns]
    flags += [deny_old, deny_new]
    marks = [z3.Bool(f"letter:{n}") for n in range(len(flags))]
    solver = z3.Solver()
    solver.add(model.domain(), z3.Not(z3.And(deny_old, deny_new)))
    solver.add(*(m == f for m, f in zip(marks, flags, strict=True)))
    found = _Letters([], [])
    if inexact := _inexact(model):
        found.inexact.append(inexact)
    # An array is modelled by the needles it holds (for trace rules' ``contains``)
    # and by its own text (for rules of one call on the text), never both at once.
    both = sorted(p for p, n in needles.items() if n and model.reads_text(p))
    if both:
        found.inexact.append(
            f"parameter {both[0]!r} is tested with contains by a trace rule and as text by "
            "a rule of one call: an array's elements and its text are not modelled together"
        )
    while True:
        answer = check(solver, _LIMIT_MS)
        if answer == z3.unsat:
            return found
        if answer != z3.sat:
            return "z3 gave no answer within its time limit while enumerating the calls"
        call = solver.model()
        if len(found.letters) >= MAX_LETTERS:
            return f"the rules' patterns combine into more than {MAX_LETTERS} kinds of call"
        tool, params, state = model.call(call)
        old, new = (tuple(j.denials(tool, params, state)) for j in judges)
        found.letters.append(Letter(tool, params, state, (old, new)))
        solver.add(
            z3.Or(*(m != call.eval(m, model_completion=True) for m in marks), z3.BoolVal(False))
        )


def _rates_apart(old: PolicyEngine, new: PolicyEngine) -> str | None:
    """Why the trace search, whose calls lie further apart than any window, may
    miss a split: a tool the two sets limit differently whose calls a trace rule
    records (an ``at most`` rule's call, a rule's event). A call denied by rate
    changes no monitor when no rule records it, and where both sets limit a tool
    alike both deny the same calls of it; so, those calls left out, a history is
    one of spaced calls with the same monitors and the same last verdicts."""

    def limits(engine: PolicyEngine, tool: str) -> list[tuple[int, float]]:
        rules = engine.rules.rate_limit_tool
        return sorted(
            (r.max_calls, r.interval_secs) for r in rules if r.tool == tool and r.max_calls
        )

    recording = [
        r.call if r.kind == "at_most" else r.event
        for e in (old, new)
        for r in e.trace_rules
        if r.kind == "at_most" or r.event is not None
    ]
    tools = sorted({r.tool for e in (old, new) for r in e.rules.rate_limit_tool if r.max_calls})
    for tool in tools:
        if limits(old, tool) != limits(new, tool) and any(
            p is not None and (p.tool is None or p.tool == tool) for p in recording
        ):
            return (
                f"the sets limit the rate of {tool} differently and a trace rule records its "
                "calls: trace rules are compared on calls spaced wider than every window"
            )
    return None


def _trace_split(
    letters: Any, refuses: PolicyEngine, admits: PolicyEngine, *, swapped: bool, max_states: int
) -> Counterexample | str | None:
    """The shortest trace and call ``refuses`` refuses and ``admits`` admits,
    replayed through both gates; None when there is none; a reason when undecided.
    ``swapped``: ``refuses`` is the new set (the letters hold old, then new)."""
    import dataclasses

    from ..rules.trace_automata import trace_containment

    if isinstance(letters, str):
        return letters
    judged = [
        dataclasses.replace(c, denied=(c.denied[1], c.denied[0])) if swapped else c
        for c in letters.letters
    ]
    split = trace_containment(
        refuses.trace_rules, admits.trace_rules, judged, max_states=max_states
    )
    if split is None:
        return letters.inexact[0] if letters.inexact else None
    if isinstance(split, str):
        return split
    replayed = _replayed(split, refuses, admits)
    if replayed is None:
        return (
            letters.inexact[0]
            if letters.inexact
            else (f"the trace {list(split.trace)} did not replay through the gates")
        )
    denied, times = replayed
    limited = any(e.rules.rate_limit_tool for e in (refuses, admits))
    return Counterexample(
        split.call.tool,
        split.call.parameters,
        split.call.state,
        denied,
        times if limited else None,  # with rate limits, when each call is made
        trace=split.trace,
    )


def _replayed(
    split: Any, refuses: PolicyEngine, admits: PolicyEngine
) -> tuple[tuple[str, ...], tuple[float, ...]] | None:
    """The rules of ``refuses`` that deny the split's call after its run, made
    through a fresh gate over every rule of each set, each call further apart than
    any rate limit's window, and the times of the calls (the run's, then the last);
    None unless ``refuses`` admits each call of the run, ``admits`` refuses the
    ones the run says it refuses and admits the others and the last."""
    windows = [r.interval_secs for e in (refuses, admits) for r in e.rules.rate_limit_tool]
    apart = 1.0 + max(windows, default=0.0)
    clock = [0.0]
    gates = [_gate(e, lambda: clock[0]) for e in (refuses, admits)]
    times: list[float] = []

    def made(call: Any) -> list[list[str]]:
        clock[0] += apart
        times.append(clock[0])
        return [g.decide(call.tool, call.parameters, call.state).rules for g in gates]

    for step in split.steps:
        c = step.call
        ran = gates[:1] if step.alone or step.refused else gates  # where the call ran
        if step.late:
            for g in ran:
                g.report(c.tool, c.parameters, step.outcome)
            continue
        by_a, by_b = made(c)
        if by_a or bool(by_b) != bool(step.refused):
            return None
        if step.outcome is not None:
            for g in ran:
                g.report(c.tool, c.parameters, step.outcome)
    denied, admitted = made(split.call)
    if not denied or admitted:
        return None
    return tuple(dict.fromkeys(denied)), tuple(times)


def _admitted_call(
    model: Model, tool: str, *denials: Any
) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
    """Parameters (and a state) of a call of ``tool`` that none of ``denials`` deny."""
    z3 = model.z3
    solver = z3.Solver()
    solver.add(model.domain(), model.tool == literal(z3, tool), *(z3.Not(d) for d in denials))
    if check(solver, _LIMIT_MS) != z3.sat:
        return None
    _, params, state = model.call(solver.model())
    return params, state


def _verdict(result: PolicyDiff) -> Verdict:
    new_covers, old_covers = result.new_covers_old, result.old_covers_new
    if new_covers is None or old_covers is None:
        if new_covers is False and old_covers is False:
            return "incomparable"
        return "unknown"
    if new_covers and old_covers:
        return "equivalent"
    if new_covers:
        return "stricter"
    if old_covers:
        return "looser"
    return "incomparable"


def _split(model: Model, formula: Any, denies: _OneCall, allows: _OneCall) -> Any:
    """A call ``denies`` denies and ``allows`` allows, decided by both gates; None
    when no call can split them; a reason when only an unchecked answer was found."""
    z3 = model.z3
    solver = z3.Solver()
    solver.add(model.domain(), formula)
    for _ in range(16):  # a free boolean may give calls the gates do not split: block them
        answer = check(solver, _LIMIT_MS)
        if answer == z3.unsat:
            return None
        if answer != z3.sat:
            inexact = _inexact(model)
            return "z3 gave no answer within its time limit" + (f" ({inexact})" if inexact else "")
        tool, params, state = model.call(solver.model())
        denied = denies.denials(tool, params, state)
        if denied and not allows.denials(tool, params, state):
            return Counterexample(tool, params, state, tuple(denied))
        if not model.free and not model.approximate:  # pragma: no cover - the model is exact
            return f"the model's call {tool}({params}) did not split the gates"
        solver.add(_not_this(model, solver.model()))
    return _inexact(model)


def _inexact(model: Model) -> str:
    """Which rules the model holds only approximately, said for an unknown answer
    ("" when it holds them all exactly)."""
    names = sorted({*(k.split(" ", 1)[0] for k in model.free), *model.approximate})
    if not names:
        return ""
    return "depends on rules the analysis cannot express exactly: " + ", ".join(names)


def _not_this(model: Model, found: Any) -> Any:
    z3 = model.z3
    return z3.Not(
        z3.And(
            model.tool == found.eval(model.tool, model_completion=True),
            *(
                s.text == found.eval(s.text, model_completion=True)
                for s in [*model.params.values(), model.other]
            ),
        )
    )
