"""Plans and claims (issue 27, item 5): check_plan, evaluate_goal and
verify_tool_receipts give the runtime's answers, by hand and on generated inputs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from car_verify.base.errors import InputError
from car_verify.cli import main
from car_verify.plan.claims import check_plan, evaluate_goal, verify_tool_receipts
from tests.car_oracle import runtime

FACTS = st.sampled_from(["a", "b", "c", "d"])
facts = st.lists(FACTS, max_size=3)
steps = st.lists(
    st.fixed_dictionaries(
        {"id": st.sampled_from(["s1", "s2", "s3"])},
        optional={"preconditions": facts, "add_effects": facts, "del_effects": facts},
    ),
    max_size=4,
)
plans = st.fixed_dictionaries({}, optional={"initial": facts, "steps": steps, "goal": facts})

SETTINGS = settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])


def test_a_plan_by_hand() -> None:
    report = check_plan(
        {
            "initial": ["a"],
            "steps": [
                {"id": "s1", "preconditions": ["a"], "add_effects": ["b"], "del_effects": ["a"]},
                {"id": "s2", "preconditions": ["a", "c"], "add_effects": ["d"]},
            ],
            "goal": ["d", "b", "e"],
        }
    ).to_dict()
    assert [(d["kind"], d.get("step"), d["fact"]) for d in report["defects"]] == [
        ("unmet_precondition", "s2", "a"),
        ("unmet_precondition", "s2", "c"),
        ("goal_not_achieved", None, "e"),
    ]
    assert report["final_state"] == ["b", "d"]  # an unmet step's effects still apply
    both = check_plan(
        {"initial": [], "steps": [{"id": "s", "add_effects": ["b"], "del_effects": ["b"]}]}
    )
    assert both.final_state == ["b"]  # the addition wins
    with pytest.raises(InputError, match=r"steps\[0\]: missing field 'id'"):
        check_plan({"steps": [{}]})
    with pytest.raises(InputError, match=r"steps\[0\]\.add: unknown field"):
        check_plan({"steps": [{"id": "s", "add": ["x"]}]})


@SETTINGS
@given(plans)
def test_check_plan_agrees_with_the_runtime(request: dict[str, Any]) -> None:
    rt = runtime()
    assert check_plan(request).to_dict() == json.loads(rt.check_plan(json.dumps(request)))


leaf = st.one_of(
    st.fixed_dictionaries(
        {"kind": st.sampled_from(["tool_receipts_grounded", "plan_achieved", "state_consistent"])}
    ),
    st.fixed_dictionaries(
        {
            "kind": st.just("state_predicate"),
            "key": st.sampled_from(["k", "j", "it's"]),
            "equals": st.sampled_from([1, 1.0, "x", None, [1, {"b": 1, "a": 2}], 1e20, True]),
        }
    ),
    st.fixed_dictionaries(
        {
            "kind": st.just("command"),
            "id": st.sampled_from(["c", "d"]),
            "expect_exit": st.integers(-1, 2),
        }
    ),
    st.fixed_dictionaries({"kind": st.just("model_judge"), "id": st.sampled_from(["j", "m"])}),
)
conditions = st.recursive(
    leaf,
    lambda inner: st.fixed_dictionaries(
        {"kind": st.sampled_from(["all_of", "any_of"]), "conditions": st.lists(inner, max_size=3)}
    ),
    max_leaves=6,
)
inputs = st.fixed_dictionaries(
    {},
    optional={
        "receipts_grounded": st.booleans(),
        "plan_achieved": st.booleans(),
        "state_consistent": st.booleans(),
        "state": st.dictionaries(
            st.sampled_from(["k", "j", "it's"]),
            st.sampled_from([1, 1.0, 2, "x", "y", None, [1, {"a": 2, "b": 1}], 1e20]),
        ),
        "command_exits": st.dictionaries(st.sampled_from(["c", "d"]), st.integers(-1, 2)),
        "model_verdicts": st.dictionaries(st.sampled_from(["j", "m"]), st.booleans()),
    },
)


def test_goals_by_hand() -> None:
    either = [{"kind": "model_judge", "id": "j"}, {"kind": "plan_achieved"}]
    judged = evaluate_goal(
        {"condition": {"kind": "any_of", "conditions": either},
         "inputs": {"model_verdicts": {"j": True}, "plan_achieved": True}}
    )  # fmt: skip
    assert judged.met and judged.grounded  # a grounded condition is met too
    alone = evaluate_goal(
        {"condition": {"kind": "all_of", "conditions": [{"kind": "model_judge", "id": "j"}]},
         "inputs": {"model_verdicts": {"j": True}}}
    )  # fmt: skip
    assert alone.met and not alone.grounded
    missing = evaluate_goal({"condition": {"kind": "state_consistent"}, "inputs": {}})
    assert (
        not missing.met and missing.reason == "state consistency was not gathered"
    )  # fails closed
    with pytest.raises(InputError, match=r"condition\.kind: unknown goal kind 'nope'"):
        evaluate_goal({"condition": {"kind": "nope"}, "inputs": {}})


@SETTINGS
@given(conditions, inputs)
def test_evaluate_goal_agrees_with_the_runtime(
    condition: dict[str, Any], gathered: dict[str, Any]
) -> None:
    rt = runtime()
    request = {"condition": condition, "inputs": gathered}
    assert evaluate_goal(request).to_dict() == json.loads(rt.evaluate_goal(json.dumps(request)))


TOOLS = st.sampled_from(["search", "email", "deploy"])
CALLS = st.sampled_from(["c1", "c2", "c3"])
claims = st.lists(
    st.fixed_dictionaries(
        {"kind": st.sampled_from(["invoked", "count", "absence"]), "tool": TOOLS},
        optional={
            "call_id": CALLS,
            "count": st.integers(0, 4),
            "text": st.sampled_from(["I did it", "found 3"]),
        },
    ),
    max_size=4,
)
receipts = st.lists(
    st.fixed_dictionaries(
        {"tool": TOOLS},
        optional={"call_id": CALLS, "ok": st.booleans(), "result_count": st.integers(0, 4)},
    ),
    max_size=4,
)


def test_receipts_by_hand() -> None:
    found = verify_tool_receipts(
        [
            {"kind": "invoked", "tool": "deploy", "text": "I deployed it"},
            {"kind": "absence", "tool": "search"},
        ],
        [{"tool": "search", "call_id": "c1", "result_count": 3}],
    ).to_dict()
    assert [h["kind"] for h in found["hallucinations"]] == [
        "fabricated_tool_reference",
        "false_absence",
    ]
    assert found["hallucinations"][0]["claim_text"] == "I deployed it"
    trimmed = verify_tool_receipts(
        [{"kind": "invoked", "tool": "deploy"}], [], window_complete=False
    )
    assert trimmed.grounded and len(trimmed.ungroundable) == 1


@SETTINGS
@given(claims, receipts, st.booleans())
def test_verify_tool_receipts_agrees_with_the_runtime(
    said: list[dict[str, Any]], ran: list[dict[str, Any]], complete: bool
) -> None:
    rt = runtime()
    theirs = json.loads(rt.verify_tool_receipts(json.dumps(said), json.dumps(ran), complete))
    assert verify_tool_receipts(said, ran, complete).to_dict() == theirs


def test_the_commands(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"initial": [], "steps": [{"id": "s", "preconditions": ["p"]}], "goal": []})
    )
    assert main(["check-plan", str(plan)]) == 1
    assert "unmet_precondition: step 's' requires 'p'" in capsys.readouterr().out
    goal = tmp_path / "goal.json"
    goal.write_text(
        json.dumps({"condition": {"kind": "plan_achieved"}, "inputs": {"plan_achieved": True}})
    )
    assert main(["goal", str(goal), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["met"] is True
    said, ran = tmp_path / "claims.json", tmp_path / "receipts.json"
    said.write_text(json.dumps([{"kind": "invoked", "tool": "deploy"}]))
    ran.write_text("[]")
    assert main(["receipts", str(said), str(ran)]) == 1
    assert "fabricated_tool_reference" in capsys.readouterr().out
    assert main(["receipts", str(said), str(ran), "--window-incomplete"]) == 0
    assert "ungroundable" in capsys.readouterr().out
