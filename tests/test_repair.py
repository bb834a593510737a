"""Every finding's fix (issue 60): derived per code, re-verified, applied to the
document as the user gave it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import car_verify
from car_verify.base.codes import CODES
from car_verify.base.findings import Applicability, Fix, Issue, Severity, Tier
from car_verify.base.patch import PatchError, apply_patch, apply_to_text, text_change
from car_verify.cli import main
from car_verify.deciders.repair import DERIVERS

from .strategies import proposals, states

TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_weather",
        "description": "The weather of a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city's name."},
                "units": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer"},
                "zip": {"type": "string"},
                "alerts": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    },
    {
        "name": "deploy",
        "parameters": {
            "type": "object",
            "properties": {
                "env": {"type": "string", "enum": ["staging", "prod"]},
                "region": {"type": "string", "enum": ["eu"]},
                "replicas": {"type": "integer", "default": 1},
            },
            "required": ["env", "region"],
        },
    },
    {"name": "rollback_deploy", "parameters": {"type": "object", "properties": {"env": {}}}},
    {"name": "send_message", "parameters": {"type": "object", "properties": {"text": {}}}},
]

GOOD = {"city": "Paris", "units": "celsius", "days": 5, "zip": "94103", "alerts": True}


def _call(tool: str, parameters: dict[str, Any], id: str = "a") -> dict[str, Any]:
    return {"id": id, "type": "tool_call", "tool": tool, "parameters": parameters}


def _plan(*actions: dict[str, Any]) -> dict[str, Any]:
    return {"id": "p", "timestamp": "2026-01-01T00:00:00Z", "actions": list(actions)}


def _fixes(plan: dict[str, Any], profile: str = "strict", **kw: Any) -> list[Issue]:
    result = car_verify.verify(plan, tools=kw.pop("tools", TOOLS), profile=profile, **kw)
    assert isinstance(result.fixes, list)  # derived: each attached to its finding
    return result.issues


def _only(plan: dict[str, Any], code: str, profile: str = "strict", **kw: Any) -> Fix:
    found = [i for i in _fixes(plan, profile, **kw) if i.code == code]
    assert found and found[0].fix is not None, found
    return found[0].fix


# --- the code table's repair column -------------------------------------------------------


def test_every_error_and_warning_code_has_a_repair_or_says_why_none() -> None:
    for code in CODES.values():
        severities = {code.severity_in("strict"), code.severity_in("car")}
        if severities & {Severity.ERROR, Severity.WARNING}:
            assert code.repair is not None and code.repair.how, code.name
    for name, code in CODES.items():
        assert code.repair is not None
        # a code whose column names a fix has a deriver, and one that says none has none
        assert bool(code.repair.kinds) == (name in DERIVERS), name
        assert set(code.repair.kinds) <= {"safe", "unsafe", "display"}


def test_car_verify_codes_shows_the_repair_column(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["codes"]) == 0
    text = capsys.readouterr().out
    assert "fix" in text.splitlines()[0]
    line = next(x for x in text.splitlines() if x.startswith("unknown-tool "))
    assert "unsafe" in line
    assert main(["codes", "--format", "json"]) == 0
    rows = {r["code"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["param-schema"]["fix"]["kinds"] == ["safe", "unsafe", "display"]
    assert rows["repeated-call"]["fix"]["kinds"] == []
    assert "author" in rows["repeated-call"]["fix"]["how"]
    assert main(["codes", "dependency-overtaken"]) == 0
    assert "Fix (safe, unsafe):" in capsys.readouterr().out


# --- tool calls ------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", ["car", "strict"])
@pytest.mark.parametrize(
    ("written", "meant", "applicability"),
    [
        ({**GOOD, "days": "5"}, GOOD, "safe"),  # "5" to 5
        ({**GOOD, "zip": 94103}, GOOD, "safe"),  # 94103 to "94103"
        ({**GOOD, "alerts": "true"}, GOOD, "safe"),  # "true" to true
        ({**GOOD, "tags": "x"}, {**GOOD, "tags": ["x"]}, "safe"),  # x to [x]
        ({**GOOD, "units": "Celsius"}, GOOD, None),  # the enum's case (a note under car)
        (GOOD, GOOD, None),  # nothing to repair
    ],
)
def test_a_lossless_type_repair_or_an_enum_case_restores_the_call(
    profile: str, written: dict[str, Any], meant: dict[str, Any], applicability: str | None
) -> None:
    plan = _plan(_call("get_weather", written))
    repaired, edits = car_verify.repair(plan, tools=TOOLS, profile=profile)
    assert repaired == _plan(_call("get_weather", meant))
    if written != meant:
        assert edits and all(op["path"].startswith("/actions/0/parameters/") for op in edits)
        found = [i for i in _fixes(plan, profile) if i.fix is not None]
        expected = applicability or ("unsafe" if profile == "car" else "safe")  # a note: unsafe
        assert found[0].fix is not None and found[0].fix.applicability.value == expected
    else:
        assert edits == []


@pytest.mark.parametrize("profile", ["car", "strict"])
def test_a_re_cased_parameter_is_renamed_safely_a_typo_unsafely(profile: str) -> None:
    fix = _only(_plan(_call("get_weather", {"City": "Paris"})), "param-schema", profile)
    assert fix.applicability is Applicability.SAFE
    assert fix.edits == (
        {"op": "move", "from": "/actions/0/parameters/City", "path": "/actions/0/parameters/city"},
    )
    fix = _only(_plan(_call("get_weather", {"ctiy": "Paris"})), "param-schema", profile)
    assert fix.applicability is Applicability.UNSAFE and "rename `ctiy` to `city`" in fix.message


def test_an_undeclared_parameter_goes_where_the_schema_forbids_it_only() -> None:
    fix = _only(_plan(_call("get_weather", {**GOOD, "verbose": True})), "param-schema")
    assert fix.applicability is Applicability.UNSAFE
    assert fix.edits == ({"op": "remove", "path": "/actions/0/parameters/verbose"},)
    # deploy's schema takes any other parameter: nothing to repair there
    assert not [
        i
        for i in _fixes(_plan(_call("deploy", {"env": "prod", "region": "eu", "v": 1})))
        if i.fix is not None
    ]


def test_a_missing_required_parameter_is_filled_from_a_single_enum_value_or_shown() -> None:
    issues = _fixes(_plan(_call("deploy", {"env": "prod"})))
    (fix,) = [i.fix for i in issues if i.fix is not None]
    assert fix.applicability is Applicability.SAFE
    assert fix.edits == ({"op": "add", "path": "/actions/0/parameters/region", "value": "eu"},)
    issues = _fixes(_plan(_call("get_weather", {"units": "celsius"})))
    (fix,) = [i.fix for i in issues if i.fix is not None]
    assert fix.applicability is Applicability.DISPLAY and not fix.edits
    assert "city" in fix.message and "string" in fix.message and "The city's name" in fix.message


def test_a_parameters_object_the_document_leaves_out_is_added_whole() -> None:
    plan = _plan({"id": "a", "type": "tool_call", "tool": "deploy"})
    tools = [{"name": "deploy", "parameters": {"required": ["region"], "properties": {
        "region": {"type": "string", "const": "eu"}}}}]  # fmt: skip
    repaired, edits = car_verify.repair(plan, tools=tools, profile="strict")
    assert edits == [{"op": "add", "path": "/actions/0/parameters", "value": {"region": "eu"}}]
    assert repaired["actions"][0]["parameters"] == {"region": "eu"}


@pytest.mark.parametrize("profile", ["car", "strict"])
@pytest.mark.parametrize("written", ["getWeather", "get-weather", "get_waether", "Get_Weather"])
def test_the_tool_the_call_most_likely_meant_unsafe(profile: str, written: str) -> None:
    plan = _plan(_call(written, {"city": "Paris"}))
    fix = _only(plan, "unknown-tool", profile)
    assert fix.applicability is Applicability.UNSAFE
    assert fix.edits == ({"op": "replace", "path": "/actions/0/tool", "value": "get_weather"},)
    assert car_verify.repair(plan, tools=TOOLS, profile=profile, unsafe=False).edits == []
    assert car_verify.repair(plan, tools=TOOLS, profile=profile).proposal == _plan(
        _call("get_weather", {"city": "Paris"})
    )


def test_the_parameters_decide_between_two_names_equally_close() -> None:
    tools = [
        {"name": "get_user", "parameters": {"properties": {"id": {}}, "required": ["id"]}},
        {"name": "set_user", "parameters": {"properties": {"name": {}}, "required": ["name"]}},
    ]
    fix = _only(_plan(_call("xet_user", {"name": "n"})), "unknown-tool", tools=tools)
    assert fix.edits[0]["value"] == "set_user"
    fix = _only(_plan(_call("xet_user", {"id": 1})), "unknown-tool", tools=tools)
    assert fix.edits[0]["value"] == "get_user"


def test_a_renamed_tools_parameters_are_repaired_in_the_next_round() -> None:
    plan = _plan(_call("getWeather", {"City": "Paris", "days": "3"}))
    repaired, edits = car_verify.repair(plan, tools=TOOLS, profile="car")
    assert repaired == _plan(_call("get_weather", {"city": "Paris", "days": 3}))
    assert edits[0] == {"op": "replace", "path": "/actions/0/tool", "value": "get_weather"}
    assert apply_patch(plan, edits) == repaired


# --- order -----------------------------------------------------------------------------------


def _writer(id: str, key: str, value: Any = True, **more: Any) -> dict[str, Any]:
    return {"id": id, "type": "tool_call", "tool": "t", "expected_effects": {key: value}, **more}


def _reader(id: str, key: str, **more: Any) -> dict[str, Any]:
    pre = [{"key": key, "operator": "eq", "value": True}]
    return {"id": id, "type": "tool_call", "tool": "u", "preconditions": pre, **more}


@pytest.mark.parametrize("profile", ["car", "strict"])
def test_a_reader_before_its_writer_is_moved_after_it(profile: str) -> None:
    plan = _plan(_reader("r", "k", state_dependencies=["k"]), _writer("w", "k"))
    found = [i for i in _fixes(plan, profile, tools=None) if i.fix is not None]
    assert found and {i.code for i in found} <= {"missing-dependency", "precondition-unsatisfied"}
    for issue in found:  # each finding of the reader: the same move
        assert issue.fix is not None and issue.fix.applicability is Applicability.UNSAFE
        assert issue.fix.edits == ({"op": "move", "from": "/actions/0", "path": "/actions/1"},)
    repaired, _ = car_verify.repair(plan, profile=profile)
    assert [a["id"] for a in repaired["actions"]] == ["w", "r"]
    assert not car_verify.verify(repaired, profile=profile).errors


def test_a_precondition_the_level_start_misses_gets_its_dependency_safely() -> None:
    """Under strict a level's actions see its start: the reader is ordered after the
    writer by a state dependency on the key (both profiles read that edge)."""
    plan = _plan(_writer("w", "k"), _reader("r", "k"))
    fix = _only(plan, "precondition-unsatisfied", tools=None)
    assert fix.applicability is Applicability.SAFE
    assert fix.edits == ({"op": "add", "path": "/actions/1/state_dependencies", "value": ["k"]},)


def test_a_dropped_state_dependency_goes_back_where_the_preconditions_name_it() -> None:
    """The reader and the second writer share a level under strict: the key goes
    back into state_dependencies, before `j`, as the preconditions name them."""
    reader = _reader("r", "k")
    reader["preconditions"].append({"key": "j", "operator": "exists"})
    reader["state_dependencies"] = ["j"]
    plan = _plan(_writer("w1", "j"), _writer("w2", "k", state_dependencies=["j"]), reader)
    fix = _only(plan, "precondition-unsatisfied", tools=None)
    assert fix.applicability is Applicability.SAFE
    assert fix.edits == ({"op": "add", "path": "/actions/2/state_dependencies/0", "value": "k"},)


def test_a_dependency_the_runtime_overtakes_is_a_warning_with_a_safe_fix() -> None:
    plan = _plan(_writer("check", "checked"), {**_call("deploy", {}, "deploy"), "tool": "t"})
    plan["actions"][1]["dependencies"] = ["check"]
    issues = _fixes(plan, "car", tools=None)
    (warning,) = [i for i in issues if i.code == "dependency-overtaken"]
    assert warning.severity is Severity.WARNING
    assert warning.message.startswith("deploy runs in the same level as check (level 0)")
    assert warning.fix is not None and warning.fix.applicability is Applicability.SAFE
    assert warning.fix.edits == (
        {"op": "add", "path": "/actions/1/state_dependencies", "value": ["checked"]},
    )
    repaired, _ = car_verify.repair(plan, profile="car", unsafe=False)
    assert car_verify.verify(repaired).execution_levels == [["check"], ["deploy"]]
    # strict honours `dependencies`: nothing to warn about there
    assert not [i for i in _fixes(plan, "strict", tools=None) if i.code == "dependency-overtaken"]


def test_a_dependency_that_writes_nothing_is_given_an_effect_unsafely() -> None:
    gate = {
        "id": "gate",
        "type": "assertion",
        "preconditions": [{"key": "c", "operator": "exists"}],
    }
    deploy = {"id": "deploy", "type": "tool_call", "tool": "t", "dependencies": ["gate"]}
    plan = _plan(gate, deploy)
    fix = _only(plan, "dependency-overtaken", "car", tools=None, initial_state={"c": 1})
    assert fix.applicability is Applicability.UNSAFE
    assert fix.edits == (
        {"op": "add", "path": "/actions/0/expected_effects", "value": {"gate_passed": True}},
        {"op": "add", "path": "/actions/1/state_dependencies", "value": ["gate_passed"]},
    )


def test_a_cycle_loses_the_edge_whose_removal_leaves_the_fewest_findings() -> None:
    plan = _plan(
        {"id": "a", "type": "tool_call", "tool": "t", "dependencies": ["b"]},
        {"id": "b", "type": "tool_call", "tool": "t", "dependencies": ["a"]},
    )
    fix = _only(plan, "dependency-cycle", tools=None)
    assert fix.applicability is Applicability.UNSAFE
    # the entry on a later action (a forward reference) goes, at an equal count
    assert fix.edits == ({"op": "remove", "path": "/actions/0/dependencies/0"},)
    repaired, _ = car_verify.repair(plan, profile="strict")
    assert car_verify.verify(repaired, profile="strict").valid


# --- names -----------------------------------------------------------------------------------


def test_names_closest_to_what_was_written() -> None:
    plan = _plan(
        {"id": "build", "type": "tool_call", "tool": "t"},
        {
            "id": "ship",
            "type": "tool_call",
            "tool": "t",
            "dependencies": ["biuld"],
            "preconditions": [{"key": "k", "operator": ">="}, {"key": "k", "operator": "EQ"}],
            "dependancies": ["build"],
        },
        {"id": "late", "type": "tool_call", "tool": "t", "dependancies": ["build"]},
    )
    issues = {i.code + str(i.pointer): i.fix for i in _fixes(plan, tools=None)}
    assert issues["unknown-dependency/actions/1/dependencies/0"] == Fix(
        Applicability.UNSAFE,
        "depend on build (no action is called 'biuld')",
        ({"op": "replace", "path": "/actions/1/dependencies/0", "value": "build"},),
    )
    signs = issues["unknown-operator/actions/1/preconditions/0/operator"]
    assert signs is not None and signs.applicability is Applicability.SAFE
    assert signs.edits[0]["value"] == "gte"
    # `ship` has `dependencies` already: a rename would overwrite them, so none
    assert issues["unknown-field/actions/1/dependancies"] is None
    field = issues["unknown-field/actions/2/dependancies"]
    assert field == Fix(
        Applicability.UNSAFE,
        "rename field `dependancies` to `dependencies`",
        ({"op": "move", "from": "/actions/2/dependancies", "path": "/actions/2/dependencies"},),
    )


def test_a_compensable_call_gets_the_tool_named_as_its_inverse() -> None:
    plan = _plan(
        {**_call("deploy", {"env": "prod", "region": "eu"}), "reversibility": "compensable"}
    )
    fix = _only(plan, "missing-compensation")
    assert fix.edits == (
        {
            "op": "add",
            "path": "/actions/0/compensation",
            "value": {"type": "tool", "tool": "rollback_deploy", "parameters": {"env": "prod"}},
        },
    )


# --- re-verification -------------------------------------------------------------------------


def test_a_fix_that_would_bring_a_finding_is_only_shown() -> None:
    """Renaming the tool makes the call repeat an identical one: shown, not applied."""
    plan = _plan(
        _call("get_weather", {"city": "P"}, "a"),
        _call("get_weather", {"city": "P"}, "b"),
        _call("get_waether", {"city": "P"}, "c"),
    )
    fix = _only(plan, "unknown-tool")
    assert fix.applicability is Applicability.DISPLAY
    assert "it would bring warning[repeated-call]" in fix.message
    assert car_verify.repair(plan, tools=TOOLS, profile="strict").edits == []


def test_fixes_are_derived_only_when_asked() -> None:
    result = car_verify.verify(_plan(_call("getWeather", {})), tools=TOOLS)
    assert all(i.fix is None for i in result.issues)
    assert "fix" not in json.dumps(result.to_dict())
    assert result.fixes and result.issues[0].fix is result.fixes[0]
    assert result.to_dict()["issues"][0]["fix"]["applicability"] == "unsafe"


def test_one_line_for_a_gate() -> None:
    fix = Fix(
        Applicability.SAFE, '`days`: "5" to 5', ({"op": "replace", "path": "/a", "value": 5},)
    )
    assert fix.one_line() == (
        'fix (safe): `days`: "5" to 5; JSON Patch: [{"op":"replace","path":"/a","value":5}]'
    )
    issue = Issue("param-schema", Severity.ERROR, Tier.DECISION_PROCEDURE, "m", fix=fix)
    from car_verify.reporters.text import fix_line, issue_line

    assert fix_line(issue) == fix.one_line()
    assert issue_line(issue).endswith('[fix available: `days`: "5" to 5]')


# --- the command line ------------------------------------------------------------------------


def _files(tmp_path: Path, plan: dict[str, Any], indent: Any = 4) -> tuple[Path, Path]:
    path, tools = tmp_path / "plan.json", tmp_path / "tools.json"
    path.write_text(json.dumps(plan, indent=indent) + "\n")
    tools.write_text(json.dumps(TOOLS))
    return path, tools


BROKEN = _plan(
    {**_call("getWeather", {"City": "Paris", "days": "5"}), "x-team": {"kept": [1, 2]}},
    {**_call("deploy", {"env": "Prod", "region": "eu"}, "d")},
)
MEANT = _plan(
    {**_call("get_weather", {"city": "Paris", "days": 5}), "x-team": {"kept": [1, 2]}},
    {**_call("deploy", {"env": "prod", "region": "eu"}, "d")},
)


@pytest.mark.parametrize("profile", ["car", "strict"])
def test_fix_and_unsafe_fixes_rewrite_the_file_keeping_its_layout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], profile: str
) -> None:
    path, tools = _files(tmp_path, BROKEN)
    args = ["verify", str(path), "--tools", str(tools), "--no-policies", "--profile", profile]
    before = path.read_text()
    assert main([*args, "--fix"]) == 1  # the tool's name is an unsafe fix: left
    err = capsys.readouterr().err
    if profile == "car":  # the enum's case is a note there: its fix is unsafe too
        assert path.read_text() == before
        assert "2 unsafe fixes not applied (--unsafe-fixes applies them)" in err
    else:  # an error: its fix is safe
        assert json.loads(path.read_text())["actions"][1]["parameters"]["env"] == "prod"
        assert "1 unsafe fix not applied (--unsafe-fixes applies them)" in err
        path.write_text(before)
    assert main([*args, "--diff", "--unsafe-fixes"]) == 1
    diff = capsys.readouterr().out
    assert '-            "tool": "getWeather",' in diff and path.read_text() == before
    # strict calls the unknown field `x-team` an error, which no fix can repair
    assert main([*args, "--fix", "--unsafe-fixes"]) == (0 if profile == "car" else 1)
    out = capsys.readouterr().out
    assert "fixed [unknown-tool] a: call `get_weather`" in out
    text = path.read_text()
    assert json.loads(text) == MEANT
    assert text == json.dumps(MEANT, indent=4) + "\n"  # layout and key order kept
    assert main([*args, "--diff", "--unsafe-fixes"]) == 0  # nothing left


def test_unsafe_fixes_alone_is_a_usage_error(tmp_path: Path) -> None:
    path, _ = _files(tmp_path, BROKEN)
    assert main(["verify", str(path), "--unsafe-fixes"]) == 2


def test_the_json_text_sarif_and_github_outputs_carry_the_fixes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _files(tmp_path, BROKEN, indent=2)
    args = ["verify", "plan.json", "--tools", "tools.json", "--no-policies", "--profile", "strict"]
    assert main([*args, "--format", "json"]) == 1
    issues = json.loads(capsys.readouterr().out)["issues"]
    fixes = {i["code"]: i["fix"] for i in issues if "fix" in i}
    assert fixes["unknown-tool"] == {
        "applicability": "unsafe",
        "message": "call `get_weather` (the closest registered name; its schema then has things "
        "to say)",
        "edits": [{"op": "replace", "path": "/actions/0/tool", "value": "get_weather"}],
    }
    assert main(args) == 1
    text = capsys.readouterr().out
    assert "[unsafe fix available: call `get_weather`" in text
    assert '[fix available: `env`: "Prod" to "prod"]' in text
    assert text.rstrip().endswith("1 fixable with --fix (1 more with --unsafe-fixes)")
    assert main([*args, "--format", "github"]) == 1
    assert "unsafe fix available" in capsys.readouterr().out
    assert main([*args, "--format", "sarif"]) == 1
    log = json.loads(capsys.readouterr().out)
    results = log["runs"][0]["results"]
    tool = next(r for r in results if r["ruleId"] == "unknown-tool")
    (change,) = tool["fixes"][0]["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "plan.json"
    (replacement,) = change["replacements"]
    region = replacement["deletedRegion"]
    original = (tmp_path / "plan.json").read_text()
    start = region["charOffset"]
    assert original[start : start + region["charLength"]] == "W"
    assert replacement["insertedContent"]["text"] == "_w"
    line = original.splitlines()[region["startLine"] - 1]
    assert line[region["startColumn"] - 1 :].startswith("W")
    assert tool["properties"]["fix"]["applicability"] == "unsafe"


def test_the_mcp_verify_result_carries_the_fixes() -> None:
    from car_verify.cli.mcp_server import Settings, call

    doc, text, error = call("verify", {"proposal": BROKEN, "tools": TOOLS}, settings=Settings())
    assert not error
    fixes = [i["fix"] for i in doc["issues"] if "fix" in i]
    assert {"op": "replace", "path": "/actions/0/tool", "value": "get_weather"} in [
        op for fix in fixes for op in fix["edits"]
    ]
    assert "[unsafe fix available: call `get_weather`" in text


# --- properties ------------------------------------------------------------------------------

_SCALARS = st.sampled_from(["Paris", "5", "true", 5, 7.0, True, "Celsius", "celsius", [1], None])


@st.composite
def calls(draw: st.DrawFn) -> dict[str, Any]:
    """Proposals of a few calls to the registered tools, the tool names and parameters
    now and then misspelled, drifted or extra: the mistakes agents make."""
    actions = []
    for n in range(draw(st.integers(1, 3))):
        tool = draw(st.sampled_from(["get_weather", "deploy", "getWeather", "deplyo", "nope"]))
        names = st.sampled_from(["city", "City", "units", "days", "zip", "env", "region", "x"])
        params = draw(st.dictionaries(names, _SCALARS, max_size=4))
        action = _call(tool, params, f"c{n}")
        if draw(st.booleans()):
            action["x-extra"] = {"keep": n}
        actions.append(action)
    return {**_plan(*actions), "x-top": [1, {"a": None}]}


def _seen(plan: dict[str, Any], profile: str, **kw: Any) -> Any:
    from collections import Counter

    result = car_verify.verify(plan, profile=profile, **kw)
    return Counter((i.code, i.action_id, i.severity.value) for i in result.issues)


def _check_fixes(plan: dict[str, Any], profile: str, **kw: Any) -> None:
    from car_verify.deciders.repair import REVEALS

    result = car_verify.verify(plan, profile=profile, **kw)
    before = _seen(plan, profile, **kw)
    text = json.dumps(plan, indent=2) + "\n"
    for issue in result.issues if result.fixes else []:
        fix = issue.fix
        if fix is None or not fix.edits or fix.applicability is Applicability.DISPLAY:
            continue
        after = apply_patch(plan, fix.edits)
        # the patch applies to the text as written, and keeps what no check reads
        assert json.loads(apply_to_text(text, fix.edits)) == after
        assert after.get("x-top") == plan.get("x-top")
        for old, new in zip(plan["actions"], after["actions"], strict=False):
            if "x-extra" in old and old["id"] == new["id"]:
                assert new["x-extra"] == old["x-extra"]
        # re-verifying the applied fix never adds a finding (what it reveals aside)
        new_found = _seen(after, profile, **kw) - before
        revealed = REVEALS.get(issue.code, frozenset())
        assert all(code in revealed for code, _, _ in new_found), (issue, fix, new_found)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls(), st.sampled_from(["car", "strict"]))
def test_applying_a_call_fix_never_adds_a_finding_and_keeps_unknown_fields(
    plan: dict[str, Any], profile: str
) -> None:
    _check_fixes(plan, profile, tools=TOOLS)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(proposals(max_actions=5), states, st.sampled_from(["car", "strict"]))
def test_applying_an_order_fix_never_adds_a_finding(
    plan: dict[str, Any], state: dict[str, Any], profile: str
) -> None:
    try:
        car_verify.verify(plan, profile=profile)
    except car_verify.InputError:
        return  # a proposal the profile refuses
    _check_fixes(plan, profile, initial_state=state)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(calls(), proposals(max_actions=5)), st.sampled_from(["car", "strict"]))
def test_a_safe_fix_never_changes_a_valid_plan(plan: dict[str, Any], profile: str) -> None:
    """A plan the profile finds nothing wrong with (no error, no warning) is what
    ``--fix`` leaves it (``info`` notes carry unsafe fixes at most)."""
    try:
        result = car_verify.verify(plan, tools=TOOLS, profile=profile)
    except car_verify.InputError:
        return
    if result.errors or result.warnings:
        return
    from car_verify.deciders.fix import fix_document

    assert not fix_document(plan, tools=TOOLS, profile=profile, timeout_ms=5_000).changed
    assert all(f.applicability is not Applicability.SAFE for f in result.fixes), result.fixes


_OPS = st.sampled_from(
    [
        {"op": "replace", "path": "/actions/0/tool", "value": "v"},
        {"op": "replace", "path": "/actions/0", "value": {"id": "r", "type": "tool_call"}},
        {"op": "replace", "path": "/actions/0/state_dependencies/0", "value": "w"},
        {"op": "add", "path": "/actions/0/parameters/new", "value": {"a": [1, 2]}},
        {"op": "add", "path": "/actions/0/state_dependencies", "value": ["k"]},
        {"op": "remove", "path": "/actions/0/parameters/p"},
        {"op": "move", "from": "/actions/0/parameters/p", "path": "/actions/0/parameters/q"},
        {"op": "move", "from": "/actions/0", "path": "/actions/1"},
        {"op": "add", "path": "/actions/1", "value": {"id": "n", "type": "tool_call"}},
        {"op": "remove", "path": "/actions/0"},
        {"op": "copy", "from": "/actions/0/id", "path": "/copied"},
        {"op": "test", "path": "/id", "value": "p"},
    ]
)


@settings(max_examples=80, deadline=None)
@given(proposals(max_actions=3), st.lists(_OPS, max_size=3), st.sampled_from([None, 2, 4, "\t"]))
def test_a_patch_applies_to_the_text_as_to_the_document(
    plan: dict[str, Any], ops: list[dict[str, Any]], indent: Any
) -> None:
    text = json.dumps({**plan, "x-keep": {"b": 1}}, indent=indent)
    try:
        expected = apply_patch(json.loads(text), ops)
    except PatchError:
        with pytest.raises(PatchError):
            apply_to_text(text, ops)
        return
    out = apply_to_text(text, ops)
    assert json.loads(out) == expected
    assert json.loads(out)["x-keep"] == {"b": 1}
    change = text_change(text, out)
    if change is not None:
        assert text[: change.start] + change.inserted + text[change.end :] == out


def test_a_patch_edits_only_what_it_touches() -> None:
    text = '{\n  "actions": [ {"id": "a", "tool":"x",  "parameters": {"p": 1.50}} ],\n  "z": 1\n}\n'
    out = apply_to_text(text, [{"op": "replace", "path": "/actions/0/tool", "value": "y"}])
    assert out == text.replace('"x"', '"y"')  # 1.50 and the odd spacing stay
    out = apply_to_text(
        text, [{"op": "move", "from": "/actions/0/parameters/p", "path": "/actions/0/parameters/q"}]
    )
    assert out == text.replace('"p"', '"q"')
    with pytest.raises(PatchError):
        apply_patch(json.loads(text), [{"op": "test", "path": "/z", "value": 2}])
    doc = json.loads(text)
    assert apply_patch(doc, [{"op": "remove", "path": "/z"}]) != doc and "z" in doc
    assert copy.deepcopy(doc) == json.loads(text)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls(), st.sampled_from(["car", "strict"]))
def test_checking_a_call_fix_on_the_call_alone_agrees_with_a_full_re_verification(
    plan: dict[str, Any], profile: str
) -> None:
    """The speed trick (a plan of the one call, before and after) and the plain check
    (the whole plan re-verified) keep, drop and show the same fixes."""
    from car_verify.deciders import repair as r

    result = car_verify.verify(plan, tools=TOOLS, profile=profile)
    fast = r._Scene(result, timeout_ms=5_000, z3_questions=0)
    plain = r._Scene(result, timeout_ms=5_000, z3_questions=0)
    plain.local_left = 0  # every fix re-verified with the whole plan
    for issue in result.issues:
        derive = r.DERIVERS.get(issue.code)
        fix = derive(fast, issue) if derive is not None else None
        if fix is None or not fix.edits or r._on_the_call_alone(fast, issue, fix) is None:
            continue
        quick, full = r._checked(fast, issue, fix), r._checked(plain, issue, fix)
        assert (quick is None) == (full is None), (issue, fix, quick, full)
        if quick is not None and full is not None:
            assert quick.applicability == full.applicability, (issue, quick, full)


def test_the_repair_benchmark_reads_bfcl_and_its_mistakes_are_repaired() -> None:
    """benchmarks/bench_repair.py: a BFCL case becomes a plan and a closed registry,
    and a mistake of each parameter kind on it is repaired exactly (its full run is
    the benchmark's; this keeps the script from rotting)."""
    import importlib.util
    import random

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location(
        "bench_repair", root / "benchmarks" / "bench_repair.py"
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    entry = {
        "id": "t",
        "function": [
            {
                "name": "calc.area",
                "parameters": {
                    "type": "dict",
                    "properties": {
                        "base": {"type": "integer"},
                        "unit": {"type": "string", "enum": ["cm", "m"]},
                        "opts": {"type": "dict", "properties": {"round": {"type": "float"}}},
                    },
                    "required": ["base"],
                },
            }
        ],
        "ground_truth": [
            {"calc.area": {"base": [10], "unit": ["cm", ""], "opts": [{"round": [2.5]}]}}
        ],
    }
    label, plan, tools, _ = bench.bfcl_case(entry)
    assert label == "bfcl/t"
    assert plan["actions"][0]["parameters"] == {"base": 10, "unit": "cm", "opts": {"round": 2.5}}
    schema = tools[0]["parameters"]
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert schema["properties"]["opts"]["properties"]["round"]["type"] == "number"
    registry = {t["name"]: t for t in tools}
    rng = random.Random(1)
    for kind in ("type-drift", "param-name", "tool-name", "enum-case", "extra-param"):
        copies = bench.CORRUPTIONS[kind](plan, registry, rng)
        assert copies, kind
        for broken in copies:
            assert broken != plan
            assert bench.same(bench.fixed(broken, tools, None, "car", True), plan), (kind, broken)
