"""The shell reader's public names, kept where callers first found them: the reader
itself is the package :mod:`car_verify.rules.shell`."""

from __future__ import annotations

from .shell import (
    FLAG_ALIASES,
    MAX_LINE,
    MAX_NESTING,
    MAX_STEPS,
    SHELLS,
    WRAPPERS,
    Command,
    Reading,
    ShellError,
    Undecided,
    commands,
    has_flags,
    matches_prefix,
    read_commands,
    read_plain,
)

__all__ = [
    "FLAG_ALIASES",
    "MAX_LINE",
    "MAX_NESTING",
    "MAX_STEPS",
    "SHELLS",
    "WRAPPERS",
    "Command",
    "Reading",
    "ShellError",
    "Undecided",
    "commands",
    "has_flags",
    "matches_prefix",
    "read_commands",
    "read_plain",
]
