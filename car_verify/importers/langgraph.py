"""A LangGraph ``StateGraph`` as a workflow graph, so that ``car-verify workflow``
checks it (``docs/workflow.md``; ``pip install 'car-verify[langchain]'``).

:func:`workflow_graph` reads the graph's declared structure, compiled or not,
without running it:

* ``START`` and ``END`` are the stages ``__start__`` (the entry) and
  ``__end__`` (the one terminal);
* each node is a stage of its name; each edge (``add_edge``) an edge; a join
  (``add_edge(["a", "b"], "c")``, which waits for both) an edge from each of its
  sources, so a path through either reaches ``c``;
* a conditional edge (``add_conditional_edges``) is a branch to each target of
  its ``path_map``, or of the ``Literal`` its routing function is annotated to
  return, each edge's condition naming the branch and its label. A branch with
  neither may go to **any node**: an edge to every node and to ``__end__``
  (what LangGraph's own validation assumes); the edges' condition says so;
* a node that routes with ``Command(goto=...)`` has an edge to each destination
  it declares (``destinations=`` or a ``Command[Literal[...]]`` return type);
  one that declares none is read by its edges alone (LangGraph cannot know
  them either);
* a node whose error handler is another node has an edge to it (``on error``);
* a node whose runnable is a compiled graph (a subgraph) is nested: its stage
  leads to the subgraph's ``<node>:__start__``, the subgraph's stages are named
  ``<node>:<stage>`` (as ``get_graph(xray=True)`` names them), and the node's
  own edges leave from ``<node>:__end__``, so a path goes through the subgraph.

A node with no outgoing edge ends its graph quietly, as LangGraph runs it: inside
a subgraph that end returns to the parent (an edge to ``<node>:__end__``, its
condition ``ends the subgraph``), so the parent's own edges go on from there; at
the top, it ends the run, and the check reports it as a ``dead_end`` (an exit
nothing declares), with the path to it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..base.errors import InputError

__all__ = ["graph_document", "workflow_graph"]

START = "__start__"
END = "__end__"


def workflow_graph(graph: Any) -> Any:
    """The :class:`~car_verify.deciders.workflow.WorkflowGraph` of a LangGraph
    ``StateGraph`` or compiled graph (see the module docs)."""
    from ..deciders.workflow import parse_graph

    return parse_graph(graph_document(graph))


def graph_document(graph: Any) -> dict[str, Any]:
    """The graph as JSON ``{entry, terminals, stages, edges}``."""
    stages: list[str] = []
    edges: list[dict[str, Any]] = []
    _add(_builder(graph), "", stages, edges, set())
    return {"entry": START, "terminals": [END], "stages": stages, "edges": edges}


def _builder(graph: Any) -> Any:
    """The ``StateGraph`` that declares ``graph``'s structure."""
    if hasattr(graph, "branches") and hasattr(graph, "nodes") and hasattr(graph, "edges"):
        return graph
    builder = getattr(graph, "builder", None)
    if builder is not None and hasattr(builder, "branches"):
        return builder
    raise InputError(
        f"{type(graph).__name__} is not a LangGraph StateGraph or compiled graph: its "
        "structure cannot be read"
    )


def _subgraph(runnable: Any) -> Any | None:
    """The StateGraph of a node whose runnable is a compiled graph, else None."""
    builder = getattr(runnable, "builder", None)
    if builder is not None and hasattr(builder, "branches") and hasattr(runnable, "get_graph"):
        return builder
    return None


def _add(
    builder: Any, prefix: str, stages: list[str], edges: list[dict[str, Any]], inside: set[int]
) -> None:
    """Add ``builder``'s stages and edges, each stage named ``prefix + name``."""
    if id(builder) in inside:
        raise InputError(f"the subgraph at {prefix[:-1]!r} holds itself")
    inside = inside | {id(builder)}
    nodes: dict[str, Any] = dict(builder.nodes)
    subgraphs = {n: s for n, spec in nodes.items() if (s := _subgraph(spec.runnable)) is not None}

    def into(node: str) -> str:
        return prefix + (END if node == END else node)

    def out_of(node: str) -> str:
        if node == START:
            return prefix + START
        return prefix + node + ":" + END if node in subgraphs else prefix + node

    def edge(a: str, b: str, condition: str | None = None) -> None:
        made: dict[str, Any] = {"from": out_of(a), "to": into(b)}
        if condition is not None:
            made["condition"] = condition
        edges.append(made)

    stages.append(prefix + START)
    for node in nodes:
        stages.append(prefix + node)
        if node in subgraphs:
            _add(subgraphs[node], f"{prefix}{node}:", stages, edges, inside)
            edges.append({"from": prefix + node, "to": f"{prefix}{node}:{START}"})
    stages.append(prefix + END)
    for a, b in sorted(builder.edges):
        edge(a, b)
    for starts, b in sorted(builder.waiting_edges):
        for a in starts:
            edge(a, b, f"joins {', '.join(starts)}")
    for source, branches in builder.branches.items():
        for name, branch in branches.items():
            if branch.ends is None:
                for target in (*nodes, END):
                    edge(source, target, f"{name}: any node (no path_map)")
                continue
            for label, target in branch.ends.items():
                edge(source, target, f"{name}: {label}")
    for node, spec in nodes.items():
        for target in _destinations(spec.ends):
            edge(node, target, "Command")
        handler = getattr(spec, "error_handler_node", None)
        if handler:
            edge(node, handler, "on error")
    if prefix:  # a subgraph's quiet end returns to its parent, as LangGraph runs it
        leaving = {e["from"] for e in edges}
        for node in nodes:
            if out_of(node) not in leaving:
                edge(node, END, f"ends the subgraph: back to {prefix[:-1]}")


def _destinations(ends: Any) -> Iterable[str]:
    if not ends:
        return ()
    return list(ends.values() if isinstance(ends, dict) else ends)
