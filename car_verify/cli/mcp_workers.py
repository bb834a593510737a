"""Where the MCP server's calls run: off the event loop, each under a budget.

A tool that takes a plan (``verify``, ``simulate``, ``equivalent``,
``policy_check``, ``risk``) runs in a worker process: its checks can run for
minutes on a large plan, and a thread cannot be stopped, so one that ran past its
budget would go on burning a core. A worker is killed when its call's budget runs
out (or the call is cancelled), and the call is answered with a tool error saying
so; the next call starts a fresh worker. At most ``Settings.workers`` run at once;
a call waiting for one spends its own budget waiting. An answer over
:data:`MAX_ANSWER` bytes of JSON keeps only its text, cut, so that no answer holds
up the server's loop. ``codes`` (a table lookup)
and an unknown tool's error run in a thread of the server.

A worker is ``python -P -c`` running :func:`work`: it reads one call a line (JSON)
on its stdin and writes one answer a line on its stdout, which nothing else in it
writes to (its fd 1 goes to stderr); it ends when the server does (its stdin ends,
or its parent is gone). Calls cross as JSON: arguments are JSON values, answers
wire JSON.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

from .mcp_server import Settings, call, prepare, tool_named

if TYPE_CHECKING:
    from ..base.values import JSONValue

__all__ = ["Pool", "work"]

#: How often a worker looks whether the server that started it is still there.
_WATCH_SECONDS: Final = 0.5
#: The largest answer a call gets, in bytes of JSON (4 MiB): past it the result's
#: JSON is left out and its text cut to :data:`MAX_TEXT` characters, saying so.
MAX_ANSWER: Final = 4 * 1024 * 1024
MAX_TEXT: Final = 64 * 1024


def _budget_spent(seconds: float) -> tuple[Any, str, bool]:
    return (
        None,
        f"the call ran past its budget of {seconds:g} s and was stopped "
        "(the server's --call-timeout)",
        True,
    )


class _Worker:
    """One worker process and its two pipes."""

    def __init__(self) -> None:
        root = str(Path(__file__).resolve().parents[2])  # the car_verify this server runs
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-P",
                "-c",
                f"from car_verify.cli.mcp_workers import work; work({os.getpid()})",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )

    def exchange(self, request: bytes) -> tuple[Any, str, bool] | None:
        """Send one call and wait for its answer; None when the worker has died."""
        pipe_in, pipe_out = self.process.stdin, self.process.stdout
        assert pipe_in is not None and pipe_out is not None
        try:
            pipe_in.write(request)
            pipe_in.flush()
            line = pipe_out.readline()
        except (OSError, ValueError):
            return None
        if not line:
            return None
        doc, text, failed = json.loads(line)
        return doc, str(text), bool(failed)

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(Exception):
            self.process.wait(5)
        for pipe in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(Exception):
                if pipe is not None:
                    pipe.close()


class Pool:
    """The server's calls: :meth:`call` runs one under the budget."""

    def __init__(self, settings: Settings) -> None:
        import anyio

        self.settings = settings
        self._idle: list[_Worker] = []
        self._every: set[_Worker] = set()
        self._slots = anyio.Semaphore(max(1, settings.workers))
        self._closed = False

    def _start(self) -> _Worker:
        worker = _Worker()
        self._every.add(worker)
        if self._closed:
            worker.kill()
        return worker

    async def warm(self) -> None:
        """Start a worker, and load what the server's own calls need, before the
        first call needs them."""
        import anyio

        worker = await anyio.to_thread.run_sync(self._start)
        self._idle.append(worker)
        await anyio.to_thread.run_sync(prepare, False)

    async def call(
        self, name: str, arguments: Mapping[str, JSONValue] | None
    ) -> tuple[JSONValue, str, bool]:
        """A call's ``(wire JSON, text, is_error)``; never raises but for cancellation."""
        import anyio

        budget = self.settings.call_timeout
        tool = tool_named(name)
        answer: tuple[Any, str, bool] | None = None
        with anyio.move_on_after(budget):
            if tool is None or not tool.heavy:
                answer = await anyio.to_thread.run_sync(
                    call, name, arguments, None, self.settings, abandon_on_cancel=True
                )
            else:
                answer = await self._in_worker(name, arguments)
        return _budget_spent(budget) if answer is None else answer

    async def _in_worker(
        self, name: str, arguments: Mapping[str, JSONValue] | None
    ) -> tuple[JSONValue, str, bool]:
        import anyio

        try:
            request = json.dumps(
                {"tool": name, "arguments": arguments, "settings": asdict(self.settings)},
                ensure_ascii=True,
            ).encode("ascii")
        except (TypeError, ValueError, RecursionError) as err:
            return None, f"the arguments cannot be written as JSON: {err}", True
        async with self._slots:
            with anyio.CancelScope(shield=True):
                idle = self._idle.pop() if self._idle else None
                if idle is not None and idle.process.poll() is None:
                    worker = idle
                else:
                    worker = await anyio.to_thread.run_sync(self._start)
            try:
                answer = await anyio.to_thread.run_sync(
                    worker.exchange, request + b"\n", abandon_on_cancel=True
                )
            except BaseException:  # the budget ran out, or the call was cancelled
                self._discard(worker)
                raise
            if answer is None:
                code = worker.process.poll()
                self._discard(worker)
                return None, f"the call's worker process ended (exit status {code})", True
            self._idle.append(worker)
            return answer

    def _discard(self, worker: _Worker) -> None:
        worker.kill()
        self._every.discard(worker)

    async def close(self) -> None:
        """Stop every worker (idle or running a call)."""
        import anyio

        self._closed = True
        workers = list(self._every)
        self._every.clear()
        self._idle.clear()
        for worker in workers:
            await anyio.to_thread.run_sync(worker.kill)


def _watch(parent: int) -> None:
    """End this worker when the server that started it is gone (it is no longer its
    parent, even if it went before the worker got here), so no call outlives it."""
    while True:
        threading.Event().wait(_WATCH_SECONDS)
        if os.getppid() != parent:
            os._exit(0)


def _cut(answer: tuple[Any, str, bool], size: int) -> tuple[Any, str, bool]:
    """An answer over :data:`MAX_ANSWER` bytes: its text, cut, without the JSON."""
    _, text, failed = answer
    note = (
        f"[the result's JSON is {size:,} bytes, over the server's bound of {MAX_ANSWER:,}: "
        "it is left out, and this text cut; the command line gives the whole]"
    )
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT] + " ..."
    return None, f"{text}\n{note}", failed


def work(server: int) -> None:
    """A worker's loop: one call a line on stdin, one answer a line on stdout.
    ``server``: the process id of the server that started it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server answers an interrupt
    wire_in: IO[bytes] = os.fdopen(os.dup(0), "rb")
    wire_out: IO[bytes] = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)  # whatever else writes to stdout misses the answers
    threading.Thread(target=_watch, args=(server,), daemon=True).start()
    prepare()  # the checks load before the first call

    for line in wire_in:
        try:
            request = json.loads(line)
            settings = Settings(**request["settings"])
            answer = call(request["tool"], request["arguments"], None, settings)
            out = json.dumps(list(answer), ensure_ascii=True)
            if len(out) > MAX_ANSWER:
                out = json.dumps(list(_cut(answer, len(out))), ensure_ascii=True)
        except BaseException as err:
            if isinstance(err, KeyboardInterrupt | SystemExit):
                raise
            out = json.dumps([None, f"internal error: {type(err).__name__}", True])
        wire_out.write(out.encode("ascii") + b"\n")
        wire_out.flush()
