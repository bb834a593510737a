"""``car-verify hook`` (issue 29): recorded payloads of Claude Code and Codex, the
trace kept per session across processes, concurrent calls, a broken policy file,
and input the hook cannot evaluate."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from car_verify.hook import answer, decide

POLICY = """deny_tool = ["rm"]
[[deny_tool_param]]
tool = "Bash"
param = "command"
contains = "rm -rf"
[[rate_limit_tool]]
tool = "WebFetch"
max_calls = 3
interval_secs = 3600
[[trace_rule]]
name = "no-push-after-env"
rule = 'never Bash where command contains "git push" after Read where file_path contains ".env"'
"""


def claude(tool: str, tool_input: dict[str, Any], session: str = "s1") -> dict[str, Any]:
    """A Claude Code PreToolUse payload, as its hooks reference documents it."""
    return {
        "session_id": session,
        "transcript_path": "/home/u/.claude/projects/x.jsonl",
        "cwd": "",
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "toolu_01",
    }


def codex(command: str, session: str = "c1") -> dict[str, Any]:
    """A Codex PreToolUse payload (its input schema: Bash with a command)."""
    return {
        "session_id": session,
        "transcript_path": None,
        "cwd": "",
        "model": "gpt-5-codex",
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "turn_id": "t-1",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": "call_1",
    }


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".car" / "policies").mkdir(parents=True)
    (tmp_path / ".car" / "policies" / "rules.toml").write_text(POLICY)
    return tmp_path


def ask(project: Path, payload: dict[str, Any], **options: Any) -> tuple[dict[str, Any], Any]:
    payload = {**payload, "cwd": str(project)}
    out, result = answer(json.dumps(payload), **options)
    return (json.loads(out) if out else {}), result


def test_claude_code_payloads(project: Path) -> None:
    out, _ = ask(project, claude("Bash", {"command": "rm -rf /", "description": "clean"}))
    decision = out["hookSpecificOutput"]
    assert decision["hookEventName"] == "PreToolUse" and decision["permissionDecision"] == "deny"
    assert "deny_tool_param:Bash.command" in decision["permissionDecisionReason"]
    assert "rm -rf" not in decision["permissionDecisionReason"]  # never the matched value
    out, _ = ask(project, claude("Bash", {"command": "ls"}))
    assert out == {"hookSpecificOutput": {"hookEventName": "PreToolUse"}}  # the agent decides
    out, _ = ask(project, claude("Bash", {"command": "ls"}), grant=True)
    assert out["hookSpecificOutput"]["permissionDecision"] == "allow"
    out, _ = ask(project, claude("rm", {}), ask=["deny_tool:"])
    assert out["hookSpecificOutput"]["permissionDecision"] == "ask"


def test_codex_payloads_answer_in_codex_format(project: Path) -> None:
    out, _ = ask(project, codex("rm -rf build"))
    assert set(out) == {"hookSpecificOutput"}  # Codex allows no other top-level keys
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    import jsonschema

    schema = {  # the PreToolUse output schema Codex publishes (codex-rs/hooks/schema)
        "type": "object", "additionalProperties": False,
        "properties": {"continue": {"type": "boolean"}, "stopReason": {"type": "string"},
                       "suppressOutput": {"type": "boolean"}, "systemMessage": {"type": "string"},
                       "hookSpecificOutput": {"type": "object", "additionalProperties": False,
                           "required": ["hookEventName"],
                           "properties": {"hookEventName": {"const": "PreToolUse"},
                                          "permissionDecision": {"enum": ["allow", "deny", "ask"]},
                                          "permissionDecisionReason": {"type": "string"},
                                          "additionalContext": {"type": "string"},
                                          "updatedInput": {}}}},
    }  # fmt: skip
    jsonschema.validate(out, schema)
    jsonschema.validate(ask(project, codex("ls"))[0], schema)


def test_the_trace_is_kept_per_session_across_calls(project: Path) -> None:
    assert not ask(project, claude("Bash", {"command": "git push"}))[1].rules
    ask(project, claude("Read", {"file_path": "/repo/.env"}))
    out, result = ask(project, claude("Bash", {"command": "git push origin main"}))
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert result.rules == ["trace_rule:no-push-after-env"]
    other, _ = ask(project, claude("Bash", {"command": "git push"}, session="s2"))
    assert "permissionDecision" not in other["hookSpecificOutput"]  # another session: its own trace


def test_concurrent_hook_calls_lose_no_call(project: Path) -> None:
    # Six calls of one session at once against a limit of three: exactly three pass.
    payload = json.dumps({**claude("WebFetch", {"url": "https://x"}), "cwd": str(project)})
    command = [sys.executable, "-m", "car_verify", "hook"]

    def one(_: int) -> str:
        done = subprocess.run(
            command, input=payload, capture_output=True, text=True, check=True, cwd=project
        )
        return str(json.loads(done.stdout)["hookSpecificOutput"].get("permissionDecision", "pass"))

    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(one, range(6)))
    assert sorted(answers) == ["deny", "deny", "deny", "pass", "pass", "pass"]


def test_a_broken_policy_file_fails_closed(project: Path) -> None:
    (project / ".car" / "policies" / "broken.toml").write_text("deny_tool = [\n")
    out, result = ask(project, claude("Bash", {"command": "ls"}))
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "broken.toml" in out["hookSpecificOutput"]["permissionDecisionReason"]
    assert result.warnings


def test_input_it_cannot_evaluate_follows_on_unknown(project: Path) -> None:
    out, result = answer("not json")
    assert out == "" or "permissionDecision" not in json.loads(out)["hookSpecificOutput"]
    assert "warning" in result.warnings[0]  # said on stderr
    result = decide({"hook_event_name": "PreToolUse"}, on_unknown="deny")
    assert result.decision == "deny" and "no tool_name" in result.reason
    assert decide({"hook_event_name": "Stop"}, on_unknown="ask").decision == "ask"


def test_post_tool_use_records_the_outcome(project: Path) -> None:
    (project / ".car" / "policies" / "rules.toml").write_text(
        '[[trace_rule]]\nrule = "Bash where command contains \\"deploy\\" only after Bash where'
        ' command contains \\"test\\" succeeded"\n'
    )
    tests = claude("Bash", {"command": "make test"})
    ask(project, tests)
    out, _ = ask(project, claude("Bash", {"command": "make deploy"}))
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"  # not known to succeed yet
    ask(project, {**tests, "hook_event_name": "PostToolUse", "tool_response": {"stdout": "ok"}})
    out, _ = ask(project, claude("Bash", {"command": "make deploy"}))
    assert "permissionDecision" not in out["hookSpecificOutput"]


def test_the_cli_reads_stdin_and_warns_on_stderr(project: Path) -> None:
    payload = json.dumps({**claude("rm", {}), "cwd": str(project)})
    # run from the project, so that `-m` finds the installed package, not the checkout
    done = subprocess.run([sys.executable, "-m", "car_verify", "hook"], input=payload,
                          capture_output=True, text=True, check=True, cwd=project)  # fmt: skip
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    done = subprocess.run([sys.executable, "-m", "car_verify", "hook"], input="{",
                          capture_output=True, text=True, check=True, cwd=project)  # fmt: skip
    assert done.returncode == 0 and "warning" in done.stderr and "Traceback" not in done.stderr


def loaded_in_hook_calls(project: Path, modules: list[str], calls: int = 2) -> list[list[str]]:
    """Which of ``modules`` each of ``calls`` fresh hook processes has loaded by its end."""
    payload = json.dumps({**claude("Bash", {"command": "ls"}), "cwd": str(project)})
    probe = (
        "import sys; from car_verify._launch import main; sys.argv = ['car-verify', 'hook'];"
        f"code = main(); sys.stderr.write(repr([m for m in {modules!r} if m in sys.modules]));"
        "raise SystemExit(code)"
    )
    runs = []
    for _ in range(calls):
        done = subprocess.run([sys.executable, "-c", probe], input=payload,
                              capture_output=True, text=True, check=True, cwd=project)  # fmt: skip
        runs.append(ast.literal_eval(done.stderr.splitlines()[-1]))
    return runs


def test_a_hook_call_parses_no_rule_it_has_parsed_before(project: Path) -> None:
    import car_verify.trace as trace
    from car_verify.policy import load_policies

    assert loaded_in_hook_calls(project, ["lark"]) == [["lark"], []]  # the second: from cache
    cached = json.loads((project / ".car" / "hook-state" / "trace-rules.json").read_text())
    fresh = load_policies(project).rules.trace_rule  # the plain path: parsed
    assert [trace.rule_from_dict(d) for d in cached] == fresh
    assert [trace.rule_to_dict(r) for r in fresh] == cached


def test_a_hook_call_loads_neither_the_model_nor_the_dag(project: Path) -> None:
    """It runs once per tool call, so it checks the call without the proposal model,
    the DAG or the passes (a start-up guard; the time is benchmarks/bench_hook.py's)."""
    heavy = ["car_verify.model", "car_verify.dag", "car_verify.passes", "lark", "networkx"]
    assert loaded_in_hook_calls(project, heavy)[1] == []
