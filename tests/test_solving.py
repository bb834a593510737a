"""z3 asked in tries (car_verify.semantics.solving): the same verdicts as one plain
check, the tries' seeds and resource limits, and the time limit kept."""

from __future__ import annotations

from typing import Any

import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from car_verify.semantics.solving import FIRST_TRY, check, check_once

x = z3.String("x")
LITERALS = st.sampled_from(["", "a", "ab", "x", "xy", "b a"])
ANY = z3.AllChar(z3.ReSort(z3.StringSort()))


@st.composite
def string_facts(draw: st.DrawFn) -> Any:
    """A small conjunction of string facts, some negated: regular-expression
    membership, containment, prefixes and lengths."""
    atoms = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["in", "contains", "prefix", "length"]))
        lit = draw(LITERALS)
        if kind == "in":  # ends with the literal
            fact = z3.InRe(x, z3.Concat(z3.Star(ANY), z3.Re(lit)))
        elif kind == "contains":
            fact = z3.Contains(x, z3.StringVal(lit))
        elif kind == "prefix":
            fact = z3.PrefixOf(z3.StringVal(lit), x)
        else:
            fact = z3.Length(x) <= draw(st.integers(0, 3))
        atoms.append(z3.Not(fact) if draw(st.booleans()) else fact)
    return z3.And(*atoms)


@settings(max_examples=60, deadline=None)
@given(string_facts())
def test_tries_give_the_plain_checks_verdict(facts: Any) -> None:
    tried, plain = z3.Solver(), z3.Solver()
    tried.add(facts)
    plain.add(facts)
    ours, theirs = check(tried, 10_000), check_once(plain, 10_000)
    if z3.unknown not in (ours, theirs):
        assert ours == theirs
    if ours == z3.sat:  # the model is a real one
        assert z3.is_true(tried.model().eval(facts, model_completion=True))


class Stub:
    """A solver that gives up on its limits a set number of times, then decides."""

    def __init__(self, give_ups: int, reason: str = "canceled") -> None:
        self.give_ups, self.reason = give_ups, reason
        self.tries: list[tuple[int, int]] = []  # (seed, rlimit) per check
        self.params: dict[str, int] = {}

    def set(self, name: str, value: int) -> None:
        self.params[name] = value

    def check(self) -> Any:
        self.tries.append((self.params["random_seed"], self.params["rlimit"]))
        return z3.unknown if len(self.tries) <= self.give_ups else z3.sat

    def reason_unknown(self) -> str:
        return self.reason


def test_each_try_has_a_fresh_seed_and_twice_the_resources() -> None:
    stub = Stub(give_ups=3)
    assert check(stub, 10_000) == z3.sat
    assert stub.tries == [(n, FIRST_TRY * 2**n) for n in range(4)]
    assert stub.params["rlimit"] == 0  # left without a resource limit
    assert Stub(0).tries == [] and check(Stub(0), 10_000) == z3.sat


def test_a_query_z3_cannot_decide_is_not_tried_again_and_the_time_limit_holds() -> None:
    incomplete = Stub(give_ups=5, reason="(incomplete (theory seq))")
    assert check(incomplete, 10_000) == z3.unknown and len(incomplete.tries) == 1
    hopeless = Stub(give_ups=10**9)
    assert check(hopeless, 0) == z3.unknown and hopeless.tries == []


@settings(deadline=None)
@given(
    st.sampled_from(["gt", "gte", "lt", "lte"]),
    st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from([2.0**53, 2.0**63, -(2.0**63), 2.0**64, 2.0**64 - 2048, 0.5, -0.5]),
    ),
    st.lists(
        st.one_of(
            st.integers(-(2**63), 2**64 - 1),
            st.sampled_from([-(2**63), 2**64 - 1, 2**53, 2**53 + 1, 2**63, 0, -1]),
        ),
        min_size=1,
        max_size=8,
    ),
)
def test_the_car_integer_ordering_holds_for_the_integers_float_comparison_admits(
    op: str, bound: float, samples: list[int]
) -> None:
    """The z3 term CAR's integer ordering makes (a bisection for the threshold
    where ``float(j) op bound`` switches) against the plain rule, integer by integer."""
    import operator

    from car_verify.semantics.car import _integer_ordering

    i = z3.Int("i")
    term = _integer_ordering(z3, op, bound, i)
    compare = {"gt": operator.gt, "gte": operator.ge, "lt": operator.lt, "lte": operator.le}[op]
    for j in samples:
        held = z3.simplify(z3.substitute(term, (i, z3.IntVal(j))))
        assert z3.is_true(held) == compare(float(j), bound), (op, bound, j)
