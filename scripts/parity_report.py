"""How often car-verify under the ``car`` profile agrees with the installed ``car_runtime``.

    python scripts/parity_report.py [N] [--seed S] [--only NAME ...]

Generates N cases per function from the seed and prints, per function, how many
agreed and the first disagreement in full. Run it once per runtime version (a
venv with ``car-runtime==0.52.1``, the one the ``car`` profile follows, and one
with a newer version): the report names the version it ran against.

- ``verify``, ``simulate``, ``optimize``, ``transaction_check`` and sampled
  ``equivalent`` on the proposals of ``tests/car_oracle.py`` (repeated and empty
  ids, empty keys and tool names, retries, long plans with many warnings and many
  untested regions); verify's loop findings are left out where CAR answers
  nondeterministically (its duplicate-call fingerprint, docs/compat.md row C18),
  and counted. ``verify (crowded)``: verify again on plans crowded past the
  runtime's bounds on the evidence's deductions (most of them over 4 warnings or
  12 untested regions, ``car_oracle.crowded_proposals``). ``simulate_monte_carlo``
  is compared statistically (the runtime samples: ``tests/car_oracle.py``'s
  ``monte_carlo_differences``) on its own generator (retries, tools named ``""``,
  goals, default rates).
- Every other shared function through its differential test (:data:`DIFFERENTIAL`):
  the test's own strategies and comparison, on N inputs drawn from the seed by
  Hypothesis' ``fuzz_one_input``; a disagreement is the test's assertion failing,
  shown with the test's arguments.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import sys
import traceback
from collections import Counter
from importlib.metadata import version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import car_runtime as rt
from car_oracle import (
    crowded_proposals,
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

#: The differential tests the report runs, by the function they compare: (name,
#: test module, test function). Each compares car-verify (the library and the
#: drop-in ``car_verify.runtime``) with the runtime on generated input.
DIFFERENTIAL: list[tuple[str, str, str]] = [
    ("permission_classify+evaluate", "test_permissions",
     "test_classify_and_evaluate_agree_with_the_runtime_on_generated_calls"),
    ("permission fingerprints", "test_permissions",
     "test_fingerprints_agree_with_the_runtime_on_any_parameters"),
    ("rank_proposals", "test_ranking", "test_the_runtimes_scores_and_ranking_exactly"),
    ("workflow graph+policies", "test_workflow", "test_graph_checks_agree_with_the_runtime"),
    ("verify_workflow", "test_workflow",
     "test_verify_workflow_agrees_with_the_runtime_in_plain_words"),
    ("execute", "test_execute_parity", "test_the_executor_ends_each_action_as_the_runtime_does"),
    ("check_intent+gate+enforce", "test_intent",
     "test_check_intent_gate_and_enforcement_agree_with_the_runtime"),
    ("check_intent repeated ids", "test_intent",
     "test_influence_over_repeated_ids_and_cycles_is_the_fixpoints_and_the_runtimes"),
    ("check_intent_plan", "test_intent", "test_check_intent_plan_agrees_with_the_runtime"),
    ("check_intent_plan repeats", "test_intent",
     "test_check_intent_plan_with_repeated_ids_blocks_what_the_runtime_blocks"),
    ("analyze_concurrency+gate", "test_concurrency",
     "test_the_analysis_and_the_gate_agree_with_the_runtime"),
    ("concurrency repeated ids", "test_concurrency",
     "test_a_repeated_op_id_gets_the_runtimes_answer_and_a_note_under_car"),
    ("information flow+gate", "test_flow",
     "test_the_checks_the_gate_and_enforcement_agree_with_the_runtime"),
    ("drop-in: proposals", "test_runtime_module",
     "test_generated_proposals_get_the_runtimes_answers"),
    ("drop-in: check_plan", "test_runtime_module", "test_plans_get_the_runtimes_answers"),
    ("drop-in: predictions", "test_runtime_module",
     "test_predicted_effects_give_the_runtimes_end_state"),
    ("drop-in: monte carlo", "test_runtime_module",
     "test_simulate_monte_carlo_gives_the_runtimes_fields_only"),
]  # fmt: skip


def run_differential(
    name: str, module: str, test: str, n: int, seed_value: int
) -> tuple[int, int, str | None]:
    """The test run on ``n`` inputs drawn from the seed: (agreed, compared, the
    first disagreement). An input the test's strategies reject is drawn again."""
    function = getattr(importlib.import_module(module), test)
    handle = function.hypothesis
    rng = random.Random(f"{seed_value}:{name}")
    agreed = compared = tries = 0
    first = None
    while compared < n and tries < 4 * n:
        tries += 1
        try:
            if handle.fuzz_one_input(rng.randbytes(4096)) is None:
                continue  # not a valid input of the test's strategies
            agreed += 1
        except Exception as err:  # a failed comparison, or a crash on either side
            if first is None:
                first = _failure(err, handle.inner_test)
        compared += 1
    return agreed, compared, first


def _failure(err: Exception, inner: Any) -> str:
    """The failing assertion's line and the test's arguments."""
    frames = []
    tb = err.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    code = inner.__code__
    arguments = next(
        (
            {k: f.f_locals[k] for k in code.co_varnames[: code.co_argcount] if k in f.f_locals}
            for f in frames
            if f.f_code is code
        ),
        {},
    )
    where = "".join(traceback.format_exception(err)[-2:]).strip()
    return f"{where}\narguments: {json.dumps(arguments, default=repr)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, nargs="?", default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--only", nargs="+", metavar="NAME", help="run these functions only (names as printed)"
    )
    args = parser.parse_args(argv)
    settings.register_profile("parity-report", database=None)  # nothing saved between runs
    settings.load_profile("parity-report")
    print(f"car_runtime {version('car-runtime')}, seed {args.seed}, {args.n} cases per function")
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
            cv.equivalent(p, q, method="sampled", probe_constants=False).no_difference_found,
            their_eq,
            [p, q],
        )

    @seed(args.seed)
    @generated
    @given(crowded_proposals(), states, tool_registries)
    def run_crowded(p: Any, state: Any, tools: Any) -> None:
        ours, theirs, stripped = verify_both(p, state, tools, None)
        nondeterministic["verify (crowded)"] += stripped
        record("verify (crowded)", ours, theirs, [p, state, tools])

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

    def wanted(name: str) -> bool:
        return not args.only or name in args.only

    if any(map(wanted, ("verify", "simulate", "optimize", "transaction_check"))):
        run()
    if wanted("verify (crowded)"):
        run_crowded()
    if wanted("monte_carlo (stat.)"):
        run_monte_carlo()
    for name, module, test in DIFFERENTIAL:
        if wanted(name):
            agreed[name], total[name], failure = run_differential(
                name, module, test, args.n, args.seed
            )
            if failure is not None:
                first[name] = failure
    print(f"{'function':<30} {'agreed':>8} {'of':>8}  nondeterministic in CAR")
    for name in total:
        print(f"{name:<30} {agreed[name]:>8} {total[name]:>8}  {nondeterministic[name]}")
    for name, item in first.items():
        shown = item if isinstance(item, str) else json.dumps(item)
        print(f"\nfirst disagreement in {name}:\n{shown[:3000]}")
    return 0 if not first else 1


if __name__ == "__main__":
    raise SystemExit(main())
