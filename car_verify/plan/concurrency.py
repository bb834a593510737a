"""Concurrency: the anomalies of agents that read, think and then commit, and
whether a schedule of such operations is serializable.

An operation (``AgentOp``) is ``{id, agent, read_set, write_set, tools_read,
tools_written, depends_on, read_at, commit_at}``: it reads its keys (and consults
its tools) at ``read_at`` and commits its writes at ``commit_at`` (both default
0). :func:`analyze_concurrency` reports, as ``car_runtime.analyze_concurrency``
does, in this order:

- ``stale_generation`` (a lost update): an op read a key and writes it, and
  another op committed a write of that key strictly between its read and its
  commit;
- ``phantom_tool``: an op consulted a tool, and another op changed that tool
  (``tools_written``) strictly between its read and its commit;
- ``causal_cascade``: an op depends on another that commits after it;
- ``tool_effect_reorder``: two ops write the same key, their windows
  ``[read_at, commit_at]`` overlap, and neither depends on the other (through
  ``depends_on``, followed through): their effects land in either order.

Two ops may share an id; ``depends_on`` then names them as the runtime reads it
(``causal_cascade`` compares with the first op of the id; followed through, and
in the serialization graph, the id is its last op). Under ``car`` the answer is
given with a note in :attr:`ConcurrencyReport.notes`; under ``strict`` the ops are
refused, naming the repeat (the profile's ``answers_repeated_op_ids``).

``level`` is the most severe anomaly's: ``l0`` (a causal cascade), ``l1`` (stale
generation), ``l2`` (a phantom tool), ``l3`` (a reorder), ``l4`` (none).
``serializable`` is decided separately: the serialization graph (a node per op, an
edge for each write-write, write-read and read-write conflict, in time order, two
writes committed at the same time ordered by id, and for each ``depends_on``) has
no cycle. The two disagree on write skew (ops that read
overlapping keys and write disjoint ones match no anomaly, ``l4``, and are not
serializable); a cycle is reported in :attr:`ConcurrencyReport.cycle`.

:func:`gate_concurrency` maps a report to remediations, as the runtime's
``gate_concurrency`` does.

:func:`ops_from_proposal` derives the ops of a proposal's actions (their read and
write sets as ``transaction_check`` reads them), each level of the DAG one
step of time, so a plan can be checked as the schedule the executor runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ..base.errors import (
    InputError,
    UsageError,
    deep_values_are_input_errors,
    reject_unknown_fields,
)

if TYPE_CHECKING:
    from ..semantics import ProfileLike

_OP_FIELDS: Final = (
    "id", "agent", "read_set", "write_set", "tools_read", "tools_written", "depends_on",
    "read_at", "commit_at",
)  # fmt: skip
LEVELS: Final = ("l0", "l1", "l2", "l3", "l4")
_LEVEL_OF: Final = {
    "causal_cascade": "l0",
    "stale_generation": "l1",
    "phantom_tool": "l2",
    "tool_effect_reorder": "l3",
}


@dataclass(frozen=True, slots=True)
class AgentOp:
    id: str
    agent: str | None = None
    read_set: tuple[str, ...] = ()
    write_set: tuple[str, ...] = ()
    tools_read: tuple[str, ...] = ()
    tools_written: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()
    read_at: int = 0
    commit_at: int = 0


def parse_ops(doc: Any) -> list[AgentOp]:
    """The runtime's ``AgentOp`` array; errors name the op and the field."""
    if isinstance(doc, (str, bytes)):
        from ..ir.model import read_json

        doc = read_json(doc)
    if not isinstance(doc, list):
        raise InputError("expected an array of ops", ["ops"])
    out = []
    for n, raw in enumerate(doc):
        where: list[str | int] = ["ops", n]
        if not isinstance(raw, Mapping):
            raise InputError("expected an op {id, read_set, write_set, ...}", where)
        reject_unknown_fields(raw, _OP_FIELDS, where)
        if not isinstance(raw.get("id"), str):
            raise InputError("expected a string", [*where, "id"])
        agent = raw.get("agent")
        if agent is not None and not isinstance(agent, str):
            raise InputError("expected a string", [*where, "agent"])
        lists: dict[str, tuple[str, ...]] = {}
        for name in ("read_set", "write_set", "tools_read", "tools_written", "depends_on"):
            value = raw.get(name, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InputError("expected an array of strings", [*where, name])
            lists[name] = tuple(value)
        times = {}
        for name in ("read_at", "commit_at"):
            value = raw.get(name, 0)
            if type(value) is not int or value < 0:
                raise InputError("expected a time (an integer, 0 or more)", [*where, name])
            times[name] = value
        out.append(
            AgentOp(
                raw["id"],
                agent,
                read_set=lists["read_set"],
                write_set=lists["write_set"],
                tools_read=lists["tools_read"],
                tools_written=lists["tools_written"],
                depends_on=lists["depends_on"],
                read_at=times["read_at"],
                commit_at=times["commit_at"],
            )
        )
    return out


def repeated_ids(ops: Sequence[AgentOp]) -> dict[str, list[int]]:
    """Each op id that more than one op has, with their positions (in order)."""
    where: dict[str, list[int]] = {}
    for n, op in enumerate(ops):
        where.setdefault(op.id, []).append(n)
    return {name: at for name, at in where.items() if len(at) > 1}


def _repeat_note(name: str, at: Sequence[int]) -> str:
    places = ", ".join(f"ops[{n}]" for n in at)
    return (
        f"op id {name!r} is used by {places}: a depends_on naming it is read as the runtime "
        "reads it (causal_cascade compares with the first of them; followed through, and in "
        "the serialization graph, it is the last of them); give each op its own id to say "
        "which one you mean"
    )


@dataclass(frozen=True, slots=True)
class Anomaly:
    anomaly: str
    key: str
    ops: tuple[str, str]
    explanation: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "anomaly": self.anomaly,
            "key": self.key,
            "ops": list(self.ops),
            "explanation": self.explanation,
        }


@dataclass(slots=True)
class ConcurrencyReport:
    level: str
    serializable: bool
    anomalies: list[Anomaly]
    #: A cycle of the serialization graph (op ids, the first repeated at the end)
    #: when the schedule is not serializable: car-verify's, the runtime gives none.
    cycle: list[str] = field(default_factory=list)
    #: What the answer rests on that the ops leave open (an op id that repeats):
    #: car-verify's, the runtime says nothing.
    notes: list[str] = field(default_factory=list)

    def to_dict(self, *, extras: bool = False) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "level": self.level,
            "serializable": self.serializable,
            "anomalies": [a.to_dict() for a in self.anomalies],
        }
        if extras:
            doc["cycle"] = list(self.cycle)
            doc["notes"] = list(self.notes)
        return doc


def _causal(ops: Sequence[AgentOp]) -> list[set[str]]:
    """Each op -> every op id it depends on, followed through: its own
    ``depends_on``, then the ``depends_on`` of the op each id names, where an id
    that repeats names its last op (the runtime's reading). A search per op: a
    cycle of ``depends_on`` must not cut a closure short."""
    direct = {op.id: op.depends_on for op in ops}  # the last op of an id
    closed: list[set[str]] = []
    for op in ops:
        seen: set[str] = set()
        stack = list(op.depends_on)
        while stack:
            name = stack.pop()
            if name not in seen:
                seen.add(name)
                stack.extend(direct.get(name, ()))
        closed.append(seen)
    return closed


def _anomalies(ops: Sequence[AgentOp], *, indexed: bool = True) -> list[Anomaly]:
    """The anomalies, in document order. Only ops that share a key, a tool or a
    dependency can make one, so each op is paired with those (found through an
    index by key), not with every op: linear in ops that share nothing.
    ``indexed=False`` pairs every op with every other (the plain reading, which
    the tests check this one against); both judge a pair with the same code."""
    writers: dict[str, list[int]] = {}
    tool_writers: dict[str, list[int]] = {}
    first: dict[str, int] = {}  # an id's first op: the one a causal_cascade compares with
    for n, op in enumerate(ops):
        for key in dict.fromkeys(op.write_set):
            writers.setdefault(key, []).append(n)
        for tool in dict.fromkeys(op.tools_written):
            tool_writers.setdefault(tool, []).append(n)
        first.setdefault(op.id, n)
    found: list[Anomaly] = []
    for m, b in enumerate(ops):  # per op, and per other op: stale reads, phantom tools,
        reads = [k for k in dict.fromkeys(b.read_set) if k in b.write_set]  # early commits
        if indexed:
            near = {n for k in reads for n in writers.get(k, ())}
            near.update(n for t in dict.fromkeys(b.tools_read) for n in tool_writers.get(t, ()))
            near.update(first[name] for name in b.depends_on if name in first)
        else:
            near = set(range(len(ops)))
        near.discard(m)
        for n in sorted(near):
            found += _against(b, ops[n], reads, first=first[ops[n].id] == n)
    reorder = []
    causal = _causal(ops)
    for i, a in enumerate(ops):
        if indexed:
            later = sorted({j for k in dict.fromkeys(a.write_set) for j in writers[k] if j > i})
        else:
            later = list(range(i + 1, len(ops)))
        for j in later:
            reorder += _reordered(a, ops[j], causal[i], causal[j])
    return found + reorder


def _against(b: AgentOp, a: AgentOp, reads: Sequence[str], *, first: bool) -> list[Anomaly]:
    """What op ``a`` does to op ``b``: a write into ``b``'s read-then-written keys or
    a change of a tool ``b`` consulted inside ``b``'s window, or a commit after
    ``b``'s although ``b`` depends on ``a`` (when ``a`` is the ``first`` op of its
    id: the one a dependency on an id that repeats is compared with)."""
    out = []
    window = b.read_at < a.commit_at < b.commit_at
    for key in reads:
        if window and key in a.write_set:
            out.append(
                Anomaly(
                    "stale_generation",
                    key,
                    (b.id, a.id),
                    f"op '{b.id}' read '{key}', generated, then committed a write based on "
                    f"a value op '{a.id}' overwrote in between (lost update)",
                )
            )
    for tool in dict.fromkeys(b.tools_read):
        if window and tool in a.tools_written:
            out.append(
                Anomaly(
                    "phantom_tool",
                    tool,
                    (b.id, a.id),
                    f"op '{b.id}' consulted tool '{tool}' during generate, but op '{a.id}' "
                    "changed the registry entry mid-window (phantom tool)",
                )
            )
    for _ in range(b.depends_on.count(a.id) if first and a.commit_at > b.commit_at else 0):
        out.append(
            Anomaly(
                "causal_cascade",
                a.id,
                (b.id, a.id),
                f"op '{b.id}' causally depends on '{a.id}' but committed before it "
                "(causality violated)",
            )
        )
    return out


def _reordered(a: AgentOp, b: AgentOp, before_a: set[str], before_b: set[str]) -> list[Anomaly]:
    """Two ops (``a`` first in the document) whose windows overlap, unordered by
    ``depends_on`` (``before_a``, ``before_b``: the ids each depends on, followed
    through), writing the same keys."""
    if a.id in before_b or b.id in before_a:
        return []
    if not (a.read_at <= b.commit_at and b.read_at <= a.commit_at):
        return []
    return [
        Anomaly(
            "tool_effect_reorder",
            key,
            (a.id, b.id),
            f"ops '{a.id}' and '{b.id}' concurrently write '{key}' with no causal "
            "ordering — their effects land in a nondeterministic order (reorder)",
        )
        for key in dict.fromkeys(a.write_set)
        if key in b.write_set
    ]


def _edges(ops: Sequence[AgentOp], *, indexed: bool = True) -> list[set[int]]:
    """The serialization graph: a node per op (by position: two ops that share an id
    are two nodes), an edge for each conflict in time order and each
    ``depends_on`` (from the last op of the id it names, as the runtime reads an id
    that repeats; never an op to itself). Only ops that share a key (or a tool) can
    conflict: each op is paired with those, through an index by key
    (``indexed=False``: with every op, the plain reading the tests check against)."""
    out: list[set[int]] = [set() for _ in ops]
    last = {op.id: n for n, op in enumerate(ops)}
    # a tool is shared state too: consulting it reads it, changing it writes it
    reads = [{*op.read_set, *(("tool", t) for t in op.tools_read)} for op in ops]
    writes = [{*op.write_set, *(("tool", t) for t in op.tools_written)} for op in ops]
    touching: dict[Any, list[int]] = {}
    for n in range(len(ops)):
        for key in reads[n] | writes[n]:
            touching.setdefault(key, []).append(n)
    for i, a in enumerate(ops):
        if indexed:
            near = sorted({j for key in reads[i] | writes[i] for j in touching[key]})
        else:
            near = list(range(len(ops)))
        for j in near:
            b = ops[j]
            if i == j:
                continue
            # at the same time, the smaller id first, as the runtime breaks the tie (not
            # document order; two ops of one id: each before the other)
            first = a.commit_at < b.commit_at or (a.commit_at == b.commit_at and a.id <= b.id)
            if writes[i] & writes[j] and first:
                out[i].add(j)  # write-write
            if writes[i] & reads[j] and a.commit_at <= b.read_at:
                out[i].add(j)  # write-read
            if reads[i] & writes[j] and a.read_at < b.commit_at:
                out[i].add(j)  # read-write (anti-dependency)
        for name in a.depends_on:
            if last.get(name, i) != i:
                out[last[name]].add(i)
    return out


def _cycle(edges: Sequence[set[int]]) -> list[int]:
    """One cycle of the graph (positions, the first repeated at the end), or []."""
    colour = [0] * len(edges)
    stack: list[int] = []

    def visit(n: int) -> list[int]:
        colour[n] = 1
        stack.append(n)
        for m in sorted(edges[n]):
            if colour[m] == 1:
                return [*stack[stack.index(m) :], m]
            if colour[m] == 0:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        colour[n] = 2
        return []

    for n in range(len(edges)):
        if colour[n] == 0:
            found = visit(n)
            if found:
                return found
    return []


@deep_values_are_input_errors
def analyze_concurrency(ops: Any, *, profile: ProfileLike = None) -> ConcurrencyReport:
    """The anomalies, the level and serializability (see the module docs). Two ops
    of one id are answered as the runtime reads them, with a note (``car``), or
    refused naming the repeat (``strict``): the profile's semantics says which."""
    from ..semantics import semantics_of

    parsed = (
        ops
        if isinstance(ops, list) and all(isinstance(o, AgentOp) for o in ops)
        else parse_ops(ops)
    )
    repeats = repeated_ids(parsed)
    if repeats and not semantics_of(profile).answers_repeated_op_ids:
        name, at = next(iter(repeats.items()))
        raise InputError(
            f"op id {name!r} is also ops[{at[0]}]'s: give each op its own id (under the "
            "car profile the runtime's reading of a repeated id is answered, with a note)",
            ["ops", at[1], "id"],
        )
    found = _anomalies(parsed)
    level = min((_LEVEL_OF[a.anomaly] for a in found), default="l4")
    cycle = [parsed[n].id for n in _cycle(_edges(parsed))]
    notes = [_repeat_note(name, at) for name, at in repeats.items()]
    return ConcurrencyReport(level, not cycle, found, cycle, notes)


# --- the gate -----------------------------------------------------------------------------


@dataclass(slots=True)
class ConcurrencyGate:
    safe: bool
    level: str
    abort: bool
    remediations: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "safe": self.safe,
            "level": self.level,
            "abort": self.abort,
            "remediations": self.remediations,
        }


def gate_concurrency(report: Any, policy: Mapping[str, Any] | None = None) -> ConcurrencyGate:
    """Each anomaly with its remediation and a disposition: ``abort`` at or below
    ``abort_at_or_below`` (default ``l0``), ``require_approval`` at or below
    ``require_approval_at_or_below`` (default ``l1``), else ``auto_remediate``."""
    if isinstance(report, ConcurrencyReport):
        doc: Mapping[str, Any] = report.to_dict()
    elif isinstance(report, (str, bytes)):
        doc = json.loads(report)
    else:
        doc = report
    settings = dict(policy or {})
    abort_at = settings.get("abort_at_or_below", "l0")
    approve_at = settings.get("require_approval_at_or_below", "l1")
    for name, value in (
        ("abort_at_or_below", abort_at),
        ("require_approval_at_or_below", approve_at),
    ):
        if value not in LEVELS:
            raise UsageError(f"{name}: expected one of {', '.join(LEVELS)}")
    remediations = []
    abort = False
    for anomaly in doc.get("anomalies") or []:
        level = _LEVEL_OF.get(anomaly.get("anomaly"), "l0")
        if level <= abort_at:
            disposition = "abort"
            abort = True
        elif level <= approve_at:
            disposition = "require_approval"
        else:
            disposition = "auto_remediate"
        remediations.append(
            {
                "anomaly": anomaly.get("anomaly"),
                "remediation": _remedy(anomaly),
                "disposition": disposition,
            }
        )
    level = str(doc.get("level", "l4"))
    return ConcurrencyGate(not remediations, level, abort, remediations)


def _remedy(anomaly: Mapping[str, Any]) -> dict[str, Any]:
    """The remediation of an anomaly, naming what it acts on."""
    name = anomaly.get("anomaly")
    ops = list(anomaly.get("ops") or [])
    key = anomaly.get("key")
    first = ops[0] if ops else None
    if name == "stale_generation":
        return {"kind": "reread_and_regenerate", "op": first, "key": key}
    if name == "phantom_tool":
        return {"kind": "pin_tool_registry", "op": first, "tool": key}
    if name == "causal_cascade":
        return {
            "kind": "enforce_causal_order",
            "dependent": first,
            "cause": ops[1] if len(ops) > 1 else None,
        }
    return {"kind": "serialize_writers", "ops": ops, "key": key}


def ops_from_proposal(proposal: Any, *, profile: ProfileLike = None) -> list[AgentOp]:
    """The ops of a proposal's actions: reads and writes as ``transaction_check``
    reads them, ``depends_on`` the DAG's predecessors, and each level one step of
    time (an action reads when its level starts and commits when it ends)."""
    from ..ir.model import load
    from ..semantics import semantics_of
    from ..semantics.car import transaction_sets

    model = load(proposal)
    dag = semantics_of(profile).order(model)  # the active profile's DAG
    preds: list[Sequence[int]] = [dag.preds(i) for i in range(dag.n)]
    level = [dag.level_of(i) for i in range(dag.n)]
    out = []
    for i, action in enumerate(model.actions):
        reads, writes = transaction_sets(action)
        out.append(
            AgentOp(
                action.id,
                None,
                tuple(reads),
                tuple(writes),
                (action.tool,) if action.tool else (),
                (),
                tuple(dict.fromkeys(model.actions[p].id for p in preds[i])),
                2 * level[i],
                2 * level[i] + 1,
            )
        )
    return out
