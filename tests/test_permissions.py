"""Permission tiers, reversibility, the gate and the approval ledger (issue 26, item 5).

The classifier must give ``car_runtime.permission_classify``'s answer and the gate
``permission_evaluate``'s, on every bundled example, on real tool calls (the
tau-bench corpus) and on generated ones; the ledger must survive restarts and a
killed writer.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import car_verify.runtime as drop_in
from car_verify.base.errors import UsageError
from car_verify.executor import execute_sync
from car_verify.plan.permissions import (
    RULES,
    Ledger,
    canonical_json,
    permission_classify,
    permission_evaluate,
    record_decision,
    segments,
)
from tests.car_oracle import runtime

ROOT = Path(__file__).resolve().parent.parent
#: The tau-bench airline corpus (MIT), bundled gzipped with its licence.
CORPUS = ROOT / "examples" / "tau-bench-airline" / "gpt-4o-airline.json.gz"


def call(tool: str | None, params: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    action: dict[str, Any] = {"id": "a", "type": "tool_call", "parameters": params or {}}
    if tool is not None:
        action["tool"] = tool
    action.update(fields)
    return action


def proposal(*actions: dict[str, Any]) -> dict[str, Any]:
    acts = [
        dict(a, id=a.get("id") if a.get("id") != "a" else f"a{i}") for i, a in enumerate(actions)
    ]
    return {"id": "p", "source": "test", "actions": acts}


def row(tool: str | None, params: dict[str, Any] | None = None, **fields: Any) -> tuple[str, str]:
    [c] = permission_classify(proposal(call(tool, params, **fields))).classifications
    return c.required_tier, c.reversibility


# --- the documented signals, by hand ----------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "params", "expected"),
    [
        ("read_file", {"path": "notes.txt"}, ("sandbox_edit", "reversible")),
        ("read_secret", {}, ("full_access", "reversible")),  # the tier is not the contract
        ("deploy_service", {}, ("full_access", "compensable")),
        ("send_email", {"body": "please send it"}, ("full_access", "irreversible")),
        ("db_insert", {}, ("sandbox_edit", "compensable")),
        ("format_date", {"date": "2026-12-01"}, ("sandbox_edit", "irreversible")),
        ("search", {"query": "release notes"}, ("sandbox_edit", "reversible")),  # values: no
        ("fetch_url", {"url": "https://example.com"}, ("sandbox_edit", "reversible")),
        ("sendEmail", {}, ("full_access", "irreversible")),  # camelCase segments
        ("sendemail", {}, ("sandbox_edit", "irreversible")),  # one segment: no keyword
        ("shell", {"command": "terraform apply"}, ("full_access", "compensable")),
        ("shell", {"command": "ls -la"}, ("sandbox_edit", "irreversible")),
        ("query", {"auth": {"token": "x"}}, ("full_access", "reversible")),  # a nested key
        ("query", {"api_key": "x"}, ("full_access", "reversible")),
        ("query", {"max_tokens": 5}, ("sandbox_edit", "reversible")),  # a segment, not "token"
        ("read_file", {"path": "~/.ssh/id_rsa"}, ("full_access", "reversible")),
        ("read_file", {"path": "deploy/key.pem"}, ("full_access", "reversible")),
        ("run_sql", {"sql": "DROP TABLE users"}, ("full_access", "irreversible")),
        ("run", {"script": ["rm -rf", "/tmp/x"]}, ("full_access", "irreversible")),
        ("create_index", {"q": "mv a b"}, ("sandbox_edit", "compensable")),  # compensable wins
        ("list_files", {"q": "mv a b"}, ("sandbox_edit", "irreversible")),  # mutating wins
        ("frobnicate", {}, ("sandbox_edit", "irreversible")),  # unrecognised: irreversible
        (None, {}, ("sandbox_edit", "irreversible")),
    ],
)
def test_the_documented_signals(tool: str | None, params: dict[str, Any], expected: Any) -> None:
    assert row(tool, params) == expected


def test_non_tool_actions_and_the_declared_contract() -> None:
    report = permission_classify(
        proposal(
            {"id": "w", "type": "state_write", "expected_effects": {"k": 1}},
            {"id": "r", "type": "state_read", "state_dependencies": ["k"]},
            {"id": "s", "type": "assertion"},
            call("db_insert", reversibility="compensable"),
        )
    ).to_dict()
    assert [(c["required_tier"], c["reversibility"]) for c in report["classifications"]] == [
        ("sandbox_edit", "reversible"),
        ("read_only", "reversible"),
        ("read_only", "reversible"),
        ("sandbox_edit", "compensable"),
    ]
    assert report["classifications"][3]["missing_compensation"] is True
    # the envelope reads the declared fields: three default to irreversible
    assert report["declared_rollback_contract"] == "irreversible"
    empty = permission_classify({"id": "p", "source": "t", "actions": []})
    assert empty.declared_rollback_contract == "reversible"


def test_segments() -> None:
    assert segments("sendEmail") == ["send", "email"]
    assert segments("SEND_EMAIL") == ["send", "email"]
    assert segments("HTTPSend") == ["httpsend"]
    assert segments("id_ed25519AttachDiff") == ["id", "ed25519", "attach", "diff"]
    assert segments("send.email-now x") == ["send", "email", "now", "x"]


def test_the_rules_are_one_table_of_data() -> None:
    signals = {r.signal for r in RULES}
    assert signals == {"tool_segment", "command", "param_key", "target_path", "phrase"}
    for rule in RULES:
        assert rule.pattern == rule.pattern.lower() and rule.pattern.strip()
    source = (ROOT / "car_verify" / "plan" / "permissions.py").read_text(encoding="utf-8")
    code = source.split("RULES: Final", 1)[1].split("\n)  # fmt: skip", 1)[1]
    for word in ("deploy", "secret", "rm -rf", "terraform"):  # no keyword outside the table
        assert f'"{word}' not in code


# --- fingerprints ---------------------------------------------------------------------


def test_fingerprints_are_the_runtimes() -> None:
    [d] = permission_evaluate(
        proposal(call("x", {"b": "é", "a": 1.0, "c": [1e20, 0.1, 1e-5, 1.5e-7, 10, -0.0]})),
        "full_access",
    )
    assert d.fingerprint == 'tool_call|x|{"a":1.0,"b":"é","c":[1e+20,0.1,0.00001,1.5e-7,10,-0.0]}'
    assert canonical_json({"v": 2**64}) == '{"v":1.8446744073709552e+19}'
    assert canonical_json({"v": 2**64 - 1}) == '{"v":18446744073709551615}'
    [w] = permission_evaluate(
        proposal({"id": "w", "type": "state_write", "expected_effects": {"k": 1}}), "read_only"
    )
    assert w.fingerprint == "state_write|-|{}"


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(deadline=None, max_examples=300)
@given(st.dictionaries(st.text(max_size=6), json_values, max_size=4))
def test_fingerprints_agree_with_the_runtime_on_any_parameters(params: dict[str, Any]) -> None:
    rt = runtime()
    doc = json.dumps(proposal(call("t", params)))
    theirs = json.loads(rt.permission_evaluate(doc, "full_access"))[0]["fingerprint"]
    [ours] = permission_evaluate(doc, "full_access")
    assert ours.fingerprint == theirs


# --- differential: the runtime as the oracle ------------------------------------------

WORDS = sorted({r.pattern.strip() for r in RULES} | {"file", "user", "order", "x", "prod"})
KEYS = ["command", "args", "path", "file", "q", "body", "api_key", "token", "auth", "cwd"]
KEYS += ["dest", "flags", "argv", "filePath", "amount", "options"]


@st.composite
def tool_names(draw: Any) -> str:
    parts = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
    if draw(st.booleans()):
        return parts[0] + "".join(p.capitalize() for p in parts[1:])
    return str(draw(st.sampled_from(["_", "-", ".", " ", ""]))).join(parts)


texts = st.lists(
    st.sampled_from([*WORDS, "~/.ssh/id_rsa", "x.pem", "-rf", "/tmp", "table", "from"]),
    min_size=1,
    max_size=3,
).map(" ".join)
values = st.recursive(
    texts | st.sampled_from([1, 1.5, -1, True, None]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=2)
    ),
    max_leaves=6,
)
actions = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["tool_call"] * 5 + ["state_write", "state_read", "assertion"]),
        "parameters": st.dictionaries(st.sampled_from(KEYS), values, max_size=3),
    },
    optional={
        "tool": tool_names() | st.just(""),  # an empty name is a name
        "reversibility": st.sampled_from(["reversible", "compensable", "irreversible"]),
    },
)


def assert_agrees(rt: Any, doc: dict[str, Any], granted: str) -> None:
    text = json.dumps(doc)
    theirs = json.loads(rt.permission_classify(text))
    ours = [c.to_dict() for c in permission_classify(text).classifications]
    assert ours == theirs
    theirs = json.loads(rt.permission_evaluate(text, granted))
    assert [d.to_dict() for d in permission_evaluate(text, granted)] == theirs
    assert json.loads(drop_in.permission_evaluate(text, granted)) == theirs


@settings(deadline=None, max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(actions, min_size=1, max_size=4),
    st.sampled_from(["read_only", "sandbox_edit", "full_access"]),
)
@example([{"type": "tool_call", "tool": "", "parameters": {}}], "read_only")
def test_classify_and_evaluate_agree_with_the_runtime_on_generated_calls(
    acts: list[dict[str, Any]], granted: str
) -> None:
    rt = runtime()
    assert_agrees(
        rt,
        {"id": "p", "source": "t", "actions": [dict(a, id=f"a{i}") for i, a in enumerate(acts)]},
        granted,
    )


@pytest.mark.parametrize("path", sorted((ROOT / "examples").rglob("proposal*.json")), ids=str)
def test_classify_and_evaluate_agree_with_the_runtime_on_the_examples(path: Path) -> None:
    rt = runtime()
    for granted in ("read_only", "sandbox_edit", "full_access"):
        assert_agrees(rt, json.loads(path.read_text(encoding="utf-8")), granted)


def _corpus_calls() -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for tc in node.get("tool_calls") or []:
                fn = tc.get("function", tc)
                args = fn.get("arguments")
                if isinstance(args, str):
                    args = json.loads(args)
                calls.append({"type": "tool_call", "tool": fn.get("name"), "parameters": args})
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(json.loads(gzip.decompress(CORPUS.read_bytes())))
    return calls


def test_classify_and_evaluate_agree_with_the_runtime_on_real_tool_calls() -> None:
    rt = runtime()
    calls = _corpus_calls()
    assert len(calls) == 1164
    for start in range(0, len(calls), 200):
        chunk = [dict(c, id=f"c{i}") for i, c in enumerate(calls[start : start + 200])]
        assert_agrees(rt, {"id": "p", "source": "tau", "actions": chunk}, "sandbox_edit")


# --- the gate and the ledger ------------------------------------------------------------


def test_the_gate_escalates_full_access_always_and_a_tier_above_the_grant() -> None:
    doc = proposal(
        {"id": "r", "type": "state_read", "state_dependencies": []},
        call("write_file", id="w"),
        call("deploy_service", id="d"),
    )
    by = {
        g: [d.decision for d in permission_evaluate(doc, g)] for g in ("read_only", "full_access")
    }
    assert by == {
        "read_only": ["allow", "needs_approval", "needs_approval"],
        "full_access": ["allow", "allow", "needs_approval"],
    }
    held = permission_evaluate(doc, "read_only")[1]
    assert held.reason == "action requires sandbox_edit but session is granted only read_only"
    with pytest.raises(UsageError, match="invalid granted tier 'admin'"):
        permission_evaluate(doc, "admin")


def test_the_ledger_approves_rejects_and_honours_only_a_high_enough_approval(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "approvals.jsonl"
    deploy = call("deploy_service", {"env": "prod"}, id="d")
    doc = proposal(deploy)
    fp = 'tool_call|deploy_service|{"env":"prod"}'
    Ledger(ledger).record(fp, "sandbox_edit", True, "alice", "under-scoped")
    [d] = permission_evaluate(doc, "sandbox_edit", ledger)
    assert d.decision == "needs_approval" and "re-approval required" in (d.reason or "")
    record = record_decision(deploy, True, "alice", "ok", ledger)
    assert record.fingerprint == fp and record.required_tier == "full_access"
    [d] = permission_evaluate(doc, "read_only", ledger)  # an approval covers any grant
    assert d.decision == "allow"
    record_decision(deploy, False, "bob", "not today", ledger)
    [d] = permission_evaluate(doc, "full_access", ledger)
    assert (d.decision, d.reason, d.granted) == (
        "deny",
        "previously rejected by bob (not today)",
        None,
    )


def test_the_ledger_is_the_runtimes_format_both_ways(tmp_path: Path) -> None:
    rt = runtime()
    ledger = tmp_path / "approvals.jsonl"
    doc = proposal(
        call("deploy_service", id="d"), call("send_email", id="s"), call("write_file", id="w")
    )
    text = json.dumps(doc)
    rt.permission_record_decision(json.dumps(doc["actions"][0]), True, "alice", "ok", str(ledger))
    record_decision(doc["actions"][1], False, "bob", "no", ledger)
    Ledger(ledger).record("tool_call|write_file|{}", "sandbox_edit", True, "carol", "fine")
    for granted in ("read_only", "sandbox_edit"):
        theirs = json.loads(rt.permission_evaluate(text, granted, str(ledger)))
        assert [d.to_dict() for d in permission_evaluate(text, granted, ledger)] == theirs


WRITER = """
import sys
from car_verify.plan.permissions import Ledger
ledger, n = Ledger(sys.argv[1]), 0
while True:
    ledger.record('tool_call|t|{"n":%d}' % n, "sandbox_edit", True, "w", "x" * 5000)
    n += 1
"""


def test_the_ledger_survives_a_restart_and_a_killed_writer(tmp_path: Path) -> None:
    path = tmp_path / "approvals.jsonl"
    Ledger(path).record("tool_call|deploy|{}", "full_access", True, "alice", "ok")
    # a writer killed in the middle of a line leaves it unfinished
    with path.open("a", encoding="utf-8") as f:
        f.write('{"fingerprint":"tool_call|send|{}","required_tier":"full_ac')
    fresh = Ledger(path)  # a restart: a new process reads the file
    assert fresh.lookup("tool_call|deploy|{}") is not None
    assert fresh.lookup("tool_call|send|{}") is None
    Ledger(path).record("tool_call|send|{}", "full_access", False, "bob", "no")
    again = Ledger(path)
    record = again.lookup("tool_call|send|{}")
    assert record is not None and record.decision == "rejected"
    assert again.torn == [2]  # the torn line is skipped and named, the next one intact
    # a real kill, mid-append, from another process
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)])
    try:
        for _ in range(400):
            if path.stat().st_size > 200_000:
                break
            time.sleep(0.025)
        assert writer.poll() is None, "the writer stopped by itself"
    finally:
        writer.kill()
        writer.wait()
    survivor = Ledger(path)
    assert len(survivor.records()) >= 3
    survivor.record("tool_call|after|{}", "sandbox_edit", True, "carol", "after the kill")
    assert Ledger(path).lookup("tool_call|after|{}") is not None
    assert len(Ledger(path).torn) <= 2


def test_a_ledger_is_read_incrementally(tmp_path: Path) -> None:
    path = tmp_path / "approvals.jsonl"
    ledger = Ledger(path)
    assert ledger.lookup("x") is None  # no file yet: nothing approved
    Ledger(path).record("x", "sandbox_edit", True, "a", "r")
    assert ledger.lookup("x") is not None  # a second writer's record is seen


# --- the executor gates on a granted tier -----------------------------------------------


def test_the_executor_holds_back_the_whole_proposal_until_approved(tmp_path: Path) -> None:
    calls: list[str] = []
    tools = {
        "write_file": lambda _: calls.append("write_file") or "ok",
        "deploy_service": lambda _: calls.append("deploy_service") or "ok",
    }
    doc = proposal(call("write_file", id="w"), call("deploy_service", id="d"))
    ledger = tmp_path / "approvals.jsonl"
    held = execute_sync(doc, tools, granted_tier="sandbox_edit", ledger=ledger)
    assert calls == [] and {r.status.value for r in held.result.results} == {"rejected"}
    assert any("tool_call|deploy_service|{}" in r for r in held.rejected_by)
    record_decision(doc["actions"][1], True, "alice", "ok", ledger)
    ran = execute_sync(doc, tools, granted_tier="sandbox_edit", ledger=ledger)
    assert sorted(calls) == ["deploy_service", "write_file"]
    assert {r.status.value for r in ran.result.results} == {"succeeded"}
    with pytest.raises(UsageError, match="only with granted_tier"):
        execute_sync(doc, tools, ledger=ledger)


# --- the command ----------------------------------------------------------------------


def test_the_permissions_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from car_verify.cli import main

    path = tmp_path / "p.json"
    path.write_text(json.dumps(proposal(call("read_file", id="r"), call("deploy", id="d"))))
    ledger = tmp_path / "l.jsonl"
    assert main(["permissions", str(path)]) == 0
    out = capsys.readouterr().out
    assert "d: full_access, compensable (tool name segment 'deploy')" in out
    assert (
        main(["permissions", str(path), "--granted", "sandbox_edit", "--ledger", str(ledger)]) == 1
    )
    out = capsys.readouterr().out
    assert "d: needs_approval" in out and "fingerprint tool_call|deploy|{}" in out
    assert main(["permissions", str(path), "--ledger", str(ledger), "--approve", "d"]) == 2
    assert "--reviewer" in capsys.readouterr().err
    args = ["--ledger", str(ledger), "--approve", "d", "--reviewer", "alice", "--reason", "ok"]
    assert main(["permissions", str(path), *args]) == 0
    capsys.readouterr()
    with ledger.open("a") as f:
        f.write("not a record\n")
    argv = ["permissions", str(path), "--granted", "sandbox_edit", "--ledger", str(ledger)]
    assert main([*argv, "--format", "json"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert [d["decision"] for d in doc["decisions"]] == ["allow", "allow"]
    assert f"{ledger}:2: not an approval record" in captured.err


def test_an_approval_is_exact_for_integers_past_64_bits(tmp_path: Path) -> None:
    """The runtime's fingerprint writes an integer past 64 bits as a float, so two
    accounts can share it; a recorded approval matches the exact parameters only."""
    ledger = tmp_path / "approvals.jsonl"
    approved, other = 12345678901234567901234, 12345678901234567999999
    assert float(approved) == float(other)  # one fingerprint for both, as the runtime writes it

    def pay(account: int) -> dict[str, Any]:
        return {
            "id": "pay",
            "type": "tool_call",
            "tool": "send_money",
            "parameters": {"account": account, "amount": 10},
        }

    record = record_decision(pay(approved), True, "alice", "checked", ledger)
    assert record.exact is not None and str(approved) in record.exact
    [allowed] = permission_evaluate(proposal(pay(approved)), "read_only", ledger)
    [held] = permission_evaluate(proposal(pay(other)), "read_only", ledger)
    assert allowed.decision == "allow" and held.decision == "needs_approval"
    assert allowed.fingerprint == held.fingerprint  # the wire fingerprint stays the runtime's
    # a record written without the exact key (by the runtime) approves neither
    theirs = tmp_path / "theirs.jsonl"
    doc = {**record.to_dict()}
    del doc["exact"]
    theirs.write_text(json.dumps(doc) + "\n")
    [still] = permission_evaluate(proposal(pay(approved)), "read_only", theirs)
    assert still.decision == "needs_approval"
