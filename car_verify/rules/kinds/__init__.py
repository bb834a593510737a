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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import (
    allow_command,
    allow_tool_param,
    deny_command,
    deny_keyword,
    deny_tool,
    deny_tool_param,
    deny_tool_param_matching,
    rate_limit_tool,
    registered,
    trace_rule,
)
from ._base import ALLOW, Answer, Call, Decision, Example, Key, Kind, Needs, Reader, Step

__all__ = [
    "ALLOW",
    "FILE_KINDS",
    "KINDS",
    "REGISTERED",
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
]

#: Every kind, in the order the engine asks them.
KINDS: tuple[Kind[Any], ...] = (
    *registered.KINDS,
    deny_tool.KIND,
    deny_keyword.KIND,
    deny_tool_param.KIND,
    allow_tool_param.KIND,
    deny_tool_param_matching.KIND,
    deny_command.KIND,
    allow_command.KIND,
    rate_limit_tool.KIND,
    trace_rule.KIND,
)

#: The kinds a policy file holds, by their key.
FILE_KINDS: Mapping[str, Kind[Any]] = {k.key: k for k in KINDS if not k.registered}
#: The kinds ``register_policy`` registers, by their registered kind.
REGISTERED: Mapping[str, Any] = {k.key: k for k in KINDS if k.registered}
_BY_NAME = {k.name: k for k in KINDS}


def by_name(name: str) -> Kind[Any]:
    """The kind of that registry name (``deny_tool``, ``registered require_state``)."""
    return _BY_NAME[name]
