"""Workflow graphs (issue 27, item 4): the runtime's soundness and precedence checks
with their witnesses, and car-verify's trace rules over every path."""

from __future__ import annotations

import json
import re
from collections import Counter, deque
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import car_verify.runtime as drop_in
from car_verify.base.errors import InputError
from car_verify.cli import main
from car_verify.deciders.workflow import (
    check_workflow_policies,
    check_workflow_trace_rules,
    parse_graph,
    verify_workflow_graph,
)
from car_verify.reporters.dot import workflow_to_dot
from car_verify.rules.trace import TraceGate, parse_trace_rule
from tests.car_oracle import runtime

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "workflow"
NAMES = ["a", "b", "c", "d", "e"]
SETTINGS = settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def graphs(draw: Any) -> dict[str, Any]:
    stages = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=5, unique=True))
    if draw(st.integers(0, 3)) == 0:  # a stage listed twice
        stages.insert(draw(st.integers(0, len(stages))), draw(st.sampled_from(stages)))
    entry = draw(st.sampled_from(stages) | st.sampled_from(NAMES))
    edges = draw(
        st.lists(
            st.fixed_dictionaries({"from": st.sampled_from(NAMES), "to": st.sampled_from(NAMES)}),
            max_size=7,
        )
    )
    terminals = draw(st.lists(st.sampled_from(NAMES), max_size=3))
    return {"entry": entry, "terminals": terminals, "stages": stages, "edges": edges}


policies = st.lists(
    st.fixed_dictionaries(
        {
            "kind": st.just("precedes"),
            "earlier": st.sampled_from(NAMES),
            "later": st.sampled_from(NAMES),
        },
        optional={"name": st.sampled_from(["gate", "", None])},
    ),
    max_size=3,
)


def test_defects_by_hand() -> None:
    g = {
        "entry": "a",
        "terminals": ["z"],
        "stages": ["a", "b", "c", "d", "z"],
        "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "c"}, {"from": "c", "to": "b"},
                  {"from": "a", "to": "z"}, {"from": "a", "to": "x"}],
    }  # fmt: skip
    found = [(d.kind, d.subject, d.witness) for d in verify_workflow_graph(g).defects]
    assert found == [
        ("dangling_edge", "a->x", ()),
        ("unreachable_stage", "d", ()),
        ("no_exit_reachable", "b", ("a", "b")),  # the b <-> c loop has no way out
        ("no_exit_reachable", "c", ("a", "b", "c")),
    ]
    missing = verify_workflow_graph({"entry": "q", "stages": ["a"], "edges": []})
    assert [d.kind for d in missing.defects] == ["missing_entry"]
    with pytest.raises(InputError, match=r"graph\.edges\[0\]\.to: expected a stage name"):
        parse_graph({"entry": "a", "stages": ["a"], "edges": [{"from": "a"}]})


@SETTINGS
@given(graphs(), policies)
# a stage listed twice: its defects once per listing
@example({"entry": "a", "terminals": ["c"], "stages": ["a", "b", "b", "c"], "edges": []}, [])
# an empty policy name is the name
@example(
    {
        "entry": "a",
        "terminals": ["c"],
        "stages": ["a", "b", "c"],
        "edges": [{"from": "a", "to": "c"}],
    },
    [{"kind": "precedes", "earlier": "b", "later": "c", "name": ""}],
)
def test_graph_checks_agree_with_the_runtime(
    graph: dict[str, Any], rules: list[dict[str, Any]]
) -> None:
    rt = runtime()
    theirs = json.loads(rt.verify_workflow_graph(json.dumps(graph)))
    assert verify_workflow_graph(graph).to_dict() == theirs
    assert json.loads(drop_in.verify_workflow_graph(json.dumps(graph))) == theirs
    theirs = json.loads(rt.check_workflow_policies(json.dumps(graph), json.dumps(rules)))
    assert check_workflow_policies(graph, rules).to_dict() == theirs
    assert (
        json.loads(drop_in.check_workflow_policies(json.dumps(graph), json.dumps(rules))) == theirs
    )


def walks(graph: dict[str, Any], limit: int) -> list[tuple[str, ...]]:
    """Every path from the entry of at most ``limit`` stages (loops unrolled)."""
    g = parse_graph(graph)
    succ = g.successors()
    out = []
    queue = deque([(g.entry,)])
    while queue:
        path = queue.popleft()
        out.append(path)
        if len(path) < limit:
            for nxt in dict.fromkeys(succ.get(path[-1], ())):  # an edge listed twice: once
                queue.append((*path, nxt))
    return out


@SETTINGS
@given(graphs(), st.sampled_from(NAMES), st.sampled_from(NAMES))
def test_a_precedence_witness_is_a_shortest_path_that_skips_the_earlier_stage(
    graph: dict[str, Any], earlier: str, later: str
) -> None:
    report = check_workflow_policies(
        graph, [{"kind": "precedes", "earlier": earlier, "later": later}]
    )
    bad = [p for p in walks(graph, 6) if p[-1] == later and earlier not in p and earlier != later]
    assert report.compliant == (not bad)
    if bad:
        [v] = report.violations
        assert v.witness in bad and len(v.witness) == min(len(p) for p in bad)


RULES = [
    "never c after b",
    "at most 1 b",
    "d only after c",
    "never e",
]


@SETTINGS
@given(graphs(), st.sampled_from(RULES))
def test_trace_rules_over_every_path_with_loops(graph: dict[str, Any], text: str) -> None:
    """Brute force: a rule is broken iff some path from the entry (up to a length
    past which a monitor this small repeats) breaks it; the counterexample is a
    shortest such path."""
    rule = parse_trace_rule(text)
    report = check_workflow_trace_rules(graph, [rule])

    def breaks(path: tuple[str, ...]) -> bool:
        gate = TraceGate([rule])
        for stage in path:
            if gate.dispatch(stage, {}):
                return True
            gate.record(stage, {}, "succeeded")
        return False

    # A shortest breaking path visits each (stage, monitor state) pair at most once:
    # five stages, a monitor of at most two states, and the entry step.
    bad = [p for p in walks(graph, 2 * len(NAMES) + 1) if breaks(p)]
    assert report.holds == (not bad)
    if bad:
        [c] = report.counterexamples
        assert breaks(c.path) and len(c.path) == min(len(p) for p in bad)


def test_the_example_and_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph = json.loads((EXAMPLE / "graph.json").read_text(encoding="utf-8"))
    assert verify_workflow_graph(graph).sound
    [v] = check_workflow_policies(
        graph, json.loads((EXAMPLE / "policies.json").read_text())
    ).violations
    assert v.witness == ("triage", "hotfix", "deploy_fix")
    out = tmp_path / "wf.dot"
    args = [
        "workflow",
        str(EXAMPLE / "graph.json"),
        "--workflow-policies",
        str(EXAMPLE / "policies.json"),
    ]
    assert main([*args, "--rule", "at most 1 investigate", "-o", str(out)]) == 1
    text = capsys.readouterr().out
    assert "triage -> hotfix -> deploy_fix" in text
    assert "triage -> investigate -> escalated -> investigate" in text
    dot = out.read_text()
    assert dot.count("#cc0000") >= 5  # the witness's three stages and two edges
    assert main(["workflow", str(EXAMPLE / "graph.json"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["sound"] is True
    drawn = workflow_to_dot({"entry": "a", "stages": ["a"], "edges": [{"from": "a", "to": "x"}]})
    assert "x (undeclared)" in drawn.to_string() and "dashed" in drawn.to_string()


# --- the runtime's workflow format -------------------------------------------------------

ISSUE = re.compile(
    r'WorkflowIssue \{ severity: "(\w+)", stage_id: (?:None|Some\("([^"]*)"\)), message: "(.*)" \}'
)


KEYS = st.sampled_from(["k", "q", "r"])
#: Values as the runtime's messages print them (Rust's debug text of each kind).
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-2, 2)
    | st.sampled_from([1.0, 2.5, -0.0, 1e20, 2.5e-7, 1e-5, 12345678901234567890])
    | st.sampled_from(["", "a", 'q"\\', "\n"]),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from(["a", "b"]), inner),
    max_leaves=3,
)
PRECONDITIONS = st.fixed_dictionaries(
    {
        "key": KEYS,
        "operator": st.sampled_from(["eq", "neq", "gt", "lte", "contains", "exists", "foo"]),
    },
    optional={"value": VALUES},  # contains with object and array values too
)


@st.composite
def small_proposals(draw: Any) -> dict[str, Any]:
    """Proposals whose verify errors the runtime gives deterministically (no repeated
    call: its loop rule is not)."""
    actions = []
    for n in range(draw(st.integers(0, 3))):
        action: dict[str, Any] = {"id": f"x{n}", "type": "tool_call"}
        if draw(st.integers(0, 3)) == 0:  # a value the preconditions below can see
            key, value = draw(KEYS), draw(VALUES)
            action = {
                "id": f"x{n}",
                "type": "state_write",
                "parameters": {"key": key, "value": value},
            }
        elif draw(st.booleans()):
            action["tool"] = f"t{n}"
        if draw(st.booleans()):
            action["preconditions"] = draw(st.lists(PRECONDITIONS, max_size=2))
        if draw(st.booleans()):
            action["state_dependencies"] = draw(st.lists(KEYS, max_size=2))
        if draw(st.booleans()):
            action["expected_effects"] = {k: 1 for k in draw(st.lists(KEYS, max_size=2))}
        actions.append(action)
    doc: dict[str, Any] = {"actions": actions}
    if draw(st.booleans()):
        doc["id"] = draw(st.sampled_from(["s1", "s2"]))
    return doc


BLANK = st.sampled_from(["", " ", "i", "k"])
AGENT = {"name": "n", "system_prompt": "s", "tools": ["t"], "max_turns": 2, "metadata": {}}


def steps(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    leaves = st.one_of(
        st.fixed_dictionaries(
            {"type": st.just("approval"), "prompt": st.just("ok?"), "output_key": BLANK}
        ),
        st.fixed_dictionaries(
            {"type": st.just("dedup"), "items_from": BLANK, "into": BLANK, "store": BLANK}
        ),
        st.fixed_dictionaries(
            {"type": st.just("deliver"), "sinks": st.lists(small_proposals(), max_size=2)}
        ),
        st.fixed_dictionaries({"type": st.just("proposal"), "proposal": small_proposals()}),
        st.fixed_dictionaries(
            {
                "type": st.just("pattern"),
                "pattern": st.sampled_from(["pipeline", "vote"]),
                "task": st.just("t"),
                "agents": st.lists(st.just(AGENT), max_size=2),
            }
        ),
    )
    if depth == 0:
        return leaves
    inner = steps(depth - 1)
    return st.one_of(
        leaves,
        st.fixed_dictionaries(
            {"type": st.just("loop_until"), "body": inner, "max_iterations": st.integers(0, 2)}
        ),
        st.fixed_dictionaries({"type": st.just("for_each"), "items_from": BLANK, "body": inner}),
        st.fixed_dictionaries({"type": st.just("sub_workflow"), "workflow": workflows(depth - 1)}),
    )


def workflows(depth: int = 2) -> st.SearchStrategy[dict[str, Any]]:
    """The runtime's workflow format, every step type, bodies and sub-workflows nested."""

    @st.composite
    def build(draw: Any) -> dict[str, Any]:
        ids = draw(st.lists(st.sampled_from(NAMES), min_size=0, max_size=4))
        stages = [{"id": i, "name": i.upper(), "step": draw(steps(depth))} for i in ids]
        edge = st.fixed_dictionaries({"from": st.sampled_from(NAMES), "to": st.sampled_from(NAMES)})
        edges = draw(st.lists(edge, max_size=5))
        start = draw(st.sampled_from(NAMES))
        return {"id": "w", "name": "w", "start": start, "stages": stages, "edges": edges}

    return build()


#: A sink without an id gets a generated one (12 hex digits), in both.
GENERATED_ID = re.compile(r"\(([0-9a-f]{12})\)")


def _generated(message: str) -> str:
    return GENERATED_ID.sub("(generated)", message)


RUST_ESCAPE = re.compile(r"\\(u\{([0-9a-f]+)\}|.)")


def _rust_unescaped(text: str) -> str:
    """The string a Rust debug text (without its quotes) stands for."""

    def one(match: re.Match[str]) -> str:
        if match[2]:
            return chr(int(match[2], 16))
        return {"n": "\n", "r": "\r", "t": "\t", "0": "\0"}.get(match[1], match[1])

    return RUST_ESCAPE.sub(one, text)


def _parsed(texts: list[str]) -> list[tuple[str, str | None, str]]:
    out = []
    for text in texts:
        match = ISSUE.fullmatch(text)
        assert match, text
        out.append((match[1], match[2], _generated(_rust_unescaped(match[3]))))
    return out


@SETTINGS
@given(workflows())
# a nested proposal's failed preconditions: values, and an unknown operator on an absent key
@example(
    {
        "id": "w",
        "name": "w",
        "start": "a",
        "edges": [],
        "stages": [
            {
                "id": "a",
                "name": "A",
                "step": {
                    "type": "proposal",
                    "proposal": {
                        "actions": [
                            {"id": "x", "type": "state_write",
                             "parameters": {"key": "k", "value": 1}},
                            {"id": "y", "type": "tool_call", "tool": "t", "preconditions": [
                                {"key": "k", "operator": "eq", "value": "a"},
                                {"key": "k", "operator": "neq", "value": 1},
                                {"key": "q", "operator": "foo"},
                                {"key": "k", "operator": "contains", "value": {"a": True}},
                            ]},
                        ]
                    },
                },
            }
        ],
    }
)  # fmt: skip
def test_verify_workflow_agrees_with_the_runtime_in_plain_words(workflow: dict[str, Any]) -> None:
    """Every step type, loops, fan-outs, sinks and sub-workflows nested: the same
    verdict, issues and semantic findings (as multisets: the runtime lists the
    unreachable stages from a hash set, and a proposal's errors in its own order)."""
    from car_verify.deciders.workflow import verify_workflow
    from car_verify.semantics.car import runtime_words

    rt = runtime()
    theirs = json.loads(rt.verify_workflow(json.dumps(workflow)))
    ours = verify_workflow(workflow)
    assert (ours.valid, ours.has_cycles) == (theirs["valid"], theirs["has_cycles"])
    assert set(ours.reachable_stages) == set(theirs["reachable_stages"])
    assert set(ours.unreachable_stages) == set(theirs["unreachable_stages"])
    parsed = _parsed(theirs["issues"])
    # the same issues; a nested proposal's values in plain JSON here, as Rust's debug
    # text in the runtime's words
    assert Counter((i.severity, i.stage_id) for i in ours.issues) == Counter(
        (severity, stage) for severity, stage, _ in parsed
    )
    with runtime_words():
        worded = verify_workflow(workflow)
    mine = Counter((i.severity, i.stage_id, _generated(i.message)) for i in worded.issues)
    assert mine == Counter(parsed)
    for issue in ours.issues:
        assert not re.search(r"\b(Number|String|Bool)\(|\bNull\b", issue.message), issue
    assert Counter(ours.semantic) == Counter(theirs["semantic"])
    for issue in ours.to_dict()["issues"]:  # plain words, not Rust's debug text
        assert "WorkflowIssue" not in issue and issue.split(":")[0] in ("error", "warning")
    # the drop-in gives the runtime's debug text
    dropped = json.loads(drop_in.verify_workflow(json.dumps(workflow)))
    assert Counter(map(_generated, dropped["issues"])) == Counter(map(_generated, theirs["issues"]))


BAD_DEDUP = {"type": "dedup", "items_from": "", "into": "", "store": ""}
EMPTY = {"type": "proposal", "proposal": {"actions": []}}
BAD_STEPS = [
    {"type": "approval", "prompt": "p"},
    {"type": "pattern", "pattern": "parade", "task": "t", "agents": []},
    {"type": "pattern", "pattern": "vote", "task": "t", "agents": [{"name": "n"}]},
    {"type": "loop_until", "body": {"type": "approval", "prompt": "p", "output_key": "k"}},
    {"type": "loop_until", "max_iterations": 1, "body": {"type": "zz"}},
    {"type": "for_each", "items_from": 3, "body": BAD_DEDUP},
    {"type": "deliver", "sinks": ["x"]},
    {"type": "proposal", "proposal": {"actions": [{"id": "x", "type": "shell"}]}},
    {"type": "sub_workflow", "workflow": {"id": "s", "name": "s", "stages": [], "edges": []}},
    {"type": "loop_until", "max_iterations": 1, "body": EMPTY, "until": ["k"]},
]  # fmt: skip


@pytest.mark.parametrize("step", BAD_STEPS)
def test_a_step_the_runtime_cannot_read_is_refused_naming_where(step: dict[str, Any]) -> None:
    from car_verify.deciders.workflow import verify_workflow

    stage = {"id": "a", "name": "A", "step": step}
    doc = {"id": "w", "name": "w", "start": "a", "stages": [stage], "edges": []}
    with pytest.raises(RuntimeError, match="invalid workflow JSON"):
        runtime().verify_workflow(json.dumps(doc))
    with pytest.raises(RuntimeError, match="invalid workflow JSON"):
        drop_in.verify_workflow(json.dumps(doc))
    with pytest.raises(InputError) as caught:
        verify_workflow(doc)
    assert caught.value.path[:4] == ["workflow", "stages", 0, "step"]


def test_the_command_reads_the_runtimes_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    step = {"type": "approval", "prompt": "ok?", "output_key": "o"}
    path = tmp_path / "workflow.json"
    path.write_text(json.dumps({"id": "w", "name": "w", "start": "a",
        "stages": [{"id": "a", "name": "A", "step": step}, {"id": "b", "name": "B", "step": step}],
        "edges": [{"from": "a", "to": "x"}]}))  # fmt: skip
    assert main(["workflow", str(path)]) == 1
    captured = capsys.readouterr()
    assert "error: edge to 'x' references unknown stage" in captured.out
    assert "warning: stage 'b' is unreachable from start\n" in captured.out
    assert "invalid: 2 stages reachable (profile car)" in captured.out
    assert main(["workflow", str(path), "--rule", "never b"]) == 2


def test_workflows_are_found_in_dot_car(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main(["workflow"]) == 2
    assert "no workflow graph" in capsys.readouterr().err
    (tmp_path / ".car" / "workflows").mkdir(parents=True)
    shutil.copy(EXAMPLE / "graph.json", tmp_path / ".car" / "workflows" / "triage.json")
    shutil.copy(EXAMPLE / "policies.json", tmp_path / ".car" / "workflow-policies.json")
    assert main(["workflow"]) == 1
    captured = capsys.readouterr()
    assert "triage -> hotfix -> deploy_fix" in captured.out
    assert "workflow-policies.json" in captured.err


def test_a_rule_that_counts_far_walks_its_long_path_in_linear_time(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``at most 100000 s3`` around a three-stage loop: the counterexample is the
    300,001-stage path, found without copying a path per step (this ran past 120 s),
    and the text says its middle as a count."""
    graph = {
        "entry": "s1",
        "terminals": [],
        "stages": ["s1", "s2", "s3"],
        "edges": [
            {"from": "s1", "to": "s2"},
            {"from": "s2", "to": "s3"},
            {"from": "s3", "to": "s1"},
        ],
    }
    [c] = check_workflow_trace_rules(graph, ["at most 100000 s3"]).counterexamples
    assert len(c.path) == 300_003 and c.path[-1] == "s3" and c.path.count("s3") == 100_001
    file = tmp_path / "g.json"
    file.write_text(json.dumps(graph))
    assert main(["workflow", str(file), "--rule", "at most 100000 s3"]) == 1
    assert "(299,979 more stages)" in capsys.readouterr().out


def test_the_proposals_in_a_workflow_are_verified_under_the_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from car_verify.deciders.workflow import verify_workflow

    # compensable without a compensation: an error under car, a warning under strict
    action = {"id": "x", "type": "tool_call", "tool": "t", "reversibility": "compensable"}
    step = {"type": "proposal", "proposal": {"actions": [action]}}
    doc = {"id": "w", "name": "w", "start": "a", "edges": [],
        "stages": [{"id": "a", "name": "A", "step": step}]}  # fmt: skip
    car = verify_workflow(doc)
    assert not car.valid and "[proposal] action declares reversibility" in str(car.issues[0])
    assert verify_workflow(doc, profile="strict").valid
    path = tmp_path / "workflow.json"
    path.write_text(json.dumps(doc))
    assert main(["workflow", str(path), "--profile", "strict"]) == 0
    assert capsys.readouterr().out.endswith("valid: 1 stages reachable (profile strict)\n")
