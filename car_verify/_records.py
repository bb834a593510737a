"""Frozen records that are cheap to make.

A frozen dataclass's ``__init__`` sets each field with ``object.__setattr__``, a
generic attribute lookup per field that the frozen ``__setattr__`` forces. A record
made once per finding or per blocked action pays it thousands of times in a large
plan: making an :class:`~car_verify.findings.Issue` took 2.8 us, 1.9 us with the
``__init__`` that :func:`quick_init` writes, which calls each slot's own descriptor.
Everything else about the class (immutability, equality, hashing, ``repr``) is the
dataclass's own.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__all__ = ["quick_init"]

T = TypeVar("T")


def quick_init(cls: type[T]) -> type[T]:
    """Replace the ``__init__`` of a frozen, slotted dataclass by one that fills the
    slots through their descriptors: same signature, defaults and factories.

    Apply it outside ``@dataclass(frozen=True, slots=True)``. A class with
    ``__post_init__`` or a field left out of ``__init__`` is refused.
    """
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__} is not a frozen, slotted dataclass")
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if hasattr(cls, "__post_init__") or any(not f.init for f in fields):
        raise TypeError(f"{cls.__name__} needs the dataclass's own __init__")
    env: dict[str, Any] = {"NOTHING": _NOTHING}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for f in fields:
        name = f.name
        env[f"set_{name}"] = cls.__dict__[name].__set__
        if f.default is not dataclasses.MISSING:
            env[f"default_{name}"] = f.default
            param = f"{name}=default_{name}"
            value = name
        elif f.default_factory is not dataclasses.MISSING:
            env[f"factory_{name}"] = f.default_factory
            param = f"{name}=NOTHING"
            value = f"factory_{name}() if {name} is NOTHING else {name}"
        else:
            param = value = name
        (keyword if f.kw_only else positional).append(param)
        body.append(f"    set_{name}(self, {value})")
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    source = f"def __init__({signature}):\n" + ("\n".join(body) or "    pass") + "\n"
    exec(source, env)
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls


class _Nothing:
    """A factory field's default: its factory runs."""

    def __repr__(self) -> str:
        return "<factory>"


_NOTHING = _Nothing()
