"""What a rule asks of one command: its flags in any spelling, its words' prefix."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from .model import Command
from .options import abbreviates

__all__ = ["FLAG_ALIASES", "VALUE_ALIASES", "has_flags", "matches_prefix"]

#: Equivalent spellings of a flag, per program (``git push``: per subcommand). A
#: rule's flag matches a command that gives any spelling of its class; a long one
#: may also be abbreviated, as GNU getopt and git accept (``--rec`` is
#: ``--recursive``). ``+REFSPEC`` stands for a ``git push`` refspec starting with
#: ``+`` (``git push origin +main``), which forces that ref. ``--force-with-lease``
#: and ``--mirror`` (which force-updates refs) count as ``--force``: a rule denying a
#: force push denies those too. ``--force-if-includes`` alone forces nothing. ``chmod
#: -r`` is a mode (remove read permission), not ``-R``; ``mv`` has no recursive flag.
FLAG_ALIASES: dict[str, tuple[frozenset[str], ...]] = {
    "rm": (frozenset({"-r", "-R", "--recursive"}), frozenset({"-f", "--force"})),
    "cp": (frozenset({"-r", "-R", "--recursive"}), frozenset({"-f", "--force"})),
    "mv": (frozenset({"-f", "--force"}),),
    "chmod": (frozenset({"-R", "--recursive"}),),
    "chown": (frozenset({"-R", "--recursive"}),),
    "chgrp": (frozenset({"-R", "--recursive"}),),
    "git push": (frozenset({"-f", "--force", "--force-with-lease", "--mirror", "+REFSPEC"}),),
}

#: Options whose value makes them a spelling of a flag, per program: ``rm
#: --interactive=never`` (``no``, ``none``, or any prefix of one of them, as GNU
#: argmatch takes it; and the option's name by any prefix) is ``-f``.
VALUE_ALIASES: dict[str, tuple[tuple[str, frozenset[str], str], ...]] = {
    "rm": (("--interactive", frozenset({"never", "no", "none"}), "-f"),),
}


def has_flags(command: Command, flags: Iterable[str]) -> bool:
    """Whether ``command`` gives every one of ``flags`` in any spelling
    :data:`FLAG_ALIASES` holds for its program."""
    given = set(command.flags)
    key = command.program
    if command.program == "git":
        sub, rest = _git_subcommand(command.words[1:])
        if sub is not None:
            key = f"git {sub}"
        if sub == "push" and any(w.startswith("+") and len(w) > 1 for w in rest):
            given.add("+REFSPEC")
    given |= _valued_flags(command)
    classes = FLAG_ALIASES.get(key, ())
    for wanted in flags:
        spellings = next((c for c in classes if wanted in c), frozenset({wanted}))
        if not any(_spells(g, spellings, abbreviated=bool(classes)) for g in given):
            return False
    return True


def _valued_flags(command: Command) -> set[str]:
    """The flags ``command``'s ``--name=value`` words spell (:data:`VALUE_ALIASES`)."""
    found: set[str] = set()
    for word in command.words[1:]:
        if word == "--":
            break
        name, eq, value = word.partition("=")
        for option, values, flag in VALUE_ALIASES.get(command.program, ()):
            if (
                eq
                and value
                and abbreviates(name, option)
                and any(v.startswith(value) for v in values)
            ):
                found.add(flag)
    return found


def _spells(given: str, spellings: frozenset[str], *, abbreviated: bool) -> bool:
    if given in spellings:
        return True
    return (
        abbreviated
        and given.startswith("--")
        and len(given) > 2
        and any(s.startswith(given) for s in spellings if s.startswith("--"))
    )


_GIT_VALUE_OPTIONS = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"}
)


def _git_subcommand(args: Sequence[str]) -> tuple[str | None, Sequence[str]]:
    """git's subcommand (its global options skipped) and the words after it."""
    i = 0
    while i < len(args):
        word = args[i]
        if word in _GIT_VALUE_OPTIONS:
            i += 2
        elif word.startswith("-"):
            i += 1
        else:
            return word, args[i + 1 :]
    return None, ()


def matches_prefix(command: Command, prefix: Sequence[str]) -> bool:
    """Whether ``command``'s words start with ``prefix``: the first word names its
    program (a base name, ``npm``, or the word as given, ``./run.sh``), the rest are
    compared exactly, word for word (``["npm", "run", "test"]`` matches ``npm run
    test --watch``, not ``npm run testing`` nor ``npm --prefix x run test``).

    Only a command whose every word is known matches (``argv`` is not None): ``npm
    run "$T"`` matches no prefix, since a word the shell computes may be anything,
    a flag included. An empty prefix matches nothing. This
    is the test of an allow list: a line is allowed when its reading is
    :attr:`~car_verify.rules.shell.model.Reading.understood` and every command in
    it matches one allowed prefix."""
    argv = command.argv
    if not prefix or argv is None or len(argv) < len(prefix):
        return False
    head = prefix[0]
    program_matches = head == argv[0] or ("/" not in head and head == os.path.basename(argv[0]))
    return program_matches and all(a == p for a, p in zip(argv[1:], prefix[1:], strict=False))
