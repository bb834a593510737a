"""deny_tool_param_matching runs in linear time: a hostile pattern cannot hang the checker.

Target (issue 4): a catastrophic-backtracking pattern against a 100 kB value
finishes in milliseconds. For contrast, Python's backtracking ``re`` is timed on
the same pattern with a value of only 24 characters, in a subprocess with a time
limit. Run: python benchmarks/bench_regex.py
"""

from __future__ import annotations

import subprocess
import sys
import time

from car_verify.ir.model import Action
from car_verify.rules.policy import PolicyEngine, load_policy_text

PATTERN = "(a+)+$"


def main() -> int:
    engine = PolicyEngine(
        load_policy_text(
            f'[[deny_tool_param_matching]]\ntool = "t"\nparam = "p"\nmatches = "{PATTERN}"\n'
        )
    )
    ok = True
    for size in (1_000, 10_000, 100_000):
        action = Action(type="tool_call", tool="t", parameters={"p": "a" * size + "!"})
        start = time.perf_counter()
        violations = engine.check(action)
        elapsed = (time.perf_counter() - start) * 1e3
        print(
            f"RE2  {PATTERN!r} vs {size:>7} chars: {elapsed:8.3f} ms ({len(violations)} violations)"
        )
        if size == 100_000:
            ok &= elapsed < 50
    code = (
        "import re, time; s = time.perf_counter(); "
        f"re.search({PATTERN!r}, 'a' * 24 + '!'); print(time.perf_counter() - s)"
    )
    try:
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=30
        )
        backtracking = float(out.stdout) * 1e3
        print(
            f"re   {PATTERN!r} vs      25 chars: {backtracking:8.1f} ms "
            "(Python's backtracking engine)"
        )
    except subprocess.TimeoutExpired:
        print("re   did not finish within 30 s on 25 characters")
    print("PASS" if ok else "FAIL: RE2 took longer than 50 ms on 100 kB")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
