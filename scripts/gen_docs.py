"""Regenerate the generated documentation and fixtures (run after changing a pass,
a rule kind, a command or the exporter): docs/codes.md, docs/rules.md, the tables of
docs/policies.md, docs/cli.md, docs/images/*.svg, and with --golden the DOT golden
files under tests/golden/."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from car_verify.cli._reference import render_cli_reference
from car_verify.cli._rules_reference import render_rules_reference, update_policies_page
from car_verify.cli.docgen import render_codes_reference

ROOT = Path(__file__).resolve().parents[1]

IMAGES = {
    "gated-deploy": ROOT / "examples" / "gated-deploy" / "proposal.json",
    "data-pipeline": ROOT / "examples" / "data-pipeline" / "proposal.json",
    "poll-loop": ROOT / "examples" / "poll-loop" / "proposal.json",
}
GOLDEN = {
    "data-pipeline": ROOT / "examples" / "data-pipeline" / "proposal.json",
    "gated-deploy": ROOT / "examples" / "gated-deploy" / "proposal.json",
    "cycle": ROOT / "tests" / "corpus" / "cycle.json",
}


def _proposal(path: Path) -> object:
    doc = json.loads(path.read_text())
    return {"id": path.stem, **doc["proposal"]} if path.parent.name == "corpus" else doc


def main() -> None:
    target = ROOT / "docs" / "codes.md"
    target.write_text(render_codes_reference())
    print(f"wrote {target.relative_to(ROOT)}")
    target = ROOT / "docs" / "rules.md"
    target.write_text(render_rules_reference())
    print(f"wrote {target.relative_to(ROOT)}")
    target = ROOT / "docs" / "policies.md"
    target.write_text(update_policies_page(target.read_text()))
    print(f"wrote the tables of {target.relative_to(ROOT)}")
    target = ROOT / "docs" / "cli.md"
    target.write_text(render_cli_reference())
    print(f"wrote {target.relative_to(ROOT)}")
    from car_verify.ir.schema import KINDS, json_schema

    for kind in KINDS:
        target = ROOT / "docs" / "schemas" / f"{kind}.schema.json"
        target.parent.mkdir(exist_ok=True)
        target.write_text(json.dumps(json_schema(kind), indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {target.relative_to(ROOT)}")
    from car_verify.reporters.dot import GraphvizMissing, render, to_dot, to_dot_text

    if "--golden" in sys.argv:
        for name, path in GOLDEN.items():
            out = ROOT / "tests" / "golden" / f"{name}.dot"
            out.write_text(to_dot_text(_proposal(path), profile="strict"))
            print(f"wrote {out.relative_to(ROOT)}")
    images = ROOT / "docs" / "images"
    images.mkdir(exist_ok=True)
    for name, path in IMAGES.items():
        try:
            # the guide's pictures are of the strict profile, as its text is
            svg = render(to_dot(_proposal(path), profile="strict"), "svg")
        except GraphvizMissing as err:
            print(f"skipped docs/images: {err}")
            return
        (images / f"{name}.svg").write_bytes(svg)
        print(f"wrote docs/images/{name}.svg")


if __name__ == "__main__":
    main()
