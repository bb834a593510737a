"""Which files ``lint`` checks: the include and exclude patterns, and ``.gitignore``.

As ruff does it. A folder is walked recursively; a file in it is linted when its
name matches ``include`` (proposal documents: ``*.json``, ``*.jsonl``, ``*.yaml``,
``*.yml``), nothing in ``exclude`` or ``extend-exclude`` matches it or a folder
above it, and git would not ignore it. ``exclude`` defaults to the files that are
JSON or YAML but never a plan (hidden files and folders, so ``.github/`` and
``.pre-commit-config.yaml``; package manifests and lock files; JSON Schemas) and
the folders of tools and builds; setting ``exclude`` replaces that list, setting
``extend-exclude`` adds to it. The tool registries and the state file the
configuration names are inputs, not proposals, and are never linted as such.

A file named on the command line is linted whatever the patterns say, unless
``force-exclude`` is on: pre-commit names every staged file, and its hook runs
with ``--force-exclude`` so that the patterns decide there too.

A pattern without ``/`` is matched against the name of the file and of every
folder above it (``node_modules`` excludes any folder of that name); a pattern
with ``/`` against the path relative to the project root (the folder of the
configuration file, else the working directory). ``*`` matches across ``/``.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.errors import UsageError

__all__ = ["DEFAULT_EXCLUDE", "DEFAULT_INCLUDE", "Discovery", "Selection", "discover"]

#: The names of proposal documents.
DEFAULT_INCLUDE: tuple[str, ...] = ("*.json", "*.jsonl", "*.yaml", "*.yml")

#: JSON and YAML that is never a plan, and folders of tools and builds.
DEFAULT_EXCLUDE: tuple[str, ...] = (
    # hidden files and folders: .git, .github/workflows, .pre-commit-config.yaml, .car
    ".*",
    # folders of environments, dependencies and builds
    "node_modules",
    "venv",
    "__pycache__",
    "site-packages",
    "build",
    "dist",
    # manifests, lock files and tool configuration
    "tool-labels.json",  # the runtime's information-flow labels (car-verify flow)
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "pnpm-lock.yaml",
    "composer.json",
    "tsconfig.json",
    "tsconfig.*.json",
    "jsconfig.json",
    "deno.json",
    "renovate.json",
    "lerna.json",
    "turbo.json",
    "vercel.json",
    "app.json",
    "docker-compose.yml",
    "docker-compose.yaml",
    "compose.yml",
    "compose.yaml",
    "mkdocs.yml",
    "mkdocs.yaml",
    "environment.yml",
    "environment.yaml",
    "codecov.yml",
    "action.yml",
    "action.yaml",
    "pubspec.yaml",
    "Chart.yaml",
    "values.yaml",
    "*.schema.json",
    "*.ipynb",
)


@dataclass(frozen=True, slots=True)
class Selection:
    """The patterns that choose the files (resolved against ``root``)."""

    root: Path = field(default_factory=Path.cwd)
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    #: Files that are inputs (tool registries, the state): never linted.
    inputs: tuple[Path, ...] = ()
    respect_gitignore: bool = True
    force_exclude: bool = False


@dataclass(slots=True)
class Discovery:
    """The files to lint, and why the others were left out (said, never silent)."""

    files: list[Path] = field(default_factory=list)
    #: Named on the command line and left out by ``force-exclude``.
    excluded: list[Path] = field(default_factory=list)


def discover(paths: Sequence[str | os.PathLike[str]], selection: Selection) -> Discovery:
    """The files under ``paths`` that ``selection`` lints, in a stable order."""
    found = Discovery()
    ignores = _GitIgnores(selection.respect_gitignore)
    inputs = {p.resolve() for p in selection.inputs}
    for given in paths:
        path = Path(given)
        if path.is_dir():
            for directory, subdirs, files in os.walk(path):
                here = Path(directory)
                subdirs[:] = sorted(
                    d
                    for d in subdirs
                    if not _excluded(here / d, selection) and not ignores.ignored(here / d, True)
                )
                for name in sorted(files):
                    candidate = here / name
                    if (
                        _included(candidate, selection)
                        and not _excluded(candidate, selection)
                        and candidate.resolve() not in inputs
                        and not ignores.ignored(candidate, False)
                    ):
                        found.files.append(candidate)
        elif path.exists():
            if selection.force_exclude and (
                not _included(path, selection)
                or _excluded(path, selection, with_parents=True)
                or path.resolve() in inputs
                or ignores.ignored(path, False)
            ):
                found.excluded.append(path)
            else:
                found.files.append(path)
        else:
            raise UsageError(f"no such file or directory: {given}")
    found.files = list(dict.fromkeys(found.files))
    return found


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _matches(name: str, relative: str, patterns: Iterable[str]) -> bool:
    return any(
        fnmatch.fnmatchcase(relative, p) if "/" in p else fnmatch.fnmatchcase(name, p)
        for p in patterns
    )


def _included(path: Path, selection: Selection) -> bool:
    return _matches(path.name, _relative(path, selection.root), selection.include)


def _excluded(path: Path, selection: Selection, *, with_parents: bool = False) -> bool:
    """Does an exclude pattern match ``path`` (and, for a named file, a folder above it
    inside the root)? A walk prunes the folders on its way, so checks only the path."""
    patterns = (*selection.exclude, *selection.extend_exclude)
    if not patterns:
        return False
    relative = _relative(path, selection.root)
    if _matches(path.name, relative, patterns):
        return True
    if with_parents and not relative.startswith(("/", "../")):
        parts = relative.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            if _matches(parts[depth - 1], "/".join(parts[:depth]), patterns):
                return True
    return False


class _GitIgnores:
    """What git would ignore: the ``.gitignore`` files from the repository root down
    to the file, and ``.git/info/exclude``; the deepest file that decides wins."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._specs: dict[Path, Any] = {}
        self._roots: dict[Path, Path | None] = {}

    def ignored(self, path: Path, is_dir: bool) -> bool:
        if not self.enabled:
            return False
        absolute = path.resolve()
        root = self._repository(absolute.parent)
        if root is None:
            return False
        verdict = False
        chain = [root, *reversed([p for p in absolute.parents if root in p.parents])]
        for directory in chain:
            spec = self._spec(directory, root)
            if spec is None:
                continue
            relative = absolute.relative_to(directory).as_posix() + ("/" if is_dir else "")
            checked = spec.check_file(relative)
            if checked.include is not None:
                verdict = bool(checked.include)
        return verdict

    def _repository(self, directory: Path) -> Path | None:
        if directory not in self._roots:
            for candidate in (directory, *directory.parents):
                if (candidate / ".git").exists():
                    self._roots[directory] = candidate
                    break
            else:
                self._roots[directory] = None
        return self._roots[directory]

    def _spec(self, directory: Path, root: Path) -> Any:
        if directory not in self._specs:
            lines: list[str] = []
            if directory == root:
                lines += _read_lines(root / ".git" / "info" / "exclude")
            lines += _read_lines(directory / ".gitignore")
            spec = None
            if lines:
                import pathspec

                spec = pathspec.GitIgnoreSpec.from_lines(lines)
            self._specs[directory] = spec
        return self._specs[directory]


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
