"""Which known name a written one most likely stands for: the same but for case and
separators (``getWeather``, ``get-weather``, ``GET_WEATHER``), else within a typo or
two. The tools pass asks it of an undeclared parameter; the repairs of every name
(a tool, a parameter, an action id, an operator, a field) ask it too."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Match", "closest", "distance", "squash", "words"]


def words(name: str) -> str:
    """``getWeatherInfo``, ``get-weather_info``, ``Get Weather Info`` -> ``get_weather_info``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return re.sub(r"[^0-9a-z]+", "_", spaced.lower()).strip("_")


def squash(name: str) -> str:
    """Case and separators left out: two spellings of one name are equal here."""
    return re.sub(r"[^0-9a-z]", "", name.casefold())


def distance(a: str, b: str) -> int:
    """The optimal string alignment distance (a swap of two neighbours is one edit)."""
    if a == b:
        return 0
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            row[j] = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


@dataclass(frozen=True, slots=True)
class Match:
    """A known name a written one most likely stands for: ``same`` when only case
    and separators differ; ``distance`` the typos between them otherwise."""

    name: str
    same: bool
    distance: int


#: Names longer than this are not compared letter by letter (the distance is
#: quadratic): only their squashed spellings are.
LONGEST = 200


def closest(written: str, known: Iterable[str]) -> Match | None:
    """The one known name ``written`` most likely stands for: the same but for case
    and separators, else within a typo or two (one per five letters, at least one),
    else a close match by similarity; None when none is close or two are equally so."""
    names = [k for k in dict.fromkeys(known) if k != written]
    if not names:
        return None
    squashed = squash(written)
    same = [k for k in names if squash(k) == squashed]
    if len(same) == 1:
        return Match(same[0], True, 0)
    if same or len(written) > LONGEST:
        return None
    near = [k for k in names if len(k) <= LONGEST]
    scored = sorted((distance(squashed, squash(k)), k) for k in near)
    if not scored:
        return None
    best, name = scored[0]
    if best <= max(1, len(squashed) // 5) and (len(scored) == 1 or scored[1][0] > best):
        return Match(name, False, best)
    lowered = [k.lower() for k in near]
    similar = difflib.get_close_matches(written.lower(), lowered, n=2, cutoff=0.8)
    if len(similar) == 1:
        chosen = near[lowered.index(similar[0])]
        return Match(chosen, False, distance(squashed, squash(chosen)))
    return None
