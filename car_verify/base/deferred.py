"""What a result derives on first use from a layer above its own: its repairs.

A verification result lives in the api layer; the repairs of its findings are
derived above it (``car_verify.deciders.repair``: they re-verify each fix and
ask z3 whether an ordering keeps the end state). As the Jupyter views do
(:mod:`car_verify.base.display`), the deriver registers itself here from above,
by name, and a result asks for it by that name when its ``fixes`` are first
read: no module below names the deriver's module. The package (``car_verify``,
the top layer, imported before any of its modules) hands this module a loader
that imports the derivers; the first lookup calls it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["deriver", "register_deriver", "register_derivers_loader"]

_DERIVERS: dict[str, Callable[..., Any]] = {}
#: What imports the derivers, from above (set by the package).
_LOADERS: list[Callable[[], object]] = []


def register_derivers_loader(load: Callable[[], object]) -> None:
    """``load()`` registers derivers (importing the module that holds them); called
    on the first lookup of a name no deriver has."""
    _LOADERS.append(load)


def register_deriver(name: str, derive: Callable[..., Any]) -> None:
    """Derive ``name`` (``"fixes"``) with ``derive``."""
    _DERIVERS[name] = derive


def deriver(name: str) -> Callable[..., Any]:
    """The deriver registered under ``name``; a programming error when there is none."""
    while name not in _DERIVERS and _LOADERS:
        _LOADERS.pop(0)()  # the derivers register themselves as their module loads
    found = _DERIVERS.get(name)
    if found is None:
        raise LookupError(f"no deriver of {name!r} is registered")
    return found
