"""What every rule kind declares, and what it is handed.

A kind (:class:`Kind`) is one module of :mod:`car_verify.rules.kinds`: its strict
reader (the keys of its TOML table, each with its type and meaning, and the checks
past the types), the name of each of its rules, its decision on a call (an
:class:`Answer`: ``allow``, ``deny`` or ``undecided``, with a reason that says what
would satisfy the rule and never holds a literal of the rule nor a value of the
call), the parameters it reads, its model for ``policy diff`` and ``policy lint``
(the pieces of a z3 formula, :mod:`car_verify.rules.policy_model`), and its
documentation: the module's docstring and its :class:`Example` calls, which run as
tests and are rendered into ``docs/rules.md``.

The engine (:class:`car_verify.rules.policy.PolicyEngine`) is a loop over the
kinds' rules; it hands each a :class:`Call` (the call being decided, its
parameters' texts read once) and the rule's own memory (a rate limit's window).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, Literal, TypeVar

from ...base.errors import InputError
from ...base.values import ABSENT
from ._values import NO_NEEDS, Needs, coerce, strings_of, texts_of

if TYPE_CHECKING:
    from ...ir.model import Action
    from ..policy_model import Model, Piece

__all__ = [
    "ALLOW",
    "Answer",
    "Call",
    "Decision",
    "Example",
    "Key",
    "Kind",
    "Needs",
    "Reader",
    "Step",
    "coerce",
    "denied",
    "strings_of",
    "texts_of",
    "undecided",
]

R = TypeVar("R")

#: A rule's answer on one call.
Decision = Literal["allow", "deny", "undecided"]


@dataclass(frozen=True, slots=True)
class Answer:
    """One rule's decision on one call, and why (empty for ``allow``). The reason
    names the tool and the parameter and says what would satisfy the rule; it never
    holds a literal of the rule (which may be a secret) nor a value of the call."""

    decision: Decision
    reason: str = ""


ALLOW: Final = Answer("allow")


def denied(reason: str) -> Answer:
    return Answer("deny", reason)


def undecided(reason: str) -> Answer:
    return Answer("undecided", reason)


class Call:
    """The call being decided, as every rule reads it: its tool, its (frozen)
    parameters, the run's state, the plan's action (for a callback rule), and each
    parameter's texts (:func:`texts_of`), read once however many rules read them."""

    __slots__ = ("_clock", "_now", "_texts", "action", "params", "state", "tool")

    def __init__(
        self,
        tool: str | None,
        params: Mapping[str, Any],
        state: Mapping[str, Any] | None = None,
        action: Action | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.tool = tool
        self.params = params
        self.state = state
        self.action = action
        self._clock = clock
        self._now: float | None = None
        self._texts: dict[str, list[str]] = {}

    def texts(self, param: str) -> list[str]:
        """``param``'s texts (it must be present)."""
        found = self._texts.get(param)
        if found is None:
            found = self._texts[param] = texts_of(self.params[param])
        return found

    @property
    def now(self) -> float:
        """The engine's clock, read once per call (a rate window's time)."""
        if self._now is None:
            self._now = self._clock() if self._clock is not None else 0.0
        return self._now


# --- the strict reader ---------------------------------------------------------------------------


class Reader:
    """Strict typed access to one parsed policy file; every error names the file
    and the key (``rules.toml: deny_tool_param[0].regex: unknown key ...``)."""

    def __init__(self, path: Path, text: str | None = None, *, strict: bool = True) -> None:
        self.path = path
        self.source = str(path)
        #: The file's TOML text (None: the file was given as a JSON object), to place
        #: a rule's own error in it.
        self.text = text
        #: False (``policy lint`` alone): a rule that cannot be applied as written (a
        #: pattern RE2 cannot compile) is kept, failing closed, for lint to report
        #: with the others; every face that enforces reads strictly.
        self.strict = strict
        #: Where a kind that places its rules in :attr:`text` has looked so far, by
        #: the kind's key: the rules stand in the file in their order, each is looked
        #: for after the last.
        self.cursor: dict[str, int] = {}

    def fail(self, where: Sequence[str | int], problem: str) -> InputError:
        return InputError(problem, list(where), source=self.source)

    def strings(self, value: Any, where: Sequence[str | int], sample: str = "...") -> list[str]:
        key = str(where[-1]) if where else "key"
        form = f'{key} = ["{sample}"]'
        if not isinstance(value, list):
            raise self.fail(where, f"expected an array of strings ({form})")
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise self.fail([*where, i], f"expected a string ({form})")
        return list(value)

    def tables(self, value: Any, kind: str, keys: Sequence[Key]) -> list[dict[str, Any]]:
        """The tables of ``[[kind]]``, each checked against ``keys``: no unknown key,
        every required key, each of its type."""
        if not isinstance(value, list):
            raise self.fail([kind], f"expected an array of tables ([[{kind}]])")
        known = {k.name: k for k in keys}
        out = []
        for i, table in enumerate(value):
            if not isinstance(table, dict):
                raise self.fail([kind, i], f"expected a table ([[{kind}]] with its keys)")
            for key in table:
                if key not in known:
                    names = ", ".join(sorted(known))
                    raise self.fail([kind, i, key], f"unknown key (expected one of {names})")
            for k in keys:
                if k.required and k.name not in table:
                    raise self.fail([kind, i], f"missing required key {k.name!r}")
                if k.name in table:
                    self.check_type(table[k.name], k, [kind, i, k.name])
            out.append(table)
        return out

    def check_type(self, value: Any, key: Key, where: list[str | int]) -> None:
        if key.types is None:
            json_value(self, value, where)
            return
        if list in key.types:
            if not isinstance(value, list):
                got = "a boolean" if isinstance(value, bool) else type(value).__name__
                raise self.fail(
                    where, f'expected an array, got {got} ({key.name} = ["{key.sample}"])'
                )
            self.strings(value, where, key.sample)
            return
        if isinstance(value, bool) and bool not in key.types:
            got = "a boolean"
        elif not isinstance(value, key.types):
            got = type(value).__name__
        else:
            return
        raise self.fail(where, f"expected {key.type_name()}, got {got} ({key.name} = {key.sample})")


def json_value(reader: Reader, value: Any, where: list[str | int]) -> Any:
    """A TOML value as the JSON value it stands for (a date or a non-finite number
    is none)."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise reader.fail(where, "expected a finite number")
        return value
    if isinstance(value, list):
        return [json_value(reader, v, [*where, i]) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: json_value(reader, v, [*where, k]) for k, v in value.items()}
    raise reader.fail(where, f"a {type(value).__name__} is not a JSON value")


_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "a boolean"}


@dataclass(frozen=True, slots=True)
class Key:
    """One key of a kind's table: its name, its types (``(list,)``: an array of
    strings; None: any JSON value), whether it is required, an example of its form
    and what it means (the reference's table is made of these)."""

    name: str
    types: tuple[type, ...] | None
    meaning: str
    required: bool = False
    sample: str = '"..."'
    default: str = ""

    def type_name(self) -> str:
        if self.types is None:
            return "a JSON value"
        if list in self.types:
            return "an array of strings"
        return " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in self.types)


# --- examples ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    """One call of an example, decided by the gate: ``expect`` is the rule's answer
    (``allow``, ``deny``, ``undecided``); ``outcome``: the call's reported outcome
    when it is admitted (for trace rules); ``state``: the run's state (for
    ``require_state``)."""

    tool: str
    params: Mapping[str, Any]
    expect: Decision
    outcome: Literal["succeeded", "failed"] | None = None
    state: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Example:
    """A rule set and calls decided in order by the gate, each with the answer it
    must get. ``policy``: the rules as ``.car/policies`` TOML text; ``registered``:
    for a registered kind, the ``register_policy`` arguments instead (a callback as
    ``(name, target)``, which denies a call whose ``n`` is over 100)."""

    title: str
    steps: tuple[Step, ...]
    policy: str = ""
    registered: tuple[tuple[Any, ...], ...] = ()


# --- the kind -------------------------------------------------------------------------------------


class Kind(Generic[R]):
    """One kind of rule. A subclass names its ``key`` (its array in a policy file,
    or its ``register_policy`` kind), its keys, and implements what it decides; the
    defaults here fit a kind whose rules are frozen dataclasses read from tables."""

    #: The kind's unique name in the registry: the file key (``deny_tool_param``), or
    #: ``registered KIND`` for a kind registered through ``register_policy``.
    name: ClassVar[str]
    #: Its file key or ``register_policy`` kind.
    key: ClassVar[str]
    registered: ClassVar[bool] = False
    #: ``call``: decided call by call by the engine; ``trace``: over the run's trace,
    #: by the trace monitor (:class:`~car_verify.rules.trace.TraceGate`), for a call
    #: the rules of one call admit.
    stage: ClassVar[Literal["call", "trace"]] = "call"
    #: One line: what it denies.
    summary: ClassVar[str]
    #: The keys of its table (empty: the kind is an array of strings).
    keys: ClassVar[tuple[Key, ...]] = ()
    #: The rule's name, as the reference shows it (``deny_tool_param:TOOL.PARAM``).
    name_form: ClassVar[str]
    #: Whether it reads the text of the call's parameters: the engine bounds the
    #: work of those rules on one call (``MAX_CONTENT_WORK``).
    reads_content: ClassVar[bool] = False
    #: Whether its memory (:meth:`start`) is a window of the admitted calls' times:
    #: the run's state, which a run saved and taken up elsewhere carries (the hook's
    #: session file, a framework's checkpointer thread; see
    #: :func:`~car_verify.rules.policy.state_keys`). A memory that is not (a
    #: compiled pattern) is made again from the rule.
    windowed: ClassVar[bool] = False
    #: Whether its tool's name is compared without case (``Bash``, ``bash``).
    tool_folded: ClassVar[bool] = False
    #: An example of an array-of-strings kind's entry, for its error messages.
    sample: ClassVar[str] = "..."
    rule_type: ClassVar[type]
    examples: ClassVar[tuple[Example, ...]] = ()

    # --- reading ---------------------------------------------------------------------------------

    def read(self, reader: Reader, value: Any) -> list[R]:
        """The rules of this kind in one file (``value``: its array), read strictly."""
        if not self.keys:
            return [self.entry(reader, s, i) for i, s in enumerate(
                reader.strings(value, [self.key], self.sample))]  # fmt: skip
        tables = reader.tables(value, self.key, self.keys)
        return [self.build(reader, table, i) for i, table in enumerate(tables)]

    def entry(self, reader: Reader, value: str, index: int) -> R:
        """A rule of an array-of-strings kind from one entry."""
        raise NotImplementedError(f"kind {self.name} is read as an array of strings: define entry")

    def build(self, reader: Reader, table: Mapping[str, Any], index: int) -> R:
        """A rule from one table whose keys have been checked (``index``: its place
        among the file's tables of this kind, for an error)."""
        values = {k.name: table[k.name] for k in self.keys if k.name in table}
        for name, value in list(values.items()):
            if isinstance(value, list):
                values[name] = tuple(value)
        rule: R = self.rule_type(**values)
        return rule

    def rule_name(self, rule: R, position: int) -> str:
        """The rule's stable name (``position``: its place among the merged rules of
        its kind)."""
        return str(rule.name)  # type: ignore[attr-defined]

    def to_doc(self, rule: R) -> Any:
        """What the rule says, as JSON: its identity (two rules that say the same
        thing have the same, wherever they were written). Rules are stored as the
        text of their file and read by :meth:`read`, never from this."""
        out: dict[str, Any] = {}
        for f in fields(rule):  # type: ignore[arg-type]
            value = getattr(rule, f.name)
            if value is ABSENT:
                continue
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    def line_of(self, text: str, rule: R, index: int) -> int | None:
        """The line of its file where the rule is written (``index``: its place among
        the file's rules of this kind)."""
        if not self.keys:
            found = text.find(json.dumps(rule))
            return None if found < 0 else text.count("\n", 0, found) + 1
        at = -1
        for _ in range(index + 1):
            at = text.find(f"[[{self.key}]]", at + 1)
            if at < 0:
                return None
        return text.count("\n", 0, at) + 1

    # --- deciding --------------------------------------------------------------------------------

    def tool_of(self, rule: R) -> str | None:
        """The tool the rule judges (None: every tool)."""
        return str(rule.tool)  # type: ignore[attr-defined]

    def start(self, rule: R) -> Any:
        """The rule's memory when a run starts (a rate limit's empty window); None
        for a rule that remembers nothing."""
        return None

    def decide(self, rule: R, call: Call, memory: Any) -> Answer:
        """The rule's answer on ``call`` (``memory``: what :meth:`start` gave, as the
        earlier calls left it). Called only for a call of the rule's tool."""
        raise NotImplementedError(f"kind {self.name} decides calls: define decide")

    def params(self, rule: R) -> frozenset[str] | None:
        """The parameters whose values the rule reads (None: every parameter)."""
        return frozenset({str(rule.param)})  # type: ignore[attr-defined]

    def names(self, rule: R) -> list[tuple[str, str | None]]:
        """The (tool, parameter) names the rule is about, for ``policy lint`` to find
        a name no tool has."""
        tool = self.tool_of(rule)
        if tool is None:
            return []
        params = self.params(rule)
        return [(tool, p) for p in sorted(params)] if params else [(tool, None)]

    # --- the model of policy diff and lint ------------------------------------------------------

    def one_call(self, rule: R) -> bool:
        """Whether the rule judges a call by itself (its condition is a formula on
        one call): every kind of the ``call`` stage but a rate limit of some calls."""
        return self.stage == "call"

    def needs(self, rule: R) -> Needs:
        return NO_NEEDS

    def pieces(self, rule: R, model: Model, label: str) -> list[Piece]:
        """The ways the rule denies a call of its tool, any one enough (see
        :class:`~car_verify.rules.policy_model.Piece`); ``label`` tells the rule
        apart (a choice the model cannot express is a free boolean named by it)."""
        raise NotImplementedError(f"kind {self.name} is compared by policy diff: define pieces")

    def entries(self, rule: R, model: Model) -> list[tuple[str, Piece]]:
        """An allow-list's entries, each with the calls it allows: ``policy lint``
        reports an entry that other rules deny anyway."""
        return []

    def lint(self, rule: R) -> Iterable[tuple[str, str]]:
        """What ``policy lint`` says of the rule by itself: (code, message) pairs."""
        return ()
