"""Reporters turn findings into text, JSON, SARIF, GitHub annotations and HTML.

One findings stack: every command's findings are :class:`~car_verify.base.findings.Issue`
records (with a :class:`~car_verify.base.findings.Location` when a file is known),
every code is in :mod:`car_verify.base.codes`, and each output format is written by
one module here, which ``verify``, ``lint``, ``policy check`` and ``run`` share.
Passes never format output.

- :mod:`.formats`: the registry from a ``--format`` name to its reporter, and the
  :class:`~car_verify.reporters.formats.Report` a command hands it;
- :mod:`.text`: one line per finding and a summary line;
- :mod:`.json`: the result objects as JSON;
- :mod:`.sarif`: SARIF 2.1.0, one rule per code;
- :mod:`.github`: GitHub Actions workflow commands;
- :mod:`.html`: the Jupyter views.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "FORMATS",
    "Report",
    "issue_line",
    "render",
    "render_json",
    "render_sarif",
    "render_text",
    "severity_counts",
]

# Each writer loads when it is asked for: importing the package (as the Jupyter
# views do, with every `import car_verify`) costs nothing.
_HOME = {
    "FORMATS": "formats",
    "Report": "formats",
    "render": "formats",
    "issue_line": "text",
    "render_text": "text",
    "severity_counts": "text",
    "render_json": "json",
    "render_sarif": "sarif",
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'car_verify.reporters' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
