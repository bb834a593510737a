"""The reading in a child process, so that a crash of the grammar's C code refuses
one line instead of taking the hook or the executor down with it.

The bash grammar's parser crashed its process on about one random non-ASCII line
in 5,000 (tree-sitter 0.26.1, tree-sitter-bash 0.25.1: a read past its buffer,
whether it crashes depends on the memory around it). :mod:`.parse` gives it ASCII
only, on which no crash was seen in 120,000 lines; the child is the second guard.
It is forked once and reused; the parent waits for its answer with no deadline:
the reading's bound is its step count (:data:`~.model.MAX_STEPS`), so the answer
never depends on the machine's load. A child that dies (a crash) is replaced and
the line asked once more of the new one, then refused (:class:`ShellError`, the
rule fails closed). Answers are cached per line: a line is read once however
many rules ask about it.
"""

from __future__ import annotations

import contextlib
import os
import pickle
from _thread import allocate_lock
from functools import lru_cache
from typing import Any

from .model import MAX_LINE, Reading, ShellError
from .parse import language
from .reader import read_plain

__all__ = ["read_commands"]


def read_commands(line: str) -> Reading:
    """Read ``line`` as bash would (see the package docs), in a child process of its
    own where one can be forked; :func:`~.reader.read_plain` is the same reading in
    this process, and a test holds the two to the same answers."""
    if len(line) > MAX_LINE:
        raise ShellError(f"the command line is over {MAX_LINE:,} characters")
    if not hasattr(os, "fork"):
        return read_plain(line)
    kind, value = isolated(line)
    if kind == "error":
        raise ShellError(value)
    reading: Reading = value
    return reading


@lru_cache(maxsize=2048)
def isolated(line: str) -> tuple[str, Any]:
    """:func:`read_plain` in the child (see the module docs): ``("reading",
    Reading)`` or ``("error", why)``."""
    global _CHILD
    with _CHILD_LOCK:
        for _ in range(2):
            if _CHILD is None or os.getpid() != _CHILD.owner:  # none yet, or forked since
                _CHILD = Child()
            answer = _CHILD.ask(line)
            if answer is not None:
                return answer
            _CHILD = None
        return ("error", "the shell parser failed on this line")


class Child:
    """A forked process that reads lines for this one: a request is a pickled line,
    an answer a pickled ``(kind, value)``, each behind its length. It ends when this
    process closes its end of the pipe (or exits, or is killed)."""

    def __init__(self) -> None:
        language()  # loaded once, before the fork: the child inherits it
        to_child, self._requests = os.pipe()
        self._answers, from_child = os.pipe()
        self.owner = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child: answer until the pipe closes, then leave at once
            status = 0
            try:
                _keep_only(to_child, from_child)
                while True:
                    request = _receive(to_child)
                    if request is None:
                        break
                    try:
                        answer: tuple[str, Any] = ("reading", read_plain(pickle.loads(request)))
                    except ShellError as err:
                        answer = ("error", str(err))
                    _send(from_child, pickle.dumps(answer))
            except BaseException:
                status = 1
            finally:
                os._exit(status)
        os.close(to_child)
        os.close(from_child)
        self.pid = pid

    def ask(self, line: str) -> tuple[str, Any] | None:
        """The child's answer, or None when it died (it is then closed)."""
        try:
            _send(self._requests, pickle.dumps(line))
            answer = _receive(self._answers)
        except OSError:
            answer = None
        if answer is None:
            self.close()
            return None
        result: tuple[str, Any] = pickle.loads(answer)
        return result

    def close(self) -> None:
        import signal

        for fd in (self._requests, self._answers):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitpid(self.pid, 0)


def _keep_only(*keep: int) -> None:
    """In the child: close every inherited descriptor but ``keep`` (a lock the
    parent holds, its output, a socket), the standard three pointed at /dev/null."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    try:
        open_fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        open_fds = list(range(3, 1024))
    for fd in open_fds:
        if fd > 2 and fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


_CHILD: Child | None = None
#: ``threading.Lock()`` itself (the same type), without importing ``threading``
#: (about 1 ms of a hook call's start).
_CHILD_LOCK = allocate_lock()


def _send(fd: int, data: bytes) -> None:
    data = len(data).to_bytes(8, "big") + data
    while data:
        data = data[os.write(fd, data) :]


def _receive(fd: int) -> bytes | None:
    """One message from ``fd``; None at its end (the other side closed or died)."""
    head = _exactly(fd, 8)
    if head is None:
        return None
    return _exactly(fd, int.from_bytes(head, "big"))


def _exactly(fd: int, size: int) -> bytes | None:
    chunks: list[bytes] = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)
