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

from typing import TYPE_CHECKING

from .profiles import PROFILE_ENV, Profile, profile_of, resolve_profile

if TYPE_CHECKING:
    from .base import Semantics

__all__ = ["PROFILE_ENV", "Profile", "profile_of", "resolve_profile", "semantics_of"]


def semantics_of(value: object = None) -> Semantics:
    """The semantics object of the profile ``value`` names (a Semantics object is
    returned as it is)."""
    from .base import Semantics

    if isinstance(value, Semantics):
        return value
    if profile_of(value) is Profile.CAR:
        from .car import CAR

        return CAR
    from .strict import STRICT

    return STRICT
