"""Sample inputs several test modules share: transcript records of each format the
importers read, and the hook's payloads and rules."""

from __future__ import annotations

from typing import Any

#: A project's hook rules: a denied tool, a parameter rule, a rate limit, a trace rule.
HOOK_POLICY = """deny_tool = ["rm"]
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


def claude(
    tool: str,
    tool_input: Any,
    session: str = "s1",
    *,
    event: str = "PreToolUse",
    **extra: Any,
) -> dict[str, Any]:
    """A Claude Code hook payload, as its hooks reference documents it."""
    return {
        "session_id": session,
        "transcript_path": "/home/u/.claude/projects/x.jsonl",
        "cwd": "",
        "permission_mode": "default",
        "hook_event_name": event,
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "toolu_01",
        **extra,
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


def tool_call(ident: str, name: str, arguments: str) -> dict[str, Any]:
    """An OpenAI chat tool call."""
    return {"id": ident, "type": "function", "function": {"name": name, "arguments": arguments}}


def openai_record() -> dict[str, Any]:
    """An OpenAI chat record: two calls (one with arguments that are not JSON, one
    failing), then a call that reuses an id."""
    return {
        "id": "run-1",
        "reward": 1,
        "model": "gpt-x",
        "messages": [
            {"role": "user", "content": "find and book"},
            {"role": "assistant", "content": None, "tool_calls": [
                tool_call("a", "search", '{"q": "x"}'), tool_call("b", "book", "not json"),
            ]},
            {"role": "tool", "tool_call_id": "a", "content": '["r1"]'},
            {"role": "tool", "tool_call_id": "b", "content": "Error: sold out"},
            {"role": "assistant", "content": None,
             "tool_calls": [tool_call("a", "search", '{"q": "x"}')]},
        ],
    }  # fmt: skip


def anthropic_record() -> dict[str, Any]:
    """An Anthropic messages record: a text block and a tool use that failed."""
    use = {"type": "tool_use", "id": "t1", "name": "read", "input": {"p": 1}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "ok", "is_error": True}
    return {"id": "s1", "messages": [
        {"role": "assistant", "content": [{"type": "text", "text": "hi"}, use]},
        {"role": "user", "content": [result]},
    ]}  # fmt: skip


def atif_record() -> dict[str, Any]:
    """An ATIF trajectory: one step with a call and its observation, and `extra`
    holding the reward, a scalar and a nested value."""
    step = {
        "step_id": 1, "source": "agent", "message": "",
        "tool_calls": [{"tool_call_id": "x", "function_name": "ls", "arguments": {"d": "/"}}],
        "observation": {"results": [{"source_call_id": "x", "content": "a b"}]},
    }  # fmt: skip
    return {"schema_version": "ATIF-v1.7", "session_id": "sess",
            "agent": {"name": "a", "model_name": "m"}, "steps": [step],
            "extra": {"reward": 0.0, "task": "t7", "nested": {"x": 1}}}  # fmt: skip
