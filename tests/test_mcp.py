"""``car-verify mcp`` (issue 40), driven by the MCP SDK's own client over stdio: the
tools, their schemas from the model and descriptions from the commands, results as
wire JSON and text, and bad input as a tool error while the server goes on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from car_verify.cli.mcp_server import TOOLS, Declarations, Settings, call
from car_verify.ir.schema import json_schema

ROOT = Path(__file__).resolve().parents[1]
GOOD = json.loads((ROOT / "examples" / "gated-deploy" / "proposal.json").read_text())
RACY = {
    "actions": [
        {"id": "a", "type": "tool_call", "tool": "t", "expected_effects": {"k": 1}},
        {"id": "b", "type": "tool_call", "tool": "u", "expected_effects": {"k": 2}},
    ]
}


def test_every_tool_declares_its_schema_and_description_without_the_sdk() -> None:
    from car_verify.cli import _parser
    from car_verify.cli.options import command_tree

    decl = Declarations.of(command_tree(_parser()))
    for tool in TOOLS:
        schema = tool.input_schema(decl)
        assert schema["type"] == "object" and set(schema["required"]) <= set(schema["properties"])
        assert all(p.get("description") for p in schema["properties"].values()), tool.name
        assert tool.description(decl)
    assert call("verify", {}) == (None, "missing argument proposal", True)
    assert call("verify", {"proposal": {}, "tool": []})[2] is True  # a misspelled argument
    # the server's --profile is each call's default; a call's own profile wins
    plan = {"actions": []}
    assert call("verify", {"proposal": plan}, "strict")[0]["profile"] == "strict"
    assert call("verify", {"proposal": plan, "profile": "car"}, "strict")[0]["profile"] == "car"


async def _session(work: Any, cwd: Path) -> Any:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "car_verify", "mcp"], cwd=str(cwd)
    )
    async with Client(params) as client:
        return await work(client)


def _run(work: Any, cwd: Path = ROOT) -> Any:
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    import anyio

    return anyio.run(_session, work, cwd)


def test_the_server_lists_its_tools_with_the_models_schemas() -> None:
    async def work(client: Any) -> Any:
        return (await client.list_tools()).tools

    tools = {t.name: t for t in _run(work)}
    assert set(tools) == {"verify", "simulate", "equivalent", "policy_check", "risk", "codes"}
    verify = tools["verify"]
    assert "as `car-verify verify`" in (verify.description or "")
    schema = verify.input_schema
    assert schema["properties"]["proposal"]["type"] == "object"
    # the model's definitions sit at the root, where the arguments' $refs look
    assert json_schema("proposal")["$defs"].items() <= schema["$defs"].items()
    assert schema["required"] == ["proposal"] and schema["additionalProperties"] is False
    from jsonschema import Draft202012Validator

    check = Draft202012Validator(schema)
    assert not list(check.iter_errors({"proposal": GOOD}))
    bad = {"proposal": {"actions": [{"id": 3, "type": "tool_call"}]}}
    assert [list(e.absolute_path) for e in check.iter_errors(bad)] == [
        ["proposal", "actions", 0, "id"]
    ]


def test_calls_return_wire_json_and_text_and_bad_input_is_a_tool_error(tmp_path: Path) -> None:
    (tmp_path / ".car" / "policies").mkdir(parents=True)
    (tmp_path / ".car" / "policies" / "rules.toml").write_text('deny_tool = ["u"]\n')

    async def work(client: Any) -> Any:
        out = {}
        out["verify"] = await client.call_tool("verify", {"proposal": RACY})
        out["bad"] = await client.call_tool("verify", {"proposal": {"actions": [{"type": 3}]}})
        out["after"] = await client.call_tool("simulate", {"proposal": GOOD})
        out["equivalent"] = await client.call_tool("equivalent", {"a": RACY, "b": GOOD})
        out["policy"] = await client.call_tool("policy_check", {"proposal": RACY})
        out["strict"] = await client.call_tool("verify", {"proposal": RACY, "profile": "strict"})
        return out

    got = _run(work, tmp_path)
    verify = got["verify"]
    assert not verify.is_error and verify.structured_content["valid"] is True
    assert "warning[write-conflict] a:" in verify.content[0].text
    assert got["bad"].is_error and "actions[0].type" in got["bad"].content[0].text
    assert not got["after"].is_error and got["after"].structured_content["deployed"] is True
    assert got["equivalent"].structured_content["equivalent"] is False
    policy = got["policy"]
    assert not policy.is_error and "deny_tool:u" in policy.content[0].text
    assert got["strict"].structured_content["profile"] == "strict"


def test_string_arguments_are_never_paths(tmp_path: Path) -> None:
    """A path given as an argument is a string, never opened: no file's existence,
    keys or folder entries come back, and /dev/zero or a FIFO is answered at once."""
    secret = tmp_path / "secret.json"
    secret.write_text('{"api_key": "k", "db_password": "p"}')
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "deny.toml").write_text('deny_tool = ["t"]\n')
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    plan = {"actions": []}
    for path in (str(secret), str(tmp_path / "absent.json"), "/dev/zero", str(fifo)):
        calls = [
            ("verify", {"proposal": path}, "proposal: expected an object, got a string"),
            ("verify", {"proposal": plan, "tools": path}, "tools: expected an array, got a string"),
            (
                "verify",
                {"proposal": plan, "state": path},
                "state: expected an object, got a string",
            ),
            ("simulate", {"proposal": path}, "proposal: expected an object, got a string"),
            ("equivalent", {"a": plan, "b": path}, "b: expected an object, got a string"),
            ("risk", {"proposal": path}, "proposal: expected an object, got a string"),
            ("policy_check", {"proposal": path}, "proposal: expected an object, got a string"),
        ]
        for name, arguments, text in calls:
            started = time.monotonic()
            doc, said, failed = call(name, arguments)
            assert (doc, failed, said) == (None, True, text), (name, arguments)
            assert time.monotonic() - started < 2
    # policies given a folder or a file: read as TOML text, never listed or opened
    for path in (str(tmp_path / "rules"), str(secret), "/dev/zero", str(fifo)):
        doc, said, failed = call("policy_check", {"proposal": plan, "policies": path})
        assert failed and said.startswith("policies: not valid TOML"), said
        assert "deny.toml" not in said and "api_key" not in said


def test_policies_are_the_policy_files_content_or_the_servers_folder(tmp_path: Path) -> None:
    plan = {"actions": [{"id": "a", "type": "tool_call", "tool": "rm"}]}
    (tmp_path / ".git").mkdir()  # the search for a .car/policies stops here
    alone = Settings(start=str(tmp_path))  # a server with no folder
    for policies in ('deny_tool = ["rm"]\n', {"deny_tool": ["rm"]}):
        doc, said, failed = call(
            "policy_check", {"proposal": plan, "policies": policies}, settings=alone
        )
        assert not failed and said.startswith("loaded 1 rule from the policies argument")
        assert [i["code"] for i in doc["issues"]] == ["deny_tool:rm"]
    doc, said, failed = call(
        "policy_check", {"proposal": plan, "policies": {"deny_tool": [3]}}, settings=alone
    )
    assert failed and said == 'policies.deny_tool[0]: expected a string (deny_tool = ["rm"])'
    doc, said, failed = call(
        "policy_check", {"proposal": plan, "policies": {"nope": 1}}, settings=alone
    )
    assert failed and said.startswith("policies.nope: unknown key")
    doc, said, failed = call("policy_check", {"proposal": plan, "policies": {}}, settings=alone)
    assert failed and "holds no rule" in said
    # without the argument: the server's folder (its --policies), never one a call names
    (tmp_path / "server").mkdir()
    (tmp_path / "server" / "r.toml").write_text('deny_tool = ["rm"]\n')
    settings = Settings(policies=str(tmp_path / "server"), start=str(tmp_path))
    doc, said, failed = call("policy_check", {"proposal": plan}, settings=settings)
    assert not failed and f"in {tmp_path / 'server'}" in said
    doc, said, failed = call("policy_check", {"proposal": plan}, settings=Settings(start="/"))
    assert failed and "give the policies argument" in said


def test_importing_the_server_module_or_starting_the_cli_loads_no_sdk() -> None:
    code = (
        "import sys, car_verify, car_verify.cli.mcp_server; from car_verify.cli import main;"
        "rc = main(['codes']); print('SDK', [m for m in ('mcp', 'anyio') if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and "SDK []" in done.stdout, done.stderr


def test_the_sdk_client_gets_tool_errors_naming_the_argument(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"api_key": "k"}')

    async def work(client: Any) -> Any:
        out = {}
        out["path"] = await client.call_tool("verify", {"proposal": str(secret)})
        out["code"] = await client.call_tool("codes", {"code": {}})
        out["rates"] = await client.call_tool("risk", {"proposal": GOOD, "rates": "x"})
        out["fine"] = await client.call_tool("codes", {"code": "duplicate-id"})
        return out

    got = _run(work, tmp_path)
    for name, text in (
        ("path", "proposal: expected an object, got a string"),
        ("code", "code: expected a string, got an object"),
        ("rates", "rates: expected an object, got a string"),
    ):
        assert got[name].is_error and got[name].content[0].text == text
    assert not got["fine"].is_error and got["fine"].structured_content["code"] == "duplicate-id"


def test_risk_gives_the_notes_the_command_line_gives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 59: the MCP ``risk`` dropped what the command line says beside the
    numbers: a goal kind it cannot decide here, a rate clamped to [0, 1], a goal
    key no action writes. Its text is the command line's, its JSON has the notes."""
    from car_verify.cli import main

    plan = {"actions": [{"id": "a", "type": "tool_call", "tool": "build",
                         "expected_effects": {"k": 1}}]}  # fmt: skip
    goal = {"kind": "all_of", "conditions": [
        {"kind": "state_predicate", "key": "kk", "equals": 1},
        {"kind": "tool_receipt", "id": "r1"},
    ]}  # fmt: skip
    doc, said, failed = call("risk", {"proposal": plan, "rates": {"build": 1.5}, "goal": goal})
    assert not failed
    paths = {}
    for name, value in (("p", plan), ("rates", {"build": 1.5}), ("goal", goal)):
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(value))
    assert main(["risk", str(paths["p"]), "--rates", str(paths["rates"]),
                 "--goal", str(paths["goal"])]) == 0  # fmt: skip
    cli = capsys.readouterr().out
    notes = [line for line in cli.splitlines() if line.startswith(("note:", "not decidable"))]
    assert len(notes) == 3  # the goal's undecidable part, the clamped rate, the unwritten key
    assert "clamped to [0, 1]: build 1.5 -> 1" in cli and "'kk', which no action writes" in cli
    for line in notes:
        assert line in said.splitlines()
    assert doc["goal_underivable_conditions"] == ["tool_receipt:r1"]
    assert [n for n in doc["notes"] if "clamped" in n or "no action writes" in n] == doc["notes"]
    assert len(doc["notes"]) == 2 and doc["profile"] == "car"
