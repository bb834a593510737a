"""Candidate proposals scored and ranked, with the runtime's answers
(``car_runtime.rank_proposals``).

Each candidate is verified (under the profile, with the tool names given) and
scored as the spec's ``CostTarget`` says, ``score = success_likelihood * (1 -
cost_weight) + cost_efficiency * cost_weight``, ``cost_weight`` clamped to [0, 1]
(default 0.2). The runtime's rules, each checked against it by a Hypothesis test:

- ``validity`` (the success likelihood; no run history, so
  ``historical_confidence`` is 1): 0 with any error; else 1 less 0.25 for each
  write-conflict warning and 0.1 for each other warning, and never below 0.1.
  The ranking's verify checks no action budget: a candidate of more than 30
  actions has no ``too-many-actions`` warning here (``verify`` gives one).
- ``cost_efficiency``, the sum of four terms, three of the plan's shape that
  share 0.75 and one of its size in tokens, 0.25. Each falls linearly to 0 and
  stays there: tool calls (0.4 of the shape's share at none, 0 at twice
  ``target_tool_calls``), actions (0.4, 0 at twice ``target_actions``), and
  parallelism (0.2 times ``1 - levels / actions``, 0 for no actions); tokens (0.25
  at none, 0 at 4,000).
- ``token_estimate``: the proposal's wire form, as the runtime writes it, in
  bytes, divided by 4 (rounded down); ``quality_per_token`` is the score per token.
- The ranking: highest score first; among equal scores, fewest actions; then
  the candidates' order.

``target_duration_ms`` plays no part: a proposal declares no durations.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..base.display import HtmlDisplay
from ..base.errors import InputError
from ..ir.model import ActionProposal, CostTarget, load, timestamp_utc, weighted_score

if TYPE_CHECKING:
    from ..semantics import ProfileLike

__all__ = ["ScoredProposal", "rank_proposals", "token_estimate"]

#: The cost-efficiency terms: the plan's shape shares 0.75 (tool calls 0.4 of it,
#: actions 0.4, parallelism 0.2), its tokens 0.25, falling to 0 at 4,000. The weights
#: are products, as the runtime computes them (0.75 * 0.4 is 0.30000000000000004).
TOKENS_WEIGHT = 0.25
TOKENS_CEILING = 4000
_SHAPE = 1.0 - TOKENS_WEIGHT
TOOL_CALLS_WEIGHT = _SHAPE * 0.4
ACTIONS_WEIGHT = _SHAPE * 0.4
PARALLELISM_WEIGHT = _SHAPE * 0.2
#: The runtime's own clock writes nine digits of a second: "2026-12-02T18:26:17.003496787Z".
_CLOCK_TIMESTAMP_BYTES = 30


@dataclass(frozen=True, slots=True)
class ScoredProposal(HtmlDisplay):
    """The runtime's ``ScoredProposal``: one candidate, its score and what made it."""

    index: int
    score: float
    validity: float
    cost_efficiency: float
    error_count: int
    warning_count: int
    action_count: int
    tool_call_count: int
    parallelism_levels: int
    valid: bool
    state_keys_written: int
    has_write_conflicts: bool
    historical_confidence: float
    token_estimate: int
    quality_per_token: float
    outcome_value: float

    def explain(self) -> str:
        """One line: the candidate, its score and what made it."""
        from ..base.values import plural

        verdict = "valid" if self.valid else "invalid"
        return (
            f"candidate {self.index}: score {self.score:.4f} ({verdict}; validity "
            f"{self.validity:.2f}, cost efficiency {self.cost_efficiency:.4f}); "
            f"{plural(self.error_count, 'error')}, {plural(self.warning_count, 'warning')}, "
            f"{plural(self.action_count, 'action')} in {self.parallelism_levels} levels, "
            f"{self.token_estimate:,} tokens"
        )

    def __str__(self) -> str:
        return self.explain()

    def to_dict(self) -> dict[str, Any]:
        """The runtime's fields; a NaN (from a NaN ``cost_weight``) is ``null``."""
        return {
            name: None if isinstance(value, float) and math.isnan(value) else value
            for name in self.__slots__
            for value in (getattr(self, name),)
        }


def token_estimate(proposal: ActionProposal, *, timestamp_given: bool = True) -> int:
    """The runtime's estimate of a proposal's tokens: the bytes of its wire form (the
    fields it models, compact, UTF-8) divided by 4. ``timestamp_given=False``: the
    document had no timestamp, so the runtime's clock writes one."""
    doc = proposal.to_dict()
    for name in proposal.extra:
        doc.pop(name, None)
    doc.pop("timestamp")
    doc.pop("$schema", None)  # not in the runtime's IR: it drops the field
    for action, out in zip(proposal.actions, doc["actions"], strict=True):
        out.pop("dependencies", None)  # car-verify's extension; the runtime drops it
        for name in action.extra:
            out.pop(name, None)
        for assumption in out["assumptions"]:
            if "expected_value" in assumption and assumption["expected_value"] is None:
                del assumption["expected_value"]  # the runtime's None, left out
    size = len(json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode())
    written = timestamp_utc(proposal.timestamp) if timestamp_given else None
    stamp = len(written) if written is not None else _CLOCK_TIMESTAMP_BYTES
    return (size + len(',"timestamp":""') + stamp) // 4


def _falling(weight: float, amount: float, zero_at: float) -> float:
    """``weight`` at ``amount`` 0, falling linearly to 0 at ``zero_at``, then 0."""
    return weight * (1.0 - min(amount, zero_at) / zero_at)


def _score(
    index: int,
    proposal: ActionProposal,
    timestamp_given: bool,
    tools: Sequence[str] | None,
    weight: float,
    profile: ProfileLike,
) -> ScoredProposal:
    from ..api import verify

    result = verify(
        proposal,
        tools=None if tools is None else [{"name": name} for name in tools],
        max_actions=len(proposal.actions),  # no action budget: never over its own size
        profile=profile,
    )
    from ..passes.car import ADDED_CODES

    # the runtime's counts: car-verify's own warning beside them (dependency-overtaken) is
    # no warning of the runtime's ranking
    errors = len(result.errors)
    warnings = sum(1 for issue in result.warnings if issue.code not in ADDED_CODES)
    conflicts = sum(1 for issue in result.warnings if issue.code == "write-conflict")
    # 0.1 per warning and 0.15 more per conflict, in the runtime's order of float
    # operations: three warnings of which two conflicts give 0.39999999999999997
    validity = 0.0 if errors else max(0.1, 1.0 - 0.1 * warnings - 0.15 * conflicts)
    actions = len(proposal.actions)
    tool_calls = sum(1 for a in proposal.actions if a.type == "tool_call")
    levels = len(result.execution_levels)
    tokens = token_estimate(proposal, timestamp_given=timestamp_given)
    target = CostTarget()
    efficiency = (
        _falling(TOOL_CALLS_WEIGHT, tool_calls, 2 * target.target_tool_calls)
        + _falling(ACTIONS_WEIGHT, actions, 2 * target.target_actions)
        + (PARALLELISM_WEIGHT * (1.0 - levels / actions) if actions else 0.0)
        + _falling(TOKENS_WEIGHT, tokens, TOKENS_CEILING)
    )
    historical_confidence = 1.0  # stateless: no run history
    # An invalid candidate scores 0, whatever its cost.
    score = (
        weighted_score(validity * historical_confidence, efficiency, weight) if validity else 0.0
    )
    written: set[str] = set()
    for action in proposal.actions:
        written.update(action.expected_effects)
        key = action.param_key() if action.type == "state_write" else None
        if key is not None:
            written.add(key)
    return ScoredProposal(
        index=index,
        score=score,
        validity=validity,
        cost_efficiency=efficiency,
        error_count=errors,
        warning_count=warnings,
        action_count=actions,
        tool_call_count=tool_calls,
        parallelism_levels=levels,
        valid=errors == 0,
        state_keys_written=len(written),
        has_write_conflicts=conflicts > 0,
        historical_confidence=historical_confidence,
        token_estimate=tokens,
        quality_per_token=score / tokens if tokens else 0.0,
        outcome_value=0.0,
    )


def _clamped(weight: float | None) -> float:
    if weight is None:
        return CostTarget().cost_weight
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise InputError(f"cost_weight must be a number, not {type(weight).__name__}")
    return float(weight) if math.isnan(weight) else min(max(float(weight), 0.0), 1.0)


def _rank_key(scored: ScoredProposal) -> tuple[float, int, int]:
    score = 0.0 if math.isnan(scored.score) else scored.score  # NaN ties with NaN
    return (-score, scored.action_count, scored.index)


def rank_proposals(
    candidates: Iterable[ActionProposal | Mapping[str, Any]],
    tools: Iterable[str] | None = None,
    cost_weight: float | None = None,
    *,
    profile: ProfileLike = None,
) -> list[ScoredProposal]:
    """Score each candidate and rank them, best first (see the module's rules).

    ``tools``: the tool names a tool call may name (without it, any); the runtime's
    verify checks each candidate against them. ``profile``: whose verify and
    levels (the default ``car``, the runtime's). A candidate that does not load is
    an :class:`InputError` naming its index.
    """
    from ..semantics import semantics_of

    sem = semantics_of(profile)
    names = None if tools is None else list(dict.fromkeys(str(name) for name in tools))
    weight = _clamped(cost_weight)
    scored = []
    for index, candidate in enumerate(candidates):
        try:
            model = load(candidate)
            sem.refuse(model)
        except InputError as err:
            raise (err if err.source else err.under(index)) from None
        given = not isinstance(candidate, Mapping) or "timestamp" in candidate
        scored.append(_score(index, model, given, names, weight, sem))
    return sorted(scored, key=_rank_key)
