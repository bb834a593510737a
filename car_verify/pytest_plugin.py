"""The pytest plugin (entry point ``pytest11``): ``--car-verify-profile`` and the
``car_verify`` fixture, for teams whose tests assert on the plans their agent emits.

.. code-block:: python

    def test_the_agent_plans_a_safe_deploy(agent, car_verify):
        car_verify.assert_valid(agent.propose("deploy to staging"), tools="tools.json")

The plugin imports nothing of car-verify's until a test asks for the fixture:
loading it costs a pytest run no start-up time.
"""

from __future__ import annotations

from typing import Any

import pytest

__all__ = ["PlanChecker"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("car-verify", "car-verify: checking agent plans")
    group.addoption(
        "--car-verify-profile",
        choices=("car", "strict"),
        default=None,
        help="the profile car-verify's assertions use (default: $CAR_VERIFY_PROFILE, "
        "the configuration, then car)",
    )


def pytest_configure(config: pytest.Config) -> None:
    profile = config.getoption("car_verify_profile", None)
    if profile is not None:
        from .testing import set_default_profile

        set_default_profile(profile)


def pytest_unconfigure(config: pytest.Config) -> None:
    if config.getoption("car_verify_profile", None) is not None:
        from .testing import set_default_profile

        set_default_profile(None)


def pytest_report_header(config: pytest.Config) -> str | None:
    profile = config.getoption("car_verify_profile", None)
    return None if profile is None else f"car-verify profile: {profile}"


class PlanChecker:
    """The fixture: :mod:`car_verify.testing`'s assertions with the run's defaults
    (``tools``, ``policies`` given once for a test, the profile from the option)."""

    def __init__(self, **defaults: Any) -> None:
        self.defaults = defaults

    def with_defaults(self, **defaults: Any) -> PlanChecker:
        """A checker that passes these (``tools=``, ``policies=``, ...) to every call."""
        return PlanChecker(**{**self.defaults, **defaults})

    def assert_valid(self, proposal: Any, **options: Any) -> Any:
        from .testing import assert_valid

        return assert_valid(proposal, **{**self.defaults, **options})

    def assert_finds(self, proposal: Any, code: str, **options: Any) -> Any:
        from .testing import assert_finds

        return assert_finds(proposal, code, **{**self.defaults, **options})


@pytest.fixture
def car_verify() -> PlanChecker:
    """Assertions on agent plans: ``car_verify.assert_valid(plan, tools=...)``,
    ``car_verify.assert_finds(plan, "write-conflict")``."""
    return PlanChecker()
