"""``car-verify mcp`` on the wire: raw bytes on a subprocess's stdin, the answers
read from its stdout. Every request line gets exactly one JSON-RPC answer with its
id (null when it has no usable one); calls overlap, each under its budget; a
client that goes ends the server quietly; no traceback on stderr."""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

INIT = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


class Wire:
    """A ``car-verify mcp`` subprocess, spoken to in lines of bytes."""

    def __init__(self, cwd: Path, *flags: str) -> None:
        self.stderr_path = cwd / f"stderr-{time.monotonic_ns()}.txt"
        self.stderr = self.stderr_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "car_verify", "mcp", *flags],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            cwd=cwd,
        )
        self.buffer = b""
        self.send(json.dumps(INIT).encode())
        assert self.answer(60)["id"] == "init"
        self.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def request(self, request_id: Any, name: str, arguments: Any) -> None:
        params = {"name": name, "arguments": arguments}
        message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        self.send(json.dumps(message).encode())

    def answer(self, timeout: float = 30) -> dict[str, Any]:
        """The next answer; fails past ``timeout`` seconds."""
        assert self.process.stdout is not None
        end = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = end - time.monotonic()
            ready, _, _ = select.select([self.process.stdout], [], [], max(left, 0))
            assert ready, f"no answer within {timeout} s"
            chunk = os.read(self.process.stdout.fileno(), 1 << 16)
            assert chunk, "the server ended"
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        doc: dict[str, Any] = json.loads(line)
        return doc

    def answers_to(self, ids: set[Any], timeout: float = 30) -> dict[Any, dict[str, Any]]:
        got: dict[Any, dict[str, Any]] = {}
        while set(got) != ids:
            doc = self.answer(timeout)
            assert doc["id"] in ids and doc["id"] not in got, doc
            got[doc["id"]] = doc
        return got

    def stderr_text(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        code = self.process.wait(60)
        self.stderr.close()
        return code


def _call(request_id: Any, name: str, arguments: Any) -> bytes:
    params = {"name": name, "arguments": arguments}
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    ).encode()


def test_every_request_line_the_sdk_dropped_gets_an_answer(tmp_path: Path) -> None:
    """The tester's requests that got no answer at all: each is answered, and the
    server answers the next request."""
    wire = Wire(tmp_path)
    nested = "[" * 200 + "]" * 200  # within the analyses' bound of 256 levels
    deeper = b"[" * 300 + b"]" * 300
    cases: list[tuple[bytes, Any, int | None, str]] = [
        # (line, id of the answer, JSON-RPC error code or None for a tool result, text)
        (
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"verify",'
            b'"arguments":{"proposal":{"actions":[{"id":"a","type":"tool_call","tool":"t",'
            b'"parameters":{"x":' + nested.encode() + b"}}]}}}}",
            1,
            None,
            "",
        ),
        (
            b'{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"simulate",'
            b'"arguments":{"proposal":{"actions":[]},"state":{"k":' + deeper + b"}}}}",
            11,
            None,
            "state.k: a value here is nested 300 levels deep",
        ),
        (
            b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"codes",'
            b'"arguments":{"code":' + b"9" * 4301 + b"}}}",
            2,
            -32602,
            "params.arguments.code: an integer of 4,301 digits",
        ),
        (
            b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"codes",'
            b'"arguments":{"code":"\\ud800"}}}',
            3,
            -32602,
            "params.arguments.code: a lone surrogate",
        ),
        (
            b'{"jsonrpc":"2.0","id":12,"method":"ping","params":{"\xc3\xa9\\udc80":1}}',
            12,
            -32602,
            "params.\u00e9\\udc80: a key holds a lone surrogate",
        ),
        (b'{"jsonrpc":"2.0","id":4,', 4, -32700, "Parse error"),  # the id was read
        (b"\xff\xfe", None, -32700, "not UTF-8"),
        (b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":[1]}', 5, -32602, "params"),
        (b"[]", None, -32600, "one object"),
        (b"null", None, -32600, "one object"),
        (b'{"id":6}', 6, -32600, "jsonrpc"),
        (b'{"jsonrpc":"2.0","id":7,"method":"nope"}', 7, -32601, "Method not found"),
        (
            b'{"jsonrpc":"2.0","id":8,"method":"ping","params":' + b"[" * 3000 + b"]" * 3000 + b"}",
            8,
            -32602,
            "nested deeper than 512 levels",
        ),
        (b'{"jsonrpc":"2.0","id":9.5,"method":"ping"}', None, -32600, "id"),
        (b'{"jsonrpc":"2.0","id":10,"method":"ping","params":{"x":NaN}}', 10, -32602, "x: NaN"),
        (b'{"jsonrpc":"2.0","id":13,"method":"ping","params":[-Infinity]}', 13, -32602, "[0]"),
        (b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}', None, -32600, "id"),
        (
            b'{"method":"ping","params":{"x":"' + b"y" * (17 << 20) + b'"},"id":"big"}',
            "big",
            -32600,
            "over 16,777,216 bytes",
        ),
    ]
    for line, answer_id, code, text in cases:
        wire.send(line)
        doc = wire.answer()
        assert doc["id"] == answer_id, (line[:60], doc)
        if code is None:  # a tool result
            assert text in doc["result"]["content"][0]["text"], doc
            assert doc["result"]["isError"] is bool(text), doc
        else:
            assert doc["error"]["code"] == code and text in doc["error"]["message"], doc
        wire.send(b'{"jsonrpc":"2.0","id":"alive","method":"ping"}')
        assert wire.answer() == {"jsonrpc": "2.0", "id": "alive", "result": {}}
    assert wire.close() == 0
    assert wire.stderr_text() == ""


def test_tool_failures_are_tool_results_naming_the_argument_never_code_0(tmp_path: Path) -> None:
    wire = Wire(tmp_path)
    racy = {"actions": [{"id": "a", "type": "tool_call", "tool": "t"}, {"id": 3}]}
    cases = [
        ("codes", {"code": {}}, "code: expected a string, got an object"),
        ("risk", {"proposal": {"actions": []}, "rates": "x"}, "rates: expected an object"),
        ("risk", {"proposal": {"actions": []}, "rates": {"t": "x"}}, "rates.t: expected a number"),
        ("verify", {"proposal": racy}, "proposal.actions[1].id: expected a string, got an integer"),
        ("verify", {"proposal": {"actions": []}, "tools": {}}, "tools: expected an array"),
        ("simulate", {"proposal": {"actions": []}, "state": []}, "state: expected an object"),
        ("equivalent", {"a": {"actions": []}}, "missing argument b"),
        ("nope", {}, "unknown tool 'nope'"),
    ]
    for n, (name, arguments, text) in enumerate(cases):
        wire.request(n, name, arguments)
        doc = wire.answer()
        assert doc["id"] == n and "error" not in doc, doc
        assert doc["result"]["isError"] is True
        assert doc["result"]["content"][0]["text"].startswith(text), doc
    assert wire.close() == 0
    assert wire.stderr_text() == ""


def _slow_policy_check(actions: int) -> dict[str, Any]:
    """A policy check that runs for minutes: a trace rule over many actions."""
    plan = {
        "actions": [
            {"id": f"a{i}", "type": "tool_call", "tool": "t", "expected_effects": {f"k{i % 7}": i}}
            for i in range(actions)
        ]
    }
    rules = 'deny_tool = ["u"]\n[[trace_rule]]\nrule = "never t after t"\n'
    return {"proposal": plan, "policies": rules}


def test_calls_overlap_and_a_call_past_its_budget_is_stopped(tmp_path: Path) -> None:
    """A ``codes`` call sent while a slow ``policy_check`` runs is answered at once;
    the slow one is stopped at the budget (its worker killed) and the server goes on."""
    wire = Wire(tmp_path, "--call-timeout", "4")
    wire.request("warm", "verify", {"proposal": {"actions": []}})  # a worker is ready
    wire.request("warm codes", "codes", {"code": "duplicate-call"})
    assert not any(a["result"]["isError"] for a in wire.answers_to({"warm", "warm codes"}).values())
    start = time.monotonic()
    wire.request("slow", "policy_check", _slow_policy_check(600))
    time.sleep(0.2)
    sent = time.monotonic()
    wire.request("fast", "codes", {"code": "duplicate-id"})
    fast = wire.answer()
    fast_took = time.monotonic() - sent
    assert fast["id"] == "fast" and fast["result"]["isError"] is False
    assert fast_took < 1.0
    slow = wire.answer(30)
    slow_took = time.monotonic() - start
    assert slow["id"] == "slow" and slow["result"]["isError"] is True
    assert "budget of 4 s" in slow["result"]["content"][0]["text"]
    assert 4 <= slow_took < 10
    wire.request("after", "verify", {"proposal": {"actions": []}})
    assert wire.answer()["result"]["isError"] is False
    assert wire.close() == 0
    assert wire.stderr_text() == ""


def test_a_client_that_goes_ends_the_server_quietly(tmp_path: Path) -> None:
    # stdout closed early: a broken pipe, exit 0, nothing on stderr
    wire = Wire(tmp_path)
    assert wire.process.stdout is not None
    wire.process.stdout.close()
    wire.request(1, "codes", {})
    assert wire.process.wait(30) == 0
    assert wire.stderr_text() == ""
    # stdin at its end with a call still running: it is answered, then exit 0
    wire = Wire(tmp_path)
    wire.request(2, "verify", {"proposal": {"actions": []}})
    assert wire.process.stdin is not None
    wire.process.stdin.close()
    assert wire.answer()["id"] == 2
    assert wire.process.wait(30) == 0
    assert wire.stderr_text() == ""


def test_no_call_outlives_the_server(tmp_path: Path) -> None:
    """A worker whose server is killed ends on its own, its call unfinished."""
    wire = Wire(tmp_path, "--call-timeout", "120")
    wire.request("slow", "policy_check", _slow_policy_check(600))
    tasks = Path(f"/proc/{wire.process.pid}/task")
    if not (tasks / str(wire.process.pid) / "children").exists():
        pytest.skip("no /proc to find the worker processes in")
    end = time.monotonic() + 30
    workers: list[int] = []
    while not workers and time.monotonic() < end:  # the children of any of its threads
        for task in tasks.iterdir():
            with contextlib.suppress(OSError):
                workers += [int(w) for w in (task / "children").read_text().split()]
        time.sleep(0.1)
    assert workers
    wire.process.kill()
    wire.process.wait(10)
    end = time.monotonic() + 10
    while any(_alive(w) for w in workers) and time.monotonic() < end:
        time.sleep(0.1)
    assert not [w for w in workers if _alive(w)]


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in status


# --- a property over hostile requests ---------------------------------------------------

_TEXT = st.text(
    st.characters(codec="utf-8") | st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    max_size=8,
)
_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)
_CLEAN_TEXT = st.text(st.characters(codec="utf-8"), max_size=8)
_CLEAN = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | _CLEAN_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_CLEAN_TEXT, inner, max_size=4),
    max_leaves=12,
)
_TOOLS = st.sampled_from(["verify", "simulate", "equivalent", "policy_check", "risk", "codes"])
_METHODS = st.sampled_from(["tools/call", "tools/list", "ping", "initialize", "resources/list"])


@st.composite
def _hostile(draw: Any, request_id: int) -> tuple[bytes, bool]:
    """A hostile line, and whether it is a tools/call whose arguments are clean JSON
    (then its answer must be a tool result, never a JSON-RPC error)."""
    kind = draw(st.sampled_from(["bytes", "value", "envelope", "call", "clean", "deep", "digits"]))
    if kind == "bytes":
        return draw(st.binary(max_size=120)).replace(b"\n", b" "), False
    if kind == "value":
        return json.dumps(draw(_VALUES)).encode(), False
    if kind == "envelope":
        doc: dict[str, Any] = {}
        for key, values in (
            ("jsonrpc", st.just("2.0") | _VALUES),
            ("id", st.just(request_id) | _VALUES),
            ("method", _METHODS | _VALUES),
            ("params", _VALUES),
        ):
            if draw(st.booleans()):
                doc[key] = draw(values)
        return json.dumps(doc).encode(), False
    name = draw(_TOOLS)
    if kind == "call":
        return _call(request_id, name, draw(_VALUES)), False
    if kind == "clean":
        arguments = draw(st.dictionaries(st.sampled_from(["proposal", "code", "a", "x"]), _CLEAN))
        return _call(request_id, name, arguments), True
    if kind == "deep":
        depth = draw(st.integers(100, 2500))
        arguments = b'{"proposal":%s}' % (b"[" * depth + b"]" * depth)
        head = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call",' % request_id
        return head + b'"params":{"name":"%s","arguments":%s}}' % (name.encode(), arguments), False
    digits = draw(st.integers(4200, 4400))
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"codes",'
        b'"arguments":{"code":%s}}}' % (request_id, b"7" * digits)
    ), False


class _Number(str):
    """A number as the oracle reads it: its text."""


class _NotJson:
    """NaN or Infinity: a value no JSON holds (never a usable id)."""


def _constant(name: str) -> Any:
    return _NotJson()


def _expected(line: bytes) -> tuple[int, Any]:
    """How many answers a line gets (0 or 1) and the answer's id, as JSON-RPC says
    (read by Python's JSON reader, numbers kept as text)."""
    data = line.strip(b" \t\r\n")
    if not data:
        return 0, None
    try:
        doc = json.loads(
            data.decode("utf-8"), parse_int=_Number, parse_float=_Number, parse_constant=_constant
        )
    except RecursionError:
        return 1, "deep"
    except ValueError:  # a parse error, with the id the line's top level names
        from car_verify.cli.mcp_stdio import scan_id

        return 1, scan_id(data)
    if type(doc) is not dict:
        return 1, None
    has_id, raw = "id" in doc, doc.get("id")
    method = doc.get("method")
    if "method" not in doc and has_id and ("result" in doc or "error" in doc):
        return 0, None  # a response
    params = doc.get("params")
    notification_shaped = (
        doc.get("jsonrpc") == "2.0"
        and type(method) is str
        and (params is None or type(params) is dict)
    )
    if not has_id and notification_shaped:
        return 0, None
    if type(raw) is _Number:
        digits = raw.lstrip("-")
        return 1, int(raw) if digits.isdigit() and len(digits) <= 4300 else None
    return 1, raw if type(raw) is str and _is_text(raw) else None


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def test_any_hostile_request_gets_exactly_one_answer_and_the_server_goes_on(
    tmp_path: Path,
) -> None:
    wire = Wire(tmp_path, "--call-timeout", "10")
    counter = iter(range(10**6, 10**7))

    @settings(
        max_examples=120,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.data())
    def property_(data: Any) -> None:
        request_id = next(counter)
        line, clean = data.draw(_hostile(request_id))
        count, answer_id = _expected(line)
        if answer_id == "deep":  # too deep for the oracle's reader: ours finds the id
            answer_id = request_id
        wire.send(line)
        ping = f"ping-{request_id}"
        wire.send(json.dumps({"jsonrpc": "2.0", "id": ping, "method": "ping"}).encode())
        got: list[dict[str, Any]] = []
        ponged = False
        while not ponged or len(got) < count:
            doc = wire.answer(30)
            if doc.get("id") == ping:
                assert doc == {"jsonrpc": "2.0", "id": ping, "result": {}}
                ponged = True
            else:
                got.append(doc)
        assert len(got) == count, (line[:200], got)
        for doc in got:
            assert doc["id"] == answer_id, (line[:200], doc)
            assert ("result" in doc) != ("error" in doc), doc
            if "error" in doc:
                assert doc["error"]["code"] in (-32700, -32600, -32601, -32602, -32603), doc
            if clean:
                assert doc["result"]["isError"] in (True, False), doc
                assert doc["result"]["content"][0]["type"] == "text", doc

    property_()
    assert wire.close() == 0
    assert "Traceback" not in wire.stderr_text()
    assert wire.stderr_text() == ""


def test_an_answer_over_the_bound_keeps_its_text_cut_and_says_so(tmp_path: Path) -> None:
    """250 actions writing one key: 31,125 write conflicts, 6 MB of JSON. The answer
    leaves the JSON out and cuts the text, so no answer holds up the server."""
    plan = {
        "actions": [
            {"id": f"a{i}", "type": "tool_call", "tool": "t", "expected_effects": {"k": i}}
            for i in range(250)
        ]
    }
    wire = Wire(tmp_path)
    wire.request(1, "verify", {"proposal": plan})
    result = wire.answer(60)["result"]
    assert "structuredContent" not in result and result["isError"] is False
    text = result["content"][0]["text"]
    assert "warning[write-conflict]" in text and len(text) < 70_000
    assert text.endswith("over the server's bound of 4,194,304: it is left out, and this text "
                         "cut; the command line gives the whole]")  # fmt: skip
    assert wire.close() == 0
    assert wire.stderr_text() == ""


# --- the id of a line that is never read whole ----------------------------------------------

_KEYS = st.sampled_from(["id", "jsonrpc", "method", "params", "x", "i\\d", 'a"b', "[", "}"])
_ID_VALUES = (
    st.integers(-(10**30), 10**30)
    | _CLEAN_TEXT
    | st.text(st.sampled_from('"\\[]{},: id'), max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.none()
    | st.booleans()
    | st.lists(st.integers(), max_size=2)
)
_TRICKY = st.recursive(
    _ID_VALUES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(_KEYS, _TRICKY), max_size=6),
    st.booleans(),
    st.integers(1, 64),
)
def test_the_id_scanner_reads_the_id_pythons_json_reader_reads(
    members: list[tuple[str, Any]], spaced: bool, chunk: int
) -> None:
    """The scanner (the fast, bounded reader of a line too long to keep) against
    Python's JSON reader on whole messages, fed in chunks of any size: the id is
    the same, or None where it is not a string of text or an integer."""
    from car_verify.cli.mcp_stdio import IdScanner

    pairs = ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in members)
    text = ("{ " + pairs + " }") if spaced else ("{" + pairs.replace(", ", ",") + "}")
    doc = json.loads(text)
    raw = doc.get("id")
    expected = raw if type(raw) is int or (type(raw) is str and _is_text(raw)) else None
    data = text.encode("utf-8", "surrogatepass")
    scanner = IdScanner()
    for at in range(0, len(data), chunk):
        scanner.feed(data[at : at + chunk])
    assert scanner.end() == expected, text


def test_the_rules_read_at_start_stay_in_force_whatever_the_workspace_becomes(
    tmp_path: Path,
) -> None:
    """An agent that can write the workspace edits the server's .car/policies, or
    writes a nearer one, mid-session: the next policy_check still applies the rules
    the server read at start (an edit may add rules; it never takes one away)."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "app").mkdir()
    folder = project / ".car" / "policies"
    folder.mkdir(parents=True)
    (folder / "rules.toml").write_text('deny_tool = ["wipe"]\n')
    plan = {"actions": [{"id": "a", "type": "tool_call", "tool": "wipe"}]}
    wire = Wire(project / "app")

    def verdict(n: int) -> tuple[bool, str]:
        wire.request(n, "policy_check", {"proposal": plan})
        doc = wire.answer()
        assert doc["id"] == n and not doc["result"].get("isError"), doc
        text = doc["result"]["content"][0]["text"]
        return doc["result"]["structuredContent"]["valid"], text

    valid, _ = verdict(1)
    assert not valid
    (folder / "rules.toml").write_text('deny_tool = ["nothing"]\n')  # weakened
    valid, text = verdict(2)
    assert not valid and "as read when the server started (rules.toml" in text, text
    shadow = project / "app" / ".car" / "policies"  # nearer to the server's start
    shadow.mkdir(parents=True)
    (shadow / "x.toml").write_text('deny_tool = ["nothing"]\n')
    valid, text = verdict(3)
    assert not valid and f"in {folder}" in text, text
    (folder / "more.toml").write_text('deny_tool = ["rm"]\n')  # an added rule applies at once
    wire.request(
        4,
        "policy_check",
        {"proposal": {"actions": [{"id": "b", "type": "tool_call", "tool": "rm"}]}},
    )
    doc = wire.answer()
    assert doc["result"]["structuredContent"]["valid"] is False, doc
    assert wire.close() == 0
