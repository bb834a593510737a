"""Whole runs of a long STRIPS-shaped plan, as a planning researcher compares them with VAL.

    python benchmarks/bench_cli_long.py [STEPS] [ROUNDS]

Writes a STEPS-step plan (default 10,000) in the shape of a STRIPS plan made Agent
IR: one tool call per step (``move``, ``pick``, ``drop``, ``stack``), each with the
preconditions its operator needs, the effects it adds, ``state_dependencies`` on the
facts it reads, and parameters a tool registry describes with JSON Schemas. Then,
interleaved, ROUNDS times each (default 5), as fresh processes:

- ``python -c 'import json; json.load(open(F))'`` (the baseline: what VAL costs here);
- ``car-verify verify F --tools T --state S --format json``, under each profile.

Prints each command's wall time (min / median / max) and its ratio to the baseline
of the same round (min / median / max). The target is within 3x of the baseline.
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

OPERATORS = {
    "move": ["from", "to"],
    "pick": ["block", "at"],
    "drop": ["block", "at"],
    "stack": ["block", "on"],
}


def tools() -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "description": f"the {name} operator",
            "parameters": {
                "type": "object",
                "properties": {arg: {"type": "string", "minLength": 1} for arg in args},
                "required": args,
                "additionalProperties": False,
            },
        }
        for name, args in OPERATORS.items()
    ]


def plan(steps: int, seed: int = 11) -> dict[str, Any]:
    """A chain of operator applications: each step needs the fact the one before it
    added (so the plan is valid and every action sits on its own level)."""
    rng = random.Random(seed)
    actions = []
    for i in range(steps):
        name = rng.choice(list(OPERATORS))
        args = {arg: f"{arg}-{rng.randrange(50)}" for arg in OPERATORS[name]}
        fact = f"fact.{i}"
        action: dict[str, Any] = {
            "id": f"step{i}",
            "type": "tool_call",
            "tool": name,
            "parameters": args,
            "expected_effects": {fact: True, f"at.{args[OPERATORS[name][1]]}": i},
        }
        if i:
            before = f"fact.{i - 1}"
            action["preconditions"] = [{"key": before, "operator": "eq", "value": True}]
            action["state_dependencies"] = [before]
        actions.append(action)
    return {"id": "strips", "source": "benchmark", "actions": actions}


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def spread(values: list[float], unit: str = "") -> str:
    return (
        f"{min(values):.2f}{unit} / {statistics.median(values):.2f}{unit} / {max(values):.2f}{unit}"
    )


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    folder = Path(tempfile.mkdtemp(prefix="car-verify-bench-"))
    proposal, registry, state = folder / "plan.json", folder / "tools.json", folder / "state.json"
    proposal.write_text(json.dumps(plan(steps)))
    registry.write_text(json.dumps(tools()))
    state.write_text(json.dumps({}))
    cli = str(Path(sys.executable).with_name("car-verify"))
    baseline = [sys.executable, "-c", f"import json; json.load(open({str(proposal)!r}))"]
    runs = {
        f"car-verify verify --profile {p}": [
            cli, "verify", str(proposal), "--tools", str(registry), "--state", str(state),
            "--format", "json", "--profile", p, "--no-policies",
        ]
        for p in ("car", "strict")
    }  # fmt: skip
    times: dict[str, list[float]] = {"python + json.load": []}
    ratios: dict[str, list[float]] = {name: [] for name in runs}
    for name in runs:
        times[name] = []
    for _ in range(rounds):
        base = timed(baseline)
        times["python + json.load"].append(base)
        for name, command in runs.items():
            took = timed(command)
            times[name].append(took)
            ratios[name].append(took / base)
    size = proposal.stat().st_size / 1e6
    print(f"{steps:,}-step STRIPS-shaped plan ({size:.1f} MB), {rounds} rounds, fresh processes")
    print(f"{'':36} {'seconds (min / median / max)':>30}   x baseline (min / median / max)")
    for name, values in times.items():
        ratio = spread(ratios[name], "x") if name in ratios else "1.00x"
        print(f"{name:36} {spread(values, ' s'):>30}   {ratio}")


if __name__ == "__main__":
    main()
