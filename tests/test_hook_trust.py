"""The hook's trust model (docs/security.md), from the agent's side: everything the
agent can write in its workspace (nested folders, extra files, symlinks, a flood
of files, edits to the rules mid-session) leaves the rules in force, or denies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from samples import claude

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
    project: Path, tool: str, params: dict[str, Any], event: str = "PreToolUse", **how: Any
) -> Any:
    payload = {**claude(tool, params), "hook_event_name": event, "cwd": str(project)}
    if "policies" not in how and "env" not in how:
        how["policies"] = project / ".car" / "policies"
    how.pop("env", None)
    how.setdefault("state_dir", project.parent / "state")
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
    assert result.decision == "deny" and any("no longer" in w for w in result.warnings)
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
        if file.name != "trace-rules.json":
            file.write_text('{"format": 3, "trace": {}, "windows": {}, "in_force": 7}')
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
