"""LangGraph graphs checked as workflow graphs: the patterns of LangGraph's own
documentation (a router with conditional edges, a loop with an exit, a
subgraph), generated graphs against a plain reachability written here, and
``car-verify workflow module:attr``."""

from __future__ import annotations

import json
import sys
from collections import deque
from pathlib import Path
from typing import Any, Literal, TypedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("langgraph.graph", reason="the [langchain] extra is not installed")

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from car_verify.cli import main
from car_verify.deciders.workflow import (
    check_workflow_policies,
    unreachable_paths,
    verify_workflow_graph,
)
from car_verify.importers.langgraph import graph_document, workflow_graph


class State(TypedDict):
    n: int


def step(state: State) -> State:
    return state


def kinds(graph: Any) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(d.kind, d.subject, d.witness) for d in verify_workflow_graph(graph).defects]


def agent_loop() -> Any:
    """The tool-calling agent of LangGraph's docs: the model routes to the tools or
    ends; the tools go back to the model."""

    def should_continue(state: State) -> Literal["tools", "__end__"]:
        return "tools" if state["n"] else END

    g = StateGraph(State)
    g.add_node("agent", step)
    g.add_node("tools", step)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", should_continue)
    g.add_edge("tools", "agent")
    return g


def test_a_router_with_conditional_edges() -> None:
    g = StateGraph(State)
    for name in ("router", "weather", "news", "fallback"):
        g.add_node(name, step)
    g.add_edge(START, "router")
    g.add_conditional_edges(
        "router", lambda s: "w", {"w": "weather", "n": "news", "other": "fallback"}
    )
    for name in ("weather", "news", "fallback"):
        g.add_edge(name, END)
    doc = graph_document(g.compile())
    assert doc["entry"] == START and doc["terminals"] == [END]
    branches = {(e["to"], e.get("condition")) for e in doc["edges"] if e["from"] == "router"}
    assert branches == {
        ("weather", "condition: w"),
        ("news", "condition: n"),
        ("fallback", "condition: other"),
    }
    assert verify_workflow_graph(doc).sound
    policy = [{"kind": "precedes", "earlier": "router", "later": "news"}]
    assert check_workflow_policies(doc, policy).compliant


def test_a_loop_with_an_exit_and_one_without() -> None:
    assert verify_workflow_graph(graph_document(agent_loop())).sound
    trapped = StateGraph(State)
    trapped.add_node("write", step)
    trapped.add_node("review", step)
    trapped.add_edge(START, "write")
    trapped.add_conditional_edges("write", lambda s: "r", ["review"])
    trapped.add_edge("review", "write")
    found = kinds(graph_document(trapped))
    assert ("no_exit_reachable", "write", (START, "write")) in found
    assert ("unreachable_terminal", END, ()) in found


def test_a_subgraph_is_nested() -> None:
    inner = StateGraph(State)
    inner.add_node("plan", step)
    inner.add_node("act", step)
    inner.add_edge(START, "plan")
    inner.add_edge("plan", "act")
    inner.add_edge("act", END)
    outer = StateGraph(State)
    outer.add_node("intake", step)
    outer.add_node("work", inner.compile())
    outer.add_node("approve", step)
    outer.add_edge(START, "intake")
    outer.add_edge("intake", "work")
    outer.add_edge("work", "approve")
    outer.add_edge("approve", END)
    graph = workflow_graph(outer.compile())
    assert "work:plan" in graph.stages and "work:act" in graph.stages
    assert verify_workflow_graph(graph).sound
    rule = [{"kind": "precedes", "earlier": "approve", "later": "work:act"}]
    violation = check_workflow_policies(graph, rule).violations[0]
    assert violation.witness == (START, "intake", "work", "work:__start__", "work:plan", "work:act")
    stuck = StateGraph(State)
    stuck.add_node("loop", step)
    stuck.add_edge(START, "loop")
    stuck.add_edge("loop", "loop")
    outer2 = StateGraph(State)
    outer2.add_node("sub", stuck.compile())
    outer2.add_edge(START, "sub")
    outer2.add_edge("sub", END)
    assert ("unreachable_terminal", END, ()) in kinds(graph_document(outer2))


def test_a_subgraphs_quiet_end_returns_to_its_parent() -> None:
    """LangGraph's documented subgraph pattern: the subgraph's last node has no edge
    to END, and LangGraph runs it to completion, back in the parent (issue 59: 9
    defects before, `__end__` among them)."""
    inner = StateGraph(State)
    inner.add_node("sub1", step)
    inner.add_node("sub2", step)
    inner.add_edge(START, "sub1")
    inner.add_edge("sub1", "sub2")  # and no edge from sub2: a quiet end
    outer = StateGraph(State)
    outer.add_node("node1", step)
    outer.add_node("node2", inner.compile())
    outer.add_node("after", step)
    outer.add_edge(START, "node1")
    outer.add_edge("node1", "node2")
    outer.add_edge("node2", "after")
    outer.add_edge("after", END)
    doc = graph_document(outer)
    assert {"from": "node2:sub2", "to": "node2:__end__",
            "condition": "ends the subgraph: back to node2"} in doc["edges"]  # fmt: skip
    graph = workflow_graph(outer.compile())
    assert verify_workflow_graph(graph).sound, verify_workflow_graph(graph).defects
    rule = [{"kind": "precedes", "earlier": "node2:sub2", "later": "after"}]
    assert not check_workflow_policies(graph, rule).violations  # the path goes through
    # A top-level quiet end still ends the run where nothing declares an exit.
    outer.add_node("stop", step)
    outer.add_edge("node1", "stop")
    assert ("dead_end", "stop", (START, "node1", "stop")) in kinds(graph_document(outer))


def test_a_branch_with_no_known_targets_may_go_to_any_node() -> None:
    g = StateGraph(State)
    g.add_node("a", step)
    g.add_node("b", step)
    g.add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: "b")  # no path_map, no annotation
    doc = graph_document(g)
    targets = {e["to"] for e in doc["edges"] if e["from"] == "a"}
    assert targets == {"a", "b", END}
    assert all("any node" in e["condition"] for e in doc["edges"] if e["from"] == "a")


def test_dead_ends_and_unreachable_nodes_come_with_paths() -> None:
    g = StateGraph(State)
    for name in ("a", "stop", "orphan", "after_orphan"):
        g.add_node(name, step)
    g.add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: "x", {"x": "stop", "y": END})
    g.add_edge("orphan", "after_orphan")
    g.add_edge("after_orphan", END)
    doc = graph_document(g)
    found = kinds(doc)
    assert ("dead_end", "stop", (START, "a", "stop")) in found
    assert ("unreachable_stage", "after_orphan", ()) in found
    assert unreachable_paths(doc) == {
        "orphan": ("orphan",),
        "after_orphan": ("orphan", "after_orphan"),
    }


def hop(state: State) -> Command[Literal["b"]]:
    return Command(goto="b")


def test_commands_and_joins_are_edges() -> None:
    g = StateGraph(State)
    g.add_node("a", hop)
    g.add_node("b", step)
    g.add_node("c", step)
    g.add_node("d", step)
    g.add_edge(START, "a")
    g.add_edge(START, "c")
    g.add_edge(["b", "c"], "d")
    g.add_edge("d", END)
    edges = {(e["from"], e["to"], e.get("condition")) for e in graph_document(g)["edges"]}
    assert ("a", "b", "Command") in edges
    assert ("b", "d", "joins b, c") in edges and ("c", "d", "joins b, c") in edges
    with pytest.raises(Exception, match="not a LangGraph StateGraph"):
        graph_document(object())


# --- generated graphs, against a plain reachability --------------------------------------


@st.composite
def graphs(draw: st.DrawFn) -> tuple[Any, dict[str, set[str]]]:
    """A StateGraph of 1-6 nodes with plain and conditional edges, and its edges as
    written (START and END included) for the plain reachability below."""
    names = [f"n{i}" for i in range(draw(st.integers(1, 6)))]
    targets = st.sampled_from([*names, END])
    g = StateGraph(State)
    for name in names:
        g.add_node(name, step)
    written: dict[str, set[str]] = {n: set() for n in [START, *names, END]}
    first = draw(st.sampled_from(names))
    g.add_edge(START, first)
    written[START].add(first)
    for name in names:
        kind = draw(st.sampled_from(["none", "edge", "branch", "branch"]))
        if kind == "edge":
            target = draw(targets)
            g.add_edge(name, target)
            written[name].add(target)
        elif kind == "branch":
            ends = draw(st.lists(targets, min_size=1, max_size=3, unique=True))
            g.add_conditional_edges(name, lambda s: 0, {i: t for i, t in enumerate(ends)})
            written[name].update(ends)
    return g, written


def reach(edges: dict[str, set[str]], start: str) -> set[str]:
    seen, queue = {start}, deque([start])
    while queue:
        for nxt in edges[queue.popleft()]:
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen


@settings(max_examples=80, deadline=None)
@given(graphs(), st.booleans())
def test_generated_graphs_agree_with_a_plain_reachability(
    drawn: tuple[Any, dict[str, set[str]]], compiled: bool
) -> None:
    g, written = drawn
    graph = workflow_graph(g.compile() if compiled else g)
    report = verify_workflow_graph(graph)
    reached = reach(written, START)
    unreachable = {d.subject for d in report.defects if d.kind.startswith("unreachable")}
    assert unreachable == set(written) - reached
    backward: dict[str, set[str]] = {n: set() for n in written}
    for a, bs in written.items():
        for b in bs:
            backward[b].add(a)
    exits = reach(backward, END)
    for d in report.defects:
        if d.kind == "dead_end":
            assert not written[d.subject] and d.subject in reached
        elif d.kind == "no_exit_reachable":
            assert written[d.subject] and d.subject not in exits
        if d.witness:  # a witness is a path of written edges from the start
            assert d.witness[0] == START
            assert all(b in written[a] for a, b in zip(d.witness, d.witness[1:], strict=False))
    stuck = {n for n in reached - {END} if n not in exits}
    flagged = {d.subject for d in report.defects if d.kind in ("dead_end", "no_exit_reachable")}
    assert flagged == stuck


# --- the command line ------------------------------------------------------------------


def test_the_command_line_loads_a_graph_from_a_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "my_agent.py").write_text(
        "from typing import TypedDict\n"
        "from langgraph.graph import StateGraph, START, END\n"
        "class S(TypedDict):\n    n: int\n"
        "def f(s):\n    return s\n"
        "builder = StateGraph(S)\n"
        "for name in ('triage', 'hotfix', 'approve', 'deploy'):\n"
        "    builder.add_node(name, f)\n"
        "builder.add_edge(START, 'triage')\n"
        "builder.add_conditional_edges('triage', lambda s: 'h', {'h': 'hotfix', 'a': 'approve'})\n"
        "builder.add_edge('hotfix', 'deploy')\n"
        "builder.add_edge('approve', 'deploy')\n"
        "builder.add_edge('deploy', END)\n"
        "graph = builder.compile()\n",
        encoding="utf-8",
    )
    (tmp_path / "policies.json").write_text(
        json.dumps([{"kind": "precedes", "earlier": "approve", "later": "deploy"}]),
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "my_agent", raising=False)
    code = main(
        ["workflow", "my_agent:graph", "--workflow-policies", "policies.json", "-o", "g.dot"]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "(path: __start__ -> triage -> hotfix -> deploy)" in out
    assert "hotfix" in (tmp_path / "g.dot").read_text(encoding="utf-8")
    assert main(["workflow", "my_agent:builder", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["sound"] is True
    assert main(["workflow", "my_agent:nothing"]) == 2
    assert "has no attribute" in capsys.readouterr().err
    assert main(["workflow", "no_such_module_here:graph"]) == 2
