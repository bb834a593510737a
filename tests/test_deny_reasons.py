"""Every face's deny message says what would satisfy the rule (issue 60: which call
must come first, which parameter is refused, when the rate window's next slot
opens) and holds no literal of the rule nor any value of the call.

Each case is a rule of one kind, the calls before (admitted, with their outcome),
and a call it denies; each face is asked about the same calls: the gate itself,
the framework integrations' run (their one refusal message), the executor, the
agent hook and the static check (``verify --policies``, the MCP server's
``policy_check``)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import car_verify
from car_verify import hook
from car_verify.executor import execute_sync
from car_verify.integrations._runs import Rules, decide, refusal, report
from car_verify.plan.gate import UNDECIDED, CallGate, Verdict
from car_verify.rules.policy import PolicyEngine, load_policy_text

#: Literals written only in the rules, and values sent only by the calls: none may
#: be said by a deny message.
SECRET_RULE = "zq-rule-7731"
SECRET_CALL = "zq-call-4409"


@dataclass(frozen=True)
class Case:
    """``policy``: the rules; ``before``: (tool, params, outcome) admitted first;
    ``call``: the call denied; ``says``: what the message must say (a regex: how to
    satisfy the rule); ``rule``: the denying rule's name."""

    policy: str
    call: tuple[str, dict[str, Any]]
    says: str
    rule: str
    before: tuple[tuple[str, dict[str, Any], str], ...] = field(default=())


CASES = {
    "deny_tool": Case(
        'deny_tool = ["wipe"]\n', ("wipe", {"path": SECRET_CALL}), "use another tool",
        "deny_tool:wipe",
    ),
    "deny_tool_param absent": Case(
        '[[deny_tool_param]]\ntool = "fetch"\nparam = "proxy"\n',
        ("fetch", {"proxy": SECRET_CALL}), "parameter 'proxy' .*admitted without it",
        "deny_tool_param:fetch.proxy",
    ),
    "deny_tool_param contains": Case(
        f'[[deny_tool_param]]\ntool = "fetch"\nparam = "url"\ncontains = "{SECRET_RULE}"\n',
        ("fetch", {"url": f"https://{SECRET_RULE}.{SECRET_CALL}"}),
        "parameter 'url' .*send another value, or leave the parameter out",
        "deny_tool_param:fetch.url",
    ),
    "allow_tool_param": Case(
        f'[[allow_tool_param]]\ntool = "deploy"\nparam = "env"\nallow = ["{SECRET_RULE}", "dev"]\n',
        ("deploy", {"env": SECRET_CALL}), "parameter 'env' .*give one of the rule's 2 allowed",
        "allow_tool_param:deploy.env",
    ),
    "deny_tool_param_matching": Case(
        f'[[deny_tool_param_matching]]\ntool = "put"\nparam = "key"\nmatches = "^{SECRET_RULE}"\n',
        ("put", {"key": SECRET_RULE + SECRET_CALL}), "parameter 'key' .*send a value without it",
        "deny_tool_param_matching:put.key",
    ),
    "deny_keyword": Case(
        f'deny_keyword = ["{SECRET_RULE}"]\n', ("post", {"body": f"{SECRET_CALL} {SECRET_RULE}"}),
        "parameter 'body' .*admitted without it", "deny_keyword:",
    ),
    "deny_command": Case(
        '[[deny_command]]\nprogram = "rm"\nflags = ["-r", "-f"]\n',
        ("Bash", {"command": f"rm -rf /{SECRET_CALL}"}), "leave that command out of the line",
        "deny_command:Bash.rm",
    ),
    "allow_command": Case(
        f'[[allow_command]]\nprefixes = ["git status", "echo {SECRET_RULE}"]\n',
        ("Bash", {"command": f"curl {SECRET_CALL}"}),
        "none of the rule's 2 allowed prefixes: run only the commands the rule allows",
        "allow_command:Bash",
    ),
    "rate_limit_tool": Case(
        '[[rate_limit_tool]]\ntool = "send"\nmax_calls = 1\ninterval_secs = 60\n',
        ("send", {"to": SECRET_CALL}), r"the window's next slot opens in (60|59(\.\d)?) s",
        "rate_limit_tool:send", before=(("send", {"to": "a"}, "succeeded"),),
    ),
    "trace_rule only after": Case(
        "[[trace_rule]]\nname = \"tested\"\n"
        f"rule = 'deploy where env == \"{SECRET_RULE}\" only after run_tests succeeded'\n",
        ("deploy", {"env": SECRET_RULE}), "deploy is allowed only after run_tests succeeded",
        "trace_rule:tested", before=(("run_tests", {}, "failed"),),
    ),
    "trace_rule at most": Case(
        "[[trace_rule]]\nname = \"once\"\nrule = 'at most 1 migrate'\n",
        ("migrate", {"db": SECRET_CALL}), "migrate is allowed at most 1 times in a run",
        "trace_rule:once", before=(("migrate", {"db": "a"}, "succeeded"),),
    ),
}  # fmt: skip


def gate_face(case: Case, tmp_path: Path) -> str:
    gate = CallGate(load_policy_text(case.policy), clock=lambda: 0.0)
    for tool, params, outcome in case.before:
        verdict = gate.decide(tool, params)
        assert verdict.allowed, verdict.reason()
        gate.report(tool, verdict.sent, outcome)  # type: ignore[arg-type]
    verdict = gate.decide(*case.call)
    assert verdict.decision == "deny"
    return verdict.reason()


def framework_face(case: Case, tmp_path: Path) -> str:
    rules = Rules(
        load_policy_text(case.policy), on_unknown=UNDECIDED["langchain"], clock=lambda: 0.0
    )
    run = rules.new_run()
    for tool, params, outcome in case.before:
        verdict = decide(run, rules, tool, params)
        assert isinstance(verdict, Verdict) and verdict.allowed
        report(run, tool, verdict.sent, outcome)  # type: ignore[arg-type]
    verdict = decide(run, rules, *case.call)
    assert isinstance(verdict, Verdict) and verdict.decision == "deny"
    return refusal(verdict)


def executor_face(case: Case, tmp_path: Path) -> str:
    steps = [*case.before, (*case.call, "succeeded")]
    actions = []
    for n, (tool, params, _) in enumerate(steps):
        action: dict[str, Any] = {"id": f"a{n}", "type": "tool_call", "tool": tool}
        action |= {"parameters": params, "failure_behavior": "skip"}
        if n:
            action["dependencies"] = [f"a{n - 1}"]
        actions.append(action)

    def tool_of(outcome: str) -> Callable[..., Any]:
        def run(**params: Any) -> Any:
            if outcome == "failed":
                raise RuntimeError("failed as the case says")
            return {"ok": True}

        return run

    tools = {tool: tool_of(outcome) for tool, _, outcome in steps}
    engine = PolicyEngine(load_policy_text(case.policy), clock=lambda: 0.0)
    result = execute_sync({"actions": actions}, tools, policies=engine)
    last = f"a{len(steps) - 1}"  # the rule's name beside its reason, as the result holds them
    said = [f"{v.policy_name}: {v.reason}" for v in result.violations if v.action_id == last]
    assert said, result.violations
    return "; ".join(said)


def hook_face(case: Case, tmp_path: Path) -> str:
    folder = tmp_path / "policies"
    folder.mkdir()
    (folder / "rules.toml").write_text(case.policy)
    options: dict[str, Any] = {"policies": folder, "state_dir": tmp_path / "state"}

    def payload(event: str, tool: str, params: dict[str, Any], **more: Any) -> dict[str, Any]:
        doc = {"hook_event_name": event, "session_id": "s", "tool_name": tool}
        return doc | {"tool_input": params, **more}

    for tool, params, outcome in case.before:
        assert hook.decide(payload("PreToolUse", tool, params), **options).decision == "allow"
        event = "PostToolUseFailure" if outcome == "failed" else "PostToolUse"
        hook.decide(payload(event, tool, params, tool_response={}), **options)
    out, _ = hook.answer(json.dumps(payload("PreToolUse", *case.call)), **options)
    said = json.loads(out)["hookSpecificOutput"]
    assert said["permissionDecision"] == "deny", said
    return str(said["permissionDecisionReason"])


def static_face(case: Case, tmp_path: Path) -> str:
    steps = [*case.before, (*case.call, "succeeded")]
    actions = [
        {"id": f"a{n}", "type": "tool_call", "tool": tool, "parameters": params}
        | ({"state_dependencies": [f"k{n - 1}"]} if n else {})
        | {"expected_effects": {f"k{n}": True}}
        for n, (tool, params, _) in enumerate(steps)
    ]
    if any(outcome == "failed" for *_, outcome in case.before):
        pytest.skip("a plan's check does not know which earlier call fails")
    result = car_verify.verify({"actions": actions}, policies=load_policy_text(case.policy))
    last = f"a{len(steps) - 1}"  # the rule's name is the finding's code
    said = [f"{i.code}: {i.message}" for i in result.issues if i.action_id == last]
    assert said, [(i.code, i.message) for i in result.issues]
    return "; ".join(said)


FACES = {
    "gate": gate_face,
    "framework": framework_face,
    "executor": executor_face,
    "hook": hook_face,
    "static": static_face,
}


@pytest.mark.parametrize("face", sorted(FACES))
@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_deny_says_what_would_satisfy_the_rule_and_no_literal(
    face: str, kind: str, tmp_path: Path
) -> None:
    case = CASES[kind]
    message = FACES[face](case, tmp_path)
    assert case.rule in message, message
    assert re.search(case.says, message), (case.says, message)
    for literal in (SECRET_RULE, SECRET_CALL):
        assert literal not in message, message
