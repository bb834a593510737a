"""The one gate, held to the plain reference (tests/gate_reference.py): on generated
rule sets of every kind the registry holds (two to six rules) and generated call
sequences with outcomes, the gate itself, the agent hook (end to end, through
PreToolUse / PostToolUse payloads) and the executor give the reference's decision
and rule names."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

import pytest
from gate_reference import (
    DEFINITIONS,
    SEGMENTS,
    UNREADABLE,
    AllowCommand,
    AllowToolParam,
    DenyCommand,
    DenyKeyword,
    DenyTool,
    DenyToolParam,
    DenyToolParamMatching,
    Line,
    Pattern,
    RateLimit,
    ReferenceGate,
    RegisteredCallback,
    RegisteredDenyTool,
    RegisteredDenyToolParam,
    RegisteredRequireState,
    Rule,
    TraceRule,
    line_value,
    register,
    toml,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from car_verify.plan.gate import UNDECIDED, CallGate
from car_verify.rules.kinds import KINDS
from car_verify.rules.policy import PolicyEngine, load_policy_text
from car_verify.rules.trace import TraceGate, parse_trace_rule

TOOLS = ["a", "b", "Bash"]
#: The tools calls are made to: ``bash`` is ``Bash`` to the shell rules, not to others.
CALL_TOOLS = [*TOOLS, "bash"]
#: ``["C:\\x"]``: its JSON text doubles the backslash, so only a rule that reads the
#: strings inside a value (as every content rule does) finds ``:\x`` in it.
VALUES: list[Any] = [1, 2, "x", "kw", ["kw", 1], {"kw": "x"}, "a zz", True, 2.0, ["C:\\x"]]
STATES: list[Any] = [None, {}, {"ok": True}, {"ok": 1}]

tests_ = st.sampled_from([None, ("p", 1), ("p", 2), ("p", "x")])


def patterns(event: bool = False) -> st.SearchStrategy[Pattern]:
    outcome = st.sampled_from([None, "succeeded", "failed"]) if event else st.just(None)
    return st.builds(Pattern, st.sampled_from([*TOOLS, None]), tests_, outcome)


tools = st.sampled_from(TOOLS)
params = st.sampled_from(["p", "q"])

#: A rule of each kind, by the registry's name for it (``n``: the rule's number,
#: which names a registered or a trace rule). A kind without one fails a test.
STRATEGIES: dict[str, Any] = {
    "deny_tool": lambda n: st.builds(DenyTool, tools),
    "deny_keyword": lambda n: st.builds(DenyKeyword, st.sampled_from(["kw", "zz"]), st.just(0)),
    "deny_tool_param": lambda n: st.one_of(
        st.builds(DenyToolParam, tools, params, st.sampled_from(VALUES),
                  st.sampled_from([None, "k", "z"]), st.booleans()),
        st.builds(DenyToolParam, tools, params, contains=st.sampled_from([None, "x", ":\\x"])),
    ),
    "allow_tool_param": lambda n: st.builds(
        AllowToolParam, tools, params,
        st.lists(st.sampled_from(["1", "x", "2", '["kw",1]']), max_size=2).map(tuple),
    ),
    "deny_tool_param_matching": lambda n: st.builds(
        DenyToolParamMatching, tools, params,
        st.sampled_from(["^x", "k.", "[0-9]", "z$", "kw|^2", "x{2}"]),
    ),
    "deny_command": lambda n: st.one_of(
        st.builds(DenyCommand, st.just("rm"), st.sampled_from([(), ("-r",), ("-r", "-f")]),
                  tool=st.sampled_from(["Bash", "a"])),
        st.builds(DenyCommand, st.just("git"), st.just(("--force",)), st.just(("push",))),
        st.builds(DenyCommand, st.just("sh"), input_from=st.just(("curl",))),
        st.builds(DenyCommand, st.sampled_from(["ls", "npm"]), st.sampled_from([(), ("-l",)])),
    ),
    "allow_command": lambda n: st.builds(
        AllowCommand,
        st.lists(st.sampled_from(["ls", "git status", "npm run test", "rm -rf", "git push",
                                  "echo", "sh"]), min_size=1, max_size=4).map(tuple),
        tool=st.sampled_from(["Bash", "a"]),
    ),
    "rate_limit_tool": lambda n: st.builds(RateLimit, tools, st.integers(0, 3)),
    "trace_rule": lambda n: st.one_of(
        st.builds(TraceRule, st.just("never"), st.just(f"r{n}"), patterns()),
        st.builds(TraceRule, st.just("at_most"), st.just(f"r{n}"), patterns(),
                  limit=st.integers(0, 3)),
        st.builds(TraceRule, st.sampled_from(["never_after", "only_after"]), st.just(f"r{n}"),
                  patterns(), patterns(event=True)),
    ),
    "registered deny_tool": lambda n: st.builds(RegisteredDenyTool, st.just(f"r{n}"), tools),
    "registered deny_tool_param": lambda n: st.builds(
        RegisteredDenyToolParam, st.just(f"r{n}"), tools, params, st.sampled_from(["k", "2"])
    ),
    "registered require_state": lambda n: st.builds(
        RegisteredRequireState, st.just(f"r{n}"), st.just("ok"), st.sampled_from([True, 1])
    ),
    "registered deny_tool_callback": lambda n: st.builds(
        RegisteredCallback, st.just(f"r{n}"), st.sampled_from([None, *TOOLS])
    ),
}  # fmt: skip

FILE_KINDS = [k.name for k in KINDS if not k.registered]
ALL_KINDS = [k.name for k in KINDS]


def test_every_kind_has_a_reference_definition_and_rules_generated() -> None:
    """A kind added to the registry without a plain definition here (or without a
    strategy that makes its rules) is not held to a reference: this fails."""
    assert set(DEFINITIONS) == set(ALL_KINDS)
    assert set(STRATEGIES) == set(ALL_KINDS)


def rules(kinds: list[str], focus: str | None = None) -> st.SearchStrategy[list[Rule]]:
    """Two to six rules of a few of ``kinds`` (so that rules of the same kinds meet
    on one call); with ``focus``, one to three of that kind among them."""

    @st.composite
    def draw_rules(draw: st.DrawFn) -> list[Rule]:
        chosen = draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=3, unique=True))
        drawn = [focus] * draw(st.integers(1, 3)) if focus else []
        drawn += [
            draw(st.sampled_from(chosen)) for _ in range(draw(st.integers(2, 6)) - len(drawn))
        ]
        drawn = draw(st.permutations(drawn))
        out: list[Rule] = [draw(STRATEGIES[kind](n)) for n, kind in enumerate(drawn)]
        keywords = [r for r in out if isinstance(r, DenyKeyword)]
        for number, r in enumerate(keywords, 1):  # named by their place in the list
            r.number, r.name = number, f"deny_keyword:{number}"
        return out

    return draw_rules()


@st.composite
def lines(draw: st.DrawFn) -> Any:
    """A shell line (its text, known to the reference), an argv, or no line."""
    form = draw(st.sampled_from(["line", "line", "line", "argv", "none"]))
    if form == "argv":
        return draw(st.sampled_from([["ls", "-la"], ["rm", "-rf", "x"], ["npm", "run", "test"]]))
    if form == "none":
        return draw(st.sampled_from([1, {"cmd": "ls"}]))
    segments = draw(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3))
    if draw(st.integers(0, 9)) == 0:
        segments.append(UNREADABLE)
    joints = draw(st.lists(st.sampled_from(["; ", " && "]), min_size=len(segments) - 1,
                           max_size=len(segments) - 1))  # fmt: skip
    return line_value(Line(tuple(segments), tuple(joints)))


@st.composite
def call_params(draw: st.DrawFn) -> dict[str, Any]:
    form = draw(st.sampled_from(["none", "p", "q", "pq", "command", "command", "named"]))
    out: dict[str, Any] = {}
    if form == "named":  # a parameter whose name holds a keyword
        out["a kw"] = draw(st.sampled_from(VALUES))
    if form in ("p", "pq"):
        out["p"] = draw(st.sampled_from(VALUES))
    if form in ("q", "pq"):
        out["q"] = draw(st.sampled_from(VALUES))
    if form == "command":
        out["command"] = draw(lines())
    return out


#: A step: a call, the run's state, and what becomes of its outcome if it is
#: admitted: reported at once, reported after the next call, or never (the agent's
#: prompt refused it).
@st.composite
def step(draw: st.DrawFn, shell_only: bool = False) -> tuple[Any, ...]:
    params = {"command": draw(lines())} if shell_only else draw(call_params())
    # a shell line is sent to a shell tool, mostly (the shell rules' tools: Bash, a)
    shell = "command" in params and draw(st.integers(0, 3)) > 0
    tool = draw(st.sampled_from(["Bash", "bash", "a"] if shell else CALL_TOOLS))
    return (
        tool,
        params,
        draw(st.sampled_from(STATES)),
        draw(st.sampled_from(["succeeded", "failed"])),
        draw(st.sampled_from(["now", "now", "later", "never"])),
    )


steps = st.lists(step(), min_size=1, max_size=12)
#: Shell lines only, to the shell tools mostly.
shell_steps = st.lists(step(shell_only=True), min_size=1, max_size=8)


def replay(
    rule_set: list[Rule], calls: list[Any], face: Any, on_unknown: Any = "deny"
) -> list[tuple[Any, Any]]:
    """Drive the reference and ``face`` (pre(tool, params, state) -> (decision, names);
    post(tool, params, outcome)) through the same events; both answers per call."""
    ref = ReferenceGate(rule_set, on_unknown)
    out = []
    late: list[tuple[int, str, dict[str, Any], str]] = []
    for tool, params, state, outcome, when in calls:
        decision, names, number = ref.pre(tool, params, state)
        got = face.pre(tool, params, state)
        out.append(((decision, sorted(names)), (got[0], sorted(got[1]))))
        for n, t, p, o in late:  # an outcome reported after the next call came
            ref.post(n, o)  # type: ignore[arg-type]
            face.post(t, p, o)
        late = []
        if decision != "deny" and when == "now":
            ref.post(number, outcome)
            face.post(tool, params, outcome)
        elif decision != "deny" and when == "later":
            late.append((number, tool, params, outcome))
    return out


class GateFace:
    def __init__(self, rule_set: list[Rule], on_unknown: Any = "deny") -> None:
        engine = PolicyEngine(load_policy_text(toml(rule_set)))
        register(rule_set, engine)
        self.gate = CallGate(engine, on_unknown=on_unknown)

    def pre(self, tool: str, params: dict[str, Any], state: Any) -> tuple[str, list[str]]:
        verdict = self.gate.decide(tool, params, state)
        return verdict.decision, verdict.rules

    def post(self, tool: str, params: dict[str, Any], outcome: Any) -> None:
        self.gate.report(tool, params, outcome)


#: The hook's own rules (``car_verify.hook.GUARD_RULES``), which judge every call
#: beside the policies: the reference of a hook face holds them too.
HOOK_GUARD: list[Rule] = [
    DenyCommand("car-verify", args=("policy", "accept")),
    DenyCommand("car-verify", args=("hook",)),
]


class HookFace:
    """The agent hook, end to end: each call a PreToolUse payload, each outcome a
    PostToolUse (or PostToolUseFailure) payload, one session; a rule it cannot
    decide gets the hook's answer in the table of faces (``ask``)."""

    def __init__(self, text: str, root: Path) -> None:
        from car_verify import hook

        self.hook = hook
        self.folder = root / "project" / ".car" / "policies"
        self.folder.mkdir(parents=True)
        (self.folder / "rules.toml").write_text(text, encoding="utf-8")
        self.state = root / "state"

    def _send(self, payload: dict[str, Any]) -> Any:
        base = {"session_id": "s", "cwd": str(self.folder.parent.parent)}
        _, answer = self.hook.answer(
            json.dumps({**base, **payload}), policies=self.folder, state_dir=self.state,
            on_unknown=UNDECIDED["hook"],
        )  # fmt: skip
        return answer

    def pre(self, tool: str, params: dict[str, Any], state: Any) -> tuple[str, list[str]]:
        answer = self._send(
            {"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": params}
        )
        return answer.decision, answer.rules

    def post(self, tool: str, params: dict[str, Any], outcome: str) -> None:
        event = "PostToolUse" if outcome == "succeeded" else "PostToolUseFailure"
        self._send({"hook_event_name": event, "tool_name": tool, "tool_input": params,
                    "tool_response": {}})  # fmt: skip


def agree(answers: list[Any]) -> None:
    for n, (expected, got) in enumerate(answers):
        assert got == expected, f"call {n}: reference {expected}, got {got}"


@given(rules(ALL_KINDS), steps)
def test_the_gate_gives_the_reference_decision(rule_set: list[Rule], calls: list[Any]) -> None:
    """Every kind, registered ones too; a rule that cannot be decided refused."""
    agree(replay(rule_set, calls, GateFace(rule_set)))


#: Examples per kind below: a quarter of the profile's, from 20 to 40 (CI time).
PER_KIND = min(40, max(20, (settings.default.max_examples if settings.default else 80) // 4))


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_each_kind_gives_the_reference_decision(kind: str) -> None:
    """Each kind of the registry, with one to three of its rules in every set (and
    rules of other kinds beside them)."""

    @settings(max_examples=PER_KIND)
    @given(rule_set=rules(ALL_KINDS, focus=kind), calls=steps)
    def check(rule_set: list[Rule], calls: list[Any]) -> None:
        agree(replay(rule_set, calls, GateFace(rule_set)))

    check()


@st.composite
def shell_cases(draw: st.DrawFn) -> tuple[list[Rule], list[Any]]:
    """Shell rules and shell calls over one small vocabulary of line pieces: the
    rules' programs and prefixes are those the pieces run, so that a line is often
    all allowed but for what is not understood in it."""
    vocabulary = draw(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=4, unique=True))
    words = [c.words for seg in vocabulary for c in seg.commands] or [("ls",)]
    rule_set: list[Rule] = []
    for _ in range(draw(st.integers(1, 3))):
        chosen = draw(st.sampled_from(words))
        if draw(st.booleans()):
            prefixes = draw(st.lists(st.sampled_from(words), min_size=1, max_size=3))
            cut = [" ".join(shlex.quote(w) for w in p[: draw(st.integers(1, 2))]) for p in prefixes]
            rule_set.append(AllowCommand(tuple(cut)))
        else:
            program = os.path.basename(chosen[0])
            flags = tuple(w for w in chosen[1:2] if w.startswith("-") and w != "--")
            rule_set.append(DenyCommand(program, flags))
    if draw(st.booleans()):
        rule_set.append(draw(STRATEGIES["trace_rule"](len(rule_set))))
    calls = []
    for _ in range(draw(st.integers(1, 6))):
        pieces = draw(st.lists(st.sampled_from(vocabulary), min_size=1, max_size=2))
        joints = tuple(draw(st.sampled_from(["; ", " && "])) for _ in pieces[1:])
        line = line_value(Line(tuple(pieces), joints))
        calls.append((draw(st.sampled_from(["Bash", "bash"])), {"command": line},
                      None, draw(st.sampled_from(["succeeded", "failed"])), "now"))  # fmt: skip
    return rule_set, calls


@given(shell_cases())
def test_the_gate_gives_the_reference_decision_on_shell_lines(case: Any) -> None:
    """The shell kinds, where the lines meet them: programs and prefixes taken from
    the very pieces the lines are made of."""
    rule_set, calls = case
    agree(replay(rule_set, calls, GateFace(rule_set)))


@given(rules(["deny_command", "allow_command", "trace_rule"]), shell_steps)
def test_the_gate_gives_the_reference_decision_on_any_line(
    rule_set: list[Rule], calls: list[Any]
) -> None:
    """The shell kinds on any line: understood or not, an argv, no line at all."""
    agree(replay(rule_set, calls, GateFace(rule_set)))


@given(rules(ALL_KINDS), steps)
def test_the_gate_asks_what_it_cannot_decide_when_told_to(
    rule_set: list[Rule], calls: list[Any]
) -> None:
    """With ``ask`` for an undecided rule (the hook's answer), the call may run: the
    trace counts it from then, as the reference does."""
    agree(replay(rule_set, calls, GateFace(rule_set, "ask"), "ask"))


@given(rules(FILE_KINDS), steps)
def test_the_hook_gives_the_reference_decision(
    tmp_path_factory: pytest.TempPathFactory, rule_set: list[Rule], calls: list[Any]
) -> None:
    root = tmp_path_factory.mktemp("hook")
    face = HookFace(toml(rule_set), root)
    agree(replay([*HOOK_GUARD, *rule_set], calls, face, UNDECIDED["hook"]))


@given(rule_set=rules(FILE_KINDS), calls=steps)
def test_the_executor_gives_the_reference_decision(rule_set: list[Rule], calls: list[Any]) -> None:
    """A plan of the calls in order (one level, which the car profile runs one action
    at a time in proposal order, as the runtime does; ``skip`` on failure); a tool
    fails where the step says so. Every outcome is reported as the call ends. (Under
    strict a level's calls are dispatched at once: the gate is the same object, and
    the single-call tests below run under both profiles.)"""
    profile = "car"
    from car_verify import execute_sync

    actions = []
    for n, (tool, params, _, outcome, _) in enumerate(calls):
        action: dict[str, Any] = {
            "id": f"s{n}",
            "type": "tool_call",
            "tool": tool,
            "parameters": {**params, "_outcome": outcome},
            "failure_behavior": "skip",
        }
        actions.append(action)

    def tool(params: dict[str, Any]) -> Any:
        if params["_outcome"] == "failed":
            raise RuntimeError("the step fails")
        return {}

    # The reference, with every outcome reported at once (the executor knows it then).
    ref = ReferenceGate(rule_set, UNDECIDED["executor"])  # type: ignore[arg-type]
    expected = []
    for tool_name, params, _, outcome, _ in calls:
        decision, names, number = ref.pre(tool_name, {**params, "_outcome": outcome})
        expected.append((decision != "deny", sorted(names)))
        if decision != "deny":
            ref.post(number, outcome)  # type: ignore[arg-type]
    plan = {"actions": actions}
    result = execute_sync(
        plan,
        dict.fromkeys(CALL_TOOLS, tool),
        policies=load_policy_text(toml(rule_set)),
        profile=profile,
    )
    got = []
    for n, r in enumerate(result.result.results):
        names = sorted({v.policy_name for v in result.violations if v.action_id == f"s{n}"})
        got.append((r.status.value != "rejected", names))
    assert got == expected, f"reference {expected}, executor {got}"


# --- the cases found by hand -------------------------------------------------------------------


def test_a_rule_with_a_where_test_leaves_the_next_rule_its_tool() -> None:
    """The bug of b78b073: the first matching rule's text took the place of the
    tool's name for every later rule, so the second rule never fired."""
    g = TraceGate(
        [
            parse_trace_rule('at most 5 deploy where env == "prod"'),
            parse_trace_rule("never deploy after read_secret"),
        ]
    )
    assert g.dispatch("read_secret", {}) == []
    assert [v.policy_name for v in g.dispatch("deploy", {"env": "prod"})] == [
        "trace_rule:never deploy after read_secret"
    ]


def test_only_after_waits_for_the_outcome() -> None:
    """An admitted call that has not reported does not open the way."""
    gate = CallGate(
        load_policy_text('[[trace_rule]]\nname = "t"\nrule = "deploy only after run_tests"\n')
    )
    assert gate.decide("run_tests", {}).allowed
    assert not gate.decide("deploy", {}).allowed  # run_tests is pending
    gate.report("run_tests", {}, "failed")
    assert gate.decide("deploy", {}).allowed  # it ran (any outcome, as the rule says)


def test_a_deny_reason_holds_no_literal() -> None:
    secret = "sk-live-0123456789"
    text = (
        f'deny_keyword = ["{secret}"]\n'
        "[[trace_rule]]\n"
        f"rule = 'never http where body contains \"{secret}\"'\n"
        "[[trace_rule]]\n"
        'rule = \'never send where to == "boss@example.org" after read where path == "/etc"\'\n'
    )
    gate = CallGate(load_policy_text(text, source="/p/rules.toml"))
    first = gate.decide("http", {"body": f"x {secret} y"})
    gate.decide("read", {"path": "/etc"})
    gate.report("read", {"path": "/etc"}, "succeeded")
    second = gate.decide("send", {"to": "boss@example.org"})
    for verdict in (first, second):
        assert verdict.decision == "deny"
        for word in (secret, "boss@", "/etc"):
            assert word not in verdict.reason()
    assert "trace_rule:rules.toml:5" in second.reason()


def test_a_tool_that_changes_its_parameters_cannot_change_its_retry() -> None:
    """Every attempt is checked on a frozen copy of what is sent; a tool that
    mutates the dict it was handed and raises is retried with the checked copy."""
    from car_verify import execute_sync

    seen: list[str] = []

    def fetch(params: dict[str, Any]) -> Any:
        seen.append(params["url"])
        params["url"] = "http://169.254.169.254/latest"
        raise RuntimeError("try again")

    plan = {
        "actions": [
            {
                "id": "f",
                "type": "tool_call",
                "tool": "fetch",
                "parameters": {"url": "https://example.org"},
                "failure_behavior": "retry",
                "max_retries": 2,
            }
        ]
    }
    policy = '[[deny_tool_param]]\ntool = "fetch"\nparam = "url"\ncontains = "169.254"\n'
    for profile in ("car", "strict"):
        seen.clear()
        execute_sync(plan, {"fetch": fetch}, policies=load_policy_text(policy), profile=profile)
        assert seen == ["https://example.org"] * 3


def test_a_retry_is_checked_again() -> None:
    """A retry is a call: the gate decides it (here a rate limit of two calls)."""
    from car_verify import execute_sync

    calls: list[int] = []

    def flaky(params: dict[str, Any]) -> Any:
        calls.append(1)
        raise RuntimeError("down")

    plan = {
        "actions": [
            {"id": "f", "type": "tool_call", "tool": "flaky", "failure_behavior": "retry",
             "max_retries": 5}
        ]
    }  # fmt: skip
    policy = '[[rate_limit_tool]]\ntool = "flaky"\nmax_calls = 2\ninterval_secs = 60\n'
    result = execute_sync(plan, {"flaky": flaky}, policies=load_policy_text(policy))
    assert len(calls) == 2
    assert result.violations and result.violations[0].policy_name == "rate_limit_tool:flaky"


# --- the approval ledger on a full disk ---------------------------------------------------------


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Any:
    """A 16 kB tmpfs (root only; skipped where mounting is not permitted)."""
    import subprocess

    where = tmp_path / "disk"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(where)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_ledger_append_on_a_full_disk_is_all_or_nothing(
    tiny_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from car_verify.cli import main
    from car_verify.plan.permissions import Ledger

    ledger = tiny_disk / "ledger.jsonl"
    plan = tiny_disk.parent / "plan.json"
    plan.write_text(
        json.dumps({"actions": [{"id": "d", "type": "tool_call", "tool": "deploy_prod"}]})
    )
    base = ["permissions", str(plan), "--granted", "read_only", "--ledger", str(ledger)]
    assert main([*base, "--approve", "d", "--reviewer", "ann", "--reason", "ok"]) == 0
    before = ledger.read_bytes()
    # Fill the disk but for a few bytes: the next record cannot fit whole.
    filler = tiny_disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(OSError):
            while True:
                os.write(fd, b"x" * 64)
    finally:
        os.close(fd)
    capsys.readouterr()
    code = main([*base, "--reject", "d", "--reviewer", "bob", "--reason", "x" * 9000])
    err = capsys.readouterr().err
    assert code == 2 and "not recorded" in err
    assert ledger.read_bytes() == before  # no torn line, the first record whole
    read = Ledger(ledger)
    assert [r.decision for r in read.records()] == ["approved"] and read.torn == []


# --- found by a hostile agent -------------------------------------------------------------------


def test_ask_is_never_a_way_around_a_trace_rule() -> None:
    """With ``ask`` for rate limits, a call a rate limit and a trace rule both refuse
    is refused, not asked; a call only the rate limit refuses is asked, and recorded
    as dispatched (a person may let it run)."""
    text = (
        '[[rate_limit_tool]]\ntool = "send"\nmax_calls = 0\ninterval_secs = 60\n'
        '[[rate_limit_tool]]\ntool = "read_secret"\nmax_calls = 0\ninterval_secs = 60\n'
        '[[trace_rule]]\nname = "no-send"\nrule = "never send after read_secret"\n'
    )
    gate = CallGate(load_policy_text(text), ask=("rate_limit_tool:",))
    assert gate.decide("read_secret", {}).decision == "ask"  # asked, and counted
    verdict = gate.decide("send", {})
    assert verdict.decision == "deny"


def test_the_tier_is_checked_on_what_is_sent() -> None:
    """An output reference hides the value from the admission; the gate checks the
    tier of each call on the parameters it is sent."""
    from car_verify import execute_sync

    sent: list[Any] = []
    plan = {
        "actions": [
            {"id": "g", "type": "tool_call", "tool": "generate"},
            {"id": "t", "type": "tool_call", "tool": "terminal",
             "parameters": {"command": "$g.output"}, "dependencies": ["g"]},
        ]
    }  # fmt: skip
    tools = {"generate": lambda p: "rm -rf /", "terminal": lambda p: sent.append(p) or "ok"}
    result = execute_sync(plan, tools, granted_tier="sandbox_edit")
    assert sent == [] and result.statuses["t"] == "rejected"


def test_a_frozen_copy_shares_nothing_with_a_mapping_or_a_tuple() -> None:
    from collections import OrderedDict

    from car_verify.base.values import copy_json

    inner = OrderedDict(cmd="ls")
    nested = ([1], inner)
    copied = copy_json({"job": inner, "pair": nested})
    inner["cmd"] = "rm -rf /"
    nested[0].append(2)
    assert copied == {"job": {"cmd": "ls"}, "pair": [[1], {"cmd": "ls"}]}
    assert type(copied["job"]) is dict


def test_content_rules_read_nested_strings_and_keys_as_they_are() -> None:
    text = (
        "deny_keyword = ['C:\\Windows\\System32', 'DROP TABLE \"users\"']\n"
        '[[deny_tool_param]]\ntool = "sql"\nparam = "queries"\ncontains = \'DROP TABLE "users"\'\n'
    )
    gate = CallGate(load_policy_text(text))
    for params in (
        {"paths": ["C:\\Windows\\System32"]},
        {"queries": ['DROP TABLE "users"']},
        {"queries": [{"q": 'DROP TABLE "users"'}]},
        {'DROP TABLE "users"': 1},
    ):
        assert gate.decide("sql", params).decision == "deny", params


def test_content_rules_have_a_work_bound() -> None:
    import time

    keywords = ", ".join(f'"kw{n:05d}"' for n in range(20_000))
    gate = CallGate(load_policy_text(f"deny_keyword = [{keywords}]\n"))
    edits = [{"old_string": "x" * 100, "new_string": "y" * 100} for _ in range(1_000)]
    start = time.perf_counter()
    verdict = gate.decide("MultiEdit", {"edits": edits})
    assert time.perf_counter() - start < 5
    assert verdict.decision == "deny" and verdict.rules == ["deny_keyword:work-bound"]


def test_an_outcome_without_a_dispatch_opens_nothing() -> None:
    gate = CallGate(
        load_policy_text('[[trace_rule]]\nname = "t"\nrule = "deploy only after run_tests"\n')
    )
    gate.report("run_tests", {}, "succeeded")  # a PostToolUse for a call never admitted
    assert gate.decide("deploy", {}).decision == "deny"


def test_a_forged_rule_cache_entry_is_refused() -> None:
    from car_verify.rules.trace import parse_trace_rule, rule_from_dict, rule_to_dict

    doc = rule_to_dict(parse_trace_rule('never deploy where env != "staging"'))
    forgeries = [
        {**doc, "kind": "bogus"},
        {**doc, "call": {**doc["call"], "tool": "deploy after read_secret"}},
        {**doc, "call": {**doc["call"], "tests": [{**doc["call"]["tests"][0], "op": "x"}]}},
        {**doc, "limit": -1},
        {**doc, "call": {**doc["call"], "tests": [{**doc["call"]["tests"][0], "value": [1]}]}},
    ]
    for forged in forgeries:
        with pytest.raises(ValueError):
            rule_from_dict(forged)


def test_a_held_session_lock_denies_within_its_deadline(tmp_path: Path) -> None:
    import fcntl
    import time

    from car_verify import hook

    folder = tmp_path / "p" / ".car" / "policies"
    folder.mkdir(parents=True)
    (folder / "r.toml").write_text('deny_tool = ["x"]\n')
    payload = {"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "ls",
               "tool_input": {}}  # fmt: skip
    state = tmp_path / "state"
    hook.answer(json.dumps(payload), policies=folder, state_dir=state)
    [lock] = state.glob("*.lock")
    holder = os.open(lock, os.O_RDONLY)  # reading is enough to take an flock
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        start = time.perf_counter()
        _, answer = hook.answer(json.dumps(payload), policies=folder, state_dir=state)
        assert answer.decision == "deny" and "lock" in answer.reason
        assert time.perf_counter() - start < hook.LOCK_SECONDS + 3
    finally:
        os.close(holder)
