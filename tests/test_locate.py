"""``json_positions``: the line and column lint reports for each value of a file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from strategies import json_values

from car_verify.base.errors import pointer_token
from car_verify.base.locate import json_positions

documents = st.dictionaries(st.text(max_size=5), json_values, max_size=4) | st.lists(
    json_values, max_size=4
)


def down_to(value: Any, depth: int, pointer: str = "") -> Iterator[tuple[str, Any]]:
    """Every (pointer, value) of ``value`` down to ``depth``."""
    yield pointer, value
    if depth == 0 or not isinstance(value, (dict, list)):
        return
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        yield from down_to(item, depth - 1, f"{pointer}/{pointer_token(key)}")


def value_at(text: str, line: int, column: int) -> Any:
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    return json.JSONDecoder().raw_decode(text, starts[line - 1] + column - 1)[0]


@given(
    document=st.fixed_dictionaries({"actions": st.lists(json_values, max_size=4)}) | documents,
    indent=st.sampled_from([None, 0, 2]),
    ascii_only=st.booleans(),
)
def test_every_value_down_to_depth_two_is_found_where_it_starts(
    document: Any, indent: int | None, ascii_only: bool
) -> None:
    text = json.dumps(document, indent=indent, ensure_ascii=ascii_only)
    positions = json_positions(text)
    expected = dict(down_to(document, 2))
    assert positions.keys() == expected.keys()
    for pointer, (line, column) in positions.items():
        assert value_at(text, line, column) == expected[pointer], pointer


def test_keys_with_escapes_and_pointer_characters() -> None:
    document = {"a/b": {"~x": 1}, 'q"uote': [{"deep": {"deeper": 2}}], "é\n": 3}
    text = json.dumps(document, indent=2)
    positions = json_positions(text)
    assert set(positions) == {"", "/a~1b", "/a~1b/~0x", '/q"uote', '/q"uote/0', "/é\n"}
    assert value_at(text, *positions['/q"uote/0']) == {"deep": {"deeper": 2}}


def test_lines_count_from_first_line() -> None:
    line = json.dumps({"actions": [{"id": "a"}, {"id": "b"}]})
    positions = json_positions(line, first_line=7)
    assert positions["/actions/1"] == (7, line.index('{"id": "b"}') + 1)
