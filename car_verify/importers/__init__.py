"""Importers: agent trajectories from benchmark runs, lifted to traces and proposals.

Researchers hold runs, not plans: chat transcripts with tool calls, ATIF files,
benchmark result files. An importer reads one format into :class:`Trajectory`
objects (``car_verify.importers.base``), and a trajectory lifts to

- a **trace** (each call's tool, arguments and outcome, in order) for trace rules
  and policies, and
- a **proposal** (each call one ``tool_call`` action) for plan checks.

The lifting is the same for every format (:mod:`car_verify.importers.base`
documents it). Importers are registered like passes: the built-in ones below,
and third-party ones through the ``car_verify.importers`` entry-point group.
:func:`read` detects each record's format, lifts it, and reports a malformed
record with its file, line and record id instead of stopping.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence

from . import base
from .base import Bounds, Call, Importer, ImportProblem, Trajectory, records

__all__ = [
    "Bounds",
    "Call",
    "ImportProblem",
    "Importer",
    "Trajectory",
    "importers",
    "read",
    "read_file",
    "records",
]


def importers() -> list[Importer]:
    """The registered importers, in detection order: the built-in ones, then the
    ``car_verify.importers`` entry points."""
    from ..base.errors import InputError
    from .anthropic import AnthropicImporter
    from .atif import AtifImporter
    from .openai_chat import OpenAIChatImporter
    from .otel import OtelImporter
    from .proposals import ProposalImporter
    from .tau_bench import TauBenchImporter

    found: list[Importer] = [
        TauBenchImporter(), AtifImporter(), AnthropicImporter(), OpenAIChatImporter(),
        OtelImporter(), ProposalImporter(),
    ]  # fmt: skip
    try:
        from importlib.metadata import entry_points

        for point in entry_points(group="car_verify.importers"):
            found.append(point.load()())
    except Exception as err:  # a broken plug-in must not pass as no plug-in
        raise InputError(f"a car_verify.importers entry point failed to load: {err}") from None
    return found


def read_file(
    path: str | os.PathLike[str],
    formats: Sequence[Importer] | None = None,
    bounds: Bounds | None = None,
) -> Iterator[Trajectory | ImportProblem]:
    """Every trajectory of one file (the registered importers by default), and a
    problem for each record that fails; see :mod:`car_verify.importers.base`.
    ``bounds``: how much of a record and of a compressed file is read."""
    return base.read_file(path, importers() if formats is None else formats, bounds)


def read(
    paths: Iterable[str | os.PathLike[str]], formats: Sequence[Importer] | None = None
) -> Iterator[Trajectory | ImportProblem]:
    """:func:`read_file` over many files, in the order given."""
    return base.read(paths, importers() if formats is None else formats)
