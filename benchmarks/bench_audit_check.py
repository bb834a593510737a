"""The audit's check stage alone, against ``car_runtime.verify``, in one run:

    python benchmarks/bench_audit_check.py [N] [ROUNDS]

N trajectories of ``bench_audit.py`` (default 2,000; about 6 calls each) are read
and lifted once; each round then checks every one as ``audit_shard`` does
(``_check``: load the lifted proposal, verify under ``car`` with the policy of
``bench_audit.py``, one trace rule, within the per-item budget), each time from
a fresh lift outside the timer, then the same check by the plain runner
(``checked_plain``: every pass over the model, the stage before issue 61), and
times ``car_runtime.verify`` on the same proposals right after. Prints
trajectories a second per core, the ratio to the plain runner's rate and to the
runtime's, min / median / max over the rounds (default 7).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_audit import write_corpus

from car_verify.corpora.audit import _check, _engine, checked_plain
from car_verify.importers import Trajectory, read_file


def main() -> None:
    import car_runtime

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    with tempfile.TemporaryDirectory() as tmp:
        corpus, settings = write_corpus(Path(tmp), n)
        items = [t for t in read_file(corpus) if isinstance(t, Trajectory)]
        engine = _engine(settings)
    texts = [json.dumps(t.proposal()) for t in items]
    rates, ratios, gains = [], [], []
    for _ in range(rounds):
        lifted = [t.proposal() for t in items]  # the check owns what it is given
        start = time.perf_counter()
        for item, proposal in zip(items, lifted, strict=True):
            _check(item, settings, engine, proposal)
        checked = time.perf_counter()
        lifted = [t.proposal() for t in items]
        plain_start = time.perf_counter()
        for item, proposal in zip(items, lifted, strict=True):
            _check(item, settings, engine, proposal, checked_plain)
        plain_end = time.perf_counter()
        for text in texts:
            car_runtime.verify(text, None, None, None, None)
        ended = time.perf_counter()
        rate, runtime = len(items) / (checked - start), len(items) / (ended - plain_end)
        plain = len(items) / (plain_end - plain_start)
        rates.append(rate)
        ratios.append(rate / runtime)
        gains.append(rate / plain)
        print(f"  check {rate:,.0f}/s, plain runner {plain:,.0f}/s ({rate / plain:.2f}x), "
              f"car_runtime.verify {runtime:,.0f}/s: {rate / runtime:.3f}")  # fmt: skip

    def spread(values: list[float], fmt: str) -> str:
        middle = statistics.median(values)
        return "/".join(format(v, fmt) for v in (min(values), middle, max(values)))

    print(f"{len(items):,} trajectories, {rounds} rounds (min/median/max): check stage "
          f"{spread(rates, ',.0f')} per second per core; {spread(gains, '.2f')}x the plain "
          f"runner's rate; {spread(ratios, '.3f')} of car_runtime.verify's rate")  # fmt: skip


if __name__ == "__main__":
    main()
