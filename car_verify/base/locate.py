"""Where things are in a source file: the line and column of each action object.

For JSON a regex tokenizer walks the text once (no second full parse in Python);
for YAML the composed node tree carries its marks. Both give a map from a JSON
pointer (``/actions/3``) to a 1-based ``(line, column)``.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from itertools import accumulate, repeat
from operator import add
from typing import TYPE_CHECKING, Any

from .errors import pointer_token

if TYPE_CHECKING:
    from .findings import Issue

__all__ = ["Positions", "at_actions", "duplicate_keys", "json_positions", "yaml_documents"]

Positions = dict[str, tuple[int, int]]

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')


class _Lines:
    def __init__(self, text: str, first_line: int = 1) -> None:
        # Where each line starts (one more past the end), summed in C.
        self.starts = list(accumulate(map(add, map(len, text.split("\n")), repeat(1)), initial=0))
        self.first = first_line

    def at(self, offset: int) -> tuple[int, int]:
        index = bisect_right(self.starts, offset) - 1
        return self.first + index, offset - self.starts[index] + 1


def json_positions(text: str, *, depth: int = 2, first_line: int = 1) -> Positions:
    """Pointer -> (line, column) of every value down to ``depth`` (``/actions/3``).

    Assumes ``text`` is valid JSON (it is parsed with ``json.loads`` as well). The
    tokens are walked in Python only down to ``depth``; a container found there is
    skipped whole by ``json``'s C scanner, so the cost follows the document's outline,
    not its size.
    """
    import json

    decoder: Any = json.JSONDecoder()  # its scan_once (C) is not in the type stubs
    skip = decoder.scan_once
    lines = _Lines(text, first_line)
    positions: Positions = {}
    stack: list[list[Any]] = []  # frames: [kind, pointer, key or index, expecting_key]
    pointer = ""
    at = 0
    while (match := _TOKEN.search(text, at)) is not None:
        token = match.group()
        at = match.end()
        if token in ",:":
            if token == "," and stack:
                frame = stack[-1]
                if frame[0] == "array":
                    frame[2] += 1
                else:
                    frame[3] = True
            continue
        if token in "}]":
            stack.pop()
            continue
        if stack:
            frame = stack[-1]
            if frame[0] == "object" and frame[3]:
                frame[2] = _unescape(token)
                frame[3] = False
                continue
            pointer = f"{frame[1]}/{pointer_token(frame[2])}"
        else:
            pointer = ""
        if len(stack) <= depth:
            positions[pointer] = lines.at(match.start())
        if token in "{[":
            if len(stack) == depth:  # nothing inside is located: skip it in C
                try:
                    at = skip(text, match.start())[1]
                    continue
                except (StopIteration, ValueError):
                    pass  # not valid JSON after all: walk it token by token
            if token == "{":
                stack.append(["object", pointer, None, True])
            else:
                stack.append(["array", pointer, 0, False])
    return positions


def _unescape(token: str) -> str:
    if "\\" not in token:
        return token[1:-1]
    import json

    try:
        return str(json.loads(token))
    except ValueError:
        return token.strip('"')


def yaml_documents(text: str) -> list[tuple[Any, Positions]]:
    """Each YAML document's data and the positions of its values (depth 2)."""
    import yaml

    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out: list[tuple[Any, Positions]] = []
    for node in yaml.compose_all(text, Loader=loader_cls):
        if node is None:
            continue
        expanded = _expanded_size(node)
        if expanded > MAX_YAML_VALUES:
            raise yaml.YAMLError(
                f"its aliases expand to more than {MAX_YAML_VALUES:,} values (an alias "
                "bomb?): car-verify refuses to expand it"
            )
        positions: Positions = {}
        _walk_yaml(node, "", 0, positions)
        data = yaml.load(yaml.serialize(node), Loader=loader_cls)
        out.append((data, positions))
    return out


#: The most values a YAML document may hold once its aliases are expanded.
MAX_YAML_VALUES = 100_000


def _expanded_size(root: Any) -> int:
    """How many values ``root`` holds with every alias expanded, counted over the
    composed graph (each shared node once, so in time linear in the text); past
    :data:`MAX_YAML_VALUES`, or on a recursive alias, more than the limit."""
    import yaml

    size: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in size:
            continue
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        else:
            size[key] = 1
            continue
        if children_done:
            open_nodes.discard(key)
            size[key] = min(1 + sum(size[id(c)] for c in children), MAX_YAML_VALUES + 1)
            continue
        if key in open_nodes:  # an alias of an enclosing node: infinite when expanded
            return MAX_YAML_VALUES + 1
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in size)
        if any(id(c) in open_nodes for c in children):
            return MAX_YAML_VALUES + 1
    return size[id(root)]


def _walk_yaml(node: Any, pointer: str, level: int, positions: Positions) -> None:
    positions[pointer] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if level >= 2:
        return
    import yaml

    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            _walk_yaml(value, f"{pointer}/{pointer_token(key.value)}", level + 1, positions)
    elif isinstance(node, yaml.SequenceNode):
        for index, value in enumerate(node.value):
            _walk_yaml(value, f"{pointer}/{index}", level + 1, positions)


def duplicate_keys(text: str) -> list[tuple[tuple[str | int, ...], str, int, int]]:
    """Every key that repeats in its JSON object: the object's path, the key, and the
    line and column of the repeat, in document order. Walks every token in Python,
    so it runs only once the decoder has seen a repeat. Assumes valid JSON."""
    lines = _Lines(text)
    found: list[tuple[tuple[str | int, ...], str, int, int]] = []
    # One frame per open container: its path, the keys seen (an object) or the
    # next index (an array), and the key whose value comes next.
    stack: list[tuple[tuple[str | int, ...], set[str] | None, list[Any]]] = []
    expect_key = False
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in ("{", "["):
            path: tuple[str | int, ...] = ()
            if stack:
                parent_path, keys, slot = stack[-1]
                path = (*parent_path, slot[0])
            stack.append((path, set() if token == "{" else None, [0 if token == "[" else None]))
            expect_key = token == "{"
        elif token in ("}", "]"):
            stack.pop()
            expect_key = False
        elif token == ",":
            if stack:
                _, keys, slot = stack[-1]
                if keys is None:
                    slot[0] += 1
                expect_key = keys is not None
        elif token == ":":
            expect_key = False
        elif expect_key and token.startswith('"') and stack:
            obj_path, keys, slot = stack[-1]
            key = _unescape(token)
            assert keys is not None
            if key in keys:
                found.append((obj_path, key, *lines.at(match.start())))
            keys.add(key)
            slot[0] = key
    return found


def at_actions(issues: Iterable[Issue], path: str, positions: Positions) -> list[Issue]:
    """``issues`` located in file ``path``, each at its action's object (a finding about
    the whole proposal at the document's start), as ``positions`` give them."""
    from .findings import Location

    start = positions.get("", (1, 1))
    out = []
    for issue in issues:
        pointer = f"/actions/{issue.index}" if issue.index is not None else ""
        line, column = positions.get(pointer, start)
        out.append(issue.located(Location(path, line, column)))
    return out
