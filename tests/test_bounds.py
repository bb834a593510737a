"""The bounds of the analyses that can blow up (docs/security.md, "Bounds"): each
slow input answers within seconds, decided or naming the bound that stopped it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from car_verify.cli import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def trace_rules(*rules: str) -> str:
    return "".join(f"[[trace_rule]]\nrule = {json.dumps(r)}\n" for r in rules)


# --- an installed pass that cannot be built -------------------------------------------


def test_an_installed_pass_that_cannot_be_built_is_a_usage_error_naming_it(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    write(
        site / "half_pass.py",
        "from car_verify.passes import Pass\n\nclass Half(Pass):\n    name = 'half'\n",
    )
    info = site / "half_pass-0.1.dist-info"
    write(info / "METADATA", "Metadata-Version: 2.1\nName: half-pass\nVersion: 0.1\n")
    write(info / "entry_points.txt", "[car_verify.passes]\nhalf = half_pass:Half\n")
    plan = write(tmp_path / "p.json", json.dumps({"actions": []}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-P", "-m", "car_verify", "verify", str(plan), "--no-policies"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert "internal error" not in done.stderr
    assert "entry point 'half' (half_pass:Half)" in done.stderr
