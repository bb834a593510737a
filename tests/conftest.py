from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))

settings.register_profile(
    "default", deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci", deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow]
)
# A long search for a bug hunt, not for CI: pytest --hypothesis-profile=deep
settings.register_profile(
    "deep", deadline=None, max_examples=3000, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci" if os.environ.get("CI") else "default")


@pytest.fixture
def strict_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line under the strict profile (SEMANTICS sections 1-8): the tests
    written for those sections say so through ``$CAR_VERIFY_PROFILE``."""
    monkeypatch.setenv("CAR_VERIFY_PROFILE", "strict")


#: Set when a test ends: the tools a test abandoned (a timeout) wait on it, so that
#: their threads end then and do not run on into later tests.
RELEASE = threading.Event()


@pytest.fixture
def abandoned_tools_end() -> Iterator[threading.Event]:
    """An event for the tools a test abandons to wait on; on teardown it is set and
    every abandoned tool thread is joined."""
    RELEASE.clear()
    yield RELEASE
    RELEASE.set()
    for thread in threading.enumerate():
        if thread.name.startswith("car-verify tool"):
            thread.join(timeout=10)
