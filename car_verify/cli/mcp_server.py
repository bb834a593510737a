"""``car-verify mcp``: an MCP server (the official ``mcp`` SDK, over stdio), so an
agent in any MCP client can check its own plan before it acts.

Each tool takes JSON values, never paths: a proposal *object*, a state object, a
tool registry array, the policy file's *content*. It returns the result's wire
JSON (``structured_content``) and a short text a model can read (the command's
own text). Descriptions come from the commands' declarations
(:class:`Declarations`, read from the command line's parser by ``car-verify
mcp``) and the proposal, tools and state arguments are described by the JSON
Schemas generated from the model (:mod:`car_verify.ir.schema`).

:func:`call` is the whole of a tool call and never raises: the arguments are
checked against the tool's input schema, then read by car-verify's loaders, and
whatever fails is a tool error whose text names the argument and the JSON path
(``proposal.actions[2].id: expected a string, got an integer``).
:func:`car_verify.cli.mcp_stdio.serve` serves it: off the event loop under a
per-call budget, the tools that take a plan in worker processes
(:mod:`.mcp_workers`, killed when the budget runs out), ``codes`` in a thread.

The SDK is an optional extra (``pip install 'car-verify[mcp]'``): nothing here
imports it, and nothing in the rest of car-verify imports these modules.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

    from ..base.errors import InputError
    from ..base.values import JSONValue
    from ..semantics import ProfileLike

__all__ = ["TOOLS", "Declarations", "McpTool", "Settings", "call", "check_arguments", "prepare"]


@dataclass(frozen=True, slots=True)
class Declarations:
    """What the command line declares: each command's one-line help, and each of
    its arguments' help (``(command, dest or flag)`` -> text)."""

    summaries: Mapping[str, str]
    flags: Mapping[tuple[str, str], str]

    @classmethod
    def of(cls, tree: list[Any]) -> Declarations:
        """From :func:`car_verify.cli.options.command_tree` (its parsers read as data)."""
        summaries, flags = {}, {}
        for name, parser, summary in tree:
            summaries[name] = summary
            for action in parser._actions:
                for key in (action.dest, *action.option_strings):
                    flags[(name, key)] = str(action.help or "")
        return cls(summaries, flags)


@dataclass(frozen=True, slots=True)
class Settings:
    """What the server was started with (``car-verify mcp``'s flags).

    ``profile``: each call's default profile. ``policies``: the policies folder
    ``policy_check`` checks every call against (else the nearest ``.car/policies``
    at or above ``start``, the server's working directory); a call's ``policies``
    argument adds rules to it. ``accepted``: each file of that folder and its text
    as the server read them at start: a file edited or removed since still applies
    as it was, beside the folder as it is now, until the server restarts (the agent
    can write the workspace; nothing it writes takes a rule away mid-session).
    ``call_timeout``: each call's budget in seconds. ``workers``: how many worker
    processes run calls at once."""

    profile: ProfileLike = None
    policies: str | None = None
    start: str = "."
    call_timeout: float = 10.0
    workers: int = 2
    accepted: tuple[tuple[str, str], ...] = ()


#: An argument: ("schema", file kind) (the JSON Schema generated from the model),
#: ("profile",), ("flag", shape, flag) (a shape of :data:`_SHAPES`, described by the
#: command's declaration of the flag), or ("policies",).
Arg = tuple[str, ...]

_SHAPES: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "object": {"type": "object"},
    "rates": {"type": "object", "additionalProperties": {"type": "number"}},
}

_POLICIES = (
    "the policy file's content: its TOML text, or the same tables as a JSON object "
    '({"deny_tool": ["rm"]}), checked together with the policies folder the server was '
    "started with (its rules are added, never in place of the folder's; a path here is "
    "read as TOML text, never opened)"
)


@dataclass(frozen=True, slots=True)
class McpTool:
    """One tool: the command it answers for, its arguments, its work (arguments ->
    (wire JSON, text)), and whether that work runs in a worker process (``heavy``:
    it takes a plan, whose checks can run long) or in a thread of the server."""

    name: str
    command: str
    arguments: Mapping[str, Arg]
    required: tuple[str, ...]
    run: Callable[[dict[str, Any], Settings], tuple[Any, str]]
    heavy: bool = True

    def input_schema(self, decl: Declarations) -> dict[str, Any]:
        schema = _bare_schema(self)
        for name, arg in self.arguments.items():
            schema["properties"][name] = {
                **schema["properties"][name],
                "description": _description(arg, self.command, decl),
            }
        return schema

    def description(self, decl: Declarations) -> str:
        summary = decl.summaries[self.command]
        return f"{summary} (as `{self.command}`; the result's JSON and a summary)"


def _shape(arg: Arg) -> dict[str, Any]:
    if arg[0] == "schema":
        from ..ir.schema import json_schema

        doc = json_schema(arg[1])  # described by the model: an object, not a file
        doc.pop("$schema", None)
        return doc
    if arg[0] == "profile":
        return {"enum": ["car", "strict"]}
    if arg[0] == "policies":
        return {"type": ["string", "object"]}
    return dict(_SHAPES[arg[1]])


def _description(arg: Arg, command: str, decl: Declarations) -> str:
    if arg[0] == "schema":
        return str(_shape(arg).get("description", ""))
    if arg[0] == "profile":
        return decl.flags[(command, "--profile")]
    if arg[0] == "policies":
        return _POLICIES
    return decl.flags[(command, arg[2])]


def _bare_schema(tool: McpTool) -> dict[str, Any]:
    """The tool's input schema without the declarations' descriptions (what calls
    are checked against). The model's definitions (``$defs``) move to its root,
    where the arguments' ``#/$defs/...`` references find them."""
    properties: dict[str, Any] = {}
    defs: dict[str, Any] = {}
    for name, arg in tool.arguments.items():
        shape = _shape(arg)
        for key, definition in shape.pop("$defs", {}).items():
            if defs.setdefault(key, definition) != definition:
                raise AssertionError(f"two definitions of {key} in {tool.name}'s schema")
        properties[name] = shape
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": list(tool.required),
        "additionalProperties": False,
    }
    if defs:
        schema["$defs"] = defs
    return schema


def _validator(tool: McpTool) -> Any:
    return _validator_of(tool.name)


@cache
def _validator_of(name: str) -> Any:
    from ..rules.tools import _jsonschema

    tool = tool_named(name)
    assert tool is not None
    return _jsonschema().validators.Draft202012Validator(_bare_schema(tool))


def prepare(heavy: bool = True) -> None:
    """Load what the calls need before the first one comes: a worker, for the tools
    that take a plan (``heavy``); the server, for the others."""
    if heavy:
        import car_verify.api  # noqa: F401
    for tool in TOOLS:
        if tool.heavy == heavy:
            _validator(tool)
    if not heavy:
        from .docgen import explain_code

        explain_code("duplicate-id")  # the passes' documentation


# --- the tools' work ----------------------------------------------------------------


def _proposal(args: dict[str, Any], name: str = "proposal") -> Any:
    from ..ir.model import load

    with _naming(name):
        return load(args[name])


@contextmanager
def _naming(name: str) -> Iterator[None]:
    """An :class:`InputError` raised inside is located under the argument ``name``."""
    from ..base.errors import InputError

    try:
        yield
    except InputError as err:
        raise _under(name, err) from None


def _under(name: str, err: InputError) -> InputError:
    """``err`` (an InputError), located under the argument ``name`` (a policy file's
    error names its source: here the argument is the source)."""
    from ..base.errors import InputError

    return InputError(err.problem, [name, *err.path], line=err.line, column=err.column)


def _verify(args: dict[str, Any], settings: Settings) -> tuple[Any, str]:
    from ..api import verify
    from ..reporters.text import render_text
    from ..rules.tools import ToolRegistry

    model = _proposal(args)
    tools = None
    if "tools" in args:
        with _naming("tools"):
            tools = ToolRegistry.coerce(args["tools"])
    result = verify(model, tools=tools, initial_state=args.get("state"), profile=args["profile"])
    # each finding with its fix (a JSON Patch of the proposal as given): what the agent applies
    return result.to_dict(fixes=True), render_text(result).strip()


def _simulate(args: dict[str, Any], settings: Settings) -> tuple[Any, str]:
    from ..api import simulate

    sim = simulate(_proposal(args), args.get("state"), profile=args["profile"])
    doc = sim.to_dict()  # the end state
    return doc, f"end state: {json.dumps(doc, ensure_ascii=False)} (profile {sim.profile})"


def _equivalent(args: dict[str, Any], settings: Settings) -> tuple[Any, str]:
    from ..deciders.equivalence import equivalent

    result = equivalent(_proposal(args, "a"), _proposal(args, "b"), profile=args["profile"])
    return result.to_dict(), result.explain()


def _policy_check(args: dict[str, Any], settings: Settings) -> tuple[Any, str]:
    """The proposal against the server's rules (its ``--policies`` folder, else the
    nearest ``.car/policies``) and the rules of the ``policies`` argument, both: a
    call adds rules, it never takes the server's away (the agent writes the
    arguments). Only a server that has no folder checks the argument's alone."""
    from dataclasses import replace

    from ..api import verify
    from ..base.config import find_policies
    from ..base.errors import UsageError
    from ..base.values import plural
    from ..reporters.text import render_text
    from ..rules.policy import PolicySet, load_policy_object, load_policy_text, policies_to_check

    model = _proposal(args)
    given = args.get("policies")
    rules: Any = None
    said = ""
    if given is None or settings.policies is not None or find_policies(settings.start)[0]:
        loaded = policies_to_check(
            settings.policies,
            settings.start,
            name_them="give the policies argument (the policy file's content) or start the "
            "server with --policies DIR",
        )
        rules, said = loaded, loaded.describe()
        rules, said = _with_accepted(rules, said, settings.accepted)
    if given is not None:
        with _naming("policies"):
            if isinstance(given, str):
                added = load_policy_text(given, source="policies")
            else:
                added = load_policy_object(given, source="policies")
        if not added.count():
            raise UsageError("policies: the policy set holds no rule, so nothing was checked")
        from_argument = f"{plural(added.count(), 'rule')} from the policies argument"
        if rules is None:
            rules, said = added, f"loaded {from_argument}"
        else:
            both = PolicySet()
            both.extend(rules.rules)
            both.extend(added)
            rules, said = replace(rules, rules=both), f"{said}, and {from_argument}"
    result = verify(
        model,
        initial_state=args.get("state"),
        passes=["policies"],
        policies=rules,
        profile=args["profile"],
    )
    return result.to_dict(), f"{said}\n{render_text(result)}"


def _with_accepted(
    loaded: Any, said: str, accepted: tuple[tuple[str, str], ...]
) -> tuple[Any, str]:
    """``loaded`` (the folder as it is now) and the files of ``accepted`` whose text
    it no longer holds as the server read it at start: both apply."""
    from dataclasses import replace
    from pathlib import Path

    from ..base.values import plural
    from ..rules.policy import PolicySet, load_policy_text

    now = {str(path): text for path, text in loaded.texts.items()}
    kept = [(path, text) for path, text in accepted if now.get(path) != text]
    if not kept:
        return loaded, said
    both = PolicySet()
    both.extend(loaded.rules)
    for path, text in kept:
        both.extend(load_policy_text(text, source=f"{path} (as read at the server's start)"))
    names = ", ".join(Path(path).name for path, _ in kept)
    said += (
        f"; and {plural(len(kept), 'file')} as read when the server started ({names}: edited "
        f"or removed since, in force as they were until the server restarts)"
    )
    return replace(loaded, rules=both), said


def _risk(args: dict[str, Any], settings: Settings) -> tuple[Any, str]:
    from ..plan.risk import risk
    from ..semantics import semantics_of

    result = risk(
        _proposal(args),
        args.get("state"),
        args.get("rates"),
        args.get("goal"),
        profile=args["profile"],
    )
    # the command line's answer: its lines (what the goal could not decide, each
    # note on the inputs) in the text, and the notes beside the numbers in the JSON
    profile = semantics_of(args["profile"]).profile.value
    doc = {**result.to_dict(), "notes": list(result.notes), "profile": profile}
    return doc, f"{result.explain()}\n({result.method}, tier {doc['tier']}, profile {profile})"


def _codes(args: dict[str, Any], settings: Settings) -> tuple[Any, str]:
    from ..base.codes import CODES
    from .docgen import explain_code

    code = args.get("code")
    if code is None:
        listed = sorted(CODES)
        return {"codes": listed}, ", ".join(listed)
    text = explain_code(code)
    if text is None:
        from ..base.errors import UsageError

        raise UsageError(f"code: unknown code {code!r} (the tool without a code lists them)")
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
            "policies": ("policies",),
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
            "rates": ("flag", "rates", "--rates"),
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
        heavy=False,
    ),
)

#: What the analyses call an argument, where their errors name it.
_RENAMED = {"tool_success_rates": "rates", "initial_state": "state"}


def tool_named(name: str) -> McpTool | None:
    return next((t for t in TOOLS if t.name == name), None)


def call(
    name: str,
    arguments: Mapping[str, Any] | None,
    profile: ProfileLike = None,
    settings: Settings | None = None,
) -> tuple[Any, str, bool]:
    """Run a tool: ``(wire JSON, text, is_error)``; never raises. Bad arguments,
    input and usage errors are the tool's error, naming the argument and the JSON
    path; so is anything unforeseen (one line, never a traceback). ``profile``: the
    server's default, where a call names none."""
    settings = settings or Settings(profile=profile)
    try:
        return _call(name, arguments, profile or settings.profile, settings)
    except RecursionError:
        from ..base.errors import TOO_DEEP

        return None, TOO_DEEP, True
    except MemoryError:
        return None, "the call ran out of memory", True
    except Exception as err:  # never a traceback: the server goes on serving
        from ..reporters.text import one_line

        return None, f"internal error: {type(err).__name__}: {one_line(str(err))}", True


def _call(
    name: str, arguments: Mapping[str, Any] | None, profile: ProfileLike, settings: Settings
) -> tuple[Any, str, bool]:
    from ..base.errors import CarVerifyError, InputError

    tool = tool_named(name)
    if tool is None:
        return None, f"unknown tool {name!r}: one of {', '.join(t.name for t in TOOLS)}", True
    args = dict(arguments or {})
    problem = check_arguments(tool, args)
    if problem is not None:
        return None, problem, True
    try:
        if "profile" in tool.arguments:  # resolved as the command line resolves it
            from ..semantics.profiles import resolve_profile

            args["profile"] = resolve_profile(args.get("profile") or profile)[0].value
        doc, text = tool.run(args, settings)
    except InputError as err:
        head = err.path[0] if err.path else None
        if isinstance(head, str) and head in _RENAMED:
            err = InputError(err.problem, [_RENAMED[head], *err.path[1:]], source=err.source)
        return None, str(err), True
    except CarVerifyError as err:
        return None, str(err), True
    return doc, text, False


def check_arguments(tool: McpTool, args: Mapping[str, Any]) -> str | None:
    """The first thing wrong with a call's arguments, as a tool error's text naming
    the argument and the JSON path in it; None when they fit the tool's schema."""
    from ..base.errors import format_path, too_deep
    from ..base.values import MAX_DEPTH, deepest, nesting_depth
    from ..rules.tools import _jsonschema

    missing = [r for r in tool.required if r not in args]
    unknown = sorted(set(args) - set(tool.arguments))
    if missing:  # the nearest unknown key given: a misspelling of it?
        import difflib

        near = [
            f"{close[0]!r} for {r!r}"
            for r in missing
            if (close := difflib.get_close_matches(r, unknown, n=1, cutoff=0.6))
        ]
        said = f" (given {', '.join(near)}: a misspelling?)" if near else ""
        return f"missing argument {', '.join(missing)}{said}"
    if unknown:
        return f"unknown argument {', '.join(unknown)} (takes {', '.join(tool.arguments)})"
    for name, value in args.items():  # before the schema: its checks recurse
        if nesting_depth(value) > MAX_DEPTH:
            path, depth = deepest(value)
            return str(_under(name, too_deep(path, depth)))
    errors = _validator(tool).iter_errors(dict(args))
    error = _jsonschema().exceptions.best_match(errors, key=_deepest_first)
    if error is None:
        return None
    path, problem = _schema_problem(error)
    return f"{format_path(path)}: {problem}"


def _deepest_first(error: ValidationError) -> tuple[int, bool]:
    """Which schema error a call's answer names: the deepest in the value (the most
    precise place), a definite one before an "any of" that lists alternatives."""
    return len(error.absolute_path), error.validator not in ("anyOf", "oneOf")


_JSON_TYPES = {
    "string": "a string",
    "object": "an object",
    "array": "an array",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}


def _json_type(value: JSONValue) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "null"


def _schema_problem(error: Any) -> tuple[list[str | int], str]:
    """A JSON Schema error as (path, problem), in car-verify's words (the validator's
    own message quotes the whole value)."""
    path: list[str | int] = list(error.absolute_path)
    kind, expected, value = error.validator, error.validator_value, error.instance
    if kind == "type":
        kinds = [expected] if isinstance(expected, str) else list(expected)
        wanted = " or ".join(_JSON_TYPES.get(k, k) for k in kinds)
        return path, f"expected {wanted}, got {_json_type(value)}"
    if kind == "required":
        absent = [k for k in expected if isinstance(value, dict) and k not in value]
        return path, f"missing required field {(absent or expected)[0]!r}"
    if kind == "additionalProperties" and isinstance(value, dict):
        known = set(error.schema.get("properties", {}))
        extra = [k for k in value if k not in known]
        if extra:
            listed = ", ".join(sorted(known))
            return [*path, extra[0]], f"unknown field (expected one of {listed})"
    if kind == "enum":
        return path, f"expected one of {', '.join(json.dumps(v) for v in expected)}"
    if kind in ("anyOf", "oneOf"):
        alone = [s.get("required") for s in expected if isinstance(s, dict)]
        if alone and all(isinstance(r, list) and len(r) == 1 for r in alone):
            fields = ", ".join(r[0] for r in alone if r is not None)
            return path, f"expected at least one of the fields {fields}"
        kinds = [s.get("type") for s in expected if isinstance(s, dict)]
        if kinds and all(isinstance(k, str) for k in kinds):
            wanted = " or ".join(_JSON_TYPES.get(k, k) for k in kinds if isinstance(k, str))
            return path, f"expected {wanted}, got {_json_type(value)}"
        if error.context:  # the alternative that came nearest
            return _schema_problem(max(error.context, key=_deepest_first))
    if kind == "minimum":
        return path, f"expected at least {expected}, got {_number(value)}"
    if kind == "maximum":
        return path, f"expected at most {expected}, got {_number(value)}"
    if kind == "minLength":
        return path, f"expected at least {expected} characters"
    if kind == "minItems":
        return path, f"expected at least {expected} items"
    if kind == "const":
        return path, f"expected {json.dumps(expected)}"
    return path, f"does not match the schema's {kind!r}"


def _number(value: JSONValue) -> str:
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    return str(value) if isinstance(value, int) else _json_type(value)
