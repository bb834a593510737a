"""Realistic proposal shapes for the benchmarks (deterministic for a given seed)."""

from __future__ import annotations

import random
from typing import Any

TOOLS = ["http_request", "sql_query", "write_file", "read_file", "send_email", "deploy", "build"]


def _params(rng: random.Random, i: int, prev: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "url": f"https://service-{i % 97}.internal/api/v1/items/{i}",
        "timeout": rng.choice([5, 10, 30]),
        "headers": {"x-request-id": f"req-{i:08d}", "accept": "application/json"},
    }
    if prev is not None and rng.random() < 0.2:
        params["body"] = f"${prev}.output.result"
    return params


def wide_dag(n: int, seed: int = 7) -> dict[str, Any]:
    """Many independent actions; mixed explicit and state dependencies; ~3 writers per key.

    Most writers read the key they write (read-modify-write), which orders them;
    preconditions and reads mostly name keys that an earlier action writes or the
    initial state holds, so the plan has some findings but is mostly sound.
    """
    rng = random.Random(seed)
    keys = [f"resource.{j}" for j in range(max(1, n // 3))]
    written: list[str] = ["env"]
    actions = []
    for i in range(n):
        aid = f"a{i}"
        key = rng.choice(keys)
        action: dict[str, Any] = {
            "id": aid,
            "type": "tool_call",
            "tool": rng.choice(TOOLS),
            "parameters": _params(rng, i, f"a{i - 1 - rng.randrange(min(i, 50))}" if i else None),
            "expected_effects": {key: {"status": "done", "by": aid}},
            "metadata": {"rationale": "generated benchmark step", "step": i},
        }
        reads = [key] if key in written and rng.random() < 0.8 else []
        if rng.random() < 0.4:
            reads.append(rng.choice(written))
        if reads:
            action["state_dependencies"] = list(dict.fromkeys(reads))
        if i and rng.random() < 0.3:
            action["dependencies"] = [f"a{i - 1 - rng.randrange(min(i, 50))}"]
        if rng.random() < 0.6:
            action["preconditions"] = [
                {"key": rng.choice(written), "operator": "exists"},
                {"key": "env", "operator": "eq", "value": "prod"},
            ]
        written.append(key)
        actions.append(action)
    return {"id": "wide", "source": "benchmark", "actions": actions}


def sequential(n: int, seed: int = 11) -> dict[str, Any]:
    """Each step depends on the previous one; several preconditions and effects per step."""
    rng = random.Random(seed)
    actions = []
    for i in range(n):
        aid = f"s{i}"
        pre = [{"key": "env", "value": "prod"}, {"key": "counter", "operator": "gte", "value": 0}]
        if i:
            pre.append({"key": f"step.{i - 1}.done", "value": True})
        action: dict[str, Any] = {
            "id": aid,
            "type": "tool_call",
            "tool": rng.choice(TOOLS),
            "parameters": _params(rng, i, f"s{i - 1}" if i else None),
            "preconditions": pre,
            "expected_effects": {f"step.{i}.done": True, "counter": i, "last_step": aid},
            "dependencies": [f"s{i - 1}"] if i else [],
            "state_dependencies": ["counter"] if i else [],
        }
        actions.append(action)
    return {"id": "sequential", "source": "benchmark", "actions": actions}


INITIAL_STATE = {"env": "prod", "counter": 0}


# --- shapes that defeat the cheap reachability tests (scaling, not realism) -------------


def far_writers(n: int, keys: int = 200) -> dict[str, Any]:
    """One long chain of explicit dependencies; every fifth step writes one of ``keys``
    keys round robin, so two writers of a key sit ``5 * keys`` steps apart: every
    pair is ordered, and no short search can see it."""
    actions = []
    for i in range(n):
        action: dict[str, Any] = {"id": f"c{i}", "type": "tool_call", "tool": "build"}
        if i:
            action["dependencies"] = [f"c{i - 1}"]
        if i % 5 == 0:
            action["expected_effects"] = {f"artifact.{(i // 5) % keys}": i}
        actions.append(action)
    return {"id": "far-writers", "source": "benchmark", "actions": actions}


def shared_flag(n: int) -> dict[str, Any]:
    """Half the steps set a flag in one chain; the other half, unordered with them,
    need it true: every reader's message counts the writers it races with."""
    actions = []
    for i in range(n):
        action: dict[str, Any] = {"id": f"f{i}", "type": "tool_call", "tool": "deploy"}
        if i % 2 == 0:
            action["expected_effects"] = {"maintenance": False}
            if i:
                action["dependencies"] = [f"f{i - 2}"]
        else:
            action["preconditions"] = [{"key": "maintenance", "value": True}]
        actions.append(action)
    return {"id": "shared-flag", "source": "benchmark", "actions": actions}
