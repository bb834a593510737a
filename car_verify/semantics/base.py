"""What a profile's semantics says, as one object every feature asks.

A :class:`Semantics` answers every question on which the two profiles differ:

* **order**: which fields order actions, and so the DAG (:meth:`Semantics.order`
  builds a :class:`~car_verify.semantics.dag.Dag` either way: its levels, the keys each
  action needs present, the actions whose blocking blocks it), and which writers
  of a key conflict (:meth:`Semantics.conflicts`);
* **values**: what equality and each precondition operator mean
  (:meth:`holds`, :meth:`equal`, :meth:`canonical`, and a goal's ``equals``:
  :meth:`goal_equal`), concretely and as z3 terms (:meth:`holds_term`);
* **effects**: what an action does to the state (:meth:`effects`);
* **the walk inside a level**: whether an action sees the effects of the actions
  before it in its level (:attr:`sequential`: CAR's walk) or the level's start
  state (docs/semantics.md §4);
* **refusals**: which inputs the profile rejects (:meth:`refuse`);
* **transaction_check**: whether one proposal has a check of its own (the
  runtime's, under car: :meth:`transaction_conflicts`);
* **optimize**: which ``state_dependencies`` entries may go, and whether each is
  checked against verify first (:meth:`optimize_candidates`);
* **findings**: each code's severity, read from the one code table
  (:meth:`severity`, the only source of a finding's severity), and where the
  findings whose place differs go (:attr:`placement`), with the words that differ
  (:meth:`say`, :meth:`failure_words`) and the parameter check
  (:meth:`parameter_problems`).

The passes (``analyses/``) read all of this from the object and never branch on
the profile's name.

The interpreter (:mod:`car_verify.semantics.walk`), the symbolic walk
(:mod:`car_verify.semantics.symbolic`), the executor, the trace rules and the deciders take a
Semantics and never branch on the profile's name.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ..base.codes import lookup
from ..base.findings import Severity
from .profiles import Profile

if TYPE_CHECKING:
    from fractions import Fraction

    from ..base.codes import Code
    from ..ir.flat import FlatPlan
    from ..ir.model import Action, ActionProposal, Precondition
    from .dag import Dag

__all__ = ["FlatOrder", "Placement", "Semantics", "ToolSchemas", "TxConflict", "Where"]

#: Where a part of an action's predicate sits inside the action.
Where = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class TxConflict:
    """One conflict a profile's own check of a single proposal finds, by action
    position, in the runtime's kinds (``write_write``, ``read_write``,
    ``stale_assumption``): see :meth:`Semantics.transaction_conflicts`."""

    kind: str
    key: str
    actions: tuple[int, ...]
    #: For a stale assumption: ``"version"`` or ``"value"``, and its position.
    detail: str = ""
    assumption: int = -1


class ToolSchemas(Protocol):
    """What :meth:`Semantics.parameter_problems` reads of a tool registry
    (:class:`car_verify.rules.tools.ToolRegistry`, which sits above the semantics)."""

    #: The registry has names only (the runtime's ``tool_names``): no schemas.
    names_only: bool

    def __getitem__(self, name: str) -> Any:
        """Tool ``name``'s declaration (its ``parameters``: the schema as written)."""

    def check_parameters(self, name: str, parameters: Mapping[str, Any]) -> Sequence[Any]:
        """Every violation of the tool's full JSON Schema (each with ``path``,
        ``json_path`` and ``message``)."""


class FlatOrder:
    """A profile's order of a flat plan (:meth:`Semantics.flat_order`), by position:
    what the fused kernel reads (``car_verify.passes.fused``). ``writers`` (each
    key's writers, ascending) is found when first asked for."""

    __slots__ = ("_writers", "dag", "keys", "level", "levels", "plan", "preds", "semantics")

    def __init__(
        self,
        levels: list[list[int]],
        level: list[int],
        preds: Sequence[Sequence[int]],
        keys: Sequence[Sequence[str]],
        plan: FlatPlan,
        semantics: Semantics,
        writers: dict[str, list[int]] | None = None,
        dag: Dag | None = None,
    ) -> None:
        #: The actions of each level, in proposal order, and each action's level.
        self.levels = levels
        self.level = level
        #: Each action's predecessors (ascending).
        self.preds = preds
        #: The keys each action needs present at its turn (a missing one is a finding).
        self.keys = keys
        self.plan = plan
        self.semantics = semantics
        self._writers = writers
        #: The :class:`~car_verify.semantics.dag.Dag` behind the order, where
        #: reachability is asked of one (None: the order points forward, and is asked
        #: directly).
        self.dag = dag

    @property
    def writers(self) -> dict[str, list[int]]:
        if self._writers is None:
            self._writers = self.semantics.flat_writers(self.plan)
        return self._writers


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a profile puts the findings whose place differs between the profiles
    (the runtime puts some on the proposal, some on the earlier writer)."""

    #: The ``action_id`` of a finding about the whole proposal.
    proposal_id: str | None
    #: ``repeated-call`` on the proposal (True), or on the call that reaches the
    #: threshold; and whether identical calls below the threshold are a group too
    #: (``duplicate-call``, when the profile reports it).
    repeats_on_proposal: bool
    #: ``too-many-actions`` on the first action (True), or on the proposal.
    over_budget_on_first: bool
    #: ``write-conflict`` on the earlier writer (True), or on the later one.
    conflict_on_earlier: bool
    #: ``assertion-fails``: one finding per false part of the predicate (True), or
    #: one per assertion naming them all.
    each_false_part: bool


class Semantics(abc.ABC):
    """One profile's reading of a proposal (see the module's docstring)."""

    #: The profile this object is the semantics of.
    profile: ClassVar[Profile]
    #: Inside a level, an action sees the effects of the actions before it in proposal
    #: order (True: CAR's walk) or the state its level began with (False: docs/semantics.md §4).
    sequential: ClassVar[bool]
    #: At run time, an action rejected before it runs (a false precondition, an absent
    #: key, an output reference with no output) stops the run when its
    #: ``failure_behavior`` is abort (True: the spec's failure_behavior table), or is
    #: only rejected while the rest runs on (False: the runtime's execute).
    rejection_aborts: ClassVar[bool]
    #: A ``retry`` action whose retries are spent stops the run (True: the spec's "retry
    #: up to max_retries times before aborting"), or fails while the rest runs on
    #: (False: the runtime's execute).
    spent_retry_aborts: ClassVar[bool]
    #: At run time, an assertion whose predicate (:meth:`checks`) is false is rejected
    #: before it runs, as any action whose precondition is false (True: the runtime's
    #: execute), or fails (False: the spec's "fail the proposal if not").
    assertion_predicate_rejects: ClassVar[bool]
    #: One line for people: how this profile orders and walks.
    summary: ClassVar[str]
    #: What the z3 ``number`` constructor holds, in words (``x is a number``).
    number_noun: ClassVar[str]
    #: A forbidden flow from x to y is sanitized by any declassifier ordered between
    #: them (True: the runtime's reading), or only when every path passes one (False).
    declassifier_on_any_path: ClassVar[bool]
    #: car-verify's own checks beyond the runtime's (flow's schedules and integrity,
    #: intent's extra rules) decide the verdict (True) or are notes beside it (False).
    own_checks_decide: ClassVar[bool]
    #: Where the findings whose place differs between the profiles go.
    placement: ClassVar[Placement]
    #: Two concurrency ops (``AgentOp``) of one id are answered as the runtime reads
    #: them, with a note saying how (True), or refused as input naming the repeat
    #: (False: ``depends_on`` cannot say which of them it names).
    answers_repeated_op_ids: ClassVar[bool]
    #: The action budget when none is given (None: no budget, the budget pass waits
    #: for one).
    default_max_actions: ClassVar[int | None]
    #: A walk finding on an action of ``failure_behavior: skip`` is a warning (True:
    #: the author declared it optional; the codes the table marks ``skip_warns``).
    skip_is_optional: ClassVar[bool]
    #: The profile's own words for a finding, by code (``code:variant`` where a code
    #: has several): templates :meth:`say` fills with the facts a pass gives. A code
    #: without one is worded by its pass.
    words: ClassVar[Mapping[str, str]] = {}
    #: :meth:`failure_words` has words of the profile's own (the runtime's messages);
    #: else a pass explains a failure from the plan.
    has_failure_words: ClassVar[bool] = False

    def __repr__(self) -> str:
        return f"<semantics {self.profile.value}>"

    # --- inputs -------------------------------------------------------------------------

    def refuse(self, proposal: ActionProposal) -> None:  # noqa: B027 - nothing by default
        """Raise :class:`~car_verify.base.errors.InputError` for a proposal this profile rejects."""

    # --- order --------------------------------------------------------------------------

    @abc.abstractmethod
    def order(self, proposal: ActionProposal) -> Dag:
        """The proposal's DAG under this profile's ordering rule."""

    def turns(self, members: Sequence[int]) -> Sequence[Sequence[int]]:
        """The turns a level's ``members`` (in proposal order) are walked in: the
        actions of a turn see the state as the turn began and are dispatched at once,
        and their effects land when it is over, in proposal order. Each action alone
        under a sequential semantics, the whole level at once otherwise."""
        return [(i,) for i in members] if self.sequential else [members]

    def conflicts(self, proposal: ActionProposal, dag: Dag) -> list[tuple[int, int, str]]:
        """The write conflicts ``verify`` reports, as ``(first, second, key)`` by action
        position, sorted: by default, the pairs of writers of a key that ``dag``
        leaves unordered (docs/semantics.md §3)."""
        return list(dag.conflicts)

    # --- values -------------------------------------------------------------------------

    @abc.abstractmethod
    def holds(self, operator: str, actual: object, expected: object) -> bool:
        """Whether a precondition holds for the state value ``actual`` (``ABSENT`` when
        the key is not in the state)."""

    @abc.abstractmethod
    def equal(self, a: object, b: object) -> bool:
        """Whether two JSON values are equal (end states are compared with it)."""

    def goal_equal(self, actual: object, expected: object) -> bool:
        """Whether a goal's ``state_predicate`` holds: the state's value ``actual``
        against its ``equals`` (``evaluate_goal`` and risk ask it). :meth:`equal`,
        unless the profile reads goals otherwise."""
        return self.equal(actual, expected)

    @abc.abstractmethod
    def canonical(self, value: object) -> str:
        """A text that two values share exactly when :meth:`equal` says they are equal."""

    @abc.abstractmethod
    def holds_term(
        self, encoder: Any, pre: Precondition, present: Any, value: Any, negative_zero: Any = None
    ) -> Any:
        """:meth:`holds` as a z3 formula over a key's presence bit and value term (the
        vocabulary of :class:`car_verify.semantics.symbolic.Encoder`), and the sign of
        a float zero there (a z3 boolean: ``-0.0``; None: not known)."""

    @abc.abstractmethod
    def number_term(self, encoder: Any, value: int | float) -> Any:
        """A JSON number as a z3 term of the encoder's JSON sort."""

    @abc.abstractmethod
    def number_of(self, value: Fraction) -> int | float:
        """The JSON number a z3 real of the ``number`` constructor stands for."""

    @abc.abstractmethod
    def value_domain(self, encoder: Any, value: Any) -> Any:
        """What every initial value term obeys under this profile's numbers (a z3 formula)."""

    def constant_facts(self, encoder: Any) -> Any:
        """What is known of the constants the proposals name beyond their terms (the
        open predicates' answers on them), as one z3 formula; nothing by default."""
        return encoder.true

    # --- actions ------------------------------------------------------------------------

    @abc.abstractmethod
    def checks(self, action: Action) -> list[tuple[Precondition, Where]]:
        """What an action's turn must satisfy, each part with where it is in the action."""

    @abc.abstractmethod
    def effects(self, action: Action) -> Mapping[str, Any]:
        """The effects the walk applies when the action runs."""

    def run_assertion(self, action: Action, state: Mapping[str, Any]) -> tuple[bool, Any]:
        """An assertion run on ``state`` once its predicate holds: ``(True, its
        output)``, or ``(False, why it failed)``. By default it holds: its predicate
        is all it checks."""
        return True, True

    # --- repairs ------------------------------------------------------------------------

    @abc.abstractmethod
    def ordering_edit(
        self, action: Mapping[str, Any], first: str, key: str
    ) -> tuple[str, str] | str:
        """How the proposal's JSON orders ``action`` (a later writer of ``key``) after
        ``first``, an earlier one, under this profile: the list field of ``action``
        to append to and the entry to append; or why this profile cannot."""

    # --- transaction_check ----------------------------------------------------------------

    def transaction_conflicts(
        self,
        proposal: ActionProposal,
        versions: Mapping[str, int] | None,
        state: Mapping[str, Any] | None,
    ) -> list[TxConflict] | None:
        """The profile's own check of one proposal on its own (the runtime's, under
        car), or None: one proposal is checked as several are (docs/semantics.md §6)."""
        return None

    # --- optimize -----------------------------------------------------------------------

    #: ``optimize`` removes a candidate entry only when verify then sees what it saw
    #: before (True: docs/semantics.md §6), or every candidate (False: the runtime's rule).
    optimize_rechecks: ClassVar[bool]

    @abc.abstractmethod
    def optimize_candidates(self, proposal: ActionProposal) -> list[tuple[int, str, str]]:
        """The ``state_dependencies`` entries ``optimize`` may remove, in proposal order:
        ``(action position, key, why it may go)``."""

    # --- findings -----------------------------------------------------------------------

    def severity(self, code: str, action: Action | None = None) -> Severity | None:
        """The severity of a finding of ``code`` (on ``action``, when it is on one)
        under this profile, from the code table: its column of this profile, and a
        warning for a ``skip_warns`` code on an optional action where
        :attr:`skip_is_optional` holds. None: the profile does not report the code."""
        return self.severity_of(
            code, optional=action is not None and action.failure_behavior == "skip"
        )

    def severity_of(self, code: str, *, optional: bool = False) -> Severity | None:
        """:meth:`severity` of a finding on an action whose ``failure_behavior`` is
        ``skip`` (``optional``) or not (or on the proposal)."""
        spec = lookup(code)  # an unknown code raises
        key = (code, self.profile.value, self.skip_is_optional, optional)
        known = _SEVERITIES.get(key)
        if known is not None and known[0] is spec:
            return known[1]
        severity = spec.severity_in(self.profile.value)
        if severity is Severity.ERROR and spec.skip_warns and self.skip_is_optional and optional:
            severity = Severity.WARNING
        _SEVERITIES[key] = (spec, severity)
        return severity

    def reports(self, code: str) -> bool:
        """Whether this profile reports ``code`` at all (its column is not empty)."""
        return self.severity(code) is not None

    @abc.abstractmethod
    def fingerprint(self, parameters: Mapping[str, Any]) -> int:
        """A cheap number that parameter objects :meth:`equal` calls equal always
        share (a necessary condition only; :meth:`canonical` decides)."""

    def say(self, what: str, /, **facts: object) -> str | None:
        """The profile's own message for a finding (``what``: its code, or
        ``code:variant``), from ``facts``; None: the pass words it."""
        template = self.words.get(what)
        return None if template is None else template.format(**facts)

    def failure_words(self, pre: Precondition | None, key: str, actual: Any) -> str | None:
        """The profile's own words for a failed precondition ``pre`` (``actual``: the
        key's value, ``ABSENT`` when absent) or, without one, an absent depended-on
        ``key``: the runtime's message, under car. None: the pass explains it from
        the plan (which writers, which level)."""
        return None

    # --- the flat plan (car_verify.passes.fused) -----------------------------------------

    def refuses_flat(self, plan: FlatPlan) -> bool:
        """Whether :meth:`refuse` refuses the proposal of a flat plan (the flat plan
        holds only actions of the IR's types)."""
        return False

    def flat_order(self, plan: FlatPlan) -> FlatOrder | None:
        """:meth:`order` of a flat plan, by position; None where the fused kernel does
        not model this profile's order of it (the plain runner answers)."""
        return None

    def flat_writers(self, plan: FlatPlan) -> dict[str, list[int]]:
        """Each key's writers of a flat plan under this profile (:attr:`FlatOrder.writers`).
        Asked only of a profile whose :meth:`flat_order` gives an order (the base gives
        none, so a profile that does not define the flat methods takes the plain path)."""
        raise NotImplementedError(f"{type(self).__name__} gives a flat order: define flat_writers")

    def flat_conflicts(self, plan: FlatPlan, order: FlatOrder) -> list[tuple[int, int, str]]:
        """:meth:`conflicts` of a flat plan under its :meth:`flat_order`."""
        raise NotImplementedError(
            f"{type(self).__name__} gives a flat order: define flat_conflicts"
        )

    def flat_checks(self, plan: FlatPlan, i: int) -> Sequence[tuple[Mapping[str, Any], Where]]:
        """:meth:`checks` of action ``i`` of a flat plan beyond its preconditions
        (which every profile checks), each as a precondition's object."""
        return ()

    def flat_effects(self, plan: FlatPlan) -> list[Mapping[str, Any]]:
        """:meth:`effects` of each action of a flat plan, by position."""
        raise NotImplementedError(f"{type(self).__name__} gives a flat order: define flat_effects")

    def flat_failure_words(self, key: str, operator: str, expected: Any, actual: Any) -> str | None:
        """:meth:`failure_words` of a failed precondition given by its parts."""
        return None

    def words_mode(self) -> object:
        """What the words of this profile's findings depend on beside the findings (the
        runtime's words, under car, inside ``runtime_words``): a finding whose message
        is made later is made in the mode its run had (:meth:`words_in`)."""
        return None

    def words_in(self, mode: object) -> AbstractContextManager[object]:
        """A block in which messages are made in ``mode`` (:meth:`words_mode`)."""
        return nullcontext()

    @abc.abstractmethod
    def parameter_problems(
        self, tools: ToolSchemas, tool: str, parameters: Mapping[str, Any]
    ) -> list[tuple[str, tuple[str | int, ...]]]:
        """Where ``parameters`` break the registered ``tool``'s parameter schema as
        this profile checks it: ``(message, path inside the parameters)`` each."""


#: :meth:`Semantics.severity`'s answers by (code, profile, ``skip_is_optional``,
#: whether the action is optional), with the table entry they were read from (a code
#: registered anew is read anew): every finding of every run asks.
_SEVERITIES: dict[tuple[str, str, bool, bool], tuple[Code, Severity | None]] = {}
