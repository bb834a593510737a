"""``car-verify mcp`` on stdio: :func:`serve` runs the SDK's server over a framing
of this module's own, one JSON-RPC message a line, each request answered.

The SDK's own stdio transport hands a line it cannot read to the session, which
drops it: malformed JSON, a lone surrogate, an integer of 4,301 digits, 200 levels
of nesting, params that are not an object, a batch or a bare value got no answer
at all, and the client waited for good. This layer reads the lines itself, in a
thread of its own, and answers those as JSON-RPC says (:func:`classify`):

* a line that is not UTF-8 JSON: parse error (-32700), with the id the line's
  top level names where it can be read (:class:`IdScanner`), else null;
* JSON that is not a request (no object, no string method, an id that is neither a
  string nor an integer, ``jsonrpc`` not "2.0"): invalid request (-32600), with the
  request's id where it has a usable one, else null;
* a request whose params are not an object, or hold what no JSON value is here (a
  lone surrogate, an integer past :data:`MAX_INT_DIGITS` digits, a number past the
  range of a double, ``NaN`` or ``Infinity``, nesting past :data:`MAX_NESTING`
  levels): invalid params (-32602) with its id, naming the place
  (``params.arguments.code``);
* a line longer than :data:`MAX_LINE` bytes: invalid request, with the id its top
  level names (read by :class:`IdScanner` as the line is passed over, never held
  whole), else null.

A well-formed notification (no id) and a response (an id with ``result`` or
``error``, no method) are never answered, as JSON-RPC says; anything else goes to
the SDK's session, which answers it. Blank lines are skipped. Answers are written
by one thread of their own, a line each.

When stdin ends, the requests still running are answered (each within its budget)
before the server ends; when the client closes its end of stdout (a broken pipe),
the server ends at once. Both are a quiet exit 0.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import queue
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO, Final

from .mcp_server import TOOLS, Declarations, Settings

if TYPE_CHECKING:
    from ..base.values import JSONValue

__all__ = ["MAX_INT_DIGITS", "MAX_LINE", "MAX_NESTING", "classify", "serve", "serve_stdio"]

#: The longest line read, in bytes (16 MiB).
MAX_LINE: Final = 16 * 1024 * 1024
#: The deepest nesting of a message, counted from the message itself.
MAX_NESTING: Final = 512
#: The most digits an integer may have (Python's own bound for reading one).
MAX_INT_DIGITS: Final = 4300

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

Message = dict[str, Any]


class _Flaw:
    """A number read from the line that no value here can be (too long, too large)."""

    __slots__ = ("problem",)

    def __init__(self, problem: str) -> None:
        self.problem = problem


def _integer(text: str) -> int | _Flaw:
    digits = len(text) - text.startswith("-")
    if digits > MAX_INT_DIGITS:
        return _Flaw(f"an integer of {digits:,} digits (at most {MAX_INT_DIGITS:,})")
    return int(text)


def _float(text: str) -> float | _Flaw:
    value = float(text)
    if not math.isfinite(value):
        return _Flaw("a number out of the range of a double")
    return value


def _constant(name: str) -> _Flaw:
    return _Flaw(f"{name} (not a JSON number)")


def _is_text(value: str) -> bool:
    """Whether ``value`` can be written as UTF-8 (no lone surrogate)."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(part: str | int) -> str | int:
    return (
        part
        if isinstance(part, int) or _is_text(part)
        else part.encode("utf-8", "backslashreplace").decode("utf-8")
    )


def _where(path: list[str | int]) -> str:
    from ..base.errors import format_path

    return format_path([_shown(p) for p in path])


def first_flaw(doc: JSONValue) -> tuple[list[str | int], str] | None:
    """The first place (in document order) that holds what no JSON value here can
    be, and what it holds; None when there is none. Iterative: any depth."""
    stack: list[tuple[Any, list[str | int]]] = [(doc, [])]
    while stack:
        value, path = stack.pop()
        kind = type(value)
        if kind is dict or kind is list:
            if len(path) >= MAX_NESTING:
                return path, f"nested deeper than {MAX_NESTING} levels"
            if kind is dict:
                for key in value:
                    if not _is_text(key):
                        return [*path, key], "a key holds a lone surrogate (not text)"
                items = list(value.items())
            else:
                items = list(enumerate(value))
            stack.extend(([v, [*path, k]] for k, v in reversed(items)))  # type: ignore[misc]
        elif kind is str:
            if not _is_text(value):
                return path, "a lone surrogate (not text)"
        elif kind is _Flaw:
            return path, value.problem
    return None


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def _cut(text: str, limit: int) -> str:
    """``text`` with every array and object deeper than ``limit`` levels written as
    ``null`` (for a line too deep for the JSON reader to recurse through: what is
    left says the message's id)."""
    out: list[str] = []
    depth, last, start = 0, 0, -1
    for token in _TOKENS.finditer(text):
        mark = token.group()
        if mark[0] == '"':
            continue
        if mark in "[{":
            depth += 1
            if depth == limit + 1:
                start = token.start()
        else:
            if depth == limit + 1 and start >= 0:
                out += (text[last:start], "null")
                last, start = token.end(), -1
            depth -= 1
    out.append(text[last:] if start < 0 else text[last:start] + "null")
    return "".join(out)


_STRING_BODY = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
_NESTED_BODY = re.compile(rb'[^"\[\]{}]*(?:"[^"\\]*(?:\\.[^"\\]*)*"[^"\[\]{}]*)*', re.DOTALL)
_OPENERS = re.compile(rb"[\[{]+")
_CLOSERS = re.compile(rb"[\]}]+")
_SCALAR_STOP = re.compile(rb"[,}\]\s]")
_WHITESPACE = b" \t\r\n"
#: The longest key, and the longest id, kept while scanning (an id longer is no id here).
_KEY_BYTES = 256
_ID_BYTES = 64 * 1024
_INTEGER = re.compile(rb"-?(?:0|[1-9][0-9]*)")
#: The most runs of brackets a scan passes over (about a second of work): a line of
#: millions of tiny arrays is answered without its id rather than read for minutes.
_SCAN_WORK = 1_000_000


class IdScanner:
    """The id a JSON-RPC message's top level names, read from its bytes as they come
    (:meth:`feed` chunks of any size), holding at most a key and an id, never the
    message: for a line too long to read, or one that is not JSON.

    It follows the top-level object member by member (a key, a colon, a value, a
    comma) and skips each value that is not the id by its brackets and strings,
    without reading it. It stops at the first place the top level is not an
    object's members (the ids read before stay read), or past :data:`_SCAN_WORK`
    runs of brackets (then no id is read). Like a JSON reader, a later ``"id"``
    member replaces an earlier one. :attr:`id` is the id when it is a
    string of text or an integer (of at most :data:`MAX_INT_DIGITS` digits), else
    None. Held to Python's JSON reader on whole messages in tests/test_mcp_wire.py."""

    __slots__ = ("_capture", "_depth", "_escape", "_kind", "_resume", "_state", "_work", "id")

    def __init__(self) -> None:
        self.id: JSONValue = None
        self._state = "start"
        self._resume = ""  # the state a skipped string returns to
        self._depth = 0  # the brackets open in a skipped value
        self._escape = False  # a backslash ended the last chunk, inside a string
        self._capture: bytearray | None = None  # a key or the id, as read so far
        self._kind = ""  # what is captured: "key", "id" (a string) or "number"
        self._work = _SCAN_WORK  # runs of brackets left to pass over

    @property
    def done(self) -> bool:
        return self._state in ("end", "stop")

    def feed(self, data: bytes) -> None:
        at, size = 0, len(data)
        while at < size and not self.done:
            at = getattr(self, "_" + self._state)(data, at)

    def end(self) -> JSONValue:
        """The id, once the message has no more bytes (a number at the very end is
        complete then)."""
        if self._state == "number":
            self._close_number()
        return self.id

    # --- the states: each reads from ``at`` and returns where it stopped -----------------

    @staticmethod
    def _blank(data: bytes, at: int) -> int:
        while at < len(data) and data[at] in _WHITESPACE:
            at += 1
        return at

    def _expect(self, data: bytes, at: int, wanted: bytes, then: str) -> int:
        at = self._blank(data, at)
        if at < len(data):
            self._state = then if data[at : at + 1] == wanted else "stop"
            at += 1
        return at

    def _start(self, data: bytes, at: int) -> int:
        return self._expect(data, at, b"{", "member")

    def _member(self, data: bytes, at: int) -> int:
        at = self._blank(data, at)
        if at < len(data):
            mark = data[at : at + 1]
            if mark == b'"':
                self._capture, self._kind, self._state = bytearray(), "key", "text"
            else:
                self._state = "end" if mark == b"}" else "stop"
            at += 1
        return at

    def _colon(self, data: bytes, at: int) -> int:
        return self._expect(data, at, b":", "value")

    def _value(self, data: bytes, at: int) -> int:
        at = self._blank(data, at)
        if at >= len(data):
            return at
        mark = data[at : at + 1]
        if self._kind == "id?":  # the value of an "id" member
            self.id = None
            if mark == b'"':
                self._capture, self._kind, self._state = bytearray(), "id", "text"
                return at + 1
            if mark in b"-0123456789":
                self._capture, self._kind, self._state = bytearray(), "number", "number"
                return at
        if mark == b'"':
            self._resume, self._state = "after", "skip"
            return at + 1
        if mark in b"[{":
            self._depth, self._state = 1, "nested"
            return at + 1
        self._state = "scalar"
        return at

    def _text(self, data: bytes, at: int) -> int:
        """A key or the id, kept (up to its bound) until its closing quote."""
        capture = self._capture
        assert capture is not None
        bound = _KEY_BYTES if self._kind == "key" else _ID_BYTES
        begin = at
        at, closed = self._string_end(data, at)
        if len(capture) <= bound:
            capture += data[begin : min(at, begin + bound + 1)]
        if closed:
            self._close_text(bytes(capture), len(capture) > bound)
            return at + 1
        return at

    def _string_end(self, data: bytes, at: int) -> tuple[int, bool]:
        """Where the string being read ends in ``data`` (at its closing quote, True),
        or the end of ``data`` (False), past escapes (one may be cut by the chunk)."""
        if self._escape:
            if at >= len(data):
                return at, False
            self._escape = False
            at += 1
        at = _STRING_BODY.match(data, at).end()  # type: ignore[union-attr]
        if at >= len(data):
            return at, False
        if data[at] == 0x5C:  # a backslash, the chunk's last byte
            self._escape = True
            return len(data), False
        return at, True

    def _close_text(self, raw: bytes, too_long: bool) -> None:
        value: Any = None
        if not too_long:
            try:
                value = json.loads(b'"' + raw + b'"')
            except ValueError:
                value = None
        self._capture = None
        if self._kind == "key":
            self._kind = "id?" if value == "id" else ""
            self._state = "colon"
            return
        self.id = value if isinstance(value, str) and _is_text(value) else None
        self._kind, self._state = "", "after"

    def _number(self, data: bytes, at: int) -> int:
        capture = self._capture
        assert capture is not None
        found = _SCALAR_STOP.search(data, at)
        stop = len(data) if found is None else found.start()
        if len(capture) <= MAX_INT_DIGITS + 1:
            capture += data[at : min(stop, at + MAX_INT_DIGITS + 2)]
        if found is not None:
            self._close_number()
        return stop

    def _close_number(self) -> None:
        raw = bytes(self._capture or b"")
        digits = len(raw) - raw.startswith(b"-")
        whole = _INTEGER.fullmatch(raw) is not None and digits <= MAX_INT_DIGITS
        self.id = int(raw) if whole else None
        self._capture, self._kind, self._state = None, "", "after"

    def _scalar(self, data: bytes, at: int) -> int:
        found = _SCALAR_STOP.search(data, at)
        if found is None:
            return len(data)
        self._state = "after"
        return found.start()

    def _skip(self, data: bytes, at: int) -> int:
        """A string not kept, to its closing quote."""
        at, closed = self._string_end(data, at)
        if closed:
            self._state = self._resume
            return at + 1
        return at

    def _nested(self, data: bytes, at: int) -> int:
        """An array or object not kept, to its closing bracket: what is neither a
        bracket nor in a string is passed over in one step."""
        size = len(data)
        while True:
            at = _NESTED_BODY.match(data, at).end()  # type: ignore[union-attr]
            if at >= size:
                return at
            mark = data[at]
            if mark == 0x22:  # a string that goes on in the next chunk
                self._resume, self._state = "nested", "skip"
                return at + 1
            self._work -= 1
            if self._work < 0:  # past the scan's bound: the id is not read
                self.id, self._state = None, "stop"
                return size
            brackets = _OPENERS if mark in b"[{" else _CLOSERS
            run = brackets.match(data, at).end()  # type: ignore[union-attr]
            if mark in b"[{":
                self._depth += run - at
            elif run - at >= self._depth:
                self._state = "after"
                return at + self._depth
            else:
                self._depth -= run - at
            at = run

    def _after(self, data: bytes, at: int) -> int:
        at = self._blank(data, at)
        if at < len(data):
            mark = data[at : at + 1]
            self._state = "member" if mark == b"," else "end" if mark == b"}" else "stop"
            at += 1
        return at


def scan_id(data: bytes) -> JSONValue:
    """The id the top level of a message's bytes names (see :class:`IdScanner`)."""
    scanner = IdScanner()
    scanner.feed(data)
    return scanner.end()


def _error(request_id: JSONValue, code: int, message: str) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def classify(line: bytes) -> tuple[Message | None, Message | None]:
    """One line read: ``(message to pass on, answer to write)``; either may be None
    (a blank line, a notification or a response answers nothing)."""
    data = line.strip(b" \t\r\n")
    if not data:
        return None, None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        message = f"Parse error: not UTF-8 (byte {err.start + 1})"
        return None, _error(scan_id(data), PARSE_ERROR, message)
    deep = False
    try:
        doc = json.loads(text, parse_int=_integer, parse_float=_float, parse_constant=_constant)
    except RecursionError:
        deep = True
        try:
            doc = json.loads(
                _cut(text, MAX_NESTING),
                parse_int=_integer,
                parse_float=_float,
                parse_constant=_constant,
            )
        except (ValueError, RecursionError):
            return None, _error(scan_id(data), PARSE_ERROR, "Parse error: not JSON")
    except ValueError as err:
        where = ""
        if isinstance(err, json.JSONDecodeError):
            where = f" (line {err.lineno}, column {err.colno})"
            err = ValueError(err.msg)
        return None, _error(scan_id(data), PARSE_ERROR, f"Parse error: {err}{where}")
    return _envelope(doc, deep)


def _envelope(doc: JSONValue, deep: bool) -> tuple[Message | None, Message | None]:
    if type(doc) is not dict:
        return None, _error(None, INVALID_REQUEST, "Invalid request: a message is one object")
    request_id = doc.get("id")
    has_id = "id" in doc
    usable = type(request_id) is int or (type(request_id) is str and _is_text(request_id))
    answer_id = request_id if usable else None
    method = doc.get("method")
    if "method" not in doc and has_id and ("result" in doc or "error" in doc):
        return (doc if usable and not deep and first_flaw(doc) is None else None), None
    params = doc.get("params")
    well_formed = (
        doc.get("jsonrpc") == "2.0"
        and type(method) is str
        and (params is None or type(params) is dict)
    )
    if not has_id and well_formed:  # a notification: never answered
        return (None if deep or first_flaw(doc) else doc), None
    if has_id and not usable:
        return None, _error(None, INVALID_REQUEST, "Invalid request: id: a string or an integer")
    if doc.get("jsonrpc") != "2.0":
        return None, _error(answer_id, INVALID_REQUEST, 'Invalid request: jsonrpc: expected "2.0"')
    if type(method) is not str:
        return None, _error(answer_id, INVALID_REQUEST, "Invalid request: method: a string")
    flaw = first_flaw(doc)
    if deep and flaw is None:
        flaw = (["params"], f"nested deeper than {MAX_NESTING} levels")
    if flaw is not None:
        path, problem = flaw
        code = INVALID_PARAMS if path[:1] == ["params"] else INVALID_REQUEST
        kind = "Invalid params" if code == INVALID_PARAMS else "Invalid request"
        return None, _error(answer_id, code, f"{kind}: {_where(path)}: {problem}")
    if params is not None and type(params) is not dict:
        return None, _error(answer_id, INVALID_PARAMS, "Invalid params: params: an object")
    return doc, None


# --- the wire -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _TooLong:
    """A line longer than :data:`MAX_LINE`, read past without being kept: the id its
    top level names."""

    id: JSONValue


def _lines(wire: BinaryIO) -> Iterator[bytes | _TooLong]:
    """The lines of ``wire``; for one longer than :data:`MAX_LINE`, the id scanned
    from it as it was read past (:class:`IdScanner`: never held whole)."""
    while True:
        line = wire.readline(MAX_LINE + 1)
        if not line:
            return
        if len(line) > MAX_LINE:
            scanner = IdScanner()
            while True:
                scanner.feed(line)
                if not line or line.endswith(b"\n"):
                    break
                line = wire.readline(1 << 20)
            yield _TooLong(scanner.end())
            continue
        yield line


@dataclass
class _Link:
    """What the reader and writer threads and the event loop share."""

    out: queue.Queue[bytes | None] = field(default_factory=queue.Queue)
    lock: threading.Lock = field(default_factory=threading.Lock)
    running: dict[str, int] = field(default_factory=dict)  # request id (as JSON) -> count
    ended: bool = False  # stdin ended
    gone: bool = False  # the client closed its end of stdout

    def answer(self, doc: Message) -> None:
        self.out.put(json.dumps(doc, ensure_ascii=False).encode("utf-8") + b"\n")

    def started(self, request_id: JSONValue) -> None:
        key = json.dumps(request_id)
        with self.lock:
            self.running[key] = self.running.get(key, 0) + 1

    def settled(self, request_id: JSONValue) -> None:
        key = json.dumps(request_id)
        with self.lock:
            count = self.running.pop(key, 0) - 1
            if count > 0:
                self.running[key] = count

    def busy(self) -> bool:
        with self.lock:
            return bool(self.running)


def _claim() -> tuple[int, int, Callable[[], None]]:
    """The wire's descriptors, moved off 0 and 1: while serving, fd 0 reads the null
    device and fd 1 writes to stderr, so nothing else in the process (or a worker
    it starts) reads a request or writes into the answers. The returned function
    puts them back."""
    wire_in, wire_out = os.dup(0), os.dup(1)  # not inherited by child processes
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        os.dup2(2, 1)
    except OSError:
        sink = os.open(os.devnull, os.O_WRONLY)
        os.dup2(sink, 1)
        os.close(sink)

    def restore() -> None:
        with contextlib.suppress(OSError):
            os.dup2(wire_in, 0)
            os.dup2(wire_out, 1)

    return wire_in, wire_out, restore


@contextlib.asynccontextmanager
async def serve_stdio(call_timeout: float) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's ``(read stream, write stream)`` over the process's stdin and
    stdout, framed as this module says. ``call_timeout``: how long, past the end of
    stdin, the requests still running may take to be answered."""
    import anyio
    import anyio.lowlevel
    import mcp.types as types
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.shared.message import SessionMessage

    wire_in, wire_out, restore = _claim()
    link = _Link()
    token = anyio.lowlevel.current_token()
    to_server: tuple[MemoryObjectSendStream[Any], MemoryObjectReceiveStream[Any]]
    to_server = anyio.create_memory_object_stream(16)
    from_server: tuple[MemoryObjectSendStream[Any], MemoryObjectReceiveStream[Any]]
    from_server = anyio.create_memory_object_stream(16)
    stdin_ended, client_gone, forwarded = anyio.Event(), anyio.Event(), anyio.Event()

    def on_loop(func: Callable[[], None]) -> None:
        with contextlib.suppress(Exception):  # the loop may have ended already
            anyio.from_thread.run_sync(func, token=token)

    def read() -> None:
        with contextlib.suppress(Exception), os.fdopen(wire_in, "rb", closefd=False) as wire:
            for line in _lines(wire):
                while link.out.qsize() > 256 and not link.gone:  # the client reads slowly
                    threading.Event().wait(0.01)
                if isinstance(line, _TooLong):
                    said = f"Invalid request: over {MAX_LINE:,} bytes"
                    link.answer(_error(line.id, INVALID_REQUEST, said))
                    continue
                try:
                    message, answer = classify(line)
                except Exception:  # a line is answered, and the next one read, whatever it held
                    message, answer = None, _error(None, INTERNAL_ERROR, "Internal error")
                if answer is not None:
                    link.answer(answer)
                if message is None:
                    continue
                try:
                    parsed = types.jsonrpc_message_adapter.validate_python(message, by_name=False)
                except Exception:
                    if "method" in message and "id" in message:
                        link.answer(
                            _error(message["id"], INVALID_REQUEST, "Invalid request: not MCP")
                        )
                    continue
                if isinstance(parsed, types.JSONRPCRequest):
                    link.started(parsed.id)
                elif isinstance(parsed, types.JSONRPCNotification) and (
                    parsed.method == "notifications/cancelled"  # never answered, as MCP says
                ):
                    link.settled((parsed.params or {}).get("requestId"))
                anyio.from_thread.run(to_server[0].send, SessionMessage(parsed), token=token)
        link.ended = True
        on_loop(stdin_ended.set)

    def write() -> None:
        while True:
            data = link.out.get()
            if data is None:
                return
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(wire_out, view) :]
            except OSError:  # a broken pipe: the client has gone
                link.gone = True
                on_loop(client_gone.set)
                return

    async def forward() -> None:
        async with from_server[1]:
            async for item in from_server[1]:
                message = item.message
                request_id = getattr(message, "id", None)
                try:
                    text = message.model_dump_json(by_alias=True, exclude_unset=True)
                except Exception:
                    text = json.dumps(
                        _error(request_id, INTERNAL_ERROR, "Internal error: an unwritable answer")
                    )
                link.out.put(text.encode("utf-8") + b"\n")
                if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                    link.settled(request_id)
        forwarded.set()

    async def watch(scope: anyio.CancelScope) -> None:
        async with anyio.create_task_group() as tg:

            async def on_end() -> None:
                await stdin_ended.wait()
                with anyio.move_on_after(call_timeout + 5):
                    while link.busy():
                        await anyio.sleep(0.02)
                await to_server[0].aclose()

            async def on_gone() -> None:
                await client_gone.wait()
                scope.cancel()

            tg.start_soon(on_end)
            tg.start_soon(on_gone)

    reader = threading.Thread(target=read, name="mcp stdin", daemon=True)
    writer = threading.Thread(target=write, name="mcp stdout", daemon=True)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(forward)
            tg.start_soon(watch, tg.cancel_scope)
            reader.start()
            writer.start()
            yield to_server[1], from_server[0]
            # The server has ended: its last answers are written before leaving.
            with anyio.move_on_after(5):
                await forwarded.wait()
            tg.cancel_scope.cancel()
    finally:
        link.out.put(None)
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(writer.join, 5.0)
        restore()


def serve(decl: Declarations, settings: Settings) -> None:
    """Serve the tools over stdio until the client goes (stdin at its end, or its
    end of stdout closed); calls run at once, each under ``settings.call_timeout``."""
    import anyio

    anyio.run(_serve, decl, settings)


async def _serve(decl: Declarations, settings: Settings) -> None:
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server

    from .._version import __version__
    from .mcp_workers import Pool

    pool = Pool(settings)

    async def list_tools(ctx: object, params: object) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t.name, description=t.description(decl), input_schema=t.input_schema(decl)
                )
                for t in TOOLS
            ]
        )

    async def call_tool(ctx: object, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            doc, text, failed = await pool.call(params.name, params.arguments)
        except Exception as err:  # a tool result all the same, never a code-0 error
            doc, text, failed = None, f"internal error: {type(err).__name__}", True
        structured = doc if isinstance(doc, dict) else None
        return types.CallToolResult(
            content=[types.TextContent(text=text)], structured_content=structured, is_error=failed
        )

    server: Any = Server(
        "car-verify", version=__version__, on_list_tools=list_tools, on_call_tool=call_tool
    )
    try:
        async with (
            serve_stdio(settings.call_timeout) as (read, write),
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(pool.warm)  # the first call finds a worker ready
            await server.run(read, write, server.create_initialization_options())
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await pool.close()
