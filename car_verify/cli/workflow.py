"""``car-verify workflow``: a workflow graph's dead ends, traps and unreachable
stages, and the rules on its paths."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..base.errors import UsageError
from .options import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_UNKNOWN,
    Parser,
    Report,
    Subcommands,
    emit,
    format_option,
    load_json,
    max_states_option,
    named_inputs,
    note,
    output_option,
    renamed_option,
    run_profile,
)

if TYPE_CHECKING:
    from ..base.values import JSONObject, JSONValue


def add(sub: Subcommands, profiled: Parser) -> None:
    """Declare the command on the command line's subparsers."""
    p = sub.add_parser(
        "workflow",
        parents=[profiled],
        help="a workflow graph: dead ends, traps, unreachable stages; precedes policies",
    )
    p.add_argument(
        "graph",
        metavar="GRAPH",
        nargs="?",
        help="a JSON file {entry, terminals, stages, edges}, or the runtime's workflow "
        "format; or module:attr, a LangGraph StateGraph (compiled or not) in an importable "
        "module (default: each .car/workflows/*.json, with .car/workflow-policies.json)",
    )
    p.add_argument(
        "--workflow-policies",
        metavar="POLICIES.json",
        help="[{kind: precedes, earlier, later, name?}] (default with no GRAPH: "
        ".car/workflow-policies.json)",
    )
    renamed_option(
        p,
        "--policies",
        "--workflow-policies",
        "workflow_policies",
        "--policies names a policy directory in every other command",
    )
    p.add_argument(
        "--rule",
        metavar="RULE",
        action="append",
        help="a trace rule checked over every path from the entry, loops included "
        "(entering a stage is a call of its name; repeatable)",
    )
    max_states_option(
        p,
        "the most (stage, monitor state) pairs the search of one --rule visits; past "
        "it the rule is unknown, exit 3 (default 1,000,000)",
    )
    output_option(p, "OUT.svg", "draw the graph (.dot/.svg/.png), the witness red")
    format_option(p, ("text", "json"))
    p.set_defaults(run=cmd_workflow)


def _found_workflows(args: argparse.Namespace) -> int:
    """``car-verify workflow`` without a file: every ``.car/workflows/*.json`` of the
    nearest ``.car`` (found as ``.car/policies`` is), with its policies."""
    from ..base.config import find_car_file

    folder, searched = find_car_file("workflows", kind="directory")
    if folder is None:
        where = ", ".join(str(p) for p in searched[:3])
        raise UsageError(f"no workflow graph: give GRAPH.json (no .car/workflows in {where})")
    graphs = sorted(folder.glob("*.json"))
    if not graphs:
        raise UsageError(f"{folder} holds no *.json workflow graph")
    if args.workflow_policies is None:
        near = folder.parent / "workflow-policies.json"
        if near.is_file():
            args.workflow_policies = str(near)
    worst = EXIT_OK
    for graph in graphs:
        with_policies = f" with {args.workflow_policies}" if args.workflow_policies else ""
        note(args, f"workflow: {graph}{with_policies}")
        args.graph = str(graph)
        worst = max(worst, cmd_workflow(args))
    return worst


def _runtime_workflow(args: argparse.Namespace, doc: JSONObject) -> int:
    from ..deciders.workflow import verify_workflow

    if args.workflow_policies or args.rule or args.output:
        raise UsageError(
            "--workflow-policies, --rule and -o read the graph format {entry, terminals, "
            "stages, edges}; this file is the runtime's workflow format"
        )
    with named_inputs({"workflow": args.graph}):
        report = verify_workflow(doc, profile=run_profile(args))

    def text() -> str:
        out = [f"{issue}\n" for issue in report.issues]
        out += [f"note: {finding}\n" for finding in report.semantic]
        cycles = "; it has cycles" if report.has_cycles else ""
        verdict = "valid" if report.valid else "invalid"
        reached = len(report.reachable_stages)
        profile = run_profile(args)
        out.append(f"{verdict}: {reached} stages reachable{cycles} (profile {profile})\n")
        return "".join(out)

    emit(args, Report.of(report.to_dict(), text))
    return EXIT_OK if report.valid else EXIT_FINDINGS


def cmd_workflow(args: argparse.Namespace) -> int:
    from ..deciders.workflow import (
        MAX_WORKFLOW_STATES,
        Lasso,
        check_workflow_policies,
        check_workflow_trace_rules,
        parse_graph,
        unreachable_paths,
        verify_workflow_graph,
    )

    if args.graph is None:
        return _found_workflows(args)
    doc = _graph_object(args.graph)
    if doc is None:
        doc = load_json(args.graph, dict, "workflow graph")
    if "start" in doc:  # the runtime's workflow format (stages with steps)
        return _runtime_workflow(args, doc)
    with named_inputs({"graph": args.graph, "policies": args.workflow_policies}):
        graph = parse_graph(doc)
        report = verify_workflow_graph(graph)
        policies = None
        if args.workflow_policies is not None:
            rules = load_json(args.workflow_policies, list, "policies")
            policies = check_workflow_policies(graph, rules)
    traced = None
    if args.rule:
        from ..rules.trace import parse_trace_rule

        rules = [parse_trace_rule(text, source="--rule") for text in args.rule]
        named = {*graph.stages, graph.entry, *(s for e in graph.edges for s in e[:2])}
        for rule in rules:  # a rule on no stage of the graph holds of nothing: a typo
            tools = {c.tool for c in (rule.call, rule.event) if c is not None}
            missing = sorted(t for t in tools if t is not None and t not in named)
            if missing:
                raise UsageError(
                    f"--rule {rule.text!r}: no stage is named {', '.join(map(repr, missing))}, "
                    f"so nothing was checked (stages: {', '.join(sorted(graph.stages))})"
                )
        traced = check_workflow_trace_rules(
            graph, rules, max_states=args.max_states or MAX_WORKFLOW_STATES
        )
    witness: tuple[str, ...] = ()
    for found in (
        *(d.witness for d in report.defects),
        *(v.witness for v in (policies.violations if policies else [])),
        *(c.path for c in (traced.counterexamples if traced else [])),
    ):
        if found:
            # a loop walked many times is drawn once
            witness = tuple(
                found[: len(found.prefix) + len(found.loop)] if isinstance(found, Lasso) else found
            )
            break
    ok = (
        report.sound
        and (policies is None or policies.compliant)
        and (traced is None or traced.holds)
    )
    if args.output:
        from ..reporters.dot import workflow_to_dot, write

        title = "sound" if ok else "first witness in red"
        write(workflow_to_dot(graph, witness=witness, title=title), args.output)
    out: dict[str, JSONValue] = report.to_dict()
    unreached = unreachable_paths(graph) if report.defects else {}
    if unreached:
        out["unreachable_paths"] = {k: list(v) for k, v in unreached.items()}
    if policies is not None:
        out["policies"] = policies.to_dict()
    if traced is not None:
        out["trace_rules"] = traced.to_dict()

    def text() -> str:
        from ..base.values import plural

        lines = []
        for d in report.defects:
            path = f" (path: {' -> '.join(d.witness)})" if d.witness else ""
            if d.kind == "unreachable_stage":
                led = unreached.get(d.subject, (d.subject,))
                path = (
                    f" (only from: {' -> '.join(led)})"
                    if len(led) > 1
                    else " (no edge leads to it)"
                )
            lines.append(f"{d.kind}: {d.explanation}{path}\n")
        for v in policies.violations if policies else []:
            lines.append(f"policy {v.policy!r}: {v.explanation} (path: {' -> '.join(v.witness)})\n")
        for c in traced.counterexamples if traced else []:
            lines.append(f"trace rule {c.rule!r}: {c.message} (path: {_path_text(c.path)})\n")
        for u in traced.unknown if traced else []:
            lines.append(f"trace rule {u.rule!r}: {u.message}\n")
        parts = ["sound" if report.sound else f"unsound: {plural(len(report.defects), 'defect')}"]
        if policies is not None:
            parts.append(
                "policies hold"
                if policies.compliant
                else plural(len(policies.violations), "policy violation")
            )
        if traced is not None:
            if traced.holds:
                parts.append("trace rules hold")
            if traced.counterexamples:
                parts.append(plural(len(traced.counterexamples), "trace rule") + " broken")
            if traced.unknown:
                parts.append(plural(len(traced.unknown), "trace rule") + " unknown")
        lines.append("; ".join(parts) + f" (profile {run_profile(args)})\n")
        return "".join(lines)

    emit(args, Report.of(out, text))
    if ok:
        return EXIT_OK
    decided = not (traced is not None and traced.unknown and not traced.counterexamples)
    if decided or not report.sound or (policies is not None and not policies.compliant):
        return EXIT_FINDINGS
    return EXIT_UNKNOWN


def _graph_object(given: str) -> JSONObject | None:
    """``module:attr`` that names no file: the LangGraph graph that module holds, as
    a workflow graph; None for a file (or anything else, read as a file)."""
    import os

    module, colon, attr = given.partition(":")
    if not colon or os.path.exists(given) or not module or not attr:
        return None
    import importlib
    import sys

    from ..importers.langgraph import graph_document

    if module.endswith(".py"):  # a file's name, where Python takes a module's
        dotted = module[:-3].replace(os.sep, ".").replace("/", ".")
        raise UsageError(
            f"GRAPH {given}: name the module without .py: car-verify workflow "
            f"{dotted}:{attr} (from the folder that holds {module})"
        )
    sys.path.insert(0, os.getcwd())  # a module of the project the command runs in
    try:
        found: object = importlib.import_module(module)
    except ImportError as err:
        raise UsageError(f"GRAPH {given}: {_import_problem(module, err)}") from None
    except (Exception, SystemExit) as err:  # the user's module raised: say so, as it is
        raise UsageError(
            f"GRAPH {given}: importing {module!r} raised {type(err).__name__}: {err} "
            "(the error is in that module, not in car-verify)"
        ) from None
    finally:
        sys.path.remove(os.getcwd())
    for part in attr.split("."):
        if not hasattr(found, part):
            raise UsageError(f"GRAPH {given}: {module!r} has no attribute {attr!r}")
        found = getattr(found, part)
    return graph_document(found)


#: The packages of the ``langchain`` extra a LangGraph module imports, by the name
#: an ImportError gives.
_EXTRA = {"langgraph": "LangGraph", "langchain": "LangChain", "langchain_core": "LangChain"}


def _import_problem(module: str, err: ImportError) -> str:
    """Why ``module`` could not be imported, and what to do about it."""
    missing = (err.name or "").partition(".")[0]
    if missing in _EXTRA:
        return (
            f"importing {module!r} needs {_EXTRA[missing]}, which is not installed: "
            "pip install 'car-verify[langchain]'"
        )
    if err.name == module or (err.name and module.startswith(err.name + ".")):
        return (
            f"no module {module!r} in the working directory or on the import path "
            "(run from the folder that holds it, or set PYTHONPATH)"
        )
    return f"importing {module!r} failed: {err}"


def _path_text(path: Sequence[str], ends: int = 12) -> str:
    """A path as ``a -> b -> c``; a long one (a loop walked 100,000 times) with its
    middle said as a count (the JSON output keeps it whole)."""
    if len(path) <= 2 * ends + 1:
        return " -> ".join(path)
    hidden = len(path) - 2 * ends
    return (
        " -> ".join(path[:ends])
        + f" -> ... ({hidden:,} more stages) -> "
        + " -> ".join(path[-ends:])
    )
