"""The library leaves the process's garbage collector alone (issue 22, item 13).

The collector is process-wide: pausing it inside ``verify`` let another thread's
reference cycles pile up (about 400 MB in 8 s). Nothing in the package may pause,
freeze or force it.
"""

from __future__ import annotations

import gc
import re
from pathlib import Path

import pytest

import car_verify

INTERPRETER_FROZEN = gc.get_freeze_count()
PACKAGE = Path(car_verify.__file__).parent


def test_no_module_of_the_package_drives_the_collector() -> None:
    calls = re.compile(r"\bgc\.(disable|enable|freeze|unfreeze|collect|set_threshold)\(")
    found = [
        f"{path.name}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if calls.search(line)
    ]
    assert found == []


@pytest.mark.parametrize("profile", ["car", "strict"])
def test_the_library_leaves_the_collector_alone(profile: str) -> None:
    """verify, simulate and load never pause, freeze or collect: the collector is
    process-wide, and another thread's cycles would pile up (issue 22, item 13)."""
    from car_verify.rules.policy import PolicyEngine, PolicySet

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
    # Warm up (the first call imports what it needs, which allocates a lot), then
    # start from an empty young generation, so that an automatic collection of an
    # older generation is not triggered by what earlier tests left behind.
    car_verify.verify({"actions": actions}, policies=engine, profile=profile)
    car_verify.simulate({"actions": actions}, profile=profile)
    seen.clear()
    gc.collect()
    gc.callbacks.append(record)
    try:
        car_verify.verify({"actions": actions}, policies=engine, profile=profile)
        car_verify.simulate({"actions": actions}, profile=profile)
        car_verify.load({"actions": actions})
    finally:
        gc.callbacks.remove(record)
    assert seen and all(enabled and frozen == INTERPRETER_FROZEN for enabled, frozen in seen)
    assert "gen1" not in collections and "gen2" not in collections  # no forced collection
