"""The two profiles' semantics, and the one place the profile is chosen (docs/semantics.md §9).

A :class:`~car_verify.semantics.base.Semantics` object carries everything on which
the profiles differ: how a proposal is ordered, what a value comparison means,
which effects an action applies, what an action sees inside its level, which
inputs are refused and each code's severity. Every feature asks the object; none
branches on the profile's name.

* ``strict`` (:mod:`car_verify.semantics.strict`): docs/semantics.md §1-8.
* ``car`` (:mod:`car_verify.semantics.car`, the default): the upstream runtime's
  reading, as ``car_runtime`` answers.

This module holds only the names and the resolution (standard library only: every
command resolves the profile at start-up); the semantics modules load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from .profiles import PROFILE_ENV, Profile, profile_of, resolve_profile

if TYPE_CHECKING:
    from ..base.config import ProfileName
    from .base import Semantics

__all__ = ["PROFILE_ENV", "Profile", "ProfileLike", "profile_of", "resolve_profile", "semantics_of"]


#: What a ``profile=`` parameter takes, everywhere in the package: a :class:`Profile`,
#: a profile's name (``"car"``, ``"strict"``), a profile's
#: :class:`~car_verify.semantics.base.Semantics` object (a third party's too), or
#: None for the default profile. :func:`profile_of` reads it as a Profile and
#: :func:`semantics_of` as a Semantics object.
ProfileLike: TypeAlias = "Profile | ProfileName | Semantics | None"


def semantics_of(value: object = None) -> Semantics:
    """The semantics object of the profile ``value`` names (a Semantics object is
    returned as it is)."""
    known = _BY_NAME.get(value) if value is None or isinstance(value, str) else None
    if known is not None:  # every verify asks: the common answers without imports
        return known
    from .base import Semantics

    if isinstance(value, Semantics):
        return value
    if profile_of(value) is Profile.CAR:
        from .car import CAR

        found: Semantics = CAR
    else:
        from .strict import STRICT

        found = STRICT
    if value is None or isinstance(value, str):
        _BY_NAME[value] = found
    return found


#: The semantics objects already asked for by name (and None, the default), so that a
#: repeated ``semantics_of("car")`` is one dictionary lookup.
_BY_NAME: dict[str | None, Semantics] = {}
