"""Intent: does a plan stay inside what the user asked for, and is a call that
strays influenced by an untrusted tool result (the signature of tool-stream
injection)?

``check_intent`` takes the runtime's request ``{intent: {allowed_tools,
allowed_resources, forbidden_capabilities}, actions: [{id, tool, targets,
capabilities, depends_on, untrusted}]}`` and gives its ``IntentReport`` ``{safe,
commit_blocked, violations: [{action, kind, detail, tool_influenced,
explanation}]}``, as ``car_runtime.check_intent`` does:

- ``tool_out_of_intent``: the tool is not among ``allowed_tools`` (when that list
  is given and not empty);
- ``target_out_of_intent``: a target starts with none of ``allowed_resources``
  (a plain prefix, not a pattern; when given and not empty);
- ``forbidden_capability``: a capability is among ``forbidden_capabilities``.

An action is **influenced** when it, or an action it depends on (``depends_on``,
followed through), is ``untrusted`` (an id names the last action of that id, so
repeated ids can make ``depends_on`` a cycle: :func:`influenced_ids` searches
backwards from the untrusted actions, never caching an answer mid-search). A
violation blocks the commit when it is influenced or names a forbidden
capability; ``safe`` is that nothing blocks it.
Out-of-intent drift that no untrusted result influenced is reported but does not
block: the gate (``gate_intent``) asks a human about it by default.

``check_intent_plan`` reads the actions from a proposal, as the runtime's function
of that name does: targets are the keys an action writes: its ``write_set`` as
listed (a key listed twice is a target twice), then each key its effects write
that the ``write_set`` does not name (in document order; the runtime's order of
those varies from run to run), ``depends_on`` its
predecessors in the DAG, capabilities its ``metadata.capabilities``, and an action
is untrusted when its tool is in ``untrusted_tools`` or its id in
``untrusted_ids``. Under ``car`` the DAG is CAR's (state dependencies only); under
``strict`` it is car-verify's, so taint also travels along ``dependencies`` and
``$id.output`` references, which CAR ignores. Under ``car`` an action ``type`` the
runtime does not know refuses the request, as the runtime refuses it; ``strict``
answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from ..base.errors import (
    InputError,
    UsageError,
    deep_values_are_input_errors,
    reject_unknown_fields,
)

if TYPE_CHECKING:
    from ..semantics import ProfileLike

_INTENT_FIELDS: Final = ("allowed_tools", "allowed_resources", "forbidden_capabilities")
_ACTION_FIELDS: Final = ("id", "tool", "targets", "capabilities", "depends_on", "untrusted")
Kind = Literal["tool_out_of_intent", "target_out_of_intent", "forbidden_capability"]
_SHORT: Final = {
    "tool_out_of_intent": "tool",
    "target_out_of_intent": "target",
    "forbidden_capability": "capability",
}


@dataclass(frozen=True, slots=True)
class Intent:
    allowed_tools: tuple[str, ...] = ()
    allowed_resources: tuple[str, ...] = ()
    forbidden_capabilities: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class IntentAction:
    id: str
    tool: str | None = None
    targets: tuple[str, ...] = ()
    capabilities: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()
    untrusted: bool = False


@dataclass(frozen=True, slots=True)
class IntentViolation:
    action: str
    kind: Kind
    detail: str
    tool_influenced: bool
    explanation: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "kind": self.kind,
            "detail": self.detail,
            "tool_influenced": self.tool_influenced,
            "explanation": self.explanation,
        }

    @property
    def fingerprint(self) -> str:
        """``intent:<tool|target|capability>:<action>:<detail>``."""
        return f"intent:{_SHORT[self.kind]}:{self.action}:{self.detail}"


@dataclass(slots=True)
class IntentReport:
    safe: bool
    commit_blocked: list[str]
    violations: list[IntentViolation]

    def to_dict(self) -> dict[str, Any]:
        return {
            "safe": self.safe,
            "commit_blocked": list(self.commit_blocked),
            "violations": [v.to_dict() for v in self.violations],
        }


def _strings(doc: Mapping[str, Any], name: str, path: list[str | int]) -> tuple[str, ...]:
    value = doc.get(name)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError("expected an array of strings", [*path, name])
    return tuple(value)


def _fields(doc: Any, path: list[str | int], fields: Sequence[str]) -> Mapping[str, Any]:
    if not isinstance(doc, Mapping):
        raise InputError("expected an object", path)
    reject_unknown_fields(doc, fields, path)
    return doc


def parse_intent(doc: Any) -> Intent:
    raw = _fields(doc, ["intent"], _INTENT_FIELDS)
    return Intent(*(_strings(raw, name, ["intent"]) for name in _INTENT_FIELDS))


def _decoded(request: Any) -> Any:
    from ..ir.model import json_value  # the model loads only when a check runs

    return json_value(request)


def judge(intent: Intent, actions: Sequence[IntentAction]) -> IntentReport:
    """The intent check over ``actions`` (the ``intent`` pass and both check
    functions share it)."""
    return _judge(intent, actions)


def influenced_ids(actions: Sequence[IntentAction]) -> set[str]:
    """The ids whose action is influenced: those from which ``depends_on``, followed
    through, reaches an ``untrusted`` action. An id names the last action of that
    id, as the runtime reads it (its ``depends_on`` and its ``untrusted``).

    Computed backwards, from each untrusted action along the reversed edges (a
    search that marks each id once), so a cycle of ``depends_on``, or an id that
    repeats and so names a later action, cannot cut the search short: no answer is
    taken before the search that decides it is over."""
    by_id = {a.id: a for a in actions}  # the last action of an id
    dependents: dict[str, list[str]] = {}
    for name, action in by_id.items():
        for dependency in action.depends_on:
            dependents.setdefault(dependency, []).append(name)
    found = {name for name, action in by_id.items() if action.untrusted}
    stack = list(found)
    while stack:
        for name in dependents.get(stack.pop(), ()):
            if name not in found:
                found.add(name)
                stack.append(name)
    return found


def _judge(intent: Intent, actions: Sequence[IntentAction]) -> IntentReport:
    influenced = influenced_ids(actions)

    violations: list[IntentViolation] = []
    blocked: list[str] = []  # once per action that holds the commit (ids may repeat)
    for action in actions:
        hit = action.id in influenced
        found: list[tuple[Kind, str, str]] = []
        if (
            intent.allowed_tools
            and action.tool is not None
            and action.tool not in intent.allowed_tools
        ):
            tool = action.tool
            why = (
                f"tool '{tool}' is outside the user's intent and the call is influenced by an "
                "untrusted tool result — likely tool-stream injection; reject before commit"
                if hit
                else f"tool '{tool}' is outside the user's declared intent"
            )
            found.append(("tool_out_of_intent", tool, why))
        if intent.allowed_resources:
            for target in action.targets:
                if not any(target.startswith(r) for r in intent.allowed_resources):
                    why = (
                        f"target '{target}' is outside the intent's resource scope and is "
                        "influenced by an untrusted tool result — likely injection; reject "
                        "before commit"
                        if hit
                        else f"target '{target}' is outside the intent's declared resource scope"
                    )
                    found.append(("target_out_of_intent", target, why))
        for capability in action.capabilities:
            if capability in intent.forbidden_capabilities:
                why = f"capability '{capability}' is forbidden by the user's intent"
                found.append(("forbidden_capability", capability, why))
        holds = False
        for kind, detail, explanation in found:
            violations.append(IntentViolation(action.id, kind, detail, hit, explanation))
            holds = holds or hit or kind == "forbidden_capability"
        if holds:
            blocked.append(action.id)
    return IntentReport(not blocked, blocked, violations)


def _action(raw: Any, path: list[str | int]) -> IntentAction:
    doc = _fields(raw, path, _ACTION_FIELDS)
    if not isinstance(doc.get("id"), str):
        raise InputError("expected a string", [*path, "id"])
    tool = doc.get("tool")
    if tool is not None and not isinstance(tool, str):
        raise InputError("expected a string", [*path, "tool"])
    untrusted = doc.get("untrusted", False)
    if not isinstance(untrusted, bool):
        raise InputError("expected true or false", [*path, "untrusted"])
    return IntentAction(
        doc["id"],
        tool,
        _strings(doc, "targets", path),
        _strings(doc, "capabilities", path),
        _strings(doc, "depends_on", path),
        untrusted,
    )


@deep_values_are_input_errors
def check_intent(request: Any) -> IntentReport:
    """The intent check over the runtime's ``IntentAction``s (see the module docs)."""
    doc = _fields(_decoded(request), [], ("intent", "actions"))
    intent = parse_intent(doc.get("intent", {}))
    raw = doc.get("actions", [])
    if not isinstance(raw, list):
        raise InputError("expected an array of actions", ["actions"])
    return _judge(intent, [_action(a, ["actions", n]) for n, a in enumerate(raw)])


def plan_actions(
    model: Any,
    untrusted_tools: Iterable[str] = (),
    untrusted_ids: Iterable[str] = (),
    *,
    semantics: object = None,
) -> list[IntentAction]:
    """A proposal's actions as ``IntentAction``s (see the module docs), each after its
    predecessors in the DAG of the profile's semantics (``car`` by default)."""
    from ..semantics import semantics_of
    from ..semantics.car import car_writes

    tools, ids = set(untrusted_tools), set(untrusted_ids)
    dag = semantics_of(semantics).order(model)
    preds: list[Sequence[int]] = [dag.preds(i) for i in range(dag.n)]
    actions = []
    for i, a in enumerate(model.actions):
        capabilities = a.metadata.get("capabilities") if isinstance(a.metadata, Mapping) else None
        if capabilities is not None and not (
            isinstance(capabilities, list) and all(isinstance(c, str) for c in capabilities)
        ):
            raise InputError(
                "expected an array of strings", ["actions", i, "metadata", "capabilities"]
            )
        actions.append(
            IntentAction(
                a.id,
                a.tool,
                # what it writes: its write_set as listed, then each key its effects
                # write that the write_set does not name (the runtime's targets)
                (*a.write_set, *(k for k in car_writes(a) if k not in a.write_set)),
                tuple(capabilities or ()),
                tuple(dict.fromkeys(model.actions[p].id for p in preds[i])),
                (a.tool is not None and a.tool in tools) or a.id in ids,
            )
        )
    return actions


@deep_values_are_input_errors
def check_intent_plan(request: Any, *, profile: ProfileLike = None) -> IntentReport:
    """The intent check over a proposal's actions (see the module docs)."""
    from ..ir.model import load
    from ..semantics import semantics_of

    doc = _fields(_decoded(request), [], ("intent", "actions", "untrusted_tools", "untrusted_ids"))
    intent = parse_intent(doc.get("intent", {}))
    raw = doc.get("actions", [])
    if not isinstance(raw, list):
        raise InputError("expected an array of actions", ["actions"])
    model = load({"id": "intent", "source": "intent", "actions": raw})
    semantics_of(profile).refuse(model)  # car: an unknown action type, as the runtime
    actions = plan_actions(
        model,
        _strings(doc, "untrusted_tools", []),
        _strings(doc, "untrusted_ids", []),
        semantics=profile,
    )
    return _judge(intent, actions)


def parse_intent_file(doc: Any) -> tuple[Intent, tuple[str, ...]]:
    """``.car/intent.json``: the intent object, or ``{intent, untrusted_tools}``."""
    if isinstance(doc, Mapping) and "intent" in doc:
        body = _fields(doc, [], ("intent", "untrusted_tools"))
        return parse_intent(body["intent"]), _strings(body, "untrusted_tools", [])
    return parse_intent(doc), ()


# --- the gate and enforcement ------------------------------------------------------------

Verdict = Literal["allow", "require_approval", "block"]


def _violations_of(report: Any) -> list[dict[str, Any]]:
    if isinstance(report, IntentReport):
        return [v.to_dict() for v in report.violations]
    report = _decoded(report)
    if not isinstance(report, Mapping) or not isinstance(report.get("violations"), list):
        raise InputError("expected an intent report {safe, commit_blocked, violations}", ["report"])
    return [dict(v) for v in report["violations"]]


def gate_intent(report: Any, gate_policy: Mapping[str, Any] | None = None) -> Any:
    """Injections (influenced violations) and forbidden capabilities always block;
    untainted drift goes by ``on_untainted_drift`` (``require_approval`` by
    default, or ``allow`` / ``block``)."""
    drift = (gate_policy or {}).get("on_untainted_drift", "require_approval")
    if drift not in ("allow", "require_approval", "block"):
        raise UsageError("on_untainted_drift: expected allow, require_approval or block")
    blocked, pending = [], []
    for v in _violations_of(report):
        if v.get("tool_influenced") or v.get("kind") == "forbidden_capability" or drift == "block":
            blocked.append(v)
        elif drift == "require_approval":
            pending.append(v)
    from .permissions import GateDecision

    if blocked:
        reason = (
            f"blocked: {len(blocked)} action(s) must not commit ({len(pending)} also need approval)"
        )
        return GateDecision("block", blocked, pending, reason)
    if pending:
        reason = f"{len(pending)} out-of-intent action(s) require human approval before commit"
        return GateDecision("require_approval", [], pending, reason)
    return GateDecision("allow", [], [], "all actions are within the declared intent")


def intent_fingerprint(violation: Mapping[str, Any]) -> str:
    short = _SHORT.get(str(violation.get("kind")), str(violation.get("kind")))
    return f"intent:{short}:{violation.get('action')}:{violation.get('detail')}"


@dataclass(slots=True)
class IntentEnforcement:
    commit: bool
    blocked: list[dict[str, Any]]
    pending: list[dict[str, Any]]
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "blocked": self.blocked,
            "pending": self.pending,
            "reason": self.reason,
        }


def enforce_intent(decision: Any, approvals: Any = None) -> IntentEnforcement:
    """Settle a gate decision against recorded decisions: approved drift commits,
    rejected drift is blocked, unseen drift is pending; hard blocks never commit."""
    from .permissions import settle

    blocked, pending = settle(decision, intent_fingerprint, approvals)
    if blocked:
        reason = (
            f"blocked: {len(blocked)} out-of-intent action(s) refused ({len(pending)} pending "
            "approval)"
        )
    elif pending:
        reason = f"{len(pending)} out-of-intent action(s) await human approval"
    else:
        reason = "no out-of-intent actions require action — may commit"
    return IntentEnforcement(not blocked and not pending, blocked, pending, reason)


def to_json(value: Any) -> str:
    return json.dumps(value.to_dict(), ensure_ascii=False)
