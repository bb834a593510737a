"""Tools: every tool call names a registered tool and passes valid parameters.

What it checks:
    With a tool registry (an array of ToolSchema objects), that each
    ``tool_call``'s ``tool`` is registered (``unknown-tool``) and that its
    ``parameters`` satisfy the tool's ``parameters`` JSON Schema as the profile
    checks it (``param-schema``, one finding per violation, naming its JSON path):
    under strict the full schema, read with the draft its ``$schema`` declares
    (2020-12 if none), each tool's validator built once; under car only what the
    runtime checks, the top-level ``required`` and each property's ``type`` (the
    ``car`` pass notes what the full schema says beside it, ``param-schema-full``).
    A parameter the schema does not declare, where it lets one through, is noted
    when it is close to a declared one the call leaves out (``param-undeclared``:
    ``ctiy`` for ``city``, ``userId`` for ``user_id``), under both profiles.
    The strict message is jsonschema's, with a quoted value of more than 120
    characters (a long parameter, an ``enum`` of hundreds) cut to its start and its
    length; the path locates it whole.
    Without a registry the pass does not run and the evidence bundle says so.

Why it matters:
    A call to a tool the runtime does not have, or with parameters its schema
    rejects, fails before it does anything.

How to fix:
    Correct the tool name or register the tool; fix the parameter named in the
    message. Each finding carries its fix where one can be derived (the closest
    registered tool, a lossless type repair, the declared name: docs/fixes.md).

Why this tier:
    ``decision_procedure``: set membership and JSON Schema validation (a
    ``param-undeclared`` note states two facts, an undeclared name and a declared
    one close to it; whether it is a misspelling it asks).
"""

from __future__ import annotations

from collections.abc import Iterator

from car_verify.base.findings import Issue, Tier
from car_verify.base.names import closest
from car_verify.passes import Context, Example, Pass, Requirement

_DEPLOY_TOOL = {
    "name": "deploy",
    "parameters": {
        "type": "object",
        "properties": {"env": {"type": "string", "enum": ["staging", "prod"]}},
        "required": ["env"],
    },
}


def _deploy(**params: object) -> dict[str, object]:
    return {"actions": [{"id": "a1", "type": "tool_call", "tool": "deploy", "parameters": params}]}


class ToolSchemaPass(Pass):
    name = "tools"
    tier = Tier.DECISION_PROCEDURE
    codes = ("unknown-tool", "param-schema", "param-undeclared")
    requires = frozenset({Requirement.TOOLS})
    verifies = "tool calls name registered tools and pass parameters their schemas accept"
    cannot_verify = "what a tool does with valid parameters"
    assumes = ("the tool registry is the one the runtime will use",)
    examples = (
        Example("valid parameters", _deploy(env="staging"), tools=[_DEPLOY_TOOL]),
        Example(
            "a tool the registry does not have",
            {"actions": [{"id": "a1", "type": "tool_call", "tool": "deploy_v2"}]},
            ("unknown-tool",),
            tools=[_DEPLOY_TOOL],
        ),
        Example(
            "an environment the schema does not allow",
            _deploy(env="qa"),
            ("param-schema",),
            tools=[_DEPLOY_TOOL],
        ),
        Example(
            "a misspelled optional parameter the schema lets through (and the tool ignores)",
            _deploy(env="staging", dryrun=True),
            ("param-undeclared",),
            tools=[
                {
                    "name": "deploy",
                    "parameters": {
                        **_DEPLOY_TOOL["parameters"],  # type: ignore[dict-item]
                        "properties": {"env": {"type": "string"}, "dry_run": {"type": "boolean"}},
                    },
                }
            ],
        ),
    )

    def run(self, ctx: Context) -> Iterator[Issue]:
        tools = ctx.tools
        assert tools is not None  # guaranteed by `requires`
        problems = ctx.parameter_problems  # each registered call's, as the profile checks
        for i, action in enumerate(ctx.proposal.actions):
            if action.type != "tool_call" or action.tool is None:
                continue
            if action.tool not in tools:
                yield ctx.issue(
                    "unknown-tool",
                    ctx.semantics.say("unknown-tool", tool=action.tool)
                    or f"tool {action.tool!r} is not in the tool registry",
                    index=i,
                    where=("tool",),
                )
                continue
            for message, path in problems.get(i, ()):
                yield ctx.issue("param-schema", message, index=i, where=("parameters", *path))
            if not tools.names_only:
                yield from _undeclared(ctx, i, tools[action.tool].parameters)


def _undeclared(ctx: Context, index: int, schema: object) -> Iterator[Issue]:
    """A parameter the schema lets through undeclared, close to a declared one the call
    leaves out (``param-undeclared``); where the schema forbids it, the schema check
    says so itself."""
    if not isinstance(schema, dict) or schema.get("additionalProperties") is False:
        return
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties or schema.get("patternProperties"):
        return
    action = ctx.proposal.actions[index]
    given = action.parameters
    open_names = [name for name in properties if name not in given]
    for key in given:
        if key in properties or not open_names:
            continue
        match = closest(key, open_names)
        if match is not None:
            yield ctx.issue(
                "param-undeclared",
                f"tool {action.tool!r} declares no parameter {key!r}: did you mean "
                f"{match.name!r}? (its schema lets {key!r} through, and the tool likely "
                "ignores it)",
                index=index,
                where=("parameters", key),
            )
