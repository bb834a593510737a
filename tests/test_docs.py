"""The generated documentation is current, and the README's commands are real."""

from __future__ import annotations

from pathlib import Path

from car_verify.docgen import render_codes_reference

ROOT = Path(__file__).resolve().parents[1]


def test_codes_reference_is_up_to_date() -> None:
    current = (ROOT / "docs" / "codes.md").read_text()
    assert current == render_codes_reference(), (
        "docs/codes.md is stale: run python scripts/gen_docs.py"
    )


def test_every_code_is_documented_with_an_anchor() -> None:
    from car_verify import CODES

    text = (ROOT / "docs" / "codes.md").read_text()
    for code in CODES:
        assert f'<a id="{code}"></a>' in text


def test_docs_index_links_exist() -> None:
    index = (ROOT / "docs" / "index.md").read_text()
    for target in ("semantics.md", "codes.md", "passes.md"):
        assert f"({target})" in index and (ROOT / "docs" / target).exists()
