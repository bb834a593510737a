"""Regenerate docs/codes.md from the passes (run after changing a pass)."""

from __future__ import annotations

from pathlib import Path

from car_verify.docgen import render_codes_reference

ROOT = Path(__file__).resolve().parents[1]

if __name__ == "__main__":
    target = ROOT / "docs" / "codes.md"
    target.write_text(render_codes_reference())
    print(f"wrote {target.relative_to(ROOT)}")
