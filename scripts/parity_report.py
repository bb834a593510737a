"""How often car-verify under the ``car`` profile agrees with ``car_runtime`` 0.52.1.

    python scripts/parity_report.py [N] [--seed S]

Generates N small proposals (the strategies of ``tests/car_oracle.py``), runs each
function on both sides, and prints per function how many cases agreed, how many
CAR answered nondeterministically (its duplicate-call fingerprint: left out of the
comparison of that case's loop findings, as docs/compat.md row C18 says), and the
first disagreement in full. ``simulate_monte_carlo`` is compared statistically
(the runtime samples: every number within sampling error of car-verify's exact
answer, ``tests/car_oracle.py``'s ``monte_carlo_differences``) on N cases of its
own generator (retries, tools named ``""``, goals, default rates). Needs
``pip install car-runtime==0.52.1``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import car_runtime as rt
from car_oracle import (
    monte_carlo_cases,
    monte_carlo_differences,
    proposals,
    states,
    tool_registries,
    tx_projection,
    verify_both,
)
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

import car_verify as cv


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, nargs="?", default=2000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    cases = st.tuples(
        proposals(),
        proposals(max_actions=4),
        states,
        tool_registries,
        st.sampled_from([None, None, 2, 4]),
        st.none() | st.dictionaries(st.sampled_from(["k", "j", "m"]), st.integers(0, 2)),
    )
    agreed: Counter[str] = Counter()
    nondeterministic: Counter[str] = Counter()
    total: Counter[str] = Counter()
    first: dict[str, Any] = {}

    # Both runs draw args.n cases from the seed, generation only (no shrinking: the
    # report counts, it does not minimise).
    generated = settings(
        max_examples=args.n,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )

    def record(name: str, ours: Any, theirs: Any, case: Any) -> None:
        total[name] += 1
        if ours == theirs:
            agreed[name] += 1
        elif name not in first:
            first[name] = {"case": case, "car-verify": ours, "car_runtime": theirs}

    @seed(args.seed)
    @generated
    @given(cases)
    def run(case: Any) -> None:
        p, q, state, tools, max_actions, versions = case
        check(p, q, state, tools, max_actions, versions)

    def check(p: Any, q: Any, state: Any, tools: Any, max_actions: Any, versions: Any) -> None:
        ours, theirs, stripped = verify_both(p, state, tools, max_actions)
        nondeterministic["verify"] += stripped
        record("verify", ours, theirs, [p, state, tools, max_actions])
        if theirs == "rejected":
            return
        s_json = None if state is None else json.dumps(state)
        record(
            "simulate",
            cv.simulate(p, state).to_dict(),
            json.loads(rt.simulate(json.dumps(p), s_json)),
            [p, state],
        )
        record(
            "optimize",
            [a.state_dependencies for a in cv.optimize(p).proposal.actions],
            [a["state_dependencies"] for a in json.loads(rt.optimize(json.dumps(p)))["actions"]],
            p,
        )
        record(
            "transaction_check",
            tx_projection(cv.transaction_check(p, versions=versions, state=state).to_dict()),
            tx_projection(
                json.loads(
                    rt.transaction_check(
                        json.dumps(p), None if versions is None else json.dumps(versions), s_json
                    )
                )
            ),
            [p, versions, state],
        )
        try:
            their_eq: Any = rt.equivalent(json.dumps(p), json.dumps(q))
        except ValueError:
            return
        record(
            "equivalent (sampled)",
            cv.equivalent(p, q, method="sampled").equivalent,
            their_eq,
            [p, q],
        )

    @seed(args.seed)
    @generated
    @given(monte_carlo_cases())
    def run_monte_carlo(case: Any) -> None:
        from car_verify import runtime as drop_in

        answers = []
        for module in (drop_in, rt):
            try:
                answers.append(json.loads(module.simulate_monte_carlo(*case)))
            except ValueError as err:
                answers.append(("rejected", str(err).split(":", 1)[0]))
        ours, theirs = answers
        if isinstance(ours, dict) and isinstance(theirs, dict):
            record("monte_carlo (stat.)", monte_carlo_differences(theirs, ours), [], case)
        else:
            record("monte_carlo (stat.)", ours, theirs, case)

    run()
    run_monte_carlo()
    print(f"{'function':<22} {'agreed':>8} {'of':>8}  nondeterministic in CAR")
    for name in total:
        print(f"{name:<22} {agreed[name]:>8} {total[name]:>8}  {nondeterministic[name]}")
    for name, item in first.items():
        print(f"\nfirst disagreement in {name}:\n{json.dumps(item)[:3000]}")
    return 0 if not first else 1


if __name__ == "__main__":
    raise SystemExit(main())
