"""``car-verify mcp`` (issue 40), driven by the MCP SDK's own client over stdio: the
tools, their schemas from the model and descriptions from the commands, results as
wire JSON and text, and bad input as a tool error while the server goes on."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from car_verify.cli.mcp_server import TOOLS, Declarations, call
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
    from car_verify.cli._common import command_tree

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
    proposal = verify.input_schema["properties"]["proposal"]
    assert proposal["$defs"] == json_schema("proposal")["$defs"]
    assert verify.input_schema["required"] == ["proposal"]


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
