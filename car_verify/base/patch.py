"""RFC 6902 JSON Patch: applied to a parsed document, and to the document's text.

A repair (:class:`car_verify.base.findings.Fix`) is a JSON Patch against the
document as the user gave it. :func:`apply_patch` applies one to parsed JSON (a
new document; the given one is not modified). :func:`apply_to_text` applies it to
the JSON *text*, editing only the spans the operations touch, so the rest of the
file (unknown fields, key order, indentation, the other values' spelling) stays
as written; a new value is laid out in the file's own style. :func:`text_change`
says where a patched text differs from its original (what a SARIF ``replacement``
names: a region of the original and the text put there).

Pointers are RFC 6901 (``/actions/2/parameters/env``, ``~1`` for ``/``, ``~0``
for ``~``). An object that names a key twice is read as JSON reads it (the last
value wins), in the text as in the parsed document.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .values import json_equal

__all__ = [
    "PatchError",
    "TextChange",
    "apply_patch",
    "apply_to_text",
    "parse_pointer",
    "text_change",
]

#: The operations of RFC 6902, and the members each needs beside ``op`` and ``path``.
_NEEDS = {
    "add": ("value",),
    "remove": (),
    "replace": ("value",),
    "move": ("from",),
    "copy": ("from",),
    "test": ("value",),
}


class PatchError(ValueError):
    """A patch that does not apply: a malformed operation, a path that names
    nothing, a failed ``test``. The message names the operation and the path."""


def parse_pointer(pointer: str) -> list[str]:
    """The reference tokens of an RFC 6901 pointer (``""``: the whole document)."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"a JSON pointer starts with '/': {pointer!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _index(token: str, size: int, *, append: bool) -> int:
    """An array index token: digits without a leading zero, or ``-`` (the end) where
    ``append`` allows it; within the array (or one past it where ``append``)."""
    if token == "-" and append:
        return size
    if not re.fullmatch(r"0|[1-9][0-9]*", token):
        raise PatchError(f"{token!r} is not an array index")
    at = int(token)
    if at > size or (at == size and not append):
        raise PatchError(f"index {at} is out of range (the array has {size} items)")
    return at


def _parent(doc: Any, tokens: list[str], pointer: str) -> Any:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict):
            if token not in node:
                raise PatchError(f"{pointer}: no member {token!r}")
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(token, len(node), append=False)]
        else:
            raise PatchError(f"{pointer}: {token!r} is inside a value that is not a container")
    return node


def _get(doc: Any, pointer: str) -> Any:
    tokens = parse_pointer(pointer)
    if not tokens:
        return doc
    parent = _parent(doc, tokens, pointer)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"{pointer}: no member {last!r}")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(last, len(parent), append=False)]
    raise PatchError(f"{pointer}: the parent is not a container")


def _checked(op: Any) -> tuple[str, str]:
    if not isinstance(op, Mapping):
        raise PatchError(f"a patch operation is an object, not {op!r}")
    name, path = op.get("op"), op.get("path")
    if name not in _NEEDS:
        raise PatchError(f"unknown patch operation {name!r}")
    if not isinstance(path, str):
        raise PatchError(f"{name}: `path` must be a string")
    for member in _NEEDS[name]:
        if member not in op:
            raise PatchError(f"{name} {path}: no `{member}`")
    if "from" in _NEEDS[name] and not isinstance(op["from"], str):
        raise PatchError(f"{name} {path}: `from` must be a string")
    return name, path


def _add(doc: Any, pointer: str, value: Any) -> Any:
    tokens = parse_pointer(pointer)
    if not tokens:
        return value
    parent = _parent(doc, tokens, pointer)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(last, len(parent), append=True), value)
    else:
        raise PatchError(f"{pointer}: the parent is not a container")
    return doc


def _remove(doc: Any, pointer: str) -> Any:
    tokens = parse_pointer(pointer)
    if not tokens:
        raise PatchError("remove: the whole document cannot be removed")
    parent = _parent(doc, tokens, pointer)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"remove {pointer}: no member {last!r}")
        del parent[last]
    elif isinstance(parent, list):
        del parent[_index(last, len(parent), append=False)]
    else:
        raise PatchError(f"remove {pointer}: the parent is not a container")
    return doc


def apply_op(doc: Any, op: Mapping[str, Any]) -> Any:
    """``doc`` with one operation applied, in place where it can be (the result is
    the document: an operation on the root replaces it)."""
    name, path = _checked(op)
    if name == "add":
        return _add(doc, path, copy.deepcopy(op["value"]))
    if name == "remove":
        return _remove(doc, path)
    if name == "replace":
        _get(doc, path)  # it must exist
        if not path:
            return copy.deepcopy(op["value"])
        tokens = parse_pointer(path)
        parent = _parent(doc, tokens, path)
        if isinstance(parent, list):
            parent[_index(tokens[-1], len(parent), append=False)] = copy.deepcopy(op["value"])
        else:
            parent[tokens[-1]] = copy.deepcopy(op["value"])
        return doc
    if name == "test":
        if not json_equal(_get(doc, path), op["value"]):
            raise PatchError(f"test {path}: the value differs")
        return doc
    source = op["from"]
    value = _get(doc, source)
    if name == "copy":
        return _add(doc, path, copy.deepcopy(value))
    if path != source and (path + "/").startswith(source + "/"):
        raise PatchError(f"move {source} -> {path}: a value cannot move into itself")
    if path == source:
        return doc
    return _add(_remove(doc, source), path, value)


def apply_patch(doc: Any, ops: Sequence[Mapping[str, Any]]) -> Any:
    """``doc`` (parsed JSON) with ``ops`` applied in order, as a new document (``doc``
    is not modified). Raises :class:`PatchError` when an operation does not apply;
    nothing is half-applied."""
    out = copy.deepcopy(doc)
    for op in ops:
        out = apply_op(out, op)
    return out


# --- the same operations on the text ---------------------------------------------------

_WS = re.compile(r"[ \t\n\r]*")
_scanner: Any = getattr(json.JSONDecoder(), "scan_once")  # C; not in the type stubs  # noqa: B009
_scanstring: Any = json.decoder.scanstring  # type: ignore[attr-defined]


@dataclass(slots=True)
class _Member:
    """One member of an object (``key`` set, ``key_start``/``key_end`` its string) or
    item of an array, and its value's span."""

    key: str | None
    key_start: int
    key_end: int
    start: int
    end: int


@dataclass(slots=True)
class _Container:
    open: int  # the offset of `{` or `[`
    close: int  # the offset of `}` or `]`
    is_object: bool
    members: list[_Member]

    def last_named(self, key: str) -> int | None:
        """The position in ``members`` of the last member named ``key``."""
        for n in range(len(self.members) - 1, -1, -1):
            if self.members[n].key == key:
                return n
        return None


def _skip_ws(text: str, at: int) -> int:
    match = _WS.match(text, at)
    assert match is not None
    return match.end()


def _value_end(text: str, at: int) -> int:
    try:
        return int(_scanner(text, at)[1])
    except StopIteration:
        raise PatchError(f"the text is not JSON at offset {at}") from None


def _container(text: str, at: int) -> _Container:
    """The container whose ``{`` or ``[`` is at ``at``: its members' spans."""
    opener = text[at]
    is_object = opener == "{"
    members: list[_Member] = []
    pos = _skip_ws(text, at + 1)
    closer = "}" if is_object else "]"
    if text.startswith(closer, pos):
        return _Container(at, pos, is_object, members)
    while True:
        if is_object:
            if not text.startswith('"', pos):
                raise PatchError(f"the text is not JSON at offset {pos}")
            key, key_end = _scanstring(text, pos + 1)
            colon = _skip_ws(text, key_end)
            if not text.startswith(":", colon):
                raise PatchError(f"the text is not JSON at offset {colon}")
            start = _skip_ws(text, colon + 1)
            end = _value_end(text, start)
            members.append(_Member(key, pos, key_end, start, end))
        else:
            end = _value_end(text, pos)
            members.append(_Member(None, pos, pos, pos, end))
        pos = _skip_ws(text, end)
        if text.startswith(",", pos):
            pos = _skip_ws(text, pos + 1)
            continue
        if text.startswith(closer, pos):
            return _Container(at, pos, is_object, members)
        raise PatchError(f"the text is not JSON at offset {pos}")


def _walk(text: str, tokens: list[str]) -> tuple[_Container, str]:
    """The container that holds the last token's member (``tokens`` not empty), and
    that token."""
    at = _skip_ws(text, 0)
    for n, token in enumerate(tokens):
        if text[at : at + 1] not in ("{", "["):
            raise PatchError(f"{'/'.join(tokens[:n]) or 'the document'} is not a container")
        holder = _container(text, at)
        if n == len(tokens) - 1:
            return holder, token
        if holder.is_object:
            found = holder.last_named(token)
            if found is None:
                raise PatchError(f"no member {token!r}")
            at = holder.members[found].start
        else:
            at = holder.members[_index(token, len(holder.members), append=False)].start
    raise PatchError("the whole document is no member")


@dataclass(frozen=True, slots=True)
class _Style:
    """How the file lays JSON out: its indent unit (None: on one line) and, on one
    line, whether it puts a space after ``:`` and ``,``."""

    indent: str | None
    spaced: bool

    @classmethod
    def of(cls, text: str) -> _Style:
        for line in text.splitlines()[1:]:
            stripped = line.lstrip(" \t")
            if stripped and len(stripped) < len(line):
                return cls(line[: len(line) - len(stripped)], '": ' in text or '":' not in text)
        return cls(None, '":' not in text or '": ' in text)

    def dump(self, value: Any, margin: str) -> str:
        """``value`` as JSON text for a place whose line starts with ``margin``."""
        if self.indent is None:
            seps = (", ", ": ") if self.spaced else (",", ":")
            return json.dumps(value, ensure_ascii=False, separators=seps)
        unit: int | str = len(self.indent) if set(self.indent) == {" "} else self.indent
        text = json.dumps(value, ensure_ascii=False, indent=unit)
        return text.replace("\n", "\n" + margin)


def _margin(text: str, at: int) -> str:
    """The white space that starts the line of offset ``at``."""
    line = text.rfind("\n", 0, at) + 1
    match = re.match(r"[ \t]*", text[line:at])
    return match.group() if match else ""


def _inner_margin(text: str, holder: _Container, style: _Style) -> str:
    """The margin of a member of ``holder``: its members' own, or one unit more
    than the container's line."""
    if holder.members:
        first = holder.members[0].key_start
        if "\n" in text[holder.open : first]:
            return _margin(text, first)
        return ""
    return _margin(text, holder.open) + (style.indent or "")


def _separator(text: str, holder: _Container, style: _Style) -> str:
    """What goes between two members of ``holder``: the comma and white space the
    file puts there."""
    members = holder.members
    if len(members) >= 2:
        return text[members[-2].end : members[-1].key_start]
    if members:
        lead = text[holder.open + 1 : members[0].key_start]
        if "\n" in lead:
            return "," + lead
        return ", " if style.spaced else ","
    if style.indent is None:
        return ", " if style.spaced else ","
    return ",\n" + _inner_margin(text, holder, style)


def _entry(holder: _Container, key: str | None, body: str, style: _Style) -> str:
    if not holder.is_object:
        return body
    colon = ": " if style.indent is not None or style.spaced else ":"
    return json.dumps(key, ensure_ascii=False) + colon + body


def _insert(text: str, holder: _Container, at: int, key: str | None, value_text: str) -> str:
    """``text`` with a new member (``key``: None in an array) at position ``at`` of
    ``holder``'s members, laid out like its neighbours."""
    style = _Style.of(text)
    members = holder.members
    body = _entry(holder, key, value_text, style)
    if not members:
        if style.indent is None:
            return text[: holder.open + 1] + body + text[holder.close :]
        inner = _inner_margin(text, holder, style)
        outer = _margin(text, holder.open)
        return text[: holder.open + 1] + "\n" + inner + body + "\n" + outer + text[holder.close :]
    sep = _separator(text, holder, style)
    if at >= len(members):
        end = members[-1].end
        return text[:end] + sep + body + text[end:]
    start = members[at].key_start
    return text[:start] + body + sep + text[start:]


def _delete(text: str, holder: _Container, at: int) -> str:
    members = holder.members
    if len(members) == 1:
        return text[: holder.open + 1] + text[holder.close :]
    if at > 0:
        return text[: members[at - 1].end] + text[members[at].end :]
    return text[: members[0].key_start] + text[members[1].key_start :]


def _text_value(text: str, value: Any, holder: _Container, at: int | None) -> str:
    style = _Style.of(text)
    if holder.members and "\n" not in text[holder.open : holder.close]:
        return _Style(None, style.spaced).dump(value, "")  # a container on one line
    if at is not None and at < len(holder.members):
        margin = _margin(text, holder.members[at].key_start)
    else:
        margin = _inner_margin(text, holder, style)
    return style.dump(value, margin)


def _text_add(text: str, pointer: str, value: Any, *, raw: str | None = None) -> str:
    tokens = parse_pointer(pointer)
    if not tokens:
        return _Style.of(text).dump(value, "") if raw is None else raw
    holder, last = _walk(text, tokens)
    if holder.is_object:
        found = holder.last_named(last)
        if found is not None:
            member = holder.members[found]
            body = raw if raw is not None else _text_value(text, value, holder, found)
            return text[: member.start] + body + text[member.end :]
        body = raw if raw is not None else _text_value(text, value, holder, None)
        return _insert(text, holder, len(holder.members), last, body)
    at = _index(last, len(holder.members), append=True)
    body = raw if raw is not None else _text_value(text, value, holder, at)
    return _insert(text, holder, at, None, body)


def _located(text: str, pointer: str) -> tuple[_Container, int]:
    tokens = parse_pointer(pointer)
    if not tokens:
        raise PatchError("the whole document is no member")
    holder, last = _walk(text, tokens)
    if holder.is_object:
        found = holder.last_named(last)
        if found is None:
            raise PatchError(f"{pointer}: no member {last!r}")
        return holder, found
    return holder, _index(last, len(holder.members), append=False)


def _text_op(text: str, op: Mapping[str, Any]) -> str:
    name, path = _checked(op)
    if name == "test":
        return text
    if name == "add":
        return _text_add(text, path, op["value"])
    if name == "replace":
        if not path:
            return _Style.of(text).dump(op["value"], "")
        holder, at = _located(text, path)
        member = holder.members[at]
        body = _text_value(text, op["value"], holder, at)
        return text[: member.start] + body + text[member.end :]
    if name == "remove":
        holder, at = _located(text, path)
        text = _delete(text, holder, at)
        if holder.is_object:  # an earlier member of the same name would show: JSON keeps the last
            while True:
                try:
                    holder, at = _located(text, path)
                except PatchError:
                    break
                text = _delete(text, holder, at)
        return text
    source = op["from"]
    if name == "copy":
        return _text_add(text, path, _get(json.loads(text), source))
    if path == source:
        return text
    holder, at = _located(text, source)
    member = holder.members[at]
    same_parent = source.rpartition("/")[0] == path.rpartition("/")[0]
    if same_parent and holder.is_object:
        # a rename inside one object keeps the member where it is
        target = parse_pointer(path)[-1]
        if holder.last_named(target) is None:
            key_text = json.dumps(target, ensure_ascii=False)
            return text[: member.key_start] + key_text + text[member.key_end :]
    raw = text[member.start : member.end]
    removed = _text_op(text, {"op": "remove", "path": source})
    if same_parent or "\n" not in raw:  # the same margin: the value's own text
        return _text_add(removed, path, None, raw=raw)
    return _text_add(removed, path, json.loads(raw))


def apply_to_text(text: str, ops: Sequence[Mapping[str, Any]]) -> str:
    """The JSON ``text`` with ``ops`` applied, editing only what they touch (see the
    module's docstring). The result parses to what :func:`apply_patch` gives on the
    parsed text; where a layout cannot be kept (it always can for valid JSON, but
    the check is cheap) the whole document is written in the file's style."""
    out = text
    for op in ops:
        out = _text_op(out, op)
    expected = apply_patch(json.loads(text), ops)
    try:
        got = json.loads(out)
    except ValueError:
        got = _Unequal
    if got is _Unequal or not _same(got, expected):
        trailing = "\n" if text.endswith("\n") else ""
        return _Style.of(text).dump(expected, "") + trailing
    return out


_Unequal: Any = object()


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON documents, key order aside (and ``1`` is not ``1.0``: a value's
    spelling is what the text keeps)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@dataclass(frozen=True, slots=True)
class TextChange:
    """Where a patched text differs from its original: the original's characters
    ``[start, end)`` (1-based lines and columns of both ends, the end exclusive)
    become ``inserted``."""

    start: int
    end: int
    start_line: int
    start_column: int
    end_line: int
    end_column: int
    inserted: str


def _line_column(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def text_change(before: str, after: str) -> TextChange | None:
    """The one span of ``before`` that ``after`` replaces (their common start and end
    kept), or None when the two are the same."""
    if before == after:
        return None
    limit = min(len(before), len(after))
    start = 0
    while start < limit and before[start] == after[start]:
        start += 1
    end_b, end_a = len(before), len(after)
    while end_b > start and end_a > start and before[end_b - 1] == after[end_a - 1]:
        end_b -= 1
        end_a -= 1
    sl, sc = _line_column(before, start)
    el, ec = _line_column(before, end_b)
    return TextChange(start, end_b, sl, sc, el, ec, after[start:end_a])
