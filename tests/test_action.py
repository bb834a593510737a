"""The GitHub Action (issue 40): ``action.yml`` is a composite action whose shell
steps are run here as a runner would run them, with the inputs' defaults, on a
repository holding a plan with a finding (not by publishing it)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())


def _env(step: dict[str, Any], inputs: dict[str, str]) -> dict[str, str]:
    out = {}
    for name, value in step.get("env", {}).items():
        out[name] = re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: inputs[m[1]], value)
    return out


def _lint_steps() -> list[dict[str, Any]]:
    return [s for s in ACTION["runs"]["steps"] if "car-verify lint" in s.get("run", "")]


def test_the_action_is_composite_and_uploads_sarif() -> None:
    assert ACTION["runs"]["using"] == "composite"
    uses = [s.get("uses", "") for s in ACTION["runs"]["steps"]]
    assert any(u.startswith("github/codeql-action/upload-sarif@") for u in uses)
    assert len(_lint_steps()) == 2


@pytest.mark.skipif(shutil.which("bash") is None, reason="the steps are bash")
def test_the_lint_steps_write_sarif_and_annotate(tmp_path: Path) -> None:
    plan = {
        "actions": [{"id": "a", "type": "tool_call", "tool": "t", "reversibility": "compensable"}]
    }
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "deploy.json").write_text(json.dumps(plan))
    inputs = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    bin_dir = str(Path(sys.executable).parent)  # the car-verify this test runs with
    results = []
    for step in _lint_steps():
        env = {
            **os.environ,
            **_env(step, inputs),
            "PATH": bin_dir + os.pathsep + os.environ["PATH"],
        }
        results.append(
            subprocess.run(
                ["bash", "-e", "-c", step["run"]], cwd=tmp_path, env=env,
                capture_output=True, text=True, timeout=300,
            )
        )  # fmt: skip
    sarif_run, annotate = results
    assert sarif_run.returncode == 0, sarif_run.stderr
    report = json.loads((tmp_path / inputs["sarif-file"]).read_text())
    rules = [r["ruleId"] for r in report["runs"][0]["results"]]
    assert "missing-compensation" in rules
    assert annotate.returncode == 1  # an error fails the step (fail-on: error)
    assert re.search(r"^::error file=plans/deploy\.json,", annotate.stdout, re.M), annotate.stdout
