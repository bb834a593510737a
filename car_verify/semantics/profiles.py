"""The profiles' names and the one place a run's profile is resolved (docs/semantics.md §9).

Standard library only: every command resolves its profile at start-up.
"""

from __future__ import annotations

import os
from enum import StrEnum
from typing import Final

from ..base.errors import UsageError

__all__ = [
    "DEFAULT_PROFILE",
    "PROFILE_ENV",
    "Profile",
    "profile_of",
    "resolve_profile",
]

#: The environment variable that names the profile when no flag does.
PROFILE_ENV = "CAR_VERIFY_PROFILE"


class Profile(StrEnum):
    """Whose answers car-verify gives: CAR's (the default) or sections 1-8."""

    CAR = "car"
    STRICT = "strict"


#: The profile when none is named (docs/semantics.md §9): the runtime's answers. Every
#: default profile in the package is this one; an internal function takes its
#: semantics from its caller.
DEFAULT_PROFILE: Final = Profile.CAR


def profile_of(value: object) -> Profile:
    """The profile ``value`` names (``None``: :data:`DEFAULT_PROFILE`), without looking
    at the environment or the configuration (the API's reading of ``profile=``)."""
    if value is None:
        return DEFAULT_PROFILE
    named = getattr(value, "profile", value)  # a Semantics object names its profile
    try:
        return Profile(str(named))
    except ValueError:
        from ..base.values import shown

        said = shown(value) if not hasattr(value, "profile") else repr(named)
        raise UsageError(f"unknown profile {said} (choose car or strict)") from None


def resolve_profile(
    value: object = None, *, start: str | os.PathLike[str] | None = None
) -> tuple[Profile, str]:
    """The profile a run uses and where it came from, resolved once: ``value`` (a flag
    or an argument), else ``$CAR_VERIFY_PROFILE``, else the ``profile`` of the nearest
    configuration at or above ``start`` (the working directory), else
    :data:`DEFAULT_PROFILE`."""
    if value is not None and value != "":
        return profile_of(value), "--profile"
    env = os.environ.get(PROFILE_ENV)
    if env:
        try:
            return Profile(env), f"${PROFILE_ENV}"
        except ValueError:
            raise UsageError(f"{PROFILE_ENV}={env!r}: expected car or strict") from None
    from ..base.config import find_config, read_settings, setting_profile

    path = find_config(start)
    if path is not None:
        doc, prefix = read_settings(path)
        named = setting_profile(doc, prefix, path)
        if named is not None:
            return Profile(named), str(path)
    return DEFAULT_PROFILE, "default"
