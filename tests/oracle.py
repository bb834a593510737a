"""An independent, deliberately naive reading of docs/semantics.md §2-4.

It works on the raw proposal dicts, not on car_verify's model, so the tests
compare two implementations of the contract rather than one with itself.
"""

from __future__ import annotations

import re
from typing import Any

ABSENT = object()
REF = re.compile(r"\$([^.]+)\.output(\..+)?")
OPS = {"eq", "neq", "gt", "lt", "gte", "lte", "exists", "not_exists", "contains"}


def jeq(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(jeq(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(jeq(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def holds(op: str, actual: Any, value: Any) -> bool:
    if op == "eq":
        return actual is not ABSENT and jeq(actual, value)
    if op == "neq":
        return actual is ABSENT or not jeq(actual, value)
    if op == "exists":
        return actual is not ABSENT
    if op == "not_exists":
        return actual is ABSENT
    if op in ("gt", "lt", "gte", "lte"):
        if not (num(actual) and num(value)):
            return False
        return {
            "gt": actual > value,
            "lt": actual < value,
            "gte": actual >= value,
            "lte": actual <= value,
        }[op]
    if op == "contains":
        if isinstance(actual, str):
            return isinstance(value, str) and value in actual
        if isinstance(actual, list):
            return any(jeq(x, value) for x in actual)
        return False
    return False


def writes(a: dict[str, Any]) -> list[str]:
    if a.get("write_set"):
        return list(dict.fromkeys(a["write_set"]))
    keys = list(a.get("expected_effects", {}))
    p = a.get("parameters", {})
    if a["type"] == "state_write" and isinstance(p.get("key"), str) and p["key"] not in keys:
        keys.append(p["key"])
    return keys


def read_keys(a: dict[str, Any]) -> list[str]:
    keys = list(a.get("state_dependencies", []))
    if a["type"] == "state_read":
        p = a.get("parameters", {})
        if isinstance(p.get("key"), str):
            keys.append(p["key"])
        if isinstance(p.get("keys"), list):
            keys += [k for k in p["keys"] if isinstance(k, str)]
    return list(dict.fromkeys(keys))


def effects(a: dict[str, Any]) -> dict[str, Any]:
    eff = dict(a.get("expected_effects", {}))
    p = a.get("parameters", {})
    if a["type"] == "state_write" and isinstance(p.get("key"), str):
        eff[p["key"]] = p.get("value")
    return eff


def refs(value: Any) -> list[str]:
    if isinstance(value, str):
        m = REF.fullmatch(value)
        return [m.group(1)] if m else []
    if isinstance(value, dict):
        return [r for v in value.values() for r in refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in refs(v)]
    return []


def edges(actions: list[dict[str, Any]]) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
    """(all edges, task edges: explicit + output references) as position pairs."""
    ids = [a["id"] for a in actions]
    all_edges: set[tuple[int, int]] = set()
    task: set[tuple[int, int]] = set()
    for i, a in enumerate(actions):
        for d in [*a.get("dependencies", []), *refs(a.get("parameters", {}))]:
            for p, pid in enumerate(ids):
                if pid == d:
                    all_edges.add((p, i))
                    task.add((p, i))
        for k in read_keys(a):
            for p in range(i):
                if k in writes(actions[p]):
                    all_edges.add((p, i))
    return all_edges, task


def closure(n: int, es: set[tuple[int, int]]) -> list[set[int]]:
    out = [set() for _ in range(n)]
    for s in range(n):
        stack = [s]
        while stack:
            v = stack.pop()
            for x, y in es:
                if x == v and y not in out[s]:
                    out[s].add(y)
                    stack.append(y)
    return out


def levels(actions: list[dict[str, Any]]) -> list[int | None]:
    n = len(actions)
    es, _ = edges(actions)
    reach = closure(n, es)
    cyclic = {v for v in range(n) if v in reach[v]}
    bad = set(cyclic)
    for c in cyclic:
        bad |= reach[c]
    lv: list[int | None] = [None] * n
    changed = True
    while changed:
        changed = False
        for v in range(n):
            if v in bad or lv[v] is not None:
                continue
            ps = [p for p, q in es if q == v]
            if all(lv[p] is not None for p in ps):
                lv[v] = 1 + max((lv[p] for p in ps), default=-1)  # type: ignore[type-var]
                changed = True
    return lv


def unordered_pairs(actions: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """Every pair of positions a < b with no path between them, either way."""
    n = len(actions)
    es, _ = edges(actions)
    reach = closure(n, es)
    return [
        (a, b) for a in range(n) for b in range(a + 1, n) if b not in reach[a] and a not in reach[b]
    ]


def conflicts(actions: list[dict[str, Any]]) -> list[list[str]]:
    out = []
    for a, b in unordered_pairs(actions):
        for k in sorted(set(writes(actions[a])) & set(writes(actions[b]))):
            out.append((a, b, k))
    out.sort()
    return [[actions[a]["id"], actions[b]["id"], k] for a, b, k in out]


def predicate(a: dict[str, Any]) -> list[dict[str, Any]]:
    pres = list(a.get("preconditions", []))
    p = a.get("parameters", {})
    if a["type"] == "assertion" and isinstance(p.get("key"), str):
        pres.append({"key": p["key"], "operator": p.get("operator", "eq"), "value": p.get("value")})
    return pres


def walk(
    actions: list[dict[str, Any]], state: dict[str, Any], mode: str
) -> tuple[dict[str, Any], set[int]]:
    """End state and blocked positions of the forward walk."""
    lv = levels(actions)
    _, task = edges(actions)
    state = dict(state)
    blocked: set[int] = set()
    depth = max((x for x in lv if x is not None), default=-1) + 1
    for level in range(depth):
        members = [i for i in range(len(actions)) if lv[i] == level]
        for i in members:
            a = actions[i]
            ok = all(
                holds(p.get("operator", "eq"), state.get(p["key"], ABSENT), p.get("value"))
                for p in predicate(a)
            )
            ok = ok and all(k in state for k in read_keys(a))
            if mode == "simulate":
                ok = ok and not any(p in blocked for p, q in task if q == i)
            if not ok:
                blocked.add(i)
        for i in members:
            if mode == "verify" or i not in blocked:
                state.update(effects(actions[i]))
    return state, blocked


def reads(a: dict[str, Any]) -> list[str]:
    if a.get("read_set"):
        return list(dict.fromkeys(a["read_set"]))
    keys = list(a.get("state_dependencies", []))
    keys += [s["key"] for s in a.get("assumptions", [])]
    keys += [k for k in read_keys(a) if k not in keys]
    return list(dict.fromkeys(keys))


def hazards(actions: list[dict[str, Any]]) -> list[tuple[str, str, tuple[str, str]]]:
    """Every unordered pair touching a key that one of them writes: write-write when both
    write it, else read-write (reader first)."""
    out = []
    for a, b in unordered_pairs(actions):
        wa, wb = set(writes(actions[a])), set(writes(actions[b]))
        ra, rb = set(reads(actions[a])), set(reads(actions[b]))
        for k in sorted(((wa | ra) & (wb | rb)) & (wa | wb)):
            if k in wa and k in wb:
                out.append(("write-write", k, (actions[a]["id"], actions[b]["id"])))
            else:
                reader, writer = (a, b) if k in wb else (b, a)
                out.append(("read-write", k, (actions[reader]["id"], actions[writer]["id"])))
    return sorted(out)
