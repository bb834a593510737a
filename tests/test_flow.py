"""Information flow (issue 27, item 1): the runtime's two checks, its gate and
enforcement, and car-verify's own: forbidden orderings over every schedule, and the
integrity rule (untrusted data reaching a consequential call)."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from car_verify.base.errors import InputError
from car_verify.cli import main
from car_verify.ir.model import load
from car_verify.plan.flow import (
    check_information_flow,
    enforce_information_flow,
    gate_information_flow,
)
from car_verify.semantics.dag import Dag
from tests.car_oracle import runtime

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "prompt-injection"


def act(
    id: str, tool: str | None = None, deps: Any = (), eff: Any = None, **kw: Any
) -> dict[str, Any]:
    a: dict[str, Any] = {"id": id, "type": kw.pop("type", "tool_call")}
    if tool:
        a["tool"] = tool
    if deps:
        a["state_dependencies"] = list(deps)
    if eff:
        a["expected_effects"] = eff
    a.update(kw)
    return a


def plan(*actions: dict[str, Any]) -> dict[str, Any]:
    return {"id": "p", "source": "t", "actions": list(actions)}


def kinds(report: Any) -> list[tuple[str, list[str], str | None]]:
    return [(v["kind"], v["actions"], v.get("key")) for v in report.to_dict()["violations"]]


S = {"src": {"confidentiality": "secret"}, "snk": {"sink": True}, "mid": {}}


# --- the runtime's rules, by hand (each found by calling car_runtime 0.52.1) -----------


def test_sensitive_data_travels_through_keys_to_a_sink() -> None:
    chain = plan(
        act("r", "src", eff={"k": 1}), act("m", "mid", ["k"], {"j": 1}), act("s", "snk", ["j"])
    )
    assert kinds(check_information_flow(chain, S)) == [("sensitive_to_sink", ["s"], "j")]
    # a precondition is not a dependency; a sink before the source sees nothing
    pre = plan(
        act("r", "src", eff={"k": 1}),
        act("s", "snk", preconditions=[{"key": "k", "operator": "exists"}]),
    )
    assert check_information_flow(pre, S).safe
    early = plan(act("s", "snk", ["k"]), act("r", "src", eff={"k": 1}))
    assert check_information_flow(early, S).safe
    # an untrusted tool is a sink; a public floor makes every sink one (no key)
    untrusted = {"src": {"confidentiality": "internal"}, "u": {"trust": "untrusted"}}
    assert kinds(
        check_information_flow(plan(act("r", "src", eff={"k": 1}), act("s", "u", ["k"])), untrusted)
    )
    alone = check_information_flow(plan(act("s", "snk")), S, {"min_confidential": "public"})
    assert kinds(alone) == [("sensitive_to_sink", ["s"], None)]
    assert "consumes Public-level data —" in alone.violations[0].explanation


def test_a_key_keeps_its_highest_level_until_a_declassifier_writes_it() -> None:
    overwritten = plan(
        act("r", "src", eff={"k": 1}), act("w", "mid", eff={"k": 2}), act("s", "snk", ["k"])
    )
    assert not check_information_flow(overwritten, S).safe  # a cleaner write does not lower it
    labels = {**S, "dec": {"declassifier": True}}
    sanitised = plan(
        act("r", "src", eff={"k": 1}), act("d", "dec", ["k"], {"k": 2}), act("s", "snk", ["k"])
    )
    assert check_information_flow(sanitised, labels).safe
    # the first key at the floor is named, the highest level is reported
    two = plan(
        act("p", "pub", eff={"j": 1}),
        act("r", "src", eff={"k": 1}),
        act("s", "snk", ["z", "j", "k"]),
    )
    report = check_information_flow(two, {**S, "pub": {"confidentiality": "internal"}})
    assert kinds(report) == [("sensitive_to_sink", ["s"], "j")]
    assert "Secret-level data via key 'j'" in report.violations[0].explanation


def test_forbidden_orderings_follow_happens_before_paths_not_through_a_declassifier() -> None:
    labels = {
        "a": {"capability": "A"},
        "b": {"capability": "B"},
        "d": {"declassifier": True},
        "m": {},
    }
    policy = {"forbidden_sequences": [["A", "B"]]}
    path = plan(act("x", "a", eff={"k": 1}), act("m", "m", ["k"], {"j": 1}), act("y", "b", ["j"]))
    assert kinds(check_information_flow(path, labels, policy)) == [
        ("forbidden_sequence", ["x", "y"], None)
    ]
    cleared = plan(
        act("x", "a", eff={"k": 1}), act("m", "d", ["k"], {"j": 1}), act("y", "b", ["j"])
    )
    assert check_information_flow(cleared, labels, policy).safe
    unordered = plan(act("x", "a"), act("y", "b"))
    report = check_information_flow(unordered, labels, policy)
    assert report.safe  # the runtime's answer ...
    [extra] = report.beyond_car  # ... and car-verify's: some schedule runs x first
    assert (extra.kind, extra.actions, extra.schedule) == (
        "forbidden_sequence_schedule",
        ("x", "y"),
        ("x", "y"),
    )
    strict = check_information_flow(unordered, labels, policy, profile="strict")
    assert not strict.safe and [v.kind for v in strict.violations] == [
        "forbidden_sequence_schedule"
    ]


def test_bad_labels_and_policies_name_the_field() -> None:
    with pytest.raises(InputError, match=r"labels\.t\.confidentiality: expected one of public"):
        check_information_flow(plan(), {"t": {"confidentiality": "top"}})
    with pytest.raises(InputError, match=r"labels\.t\.sinks: unknown field 'sinks'"):
        check_information_flow(plan(), {"t": {"sinks": True}})
    with pytest.raises(InputError, match=r"policy\.forbidden_sequences\[0\]"):
        check_information_flow(plan(), {}, {"forbidden_sequences": [["a", "b", "c"]]})


# --- against the runtime ----------------------------------------------------------------

TOOLS = ["t0", "t1", "t2", "t3"]
KEYS = ["k0", "k1", "k2"]
label = st.fixed_dictionaries(
    {},
    optional={
        "capability": st.sampled_from(["A", "B", "C"]),
        "confidentiality": st.sampled_from(["public", "internal", "secret"]),
        "trust": st.sampled_from(["trusted", "untrusted"]),
        "sink": st.booleans(),
        "declassifier": st.booleans(),
    },
)
labels = st.dictionaries(st.sampled_from(TOOLS), label)
policies = st.none() | st.fixed_dictionaries(
    {},
    optional={
        "min_confidential": st.sampled_from(["public", "internal", "secret"]),
        "forbidden_sequences": st.lists(
            st.lists(st.sampled_from(["A", "B", "C"]), min_size=2, max_size=2), max_size=3
        ),
    },
)


@st.composite
def flow_plans(draw: Any, max_actions: int = 7) -> dict[str, Any]:
    n = draw(st.integers(1, max_actions))
    actions = []
    for i in range(n):
        kind = draw(st.sampled_from(["tool_call"] * 4 + ["state_write", "state_read"]))
        a: dict[str, Any] = {"id": f"a{i}", "type": kind}
        if kind != "state_write" or draw(st.booleans()):
            a["tool"] = draw(st.sampled_from(TOOLS))
        a["state_dependencies"] = draw(st.lists(st.sampled_from(KEYS), max_size=3, unique=True))
        effects = draw(st.lists(st.sampled_from(KEYS), max_size=2, unique=True))
        if effects:
            a["expected_effects"] = {k: 1 for k in effects}
        if draw(st.integers(0, 5)) == 0 and i:
            a["parameters"] = {"x": f"$a{draw(st.integers(0, i - 1))}.output"}
        actions.append(a)
    return plan(*actions)


def multiset(violations: list[dict[str, Any]]) -> Counter[str]:
    return Counter(json.dumps(v, sort_keys=True) for v in violations)


@settings(deadline=None, max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(flow_plans(), labels, policies)
def test_the_checks_the_gate_and_enforcement_agree_with_the_runtime(
    proposal: dict[str, Any], tool_labels: dict[str, Any], policy: dict[str, Any] | None
) -> None:
    rt = runtime()
    text = json.dumps(proposal)
    theirs = json.loads(
        rt.check_information_flow(
            text, json.dumps(tool_labels), None if policy is None else json.dumps(policy)
        )
    )
    ours = check_information_flow(text, tool_labels, policy).to_dict()
    # the runtime lists a sink's ancestors from a hash set, in an order that varies
    # from run to run: compared as a multiset (docs/compat.md)
    assert ours["safe"] == theirs["safe"]
    assert multiset(ours["violations"]) == multiset(theirs["violations"])
    for gate_policy in (
        None,
        {"on_sensitive_to_sink": "require_approval"},
        {"on_forbidden_sequence": "block"},
    ):
        raw = rt.gate_information_flow(
            json.dumps(theirs), None if gate_policy is None else json.dumps(gate_policy)
        )
        gate = gate_information_flow(theirs, gate_policy).to_dict()
        assert gate == json.loads(raw)
        record = {
            "required_tier": "full_access",
            "reviewer": "r",
            "reason": "x",
            "evidence": None,
            "decided_at": "2026-01-01T00:00:00Z",
        }
        approvals = [
            dict(
                record,
                fingerprint=f"flow:{v['kind']}:{','.join(v['actions'])}:{v.get('key') or ''}",
                decision=d,
            )
            for v, d in zip(
                gate["needs_approval"], itertools.cycle(["approved", "rejected", "other"])
            )
            if d != "other"
        ]
        assert enforce_information_flow(gate, approvals).to_dict() == json.loads(
            rt.enforce_information_flow(raw, json.dumps(approvals))
        )


# --- beyond the runtime: every schedule, and integrity --------------------------------


def linearizations(proposal: dict[str, Any]) -> list[list[int]]:
    dag = Dag(load(proposal))
    preds = [set(dag.preds(i)) for i in range(dag.n)]
    out: list[list[int]] = []

    def extend(done: list[int], left: set[int]) -> None:
        if not left:
            out.append(list(done))
            return
        for i in sorted(left):
            if preds[i] <= set(done):
                done.append(i)
                extend(done, left - {i})
                done.pop()

    extend([], set(range(dag.n)))
    return out


caps = st.dictionaries(
    st.sampled_from(TOOLS), st.fixed_dictionaries({"capability": st.sampled_from(["A", "B"])})
)


@settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(flow_plans(max_actions=5), caps)
def test_a_forbidden_ordering_is_reported_iff_some_schedule_runs_it(
    proposal: dict[str, Any], tool_labels: dict[str, Any]
) -> None:
    policy = {"forbidden_sequences": [["A", "B"]]}
    report = check_information_flow(proposal, tool_labels, policy, profile="strict")
    model = load(proposal)
    cap = [tool_labels.get(a.tool or "", {}).get("capability") for a in model.actions]
    orders = linearizations(proposal)
    expected = {
        (model.actions[i].id, model.actions[j].id)
        for i, j in itertools.permutations(range(len(model.actions)), 2)
        if cap[i] == "A" and cap[j] == "B" and any(o.index(i) < o.index(j) for o in orders)
    }
    found = {v.actions for v in report.violations}
    assert found == expected
    ids = [a.id for a in model.actions]
    valid = {tuple(ids[i] for i in o) for o in orders}
    for v in report.violations:
        if v.kind == "forbidden_sequence_schedule":  # the schedule really shows it
            assert v.schedule in valid
            assert v.schedule.index(v.actions[0]) < v.schedule.index(v.actions[1])


@settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(flow_plans(max_actions=5), st.sampled_from(TOOLS), st.sampled_from(TOOLS))
def test_the_integrity_rule_against_every_schedule(
    proposal: dict[str, Any], untrusted: str, sink: str
) -> None:
    """Brute force: in some schedule, untrusted data reaches the sink (a key carries
    it from its last writer to a reader, an output reference from its action), and
    every path reported is one such schedule's."""
    if untrusted == sink:
        return
    tool_labels = {untrusted: {"trust": "untrusted"}, sink: {"sink": True}}
    report = check_information_flow(proposal, tool_labels, profile="strict")
    model = load(proposal)
    n = len(model.actions)
    refs = [{r.action_id for r in a.output_refs()} for a in model.actions]
    ids = [a.id for a in model.actions]
    reached: set[tuple[str, str]] = set()
    for order in linearizations(proposal):
        for s in (i for i in range(n) if model.actions[i].tool == untrusted):
            tainted_keys: set[str] = set()
            tainted = {s}
            for i in order:
                a = model.actions[i]
                if i != s and (
                    tainted_keys & set(a.state_dependencies) or refs[i] & {ids[t] for t in tainted}
                ):
                    tainted.add(i)
                    if a.tool == sink:
                        reached.add((ids[s], ids[i]))
                for key in a.effects():
                    (tainted_keys.add if i in tainted else tainted_keys.discard)(key)
    found = {v.actions for v in report.violations if v.kind == "untrusted_to_consequential"}
    assert reached <= found  # nothing that some schedule shows is missed
    for v in report.violations:
        if v.kind == "untrusted_to_consequential":
            steps = v.path
            assert steps[0]["action"] == v.actions[0] and steps[-1]["action"] == v.actions[1]


# --- the example, the command -----------------------------------------------------------


def run_example(name: str, *extra: str) -> tuple[int, dict[str, Any]]:
    args = ["flow", str(EXAMPLE / name), "--labels", str(EXAMPLE / "tool-labels.json")]
    args += ["--policy", str(EXAMPLE / "flow-policy.json"), "--gate", "--format", "json", *extra]
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(args)
    return code, json.loads(out.getvalue())


def test_the_prompt_injection_example_is_blocked_and_its_benign_twin_is_clean() -> None:
    code, doc = run_example("proposal.json", "--profile", "strict")
    assert code == 1 and doc["gate"]["action"] == "block"
    paths = [
        [s["action"] for s in v["path"]]
        for v in doc["violations"]
        if v["kind"] == "untrusted_to_consequential"
    ]
    assert paths == [["fetch", "leak"], ["fetch", "details", "pay"]]  # as the BFS reaches them
    code, doc = run_example("proposal.json")  # car: the runtime's ordering finding, and ours
    assert code == 1 and [v["kind"] for v in doc["violations"]] == ["forbidden_sequence"]
    assert [v["kind"] for v in doc["beyond_car"]] == ["untrusted_to_consequential"] * 2
    for profile in ("car", "strict"):
        code, doc = run_example("proposal-benign.json", "--profile", profile)
        assert code == 0 and doc["safe"] and not doc["beyond_car"], profile


def test_the_example_agrees_with_the_runtime() -> None:
    rt = runtime()
    text = (EXAMPLE / "proposal.json").read_text(encoding="utf-8")
    labels_text = (EXAMPLE / "tool-labels.json").read_text(encoding="utf-8")
    policy_text = (EXAMPLE / "flow-policy.json").read_text(encoding="utf-8")
    theirs = json.loads(rt.check_information_flow(text, labels_text, policy_text))
    ours = check_information_flow(text, json.loads(labels_text), json.loads(policy_text))
    assert ours.to_dict() == theirs


def test_labels_are_found_in_dot_car(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".car").mkdir()
    (tmp_path / "p.json").write_text(
        json.dumps(plan(act("r", "src", eff={"k": 1}), act("s", "snk", ["k"])))
    )
    monkeypatch.chdir(tmp_path)
    assert main(["flow", "p.json"]) == 2
    assert "no tool labels" in capsys.readouterr().err
    (tmp_path / ".car" / "tool-labels.json").write_text(json.dumps(S))
    assert main(["flow", "p.json"]) == 1
    captured = capsys.readouterr()
    assert "sensitive_to_sink" in captured.out and "labels:" in captured.err


def test_verify_and_lint_run_the_flow_pass_when_labels_are_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    (tmp_path / ".git").mkdir()
    (tmp_path / ".car").mkdir()
    for name in ("tool-labels.json", "flow-policy.json"):
        shutil.copy(EXAMPLE / name, tmp_path / ".car" / name)
    plans = tmp_path / "plans"
    plans.mkdir()
    for name in ("proposal.json", "proposal-benign.json"):
        shutil.copy(EXAMPLE / name, plans / name)
    monkeypatch.chdir(tmp_path)
    assert main(["lint", "--no-progress"]) == 1
    captured = capsys.readouterr()
    assert "error[flow-forbidden-sequence] pay" in captured.out
    assert "warning[flow-untrusted-to-consequential] pay" in captured.out  # beyond CAR: said
    assert "[beyond the runtime's check]" in captured.out
    assert "proposal-benign.json" not in "".join(
        line for line in captured.out.splitlines() if "flow-" in line
    )
    assert "labels:" in captured.err
    assert main(["lint", "--no-progress", "--no-labels"]) == 0
    capsys.readouterr()
    assert main(["verify", "plans/proposal.json", "--profile", "strict", "--format", "json"]) == 1
    codes = {i["code"] for i in json.loads(capsys.readouterr().out)["issues"]}
    assert {"flow-forbidden-sequence", "flow-untrusted-to-consequential"} <= codes
    assert main(["verify", "plans/proposal.json", "--flow-policy", "x.json", "--no-labels"]) == 2


def test_the_executor_gates_on_the_flow_and_a_recorded_approval_lets_it_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from car_verify.executor import execute_sync

    ran: list[str] = []

    def tool(name: str) -> Any:
        def call(_params: Any) -> dict[str, bool]:
            ran.append(name)
            return {"ok": True}

        return call

    tools = {name: tool(name) for name in ("get_transactions", "send_money")}
    labels = {
        "get_transactions": {"capability": "read_untrusted"},
        "send_money": {"capability": "payment"},
    }
    policy = {"forbidden_sequences": [["read_untrusted", "payment"]]}
    doc = plan(
        act("fetch", "get_transactions", eff={"note": 1}),
        act("pay", "send_money", ["note"]),
    )
    ledger = tmp_path / "approvals.jsonl"
    held = execute_sync(doc, tools, labels=labels, flow_policy=policy, ledger=ledger)
    assert ran == [] and set(held.statuses.values()) == {"rejected"}
    [reason] = [r for r in held.rejected_by if "flow-forbidden_sequence" in r]
    assert "fingerprint flow:forbidden_sequence:fetch,pay:" in reason
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    args = ["flow", str(path), "--approvals", str(ledger), "--reviewer", "alice", "--reason", "ok"]
    assert main([*args, "--approve", "flow:forbidden_sequence:fetch,pay:"]) == 0
    assert "approved flow:forbidden_sequence:fetch,pay:" in capsys.readouterr().out
    done = execute_sync(doc, tools, labels=labels, flow_policy=policy, ledger=ledger)
    assert ran == ["get_transactions", "send_money"]
    assert set(done.statuses.values()) == {"succeeded"}


def _tool(
    i: str, tool: str, deps: tuple[str, ...] = (), effects: dict[str, int] | None = None
) -> dict[str, Any]:
    return {
        "id": i,
        "type": "tool_call",
        "tool": tool,
        "state_dependencies": list(deps),
        **({"expected_effects": effects} if effects else {}),
    }


SANITIZED = {
    "direct and through a declassifier": [
        _tool("x", "tA", effects={"k": 1, "j": 1}),
        _tool("d", "tD", ("k",), {"k2": 1}),
        _tool("y", "tB", ("j", "k2")),
    ],
    "direct, through a plain action and through a declassifier": [
        _tool("x", "tA", effects={"k": 1, "j": 1, "m": 1}),
        _tool("d", "tD", ("k",), {"k2": 1}),
        _tool("m", "tM", ("m",), {"m2": 1}),
        _tool("y", "tB", ("j", "k2", "m2")),
    ],
    "only through a plain action": [
        _tool("x", "tA", effects={"m": 1}),
        _tool("m", "tM", ("m",), {"m2": 1}),
        _tool("y", "tB", ("m2",)),
    ],
}


@pytest.mark.parametrize("name", list(SANITIZED))
def test_a_declassifier_ordered_between_sanitizes_as_the_runtime_reads_it(name: str) -> None:
    """Under car a forbidden sequence x -> y is sanitized by any declassifier ordered
    between them, even beside a direct edge (the runtime's reading); under strict
    only when every path from x to y passes one."""
    labels = {
        "tA": {"capability": "A"},
        "tD": {"capability": "N", "declassifier": True},
        "tM": {"capability": "N"},
        "tB": {"capability": "B"},
    }
    policy = {"min_confidential": "public", "forbidden_sequences": [["A", "B"]]}
    doc = {"id": "p", "source": "t", "actions": SANITIZED[name]}
    theirs = json.loads(
        runtime().check_information_flow(json.dumps(doc), json.dumps(labels), json.dumps(policy))
    )
    ours = check_information_flow(doc, labels, policy, profile="car")
    assert [list(v.actions) for v in ours.violations] == [
        v["actions"] for v in theirs["violations"]
    ]
    strict = check_information_flow(doc, labels, policy, profile="strict")
    found = [v.actions for v in strict.violations if v.kind == "forbidden_sequence"]
    assert found == [("x", "y")]  # a path from x to y passes no declassifier
