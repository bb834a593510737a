"""The exception types: malformed input, bad usage, and a pass that broke."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "CarVerifyError",
    "InputError",
    "PassError",
    "UsageError",
    "format_path",
    "json_pointer",
    "pointer_token",
]


class CarVerifyError(Exception):
    """Base class of every error car-verify raises on purpose."""


def format_path(parts: Sequence[str | int]) -> str:
    """``["actions", 3, "preconditions"]`` -> ``actions[3].preconditions``."""
    out: list[str] = []
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif out:
            out.append(f".{part}")
        else:
            out.append(part)
    return "".join(out) or "$"


def pointer_token(part: str | int) -> str:
    """One JSON Pointer reference token (RFC 6901): ``~`` as ``~0``, ``/`` as ``~1``."""
    text = str(part)
    if "~" in text or "/" in text:
        return text.replace("~", "~0").replace("/", "~1")
    return text


def json_pointer(parts: Sequence[str | int]) -> str:
    """``["actions", 3, "a/b"]`` -> ``/actions/3/a~1b``."""
    out = ""
    for part in parts:
        out += "/" + pointer_token(part)
    return out


class InputError(CarVerifyError):
    """The document cannot be modelled: not JSON, or a field of the wrong JSON type.

    ``path`` is the location as a list of keys and indexes, ``location`` the same as
    text (``actions[3].preconditions``), ``pointer`` as a JSON pointer, ``source`` the
    file it came from (when known), and ``line`` / ``column`` where the text itself
    could not be parsed.
    """

    def __init__(
        self,
        problem: str,
        path: Sequence[str | int] = (),
        *,
        source: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.problem = problem
        self.path: list[str | int] = list(path)
        self.source = source
        self.line = line
        self.column = column
        super().__init__(self._render())

    @property
    def location(self) -> str:
        return format_path(self.path)

    @property
    def pointer(self) -> str:
        return json_pointer(self.path)

    def _render(self) -> str:
        where: list[str] = []
        if self.source:
            where.append(self.source)
        if self.line is not None:
            where.append(f"line {self.line}" + (f", column {self.column}" if self.column else ""))
        if self.path:
            where.append(self.location)
        return (": ".join(where) + ": " if where else "") + self.problem

    def with_source(self, source: str) -> InputError:
        """The same error, naming the file it came from."""
        return InputError(
            self.problem, self.path, source=source, line=self.line, column=self.column
        )

    def under(self, *prefix: str | int) -> InputError:
        """The same error, located below ``prefix`` (used by loaders of nested documents)."""
        return InputError(
            self.problem,
            [*prefix, *self.path],
            source=self.source,
            line=self.line,
            column=self.column,
        )


class UsageError(CarVerifyError):
    """The caller asked for something that does not exist (an unknown pass, a bad option)."""


class PassError(CarVerifyError):
    """An analysis pass failed internally; the message names the pass."""

    def __init__(self, pass_name: str, cause: BaseException) -> None:
        self.pass_name = pass_name
        self.cause = cause
        super().__init__(f"pass {pass_name!r} failed: {type(cause).__name__}: {cause}")
