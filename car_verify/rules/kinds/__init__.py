"""The rule kinds: one module each, and the registry the engine loops over.

Each module declares one kind (:class:`~car_verify.rules.kinds._base.Kind`): its
strict reader (the keys of its TOML table), its decision on a call, the
parameters it reads, its model for ``policy diff``, and its documentation with
examples that run as tests (``tests/test_rule_kinds.py``) and are rendered into
``docs/rules.md``. :data:`KINDS` is the registry, in the order the engine asks
the rules of one call (the names of a call's denials come in this order): the
registered rules first, then the file kinds, rate limits last among the rules of
one call, trace rules after them all. Nothing else names a kind: the engine, the
reader, ``policy diff`` and ``lint``, the reference gate of the tests and the
documentation loop over this tuple.

The registry names each kind by its key and the module that declares it
(:data:`FILE_MODULES`), so that a caller that holds rules of a few kinds imports
only their modules (:func:`file_kind`: the hook's start, issue 61); :data:`KINDS`,
:data:`FILE_KINDS` and :data:`REGISTERED` import every module on first use, and
``tests/test_hook_startup.py`` holds the lazy registry to them.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._base import ALLOW, Answer, Call, Decision, Example, Key, Kind, Needs, Reader, Step

__all__ = [
    "ALLOW",
    "FILE_KEYS",
    "FILE_KINDS",
    "FILE_MODULES",
    "KINDS",
    "REGISTERED",
    "REGISTERED_KEYS",
    "Answer",
    "Call",
    "Decision",
    "Example",
    "Key",
    "Kind",
    "Needs",
    "Reader",
    "Step",
    "by_name",
    "file_kind",
    "registered_kind",
]

#: Each file kind's key and the module that declares it (its ``KIND``), in the
#: order the engine asks them (after the registered rules).
FILE_MODULES: Mapping[str, str] = {
    "deny_tool": "deny_tool",
    "deny_keyword": "deny_keyword",
    "deny_tool_param": "deny_tool_param",
    "allow_tool_param": "allow_tool_param",
    "deny_tool_param_matching": "deny_tool_param_matching",
    "deny_command": "deny_command",
    "allow_command": "allow_command",
    "rate_limit_tool": "rate_limit_tool",
    "trace_rule": "trace_rule",
}
#: The keys of the file kinds, in the registry's order.
FILE_KEYS: tuple[str, ...] = tuple(FILE_MODULES)
#: The kinds ``register_policy`` registers (module ``registered``), by their key.
REGISTERED_KEYS: tuple[str, ...] = (
    "deny_tool",
    "deny_tool_param",
    "require_state",
    "deny_tool_callback",
)

_FILE: dict[str, Kind[Any]] = {}


def file_kind(key: str) -> Kind[Any]:
    """The file kind of ``key`` (KeyError: none), its module imported on first use."""
    kind = _FILE.get(key)
    if kind is None:
        module = importlib.import_module(f"{__name__}.{FILE_MODULES[key]}")
        kind = _FILE[key] = module.KIND
    return kind


if TYPE_CHECKING:
    #: Every kind, in the order the engine asks them.
    KINDS: tuple[Kind[Any], ...]
    #: The kinds a policy file holds, by their key.
    FILE_KINDS: Mapping[str, Kind[Any]]
    #: The kinds ``register_policy`` registers, by their registered kind.
    REGISTERED: Mapping[str, Any]

_ALL: dict[str, Any] = {}


def _every() -> dict[str, Any]:
    """The whole registry, every module imported (the plain version of
    :func:`file_kind`)."""
    if not _ALL:
        from . import registered

        kinds: tuple[Kind[Any], ...] = (*registered.KINDS, *map(file_kind, FILE_KEYS))
        _ALL["KINDS"] = kinds
        _ALL["FILE_KINDS"] = {k.key: k for k in kinds if not k.registered}
        _ALL["REGISTERED"] = {k.key: k for k in kinds if k.registered}
        _ALL["_BY_NAME"] = {k.name: k for k in kinds}
    return _ALL


def __getattr__(name: str) -> Any:
    if name in ("KINDS", "FILE_KINDS", "REGISTERED"):
        return _every()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def registered_kind(key: str) -> Any:
    """The registered kind of ``key`` (KeyError: none)."""
    return _every()["REGISTERED"][key]


def by_name(name: str) -> Kind[Any]:
    """The kind of that registry name (``deny_tool``, ``registered require_state``)."""
    kind: Kind[Any] = _every()["_BY_NAME"][name]
    return kind
