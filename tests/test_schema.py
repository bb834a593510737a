"""The JSON Schemas (issue 40): generated from the model, every field described,
every bundled example valid, and on generated documents the schema accepts what
``load`` accepts and rejects what it rejects."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from strategies import json_values, proposals

from car_verify import load, load_tools
from car_verify.base.errors import InputError
from car_verify.base.values import KNOWN_OPERATORS
from car_verify.cli import main
from car_verify.ir._codec import field_specs, wire_names
from car_verify.ir.model import (
    Action,
    ActionProposal,
    ActionRefCompensation,
    ActionType,
    Precondition,
    StateAssumption,
    ToolCompensation,
    ToolRateLimit,
    ToolSchema,
)
from car_verify.ir.schema import KINDS, json_schema, near_miss, near_miss_pattern

ROOT = Path(__file__).resolve().parents[1]
VALIDATORS = {kind: jsonschema.Draft202012Validator(json_schema(kind)) for kind in KINDS}
RUNS = settings(
    deadline=None,
    max_examples=300,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def test_the_schemas_are_valid_json_schemas_and_the_committed_ones_are_current() -> None:
    for kind in KINDS:
        jsonschema.Draft202012Validator.check_schema(json_schema(kind))
        committed = json.loads((ROOT / "docs" / "schemas" / f"{kind}.schema.json").read_text())
        assert committed == json_schema(kind), f"run scripts/gen_docs.py ({kind})"


@pytest.mark.parametrize(
    "cls",
    [ActionProposal, Action, Precondition, StateAssumption, ToolCompensation,
     ActionRefCompensation, ToolSchema, ToolRateLimit],
)  # fmt: skip
def test_every_field_has_a_description(cls: type) -> None:
    missing = [spec.name for spec in field_specs(cls) if not spec.doc]
    assert not missing, f"{cls.__name__}: give {missing} a doc= in car_verify/ir/model.py"


def _bundled(pattern: str) -> list[Path]:
    return sorted(ROOT.glob(pattern))


@pytest.mark.parametrize(
    ("kind", "path"),
    [("proposal", p) for p in _bundled("examples/*/proposal*.json")]
    + [("proposal", p) for p in _bundled("examples/rank/[!t]*.json")]
    + [("tools", p) for p in _bundled("examples/*/tools.json")]
    + [("state", p) for p in _bundled("examples/*/state.json")],
    ids=lambda x: str(x),
)
def test_every_bundled_example_validates(kind: str, path: Path) -> None:
    errors = list(VALIDATORS[kind].iter_errors(json.loads(path.read_text())))
    assert not errors, [e.message for e in errors]


def _no_integral_floats(value: Any) -> bool:
    """JSON Schema calls 3.0 an integer; load (as the runtime) does not."""
    if isinstance(value, float):
        return not (math.isfinite(value) and value.is_integer())
    if isinstance(value, dict):
        return all(_no_integral_floats(v) for v in value.values())
    if isinstance(value, list):
        return all(_no_integral_floats(v) for v in value)
    return True


def _loads(doc: Any) -> bool:
    """Whether the schema should accept ``doc``: ``load`` reads it, and it holds no
    string outside the ones the code knows (an action type, an operator) and no
    near miss of a known field (docs/schema.md)."""
    try:
        proposal = load(doc)
    except InputError:
        return False
    if any(a.type not in {t.value for t in ActionType} for a in proposal.actions):
        return False
    pres = [p for a in proposal.actions for p in a.preconditions]
    if any(p.operator not in KNOWN_OPERATORS for p in pres):
        return False
    objects = [proposal, *proposal.actions, *pres]
    objects += [x for a in proposal.actions for x in (*a.assumptions, a.compensation) if x]
    return not any(near_miss(key, wire_names(type(obj))) for obj in objects for key in obj.extra)


FIELDS = ["id", "type", "tool", "parameters", "preconditions", "expected_effects",
          "state_dependencies", "dependencies", "read_set", "write_set", "assumptions",
          "invocation_mode", "reversibility", "compensation", "idempotent", "max_retries",
          "failure_behavior", "timeout_ms", "metadata", "x-ext", "owner",
          # near misses: the schema refuses them, load keeps them
          "precondition", "tools", "Tool", "stateDependencies", "idempotnet", "ID"]  # fmt: skip
PRECONDITION = st.fixed_dictionaries(
    {"key": st.text(max_size=2)}, optional={"operator": json_values}
)
BROKEN = st.one_of(
    json_values,
    st.sampled_from(["abort", "skip", "retry", "compensable", "streaming", "tool_call"]),
    st.fixed_dictionaries({"type": st.sampled_from(["tool", "action_ref", "x"])}),
    st.fixed_dictionaries({"type": st.just("tool"), "tool": json_values}),
    st.fixed_dictionaries({"key": json_values}),
    st.lists(PRECONDITION, max_size=2),
)  # fmt: skip


@RUNS
@given(proposals(), st.data())
@example({"actions": []}, None)
def test_the_schema_accepts_what_load_accepts(doc: dict[str, Any], data: Any) -> None:
    if data is not None:
        for action in doc["actions"]:
            if data.draw(st.booleans()):
                action[data.draw(st.sampled_from(FIELDS))] = data.draw(BROKEN)
            if data.draw(st.integers(0, 3)) == 0:
                action.pop(data.draw(st.sampled_from(sorted(action))), None)
        if data.draw(st.integers(0, 5)) == 0:
            name = data.draw(
                st.sampled_from(["id", "source", "timestamp", "actions", "context", "$schema"])
            )
            doc[name] = data.draw(json_values)
        if data.draw(st.integers(0, 9)) == 0:
            doc = {
                k: v for k, v in doc.items() if k not in ("id", "source", "timestamp", "actions")
            }
    if not _no_integral_floats(doc):
        return
    loaded = _loads(doc)
    OUTCOMES.add(loaded)
    assert VALIDATORS["proposal"].is_valid(doc) == loaded, json.dumps(doc)[:400]


OUTCOMES: set[bool] = set()


def test_the_generated_documents_were_both_valid_and_not() -> None:
    """The property above saw documents load refused and ones it read (it ran first)."""
    if OUTCOMES:
        assert {True, False} == OUTCOMES


LIMIT = {"max_calls": 2, "interval_secs": 1.5}
TOOL = st.fixed_dictionaries(
    {"name": st.sampled_from(["a", "b", 3, None])},
    optional={
        "description": st.sampled_from(["d", 1]),
        "parameters": st.sampled_from([{}, {"type": "object"}, True, [], None]),
        "returns": st.sampled_from([{}, None, "x"]),
        "idempotent": st.sampled_from([True, "yes"]),
        "cache_ttl_secs": st.sampled_from([0, 30, -1, None, "1"]),
        "rate_limit": st.sampled_from([LIMIT, {"max_calls": -1, "interval_secs": 1}, {}, None]),
    },
)  # fmt: skip


@RUNS
@given(st.lists(TOOL, max_size=3))
def test_the_tools_schema_accepts_what_load_tools_accepts(tools: list[dict[str, Any]]) -> None:
    names = [t["name"] for t in tools]
    if len(set(map(str, names))) < len(names):
        return  # a name listed twice: JSON Schema cannot say it (load refuses it)
    try:
        load_tools(tools)
        loaded = True
    except InputError:
        loaded = False
    assert VALIDATORS["tools"].is_valid(tools) == loaded, tools


def test_a_file_that_names_its_schema_is_checked_without_a_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from car_verify import verify

    doc = {
        "$schema": "./proposal.schema.json",
        "actions": [{"id": "a", "type": "tool_call", "tool": "t"}],
    }
    assert not [i for i in verify(doc).issues if i.code == "unknown-field"]
    assert VALIDATORS["proposal"].is_valid(doc)
    assert main(["schema", "proposal"]) == 0
    assert json.loads(capsys.readouterr().out) == json_schema("proposal")
    assert main(["schema", "tools"]) == 0
    assert json.loads(capsys.readouterr().out)["type"] == "array"


# --- near misses: the schema refuses a misspelt field and keeps an extension ----------


def test_the_schema_refuses_an_unknown_type_and_a_misspelt_field_and_keeps_extensions() -> None:
    """A misspelt field (``precondition``) and a misspelt type (``tool_cal``) are what
    an editor should mark; an extension field (``x_owner``, ``ticket``) is allowed."""
    check = VALIDATORS["proposal"]

    def errors(action: dict[str, Any], **top: Any) -> list[str]:
        base = {"id": "a", "type": "tool_call", "tool": "t"}
        return [e.message for e in check.iter_errors({"actions": [{**base, **action}], **top})]

    assert errors({"type": "tool_cal"}) and errors({"precondition": []})
    assert errors({"tools": "t"}) and errors({"stateDependencies": []})
    assert errors({"failure-behavior": "skip"}) and errors({"Tool": "t"})
    assert errors({}, actoins=[]) and not check.is_valid({"action": []})
    assert errors({"preconditions": [{"key": "k", "operater": "eq", "value": 1}]})
    assert not errors({"x_owner": "me", "ticket": 42, "metadata": {"a": 1}})
    assert not errors({}, labels=["x"])


KNOWN = sorted(wire_names(Action))
MUTATIONS = st.sampled_from(["add", "drop", "change", "swap", "case", "separator"])


@st.composite
def keys_near_known_names(draw: st.DrawFn) -> str:
    """A known name with up to two random edits, or any short text."""
    if draw(st.integers(0, 4)) == 0:
        return draw(st.text(max_size=6))
    key = draw(st.sampled_from([*KNOWN, "id", "key"]))
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, max(len(key) - 1, 0)))
        kind = draw(MUTATIONS)
        char = draw(st.sampled_from("aeiostx_-\n.$Z"))
        if kind == "add":
            key = key[:at] + char + key[at:]
        elif kind == "drop":
            key = key[:at] + key[at + 1 :]
        elif kind == "change":
            key = key[:at] + char + key[at + 1 :]
        elif kind == "swap" and at + 1 < len(key):
            key = key[:at] + key[at + 1] + key[at] + key[at + 2 :]
        elif kind == "case":
            key = key.swapcase()
        elif kind == "separator":
            key = key.replace("_", draw(st.sampled_from(["", "-", "__"])))
    return key


@settings(deadline=None, max_examples=200)
@given(keys_near_known_names())
@example("precondition")
@example("stateDependencies")
@example("ID")
@example("ip")
@example("$shema")
def test_the_near_miss_pattern_is_the_plain_rule(key: str) -> None:
    """The schema's ``patternProperties`` (a regular expression, read by JSON Schema)
    and :func:`near_miss` (plain Python) find the same near misses."""
    assert (PATTERN.search(key) is not None) == (near_miss(key, [*KNOWN, "$schema"]) is not None)


PATTERN = re.compile(near_miss_pattern([*KNOWN, "$schema"]))
