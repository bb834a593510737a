"""Real tools for the executor example: files on disk and a subprocess.

Run from the repository root:

    car-verify run examples/executor/proposal.json --tool-module examples/executor/tools.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

WORKDIR = Path(os.environ.get("CAR_EXAMPLE_DIR", "/tmp/car-verify-example"))


def write_file(params: dict[str, Any]) -> dict[str, Any]:
    """Write a file under the work directory; returns its path and size."""
    path = WORKDIR / params["name"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(params["text"])
    return {"path": str(path), "bytes": len(params["text"])}


def delete_file(params: dict[str, Any]) -> dict[str, Any]:
    """The compensation of write_file."""
    path = Path(params["path"])
    existed = path.exists()
    path.unlink(missing_ok=True)
    return {"deleted": existed}


def run_check(params: dict[str, Any]) -> dict[str, Any]:
    """Run a Python snippet in a subprocess; a non-zero exit fails the action."""
    done = subprocess.run(
        [sys.executable, "-c", params["code"]], capture_output=True, text=True, timeout=30
    )
    if done.returncode != 0:
        last = done.stderr.strip().splitlines()[-1:] or [""]
        raise RuntimeError(f"check exited {done.returncode}: {last[0]}")
    return {"stdout": done.stdout.strip()}


def publish(params: dict[str, Any]) -> dict[str, Any]:
    """An irreversible step: append to a 'published' log."""
    log = WORKDIR / "published.log"
    with log.open("a") as f:
        f.write(params["path"] + "\n")
    return {"published": params["path"]}


TOOLS = {
    "write_file": write_file,
    "delete_file": delete_file,
    "run_check": run_check,
    "publish": publish,
}
