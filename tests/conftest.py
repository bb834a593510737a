from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))

# A developer's run (the README's test command) is short; CI (``CI`` set) searches
# longer and runs the slow end-to-end tests too.
settings.register_profile(
    "default", deadline=None, max_examples=80, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci", deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow]
)
# A long search for a bug hunt, not for CI: pytest --hypothesis-profile=deep
settings.register_profile(
    "deep", deadline=None, max_examples=3000, suppress_health_check=[HealthCheck.too_slow]
)
IN_CI = bool(os.environ.get("CI"))
settings.load_profile("ci" if IN_CI else "default")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--run-slow", action="store_true", help="run the slow end-to-end tests (as CI does)"
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slow: a slow end-to-end test, run under CI or with --run-slow"
    )
    config.addinivalue_line(
        "markers",
        "oracle: compares with the runtime itself (car_runtime); CI runs these again "
        "against the newest runtime version (pytest -m oracle)",
    )


def _slow_runs(config: pytest.Config) -> bool:
    return IN_CI or bool(config.getoption("--run-slow"))


def pytest_report_header(config: pytest.Config) -> str:
    current = settings.default
    examples = current.max_examples if current is not None else "?"
    slow = "run" if _slow_runs(config) else "skipped (CI=1 or --run-slow runs them)"
    return f"car-verify: hypothesis max_examples={examples}; slow tests {slow}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A test that calls the runtime is an oracle test: its module asks for it by
    # car_oracle.runtime() or imports car_runtime.
    asks: dict[str, bool] = {}
    for item in items:
        path = str(item.path)
        if path not in asks:
            source = item.path.read_text(encoding="utf-8")
            asks[path] = "runtime()" in source or "car_runtime" in source
        if asks[path]:
            item.add_marker(pytest.mark.oracle)
    if _slow_runs(config):
        return
    skip = pytest.mark.skip(reason="slow end-to-end test: CI=1 or --run-slow runs it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


#: Variables of the machine that change what car-verify does: none reaches a test
#: unless the test sets it.
_OUTSIDE = (
    "CAR_VERIFY_PROFILE",
    "CAR_VERIFY_DOCS_URL",
    "CAR_VERIFY_DEBUG",
    "CLAUDE_PROJECT_DIR",
    "NO_COLOR",
    "FORCE_COLOR",
)


@pytest.fixture(autouse=True)
def _hermetic(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing above a test's own temporary folder changes its result: the folder
    that holds every test's temporary folders is marked as a repository root (the
    searches for ``.car/policies`` and configuration stop there, so a
    ``.car/policies`` in ``/tmp`` or the home folder is never found), the hook's
    state goes to a folder of the run's own, and the variables above are unset."""
    base = tmp_path_factory.getbasetemp()
    (base / ".git").mkdir(exist_ok=True)
    monkeypatch.setenv("XDG_STATE_HOME", str(base / "xdg-state"))
    for name in _OUTSIDE:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def strict_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line under the strict profile (docs/semantics.md §1-8): the tests
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
