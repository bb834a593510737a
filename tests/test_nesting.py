"""Deeply nested values (and lone surrogates): every entry point analyses them or
raises InputError.

``json.loads`` refuses a document only when it is deeper than the recursion limit
as it stands when it runs. A value just under that limit loads, and an analysis
that later recurses through it, from deeper in the stack (a CLI command, a
Jupyter cell), used to fail with ``RecursionError``: the CLI printed "internal
error". Each depth here is tried from the top of the stack and from 150 frames
down.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import car_verify
from car_verify.base.errors import TOO_DEEP, InputError, too_deep
from car_verify.base.values import MAX_DEPTH, deepest
from car_verify.cli import main
from car_verify.executor import execute_sync

pytestmark = pytest.mark.usefixtures("strict_cli")


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def proposal(where: str, depth: int) -> str:
    """JSON text (``json.dumps`` itself would recurse) of two actions with a value
    ``depth`` arrays deep in ``where``."""
    deep = "[" * depth + '"x"' + "]" * depth
    field = {
        "parameters": f'"parameters": {{"p": {deep}}}',
        "effects": f'"expected_effects": {{"k": {deep}}}',
        "precondition": f'"preconditions": [{{"key": "k", "operator": "eq", "value": {deep}}}]',
    }[where]
    actions = [f'{{"id": "{i}", "type": "tool_call", "tool": "t", {field}}}' for i in "ab"]
    return '{"actions": [' + ", ".join(actions) + "]}"


def from_below(frames: int, call: Callable[[], object]) -> object:
    return from_below(frames - 1, call) if frames else call()


ENTRY_POINTS: dict[str, Callable[[str], object]] = {
    "verify": lambda text: car_verify.verify(text, profile="strict").to_json(),
    "simulate": lambda text: car_verify.simulate(text, profile="strict").to_dict(),
    "optimize": lambda text: car_verify.optimize(text, profile="strict"),
    "equivalent": lambda text: car_verify.equivalent(text, text, profile="strict"),
    "transaction_check": lambda text: car_verify.transaction_check(text, profile="strict"),
    "runs_unblocked": lambda text: car_verify.runs_unblocked(text, "b"),
    "execute_sync": lambda text: execute_sync(text, {"t": lambda **_: None}),
}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("where", ["parameters", "effects", "precondition"])
@pytest.mark.parametrize("frames", [0, 150])
def test_an_entry_point_analyses_a_deep_value_or_raises_input_error(
    entry: str, where: str, frames: int
) -> None:
    limit = sys.getrecursionlimit()
    for depth in (40, limit * 2 // 5, limit * 4 // 5, limit - 40):
        text = proposal(where, depth)
        try:
            from_below(frames, lambda text=text: ENTRY_POINTS[entry](text))  # type: ignore[misc]
        except InputError as err:
            assert "nested" in str(err)
            assert depth > 100, "a shallow value must be analysed"


def test_an_initial_state_too_deep_to_copy_is_an_input_error() -> None:
    plan = {"actions": [{"id": "a", "type": "tool_call", "tool": "t"}]}
    state = {"k": nested(sys.getrecursionlimit() - 20)}
    with pytest.raises(InputError) as caught:
        from_below(100, lambda: car_verify.verify(plan, initial_state=state, profile="strict"))
    assert caught.value.problem == TOO_DEEP


def test_deepest_finds_the_path_to_the_deepest_value_without_recursing() -> None:
    doc = {"a": [1, {"b": nested(5000)}], "c": {"d": []}}
    path, depth = deepest(doc)
    assert path[:4] == ["a", 1, "b", 0] and depth == 5003
    assert deepest(3) == ([], 0)
    assert str(too_deep(path, depth, source="p.json")).startswith(
        "p.json: a[1].b: a value here is nested 5003 levels deep"
    )


@pytest.mark.parametrize("command", ["verify", "simulate", "optimize", "dot", "wp", "lint"])
def test_the_cli_names_the_file_and_the_value_too_deep_to_analyse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    path = tmp_path / "deep.json"
    # deep enough that no analysis may recurse over it, shallow enough that the JSON
    # decoder reads it from here (the frames below this test differ between runners)
    depth = sys.getrecursionlimit() - 60 - len(traceback.extract_stack())
    assert depth > 2 * MAX_DEPTH
    path.write_text(proposal("effects", depth))
    code = main([command, str(path)])
    out, err = capsys.readouterr()
    assert "internal error" not in err + out
    if command == "lint":  # one finding for the file; the other files go on
        assert code == 1
        assert "error[invalid-file] actions[0].expected_effects.k: a value here is nested" in out
    else:
        assert code == 2 and out == ""
        assert err.startswith(
            f"car-verify: error: {path}: actions[0].expected_effects.k: a value here is nested"
        )


@pytest.mark.parametrize("command", ["verify", "simulate", "dot", "txcheck", "lint"])
def test_the_cli_refuses_a_lone_surrogate_instead_of_failing_to_print_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """Beside too-deep values, the other input json.loads accepts and nothing can
    print: a string holding half of a UTF-16 surrogate pair."""
    path = tmp_path / "plan.json"
    path.write_text(r'{"actions": [{"id": "a\ud800", "type": "tool_call", "tool": "t"}]}')
    code = main([command, str(path)])
    out, err = capsys.readouterr()
    assert "internal error" not in err + out
    problem = "actions[0].id: not valid JSON: a string holds half of a UTF-16 surrogate pair"
    if command == "lint":
        assert code == 1 and f"plan.json:1:14: error[invalid-file] {problem}" in out
    else:
        assert code == 2 and out == "" and err.startswith(f"car-verify: error: {path}: {problem}")
