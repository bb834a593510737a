"""The project's own files, found by walking up from the working directory: the
configuration (``.car/verify.toml`` or ``[tool.car-verify]`` in ``pyproject.toml``)
and the policies (``.car/policies``).

Standard library only, so that a command that merely looks for them (every command
asks for the configured profile) does not import the linter or the policy engine.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, TypeAlias, get_args

from .errors import InputError

__all__ = [
    "PROFILES",
    "ProfileName",
    "find_config",
    "find_policies",
    "read_settings",
    "setting_profile",
]

#: A profile's name (docs/semantics.md §9): what ``--profile``, ``$CAR_VERIFY_PROFILE``
#: and ``profile`` in the configuration take, and the code table's columns. A
#: ``profile=`` argument takes :data:`car_verify.semantics.ProfileLike`.
ProfileName: TypeAlias = Literal["car", "strict"]
#: The values of ``profile``.
PROFILES: tuple[ProfileName, ...] = get_args(ProfileName)


def _toml(file: Path) -> dict[str, Any]:
    """A TOML file parsed; an error names the file (never defaults instead)."""
    import tomllib

    try:
        return tomllib.loads(file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"not valid TOML: {err}", source=str(file)) from None
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read configuration: {err}", source=str(file)) from None


def find_config(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The nearest ``.car/verify.toml`` or ``pyproject.toml`` with ``[tool.car-verify]``."""
    here = Path(start or os.getcwd()).resolve()
    for directory in (here, *here.parents):
        dotcar = directory / ".car" / "verify.toml"
        if dotcar.is_file():
            return dotcar
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file() and "car-verify" in _toml(pyproject).get("tool", {}):
            return pyproject
    return None


def read_settings(file: Path) -> tuple[dict[str, Any], list[str | int]]:
    """car-verify's table of a configuration file, and its path inside the file
    (``["tool", "car-verify"]`` in a ``pyproject.toml``)."""
    doc = _toml(file)
    if file.name == "pyproject.toml":
        return doc.get("tool", {}).get("car-verify", {}), ["tool", "car-verify"]
    return doc, []


def setting_profile(doc: dict[str, Any], prefix: list[str | int], file: Path) -> ProfileName | None:
    """The ``profile`` a settings table names, checked; None when it names none."""
    profile = doc.get("profile")
    if profile is not None and profile not in PROFILES:
        raise InputError(
            f"expected one of {', '.join(PROFILES)}", [*prefix, "profile"], source=str(file)
        )
    return profile


def find_policies(start: str | os.PathLike[str] | None = None) -> tuple[Path | None, list[Path]]:
    """The nearest ``.car/policies`` at or above ``start`` (the working directory),
    stopping at the repository root (a directory holding ``.git``) or ``/``; and the
    places searched. A ``.car/policies`` that is there but is not a directory is an
    error: the policies could not be read, and must not pass as none."""
    here = Path(start or os.getcwd()).resolve()
    searched: list[Path] = []
    for directory in (here, *here.parents):
        candidate = directory / ".car" / "policies"
        searched.append(candidate)
        if candidate.is_dir():
            return candidate, searched
        if candidate.exists() or candidate.is_symlink():
            raise InputError(
                "is not a directory: the policies cannot be read (fails closed)",
                source=str(candidate),
            )
        if (directory / ".git").exists():
            break
    return None, searched


#: Where the runtime keeps tool labels for the information-flow check.
LABELS_FILE = "tool-labels.json"
#: car-verify's name for the flow policy beside them.
FLOW_POLICY_FILE = "flow-policy.json"
#: car-verify's name for the user's declared intent beside them.
INTENT_FILE = "intent.json"


def find_car_file(
    name: str, start: str | os.PathLike[str] | None = None, *, kind: str = "file"
) -> tuple[Path | None, list[Path]]:
    """The nearest ``.car/<name>`` file (or ``kind="directory"``) at or above
    ``start`` (the working directory), found as :func:`find_policies` finds
    ``.car/policies``; and the places searched. One that is there but is not of
    that kind is an error."""
    here = Path(start or os.getcwd()).resolve()
    searched: list[Path] = []
    for directory in (here, *here.parents):
        candidate = directory / ".car" / name
        searched.append(candidate)
        if candidate.is_file() if kind == "file" else candidate.is_dir():
            return candidate, searched
        if candidate.exists() or candidate.is_symlink():
            raise InputError(
                f"is not a {kind}: it cannot be read (fails closed)", source=str(candidate)
            )
        if (directory / ".git").exists():
            break
    return None, searched
