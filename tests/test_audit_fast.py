"""The audit's check (:func:`car_verify.corpora.audit.checked`: the default passes by
the fused kernel, the policies pass beside it) gives the findings table and verdict
of its plain twin (:func:`~car_verify.corpora.audit.checked_plain`: ``verify`` with
the policies, the plain runner), on generated runs under both profiles."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from car_oracle import crowded_proposals
from car_oracle import proposals as car_proposals
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import proposals as strict_proposals

from car_verify.base.config import ProfileName
from car_verify.corpora.audit import AuditSettings, Checked, _engine, checked, checked_plain

#: Policies of every kind a run's calls meet: trace rules (with and without an
#: outcome, a parameter test), denied tools and parameters, keywords, rate limits.
POLICIES = {
    "trace": '[[trace_rule]]\nname = "t-first"\nrule = "u only after t succeeded"\n',
    "mixed": (
        'deny_tool = ["zz"]\n'
        'deny_keyword = ["DROP"]\n'
        '[[deny_tool_param]]\ntool = "t"\nparam = "p"\ncontains = "x"\n'
        '[[rate_limit_tool]]\ntool = "u"\nmax_calls = 1\ninterval_secs = 60\n'
        '[[trace_rule]]\nname = "never-v-after-u"\nrule = "never v after u"\n'
        '[[trace_rule]]\nname = "param"\nrule = \'never t where p contains "a" after u failed\'\n'
    ),
    "compensation": 'deny_tool = ["undo"]\n',
}


@st.composite
def runs(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["car", "crowded", "strict"]))
    if kind == "car":
        return draw(car_proposals(max_actions=8))
    if kind == "crowded":
        return draw(crowded_proposals())
    return draw(strict_proposals())


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, Any]]:
    out = {}
    for name, text in POLICIES.items():
        folder: Path = tmp_path_factory.mktemp(name)
        (folder / "rules.toml").write_text(text)
        out[name] = (str(folder), _engine(AuditSettings(policies=str(folder))))
    return out


def table(result: Any) -> tuple[bool, list[tuple[Any, ...]]]:
    """What the audit writes of a check: the verdict and each finding's row."""
    return result.valid, [
        (i.index, i.action_id, i.code, i.severity.value, i.tier.value, i.message)
        for i in result.issues
    ]


@settings(max_examples=60, deadline=None)
@given(
    document=runs(),
    profile=st.sampled_from(["car", "strict"]),
    which=st.sampled_from(sorted(POLICIES)),
)
def test_the_fast_check_gives_the_plain_findings_table(
    engines: dict[str, tuple[str, Any]], document: dict[str, Any], profile: ProfileName, which: str
) -> None:
    folder, engine = engines[which]
    audit = AuditSettings(profile=profile, policies=folder)
    try:
        plain = table(checked_plain(copy.deepcopy(document), audit, engine))
    except Exception as err:  # an input the plain path refuses: the fast one does too
        with pytest.raises(type(err)):
            checked(copy.deepcopy(document), audit, engine)
        return
    assert table(checked(copy.deepcopy(document), audit, engine)) == plain


def test_the_fast_check_runs_beside_the_kernel(engines: dict[str, tuple[str, Any]]) -> None:
    """The faster path is the one taken where it applies (else the test above
    compares the plain path with itself), and it finds what the rules say."""
    folder, engine = engines["trace"]
    document = {
        "actions": [
            {"id": "a", "type": "tool_call", "tool": "u"},
            {"id": "b", "type": "tool_call", "tool": "t", "dependencies": ["a"]},
        ]
    }
    profiles: tuple[ProfileName, ...] = ("car", "strict")
    for profile in profiles:
        audit = AuditSettings(profile=profile, policies=folder)
        fast = checked(copy.deepcopy(document), audit, engine)
        assert isinstance(fast, Checked)
        assert "trace_rule:t-first" in [i.code for i in fast.issues]
        assert not fast.valid
        assert table(fast) == table(checked_plain(copy.deepcopy(document), audit, engine))
    labelled = AuditSettings(policies=folder, labels={"t": {"capability": "read"}})
    assert not isinstance(checked(copy.deepcopy(document), labelled, engine), Checked)
