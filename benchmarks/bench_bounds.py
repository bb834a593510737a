"""The slow inputs of the bounds issue, each against a plain ``verify`` of an input of
the same size, in one run.

    python benchmarks/bench_bounds.py [ROUNDS]

Each case runs as a fresh process, ROUNDS times (default 5), the cases interleaved
round by round; beside each, ``car-verify verify`` of a proposal of about the same
number of bytes, in the same round. Prints per case the median wall time, its
spread (min to max), and the median of the per-round ratio to that baseline, with
the exit code and the first line of the answer. The machine's load moves wall
times; the ratios, taken round by round, move less.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

LIMIT = 60.0


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _rules(*rules: str) -> str:
    return "".join(f"[[trace_rule]]\nrule = {json.dumps(r)}\n" for r in rules)


def _proposal(size: int) -> dict[str, Any]:
    """A plain chain of actions whose JSON is about ``size`` bytes."""
    actions: list[dict[str, Any]] = []
    while len(json.dumps({"actions": actions})) < size:
        i = len(actions)
        deps = [f"a{i - 1}"] if i else []
        actions.append(
            {
                "id": f"a{i}",
                "type": "tool_call",
                "tool": "t",
                "parameters": {},
                "dependencies": deps,
            }
        )
    return {"id": "p", "source": "bench", "actions": actions}


def cases(root: Path) -> list[tuple[str, list[str], int]]:
    """(name, argv after car-verify, input bytes) of each slow input."""
    out: list[tuple[str, list[str], int]] = []
    old = _write(root / "d1/old/p.toml", _rules("at most 100000 s3"))
    new = _write(root / "d1/new/p.toml", _rules("at most 100000 s4"))
    out.append(
        ("policy diff: two counters", ["policy", "diff", str(old.parent), str(new.parent)], 84)
    )
    old = _write(root / "d2/old/p.toml", _rules(*(f"never x{i} after y{i}" for i in range(14))))
    halves = (f"never x{i} after y{i} {o}" for i in range(14) for o in ("succeeded", "failed"))
    new = _write(root / "d2/new/p.toml", _rules(*halves))
    size = old.stat().st_size + new.stat().st_size
    out.append(
        (
            "policy diff: 14 never-after vs 28 halves",
            ["policy", "diff", str(old.parent), str(new.parent)],
            size,
        )
    )
    lint = _write(
        root / "lint/p.toml",
        "".join(
            f'[[deny_tool_param]]\ntool = "t0"\nparam = "p"\ncontains = "v{i}x"\n'
            for i in range(400)
        ),
    )
    out.append(
        (
            "policy lint: 400 rules on one slot",
            ["policy", "lint", str(lint.parent)],
            lint.stat().st_size,
        )
    )
    stages = [f"s{i}" for i in range(100)]
    edges = [{"from": stages[i], "to": stages[(i + 1) % 100]} for i in range(100)]
    edges.append({"from": "s50", "to": "end"})
    ring = _write(
        root / "ring.json",
        json.dumps(
            {"entry": "s0", "terminals": ["end"], "stages": [*stages, "end"], "edges": edges}
        ),
    )
    out.append(
        (
            "workflow: at most 100000 on a ring",
            ["workflow", str(ring), "--rule", "at most 100000 s3"],
            ring.stat().st_size,
        )
    )
    acts = [
        {"id": f"a{i}", "type": "tool_call", "tool": "t", "parameters": {},
         "dependencies": [f"a{j}" for j in range(max(0, i - 60), i)]}
        for i in range(400)
    ]  # fmt: skip
    dag = _write(root / "dag.json", json.dumps({"id": "p", "source": "s", "actions": acts}))
    out.append(
        (
            "dot: banded DAG 400 x 60 to SVG",
            ["dot", str(dag), "--no-policies", "-o", str(root / "dag.svg")],
            dag.stat().st_size,
        )
    )
    schema = {"type": "object", "patternProperties": {"^(a+)+$": {"type": "string"}}}
    tools = _write(
        root / "tools.json", json.dumps([{"name": "t", "description": "d", "parameters": schema}])
    )
    plan = {
        "actions": [
            {"id": "x", "type": "tool_call", "tool": "t", "parameters": {"a" * 30 + "!": 1}}
        ]
    }
    pp = _write(root / "pp.json", json.dumps(plan))
    out.append(
        (
            "verify --tools: patternProperties ^(a+)+$",
            ["verify", str(pp), "--tools", str(tools), "--no-policies"],
            pp.stat().st_size + tools.stat().st_size,
        )
    )
    rules = [
        "never send after read_secret", "deploy only after run_tests succeeded",
        "at most 3 fetch", "never rm after deploy", "never any tool after stop",
        "upload only after scan succeeded", "at most 5 send", "never fetch after rm",
        "never deploy after fetch failed", "at most 2 deploy",
    ]  # fmt: skip
    _write(root / "pc/.car/policies/p.toml", _rules(*rules))
    names = [
        "read_secret", "run_tests", "fetch", "deploy", "send", "scan",
        "upload", "rm", "fetch", "send", "other", "other2",
    ]  # fmt: skip
    calls = [
        {"id": f"a{i}", "type": "tool_call", "tool": names[i % 12], "parameters": {}}
        for i in range(24)
    ]
    plan = {"id": "p", "source": "s", "actions": calls}
    pc = _write(root / "pc/plan.json", json.dumps(plan))
    out.append(("policy check: 10 trace rules", ["policy", "check", str(pc)], pc.stat().st_size))
    return out


def _run(argv: list[str]) -> tuple[float, int, str]:
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "car_verify", *argv],
            capture_output=True,
            text=True,
            timeout=LIMIT,
        )
    except subprocess.TimeoutExpired:
        return LIMIT, -1, f"past {LIMIT:g} s"
    said = (done.stdout.strip() or done.stderr.strip()).splitlines()
    return time.perf_counter() - start, done.returncode, said[0][:90] if said else ""


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        todo = cases(root)
        baselines = {}
        for name, _, size in todo:
            plain = _write(root / "plain" / f"{size}.json", json.dumps(_proposal(max(size, 200))))
            baselines[name] = ["verify", str(plain), "--no-policies"]
        times: dict[str, list[float]] = {name: [] for name, _, _ in todo}
        ratios: dict[str, list[float]] = {name: [] for name, _, _ in todo}
        said: dict[str, tuple[int, str]] = {}
        for _ in range(rounds):
            for name, argv, _ in todo:
                base, _, _ = _run(baselines[name])
                took, code, first = _run(argv)
                times[name].append(took)
                ratios[name].append(took / base)
                said[name] = (code, first)
        print(f"{'case':45} {'median s':>9} {'spread s':>15} {'x verify':>9}  exit  answer")
        for name, _, _ in todo:
            t = times[name]
            spread = f"{min(t):.2f}-{max(t):.2f}"
            code, first = said[name]
            print(
                f"{name:45} {statistics.median(t):9.2f} {spread:>15} "
                f"{statistics.median(ratios[name]):9.1f}  {code:>4}  {first}"
            )


if __name__ == "__main__":
    main()
