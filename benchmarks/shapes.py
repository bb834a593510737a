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


# --- the large-plan shapes of bench_large.py: one stress each -----------------------------


def deep_chain(n: int) -> dict[str, Any]:
    """One chain through the state: each step reads the key the step before wrote, so
    the DAG has ``n`` levels of one action each."""
    actions = []
    for i in range(n):
        action: dict[str, Any] = {
            "id": f"d{i}",
            "type": "tool_call",
            "tool": "build",
            "parameters": {"stage": i},
            "expected_effects": {f"stage.{i}": "built"},
        }
        if i:
            action["state_dependencies"] = [f"stage.{i - 1}"]
            action["preconditions"] = [{"key": f"stage.{i - 1}", "value": "built"}]
        actions.append(action)
    return {"id": "deep-chain", "source": "benchmark", "actions": actions}


def wide_level(n: int) -> dict[str, Any]:
    """Every action on its own key and unordered with the rest: one level of ``n``."""
    actions = [
        {
            "id": f"w{i}",
            "type": "tool_call",
            "tool": TOOLS[i % len(TOOLS)],
            "parameters": {"item": i, "region": f"r{i % 13}"},
            "expected_effects": {f"item.{i}": {"status": "done"}},
            "preconditions": [{"key": "env", "value": "prod"}],
        }
        for i in range(n)
    ]
    return {"id": "wide-level", "source": "benchmark", "actions": actions}


def shared_keys(n: int, width: int = 4, seed: int = 5) -> dict[str, Any]:
    """Few writers per key, many keys shared: each action writes one key of a pool of
    ``n // width`` and reads two others; about half the writers order themselves after
    the key's previous writer, so the plan has many conflicts but linearly many."""
    rng = random.Random(seed)
    pool = max(1, n // width)
    actions = []
    for i in range(n):
        key = f"shared.{rng.randrange(pool)}"
        reads = [f"shared.{rng.randrange(pool)}" for _ in range(2)]
        if rng.random() < 0.5:
            reads.append(key)
        actions.append(
            {
                "id": f"k{i}",
                "type": "tool_call",
                "tool": TOOLS[i % len(TOOLS)],
                "expected_effects": {key: i},
                "state_dependencies": list(dict.fromkeys(reads)),
                "read_set": list(dict.fromkeys(reads)),
                "write_set": [key],
            }
        )
    return {"id": "shared-keys", "source": "benchmark", "actions": actions}


def dense_dependencies(n: int, fan_in: int = 12, seed: int = 3) -> dict[str, Any]:
    """Each action depends on ``fan_in`` keys written by earlier actions (by state and
    by explicit dependency): many edges per action, few findings."""
    rng = random.Random(seed)
    actions: list[dict[str, Any]] = []
    for i in range(n):
        action: dict[str, Any] = {
            "id": f"e{i}",
            "type": "tool_call",
            "tool": "sql_query",
            "expected_effects": {f"row.{i}": True},
        }
        if i:
            earlier = sorted({rng.randrange(i) for _ in range(fan_in)})
            action["state_dependencies"] = [f"row.{j}" for j in earlier]
            action["dependencies"] = [f"e{j}" for j in earlier[:3]]
        actions.append(action)
    return {"id": "dense-dependencies", "source": "benchmark", "actions": actions}


def long_parameters(n: int, fields: int = 40) -> dict[str, Any]:
    """Few edges, large parameter objects (nested, with arrays): the cost of reading
    and comparing values rather than of ordering."""
    actions = []
    for i in range(n):
        params: dict[str, Any] = {
            f"field_{f}": {"value": f"v{i}-{f}", "tags": ["a", "b", f], "weight": f / 7}
            for f in range(fields)
        }
        params["rows"] = [{"n": j, "ok": j % 2 == 0} for j in range(10)]
        actions.append(
            {
                "id": f"p{i}",
                "type": "tool_call",
                "tool": TOOLS[i % len(TOOLS)],
                "parameters": params,
                "expected_effects": {f"out.{i % 500}": i},
                "metadata": {"note": "x" * 200},
            }
        )
    return {"id": "long-parameters", "source": "benchmark", "actions": actions}


#: The small plans' mix (benchmarks/bench_small.py): every action type, the operators.
MIX_TYPES = ["tool_call"] * 6 + ["state_write", "state_read", "assertion"]
MIX_OPERATORS = ["eq", "neq", "gt", "exists", "not_exists", "contains"]


def mixed(rng: random.Random, n: int, keys: list[str]) -> list[dict[str, Any]]:
    """``n`` actions of every type over ``keys``: tool calls of four tools, state
    writes and reads, assertions; preconditions (half of them), effects and state
    dependencies on keys drawn at random, so a plan has findings of every kind."""
    actions = []
    for i in range(n):
        kind = rng.choice(MIX_TYPES)
        action: dict[str, Any] = {"id": f"a{i}", "type": kind}
        if kind == "tool_call":
            action["tool"] = rng.choice(["fetch", "build", "deploy", "notify"])
            action["parameters"] = {"target": rng.choice(["staging", "prod"]), "n": i}
        elif kind in ("state_write", "state_read"):
            action["parameters"] = {"key": rng.choice(keys), "value": i}
        if rng.random() < 0.5:
            action["preconditions"] = [
                {
                    "key": rng.choice(keys),
                    "operator": rng.choice(MIX_OPERATORS),
                    "value": rng.randint(0, 3),
                }
            ]
        if kind != "state_read" and rng.random() < 0.7:
            action["expected_effects"] = {rng.choice(keys): rng.randint(0, 3)}
        if rng.random() < 0.5:
            action["state_dependencies"] = rng.sample(keys, rng.randint(1, 2))
        actions.append(action)
    return actions


def synth(n: int, seed: int = 61) -> dict[str, Any]:
    """The small plans' mix at ``n`` actions (``mixed``), over ``n // 4`` keys: a
    generated plan with findings of every kind, as many as its size gives."""
    rng = random.Random(seed)
    keys = [f"k{i}" for i in range(max(8, n // 4))]
    return {"id": "synth", "source": "benchmark", "actions": mixed(rng, n, keys)}


#: The large-plan shapes, by name (wide_dag is the realistic mix).
LARGE_SHAPES = {
    "synth": synth,
    "wide_dag": wide_dag,
    "deep_chain": deep_chain,
    "wide_level": wide_level,
    "shared_keys": shared_keys,
    "dense_dependencies": dense_dependencies,
    "long_parameters": long_parameters,
}
