"""Hypothesis strategies: JSON values and small, adversarial proposals."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

KEYS = ["x", "y", "z"]
SCALARS = st.sampled_from([0, 1, 1.0, 2, -1.5, True, False, None, "s", "ab"])
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=2))
OPERATORS = st.sampled_from(
    ["eq", "neq", "gt", "lt", "gte", "lte", "exists", "not_exists", "contains", "EQ"]
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@st.composite
def precondition(draw: st.DrawFn) -> dict[str, Any]:
    pre: dict[str, Any] = {"key": draw(st.sampled_from(KEYS))}
    if draw(st.booleans()):
        pre["operator"] = draw(OPERATORS)
    if draw(st.booleans()):
        pre["value"] = draw(VALUES)
    return pre


@st.composite
def proposals(draw: st.DrawFn, max_actions: int = 7, cycles: bool = True) -> dict[str, Any]:
    """Small proposals exercising every ordering and blocking rule: ids used twice
    (with ``cycles``), the empty id, key and tool name now and then, retries."""
    n = draw(st.integers(0, max_actions))
    ids = [f"a{i}" for i in range(n)]
    for i in range(1, n if cycles else 0):  # now and then an id used twice: edges from each
        if draw(st.integers(0, 7)) == 0:  # (a reference may then point forward: not acyclic)
            ids[i] = ids[draw(st.integers(0, i - 1))]
    if n and cycles and draw(st.integers(0, 11)) == 0:
        ids[draw(st.integers(0, n - 1))] = ""  # the empty id, a name like any other
    actions = []
    for i in range(n):
        kind = draw(
            st.sampled_from(["tool_call", "tool_call", "state_write", "state_read", "assertion"])
        )
        action: dict[str, Any] = {"id": ids[i], "type": kind}
        params: dict[str, Any] = {}
        if kind == "tool_call":
            action["tool"] = draw(st.sampled_from(["t", "u", "t", "u", ""]))
            params["p"] = draw(st.sampled_from([1, 2]))
        elif kind in ("state_write", "state_read", "assertion"):
            params["key"] = draw(st.sampled_from(KEYS))
            if kind == "state_write" and draw(st.booleans()):
                params["value"] = draw(VALUES)
            if kind == "assertion":
                params["operator"] = draw(OPERATORS)
                params["value"] = draw(VALUES)
            if kind == "state_read" and draw(st.booleans()):
                params["keys"] = draw(st.lists(st.sampled_from(KEYS), max_size=2))
        if i and draw(st.booleans()):
            params["ref"] = f"${draw(st.sampled_from(ids[:i] if not cycles else ids))}.output"
        action["parameters"] = params
        if draw(st.booleans()):
            action["preconditions"] = draw(st.lists(precondition(), max_size=2))
        if draw(st.booleans()):
            action["expected_effects"] = draw(
                st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=2)
            )
        if draw(st.booleans()):
            action["state_dependencies"] = draw(
                st.lists(st.sampled_from(KEYS), max_size=2, unique=True)
            )
        if i and draw(st.integers(0, 3)) == 0:
            pool = ids if cycles else ids[:i]
            action["dependencies"] = draw(st.lists(st.sampled_from(pool), max_size=2, unique=True))
        if draw(st.integers(0, 5)) == 0:
            action["write_set"] = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=2))
        if draw(st.integers(0, 3)) == 0:
            action["failure_behavior"] = draw(st.sampled_from(["skip", "skip", "retry", "abort"]))
            if action["failure_behavior"] == "retry":
                action["max_retries"] = draw(st.integers(0, 2))
        actions.append(action)
    return {"id": "p", "source": "test", "timestamp": "2026-01-01T00:00:00Z", "actions": actions}


states = st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=3)
