"""``paused_gc``: what verify does to the caller's garbage collector."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

import car_verify
from car_verify.values import PROMOTE_AT, paused_gc

#: Objects the interpreter itself keeps frozen (Python 3.12 freezes the tuples of its
#: static types at start-up); where there are any, ``paused_gc`` never moves anything.
INTERPRETER_FROZEN = gc.get_freeze_count()
moves = pytest.mark.skipif(
    INTERPRETER_FROZEN != 0, reason="the interpreter keeps objects of its own frozen"
)


class Node:
    """A tracked object that can sit on a reference cycle and be watched."""

    def __init__(self) -> None:
        self.other: object = None


@pytest.fixture(autouse=True)
def collector() -> Iterator[None]:
    """Each test starts with the collector on, and leaves it as it found it."""
    was_enabled = gc.isenabled()
    gc.enable()
    gc.collect()
    yield
    if INTERPRETER_FROZEN == 0:
        gc.unfreeze()  # what a test froze
    if not was_enabled:
        gc.disable()


def young() -> set[int]:
    return {id(o) for o in gc.get_objects(0)} | {id(o) for o in gc.get_objects(1)}


@moves
def test_what_a_large_block_keeps_leaves_the_young_generations() -> None:
    with paused_gc():
        kept = [[i] for i in range(PROMOTE_AT)]
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    assert gc.get_count()[0] < PROMOTE_AT  # no pending young collection over `kept`
    now_young = young()
    assert not any(id(item) in now_young for item in kept)
    assert gc.is_tracked(kept[0])


def test_a_small_block_is_left_to_the_young_collections(monkeypatch: pytest.MonkeyPatch) -> None:
    def counted() -> int:  # walks every frozen object: not worth it for a small block
        raise AssertionError("get_freeze_count called")

    monkeypatch.setattr(gc, "get_freeze_count", counted)
    with paused_gc():
        kept = [[i] for i in range(PROMOTE_AT // 10)]
    assert gc.isenabled()
    assert id(kept[0]) in young()  # collected young, as without the pause


def test_the_callers_young_cyclic_garbage_is_still_collected() -> None:
    node = Node()
    node.other = node  # a cycle: only the collector frees it
    watch = weakref.ref(node)
    del node
    assert watch() is not None
    with paused_gc():
        pass
    assert watch() is None  # collected on entry, not promoted to the oldest generation


def test_the_callers_frozen_objects_stay_frozen() -> None:
    if INTERPRETER_FROZEN == 0:
        gc.freeze()  # else the interpreter's own frozen objects play the caller's
    frozen = gc.get_freeze_count()
    with paused_gc():
        kept = [[i] for i in range(PROMOTE_AT)]
    assert gc.get_freeze_count() == frozen
    assert gc.isenabled()
    gc.collect(0)
    assert any(id(item) in young() for item in kept)  # no move without the freeze


def test_a_disabled_collector_stays_disabled_and_untouched() -> None:
    node = Node()
    node.other = node
    watch = weakref.ref(node)
    del node
    gc.disable()
    with paused_gc():
        kept = [[i] for i in range(1_000)]
    assert not gc.isenabled()
    assert watch() is not None  # no collection ran
    assert gc.get_count()[0] >= 1_000  # and nothing was moved
    assert kept


def test_an_exception_in_the_block_still_resumes_the_collector() -> None:
    with pytest.raises(RuntimeError), paused_gc():
        raise RuntimeError("boom")
    assert gc.isenabled()
    assert gc.get_freeze_count() == INTERPRETER_FROZEN


@pytest.mark.parametrize("profile", ["car", "strict"])
def test_the_library_leaves_the_collector_alone(profile: str) -> None:
    """verify, simulate and load never pause, freeze or collect: the collector is
    process-wide, and another thread's cycles would pile up (issue 22, item 13)."""
    from car_verify.policy import PolicyEngine, PolicySet

    seen: list[tuple[bool, int]] = []
    engine = PolicyEngine(PolicySet())
    engine.register_callback(
        "watch", lambda *_: seen.append((gc.isenabled(), gc.get_freeze_count())) or False
    )
    collections: list[str] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(f"gen{info['generation']}")

    actions = [{"id": f"a{i}", "type": "tool_call", "tool": "t"} for i in range(3)]
    gc.callbacks.append(record)
    try:
        car_verify.verify({"actions": actions}, policies=engine, profile=profile)
        car_verify.simulate({"actions": actions}, profile=profile)
        car_verify.load({"actions": actions})
    finally:
        gc.callbacks.remove(record)
    assert seen and all(enabled and frozen == INTERPRETER_FROZEN for enabled, frozen in seen)
    assert "gen1" not in collections and "gen2" not in collections  # no forced collection
