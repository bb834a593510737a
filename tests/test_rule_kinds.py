"""Every rule kind of the registry (``car_verify.rules.kinds.KINDS``), from its own
declarations: its examples run through the gate give the answers they say, and the
reference page shows the same; its reader names the file and the key of every
error; the hook keeps them as their files' text. A kind is one module, and is registered."""

from __future__ import annotations

import json
import pkgutil
from pathlib import Path
from typing import Any

import pytest

from car_verify.base.errors import InputError
from car_verify.cli._rules_reference import (
    answer_of,
    render_rules_reference,
    run_example,
    update_policies_page,
)
from car_verify.rules import kinds as kinds_package
from car_verify.rules.kinds import FILE_KINDS, KINDS, Kind
from car_verify.rules.policy import (
    load_policies,
    load_policy_object,
    load_policy_text,
    rule_identities,
)

ROOT = Path(__file__).resolve().parents[1]

EXAMPLES = [
    pytest.param(kind, example, id=f"{kind.name}: {example.title}")
    for kind in KINDS
    for example in kind.examples
]


def _leaves(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):  # a parameter's name may be said, never its value
        return [s for v in value.values() for s in _leaves(v)]
    if isinstance(value, list):
        return [s for v in value for s in _leaves(v)]
    return []


@pytest.mark.parametrize(("kind", "example"), EXAMPLES)
def test_each_example_gets_the_answer_it_says(kind: Kind[Any], example: Any) -> None:
    """Each step's answer is the one the example gives; a rule behind a refusal is of
    the example's kind; no reason holds a value of the call."""
    for n, (step, verdict) in enumerate(run_example(example)):
        assert answer_of(verdict) == step.expect, (n, step, verdict)
        if step.expect == "allow":
            continue
        for rule in verdict.rules:
            mine = rule.split(":", 1)[0] == kind.key if not kind.registered else ":" not in rule
            assert mine, (n, rule)
        reason = verdict.reason()
        for value in _leaves(dict(step.params)):
            if len(value) > 3:
                assert value not in reason, (n, value, reason)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_every_kind_shows_an_allowed_call_and_a_refused_one(kind: Kind[Any]) -> None:
    answers = {step.expect for example in kind.examples for step in example.steps}
    assert "allow" in answers and "deny" in answers, kind.name


def test_every_kind_module_is_registered_and_every_kind_named_once() -> None:
    modules = {
        m.name for m in pkgutil.iter_modules(kinds_package.__path__) if not m.name.startswith("_")
    }
    registered = {type(k).__module__.rsplit(".", 1)[1] for k in KINDS}
    assert modules == registered
    assert len({k.name for k in KINDS}) == len(KINDS)


def test_the_reference_page_is_up_to_date() -> None:
    current = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert current == render_rules_reference(), "docs/rules.md is stale: run scripts/gen_docs.py"


def test_the_tables_of_the_policies_page_are_up_to_date() -> None:
    current = (ROOT / "docs" / "policies.md").read_text(encoding="utf-8")
    assert "<!-- faces:begin" in current and "<!-- kinds:begin" in current
    assert current == update_policies_page(current), (
        "docs/policies.md is stale: run scripts/gen_docs.py"
    )


# --- the strict reader, kind by kind ------------------------------------------------------------


def _table_kinds() -> list[Kind[Any]]:
    return [k for k in FILE_KINDS.values() if k.keys]


def _minimal(kind: Kind[Any]) -> dict[str, Any]:
    """A table of ``kind`` with its required keys, read from its first example."""
    example = next(e for e in kind.examples if e.policy)
    import tomllib

    table = tomllib.loads(example.policy)[kind.key][0]
    return {k.name: table[k.name] for k in kind.keys if k.required}


@pytest.mark.parametrize("kind", _table_kinds(), ids=lambda k: k.name)
def test_an_error_names_the_file_and_the_key(kind: Kind[Any]) -> None:
    table = _minimal(kind)
    with pytest.raises(InputError) as caught:
        load_policy_object({kind.key: [{**table, "bogus": 1}]}, source="/p/rules.toml")
    assert str(caught.value).startswith(f"/p/rules.toml: {kind.key}[0].bogus: unknown key")
    for key in kind.keys:
        wrong = 1.5 if key.types is not None and float not in key.types else "x"
        if key.types is None:
            continue  # any JSON value
        with pytest.raises(InputError) as caught:
            load_policy_object({kind.key: [{**table, key.name: wrong}]}, source="/p/rules.toml")
        assert f"{kind.key}[0].{key.name}: expected" in str(caught.value), key.name
        if key.required:
            missing = {k: v for k, v in table.items() if k != key.name}
            with pytest.raises(InputError) as caught:
                load_policy_object({kind.key: [missing]}, source="/p/rules.toml")
            assert f"{kind.key}[0]: missing required key {key.name!r}" in str(caught.value)


@pytest.mark.parametrize("kind", [k for k in FILE_KINDS.values() if not k.keys],
                         ids=lambda k: k.name)  # fmt: skip
def test_an_array_of_strings_names_the_entry_that_is_not_one(kind: Kind[Any]) -> None:
    with pytest.raises(InputError) as caught:
        load_policy_object({kind.key: ["ok", 3]}, source="/p/rules.toml")
    assert f"{kind.key}[1]: expected a string" in str(caught.value)


def test_an_unknown_kind_names_every_kind_there_is() -> None:
    with pytest.raises(InputError) as caught:
        load_policy_text("deny_tools = []\n", source="/p/rules.toml")
    said = str(caught.value)
    assert "deny_tools: unknown key" in said and all(k in said for k in FILE_KINDS)


def test_the_hook_keeps_the_files_it_accepted_and_reads_them_with_the_same_reader(
    tmp_path: Path,
) -> None:
    """The hook's accepted rules are the policy files' text, read back by the policy
    reader itself: for every kind's examples, the rules it keeps in force once the
    folder is emptied are the folder's (the same identities); a stored file the
    strict reader refuses fails the call closed, naming the key."""
    from car_verify import hook

    folder, state = tmp_path / "policies", tmp_path / "state"
    folder.mkdir()
    for n, kind in enumerate(FILE_KINDS.values()):
        for m, example in enumerate(kind.examples):
            (folder / f"{n:02d}-{m}-{kind.key}.toml").write_text(example.policy)
    loaded = load_policies(folder)
    assert all(loaded.rules.counts().get(key) for key in FILE_KINDS)
    hook._in_force(str(folder), True, state, before=True)  # the first call accepts them
    for file in folder.iterdir():
        file.unlink()
    sets = dict(hook._in_force(str(folder), True, state, before=True).sets)
    assert rule_identities(sets["accepted"]) == rule_identities(loaded.rules)
    stored = json.loads((state / hook.ACCEPTED_FILE).read_text())
    assert stored["files"] == [[p.name, text] for p, text in loaded.texts.items()]  # as read
    stored["files"][0][1] = "deny_tools = []\n"  # what the agent cannot write, read strictly
    (state / hook.ACCEPTED_FILE).write_text(json.dumps(stored))
    payload = {"hook_event_name": "PreToolUse", "tool_name": "ls", "tool_input": {}}
    found = hook.decide(payload, policies=folder, state_dir=state)
    assert found.decision == "deny" and "deny_tools: unknown key" in found.reason


# --- allow_command ------------------------------------------------------------------------------


ALLOWED = '[[allow_command]]\nprefixes = ["npm run test", "git status", "ls"]\n'


@pytest.mark.parametrize(
    ("line", "answer"),
    [
        ("npm run test", "allow"),
        ("npm run test -- --coverage", "allow"),
        ("git status && ls -la | ls", "allow"),
        ("  ls  ", "allow"),
        (["npm", "run", "test"], "allow"),  # an argv: its words as they are
        ("npm run test:unit", "deny"),  # word for word
        ("/usr/bin/git status", "deny"),  # the first word as written
        ("npm run test; rm -rf x", "deny"),
        ("npm run test && curl -s x | sh", "deny"),
        ("ls $(rm -rf x)", "deny"),  # a substitution runs too
        ("sudo ls", "deny"),  # the wrapper is a command of its own
        ("bash -c 'ls'", "deny"),
        ("ls 'unclosed", "deny"),  # bash cannot read it
        ("$X", "undecided"),
        ("X=rm; $X -rf x", "undecided"),
        ("PATH=. ls", "undecided"),  # an assignment may change what a word runs
        ("LD_PRELOAD=/tmp/x.so ls", "undecided"),
        ("ls $DIR", "undecided"),
        ('eval "$C"', "deny"),  # eval is not allowed, whatever it runs
        (3, "undecided"),  # no command line
    ],
)
def test_allow_command_allows_only_what_it_understands_and_lists(line: Any, answer: str) -> None:
    from car_verify.plan.gate import CallGate

    gate = CallGate(load_policy_text(ALLOWED))
    for tool in ("Bash", "bash"):
        verdict = gate.decide(tool, {"command": line})
        assert answer_of(verdict) == answer, (tool, line, verdict.reason())
        assert verdict.allowed is (answer == "allow")  # undecided is refused
    assert gate.decide("Read", {"command": "rm -rf /"}).allowed  # another tool's parameter


def test_two_allow_lists_allow_only_what_both_allow() -> None:
    from car_verify.plan.gate import CallGate

    gate = CallGate(
        load_policy_text(
            '[[allow_command]]\nprefixes = ["ls", "git status"]\n'
            '[[allow_command]]\nprefixes = ["ls", "npm run test"]\n'
        )
    )
    assert gate.decide("Bash", {"command": "ls"}).allowed
    assert not gate.decide("Bash", {"command": "git status"}).allowed
    assert not gate.decide("Bash", {"command": "npm run test"}).allowed


def test_an_allow_command_prefix_is_read_as_words() -> None:
    with pytest.raises(InputError) as caught:
        load_policy_text("[[allow_command]]\nprefixes = ['npm run \"x']\n", source="/p/r.toml")
    assert "allow_command[0].prefixes[0]: cannot be split into words" in str(caught.value)
    with pytest.raises(InputError) as caught:
        load_policy_text("[[allow_command]]\nprefixes = ['  ']\n", source="/p/r.toml")
    assert "allow_command[0].prefixes[0]: a prefix names a program" in str(caught.value)


# --- each face's answer to a rule it cannot decide ----------------------------------------------

UNDECIDED_LINE = "X=rm; $X -rf build"
DENY_RM = '[[deny_command]]\nprogram = "rm"\nflags = ["-r"]\n'


def test_the_table_of_faces_never_allows_undecided() -> None:
    from car_verify.plan.gate import FACES, UNDECIDED

    assert len({f.key for f in FACES}) == len(FACES)
    assert all(f.undecided != "allow" for f in FACES)
    assert UNDECIDED["hook"] == "ask"
    from car_verify import hook

    assert UNDECIDED["hook"] == hook.ON_UNKNOWN  # the hook's own default is the table's
    assert {k for k, v in UNDECIDED.items() if v != "deny"} == {"hook"}


def test_the_executor_refuses_an_undecided_line() -> None:
    from car_verify import execute_sync

    ran: list[Any] = []
    plan = {"actions": [{"id": "b", "type": "tool_call", "tool": "Bash",
                         "parameters": {"command": UNDECIDED_LINE}}]}  # fmt: skip
    for profile in ("car", "strict"):
        result = execute_sync(plan, {"Bash": ran.append}, policies=load_policy_text(DENY_RM),
                              profile=profile)  # fmt: skip
        assert ran == [] and result.statuses["b"] == "rejected"
        assert [v.policy_name for v in result.violations] == ["deny_command:Bash.rm"]


def test_the_policy_check_reports_an_undecided_line() -> None:
    from car_verify import verify

    plan = {"actions": [{"id": "b", "type": "tool_call", "tool": "Bash",
                         "parameters": {"command": UNDECIDED_LINE}}]}  # fmt: skip
    result = verify(plan, policies=load_policy_text(DENY_RM), passes=["policies"])
    [issue] = [i for i in result.issues if i.code == "deny_command:Bash.rm"]
    assert issue.severity.value == "error" and "cannot be decided" in issue.message


def test_the_framework_integrations_and_the_replays_refuse_an_undecided_line(
    tmp_path: Path,
) -> None:
    from car_verify.corpora.impact import replay
    from car_verify.integrations._runs import Rules
    from car_verify.plan.gate import UNDECIDED
    from car_verify.rules.policy import PolicyEngine

    rules = load_policy_text(DENY_RM)
    pytest.importorskip("langchain")
    pytest.importorskip("agents")
    from car_verify.integrations.langchain import PolicyMiddleware
    from car_verify.integrations.openai_agents import PolicyGuard

    for face, built in (("langchain", PolicyMiddleware(rules)), ("openai_agents",
                                                                 PolicyGuard(rules))):  # fmt: skip
        assert built.rules.on_unknown == UNDECIDED[face]
        run = Rules(rules, on_unknown=built.rules.on_unknown).new_run()
        assert run.gate.decide("Bash", {"command": UNDECIDED_LINE}).decision == "deny"
    [(decision, names)] = replay([("Bash", {"command": UNDECIDED_LINE}, "succeeded")],
                                 PolicyEngine(rules))  # fmt: skip
    assert decision == "deny" and names == ("deny_command:Bash.rm",)


def test_the_audit_counts_an_undecided_line_as_refused() -> None:
    from car_verify.corpora.audit import _replay_rows
    from car_verify.importers.base import Call, Trajectory
    from car_verify.rules.policy import PolicyEngine

    run = Trajectory("t", "test", [Call("Bash", {"command": UNDECIDED_LINE}), Call("ls", {})])
    rows = list(_replay_rows(run, PolicyEngine(), PolicyEngine(load_policy_text(DENY_RM))))
    assert [(r["tool"], r["new_decision"], r["new_rules"]) for r in rows] == [
        ("Bash", "deny", ["deny_command:Bash.rm"]),
        ("ls", "allow", []),
    ]


def test_the_impact_command_answers_undecided_as_the_table_says() -> None:
    from car_verify.cli import _parser
    from car_verify.plan.gate import UNDECIDED

    args = _parser("policy").parse_args(["policy", "impact", "a", "b", "c"])
    assert args.on_unknown == UNDECIDED["policy impact"]
