"""The IR model: loading, defaults, canonical form, unknown fields, InputError paths."""

from __future__ import annotations

import copy
import datetime
import io
import json
import re
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import car_verify
from car_verify import InputError
from car_verify.ir.model import (
    ActionResult,
    ActionType,
    CostSummary,
    CostTarget,
    ProposalResult,
    StateMutation,
    ToolPollResult,
    ToolSchema,
    ToolStreamEvent,
    chunk_from_dict,
    load_parsed,
)

SPEC_ACTION = {
    "id": "a1",
    "type": "tool_call",
    "tool": "deploy",
    "parameters": {"env": "staging"},
    "preconditions": [{"key": "tests_passed", "operator": "eq", "value": True}],
    "expected_effects": {"deployed": True},
    "state_dependencies": ["build_artifact"],
    "invocation_mode": "one_shot",
    "reversibility": "compensable",
    "compensation": {"type": "tool", "tool": "rollback_deploy", "parameters": {"env": "staging"}},
    "idempotent": True,
    "max_retries": 3,
    "failure_behavior": "retry",
    "timeout_ms": 30000,
    "metadata": {"rationale": "..."},
}


def test_defaults_are_the_spec_tables() -> None:
    p = car_verify.load({"actions": [{"type": "tool_call", "tool": "t"}]})
    a = p.to_dict()["actions"][0]
    assert a["parameters"] == {} and a["preconditions"] == [] and a["expected_effects"] == {}
    assert a["state_dependencies"] == [] and a["read_set"] == [] and a["write_set"] == []
    assert a["assumptions"] == [] and a["dependencies"] == [] and a["metadata"] == {}
    assert a["invocation_mode"] == "one_shot"
    assert a["reversibility"] == "irreversible"
    assert a["idempotent"] is False and a["max_retries"] == 3
    assert a["failure_behavior"] == "abort"
    assert "compensation" not in a and "timeout_ms" not in a
    assert p.source == "unknown" and p.context == {}


def test_generated_ids() -> None:
    p = car_verify.load({"actions": [{"type": "tool_call", "tool": "t"}, {"type": "assertion"}]})
    assert len(p.id) == 12 and all(c in "0123456789abcdef" for c in p.id)
    assert p.actions[0].id != p.actions[1].id and len(p.actions[0].id) == 36
    assert p.timestamp.endswith("Z")


def test_spec_example_round_trips_exactly() -> None:
    doc = {
        "id": "abc123def456",
        "source": "claude",
        "timestamp": "2026-05-02T12:00:00Z",
        "actions": [SPEC_ACTION],
        "context": {"rationale": "deploy"},
    }
    out = car_verify.load(doc).to_dict()
    pre = [{**SPEC_ACTION["preconditions"][0], "description": ""}]  # type: ignore[dict-item]
    assert out["actions"][0] == {
        **SPEC_ACTION,
        "preconditions": pre,
        "read_set": [],
        "write_set": [],
        "assumptions": [],
        "dependencies": [],
    }
    assert {k: out[k] for k in ("id", "source", "timestamp", "context")} == {
        k: doc[k] for k in ("id", "source", "timestamp", "context")
    }


def test_unknown_fields_are_preserved_at_every_level() -> None:
    doc = {
        "x-top": {"a": 1},
        "actions": [
            {
                "type": "tool_call",
                "tool": "t",
                "x-action": [1, 2],
                "preconditions": [{"key": "k", "x-pre": True}],
                "assumptions": [{"key": "k", "x-assume": "y"}],
                "compensation": {"type": "action_ref", "action_id": "u", "x-comp": 0},
            }
        ],
    }
    out = car_verify.load(doc).to_dict()
    assert out["x-top"] == {"a": 1}
    action = out["actions"][0]
    assert action["x-action"] == [1, 2]
    assert action["preconditions"][0]["x-pre"] is True
    assert action["assumptions"][0]["x-assume"] == "y"
    assert action["compensation"]["x-comp"] == 0


def test_absent_actions_is_an_empty_array() -> None:
    assert car_verify.load({"id": "p"}).actions == []


@pytest.mark.parametrize(
    "doc", [{}, {"k": 1}, {"action": []}, {"name": "deploy", "parameters": {}}]
)
def test_an_object_with_none_of_the_proposals_fields_is_not_a_proposal(doc: dict[str, Any]) -> None:
    """docs/semantics.md §1: a state or tools file given by mistake is an input error."""
    with pytest.raises(InputError, match="not a proposal"):
        car_verify.load(doc)


def test_a_precondition_without_value_has_null() -> None:
    pre = car_verify.load({"actions": [{"type": "assertion", "preconditions": [{"key": "k"}]}]})
    assert pre.actions[0].preconditions[0].value is None
    assert pre.actions[0].preconditions[0].operator == "eq"


def test_unknown_type_and_operator_load_fine() -> None:
    p = car_verify.load(
        {"actions": [{"type": "dance", "preconditions": [{"key": "k", "operator": "EQ"}]}]}
    )
    assert p.actions[0].type == "dance" and p.actions[0].preconditions[0].operator == "EQ"


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        ([], "$"),
        ({"actions": {}}, "actions"),
        ({"actions": [1]}, "actions[0]"),
        ({"actions": [{"type": "t"}, {"type": "t"}, 7]}, "actions[2]"),  # a later element
        (
            {
                "actions": [
                    {"type": "t"},
                    {"type": "assertion", "preconditions": [{"key": "k"}, {"key": 2}]},
                ]
            },
            "actions[1].preconditions[1].key",
        ),
        ({"actions": [{}]}, "actions[0]"),  # absent type
        ({"actions": [{"type": 3}]}, "actions[0].type"),
        ({"actions": [{"type": "assertion", "preconditions": "k"}]}, "actions[0].preconditions"),
        (
            {"actions": [{"type": "assertion", "preconditions": [{"operator": "eq"}]}]},
            "actions[0].preconditions[0]",
        ),
        (
            {"actions": [{"type": "assertion", "preconditions": [{"key": 1}]}]},
            "actions[0].preconditions[0].key",
        ),
        (
            {"actions": [{"type": "t", "state_dependencies": ["a", 3]}]},
            "actions[0].state_dependencies[1]",
        ),
        ({"actions": [{"type": "t", "dependencies": "a"}]}, "actions[0].dependencies"),
        (
            {"actions": [{"type": "t", "failure_behavior": "explode"}]},
            "actions[0].failure_behavior",
        ),
        ({"actions": [{"type": "t", "reversibility": "maybe"}]}, "actions[0].reversibility"),
        ({"actions": [{"type": "t", "invocation_mode": "batch"}]}, "actions[0].invocation_mode"),
        (
            {"actions": [{"type": "t", "compensation": {"type": "magic"}}]},
            "actions[0].compensation.type",
        ),
        ({"actions": [{"type": "t", "compensation": {"type": "tool"}}]}, "actions[0].compensation"),
        ({"actions": [{"type": "t", "max_retries": -1}]}, "actions[0].max_retries"),
        ({"actions": [{"type": "t", "max_retries": 1.5}]}, "actions[0].max_retries"),
        ({"actions": [{"type": "t", "max_retries": True}]}, "actions[0].max_retries"),
        ({"actions": [{"type": "t", "idempotent": 1}]}, "actions[0].idempotent"),
        ({"actions": [{"type": "t", "parameters": []}]}, "actions[0].parameters"),
        (
            {"actions": [{"type": "t", "assumptions": [{"key": "k", "read_version": "1"}]}]},
            "actions[0].assumptions[0].read_version",
        ),
        ({"id": 5, "actions": []}, "id"),
        ({"context": "x"}, "context"),
        ({"actions": [{"type": "t", "parameters": {"a": {1, 2}}}]}, "actions[0].parameters.a"),
        (
            {"actions": [{"type": "t", "expected_effects": {"k": float("nan")}}]},
            "actions[0].expected_effects.k",
        ),
    ],
)
def test_input_errors_name_the_json_path(doc: Any, path: str) -> None:
    with pytest.raises(InputError) as err:
        car_verify.load(doc)  # a copy, taken apart as it is read
    assert err.value.location == path
    if path != "$":
        assert str(err.value).startswith(path + ": ")
    with pytest.raises(InputError) as shared:
        load_parsed(copy.deepcopy(doc))  # the caller's own, read as it is
    assert (shared.value.location, str(shared.value)) == (path, str(err.value))


def test_the_error_in_a_later_action_of_a_document_names_its_index() -> None:
    actions = [{"id": f"a{i}", "type": "tool_call", "tool": "t"} for i in range(40)]
    actions[37]["preconditions"] = [{"key": "k"}, {"key": 3}]
    with pytest.raises(InputError) as err:
        car_verify.load(json.dumps({"actions": actions}))
    assert err.value.location == "actions[37].preconditions[1].key"


def test_known_types_and_operators_are_one_shared_string() -> None:
    """Every action holds the code's own string for a known type or operator (the
    document's copies are let go), so a pass asking each action touches no string
    of the document's; any other string is kept as given."""
    text = json.dumps(
        {
            "actions": [
                {"type": "tool_call", "preconditions": [{"key": "k", "operator": "gte"}]}
                for _ in range(40)
            ]
            + [{"type": "custom", "preconditions": [{"key": "k", "operator": "near"}]}]
        }
    )
    for proposal in (car_verify.load(text), load_parsed(json.loads(text))):
        *known, other = proposal.actions
        assert all(a.type is ActionType.TOOL_CALL.value for a in known)
        assert all(a.preconditions[0].operator is known[0].preconditions[0].operator for a in known)
        assert (other.type, other.preconditions[0].operator) == ("custom", "near")
        assert proposal.to_dict() == car_verify.load(proposal.to_dict()).to_dict()


def test_what_the_caller_holds_is_never_taken_apart() -> None:
    """A document is taken apart as it is read only when the loader parsed or
    copied it itself: the caller's dict, and the data given to load_parsed, stay whole."""
    doc: dict[str, Any] = {"actions": [SPEC_ACTION, {"id": "b", "type": "tool_call"}]}
    before = json.dumps(doc)
    assert car_verify.load(doc).to_dict()["actions"][1]["id"] == "b"
    assert json.dumps(doc) == before
    assert load_parsed(doc).actions[0].tool == "deploy"
    assert json.dumps(doc) == before


def test_nothing_is_half_read_and_the_caller_dict_is_not_shared() -> None:
    doc: dict[str, Any] = {"actions": [{"type": "t", "parameters": {"a": [1]}}]}
    p = car_verify.load(doc)
    doc["actions"][0]["parameters"]["a"].append(2)
    assert p.actions[0].parameters == {"a": [1]}


def test_text_bytes_and_path_sources(tmp_path: Path) -> None:
    text = json.dumps({"id": "p1", "actions": [{"id": "a", "type": "tool_call", "tool": "t"}]})
    file = tmp_path / "p.json"
    file.write_text(text)
    for source in (text, text.encode(), file, str(file)):
        assert car_verify.load(source).id == "p1"


def test_an_open_file_is_read_like_json_load_and_named_in_errors(tmp_path: Path) -> None:
    """``load(open(path))`` as ``json.load`` takes it, text or binary; its errors
    name the file, as a path's do; an in-memory file has no name to give."""
    text = json.dumps({"id": "p1", "actions": [{"id": "a", "type": "tool_call", "tool": "t"}]})
    file = tmp_path / "p.json"
    file.write_text(text)
    with file.open() as f:
        assert car_verify.load(f).id == "p1"
    with file.open("rb") as f:
        assert car_verify.verify(f, tools=io.StringIO('[{"name": "t"}]'), profile="strict").valid
    file.write_text('{"actions": [{"type": 3}]}')
    with file.open() as f, pytest.raises(InputError) as err:
        car_verify.load(f)
    assert str(err.value) == f"{file}: actions[0].type: expected a string, got a number"
    file.write_text('{\n  "actions": [\n    {"type": "t",}\n  ]\n}')
    with file.open() as f, pytest.raises(InputError) as err:
        car_verify.load(f)
    assert err.value.source == str(file) and err.value.line == 3
    with pytest.raises(InputError) as err:
        car_verify.load(io.StringIO('{"actions": 3}'))
    assert str(err.value) == "actions: expected an array, got a number"
    file.write_bytes(b"\xff{}")
    with file.open() as f, pytest.raises(InputError, match=f"^{re.escape(str(file))}: not valid"):
        car_verify.load(f)
    with file.open("a") as f, pytest.raises(InputError, match="cannot read file"):
        car_verify.load(f)  # open for writing only


@pytest.mark.parametrize(
    ("value", "name"), [((1, 2), "tuple"), (OrderedDict(a=1), "OrderedDict"), ({1, 2}, "set")]
)
def test_python_values_that_are_not_json_are_named_by_their_type(value: Any, name: str) -> None:
    """A tuple is not "an array" nor an OrderedDict "an object": JSON allows those."""
    with pytest.raises(InputError) as err:
        car_verify.verify({"actions": []}, initial_state={"k": {"v": value}}, profile="strict")
    assert str(err.value) == (
        f"initial_state.k.v: expected a JSON value, got a Python {name} (not JSON)"
    )


def test_json_syntax_errors_give_line_and_column(tmp_path: Path) -> None:
    file = tmp_path / "bad.json"
    file.write_text('{\n  "actions": [\n    {"type": "t",}\n  ]\n}')
    with pytest.raises(InputError) as err:
        car_verify.load(file)
    assert err.value.line == 3 and err.value.source == str(file)
    assert str(file) in str(err.value) and "line 3" in str(err.value)
    with pytest.raises(InputError, match="NaN"):
        car_verify.load('{"actions": [], "x": NaN}')
    with pytest.raises(InputError, match="the number -1e400 is out of range"):
        car_verify.load('{"actions": [], "x": [1.5, -1e400]}')
    assert car_verify.load('{"actions": [], "x": [1.5, 1e308]}').extra == {"x": [1.5, 1e308]}
    with pytest.raises(InputError, match="cannot read file"):
        car_verify.load(tmp_path / "missing.json")


def test_path_errors_name_the_file(tmp_path: Path) -> None:
    file = tmp_path / "p.json"
    file.write_text('{"actions": [{"type": "t", "preconditions": {}}]}')
    with pytest.raises(InputError) as err:
        car_verify.load(file)
    assert str(err.value) == f"{file}: actions[0].preconditions: expected an array, got an object"
    assert err.value.pointer == "/actions/0/preconditions"


@pytest.mark.parametrize(
    ("reversibilities", "contract"),
    [
        ([], "reversible"),
        (["reversible"], "reversible"),
        (["reversible", "compensable"], "compensable"),
        (["compensable", None], "irreversible"),  # None: the default, irreversible
    ],
)
def test_rollback_contract_is_the_worst_declared(
    reversibilities: list[str | None], contract: str
) -> None:
    actions = [
        {"type": "t"} if r is None else {"type": "t", "reversibility": r} for r in reversibilities
    ]
    assert car_verify.load({"actions": actions}).rollback_contract() == contract


def test_missing_required_compensation() -> None:
    p = car_verify.load(
        {
            "actions": [
                {"type": "t", "reversibility": "compensable"},
                {
                    "type": "t",
                    "reversibility": "compensable",
                    "compensation": {"type": "tool", "tool": "u"},
                },
                {"type": "t"},
            ]
        }
    )
    assert [a.missing_required_compensation() for a in p.actions] == [True, False, False]


def test_read_and_write_sets() -> None:
    p = car_verify.load(
        {
            "actions": [
                {
                    "type": "state_write",
                    "parameters": {"key": "k", "value": 1},
                    "expected_effects": {"e": 1},
                },
                {"type": "state_write", "parameters": {"key": "k"}, "write_set": ["w"]},
                {
                    "type": "state_read",
                    "parameters": {"key": "a", "keys": ["b", 3, "c"]},
                    "state_dependencies": ["d"],
                    "assumptions": [{"key": "s"}],
                },
                {"type": "tool_call", "tool": "t", "read_set": ["r"], "state_dependencies": ["d"]},
            ]
        }
    )
    a0, a1, a2, a3 = p.actions
    assert a0.writes() == ["e", "k"] and a0.effects() == {"e": 1, "k": 1}
    assert a1.writes() == ["w"] and a1.effects() == {"k": None}
    assert a2.reads() == ["d", "s", "a", "b", "c"] and a2.depended_keys() == ["d", "a", "b", "c"]
    assert a3.reads() == ["r"] and a3.depended_keys() == ["d"]


def test_other_wire_types_round_trip() -> None:
    tool = {
        "name": "deploy",
        "description": "",
        "parameters": {"type": "object"},
        "returns": {"type": "object"},
        "idempotent": True,
        "cache_ttl_secs": 60,
        "rate_limit": {"max_calls": 5, "interval_secs": 60.0},
    }
    assert ToolSchema.from_dict(tool).to_dict() == tool
    assert ToolSchema.from_dict({"name": "x"}).to_dict() == {
        "name": "x",
        "description": "",
        "parameters": {},
        "idempotent": False,
    }
    result = {
        "proposal_id": "abc",
        "results": [
            {
                "action_id": "a1",
                "status": "succeeded",
                "output": {"deployed": True},
                "error": None,
                "state_changes": {
                    "deployed": {"op": "set", "value": True},
                    "old": {"op": "delete"},
                },
                "duration_ms": 1230.0,
                "timestamp": "2026-05-02T12:00:01Z",
            }
        ],
        "cost": {
            "tool_calls": 1,
            "actions_executed": 1,
            "actions_rejected": 0,
            "actions_skipped": 0,
            "total_duration_ms": 1230.0,
            "retries": 0,
        },
    }
    parsed = ProposalResult.from_dict(result)
    assert parsed.to_dict() == result
    assert parsed.results[0].mutations() == {
        "deployed": StateMutation.set(True),
        "old": StateMutation.delete(),
    }
    assert CostSummary.from_dict({"tool_calls": 2}).actions_rejected == 0  # older CARs omit it
    assert CostTarget().to_dict() == {
        "target_tool_calls": 5,
        "target_duration_ms": 5000.0,
        "target_actions": 10,
        "cost_weight": 0.2,
    }
    assert CostTarget().score(1.0, 0.0) == pytest.approx(0.8)
    with pytest.raises(InputError):
        ActionResult.from_dict({"action_id": "a", "status": "exploded"})
    with pytest.raises(InputError, match="op"):
        StateMutation.from_dict({"op": "merge"})


def test_streaming_types() -> None:
    for chunk in (
        {"kind": "text", "text": "hi"},
        {"kind": "data", "data": [1]},
        {"kind": "progress", "fraction": 0.5, "message": "half"},
        {"kind": "done", "result": {"ok": True}},
        {"kind": "done"},
        {"kind": "error", "message": "boom"},
    ):
        assert chunk_from_dict(chunk).to_dict() == chunk
    assert (
        chunk_from_dict({"kind": "done"}).terminal
        and not chunk_from_dict({"kind": "text", "text": ""}).terminal
    )
    event = {"handle": {"id": "h1"}, "chunk": {"kind": "text", "text": "x"}}
    assert ToolStreamEvent.from_dict(event).to_dict() == event
    poll = {
        "handle": {"id": "h1"},
        "tool": "t",
        "action_id": "a",
        "status": "succeeded",
        "chunks": [{"kind": "done", "result": 1}],
        "result": 1,
    }
    assert ToolPollResult.from_dict(poll).to_dict() == poll
    with pytest.raises(InputError) as err:
        chunk_from_dict({"kind": "video"})
    assert err.value.location == "kind"


def test_deep_nesting_is_an_input_error_not_a_crash() -> None:
    with pytest.raises(InputError, match="too deeply"):
        car_verify.load("[" * 100_000 + "]" * 100_000)
    nested: dict[str, Any] = {}
    cursor = nested
    for _ in range(5_000):
        cursor["a"] = {}
        cursor = cursor["a"]
    with pytest.raises(InputError, match="too deeply"):
        car_verify.load({"actions": [{"type": "t", "parameters": nested}]})


@pytest.mark.parametrize("name", ["true.json", "null.json", "4-plan.json", "-x.json", "notes.json"])
def test_a_str_that_is_not_json_text_is_a_path(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only ``{``, ``[`` or ``"`` start JSON text; a relative file name that begins
    like a JSON scalar (``true.json``, ``4-plan.json``) is read as a file."""
    monkeypatch.chdir(tmp_path)
    Path(name).write_text('{"actions": [{"id": "a", "type": "t"}]}')
    assert [a.id for a in car_verify.load(name).actions] == ["a"]
    with pytest.raises(car_verify.InputError, match="cannot read file"):
        car_verify.load(name + ".missing")
    assert car_verify.load('  {"actions": []}').actions == []
    for scalar in ("42", "null", " true", "-1.5e3"):  # JSON text, and not a document
        with pytest.raises(car_verify.InputError, match="expected an object"):
            car_verify.load(scalar)


@pytest.mark.parametrize("as_bytes", [False, True])
def test_a_lone_surrogate_escape_is_an_input_error_naming_its_place(as_bytes: bool) -> None:
    """json.loads reads "\\ud800" as a lone surrogate, which no UTF-8 encodes: every
    command that printed it failed ("internal error"), and serde refuses it."""
    from car_verify.ir.model import LONE_SURROGATE

    cases = {
        r'{"actions": [{"id": "a\ud800", "type": "tool_call", "tool": "t"}]}': "actions[0].id",
        r'{"actions": [{"id": "a", "type": "tool_call", "tool": "t",'
        r' "expected_effects": {"k\udfffx": 1}}]}': r"actions[0].expected_effects.k\udfffx",
        r'{"actions": [], "metadata": {"notes": ["ok", "\uDC00"]}}': "metadata.notes[1]",
    }
    for text, where in cases.items():
        with pytest.raises(InputError) as caught:
            car_verify.load(text.encode() if as_bytes else text)
        assert caught.value.problem == LONE_SURROGATE
        assert caught.value.location == where
        str(caught.value).encode("utf-8")  # the message itself can be printed
    # A pair is one character (an emoji), and plain \u escapes are text.
    pair = r'{"actions": [{"id": "a\ud83d\ude00\u00e9", "type": "tool_call", "tool": "t"}]}'
    assert car_verify.load(pair).actions[0].id == "a\U0001f600\u00e9"


def test_loading_keeps_unknown_fields_and_names_a_bad_element_by_index() -> None:
    """Many actions of one shape: the same actions, unknown fields kept, and an error
    at the path of the element that is wrong."""
    actions = [
        {"id": f"a{i}", "type": "tool_call", "tool": "t", "parameters": {"i": i}, "x-test": i}
        for i in range(40)
    ]
    proposal = car_verify.load({"actions": actions})
    assert proposal.actions[-1].extra == {"x-test": 39}
    bad = {**actions[0], "tool": 3}
    with pytest.raises(InputError) as caught:
        car_verify.load({"actions": [*actions, bad]})
    assert str(caught.value) == "actions[40].tool: expected a string, got a number"
    with pytest.raises(InputError) as caught:
        car_verify.load({"actions": [*actions, list(actions[0])]})
    assert str(caught.value) == "actions[40]: expected an object, got an array"


@given(
    st.datetimes(min_value=datetime.datetime(1000, 1, 1), max_value=datetime.datetime(9999, 12, 31))
)
def test_the_default_timestamp_is_written_as_strftime_writes_it(moment: Any) -> None:
    from car_verify.ir.model import _stamp

    utc = moment.replace(tzinfo=datetime.UTC)
    assert _stamp(utc) == utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_KEY_TEXT = st.sampled_from(["a", "b", 'q"', "s\\", 'x\\":', ":", "a b", "é"])
_LEAF = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), _KEY_TEXT, st.sampled_from(['":', '\\":', '" :'])
)


@st.composite
def _json_texts(draw: st.DrawFn) -> str:
    """JSON text written by hand: keys that may repeat in an object, strings that hold
    quotes, colons and backslashes, and white space anywhere a writer may put it."""

    def space() -> str:
        return draw(st.sampled_from(["", "", " ", "\n", "\t ", "\r\n  "]))

    def value(depth: int) -> str:
        kind = draw(st.integers(0, 2 if depth < 3 else 0))
        if kind == 1:
            items = [value(depth + 1) for _ in range(draw(st.integers(0, 3)))]
            return "[" + ",".join(space() + item + space() for item in items) + "]"
        if kind == 2:
            keys = draw(st.lists(_KEY_TEXT, max_size=4))
            members = [
                space() + json.dumps(k) + space() + ":" + space() + value(depth + 1) + space()
                for k in keys
            ]
            return "{" + ",".join(members) + "}"
        return json.dumps(draw(_LEAF))

    return space() + value(0) + space()


@given(_json_texts())
@example('{"s\\\\":1,"s\\\\":2}')  # a key ending in a backslash, repeated
@example('{"a":null,"a" :null}')  # room before a colon
@example('{"k":"x\\":","k":1}')  # a string holding an escaped quote and a colon
def test_repeated_keys_are_found_as_the_decoders_hook_notes_them(text: str) -> None:
    """The speed trick of decoding (no hook, unless the text may write more keys than
    its objects hold) against the plain version: the hook on every object."""
    from car_verify.base.locate import duplicate_keys
    from car_verify.ir.model import _DECODERS, _decode, _decode_noting

    data, repeats, depth = _decode(_DECODERS, text)
    assert data == json.loads(text)
    noted = _decode_noting(_DECODERS[1], text)
    assert bool(repeats) == noted
    assert [(r.path, r.key, r.line, r.column) for r in repeats] == (
        duplicate_keys(text) if noted else []
    )
    assert depth == car_verify.base.values.nesting_depth(data)
