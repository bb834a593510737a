"""Information flow: does sensitive data reach a sink, does untrusted data reach a
consequential call, and do forbidden tool orderings happen.

Each tool may carry a **label** (``.car/tool-labels.json``, the runtime's name):
``{capability, confidentiality, trust, sink, declassifier}``; a tool without one is
public, trusted, not a sink and has no capability. A **policy** is
``{min_confidential, forbidden_sequences: [[before, after], ...]}`` over
capabilities (``min_confidential`` defaults to ``internal``).

``check_information_flow`` gives the runtime's two checks, as ``car_runtime``'s
function of the same name does (the ``car`` profile):

- ``sensitive_to_sink``: the walk (CAR's order: level by level) carries a level
  per state key, the highest any writer so far gave it (a later, cleaner write
  does not lower it, a declassifier's does). An action's output is the highest
  level of the keys it depends on and its tool's own confidentiality, or
  ``public`` when its tool is a declassifier. A **sink** (``sink: true``, or
  ``trust: untrusted``) whose input (the highest level of the keys it depends
  on; ``public`` when it depends on none) is at ``min_confidential`` or above is
  a violation, naming the first key of its ``state_dependencies`` at that floor
  or above (so with ``min_confidential: public`` every sink is one).
- ``forbidden_sequence``: an action whose capability is a pair's ``before``
  *happens before* one whose capability is its ``after`` (a path of the DAG that
  passes through no declassifier).

Beyond the runtime (under ``strict``, and under ``car`` in :attr:`FlowReport.beyond_car`,
flagged as the runtime's answer does not hold them):

- ``forbidden_sequence_schedule``: the two actions are not ordered at all, so some
  schedule of the DAG runs the forbidden one first; the violation carries such a
  schedule. The runtime checks orderings only along happens-before paths.
- ``untrusted_to_consequential``: data from a tool labelled ``trust: untrusted``
  reaches a sink or a consequential call (one the permission classifier puts at
  ``full_access``, or finds irreversible by a rule: not merely unrecognised)
  through state keys (written by one action, depended on by another it may
  precede) or ``$id.output`` references, with no
  declassifier and no approval step (a tool labelled ``approval: true``) on the
  way; the path is reported. The runtime has no integrity rule.

The gate (``gate_information_flow``) maps a report to ``allow`` /
``require_approval`` / ``block`` (by default a ``sensitive_to_sink`` blocks, an
ordering needs approval); ``enforce_information_flow`` settles the approvals
against recorded decisions, each hazard named by a fingerprint
``flow:<kind>:<actions>:<key>``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ..base.errors import (
    InputError,
    UsageError,
    deep_values_are_input_errors,
    reject_unknown_fields,
)
from ..ir.model import ActionProposal, load
from ..semantics import ProfileLike, semantics_of
from ..semantics.base import Semantics
from ..semantics.car import car_writes
from ..semantics.profiles import DEFAULT_PROFILE

LEVELS: Final = ("public", "internal", "secret")
_RANK: Final = {level: rank for rank, level in enumerate(LEVELS)}
_LABEL_FIELDS: Final = (
    "capability",
    "confidentiality",
    "trust",
    "sink",
    "declassifier",
    "approval",
)
_POLICY_FIELDS: Final = ("min_confidential", "forbidden_sequences")
_SINK_MITIGATION: Final = (
    "route the data through a declassifier/sanitizer before this sink, or remove the dependency"
)
_ORDER_MITIGATION: Final = "insert a declassifier/sanitizer between them, or break the dependency"
_SCHEDULE_MITIGATION: Final = (
    "order the two actions (a dependency) so that the forbidden one cannot run first, "
    "or insert a declassifier between them"
)
_INTEGRITY_MITIGATION: Final = (
    "pass the untrusted data through a declassifier/sanitizer or a human approval step "
    "before this call, or remove the dependency"
)


@dataclass(frozen=True, slots=True)
class Label:
    """A tool's label; the defaults are what an unlabelled tool is."""

    capability: str | None = None
    confidentiality: str = "public"
    trust: str = "trusted"
    sink: bool = False
    declassifier: bool = False
    #: car-verify's: a human approves what passes this tool (the integrity rule).
    approval: bool = False

    @property
    def is_sink(self) -> bool:
        return self.sink or self.trust == "untrusted"


def parse_labels(doc: Any) -> dict[str, Label]:
    """``{tool: {capability?, confidentiality?, trust?, sink?, declassifier?}}``;
    an error names the tool and the field."""
    if isinstance(doc, Mapping) and "labels" in doc and isinstance(doc["labels"], Mapping):
        doc = doc["labels"]  # the file may hold {"labels": {...}}
    if not isinstance(doc, Mapping):
        raise InputError("expected an object: tool name -> label", ["labels"])
    out: dict[str, Label] = {}
    for tool, raw in doc.items():
        where: list[str | int] = ["labels", tool]
        if isinstance(raw, Label):  # parsed already
            out[str(tool)] = raw
            continue
        if not isinstance(raw, Mapping):
            raise InputError("expected a label object", where)
        reject_unknown_fields(raw, _LABEL_FIELDS, where)
        capability = raw.get("capability")
        if capability is not None and not isinstance(capability, str):
            raise InputError("expected a string", [*where, "capability"])
        level = raw.get("confidentiality", "public")
        if level not in _RANK:
            raise InputError(f"expected one of {', '.join(LEVELS)}", [*where, "confidentiality"])
        trust = raw.get("trust", "trusted")
        if trust not in ("trusted", "untrusted"):
            raise InputError("expected trusted or untrusted", [*where, "trust"])
        flags = {}
        for name in ("sink", "declassifier", "approval"):
            value = raw.get(name, False)
            if not isinstance(value, bool):
                raise InputError("expected true or false", [*where, name])
            flags[name] = value
        out[str(tool)] = Label(capability, level, trust, **flags)
    return out


@dataclass(frozen=True, slots=True)
class FlowPolicy:
    min_confidential: str = "internal"
    forbidden_sequences: tuple[tuple[str, str], ...] = ()


def parse_policy(doc: Any) -> FlowPolicy:
    if doc is None:
        return FlowPolicy()
    if isinstance(doc, FlowPolicy):
        return doc
    if not isinstance(doc, Mapping):
        raise InputError("expected an object {min_confidential, forbidden_sequences}", ["policy"])
    reject_unknown_fields(doc, _POLICY_FIELDS, ["policy"], " or ".join(_POLICY_FIELDS))
    level = doc.get("min_confidential", "internal")
    if level not in _RANK:
        raise InputError(f"expected one of {', '.join(LEVELS)}", ["policy", "min_confidential"])
    pairs: list[tuple[str, str]] = []
    raw = doc.get("forbidden_sequences", [])
    if not isinstance(raw, list):
        raise InputError(
            "expected an array of [before, after] pairs", ["policy", "forbidden_sequences"]
        )
    for n, pair in enumerate(raw):
        ok = isinstance(pair, list) and len(pair) == 2 and all(isinstance(c, str) for c in pair)
        if not ok:
            raise InputError(
                "expected [before, after]: two capability names",
                ["policy", "forbidden_sequences", n],
            )
        pairs.append((pair[0], pair[1]))
    return FlowPolicy(level, tuple(dict.fromkeys(pairs)))


Kind = Literal[
    "sensitive_to_sink",
    "forbidden_sequence",
    "forbidden_sequence_schedule",
    "untrusted_to_consequential",
]


@dataclass(frozen=True, slots=True)
class FlowViolation:
    """One hazard, in the runtime's shape (``to_dict``), plus car-verify's evidence:
    ``schedule`` (an order of every action that shows it) and ``path`` (how the
    data travels: ``[{action, via}]``, ``via`` a key or ``$id.output``)."""

    kind: Kind
    actions: tuple[str, ...]
    explanation: str
    mitigation: str
    key: str | None = None
    schedule: tuple[str, ...] = ()
    path: tuple[Mapping[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"kind": self.kind, "actions": list(self.actions)}
        if self.key is not None:
            doc["key"] = self.key
        doc["explanation"] = self.explanation
        doc["mitigation"] = self.mitigation
        if self.schedule:
            doc["schedule"] = list(self.schedule)
        if self.path:
            doc["path"] = [dict(step) for step in self.path]
        return doc

    @property
    def fingerprint(self) -> str:
        """``flow:<kind>:<actions>:<key>``, what an approval of it is recorded against."""
        return f"flow:{self.kind}:{','.join(self.actions)}:{self.key or ''}"


@dataclass(slots=True)
class FlowReport:
    """``{safe, violations}`` as the runtime gives it (``to_dict``). Under ``car``,
    :attr:`beyond_car` holds what car-verify finds beyond the runtime's checks (and
    ``safe`` is the runtime's answer); under ``strict`` they are among the
    violations."""

    safe: bool
    violations: list[FlowViolation]
    beyond_car: list[FlowViolation] = field(default_factory=list)
    profile: str = DEFAULT_PROFILE.value

    def to_dict(self, *, extras: bool = False) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "safe": self.safe,
            "violations": [v.to_dict() for v in self.violations],
        }
        if extras:
            doc["beyond_car"] = [v.to_dict() for v in self.beyond_car]
            doc["profile"] = self.profile
        return doc

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)


def _level(level: str) -> str:
    return level.capitalize()


class _Flow:
    """The proposal, its labels and the order both checks read."""

    def __init__(
        self, model: ActionProposal, labels: Mapping[str, Label], semantics: Semantics
    ) -> None:
        self.model = model
        self.actions = model.actions
        self.ids = [a.id for a in model.actions]
        self.labels = [labels.get(a.tool) if a.tool else None for a in model.actions]
        dag = semantics.order(model)  # the active profile's DAG
        self.semantics = semantics
        self.preds: list[Sequence[int]] = [dag.preds(i) for i in range(dag.n)]
        self.order = [i for level in dag.levels for i in level]
        self._descendants: dict[int, set[int]] = {}

    def label(self, i: int) -> Label:
        return self.labels[i] or _UNLABELLED

    @functools.cached_property
    def succs(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in self.actions]
        for i, preds in enumerate(self.preds):
            for p in preds:
                out[p].append(i)
        return out

    def descendants(self, i: int) -> set[int]:
        """The actions with a path from ``i`` (remembered: the integrity check asks
        for the same ones again and again)."""
        found = self._descendants.get(i)
        if found is None:
            found = set()
            stack = [i]
            while stack:
                for s in self.succs[stack.pop()]:
                    if s not in found:
                        found.add(s)
                        stack.append(s)
            self._descendants[i] = found
        return found

    def ancestors(self, j: int, *, through_declassifiers: bool) -> set[int]:
        """The actions with a path to ``j``; without ``through_declassifiers``, a path
        may not pass a declassifier (it may start at one)."""
        seen: set[int] = set()
        stack = list(self.preds[j])
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            if through_declassifiers or not self.label(i).declassifier:
                stack.extend(p for p in self.preds[i] if p not in seen)
        return seen

    def unsanitized_sources(self, j: int) -> set[int]:
        """The actions whose data reaches ``j`` unsanitized, as the profile reads a
        declassifier (``Semantics.declassifier_on_any_path``): a path that passes
        no declassifier (it may start at one); under ``car``, no declassifier at
        all ordered between the two (the runtime's reading)."""
        if not self.semantics.declassifier_on_any_path:
            return self.ancestors(j, through_declassifiers=False)
        every = self.ancestors(j, through_declassifiers=True)
        sanitized: set[int] = set()
        for d in every:
            if self.label(d).declassifier:
                sanitized |= self.ancestors(d, through_declassifiers=True)
        return every - sanitized


_UNLABELLED: Final = Label()


def _sensitive_to_sink(flow: _Flow, policy: FlowPolicy) -> list[FlowViolation]:
    floor = _RANK[policy.min_confidential]
    levels: dict[str, int] = {}
    out = []
    for i in flow.order:
        action, label = flow.actions[i], flow.label(i)
        deps = list(dict.fromkeys(action.state_dependencies))
        consumed = max((levels.get(k, 0) for k in deps), default=0)
        if label.is_sink and consumed >= floor:
            key = next((k for k in deps if levels.get(k, 0) >= floor), None)
            via = f" via key '{key}'" if key is not None else ""
            out.append(
                FlowViolation(
                    "sensitive_to_sink",
                    (action.id,),
                    f"action '{action.id}' (tool '{action.tool}') consumes "
                    f"{_level(LEVELS[consumed])}-level data{via} — sensitive data must not "
                    "reach an exfiltration/untrusted sink",
                    _SINK_MITIGATION,
                    key=key,
                )
            )
        if label.declassifier:  # what it writes is sanitised, whatever was there
            for key in car_writes(action):
                levels[key] = 0
            continue
        produced = max(consumed, _RANK[label.confidentiality])
        for key in car_writes(action):
            levels[key] = max(levels.get(key, 0), produced)
    return out


def _forbidden(flow: _Flow, policy: FlowPolicy) -> list[FlowViolation]:
    if not policy.forbidden_sequences:
        return []
    forbidden = set(policy.forbidden_sequences)
    afters = {after for _, after in forbidden}
    out = []
    for j in flow.order:
        after = flow.label(j).capability
        if after not in afters:
            continue
        # the runtime's order here varies from run to run (a hash set); car-verify's
        # is by position
        for i in sorted(flow.unsanitized_sources(j)):
            before = flow.label(i).capability
            if (before, after) in forbidden:
                out.append(
                    FlowViolation(
                        "forbidden_sequence",
                        (flow.ids[i], flow.ids[j]),
                        f"forbidden ordering: '{flow.ids[i]}' ({before}) happens-before "
                        f"'{flow.ids[j]}' ({after})",
                        _ORDER_MITIGATION,
                    )
                )
    return out


def _schedule(flow: _Flow, first: int, then: int) -> tuple[str, ...]:
    """An order of every action that respects the DAG and runs ``first`` before
    ``then`` (``then`` must not be an ancestor of ``first``): ``first`` and its
    ancestors, then the rest, each part in the walk's order."""
    early = flow.ancestors(first, through_declassifiers=True) | {first}
    rest = [i for i in flow.order if i not in early]
    return (
        tuple(flow.ids[i] for i in [*(i for i in flow.order if i in early), *rest])
        if then in rest
        else ()
    )


def _unordered_sequences(flow: _Flow, policy: FlowPolicy) -> list[FlowViolation]:
    """Pairs the DAG leaves unordered: some schedule runs the forbidden one first."""
    if not policy.forbidden_sequences:
        return []
    by_capability: dict[str, list[int]] = {}
    for i in flow.order:
        capability = flow.label(i).capability
        if capability is not None:
            by_capability.setdefault(capability, []).append(i)
    ancestors: dict[int, set[int]] = {}

    def above(i: int) -> set[int]:
        if i not in ancestors:
            ancestors[i] = flow.ancestors(i, through_declassifiers=True)
        return ancestors[i]

    out = []
    for before, after in policy.forbidden_sequences:
        for i in by_capability.get(before, []):
            for j in by_capability.get(after, []):
                if i == j or i in above(j) or j in above(i):
                    continue  # ordered: the runtime's check, or never in this order
                schedule = _schedule(flow, i, j)
                out.append(
                    FlowViolation(
                        "forbidden_sequence_schedule",
                        (flow.ids[i], flow.ids[j]),
                        f"forbidden ordering in some schedules: '{flow.ids[i]}' ({before}) and "
                        f"'{flow.ids[j]}' ({after}) are not ordered, so '{flow.ids[i]}' can run "
                        "first (the runtime checks happens-before paths only)",
                        _SCHEDULE_MITIGATION,
                        schedule=schedule,
                    )
                )
    return out


def _consequential(flow: _Flow, i: int) -> bool:
    """A sink, or a call the permission classifier puts at ``full_access`` or finds
    irreversible by a rule."""
    from .permissions import classify_action

    if flow.label(i).is_sink:
        return True
    action = flow.actions[i]
    if action.type != "tool_call":
        return False
    row = classify_action(action)
    return row.required_tier == "full_access" or row.irreversible_by_rule


def _integrity(flow: _Flow) -> list[FlowViolation]:
    """Untrusted data reaching a sink or a consequential call (see the module docs)."""
    sources = [i for i in range(len(flow.actions)) if flow.label(i).trust == "untrusted"]
    if not sources:
        return []
    model = flow.model
    # data edges: writer -> reader of a key it may precede; source -> $source.output user
    readers: dict[str, list[int]] = {}
    for i, action in enumerate(flow.actions):
        for key in dict.fromkeys(action.state_dependencies):
            readers.setdefault(key, []).append(i)
    position = {action_id: i for i, action_id in reversed(list(enumerate(flow.ids)))}
    refs: dict[int, list[int]] = {}
    for i, action in enumerate(flow.actions):
        for ref in action.output_refs():
            if ref.action_id in position:
                refs.setdefault(position[ref.action_id], []).append(i)

    def may_precede(a: int, b: int) -> bool:
        return a != b and a not in flow.descendants(b)

    def edges(i: int) -> Iterable[tuple[int, str]]:
        for key in car_writes(flow.actions[i]):
            for r in readers.get(key, []):
                if may_precede(i, r):
                    yield r, key
        for r in refs.get(i, []):
            yield r, f"${flow.ids[i]}.output"

    consequential: dict[int, bool] = {}
    out = []
    for source in sources:
        back: dict[int, tuple[int, str]] = {}
        queue = [source]
        found: list[int] = []
        while queue:
            i = queue.pop(0)
            for j, via in edges(i):
                if j in back or j == source:
                    continue
                back[j] = (i, via)
                label = flow.label(j)
                if label.declassifier or label.approval:
                    continue  # sanitised or approved here: the path stops
                if j not in consequential:
                    consequential[j] = _consequential(flow, j)
                if consequential[j]:
                    found.append(j)
                queue.append(j)
        for j in found:
            steps: list[dict[str, str]] = []
            node = j
            while node != source:
                prev, via = back[node]
                steps.append({"action": flow.ids[node], "via": via})
                node = prev
            steps.append({"action": flow.ids[source], "via": "source"})
            steps.reverse()
            route = " -> ".join(
                f"{s['action']}" + ("" if s["via"] == "source" else f" (via {s['via']})")
                for s in steps
            )
            out.append(
                FlowViolation(
                    "untrusted_to_consequential",
                    (flow.ids[source], flow.ids[j]),
                    f"untrusted data from '{flow.ids[source]}' (tool "
                    f"'{model.actions[source].tool}') reaches '{flow.ids[j]}' (tool "
                    f"'{model.actions[j].tool}'), a consequential call, with no declassifier "
                    f"or approval on the way: {route}",
                    _INTEGRITY_MITIGATION,
                    path=tuple(steps),
                )
            )
    return out


def flow_violations(
    model: ActionProposal,
    labels: Mapping[str, Label],
    policy: FlowPolicy | None = None,
    *,
    semantics: Semantics,
) -> tuple[list[FlowViolation], list[FlowViolation]]:
    """The runtime's violations, and car-verify's beyond them, over the DAG of the
    profile's ``semantics``. The ``flow`` pass, the executor and
    :func:`check_information_flow` share this."""
    flow = _Flow(model, labels, semantics)
    rules = policy or FlowPolicy()
    runtime = _sensitive_to_sink(flow, rules) + _forbidden(flow, rules)
    return runtime, _unordered_sequences(flow, rules) + _integrity(flow)


@deep_values_are_input_errors
def check_information_flow(
    proposal: Any,
    labels: Any,
    policy: Any = None,
    *,
    profile: ProfileLike = None,
) -> FlowReport:
    """The flow checks (see the module docs)."""
    sem = semantics_of(profile)
    model = load(proposal)
    runtime, extra = flow_violations(
        model, parse_labels(labels), parse_policy(policy), semantics=sem
    )
    name = sem.profile.value
    if sem.own_checks_decide:
        found = runtime + extra
        return FlowReport(not found, found, [], name)
    return FlowReport(not runtime, runtime, extra, name)


# --- the gate -------------------------------------------------------------------------

Verdict = Literal["allow", "require_approval", "block"]
_SEVERITY: Final = {"allow": 0, "require_approval": 1, "block": 2}
_GATE_DEFAULTS: Final[dict[str, Verdict]] = {
    "sensitive_to_sink": "block",
    "forbidden_sequence": "require_approval",
    "forbidden_sequence_schedule": "require_approval",
    "untrusted_to_consequential": "block",
}


def _violations_of(report: Any) -> list[dict[str, Any]]:
    if isinstance(report, FlowReport):
        return [v.to_dict() for v in report.violations]
    if isinstance(report, (str, bytes)):
        report = json.loads(report)
    if not isinstance(report, Mapping) or not isinstance(report.get("violations"), list):
        raise InputError("expected a flow report {safe, violations}", ["report"])
    for n, v in enumerate(report["violations"]):
        if not isinstance(v, Mapping) or not isinstance(v.get("kind"), str):
            raise InputError(
                "expected a violation {kind, actions, ...}", ["report", "violations", n]
            )
    return [dict(v) for v in report["violations"]]


def gate_information_flow(report: Any, gate_policy: Mapping[str, Any] | None = None) -> Any:
    """The most severe verdict over the report's violations: by default a
    ``sensitive_to_sink`` (and car-verify's integrity finding) blocks and an ordering
    needs approval; ``gate_policy`` ``{on_sensitive_to_sink, on_forbidden_sequence}``
    (each ``allow`` | ``require_approval`` | ``block``) changes them."""
    verdicts = dict(_GATE_DEFAULTS)
    for name, value in (gate_policy or {}).items():
        if not name.startswith("on_"):
            continue
        kind = name[3:]
        if value not in _SEVERITY:
            raise UsageError(f"gate policy {name}: expected allow, require_approval or block")
        verdicts[kind] = value
        if kind == "forbidden_sequence":
            verdicts["forbidden_sequence_schedule"] = value
    blocked, pending = [], []
    for violation in _violations_of(report):
        verdict = verdicts.get(violation["kind"], "block")
        if verdict == "block":
            blocked.append(violation)
        elif verdict == "require_approval":
            pending.append(violation)
    from .permissions import GateDecision

    if blocked:
        action: Verdict = "block"
        reason = (
            f"blocked: {len(blocked)} flow hazard(s) must not run ({len(pending)} also need "
            "approval)"
        )
    elif pending:
        action, reason = (
            "require_approval",
            f"{len(pending)} flow hazard(s) require human approval before running",
        )
    else:
        action, reason = "allow", "no flow hazards — may proceed"
    return GateDecision(action, blocked, pending, reason)


def flow_fingerprint(violation: Mapping[str, Any]) -> str:
    actions = violation.get("actions") or []
    return (
        f"flow:{violation.get('kind')}:{','.join(map(str, actions))}:{violation.get('key') or ''}"
    )


@dataclass(slots=True)
class FlowEnforcement:
    """``{allow, blocked, pending: [{fingerprint, violation}], reason}``."""

    allow: bool
    blocked: list[dict[str, Any]]
    pending: list[dict[str, Any]]
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "allow": self.allow,
            "blocked": self.blocked,
            "pending": self.pending,
            "reason": self.reason,
        }


def enforce_information_flow(decision: Any, approvals: Any = None) -> FlowEnforcement:
    """Settle a gate decision against recorded human decisions (``ApprovalRecord``s,
    or a :class:`~car_verify.plan.permissions.Ledger`; the last decision about a hazard
    stands): an approved hazard may run, a rejected one is blocked, an unseen one
    is pending."""
    from .permissions import settle

    blocked, pending = settle(decision, flow_fingerprint, approvals)
    if blocked:
        reason = f"blocked: {len(blocked)} flow hazard(s) refused ({len(pending)} pending approval)"
    elif pending:
        reason = f"{len(pending)} flow hazard(s) await human approval"
    else:
        reason = "no flow hazards require action — may proceed"
    return FlowEnforcement(not blocked and not pending, blocked, pending, reason)
