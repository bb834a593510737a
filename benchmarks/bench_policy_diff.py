"""``policy diff`` of two 50-rule sets (target: under 2 s), and ``policy lint`` of
one, in one run, next to loading the two sets (the baseline the ratio is taken
against):

    python benchmarks/bench_policy_diff.py [RULES] [REPEATS]

The sets are generated alike (deny_tool, deny_keyword, deny_tool_param with
``equals`` and ``contains``, allow-lists, patterns, rate limits, trace rules over
20 tools); NEW changes a tenth of OLD's rules, so the diff has work both ways.
The last row lints a *piled* set of as many rules on three tools and five
parameters (many rules on each slot: the shape that took lint 44 s at 50 rules
when it asked each question whole).

Last, the erratic query (``\\bx`` against ``\\bxy``, a word boundary the string
solver holds only approximately) diffed REPEATS * 4 times with z3 asked in tries
(``car_verify.semantics.solving.check``) and as many with one plain check
(``check_once``), alternating in the same run.
"""

from __future__ import annotations

import random
import statistics
import sys
import time

from car_verify.plan.policy_diff import policy_diff
from car_verify.rules import policy_analysis
from car_verify.rules.policy import load_policy_text
from car_verify.rules.policy_analysis import lint_policies
from car_verify.semantics import solving, value_domain

PATTERNS = ["sk-[A-Za-z0-9]{20,}", "^https?://10\\.", "(?:DROP|DELETE)\\s+TABLE", "\\d{16}", "x.y$"]


def rule_text(rng: random.Random, n: int) -> str:
    tool, param = f"tool_{rng.randrange(20)}", f"p{rng.randrange(4)}"
    kind = n % 7
    if kind == 0:
        return f'[[deny_tool_param]]\ntool = "{tool}"\nparam = "{param}"\n'  # present at all
    if kind == 1:
        return f'[[deny_tool_param]]\ntool = "{tool}"\nparam = "{param}"\nequals = "v{n}"\n'
    if kind == 2:
        return f'[[deny_tool_param]]\ntool = "{tool}"\nparam = "{param}"\ncontains = "c{n}"\n'
    if kind == 3:
        allow = ", ".join(f'"a{k}"' for k in range(rng.randint(1, 4)))
        return f'[[allow_tool_param]]\ntool = "{tool}"\nparam = "{param}"\nallow = [{allow}]\n'
    if kind == 4:
        pattern = rng.choice(PATTERNS).replace("\\", "\\\\")
        return (
            f'[[deny_tool_param_matching]]\ntool = "{tool}"\nparam = "{param}"\n'
            f'matches = "{pattern}"\n'
        )
    if kind == 5:
        return (
            f'[[rate_limit_tool]]\ntool = "{tool}"\nmax_calls = {rng.randint(1, 5)}\n'
            f"interval_secs = {rng.choice([1, 10, 60])}\n"
        )
    return f'[[trace_rule]]\nrule = "never {tool} after tool_{rng.randrange(20)}"\n'


def rule_set(seed: int, rules: int, changed: float) -> str:
    rng = random.Random(seed)
    keywords = 'deny_keyword = ["rm -rf /"]\ndeny_tool = ["tool_0"]\n'
    texts = [rule_text(rng, n) for n in range(rules - 2)]
    other = random.Random(seed + 1)
    for n in range(len(texts)):
        if other.random() < changed:
            texts[n] = rule_text(other, n)
    return keywords + "".join(texts)


def piled_set(rules: int) -> str:
    """Rules on three tools and five parameters: contains, equals, allow-lists,
    patterns in turn."""
    out = []
    for k in range(rules):
        where = f'tool = "t{k % 3}"\nparam = "p{k % 5}"\n'
        kind = k % 4
        if kind == 0:
            out.append(f'[[deny_tool_param]]\n{where}contains = "c{k}"\n')
        elif kind == 1:
            out.append(f'[[deny_tool_param]]\n{where}equals = "v{k}"\n')
        elif kind == 2:
            out.append(f'[[allow_tool_param]]\n{where}allow = ["a{k}", "b{k}"]\n')
        else:
            out.append(f'[[deny_tool_param_matching]]\n{where}matches = "^x{k}"\n')
    return "".join(out)


def main() -> None:
    rules = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    old_text, new_text = rule_set(7, rules, 0.0), rule_set(7, rules, 0.1)
    load, diff, same, lint, piled = [], [], [], [], []
    piled_rules = load_policy_text(piled_set(rules))
    verdict = same_verdict = ""
    for _ in range(repeats):
        start = time.perf_counter()
        old, new = load_policy_text(old_text), load_policy_text(new_text)
        load.append(time.perf_counter() - start)
        start = time.perf_counter()
        verdict = policy_diff(old, new).verdict
        diff.append(time.perf_counter() - start)
        start = time.perf_counter()
        # One rule written twice: the same calls denied, yet not the same rules, so
        # both directions must be proved (the same rules would be decided at once).
        twice = load_policy_text(old_text)
        items = next(items for _, items in twice.kinds() if items)
        items.append(items[0])
        same_verdict = policy_diff(old, twice).verdict  # both ways unsat
        same.append(time.perf_counter() - start)
        start = time.perf_counter()
        found = lint_policies(old)
        lint.append(time.perf_counter() - start)
        start = time.perf_counter()
        lint_policies(piled_rules)
        piled.append(time.perf_counter() - start)
    count = load_policy_text(old_text).count()
    base = statistics.median(load)
    rows = [("diff", diff), ("diff (a set and itself, a rule twice)", same), ("lint", lint)]
    for name, times in [*rows, ("lint (piled on three tools)", piled)]:
        print(
            f"policy {name} of {count}-rule sets: median {statistics.median(times):.3f} s "
            f"(min {min(times):.3f}, max {max(times):.3f}, {repeats} runs); "
            f"{statistics.median(times) / base:,.0f}x loading both"
        )
    print(f"  loading both sets: median {base * 1e3:.1f} ms; diff verdict {verdict}, of a "
          f"set and itself {same_verdict}; "
          f"lint found {len(found)}")  # fmt: skip

    erratic(repeats * 4)


def erratic(runs: int) -> None:
    """The word-boundary pair, with tries and with the plain check, alternating."""
    rule = '[[deny_tool_param_matching]]\ntool = "a"\nparam = "p"\nmatches = "\\\\b{}"\n'
    old, new = load_policy_text(rule.format("x")), load_policy_text(rule.format("xy"))
    times: dict[str, list[float]] = {"tries": [], "plain": []}
    for _ in range(runs):
        for name, check in (("tries", solving.check), ("plain", solving.check_once)):
            policy_analysis.check = value_domain.check = check  # type: ignore[attr-defined]
            start = time.perf_counter()
            policy_diff(old, new)
            times[name].append(time.perf_counter() - start)
    policy_analysis.check = value_domain.check = solving.check  # type: ignore[attr-defined]
    for name, spent in times.items():
        print(f"policy diff of \\bx and \\bxy, z3 asked in {name}: median "
              f"{statistics.median(spent):.2f} s (min {min(spent):.2f}, max {max(spent):.2f}, "
              f"{runs} runs)")  # fmt: skip
    worst = max(times["plain"]) / max(times["tries"])
    print(f"  the slowest plain diff took {worst:,.0f}x the slowest with tries")


if __name__ == "__main__":
    main()
