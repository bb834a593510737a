"""``car-verify hook`` (issue 29): recorded payloads of Claude Code and Codex, the
trace kept per session across processes, concurrent calls, a broken policy file,
and input the hook cannot evaluate."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from samples import HOOK_POLICY as POLICY
from samples import claude, codex

from car_verify.hook import answer, decide


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The hook keeps its state in the user's state folder: here, the test's own
    (hook processes the tests start inherit it)."""
    home = tmp_path / "xdg-state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    return home


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".car" / "policies").mkdir(parents=True)
    (tmp_path / ".car" / "policies" / "rules.toml").write_text(POLICY)
    return tmp_path


def ask(project: Path, payload: dict[str, Any], **options: Any) -> tuple[dict[str, Any], Any]:
    """One call, with the policies the hook's settings name (``--policies``)."""
    payload = {**payload, "cwd": str(project)}
    options.setdefault("policies", project / ".car" / "policies")
    out, result = answer(json.dumps(payload), **options)
    return (json.loads(out) if out else {}), result


def test_claude_code_payloads(project: Path) -> None:
    out, _ = ask(project, claude("Bash", {"command": "rm -rf /", "description": "clean"}))
    decision = out["hookSpecificOutput"]
    assert decision["hookEventName"] == "PreToolUse" and decision["permissionDecision"] == "deny"
    assert "deny_tool_param:Bash.command" in decision["permissionDecisionReason"]
    assert "rm -rf" not in decision["permissionDecisionReason"]  # never the matched value
    out, _ = ask(project, claude("Bash", {"command": "ls"}))
    assert out["hookSpecificOutput"] == {"hookEventName": "PreToolUse"}  # the agent decides
    # rules the hook accepted on its own are said on every call until the user confirms
    assert "never by you" in out["systemMessage"]
    out, _ = ask(project, claude("Bash", {"command": "ls"}), grant=True)
    assert out["hookSpecificOutput"]["permissionDecision"] == "allow"
    out, _ = ask(project, claude("rm", {}), ask=["deny_tool:"])
    assert out["hookSpecificOutput"]["permissionDecision"] == "ask"


def test_codex_payloads_answer_in_codex_format(project: Path) -> None:
    out, _ = ask(project, codex("rm -rf build"))
    # Codex allows no top-level keys but its schema's (the first call says what it accepted)
    assert (
        set(out) <= {"hookSpecificOutput", "systemMessage"} and "first use" in out["systemMessage"]
    )
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
    out, result = answer("not json")  # undecodable: denied, whatever --on-unknown says
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "cannot be decoded" in result.warnings[0]  # said on stderr
    result = decide({"hook_event_name": "PreToolUse"}, on_unknown="deny")
    assert result.decision == "deny" and "no tool_name" in result.reason
    other = decide({"hook_event_name": "Stop"}, on_unknown="deny")  # another event: no answer
    assert other.decision is None and "nothing to decide on a Stop event" in other.warnings[0]


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
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


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


def test_a_hook_call_parses_no_rule_it_has_parsed_before(project: Path, state_home: Path) -> None:
    import car_verify.rules.trace as trace
    from car_verify.rules.policy import load_policies

    assert loaded_in_hook_calls(project, ["lark"]) == [["lark"], []]  # the second: from cache
    (cache,) = state_home.glob("car-verify/hook/*/trace-rules.json")  # outside the workspace
    cached = json.loads(cache.read_text())
    fresh = load_policies(project).rules.trace_rule  # the plain path: parsed
    assert [trace.rule_from_dict(d) for d in cached] == fresh
    assert [trace.rule_to_dict(r) for r in fresh] == cached


def test_a_hook_call_loads_neither_the_model_nor_the_dag(project: Path) -> None:
    """It runs once per tool call, so it checks the call without the proposal model,
    the DAG or the passes (a start-up guard; the time is benchmarks/bench_hook.py's)."""
    heavy = [
        "car_verify.ir.model",
        "car_verify.semantics.dag",
        "car_verify.passes",
        "lark",
        "networkx",
    ]
    assert loaded_in_hook_calls(project, heavy)[1] == []


# --- fail closed, round two (issue 37) ---------------------------------------------


def run_hook(project: Path, payload: Any, *args: str, cwd: Path | None = None) -> dict[str, Any]:
    """One hook process, started (as an agent starts it) in ``cwd``, the project
    by default; its answer on stdout, always JSON."""
    text = payload if isinstance(payload, str) else json.dumps(payload)
    command = [sys.executable, "-m", "car_verify", "hook", *args]
    done = subprocess.run(
        command, input=text, capture_output=True, text=True, check=True, cwd=cwd or project
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else {}


def decision(out: dict[str, Any]) -> str | None:
    return out.get("hookSpecificOutput", {}).get("permissionDecision")


def test_an_agent_cannot_switch_the_rules_off_from_its_workspace(project: Path) -> None:
    # an empty .car/policies in a folder the agent cds into: the payload's cwd is ignored
    sub = project / "sub"
    (sub / ".car" / "policies").mkdir(parents=True)
    payload = {**claude("rm", {}), "cwd": str(sub)}
    assert decision(run_hook(project, payload)) == "deny"
    # a file added beside the rules resets no rate limit and no trace
    fetch = {**claude("WebFetch", {"url": "https://x"}), "cwd": str(project)}
    for _ in range(3):
        assert decision(run_hook(project, fetch)) is None
    (project / ".car" / "policies" / "zz.toml").write_text("")
    assert decision(run_hook(project, fetch)) == "deny"


def test_state_that_cannot_be_read_denies_and_is_never_a_fresh_start(
    project: Path, state_home: Path
) -> None:
    fetch = claude("WebFetch", {"url": "https://x"})
    ask(project, fetch)
    files = state_home.glob("car-verify/hook/*/*.json")
    (session,) = [p for p in files if p.stem not in ("trace-rules", "accepted")]
    for junk in ("not json", '{"format": 2, "trace": {"k": -1}, "windows": {}}', "[]"):
        session.write_text(junk)
        out, _ = ask(project, fetch)
        reason = out["hookSpecificOutput"]["permissionDecisionReason"]
        assert decision(out) == "deny" and "session state" in reason, junk


def test_a_forged_rule_cache_cannot_rewrite_a_rule(project: Path, state_home: Path) -> None:
    import car_verify.rules.trace as trace

    trace._KNOWN.clear()
    run_hook(project, {**claude("Bash", {"command": "ls"}), "cwd": str(project)})  # the cache
    (cache,) = state_home.glob("car-verify/hook/*/trace-rules.json")
    forged = json.loads(cache.read_text())
    forged[0]["call"]["tests"][0]["value"] = "nothing anyone types"  # same text, other rule
    cache.write_text(json.dumps(forged))
    trace._KNOWN.clear()
    payload_read = {**claude("Read", {"file_path": "/repo/.env"}), "cwd": str(project)}
    payload_push = {**claude("Bash", {"command": "git push"}), "cwd": str(project)}
    run_hook(project, payload_read)
    assert decision(run_hook(project, payload_push)) == "deny"  # the rule as it is written


@pytest.mark.parametrize("tool_input", [None, [], "rm -rf /"])
def test_a_tool_input_that_is_no_object_is_still_checked_by_what_needs_none(
    project: Path, tool_input: Any
) -> None:
    out, _ = ask(project, {**claude("rm", {}), "tool_input": tool_input})
    assert decision(out) == "deny"  # deny_tool needs no parameter
    out, result = ask(project, {**claude("Grep", {}), "tool_input": tool_input}, on_unknown="ask")
    assert decision(out) == "ask" and "tool_input" in result.reason


@pytest.mark.parametrize(
    "payload",
    [
        '{"hook_event_name": "PreToolUse", "tool_name": "Grep", "tool_input": {},'
        ' "session_id": "\\ud800"}',
        "[" * 5000 + "]" * 5000,
        '{"hook_event_name": "PreToolUse", "tool_name": "Grep", "tool_input": '
        + '{"a": ' * 5000
        + "1"
        + "}" * 5000
        + "}",
        "\x00\xff",
    ],
    ids=["lone-surrogate", "nested-array", "nested-input", "binary"],
)
def test_an_undecodable_payload_is_denied_in_the_agents_format(project: Path, payload: str) -> None:
    out = run_hook(project, payload, "--on-unknown", "allow")
    assert decision(out) == "deny" and out["hookSpecificOutput"]["hookEventName"] == "PreToolUse"


def test_policies_or_state_that_cannot_be_used_deny(project: Path, tmp_path: Path) -> None:
    payload = {**claude("Grep", {"pattern": "x"}), "cwd": str(project)}
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    for where in (dangling, loop):
        assert decision(run_hook(project, payload, "--policies", str(where))) == "deny", where
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "rules.toml").write_text('deny_tool = ["rm"]\n')
    locked.chmod(0)
    try:
        if not os.access(locked, os.R_OK):  # root reads anything: nothing to test then
            assert decision(run_hook(project, payload, "--policies", str(locked))) == "deny"
    finally:
        locked.chmod(0o755)
    state = tmp_path / "state-file"
    state.write_text("a file, not a folder")
    out = run_hook(project, payload, "--state-dir", str(state))
    assert decision(out) == "deny"


def test_a_failed_call_reported_after_it_reaches_the_trace_rules(project: Path) -> None:
    """Claude Code reports a failed tool as PostToolUseFailure: ``never X after Y
    failed`` can fire, and the deny reason names the rule by its file and line,
    never by a literal of its where-tests (which may be a secret)."""
    (project / ".car" / "policies" / "rules.toml").write_text(
        "[[trace_rule]]\nrule = 'never Bash where command contains \"deploy\" after Bash failed'\n"
    )
    failed = {**claude("Bash", {"command": "make test"}), "hook_event_name": "PostToolUseFailure"}
    out, result = ask(project, failed)
    assert out == {} and result.decision is None  # nothing to decide after a call
    out, _ = ask(project, claude("Bash", {"command": "make deploy"}))
    reason = out["hookSpecificOutput"]["permissionDecisionReason"]
    assert decision(out) == "deny" and "deploy" not in reason
    assert "trace_rule:rules.toml:2" in reason and "after Bash failed" in reason


# --- outcomes are never lost silently (issue 57.5) ---------------------------------------------

FAILED_RUN = "[[trace_rule]]\nrule = 'never deploy after run_tests failed'\n"


def failed_run(project: Path, session: str = "s1") -> dict[str, Any]:
    return {
        **claude("run_tests", {}, session, event="PostToolUseFailure"),
        "cwd": str(project),
        "error": "exit 1",
    }


def test_an_outcome_is_saved_without_waiting_for_the_sessions_lock(project: Path) -> None:
    """Another hook of the session holds its lock: the report is appended at once,
    and the next call of the session reads it."""
    import fcntl

    (project / ".car" / "policies" / "rules.toml").write_text(FAILED_RUN)
    ask(project, claude("run_tests", {}))
    (lock,) = Path(os.environ["XDG_STATE_HOME"]).glob("car-verify/hook/*/*.lock")
    with open(lock) as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        out, result = ask(project, failed_run(project))
        assert out == {} and result.decision is None and not result.warnings
    out, _ = ask(project, claude("deploy", {}))
    assert decision(out) == "deny" and "after run_tests failed" in str(out)


def test_an_outcome_that_cannot_be_saved_denies_what_its_rules_govern(project: Path) -> None:
    """A full disk, as the hook sees it: its writes fail (a file size limit of 0).
    The outcome is marked lost (an empty file needs no data block), the user is
    told, and every later call its rule governs is denied, naming why."""
    import resource

    (project / ".car" / "policies" / "rules.toml").write_text(
        FAILED_RUN + "[[trace_rule]]\nrule = 'never publish after lint failed'\n"
    )
    ask(project, claude("run_tests", {}))

    def full_disk() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))

    hook = [
        sys.executable,
        "-m",
        "car_verify",
        "hook",
        "--policies",
        str(project / ".car/policies"),
    ]
    done = subprocess.run(
        hook, input=json.dumps(failed_run(project)), capture_output=True, text=True,
        cwd=project, preexec_fn=full_disk, check=True,
    )  # fmt: skip
    said = json.loads(done.stdout)["systemMessage"]  # the agent's own answer format
    assert "could not be saved" in said and "denied from now on" in said
    out, result = ask(project, claude("deploy", {}))
    assert decision(out) == "deny" and "could not be saved" in result.reason
    assert result.rules == ["trace_rule:never deploy after run_tests failed"]
    assert decision(ask(project, claude("publish", {}))[0]) is None  # its rule lost nothing


def test_a_torn_journal_record_is_an_outcome_lost(project: Path) -> None:
    (project / ".car" / "policies" / "rules.toml").write_text(FAILED_RUN)
    ask(project, claude("run_tests", {}))
    (state,) = Path(os.environ["XDG_STATE_HOME"]).glob("car-verify/hook/*/")
    (state / f"{_session_file('s1')}.journal").write_bytes(b'{"tool": "run_tests", "par\n')
    out, result = ask(project, claude("deploy", {}))
    assert decision(out) == "deny" and "could not be saved" in result.reason


def _session_file(session: str) -> str:
    import hashlib

    return hashlib.sha256(session.encode()).hexdigest()[:24]


@pytest.mark.slow
def test_a_hundred_hooks_at_once_lose_no_outcome(project: Path) -> None:
    """50 failure reports and 50 other calls of one session, 100 hook processes at
    once on a 2-core machine: every report is kept (50 rules, one per report)."""
    rules = "".join(
        f"[[trace_rule]]\nrule = 'never deploy{n} after run_tests where n == {n} failed'\n"
        for n in range(50)
    )
    (project / ".car" / "policies" / "rules.toml").write_text(rules)
    for n in range(50):
        assert decision(ask(project, claude("run_tests", {"n": n}))[0]) is None
    storm = [json.dumps({**failed_run(project), "tool_input": {"n": n}}) for n in range(50)] + [
        json.dumps({**claude("Read", {"file_path": "x"}), "cwd": str(project)})
    ] * 50
    folder = project / ".car" / "policies"
    command = [sys.executable, "-m", "car_verify", "hook", "--policies", str(folder)]
    running = [
        subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=project)
        for _ in storm
    ]  # fmt: skip
    for process, payload in zip(running, storm, strict=True):
        process.stdin.write(payload)  # type: ignore[union-attr]
        process.stdin.close()  # type: ignore[union-attr]
    for process in running:
        assert process.wait(timeout=300) == 0
        assert "could not be saved" not in process.stderr.read()  # type: ignore[union-attr]
    denied = [decision(ask(project, claude(f"deploy{n}", {}))[0]) for n in range(50)]
    assert denied == ["deny"] * 50


# --- undecided is never allowed (issue 58.3) -------------------------------------------------

SHELL = '[[deny_command]]\nprogram = "rm"\nflags = ["-r", "-f"]\n'


@pytest.mark.parametrize(
    "line", ["X=rm; $X -rf x", 'eval "$C"', "echo cm0gLXJmIHgK | base64 -d | sh"]
)
def test_an_undecided_line_is_put_to_the_user(project: Path, line: str) -> None:
    (project / ".car" / "policies" / "rules.toml").write_text(SHELL)
    for grant in (False, True):
        out, _ = ask(project, claude("Bash", {"command": line}), grant=grant)
        said = out["hookSpecificOutput"]
        assert said["permissionDecision"] == "ask", (line, grant)
        assert "deny_command:Bash.rm" in said["permissionDecisionReason"]
        assert "cannot be decided" in said["permissionDecisionReason"]  # and why


def test_on_unknown_allow_stays_possible_and_says_so_on_every_call(project: Path) -> None:
    (project / ".car" / "policies" / "rules.toml").write_text(SHELL)
    for line in ("X=rm; $X -rf x", "ls"):
        out, result = ask(project, claude("Bash", {"command": line}), on_unknown="allow")
        assert "permissionDecision" not in out["hookSpecificOutput"]
        assert any("--on-unknown allow" in w for w in result.warnings), line
        if line != "ls":  # the user is told which rule let it through unchecked, and why
            assert "allowed unchecked (--on-unknown allow)" in out["systemMessage"]
            assert "deny_command:Bash.rm" in out["systemMessage"]
            assert "cannot be decided" in out["systemMessage"]
    out, _ = ask(project, claude("Bash", {"command": "rm -rf x"}), on_unknown="allow")
    assert decision(out) == "deny"


# --- every event in its own format, or not at all (issue 59) ----------------------------------


@pytest.mark.parametrize(
    "event",
    ["SessionStart", "UserPromptSubmit", "Stop", "SubagentStop", "Notification",
     "PermissionRequest", "PreCompact", "SessionEnd"],
)  # fmt: skip
def test_other_events_are_answered_with_nothing(project: Path, event: str) -> None:
    out, result = ask(project, {**claude("rm", {}), "hook_event_name": event})
    assert out == {} and result.decision is None
    assert f"nothing to decide on a {event} event" in result.warnings[0]


def test_the_command_answers_another_event_with_nothing_on_stdout(project: Path) -> None:
    payload = {**claude("rm", {}), "hook_event_name": "Stop", "cwd": str(project)}
    done = subprocess.run([sys.executable, "-m", "car_verify", "hook"], input=json.dumps(payload),
                          capture_output=True, text=True, check=True, cwd=project)  # fmt: skip
    assert done.stdout == "" and "nothing to decide on a Stop event" in done.stderr


def test_every_hook_option_has_help() -> None:
    import argparse

    from car_verify.hook import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    options = [a for a in parser._actions if a.option_strings and a.dest != "help"]
    assert {a.dest for a in options} >= {"agent", "on_unknown", "accept_edits"}
    assert all(a.help for a in options), [a.dest for a in options if not a.help]
