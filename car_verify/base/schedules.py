"""Which schedules of a proposal a static check explores.

``levels`` (the default) is what the executor and the runtime run: the levels in
order, any interleaving inside one level. ``any`` is every order the DAG allows.
The names live here, below everything that takes them (the trace-rule check, the
verify options, the command line), so that naming a choice loads no check.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["SCHEDULES", "Schedules"]

Schedules = Literal["levels", "any"]
#: The choices, in order: the default first.
SCHEDULES: tuple[Schedules, ...] = get_args(Schedules)
