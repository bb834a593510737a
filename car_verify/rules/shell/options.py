"""Options as GNU getopt (and git's parse-options) take them apart: a long
option by any prefix of its name (``--compress`` is ``--compress-program``), and
a cluster of short options with a value attached (``-sE'code'``, ``-f/dev/stdin``).

The reader knows only some of a program's options, so it cannot tell whether a
prefix is unique among all of them; it reads any prefix of an option it lists as
that option (an ambiguous one, which the program refuses, is read as the one that
runs a command: more undecided, never less).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Short", "abbreviates", "long_option", "short_options"]


def abbreviates(given: str, option: str) -> bool:
    """Whether the long option ``given`` (its name, without ``=value``) may be
    ``option`` spelled in full or by a prefix of it (``--to-c`` for ``--to-command``)."""
    return given.startswith("--") and len(given) > 2 and option.startswith(given)


def long_option(given: str, table: Iterable[str]) -> str | None:
    """The option of ``table`` that ``given`` (a word, ``--name`` or ``--name=value``)
    may be: the exact name, else the first listed one it is a prefix of."""
    name = given.partition("=")[0]
    options = list(table)
    if name in options:
        return name
    return next((o for o in options if abbreviates(name, o)), None)


@dataclass(frozen=True, slots=True)
class Short:
    """A cluster of short options taken apart: each letter given with its value
    (None: it takes none, or it is the next word and that is computed or
    missing), how many words it used (1, or 2 when the last letter's value is the
    next word), and whether a letter not in the table stopped it."""

    letters: tuple[tuple[str, str | None], ...]
    used: int
    unknown: bool = False


def short_options(
    word: str,
    following: str | None,
    *,
    values: str,
    flags: str,
    optional: str = "",
) -> Short:
    """``word`` (``-abc``) as getopt reads it: a letter of ``values`` takes the rest
    of the cluster, or the next word (``following``) when it ends it; one of
    ``optional`` takes the rest of the cluster, if any; one of ``flags`` takes
    none. A letter in no table ends the reading (``unknown``): what follows it
    may be a value or more letters."""
    found: list[tuple[str, str | None]] = []
    for j in range(1, len(word)):
        letter = word[j]
        rest = word[j + 1 :]
        if letter in values:
            if rest:
                found.append((letter, rest))
                return Short(tuple(found), 1)
            found.append((letter, following))
            return Short(tuple(found), 2)
        if letter in optional:
            found.append((letter, rest))
            return Short(tuple(found), 1)
        if letter not in flags:
            return Short(tuple(found), 1, unknown=True)
        found.append((letter, None))
    return Short(tuple(found), 1)
