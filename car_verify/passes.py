"""The pass framework: what a pass declares, the analyses it reads, and the runner.

A pass is a class with a ``name``, the ``tier`` of its findings, the ``codes`` it
may emit, what it ``verifies`` and ``cannot_verify``, and what it ``requires``
(a tool registry, a ``max_actions`` budget). The runner skips a pass whose
requirement is missing and records ``ran: false`` and why in the evidence.

Shared facts are *analyses* computed once per proposal and cached on the
:class:`Context`: the :class:`~car_verify.dag.Dag` and the verify-mode
:class:`~car_verify.walk.Walk`. Checks read them and emit :class:`Issue` records;
they never format output.

Built-in passes live in ``car_verify.analyses``; third-party passes register
through the ``car_verify.passes`` entry-point group.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import Any, ClassVar

from .codes import Code, lookup, register_codes
from .dag import Dag
from .errors import TOO_DEEP, CarVerifyError, InputError, PassError, UsageError, json_pointer
from .findings import Issue, Severity, Tier
from .model import ActionProposal
from .tools import ToolRegistry
from .walk import Walk, walk

__all__ = [
    "ENTRY_POINT_GROUP",
    "CheckRecord",
    "Context",
    "Example",
    "Options",
    "Pass",
    "Requirement",
    "available_passes",
    "resolve_passes",
    "run_passes",
]

ENTRY_POINT_GROUP = "car_verify.passes"


class Requirement(StrEnum):
    """Inputs a pass may need beyond the proposal."""

    TOOLS = "tools"
    MAX_ACTIONS = "max_actions"
    INITIAL_STATE = "initial_state"
    POLICIES = "policies"
    Z3 = "z3"


@dataclass(frozen=True, slots=True)
class Options:
    """Settings of a verify run beyond its inputs (checked when made)."""

    max_actions: int | None = None
    repeat_threshold: int = 3
    #: How many (finished actions, monitor state) pairs a trace rule may explore.
    trace_budget: int = 100_000

    def __post_init__(self) -> None:
        limit = self.max_actions
        if limit is not None and (type(limit) is not int or limit < 0):
            raise UsageError(f"max_actions must be a non-negative integer, got {limit!r}")
        threshold = self.repeat_threshold
        if type(threshold) is not int or threshold < 1:
            raise UsageError(f"repeat_threshold must be a positive integer, got {threshold!r}")


@dataclass(frozen=True)
class Example:
    """A small proposal a pass must accept (``codes == ()``) or flag with ``codes``.

    The examples are run as tests and rendered into the documentation.
    """

    title: str
    proposal: Mapping[str, Any]
    codes: tuple[str, ...] = ()
    tools: Sequence[Mapping[str, Any]] | None = None
    initial_state: Mapping[str, Any] | None = None
    max_actions: int | None = None
    #: Policy rules as ``.car/policies`` TOML text.
    policies: str | None = None

    @property
    def valid(self) -> bool:
        return not self.codes


class Context:
    """One proposal plus its inputs, with the analyses computed on first use."""

    def __init__(
        self,
        proposal: ActionProposal,
        *,
        tools: ToolRegistry | None = None,
        initial_state: Mapping[str, Any] | None = None,
        options: Options | None = None,
        policies: Any = None,
    ) -> None:
        self.proposal = proposal
        self.tools = tools
        #: A :class:`car_verify.policy.PolicyEngine`, when policies were given.
        self.policies = policies
        self.initial_state: dict[str, Any] = dict(initial_state or {})
        self.state_given = initial_state is not None
        self.options = options or Options()
        self._codes: dict[str, Code] = {}  # Context.issue's lookups

    @cached_property
    def dag(self) -> Dag:
        return Dag(self.proposal)

    @cached_property
    def walk(self) -> Walk:
        """The verify-mode walk (blocked actions' effects applied)."""
        return walk(self.dag, self.initial_state, mode="verify")

    def has(self, requirement: Requirement) -> bool:
        if requirement is Requirement.TOOLS:
            return self.tools is not None
        if requirement is Requirement.MAX_ACTIONS:
            return self.options.max_actions is not None
        if requirement is Requirement.INITIAL_STATE:
            return self.state_given
        if requirement is Requirement.POLICIES:
            return self.policies is not None
        if requirement is Requirement.Z3:
            import importlib.util

            return importlib.util.find_spec("z3") is not None
        return False  # pragma: no cover

    def issue(
        self,
        code: str,
        message: str,
        *,
        index: int | None = None,
        where: Sequence[str | int] = (),
        severity: Severity | None = None,
        tier: Tier | None = None,
    ) -> Issue:
        """A finding with the code's default severity and tier, located at action ``index``.

        A code outside the table (a policy rule's name) needs ``severity`` and ``tier``.
        """
        # A large plan makes thousands of findings: the code is looked up once per
        # context, and the Issue is made by position.
        if severity is None or tier is None:
            spec = self._codes.get(code)
            if spec is None:
                spec = self._codes[code] = lookup(code)
            code = spec.name
            severity = severity or spec.severity or spec.car
            tier = tier or spec.tier
        if severity is None:  # a code of the car profile's own, under no profile
            raise UsageError(f"finding code {code!r} has no severity outside the car profile")
        pointer = json_pointer(where) if where else ""
        if index is None:
            return Issue(code, severity, tier, message, None, None, pointer)
        action_id = self.proposal.actions[index].id
        return Issue(code, severity, tier, message, action_id, index, f"/actions/{index}{pointer}")


class Pass(abc.ABC):
    """Base class of an analysis pass. Subclasses set the class attributes and ``run``."""

    name: ClassVar[str]
    tier: ClassVar[Tier]
    codes: ClassVar[tuple[str, ...]]
    verifies: ClassVar[str]
    cannot_verify: ClassVar[str]
    requires: ClassVar[frozenset[Requirement]] = frozenset()
    #: Codes a third-party pass adds to the table.
    new_codes: ClassVar[tuple[Code, ...]] = ()
    #: What the pass takes for granted (collected into ``evidence.assumptions``).
    assumes: ClassVar[tuple[str, ...]] = ()
    #: What may still go wrong although the pass is silent (``evidence.residual_risks``).
    residual_risks: ClassVar[tuple[str, ...]] = ()
    examples: ClassVar[tuple[Example, ...]] = ()
    #: Run when no selection is given. Opt-in passes (False) run only when named...
    default: ClassVar[bool] = True
    #: ...or, when set, by default whenever this input is given (and are not listed
    #: in the evidence otherwise: without the input they do not apply).
    when_given: ClassVar[Requirement | None] = None
    #: The pass reports codes defined by its input (policy rule names), not the table.
    dynamic_codes: ClassVar[bool] = False

    @abc.abstractmethod
    def run(self, ctx: Context) -> Iterable[Issue]:
        """Yield the findings for ``ctx.proposal``."""


@dataclass(slots=True)
class CheckRecord:
    """One entry of ``evidence.checks``."""

    name: str
    ran: bool
    verifies: str
    cannot_verify: str
    findings: int
    tier: Tier
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "ran": self.ran,
            "verifies": self.verifies,
            "cannot_verify": self.cannot_verify,
            "findings": self.findings,
            "tier": self.tier.value,
        }
        if self.reason is not None:
            out["reason"] = self.reason
        return out


_REASONS = {
    Requirement.TOOLS: "no tool registry was given",
    Requirement.MAX_ACTIONS: "no max_actions was given",
    Requirement.INITIAL_STATE: "no initial state was given",
    Requirement.POLICIES: "no policies were given",
    Requirement.Z3: "z3-solver cannot be imported",
}

_registry: dict[str, type[Pass]] | None = None


def _builtin() -> list[type[Pass]]:
    try:
        from .analyses import BUILTIN
    except ModuleNotFoundError as err:
        if err.name != "car_verify.analyses":
            raise
        _mount_checkout_analyses()
        from .analyses import BUILTIN
    return list(BUILTIN)


def _mount_checkout_analyses() -> None:
    """Run from a source checkout: mount ``../analyses`` as ``car_verify.analyses``.

    An installed car-verify has the built-in passes at ``car_verify/analyses``
    (setuptools maps the top-level ``analyses/`` folder there). When ``car_verify``
    is imported straight from a checkout (``python -m pytest``, a notebook started
    in the repository), that folder sits beside the package instead.
    """
    import importlib.util
    import sys
    from pathlib import Path

    folder = Path(__file__).resolve().parent.parent / "analyses"
    spec = importlib.util.spec_from_file_location(
        "car_verify.analyses", folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    if spec is None or spec.loader is None or not folder.is_dir():
        raise ModuleNotFoundError(
            "car_verify.analyses is not installed", name="car_verify.analyses"
        )
    module = importlib.util.module_from_spec(spec)
    sys.modules["car_verify.analyses"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["car_verify.analyses"]
        raise


def _entry_points() -> list[type[Pass]]:
    if not _may_declare_passes():
        return []
    from importlib.metadata import entry_points

    found: list[type[Pass]] = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            loaded = ep.load()
        except Exception as err:
            raise UsageError(
                f"cannot load pass entry point {ep.name!r} ({ep.value}): {err}"
            ) from err
        if not (isinstance(loaded, type) and issubclass(loaded, Pass)):
            raise UsageError(f"entry point {ep.name!r} ({ep.value}) is not a car_verify Pass")
        found.append(loaded)
    return found


def _may_declare_passes() -> bool:
    """False only when no installed distribution can declare a ``car_verify.passes``
    entry point, found without importing :mod:`importlib.metadata`.

    That import alone takes 20-50 ms, a fifth of a small ``car-verify lint`` run,
    which a pre-commit hook pays on every commit. Distributions that live in a
    folder of ``sys.path`` keep their entry points in ``<name>.dist-info/``,
    ``<name>.egg-info/`` or ``<name>.egg/EGG-INFO/`` as ``entry_points.txt``
    (where ``importlib.metadata`` itself reads them), so reading those files
    answers "none" exactly. Anything it cannot read that way (a zip on the path,
    a finder with distributions of its own, ``importlib.metadata`` already loaded
    and perhaps patched) answers "maybe", and the real lookup runs.
    """
    import os
    import sys
    from importlib.machinery import PathFinder

    if "importlib.metadata" in sys.modules:
        return True
    if any(
        hasattr(finder, "find_distributions") and finder is not PathFinder
        for finder in sys.meta_path
    ):
        return True
    for entry in sys.path:
        folder = entry or os.curdir
        if not os.path.isdir(folder):
            if os.path.exists(folder):
                return True  # a zip archive may hold distributions
            continue
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        places = [n for n in names if n.lower().endswith((".dist-info", ".egg-info"))]
        if folder.lower().endswith(".egg"):
            places.append("EGG-INFO")
        for name in places:
            try:
                with open(os.path.join(folder, name, "entry_points.txt"), "rb") as f:
                    if ENTRY_POINT_GROUP.encode() in f.read():
                        return True
            except OSError:
                continue  # no entry points there (or an egg-info file, not a folder)
    return False


def available_passes() -> dict[str, type[Pass]]:
    """Every pass by name: the built-in ones, then the entry-point ones (loaded once)."""
    global _registry
    if _registry is None:
        registry: dict[str, type[Pass]] = {}
        for cls in [*_builtin(), *_entry_points()]:
            if cls.name in registry and registry[cls.name] is not cls:
                raise UsageError(f"two passes are called {cls.name!r}")
            if cls.new_codes:
                register_codes(cls.new_codes, owner=cls.name)
            registry[cls.name] = cls
        _registry = registry
    return dict(_registry)


def resolve_passes(
    selection: Iterable[str | Pass | type[Pass]] | None, ctx: Context | None = None
) -> list[Pass]:
    """Pass instances for a selection of names, classes or instances. None: the default
    passes, plus those whose ``when_given`` input ``ctx`` has. A ``str`` is one name
    or several separated by commas (``"strips,loops"``), as ``--passes`` takes them."""
    registry = available_passes()
    if isinstance(selection, str):
        selection = [name.strip() for name in selection.split(",") if name.strip()]
    if selection is None:
        return [
            cls()
            for cls in registry.values()
            if cls.default
            or (cls.when_given is not None and ctx is not None and ctx.has(cls.when_given))
        ]
    chosen: list[Pass] = []
    for item in selection:
        if isinstance(item, Pass):
            chosen.append(item)
        elif isinstance(item, type) and issubclass(item, Pass):
            if item.new_codes:
                register_codes(item.new_codes, owner=item.name)
            chosen.append(item())
        elif isinstance(item, str) and item in registry:
            chosen.append(registry[item]())
        else:
            known = ", ".join(sorted(registry))
            raise UsageError(f"unknown pass {item!r}; known passes: {known}")
    return chosen


def run_passes(ctx: Context, passes: Sequence[Pass]) -> tuple[list[Issue], list[CheckRecord]]:
    """Run each pass whose requirements are met; findings sorted by action, then code."""
    issues: list[Issue] = []
    checks: list[CheckRecord] = []
    for p in passes:
        missing = [r for r in sorted(p.requires) if not ctx.has(r)]
        if missing:
            reason = "; ".join(_REASONS[r] for r in missing)
            checks.append(
                CheckRecord(p.name, False, p.verifies, p.cannot_verify, 0, p.tier, reason)
            )
            continue
        try:
            found = list(p.run(ctx))
        except CarVerifyError:
            raise
        except RecursionError:  # a value too deep to follow: the input's fault, named here
            raise InputError(f"{TOO_DEEP} (in pass {p.name!r})") from None
        except Exception as err:
            raise PassError(p.name, err) from err
        allowed = set(p.codes)
        for issue in found:
            if issue.code not in allowed and not p.dynamic_codes:
                raise PassError(p.name, ValueError(f"emitted undeclared code {issue.code!r}"))
        issues.extend(found)
        checks.append(CheckRecord(p.name, True, p.verifies, p.cannot_verify, len(found), p.tier))
    issues.sort(key=Issue.sort_key)
    return issues, checks


def evidence_lists(
    passes: Sequence[Pass], checks: Sequence[CheckRecord]
) -> tuple[list[str], list[str], list[str]]:
    """``assumptions``, ``untested_regions`` and ``residual_risks`` from what ran."""
    ran = {c.name for c in checks if c.ran}
    assumptions: list[str] = []
    risks: list[str] = []
    untested: list[str] = []
    for p in passes:
        if p.name in ran:
            assumptions.extend(a for a in p.assumes if a not in assumptions)
            risks.extend(r for r in p.residual_risks if r not in risks)
    for c in checks:
        if not c.ran:
            untested.append(f"{c.name}: {c.verifies} (not checked: {c.reason})")
    return assumptions, untested, risks
