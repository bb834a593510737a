"""What the shell kinds (``deny_command``, ``allow_command``) share: the line a
parameter holds, and its reading (:mod:`car_verify.rules.shell`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._base import Answer, Key, Needs, denied, undecided

if TYPE_CHECKING:
    from ..policy_model import Model, Piece
    from ..shell import Reading

#: The keys both shell kinds have: which tool and parameter hold the line.
TOOL_KEYS = (
    Key("tool", (str,), "the tool whose calls it judges, compared without case",
        sample='"Bash"', default='"Bash"'),
    Key("param", (str,), "the parameter that holds the command line", sample='"command"',
        default='"command"'),
)  # fmt: skip


def reading(value: Any, where: str) -> tuple[str, Reading] | Answer:
    """The line ``value`` holds and the commands it runs (an argv, a list of strings, is read
    with its words as they are), or the answer when it cannot be read: a value that
    is no line is undecided; a line the parser cannot read is denied (fails closed).
    ``where``: ``parameter 'command' of 'Bash'``, for the reason."""
    from ..shell import ShellError, read_commands

    if isinstance(value, list) and value and all(isinstance(w, str) for w in value):
        import shlex

        value = shlex.join(value)  # an argv: the words as they are
    elif not isinstance(value, str):
        return undecided(
            f"{where} is no command line (a {type(value).__name__}): what it runs cannot be "
            "decided; send the line as a string"
        )
    try:
        return value, read_commands(value)
    except ShellError as err:
        return denied(
            f"{where} cannot be read as a shell command line ({err}): denied (fails closed); "
            "send a line bash can parse"
        )


def text_needs(param: str) -> Needs:
    """What a shell kind reads of a call: the text of its line's parameter."""
    return Needs(params={param: []}, text=frozenset({param}))


def text_pieces(param: str, model: Model, label: str, rule: object) -> list[Piece]:
    """A shell kind's pieces for ``policy diff``: a shell's reading of the text is not
    modelled, so any verdict on a call whose line parameter is present (the diff
    says unknown where it matters)."""
    from ..policy_model import Piece

    slot = model.params[param]
    return [Piece(slot, model.z3.And(slot.present, model.free_choice(label, rule)))]
