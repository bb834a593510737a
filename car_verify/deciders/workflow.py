"""Workflow graphs: structural soundness and precedence policies, each defect with
a witness path, as the runtime's ``verify_workflow_graph`` and
``check_workflow_policies`` answer them; and car-verify's trace rules over the
graph's paths.

A graph is ``{entry, terminals, stages, edges: [{from, to, condition?}]}``
(stages are names). :func:`verify_workflow_graph` reports, in this order:

- ``missing_entry``: the entry is not a stage (nothing else is checked);
- ``dangling_edge``: an edge names a stage that is not declared (it is left out
  of every path);
- ``unreachable_stage``, then ``unreachable_terminal``: not reachable from the
  entry;
- for each reachable stage (breadth first from the entry): ``dead_end``, a
  stage that is not a terminal and has no outgoing edge; ``no_exit_reachable``, a
  stage with outgoing edges from which no terminal can be reached (a trap, or a
  loop with no way out); each with the shortest path from the entry;
- ``no_exit_reachable`` on the entry when the graph declares no terminal at all.

:func:`unreachable_paths` (beyond the runtime, whose unreachable stages carry no
witness) gives each unreachable stage the path that leads to it from a stage
nothing leads to.

A stage or terminal listed twice has its defects reported once per listing, as
the runtime reports them.

:func:`check_workflow_policies` checks ``{kind: "precedes", earlier, later,
name?}``: every path from the entry to ``later`` visits ``earlier`` first. A
violation's witness is the shortest path that reaches ``later`` without it.

:func:`check_workflow_trace_rules` (beyond the runtime) checks car-verify's trace
rules (``docs/policies.md``) over the graph's paths from the entry, loops
included: the stages a path visits are the calls of a trace. A rule broken on
some path comes with the shortest such path as its counterexample.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, overload

from ..base.errors import InputError, deep_values_are_input_errors, reject_unknown_fields
from ..semantics.car import rust_debug_str as _rust_debug

if TYPE_CHECKING:
    from ..semantics import ProfileLike


@dataclass(frozen=True, slots=True)
class WorkflowGraph:
    entry: str
    terminals: tuple[str, ...]
    stages: tuple[str, ...]
    edges: tuple[tuple[str, str, Any], ...]  # (from, to, condition)

    @property
    def declared(self) -> set[str]:
        return set(self.stages)

    def successors(self) -> dict[str, list[str]]:
        """Each declared stage's next stages, in edge order (dangling edges left out)."""
        declared = self.declared
        out: dict[str, list[str]] = {s: [] for s in self.stages}
        for a, b, _ in self.edges:
            if a in declared and b in declared:
                out[a].append(b)
        return out


_GRAPH_FIELDS: Final = ("entry", "terminals", "stages", "edges")
_EDGE_FIELDS: Final = ("from", "to", "condition")
_POLICY_FIELDS: Final = ("kind", "earlier", "later", "name")


def parse_graph(doc: Any) -> WorkflowGraph:
    """A ``WorkflowGraph`` from JSON (text or parsed); errors name the field."""
    if isinstance(doc, (str, bytes)):
        from ..ir.model import read_json

        doc = read_json(doc)
    if not isinstance(doc, Mapping):
        raise InputError("expected a workflow graph {entry, terminals, stages, edges}", ["graph"])
    reject_unknown_fields(doc, _GRAPH_FIELDS, ["graph"])
    for name in ("entry", "stages", "edges"):
        if name not in doc:
            raise InputError(f"missing field {name!r}", ["graph"])
    if not isinstance(doc["entry"], str):
        raise InputError("expected a string", ["graph", "entry"])
    names: dict[str, list[str]] = {}
    for name in ("terminals", "stages"):
        value = doc.get(name, [])
        if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
            raise InputError("expected an array of stage names", ["graph", name])
        names[name] = value
    edges = []
    if not isinstance(doc["edges"], list):
        raise InputError("expected an array of edges", ["graph", "edges"])
    for n, edge in enumerate(doc["edges"]):
        where: list[str | int] = ["graph", "edges", n]
        if not isinstance(edge, Mapping):
            raise InputError("expected an edge {from, to, condition?}", where)
        reject_unknown_fields(edge, _EDGE_FIELDS, where, ", ".join(_EDGE_FIELDS))
        for name in ("from", "to"):
            if not isinstance(edge.get(name), str):
                raise InputError("expected a stage name", [*where, name])
        edges.append((edge["from"], edge["to"], edge.get("condition")))
    return WorkflowGraph(
        doc["entry"], tuple(names["terminals"]), tuple(names["stages"]), tuple(edges)
    )


@dataclass(frozen=True, slots=True)
class WorkflowDefect:
    kind: str
    subject: str
    witness: tuple[str, ...]
    explanation: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "subject": self.subject,
            "witness": list(self.witness),
            "explanation": self.explanation,
        }


@dataclass(slots=True)
class WorkflowVerifyReport:
    sound: bool
    defects: list[WorkflowDefect]

    def to_dict(self) -> dict[str, Any]:
        return {"sound": self.sound, "defects": [d.to_dict() for d in self.defects]}


def _paths(
    graph: WorkflowGraph, successors: Mapping[str, list[str]], avoid: str | None = None
) -> dict[str, tuple[str, ...]]:
    """The shortest path from the entry to each stage it reaches (breadth first, in
    edge order), never entering ``avoid``. An undeclared entry is still where paths
    start (the runtime's policy check reaches it), with no way out of it."""
    if graph.entry == avoid:
        return {}
    paths: dict[str, tuple[str, ...]] = {graph.entry: (graph.entry,)}
    queue = deque([graph.entry])
    while queue:
        stage = queue.popleft()
        for nxt in successors.get(stage, ()):
            if nxt not in paths and nxt != avoid:
                paths[nxt] = (*paths[stage], nxt)
                queue.append(nxt)
    return paths


def _can_exit(graph: WorkflowGraph, successors: Mapping[str, list[str]]) -> set[str]:
    """The stages from which some terminal can be reached."""
    preds: dict[str, list[str]] = {s: [] for s in successors}
    for a, nexts in successors.items():
        for b in nexts:
            preds[b].append(a)
    seen = {t for t in graph.terminals if t in successors}
    queue = deque(seen)
    while queue:
        for p in preds[queue.popleft()]:
            if p not in seen:
                seen.add(p)
                queue.append(p)
    return seen


@deep_values_are_input_errors
def verify_workflow_graph(graph: Any) -> WorkflowVerifyReport:
    """Structural defects of a workflow graph (see the module docs)."""
    g = graph if isinstance(graph, WorkflowGraph) else parse_graph(graph)
    declared = g.declared
    if g.entry not in declared:
        defect = WorkflowDefect(
            "missing_entry", g.entry, (), f"entry stage '{g.entry}' is not a declared stage"
        )
        return WorkflowVerifyReport(False, [defect])
    defects: list[WorkflowDefect] = []
    for a, b, _ in g.edges:
        missing = (a not in declared) + (b not in declared)
        if missing:
            count = "an" if missing == 1 else "two"  # the runtime's words, "two ... stage"
            explanation = f"edge '{a}'->'{b}' references {count} undeclared stage"
            defects.append(WorkflowDefect("dangling_edge", f"{a}->{b}", (), explanation))
    successors = g.successors()
    paths = _paths(g, successors)
    for stage in g.stages:  # a stage listed twice is reported twice, as the runtime does
        if stage not in paths:
            defects.append(
                WorkflowDefect(
                    "unreachable_stage",
                    stage,
                    (),
                    f"stage '{stage}' is not reachable from entry '{g.entry}'",
                )
            )
    for terminal in g.terminals:
        if terminal in declared and terminal not in paths:
            defects.append(
                WorkflowDefect(
                    "unreachable_terminal",
                    terminal,
                    (),
                    f"terminal '{terminal}' is not reachable from entry '{g.entry}'",
                )
            )
    terminals = set(g.terminals)
    exits = _can_exit(g, successors)
    for stage in g.stages:  # in declaration order, each listing
        path = paths.get(stage)
        if path is None or stage in terminals:
            continue
        if not successors[stage]:
            defects.append(
                WorkflowDefect(
                    "dead_end",
                    stage,
                    path,
                    f"stage '{stage}' is non-terminal but has no outgoing edge — execution stalls",
                )
            )
        elif stage not in exits:
            defects.append(
                WorkflowDefect(
                    "no_exit_reachable",
                    stage,
                    path,
                    f"no terminal is reachable from stage '{stage}' — it is a trap or an "
                    "exitless loop",
                )
            )
    if not g.terminals:
        defects.append(
            WorkflowDefect(
                "no_exit_reachable",
                g.entry,
                (g.entry,),
                "workflow declares no terminal stages — it can never exit",
            )
        )
    return WorkflowVerifyReport(not defects, defects)


def unreachable_paths(graph: Any) -> dict[str, tuple[str, ...]]:
    """Beyond the runtime: a witness for each declared stage the entry cannot reach,
    the shortest path that leads to it from a stage nothing leads to (every stage
    on it unreachable too, so no path from the entry enters it); when only a loop
    of unreachable stages leads to it, the path from the loop stage farthest back.
    ``(stage,)``: nothing leads to the stage at all."""
    g = graph if isinstance(graph, WorkflowGraph) else parse_graph(graph)
    successors = g.successors()
    reached = _paths(g, successors) if g.entry in g.declared else {}
    preds: dict[str, list[str]] = {s: [] for s in successors}
    for a, nexts in successors.items():
        for b in nexts:
            preds[b].append(a)
    out: dict[str, tuple[str, ...]] = {}
    for stage in dict.fromkeys(g.stages):
        if stage in reached:
            continue
        onward: dict[str, str | None] = {stage: None}  # a stage -> the next stage toward ``stage``
        queue = deque([stage])
        start = stage
        while queue:
            current = queue.popleft()
            start = current
            if not preds[current]:
                break
            for p in preds[current]:
                if p not in onward:
                    onward[p] = current
                    queue.append(p)
        path = [start]
        while (step := onward[path[-1]]) is not None:
            path.append(step)
        out[stage] = tuple(path)
    return out


# --- precedence policies --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PolicyViolation:
    policy: str
    stage: str
    witness: tuple[str, ...]
    explanation: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "stage": self.stage,
            "witness": list(self.witness),
            "explanation": self.explanation,
        }


@dataclass(slots=True)
class WorkflowPolicyReport:
    compliant: bool
    violations: list[PolicyViolation]

    def to_dict(self) -> dict[str, Any]:
        return {"compliant": self.compliant, "violations": [v.to_dict() for v in self.violations]}


def _policies(doc: Any) -> list[tuple[str, str, str]]:
    if isinstance(doc, (str, bytes)):
        from ..ir.model import read_json

        doc = read_json(doc)
    if not isinstance(doc, list):
        raise InputError("expected an array of policies", ["policies"])
    out = []
    for n, raw in enumerate(doc):
        where: list[str | int] = ["policies", n]
        if not isinstance(raw, Mapping):
            raise InputError("expected a policy {kind, earlier, later, name?}", where)
        reject_unknown_fields(raw, _POLICY_FIELDS, where, ", ".join(_POLICY_FIELDS))
        if raw.get("kind") != "precedes":
            raise InputError("unknown policy kind (expected precedes)", [*where, "kind"])
        for name in ("earlier", "later"):
            if not isinstance(raw.get(name), str):
                raise InputError("expected a stage name", [*where, name])
        label = raw.get("name")
        if label is not None and not isinstance(label, str):
            raise InputError("expected a string", [*where, "name"])
        # an empty name is kept (the runtime's answer); an absent or null one is made up
        made_up = f"{raw['earlier']} precedes {raw['later']}"
        out.append((raw["earlier"], raw["later"], made_up if label is None else label))
    return out


@deep_values_are_input_errors
def check_workflow_policies(graph: Any, policies: Any) -> WorkflowPolicyReport:
    """``precedes`` policies over a workflow graph (see the module docs)."""
    g = graph if isinstance(graph, WorkflowGraph) else parse_graph(graph)
    successors = g.successors()
    violations = []
    for earlier, later, name in _policies(policies):
        if earlier == later:
            continue
        path = _paths(g, successors, avoid=earlier).get(later)
        if path is not None:
            violations.append(
                PolicyViolation(
                    name,
                    later,
                    path,
                    f"stage '{later}' is reachable without first visiting required stage "
                    f"'{earlier}' — the precedence policy can be violated",
                )
            )
    return WorkflowPolicyReport(not violations, violations)


# --- trace rules over the graph's paths (beyond the runtime) --------------------------


#: A witness path longer than this many stages is written in JSON as a lasso: the path
#: to a loop, the loop, how many laps, and the length it is cut to.
MAX_WITNESS_STAGES = 10_000


class Lasso(Sequence[str]):
    """A long path without its copies: ``prefix``, then ``loop`` walked ``laps``
    times, cut to ``length`` stages (a loop walked 100,000 times is 10 million)."""

    def __init__(self, prefix: tuple[str, ...], loop: tuple[str, ...], laps: int, length: int):
        self.prefix, self.loop, self.laps, self.length = prefix, loop, laps, length

    def __len__(self) -> int:
        return self.length

    def _at(self, i: int) -> str:
        if i < len(self.prefix):
            return self.prefix[i]
        return self.loop[(i - len(self.prefix)) % len(self.loop)]

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self._at(i) for i in range(*index.indices(self.length)))
        if index < 0:
            index += self.length
        if not 0 <= index < self.length:
            raise IndexError(index)
        return self._at(index)

    def __iter__(self) -> Iterator[str]:
        return (self._at(i) for i in range(self.length))


@dataclass(frozen=True, slots=True)
class TraceCounterexample:
    rule: str
    path: Sequence[str]
    message: str

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "message": self.message}
        path = self.path
        if isinstance(path, Lasso) and len(path) > MAX_WITNESS_STAGES:
            # the whole path is path + loop * laps, cut to length
            out.update(path=list(path.prefix), loop=list(path.loop), laps=path.laps)
            out["length"] = len(path)
        else:
            out["path"] = list(path)
        return out


#: The most (stage, monitor state) pairs the search of one trace rule visits; past
#: it the rule is *unknown* (an ``at most N`` rule on a loop is decided without the
#: search, whatever N: see :func:`check_workflow_trace_rules`).
MAX_WORKFLOW_STATES = 1_000_000


@dataclass(frozen=True, slots=True)
class TraceUnknown:
    """A rule the search could not decide within ``bound`` (its ``value``)."""

    rule: str
    message: str
    bound: str = "max_states"
    value: int = MAX_WORKFLOW_STATES

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "message": self.message,
            "bound": {"name": self.bound, "value": self.value},
        }


@dataclass(slots=True)
class WorkflowTraceReport:
    holds: bool
    counterexamples: list[TraceCounterexample] = field(default_factory=list)
    #: Rules neither shown broken nor shown to hold, each naming the bound that stopped it.
    unknown: list[TraceUnknown] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "holds": self.holds,
            "counterexamples": [c.to_dict() for c in self.counterexamples],
        }
        if self.unknown:
            out["unknown"] = [u.to_dict() for u in self.unknown]
        return out


def check_workflow_trace_rules(
    graph: Any, rules: Iterable[Any], *, max_states: int = MAX_WORKFLOW_STATES
) -> WorkflowTraceReport:
    """Each trace rule (a ``TraceRule`` or its text) over every path of the graph from
    its entry (see the module docs). Entering a stage is a call of a tool of its name
    that succeeds. A breadth-first search over (stage, the rule's monitor state)
    covers loops, and its first violation is on a shortest path.

    The search visits at most ``max_states`` pairs; past them the rule is reported
    *unknown*, naming the bound (``holds`` is then False: nothing undecided passes).
    An ``at most N`` rule whose search could be that large is decided on the graph
    instead: a stage it counts that lies on a loop the entry reaches breaks it for
    every N (the witness walks the loop as often as it takes), and otherwise no path
    visits a counted stage twice, so it breaks only when N is less than their number,
    where the search is small."""
    from ..rules.trace import TraceRule, parse_trace_rule

    g = graph if isinstance(graph, WorkflowGraph) else parse_graph(graph)
    successors = g.successors()
    out: list[TraceCounterexample] = []
    unknown: list[TraceUnknown] = []
    for given in rules:
        rule = given if isinstance(given, TraceRule) else parse_trace_rule(str(given))
        found: Any = None
        if rule.kind == "at_most" and len(successors) * (rule.limit + 1) > max_states:
            found = _at_most_on_loops(g, successors, rule)
        if found is None:
            found = _search_rule(g, successors, rule, max_states)
        if isinstance(found, TraceCounterexample):
            out.append(found)
        elif isinstance(found, TraceUnknown):
            unknown.append(found)
    return WorkflowTraceReport(not out and not unknown, out, unknown)


def _search_rule(
    g: WorkflowGraph, successors: Mapping[str, list[str]], rule: Any, max_states: int
) -> TraceCounterexample | TraceUnknown | bool:
    """The breadth-first search of one rule: its counterexample, True when it holds, or
    unknown past ``max_states`` visited pairs."""
    from ..rules.trace import TraceGate, unwound

    gate = TraceGate([rule])
    # A path is a linked list (stage, the path before): a step copies nothing, so a
    # rule whose monitor counts far (``at most 100000 s``) walks long paths in
    # time linear in the states it visits, never quadratic in their length.
    Path_ = tuple[str, Any] | None
    queue: deque[tuple[str, tuple[int, ...], Path_]] = deque(
        [(g.entry, gate.state, (g.entry, None))]
    )
    seen: set[tuple[str, tuple[int, ...]]] = set()
    while queue:
        stage, state, path = queue.popleft()
        if (stage, state) in seen:
            continue
        if len(seen) >= max_states:
            return TraceUnknown(
                rule.to_text(),
                f"unknown: the search visited {max_states:,} (stage, monitor state) pairs, "
                f"the bound max_states={max_states:,}, without deciding the rule",
                value=max_states,
            )
        seen.add((stage, state))
        gate.restore(state)
        violations = gate.dispatch(stage, {})
        if violations:
            return TraceCounterexample(rule.to_text(), unwound(path), violations[0].reason)
        gate.record(stage, {}, "succeeded")
        after = gate.state
        for nxt in successors.get(stage, ()):
            if (nxt, after) not in seen:
                queue.append((nxt, after, (nxt, path)))
    return True


def _at_most_on_loops(
    g: WorkflowGraph, successors: Mapping[str, list[str]], rule: Any
) -> TraceCounterexample | bool | None:
    """``at most N`` decided on the graph's loops (see
    :func:`check_workflow_trace_rules`): a counterexample, True when it holds, or
    None when no counted stage is on a loop and N is less than their number (the
    search then decides it, over few states)."""
    from ..rules.trace import TraceGate

    counted = {s for s in successors if rule.call.matches(s, {})}
    before = _bfs_parents(g.entry, successors)
    reached = [s for s in before if s in counted]
    for stage in reached:
        loop = _shortest_loop(stage, successors)
        if loop is None:
            continue
        # The entry to ``stage``, then the loop back to it, as often as it takes to
        # make the limit + 1-th counted call; cut at that call.
        prefix = _path_to(stage, before)
        lap = loop[1:]
        needed = rule.limit + 1
        have = sum(1 for s in prefix if s in counted)
        per_lap = sum(1 for s in lap if s in counted)
        laps = max(0, -(-(needed - have) // per_lap))
        # Cut at the needed-th counted stage: within the last lap walked.
        length = len(prefix) + len(lap) * laps
        extra = have + per_lap * laps - needed  # counted stages past it
        while extra >= 0 and length > 0:
            length -= 1
            last = (
                prefix[length] if length < len(prefix) else lap[(length - len(prefix)) % len(lap)]
            )
            if last in counted:
                extra -= 1
        path = Lasso(prefix, lap, laps, length + 1)
        gate = TraceGate([rule])
        gate.restore((rule.limit,))
        reason = gate.dispatch(path[-1], {})[0].reason
        return TraceCounterexample(rule.to_text(), path, reason)
    if rule.limit >= len(reached):
        return True  # no loop repeats a counted stage: a path counts each at most once
    return None


def _bfs_parents(entry: str, successors: Mapping[str, list[str]]) -> dict[str, str | None]:
    """Each stage the entry reaches, with its parent on a shortest path."""
    parents: dict[str, str | None] = {entry: None}
    queue = deque([entry])
    while queue:
        stage = queue.popleft()
        for nxt in successors.get(stage, ()):
            if nxt not in parents:
                parents[nxt] = stage
                queue.append(nxt)
    return parents


def _path_to(stage: str, parents: Mapping[str, str | None]) -> tuple[str, ...]:
    path: list[str] = []
    at: str | None = stage
    while at is not None:
        path.append(at)
        at = parents[at]
    return tuple(reversed(path))


def _shortest_loop(stage: str, successors: Mapping[str, list[str]]) -> tuple[str, ...] | None:
    """The shortest path from ``stage`` back to it (both ends included), or None."""
    parents: dict[str, str | None] = {}
    queue: deque[str] = deque()
    for nxt in successors.get(stage, ()):
        if nxt == stage:
            return (stage, stage)
        if nxt not in parents:
            parents[nxt] = None
            queue.append(nxt)
    while queue:
        at = queue.popleft()
        for nxt in successors.get(at, ()):
            if nxt == stage:
                return (stage, *_path_to(at, parents), stage)
            if nxt not in parents:
                parents[nxt] = at
                queue.append(nxt)
    return None


def to_json(report: Any) -> str:
    return json.dumps(report.to_dict(), ensure_ascii=False)


# --- the runtime's workflow format ---------------------------------------------------------

#: The runtime's stage step types (``step.type``).
STEP_TYPES: Final = (
    "pattern", "proposal", "sub_workflow", "approval", "loop_until", "for_each", "dedup",
    "deliver",
)  # fmt: skip
#: The patterns a ``pattern`` step runs.
PATTERNS: Final = (
    "swarm_parallel", "swarm_sequential", "swarm_debate", "pipeline", "supervisor",
    "delegator", "map_reduce", "vote", "fleet", "adversarial_review", "tournament",
)  # fmt: skip
#: A gate that waits for a person cannot run inside a loop or a fan-out.
_NO_GATE = "body cannot be an approval gate (no pause/resume inside a loop or fan-out)"


@dataclass(frozen=True, slots=True)
class WorkflowIssue:
    severity: str  # error | warning
    stage_id: str | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"severity": self.severity, "stage_id": self.stage_id, "message": self.message}

    def __str__(self) -> str:
        named = self.stage_id is None or f"'{self.stage_id}'" in self.message
        where = "" if named else f" (stage '{self.stage_id}')"
        return f"{self.severity}: {self.message}{where}"

    def debug_text(self) -> str:
        """The issue as the runtime prints it (Rust's debug form)."""
        stage = "None" if self.stage_id is None else f"Some({_rust_debug(self.stage_id)})"
        return (
            f"WorkflowIssue {{ severity: {_rust_debug(self.severity)}, stage_id: {stage}, "
            f"message: {_rust_debug(self.message)} }}"
        )


@dataclass(slots=True)
class WorkflowReport:
    """``verify_workflow``'s answer: the runtime's fields, its issues in plain words
    (the runtime prints Rust debug text: ``to_dict(runtime=True)``)."""

    valid: bool
    has_cycles: bool
    issues: list[WorkflowIssue]
    reachable_stages: list[str]
    unreachable_stages: list[str]
    semantic: list[str] = field(default_factory=list)

    def to_dict(self, *, runtime: bool = False) -> dict[str, Any]:
        return {
            "has_cycles": self.has_cycles,
            "issues": [i.debug_text() if runtime else str(i) for i in self.issues],
            "reachable_stages": list(self.reachable_stages),
            "semantic": list(self.semantic),
            "unreachable_stages": list(self.unreachable_stages),
            "valid": self.valid,
        }


# The format is read as the runtime reads it: every field it requires is required and
# of its type, and a field it does not know is ignored (it ignores them too).


@dataclass(frozen=True, slots=True)
class Step:
    """A stage's step: its ``type`` and its fields, read (``proposal``: a model;
    ``workflow``: a :class:`Workflow`; ``body``: a Step; ``sinks``: models)."""

    type: str
    fields: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Stage:
    id: str
    name: str
    step: Step


@dataclass(frozen=True, slots=True)
class Workflow:
    id: str
    name: str
    start: str
    stages: tuple[Stage, ...]
    edges: tuple[tuple[str, str], ...]


Where = list[str | int]


def _object(doc: Any, what: str, where: Where) -> Mapping[str, Any]:
    if not isinstance(doc, Mapping):
        raise InputError(f"expected {what}", where)
    return doc


def _field(doc: Mapping[str, Any], name: str, where: Where, kind: str = "string") -> Any:
    """A required field of ``kind`` (string, array, unsigned integer)."""
    if name not in doc:
        raise InputError(f"missing field {name!r}", where)
    value = doc[name]
    ok = {
        "string": isinstance(value, str),
        "array": isinstance(value, list),
        "unsigned integer": type(value) is int and 0 <= value < 2**32,
    }[kind]
    if not ok:
        raise InputError(f"expected {'an' if kind[0] in 'au' else 'a'} {kind}", [*where, name])
    return value


def _optional(doc: Mapping[str, Any], name: str, where: Where, check: Any, what: str) -> None:
    value = doc.get(name)
    if value is not None and not check(value):
        raise InputError(f"expected {what}", [*where, name])


def _is_map(value: Any) -> bool:
    return isinstance(value, Mapping)


def _proposal_of(doc: Any, where: Where, sem: Any) -> Any:
    from ..ir.model import load

    try:
        model = load(_object(doc, "a proposal {actions, ...}", where))
        sem.refuse(model)
    except InputError as err:
        raise err.under(*where) from None
    return model


def _read_step(doc: Any, where: Where, sem: Any) -> Step:
    step = _object(doc, "a step {type, ...}", where)
    kind = step.get("type")
    if kind not in STEP_TYPES:
        raise InputError(f"expected a step type, one of {', '.join(STEP_TYPES)}", [*where, "type"])
    fields: dict[str, Any] = {}
    if kind == "pattern":
        if step.get("pattern") not in PATTERNS:
            raise InputError(
                f"expected a pattern, one of {', '.join(PATTERNS)}", [*where, "pattern"]
            )
        _field(step, "task", where)
        for n, agent in enumerate(_field(step, "agents", where, "array")):
            at: Where = [*where, "agents", n]
            _object(agent, "an agent {name, system_prompt, tools, max_turns, metadata}", at)
            _field(agent, "name", at)
            _field(agent, "system_prompt", at)
            for t, tool in enumerate(_field(agent, "tools", at, "array")):
                if not isinstance(tool, str):
                    raise InputError("expected a tool name", [*at, "tools", t])
            _field(agent, "max_turns", at, "unsigned integer")
            if not _is_map(agent.get("metadata")):
                raise InputError("missing field 'metadata' (an object)", at)
        _optional(step, "config", where, _is_map, "an object")
    elif kind == "proposal":
        if "proposal" not in step:
            raise InputError("missing field 'proposal'", where)
        fields["proposal"] = _proposal_of(step["proposal"], [*where, "proposal"], sem)
    elif kind == "sub_workflow":
        if "workflow" not in step:
            raise InputError("missing field 'workflow'", where)
        fields["workflow"] = _read_workflow(step["workflow"], [*where, "workflow"], sem)
    elif kind == "approval":
        _field(step, "prompt", where)
        fields["output_key"] = _field(step, "output_key", where)
    elif kind in ("loop_until", "for_each"):
        if "body" not in step:
            raise InputError("missing field 'body'", where)
        fields["body"] = _read_step(step["body"], [*where, "body"], sem)
        if kind == "loop_until":
            fields["max_iterations"] = _field(step, "max_iterations", where, "unsigned integer")
            until = step.get("until")
            if until is not None:
                from ..ir.model import Precondition

                if not isinstance(until, list):
                    raise InputError("expected an array of preconditions", [*where, "until"])
                for n, pre in enumerate(until):
                    try:
                        Precondition.from_dict(pre)
                    except InputError as err:
                        raise err.under(*where, "until", n) from None
        else:
            fields["items_from"] = _field(step, "items_from", where)
    elif kind == "dedup":
        for name in ("items_from", "into", "store"):
            fields[name] = _field(step, name, where)
    else:  # deliver
        sinks = _field(step, "sinks", where, "array")
        fields["sinks"] = [_proposal_of(s, [*where, "sinks", n], sem) for n, s in enumerate(sinks)]
    return Step(kind, fields)


def _read_workflow(doc: Any, where: Where, sem: Any) -> Workflow:
    if isinstance(doc, (str, bytes)):
        from ..ir.model import read_json

        doc = read_json(doc)
    wf = _object(doc, "a workflow {id, name, start, stages, edges}", where)
    ident, name, start = (_field(wf, f, where) for f in ("id", "name", "start"))
    _optional(wf, "metadata", where, _is_map, "an object")
    _optional(wf, "max_iterations", where, lambda v: type(v) is int and v >= 0, "a count")
    stages = []
    for n, stage in enumerate(_field(wf, "stages", where, "array")):
        at: Where = [*where, "stages", n]
        _object(stage, "a stage {id, name, step}", at)
        sid, sname = _field(stage, "id", at), _field(stage, "name", at)
        if "step" not in stage:
            raise InputError("missing field 'step'", at)
        _optional(stage, "timeout_ms", at, lambda v: type(v) is int and v >= 0, "milliseconds")
        _optional(stage, "metadata", at, _is_map, "an object")
        stages.append(Stage(sid, sname, _read_step(stage["step"], [*at, "step"], sem)))
    edges = []
    for n, edge in enumerate(_field(wf, "edges", where, "array")):
        at = [*where, "edges", n]
        _object(edge, "an edge {from, to}", at)
        edges.append((_field(edge, "from", at), _field(edge, "to", at)))
        _optional(edge, "label", at, lambda v: isinstance(v, str), "a string")
    return Workflow(ident, name, start, tuple(stages), tuple(edges))


@deep_values_are_input_errors
def verify_workflow(workflow: Any, *, profile: ProfileLike = None) -> WorkflowReport:
    """The runtime's static check of its workflow format ``{id, name, start,
    stages: [{id, name, step: {type, ...}}], edges: [{from, to}]}``.

    The document is read as the runtime reads it (each step type's fields, the
    proposals in it modelled). Then, in the runtime's order: the start stage
    exists, stage ids are unique, edges name known stages; each stage's own
    fields (an approval's ``output_key``, a dedup's three keys, a deliver's
    sinks); every stage is reachable from the start and whether a cycle is
    reachable (warnings); then what each stage holds: a proposal's verify errors,
    a loop's bound, a loop's or a fan-out's body, a deliver's sinks, a
    sub-workflow checked whole. ``semantic``: a proposal stage depending on a
    state key no stage produces. Nested proposals are verified under ``profile``
    (the default ``car``: the runtime's verify).
    """
    from ..semantics import semantics_of

    sem = semantics_of(profile)
    return _verify(_read_workflow(workflow, ["workflow"], sem), sem)


def _verify(wf: Workflow, sem: Any) -> WorkflowReport:
    issues: list[WorkflowIssue] = []
    ids = [stage.id for stage in wf.stages]
    known = set(ids)
    seen: set[str] = set()
    for stage_id in ids:
        if stage_id in seen:
            issues.append(WorkflowIssue("error", stage_id, f"duplicate stage id '{stage_id}'"))
        seen.add(stage_id)
    if wf.start not in known:
        issues.append(WorkflowIssue("error", None, f"start stage '{wf.start}' does not exist"))
    for a, b in wf.edges:
        if a not in known:
            issues.append(WorkflowIssue("error", None, f"edge from '{a}' references unknown stage"))
        if b not in known:
            issues.append(WorkflowIssue("error", None, f"edge to '{b}' references unknown stage"))
    issues.extend(_own_fields(wf))
    succ: dict[str, list[str]] = {}
    for a, b in wf.edges:
        succ.setdefault(a, []).append(b)
    walked: list[str] = []  # from the start along every edge, declared or not
    order = deque([wf.start])
    found = {wf.start}
    while order:
        stage_id = order.popleft()
        walked.append(stage_id)
        for nxt in succ.get(stage_id, ()):
            if nxt not in found:
                found.add(nxt)
                order.append(nxt)
    reached = walked if wf.start in known else []  # a missing start reaches nothing
    reachable = set(reached)
    unreachable = [s for s in dict.fromkeys(ids) if s not in reachable]
    for stage_id in unreachable:
        issues.append(
            WorkflowIssue("warning", stage_id, f"stage '{stage_id}' is unreachable from start")
        )
    cyclic = _reaches_cycle(walked, succ)  # a cycle the start leads to (declared or not)
    if cyclic:
        issues.append(
            WorkflowIssue(
                "warning", None, "workflow contains cycles (ensure max_iterations is set)"
            )
        )
    for stage in wf.stages:
        issues.extend(_contents(stage, sem))
    return WorkflowReport(
        not any(i.severity == "error" for i in issues),
        cyclic,
        issues,
        reached,
        unreachable,
        _unproduced(wf),
    )


def _own_fields(wf: Workflow) -> list[WorkflowIssue]:
    """What the runtime checks of the stages' own fields, before reachability: the
    approvals, then the dedups, then the delivers (each in declaration order)."""
    out = []
    for stage in wf.stages:
        sid = stage.id
        if stage.step.type == "approval" and not stage.step.fields["output_key"].strip():
            message = f"approval stage '{sid}' has an empty output_key"
            out.append(WorkflowIssue("error", sid, message))
    for stage in wf.stages:
        sid = stage.id
        if stage.step.type == "dedup":
            for name in ("items_from", "into", "store"):
                if not stage.step.fields[name].strip():
                    message = f"dedup stage '{sid}' requires a non-empty {name}"
                    out.append(WorkflowIssue("error", sid, message))
    leaving = {a for a, _ in wf.edges}
    for stage in wf.stages:
        sid = stage.id
        if stage.step.type == "deliver":
            if not stage.step.fields["sinks"]:
                message = f"deliver stage '{sid}' requires at least one sink"
                out.append(WorkflowIssue("error", sid, message))
            if sid in leaving:
                message = (
                    f"deliver stage '{sid}' has outgoing edges; deliver is intended as a "
                    "terminal fan-out"
                )
                out.append(WorkflowIssue("warning", sid, message))
    return out


def _errors_of(proposal: Any, sem: Any, sid: str, label: str) -> list[WorkflowIssue]:
    from ..api import verify

    result = verify(proposal, profile=sem)
    return [WorkflowIssue("error", sid, f"[{label}] {e.message}") for e in result.errors]


def _nested(wf: Workflow, sem: Any, sid: str, label: str) -> list[WorkflowIssue]:
    """A sub-workflow's issues, under the stage that holds it."""
    return [
        WorkflowIssue(i.severity, f"{sid}.{i.stage_id or ''}", f"[{label}] {i.message}")
        for i in _verify(wf, sem).issues
    ]


def _contents(stage: Stage, sem: Any) -> list[WorkflowIssue]:
    """What a stage holds, checked after reachability: proposals, loops, fan-outs,
    sinks and sub-workflows."""
    step, sid = stage.step, stage.id
    if step.type == "proposal":
        return _errors_of(step.fields["proposal"], sem, sid, "proposal")
    if step.type == "deliver":
        return [
            issue
            for n, sink in enumerate(step.fields["sinks"])
            for issue in _errors_of(sink, sem, sid, f"deliver sink {n} ({sink.id})")
        ]
    if step.type == "sub_workflow":
        return _nested(step.fields["workflow"], sem, sid, f"sub-workflow {sid}")
    if step.type in ("loop_until", "for_each"):
        return _repeated(step, sid, sem)
    return []


def _repeated(step: Step, sid: str, sem: Any) -> list[WorkflowIssue]:
    """A loop's or a fan-out's own checks, then its body's."""
    kind = step.type
    out = []
    if kind == "loop_until" and step.fields["max_iterations"] < 1:
        message = f"loop_until stage '{sid}' requires max_iterations >= 1"
        out.append(WorkflowIssue("error", sid, message))
    if kind == "for_each" and not step.fields["items_from"].strip():
        message = f"for_each stage '{sid}' requires a non-empty items_from"
        out.append(WorkflowIssue("error", sid, message))
    body = step.fields["body"]
    if body.type == "approval":
        out.append(WorkflowIssue("error", sid, f"{kind} stage '{sid}' {_NO_GATE}"))
    elif body.type == "proposal":
        out.extend(_errors_of(body.fields["proposal"], sem, sid, f"{kind} body proposal"))
    elif body.type == "deliver":
        sinks = body.fields["sinks"]
        if not sinks:
            message = (
                f"{kind} stage '{sid}' has a deliver body with no sinks "
                "(requires at least one sink)"
            )
            out.append(WorkflowIssue("error", sid, message))
        for n, sink in enumerate(sinks):
            out.extend(_errors_of(sink, sem, sid, f"{kind} body deliver sink {n}"))
    elif body.type == "sub_workflow":
        out.extend(_nested(body.fields["workflow"], sem, sid, f"{kind} body sub-workflow"))
    elif body.type in ("loop_until", "for_each"):
        out.extend(_repeated(body, sid, sem))
    return out  # a pattern or a dedup body: nothing more


def _unproduced(wf: Workflow) -> list[str]:
    """The runtime's ``semantic`` findings: each state dependency of a proposal stage's
    actions that no stage produces. A stage produces a proposal's (or a loop's
    proposal body's) declared effects, an approval's ``output_key``, a dedup's
    ``into``; what a fan-out, a sink or a sub-workflow writes is not counted."""
    produced: set[str] = set()
    for stage in wf.stages:
        step = stage.step
        if step.type == "loop_until" and step.fields["body"].type == "proposal":
            step = step.fields["body"]
        if step.type == "proposal":
            for action in step.fields["proposal"].actions:
                produced.update(action.expected_effects)
        elif step.type == "approval":
            produced.add(step.fields["output_key"])
        elif step.type == "dedup":
            produced.add(step.fields["into"])
    return [
        f"stage '{stage.id}' depends on state key '{key}', which no stage produces"
        for stage in wf.stages
        if stage.step.type == "proposal"
        for action in stage.step.fields["proposal"].actions
        for key in action.state_dependencies
        if key not in produced
    ]


def _reaches_cycle(reached: list[str], succ: Mapping[str, list[str]]) -> bool:
    """Whether the stages reached from the start hold a cycle (a self-loop too)."""
    inside = set(reached)
    colour = dict.fromkeys(reached, 0)

    def visit(n: str) -> bool:
        colour[n] = 1
        for m in succ.get(n, ()):
            if m not in inside:
                continue
            if colour[m] == 1 or (colour[m] == 0 and visit(m)):
                return True
        colour[n] = 2
        return False

    return any(colour[n] == 0 and visit(n) for n in reached)
