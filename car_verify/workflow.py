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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from .errors import InputError, deep_values_are_input_errors, reject_unknown_fields


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
        from .model import read_json

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
    for stage in dict.fromkeys(g.stages):
        if stage not in paths:
            defects.append(
                WorkflowDefect(
                    "unreachable_stage",
                    stage,
                    (),
                    f"stage '{stage}' is not reachable from entry '{g.entry}'",
                )
            )
    for terminal in dict.fromkeys(g.terminals):
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
    for stage in dict.fromkeys(g.stages):  # in declaration order
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
        from .model import read_json

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
        out.append(
            (raw["earlier"], raw["later"], label or f"{raw['earlier']} precedes {raw['later']}")
        )
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


@dataclass(frozen=True, slots=True)
class TraceCounterexample:
    rule: str
    path: tuple[str, ...]
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "path": list(self.path), "message": self.message}


@dataclass(slots=True)
class WorkflowTraceReport:
    holds: bool
    counterexamples: list[TraceCounterexample] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"holds": self.holds, "counterexamples": [c.to_dict() for c in self.counterexamples]}


def check_workflow_trace_rules(graph: Any, rules: Iterable[Any]) -> WorkflowTraceReport:
    """Each trace rule (a ``TraceRule`` or its text) over every path of the graph from
    its entry (see the module docs). Entering a stage is a call of a tool of its name
    that succeeds. A breadth-first search over (stage, the rule's monitor state)
    covers loops, and its first violation is on a shortest path."""
    from .trace import TraceGate, TraceRule, parse_trace_rule, unwound

    g = graph if isinstance(graph, WorkflowGraph) else parse_graph(graph)
    successors = g.successors()
    out = []
    for given in rules:
        rule = given if isinstance(given, TraceRule) else parse_trace_rule(str(given))
        gate = TraceGate([rule])
        # A path is a linked list (stage, the path before): a step copies nothing, so a
        # rule whose monitor counts far (``at most 100000 s``) walks long paths in
        # time linear in the states it visits, never quadratic in their length.
        Path_ = tuple[str, Any] | None
        queue: deque[tuple[str, tuple[int, ...], Path_]] = deque(
            [(g.entry, gate.state, (g.entry, None))]
        )
        seen: set[tuple[str, tuple[int, ...]]] = set()
        broken: tuple[tuple[str, ...], str] | None = None
        while queue and broken is None:
            stage, state, path = queue.popleft()
            if (stage, state) in seen:
                continue
            seen.add((stage, state))
            gate.restore(state)
            violations = gate.dispatch(stage, {})
            if violations:
                broken = (unwound(path), violations[0].reason)
                break
            gate.record(stage, {}, "succeeded")
            after = gate.state
            for nxt in successors.get(stage, ()):
                if (nxt, after) not in seen:
                    queue.append((nxt, after, (nxt, path)))
        if broken is not None:
            out.append(TraceCounterexample(rule.to_text(), broken[0], broken[1]))
    return WorkflowTraceReport(not out, out)


def to_json(report: Any) -> str:
    return json.dumps(report.to_dict(), ensure_ascii=False)


# --- the runtime's workflow format ---------------------------------------------------------

#: The runtime's stage step types (``step.type``).
STEP_TYPES: Final = (
    "pattern", "proposal", "sub_workflow", "approval", "loop_until", "for_each", "dedup",
    "deliver",
)  # fmt: skip


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


@dataclass(slots=True)
class WorkflowReport:
    """``verify_workflow``'s answer: the runtime's fields, its issues in plain words
    (the runtime prints Rust debug text), and what was not checked (``notes``)."""

    valid: bool
    has_cycles: bool
    issues: list[WorkflowIssue]
    reachable_stages: list[str]
    unreachable_stages: list[str]
    semantic: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "has_cycles": self.has_cycles,
            "issues": [str(i) for i in self.issues],
            "reachable_stages": list(self.reachable_stages),
            "semantic": list(self.semantic),
            "unreachable_stages": list(self.unreachable_stages),
            "valid": self.valid,
        }


def _workflow_doc(doc: Any) -> tuple[str, list[str], list[tuple[str, str]]]:
    if isinstance(doc, (str, bytes)):
        from .model import read_json

        doc = read_json(doc)
    if not isinstance(doc, Mapping):
        raise InputError("expected a workflow {id, name, start, stages, edges}", ["workflow"])
    for name in ("id", "name", "start", "stages", "edges"):
        if name not in doc:
            raise InputError(f"missing field {name!r}", ["workflow"])
    for name in ("id", "name", "start"):
        if not isinstance(doc[name], str):
            raise InputError("expected a string", ["workflow", name])
    if not isinstance(doc["stages"], list):
        raise InputError("expected an array of stages", ["workflow", "stages"])
    ids = []
    for n, stage in enumerate(doc["stages"]):
        where: list[str | int] = ["workflow", "stages", n]
        if not isinstance(stage, Mapping):
            raise InputError("expected a stage {id, name, step}", where)
        for name in ("id", "name", "step"):
            if name not in stage:
                raise InputError(f"missing field {name!r}", where)
        if not isinstance(stage["id"], str):
            raise InputError("expected a string", [*where, "id"])
        step = stage["step"]
        if not isinstance(step, Mapping) or step.get("type") not in STEP_TYPES:
            kinds = ", ".join(STEP_TYPES)
            raise InputError(
                f"expected a step {{type, ...}}, type one of {kinds}", [*where, "step"]
            )
        ids.append(stage["id"])
    if not isinstance(doc["edges"], list):
        raise InputError("expected an array of edges", ["workflow", "edges"])
    edges = []
    for n, edge in enumerate(doc["edges"]):
        where = ["workflow", "edges", n]
        if not isinstance(edge, Mapping):
            raise InputError("expected an edge {from, to}", where)
        for name in ("from", "to"):
            if not isinstance(edge.get(name), str):
                raise InputError("expected a stage id", [*where, name])
        edges.append((edge["from"], edge["to"]))
    return doc["start"], ids, edges


@deep_values_are_input_errors
def verify_workflow(workflow: Any) -> WorkflowReport:
    """The runtime's static check of its workflow format ``{id, name, start,
    stages: [{id, name, step: {type, ...}}], edges: [{from, to}]}``: the start
    stage exists, stage ids are unique, edges name known stages, every stage is
    reachable from the start (warnings), and whether a cycle is reachable
    (a warning: set ``max_iterations``). Reachability follows every edge, to
    unknown stages too, as the runtime's does. Each step's own fields are not
    checked (the runtime's step schema is not documented): ``notes`` says so."""
    start, ids, edges = _workflow_doc(workflow)
    issues: list[WorkflowIssue] = []
    known = set(ids)
    seen: set[str] = set()
    for stage in ids:
        if stage in seen:
            issues.append(WorkflowIssue("error", stage, f"duplicate stage id '{stage}'"))
        seen.add(stage)
    if start not in known:
        issues.append(WorkflowIssue("error", None, f"start stage '{start}' does not exist"))
    for a, b in edges:
        if a not in known:
            issues.append(WorkflowIssue("error", None, f"edge from '{a}' references unknown stage"))
        if b not in known:
            issues.append(WorkflowIssue("error", None, f"edge to '{b}' references unknown stage"))
    succ: dict[str, list[str]] = {}
    for a, b in edges:
        succ.setdefault(a, []).append(b)
    walked: list[str] = []  # from the start along every edge, declared or not
    order = deque([start])
    found = {start}
    while order:
        stage = order.popleft()
        walked.append(stage)
        for nxt in succ.get(stage, ()):
            if nxt not in found:
                found.add(nxt)
                order.append(nxt)
    reached = walked if start in known else []  # a missing start reaches nothing
    reachable = set(reached)
    unreachable = [s for s in dict.fromkeys(ids) if s not in reachable]
    for stage in unreachable:
        issues.append(WorkflowIssue("warning", stage, f"stage '{stage}' is unreachable from start"))
    cyclic = _reaches_cycle(walked, succ)  # a cycle the start leads to (declared or not)
    if cyclic:
        issues.append(
            WorkflowIssue(
                "warning", None, "workflow contains cycles (ensure max_iterations is set)"
            )
        )
    notes = ["each stage's step fields are not checked, only its type"]
    return WorkflowReport(
        not any(i.severity == "error" for i in issues),
        cyclic,
        issues,
        reached,
        unreachable,
        [],
        notes,
    )


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
