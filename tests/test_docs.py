"""The generated documentation is current, and the README's commands are real."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from car_verify.cli._reference import render_cli_reference
from car_verify.cli.docgen import render_codes_reference

pytestmark = pytest.mark.usefixtures("strict_cli")

ROOT = Path(__file__).resolve().parents[1]


def test_codes_reference_is_up_to_date() -> None:
    current = (ROOT / "docs" / "codes.md").read_text()
    assert current == render_codes_reference(), (
        "docs/codes.md is stale: run python scripts/gen_docs.py"
    )


def test_the_cli_reference_is_every_commands_own_flags() -> None:
    """Issue 38: docs/cli.md is the one table of every command's flags, generated
    from the declarations; the shared arguments mean the same in every command."""
    assert (ROOT / "docs" / "cli.md").read_text() == render_cli_reference(), (
        "docs/cli.md is stale: run python scripts/gen_docs.py"
    )
    import argparse

    from car_verify.cli import _parser

    def commands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
        found = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found += [(f"{name} {n}", s) for n, s in commands(sub)] or [(name, sub)]
        return found

    for name, parser in commands(_parser()):
        options = {o: a for a in parser._actions for o in a.option_strings}
        assert "--profile" in options, name
        if "--format" in options:
            assert options["--format"] is options.get("--output-format"), name
        if "--tools" in options:
            assert options["--tools"].metavar == "TOOLS.json", name
        if "--state" in options:
            assert options["--state"].metavar == "STATE.json", name
        if "--ledger" in options:
            assert options["--ledger"] is options.get("--approvals"), name
        for a in parser._actions:
            if a.dest in ("proposal", "proposals") and not a.option_strings:
                assert a.metavar == "PROPOSAL", name


def test_every_code_is_documented_with_an_anchor() -> None:
    """SARIF rules link to docs/codes.md#<code>, lint's own codes included."""
    from car_verify.base.codes import CODES

    text = (ROOT / "docs" / "codes.md").read_text()
    for code in CODES:
        assert f'<a id="{code}"></a>' in text, code


def test_docs_index_links_exist() -> None:
    index = (ROOT / "docs" / "index.md").read_text()
    for target in (
        "semantics.md",
        "codes.md",
        "passes.md",
        "deciding.md",
        "policies.md",
        "executor.md",
    ):
        assert f"({target})" in index and (ROOT / "docs" / target).exists()


def test_readme_python_example_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import re

    monkeypatch.chdir(ROOT)
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "equivalent for every initial state" in out
    assert "[['extract_orders', 'extract_refunds'], ['transform'], ['publish']]" in out


def test_every_doc_is_linked_from_the_index_and_its_images_exist() -> None:
    import re

    index = (ROOT / "docs" / "index.md").read_text()
    for page in (ROOT / "docs").glob("*.md"):
        if page.name != "index.md":
            assert f"({page.name})" in index, f"docs/index.md does not link {page.name}"
    guide = (ROOT / "docs" / "guide.md").read_text()
    images = re.findall(r"\]\((images/[^)]+)\)", guide)
    assert images
    for image in images:
        svg = (ROOT / "docs" / image).read_text()
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg
        # the guide shows the strict profile: its pictures are drawn under it
        assert "(profile strict)" in svg and "(profile car)" not in svg, image
    # and each command of the guide that the profile changes names it
    for command in re.findall(r"^car-verify (?:verify|simulate) .*$", guide, re.M):
        assert "--profile strict" in command, command


def _console_examples(text: str) -> list[tuple[str, str]]:
    """Each ``$ car-verify ...`` line of a text block with the output printed under
    it (to the next ``$`` line, a blank line or the block's end)."""
    found: list[tuple[str, str]] = []
    for block in re.findall(r"```(?:text|console)\n(.*?)```", text, re.S):
        lines = block.splitlines()
        for n, line in enumerate(lines):
            if not line.startswith("$ car-verify "):
                continue
            out = []
            for follow in lines[n + 1 :]:
                if follow.startswith("$ ") or not follow.strip():
                    break
                out.append(follow)
            found.append((line[2:], "\n".join(out)))
    return found


@pytest.mark.parametrize(
    ("command", "shown"),
    _console_examples((ROOT / "README.md").read_text(encoding="utf-8")),
    ids=lambda value: value if value.startswith("car-verify") else "",
)
def test_every_command_the_readme_shows_prints_what_it_shows(command: str, shown: str) -> None:
    """The README's outputs are the outputs of its commands, under the profile
    they run with (issue 38, item 12)."""
    import shlex
    import subprocess
    import sys

    argv = shlex.split(command)[1:]
    code = "import sys; from car_verify.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {k: v for k, v in os.environ.items() if k != "CAR_VERIFY_PROFILE"}  # the default
    done = subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert done.stdout.rstrip("\n") == shown


def test_every_page_is_in_the_sites_navigation() -> None:
    """mkdocs.yml lists every page of docs/ (CI builds the site with --strict)."""
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())

    def pages(node: object) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, dict):
            return [p for v in node.values() for p in pages(v)]
        if isinstance(node, list):
            return [p for v in node for p in pages(v)]
        return []

    listed = set(pages(config["nav"]))
    assert listed == {p.name for p in (ROOT / "docs").glob("*.md")}


def test_every_anchor_a_page_links_to_exists() -> None:
    """docs/performance.md linked `semantics.md#reads-writes-ordering-semantics-3`,
    an anchor no heading has, and `mkdocs build --strict` let it through: the site
    now validates anchors (a broken one is a warning, so --strict fails), and this
    test checks them without building it."""
    import yaml

    slugify = pytest.importorskip("markdown.extensions.toc").slugify  # the [docs] extra

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["validation"]["links"]["anchors"] == "warn" and config["strict"] is True
    pages = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md")}

    def anchors(text: str) -> set[str]:
        body = re.sub(r"```.*?```", "", text, flags=re.S)
        found = set(re.findall(r"<a id=\"([^\"]+)\"", body))
        counts: dict[str, int] = {}
        for heading in re.findall(r"^#{1,6} (.+?)\s*$", body, re.M):
            slug = slugify(re.sub(r"[`*]", "", heading), "-")
            n = counts.get(slug, 0)
            counts[slug] = n + 1
            found.add(slug if n == 0 else f"{slug}_{n}")
        return found

    broken = []
    for name, text in pages.items():
        body = re.sub(r"```.*?```", "", text, flags=re.S)
        for target, anchor in re.findall(r"\]\(([\w.-]*\.md)?#([^)\s]+)\)", body):
            page = target or name
            if page in pages and anchor not in anchors(pages[page]):
                broken.append(f"{name}: {target}#{anchor}")
    assert broken == []
