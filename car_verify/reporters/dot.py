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
from collections.abc import Mapping, Sequence
from html import escape
from itertools import pairwise
from pathlib import Path
from typing import Any

from ..api import VerificationResult, verify
from ..base.errors import CarVerifyError, TooLarge
from ..base.findings import Issue
from ..base.progress import Progress
from ..ir.model import ActionProposal, ProposalResult, load
from ..semantics import ProfileLike
from ..semantics.dag import Dag

__all__ = [
    "GraphvizMissing",
    "LayoutFailed",
    "render",
    "to_dot",
    "to_dot_text",
    "workflow_to_dot",
]

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
    "compensated": "#d9d2e9",
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


class LayoutFailed(CarVerifyError):
    """Graphviz could not lay a picture out (every fallback failed), or took longer
    than its time: a smaller picture may draw (``car-verify dot`` tries one)."""


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


#: Past this many actions the picture is summarised (see :func:`to_dot`).
MAX_NODES = 250
#: At most this many ranks: more levels are drawn as bands of consecutive levels.
MAX_RANKS = 40
#: At most this many conflict edges are drawn; the graph's label says how many more.
MAX_CONFLICT_EDGES = 200
BLOCKED_COLOUR = "#8b0000"
#: ``risk``'s ``p_effects_landed``, in five bands from red (rarely lands) to green.
LANDS_COLOURS = (
    (0.2, "#e06666", "lands < 20%"),
    (0.5, "#f6b26b", "lands 20-50%"),
    (0.8, "#ffe599", "lands 50-80%"),
    (0.99, "#b6d7a8", "lands 80-99%"),
    (1.01, "#6aa84f", "lands >= 99%"),
)
POLICY_COLOUR = "#cc0000"


def to_dot(
    proposal: Any,
    *,
    result: VerificationResult | None = None,
    execution: ProposalResult | Any = None,
    tools: Any = None,
    initial_state: Mapping[str, Any] | None = None,
    profile: ProfileLike = None,
    policies: Any = None,
    max_nodes: int = MAX_NODES,
    progress: Progress | None = None,
    risk: Any = None,
) -> Any:
    """The proposal as a ``pydot.Dot``. Without ``result``, verify runs first (with
    ``tools``, ``initial_state``, ``profile`` and ``policies``).

    Each action is drawn by what happens to it: its worst finding colours it; an
    action ``simulate`` blocks is drawn dashed with a dark border and ``[blocked]``;
    a policy violation gives it a red border and names the rule. ``execution`` (a
    ProposalResult, an ExecutionResult or ``car-verify run --format json``'s
    report) colours by status instead, ``compensated`` for an action a rollback
    undid; ``risk`` (a :class:`~car_verify.plan.risk.RiskResult`) colours by each
    action's ``p_effects_landed`` instead, in five bands.

    An edge is labelled with why it exists and with the keys it feeds to a
    precondition; a precondition supplied by an action that is no predecessor is
    a dotted edge. Past ``max_nodes`` actions (or :data:`MAX_RANKS` levels) the
    picture is summarised: consecutive levels share a rank, each rank draws its
    actions with findings first, the rest is one ``+ N more`` node, and the
    graph's title says so."""
    import pydot

    shown = progress if progress is not None else Progress()
    model: ActionProposal = load(proposal)
    shown.note("verify")
    if result is None:
        result = verify(
            model, tools=tools, initial_state=initial_state, profile=profile, policies=policies
        )
    shown.update()
    status = _statuses(execution)
    lands: dict[int, float] = {}
    if risk is not None and not status:
        lands = {i: row["p_effects_landed"] for i, row in enumerate(risk.action_outcomes)}
    dag = result.dag if result.proposal is model else Dag(model)
    by_action: dict[int, list[Issue]] = {}
    for issue in result.issues:
        if issue.index is not None:
            by_action.setdefault(issue.index, []).append(issue)
    shown.note("simulate")
    trace = _trace(model, initial_state, result) if not status else {}
    shown.update()

    weight = {i: 2 * (1 + max(x.severity.rank for x in found)) for i, found in by_action.items()}
    for i, action in enumerate(model.actions):
        step = trace.get(action.id)
        if step is not None and step.blocked:
            weight[i] = weight.get(i, 0) + 1
    levels, unlevelled, all_conflicts = _order(result, dag)
    bands = _bands(levels, unlevelled, max_nodes, weight)
    drawn = {i for _, members, _ in bands for i in members}
    summarised = len(drawn) < len(model.actions) - len(unlevelled) or len(bands) < len(levels)
    title = f"proposal {model.id} (profile {result.profile.value})"
    if summarised:
        title += (
            f" (summarised: {len(model.actions):,} actions in {len(levels):,} levels; "
            f"{len(drawn):,} drawn, actions with findings first)"
        )
    graph = pydot.Dot(
        "proposal",
        graph_type="digraph",
        rankdir="TB",
        newrank="true",
        fontname="Helvetica",
        label=_quote(title),
        labelloc="t",
        tooltip=_quote(f"proposal {model.id} from {model.source}"),
    )
    graph.set_node_defaults(fontname="Helvetica", fontsize="11", style="filled")
    graph.set_edge_defaults(fontname="Helvetica", fontsize="9", color="#555555")
    used = _Used()
    shown.note("graph")
    previous: str | None = None
    whole = [issue for issue in result.issues if issue.index is None]
    if whole:  # a finding about no one action: drawn above the first level
        graph.add_node(_whole(pydot, whole, used))
        previous = "proposal_findings"
    for r, (name, members, hidden) in enumerate(bands):
        rank = pydot.Subgraph(f"rank{r}", rank="same")
        marker = f"level{r}"
        rank.add_node(
            pydot.Node(
                marker, label=_quote(name), shape="plaintext", style="solid", fontcolor="#666666"
            )
        )
        for i in members:
            node = _node(pydot, model, i, by_action.get(i, []), status, trace, used, lands)
            rank.add_node(node)
        if hidden:
            rank.add_node(_more(pydot, r, hidden, by_action))
        graph.add_subgraph(rank)
        if previous is not None:
            graph.add_edge(pydot.Edge(previous, marker, style="invis"))
        previous = marker

    level_of = {i: n for n, level in enumerate(levels) for i in level}
    for (source, target), labels, style in _edges(model, dag, trace, drawn):
        attrs: dict[str, Any] = {"label": _quote(", ".join(labels))}
        if style == "supplies":
            attrs.update(style="dotted", constraint="false")
            used.supplies = True
        elif level_of.get(source, -1) >= level_of.get(target, -1) >= 0:
            # the profile's order does not follow this edge (CAR ignores `dependencies`)
            attrs.update(
                label=_quote(", ".join(labels) + f" (ignored by {result.profile.value})"),
                style="dashed",
                color='"#aaaaaa"',
                fontcolor='"#888888"',
                constraint="false",
            )
            used.ignored = True
        graph.add_edge(pydot.Edge(f"a{source}", f"a{target}", **attrs))
    conflicts = [(a, b, key) for a, b, key in all_conflicts if a in drawn and b in drawn]
    pairs: dict[tuple[int, int], list[str]] = {}  # one edge per pair, its keys together
    for a, b, key in conflicts[:MAX_CONFLICT_EDGES]:
        pairs.setdefault((min(a, b), max(a, b)), []).append(key)
    for (a, b), keys in pairs.items():
        used.conflict = True
        said = ", ".join(keys[:3]) + (f" +{len(keys) - 3}" if len(keys) > 3 else "")
        graph.add_edge(
            pydot.Edge(
                f"a{a}",
                f"a{b}",
                label=_quote(f"conflict: {said}"),
                color=CONFLICT_COLOUR,
                fontcolor=CONFLICT_COLOUR,
                style="dashed",
                dir="none",
                constraint="false",
            )
        )
    left = len(all_conflicts) - min(len(conflicts), MAX_CONFLICT_EDGES)
    if left:
        graph.set("label", _quote(f"{title}; {left:,} conflicts not drawn"))
    graph.add_subgraph(_legend(pydot, used))
    shown.update()
    return graph


def _whole(pydot: Any, issues: list[Issue], used: _Used) -> Any:
    """The findings about the whole proposal (no one action): one note, coloured by
    the worst, listing each (the first few; the tooltip holds them all)."""
    worst = _worst(issues)
    used.colours.add(f"finding:{worst}")
    used.whole = True

    def line(issue: Issue) -> str:
        text = f"{issue.severity.value}[{issue.code}] {issue.message}"
        return text if len(text) <= 70 else text[:67] + "..."

    lines = [line(i) for i in issues[:4]]
    if len(issues) > 4:
        lines.append(f"and {len(issues) - 4} more")
    return pydot.Node(
        "proposal_findings",
        label=_quote("the whole proposal\n" + "\n".join(lines)),
        shape="note",
        fillcolor=_quote(SEVERITY_COLOURS[worst]),
        tooltip=_quote("\n".join(f"{i.severity.value}[{i.code}] {i.message}" for i in issues)),
    )


def _statuses(execution: Any) -> dict[str, str]:
    """Each action's status as a person reads it (``compensated`` after a rollback)."""
    if execution is None:
        return {}
    if isinstance(execution, Mapping):  # `run --format json`: the result and its rollback
        shown = execution.get("statuses")
        if isinstance(shown, Mapping):
            return {str(k): str(v) for k, v in shown.items()}
        execution = ProposalResult.from_dict(dict(execution))
    if isinstance(execution, ProposalResult):
        return {r.action_id: r.status.value for r in execution.results}
    return dict(execution.shown_statuses)


def _trace(
    model: ActionProposal, initial_state: Mapping[str, Any] | None, result: VerificationResult
) -> dict[str, Any]:
    """The simulate trace of each action by id (why it is blocked, who supplied what)."""
    from ..api import simulate

    sim = simulate(model, initial_state=initial_state, profile=result.profile.value)
    return {t.action_id: t for t in sim.trace}


def _order(
    result: VerificationResult, dag: Dag
) -> tuple[list[list[int]], list[int], list[tuple[int, int, str]]]:
    """The profile's levels, the actions in none, and its conflicts, by position
    (the result names actions by id; a repeated id is taken in proposal order)."""
    seen: dict[str, int] = {}

    def position(action_id: str) -> int:
        places = dag.positions[action_id]
        n = seen.get(action_id, 0)
        seen[action_id] = n + 1
        return places[min(n, len(places) - 1)]

    levels = [[position(a) for a in level] for level in result.execution_levels]
    placed = {i for level in levels for i in level}
    unlevelled = [i for i in range(len(dag.actions)) if i not in placed]
    first = {a: places[0] for a, places in dag.positions.items()}
    conflicts = [(first[a], first[b], key) for a, b, key in result.conflicts]
    return levels, unlevelled, conflicts


def _bands(
    levels: list[list[int]], unlevelled: list[int], max_nodes: int, weight: Mapping[int, int]
) -> list[tuple[str, list[int], list[int]]]:
    """The ranks to draw: (title, actions drawn, actions summarised). One rank per
    level while that fits; else bands of consecutive levels, each drawing its actions
    with the worst findings first, up to its share of ``max_nodes``."""
    bands: list[tuple[str, list[int], list[int]]]
    if sum(len(level) for level in levels) <= max_nodes and len(levels) <= MAX_RANKS:
        bands = [(f"level {n}", level, []) for n, level in enumerate(levels)]
    else:
        width = -(-len(levels) // MAX_RANKS)
        groups = []
        for start in range(0, len(levels), width):
            chunk = levels[start : start + width]
            end = start + len(chunk) - 1
            name = f"level {start}" if end == start else f"levels {start}-{end}"
            groups.append((name, [i for level in chunk for i in level]))
        bands = []
        budget = _shares([len(members) for _, members in groups], max_nodes)
        for (name, members), share in zip(groups, budget, strict=True):
            ranked = sorted(members, key=lambda i: (-weight.get(i, 0), i))
            chosen = sorted(ranked[:share])
            kept = set(chosen)
            bands.append((name, chosen, [i for i in members if i not in kept]))
    if unlevelled:
        bands.append(("no level (cycle)", unlevelled[:max_nodes], unlevelled[max_nodes:]))
    return bands


def _shares(sizes: list[int], budget: int) -> list[int]:
    """``budget`` drawn nodes split over groups of ``sizes``: each gets an equal share,
    a group smaller than its share all of itself, and what it leaves goes to the rest;
    every group at least one."""
    shares = [0] * len(sizes)
    left, open_ = budget, len(sizes)
    for index in sorted(range(len(sizes)), key=lambda i: sizes[i]):
        share = max(1, left // max(1, open_))
        shares[index] = min(sizes[index], share)
        left -= shares[index]
        open_ -= 1
    return shares


def _edges(
    model: ActionProposal, dag: Dag, trace: Mapping[str, Any], drawn: set[int]
) -> list[tuple[tuple[int, int], list[str], str]]:
    """The edges between drawn actions, each once, labelled by why it exists and by
    the precondition keys it feeds; and a dotted "supplies" edge for a precondition
    fed by an action that is no predecessor."""
    reasons: dict[tuple[int, int], list[str]] = {}
    for edge in dag.edges(implied=False):  # what reaches what, without the clutter
        if edge.source not in drawn or edge.target not in drawn:
            continue
        label = {"dependency": "depends", "state": edge.label, "output": edge.label}[edge.kind]
        found = reasons.setdefault((edge.source, edge.target), [])
        if label not in found:
            found.append(label)
    supplies: dict[tuple[int, int], list[str]] = {}
    for i in sorted(drawn):
        action = model.actions[i]
        step = trace.get(action.id)
        if step is None:
            continue
        for pre in action.preconditions:
            who = step.supplied.get(pre.key)
            source = dag.positions.get(who, [None])[0] if who is not None else None
            if source is None or source not in drawn:
                continue
            label = f"{pre.key} (precondition)"
            target = reasons.get((source, i))
            if target is not None:
                if pre.key in target:
                    target[target.index(pre.key)] = label
                elif label not in target:
                    target.append(label)
            else:
                found = supplies.setdefault((source, i), [])
                if label not in found:
                    found.append(label)
    out = [(pair, labels, "edge") for pair, labels in sorted(reasons.items())]
    out += [(pair, labels, "supplies") for pair, labels in sorted(supplies.items())]
    return out


class _Used:
    """What the picture shows, so that the legend lists only that."""

    def __init__(self) -> None:
        self.shapes: set[str] = set()
        self.colours: set[str] = set()
        self.blocked = False
        self.policy = False
        self.conflict = False
        self.supplies = False
        self.ignored = False
        self.whole = False


def _node(
    pydot: Any,
    model: ActionProposal,
    i: int,
    issues: list[Issue],
    status: Mapping[str, str],
    trace: Mapping[str, Any],
    used: _Used,
    lands: Mapping[int, float] | None = None,
) -> Any:
    action = model.actions[i]
    same = action.tool is None or action.tool == action.id  # no "deploy / deploy"
    head = action.id if same else f"{action.id}\n{action.tool}"
    attrs: dict[str, Any] = {}
    if action.id in status:
        state = status[action.id]
        colour = STATUS_COLOURS.get(state, "#ffffff")
        head += f"\n[{state}]"
        used.colours.add(f"status:{state}")
    else:
        if lands and i in lands:
            p = lands[i]
            colour, band = next((c, name) for top, c, name in LANDS_COLOURS if p < top)
            head += f"\nlands {p:.0%}"
            used.colours.add(f"lands:{band}")
        else:
            worst = _worst(issues)
            colour = SEVERITY_COLOURS[worst]
            used.colours.add(f"finding:{worst}")
        step = trace.get(action.id)
        if step is not None and step.blocked:
            head += "\n[blocked]"
            attrs.update(style='"filled,dashed"', color=_quote(BLOCKED_COLOUR), penwidth="2")
            used.blocked = True
    rules = sorted({i.code for i in issues if ":" in i.code and i.severity.value == "error"})
    if rules:
        head += (
            "\npolicy: " + ", ".join(rules[:2]) + (f" +{len(rules) - 2}" if len(rules) > 2 else "")
        )
        attrs.update(color=_quote(POLICY_COLOUR), penwidth="2.5")
        used.policy = True
    shape = SHAPES.get(action.type, UNKNOWN_SHAPE)
    used.shapes.add(action.type if action.type in SHAPES else "unknown type")
    params = json.dumps(action.parameters, sort_keys=True, ensure_ascii=False)
    if len(params) > 300:
        params = params[:297] + "..."
    tip = f"{action.type} {action.tool or ''} {params}".strip()
    if issues:
        tip += "\n" + "\n".join(f"{i.severity.value}[{i.code}] {i.message}" for i in issues[:5])
        if len(issues) > 5:
            tip += f"\nand {len(issues) - 5} more"
    return pydot.Node(
        f"a{i}",
        label=_quote(head),
        shape=shape,
        fillcolor=_quote(colour),
        tooltip=_quote(tip),
        **attrs,
    )


def _more(pydot: Any, r: int, hidden: list[int], by_action: Mapping[int, list[Issue]]) -> Any:
    counts: dict[str, int] = {}
    for i in hidden:
        for issue in by_action.get(i, []):
            counts[issue.severity.value] = counts.get(issue.severity.value, 0) + 1
    detail = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
    more = "more action" if len(hidden) == 1 else "more actions"
    label = f"+ {len(hidden):,} {more}" + (f"\n({detail})" if detail else "")
    return pydot.Node(
        f"more{r}", label=_quote(label), shape="note", fillcolor='"#f3f3f3"', fontcolor="#444444"
    )


def _legend(pydot: Any, used: _Used) -> Any:
    """One narrow table of what the picture uses: the shapes, the colours, the marks."""
    rows: list[tuple[str, str]] = []
    for kind in [*SHAPES, "unknown type"]:
        if kind in used.shapes:
            shape = SHAPES.get(kind, UNKNOWN_SHAPE)
            rows.append(("#ffffff", f"{shape}: {kind}"))
    for key, colour in STATUS_COLOURS.items():
        if f"status:{key}" in used.colours:
            rows.append((colour, key))
    for _, colour, band in LANDS_COLOURS:
        if f"lands:{band}" in used.colours:
            rows.append((colour, f"{band} (risk: p effects land)"))
    for key, colour in SEVERITY_COLOURS.items():
        if f"finding:{key}" in used.colours:
            rows.append((colour, "no finding" if key == "clean" else f"worst finding: {key}"))
    if used.blocked:
        rows.append(("#ffffff", "dashed, dark border: blocked (simulate)"))
    if used.policy:
        rows.append(("#ffffff", "red border: policy violation"))
    if used.conflict:
        rows.append(("#ffffff", "red dashed edge: write conflict"))
    if used.supplies:
        rows.append(("#ffffff", "dotted edge: supplies a precondition"))
    if used.ignored:
        rows.append(("#ffffff", "grey dashed edge: an order the profile ignores"))
    if used.whole:
        rows.append(("#ffffff", "note at the top: findings about the whole proposal"))
    cells = "".join(
        f'<TR><TD BGCOLOR="{colour}" WIDTH="14"> </TD><TD ALIGN="LEFT">{escape(text)}</TD></TR>'
        for colour, text in rows
    )
    legend = pydot.Cluster(
        "legend", label=_quote("legend"), style="dashed", color="#999999", fontname="Helvetica"
    )
    table = f'<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="3">{cells}</TABLE>>'
    legend.add_node(pydot.Node("legend_table", label=table, shape="plaintext", style="solid"))
    return legend


def to_dot_text(proposal: Any, **options: Any) -> str:
    """The DOT text of :func:`to_dot` (deterministic)."""
    text: str = to_dot(proposal, **options).to_string()
    return text


#: How long Graphviz may take to lay out one picture, in seconds.
RENDER_TIMEOUT = 60.0
#: The most nodes Graphviz is asked to lay out (``render`` refuses more, before layout).
MAX_LAYOUT_NODES = 2_000
#: The most edges Graphviz is asked to lay out (``render`` refuses more, before layout):
#: its ordering of a rank's nodes grows faster than the edges, and a banded DAG of 250
#: drawn actions took 3.4 s with 500 edges, 10 s with 990, and past 60 s (2 GB) with 2,000.
MAX_LAYOUT_EDGES = 600


def size(graph: Any) -> tuple[int, int]:
    """The nodes and edges of a pydot graph, its subgraphs' included."""
    nodes = edges = 0
    stack = [graph]
    while stack:
        part = stack.pop()
        nodes += sum(1 for n in part.get_nodes() if n.get_name() not in ("node", "edge", "graph"))
        edges += len(part.get_edges())
        stack.extend(part.get_subgraphs())
    return nodes, edges


def render(
    graph: Any,
    fmt: str = "svg",
    *,
    timeout: float = RENDER_TIMEOUT,
    max_nodes: int = MAX_LAYOUT_NODES,
    max_edges: int = MAX_LAYOUT_EDGES,
) -> bytes:
    """Render a pydot graph with Graphviz (``svg``, ``png``, ...), within ``timeout``.

    A graph of more than ``max_nodes`` nodes or ``max_edges`` edges is refused
    before Graphviz starts (:class:`~car_verify.base.errors.TooLarge`, naming the
    count and the bound): a layout that large takes minutes and gigabytes.

    Graphviz's ranking can fail on some large summaries ("trouble in init_rank",
    seen with Debian's 2.43 and ``newrank``): the layout is then tried again without
    ``newrank``, and then without the ranks that put each level on one row (the
    levels still read top to bottom by the edges). A layout that fails every way,
    or runs past ``timeout``, is one clear error (:class:`LayoutFailed`), never
    Graphviz's output or an exception's bytes on stdout."""
    import subprocess

    nodes, edges = size(graph)
    for what, count, bound, value, raise_it in (
        ("nodes", nodes, "max_layout_nodes", max_nodes, ""),
        ("edges", edges, "max_layout_edges", max_edges, ", raise the bound (--max-edges N)"),
    ):
        if count > value:
            raise TooLarge(
                f"too large to lay out: {count:,} {what}, over the bound {bound}={value:,}: "
                f"draw fewer actions (car-verify dot --max-nodes N){raise_it}, or write a "
                ".dot file and render it yourself",
                bound=bound,
                value=value,
                count=count,
            )
    if shutil.which("dot") is None:
        raise GraphvizMissing()
    source = graph.to_string()
    attempts = [source]
    if "newrank=true;" in source:
        attempts.append(source.replace("newrank=true;", "newrank=false;", 1))
    if "rank=same;" in source:  # the levels' rows left to the edges: ranking always succeeds
        attempts.append(source.replace("newrank=true;", "", 1).replace("rank=same;\n", ""))
    problems: list[str] = []
    for text in attempts:
        try:
            done = subprocess.run(
                ["dot", f"-T{fmt}"], input=text.encode(), capture_output=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            raise LayoutFailed(
                f"Graphviz did not lay the graph out within {timeout:g} s: write a .dot file "
                "and render it yourself, or draw fewer actions (--max-nodes)"
            ) from None
        if done.returncode == 0 and done.stdout:
            data: bytes = done.stdout
            return data
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        problems.append(said[0] if said else f"exit {done.returncode}")
    raise LayoutFailed(
        f"Graphviz could not lay the graph out ({problems[0]}): write a .dot file and "
        "render it yourself, or draw fewer actions (--max-nodes)"
    )


def write(graph: Any, path: str | Path, *, max_edges: int = MAX_LAYOUT_EDGES) -> None:
    """Write ``path`` by its extension: ``.dot`` (text), or rendered ``.svg`` / ``.png``
    (at most ``max_edges`` edges laid out: :func:`render`)."""
    target = Path(path)
    fmt = target.suffix.lstrip(".").lower()
    if fmt in ("dot", "gv"):
        data = graph.to_string().encode()
    elif fmt in ("svg", "png", "pdf"):
        data = render(graph, fmt, max_edges=max_edges)
    else:
        raise CarVerifyError(f"cannot write {target.name}: use a .dot, .svg, .png or .pdf name")
    try:
        target.write_bytes(data)
    except OSError as err:
        raise CarVerifyError(f"cannot write {target}: {err.strerror or err}") from None


WITNESS_COLOUR = "#cc0000"


def workflow_to_dot(graph: Any, *, witness: Sequence[str] = (), title: str = "") -> Any:
    """A workflow graph as a ``pydot.Dot``: the entry a double box, terminals double
    circles, undeclared stages (named by dangling edges) dashed, and ``witness`` (a
    path of stage names: a defect's or a policy violation's) drawn in red, its edges
    numbered in order."""
    import pydot

    from ..deciders.workflow import WorkflowGraph, parse_graph

    g = graph if isinstance(graph, WorkflowGraph) else parse_graph(graph)
    declared = g.declared
    terminals = set(g.terminals)
    on_path = set(witness)
    steps = {(a, b): n for n, (a, b) in enumerate(pairwise(witness), 1)}
    dot = pydot.Dot(graph_type="digraph", rankdir="LR", fontname="Helvetica")
    if title:
        dot.set("label", _quote(title))
    names = list(dict.fromkeys([g.entry, *g.stages, *(s for e in g.edges for s in e[:2])]))
    ident = {name: f"s{n}" for n, name in enumerate(names)}
    for name in names:
        attrs: dict[str, Any] = {"label": _quote(name), "fontname": "Helvetica"}
        if name == g.entry:
            attrs["shape"] = "box"
            attrs["peripheries"] = 2
        elif name in terminals:
            attrs["shape"] = "doublecircle"
        else:
            attrs["shape"] = "box"
            attrs["style"] = "rounded"
        if name not in declared:
            attrs["style"] = "dashed"
            attrs["label"] = _quote(f"{name} (undeclared)")
        if name in on_path:
            attrs["color"] = WITNESS_COLOUR
            attrs["penwidth"] = 2
        dot.add_node(pydot.Node(ident[name], **attrs))
    for a, b, condition in g.edges:
        attrs = {"fontname": "Helvetica"}
        label = "" if condition is None else str(condition)
        step = steps.get((a, b))
        if step is not None:
            attrs["color"] = WITNESS_COLOUR
            attrs["penwidth"] = 2
            label = f"{step}" + (f": {label}" if label else "")
        if a not in declared or b not in declared:
            attrs["style"] = "dashed"
        if label:
            attrs["label"] = _quote(label)
        dot.add_edge(pydot.Edge(ident[a], ident[b], **attrs))
    return dot
