"""Reporters turn findings into text, JSON, SARIF, GitHub annotations and HTML.

One findings stack: every command's findings are :class:`~car_verify.findings.Issue`
records (with a :class:`~car_verify.findings.Location` when a file is known),
every code is in :mod:`car_verify.codes`, and each output format is written by
one module here, which ``verify``, ``lint``, ``policy check`` and ``run`` share.
Passes never format output.

- :mod:`.text`: one line per finding and a summary line;
- :mod:`.json`: the result objects as JSON;
- :mod:`.sarif`: SARIF 2.1.0, one rule per code;
- :mod:`.github`: GitHub Actions workflow commands;
- :mod:`.html`: the Jupyter views.
"""

from __future__ import annotations

from .json import render_json
from .sarif import render_sarif
from .text import issue_line, render_text, severity_counts

__all__ = ["issue_line", "render_json", "render_sarif", "render_text", "severity_counts"]
