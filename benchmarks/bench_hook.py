"""The cold start of one ``car-verify hook`` call (target: under 150 ms), next to
``python -c pass`` in the same run, alternating the two:

    python benchmarks/bench_hook.py [REPEATS] [RULES]

The hook reads a Claude Code PreToolUse payload for a project with a policy
file of RULES rules (50 by default: deny rules, parameter rules, patterns,
shell commands, rate limits and trace rules) and a session state file, as it
does once per tool call. A denied call is tried first: the run stops unless the
hook denies it, so the rules are known to be in force. Two projects are timed:
one whose folder holds the rules the hook accepted (the usual case: one rule
set), and one where the agent has edited the folder since (a rule removed: the
accepted rules and the folder's are both in force, a call passes both). Each
line gives the hook's time and the ratio to ``python -c pass`` per pair
(median, and the fastest and slowest pair: the spread), then the same of the CPU
time each took (user + system), which a loaded machine disturbs less.

Run it with the interpreter of a regular install (``pip install .``, which also
writes the bytecode): an editable install puts its import finder in front of every
start, ``python -c pass`` included, and the script says so when it sees one.
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def policy(rules: int = 50) -> str:
    """A policy file of ``rules`` rules of every kind, as a project might keep."""
    kinds = ["deny_tool", "param", "matching", "command", "rate", "trace", "trace", "trace"]
    lines: list[str] = []
    for n in range(rules):
        kind = kinds[n % len(kinds)]
        if kind == "deny_tool":
            if n == 0:  # a top-level key: before every table
                lines.append(f'deny_tool = ["tool{n}"]')
            else:
                lines += ["[[deny_tool_param]]", f'tool = "tool{n}"', 'param = "p"']
        elif kind == "param":
            lines += ["[[deny_tool_param]]", 'tool = "Bash"', 'param = "command"',
                      f'contains = "secret{n}"']  # fmt: skip
        elif kind == "matching":
            lines += ["[[deny_tool_param_matching]]", 'tool = "WebFetch"', 'param = "url"',
                      f'matches = "169\\\\.254\\\\.{n}"']  # fmt: skip
        elif kind == "command":
            lines += ["[[deny_command]]", f'program = "prog{n}"', 'flags = ["-rf"]']
        elif kind == "rate":
            lines += ["[[rate_limit_tool]]", f'tool = "tool{n}"', "max_calls = 30",
                      "interval_secs = 60"]  # fmt: skip
        else:
            lines += ["[[trace_rule]]", f'name = "rule{n}"',
                      f"rule = 'never Bash where command contains \"push{n}\" after Read where "
                      f"file_path contains \".env{n}\"'"]  # fmt: skip
    return "\n".join(x for x in lines if x) + "\n"


def timed(command: list[str], stdin: str) -> float:
    return timed_both(command, stdin)[0]


def timed_both(command: list[str], stdin: str) -> tuple[float, float]:
    """The wall time of one run and the CPU time (user + system) it took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, input=stdin, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def editable() -> bool:
    """Whether car-verify is installed in editable mode (PEP 610's direct_url.json)."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        text = distribution("car-verify").read_text("direct_url.json")
    except PackageNotFoundError:
        return False
    return bool(text) and bool(json.loads(text).get("dir_info", {}).get("editable"))


def project(tmp: Path, name: str, rules: int, *, edited: bool) -> list[str]:
    """A project whose rules the hook has accepted (its first call), and, when
    ``edited``, whose folder the agent has changed since: the hook's command."""
    root = tmp / name
    (root / ".git").mkdir(parents=True)
    folder = root / ".car" / "policies"
    folder.mkdir(parents=True)
    folder.joinpath("rules.toml").write_text(policy(rules))
    hook = str(Path(sys.executable).with_name("car-verify"))
    command = [hook, "hook", "--policies", str(folder), "--state-dir", str(root / "state")]
    denied = payload(root, "prog3 -rf /")
    answer = subprocess.run(command, input=denied, capture_output=True, text=True)
    if '"deny"' not in answer.stdout:  # the rules must be in force, or this times nothing
        raise SystemExit(f"the hook did not deny a denied call: {answer.stdout}{answer.stderr}")
    if edited:  # the agent drops the first shell rule: it stays in force, accepted
        text = policy(rules).replace('program = "prog3"', 'program = "other3"')
        folder.joinpath("rules.toml").write_text(text)
        answer = subprocess.run(command, input=denied, capture_output=True, text=True)
        if '"deny"' not in answer.stdout or "stay in force" not in answer.stdout:
            raise SystemExit(f"the accepted rule is not in force: {answer.stdout}")
    return command


def payload(root: Path, line: str) -> str:
    return json.dumps({
        "session_id": "bench", "transcript_path": "/x", "cwd": str(root),
        "permission_mode": "default", "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": line}, "tool_use_id": "t",
    })  # fmt: skip


def main() -> None:
    if editable():
        print("note: an editable install; the numbers include its import finder")
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    rules = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    with tempfile.TemporaryDirectory() as tmp:
        for name, edited in (("accepted", False), ("edited", True)):
            command = project(Path(tmp), name, rules, edited=edited)
            call = payload(Path(tmp) / name, "ls -la")
            timed(command, call)  # warm the file cache and the state file
            hooks, bare, hooks_cpu, bare_cpu = [], [], [], []
            for _ in range(repeats):
                wall, cpu = timed_both(command, call)
                hooks.append(wall)
                hooks_cpu.append(cpu)
                wall, cpu = timed_both([sys.executable, "-c", "pass"], "")
                bare.append(wall)
                bare_cpu.append(cpu)
            ratios = sorted(h / b for h, b in zip(hooks, bare, strict=True))
            cpu_ratios = sorted(h / b for h, b in zip(hooks_cpu, bare_cpu, strict=True) if b)
            h, b = statistics.median(hooks), statistics.median(bare)
            print(f"{name}: car-verify hook median {h * 1e3:.0f} ms (min {min(hooks) * 1e3:.0f}, "
                  f"max {max(hooks) * 1e3:.0f}); python -c pass median {b * 1e3:.0f} ms; "
                  f"ratio per pair: median {statistics.median(ratios):.1f}x "
                  f"(min {ratios[0]:.1f}x, max {ratios[-1]:.1f}x); "
                  f"{repeats} pairs; {rules} rules")  # fmt: skip
            if cpu_ratios:  # the CPU time is less at the mercy of a loaded machine
                hc, bc = statistics.median(hooks_cpu) * 1e3, statistics.median(bare_cpu) * 1e3
                middle = statistics.median(cpu_ratios)
                print(f"{name}: CPU time (user + system) median {hc:.0f} ms, python -c pass "
                      f"{bc:.0f} ms; ratio per pair: median {middle:.1f}x "
                      f"(min {cpu_ratios[0]:.1f}x, max {cpu_ratios[-1]:.1f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
