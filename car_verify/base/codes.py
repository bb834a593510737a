"""Every finding code, defined once: severity per profile, tier, whether it blocks
execution, and a one-line summary.

Codes are never reused; a renamed code stays here as an alias of its new name.
Passes emit only codes listed here (or codes a third-party pass declares), and
the test suite fails on a code no pass emits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from .errors import UsageError
from .findings import Severity, Tier

if TYPE_CHECKING:
    from .config import ProfileName

__all__ = [
    "ALIASES",
    "AS_STRICT",
    "BLOCKING",
    "CODES",
    "Code",
    "Repair",
    "lookup",
    "register_codes",
]

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
D, H = Tier.DECISION_PROCEDURE, Tier.HEURISTIC

#: In a profile column: the code does not fire under that profile.
NEVER = None


class _AsStrict(Enum):
    AS_STRICT = "as strict"


#: In the ``car`` column: the ``strict`` column's severity (the default, so that a
#: third-party pass's code fires under both profiles unless it says otherwise).
AS_STRICT = _AsStrict.AS_STRICT


@dataclass(frozen=True, slots=True)
class Repair:
    """What car-verify can repair of a code's findings (the code table's repair
    column): the applicabilities its fixes can have (``safe``, ``unsafe``,
    ``display``; none: no repair can be derived) and, in words, how each fix is
    derived or why none can be."""

    kinds: tuple[str, ...]
    how: str

    @property
    def column(self) -> str:
        """The table cell: the applicabilities (``safe, unsafe``), or ``none``."""
        return ", ".join(self.kinds) if self.kinds else "none"


def _fix(kinds: str, how: str) -> Repair:
    return Repair(tuple(k.strip() for k in kinds.split(",")), how)


def _none(why: str) -> Repair:
    return Repair((), why)


@dataclass(frozen=True, slots=True)
class Code:
    """A finding code: its stable name, severity and tier, and a one-line summary.

    A code keeps one meaning under both profiles (docs/semantics.md §9); the
    profile decides whether it fires and how severe it is. ``severity`` is the
    ``strict`` column, ``car`` the ``car`` column (``None``: does not fire there;
    ``AS_STRICT``, the default: the ``strict`` column's), and ``car_note`` says how
    CAR's rule differs, where it does. This table is the only source of a
    finding's severity: passes ask it through ``Semantics.severity``.
    """

    name: str
    severity: Severity | None
    tier: Tier
    summary: str
    car: Severity | _AsStrict | None = AS_STRICT
    car_note: str = ""
    #: A finding with this code rejects the proposal at the executor's admission.
    blocks: bool = False
    #: What the finding is about: ``plan`` (a proposal) or ``file`` (lint's own).
    about: str = "plan"
    #: ``lint``'s severity for the code where verify's is ``info`` (a note of the car
    #: profile's that the strict profile reports): raised so that a plan that keeps
    #: CAR's verdict still shows in review what it hides. None: verify's.
    lint: Severity | None = None
    #: On an action of ``failure_behavior: skip`` the finding is a warning, under a
    #: profile whose ``Semantics.skip_is_optional`` holds (the author declared the
    #: action optional).
    skip_warns: bool = False
    #: What a fix of the code's findings does, or why none can be derived (every code
    #: that is an error or a warning under some profile has one: a test holds it).
    repair: Repair | None = None

    def severity_in(self, profile: ProfileName) -> Severity | None:
        """The severity under ``profile`` (``car`` or ``strict``), or None: the
        table's column of that name (any other name is a programming error)."""
        column = _COLUMNS.get(profile)
        if column is None:
            raise ValueError(f"no column {profile!r} in the code table ({', '.join(_COLUMNS)})")
        return column(self)

    def column(self, profile: ProfileName) -> str:
        """The severity under ``profile`` as a table cell (``-``: does not fire)."""
        severity = self.severity_in(profile)
        return "-" if severity is None else severity.value

    def lint_severity(self, profile: ProfileName) -> Severity | None:
        """The severity ``lint`` gives the code under ``profile`` by default: verify's,
        except an ``info`` note the ``lint`` column raises."""
        severity = self.severity_in(profile)
        if severity is Severity.INFO and self.lint is not None:
            return self.lint
        return severity

    def lint_column(self, profile: ProfileName) -> str:
        """:meth:`lint_severity` as a table cell (``-``: not reported)."""
        severity = self.lint_severity(profile)
        return "-" if severity is None else severity.value

    @property
    def worst(self) -> Severity:
        """The higher of the two columns (what a reporter declares as the rule's level)."""
        given = [s for s in (self.severity_in("strict"), self.severity_in("car")) if s]
        return max(given, key=lambda s: s.rank) if given else Severity.INFO


def _car_column(code: Code) -> Severity | None:
    return code.severity if code.car is AS_STRICT else code.car


#: The code table's severity columns, each named after its profile: ``strict``'s is
#: a code's ``severity``; ``car``'s its ``car`` entry where one is written, else
#: strict's. :meth:`Code.severity_in` reads them.
_COLUMNS: Final[Mapping[str, Callable[[Code], Severity | None]]] = MappingProxyType(
    {"car": _car_column, "strict": lambda code: code.severity}
)


_TABLE = [
    Code(
        "empty-proposal",
        W,
        D,
        "the proposal has no actions",
        INFO,
        "CAR accepts it and runs nothing: car-verify's own note",
        lint=W,
        repair=_none(
            "there is nothing to repair from: which actions the plan needs is the planner's "
            "question"
        ),
    ),
    Code(
        "duplicate-id",
        E,
        D,
        "two actions share an id",
        INFO,
        "CAR runs both: car-verify's own note",
        blocks=True,
        lint=W,
        repair=_fix(
            "unsafe",
            "the later action renamed to a free id (`<id>-2`); an edge or reference that named the"
            " id still names the first",
        ),
    ),
    Code(
        "unknown-action-type",
        E,
        D,
        "`type` is not one of the four action types",
        NEVER,
        "CAR rejects the whole proposal: an input error",
        blocks=True,
        repair=_fix(
            "unsafe",
            "the action type closest by name (`tool-call` to `tool_call`, `toolCall` to "
            "`tool_call`), when one is close",
        ),
    ),
    Code(
        "missing-tool-name",
        E,
        D,
        "a `tool_call` without `tool`",
        E,
        blocks=True,
        repair=_fix(
            "unsafe, display",
            "the one registered tool whose parameter schema accepts the call's parameters; else "
            "the registered tools, shown",
        ),
    ),
    Code(
        "state-write-without-key",
        E,
        D,
        "a `state_write` without a string `parameters.key`",
        INFO,
        "CAR writes nothing for it: car-verify's own note",
        blocks=True,
        lint=W,
        repair=_none(
            "the key is the plan's own name for its state: nothing in the plan says which one was "
            "meant"
        ),
    ),
    Code(
        "unknown-dependency",
        E,
        D,
        "`dependencies` or a `$id.output` reference names no action",
        NEVER,
        blocks=True,
        repair=_fix(
            "unsafe",
            "the action id closest by name (case, separators, one typo); else the entry removed",
        ),
    ),
    Code(
        "dependency-cycle",
        E,
        D,
        "the dependency graph has a cycle",
        NEVER,
        blocks=True,
        repair=_fix(
            "unsafe",
            "the `dependencies` entry on the cycle whose removal leaves the fewest findings",
        ),
    ),
    Code(
        "unknown-operator",
        E,
        D,
        "a precondition operator is not in the operator table",
        E,
        repair=_fix(
            "safe, unsafe",
            "the operator the spelling stands for: a re-cased or symbolic one (`EQ`, `==`, `>=`) "
            "safe, one closest by name (`equals`, `greater_than`) unsafe",
        ),
    ),
    Code(
        "precondition-unsatisfied",
        E,
        D,
        "a precondition is false when the action's level begins",
        E,
        "an error under failure_behavior skip too; the walk is sequential inside a level",
        skip_warns=True,
        repair=_fix(
            "safe, unsafe",
            "ordered after the action that writes a value that satisfies it, as the profile orders"
            " (safe when the walk then proves it holds and nothing new is found); or moved after "
            "that writer in the proposal (unsafe)",
        ),
    ),
    Code(
        "missing-dependency",
        E,
        D,
        "a depended-on state key is absent when the action's level begins",
        E,
        "an error under failure_behavior skip too; one finding per state_dependencies entry",
        skip_warns=True,
        repair=_fix(
            "safe, unsafe",
            "ordered after the action that writes the key, as the profile orders (safe when the "
            "walk then finds the key and nothing new); or moved after that writer in the proposal "
            "(unsafe)",
        ),
    ),
    Code(
        "assertion-fails",
        E,
        D,
        "an assertion's predicate is false in the walk",
        E,
        "one finding per false precondition; an assertion's parameters are ignored "
        "(an assertion-not-evaluated note says so)",
        skip_warns=True,
        repair=_fix(
            "safe, unsafe",
            "as `precondition-unsatisfied`: ordered after the writer of a value that satisfies the"
            " predicate",
        ),
    ),
    Code(
        "write-conflict",
        W,
        D,
        "two actions write the same key and neither is ordered before the other",
        W,
        "any two writers, unless one lists the key in state_dependencies; on the earlier",
        repair=_fix(
            "safe, unsafe",
            "the later writer ordered after the earlier, as the profile orders (safe when z3 "
            "proves the end state the same in every initial state and nothing new is found, else "
            "unsafe)",
        ),
    ),
    Code(
        "repeated-call",
        W,
        H,
        "the same tool is called with deep-equal parameters 3 or more times",
        E,
        "an error, on action_id proposal",
        repair=_none(
            "whether identical calls are a runaway loop or an intended poll is the author's call; "
            "the calls are listed"
        ),
    ),
    Code(
        "duplicate-call",
        NEVER,
        H,
        "the same tool is called with identical parameters exactly twice",
        W,
        "on action_id proposal",
        repair=_none(
            "whether the second identical call is a mistake or a retry the author wants is the "
            "author's call"
        ),
    ),
    Code(
        "too-many-actions",
        E,
        D,
        "the proposal has more actions than `max_actions`",
        W,
        "a warning on the first action; the limit is 30 unless given",
        blocks=True,
        repair=_none("which actions to drop or how to split the plan is the planner's question"),
    ),
    Code(
        "unknown-tool",
        E,
        D,
        "a `tool_call` names a tool that is not in the registry",
        E,
        blocks=True,
        repair=_fix(
            "unsafe",
            "the registered tool the call most likely meant: name distance (case, snake/camel "
            "case, typos) and how well the call's parameters fit its schema",
        ),
    ),
    Code(
        "param-schema",
        E,
        D,
        "parameters violate the tool's `parameters` JSON Schema",
        E,
        "only `required` and each property's `type` are checked",
        blocks=True,
        repair=_fix(
            "safe, unsafe, display",
            'from the tool\'s full JSON Schema: a lossless type repair (`"5"` to 5, `"true"` to '
            'true, 94103 to `"94103"`, x to [x]), an enum value in the wrong case, a misspelled or'
            " re-cased parameter name (safe when only case or separators differ), an undeclared "
            "parameter removed where the schema forbids it (unsafe), a missing required parameter "
            "from its `default` (unsafe) or single `enum` value (safe); else a display fix naming "
            "the parameter, its type and description",
        ),
    ),
    Code(
        "param-schema-full",
        NEVER,
        D,
        "parameters break the tool's full JSON Schema where CAR's type/required check "
        "lets them through",
        INFO,
        "car-verify's own note: the strict profile reports these as `param-schema`",
        lint=W,
        repair=_fix(
            "unsafe, display",
            "as `param-schema`; an `info` note is nothing the profile refuses, so its fixes are at"
            " most unsafe",
        ),
    ),
    Code(
        "param-undeclared",
        INFO,
        D,
        "a tool call passes a parameter its schema does not declare, close to one it "
        "declares and the call leaves out (a misspelling?): the schema lets it through",
        INFO,
        "car-verify's own note, under both profiles",
        repair=_fix(
            "unsafe",
            "the declared parameter it most likely stands for (a rename, its value "
            "repaired for that parameter); a note's fix is at most unsafe",
        ),
    ),
    Code(
        "missing-compensation",
        W,
        D,
        "`reversibility: compensable` without a `compensation`",
        E,
        "an error",
        repair=_fix(
            "unsafe, display",
            "the registered tool named as the inverse (`rollback_<tool>`, `undo_<tool>`, "
            "`revert_<tool>`, `<tool>_rollback`) as the compensation, with the call's parameters "
            "it accepts; else shown: declare one or mark the action irreversible",
        ),
    ),
    Code(
        "never-runs",
        E,
        D,
        "no initial state lets the action run (decided with z3)",
        E,
        "car-verify's own opt-in check, on CAR's walk",
        repair=_none(
            "no initial state lets the action run: the plan itself must change, and how is the "
            "planner's question"
        ),
    ),
    Code(
        "read-write-hazard",
        W,
        D,
        "an action reads a key that an unordered action of the same proposal writes",
        W,
        "car-verify's own opt-in check, on CAR's order",
        repair=_none(
            "whether the read is meant before or after the write is the author's call; either "
            "order is an edit `dependencies` can say"
        ),
    ),
    Code(
        "belief-divergence",
        W,
        D,
        "an assumption's expected_value differs from the given initial state",
        W,
        "car-verify's own opt-in check, with CAR's equality (1 is not 1.0)",
        repair=_none(
            "the plan's assumption or the given state is wrong, and only the author knows which"
        ),
    ),
    Code(
        "unknown-compensation-target",
        E,
        D,
        "a compensation names no action of the proposal, or an unregistered tool",
        E,
        repair=_fix("unsafe", "the action id or registered tool closest by name"),
    ),
    Code(
        "duplicate-key",
        E,
        D,
        "a JSON object names a key twice: the last value is read, the others are lost",
        W,
        "warning: CAR refuses a repeated field of the proposal, an action or a precondition "
        "(`duplicate field`) and reads the last value of a key repeated inside a value",
        repair=_none(
            "JSON Patch addresses the parsed document, which holds only the last value; delete the"
            " earlier key in the file"
        ),
    ),
    Code(
        "unknown-field",
        E,
        D,
        "a key no field of the IR knows (a misspelling?): kept, and ignored by every check",
        INFO,
        "info: CAR ignores unknown fields, and its verdict stays the verdict",
        lint=E,
        repair=_fix(
            "unsafe",
            "the IR field closest by name (`dependancies` to `dependencies`, `stateDependencies` "
            "to `state_dependencies`) when the action does not have it already",
        ),
    ),
    Code(
        "policy-undecided",
        W,
        D,
        "a policy rule cannot be decided statically: the parameter is another action's output",
        W,
        repair=_none("the call's parameter is another action's output: only the run decides it"),
    ),
    Code(
        "compensation-denied",
        W,
        D,
        "the action cannot be undone under these policies: its compensation is a call they deny",
        W,
        repair=_none("whether to change the policy or the compensation is the author's call"),
    ),
    Code(
        "extension-ignored",
        NEVER,
        D,
        "CAR ignores what car-verify reads: `dependencies` and `$id.output` references order "
        "nothing",
        INFO,
        "car-verify's own note on what CAR will do instead",
        repair=_none(
            "a note on what the runtime does instead; where an ignored `dependencies` entry "
            "matters, `dependency-overtaken` warns and repairs"
        ),
    ),
    Code(
        "dependency-overtaken",
        NEVER,
        D,
        "an action runs in the same level as, or before, an action its `dependencies` "
        "name: the runtime ignores the entry, so what it waits for does not gate it",
        W,
        "car-verify's own warning: CAR orders actions by state_dependencies only",
        repair=_fix(
            "safe, unsafe",
            "a key the dependency writes added to `state_dependencies`, so CAR orders the action "
            "after it (safe when the walk then finds nothing new); a dependency that writes "
            "nothing is given an effect to depend on (unsafe)",
        ),
    ),
    Code(
        "assertion-not-evaluated",
        NEVER,
        D,
        "an assertion's `parameters` predicate, which CAR never evaluates: it gates nothing",
        INFO,
        "car-verify's own note: CAR checks an assertion's preconditions only",
        lint=E,
        repair=_none(
            "write the predicate as a precondition of the assertion, which the runtime "
            "evaluates: it then gates what follows, a change of what the plan checks that is "
            "the author's to make"
        ),
    ),
    Code(
        "car-spec-deviation",
        NEVER,
        D,
        "CAR's answer contradicts its own spec here; the finding names the hazard",
        INFO,
        "car-verify's own note beside CAR's answer",
        repair=_none("a note beside the runtime's answer: the plan is as the runtime reads it"),
    ),
    # information flow, with tool labels (car-verify's input: on top of CAR's checks)
    Code(
        "flow-sensitive-to-sink",
        E,
        D,
        "data at the flow policy's confidentiality floor reaches a sink (the runtime's rule)",
        E,
        repair=_none(
            "whether the data may leave is the policy's question: declassify it on purpose or drop"
            " the sink call"
        ),
    ),
    Code(
        "flow-forbidden-sequence",
        E,
        D,
        "a forbidden capability ordering happens along a path of the DAG (the runtime's rule)",
        E,
        repair=_none(
            "the forbidden order is the plan's intent: which call to drop or move is the author's "
            "call"
        ),
    ),
    Code(
        "flow-forbidden-schedule",
        E,
        D,
        "a forbidden capability ordering that some schedule runs (the two are not ordered)",
        W,
        "beyond the runtime, which checks happens-before paths only: a warning under car",
        repair=_none("which of the two calls should come first is the author's call"),
    ),
    Code(
        "flow-untrusted-to-consequential",
        E,
        D,
        "data from an untrusted tool reaches a sink or a consequential call, unsanitised",
        W,
        "beyond the runtime, which has no integrity rule: a warning under car",
        repair=_none("where to sanitise the untrusted data is the author's call"),
    ),
    # intent, with a declared intent (car-verify's input)
    Code(
        "intent-drift",
        W,
        D,
        "a call outside the user's declared intent (a tool, a target), nothing untrusted behind it",
        W,
        repair=_none(
            "the call may be what the user wants or not: only the user can widen the intent"
        ),
    ),
    Code(
        "intent-injection",
        E,
        D,
        "a call outside the intent, influenced by an untrusted tool result: likely injection",
        E,
        repair=_none(
            "the call likely comes from injected text: drop it, and no edit of the plan can be "
            "trusted to"
        ),
    ),
    Code(
        "intent-forbidden-capability",
        E,
        D,
        "an action uses a capability the intent forbids",
        E,
        repair=_none(
            "the intent forbids the capability: the call must go, and what replaces it is the "
            "planner's question"
        ),
    ),
    # lint's own findings, about files rather than plans
    Code(
        "invalid-file",
        E,
        D,
        "the file does not parse, or its proposal cannot be modelled",
        E,
        about="file",
        repair=_none("the file does not parse: a JSON Patch needs a document"),
    ),
    Code(
        "not-a-proposal",
        W,
        D,
        "the file parses but holds no proposal (no object with an `actions` key)",
        W,
        about="file",
        repair=_none("the file holds no proposal to repair"),
    ),
    Code(
        "yaml-coercion",
        W,
        D,
        "a plain YAML scalar that YAML 1.1 reads as another type than it reads as "
        "(`NO` as false, `010` as 8, `1:20` as 80): quote it, or write the value",
        W,
        about="file",
        repair=_none(
            "quote the scalar for the text, or write the value it is read as: which one the "
            "author meant is theirs to say (the message gives both)"
        ),
    ),
    # `policy lint`'s own findings, about the rules of a policy set
    Code(
        "policy-invalid-pattern",
        E,
        D,
        "RE2 cannot compile a `deny_tool_param_matching` pattern: the load fails (lint reports it)",
        E,
        about="policy",
        repair=_none("a policy file is TOML, not a plan: the finding names the pattern to correct"),
    ),
    Code(
        "policy-unknown-tool",
        W,
        D,
        "a rule names a tool the tool registry does not have (the nearest name is suggested)",
        W,
        about="policy",
        repair=_none(
            "a policy file is TOML, not a plan: the finding suggests the nearest registered name"
        ),
    ),
    Code(
        "policy-unknown-param",
        W,
        D,
        "a rule names a parameter the tool's schema does not declare",
        W,
        about="policy",
        repair=_none("a policy file is TOML, not a plan: the finding names the parameter"),
    ),
    Code(
        "policy-dead-rule",
        W,
        D,
        "a rule can never deny a call, or a `deny_tool` denies its tool outright",
        W,
        about="policy",
        repair=_none(
            "a policy file is TOML, not a plan: delete the rule or widen it, the author's call"
        ),
    ),
    Code(
        "policy-shadowed-rule",
        W,
        D,
        "every call a rule denies, other rules deny too",
        W,
        about="policy",
        repair=_none("a policy file is TOML, not a plan: which rule to keep is the author's call"),
    ),
    Code(
        "policy-allow-cancelled",
        W,
        D,
        "an allow-list value that another rule denies anyway",
        W,
        about="policy",
        repair=_none("a policy file is TOML, not a plan: which rule is meant is the author's call"),
    ),
    Code(
        "policy-lint-incomplete",
        W,
        Tier.SAMPLED,
        "the rules' analysis ran out of its time budget: the rules not reached were not "
        "checked for shadowing or contradictions (the finding names the bound)",
        W,
        about="policy",
        repair=_none("nothing is wrong with the rules: the analysis ran out of time"),
    ),
    Code(
        "policy-contradiction",
        W,
        D,
        "two rules that together deny every call of a tool, though neither does alone",
        W,
        about="policy",
        repair=_none("a policy file is TOML, not a plan: which rule is meant is the author's call"),
    ),
]

_codes: dict[str, Code] = {}
for _code in _TABLE:
    if _code.name in _codes:  # pragma: no cover - guarded by the tests
        raise RuntimeError(f"duplicate finding code {_code.name}")
    _codes[_code.name] = _code

#: Every known code, by name (read-only view).
CODES = MappingProxyType(_codes)

#: The codes that reject a proposal at the executor's admission by default.
BLOCKING = frozenset(c.name for c in _TABLE if c.blocks)

#: Old name -> current name. Codes are never reused.
ALIASES: MappingProxyType[str, str] = MappingProxyType({})


def lookup(name: str) -> Code:
    """The code called ``name`` (or its current name, for a renamed one)."""
    name = ALIASES.get(name, name)
    try:
        return _codes[name]
    except KeyError:
        raise UsageError(f"unknown finding code {name!r}") from None


def register_codes(codes: Iterable[Code], *, owner: str) -> None:
    """Add a third-party pass's codes; a name that is already taken is an error."""
    for code in codes:
        existing = _codes.get(code.name)
        if existing is not None and existing != code:
            raise UsageError(f"pass {owner!r} redefines finding code {code.name!r}")
        _codes[code.name] = code
