"""quick_init: a frozen record made through its slots is the record the dataclass makes."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from car_verify._records import quick_init
from car_verify.findings import Issue, Severity, Tier
from car_verify.walk import Cause


def record_class() -> Any:
    """A frozen record with every kind of field: positional, defaulted, made by a
    factory, keyword-only. A new class each call: quick_init changes the one it gets."""

    @dataclasses.dataclass(frozen=True, slots=True)
    class Record:
        a: int
        b: str = "b"
        c: list[int] = dataclasses.field(default_factory=list)
        d: int = dataclasses.field(default=4, kw_only=True)

    return Record


Plain = record_class()
Quick = quick_init(record_class())


def as_tuple(record: Any) -> tuple[Any, ...]:
    return tuple(getattr(record, f.name) for f in dataclasses.fields(record))


@given(
    st.integers(),
    st.none() | st.text(max_size=3),
    st.none() | st.lists(st.integers(), max_size=3),
    st.none() | st.integers(),
    st.booleans(),
)
def test_quick_init_makes_what_the_dataclass_makes(
    a: int, b: str | None, c: list[int] | None, d: int | None, by_name: bool
) -> None:
    """Every combination of given and defaulted fields, by position or by name."""
    given_fields: dict[str, Any] = {"b": b, "c": c}
    given_fields = {k: v for k, v in given_fields.items() if v is not None}
    if by_name:
        args: tuple[Any, ...] = ()
        kwargs: dict[str, Any] = {"a": a, **given_fields}
    else:
        args = (
            a,
            *([b] if b is not None else []),
            *([c] if b is not None and c is not None else []),
        )
        kwargs = {} if b is not None else {k: v for k, v in given_fields.items() if k == "c"}
    if d is not None:
        kwargs["d"] = d
    assert as_tuple(Quick(*args, **kwargs)) == as_tuple(Plain(*args, **kwargs))


def test_a_factory_runs_once_per_record() -> None:
    first, second = Quick(1), Quick(1)
    assert first.c == [] and first.c is not second.c


def test_the_record_stays_frozen_comparable_and_picklable() -> None:
    record = Quick(1, "x", [2], d=5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.a = 2  # type: ignore[misc]
    assert record == Quick(1, "x", [2], d=5) and record != Quick(1, "x", [2])
    same = [Issue("c", Severity.INFO, Tier.HEURISTIC, "m", "a", 1, "/x") for _ in range(2)]
    assert hash(same[0]) == hash(same[1])
    assert pickle.loads(pickle.dumps(same[0])) == same[0]
    assert repr(record).endswith("Record(a=1, b='x', c=[2], d=5)")


def test_the_signature_is_the_dataclass_one() -> None:
    with pytest.raises(TypeError):
        Quick()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Quick(1, "b", [], 4)  # type: ignore[misc]  # d is keyword-only
    with pytest.raises(TypeError):
        Quick(1, e=2)  # type: ignore[call-arg]


def test_the_hot_records_use_it() -> None:
    """Issue and Cause are made once per finding and per blocked action."""
    issue = Issue("write-conflict", Severity.WARNING, Tier.DECISION_PROCEDURE, "m", index=1)
    assert (issue.action_id, issue.index, issue.pointer) == (None, 1, "")
    assert Cause("missing-key", key="k").where == ()
    assert Issue.__init__.__qualname__ == "Issue.__init__"


def test_what_it_cannot_speed_up_is_refused() -> None:
    @dataclasses.dataclass(slots=True)
    class Mutable:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        a: int

        def __post_init__(self) -> None:
            pass

    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    for cls in (Mutable, Checked, NoSlots, int):
        with pytest.raises(TypeError):
            quick_init(cls)
