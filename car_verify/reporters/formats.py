"""The output formats, by name: one registry from a ``--format`` name to the
reporter that writes it.

A command builds one :class:`Report` of what it found (its readable text, its
JSON document and, for a command about findings, the findings themselves) and
:func:`render` writes it in the format asked for, with the reporter registered
under that name in :data:`REPORTERS`. Every command's ``--format`` choices are
names of this registry, so no command chooses a layout itself.

- ``text``: the command's own readable text (:mod:`.text` lays out findings);
- ``json``: the command's JSON document (:mod:`.json` writes it);
- ``sarif``: the findings as a SARIF 2.1.0 log (:mod:`.sarif`);
- ``github``: the findings as GitHub Actions annotations (:mod:`.github`).

A report with no findings to list (``findings`` None: a command's settings, say)
is written as its text by the two formats that list findings.

Standard library only at import: every command declares its ``--format`` from
:data:`FORMATS` at start-up; a reporter's module loads when it writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..base.findings import Issue
    from ..base.values import JSONValue

__all__ = ["FORMATS", "REPORTERS", "Report", "Reporter", "render"]


class Report:
    """What one run of a command has to say, ready for every format.

    ``text()`` makes the readable form and ``json()`` the JSON text: only the one
    asked for is made. ``findings``: the located findings the SARIF log and the
    annotations list (None when the report has none to list); ``artifact``: the
    file a finding without a location is about; ``text_of``: a file's text, where
    the SARIF log places a finding's fix (None: not at hand)."""

    __slots__ = ("artifact", "findings", "json", "text", "text_of")

    def __init__(
        self,
        text: Callable[[], str],
        json: Callable[[], str],
        *,
        findings: Sequence[Issue] | None = None,
        artifact: str | None = None,
        text_of: Callable[[str], str | None] | None = None,
    ) -> None:
        self.text = text
        self.json = json
        self.findings = findings
        self.artifact = artifact
        self.text_of = text_of

    @classmethod
    def of(
        cls,
        doc: JSONValue,
        text: Callable[[], str],
        *,
        findings: Sequence[Issue] | None = None,
        artifact: str | None = None,
    ) -> Report:
        """A report whose JSON is the document ``doc``, written as every command
        writes one (:func:`car_verify.reporters.json.dump`)."""

        def json() -> str:
            from .json import dump

            return dump(doc)

        return cls(text, json, findings=findings, artifact=artifact)

    def counted(self, summary: str | None, *, color: bool = False) -> Report:
        """The report with its findings counted per code instead of listed
        (``--statistics``): in text as ruff prints them, then ``summary``; in JSON
        ``[{code, severity, count}]``. SARIF and the annotations list the findings."""
        if self.findings is None:
            raise ValueError("a report without findings has nothing to count")
        found = self.findings

        def text() -> str:
            from .text import statistics

            return statistics(found, summary, color=color)

        def json() -> str:
            from .json import statistics_json

            return statistics_json(found)

        return Report(text, json, findings=found, artifact=self.artifact, text_of=self.text_of)


class Reporter(Protocol):
    """Writes a :class:`Report` in one format (``docs_url``: where SARIF's rules link)."""

    def __call__(self, report: Report, *, docs_url: str | None) -> str: ...


def _text(report: Report, *, docs_url: str | None) -> str:
    return report.text()


def _json(report: Report, *, docs_url: str | None) -> str:
    return report.json()


def _sarif(report: Report, *, docs_url: str | None) -> str:
    if report.findings is None:
        return report.text()
    from .sarif import sarif

    return sarif(
        report.findings, artifact=report.artifact, docs_url=docs_url, text_of=report.text_of
    )


def _github(report: Report, *, docs_url: str | None) -> str:
    if report.findings is None:
        return report.text()
    from .github import render_github

    return render_github(report.findings, artifact=report.artifact)


#: Every output format, by the name ``--format`` takes.
REPORTERS: Mapping[str, Reporter] = MappingProxyType(
    {"text": _text, "json": _json, "sarif": _sarif, "github": _github}
)
#: The formats' names, in the order ``--help`` shows them.
FORMATS: tuple[str, ...] = tuple(REPORTERS)


def render(report: Report, format: str, *, docs_url: str | None = None) -> str:
    """``report`` in ``format``, by the reporter registered under that name."""
    reporter = REPORTERS.get(format)
    if reporter is None:
        raise ValueError(f"no reporter {format!r} (the formats: {', '.join(FORMATS)})")
    return reporter(report, docs_url=docs_url)
