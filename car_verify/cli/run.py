"""``car-verify run``: execute a proposal behind the verify passes."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import UsageError
from .options import (
    EXIT_FINDINGS,
    EXIT_OK,
    Parser,
    Report,
    Subcommands,
    emit,
    flow_files,
    flow_policy_option,
    format_option,
    granted_option,
    labels_option,
    ledger_option,
    load_proposal,
    load_state,
    load_tools,
    no_labels_option,
    policies_for,
    policies_option,
    proposal_argument,
    quiet_option,
    run_profile,
    state_option,
    tools_option,
)

if TYPE_CHECKING:
    from ..base.values import JSONValue
    from ..executor import ExecutionResult

#: The tools that run: a mapping of tool name -> callable, or one dispatch callable.
Tools = Mapping[str, Callable[..., object]] | Callable[..., object]


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "run", parents=[profiled], help="execute a proposal behind the verify passes"
    )
    proposal_argument(p)
    p.add_argument(
        "--tool-module",
        metavar="MODULE[:ATTR]",
        help="the tools that run: a mapping name -> callable, or one dispatch callable "
        "(default ATTR: TOOLS)",
    )
    tools_option(p)
    p.add_argument("--schemas", help=argparse.SUPPRESS)  # the registry's older name
    state_option(p)
    policies_option(p)
    p.add_argument("--events", metavar="FILE", help="append the event log (JSON lines) to FILE")
    format_option(p, ("text", "json"))
    quiet_option(p, "no progress on stderr")
    granted_option(
        p,
        "the standing permission tier: an action it does not cover, or any "
        "full_access one, not approved in --ledger holds back the whole proposal",
    )
    ledger_option(p, "the approval ledger --granted and the flow gate consult")
    labels_option(
        p,
        "tool labels: the flow gate holds back a proposal whose hazards it blocks or "
        "the ledger has not approved (default: .car/tool-labels.json)",
    )
    flow_policy_option(p, "the flow gate's flow policy")
    no_labels_option(p, "do not look for .car/tool-labels.json")
    p.add_argument(
        "--results",
        choices=("newest", "0.52"),  # executor.RESULT_SHAPES (not imported at start-up)
        default="newest",
        help="an action the rollback undid is reported as the newest runtime reports it "
        "(succeeded, rolled_back: true; the default) or as car-runtime 0.52.1 did (failed)",
    )
    p.set_defaults(run=cmd_run)


def _tool_arguments(args: argparse.Namespace) -> tuple[str, str | None, str]:
    """The tools that run (``--tool-module``) and the registry (``--tools``).

    ``--tools`` is the JSON registry for every command. Before, ``run`` took the
    Python tools under that name and the registry as ``--schemas``: a ``--tools``
    that is no JSON or YAML file, given without ``--tool-module``, is still read
    as the tools that run, and a note says so. The third value is the flag the
    user named the tools with, for messages about them."""
    module, registry = args.tool_module, args.tools
    flag = "--tool-module"
    if args.schemas is not None:
        _said("--schemas is now --tools (the tool registry, as for every command)")
        if module is None and registry is not None:
            module, registry, flag = registry, None, "--tools"
        registry = args.schemas
    if module is None and registry is not None and not registry.endswith(_REGISTRY_SUFFIXES):
        _said(
            f"--tools {registry}: read as --tool-module (the tools that run); --tools "
            "names the tool registry (JSON) for every command"
        )
        module, registry, flag = registry, None, "--tools"
    if module is None:
        raise UsageError("run needs --tool-module MODULE[:ATTR]: the tools that run")
    return module, registry, flag


_REGISTRY_SUFFIXES = (".json", ".yaml", ".yml")


def _said(text: str) -> None:
    """A changed spelling is said even under ``--quiet``."""
    sys.stderr.write(f"car-verify: note: {text}\n")


def _load_tool_module(spec: str, flag: str = "--tool-module") -> Tools:
    """``MODULE[:ATTR]``: a dotted module or a ``.py`` file; ATTR defaults to ``TOOLS``.
    Errors name ``flag``, the option the user gave."""
    import importlib
    import importlib.util

    module_name, _, attr = spec.partition(":")
    attr = attr or "TOOLS"
    try:
        if module_name.endswith(".py") or os.sep in module_name:
            path = Path(module_name)
            if not path.is_file():
                raise UsageError(f"{flag}: no such file {module_name!r}")
            loader_spec = importlib.util.spec_from_file_location(path.stem, path)
            if loader_spec is None or loader_spec.loader is None:
                raise UsageError(f"{flag}: cannot import {module_name!r}")
            module = importlib.util.module_from_spec(loader_spec)
            sys.path.insert(0, str(path.resolve().parent))
            loader_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except UsageError:
        raise
    except (Exception, SystemExit) as err:  # the user's module raised: say so, as it is
        raise UsageError(
            f"{flag}: importing {module_name!r} failed: {type(err).__name__}: {err}"
        ) from None
    if not hasattr(module, attr):
        raise UsageError(f"{flag}: {module_name!r} has no attribute {attr!r}")
    tools: object = getattr(module, attr)
    if isinstance(tools, Mapping) or callable(tools):
        return tools
    raise UsageError(
        f"{flag}: {module_name}:{attr} is {type(tools).__name__!r}; expected a mapping "
        "of tool name -> callable, or one dispatch callable"
    )


def cmd_run(args: argparse.Namespace) -> int:
    import asyncio
    import signal

    from ..executor import Executor
    from ..reporters.json import run_json
    from ..reporters.text import run_text

    proposal = load_proposal(args.proposal)
    module, registry, flag = _tool_arguments(args)
    tools = _load_tool_module(module, flag)
    policies = policies_for(args, args.proposal)
    labels, flow_policy = flow_files(args)
    quiet = args.quiet

    def progress(kind: str, action_id: str | None, data: Mapping[str, JSONValue]) -> None:
        if quiet:
            return
        if kind == "level_started":
            sys.stderr.write(f"level: {', '.join(data['actions'])}\n")
        elif kind == "level_finished":
            sys.stderr.write(f"  -> {', '.join(data['statuses'])}\n")
        elif kind in ("aborted", "compensated", "compensation_failed"):
            detail = data.get("reason") or data.get("tool") or data.get("error") or ""
            sys.stderr.write(f"{kind}: {action_id or ''} {detail}\n")

    executor = Executor(
        proposal,
        tools,
        schemas=load_tools(registry),
        initial_state=load_state(args.state),
        policies=policies,
        event_log=args.events,
        progress=progress,
        profile=run_profile(args),
        granted_tier=args.granted,
        ledger=args.ledger,
        labels=labels,
        flow_policy=flow_policy,
        results=args.results,
    )

    async def run() -> ExecutionResult:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        if task is not None:
            with contextlib.suppress(NotImplementedError, RuntimeError):  # not on every OS
                loop.add_signal_handler(signal.SIGINT, task.cancel)
        try:
            return await executor.run()
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)

    outcome = asyncio.run(run())
    emit(args, Report(lambda: run_text(outcome), lambda: run_json(outcome)))
    statuses = {r.status.value for r in outcome.result.results}
    return EXIT_OK if statuses <= {"succeeded"} else EXIT_FINDINGS
