"""Policy sets analysed, not just applied: ``policy lint`` (``policy diff`` is
:mod:`car_verify.plan.policy_diff`, above the gate it replays through).

Each rule of a set that judges one call at a time is a z3 condition on the call
and on the state, written by its kind (``Kind.pieces`` in
:mod:`car_verify.rules.kinds`) over the model of
:mod:`car_verify.rules.policy_model`.

**lint**: what a kind says of a rule by itself (a pattern RE2 cannot compile);
rules naming a tool or a parameter the registry does not have; dead rules (they
can never deny a call, or a rule that denies every call of their tool makes them
never decide), shadowed rules (every call they deny, other rules deny), allow-list
entries that another rule denies anyway, and contradictory pairs (two rules that
together deny every call of a tool, while neither does alone); each names the
rules by their stable names and shows a witness call.
"""

from __future__ import annotations

import difflib
import itertools
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.errors import UsageError
from ..base.findings import Severity
from ..semantics.solving import check
from ..semantics.value_domain import Local, Slot, literal
from .kinds import REGISTERED, Kind
from .policy import (
    LoadedPolicies,
    PolicyEngine,
    PolicySet,
    load_policies,
    load_policy_file,
    load_policy_text,
)
from .policy_model import Model, Piece

#: Each question's time limit (see :func:`car_verify.semantics.solving.check`).
_LIMIT_MS = 10_000
#: The time ``policy lint`` gives the questions about shadowed rules, cancelled
#: entries and contradictions in all (400 rules on one parameter took minutes):
#: past it the rest are not asked, and ``policy-lint-incomplete`` says so.
LINT_SECONDS = 6.0

__all__ = [
    "PolicyFinding",
    "RuleRef",
    "gather",
    "lint_policies",
    "one_call",
    "rule_names",
    "rules_model",
    "unknown_names",
]


# --- rules, located -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RuleRef:
    """One rule of a set: its stable name, its kind's name and the kind itself, the
    rule, where it is written."""

    name: str
    kind: str
    rule: Any
    of: Kind[Any]
    file: str | None = None
    line: int | None = None
    #: The name, told apart from another rule of the same name (``#2``): rules of
    #: one kind on the same tool and parameter share their stable name.
    label: str = ""

    def __str__(self) -> str:
        return self.label or self.name

    def where(self) -> str:
        if self.file is None:
            return ""
        return f"{self.file}:{self.line}" if self.line else self.file

    @property
    def tool(self) -> str | None:
        """The tool the rule is about (None: every tool)."""
        return self.of.tool_of(self.rule)


def gather(policies: Any, *, strict: bool = True) -> tuple[list[RuleRef], PolicyEngine]:
    """The rules of ``policies`` (a directory, loaded policies, a PolicySet or an
    engine), each located in its file where it has one and told apart by its label,
    and an engine over them (``strict``: as
    :func:`~car_verify.rules.policy.load_policy_file` reads)."""
    refs, engine = _gather(policies, strict=strict)
    counts: dict[str, int] = {}
    for ref in refs:
        counts[ref.name] = counts.get(ref.name, 0) + 1
    seen: dict[str, int] = {}
    labelled = []
    for ref in refs:
        seen[ref.name] = seen.get(ref.name, 0) + 1
        label = ref.name if counts[ref.name] == 1 else f"{ref.name}#{seen[ref.name]}"
        labelled.append(RuleRef(ref.name, ref.kind, ref.rule, ref.of, ref.file, ref.line, label))
    return labelled, engine


def rule_names(policies: Any) -> list[str]:
    """The name of every rule in ``policies`` (a directory, loaded policies, a set or
    an engine), as findings carry them."""
    refs, _ = _gather(policies)
    return list(dict.fromkeys(ref.name for ref in refs))


def _gather(policies: Any, *, strict: bool = True) -> tuple[list[RuleRef], PolicyEngine]:
    if isinstance(policies, (str, Path)):
        policies = load_policies(policies, strict=strict)
    if isinstance(policies, LoadedPolicies):
        refs: list[RuleRef] = []
        before: dict[str, int] = {}  # per kind, the rules of the files before
        for file in policies.files:
            text = policies.texts.get(file)
            if text is None:
                rules = load_policy_file(file, strict=strict)
                text = file.read_text(encoding="utf-8")
            else:
                rules = load_policy_text(text, source=str(file), strict=strict)
            refs += _located(rules, text, str(file), before)
        return refs, PolicyEngine(policies.rules)
    if isinstance(policies, PolicyEngine):
        registered = [
            RuleRef(r.name, REGISTERED[r.kind].name, r, REGISTERED[r.kind])
            for r in policies.registered
        ]
        return _located(policies.rules, "", None, {}) + registered, policies
    if isinstance(policies, PolicySet):
        return _located(policies, "", None, {}), PolicyEngine(policies)
    raise UsageError("policies must be a directory, loaded policies, a PolicySet or an engine")


def _located(
    rules: PolicySet, text: str, source: str | None, before: dict[str, int]
) -> list[RuleRef]:
    """The rules of one file (or set), located in its ``text``; ``before``: per
    kind, how many rules of that kind come before this file's in the merged rules
    (a ``deny_keyword`` is named by its place there), counted on."""
    out: list[RuleRef] = []
    for kind, items in rules.kinds():
        first = before.get(kind.key, 0)
        for n, rule in enumerate(items):
            line = kind.line_of(text, rule, n) if text else None
            out.append(RuleRef(kind.rule_name(rule, first + n), kind.name, rule, kind, source,
                               line))  # fmt: skip
        before[kind.key] = first + len(items)
    return out


def one_call(refs: Sequence[RuleRef]) -> list[RuleRef]:
    """The rules that judge a call by itself (a rate limit of no calls is one)."""
    return [r for r in refs if r.of.one_call(r.rule)]


def rules_model(refs: Sequence[RuleRef], extra: Mapping[str, Sequence[Any]] | None = None) -> Model:
    """The model of one call over which the rules of ``refs`` are judged (``extra``:
    more values per parameter, for the trace rules' tests)."""
    return Model([(r.label, r.of.needs(r.rule)) for r in refs], extra)


# --- findings -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PolicyFinding:
    """One finding of ``policy lint`` about the rules themselves."""

    code: str
    rule: RuleRef
    message: str
    others: tuple[str, ...] = ()
    witness: dict[str, Any] | None = None

    @property
    def severity(self) -> Severity:
        """As the code table says (``car_verify.base.codes``)."""
        from ..base.codes import lookup

        severity = lookup(self.code).severity
        assert severity is not None
        return severity

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "rule": self.rule.name,
            "label": str(self.rule),
            "file": self.rule.file,
            "line": self.rule.line,
            "message": self.message,
            "others": list(self.others),
            "witness": self.witness,
        }

    def __str__(self) -> str:
        where = self.rule.where()
        head = f"{where}: " if where else ""
        tail = f" (witness: {call_text(self.witness)})" if self.witness else ""
        return f"{head}{self.severity.value}[{self.code}] {self.rule}: {self.message}{tail}"


def call_text(witness: Mapping[str, Any]) -> str:
    """A call (``tool``, ``parameters``, ``state``, ``calls_at``) in one line."""
    text = f"{witness['tool']}({json.dumps(witness.get('parameters', {}), sort_keys=True)})"
    if witness.get("state"):
        text += f" with state {json.dumps(witness['state'], sort_keys=True)}"
    if witness.get("calls_at"):
        text += f" at times {witness['calls_at']}"
    return text


# --- lint ------------------------------------------------------------------------------------


def lint_policies(policies: Any, tools: Any = None) -> list[PolicyFinding]:
    """What is wrong with a policy set beyond its syntax (see the module docs);
    ``tools``: a tool registry, to catch names no tool has."""
    refs, _ = gather(policies, strict=False)  # a rule no face would load is reported too
    found: list[PolicyFinding] = []
    found += [PolicyFinding(code, ref, message) for ref in refs
              for code, message in ref.of.lint(ref.rule)]  # fmt: skip
    if tools is not None:
        found += unknown_names(refs, tools)
    found += _redundancy(refs)
    return found


def unknown_names(policies: Any, tools: Any) -> list[PolicyFinding]:
    """Rules that name a tool, or a tool's parameter, the registry does not have
    (a typo fails open), each with the nearest name the registry has."""
    from .tools import ToolRegistry

    refs = policies if isinstance(policies, list) else gather(policies)[0]
    return list(_unknown_names(refs, ToolRegistry.coerce(tools)))


def _unknown_names(refs: Sequence[RuleRef], registry: Any) -> Iterable[PolicyFinding]:
    names = sorted(registry)
    for ref in refs:
        for tool, param in ref.of.names(ref.rule):
            if tool not in registry:
                hint = difflib.get_close_matches(tool, names, n=1)
                yield PolicyFinding(
                    "policy-unknown-tool",
                    ref,
                    f"no tool {tool!r} in the registry"
                    + (f" (did you mean {hint[0]!r}?)" if hint else "")
                    + ": the rule never applies",
                )
                continue
            properties = (registry[tool].parameters or {}).get("properties")
            if param is None or not isinstance(properties, Mapping) or param in properties:
                continue
            hint = difflib.get_close_matches(param, sorted(properties), n=1)
            yield PolicyFinding(
                "policy-unknown-param",
                ref,
                f"tool {tool!r} has no parameter {param!r}"
                + (f" (did you mean {hint[0]!r}?)" if hint else "")
                + ": the rule never applies to a call its schema accepts",
            )


class _Judge:
    """The two questions lint asks, over one model: whether every call of a tool
    that matches a piece of one rule is denied by one of others (:meth:`covers`),
    and whether some call matches pieces of two rules (:meth:`meets`).

    ``sliced`` (the default) answers each question slot by slot: a rule of one
    call tests one slot of its tool (:meth:`Model.parts`), so "none of these
    rules denies the call" is one question per slot, over the few rules on that
    slot, and each is one regular-language membership (:class:`Local`); the
    answers are kept. A question with a free choice in it (a pattern that does
    not translate, a shell command rule, a callback) is asked whole. With
    ``sliced=False`` every question is asked whole, as one z3 formula: the plain
    reading, kept beside the fast one; a test checks that the two agree. (On 50
    rules over three tools the whole questions took 44 s.)"""

    def __init__(self, model: Model, *, sliced: bool = True, seconds: float | None = None) -> None:
        self.model = model
        self.sliced = sliced
        self.z3 = model.z3
        self._domain = model.domain()
        self._open: dict[tuple[int, ...], tuple[bool, tuple[Any, ...]]] = {}
        #: When the analysis stops asking (None: never); each question then is
        #: undecided, which claims nothing, and ``skipped`` counts them.
        self.deadline = None if seconds is None else time.monotonic() + seconds
        self.skipped = 0

    def _left_ms(self, limit: int) -> int:
        if self.deadline is None:
            return limit
        return min(limit, int((self.deadline - time.monotonic()) * 1000))

    def sat(self, *formulas: Any) -> Any:
        # A fresh solver per question: z3's incremental mode is far slower on strings
        # and regular expressions (seconds, or its time limit, where this takes ms).
        solver = self.z3.Solver()
        solver.add(self._domain, *formulas)
        left = self._left_ms(_LIMIT_MS)
        if left <= 0:
            self.skipped += 1
            return solver, self.z3.unknown
        return solver, check(solver, left)

    def never(self, *formulas: Any) -> bool:
        """Decided unsatisfiable (an undecided question reports nothing)."""
        return bool(self.sat(*formulas)[1] == self.z3.unsat)

    def covers(self, tool: str | None, pieces: Sequence[Piece], others: Sequence[RuleRef]) -> bool:
        """Every call of ``tool`` (None: any tool) that matches one of ``pieces``
        is denied by one of ``others``: decided so (undecided: no)."""
        z3, model = self.z3, self.model
        judging = [o for o in others if o.tool is None or o.tool == tool]
        denials = [piece for o in judging for piece in model.parts(o)[1]]
        if not (self.sliced and _sliceable(pieces) and _sliceable(denials)):
            call = z3.BoolVal(True) if tool is None else model.tool == literal(z3, tool)
            # Any tool: z3 picks it, and every other rule may judge it.
            cover = z3.Or(
                *(model.condition(o) for o in (others if tool is None else judging)),
                z3.BoolVal(False),
            )
            mine = z3.Or(*(piece.formula for piece in pieces), z3.BoolVal(False))
            return self.never(call, mine, z3.Not(cover))
        # Sliced. With ``tool`` None, the hardest tool is one no rule names: only the
        # rules of every tool judge it.
        buckets: dict[int, tuple[Slot, list[Local]]] = {}
        for piece in denials:
            if piece.slot is None:
                return True  # it denies every call of the tool
            assert piece.local is not None
            buckets.setdefault(id(piece.slot), (piece.slot, []))[1].append(piece.local)
        for piece in pieces:
            mine = None if piece.slot is None else id(piece.slot)
            rest = all(self._open_slot(q, ds) for k, (q, ds) in buckets.items() if k != mine)
            if not rest:
                return True  # the others deny every call of the tool on another slot
            if piece.slot is None:
                return False  # every call of the tool is this piece's: one is open
            assert piece.local is not None
            theirs = buckets.get(id(piece.slot), (piece.slot, []))[1]
            if self._open_slot(piece.slot, theirs, piece.local):
                return False  # a call of this piece that none of the others deny
        return True

    def meets(self, tool: str | None, a: Sequence[Piece], b: Sequence[Piece]) -> bool:
        """Some call of ``tool`` matches a piece of ``a`` and a piece of ``b``
        (undecided: yes)."""
        z3 = self.z3
        if not (self.sliced and _sliceable(a) and _sliceable(b)):
            call = z3.BoolVal(True) if tool is None else self.model.tool == literal(z3, tool)
            either = [z3.Or(*(p.formula for p in pieces), z3.BoolVal(False)) for pieces in (a, b)]
            return not self.never(call, *either)
        for pa in a:
            for pb in b:
                if pa.slot is not None and pa.slot is pb.slot:
                    assert pa.local is not None and pb.local is not None
                    if self._open_slot(pa.slot, [], pa.local & pb.local):
                        return True
                elif self._meets_alone(pa) and self._meets_alone(pb):
                    return True
        return False

    def _meets_alone(self, piece: Piece) -> bool:
        if piece.slot is None:
            return True
        assert piece.local is not None
        return self._open_slot(piece.slot, [], piece.local)

    def _open_slot(self, slot: Slot, denials: Sequence[Local], extra: Local | None = None) -> bool:
        """Some value of ``slot`` meets ``extra`` and none of ``denials`` (the answer
        kept; undecided counts as open, so nothing is claimed on it)."""
        key = (id(slot), id(extra), *(id(d) for d in denials))
        if key not in self._open:
            left = self._left_ms(10_000)
            if left <= 0:
                self.skipped += 1
                return True  # undecided: open, nothing claimed
            local = slot.every() if extra is None else extra
            for denial in denials:
                local &= ~denial
            # The objects are kept with the answer, so their ids stay theirs.
            held = slot.can_hold(local, left)
            self._open[key] = (held is not False, (slot, extra, *denials))
        return self._open[key][0]


def _denies_every_call(model: Model, ref: RuleRef) -> bool:
    """Whether ``ref`` denies every call of its tool, whatever it holds."""
    import z3

    return any(p.slot is None and z3.is_true(p.formula) for p in model.parts(ref)[1])


def _sliceable(pieces: Sequence[Piece]) -> bool:
    """Each piece a test on one slot, or every call: no free choice in it."""
    import z3

    return all(p.local is not None or (p.slot is None and z3.is_true(p.formula)) for p in pieces)


def _redundancy(
    refs: Sequence[RuleRef], *, sliced: bool = True, seconds: float | None = LINT_SECONDS
) -> list[PolicyFinding]:
    """Dead and shadowed rules, cancelled allow-list entries, contradictory pairs
    (``seconds``: the questions' time budget; None: no budget)."""
    rules = one_call(refs)
    if not rules:
        return []
    model = rules_model(rules)
    judge = _Judge(model, sliced=sliced, seconds=seconds)
    outright = {  # per tool, the last rule that denies every call of it
        r.tool: r for r in rules if r.tool is not None and _denies_every_call(model, r)
    }
    found: list[PolicyFinding] = []

    def witness(*formulas: Any) -> dict[str, Any] | None:
        solver, answer = judge.sat(*formulas)
        if answer != judge.z3.sat:
            return None
        tool, params, state = model.call(solver.model())
        out: dict[str, Any] = {"tool": tool, "parameters": params}
        if state:
            out["state"] = state
        return out

    silent: set[str] = set()  # rules already reported dead or shadowed: no cover for others
    for ref in reversed(rules):  # the later of two equal rules is the redundant one
        mine = model.condition(ref)
        tool, pieces = model.parts(ref)
        if any(k.startswith(f"{ref.label} ") for k in model.free):
            continue
        if judge.never(mine):
            found.append(PolicyFinding("policy-dead-rule", ref, "it can never deny a call"))
            silent.add(ref.label)
            continue
        denier = outright.get(ref.tool) if ref.tool is not None else None
        if denier is not None and denier is not ref:
            found.append(
                PolicyFinding(
                    "policy-dead-rule",
                    ref,
                    f"{denier} denies every call of {ref.tool!r}: this rule never decides",
                    (denier.label,),
                    witness(mine),
                )
            )
            silent.add(ref.label)
            continue
        # Only rules that can judge the same calls: of its tool, or of every tool.
        others = [
            o
            for o in rules
            if (o is not ref and o.label not in silent and o.tool in (None, ref.tool))
            or (ref.tool is None and o is not ref and o.label not in silent)
        ]
        if others and judge.covers(tool, pieces, others):
            overlapping = tuple(
                o.label for o in others if judge.meets(tool, pieces, model.parts(o)[1])
            )
            found.append(
                PolicyFinding(
                    "policy-shadowed-rule",
                    ref,
                    "every call it denies is denied by " + ", ".join(overlapping),
                    overlapping,
                    witness(mine),
                )
            )
            silent.add(ref.label)
    found += _cancelled_entries(rules, model, judge, witness, silent)
    found += _contradictions(rules, model, judge, witness, silent)
    if judge.skipped:
        found.append(
            PolicyFinding(
                "policy-lint-incomplete",
                rules[0],
                f"the analysis of {len(rules):,} rules ran out of its time budget "
                f"(bound: lint_seconds={LINT_SECONDS:g}); {judge.skipped:,} questions about "
                "shadowed rules, cancelled entries and contradictions were not asked, so "
                "those findings may be missing",
            )
        )
    order = {r.label: n for n, r in enumerate(rules)}
    found.sort(key=lambda f: (order.get(f.rule.label, 0), f.code))
    return found


def _cancelled_entries(
    rules: Sequence[RuleRef], model: Model, judge: _Judge, witness: Any, silent: set[str]
) -> Iterable[PolicyFinding]:
    for ref in rules:
        if ref.label in silent:
            continue
        tool = ref.tool
        entries = ref.of.entries(ref.rule, model)
        others = [o for o in rules if o is not ref and o.tool in (None, tool)] if entries else []
        for entry, piece in entries:
            this = [piece]
            if judge.covers(tool, this, others):
                # The rules that deny every such call; when only several together do,
                # those that deny some (each one named denies the witness or a call
                # like it, never a rule that cannot).
                names = tuple(o.label for o in others if judge.covers(tool, this, [o]))
                if not names:
                    names = tuple(
                        o.label for o in others if judge.meets(tool, this, model.parts(o)[1])
                    )
                yield PolicyFinding(
                    "policy-allow-cancelled",
                    ref,
                    f"the allowed value {entry!r} is denied anyway by {', '.join(names)}",
                    names,
                    witness(model.is_tool(str(tool)), piece.formula),
                )


def _contradictions(
    rules: Sequence[RuleRef], model: Model, judge: _Judge, witness: Any, silent: set[str]
) -> Iterable[PolicyFinding]:
    z3 = model.z3
    by_tool: dict[str, list[RuleRef]] = {}
    for ref in rules:
        if ref.tool is not None and not _denies_every_call(model, ref) and ref.label not in silent:
            by_tool.setdefault(ref.tool, []).append(ref)
    every = [Piece(None, z3.BoolVal(True))]
    for tool, mine in sorted(by_tool.items()):
        alone = [r for r in mine if not judge.covers(tool, every, [r])]
        for a, b in itertools.combinations(alone, 2):
            if judge.covers(tool, every, [a, b]):
                yield PolicyFinding(
                    "policy-contradiction",
                    b,
                    f"with {a}, it denies every call of {tool!r} (neither does alone)",
                    (a.label,),
                    witness(model.tool == literal(z3, tool)),
                )
