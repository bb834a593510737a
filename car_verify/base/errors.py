"""The exception types: malformed input, bad usage, and a pass that broke."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, ParamSpec, TypeVar, cast

__all__ = [
    "TOO_DEEP",
    "CarVerifyError",
    "InputError",
    "OutputError",
    "PassError",
    "UsageError",
    "deep_values_are_input_errors",
    "format_path",
    "is_too_deep",
    "json_pointer",
    "pointer_token",
    "reject_unknown_fields",
    "too_deep",
]

_P = ParamSpec("_P")
_R = TypeVar("_R")


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


def reject_unknown_fields(
    doc: Iterable[str], known: Sequence[str], where: Sequence[str | int], expected: str = ""
) -> None:
    """Refuse the first key of a strictly read JSON object (``doc``, at ``where``) that
    is not in ``known``: ``unknown field 'x' (expected one of a, b)``, located at the
    key. ``expected`` words the known fields otherwise (``a, b or c``)."""
    for name in doc:
        if name not in known:
            listed = expected or f"one of {', '.join(known)}"
            raise InputError(f"unknown field {name!r} (expected {listed})", [*where, name])


class OutputError(CarVerifyError):
    """A file car-verify writes could not be written whole (a full disk, say): what
    was asked was not done, and nothing half written was left behind."""

    def __init__(self, problem: str, *, source: str | None = None) -> None:
        self.problem = problem
        self.source = source
        super().__init__(f"{source}: {problem}" if source else problem)


class EngineError(CarVerifyError):
    """A distributed engine (Ray, Dask) the caller chose did not start: nothing was
    done with it. The message names the engine, its own words and what to try."""


class UsageError(CarVerifyError):
    """The caller asked for something that does not exist (an unknown pass, a bad option)."""


class TooLarge(CarVerifyError):
    """An input past a bound of the work asked for it (laying out a picture):
    refused before that work starts, naming the bound (``bound``, its ``value``)
    and how much the input has (``count``). The command line exits 2."""

    def __init__(self, message: str, *, bound: str, value: int, count: int) -> None:
        super().__init__(message)
        self.bound = bound
        self.value = value
        self.count = count


class PassError(CarVerifyError):
    """An analysis pass failed internally; the message names the pass."""

    def __init__(self, pass_name: str, cause: BaseException) -> None:
        self.pass_name = pass_name
        self.cause = cause
        super().__init__(f"pass {pass_name!r} failed: {type(cause).__name__}: {cause}")


_KEEP = "(keep values within a few hundred levels)"

#: The problem of an :class:`InputError` for a value nested deeper than the analyses
#: can follow: each level of nesting takes a level of Python's recursion limit.
TOO_DEEP: Final = f"a value is nested too deeply to analyse {_KEEP}"


def is_too_deep(error: InputError) -> bool:
    """Whether ``error`` says a value is nested too deeply to analyse (:data:`TOO_DEEP`)."""
    return error.problem.startswith(TOO_DEEP)


def too_deep(path: Sequence[str | int], depth: int, source: str | None = None) -> InputError:
    """:data:`TOO_DEEP`, located: ``path`` leads to the deepest value (``depth`` levels
    down); the error names it up to its last object member."""
    keys = [j for j, part in enumerate(path[:12]) if isinstance(part, str)]
    return InputError(
        f"a value here is nested {depth} levels deep, too deeply to analyse {_KEEP}",
        path[: keys[-1] + 1] if keys else (),
        source=source,
    )


def deep_values_are_input_errors(entry: Callable[_P, _R]) -> Callable[_P, _R]:
    """Mark a public entry point (a function or a coroutine function): a value nested
    too deeply for the analyses raises :class:`InputError` (:data:`TOO_DEEP`), never
    ``RecursionError``.

    ``json.loads`` refuses only what is deeper than the recursion limit when it
    runs; an analysis that recurses through a value from deeper in the stack can
    still run out of it. This is the one place that says what that means.
    """
    import inspect  # when an entry point is marked: not at start-up (--version)

    if inspect.iscoroutinefunction(entry):

        @functools.wraps(entry)
        async def guarded_run(*args: Any, **kwargs: Any) -> Any:
            try:
                return await entry(*args, **kwargs)
            except RecursionError:
                raise InputError(TOO_DEEP) from None

        return cast("Callable[_P, _R]", guarded_run)

    @functools.wraps(entry)
    def guarded(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return entry(*args, **kwargs)
        except RecursionError:
            raise InputError(TOO_DEEP) from None

    return guarded
