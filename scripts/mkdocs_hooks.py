"""mkdocs hooks for the documentation site: a link out of docs/ (``../README.md``,
``../notebooks/...``) points at the repository's file, once that file is known to
exist; a link to a file that does not exist fails the build, as a broken link
inside docs/ does under ``--strict``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(r"\]\(\.\./([^)#\s]+)(#[^)\s]*)?\)")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    repo = str(config.get("repo_url") or "").rstrip("/")

    def point(match: re.Match[str]) -> str:
        target, anchor = match.group(1), match.group(2) or ""
        if not (ROOT / target).exists():
            raise PluginError(f"{page.file.src_path}: the link ../{target} names no file")
        kind = "tree" if (ROOT / target).is_dir() else "blob"
        return f"]({repo}/{kind}/main/{target}{anchor})"

    return OUTSIDE.sub(point, markdown)
