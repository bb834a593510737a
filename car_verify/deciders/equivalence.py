"""``equivalent``: do two proposals leave the same state? Sampled, or decided with z3.

Under either profile (the walk compared is the active profile's ``simulate``):

* ``method="sampled"`` (the spec's check): compare ``simulate`` end states over
  probe states: the runtime's two (``{}`` and ``{"x": 1, "y": 2}``) and
  car-verify's own, built from the constants the plans name
  (:func:`named_probes`), in Python as on the command line
  (``probe_constants=False`` leaves the runtime's two only, as the drop-in
  ``car_verify.runtime.equivalent`` does). Tier ``sampled``. A probe that
  separates the plans is a real difference (``equivalent`` False, with the
  probe as the counterexample); no difference on the probes is no proof:
  ``equivalent`` is None, ``no_difference_found`` True and ``reason`` says how
  many probes were compared. (Before, this answer was ``equivalent=True``.)
* ``method="z3"``: decide the same question over **all** initial states
  (:mod:`car_verify.semantics.symbolic`, over the profile's semantics). Equivalent: tier
  ``decision_procedure``. Not equivalent: a concrete counterexample initial state,
  replayed through ``simulate`` before it is reported (under ``car``, a state on
  which ``car_runtime.simulate`` gives the two plans different end states).
  Anything else is ``unknown`` with the reason; never a guess.
* ``method="auto"`` (the default): z3 where it can model the plans; otherwise the
  probes, and equal probes are then unknown ("sampled, not decided").
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..api import ProposalLike, _state, simulate
from ..base.display import HtmlDisplay
from ..base.errors import InputError, UsageError, deep_values_are_input_errors
from ..base.findings import Tier
from ..base.values import ABSENT, json_equal
from ..ir.model import load
from ..semantics import ProfileLike, semantics_of
from ..semantics.base import Semantics
from ..semantics.profiles import DEFAULT_PROFILE

__all__ = [
    "DEFAULT_PROBES",
    "EquivalenceResult",
    "differing_keys",
    "equivalent",
    "named_probes",
]

DEFAULT_PROBES: tuple[dict[str, Any], ...] = ({}, {"x": 1, "y": 2})
#: At most this many probe states are built from the plans' constants.
MAX_NAMED_PROBES = 256
Method = Literal["sampled", "z3", "auto"]


@dataclass(slots=True)
class EquivalenceResult(HtmlDisplay):
    """``equivalent`` is True, False, or None (unknown: see ``reason``)."""

    equivalent: bool | None
    tier: Tier
    method: Method
    counterexample: dict[str, Any] | None = None
    differing_keys: list[str] = field(default_factory=list)
    reason: str | None = None
    end_states: tuple[dict[str, Any], dict[str, Any]] | None = None
    #: The profile whose walk was compared (docs/semantics.md §9).
    profile: str = DEFAULT_PROFILE.value
    #: How many probe states were compared (sampled answers).
    probes: int = 0

    @property
    def no_difference_found(self) -> bool:
        """Sampling compared the plans on :attr:`probes` states and found no
        difference: not a proof, so :attr:`equivalent` is None (undecided)."""
        return self.equivalent is None and self.tier is Tier.SAMPLED and self.probes > 0

    @property
    def decided(self) -> bool:
        """Whether :attr:`equivalent` is an answer (True or False), not None."""
        return self.equivalent is not None

    def to_dict(self) -> dict[str, Any]:
        """The wire object: ``{equivalent, tier, counterexample, differing_keys}``
        (plus ``reason`` when the answer is unknown), and the ``profile``."""
        out: dict[str, Any] = {
            "equivalent": self.equivalent,
            "tier": self.tier.value,
            "counterexample": self.counterexample,
            "differing_keys": list(self.differing_keys),
            "profile": self.profile,
        }
        if self.equivalent is None:
            out["reason"] = self.reason
        return out

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def explain(self) -> str:
        if self.no_difference_found and self.method == "sampled":
            states = "probe state" if self.probes == 1 else "probe states"
            return (
                f"no difference on {self.probes:,} {states} (not a proof; --method z3 "
                f"decides) (tier {self.tier.value})"
            )
        if self.equivalent is None:
            return f"unknown ({self.method}, tier {self.tier.value}): {self.reason}"
        if self.equivalent:
            return f"equivalent for every initial state (tier {self.tier.value})"
        lines = [
            f"not equivalent (tier {self.tier.value}): they differ on "
            + ", ".join(self.differing_keys),
            f"counterexample initial state: {json.dumps(self.counterexample, sort_keys=True)}",
        ]
        if self.end_states is not None:
            a, b = self.end_states
            for key in self.differing_keys:
                lines.append(f"  {key}: {_show(a, key)} vs {_show(b, key)}")
        return "\n".join(lines)


def _show(state: Mapping[str, Any], key: str) -> str:
    value = state.get(key, ABSENT)
    return "absent" if value is ABSENT else json.dumps(value)


def differing_keys(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    equal: Callable[[object, object], bool] = json_equal,
) -> list[str]:
    """Keys present in one state only, or with unequal values, sorted."""
    return sorted(
        key for key in set(a) | set(b) if key not in a or key not in b or not equal(a[key], b[key])
    )


@deep_values_are_input_errors
def equivalent(
    p1: ProposalLike,
    p2: ProposalLike,
    test_states: Sequence[Mapping[str, Any]] | None = None,
    method: Method = "auto",
    *,
    timeout_ms: int = 30_000,
    profile: ProfileLike = None,
    probe_constants: bool = True,
) -> EquivalenceResult:
    """Compare the ``simulate`` end states of two proposals (see the module docs),
    under the profile's semantics (``car``, the default, or ``strict``).

    ``probe_constants`` (True, as on the command line) adds, to the runtime's two
    probes, the states built from the constants the plans name
    (:func:`named_probes`): sampling then tries the values the plans test and
    write, where the runtime's two probes do not look. False leaves the runtime's
    two. It changes nothing when ``test_states`` is given, or when z3 decides.
    A sampled "no difference" is undecided (``equivalent`` None,
    ``no_difference_found`` True), never True."""
    sem = semantics_of(profile)
    if method not in ("auto", "sampled", "z3"):
        raise UsageError(f"unknown method {method!r}; expected 'auto', 'sampled' or 'z3'")
    a, b = load(p1), load(p2)
    sem.refuse(a)
    sem.refuse(b)
    probes = _probes(test_states)  # checked whatever decides: bad input is never ignored
    if probe_constants and test_states is None:
        probes = _unique_states([*probes, *named_probes([a, b], sem)])
    if method == "sampled":
        result = _sampled(a, b, probes, sem)
    elif method == "z3":
        result = _decided(a, b, timeout_ms, sem)
    else:
        result = _auto(a, b, probes, sem, timeout_ms)
    result.profile = sem.profile.value
    return result


def _auto(
    a: Any, b: Any, probes: list[dict[str, Any]], sem: Semantics, timeout_ms: int
) -> EquivalenceResult:
    """Decide with z3 when it can model the plans; otherwise sample, and then equal
    probes are *unknown*, never a proof."""
    decided = _decided(a, b, timeout_ms, sem)
    if decided.equivalent is not None:
        return decided
    why = decided.reason or "z3 could not decide"
    sampled = _sampled(a, b, probes, sem)
    if sampled.equivalent is False:  # a probe that differs is a real difference
        return sampled
    sampled.reason = f"equal on {sampled.probes:,} probe states; not decided ({why})"
    return sampled


def _probes(test_states: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """The probe states, each checked (an error names its place in ``test_states``)."""
    if test_states is None:
        probes: Sequence[Mapping[str, Any]] = DEFAULT_PROBES
    else:
        if isinstance(test_states, (Mapping, str)) or not isinstance(test_states, Sequence):
            raise InputError("expected an array of JSON objects", ["test_states"])
        if not test_states:
            raise InputError("must not be empty", ["test_states"])
        probes = test_states
    states = []
    for index, probe in enumerate(probes):  # every probe is checked before any runs
        try:
            states.append(_state(probe))
        except InputError as err:  # _state names the path below "initial_state"
            raise InputError(err.problem, ["test_states", index, *err.path[1:]]) from None
    return states


def _sampled(a: Any, b: Any, probes: list[dict[str, Any]], sem: Semantics) -> EquivalenceResult:
    for tried, state in enumerate(probes, 1):
        end_a, end_b = _end_states(a, b, state, sem)
        keys = differing_keys(end_a, end_b, sem.equal)
        if keys:
            return EquivalenceResult(
                False,
                Tier.SAMPLED,
                "sampled",
                dict(state),
                keys,
                end_states=(end_a, end_b),
                probes=tried,
            )
    states = "probe state" if len(probes) == 1 else "probe states"
    return EquivalenceResult(
        None,
        Tier.SAMPLED,
        "sampled",
        reason=f"no difference on {len(probes):,} {states}; sampled, not decided "
        "(method z3 decides)",
        probes=len(probes),
    )


def named_probes(proposals: Sequence[Any], profile: ProfileLike = None) -> list[dict[str, Any]]:
    """Probe states built from the constants the proposals name: for every state
    key they test, read or write, the values of their preconditions (an
    assertion's too), assumptions and effects, and each number's and boolean's
    neighbours (``n - 1``, ``n + 1``, ``n`` as a float or an integer, ``not b``).
    One state per key and value (that key alone), then states that set every key
    at once (its first value, its second, ...). Deterministic, at most
    ``MAX_NAMED_PROBES`` states, none equal to another. These are car-verify's
    own probes: the runtime's ``equivalent`` tries ``{}`` and ``{"x": 1, "y": 2}``
    only."""
    sem = semantics_of(profile)
    values: dict[str, list[Any]] = {}

    def offer(key: str, value: Any) -> None:
        seen = values.setdefault(key, [])
        for candidate in (value, *_neighbours(value)):
            if _text(candidate) not in {_text(v) for v in seen}:
                seen.append(candidate)

    for proposal in proposals:
        for action in load(proposal).actions:
            for pre, _ in action.predicate():
                if pre.operator in ("exists", "not_exists"):
                    values.setdefault(pre.key, [])
                elif pre.operator == "contains" and isinstance(pre.value, str):
                    offer(pre.key, pre.value)
                    offer(pre.key, [pre.value])
                else:
                    offer(pre.key, pre.value)
            for assumption in action.assumptions:
                if assumption.has_expected_value:
                    offer(assumption.key, assumption.expected_value)
                else:
                    values.setdefault(assumption.key, [])
            for key, value in sem.effects(action).items():
                offer(key, value)
            for key in (*action.depended_keys(), *action.reads(), *action.writes()):
                values.setdefault(key, [])
    for seen in values.values():
        if not seen:
            seen.append(True)  # a key tested for presence only: any value
    states = [{key: value} for key, seen in values.items() for value in seen]
    widest = max((len(seen) for seen in values.values()), default=0)
    states.extend(
        {key: seen[min(i, len(seen) - 1)] for key, seen in values.items()} for i in range(widest)
    )
    return _unique_states(states)[:MAX_NAMED_PROBES]


def _neighbours(value: Any) -> list[Any]:
    if type(value) is bool:
        return [not value]
    if type(value) is int:
        return [value - 1, value + 1, float(value)]
    if type(value) is float and math.isfinite(value):
        return [value - 1, value + 1, *([int(value)] if value.is_integer() else [])]
    return []


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _unique_states(states: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    out = []
    for state in states:
        text = _text(state)
        if text not in seen:
            seen.add(text)
            out.append(state)
    return out


def _end_states(
    a: Any, b: Any, state: Mapping[str, Any], sem: Semantics
) -> tuple[dict[str, Any], dict[str, Any]]:
    return (
        dict(simulate(a, initial_state=state, profile=sem)),
        dict(simulate(b, initial_state=state, profile=sem)),
    )


def _decided(a: Any, b: Any, timeout_ms: int, sem: Semantics) -> EquivalenceResult:
    from ..semantics.symbolic import Encoder, Unmodelled, Z3Unavailable

    try:
        encoder = Encoder([a, b], sem)
        run_a, run_b = encoder.run(a), encoder.run(b)
        differ = encoder.z3.Not(encoder.same_final_state(run_a, run_b))
    except (Z3Unavailable, Unmodelled) as err:
        return EquivalenceResult(None, Tier.DECISION_PROCEDURE, "z3", reason=str(err))
    z3 = encoder.z3
    answer = encoder.questions(timeout_ms).ask(differ)
    if answer.verdict == z3.unsat:
        return EquivalenceResult(True, Tier.DECISION_PROCEDURE, "z3")
    if answer.verdict != z3.sat:
        reason = f"the solver answered unknown: {answer.reason}"
        return EquivalenceResult(None, Tier.DECISION_PROCEDURE, "z3", reason=reason)
    first = encoder.state_from_model(answer.model)
    # The model's state is replayed through simulate before it is reported. Where it
    # does not separate the plans (a value the model read loosely: a number's or an
    # opaque value's text under car, a real that is no f64), a witness is sought:
    # the state with those values realized (encoder.realized_state), then the probe
    # states built from the plans' constants. Whatever is reported was replayed.
    tried = [first, encoder.realized_state(answer.model, [a, b])]
    for state in [*tried, *named_probes([a, b], sem)]:
        end_a, end_b = _end_states(a, b, state, sem)
        keys = differing_keys(end_a, end_b, sem.equal)
        if keys:
            return EquivalenceResult(
                False, Tier.DECISION_PROCEDURE, "z3", state, keys, end_states=(end_a, end_b)
            )
    return EquivalenceResult(
        None,
        Tier.DECISION_PROCEDURE,
        "z3",
        reason="the solver's counterexample did not replay under simulate "
        f"({json.dumps(first, sort_keys=True)}), and no state realized from it or built "
        "from the plans' constants separates the plans",
    )
