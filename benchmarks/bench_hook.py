"""The cold start of one ``car-verify hook`` call (target: under 150 ms), next to
``python -c pass`` in the same run, alternating the two:

    python benchmarks/bench_hook.py [REPEATS]

The hook reads a Claude Code PreToolUse payload for a project with a policy
file (deny rules, a rate limit, a trace rule) and a session state file, as it
does once per tool call.

Run it with the interpreter of a regular install (``pip install .``, which also
writes the bytecode): an editable install puts its import finder in front of every
start, ``python -c pass`` included, and the script says so when it sees one.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

POLICY = """deny_tool = ["rm"]
[[deny_tool_param]]
tool = "Bash"
param = "command"
contains = "rm -rf"
[[rate_limit_tool]]
tool = "WebFetch"
max_calls = 30
interval_secs = 60
[[trace_rule]]
name = "no-push-after-env"
rule = 'never Bash where command contains "git push" after Read where file_path contains ".env"'
"""


def timed(command: list[str], stdin: str) -> float:
    start = time.perf_counter()
    subprocess.run(command, input=stdin, capture_output=True, text=True, check=True)
    return time.perf_counter() - start


def editable() -> bool:
    """Whether car-verify is installed in editable mode (PEP 610's direct_url.json)."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        text = distribution("car-verify").read_text("direct_url.json")
    except PackageNotFoundError:
        return False
    return bool(text) and bool(json.loads(text).get("dir_info", {}).get("editable"))


def main() -> None:
    if editable():
        print("note: an editable install; the numbers include its import finder")
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    hook = str(Path(sys.executable).with_name("car-verify"))
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / ".git").mkdir()
        (project / ".car" / "policies").mkdir(parents=True)
        (project / ".car" / "policies" / "rules.toml").write_text(POLICY)
        payload = json.dumps({
            "session_id": "bench", "transcript_path": "/x", "cwd": str(project),
            "permission_mode": "default", "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": "ls -la"}, "tool_use_id": "t",
        })  # fmt: skip
        timed([hook, "hook"], payload)  # warm the file cache and the state file
        hooks, bare = [], []
        for _ in range(repeats):
            hooks.append(timed([hook, "hook"], payload))
            bare.append(timed([sys.executable, "-c", "pass"], ""))
    h, b = statistics.median(hooks), statistics.median(bare)
    print(f"car-verify hook: median {h * 1e3:.0f} ms (min {min(hooks) * 1e3:.0f}, "
          f"max {max(hooks) * 1e3:.0f}); python -c pass: median {b * 1e3:.0f} ms "
          f"(min {min(bare) * 1e3:.0f}, max {max(bare) * 1e3:.0f}); ratio {h / b:.1f}x; "
          f"{repeats} pairs")  # fmt: skip


if __name__ == "__main__":
    main()
