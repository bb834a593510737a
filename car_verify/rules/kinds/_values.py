"""What a content rule reads of a parameter, and what the model of ``policy diff``
needs of a rule: below both the kinds and the model (:mod:`car_verify.rules.policy_model`),
which share them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["NO_NEEDS", "Needs", "coerce", "strings_of", "texts_of"]


# --- what a content rule reads of a parameter ----------------------------------------------------


def coerce(value: Any) -> str:
    """A parameter's string form: a string as it is, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def strings_of(value: Any) -> list[str]:
    """Every string inside a parameter's value as it is (nested values and object
    keys alike): a content rule that looked only at the value's JSON text would miss
    a string whose quote, backslash or control character JSON escapes there."""
    out: list[str] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, Mapping):
            for key, item in node.items():
                if isinstance(key, str):
                    out.append(key)
                stack.append(item)
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return out


def texts_of(value: Any) -> list[str]:
    """What a content rule reads of a parameter: its string form (the runtime's
    reading) and, for anything that is not a string, every string inside it."""
    if isinstance(value, str):
        return [value]
    return [coerce(value), *strings_of(value)]


# --- what the model of policy diff needs of a rule ----------------------------------------------


@dataclass(frozen=True, slots=True)
class Needs:
    """The slots a rule's z3 condition reads (:class:`~car_verify.rules.policy_model.Model`):
    ``params``, per parameter the values other than strings it compares with (its
    ``equals`` value); ``text``, the parameters it reads as text; ``state``, per
    state key the values it compares with; ``every_param``: it reads every
    parameter's text (a keyword)."""

    params: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    text: frozenset[str] = frozenset()
    state: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    every_param: bool = False


NO_NEEDS: Final = Needs()
