"""Progress bars on stderr (tqdm), for work that can take more than a second.

Shown only on a terminal, and only once the work has taken a second (tqdm's
``delay``), so a quick run and a pipe stay clean; ``show=True`` shows the bar at
once, ``show=False`` never. tqdm is imported only when a bar may be drawn.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["Progress", "progress"]


class Progress:
    """A bar that may be there or not: ``update`` and ``close`` are always safe."""

    def __init__(self, bar: Any = None) -> None:
        self._bar = bar

    def update(self, done: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(done)

    def total(self, count: int) -> None:
        """The work's size, once known (the bar was started without it)."""
        if self._bar is not None:
            self._bar.total = count
            self._bar.refresh()

    def note(self, text: str) -> None:
        """What is being done now, beside the bar."""
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def progress(total: int | None, what: str, unit: str, *, show: bool | None = None) -> Progress:
    """A bar of ``total`` ``unit``s labelled ``what`` (see the module's docstring)."""
    if show is False or (show is None and not sys.stderr.isatty()):
        return Progress()
    from tqdm import tqdm

    bar = tqdm(
        total=total,
        desc=what,
        unit=f" {unit}",
        file=sys.stderr,
        delay=0 if show else 1.0,
        leave=False,
        dynamic_ncols=True,
    )
    return Progress(bar)
