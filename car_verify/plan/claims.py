"""Plans and claims: a STRIPS plan's feasibility, a goal condition's verdict, and
a model's claims about tool use against the runtime's receipts.

Each function takes and returns the runtime's shapes (``car_runtime.check_plan``,
``evaluate_goal``, ``verify_tool_receipts``) and gives its answers; a field the
runtime does not know is an input error here (the runtime ignores it).

- :func:`check_plan`: ``{initial, steps: [{id, preconditions, add_effects,
  del_effects}], goal}`` over facts (strings). Each step's preconditions are
  checked against the facts so far (each missing one is an
  ``unmet_precondition``), then its deletions and additions apply (an addition
  wins over a deletion of the same fact), unmet or not; each goal fact missing
  at the end is a ``goal_not_achieved``. ``final_state`` is sorted.
- :func:`evaluate_goal`: ``{condition, inputs}``, the condition a tree of
  ``all_of`` / ``any_of`` over leaves (``state_predicate``, ``command``,
  ``model_judge``, ``tool_receipts_grounded``, ``plan_achieved``,
  ``state_consistent``), each leaf judged on the gathered inputs; a leaf whose
  input was not gathered fails closed. ``grounded`` is false when a met verdict
  rests on a model judge alone. A ``state_predicate``'s ``equals`` is compared as
  the profile reads a goal (``Semantics.goal_equal``: under ``car`` the
  runtime's check). :func:`judge_goal` is the one evaluator: risk judges each
  end state with it.
- :func:`verify_tool_receipts`: each claim (``invoked`` / ``count`` /
  ``absence``) is matched with a receipt, by ``call_id`` when it names one (any
  tool), else the first receipt of its tool. No receipt: a
  ``fabricated_tool_reference`` (or, when the receipts do not cover the whole
  window, ``ungroundable``); a count that differs from the receipt's
  ``result_count``: a ``count_misstatement``; an absence claimed where the
  receipt has results: a ``false_absence``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ..base.errors import InputError, deep_values_are_input_errors, reject_unknown_fields
from ..semantics import semantics_of

if TYPE_CHECKING:
    from ..semantics import ProfileLike
    from ..semantics.base import Semantics


def _object(
    doc: Any, path: list[str | int], fields: Sequence[str], required: Sequence[str] = ()
) -> Mapping[str, Any]:
    if not isinstance(doc, Mapping):
        raise InputError("expected an object", path)
    reject_unknown_fields(doc, fields, path)
    for name in required:
        if name not in doc:
            raise InputError(f"missing field {name!r}", path)
    return doc


def _strings(doc: Mapping[str, Any], name: str, path: list[str | int]) -> list[str]:
    value = doc.get(name, [])
    if not isinstance(value, list):
        raise InputError("expected an array of strings", [*path, name])
    for n, item in enumerate(value):
        if not isinstance(item, str):
            raise InputError("expected a string", [*path, name, n])
    return value


def _decoded(request: Any) -> Any:
    from ..ir.model import json_value  # the model loads only when a check runs

    return json_value(request)


# --- check_plan -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlanDefect:
    kind: str  # unmet_precondition | goal_not_achieved
    fact: str
    explanation: str
    step: str | None = None

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"kind": self.kind}
        if self.step is not None:
            doc["step"] = self.step
        doc["fact"] = self.fact
        doc["explanation"] = self.explanation
        return doc


@dataclass(slots=True)
class PlanCheckReport:
    valid: bool
    defects: list[PlanDefect]
    final_state: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "defects": [d.to_dict() for d in self.defects],
            "final_state": list(self.final_state),
        }


_STEP_FIELDS: Final = ("id", "preconditions", "add_effects", "del_effects")


@deep_values_are_input_errors
def check_plan(request: Any) -> PlanCheckReport:
    """A STRIPS plan's applicability and goal (see the module docs)."""
    doc = _object(_decoded(request), [], ("initial", "steps", "goal"))
    facts = set(_strings(doc, "initial", []))
    steps = doc.get("steps", [])
    if not isinstance(steps, list):
        raise InputError("expected an array of steps", ["steps"])
    defects = []
    for n, raw in enumerate(steps):
        where: list[str | int] = ["steps", n]
        step = _object(raw, where, _STEP_FIELDS, ("id",))
        if not isinstance(step["id"], str):
            raise InputError("expected a string", [*where, "id"])
        for fact in _strings(step, "preconditions", where):
            if fact not in facts:
                defects.append(
                    PlanDefect(
                        "unmet_precondition",
                        fact,
                        f"step '{step['id']}' requires '{fact}', which is not established by "
                        "the preceding steps",
                        step["id"],
                    )
                )
        facts.difference_update(_strings(step, "del_effects", where))
        facts.update(_strings(step, "add_effects", where))
    for fact in _strings(doc, "goal", []):
        if fact not in facts:
            explanation = f"goal fact '{fact}' does not hold after the plan finishes"
            defects.append(PlanDefect("goal_not_achieved", fact, explanation))
    return PlanCheckReport(not defects, defects, sorted(facts))


# --- evaluate_goal ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GoalVerdict:
    met: bool
    grounded: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"met": self.met, "grounded": self.grounded, "reason": self.reason}


_GOAL_KINDS: Final = {
    "all_of": ("kind", "conditions"),
    "any_of": ("kind", "conditions"),
    "tool_receipts_grounded": ("kind",),
    "plan_achieved": ("kind",),
    "state_consistent": ("kind",),
    "state_predicate": ("kind", "key", "equals"),
    "command": ("kind", "id", "expect_exit"),
    "model_judge": ("kind", "id"),
}
_INPUT_FIELDS: Final = (
    "receipts_grounded", "plan_achieved", "state_consistent", "state", "command_exits",
    "model_verdicts",
)  # fmt: skip
#: The gathered flags: input field, then the reasons when true, false, not gathered.
_FLAGS: Final = {
    "tool_receipts_grounded": (
        "receipts_grounded",
        "tool claims are grounded against the receipts",
        "tool claims are NOT grounded — hallucinated tool use detected",
        "tool-receipt grounding was not gathered",
    ),
    "plan_achieved": (
        "plan_achieved",
        "plan check reports the goal facts achieved",
        "plan check reports the goal facts are not yet achieved",
        "plan check was not gathered",
    ),
    "state_consistent": (
        "state_consistent",
        "shared state is transactionally consistent",
        "shared state is inconsistent (unresolved conflict / drift)",
        "state consistency was not gathered",
    ),
}


def _check_condition(node: Any, path: list[str | int]) -> None:
    if not isinstance(node, Mapping) or not isinstance(node.get("kind"), str):
        raise InputError("expected a goal condition {kind, ...}", path)
    kind = node["kind"]
    if kind not in _GOAL_KINDS:
        raise InputError(
            f"unknown goal kind {kind!r} (expected one of {', '.join(_GOAL_KINDS)})",
            [*path, "kind"],
        )
    fields = _GOAL_KINDS[kind]
    _object(node, path, fields, fields)
    if kind in ("all_of", "any_of"):
        if not isinstance(node["conditions"], list):
            raise InputError("expected an array of conditions", [*path, "conditions"])
        for n, child in enumerate(node["conditions"]):
            _check_condition(child, [*path, "conditions", n])
    elif kind == "state_predicate" and not isinstance(node["key"], str):
        raise InputError("expected a string", [*path, "key"])
    elif kind in ("command", "model_judge") and not isinstance(node["id"], str):
        raise InputError("expected a string", [*path, "id"])
    elif kind == "command" and (type(node["expect_exit"]) is not int):
        raise InputError("expected an integer", [*path, "expect_exit"])


def _canonical(value: Any) -> str:
    from .permissions import canonical_json

    return canonical_json(value)


def judge_goal(
    node: Mapping[str, Any], inputs: Mapping[str, Any], semantics: Semantics
) -> GoalVerdict:
    """The verdict of the goal condition ``node`` on the gathered ``inputs``, a
    ``state_predicate``'s ``equals`` compared by ``semantics.goal_equal``. A leaf
    whose input was not gathered, or of a kind it cannot judge, fails closed."""
    kind = node["kind"]
    if kind == "all_of":
        children = [judge_goal(c, inputs, semantics) for c in node["conditions"]]
        if not children:
            return GoalVerdict(True, True, "no conditions (vacuously met)")
        for child in children:
            if not child.met:
                return GoalVerdict(False, True, child.reason)
        grounded = all(c.grounded for c in children)
        return GoalVerdict(True, grounded, f"all {len(children)} conditions met")
    if kind == "any_of":
        children = [judge_goal(c, inputs, semantics) for c in node["conditions"]]
        if not children:
            return GoalVerdict(False, True, "no conditions (vacuously unmet)")
        met = [c for c in children if c.met]
        if met:  # grounded when some met condition does not rest on a model judge
            return GoalVerdict(True, any(c.grounded for c in met), met[0].reason)
        reasons = "; ".join(c.reason for c in children)
        return GoalVerdict(False, True, f"none of {len(children)} conditions met: {reasons}")
    if kind in _FLAGS:
        name, yes, no, absent = _FLAGS[kind]
        value = inputs.get(name)
        if value is None:
            return GoalVerdict(False, True, absent)
        return GoalVerdict(True, True, yes) if value else GoalVerdict(False, True, no)
    if kind == "state_predicate":
        key, expected = node["key"], node["equals"]
        state = inputs.get("state") or {}
        if key not in state:
            return GoalVerdict(False, True, f"state key '{key}' is not present")
        actual = state[key]
        if semantics.goal_equal(actual, expected):
            return GoalVerdict(True, True, f"state['{key}'] == {_canonical(expected)}")
        return GoalVerdict(
            False, True, f"state['{key}'] is {_canonical(actual)}, expected {_canonical(expected)}"
        )
    if kind == "command":
        exits = inputs.get("command_exits") or {}
        ident, want = node.get("id"), node.get("expect_exit")
        if ident not in exits:
            return GoalVerdict(False, True, f"command check '{ident}' was not run")
        got = exits[ident]
        if got == want:
            return GoalVerdict(True, True, f"command '{ident}' exited {got}")
        return GoalVerdict(False, True, f"command '{ident}' exited {got}, expected {want}")
    if kind != "model_judge":
        return GoalVerdict(False, True, f"a {kind!r} condition cannot be judged here")
    verdicts = inputs.get("model_verdicts") or {}
    ident = node.get("id")
    if ident not in verdicts:
        return GoalVerdict(False, True, f"model judge '{ident}' returned no verdict")
    if verdicts[ident]:
        return GoalVerdict(
            True, False, f"model judge '{ident}' says met (UNGROUNDED — transcript-only)"
        )
    return GoalVerdict(False, True, f"model judge '{ident}' says not yet met")


@deep_values_are_input_errors
def evaluate_goal(request: Any, *, profile: ProfileLike = None) -> GoalVerdict:
    """A goal condition's verdict on gathered inputs (see the module docs), its
    values compared as ``profile`` reads a goal (``car``, the default: as the
    runtime's ``evaluate_goal`` does)."""
    sem = semantics_of(profile)
    doc = _object(_decoded(request), [], ("condition", "inputs"), ("condition", "inputs"))
    _check_condition(doc["condition"], ["condition"])
    inputs = _object(doc["inputs"], ["inputs"], _INPUT_FIELDS)
    for name in ("receipts_grounded", "plan_achieved", "state_consistent"):
        if inputs.get(name) is not None and not isinstance(inputs[name], bool):
            raise InputError("expected true or false", ["inputs", name])
    for name in ("state", "command_exits", "model_verdicts"):
        if inputs.get(name) is not None and not isinstance(inputs[name], Mapping):
            raise InputError("expected an object", ["inputs", name])
    for ident, code in (inputs.get("command_exits") or {}).items():
        if type(code) is not int:
            raise InputError("expected an integer", ["inputs", "command_exits", ident])
    for ident, verdict in (inputs.get("model_verdicts") or {}).items():
        if not isinstance(verdict, bool):
            raise InputError("expected true or false", ["inputs", "model_verdicts", ident])
    return judge_goal(doc["condition"], inputs, sem)


# --- verify_tool_receipts -----------------------------------------------------------------


@dataclass(slots=True)
class ReceiptReport:
    grounded: bool
    hallucinations: list[dict[str, Any]]
    ungroundable: list[dict[str, Any]] = field(default_factory=list)
    window_complete: bool = True

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"grounded": self.grounded, "hallucinations": self.hallucinations}
        if self.ungroundable:
            doc["ungroundable"] = self.ungroundable
        return doc


_CLAIM_FIELDS: Final = ("kind", "tool", "call_id", "count", "text")
_RECEIPT_FIELDS: Final = ("tool", "call_id", "ok", "result_count")


def _count(value: Any, path: list[str | int]) -> int | None:
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise InputError("expected a count (an integer, 0 or more)", path)
    return value


@deep_values_are_input_errors
def verify_tool_receipts(claims: Any, receipts: Any, window_complete: bool = True) -> ReceiptReport:
    """A model's claims about tool use against the receipts (see the module docs)."""
    claims, receipts = _decoded(claims), _decoded(receipts)
    if not isinstance(claims, list):
        raise InputError("expected an array of claims", ["claims"])
    if not isinstance(receipts, list):
        raise InputError("expected an array of receipts", ["receipts"])
    by_call: dict[str, Mapping[str, Any]] = {}
    by_tool: dict[str, Mapping[str, Any]] = {}
    for n, raw in enumerate(receipts):
        receipt = _object(raw, ["receipts", n], _RECEIPT_FIELDS, ("tool",))
        if not isinstance(receipt["tool"], str):
            raise InputError("expected a string", ["receipts", n, "tool"])
        _count(receipt.get("result_count"), ["receipts", n, "result_count"])
        call = receipt.get("call_id")
        if isinstance(call, str):
            by_call.setdefault(call, receipt)
        by_tool.setdefault(receipt["tool"], receipt)
    found: list[dict[str, Any]] = []
    unsure: list[dict[str, Any]] = []
    for n, raw in enumerate(claims):
        where: list[str | int] = ["claims", n]
        claim = _object(raw, where, _CLAIM_FIELDS, ("kind", "tool"))
        kind, tool = claim["kind"], claim["tool"]
        if kind not in ("invoked", "count", "absence"):
            raise InputError(
                f"unknown claim kind {kind!r} (expected invoked, count or absence)",
                [*where, "kind"],
            )
        if not isinstance(tool, str):
            raise InputError("expected a string", [*where, "tool"])
        count = _count(claim.get("count"), [*where, "count"])
        call = claim.get("call_id")
        text = claim.get("text")
        base = {"tool": tool} | ({"claim_text": text} if isinstance(text, str) else {})
        matched = by_call.get(call) if isinstance(call, str) else by_tool.get(tool)
        if matched is None:
            if not window_complete:
                why = (
                    f"ungroundable — window evicted: no receipt for tool '{tool}' is retained, "
                    "but the event log was trimmed by retention, so the execution this claim "
                    "references may have been evicted rather than never run"
                )
                unsure.append(base | {"explanation": why})
                continue
            which = (
                f" call '{call}' but no such execution was recorded"
                if isinstance(call, str)
                else " but it was never executed"
            )
            found.append(
                {
                    "kind": "fabricated_tool_reference",
                    **base,
                    "explanation": f"claim references tool '{tool}'{which}",
                }
            )
            continue
        recorded = matched.get("result_count")
        if kind == "count" and count is not None and recorded is not None and count != recorded:
            found.append(
                {
                    "kind": "count_misstatement",
                    **base,
                    "explanation": f"claim states tool '{tool}' returned {count} result(s), but "
                    f"the receipt records {recorded}",
                }
            )
        elif kind == "absence" and recorded:
            found.append(
                {
                    "kind": "false_absence",
                    **base,
                    "explanation": f"claim asserts tool '{tool}' found nothing, but the receipt "
                    f"records {recorded} result(s)",
                }
            )
    return ReceiptReport(not found, found, unsure, window_complete)


def to_json(value: Any) -> str:
    return json.dumps(value.to_dict(), ensure_ascii=False)
