"""The shared corpus: named proposals with the exact findings each must produce.

Each ``tests/corpus/*.json`` holds ``proposal`` and optionally ``initial_state``,
``tools``, ``max_actions``; ``expect`` is the exact list of
``[action_id, code, severity]`` in report order; ``must_not`` codes that must not
appear; and optionally ``levels``, ``conflicts``, ``simulated_state`` (verify),
``simulate_state`` (simulate), ``valid`` and ``message_contains``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import car_verify
from car_verify.passes.registry import default_passes

pytestmark = pytest.mark.usefixtures("strict_cli")

CORPUS = sorted(Path(__file__).parent.joinpath("corpus").glob("*.json"))


def load_case(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def run(case: dict[str, Any]) -> car_verify.VerificationResult:
    return car_verify.verify(
        case["proposal"],
        initial_state=case.get("initial_state"),
        tools=case.get("tools"),
        max_actions=case.get("max_actions"),
        profile="strict",
    )


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_corpus_case(path: Path) -> None:
    case = load_case(path)
    result = run(case)
    got = [[i.action_id, i.code, i.severity.value] for i in result.issues]
    assert got == case["expect"], case["description"]
    for code in case.get("must_not", []):
        assert code not in result.codes()
    assert result.valid == case.get("valid", not any(e[2] == "error" for e in case["expect"]))
    if "levels" in case:
        assert result.execution_levels == case["levels"]
    if "conflicts" in case:
        assert result.conflicts == case["conflicts"]
    if "simulated_state" in case:
        assert result.simulated_state == case["simulated_state"]
    if "simulate_state" in case:
        sim = car_verify.simulate(
            case["proposal"], initial_state=case.get("initial_state"), profile="strict"
        )
        assert dict(sim) == case["simulate_state"]
    for action_id, text in case.get("message_contains", {}).items():
        messages = [i.message for i in result.issues if i.action_id == action_id]
        assert any(text in m for m in messages), messages


def test_corpus_covers_every_default_code() -> None:
    seen = {e[1] for p in CORPUS for e in load_case(p)["expect"]}
    default = {  # the corpus holds the strict profile's expectations
        c for cls in default_passes("strict") for c in cls.codes
    }
    # A corpus case holds its proposal as parsed JSON, where no key can repeat: the
    # codes only JSON text can give are tested on text (test_nothing_silent.py).
    text_only = {"duplicate-key"}
    assert seen | text_only == default
