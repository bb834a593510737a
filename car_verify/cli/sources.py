"""The command line's inputs: proposal files (JSON or YAML), state, tools and other
JSON files, each of which may be ``-`` for stdin.

Stdin can be read once; naming it for two inputs (``equivalent - -``, ``verify -
--state -``) is a usage error that says which input had it first. A proposal read
from a file keeps the positions of its actions, so that every command reports a
finding at ``path:line:col``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import InputError, UsageError

if TYPE_CHECKING:
    from ..base.findings import Issue
    from ..base.values import JSONValue
    from ..ir.model import ActionProposal
    from ..rules.tools import ToolRegistry

__all__ = [
    "STDIN",
    "Source",
    "json_input",
    "proposal_input",
    "reset_stdin",
    "tools_input",
]

#: The name that means stdin.
STDIN = "-"
#: How stdin is named in messages.
STDIN_LABEL = "<stdin>"
YAML_SUFFIXES = (".yaml", ".yml")

_claimed: list[str] = []


def reset_stdin() -> None:
    """Forget who read stdin (each command line starts afresh)."""
    _claimed.clear()


def _stdin(what: str) -> bytes:
    if _claimed:
        raise UsageError(
            f"stdin (-) is named twice: the {_claimed[0]} is read from it, and it can be "
            f"read only once; give the {what} as a file"
        )
    _claimed.append(what)
    return sys.stdin.buffer.read()


@dataclass(slots=True)
class Source:
    """A proposal and where it came from: the file (None for stdin), its text, and
    the line and column of each action (``/actions/3``) when it is a file."""

    proposal: ActionProposal
    path: str | None
    positions: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.path if self.path is not None else STDIN_LABEL

    def locate(self, issues: list[Issue]) -> list[Issue]:
        """``issues`` at their actions' places in the file (the document's start for
        a finding about the whole proposal); unchanged for stdin."""
        if self.path is None or not self.positions:
            return list(issues)
        from ..base.locate import at_actions

        return at_actions(issues, self.path, self.positions)


def proposal_input(name: str, *, what: str = "proposal") -> Source:
    """The proposal in file ``name`` (JSON, or YAML by its suffix; ``-``: stdin)."""
    from ..ir.model import load

    if name == STDIN:
        try:
            return Source(load(_stdin(what)), None)
        except InputError as err:
            raise err.with_source(STDIN_LABEL) from None
    if name.lower().endswith(YAML_SUFFIXES):
        return _yaml_proposal(name)
    proposal = load(Path(name))
    return Source(proposal, name, _json_positions(name))


def _json_positions(name: str) -> dict[str, tuple[int, int]]:
    from ..base.locate import json_positions
    from ..ir.model import read_text_file

    try:
        return json_positions(read_text_file(name))
    except (OSError, InputError, ValueError):
        return {}


def _yaml_proposal(name: str) -> Source:
    """One YAML document modelled as a proposal; an error names its line."""
    from ..ir.model import load_yaml

    proposal, positions = load_yaml(name)
    return Source(proposal, name, positions)


def json_input(name: str, kind: type, what: str) -> JSONValue:
    """The JSON value in file ``name`` (``-``: stdin), which must be a ``kind``."""
    from ..ir.model import read_json

    if name == STDIN:
        data = read_json(_stdin(f"{what} file"), name=STDIN_LABEL)
        label = STDIN_LABEL
    else:
        data = read_json(Path(name), name=name)
        label = name
    if not isinstance(data, kind):
        shape = "a JSON object" if kind is dict else "a JSON array"
        raise InputError(f"the {what} file must hold {shape}", source=label)
    return data


def tools_input(name: str) -> ToolRegistry:
    """The tool registry in file ``name`` (``-``: stdin)."""
    from ..rules.tools import ToolRegistry

    if name == STDIN:
        from ..ir.model import read_json

        data = read_json(_stdin("tools file"), name=STDIN_LABEL)
        try:
            return ToolRegistry.coerce(data)
        except InputError as err:
            raise (err if err.source else err.with_source(STDIN_LABEL)) from None
    try:
        return ToolRegistry.coerce(Path(name))
    except InputError as err:
        raise (err if err.source else err.with_source(name)) from None
