"""Policy sets analysed, not just applied: ``policy diff`` and ``policy lint``.

Every rule of a set that judges one call at a time (``deny_tool``,
``deny_keyword``, ``deny_tool_param``, ``allow_tool_param``,
``deny_tool_param_matching``, and the registered ``deny_tool``,
``deny_tool_param`` and ``require_state``) is a condition on the call (its tool,
its parameters) and on the state. :class:`_Model` writes each as a z3 formula
over

- the tool's name, a string;
- per parameter any rule names: present or not, and a value that is either a
  string (any string: a z3 string variable) or one of finitely many other JSON
  values (the *variants*: every text-distinct form of each value a rule compares
  with ``equals``, and the JSON value each string of such a rule spells). Any
  other value behaves, for every rule, as the string of its own text does, so
  these values cover every call;
- one more parameter no rule names, a string (``deny_keyword`` reads every
  parameter);
- per state key a ``require_state`` names, the same as a parameter.

A rule's condition is then exactly its engine's decision: ``contains`` and
keywords are z3 string containment on the parameter's string form (its compact
JSON for a value that is not a string), allow-lists membership of that form,
``equals`` JSON equality, patterns z3 regular expressions
(:mod:`car_verify.rules.policy_regex`). A pattern that does not translate, and a
registered callback, are free booleans: whatever they decide.

**diff**: NEW denies everything OLD denies when ``deny(OLD) and not deny(NEW)``
is unsatisfiable. Each satisfiable direction gives a counterexample call, turned
into a concrete call and run through both policy engines before it is reported;
one the engines do not split (a free boolean's doing) leaves that direction
``unknown``. Rate limits are compared on runs of calls
(:mod:`car_verify.rules.rate_compare`); trace rules together with every rule of one
call, over the letters of :func:`_letters`, by
:mod:`car_verify.rules.trace_automata`, each trace replayed on both engines.

**lint**: dead rules (they can never deny a call, or a ``deny_tool`` denies
their tool outright), shadowed rules (every call they deny, other rules deny),
allow-list entries that another rule denies anyway, and contradictory pairs
(two rules that together deny every call of a tool, while neither does alone);
each names the rules by their stable names and shows a witness call.
"""

from __future__ import annotations

import difflib
import itertools
import json
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from ..base.errors import UsageError
from ..base.findings import Severity
from ..base.values import ABSENT, json_equal
from ..semantics.solving import check
from ..semantics.value_domain import (
    Local,
    Slot,
    contains_language,
    literal,
    one_of_language,
    text_of,
)
from .policy import (
    AllowRule,
    CommandRule,
    LoadedPolicies,
    MatchRule,
    ParamRule,
    PolicyEngine,
    PolicySet,
    RateRule,
    Registered,
    coerce,
    compile_pattern,
    keyword_rule_name,
    load_policies,
    load_policy_file,
    load_policy_text,
    texts_of,
)
from .trace import TraceGate

if TYPE_CHECKING:
    from .trace import Call
    from .trace_automata import Letter

#: Each question's time limit (see :func:`car_verify.semantics.solving.check`).
_LIMIT_MS = 10_000
#: The time ``policy lint`` gives the questions about shadowed rules, cancelled
#: entries and contradictions in all (400 rules on one parameter took minutes):
#: past it the rest are not asked, and ``policy-lint-incomplete`` says so.
LINT_SECONDS = 6.0

__all__ = [
    "Counterexample",
    "PolicyDiff",
    "PolicyFinding",
    "RuleRef",
    "lint_policies",
    "policy_diff",
    "unknown_names",
]

Verdict = Literal["equivalent", "stricter", "looser", "incomparable", "unknown"]

#: A value compared with ``equals`` has at most this many text-distinct forms
#: modelled (key orders times number forms); beyond, the rule is approximated and
#: a direction that depends on it answers ``unknown`` rather than a guess.
MAX_FORMS = 64


# --- rules, located -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RuleRef:
    """One rule of a set: its stable name, kind, the rule itself, where it is written."""

    name: str
    kind: str
    rule: Any
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
        rule = self.rule
        if self.kind == "deny_tool":
            return str(rule) if isinstance(rule, str) else rule.target
        if isinstance(rule, (ParamRule, AllowRule, MatchRule, RateRule, CommandRule)):
            return rule.tool
        if isinstance(rule, Registered):
            return rule.target
        return None


def _rules(policies: Any) -> tuple[list[RuleRef], PolicyEngine]:
    """The located rules of a policy directory, loaded policies, a PolicySet or an
    engine (each told apart by its label), and an engine that applies them."""
    refs, engine = _gather(policies)
    counts: dict[str, int] = {}
    for ref in refs:
        counts[ref.name] = counts.get(ref.name, 0) + 1
    seen: dict[str, int] = {}
    labelled = []
    for ref in refs:
        seen[ref.name] = seen.get(ref.name, 0) + 1
        label = ref.name if counts[ref.name] == 1 else f"{ref.name}#{seen[ref.name]}"
        labelled.append(RuleRef(ref.name, ref.kind, ref.rule, ref.file, ref.line, label))
    return labelled, engine


def rule_names(policies: Any) -> list[str]:
    """The name of every rule in ``policies`` (a directory, loaded policies, a set or
    an engine), as findings carry them."""
    refs, _ = _gather(policies)
    return list(dict.fromkeys(ref.name for ref in refs))


def _gather(policies: Any) -> tuple[list[RuleRef], PolicyEngine]:
    if isinstance(policies, (str, Path)):
        policies = load_policies(policies)
    if isinstance(policies, LoadedPolicies):
        refs: list[RuleRef] = []
        keywords = 0  # deny_keyword entries are named by their place in the merged rules
        for file in policies.files:
            text = policies.texts.get(file)
            rules = (
                load_policy_file(file) if text is None else load_policy_text(text, source=str(file))
            )
            refs += _located(rules, file, keywords)
            keywords += len(rules.deny_keyword)
        return refs, PolicyEngine(policies.rules)
    if isinstance(policies, PolicyEngine):
        return _located(policies.rules, None) + [
            RuleRef(r.name, f"registered {r.kind}", r) for r in policies.registered
        ], policies
    if isinstance(policies, PolicySet):
        return _located(policies, None), PolicyEngine(policies)
    raise UsageError("policies must be a directory, loaded policies, a PolicySet or an engine")


def _located(rules: PolicySet, file: Path | None, keywords: int = 0) -> list[RuleRef]:
    """The rules of one file (or set), located; ``keywords``: how many
    ``deny_keyword`` entries come before this file's in the merged rules."""
    text = file.read_text(encoding="utf-8") if file is not None else ""
    source = None if file is None else str(file)
    out: list[RuleRef] = []
    for tool in rules.deny_tool:
        out.append(RuleRef(f"deny_tool:{tool}", "deny_tool", tool, source, _line(text, tool)))
    for n, word in enumerate(rules.deny_keyword):
        name = keyword_rule_name(keywords + n)
        out.append(RuleRef(name, "deny_keyword", word, source, _line(text, word)))
    tables: list[tuple[str, Sequence[Any]]] = [
        ("deny_tool_param", rules.deny_tool_param),
        ("allow_tool_param", rules.allow_tool_param),
        ("deny_tool_param_matching", rules.deny_tool_param_matching),
        ("deny_command", rules.deny_command),
        ("rate_limit_tool", rules.rate_limit_tool),
        ("trace_rule", rules.trace_rule),
    ]
    for kind, items in tables:
        for n, rule in enumerate(items):
            name = rule.policy_name if kind == "trace_rule" else rule.name
            out.append(RuleRef(name, kind, rule, source, _table_line(text, kind, n)))
    return out


def _line(text: str, value: str) -> int | None:
    index = text.find(json.dumps(value))
    return None if index < 0 else text.count("\n", 0, index) + 1


def _table_line(text: str, kind: str, n: int) -> int | None:
    at = -1
    for _ in range(n + 1):
        at = text.find(f"[[{kind}]]", at + 1)
        if at < 0:
            return None
    return text.count("\n", 0, at) + 1


# --- findings and results -----------------------------------------------------------------------


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
        tail = f" (witness: {_call_text(self.witness)})" if self.witness else ""
        return f"{head}{self.severity.value}[{self.code}] {self.rule}: {self.message}{tail}"


def _call_text(witness: Mapping[str, Any]) -> str:
    text = f"{witness['tool']}({json.dumps(witness.get('parameters', {}), sort_keys=True)})"
    if witness.get("state"):
        text += f" with state {json.dumps(witness['state'], sort_keys=True)}"
    if witness.get("calls_at"):
        text += f" at times {witness['calls_at']}"
    return text


@dataclass(frozen=True, slots=True)
class Counterexample:
    """A call (or a run of calls) one set allows and the other denies, checked on
    both engines: ``denied_by`` the rules that deny it."""

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
        text = _call_text(self.to_dict())
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


# --- values --------------------------------------------------------------------------------------


def _forms(value: Any) -> list[Any] | None:
    """The values JSON-equal to ``value`` whose compact JSON texts differ (number
    forms, key orders), at most MAX_FORMS; None past that."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return [value]
    if isinstance(value, (int, float)):
        if value == 0:  # zero has three texts: 0, 0.0 and -0.0
            return [value, *(z for z in (0, 0.0, -0.0) if coerce(z) != coerce(value))]
        if isinstance(value, float):
            return [value, int(value)] if value.is_integer() else [value]
        try:
            as_float = float(value)
        except OverflowError:
            return [value]
        return [value, as_float] if as_float == value else [value]
    if isinstance(value, list):
        options: list[list[Any]] = []
        for v in value:
            forms = _forms(v)
            if forms is None:
                return None
            options.append(forms)
        return _capped(list(p) for p in itertools.product(*options))
    if isinstance(value, dict):
        keys = list(value)
        if math.factorial(len(keys)) > MAX_FORMS:
            return None
        inner: dict[str, list[Any]] = {}
        for k, v in value.items():
            forms = _forms(v)
            if forms is None:
                return None
            inner[k] = forms
        found = []
        for order in itertools.permutations(keys):
            for choice in itertools.product(*(inner[k] for k in order)):
                found.append(dict(zip(order, choice, strict=True)))
                if len(found) > MAX_FORMS:
                    return None
        return found
    return [value]


def _capped(values: Iterable[Any]) -> list[Any] | None:
    out = []
    for v in values:
        out.append(v)
        if len(out) > MAX_FORMS:
            return None
    return out


def _contains_local(z3: Any, slot: Slot, needle: str) -> Local:
    # A value that is no string is read as the engine reads it: its string form and
    # every string inside it (texts_of).
    return slot.test(contains_language(z3, needle), lambda v: any(needle in t for t in texts_of(v)))


def _equals_local(z3: Any, slot: Slot, expected: Any) -> Local:
    strings = (
        z3.Re(literal(z3, expected))
        if isinstance(expected, str)
        else z3.Empty(z3.ReSort(z3.StringSort()))
    )
    return slot.test(strings, lambda v: not isinstance(v, str) and json_equal(v, expected))


def _text_is(z3: Any, slot: Slot, text: str) -> Local:
    return slot.test(z3.Re(literal(z3, text)), lambda v: coerce(v) == text)


@dataclass(frozen=True, slots=True)
class _Piece:
    """One way a rule denies a call of its tool: a test on one slot (``local``);
    or, with ``slot`` None, every call (``formula`` is true); or, where a free
    choice decides (``local`` None), only the z3 ``formula``."""

    slot: Slot | None
    formula: Any
    local: Local | None = None

    @staticmethod
    def of(slot: Slot, local: Local) -> _Piece:
        return _Piece(slot, slot.holds(local), local)


# --- the model ------------------------------------------------------------------------------------


class _Model:
    """z3 variables for one call and one state, and the condition of each rule."""

    def __init__(
        self, refs: Sequence[RuleRef], extra: Mapping[str, Sequence[Any]] | None = None
    ) -> None:
        """``extra``: per parameter, more values its slot offers (those trace rules
        test; see :func:`car_verify.rules.trace_automata.pattern_values`)."""
        import z3

        self.z3 = z3
        self.tool = z3.String("tool")
        self.approximate: set[str] = set()  # rules whose equals value has too many forms
        params: dict[str, list[Any]] = {}
        keys: dict[str, list[Any]] = {}
        self._text_tested: set[str] = set()  # parameters a rule reads as text
        self._every_param = False  # a deny_keyword reads every parameter's text
        for ref in refs:
            rule = ref.rule
            if ref.kind == "deny_keyword":
                self._every_param = True
            elif isinstance(rule, (AllowRule, MatchRule, CommandRule)) or (
                isinstance(rule, ParamRule) and rule.contains is not None
            ):
                self._text_tested.add(rule.param)
            elif isinstance(rule, Registered) and rule.kind == "deny_tool_param":
                self._text_tested.add(str(rule.key))
            if isinstance(rule, (ParamRule, AllowRule, MatchRule, CommandRule)):
                variants = params.setdefault(rule.param, [])
                if isinstance(rule, ParamRule) and rule.equals is not ABSENT:
                    self._add_forms(ref, rule.equals, variants)
            elif isinstance(rule, Registered) and rule.kind == "deny_tool_param":
                params.setdefault(str(rule.key), [])
            elif isinstance(rule, Registered) and rule.kind == "require_state":
                self._add_forms(ref, rule.value, keys.setdefault(str(rule.key), []))
        for param, values in (extra or {}).items():
            variants = params.setdefault(param, [])
            for value in values:
                for form in _forms(value) or [value]:
                    if not any(
                        type(form) is type(v) and coerce(form) == coerce(v) for v in variants
                    ):
                        variants.append(form)
        self.params = {p: Slot(z3, f"param:{p}", v) for p, v in sorted(params.items())}
        other = "x"
        while other in self.params:
            other += "_"
        self.other = Slot(z3, f"param:{other}", [])
        self.other_name = other
        self.state = {k: Slot(z3, f"state:{k}", v) for k, v in sorted(keys.items())}
        self.free: dict[str, Any] = {}  # a rule this model cannot express: any verdict
        self._parts: dict[int, tuple[RuleRef, tuple[str | None, list[_Piece]]]] = {}
        self._conditions: dict[int, tuple[RuleRef, Any]] = {}

    def _add_forms(self, ref: RuleRef, value: Any, variants: list[Any]) -> None:
        forms = _forms(value)
        if forms is None:
            self.approximate.add(ref.label)
            forms = [value]
        extra = [f for f in forms if not isinstance(f, str)]
        if isinstance(value, str):  # a string that spells a JSON value: that value too
            try:
                spelled = json.loads(value)
            except ValueError:
                spelled = None
            else:
                if not isinstance(spelled, str) and coerce(spelled) == value:
                    extra.append(spelled)
        for f in extra:
            if not any(type(f) is type(v) and coerce(f) == coerce(v) for v in variants):
                variants.append(f)

    def reads_text(self, param: str) -> bool:
        """Whether a rule of one call reads ``param``'s text (not only its value)."""
        return self._every_param or param in self._text_tested

    def domain(self) -> Any:
        z3 = self.z3
        slots = [*self.params.values(), self.other, *self.state.values()]
        return z3.And(*(s.domain() for s in slots))

    def condition(self, ref: RuleRef) -> Any:
        """The formula that holds exactly when ``ref`` denies the call (built once
        per rule, from its parts)."""
        key = id(ref)
        if key not in self._conditions:
            self._conditions[key] = (ref, self._condition(ref))
        return self._conditions[key][1]

    def _condition(self, ref: RuleRef) -> Any:
        z3 = self.z3
        tool, pieces = self.parts(ref)
        denies = z3.Or(*(piece.formula for piece in pieces), z3.BoolVal(False))
        return denies if tool is None else z3.And(self._is_tool(tool), denies)

    def parts(self, ref: RuleRef) -> tuple[str | None, list[_Piece]]:
        """``ref``'s condition in parts: the tool it judges (None: every tool) and
        the pieces (:class:`_Piece`) it denies a call of that tool on, any one
        enough. Kept per rule: each piece is built once."""
        key = id(ref)
        if key not in self._parts:
            self._parts[key] = (ref, self._parts_of(ref))
        return self._parts[key][1]

    def _parts_of(self, ref: RuleRef) -> tuple[str | None, list[_Piece]]:
        z3 = self.z3
        rule, kind = ref.rule, ref.kind
        every = [_Piece(None, z3.BoolVal(True))]
        if kind == "deny_tool":
            return rule, every
        if kind == "rate_limit_tool":  # a limit of no calls (see _one_call)
            return rule.tool, every
        if kind == "deny_keyword":
            slots = [*self.params.values(), self.other]
            return None, [_Piece.of(s, _contains_local(z3, s, rule)) for s in slots]
        if isinstance(rule, ParamRule):
            slot = self.params[rule.param]
            local = slot.every(absent=False)
            if rule.equals is not ABSENT:
                local &= _equals_local(z3, slot, rule.equals)
            if rule.contains is not None:
                local &= _contains_local(z3, slot, rule.contains)
            return rule.tool, [_Piece.of(slot, local)]
        if isinstance(rule, AllowRule):
            slot = self.params[rule.param]
            allowed = slot.test(one_of_language(z3, rule.allow), lambda v: coerce(v) in rule.allow)
            return rule.tool, [_Piece.of(slot, ~allowed)]
        if isinstance(rule, CommandRule):
            # A shell's reading of the text is not modelled: any verdict on a call of a
            # tool whose name it matches without case (so the diff says unknown).
            slot = self.params[rule.param]
            return rule.tool, [_Piece(slot, z3.And(slot.present, self._free(ref)))]
        if isinstance(rule, MatchRule):
            compiled = compile_pattern(rule.matches)
            if compiled is None:
                return rule.tool, every  # it does not compile: every call is denied
            slot = self.params[rule.param]
            from .policy_regex import Untranslatable, search_language

            def matched(v: Any) -> bool:  # as the engine reads it (texts_of)
                return any(compiled.search(t) for t in texts_of(v))

            try:
                language = search_language(rule.matches)
            except Untranslatable:
                # Whatever RE2 decides, within a language that holds every match.
                try:
                    on_text = z3.And(
                        self._free(ref),
                        z3.InRe(slot.text, search_language(rule.matches, over=True)),
                    )
                except Untranslatable:
                    on_text = self._free(ref)
                return rule.tool, [_Piece(slot, slot.where(on_text, matched))]
            return rule.tool, [_Piece.of(slot, slot.test(language, matched))]
        if isinstance(rule, Registered):
            if rule.kind == "deny_tool":
                return str(rule.target), every
            if rule.kind == "deny_tool_param":
                slot = self.params[str(rule.key)]
                local = _contains_local(z3, slot, str(rule.pattern))
                return str(rule.target), [_Piece.of(slot, local)]
            if rule.kind == "require_state":
                slot = self.state[str(rule.key)]
                return None, [_Piece.of(slot, ~_equals_local(z3, slot, rule.value))]
            # A callback: whatever it decides.
            return rule.target, [_Piece(None, self._free(ref))]
        raise UsageError(f"rule {ref.name}: not a rule of one call")  # pragma: no cover

    def _is_tool(self, name: str) -> Any:
        return self.tool == literal(self.z3, name)

    def _free(self, ref: RuleRef) -> Any:
        # Keyed by the rule itself: the same rule in both sets decides alike.
        key = f"{ref.label} {ref.rule!r}"
        if key not in self.free:
            self.free[key] = self.z3.Bool(f"free:{key}")
        return self.free[key]

    def call(self, model: Any) -> tuple[str, dict[str, Any], dict[str, Any] | None]:
        """The concrete call (tool, parameters) and state of a z3 model."""
        tool = text_of(model, self.tool)
        params: dict[str, Any] = {}
        for name, slot in [*self.params.items(), (self.other_name, self.other)]:
            value = slot.value(model)
            if value is not ABSENT:
                params[name] = value
        state: dict[str, Any] | None = None
        if self.state:
            state = {}
            for key, slot in self.state.items():
                value = slot.value(model)
                if value is not ABSENT:
                    state[key] = value
        return tool, params, state


def _one_call(refs: Sequence[RuleRef]) -> list[RuleRef]:
    """The rules that judge a call by itself: a rate limit of no calls is one."""
    return [
        r
        for r in refs
        if r.kind != "trace_rule" and (r.kind != "rate_limit_tool" or r.rule.max_calls == 0)
    ]


def _denials(engine: PolicyEngine, tool: str, params: dict[str, Any], state: Any) -> list[str]:
    """The rules of ``engine`` that deny the call by itself: trace rules and rate
    limits aside, but for a limit of no calls."""
    from ..ir.model import Action

    rules = engine.rules
    one = PolicySet(
        deny_tool=rules.deny_tool,
        deny_keyword=rules.deny_keyword,
        deny_tool_param=rules.deny_tool_param,
        allow_tool_param=rules.allow_tool_param,
        deny_tool_param_matching=rules.deny_tool_param_matching,
        deny_command=rules.deny_command,
        rate_limit_tool=[r for r in rules.rate_limit_tool if r.max_calls == 0],
    )
    judge = PolicyEngine(one)
    judge.registered = list(engine.registered)
    action = Action(id="witness", type="tool_call", tool=tool, parameters=params)
    return [v.policy_name for v in judge.check(action, state)]


# --- diff ------------------------------------------------------------------------------------


def policy_diff(old: Any, new: Any, *, max_states: int | None = None) -> PolicyDiff:
    """Compare two policy sets over every possible tool call (see the module docs):
    a directory, loaded policies, a PolicySet or an engine each. The search of the
    trace rules' monitors visits at most ``max_states`` states in each direction
    (default :data:`~car_verify.rules.trace_automata.MAX_STATES`); past them that
    direction is unknown and ``bounds`` names the bound."""
    from .trace_automata import MAX_STATES, call_patterns, pattern_values

    states = MAX_STATES if max_states is None else max_states

    old_refs, old_engine = _rules(old)
    new_refs, new_engine = _rules(new)
    patterns = call_patterns([*old_engine.trace_rules, *new_engine.trace_rules])
    values = pattern_values(patterns)
    model = _Model(_one_call([*old_refs, *new_refs]), {} if isinstance(values, str) else values[0])
    z3 = model.z3
    deny_old = z3.Or(*(model.condition(r) for r in _one_call(old_refs)), z3.BoolVal(False))
    deny_new = z3.Or(*(model.condition(r) for r in _one_call(new_refs)), z3.BoolVal(False))
    result = PolicyDiff("unknown")
    directions = (
        ("newly allowed", old_engine, new_engine, deny_old, deny_new, result.newly_allowed),
        ("newly denied", new_engine, old_engine, deny_new, deny_old, result.newly_denied),
    )
    # One call at a time. A split holds as it stands when B's trace rules admit the
    # call at the start of a run; one they refuse there is left to the joint search.
    left_to_traces: set[str] = set()
    for label, a, b, denies, allows, found in directions:
        split = _split(model, z3.And(denies, z3.Not(allows)), a, b)
        if isinstance(split, Counterexample):
            if TraceGate(b.trace_rules).check(split.tool, split.parameters):
                left_to_traces.add(label)
            else:
                found.append(split)
        elif split is not None:
            result.unknown.append(f"{label}: {split}")
    from .rate_compare import rate_splits, replay

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
            denied = replay(a, rate.tool, params, state, rate.run)
            if denied and not replay(b, rate.tool, params, state, rate.run):
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
        else _letters(model, patterns, values[1], (deny_old, deny_new), (old_engine, new_engine))
    )
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


class _Letters(NamedTuple):
    """The trace search's calls, and why some may not stand for their whole kind."""

    letters: list[Letter]
    inexact: list[str]


def _letters(
    model: _Model,
    patterns: Sequence[Call],
    needles: Mapping[str, int],
    denials: tuple[Any, Any],
    engines: tuple[PolicyEngine, PolicyEngine],
) -> Any:
    """One concrete call (a :class:`Letter`) per combination of the trace rules'
    patterns and the two sets' denials of one call that some call has (a call
    both sets deny cannot be a step nor a split), or why they could not all be
    found. Each call carries the old and the new engine's own denials of it,
    judged once for both directions."""
    from .trace_automata import MAX_LETTERS, pattern_formula

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
        found.letters.append(_letter(model, call, engines))
        solver.add(
            z3.Or(*(m != call.eval(m, model_completion=True) for m in marks), z3.BoolVal(False))
        )


def _letter(model: _Model, found: Any, engines: tuple[PolicyEngine, PolicyEngine]) -> Letter:
    from .trace_automata import Letter

    tool, params, state = model.call(found)
    old, new = (tuple(_denials(e, tool, params, state)) for e in engines)
    return Letter(tool, params, state, (old, new))


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
    replayed on both engines; None when there is none; a reason when undecided.
    ``swapped``: ``refuses`` is the new set (the letters hold old, then new)."""
    import dataclasses

    from .trace_automata import trace_containment

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
            else (f"the trace {list(split.trace)} did not replay on the engines")
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
    """The rules of ``refuses`` that deny the split's call after its run, made on
    fresh copies of both engines with every rule, each call further apart than any
    rate limit's window, and the times of the calls (the run's, then the last);
    None unless ``refuses`` admits each call of the run, ``admits`` refuses the
    ones the run says it refuses and admits the others and the last."""
    windows = [r.interval_secs for e in (refuses, admits) for r in e.rules.rate_limit_tool]
    apart = 1.0 + max(windows, default=0.0)
    clock = [0.0]
    engines = [e.fresh(clock=lambda: clock[0]) for e in (refuses, admits)]
    gates = [TraceGate(e.trace_rules) for e in (refuses, admits)]

    times: list[float] = []

    def made(call: Any) -> list[list[str]]:
        clock[0] += apart
        times.append(clock[0])
        return [
            [name for name, _ in e.admit(g, call.tool, call.parameters, call.state)]
            for e, g in zip(engines, gates, strict=True)
        ]

    for step in split.steps:
        c = step.call
        ran = gates[:1] if step.alone or step.refused else gates  # where the call ran
        if step.late:
            for g in ran:
                g.record(c.tool, c.parameters, step.outcome)
            continue
        by_a, by_b = made(c)
        if by_a or bool(by_b) != bool(step.refused):
            return None
        if step.outcome is not None:
            for g in ran:
                g.record(c.tool, c.parameters, step.outcome)
    denied, admitted = made(split.call)
    if not denied or admitted:
        return None
    return tuple(dict.fromkeys(denied)), tuple(times)


def _admitted_call(
    model: _Model, tool: str, *denials: Any
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


def _split(
    model: _Model, formula: Any, denies: PolicyEngine, allows: PolicyEngine
) -> Counterexample | str | None:
    """A call ``denies`` denies and ``allows`` allows, checked on both; None when no
    call can split them; a reason when only an unchecked answer was found."""
    z3 = model.z3
    solver = z3.Solver()
    solver.add(model.domain(), formula)
    for _ in range(16):  # a free boolean may give calls the engines do not split: block them
        answer = check(solver, _LIMIT_MS)
        if answer == z3.unsat:
            return None
        if answer != z3.sat:
            inexact = _inexact(model)
            return "z3 gave no answer within its time limit" + (f" ({inexact})" if inexact else "")
        tool, params, state = model.call(solver.model())
        denied = _denials(denies, tool, params, state)
        if denied and not _denials(allows, tool, params, state):
            return Counterexample(tool, params, state, tuple(denied))
        if not model.free and not model.approximate:  # pragma: no cover - the model is exact
            return f"the model's call {tool}({params}) did not split the engines"
        solver.add(_not_this(model, solver.model()))
    return _inexact(model)


def _inexact(model: _Model) -> str:
    """Which rules the model holds only approximately, said for an unknown answer
    ("" when it holds them all exactly)."""
    names = sorted({*(k.split(" ", 1)[0] for k in model.free), *model.approximate})
    if not names:
        return ""
    return "depends on rules the analysis cannot express exactly: " + ", ".join(names)


def _not_this(model: _Model, found: Any) -> Any:
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


# --- lint ------------------------------------------------------------------------------------


def lint_policies(policies: Any, tools: Any = None) -> list[PolicyFinding]:
    """What is wrong with a policy set beyond its syntax (see the module docs);
    ``tools``: a tool registry, to catch names no tool has."""
    refs, _ = _rules(policies)
    found: list[PolicyFinding] = []
    found += _invalid_patterns(refs)
    if tools is not None:
        found += unknown_names(refs, tools)
    found += _redundancy(refs)
    return found


def unknown_names(policies: Any, tools: Any) -> list[PolicyFinding]:
    """Rules that name a tool, or a tool's parameter, the registry does not have
    (a typo fails open), each with the nearest name the registry has."""
    from .tools import ToolRegistry

    refs = policies if isinstance(policies, list) else _rules(policies)[0]
    return list(_unknown_names(refs, ToolRegistry.coerce(tools)))


def _invalid_patterns(refs: Sequence[RuleRef]) -> Iterable[PolicyFinding]:
    for ref in refs:
        if isinstance(ref.rule, MatchRule) and compile_pattern(ref.rule.matches) is None:
            yield PolicyFinding(
                "policy-invalid-pattern",
                ref,
                f"RE2 cannot compile the pattern {ref.rule.matches!r} "
                f"({_re2_error(ref.rule.matches)}): the rule denies every call of "
                f"{ref.rule.tool!r}",
            )


def _re2_error(pattern: str) -> str:
    import re2

    options = re2.Options()
    options.log_errors = False
    try:
        re2.compile(pattern, options=options)
    except Exception as err:
        raw = err.args[0] if err.args else str(err)
        return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    return "it compiles"  # pragma: no cover


def _unknown_names(refs: Sequence[RuleRef], registry: Any) -> Iterable[PolicyFinding]:
    names = sorted(registry)
    for ref in refs:
        for tool, param in _names_of(ref):
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


def _names_of(ref: RuleRef) -> list[tuple[str, str | None]]:
    """The (tool, parameter) names a rule is about."""
    rule = ref.rule
    if ref.kind == "trace_rule":
        out: list[tuple[str, str | None]] = []
        for call in (rule.call, rule.event):
            if call is not None and call.tool is not None:
                out.append((call.tool, None))
                out += [(call.tool, t.param) for t in call.tests]
        return out
    if isinstance(rule, (ParamRule, AllowRule, MatchRule)):
        return [(rule.tool, rule.param)]
    if isinstance(rule, Registered) and rule.target is not None:
        return [(rule.target, rule.key if rule.kind == "deny_tool_param" else None)]
    tool = ref.tool
    return [] if tool is None or ref.kind == "deny_keyword" else [(tool, None)]


class _Judge:
    """The two questions lint asks, over one model: whether every call of a tool
    that matches a piece of one rule is denied by one of others (:meth:`covers`),
    and whether some call matches pieces of two rules (:meth:`meets`).

    ``sliced`` (the default) answers each question slot by slot: a rule of one
    call tests one slot of its tool (:meth:`_Model.parts`), so "none of these
    rules denies the call" is one question per slot, over the few rules on that
    slot, and each is one regular-language membership (:class:`Local`); the
    answers are kept. A question with a free choice in it (a pattern that does
    not translate, a shell command rule, a callback) is asked whole. With
    ``sliced=False`` every question is asked whole, as one z3 formula: the plain
    reading, kept beside the fast one; a test checks that the two agree. (On 50
    rules over three tools the whole questions took 44 s.)"""

    def __init__(self, model: _Model, *, sliced: bool = True, seconds: float | None = None) -> None:
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

    def covers(self, tool: str | None, pieces: Sequence[_Piece], others: Sequence[RuleRef]) -> bool:
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

    def meets(self, tool: str | None, a: Sequence[_Piece], b: Sequence[_Piece]) -> bool:
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

    def _meets_alone(self, piece: _Piece) -> bool:
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


def _sliceable(pieces: Sequence[_Piece]) -> bool:
    """Each piece a test on one slot, or every call: no free choice in it."""
    import z3

    return all(p.local is not None or (p.slot is None and z3.is_true(p.formula)) for p in pieces)


def _redundancy(
    refs: Sequence[RuleRef], *, sliced: bool = True, seconds: float | None = LINT_SECONDS
) -> list[PolicyFinding]:
    """Dead and shadowed rules, cancelled allow-list entries, contradictory pairs
    (``seconds``: the questions' time budget; None: no budget)."""
    rules = _one_call(refs)
    if not rules:
        return []
    model = _Model(rules)
    judge = _Judge(model, sliced=sliced, seconds=seconds)
    outright = {r.rule: r for r in rules if r.kind == "deny_tool"}
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
    rules: Sequence[RuleRef], model: _Model, judge: _Judge, witness: Any, silent: set[str]
) -> Iterable[PolicyFinding]:
    z3 = model.z3
    for ref in rules:
        rule = ref.rule
        if not isinstance(rule, AllowRule) or ref.label in silent:
            continue
        slot = model.params[rule.param]
        others = [o for o in rules if o is not ref and o.tool in (None, rule.tool)]
        for entry in rule.allow:
            this = [_Piece.of(slot, _text_is(z3, slot, entry))]
            if judge.covers(rule.tool, this, others):
                # The rules that deny every such call; when only several together do,
                # those that deny some (each one named denies the witness or a call
                # like it, never a rule that cannot).
                names = tuple(o.label for o in others if judge.covers(rule.tool, this, [o]))
                if not names:
                    names = tuple(
                        o.label for o in others if judge.meets(rule.tool, this, model.parts(o)[1])
                    )
                yield PolicyFinding(
                    "policy-allow-cancelled",
                    ref,
                    f"the allowed value {entry!r} is denied anyway by {', '.join(names)}",
                    names,
                    witness(model.tool == literal(z3, rule.tool), this[0].formula),
                )


def _contradictions(
    rules: Sequence[RuleRef], model: _Model, judge: _Judge, witness: Any, silent: set[str]
) -> Iterable[PolicyFinding]:
    z3 = model.z3
    by_tool: dict[str, list[RuleRef]] = {}
    for ref in rules:
        if ref.tool is not None and ref.kind != "deny_tool" and ref.label not in silent:
            by_tool.setdefault(ref.tool, []).append(ref)
    every = [_Piece(None, z3.BoolVal(True))]
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
