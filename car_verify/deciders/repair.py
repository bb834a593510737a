"""Repairs: for each finding that can have one, a fix a machine can apply (issue 60).

A fix (:class:`~car_verify.base.findings.Fix`) is an RFC 6902 JSON Patch against
the document as the user gave it, with how far it may be trusted (``safe``,
``unsafe``, ``display``) and what it does in words. The code table says, for every
code, what its fixes do or why none can be derived (``Code.repair``,
``car-verify codes``); this module derives them:

- **tool calls** (``unknown-tool``, ``missing-tool-name``, ``param-schema``,
  ``param-schema-full``): from the tool registry and each tool's *full* JSON
  Schema, whatever the profile checks: the tool the call most likely meant (name
  distance, snake/camel case, how well the parameters fit); lossless type repairs
  (``"5"`` to 5, ``"true"`` to true, 94103 to ``"94103"``, x to [x]); an enum value
  in the wrong case; a misspelled or re-cased parameter name; an undeclared
  parameter the schema forbids; a missing required parameter from the schema's
  ``default`` or single ``enum`` value; else what the schema says of it (display).
- **order** (``missing-dependency``, ``precondition-unsatisfied``,
  ``assertion-fails``, ``write-conflict``, ``dependency-overtaken``,
  ``dependency-cycle``): a dependency on the action that writes the key (or, when
  that action comes later in the proposal, the action moved after it), the later
  writer ordered after the earlier one as the profile orders, the edge whose
  removal breaks a cycle with the fewest findings.
- **names** (``unknown-dependency``, ``unknown-operator``, ``unknown-field``,
  ``unknown-action-type``, ``unknown-compensation-target``, ``duplicate-id``,
  ``missing-compensation``): the name closest to what was written.

Every fix with edits is **re-verified**: applied to the document and verified with
the run's own inputs (:meth:`VerificationResult.rerun`). One whose finding does not
go away is dropped; one that brings a finding the plan did not have is kept only as
``display``, its message saying what it would bring. A ``safe`` fix is one whose
re-verification is clean and that keeps what the plan means (a value's type, a
name's case, an order the plan already implies); a fix of an ``info`` note is at
most ``unsafe``, since the profile refuses nothing there. The fixes are derived
when :attr:`VerificationResult.fixes` is first read (``verify`` itself does not).

:func:`repair` applies them: safe ones, and unsafe ones unless told not to, round
after round (a renamed tool's parameters are repaired in the next), each round
re-verified; a fix that brings a new finding once applied with the others is
dropped and said.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..base.deferred import register_deriver
from ..base.errors import CarVerifyError, deep_values_are_input_errors
from ..base.findings import Applicability, Fix, Issue, Severity
from ..base.names import closest, distance, squash, words
from ..base.patch import PatchError, apply_patch, parse_pointer
from ..base.values import KNOWN_OPERATORS, is_number, json_equal

if TYPE_CHECKING:
    from ..api import ProposalLike, StateLike, VerificationResult
    from ..ir.model import Action, ActionProposal
    from ..rules.tools import ToolRegistry
    from ..semantics import ProfileLike
    from ..semantics.base import Semantics

__all__ = ["Applied", "Repaired", "apply_fixes", "changes_the_end_state", "derive_fixes", "repair"]

SAFE, UNSAFE, DISPLAY = Applicability.SAFE, Applicability.UNSAFE, Applicability.DISPLAY

#: Re-verifications one derivation may spend, counted in actions verified (a trial of
#: a plan of n actions costs n): past it a fix is kept as derived, at most unsafe, its
#: message saying it was not re-verified. Bounds the time on large plans.
TRIAL_BUDGET = 4_000
#: At most this many trials however small the plan.
MAX_TRIALS = 100
#: At most this many findings of one result get a fix (the first ones, in report
#: order): a plan with more has its first ones repaired, and is verified again.
MAX_DERIVED = 2_000
#: Fixes of one call's parameters or tool name one derivation may check on the call
#: alone (a plan of one action: each costs a few milliseconds), before it counts
#: against :data:`TRIAL_BUDGET` like any other fix.
LOCAL_BUDGET = 200
#: z3 questions one derivation may ask (a write conflict's ordering keeps the end state),
#: and the largest plan it asks them of: past either, an ordering is unsafe, unproven.
MAX_Z3_QUESTIONS = 4
Z3_LARGEST = 100
#: Rounds of :func:`repair` (a round's fixes can make the next round's: a renamed tool
#: then has parameters to repair).
MAX_ROUNDS = 8

Op = dict[str, Any]


# --- names -------------------------------------------------------------------------------


# --- the scene: one result, its proposal, its inputs ------------------------------------------


class _Scene:
    """What a derivation reads: the result, its proposal as JSON, its semantics and
    registry, the trials it has run and its budget."""

    def __init__(self, result: VerificationResult, *, timeout_ms: int, z3_questions: int) -> None:
        from ..semantics import semantics_of

        self.result = result
        self.proposal: ActionProposal = result.proposal
        self.actions: list[Action] = self.proposal.actions
        inputs = result.inputs
        self.semantics: Semantics = semantics_of(
            inputs.semantics if inputs is not None else result.profile
        )
        self.tools: ToolRegistry | None = inputs.tools if inputs is not None else None
        self.position = {a.id: i for i, a in reversed(list(enumerate(self.actions)))}
        self.timeout_ms = timeout_ms
        self.z3_left = z3_questions
        # a re-verification costs about the plan's actions and findings together
        size = max(1, len(self.actions) + len(result.issues))
        self.trials_left = min(MAX_TRIALS, TRIAL_BUDGET // size) if inputs is not None else 0
        self.local_left = LOCAL_BUDGET if inputs is not None else 0
        self._document: dict[str, Any] | None = None
        self._trials: dict[str, _Trial | None] = {}
        self._calls: dict[tuple[str | None, str], int] | None = None
        self._conflicts: dict[str, list[list[str]]] | None = None
        #: Each call's parameter repairs, by action position (computed once).
        self.pieces: dict[int, list[_Piece]] = {}
        self.before = _identities(result.issues, self.actions)

    @property
    def document(self) -> dict[str, Any]:
        """The proposal as JSON (the model's wire object: a fix's pointers name the same
        places in it as in the document the user gave, see :func:`_list_add`)."""
        if self._document is None:
            self._document = self.proposal.to_dict()
        return self._document

    def trial(self, edits: Sequence[Op]) -> _Trial | None:
        """The proposal with ``edits`` applied, re-verified (None: past the budget);
        each distinct patch once."""
        key = _key(edits)
        if key in self._trials:
            return self._trials[key]
        if self.trials_left <= 0:
            return None
        self.trials_left -= 1
        try:
            doc = apply_patch(self.document, edits)
            after = self.result.rerun(doc)
        except (PatchError, CarVerifyError) as err:
            outcome: _Trial | None = _Trial(None, None, str(err))
        else:
            outcome = _Trial(doc, after, None)
        self._trials[key] = outcome
        return outcome

    def alone(self, action: Mapping[str, Any]) -> list[Issue] | None:
        """The findings of a plan of one action (``action``: a wire object), verified
        with the run's inputs; None past the budget or when it is no plan."""
        if self.local_left <= 0:
            return None
        self.local_left -= 1
        doc = {k: v for k, v in self.document.items() if k != "actions"}
        try:
            return self.result.rerun({**doc, "actions": [action]}).issues
        except CarVerifyError:
            return None

    def conflicts_of(self, action_id: str) -> list[list[str]]:
        """The write conflicts ``[first, second, key]`` an action is in (indexed once)."""
        if self._conflicts is None:
            self._conflicts = {}
            for conflict in self.result.conflicts:
                for member in dict.fromkeys(conflict[:2]):
                    self._conflicts.setdefault(member, []).append(conflict)
        return self._conflicts.get(action_id, [])

    def identical_elsewhere(self, index: int, tool: Any, parameters: Any) -> bool:
        """Whether another call of the plan has this tool and these parameters (as the
        profile compares them): a fix that makes the call so could bring a repeated
        call."""
        if self._calls is None:
            self._calls = {}
            for action in self.actions:
                if action.type == "tool_call":
                    key = (action.tool, self.semantics.canonical(action.parameters))
                    self._calls[key] = self._calls.get(key, 0) + 1
        key = (tool, self.semantics.canonical(parameters))
        own = self.actions[index]
        mine = own.tool == tool and self.semantics.canonical(own.parameters) == key[1]
        return self._calls.get(key, 0) - int(mine) > 0


@dataclass(slots=True)
class _Trial:
    document: dict[str, Any] | None
    result: VerificationResult | None
    error: str | None

    @property
    def issues(self) -> list[Issue]:
        return [] if self.result is None else self.result.issues


def _identity(issue: Issue, actions: Sequence[Action]) -> tuple[str, str | None, str, str]:
    """A finding as a fix's re-verification compares it: code, action, severity and
    its place inside the action (an action moved keeps its findings' identity; a
    message that names a level does not make a finding new)."""
    pointer = issue.pointer
    if issue.index is not None:
        pointer = re.sub(r"^/actions/\d+", "", pointer)
    return (issue.code, issue.action_id, issue.severity.value, pointer)


def _identities(issues: Iterable[Issue], actions: Sequence[Action]) -> Counter[tuple[Any, ...]]:
    return Counter(_identity(i, actions) for i in issues)


#: What a fix of a code lets the checks see that they could not before, on the same
#: action: a call to a registered tool has its parameters checked, a precondition
#: with a known operator is evaluated (their problems were there all along, and have
#: fixes of their own), so they are not "brought".
_WALK = frozenset(
    {"precondition-unsatisfied", "missing-dependency", "assertion-fails", "never-runs"}
)
REVEALS: Mapping[str, frozenset[str]] = {
    "unknown-tool": frozenset({"param-schema", "param-schema-full", "param-undeclared"}),
    "missing-tool-name": frozenset({"param-schema", "param-schema-full", "param-undeclared"}),
    # a precondition the walk could not evaluate is evaluated
    "unknown-operator": _WALK,
}


def _brought(
    issues: Sequence[Issue],
    actions: Sequence[Action],
    before: Counter[tuple[Any, ...]],
    fixed: Iterable[Issue],
) -> list[Issue]:
    """The findings among ``issues`` that ``before`` lacks, except what fixing the
    findings ``fixed`` reveals (:data:`REVEALS`)."""
    revealed = {(i.action_id, code) for i in fixed for code in REVEALS.get(i.code, ())}
    extra = _identities(issues, actions) - before
    out = []
    for issue in issues:
        key = _identity(issue, actions)
        if extra.get(key, 0) > 0:
            extra[key] -= 1
            if (issue.action_id, issue.code) not in revealed:
                out.append(issue)
    return out


def _new_findings(scene: _Scene, trial: _Trial, fixed: Iterable[Issue] = ()) -> list[Issue]:
    """The findings of ``trial`` the original did not have (by identity), but for
    what fixing ``fixed`` reveals."""
    assert trial.result is not None
    return _brought(trial.result.issues, trial.result.proposal.actions, scene.before, fixed)


def _gone(scene: _Scene, trial: _Trial, targets: Iterable[Issue]) -> bool:
    """Whether each of ``targets`` (findings of the original) is fewer after the trial."""
    assert trial.result is not None
    after = _identities(trial.result.issues, trial.result.proposal.actions)
    wanted = Counter(_identity(t, scene.actions) for t in targets)
    return all(after.get(key, 0) <= scene.before[key] - n for key, n in wanted.items())


def _said(issue: Issue) -> str:
    return f"{issue.severity.value}[{issue.code}] on {issue.action_id or 'the proposal'}"


# --- JSON edits of an action -----------------------------------------------------------


def _at(index: int, *parts: str | int) -> str:
    from ..base.errors import json_pointer

    return json_pointer(["actions", index, *parts])


def _list_add(
    current: Sequence[Any], index: int, name: str, entry: Any, at: int | None = None
) -> Op:
    """Add ``entry`` to the action's list field ``name`` (``current``: the model's
    list). The model fills in an absent field with ``[]``, so an empty one is written
    whole (``add`` sets a member whether or not the document has it)."""
    if not current:
        return {"op": "add", "path": _at(index, name), "value": [entry]}
    where: str | int = "-" if at is None or at >= len(current) else at
    return {"op": "add", "path": _at(index, name, where), "value": entry}


def _insertion(current: Sequence[str], key: str, order: Sequence[str]) -> int | None:
    """Where ``key`` goes in ``current`` to keep the order ``order`` names them in
    (None: at the end)."""
    rank = {k: n for n, k in enumerate(dict.fromkeys(order))}
    if key not in rank:
        return None
    for n, existing in enumerate(current):
        if rank.get(existing, -1) > rank[key]:
            return n
    return None


def _read_order(action: Action) -> list[str]:
    """The keys an action reads, in the order it names them (preconditions, then its
    read set, then its assumptions)."""
    return [
        *(p.key for p in action.preconditions),
        *action.read_set,
        *(a.key for a in action.assumptions),
    ]


def _add_dependency_key(scene: _Scene, index: int, key: str) -> Op:
    action = scene.actions[index]
    current = list(action.state_dependencies)
    at = _insertion(current, key, _read_order(action))
    return _list_add(current, index, "state_dependencies", key, at)


def _move_after(reader: int, writer: int) -> Op:
    """Move action ``reader`` to just after ``writer`` (a later position)."""
    return {"op": "move", "from": _at(reader), "path": _at(writer)}


# --- parameters: pieces of a repaired parameters object -----------------------------------


@dataclass(slots=True)
class _Piece:
    """One repair inside a call's parameters: where it acts (``path`` inside the
    parameters), the parameter names it concerns, its edits, trust and words."""

    path: tuple[str | int, ...]
    names: frozenset[str]
    edits: list[Op]
    applicability: Applicability
    message: str


_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def _types(schema: Mapping[str, Any]) -> list[str] | None:
    wanted = schema.get("type")
    if isinstance(wanted, str):
        return [wanted]
    if isinstance(wanted, list) and all(isinstance(t, str) for t in wanted):
        return list(wanted)
    return None


def _is(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return is_number(value)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return True


def _fits_type(schema: Mapping[str, Any], value: Any) -> bool:
    kinds = _types(schema)
    return kinds is None or any(_is(k, value) for k in kinds)


def _allowed(schema: Mapping[str, Any]) -> list[Any] | None:
    """The values ``enum`` or ``const`` allow (None: any)."""
    if "const" in schema:
        return [schema["const"]]
    enum = schema.get("enum")
    return list(enum) if isinstance(enum, list) else None


def _fits(schema: Mapping[str, Any], value: Any) -> bool:
    allowed = _allowed(schema)
    if allowed is not None and not any(json_equal(value, a) for a in allowed):
        return False
    return _fits_type(schema, value)


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _conversions(schema: Mapping[str, Any], value: Any) -> Iterator[tuple[Any, Applicability]]:
    """The values ``value`` can become without losing what it says, that the schema's
    ``type`` takes, most faithful first (each with how far it may be trusted)."""
    kinds = _types(schema) or []
    if isinstance(value, str):
        text = value.strip() if value.strip() != value and value.strip() else value
        if ("integer" in kinds or "number" in kinds) and _INTEGER.fullmatch(text):
            yield int(text), SAFE
        if "number" in kinds and _NUMBER.fullmatch(text) and not _INTEGER.fullmatch(text):
            number = float(text)
            if json.dumps(number) == text:
                yield number, SAFE
        if "boolean" in kinds and text.lower() in ("true", "false"):
            yield text.lower() == "true", SAFE
        if "null" in kinds and text == "null":
            yield None, SAFE
        if ("object" in kinds or "array" in kinds) and text[:1] in ("{", "["):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if parsed is not None and _fits_type(schema, parsed):
                yield parsed, SAFE
    elif is_number(value):
        if "integer" in kinds and isinstance(value, float) and value.is_integer():
            yield int(value), SAFE
        if "string" in kinds:
            yield json.dumps(value), SAFE
    elif isinstance(value, bool) and "string" in kinds:
        yield ("true" if value else "false"), SAFE
    if "array" in kinds and not isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, dict) or _fits_type(items, value):
            yield [value], SAFE
    one = isinstance(value, list) and len(value) == 1 and "array" not in kinds and kinds
    if one and _fits_type(schema, value[0]):
        yield value[0], SAFE
    if isinstance(value, (dict, list)) and "string" in kinds:
        yield json.dumps(value, ensure_ascii=False), UNSAFE


def _enum_value(allowed: Sequence[Any], value: Any) -> tuple[Any, Applicability] | None:
    """The allowed value a string stands for: the same but for case and separators
    (safe), else the one closest by spelling (unsafe)."""
    if not isinstance(value, str):
        return None
    texts = [a for a in allowed if isinstance(a, str)]
    match = closest(value, texts)
    if match is None:
        return None
    return match.name, SAFE if match.same else UNSAFE


def _describe(schema: Any) -> str:
    """What a schema asks, in a few words: its type, its allowed values, its description."""
    if not isinstance(schema, dict):
        return "any value"
    parts = []
    kinds = _types(schema)
    if kinds:
        parts.append(" or ".join(kinds))
    allowed = _allowed(schema)
    if allowed is not None:
        shown = ", ".join(_show(a) for a in allowed[:8]) + (", ..." if len(allowed) > 8 else "")
        parts.append(f"one of {shown}")
    text = " ".join(parts) or "a value its schema accepts"
    description = schema.get("description")
    if isinstance(description, str) and description.strip():
        first = description.strip().splitlines()[0]
        text += f" ({first[:100]})"
    return text


def _name_of(path: Sequence[str | int]) -> str:
    return ".".join(str(p) for p in path) or "parameters"


def _value_pieces(
    schema: Any, value: Any, path: tuple[str | int, ...], base: str, *, loose: bool = False
) -> list[_Piece]:
    """The repairs of ``value`` (at ``path`` inside the parameters, pointer ``base``)
    against ``schema``."""
    if not isinstance(schema, dict) or "$ref" in schema:
        return []
    from ..base.errors import json_pointer

    name = frozenset({str(path[0])}) if path else frozenset()
    pieces: list[_Piece] = []
    if not _fits(schema, value):
        fixed = None
        for candidate, trust in _conversions(schema, value):
            if _fits(schema, candidate):
                fixed = (candidate, trust, f"{_show(value)} to {_show(candidate)}")
                break
            allowed = _allowed(schema)
            if allowed is not None and _fits_type(schema, candidate):
                chosen = _enum_value(allowed, candidate)
                if chosen is not None:
                    worst = min(trust, chosen[1], key=lambda a: a.rank)
                    fixed = (chosen[0], worst, f"{_show(value)} to {_show(chosen[0])}")
                    break
        if fixed is None and _fits_type(schema, value):
            allowed = _allowed(schema)
            chosen = None if allowed is None else _enum_value(allowed, value)
            if chosen is not None:
                fixed = (chosen[0], chosen[1], f"{_show(value)} to {_show(chosen[0])}")
        if fixed is None:
            message = f"`{_name_of(path)}` must be {_describe(schema)}"
            return [_Piece(path, name, [], DISPLAY, message)]
        new, trust, how = fixed
        pointer = base + json_pointer(list(path))
        pieces.append(
            _Piece(
                path,
                name,
                [{"op": "replace", "path": pointer, "value": new}],
                trust,
                f"`{_name_of(path)}`: {how}",
            )
        )
        value = new
    if isinstance(value, dict):
        pieces += _object_pieces(schema, value, path, base, loose=loose)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for n, item in enumerate(value):
            pieces += _value_pieces(schema["items"], item, (*path, n), base, loose=loose)
    return pieces


def _object_pieces(
    schema: Mapping[str, Any],
    value: Mapping[str, Any],
    path: tuple[str | int, ...],
    base: str,
    *,
    loose: bool = False,
) -> list[_Piece]:
    """The repairs of an object's members; ``loose``: an undeclared member close to a
    declared one the object leaves out is renamed even where the schema takes it."""
    from ..base.errors import json_pointer

    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = [r for r in schema.get("required", []) or [] if isinstance(r, str)]
    forbidden = schema.get("additionalProperties") is False and not schema.get("patternProperties")
    pieces: list[_Piece] = []
    top = not path
    here = base + json_pointer(list(path))

    def label(key: str) -> str:
        return _name_of((*path, key))

    undeclared = [k for k in value if k not in properties] if properties else []
    missing = [r for r in required if r not in value]
    provided: set[str] = set()
    renamed: set[str] = set()
    for key in undeclared:
        # a misspelling: a declared name not given, that the schema wants or that the
        # schema forbids the written one for
        open_names = [t for t in properties if t not in value and t not in provided]
        wanted = open_names if forbidden or loose else [t for t in open_names if t in missing]
        match = closest(key, wanted)
        if match is None:
            continue
        target = match.name
        provided.add(target)
        renamed.add(key)
        source, moved = here + json_pointer([key]), here + json_pointer([target])
        edits: list[Op] = [{"op": "move", "from": source, "path": moved}]
        trust = SAFE if match.same else UNSAFE
        words = [f"rename `{label(key)}` to `{target}`"]
        for inner in _value_pieces(properties[target], value[key], (*path, target), base):
            edits += inner.edits
            trust = min(trust, inner.applicability, key=lambda a: a.rank)
            words.append(inner.message)
        names = frozenset({key, target}) if top else frozenset({str(path[0])})
        pieces.append(_Piece((*path, target), names, edits, trust, "; ".join(words)))
    for key in undeclared:
        if key in renamed or not forbidden:
            continue
        names = frozenset({key}) if top else frozenset({str(path[0])})
        pieces.append(
            _Piece(
                (*path, key),
                names,
                [{"op": "remove", "path": here + json_pointer([key])}],
                UNSAFE,
                f"remove `{label(key)}`, which the schema does not declare and forbids",
            )
        )
    for key in missing:
        if key in provided:
            continue
        prop = properties.get(key, {})
        prop = prop if isinstance(prop, dict) else {}
        allowed = _allowed(prop)
        names = frozenset({key}) if top else frozenset({str(path[0])})
        if "default" in prop:
            fill, trust, why = prop["default"], UNSAFE, "the schema's default"
        elif allowed is not None and len(allowed) == 1:
            fill, trust, why = allowed[0], SAFE, "the one value the schema allows"
        else:
            pieces.append(
                _Piece(
                    (*path, key),
                    names,
                    [],
                    DISPLAY,
                    f"add the required `{label(key)}`: {_describe(prop)}",
                )
            )
            continue
        if not value and top:  # the model fills an absent `parameters` with {}
            edit: Op = {"op": "add", "path": here, "value": {key: fill}}
        else:
            edit = {"op": "add", "path": here + json_pointer([key]), "value": fill}
        pieces.append(
            _Piece(
                (*path, key), names, [edit], trust, f"add `{label(key)}` = {_show(fill)} ({why})"
            )
        )
    for key, item in value.items():
        if key in properties:
            pieces += _value_pieces(properties[key], item, (*path, key), base)
    return pieces


_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"")


def _quoted(message: str) -> set[str]:
    return {a or b for a, b in _QUOTED.findall(message)}


def _parameter_fix(scene: _Scene, issue: Issue, pieces: list[_Piece]) -> Fix | None:
    """The pieces of a call's repair that answer ``issue`` (by where it is, or, for one
    about the whole parameters object, by the names it quotes), as one fix."""
    assert issue.index is not None
    prefix = _at(issue.index, "parameters")
    inner = issue.pointer[len(prefix) :] if issue.pointer.startswith(prefix) else ""
    path = tuple(parse_pointer(inner))
    if path:
        chosen = [p for p in pieces if tuple(str(x) for x in p.path[: len(path)]) == path]
    else:
        quoted = _quoted(issue.message)
        chosen = [p for p in pieces if len(p.path) <= 1 and p.names & quoted]
    if not chosen:
        return None
    edits = [op for p in chosen for op in p.edits]
    trust = min((p.applicability for p in chosen if p.edits), key=lambda a: a.rank, default=DISPLAY)
    message = "; ".join(dict.fromkeys(p.message for p in chosen))
    return Fix(trust if edits else DISPLAY, message, tuple(edits))


# --- the derivers, by code ----------------------------------------------------------------

Deriver = Callable[[_Scene, Issue], Fix | None]


def _call_pieces(scene: _Scene, index: int) -> list[_Piece]:
    action = scene.actions[index]
    tools = scene.tools
    if tools is None or tools.names_only or action.tool is None or action.tool not in tools:
        return []
    schema = tools[action.tool].parameters
    return _value_pieces(schema, action.parameters, (), _at(index, "parameters"))


def _param_schema(scene: _Scene, issue: Issue) -> Fix | None:
    if issue.index is None:
        return None
    if issue.index not in scene.pieces:
        scene.pieces[issue.index] = _call_pieces(scene, issue.index)
    return _parameter_fix(scene, issue, scene.pieces[issue.index])


def _param_undeclared(scene: _Scene, issue: Issue) -> Fix | None:
    """An undeclared parameter renamed to the declared one it most likely stands for."""
    index = issue.index
    tools = scene.tools
    if index is None or tools is None or tools.names_only:
        return None
    action = scene.actions[index]
    if action.tool is None or action.tool not in tools:
        return None
    key = parse_pointer(issue.pointer[len(_at(index, "parameters")) :])[:1]
    base = _at(index, "parameters")
    pieces = _value_pieces(tools[action.tool].parameters, action.parameters, (), base, loose=True)
    chosen = [
        p for p in pieces if p.edits and key and key[0] in p.names and p.edits[0]["op"] == "move"
    ]
    if not chosen:
        return None
    piece = chosen[0]
    return Fix(piece.applicability, piece.message, tuple(piece.edits))


def _fit(tools: ToolRegistry, name: str, parameters: Mapping[str, Any]) -> tuple[int, float]:
    """How well ``parameters`` fit tool ``name``: its schema's violations, and the share
    of the parameters it declares."""
    schema = tools[name].parameters
    properties = schema.get("properties") if isinstance(schema, dict) else None
    declared = set(properties) if isinstance(properties, dict) else set()
    share = sum(1 for p in parameters if p in declared) / len(parameters) if parameters else 1.0
    try:
        errors = len(tools.check_parameters(name, parameters))
    except CarVerifyError:
        errors = 1_000
    return errors, share


def _unknown_tool(scene: _Scene, issue: Issue) -> Fix | None:
    tools, index = scene.tools, issue.index
    if tools is None or index is None:
        return None
    action = scene.actions[index]
    written = action.tool or ""
    names = list(tools)
    squashed = squash(written)
    near = [n for n in names if squash(n) == squashed]
    near += difflib.get_close_matches(written, names, n=8, cutoff=0.6)
    lowered = {n.lower(): n for n in names}
    close = difflib.get_close_matches(written.lower(), list(lowered), n=8, cutoff=0.6)
    near += [lowered[n] for n in close]
    near = [n for n in dict.fromkeys(near) if n != written]

    def rank(name: str) -> tuple[Any, ...]:
        errors, share = _fit(tools, name, action.parameters) if not tools.names_only else (0, 1.0)
        same = squash(name) == squashed
        typos = distance(squashed, squash(name))
        ratio = difflib.SequenceMatcher(None, written.lower(), name.lower()).ratio()
        return (not same, min(errors, 3) + round((1 - share) * 3), typos, -ratio, name)

    why = "the closest registered name"
    if not near and action.parameters and not tools.names_only and len(names) <= 200:
        fitting = [n for n in names if _fit(tools, n, action.parameters) == (0, 1.0)]
        if len(fitting) == 1:
            near, why = fitting, "the one registered tool whose schema takes these parameters"
    if not near:
        return None
    ranked = sorted(near, key=rank)
    if len(ranked) > 1 and rank(ranked[0])[:3] == rank(ranked[1])[:3]:
        shown = ", ".join(f"`{n}`" for n in ranked[:4])
        return Fix(DISPLAY, f"name a registered tool; the closest are {shown}")
    chosen = ranked[0]
    errors = _fit(tools, chosen, action.parameters)[0] if not tools.names_only else 0
    fit = "its schema takes the parameters" if errors == 0 else "its schema then has things to say"
    edit = {"op": "replace", "path": _at(index, "tool"), "value": chosen}
    return Fix(UNSAFE, f"call `{chosen}` ({why}; {fit})", (edit,))


def _missing_tool_name(scene: _Scene, issue: Issue) -> Fix | None:
    tools, index = scene.tools, issue.index
    if tools is None or index is None or tools.names_only or len(tools) > 200:
        return None
    action = scene.actions[index]
    if not action.parameters:
        return None
    fitting = [n for n in tools if _fit(tools, n, action.parameters) == (0, 1.0)]
    if len(fitting) == 1:
        edit = {"op": "add", "path": _at(index, "tool"), "value": fitting[0]}
        why = "the one tool whose schema takes these parameters"
        return Fix(UNSAFE, f"call `{fitting[0]}`, {why}", (edit,))
    if fitting:
        shown = ", ".join(f"`{n}`" for n in fitting[:5])
        return Fix(DISPLAY, f"name the tool: these registered tools take the parameters: {shown}")
    return None


def _precondition_of(scene: _Scene, issue: Issue) -> tuple[str, Callable[[Any], bool]] | None:
    """The key a walk finding is about and what a written value must satisfy."""
    index = issue.index
    if index is None:
        return None
    action = scene.actions[index]
    inner = issue.pointer[len(_at(index)) :]
    parts = tuple(parse_pointer(inner))
    if issue.code == "missing-dependency":
        if len(parts) == 2 and parts[0] == "state_dependencies" and parts[1].isdigit():
            deps = action.state_dependencies
            at = int(parts[1])
            if at < len(deps):
                return deps[at], lambda value: True
        return None
    for pre, where in scene.semantics.checks(action):
        if tuple(str(w) for w in where) == parts:
            if pre.operator not in KNOWN_OPERATORS or pre.operator == "not_exists":
                return None
            return pre.key, _holds(scene.semantics, pre.operator, pre.value)
    return None


def _holds(semantics: Semantics, operator: str, wanted: Any) -> Callable[[Any], bool]:
    """Whether a written value satisfies ``operator wanted``, as the profile reads it."""
    return lambda value: semantics.holds(operator, value, wanted)


def _order_after_writer(scene: _Scene, issue: Issue) -> Fix | None:
    """``missing-dependency``, ``precondition-unsatisfied``, ``assertion-fails``: order
    the action after the one that writes the key (a value that satisfies it)."""
    found = _precondition_of(scene, issue)
    if found is None or issue.index is None:
        return None
    key, good = found
    index = issue.index
    effects = scene.semantics.effects
    writers = [
        w
        for w, other in enumerate(scene.actions)
        if w != index and key in effects(other) and good(effects(other)[key])
    ]
    if not writers:
        return None
    action = scene.actions[index]
    earlier = [w for w in writers if w < index]
    later = [w for w in writers if w > index]
    fixes: list[Fix] = []
    if earlier and key not in action.state_dependencies:
        source = scene.actions[earlier[-1]].id
        edit = _add_dependency_key(scene, index, key)
        fixes.append(
            Fix(SAFE, f"depend on {key!r} (state_dependencies), written by {source}", (edit,))
        )
    if later:
        first = later[0]
        fixes.append(
            Fix(
                UNSAFE,
                f"move {action.id} after {scene.actions[first].id}, which writes {key!r}",
                (_move_after(index, first),),
            )
        )
    return _first_that_works(scene, issue, fixes)


def _first_that_works(scene: _Scene, issue: Issue, fixes: list[Fix]) -> Fix | None:
    """The first of ``fixes`` whose trial removes ``issue`` and brings nothing new
    (the last one that removes it, else the first, when none is clean)."""
    if len(fixes) <= 1:
        return fixes[0] if fixes else None
    fallback = None
    for fix in fixes:
        trial = scene.trial(fix.edits)
        if trial is None or trial.result is None:
            continue
        if _gone(scene, trial, [issue]):
            if not _new_findings(scene, trial, [issue]):
                return fix
            fallback = fallback or fix
    return fallback or fixes[0]


def _overtaken(scene: _Scene, issue: Issue) -> Fix | None:
    """``dependency-overtaken``: make the runtime order the action after the dependency
    it names, through a key that dependency writes."""
    index = issue.index
    if index is None:
        return None
    parts = parse_pointer(issue.pointer[len(_at(index)) :])
    action = scene.actions[index]
    if len(parts) != 2 or not parts[1].isdigit() or int(parts[1]) >= len(action.dependencies):
        return None
    name = action.dependencies[int(parts[1])]
    other = scene.position.get(name)
    if other is None:
        return None
    dependency = scene.actions[other]
    effects = scene.semantics.effects
    if other < index:
        # the runtime orders a reader after a key's last writer, when that comes earlier
        last: dict[str, int] = {}
        for w, each in enumerate(scene.actions):
            for key in effects(each):
                last[key] = w
        keys = [k for k in effects(dependency) if last.get(k) == other]
        reads = _read_order(action)
        keys.sort(key=lambda k: (k not in reads, k in action.state_dependencies))
        keys = [k for k in keys if k not in action.state_dependencies]
        if keys:
            edit = _add_dependency_key(scene, index, keys[0])
            return Fix(
                SAFE,
                f"depend on {keys[0]!r} (state_dependencies), which {name} writes, so the "
                f"runtime runs {action.id} after {name}",
                (edit,),
            )
        if not effects(dependency):
            suffix = "passed" if dependency.type == "assertion" else "done"
            mark = _fresh_key(scene, f"{name}_{suffix}")
            effect: Op = (
                {"op": "add", "path": _at(other, "expected_effects", mark), "value": True}
                if dependency.expected_effects
                else {"op": "add", "path": _at(other, "expected_effects"), "value": {mark: True}}
            )
            edits: list[Op] = [effect]
            edits.append(_add_dependency_key(scene, index, mark))
            return Fix(
                UNSAFE,
                f"give {name} an effect ({mark!r}: true) and depend on it, so the runtime runs "
                f"{action.id} after {name}",
                tuple(edits),
            )
        return None
    return Fix(
        UNSAFE,
        f"move {action.id} after {name}, which it depends on",
        (_move_after(index, other),),
    )


def _fresh_key(scene: _Scene, wanted: str) -> str:
    used = {k for a in scene.actions for k in scene.semantics.effects(a)}
    used |= {k for a in scene.actions for k in a.state_dependencies}
    key, n = wanted, 2
    while key in used:
        key, n = f"{wanted}_{n}", n + 1
    return key


def _write_conflict(scene: _Scene, issue: Issue) -> Fix | None:
    """Order the later writer after the earlier, as the profile orders actions; safe
    when z3 proves the end state the same in every initial state (and the trial finds
    nothing new)."""
    if issue.action_id is None:
        return None
    quoted = _quoted(issue.message)
    for first, second, key in scene.conflicts_of(issue.action_id):
        if key not in quoted:
            continue
        if first not in quoted and second not in quoted and issue.action_id != first:
            continue
        index = scene.position.get(second)
        if index is None:
            return None
        target = scene.document["actions"][index]
        edit = scene.semantics.ordering_edit(target, first, key)
        if isinstance(edit, str):
            return Fix(DISPLAY, f"order {second} after {first}: {edit}")
        name, entry = edit
        current = getattr(scene.actions[index], name, [])
        if entry in current:
            return None
        op = _list_add(current, index, name, entry)
        words = f"add {entry!r} to {second}'s {name}, ordering it after {first}"
        if scene.z3_left <= 0 or len(scene.actions) > Z3_LARGEST:
            return Fix(UNSAFE, f"{words} (not proven to keep the end state)", (op,))
        scene.z3_left -= 1
        try:
            after = apply_patch(scene.document, [op])
        except PatchError:
            return None
        why = changes_the_end_state(scene.document, after, scene.semantics, scene.timeout_ms)
        if why is None:
            same = "z3: the end state is the same in every initial state"
            return Fix(SAFE, f"{words} ({same})", (op,))
        return Fix(UNSAFE, f"{words} ({why})", (op,))
    return None


def changes_the_end_state(
    before: Mapping[str, Any], after: Mapping[str, Any], profile: ProfileLike, timeout_ms: int
) -> str | None:
    """None when z3 proves the two plans leave the same end state in every initial
    state (on the profile's walk); otherwise why not (a counterexample state)."""
    from ..ir.model import load_parsed
    from .equivalence import equivalent

    same = equivalent(
        load_parsed(copy.deepcopy(dict(before))),
        load_parsed(copy.deepcopy(dict(after))),
        method="z3",
        profile=profile,
        timeout_ms=timeout_ms,
    )
    if same.equivalent is True:
        return None
    if same.equivalent is None:
        return "z3 could not decide whether it keeps the end state" + (
            f": {same.reason}" if same.reason else ""
        )
    return f"it changes the end state, e.g. from {json.dumps(same.counterexample)}"


def _cycle(scene: _Scene, issue: Issue) -> Fix | None:
    """Remove the ``dependencies`` entry on the cycle whose removal leaves the fewest
    findings (entries on a later action first, at equal count)."""
    index = issue.index
    if index is None:
        return None
    dag = scene.result.dag
    members: set[int] = set()
    for cycle in dag.cycles:
        if index in cycle.members:
            members = set(cycle.members)
    if not members:
        return None
    options: list[tuple[int, int, str]] = []
    for i in sorted(members):
        for n, name in enumerate(scene.actions[i].dependencies):
            if scene.position.get(name) in members:
                options.append((i, n, name))
    scored = []
    for i, n, name in options[:12]:
        op = {"op": "remove", "path": _at(i, "dependencies", n)}
        trial = scene.trial([op])
        if trial is None or trial.result is None:
            continue
        weight = sum(
            {Severity.ERROR: 1_000, Severity.WARNING: 10, Severity.INFO: 0}[x.severity]
            for x in trial.issues
        )
        forward = (scene.position.get(name) or 0) > i
        scored.append((weight, not forward, -i, op, scene.actions[i].id, name))
    if not scored:
        return None
    weight, _, _, op, who, name = min(scored, key=lambda s: s[:3])
    words = f"remove {name} from {who}'s dependencies (the fewest findings remain)"
    return Fix(UNSAFE, words, (op,))


def _unknown_dependency(scene: _Scene, issue: Issue) -> Fix | None:
    index = issue.index
    if index is None:
        return None
    parts = parse_pointer(issue.pointer[len(_at(index)) :])
    action = scene.actions[index]
    if len(parts) == 2 and parts[0] == "dependencies" and parts[1].isdigit():
        n = int(parts[1])
        if n >= len(action.dependencies):
            return None
        written = action.dependencies[n]
        others = [a.id for a in scene.actions if a.id != action.id]
        match = closest(written, others)
        if match is not None:
            op = {"op": "replace", "path": _at(index, "dependencies", n), "value": match.name}
            return Fix(UNSAFE, f"depend on {match.name} (no action is called {written!r})", (op,))
        op = {"op": "remove", "path": _at(index, "dependencies", n)}
        return Fix(UNSAFE, f"remove {written!r} from dependencies: no action is called so", (op,))
    return None


#: Spellings of the operators: written another way (safe), or in other words (unsafe).
_OPERATOR_SIGNS = {
    "==": "eq", "=": "eq", "!=": "neq", "<>": "neq", ">": "gt", "<": "lt", ">=": "gte", "<=": "lte",
}  # fmt: skip
_OPERATOR_WORDS = {
    "equals": "eq", "equal": "eq", "is": "eq", "ne": "neq", "not_equal": "neq",
    "not_equals": "neq", "greater_than": "gt", "less_than": "lt", "ge": "gte",
    "greater_than_or_equal": "gte", "greater_or_equal": "gte", "le": "lte",
    "less_than_or_equal": "lte", "less_or_equal": "lte", "exist": "exists",
    "present": "exists", "not_exist": "not_exists", "absent": "not_exists",
    "missing": "not_exists", "includes": "contains", "has": "contains",
}  # fmt: skip


def _unknown_operator(scene: _Scene, issue: Issue) -> Fix | None:
    index = issue.index
    if index is None:
        return None
    parts = parse_pointer(issue.pointer[len(_at(index)) :])
    if len(parts) != 3 or parts[0] != "preconditions" or not parts[1].isdigit():
        return None
    pres = scene.actions[index].preconditions
    n = int(parts[1])
    if n >= len(pres):
        return None
    written = pres[n].operator
    spelled = words(written)
    if written in _OPERATOR_SIGNS:
        chosen, trust = _OPERATOR_SIGNS[written], SAFE
    elif spelled in KNOWN_OPERATORS:
        chosen, trust = spelled, SAFE
    elif spelled in _OPERATOR_WORDS:
        chosen, trust = _OPERATOR_WORDS[spelled], UNSAFE
    else:
        match = closest(written, sorted(KNOWN_OPERATORS))
        if match is None:
            return Fix(DISPLAY, f"use one of {', '.join(sorted(KNOWN_OPERATORS))}")
        chosen, trust = match.name, UNSAFE
    op = {"op": "replace", "path": _at(index, "preconditions", n, "operator"), "value": chosen}
    return Fix(trust, f"operator {written!r} to {chosen!r}", (op,))


def _unknown_action_type(scene: _Scene, issue: Issue) -> Fix | None:
    from ..ir.model import Action

    index = issue.index
    if index is None:
        return None
    written = scene.actions[index].type
    spelled = words(written)
    known = sorted(Action.KNOWN_TYPES)
    chosen = spelled if spelled in known else None
    if chosen is None:
        match = closest(written, known)
        chosen = match.name if match is not None else None
    if chosen is None:
        return None
    op = {"op": "replace", "path": _at(index, "type"), "value": chosen}
    return Fix(UNSAFE, f"type {written!r} to {chosen!r}", (op,))


def _duplicate_id(scene: _Scene, issue: Issue) -> Fix | None:
    index = issue.index
    if index is None:
        return None
    taken = {a.id for a in scene.actions}
    written = scene.actions[index].id
    n = 2
    while f"{written}-{n}" in taken:
        n += 1
    fresh = f"{written}-{n}"
    op = {"op": "replace", "path": _at(index, "id"), "value": fresh}
    return Fix(UNSAFE, f"rename this {written} to {fresh}", (op,))


def _unknown_field(scene: _Scene, issue: Issue) -> Fix | None:
    from ..ir._codec import wire_names
    from ..ir.model import unknown_fields

    for found in unknown_fields(scene.proposal):
        if found.pointer != issue.pointer:
            continue
        owner: Any = scene.proposal
        for part in found.path[:-1]:
            owner = owner[int(part)] if isinstance(owner, list) else getattr(owner, str(part))
        known = sorted(wire_names(type(owner)))
        by_words = [k for k in known if words(k) == words(found.name)]
        target = by_words[0] if len(by_words) == 1 else found.suggestion
        if target is None:
            return None
        present = getattr(owner, target, None)
        if present not in (None, [], {}, ()) and not _is_default(owner, target):
            return None
        parent = found.pointer.rsplit("/", 1)[0]
        op = {"op": "move", "from": found.pointer, "path": f"{parent}/{target}"}
        return Fix(UNSAFE, f"rename field `{found.name}` to `{target}`", (op,))
    return None


def _is_default(owner: Any, name: str) -> bool:
    import dataclasses

    for f in dataclasses.fields(owner):
        if f.name == name:
            if f.default is not dataclasses.MISSING:
                return bool(getattr(owner, name) == f.default)
            return False
    return False


def _compensation_target(scene: _Scene, issue: Issue) -> Fix | None:
    index = issue.index
    if index is None:
        return None
    parts = parse_pointer(issue.pointer[len(_at(index)) :])
    compensation = scene.actions[index].compensation
    if compensation is None or len(parts) != 2:
        return None
    written = getattr(compensation, parts[1], None)
    if not isinstance(written, str):
        return None
    if parts[1] == "tool":
        known = list(scene.tools or [])
    else:
        known = [a.id for a in scene.actions if a.id != scene.actions[index].id]
    match = closest(written, known)
    if match is None:
        return None
    op = {"op": "replace", "path": issue.pointer, "value": match.name}
    return Fix(UNSAFE, f"compensate with {match.name!r} ({written!r} is not known)", (op,))


_INVERSES = (
    ("create", "delete"), ("add", "remove"), ("start", "stop"), ("open", "close"),
    ("lock", "unlock"), ("enable", "disable"), ("attach", "detach"), ("insert", "delete"),
    ("subscribe", "unsubscribe"), ("book", "cancel"), ("reserve", "cancel"),
    ("deploy", "rollback"), ("grant", "revoke"), ("mount", "unmount"), ("install", "uninstall"),
)  # fmt: skip


def _missing_compensation(scene: _Scene, issue: Issue) -> Fix | None:
    index = issue.index
    if index is None:
        return None
    action = scene.actions[index]
    tools = scene.tools
    if tools is None or not action.tool:
        return Fix(
            DISPLAY,
            "declare a compensation (a tool that undoes this call), or mark the action "
            "irreversible",
        )
    tool = action.tool
    spelled = words(tool)
    names = [f"{p}_{spelled}" for p in ("rollback", "undo", "revert")]
    names += [f"{spelled}_{s}" for s in ("rollback", "undo", "revert")]
    for do, undo in _INVERSES:
        for a, b in ((do, undo), (undo, do)):
            if spelled.startswith(a + "_"):
                names.append(b + spelled[len(a) :])
    by_words = {words(n): n for n in tools}
    found = next((by_words[n] for n in names if n in by_words), None)
    if found is None:
        return Fix(
            DISPLAY,
            f"declare a compensation for {tool} (a registered tool that undoes it), or mark "
            "the action irreversible",
        )
    schema = tools[found].parameters
    properties = schema.get("properties") if isinstance(schema, dict) else None
    declared = set(properties) if isinstance(properties, dict) else set()
    params = {k: v for k, v in action.parameters.items() if k in declared}
    value = {"type": "tool", "tool": found, "parameters": params}
    op = {"op": "add", "path": _at(index, "compensation"), "value": value}
    return Fix(UNSAFE, f"compensate with {found} (named as {tool}'s inverse)", (op,))


DERIVERS: Mapping[str, Deriver] = {
    "param-schema": _param_schema,
    "param-schema-full": _param_schema,
    "param-undeclared": _param_undeclared,
    "unknown-tool": _unknown_tool,
    "missing-tool-name": _missing_tool_name,
    "missing-dependency": _order_after_writer,
    "precondition-unsatisfied": _order_after_writer,
    "assertion-fails": _order_after_writer,
    "dependency-overtaken": _overtaken,
    "write-conflict": _write_conflict,
    "dependency-cycle": _cycle,
    "unknown-dependency": _unknown_dependency,
    "unknown-operator": _unknown_operator,
    "unknown-action-type": _unknown_action_type,
    "duplicate-id": _duplicate_id,
    "unknown-field": _unknown_field,
    "unknown-compensation-target": _compensation_target,
    "missing-compensation": _missing_compensation,
}
"""The code -> deriver table; a code absent here has no repair (the code table says why)."""


# --- deriving and checking --------------------------------------------------------------


def _checked(scene: _Scene, issue: Issue, fix: Fix) -> Fix | None:
    """``fix`` re-verified: dropped when its finding stays, ``display`` (and said) when
    it brings a new one; at most unsafe for a note, or when past the budget."""
    if issue.severity is Severity.INFO and fix.applicability is SAFE:
        fix = Fix(UNSAFE, fix.message, fix.edits)
    if not fix.edits or fix.applicability is DISPLAY:
        return fix
    local = _on_the_call_alone(scene, issue, fix)
    if local is not None:
        return local if local is not _NOT_GONE else None
    trial = scene.trial(fix.edits)
    if trial is None:
        capped = UNSAFE if fix.applicability is SAFE else fix.applicability
        return Fix(capped, fix.message + " (not re-verified: past the budget)", fix.edits)
    if trial.result is None:
        return None  # the edit does not apply, or the plan stops being one
    if not _gone(scene, trial, [issue]):
        return None
    new = _new_findings(scene, trial, [issue])
    if new:
        brings = ", ".join(_said(i) for i in new[:3]) + (" ..." if len(new) > 3 else "")
        return Fix(DISPLAY, f"{fix.message} (it would bring {brings})", fix.edits)
    return fix


#: What :func:`_on_the_call_alone` answers for a fix whose finding stays.
_NOT_GONE = Fix(DISPLAY, "")
#: The codes a call's parameters and tool name make, on the call alone.
_CALL_CODES = frozenset(
    {"param-schema", "param-schema-full", "param-undeclared", "unknown-tool", "missing-tool-name"}
)


def _on_the_call_alone(scene: _Scene, issue: Issue, fix: Fix) -> Fix | None:
    """A fix of a call's parameters or tool name checked on the call alone (a plan of
    that one action, before and after), which is what a full re-verification finds
    when nothing else reads the call: no policies, labels, intent or chosen passes,
    no output reference in its parameters, and no other call it repeats, before the
    fix or after.
    None: it cannot be checked so (a full trial decides); ``_NOT_GONE``: its finding
    stays. ``tests/test_repair.py`` holds the two checks to the same answers."""
    index = issue.index
    inputs = scene.result.inputs
    if index is None or inputs is None or issue.code not in _CALL_CODES:
        return None
    if inputs.policies is not None or inputs.labels is not None or inputs.intent is not None:
        return None
    if inputs.passes is not None or scene.actions[index].type != "tool_call":
        return None
    prefix = _at(index)
    local: list[Op] = []
    for op in fix.edits:
        moved = {}
        for member in ("path", "from"):
            where = op.get(member)
            if where is None:
                continue
            inner = where[len(prefix) :] if where.startswith(prefix + "/") else None
            if inner is None or not (inner == "/tool" or inner.startswith("/parameters")):
                return None
            moved[member] = inner
        local.append({**op, **moved})
    original = scene.document["actions"][index]
    try:
        edited = apply_patch(original, local)
    except PatchError:
        return None
    if "$" in json.dumps(original.get("parameters")) + json.dumps(edited.get("parameters")):
        return None  # an output reference orders actions
    tool, parameters = edited.get("tool"), edited.get("parameters", {})
    own = scene.actions[index]
    if not isinstance(parameters, dict) or scene.identical_elsewhere(index, tool, parameters):
        return None  # the call would repeat another: the plan's loop check decides
    if scene.identical_elsewhere(index, own.tool, own.parameters):
        return None  # the call leaves a group of identical calls: the same
    after_alone = scene.alone(edited)
    if after_alone is None:
        return None
    one = [scene.actions[index]]
    # the call's own findings are the same in the plan and alone: they read the call only
    mine = [i for i in scene.result.issues if i.index == index and i.code in _CALL_CODES]
    before = _identities(mine, one)
    after = [i for i in after_alone if i.code in _CALL_CODES]
    target = _identity(issue, scene.actions)
    if _identities(after, one).get(target, 0) >= before.get(target, 0):
        return _NOT_GONE
    new = _brought(after, one, before, [issue])
    if new:
        brings = ", ".join(_said(i) for i in new[:3]) + (" ..." if len(new) > 3 else "")
        return Fix(DISPLAY, f"{fix.message} (it would bring {brings})", fix.edits)
    return fix


def derive_fixes(
    result: VerificationResult,
    *,
    timeout_ms: int = 2_000,
    z3_questions: int = MAX_Z3_QUESTIONS,
) -> list[Fix]:
    """The fixes of ``result``'s findings (see the module's docstring), in the
    findings' order; each is attached to its finding in ``result.issues``."""
    scene = _Scene(result, timeout_ms=timeout_ms, z3_questions=z3_questions)
    derived: dict[int, Fix] = {}
    candidates: list[tuple[int, Fix]] = []
    for n, issue in enumerate(result.issues[:MAX_DERIVED]):
        derive = DERIVERS.get(issue.code)
        if derive is None:
            continue
        try:
            fix = derive(scene, issue)
        except (PatchError, CarVerifyError):
            fix = None
        if fix is not None:
            candidates.append((n, fix))
    for n, fix in candidates:
        checked = _checked(scene, result.issues[n], fix)
        if checked is not None:
            derived[n] = checked
    result.issues[:] = [
        issue.with_fix(derived[n]) if n in derived else issue
        for n, issue in enumerate(result.issues)
    ]
    fixes = [derived[n] for n in sorted(derived)]
    result._fixes = fixes  # what `result.fixes` returns from now on
    return fixes


def _key(edits: Sequence[Op]) -> str:
    return json.dumps(list(edits), sort_keys=True, default=str)


def _meets(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


register_deriver("fixes", derive_fixes)


# --- applying them ------------------------------------------------------------------------


@dataclass(slots=True)
class Applied:
    """One fix :func:`repair` applied: the finding's code and action, and the fix."""

    code: str
    action_id: str | None
    fix: Fix

    def describe(self) -> str:
        return f"[{self.code}] {self.action_id or '(proposal)'}: {self.fix.message}"


@dataclass(slots=True)
class Repaired:
    """What :func:`repair` did: the repaired document (``proposal``), the JSON Patch
    that turns the given document into it (``edits``, in order), the fixes applied,
    those dropped (each with why) and the final verification.

    It unpacks as ``proposal, edits = car_verify.repair(...)``."""

    proposal: dict[str, Any]
    edits: list[Op]
    applied: list[Applied] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    #: Fixes not applied because they are unsafe (``unsafe=False``), by code.
    unsafe_left: int = 0
    result: VerificationResult | None = None

    def __iter__(self) -> Iterator[Any]:
        yield self.proposal
        yield self.edits

    @property
    def changed(self) -> bool:
        return bool(self.edits)


def _wanted(fix: Fix, unsafe: bool) -> bool:
    if not fix.edits:
        return False
    return fix.applicability is SAFE or (unsafe and fix.applicability is UNSAFE)


def apply_fixes(
    document: Mapping[str, Any],
    result: VerificationResult,
    *,
    unsafe: bool,
    timeout_ms: int = 5_000,
) -> Repaired:
    """Apply ``result``'s fixes (safe ones; unsafe ones too with ``unsafe``) to
    ``document`` (the JSON ``result`` is the verification of; not modified), round
    after round, each round re-verified: a fix that brings a new finding together
    with the others is tried alone, and dropped (and said) when it still does."""
    doc = copy.deepcopy(dict(document))
    out = Repaired(doc, [])
    tried: set[str] = set()
    current = result
    for _ in range(MAX_ROUNDS):
        if current._fixes is None:
            derive_fixes(current, timeout_ms=timeout_ms)
        pending = []
        for issue in current.issues:
            fix = issue.fix
            if fix is None:
                continue
            if _key(fix.edits) in tried:
                continue
            if not _wanted(fix, unsafe):
                out.unsafe_left += fix.applicability is UNSAFE and bool(fix.edits)
                continue
            pending.append((issue, fix))
        if not pending:
            break
        out.unsafe_left = 0
        before = _identities(current.issues, current.proposal.actions)
        step = _apply_round(doc, current, pending, before, out, tried)
        if step is None:
            break
        doc, current = step
    out.proposal = doc
    out.result = current
    return out


def _apply_round(
    doc: dict[str, Any],
    current: VerificationResult,
    pending: list[tuple[Issue, Fix]],
    before: Counter[tuple[Any, ...]],
    out: Repaired,
    tried: set[str],
) -> tuple[dict[str, Any], VerificationResult] | None:
    """One round: all pending fixes whose edits do not meet, at once; if that brings a
    new finding, one at a time."""

    together: list[tuple[Issue, Fix]] = []
    touched: list[str] = []
    moved = False
    for issue, fix in pending:
        paths = [p for op in fix.edits for p in (op.get("path", ""), op.get("from", "")) if p]
        moves = any(op["op"] == "move" and op.get("from", "").count("/") == 2 for op in fix.edits)
        if moved or (moves and together) or any(_meets(p, t) for p in paths for t in touched):
            continue
        together.append((issue, fix))
        tried.add(_key(fix.edits))
        touched += paths
        moved = moved or moves
    try:
        candidate = apply_patch(doc, [op for _, f in together for op in f.edits])
    except PatchError:
        candidate = None
    if candidate is not None:
        after, new = _clean(candidate, current, before, [i for i, _ in together])
        if after is not None and not new:
            for issue, fix in together:
                out.applied.append(Applied(issue.code, issue.action_id, fix))
                out.edits += fix.edits
            return candidate, after
    # together they bring something: one at a time, each on what the last one left
    changed = False
    for issue, fix in together:
        try:
            alone = apply_patch(doc, fix.edits)
        except PatchError:
            said = f"[{issue.code}] {issue.action_id}: {fix.message}"
            out.dropped.append(f"{said}: it no longer applies")
            continue
        after, new = _clean(alone, current, before, [issue])
        if after is None or new:
            brings = ", ".join(_said(i) for i in new[:3]) or "a document that is no proposal"
            said = f"[{issue.code}] {issue.action_id}: {fix.message}"
            out.dropped.append(f"{said}: it brings {brings}")
            continue
        out.applied.append(Applied(issue.code, issue.action_id, fix))
        out.edits += fix.edits
        doc, current, changed = alone, after, True
        before = _identities(current.issues, current.proposal.actions)
    return (doc, current) if changed else None


def _clean(
    candidate: dict[str, Any],
    current: VerificationResult,
    before: Counter[tuple[Any, ...]],
    fixed: Sequence[Issue],
) -> tuple[VerificationResult | None, list[Issue]]:
    """``candidate`` verified as ``current`` was, and its findings ``before`` lacks
    (but for what fixing ``fixed`` reveals)."""
    try:
        after = current.rerun(candidate)
    except CarVerifyError:
        return None, []
    return after, _brought(after.issues, after.proposal.actions, before, fixed)


@deep_values_are_input_errors
def repair(
    proposal: ProposalLike,
    *,
    tools: Any = None,
    initial_state: StateLike = None,
    profile: ProfileLike = None,
    unsafe: bool = True,
    policies: Any = None,
    max_actions: int | None = None,
    timeout_ms: int = 5_000,
) -> Repaired:
    """The proposal with its findings' fixes applied, and the JSON Patch that does it.

    ``proposal``: anything :func:`car_verify.verify` takes (a document, its text, a
    path; a model is read as its wire object). The fixes are those of
    :attr:`VerificationResult.fixes`, applied round after round and re-verified
    (see :func:`apply_fixes`): the safe ones, and the unsafe ones too unless
    ``unsafe=False`` (``--fix`` without ``--unsafe-fixes``). Returns a
    :class:`Repaired`, which unpacks as ``(repaired_document, edits)``; ``edits``
    applies to the given document with any RFC 6902 implementation.
    """
    from ..api import verify

    document = _document(proposal)
    result = verify(
        document,
        tools=tools,
        initial_state=initial_state,
        profile=profile,
        policies=policies,
        max_actions=max_actions,
    )
    return apply_fixes(document, result, unsafe=unsafe, timeout_ms=timeout_ms)


def _document(proposal: ProposalLike) -> dict[str, Any]:
    """The proposal as the JSON document it is (a model: its wire object; YAML: the
    model's wire object, since a JSON Patch of YAML text is not written back)."""
    import os
    from pathlib import Path

    from ..ir.model import YAML_SUFFIXES, ActionProposal, load, read_json

    if isinstance(proposal, Mapping):
        return copy.deepcopy(dict(proposal))
    if isinstance(proposal, ActionProposal):
        return proposal.to_dict()
    path = None
    if isinstance(proposal, os.PathLike) or (
        isinstance(proposal, str) and proposal.lstrip()[:1] not in ("{", "[", "")
    ):
        path = Path(proposal)
    if path is not None and path.suffix.lower() in YAML_SUFFIXES:
        return load(path).to_dict()
    name = None if path is None else str(path)
    data = read_json(path if path is not None else proposal, name=name)
    if not isinstance(data, dict):
        return load(data).to_dict()  # which says what is wrong with it
    return data
