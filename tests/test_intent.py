"""Intent (issue 27, item 2): check_intent, check_intent_plan, gate_intent and
enforce_intent give the runtime's answers; taint follows dependencies."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import car_verify.runtime as drop_in
from car_verify.base.errors import InputError
from car_verify.cli import main
from car_verify.plan.intent import check_intent, check_intent_plan, enforce_intent, gate_intent
from tests.car_oracle import runtime

TOOLS = st.sampled_from(["search", "read_file", "send_email", "pay"])
IDS = st.sampled_from(["a", "b", "c", "d"])
WORDS = st.sampled_from(["docs/x", "docs", "src/y", "net", "disk", "k", "docsx"])
SETTINGS = settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])

intents = st.fixed_dictionaries(
    {},
    optional={
        "allowed_tools": st.lists(TOOLS, max_size=2),
        "allowed_resources": st.lists(st.sampled_from(["docs", "src/", "k"]), max_size=2),
        "forbidden_capabilities": st.lists(st.sampled_from(["net", "disk"]), max_size=2),
    },
)
actions = st.lists(
    st.fixed_dictionaries(
        {"id": IDS},
        optional={
            "tool": TOOLS,
            "targets": st.lists(WORDS, max_size=2),
            "capabilities": st.lists(st.sampled_from(["net", "disk", "x"]), max_size=2),
            "depends_on": st.lists(IDS, max_size=2),
            "untrusted": st.booleans(),
        },
    ),
    max_size=5,
)


def record(fingerprint: str, decision: str) -> dict[str, Any]:
    when = "2026-01-01T00:00:00Z"
    return {"fingerprint": fingerprint, "required_tier": "full_access", "decision": decision,
            "reviewer": "r", "reason": "x", "evidence": None, "decided_at": when}  # fmt: skip


def test_drift_is_reported_and_an_influenced_one_blocks_the_commit() -> None:
    intent = {"allowed_tools": ["search"], "forbidden_capabilities": ["network"]}
    report = check_intent(
        {"intent": intent, "actions": [
            {"id": "read", "tool": "search", "untrusted": True},
            {"id": "send", "tool": "send_email", "depends_on": ["read"]},
            {"id": "mail", "tool": "send_email"},
        ]}
    )  # fmt: skip
    assert [(v.action, v.tool_influenced) for v in report.violations] == [
        ("send", True),
        ("mail", False),
    ]
    assert report.commit_blocked == ["send"] and not report.safe
    assert "likely tool-stream injection" in report.violations[0].explanation
    resources = check_intent(
        {
            "intent": {"allowed_resources": ["docs"]},
            "actions": [{"id": "a", "targets": ["docs/x", "docsx", "Docs"]}],
        }
    )
    assert [v.detail for v in resources.violations] == ["Docs"]  # a prefix, case-sensitive
    with pytest.raises(InputError, match=r"actions\[0\]\.tools: unknown field 'tools'"):
        check_intent({"intent": {}, "actions": [{"id": "a", "tools": []}]})


@SETTINGS
@given(intents, actions)
def test_check_intent_gate_and_enforcement_agree_with_the_runtime(
    intent: dict[str, Any], acts: list[dict[str, Any]]
) -> None:
    rt = runtime()
    request = {"intent": intent, "actions": acts}
    theirs = json.loads(rt.check_intent(json.dumps(request)))
    assert check_intent(request).to_dict() == theirs
    for policy in (None, {"on_untainted_drift": "allow"}, {"on_untainted_drift": "block"}):
        raw = rt.gate_intent(json.dumps(theirs), None if policy is None else json.dumps(policy))
        gate = gate_intent(theirs, policy).to_dict()
        assert gate == json.loads(raw)
        kinds = {
            "tool_out_of_intent": "tool",
            "target_out_of_intent": "target",
            "forbidden_capability": "capability",
        }
        approvals = [
            record(f"intent:{kinds[v['kind']]}:{v['action']}:{v['detail']}", d)
            for v, d in zip(
                gate["needs_approval"], itertools.cycle(["approved", "rejected", "none"])
            )
            if d != "none"
        ]
        theirs_enforced = json.loads(rt.enforce_intent(raw, json.dumps(approvals)))
        assert enforce_intent(gate, approvals).to_dict() == theirs_enforced


plan_actions = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["tool_call", "tool_call", "state_write", "shell"])},
        optional={
            "tool": TOOLS,
            # a target named only in write_set counts as one
            "write_set": st.lists(st.sampled_from(["k", "secret/x", "src/z"]), max_size=2),
            "parameters": st.fixed_dictionaries({"key": st.sampled_from(["k", "secret/w"])}),
            "state_dependencies": st.lists(
                st.sampled_from(["k", "docs", "j"]), max_size=2, unique=True
            ),
            "expected_effects": st.dictionaries(
                st.sampled_from(["k", "docs", "j", "src/z"]), st.just(1), max_size=2
            ),
            "metadata": st.fixed_dictionaries(
                {"capabilities": st.lists(st.sampled_from(["net", "disk"]), max_size=2)}
            ),
        },
    ),
    max_size=5,
)


@SETTINGS
@given(
    intents,
    plan_actions,
    st.lists(TOOLS, max_size=2),
    st.lists(st.sampled_from(["a0", "a1", "a2"]), max_size=2),
)
# untrusted data steering a write outside the intent, named only in write_set: blocked
@example(
    {"allowed_resources": ["src/"]},
    [{"type": "tool_call", "tool": "search", "write_set": ["secret/x"]}],
    [],
    ["a0"],
)
@example({}, [{"type": "shell"}], [], [])
def test_check_intent_plan_agrees_with_the_runtime(
    intent: dict[str, Any], acts: list[dict[str, Any]], tools: list[str], ids: list[str]
) -> None:
    rt = runtime()
    request = {"intent": intent, "actions": [dict(a, id=f"a{i}") for i, a in enumerate(acts)],
               "untrusted_tools": tools, "untrusted_ids": ids}  # fmt: skip
    text = json.dumps(request)
    try:
        theirs = json.loads(rt.check_intent_plan(text))
    except ValueError as err:  # an unknown action type: the request is refused
        with pytest.raises(ValueError) as caught:
            drop_in.check_intent_plan(text)
        assert str(caught.value).split(":")[0] == str(err).split(":")[0]
        with pytest.raises(InputError, match="unknown action type"):
            check_intent_plan(request)
        return
    # the runtime lists an action's targets from a hash map, in an order that varies
    # from run to run: the violations are compared as a multiset (docs/compat.md)
    for ours in (check_intent_plan(request).to_dict(), json.loads(drop_in.check_intent_plan(text))):
        assert (ours["safe"], ours["commit_blocked"]) == (theirs["safe"], theirs["commit_blocked"])
        assert Counter(map(_key, ours["violations"])) == Counter(map(_key, theirs["violations"]))


def _key(v: dict[str, Any]) -> str:
    return json.dumps(v, sort_keys=True)


def test_under_strict_taint_travels_along_dependencies_and_output_references() -> None:
    request = {
        "intent": {"allowed_tools": ["search"]},
        "actions": [
            {"id": "read", "type": "tool_call", "tool": "search"},
            {
                "id": "send",
                "type": "tool_call",
                "tool": "send_email",
                "parameters": {"body": "$read.output"},
            },
        ],
        "untrusted_tools": ["search"],
    }
    assert check_intent_plan(request).safe  # CAR ignores the reference
    strict = check_intent_plan(request, profile="strict")
    assert strict.commit_blocked == ["send"]


def test_the_intent_command(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "intent.json"
    acts = [{"id": "a", "tool": "search", "untrusted": True},
            {"id": "b", "tool": "pay", "depends_on": ["a"]}]  # fmt: skip
    path.write_text(json.dumps({"intent": {"allowed_tools": ["search"]}, "actions": acts}))
    assert main(["intent", str(path), "--gate"]) == 1
    out = capsys.readouterr().out
    assert "tool_out_of_intent" in out and "gate: block" in out


# --- taint over repeated ids and cycles of depends_on (issue 59) ----------------------


def influence_reference(actions: list[dict[str, Any]]) -> dict[str, bool]:
    """The plain reading of "influenced": the least fixpoint of "an id is influenced
    when its action is untrusted or names an influenced id in ``depends_on``",
    iterated from all-false until nothing changes (an id names its last action)."""
    last = {a["id"]: a for a in actions}
    influenced = dict.fromkeys(last, False)
    changed = True
    while changed:
        changed = False
        for name, action in last.items():
            now = bool(action.get("untrusted")) or any(
                influenced.get(d, False) for d in action.get("depends_on", [])
            )
            if now and not influenced[name]:
                influenced[name] = changed = True
    return influenced


FEW_IDS = st.sampled_from(["x", "y", "u", "w"])  # so ids repeat and depends_on makes cycles
#: Actions over few ids (so ids repeat and depends_on makes cycles), every one out
#: of intent (so each reports, with its taint): any such list, or one shaped as the
#: false allow needs: cycles among x, y and z first in each depends_on, then now
#: and then the untrusted u last (a search that leaves x for y, comes back to x
#: still in progress and so reads y as clean, before it reaches u).
tangled = st.one_of(
    st.lists(
        st.fixed_dictionaries(
            {"id": FEW_IDS, "tool": st.just("pay")},
            optional={
                "depends_on": st.lists(st.sampled_from(["x", "y", "u", "w", "gone"]), max_size=3),
                "untrusted": st.integers(0, 3).map(lambda n: n == 0),
            },
        ),
        min_size=1,
        max_size=7,
    ),
    st.lists(
        st.fixed_dictionaries(
            {
                "id": st.sampled_from(["x", "y", "z"]),
                "tool": st.just("pay"),
                "depends_on": st.tuples(
                    st.lists(st.sampled_from(["x", "y", "z"]), min_size=1, max_size=2),
                    st.booleans(),
                ).map(lambda drawn: [*drawn[0], *["u"] * drawn[1]]),
            }
        ),
        min_size=2,
        max_size=5,
    ).map(lambda acts: [*acts, {"id": "u", "tool": "pay", "untrusted": True}]),
)
#: The false allow of issue 59: x depends on y and then on the untrusted u, y on x.
#: A search that answered "clean" for x while x was still being searched kept y clean.
CYCLE_THROUGH_A_LATER_TAINT = [
    {"id": "x", "tool": "pay", "depends_on": ["y", "u"]},
    {"id": "y", "tool": "pay", "depends_on": ["x"]},
    {"id": "u", "tool": "pay", "untrusted": True},
]


@SETTINGS
@given(tangled)
@example(CYCLE_THROUGH_A_LATER_TAINT)
@example([*CYCLE_THROUGH_A_LATER_TAINT[:2], {"id": "x", "tool": "pay", "depends_on": ["u"]},
          {"id": "u", "tool": "pay", "untrusted": True}])  # fmt: skip
def test_influence_over_repeated_ids_and_cycles_is_the_fixpoints_and_the_runtimes(
    acts: list[dict[str, Any]],
) -> None:
    """Each action's ``tool_influenced`` (every action here reports a violation) is
    the fixpoint reference's answer for its id, and the runtime's; an action that
    holds the commit in the runtime holds it here (never a false allow)."""
    request = {"intent": {"allowed_tools": ["search"]}, "actions": acts}
    report = check_intent(request)
    expected = influence_reference(acts)
    assert [(v.action, v.tool_influenced) for v in report.violations] == [
        (a["id"], expected[a["id"]]) for a in acts
    ]
    theirs = json.loads(runtime().check_intent(json.dumps(request)))
    assert report.to_dict() == theirs


@st.composite
def plans_with_repeated_ids(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Tool calls whose ids repeat (an id names its last action, so the DAG's edges
    read by id can form cycles): over three shared keys, or shaped as a DAG (each
    action writes a key of its own and reads those of the earlier actions it
    follows) over the ids x, y, z and one u (which the tests call untrusted)."""
    n = draw(st.integers(2, 6))
    if draw(st.booleans()):
        ids = [f"a{i}" for i in range(n)]
        for i in range(1, n):
            if draw(st.integers(0, 2)) == 0:
                ids[i] = ids[draw(st.integers(0, i - 1))]
        keys = st.sampled_from(["k", "j", "m"])
        return [
            {"id": ids[i], "type": "tool_call", "tool": draw(TOOLS),
             "state_dependencies": draw(st.lists(keys, max_size=3, unique=True)),
             "expected_effects": draw(st.dictionaries(keys, st.just(1), max_size=2))}
            for i in range(n)
        ]  # fmt: skip
    ids = draw(st.lists(st.sampled_from(["x", "y", "z"]), min_size=n - 1, max_size=n - 1))
    ids.insert(draw(st.integers(0, n - 1)), "u")
    follows = [
        draw(st.lists(st.integers(0, i - 1), max_size=3, unique=True)) if i else []
        for i in range(n)
    ]
    return [
        {"id": ids[i], "type": "tool_call", "tool": draw(st.sampled_from(["search", "pay"])),
         "expected_effects": {f"k{i}": 1},
         "state_dependencies": [f"k{j}" for j in sorted(follows[i])]}
        for i in range(n)
    ]  # fmt: skip


#: The plan of the issue's false allow: the last x reads what x, y and u write, so
#: by id x depends on y and u, and y on x; u is untrusted, so y (out of intent) blocks.
PLAN_CYCLE = [
    {"id": "x", "type": "tool_call", "tool": "search", "expected_effects": {"k": 1}},
    {"id": "y", "type": "tool_call", "tool": "pay", "state_dependencies": ["k"],
     "expected_effects": {"m": 1}},
    {"id": "u", "type": "tool_call", "tool": "search", "expected_effects": {"j": 1}},
    {"id": "x", "type": "tool_call", "tool": "search", "state_dependencies": ["k", "m", "j"]},
]  # fmt: skip


@settings(SETTINGS, max_examples=150)
@given(
    plans_with_repeated_ids(),
    st.lists(TOOLS, max_size=1),
    st.lists(st.sampled_from(["a0", "a1", "a2", "x", "u"]), max_size=2) | st.just(["u"]),
)
@example(PLAN_CYCLE, [], ["u"])
def test_check_intent_plan_with_repeated_ids_blocks_what_the_runtime_blocks(
    acts: list[dict[str, Any]], tools: list[str], ids: list[str]
) -> None:
    from car_verify.ir.model import load
    from car_verify.plan.intent import plan_actions

    request = {"intent": {"allowed_tools": ["search"]}, "actions": acts,
               "untrusted_tools": tools, "untrusted_ids": ids}  # fmt: skip
    theirs = json.loads(runtime().check_intent_plan(json.dumps(request)))
    ours = check_intent_plan(request).to_dict()
    assert (ours["safe"], ours["commit_blocked"]) == (theirs["safe"], theirs["commit_blocked"])
    assert Counter(map(_key, ours["violations"])) == Counter(map(_key, theirs["violations"]))
    read = [
        {"id": a.id, "depends_on": list(a.depends_on), "untrusted": a.untrusted}
        for a in plan_actions(load({"actions": acts}), tools, ids)
    ]
    expected = influence_reference(read)
    assert all(v["tool_influenced"] == expected[v["action"]] for v in ours["violations"])
