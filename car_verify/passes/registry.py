"""Which passes exist: the built-in ones, then those installed distributions declare.

The built-in passes are the modules of ``car_verify.analyses`` (the top-level
``analyses/`` folder, installed under that name by the packaging configuration);
a third-party pass registers through the ``car_verify.passes`` entry-point group.
This module sits above both the pass framework and the passes, and hands the
chosen instances to :func:`car_verify.passes.run_passes`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, cast

from ..base.codes import register_codes
from ..base.config import PROFILES
from ..base.errors import UsageError
from ..base.values import shown
from . import Context, Pass, Requirement

if TYPE_CHECKING:
    from ..base.config import ProfileName

__all__ = [
    "ENTRY_POINT_GROUP",
    "available_passes",
    "default_passes",
    "default_selection",
    "profiles_of",
    "registry_build",
    "resolve_passes",
]

ENTRY_POINT_GROUP = "car_verify.passes"


class _Passes(dict[str, type[Pass]]):
    """The registry: every pass by name, and which build of it this is (the default
    selections are cached per build, so a registry put back, as a test's monkeypatch
    does, brings its own selections back with it)."""

    build: int = 0


_registry: _Passes | None = None
#: How many times the registry was built.
_builds = 0
#: Each installed pass class: the entry point that declared it (``name (value)``).
_declared_by: dict[type[Pass], str] = {}


@functools.cache
def _builtin_set() -> frozenset[type[Pass]]:
    """:func:`_builtin` as a set, made once (every default selection asks it)."""
    return frozenset(_builtin())


def _builtin() -> tuple[type[Pass], ...]:
    """The built-in passes: the modules of ``car_verify.analyses``, then what CAR
    alone reports and its evidence (:mod:`car_verify.passes.car`, which sums up the
    others' findings into CAR's eight checks), imported on first use."""
    from .car import CarPass

    try:
        from ..analyses import BUILTIN
    except ModuleNotFoundError as err:  # said out loud: not a half-working package
        if err.name != "car_verify.analyses":
            raise
        raise ImportError(
            "car_verify.analyses (the built-in passes, the top-level analyses/ folder) is not "
            f"installed beside {__file__}: install the project (pip install .), or run from "
            "its checkout, whose folders the package maps itself"
        ) from None
    return (*BUILTIN, CarPass)


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
        _declared_by[loaded] = f"{ep.name!r} ({ep.value})"
        found.append(loaded)
    return found


def _may_declare_passes() -> bool:
    """False only when no installed distribution can declare a ``car_verify.passes``
    entry point, found without importing :mod:`importlib.metadata`.

    That import alone is a large part of a small ``car-verify lint`` run, which a
    pre-commit hook pays on every commit (docs/performance.md). Distributions that live in a
    folder of ``sys.path`` keep their entry points in ``<name>.dist-info/``,
    ``<name>.egg-info/`` or ``<name>.egg/EGG-INFO/`` as ``entry_points.txt``
    (where ``importlib.metadata`` itself reads them), so reading those files
    answers "none" exactly. Anything it cannot read that way (a zip on the path,
    a finder with distributions of its own, ``importlib.metadata`` already loaded
    and perhaps patched) answers "maybe", and the real lookup runs.
    """
    import sys
    from importlib.machinery import PathFinder

    if "importlib.metadata" in sys.modules:
        return True
    if any(
        hasattr(finder, "find_distributions") and finder is not PathFinder
        for finder in sys.meta_path
    ):
        return True
    # The speed trick: one scan per sys.path (a verify per small plan paid the scan
    # each time, most of its time); _declared_on is the plain reading, and a test
    # holds the two to the same answers. A distribution installed into a folder
    # already scanned, while the process runs, is not seen: start a new process.
    key = tuple(sys.path)
    found = _SCANNED.get(key)
    if found is None:
        found = _SCANNED[key] = _declared_on(key)
    return found


#: sys.path -> whether a distribution on it may declare a pass (_may_declare_passes).
_SCANNED: dict[tuple[str, ...], bool] = {}


def _declared_on(path: tuple[str, ...]) -> bool:
    """Whether a distribution in a folder of ``path`` declares a ``car_verify.passes``
    entry point (or might: a zip archive on the path)."""
    import os

    for entry in path:
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
    return dict(_passes())


def _passes() -> _Passes:
    """:func:`available_passes` itself, not a copy (for the readers in this module)."""
    global _registry, _builds
    if _registry is None:
        registry = _Passes()
        found: list[type[Pass]] = [*_builtin(), *_entry_points()]
        for cls in found:
            if cls.name in registry and registry[cls.name] is not cls:
                raise UsageError(f"two passes are called {cls.name!r}")
            try:
                if cls.new_codes:
                    register_codes(cls.new_codes, owner=cls.name)
            except Exception as err:
                if cls not in _declared_by:
                    raise
                raise UsageError(
                    f"pass entry point {_declared_by[cls]} declares codes that cannot be "
                    f"registered: {type(err).__name__}: {err}"
                ) from err
            registry[cls.name] = cls
        _builds += 1
        registry.build = _builds
        _registry = registry
    return _registry


def profiles_of(cls: type[Pass]) -> list[str]:
    """The profiles under which ``cls`` can report something: those whose column of
    the code table gives one of its codes a severity (every profile for a pass whose
    codes are its input's, the policies')."""
    return [p for p in PROFILES if _reports_under(cls, p)]


def _reports_under(cls: type[Pass], profile: ProfileName) -> bool:
    if cls.dynamic_codes or not cls.codes:
        return True
    return any(_severity_in(code, profile) is not None for code in cls.codes)


def _severity_in(code: str, profile: ProfileName) -> object:
    from ..base.codes import CODES

    spec = CODES.get(code)
    return "a code outside the table" if spec is None else spec.severity_in(profile)


def default_passes(
    profile: ProfileName, given: Callable[[Requirement], bool] = lambda _: False
) -> list[type[Pass]]:
    """The passes a run under ``profile`` gets when it names none: the default ones,
    and those whose ``when_given`` input ``given`` says is there. Every pass runs
    under every profile; a built-in one none of whose codes the profile reports
    (``references`` under car, whose order has no dependencies) is left out of its
    default run, and runs when named. An installed one is always handed over, so
    nothing installed is dropped unsaid."""
    builtin = _builtin_set()
    return [
        cls
        for cls in _passes().values()
        if (cls not in builtin or _reports_under(cls, profile))
        and (cls.default or (cls.when_given is not None and given(cls.when_given)))
    ]


def resolve_passes(selection: Iterable[str | Pass | type[Pass]] | None, ctx: Context) -> list[Pass]:
    """Pass instances for a selection of names, classes or instances. None: the default
    passes of ``ctx``'s profile, plus those whose ``when_given`` input ``ctx`` has. A
    ``str`` is one name or several separated by commas (``"strips,loops"``), as
    ``--passes`` takes them."""
    registry = _passes()
    if isinstance(selection, str):
        selection = [name.strip() for name in selection.split(",") if name.strip()]
    elif selection is not None and not isinstance(selection, Iterable):
        raise UsageError(
            f"passes must be pass names (or Pass classes or instances), got {shown(selection)}"
        )
    if selection is None:
        given = frozenset(r for r in _inputs_asked(registry.build) if ctx.has(r))
        defaults, built = _default_instances(ctx.profile, given, registry.build)
        if built:  # instances all (asking each with the ABC's isinstance cost more)
            return cast("list[Pass]", list(defaults))
        return [_built(p) if isinstance(p, type) else p for p in defaults]
    chosen: list[Pass] = []
    for item in selection:
        if isinstance(item, Pass):
            chosen.append(item)
        elif isinstance(item, type) and issubclass(item, Pass):
            if item.new_codes:
                register_codes(item.new_codes, owner=item.name)
            chosen.append(item())
        elif isinstance(item, str) and item in registry:
            chosen.append(_built(registry[item]))
        else:
            known = ", ".join(sorted(registry))
            said = repr(item) if isinstance(item, str) else shown(item)
            raise UsageError(f"unknown pass {said}; known passes: {known}")
    return chosen


def registry_build() -> int:
    """Which build of the registry is in force (a default selection chosen from an
    earlier one is chosen again)."""
    return _passes().build


def default_selection(
    profile: ProfileName, has: Callable[[Requirement], bool]
) -> tuple[Pass, ...] | None:
    """The instances :func:`resolve_passes` gives a default run under ``profile`` whose
    inputs ``has`` says are there, where all of them are built-in ones (kept between
    runs: read them, never change them); None where an installed pass is among them
    (it is built anew for each run: the plain runner's)."""
    registry = _passes()
    given = frozenset(r for r in _inputs_asked(registry.build) if has(r))
    defaults, built = _default_instances(profile, given, registry.build)
    return cast("tuple[Pass, ...]", defaults) if built else None


@functools.lru_cache(maxsize=8)
def _inputs_asked(build: int) -> tuple[Requirement, ...]:
    """The inputs whose presence adds a pass to a default run (their ``when_given``),
    once per build of the registry."""
    asked = (cls.when_given for cls in _passes().values())
    return tuple({r: None for r in asked if r is not None})


@functools.lru_cache(maxsize=64)
def _default_instances(
    profile: ProfileName, given: frozenset[Requirement], build: int
) -> tuple[tuple[Pass | type[Pass], ...], bool]:
    """The default passes of ``profile`` with inputs ``given``, chosen once per
    build of the registry: every verify of a small plan asked the
    code table of each pass. A built-in pass keeps no state between runs and is
    built once; an installed one is given as its class, built anew each run. And
    whether all of them are built ones."""
    builtin = _builtin_set()
    chosen = default_passes(profile, given.__contains__)
    return tuple(cls() if cls in builtin else cls for cls in chosen), set(chosen) <= builtin


def _built(cls: type[Pass]) -> Pass:
    """An instance of ``cls``. A pass an installed distribution declares that cannot
    be built (an abstract method left out, a constructor that wants arguments or
    raises) is a usage error naming its entry point, not an internal error."""
    if cls not in _declared_by:
        return cls()
    try:
        return cls()
    except Exception as err:
        raise UsageError(
            f"cannot build pass {cls.__name__} of entry point {_declared_by[cls]}: "
            f"{type(err).__name__}: {err}"
        ) from err
