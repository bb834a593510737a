"""See the plan: a proposal as a Graphviz graph (pydot), rendered to SVG or PNG.

One rank per execution level (labelled ``level N``); edges labelled by why they
exist (an explicit dependency, a state key, an output reference); write
conflicts as red dashed edges labelled with the key; node shape by action type;
node colour by the worst finding (or by execution status when a ProposalResult
is given); a tooltip with the tool and its parameters; a legend. The DOT text is
deterministic (proposal order throughout) so it can be diffed and golden-tested.
pydot is imported only here.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .api import VerificationResult, verify
from .dag import Dag
from .errors import CarVerifyError
from .findings import Issue
from .model import ActionProposal, ActionStatus, ProposalResult, load

__all__ = ["GraphvizMissing", "render", "to_dot", "to_dot_text"]

SHAPES = {
    "tool_call": "box",
    "state_write": "cylinder",
    "state_read": "parallelogram",
    "assertion": "diamond",
}
UNKNOWN_SHAPE = "octagon"
SEVERITY_COLOURS = {
    "error": "#f4b6b6",
    "warning": "#fbe5a6",
    "info": "#cfe2f3",
    "clean": "#d5ecd4",
}
STATUS_COLOURS = {
    "succeeded": "#d5ecd4",
    "failed": "#f4b6b6",
    "rejected": "#f9cb9c",
    "skipped": "#e0e0e0",
    "proposed": "#ffffff",
    "validated": "#ffffff",
    "executing": "#cfe2f3",
}
CONFLICT_COLOUR = "#cc0000"
_INSTALL = (
    "Graphviz's `dot` is not installed: install Graphviz "
    "(Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz) "
    "or write DOT text instead (-o out.dot)"
)


class GraphvizMissing(CarVerifyError):
    """Rendering needs Graphviz's ``dot`` program, which is not on PATH."""

    def __init__(self) -> None:
        super().__init__(_INSTALL)


def _worst(issues: list[Issue]) -> str:
    if not issues:
        return "clean"
    return max(issues, key=lambda i: i.severity.rank).severity.value


def _quote(text: str) -> str:
    """A DOT string literal (pydot passes attribute values through as written)."""
    return json.dumps(text, ensure_ascii=False)


def to_dot(
    proposal: Any,
    *,
    result: VerificationResult | None = None,
    execution: ProposalResult | Any = None,
    tools: Any = None,
    initial_state: Mapping[str, Any] | None = None,
    profile: str | None = None,
    policies: Any = None,
) -> Any:
    """The proposal as a ``pydot.Dot``. Without ``result``, verify runs first
    (with ``tools``, ``initial_state`` and ``profile``); ``execution`` (a ProposalResult
    or an ExecutionResult) colours nodes by status instead of by finding."""
    import pydot

    model: ActionProposal = load(proposal)
    if result is None:
        result = verify(
            model, tools=tools, initial_state=initial_state, profile=profile, policies=policies
        )
    if execution is not None and not isinstance(execution, ProposalResult):
        execution = execution.result
    status: dict[str, ActionStatus] = (
        {r.action_id: r.status for r in execution.results} if execution is not None else {}
    )
    dag = result.dag if result.proposal is model else Dag(model)
    by_action: dict[int, list[Issue]] = {}
    for issue in result.issues:
        if issue.index is not None:
            by_action.setdefault(issue.index, []).append(issue)

    graph = pydot.Dot(
        "proposal",
        graph_type="digraph",
        rankdir="TB",
        newrank="true",
        fontname="Helvetica",
        label=_quote(f"proposal {model.id}"),
        labelloc="t",
        tooltip=_quote(f"proposal {model.id} from {model.source}"),
    )
    graph.set_node_defaults(fontname="Helvetica", fontsize="11", style="filled")
    graph.set_edge_defaults(fontname="Helvetica", fontsize="9", color="#555555")

    ranks: list[tuple[str, list[int]]] = [
        (f"level {n}", level) for n, level in enumerate(dag.levels)
    ]
    if dag.unlevelled:
        ranks.append(("no level (cycle)", dag.unlevelled))
    previous: str | None = None
    for r, (title, members) in enumerate(ranks):
        rank = pydot.Subgraph(f"rank{r}", rank="same")
        marker = f"level{r}"
        rank.add_node(
            pydot.Node(
                marker, label=_quote(title), shape="plaintext", style="solid", fontcolor="#666666"
            )
        )
        for i in members:
            rank.add_node(_node(pydot, model, i, by_action.get(i, []), status))
        graph.add_subgraph(rank)
        if previous is not None:
            graph.add_edge(pydot.Edge(previous, marker, style="invis"))
        previous = marker

    reasons: dict[tuple[int, int], list[str]] = {}
    for edge in dag.edges(implied=False):  # what reaches what, without the clutter
        label = {"dependency": "depends", "state": edge.label, "output": edge.label}[edge.kind]
        found = reasons.setdefault((edge.source, edge.target), [])
        if label not in found:
            found.append(label)
    for (source, target), labels in sorted(reasons.items()):
        graph.add_edge(pydot.Edge(f"a{source}", f"a{target}", label=_quote(", ".join(labels))))
    for a, b, key in dag.conflicts:
        graph.add_edge(
            pydot.Edge(
                f"a{a}",
                f"a{b}",
                label=_quote(f"conflict: {key}"),
                color=CONFLICT_COLOUR,
                fontcolor=CONFLICT_COLOUR,
                style="dashed",
                dir="none",
                constraint="false",
            )
        )
    graph.add_subgraph(_legend(pydot, bool(status)))
    return graph


def _node(
    pydot: Any,
    model: ActionProposal,
    i: int,
    issues: list[Issue],
    status: Mapping[str, ActionStatus],
) -> Any:
    action = model.actions[i]
    head = action.id if action.tool is None else f"{action.id}\n{action.tool}"
    if action.id in status:
        colour = STATUS_COLOURS.get(status[action.id].value, "#ffffff")
        head += f"\n[{status[action.id].value}]"
    else:
        colour = SEVERITY_COLOURS[_worst(issues)]
    params = json.dumps(action.parameters, sort_keys=True, ensure_ascii=False)
    if len(params) > 300:
        params = params[:297] + "..."
    tip = f"{action.type} {action.tool or ''} {params}".strip()
    if issues:
        tip += "\n" + "\n".join(f"{i.severity.value}[{i.code}] {i.message}" for i in issues[:5])
    return pydot.Node(
        f"a{i}",
        label=_quote(head),
        shape=SHAPES.get(action.type, UNKNOWN_SHAPE),
        fillcolor=_quote(colour),
        tooltip=_quote(tip),
    )


def _legend(pydot: Any, by_status: bool) -> Any:
    legend = pydot.Cluster(
        "legend", label=_quote("legend"), style="dashed", color="#999999", fontname="Helvetica"
    )
    entries: list[tuple[str, str, str]] = [
        (f"shape_{kind}", kind, shape) for kind, shape in SHAPES.items()
    ]
    for name, label, shape in entries:
        legend.add_node(pydot.Node(name, label=_quote(label), shape=shape, fillcolor='"#ffffff"'))
    colours = STATUS_COLOURS if by_status else SEVERITY_COLOURS
    keys = ["succeeded", "failed", "rejected", "skipped"] if by_status else list(SEVERITY_COLOURS)
    for key in keys:
        legend.add_node(
            pydot.Node(
                f"colour_{key}", label=_quote(key), shape="box", fillcolor=_quote(colours[key])
            )
        )
    legend.add_node(pydot.Node("conflict_a", label='"writer"', shape="box", fillcolor='"#ffffff"'))
    legend.add_node(pydot.Node("conflict_b", label='"writer"', shape="box", fillcolor='"#ffffff"'))
    legend.add_edge(
        pydot.Edge(
            "conflict_a",
            "conflict_b",
            label='"conflict: key"',
            color=CONFLICT_COLOUR,
            fontcolor=CONFLICT_COLOUR,
            style="dashed",
            dir="none",
        )
    )
    return legend


def to_dot_text(proposal: Any, **options: Any) -> str:
    """The DOT text of :func:`to_dot` (deterministic)."""
    text: str = to_dot(proposal, **options).to_string()
    return text


def render(graph: Any, fmt: str = "svg") -> bytes:
    """Render a pydot graph with Graphviz (``svg``, ``png``, ...)."""
    if shutil.which("dot") is None:
        raise GraphvizMissing()
    data: bytes = graph.create(format=fmt, prog="dot")
    return data


def write(graph: Any, path: str | Path) -> None:
    """Write ``path`` by its extension: ``.dot`` (text), or rendered ``.svg`` / ``.png``."""
    target = Path(path)
    fmt = target.suffix.lstrip(".").lower()
    if fmt in ("dot", "gv"):
        data = graph.to_string().encode()
    elif fmt in ("svg", "png", "pdf"):
        data = render(graph, fmt)
    else:
        raise CarVerifyError(f"cannot write {target.name}: use a .dot, .svg, .png or .pdf name")
    try:
        target.write_bytes(data)
    except OSError as err:
        raise CarVerifyError(f"cannot write {target}: {err.strerror or err}") from None
