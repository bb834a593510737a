"""Regular expressions compiled on first use instead of when their module is
imported (the hook's start, issue 61: a hook call imports the shell reader, whose
modules hold patterns for sed scripts, git keys, ANSI-C quotes and arithmetic
that a usual call never reads; compiling them all cost each call about 2.3 ms).

``LazyPattern(pattern, flags)()`` is ``re.compile(pattern, flags)`` made once, on
the first call; :func:`compiled_plain` is the plain version beside it, and
``tests/test_hook_startup.py`` holds the two to the same pattern objects for every
lazy pattern of the package.
"""

from __future__ import annotations

import re

__all__ = ["LazyPattern", "compiled_plain"]


class LazyPattern:
    """A regular expression compiled the first time it is called for."""

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    def __call__(self) -> re.Pattern[str]:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self.pattern, self.flags)
        return compiled

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r}, {self.flags!r})"


def compiled_plain(lazy: LazyPattern) -> re.Pattern[str]:
    """The plain version of ``lazy()``: the pattern compiled at once."""
    return re.compile(lazy.pattern, lazy.flags)
