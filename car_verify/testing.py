"""Assertions on the plans an agent emits, for its tests (the pytest plugin's
fixture calls these; they work in any test runner).

.. code-block:: python

    from car_verify.testing import assert_valid

    def test_the_agent_plans_a_safe_deploy(agent):
        plan = agent.propose("deploy billing to staging")
        assert_valid(plan, tools="tools.json", policies=".car/policies")

A failure is an :class:`AssertionError` whose message is the findings in the
command line's layout (``severity[code] action: message``, then the verdict), so
a failing test reads as ``car-verify verify`` would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .api import VerificationResult
    from .semantics import ProfileLike

__all__ = ["PlanCheckFailed", "assert_finds", "assert_valid", "set_default_profile"]

FailOn = Literal["error", "warning", "info"]
#: The profile an assertion uses when none is given (the pytest plugin's
#: ``--car-verify-profile``); None: the usual resolution (env, configuration, car).
_default_profile: ProfileLike = None


class PlanCheckFailed(AssertionError):
    """A plan did not pass: the message holds the findings; ``result`` the whole answer."""

    def __init__(self, message: str, result: VerificationResult) -> None:
        super().__init__(message)
        self.result = result


def set_default_profile(profile: ProfileLike) -> None:
    """The profile the assertions use when a call names none: a profile's name or
    its Semantics object (None: resolve as the command line does:
    ``$CAR_VERIFY_PROFILE``, the configuration, then ``car``)."""
    global _default_profile
    if isinstance(profile, str):
        from .semantics import profile_of

        profile = profile_of(profile)  # an unknown name is an error here, not later
    _default_profile = profile


def _verify(proposal: Any, profile: ProfileLike, **options: Any) -> VerificationResult:
    from .api import verify
    from .semantics.profiles import resolve_profile

    chosen = profile if profile is not None else _default_profile
    if chosen is None or isinstance(chosen, str):  # a name, or the run's own resolution
        chosen = resolve_profile(chosen)[0]
    return verify(proposal, profile=chosen, **options)


def _message(result: VerificationResult, issues: list[Any], what: str) -> str:
    from .reporters.text import lines, verdict_line

    return f"{what}\n" + lines(issues, verdict_line(result))


def assert_valid(
    proposal: Any,
    *,
    tools: Any = None,
    policies: Any = None,
    initial_state: Any = None,
    profile: ProfileLike = None,
    fail_on: FailOn = "error",
    **options: Any,
) -> VerificationResult:
    """Verify ``proposal`` (a dict, JSON text, a path, an ActionProposal) and fail
    when it has a finding at ``fail_on`` or worse (``"error"``, the default: the
    plan is invalid; ``"warning"``: a warning fails too). ``tools``, ``policies``
    and ``initial_state`` are ``car_verify.verify``'s; so are further options
    (``max_actions``, ``labels``, ...). Returns the result when it passes."""
    result = _verify(
        proposal, profile, tools=tools, policies=policies, initial_state=initial_state, **options
    )
    from .base.findings import Severity

    floor = Severity(fail_on).rank  # as lint's --fail-on
    failing = [i for i in result.issues if i.severity.rank >= floor]
    if failing or not result.valid:
        shown = failing or list(result.issues)
        raise PlanCheckFailed(
            _message(result, shown, f"the plan has findings at {fail_on} or worse:"), result
        )
    return result


def assert_finds(
    proposal: Any,
    code: str,
    *,
    action: str | None = None,
    tools: Any = None,
    policies: Any = None,
    initial_state: Any = None,
    profile: ProfileLike = None,
    **options: Any,
) -> VerificationResult:
    """Fail unless verifying ``proposal`` reports ``code`` (a finding code, or a
    policy rule's name), on ``action`` when given: for tests that a bad plan is
    caught. Returns the result."""
    from .base.codes import CODES

    result = _verify(
        proposal, profile, tools=tools, policies=policies, initial_state=initial_state, **options
    )
    found = [
        i for i in result.issues if i.code == code and (action is None or i.action_id == action)
    ]
    if not found:
        where = f" on {action!r}" if action is not None else ""
        known = "" if code in CODES or ":" in code else f" ({code!r} is no finding code)"
        raise PlanCheckFailed(
            _message(result, list(result.issues), f"no {code}{where}{known}; found:"), result
        )
    return result
