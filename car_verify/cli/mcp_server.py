"""``car-verify mcp``: an MCP server (the official ``mcp`` SDK, stdio transport), so
an agent in any MCP client can check its own plan before it acts.

Each tool takes a proposal object (and what the matching command takes) and
returns the result's wire JSON (``structured_content``) and a short text a model
can read (the command's own text). Descriptions come from the commands'
declarations (:class:`Declarations`, read from the command line's parser by
``car-verify mcp``) and the proposal, tools and state arguments are described by
the JSON Schemas generated from the model (:mod:`car_verify.ir.schema`). Bad input
is a tool error carrying the input error's message; the server goes on serving.

The SDK is an optional extra (``pip install 'car-verify[mcp]'``): nothing here is
imported by the rest of car-verify.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["TOOLS", "Declarations", "McpTool", "call", "serve"]


@dataclass(frozen=True, slots=True)
class Declarations:
    """What the command line declares: each command's one-line help, and each of
    its arguments' help (``(command, dest or flag)`` -> text)."""

    summaries: Mapping[str, str]
    flags: Mapping[tuple[str, str], str]

    @classmethod
    def of(cls, tree: list[Any]) -> Declarations:
        """From :func:`car_verify.cli._common.command_tree` (its parsers read as data)."""
        summaries, flags = {}, {}
        for name, parser, summary in tree:
            summaries[name] = summary
            for action in parser._actions:
                for key in (action.dest, *action.option_strings):
                    flags[(name, key)] = str(action.help or "")
        return cls(summaries, flags)


#: An argument: ("schema", file kind) (the JSON Schema generated from the model),
#: ("profile",), or ("flag", JSON type, flag) (described by the command's declaration).
Arg = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class McpTool:
    """One tool: the command it answers for, its arguments, and its work
    (arguments -> (wire JSON, text))."""

    name: str
    command: str
    arguments: Mapping[str, Arg]
    required: tuple[str, ...]
    run: Callable[[dict[str, Any]], tuple[Any, str]]

    def input_schema(self, decl: Declarations) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                name: _argument(arg, self.command, decl) for name, arg in self.arguments.items()
            },
            "required": list(self.required),
        }

    def description(self, decl: Declarations) -> str:
        summary = decl.summaries[self.command]
        return f"{summary} (as `{self.command}`; the result's JSON and a summary)"


def _argument(arg: Arg, command: str, decl: Declarations) -> dict[str, Any]:
    if arg[0] == "schema":
        from ..ir.schema import json_schema

        doc = json_schema(arg[1])  # described by the model: an object, not a file
        doc.pop("$schema", None)
        return doc
    if arg[0] == "profile":
        return {"enum": ["car", "strict"], "description": decl.flags[(command, "--profile")]}
    return {"type": arg[1], "description": decl.flags[(command, arg[2])]}


def _verify(args: dict[str, Any]) -> tuple[Any, str]:
    from ..api import verify
    from ..reporters.text import render_text

    result = verify(
        args["proposal"],
        tools=args.get("tools"),
        initial_state=args.get("state"),
        profile=args.get("profile"),
    )
    return result.to_dict(), render_text(result).strip()


def _simulate(args: dict[str, Any]) -> tuple[Any, str]:
    from ..api import simulate

    sim = simulate(args["proposal"], args.get("state"), profile=args.get("profile"))
    import json

    doc = sim.to_dict()  # the end state
    return doc, f"end state: {json.dumps(doc, ensure_ascii=False)} (profile {sim.profile})"


def _equivalent(args: dict[str, Any]) -> tuple[Any, str]:
    from ..deciders.equivalence import equivalent

    result = equivalent(args["a"], args["b"], profile=args.get("profile"))
    return result.to_dict(), result.explain()


def _policy_check(args: dict[str, Any]) -> tuple[Any, str]:
    import os

    from ..api import verify
    from ..reporters.text import render_text
    from ..rules.policy import policies_to_check

    loaded = policies_to_check(
        args.get("policies"), os.getcwd(), name_them="name the policies with the policies argument"
    )
    result = verify(
        args["proposal"],
        initial_state=args.get("state"),
        passes=["policies"],
        policies=loaded,
        profile=args.get("profile"),
    )
    return result.to_dict(), f"{loaded.describe()}\n{render_text(result)}"


def _risk(args: dict[str, Any]) -> tuple[Any, str]:
    from ..plan.risk import risk

    result = risk(
        args["proposal"],
        args.get("state"),
        args.get("rates"),
        args.get("goal"),
        profile=args.get("profile"),
    )
    doc = result.to_dict()
    goal = doc["p_goal_reached"]
    reached = "no goal given" if goal is None else f"the goal is reached with p = {goal}"
    landed = f"every effect lands with p = {doc['p_all_effects_landed']}"
    return doc, f"{reached}; {landed} ({doc['method']}, tier {doc['tier']})"


def _codes(args: dict[str, Any]) -> tuple[Any, str]:
    from ..base.codes import CODES
    from .docgen import explain_code

    code = args.get("code")
    if code is None:
        listed = sorted(CODES)
        return {"codes": listed}, ", ".join(listed)
    text = explain_code(code)
    if text is None:
        from ..base.errors import UsageError

        raise UsageError(f"unknown code {code!r} (the tool without a code lists them)")
    return {"code": code, "explanation": text}, text


TOOLS: tuple[McpTool, ...] = (
    McpTool(
        "verify",
        "car-verify verify",
        {
            "proposal": ("schema", "proposal"),
            "tools": ("schema", "tools"),
            "state": ("schema", "state"),
            "profile": ("profile",),
        },
        ("proposal",),
        _verify,
    ),
    McpTool(
        "simulate",
        "car-verify simulate",
        {
            "proposal": ("schema", "proposal"),
            "state": ("schema", "state"),
            "profile": ("profile",),
        },
        ("proposal",),
        _simulate,
    ),
    McpTool(
        "equivalent",
        "car-verify equivalent",
        {
            "a": ("schema", "proposal"),
            "b": ("schema", "proposal"),
            "profile": ("profile",),
        },
        ("a", "b"),
        _equivalent,
    ),
    McpTool(
        "policy_check",
        "car-verify policy check",
        {
            "proposal": ("schema", "proposal"),
            "policies": ("flag", "string", "--policies"),
            "state": ("schema", "state"),
            "profile": ("profile",),
        },
        ("proposal",),
        _policy_check,
    ),
    McpTool(
        "risk",
        "car-verify risk",
        {
            "proposal": ("schema", "proposal"),
            "state": ("schema", "state"),
            "rates": ("flag", "object", "--rates"),
            "goal": ("flag", "object", "--goal"),
            "profile": ("profile",),
        },
        ("proposal",),
        _risk,
    ),
    McpTool(
        "codes",
        "car-verify codes",
        {"code": ("flag", "string", "code")},
        (),
        _codes,
    ),
)


def call(
    name: str, arguments: dict[str, Any] | None, profile: str | None = None
) -> tuple[Any, str, bool]:
    """Run a tool: ``(wire JSON, text, is_error)``. An input or usage error is the
    tool's error (its message), not the server's failure. ``profile``: the server's
    default, where a call names none."""
    from ..base.errors import CarVerifyError

    tool = next((t for t in TOOLS if t.name == name), None)
    if tool is None:
        return None, f"unknown tool {name!r}: one of {', '.join(t.name for t in TOOLS)}", True
    args = dict(arguments or {})
    missing = [r for r in tool.required if r not in args]
    if missing:
        return None, f"missing argument {', '.join(missing)}", True
    unknown = sorted(set(args) - set(tool.arguments))
    if unknown:
        return (
            None,
            f"unknown argument {', '.join(unknown)} (takes {', '.join(tool.arguments)})",
            True,
        )
    try:
        if "profile" in tool.arguments:  # resolved as the command line resolves it
            from ..semantics.profiles import resolve_profile

            args["profile"] = resolve_profile(args.get("profile") or profile)[0].value
        doc, text = tool.run(args)
    except CarVerifyError as err:
        return None, str(err), True
    return doc, text, False


def serve(decl: Declarations, profile: str | None = None) -> None:
    """Serve the tools over stdio until the client closes the connection; ``profile``
    is the default of every call (else resolved as the command line resolves it)."""
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    from .._version import __version__

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t.name, description=t.description(decl), input_schema=t.input_schema(decl)
                )
                for t in TOOLS
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        doc, text, failed = call(params.name, params.arguments, profile)
        structured = doc if isinstance(doc, dict) else None
        return types.CallToolResult(
            content=[types.TextContent(text=text)], structured_content=structured, is_error=failed
        )

    server: Any = Server(
        "car-verify", version=__version__, on_list_tools=list_tools, on_call_tool=call_tool
    )

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
