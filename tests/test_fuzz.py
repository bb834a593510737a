"""Fuzzing the boundaries: any input is a model or one InputError; any tool fault
leaves a result, the state restored and a readable log (issue 22).

The input fuzz mutates the test corpus and the examples with a seeded generator:
100,000 inputs under CI (``CI`` set) or ``CAR_VERIFY_FUZZ=N``, 3,000 otherwise.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import car_verify
from car_verify.errors import InputError
from car_verify.events import read_log
from car_verify.executor import execute_sync

ROOT = Path(__file__).resolve().parents[1]
COUNT = int(os.environ.get("CAR_VERIFY_FUZZ", 100_000 if os.environ.get("CI") else 3_000))


def _seeds() -> list[bytes]:
    docs = []
    for path in sorted([*ROOT.glob("tests/corpus/*.json"), *ROOT.glob("examples/*/proposal.json")]):
        doc = json.loads(path.read_text())
        docs.append(json.dumps(doc.get("proposal", doc) if "proposal" in doc else doc).encode())
    return docs


_JUNK = [b"null", b"[]", b"{}", b'"x"', b"1e999", b"-0", b"true", b"\xff", b'{"actions":', b"]"]


def _mutate(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.randrange(5)
        at = rng.randrange(len(buf) + 1)
        if choice == 0 and buf:
            buf[min(at, len(buf) - 1)] = rng.randrange(256)
        elif choice == 1:
            buf[at:at] = rng.choice(_JUNK)
        elif choice == 2 and buf:
            del buf[at : at + rng.randint(1, 8)]
        elif choice == 3:
            buf = buf[:at]
        else:
            buf[at:at] = buf[rng.randrange(len(buf) + 1) :][: rng.randint(1, 16)]
    return bytes(buf)


def test_any_input_is_a_model_or_one_input_error() -> None:
    rng = random.Random(22)
    seeds = _seeds()
    modelled = 0
    for _ in range(COUNT):
        data = _mutate(rng, rng.choice(seeds))
        try:
            model = car_verify.load(data)
        except InputError:
            continue
        modelled += 1
        for profile in ("car", "strict"):
            with contextlib.suppress(InputError):  # CAR rejects an unknown action type
                car_verify.verify(model, profile=profile).to_json()
    assert modelled > COUNT // 20  # the mutations do not only make junk


FAULTS: list[Any] = [
    RuntimeError("boom"),
    StopIteration(),
    KeyboardInterrupt(),
    SystemExit(3),
    "not json",
    "slow",
    "ok",
]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(range(len(FAULTS))), min_size=1, max_size=4), st.booleans())
def test_every_tool_fault_leaves_a_result_the_state_restored_and_the_log_readable(
    tmp_path_factory: pytest.TempPathFactory, faults: list[int], abort: bool
) -> None:
    release = threading.Event()

    def tool_for(fault: Any) -> Any:
        def run(params: dict[str, Any]) -> Any:
            if fault == "slow":
                release.wait(0.3)
                return {}
            if fault == "not json":
                return {1, 2}
            if fault == "ok":
                return {}
            raise fault

        return run

    tools = {f"t{i}": tool_for(FAULTS[f]) for i, f in enumerate(faults)}
    actions = [
        {
            "id": f"a{i}",
            "type": "tool_call",
            "tool": f"t{i}",
            "timeout_ms": 50,
            "expected_effects": {f"k{i}": i},
            "failure_behavior": "abort" if abort else "skip",
        }
        for i in range(len(faults))
    ]
    log = tmp_path_factory.mktemp("log") / "run.jsonl"
    try:
        result = execute_sync(
            {"actions": actions}, tools, initial_state={"start": 1}, event_log=log
        )
    finally:
        release.set()  # the abandoned slow calls end now
        for thread in threading.enumerate():
            if thread.name.startswith("car-verify tool"):
                thread.join(timeout=10)
    assert len(result.result.results) == len(actions)
    assert {r.status.value for r in result.result.results} <= {
        "succeeded",
        "failed",
        "rejected",
        "skipped",
    }
    if result.aborted_by is not None:
        assert result.state == {"start": 1}
    events, notes = read_log(log)
    assert events[-1].kind == "proposal_finished" and not notes
