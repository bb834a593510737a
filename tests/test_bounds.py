"""The bounds of the analyses that can blow up (docs/security.md, "Bounds"): each
slow input answers within seconds, decided or naming the bound that stopped it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from car_verify.cli import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def trace_rules(*rules: str) -> str:
    return "".join(f"[[trace_rule]]\nrule = {json.dumps(r)}\n" for r in rules)


# --- an installed pass that cannot be built -------------------------------------------


def test_an_installed_pass_that_cannot_be_built_is_a_usage_error_naming_it(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    write(
        site / "half_pass.py",
        "from car_verify.passes import Pass\n\nclass Half(Pass):\n    name = 'half'\n",
    )
    info = site / "half_pass-0.1.dist-info"
    write(info / "METADATA", "Metadata-Version: 2.1\nName: half-pass\nVersion: 0.1\n")
    write(info / "entry_points.txt", "[car_verify.passes]\nhalf = half_pass:Half\n")
    plan = write(tmp_path / "p.json", json.dumps({"actions": []}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-P", "-m", "car_verify", "verify", str(plan), "--no-policies"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert "internal error" not in done.stderr
    assert "entry point 'half' (half_pass:Half)" in done.stderr


# --- tool schemas: patternProperties matched by RE2 -------------------------------------

_NESTED = "^(a+)+$"


def test_a_hostile_pattern_properties_key_answers_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = {"type": "object", "patternProperties": {_NESTED: {"type": "string"}}}
    tools = write(
        tmp_path / "tools.json",
        json.dumps([{"name": "t", "description": "d", "parameters": schema}]),
    )
    params = {"a" * 40 + "!": 1, "a" * 40: 2}  # Python's re: days for the first key
    plan = {"actions": [{"id": "x", "type": "tool_call", "tool": "t", "parameters": params}]}
    proposal = write(tmp_path / "p.json", json.dumps(plan))
    started = time.monotonic()
    code, out, _ = run(
        [
            "verify",
            str(proposal),
            "--tools",
            str(tools),
            "--no-policies",
            "--profile",
            "strict",
            "--format",
            "json",
        ],
        capsys,
    )
    assert time.monotonic() - started < 5
    assert code == 1
    messages = [i["message"] for i in json.loads(out)["issues"]]
    assert len(messages) == 1 and "is not of type" in messages[0]


def test_a_pattern_properties_key_re2_cannot_compile_is_an_input_error(tmp_path: Path) -> None:
    from car_verify.base.errors import InputError
    from car_verify.rules.tools import ToolRegistry

    schema = {"type": "object", "patternProperties": {"(?=a)": {}}}
    registry = ToolRegistry.coerce([{"name": "t", "description": "d", "parameters": schema}])
    with pytest.raises(InputError, match="RE2"):
        registry.check()


_KEYED = [
    {"type": "object", "patternProperties": {"^a": {"type": "string"}, "b$": {"type": "integer"}}},
    {"patternProperties": {"^a": {"type": "string"}}, "additionalProperties": False},
    {"patternProperties": {"a+": {"minLength": 2}}, "additionalProperties": {"type": "integer"}},
    {"patternProperties": {"^a": {"type": "string"}}, "unevaluatedProperties": False},
    {
        "allOf": [{"patternProperties": {"^a": {"type": "string"}, "a": {"minLength": 2}}}],
        "unevaluatedProperties": {"type": "integer"},
    },
    {
        "$schema": "https://json-schema.org/draft/2019-09/schema",
        "patternProperties": {"b": {"type": "string"}},
        "unevaluatedProperties": False,
    },
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "patternProperties": {"^a": {"type": "string"}},
        "additionalProperties": {"type": "integer"},
    },
]


@given(
    schema=st.sampled_from(_KEYED),
    value=st.dictionaries(
        st.text("ab.", max_size=4), st.one_of(st.integers(0, 3), st.text("ab", max_size=3))
    ),
)
@settings(max_examples=60)
def test_re2_pattern_keys_find_what_jsonschema_finds(schema: Any, value: Any) -> None:
    import jsonschema

    from car_verify.rules.tools import ToolRegistry

    registry = ToolRegistry.coerce([{"name": "t", "description": "d", "parameters": schema}])
    mine = sorted(e.json_path for e in registry.check_parameters("t", value))
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    theirs = sorted(
        "$" + "".join(f".{p}" for p in e.absolute_path) for e in cls(schema).iter_errors(value)
    )
    assert mine == theirs


# --- dot: the layout is bounded ---------------------------------------------------------


def banded(actions: int, width: int) -> dict[str, Any]:
    return {
        "id": "p",
        "source": "s",
        "actions": [
            {
                "id": f"a{i}",
                "type": "tool_call",
                "tool": "t",
                "parameters": {},
                "dependencies": [f"a{j}" for j in range(max(0, i - width), i)],
            }
            for i in range(actions)
        ],
    }


def test_dot_refuses_a_layout_past_its_edge_bound_before_graphviz_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    proposal = write(tmp_path / "dag.json", json.dumps(banded(400, 60)))
    out = tmp_path / "dag.svg"
    started = time.monotonic()
    code, _, err = run(["dot", str(proposal), "--no-policies", "-o", str(out)], capsys)
    assert time.monotonic() - started < 20
    assert code == 2 and not out.exists()
    assert "too large to lay out" in err and "max_layout_edges=600" in err
    assert "--max-nodes" in err and "--max-edges" in err
    # the DOT text itself is no layout: it is written whatever its size
    code, _, _ = run(["dot", str(proposal), "--no-policies", "-o", str(tmp_path / "d.dot")], capsys)
    assert code == 0 and (tmp_path / "d.dot").stat().st_size > 100_000


def test_the_edge_bound_is_a_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proposal = write(tmp_path / "dag.json", json.dumps(banded(30, 3)))
    code, _, err = run(
        ["dot", str(proposal), "--no-policies", "--max-edges", "10", "-o", str(tmp_path / "x.svg")],
        capsys,
    )
    assert code == 2 and "max_layout_edges=10" in err


@st.composite
def dags(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(1, 40))
    actions = []
    for i in range(n):
        earlier = [f"a{j}" for j in range(max(0, i - 8), i)]
        deps = draw(st.lists(st.sampled_from(earlier), unique=True)) if earlier else []
        actions.append(
            {
                "id": f"a{i}",
                "type": "tool_call",
                "tool": "t",
                "parameters": {},
                "dependencies": deps,
            }
        )
    return {"id": "p", "source": "s", "actions": actions}


@pytest.mark.skipif(not __import__("shutil").which("dot"), reason="needs Graphviz")
@given(proposal=dags(), max_edges=st.integers(1, 60))
@settings(max_examples=15)
def test_a_drawing_is_laid_out_or_refused_naming_its_bound(
    proposal: dict[str, Any], max_edges: int
) -> None:
    from car_verify.base.errors import TooLarge
    from car_verify.reporters.dot import render, to_dot

    graph = to_dot(proposal)
    edges = graph.to_string().count(" -> ")
    started = time.monotonic()
    try:
        svg = render(graph, "svg", max_edges=max_edges)
    except TooLarge as err:
        assert (err.bound, err.value, err.count) == ("max_layout_edges", max_edges, edges)
        assert edges > max_edges
    else:
        assert edges <= max_edges and svg.lstrip().startswith(b"<")
    assert time.monotonic() - started < 30
