"""The hook's trust model (docs/security.md), from the agent's side: everything the
agent can write in its workspace (nested folders, extra files, symlinks, a flood
of files, edits to the rules mid-session) leaves the rules in force, or denies."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from gate_reference import toml
from hypothesis import given, settings
from hypothesis import strategies as st
from samples import claude
from test_gate import FILE_KINDS, HOOK_GUARD, HookFace, replay, rules, steps

from car_verify.hook import answer

RULES = """deny_tool = ["rm_tool"]
[[trace_rule]]
name = "tested"
rule = "deploy only after run_tests"
[[trace_rule]]
rule = 'at most 50 Bash where command == "make deploy"'
[[trace_rule]]
rule = "never Bash after Read"
"""


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "project" / ".git").mkdir(parents=True)
    folder = tmp_path / "project" / ".car" / "policies"
    folder.mkdir(parents=True)
    (folder / "rules.toml").write_text(RULES)
    return tmp_path / "project"


def call(
    project: Path,
    tool: str,
    params: dict[str, Any],
    event: str = "PreToolUse",
    session: str = "s1",
    **how: Any,
) -> Any:
    payload = {**claude(tool, params, session), "hook_event_name": event, "cwd": str(project)}
    if "policies" not in how and "env" not in how:
        how["policies"] = project / ".car" / "policies"
    how.pop("env", None)
    how.setdefault("state_dir", project.parent / "state")
    if how["state_dir"] is None:
        del how["state_dir"]
    _, result = answer(json.dumps(payload), **how)
    return result


def test_two_trace_rules_with_a_where_test_first_both_fire(project: Path) -> None:
    """The report's case: ``at most 50 Bash where ...`` and ``never Bash after Read``."""
    assert call(project, "Read", {"file_path": "a"}).decision == "allow"
    denied = call(project, "Bash", {"command": "make deploy"})
    assert denied.decision == "deny" and "trace_rule:never Bash after Read" in denied.rules


@pytest.mark.parametrize("how", ["flag", "project-env"])
def test_a_nested_policies_folder_switches_nothing_off(
    project: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / ".car" / "policies" / ".car" / "policies").mkdir(parents=True)
    options: dict[str, Any] = {}
    if how == "project-env":
        monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
        options["env"] = True
    result = call(project, "rm_tool", {}, **options)
    assert result.decision == "deny"


def test_an_extra_file_adds_rules_and_removes_none(project: Path) -> None:
    (project / ".car" / "policies" / "zz.toml").write_text("")
    assert call(project, "rm_tool", {}).decision == "deny"
    (project / ".car" / "policies" / "zz.toml").write_text('deny_tool = ["curl"]\n')
    assert call(project, "curl", {}).decision == "deny"
    assert call(project, "rm_tool", {}).decision == "deny"


def test_a_malformed_extra_file_denies_every_call(project: Path) -> None:
    (project / ".car" / "policies" / "zz.toml").write_text("deny_tool = [")
    assert call(project, "ls", {}).decision == "deny"


def test_rules_that_vanish_mid_session_stay_in_force(project: Path) -> None:
    rules = project / ".car" / "policies" / "rules.toml"
    assert call(project, "Read", {"file_path": "a"}).decision == "allow"
    rules.write_text("")  # the agent empties the file
    result = call(project, "Bash", {"command": "ls"})
    assert result.decision == "deny" and "stay in force" in result.message
    assert "car-verify policy accept" in result.message
    assert call(project, "rm_tool", {}).decision == "deny"
    rules.unlink()  # ... deletes it
    assert call(project, "rm_tool", {}).decision == "deny"
    (project / ".car" / "policies").rmdir()  # ... removes the folder (the flag names it)
    assert call(project, "rm_tool", {}).decision == "deny"


def test_a_policies_folder_removed_under_claude_code_keeps_the_sessions_rules(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    assert call(project, "rm_tool", {}, env=True).decision == "deny"
    for file in (project / ".car" / "policies").iterdir():
        file.unlink()
    (project / ".car" / "policies").rmdir()
    result = call(project, "rm_tool", {}, env=True)
    assert result.decision == "deny" and result.warnings


def test_a_project_without_policies_gets_no_decision_and_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code always sets CLAUDE_PROJECT_DIR: a project with no rules is not
    denied everything, it is told that nothing is checked."""
    bare = tmp_path / "bare"
    (bare / ".git").mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(bare))
    result = call(bare, "Bash", {"command": "ls"}, env=True)
    assert result.decision is None and "not checked" in result.warnings[0]


def test_a_symlinked_rule_file_pointed_elsewhere_keeps_the_rules(project: Path) -> None:
    real = project.parent / "outside.toml"
    real.write_text(RULES)
    link = project / ".car" / "policies" / "rules.toml"
    link.unlink()
    link.symlink_to(real)
    assert call(project, "rm_tool", {}).decision == "deny"
    empty = project.parent / "empty.toml"
    empty.write_text("")
    link.unlink()
    link.symlink_to(empty)  # the agent points it at an empty file
    assert call(project, "rm_tool", {}).decision == "deny"
    link.unlink()
    link.symlink_to(link)  # ... or at itself
    assert call(project, "ls", {}).decision == "deny"


def test_only_after_needs_a_reported_outcome(project: Path) -> None:
    """``run_tests`` refused at the agent's own prompt never reports: deploy stays
    refused until a run_tests call reports an outcome."""
    assert call(project, "run_tests", {}).decision == "allow"  # the hook admits it ...
    assert call(project, "deploy", {}).decision == "deny"  # ... but it never ran
    call(project, "run_tests", {}, "PostToolUse")
    assert call(project, "deploy", {}).decision == "allow"


def test_junk_in_the_state_denies(project: Path) -> None:
    assert call(project, "ls", {}).decision == "allow"
    for file in (project.parent / "state").glob("*.json"):
        if file.name not in ("trace-rules.json", "accepted.json"):
            file.write_text('{"format": 4, "trace": {}, "windows": {}, "journal": -1}')
    assert call(project, "ls", {}).decision == "deny"


def test_a_flood_of_files_is_refused_at_once(project: Path) -> None:
    folder = project / ".car" / "policies"
    for n in range(20_000):
        (folder / f"f{n:05d}.toml").touch()
    env = {**os.environ, "XDG_STATE_HOME": str(project.parent / "xdg")}
    payload = json.dumps({**claude("ls", {}), "cwd": str(project)})
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "car_verify", "hook", "--policies", str(folder)],
        input=payload,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    took = time.perf_counter() - start
    answer_ = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer_["permissionDecision"] == "deny"
    assert "more than 1,000 entries" in answer_["permissionDecisionReason"]
    assert took < 5  # a few tenths of a second on a quiet machine


# --- the accepted rules outlive the agent's edits (issue 57.5) ------------------------------


def policies(project: Path) -> Path:
    return project / ".car" / "policies"


def test_the_first_call_accepts_what_it_finds_and_says_so(project: Path) -> None:
    first = call(project, "ls", {})
    assert "first use" in first.message and "car-verify policy accept" in first.message
    (accepted,) = (project.parent / "state").glob("accepted.json")
    doc = json.loads(accepted.read_text())
    # stored as the file's own text, read back by the policy reader itself
    assert doc["files"] == [["rules.toml", RULES]]
    # said on every call until the user confirms the rules from outside the agent: a
    # first use the user did not expect is the state folder removed (issue 58's review)
    later = call(project, "ls", {}).message
    assert "never by you" in later and "car-verify policy accept" in later
    from car_verify.hook import accept_policies

    accept_policies(policies(project), state_dir=project.parent / "state")
    assert call(project, "ls", {}).message == ""


def test_a_removed_state_folder_is_no_silent_fresh_start(project: Path) -> None:
    """The agent edits the rules and removes the hook's state folder: the rules the
    hook then accepts on its own are said to be unconfirmed on every call."""
    import shutil

    from car_verify.hook import accept_policies

    call(project, "ls", {})
    accept_policies(policies(project), state_dir=project.parent / "state")
    assert call(project, "rm_tool", {}).decision == "deny"
    (policies(project) / "rules.toml").write_text('deny_tool = ["nothing"]\n')
    shutil.rmtree(project.parent / "state")
    for session in ("s1", "s2"):
        result = call(project, "ls", {}, session=session)
        assert "policy accept" in result.message, session
        assert "first use" in result.message and "state folder" in result.message


def test_rules_the_agent_removes_stay_in_force_in_every_later_session(project: Path) -> None:
    assert call(project, "rm_tool", {}, session="s1").decision == "deny"
    (policies(project) / "rules.toml").write_text("")  # the agent empties the file
    for session in ("s1", "s2", "s3"):  # its own session, and every later one
        result = call(project, "rm_tool", {}, session=session)
        assert result.decision == "deny", session
        assert "stay in force" in result.message and "policy accept" in result.message
        assert "no longer holds" in result.reason  # the deny names the rule as accepted
    from car_verify.hook import accept_policies

    # the user confirms the change from outside the agent: it applies from the next call
    (done,) = accept_policies(policies(project), state_dir=project.parent / "state")
    assert done.changes == ["rules.toml changed"] and done.rules == 0
    result = call(project, "rm_tool", {}, session="s2")
    assert result.decision is None and "not checked" in result.warnings[-1]


def test_a_weakened_rule_stays_in_force(project: Path) -> None:
    folder = policies(project)
    (folder / "rules.toml").write_text(
        '[[rate_limit_tool]]\ntool = "deploy"\nmax_calls = 1\ninterval_secs = 3600\n'
        '[[allow_tool_param]]\ntool = "fetch"\nparam = "host"\nallow = ["a.example"]\n'
    )
    assert call(project, "deploy", {}).decision == "allow"
    assert call(project, "fetch", {"host": "a.example"}).decision == "allow"
    # the agent raises the limit and widens the allow list, in the file and beside it
    (folder / "rules.toml").write_text(
        '[[rate_limit_tool]]\ntool = "deploy"\nmax_calls = 100\ninterval_secs = 3600\n'
        '[[allow_tool_param]]\ntool = "fetch"\nparam = "host"\nallow = ["a.example", "evil"]\n'
    )
    (folder / "zz.toml").write_text(
        '[[allow_tool_param]]\ntool = "fetch"\nparam = "host"\nallow = ["evil"]\n'
    )
    assert call(project, "deploy", {}).decision == "deny"
    assert call(project, "fetch", {"host": "evil"}).decision == "deny"
    assert call(project, "fetch", {"host": "a.example"}).decision == "deny"  # zz.toml: added
    # a rule added in the folder applies at once, beside the accepted ones
    (folder / "zz.toml").write_text('deny_tool = ["curl"]\n')
    assert call(project, "curl", {}).decision == "deny"


def test_accept_edits_trusts_the_folder(project: Path) -> None:
    assert call(project, "rm_tool", {}).decision == "deny"
    (policies(project) / "rules.toml").write_text('deny_tool = ["other"]\n')
    result = call(project, "rm_tool", {}, accept_edits=True)
    assert result.decision == "allow" and "as trusted (--accept-edits)" in result.message
    assert call(project, "other", {}).decision == "deny"


@pytest.mark.parametrize(
    "junk",
    [
        "not json",
        '{"format": 1, "files": "x", "policies": "", "when": "", "how": ""}',
        # the accepted copy is read by the policy reader, strictly: an unknown key fails
        '{"format": 1, "files": [["r.toml", "deny_tol = [1]"]], "policies": "/p", "when": "", '
        '"how": ""}',
    ],
)
def test_accepted_rules_that_cannot_be_read_deny(project: Path, junk: str) -> None:
    call(project, "ls", {})
    (project.parent / "state" / "accepted.json").write_text(junk)
    result = call(project, "ls", {})
    assert result.decision == "deny" and "car-verify policy accept" in result.reason


def test_policy_accept_on_the_command_line(project: Path, tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg")}
    hook = [sys.executable, "-m", "car_verify", "hook", "--policies", str(policies(project))]
    payload = json.dumps({**claude("rm_tool", {}), "cwd": str(project)})

    def hook_says() -> Any:
        done = subprocess.run(hook, input=payload, capture_output=True, text=True, env=env)
        return json.loads(done.stdout) if done.stdout.strip() else {}

    assert hook_says()["hookSpecificOutput"]["permissionDecision"] == "deny"
    (policies(project) / "rules.toml").write_text("")
    said = hook_says()
    assert said["hookSpecificOutput"]["permissionDecision"] == "deny"
    # the message names the command that accepts the change: the user runs it as it is
    told = shlex.split(said["systemMessage"].split("until you run `")[1].split("`")[0])
    assert told[:3] == ["car-verify", "policy", "accept"] and "--state-dir" not in told
    done = subprocess.run(
        [sys.executable, "-m", "car_verify", *told[1:]],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "accepted 0 rules" in done.stdout and "rules.toml changed" in done.stdout
    assert "holds no rule" in done.stdout
    assert "permissionDecision" not in hook_says().get("hookSpecificOutput", {})


@settings(max_examples=min(settings().max_examples, 100))  # each example runs the hook
@given(
    accepted=rules(FILE_KINDS),
    written=st.one_of(st.just([]), rules(FILE_KINDS)),
    calls=steps,
)
def test_nothing_written_in_the_folder_weakens_the_accepted_rules(
    tmp_path_factory: pytest.TempPathFactory, accepted: Any, written: Any, calls: Any
) -> None:
    """The hook after the agent rewrote the accepted folder gives the decisions of
    the accepted rules and the written ones together (a call must pass both): the
    reference gate over both sets. So no call the accepted rules deny is allowed."""
    from car_verify.hook import accept_policies
    from car_verify.plan.gate import UNDECIDED

    face = HookFace(toml(accepted), tmp_path_factory.mktemp("hook"))
    accept_policies(face.folder, state_dir=face.state)
    written = [r.renamed("w") for r in written]
    (face.folder / "rules.toml").write_text(toml(written), encoding="utf-8")
    answers: list[Any] = replay([*HOOK_GUARD, *accepted, *written], calls, face,
                                UNDECIDED["hook"])  # fmt: skip
    for n, (expected, got) in enumerate(answers):
        assert got[0] == expected[0], f"call {n}: reference {expected}, got {got}"
        assert set(expected[1]) <= set(got[1]), f"call {n}: reference {expected}, got {got}"


# --- what the hook refuses on its own account -------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "car-verify policy accept",
        "c''ar-verify 'pol'icy acc\"ept\" .car/policies",
        "bash -c 'cd /tmp && car-verify policy accept'",
        "/home/u/.venv/bin/car-verify --profile car policy accept",
        "python3 -m car_verify policy accept",
        "python3 -c 'from car_verify.hook import accept_policies; accept_policies()'",
        # behind a wrapper the reader once took for a program of data (issue 58's review)
        "setarch x86_64 car-ver''ify policy acc''ept .car/policies",
        "linux64 car-verify policy accept",
    ],
)
def test_the_agent_cannot_accept_the_rules(project: Path, command: str) -> None:
    result = call(project, "Bash", {"command": command})
    assert result.decision == "deny", command
    # the hook's own rule, by its name (a deny_command reason holds no literal of the
    # rule: its words are not said), or the phrase the hook finds itself
    assert "policy accept" in result.reason or "deny_command:Bash.car-verify" in result.reason


@pytest.mark.parametrize(
    "command",
    [
        'echo \'{"hook_event_name": "PostToolUse"}\' | car-verify hook',
        "env car-verify hook --policies /tmp/empty < forged.json",
        "python3 -c 'from car_verify import hook; hook.main([])'",
        "python3 -m car_verify hook < forged.json",
    ],
)
def test_the_agent_cannot_run_the_hook_to_forge_an_outcome(project: Path, command: str) -> None:
    result = call(project, "Bash", {"command": command})
    assert result.decision == "deny" and "hook:hook" in result.rules, command


def test_a_script_that_would_accept_is_refused_too(project: Path) -> None:
    script = "import subprocess\nsubprocess.run(['car-verify', 'policy', 'accept'])\n"
    result = call(project, "Write", {"file_path": "x.py", "content": script})
    assert result.decision == "deny" and "hook:policy-accept" in result.rules


def test_a_computed_program_is_put_to_the_user(project: Path) -> None:
    result = call(project, "Bash", {"command": "c=car-verify; $c policy accept"})
    assert result.decision in ("ask", "deny")  # never allowed unseen
    result = call(project, "Bash", {"command": "X=ls; $X -la"})
    assert result.decision == "ask" and "deny_command:Bash.car-verify" in result.reason


def test_the_agent_cannot_write_the_state_folder_or_the_settings(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    xdg = project.parent / "xdg"
    monkeypatch.setenv("XDG_STATE_HOME", str(xdg))
    root = xdg / "car-verify" / "hook"
    how: dict[str, Any] = {"state_dir": None}
    assert call(project, "ls", {}, **how).decision == "allow"
    (state,) = root.iterdir()
    for tool, params in [
        ("Write", {"file_path": str(state / "accepted.json"), "content": "{}"}),
        ("Bash", {"command": f"rm -rf {root}"}),
        ("Bash", {"command": "rm -rf $XDG_STATE_HOME/car-verify"}),
        ("Bash", {"command": "echo > ${XDG_STATE_HOME}/car-verify/hook/x/accepted.json"}),
        ("Bash", {"command": "cd ../../xdg/car-verify/hook && rm -r *"}),
        ("Bash", {"command": f"cd {xdg} && rm -r car-verify"}),
        ("Bash", {"command": "cd $XDG_STATE_HOME; rm -r car-verify"}),
        ("Edit", {"file_path": str(project / ".claude" / "settings.json"), "old_string": "a",
                  "new_string": "b"}),
        ("Bash", {"command": "echo '{}' > ~/.claude/settings.json"}),
        # however the path is spelt: doubled slashes, ".", "..", quotes (issue 58's review)
        ("Bash", {"command": f"rm -r {xdg}//car-verify"}),
        ("Bash", {"command": f"rm -r {xdg}/./car-verify/hook"}),
        ("Bash", {"command": f"rm -r {xdg}/x/../car-verify"}),
        ("Bash", {"command": "rm -rf $XDG_STATE_HOME//car-verify"}),
        ("Bash", {"command": f"rm -r '{xdg}'/car-''verify/hook"}),
        ("Write", {"file_path": str(project / ".claude//settings.json"), "content": "{}"}),
        ("Write", {"file_path": str(project / ".claude/./settings.json"), "content": "{}"}),
        ("Edit", {"file_path": f"{project}/x/../.claude/settings.local.json", "old_string": "a",
                  "new_string": "b"}),
    ]:  # fmt: skip
        result = call(project, tool, params, **how)
        assert result.decision == "deny", params
        assert {"hook:state-folder", "hook:settings"} & set(result.rules), params
    assert call(project, "Read", {"file_path": str(state / "accepted.json")}, **how).decision == (
        "allow"
    )  # reading changes nothing


def test_a_link_in_the_workspace_leads_the_guard_to_the_state_folder_and_settings(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link the agent made in its workspace (under any name, by any means) to the
    state folder or the settings: a write through it names no state folder in its
    text, yet reaches it; the guard follows the link (hostile round 3)."""
    xdg = project.parent / "xdg"
    monkeypatch.setenv("XDG_STATE_HOME", str(xdg))
    monkeypatch.chdir(project)
    how: dict[str, Any] = {"state_dir": None}
    assert call(project, "ls", {}, **how).decision == "allow"
    (state,) = (xdg / "car-verify" / "hook").iterdir()
    (project / "lnk").symlink_to(xdg / "car-verify")
    (project / ".claude").mkdir(exist_ok=True)
    (project / ".claude" / "settings.json").write_text("{}")
    (project / "s.json").symlink_to(project / ".claude" / "settings.json")
    through = f"lnk/hook/{state.name}/accepted.json"
    for tool, params, rule in [
        ("Write", {"file_path": str(project / through), "content": "{}"}, "hook:state-folder"),
        ("Edit", {"file_path": through, "old_string": "a", "new_string": "b"}, "hook:state-folder"),
        ("Write", {"file_path": str(project / "s.json"), "content": "{}"}, "hook:settings"),
    ]:
        result = call(project, tool, params, **how)
        assert result.decision == "deny" and rule in result.rules, params
    assert call(project, "Write", {"file_path": str(project / "notes.txt"), "content": "x"},
                **how).decision == "allow"  # fmt: skip


def test_a_walk_of_cd_steps_to_the_state_folder_or_the_settings_is_not_allowed(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No string names the folder when a line walks there one ``cd`` at a time, or
    writes ``settings.json`` after ``cd .claude`` (hostile round 4): a directory
    change into a folder named like part of those paths, or to a place the hook
    cannot spell out, is put to the user; a line naming the project's own state
    key is refused; ordinary ``cd`` lines are untouched."""
    xdg = project.parent / "xdg"
    monkeypatch.setenv("XDG_STATE_HOME", str(xdg))
    how: dict[str, Any] = {"state_dir": None}
    assert call(project, "ls", {}, **how).decision == "allow"
    (state,) = (xdg / "car-verify" / "hook").iterdir()
    for command, decision in [
        (f"cd {xdg.parent} && cd xdg && cd car-verify && cd hook && cd * && echo > accepted.json",
         "ask"),
        ("cd .claude && printf '{}' > settings.json", "ask"),
        ("cd .cla''ude && printf '{}' > settings.json", "ask"),
        ("cd $SOMEWHERE_UNKNOWN && echo > accepted.json", "ask"),
        ("pushd c* && echo > accepted.json", "ask"),
        (f"cd somewhere && echo x > {state.name}/accepted.json", "deny"),
        ("cd src && make test", "allow"),
        (f"cd {project} && git status", "allow"),
    ]:  # fmt: skip
        result = call(project, "Bash", {"command": command}, **how)
        assert result.decision == decision, (command, result)
        if decision != "allow":
            assert "hook:state-folder" in (result.rules or result.reason), command


def test_the_default_state_folder_is_guarded_however_home_is_spelt(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default state root under ``~/.local/state``: ``//``, ``/./``, ``..``,
    ``$HOME`` and ``~`` all reach it; a variable the hook does not know, or a glob,
    before a segment of its path is put to the user (never allowed unseen)."""
    home = project.parent / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.delenv("CAR_VERIFY_NO_SUCH_VARIABLE", raising=False)
    how: dict[str, Any] = {"state_dir": None}
    assert call(project, "ls", {}, **how).decision == "allow"
    for command in [
        "rm -r ~/.local/state/car-verify",
        "rm -r ~/.local//state/car-verify",
        "rm -r ~/.local/./state/car-verify",
        "rm -r ~/.local/share/../state/car-verify",
        "rm -r $HOME//.local/state",
        "rm -r ${HOME}/.local/state/./car-verify",
        f"rm -r {home}//.local//state",
    ]:
        result = call(project, "Bash", {"command": command}, **how)
        assert result.decision == "deny" and "hook:state-folder" in result.rules, command
    for command in [
        "rm -r $CAR_VERIFY_NO_SUCH_VARIABLE/car-verify",
        "rm -r ~/.l*/state/car-verify",
        "rm -r ~/.local/st?te",
    ]:
        result = call(project, "Bash", {"command": command}, **how)
        assert result.decision == "ask" and "hook:state-folder" in result.reason, command
    # the settings, as spelt by a shell line
    result = call(project, "Bash", {"command": "echo {} > ~/.claude//settings.json"}, **how)
    assert result.decision == "deny" and "hook:settings" in result.rules
    # a file's text is no path: a glob and the word "state" in it ask nothing
    code = {"file_path": str(project / "x.py"), "content": "state = f(*args)  # state/ of it?"}
    assert call(project, "Write", code, **how).decision == "allow"
    # a line naming no part of the state folder is not put to the user
    assert call(
        project, "Bash", {"command": "ls $CAR_VERIFY_NO_SUCH_VARIABLE/src"}, **how
    ).decision == ("allow")


# --- the policy load never blocks, and the hook opens no policy file by name -------------------


@pytest.mark.slow
def test_a_symlink_swapped_to_a_fifo_blocks_no_hook_call(project: Path) -> None:
    """The agent swaps ``p.toml`` between a symlink to the rules and one to a FIFO,
    beside 900 filler files: every hook call answers at once (deny or the rules)."""
    import threading

    folder = policies(project)
    for n in range(900):
        (folder / f"f{n:03d}.toml").write_text("")
    real = project.parent / "real.toml"
    real.write_text(RULES)
    (folder / "rules.toml").unlink()
    fifo = project.parent / "fifo"
    os.mkfifo(fifo)
    link = folder / "p.toml"
    link.symlink_to(real)
    swapping = (  # another process, as the agent's own: it runs while a call waits
        "import os, sys\n"
        "link, real, fifo, stop = sys.argv[1:]\n"
        "n = 0\n"
        "while not os.path.exists(stop):\n"
        "    n += 1\n"
        "    os.symlink(fifo if n % 2 else real, link + '.tmp')\n"
        "    os.replace(link + '.tmp', link)\n"
    )
    stop = project.parent / "stop"
    swapper = subprocess.Popen(
        [sys.executable, "-c", swapping, str(link), str(real), str(fifo), str(stop)]
    )
    answers: list[str | None] = []

    def calls() -> None:
        for _ in range(15):
            answers.append(call(project, "rm_tool", {}).decision)

    caller = threading.Thread(target=calls, daemon=True)
    caller.start()
    caller.join(timeout=120)
    stop.touch()
    swapper.wait(timeout=60)
    blocked = caller.is_alive()
    if blocked:  # let the stuck open go before failing
        with open(fifo, "w"):
            pass
    assert not blocked and answers == ["deny"] * 15


def test_no_path_of_the_hook_opens_a_policy_file_by_name(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every open of a file in the policies folder, in a hook call (before and
    after a call, first use and later), is the loader's: one open that cannot
    block (O_NONBLOCK), judged by fstat on its descriptor."""
    import builtins
    import io

    folder = str(policies(project).resolve())
    opened: list[tuple[str, int | None]] = []
    real_open, real_os_open = builtins.open, os.open

    def spy_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, (str, os.PathLike)):
            opened.append((os.path.realpath(file), None))
        return real_open(file, *args, **kwargs)

    def spy_os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        opened.append((os.path.realpath(path), flags))
        return real_os_open(path, flags, *args, **kwargs)

    def spied(*args: Any) -> None:
        with monkeypatch.context() as spying:
            spying.setattr(builtins, "open", spy_open)
            spying.setattr(io, "open", spy_open)
            spying.setattr(os, "open", spy_os_open)
            call(project, *args)

    spied("Read", {"file_path": "a"})
    spied("Read", {"file_path": "a"}, "PostToolUse")
    (policies(project) / "rules.toml").write_text("")
    spied("Bash", {"command": "ls"})
    spied("Bash", {"command": "ls"}, "PostToolUseFailure")
    mine = [(p, f) for p, f in opened if p.startswith(folder + os.sep)]
    assert len(mine) == 4  # the loader's one open per call
    assert all(f is not None and f & os.O_NONBLOCK for _, f in mine), mine


def test_policy_accept_of_a_folder_that_is_not_there_names_it(tmp_path: Path) -> None:
    from car_verify.base.errors import InputError
    from car_verify.hook import accept_policies

    with pytest.raises(InputError, match="policy accept DIR") as raised:
        accept_policies(tmp_path / "nowhere", state_dir=tmp_path / "state")
    assert raised.value.source == str(tmp_path / "nowhere")
    assert not (tmp_path / "state").exists()  # nothing written
