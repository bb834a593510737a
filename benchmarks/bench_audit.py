"""``car-verify audit`` over a generated corpus of tau-bench-sized trajectories
(about 6 calls each), in one run:

    python benchmarks/bench_audit.py [N] [WORKERS]

1. Writes N trajectories (default 20,000) as JSON lines, OpenAI chat style.
2. Audits them (import, lift, verify under ``car``, a policy with a trace rule,
   write Parquet) with WORKERS processes (default 2), and reports trajectories
   per second overall and per core, the per-stage split, and the peak memory of
   the parent and of the largest worker (RSS high-water marks).
3. In the same run, ``car_runtime.verify`` alone on the same lifted proposals
   (the first 2,000), per core, and the ratio.
"""

from __future__ import annotations

import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

from car_verify.corpora.audit import AuditSettings, audit

TOOLS = ["get_user_details", "get_reservation_details", "search_direct_flight",
         "update_reservation_flights", "calculate", "think", "book_reservation"]  # fmt: skip


#: The policy the audit checks with: one trace rule.
POLICY = (
    '[[trace_rule]]\nname = "authenticate-first"\n'
    'rule = "update_reservation_flights only after get_user_details"\n'
)


def trajectory(rng: random.Random, n: int) -> dict[str, object]:
    messages: list[dict[str, object]] = [{"role": "user", "content": "help me change my flight"}]
    for k in range(rng.randint(4, 8)):
        tool = rng.choice(TOOLS)
        call_id = f"call_{n}_{k}"
        args = {"user_id": f"user_{rng.randint(0, 999)}", "n": rng.randint(0, 3)}
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": tool, "arguments": json.dumps(args)},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": '{"ok": true}'})
    return {"id": f"t{n}", "reward": rng.randint(0, 1), "messages": messages}  # fmt: skip


def write_corpus(folder: Path, n: int) -> tuple[Path, AuditSettings]:
    """``n`` trajectories (seeded) as JSON lines in ``folder``, and the settings of an
    audit with the trace-rule policy (written there too)."""
    rng = random.Random(3)
    corpus = folder / "corpus.jsonl"
    with corpus.open("w") as f:
        for i in range(n):
            f.write(json.dumps(trajectory(rng, i)) + "\n")
    policies = folder / "policies"
    policies.mkdir()
    (policies / "auth.toml").write_text(POLICY)
    return corpus, AuditSettings(policies=str(policies))


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    with tempfile.TemporaryDirectory() as tmp:
        corpus, settings = write_corpus(Path(tmp), n)
        start = time.perf_counter()
        summary = audit([str(corpus)], Path(tmp) / "out", settings=settings, workers=workers)
        took = time.perf_counter() - start
        parent = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        rate = summary.trajectories / took
        found = f"{summary.trajectories:,} trajectories, {summary.findings:,} findings"
        print(f"{found} in {took:.1f} s with {workers} workers: {rate:,.0f}/s, "
              f"{rate / workers:,.0f}/s per core")  # fmt: skip
        stages = ", ".join(f"{k} {v:.2f} s" for k, v in summary.stages.items())
        print(f"  wall clock: {stages}")
        busy = sum(summary.work.values()) or 1.0
        split = ", ".join(f"{k} {v:.2f} s ({v / busy:.0%})" for k, v in summary.work.items())
        print(f"  work in the shards, all workers: {split}")
        print(f"  peak memory: parent {parent:,.0f} MB, largest worker {child:,.0f} MB")
        try:
            import car_runtime
        except ImportError:
            return
        from car_verify.importers import Trajectory, read_file

        lifted = []
        for item in read_file(corpus):
            if isinstance(item, Trajectory):
                lifted.append(json.dumps(item.proposal()))
            if len(lifted) == 2000:
                break
        start = time.perf_counter()
        for text in lifted:
            car_runtime.verify(text, None, None, None, None)
        runtime_rate = len(lifted) / (time.perf_counter() - start)
        print(f"  car_runtime.verify alone, one core: {runtime_rate:,.0f}/s; car-verify's whole "
              f"audit per core is {rate / workers / runtime_rate:.2f}x that")  # fmt: skip


if __name__ == "__main__":
    main()
