"""The pytest plugin and ``car_verify.testing`` (issue 40): assertions on a plan
that fail with the findings in the command line's layout, a fixture, and
``--car-verify-profile``; run in a pytest of their own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from car_verify.testing import PlanCheckFailed, assert_finds, assert_valid

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "gated-deploy"
RACY = {
    "actions": [
        {"id": "a", "type": "tool_call", "tool": "t", "expected_effects": {"k": 1}},
        {"id": "b", "type": "tool_call", "tool": "u", "expected_effects": {"k": 2}},
    ]
}
COMPENSABLE = {
    "actions": [{"id": "a", "type": "tool_call", "tool": "t", "reversibility": "compensable"}]
}


def test_assert_valid_passes_a_good_plan_and_fails_a_bad_one_with_the_findings() -> None:
    state = json.loads((EXAMPLE / "state.json").read_text())
    result = assert_valid(
        EXAMPLE / "proposal.json", tools=EXAMPLE / "tools.json", initial_state=state
    )
    assert result.valid
    assert_valid(RACY)  # warnings pass by default
    with pytest.raises(PlanCheckFailed) as caught:
        assert_valid(RACY, fail_on="warning")
    message = str(caught.value)
    assert "warning[write-conflict] a: write conflict on 'k'" in message
    assert message.splitlines()[-1].startswith("valid: 0 errors, 1 warning")
    with pytest.raises(AssertionError, match=r"error\[missing-compensation\]"):
        assert_valid(COMPENSABLE)  # an error under car
    assert_valid(COMPENSABLE, profile="strict")  # a warning under strict


def test_assert_finds_names_what_it_found_instead() -> None:
    assert_finds(RACY, "write-conflict", action="a")
    with pytest.raises(PlanCheckFailed, match="no repeated-call; found:"):
        assert_finds(RACY, "repeated-call")
    with pytest.raises(PlanCheckFailed, match="is no finding code"):
        assert_finds(RACY, "write-conflicts")


@pytest.mark.parametrize("profile", ["car", "strict"])
def test_the_docs_racy_plan_example_passes_under_either_profile(
    pytester: pytest.Pytester, profile: str
) -> None:
    """docs/testing.md's write-conflict example named the earlier writer, which is
    where car places the conflict; under --car-verify-profile strict it failed."""
    import re

    page = (ROOT / "docs" / "testing.md").read_text()
    [example] = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "RACY_PLAN =" in b]
    pytester.makepyfile(test_racy=example)
    outcome = pytester.runpytest_inprocess(
        "--car-verify-profile", profile, "-p", "no:cacheprovider"
    )
    outcome.assert_outcomes(passed=2)


def test_the_plugin_gives_a_fixture_and_a_profile_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_agent=f"""
        PLAN = {COMPENSABLE!r}

        def test_plan(car_verify):
            car_verify.assert_valid(PLAN)
        """
    )
    failed = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(["*error[[]missing-compensation[]] a:*", "*profile car)*"])
    passed = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--car-verify-profile", "strict"
    )
    passed.assert_outcomes(passed=1)
    passed.stdout.fnmatch_lines(["car-verify profile: strict"])


def test_a_semantics_object_reaches_verify_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """``profile=`` takes what every ``profile=`` does (``ProfileLike``): a Semantics
    object, given to an assertion or as the default, is the one verify runs under
    (a third party's profile is not read as the name of a built-in one)."""
    from car_verify import api, testing
    from car_verify.base.errors import UsageError
    from car_verify.semantics import Profile, semantics_of

    strict = semantics_of("strict")
    seen: list[object] = []
    real = api.verify

    def spy(proposal: object, **options: object) -> api.VerificationResult:
        seen.append(options["profile"])
        return real(proposal, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(api, "verify", spy)
    assert_valid(RACY, profile=strict)
    try:
        testing.set_default_profile(strict)
        assert_valid(RACY)
        testing.set_default_profile("strict")
        assert_valid(RACY)
    finally:
        testing.set_default_profile(None)
    assert seen[0] is strict and seen[1] is strict
    assert seen[2] is Profile.STRICT
    with pytest.raises(UsageError, match="unknown profile"):
        testing.set_default_profile("bogus")  # type: ignore[arg-type]
