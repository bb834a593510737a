"""The ``car`` profile's verify: the upstream runtime's eight checks (docs/semantics.md §9).

What CAR's reading of a proposal *is* (its values, order, effects and walk) lives
in :mod:`car_verify.semantics.car`; this module holds what CAR's ``verify``,
``optimize`` and ``transaction_check`` report on top of that reading: the eight
evidence checks with CAR's names, severities and ``ran`` flags, run as one pass
(:class:`CarChecks`, the car profile's default) through the one pass runner.

What it checks:
    What ``car_runtime.verify`` checks, each under CAR's name: the action count
    against ``max_actions`` (30 without one), identical tool calls, preconditions
    and state dependencies on CAR's walk, tool existence and parameter types, that
    compensations resolve, and writers of a key that do not list it in
    ``state_dependencies``. Beside the verdict, ``info`` notes say what CAR ignores
    (``dependencies``, output references), where it departs from its spec, and
    what the strict profile would report that CAR does not.

Why it matters:
    These are the runtime's own answers: a plan it would refuse, car-verify
    refuses under the default profile, for the same reasons, and a plan it
    accepts is accepted. The notes say where those answers are weaker than the
    spec, without changing them.

How to fix:
    Each code's own entry says how. To have the spec's checks instead (explicit
    ``dependencies`` honoured, a repeated call judged per group), run with
    ``--profile strict``.

Why this tier:
    ``decision_procedure`` for seven of the checks (each is exact on the plan as
    written), ``heuristic`` for the loop detection: identical calls are a proxy
    for a runaway loop.

What car-verify adds on top is marked as such, and is never an error: ``info``
findings (``extension-ignored``, ``assertion-not-evaluated``, ``car-spec-deviation``,
and the strict-only codes, which CAR does not report) and one warning,
``dependency-overtaken`` (an action CAR runs beside or before what its
``dependencies`` name, so the entry gates nothing), so CAR's verdict stays the
verdict. Messages say in plain
words what CAR prints as Rust debug text. Where CAR is nondeterministic (its
duplicate-call fingerprint, its JSON key order), this module gives the answer of
CAR's documented rule, every time. ``docs/compat.md`` lists every difference.
"""

from __future__ import annotations

import functools
from bisect import bisect_left
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..base.errors import InputError
from ..base.findings import Issue, Severity, Tier
from ..base.values import format_predicate, listed
from ..ir.model import Action
from ..semantics.base import ToolSchemas
from . import CheckRecord, Context, Example, Pass, Said

__all__ = [
    "ADDED_CODES",
    "CAR_CHECKS",
    "CAR_CODES",
    "CHECK_OF_CODE",
    "CarCheck",
    "CarEvidence",
    "CarPass",
    "car_confidence",
    "car_evidence",
    "car_evidence_parts",
]

D, H = Tier.DECISION_PROCEDURE, Tier.HEURISTIC


# -- CAR's eight evidence checks: one table from findings to check records ---------


@dataclass(frozen=True, slots=True)
class CarCheck:
    """One of CAR's eight evidence checks: its name, tier, declared scope, the codes
    it counts and the passes that make them."""

    name: str
    tier: Tier
    verifies: str
    cannot_verify: str
    codes: tuple[str, ...]
    #: The passes whose findings it counts: it ran only if they were selected.
    passes: tuple[str, ...]
    #: What ``verifies`` says when the check did not run, and when it ran without
    #: a tool registry (on what it can check without one).
    skipped: str = ""
    unregistered: str = ""


CAR_CHECKS = (
    CarCheck(
        "resource_bounds",
        D,
        "action count is within the limit ({limit})",
        "per-action cost, wall-clock time, or memory at runtime",
        ("too-many-actions",),
        ("budget",),
    ),
    CarCheck(
        "loop_detection",
        H,
        "no identical tool call is repeated enough to look like a loop",
        "semantically redundant calls with differing arguments",
        ("repeated-call", "duplicate-call"),
        ("loops", "car"),
    ),
    CarCheck(
        "preconditions",
        D,
        "declared preconditions hold against the statically-known state",
        "preconditions over keys whose values are only known at runtime",
        ("precondition-unsatisfied", "unknown-operator", "assertion-fails"),
        ("operators", "strips"),
    ),
    CarCheck(
        "state_dependencies",
        D,
        "each declared state dependency is produced before it is read",
        "undeclared reads \u2014 state a tool consumes without listing it",
        ("missing-dependency",),
        ("strips",),
    ),
    CarCheck(
        "tool_existence",
        D,
        "every tool_call names a registered tool",
        "whether the registered tool behaves as its name/description implies",
        ("missing-tool-name", "unknown-tool"),
        ("structure", "tools"),
        "(skipped \u2014 no tool registry supplied)",
        "tool_call structural well-formedness (a tool is named); "
        "registry not supplied so existence unchecked",
    ),
    CarCheck(
        "param_schema",
        D,
        "tool_call parameters match the registered JSON Schema (types + required)",
        "value-level constraints beyond type/required (ranges, formats, cross-field)",
        ("param-schema",),
        ("tools",),
        "(skipped \u2014 no tool schemas supplied; existence only)",
    ),
    CarCheck(
        "compensation_resolution",
        D,
        "a declared compensation names a registered tool or an action in this proposal, "
        "and a `compensable` action declares one at all",
        "whether the named compensation actually undoes the effect \u2014 that it is the "
        "right inverse, and that it will still work later",
        ("missing-compensation", "unknown-compensation-target"),
        ("compensation",),
    ),
    CarCheck(
        "write_conflicts",
        D,
        "concurrent writers to the same key declare an ordering dependency",
        "semantic conflicts \u2014 two actions whose effects are logically incompatible",
        ("write-conflict",),
        ("conflicts",),
    ),
)

#: Which of CAR's checks counts each code (car-verify's own notes: none).
CHECK_OF_CODE = {code: check.name for check in CAR_CHECKS for code in check.codes}

#: What CAR alone reports: the one code of its checks no strict pass has, and
#: car-verify's notes beside CAR's verdict.
OWN_CODES = (
    "duplicate-call",
    "extension-ignored",
    "dependency-overtaken",
    "assertion-not-evaluated",
    "car-spec-deviation",
    "param-schema-full",
)

#: What car-verify adds beside CAR's verdict, never an error: the notes, and the one
#: warning (an ignored `dependencies` entry that matters). The runtime reports none.
ADDED_CODES = frozenset(
    {
        "extension-ignored",
        "assertion-not-evaluated",
        "dependency-overtaken",
        "car-spec-deviation",
        "param-schema-full",
    }
)

#: Every code the car profile reports from CAR's checks and this pass's notes.
CAR_CODES = frozenset({*CHECK_OF_CODE, *OWN_CODES})


def _summary(ctx: Context, found: Sequence[Issue], records: Mapping[str, CheckRecord]) -> Said:
    """CAR's evidence from the findings of the passes that make its checks
    (:func:`car_evidence`)."""
    counts: dict[str, int] = {}
    warnings = 0
    for issue in found:
        owner = CHECK_OF_CODE.get(issue.code)
        if owner is not None:
            counts[owner] = counts.get(owner, 0) + 1
            warnings += issue.severity is Severity.WARNING
    actions = ctx.proposal.actions
    return car_evidence(
        counts,
        warnings,
        records,
        ctx.tools,
        ctx.max_actions,
        [(a.tool, a.id, a.expected_effects) for a in actions if a.type == "tool_call"],
        any(a.compensation is not None and a.compensation.type == "action_ref" for a in actions),
    )


class CarEvidence(NamedTuple):
    """CAR's evidence in parts (:func:`car_evidence_parts`): each check's record but
    its count (one of the few a run can have), the counts, and the rest."""

    #: Per check of :data:`CAR_CHECKS`: name, ran, verifies, cannot_verify, tier, reason.
    rows: tuple[tuple[str, bool, str, str, Tier, str | None], ...]
    counts: tuple[int, ...]
    assumptions: tuple[str, ...]
    untested: list[str]
    risks: list[str]
    confidence: float


def car_evidence(
    counts: Mapping[str, int],
    warnings: int,
    selected: Collection[str],
    tools: ToolSchemas | None,
    limit: int | None,
    calls: Sequence[tuple[str | None, str, Iterable[str]]],
    action_refs: bool,
) -> Said:
    """CAR's evidence, as ``car_runtime.verify`` says it: eight check records (their
    finding ``counts`` by check name, ``ran``), CAR's assumptions, untested regions,
    residual risks and coverage score. ``warnings``: the warnings among those
    findings; ``selected``: the passes that ran or were skipped (a check whose pass
    was not selected did not run); ``calls``: each tool call's tool, id and effect
    keys; ``action_refs``: whether a compensation names an action."""
    parts = car_evidence_parts(counts, warnings, selected, tools, limit, calls, action_refs)
    checks = [
        CheckRecord(name, did, verifies, cannot, count, tier, reason)
        for (name, did, verifies, cannot, tier, reason), count in zip(
            parts.rows, parts.counts, strict=True
        )
    ]
    return Said(checks, list(parts.assumptions), parts.untested, parts.risks, parts.confidence)


def car_evidence_parts(
    counts: Mapping[str, int],
    warnings: int,
    selected: Collection[str],
    tools: ToolSchemas | None,
    limit: int | None,
    calls: Sequence[tuple[str | None, str, Iterable[str]]],
    action_refs: bool,
) -> CarEvidence:
    """:func:`car_evidence` in parts (the drop-in writes its JSON from them)."""
    schemas = tools is not None and not tools.names_only
    ran = (  # CAR's own rules: what it can check with what it was given
        tools is not None or counts.get("tool_existence", 0) > 0,
        schemas,
        tools is not None or action_refs or counts.get("compensation_resolution", 0) > 0,
    )
    rows = _check_rows(ran, tools is None, _absent(frozenset(selected)), limit)
    assumptions = _ASSUMED if not calls or schemas else _ASSUMED_UNCHECKED
    untested = [
        f"runtime output of tool '{tool}' (action {id_})"
        for tool, id_, _ in calls
        if tool is not None  # "" is a tool's name too, as the runtime reads it
    ]
    untested += [
        f"state key '{key}' (value set at runtime by action {id_})"
        for _, id_, keys in calls
        for key in keys
    ]
    untested = sorted(set(untested))  # the runtime's: a set of texts, in their order
    conflicts = counts.get("write_conflicts", 0)
    risks = []
    if conflicts:
        risks.append(f"{conflicts} undeclared write conflict(s) \u2014 last-writer-wins at runtime")
    if warnings:
        risks.append(f"{warnings} warning(s) not blocking the verdict")
    if untested:
        risks.append(
            "outcomes depending on runtime tool output or runtime-set state are unverified"
        )
    return CarEvidence(
        rows,
        tuple(counts.get(row[0], 0) for row in rows),
        assumptions,
        untested,
        risks,
        car_confidence(calls, tools, untested, warnings),
    )


_ASSUMED = (
    "supplied initial-state values are accurate",
    "tool implementations honor their declared effects and side effects",
)
_ASSUMED_UNCHECKED = (
    *_ASSUMED,
    "tool_call parameters are well-formed (no schemas supplied to check them)",
)


@functools.lru_cache(maxsize=64)
def _absent(selected: frozenset[str]) -> tuple[str | None, ...]:
    """Each check's first pass that is not among ``selected`` (None: all of them are)."""
    return tuple(
        next((name for name in check.passes if name not in selected), None) for check in CAR_CHECKS
    )


@functools.lru_cache(maxsize=256)
def _check_rows(
    ran: tuple[bool, bool, bool],
    unregistered: bool,
    absent: tuple[str | None, ...],
    limit: int | None,
) -> tuple[tuple[str, bool, str, str, Tier, str | None], ...]:
    """The records of :data:`CAR_CHECKS` but their counts, made once for each of the
    few ways a run can be (every evidence asks): ``ran``, whether tool existence,
    parameter schemas and compensations could be checked; ``absent``, each check's
    pass that was not selected."""
    names = ("tool_existence", "param_schema", "compensation_resolution")
    did_by_name = dict(zip(names, ran, strict=True))
    rows = []
    for number, check in enumerate(CAR_CHECKS):
        did = did_by_name.get(check.name, True) and absent[number] is None
        verifies, reason = _check_words(number, did, unregistered, absent[number], limit)
        rows.append((check.name, did, verifies, check.cannot_verify, check.tier, reason))
    return tuple(rows)


@functools.lru_cache(maxsize=256)
def _check_words(
    number: int, did: bool, unregistered: bool, absent: str | None, limit: int | None
) -> tuple[str, str | None]:
    """What check ``number`` of :data:`CAR_CHECKS` says it verifies, and why it did
    not run when a pass of it (``absent``) was not selected: made once for each of
    the few ways a run can be (every evidence asks)."""
    check = CAR_CHECKS[number]
    if not did and check.skipped and absent is None:
        verifies = check.skipped
    elif did and unregistered and check.unregistered:
        verifies = check.unregistered
    else:
        verifies = check.verifies
    if "{" in verifies:
        verifies = verifies.format(limit=limit)
    return verifies, None if absent is None else f"pass {absent!r} was not selected"


def car_confidence(
    tool_calls: Sequence[object], tools: object, untested: Sequence[str], warnings: int
) -> float:
    """CAR's coverage score, as ``car_runtime.verify`` computes it (the same float
    operations in the same order): 0.15 off when tool calls go unchecked for
    existence, 0.2 when their parameters do, 0.02 per untested region up to 0.25,
    and 0.05 per warning up to 0.2, never below 0."""
    schemas = tools is not None and not getattr(tools, "names_only", False)
    confidence = 1.0
    if tool_calls and tools is None:
        confidence = confidence - 0.15  # existence unchecked
    if tool_calls and not schemas:
        confidence = confidence - 0.2  # parameters unchecked
    return max(0.0, confidence - min(0.25, 0.02 * len(untested)) - min(0.2, 0.05 * warnings))


# -- CAR's checks not yet run by the passes of analyses/ ---------------------------


def _duplicates(ctx: Context) -> Iterator[Issue]:
    """Identical tool calls below the loop threshold (two, by default): CAR's
    ``duplicate-call`` warning, on the proposal."""
    if not ctx.reports("duplicate-call"):
        return
    threshold = ctx.options.repeat_threshold
    actions = ctx.proposal.actions
    for group in ctx.identical_calls:
        if len(group) < threshold:
            tool = actions[group[0]].tool
            yield ctx.issue("duplicate-call", f"duplicate tool call: {tool} ({len(group)}x)")


def _full_schema(ctx: Context) -> Iterator[Issue]:
    """Each violation of a tool's full JSON Schema that CAR's check (``type`` and
    ``required`` only) lets through, as an ``info`` finding (``param-schema-full``)."""
    tools = ctx.tools
    if tools is None or not ctx.reports("param-schema-full"):
        return
    for index, problems in ctx.parameter_problems.items():
        action = ctx.proposal.actions[index]
        assert action.tool is not None
        mine = {path for _, path in problems}
        try:
            errors = tools.check_parameters(action.tool, action.parameters)
        except InputError as err:  # a schema CAR reads in part but JSON Schema rejects
            yield ctx.issue(
                "param-schema-full",
                f"tool {action.tool!r}: the parameter schema is not a valid JSON Schema "
                f"({err.problem}): only CAR's type/required check ran",
                index=index,
                where=("parameters",),
            )
            continue
        for error in errors:
            path = tuple(error.path)
            if (path and path in mine) or (not path and () in mine and _required(error.message)):
                continue  # CAR reports this one itself
            yield ctx.issue(
                "param-schema-full",
                f"tool {action.tool!r}: {error.message} (the tool's full JSON Schema; CAR "
                "checks only type and required)",
                index=index,
                where=("parameters", *path),
            )


def _required(message: str) -> bool:
    """Whether a JSON Schema message about the whole parameters object is about a
    ``required`` property, which CAR checks itself (an ``additionalProperties`` or
    ``minProperties`` one, say, it does not)."""
    return message.endswith("is a required property")


def _ignored(ctx: Context) -> Iterator[Issue]:
    """What CAR ignores that car-verify reads: ``dependencies`` and output references
    (``extension-ignored``), an assertion's ``parameters`` (``assertion-not-evaluated``)."""
    ordering = ctx.reports("extension-ignored")
    asserting = ctx.reports("assertion-not-evaluated")
    if not ordering and not asserting:
        return
    for index, action in enumerate(ctx.proposal.actions):
        ignored = []
        if ordering and action.dependencies:
            ignored.append("`dependencies`")
        if ordering and action.output_refs():
            ignored.append("`$id.output` references")
        if ignored:
            order = ctx.dag
            level = order.level_of(index)
            members = order.levels[level]
            beside = [order.ids[i] for i in members[:6] if i != index]  # a few, not all
            named = listed(beside, total=len(members) - 1)
            where = f"level {level}" + (f", beside {named}" if beside else "")
            yield ctx.issue(
                "extension-ignored",
                f"CAR ignores {' and '.join(ignored)}: it orders {action.id} only by "
                f"state_dependencies, so it runs in {where}",
                index=index,
            )
        # An assertion's `parameters` predicate: CAR checks its preconditions only.
        if asserting and action.type == "assertion":
            spelled = [pre for pre, at in action.predicate() if at == ("parameters",)]
            if spelled:
                pre = spelled[0]
                yield ctx.issue(
                    "assertion-not-evaluated",
                    f"CAR does not evaluate an assertion's `parameters` predicate "
                    f"({format_predicate(pre.key, pre.operator, pre.value)}): it checks "
                    f"{action.id}'s preconditions only, so this predicate gates nothing; "
                    "write it as a precondition",
                    index=index,
                    where=("parameters",),
                )


def _overtaken(ctx: Context) -> Iterator[Issue]:
    """Each ``dependencies`` entry whose action CAR runs in the same level as, or a
    level before, the action it names (``dependency-overtaken``): the runtime
    ignores the entry, so the action does not wait for what the author made it
    wait for (its failure does not hold the action back). Not in the same level
    when the named action comes first and the action checks a key it writes: CAR's
    walk of the level then takes them in that order, and the check holds it back."""
    if not ctx.reports("dependency-overtaken"):
        return
    actions = ctx.proposal.actions
    if not any(action.dependencies for action in actions):
        return
    order = ctx.dag
    position = {action.id: index for index, action in enumerate(actions)}
    for index, action in enumerate(actions):
        mine = order.level_of(index)
        for n, name in enumerate(action.dependencies):
            other = position.get(name)
            if other is None or other == index:
                continue
            theirs = order.level_of(other)
            if mine > theirs or (mine == theirs and other < index and _gated(ctx, action, other)):
                continue
            when = (
                f"in the same level as {name} (level {mine})"
                if mine == theirs
                else f"before {name} (levels {mine} and {theirs})"
            )
            yield ctx.issue(
                "dependency-overtaken",
                f"{action.id} runs {when}, which it depends on: CAR ignores `dependencies` "
                "and orders by state_dependencies only",
                index=index,
                where=("dependencies", n),
            )


def _gated(ctx: Context, action: Action, other: int) -> bool:
    """Whether ``action`` checks a key that action ``other`` (earlier in its level)
    writes: CAR walks a level in proposal order, so that check sees what ``other``
    did, and holds the action back when it failed."""
    written = ctx.semantics.effects(ctx.proposal.actions[other])
    return any(pre.key in written for pre, _ in ctx.semantics.checks(action))


def _deviations(ctx: Context) -> Iterator[Issue]:
    """Where CAR's answer contradicts its own spec (``car-spec-deviation``)."""
    if not ctx.reports("car-spec-deviation"):
        return
    proposal, order = ctx.proposal, ctx.dag
    conflicts = ctx.conflicts
    # A conflict between actions CAR orders: one note per key, on the first such pair.
    ordered = order.reachable((a, b) for a, b, _ in conflicts)
    by_key: dict[str, list[tuple[int, int]]] = {}
    for a, b, key in conflicts:
        if (a, b) in ordered:
            by_key.setdefault(key, []).append((a, b))
    for key, pairs in by_key.items():
        a, b = pairs[0]
        more = f" (and {len(pairs) - 1:,} more pairs)" if len(pairs) > 1 else ""
        yield ctx.issue(
            "car-spec-deviation",
            f"CAR reports a write conflict on {key!r} between {order.ids[a]} and "
            f"{order.ids[b]}{more} although it orders them (spec: conflicts are writers "
            "'without ordering')",
            index=b,
        )
    # A reader left unordered with earlier writers of a key it depends on: one note
    # per reader and key, naming the writers.
    # The DAG is asked only what its edges and levels leave open: a writer with an
    # edge into the reader reaches it, one on the reader's level or later does not.
    level = order.level_of
    asked: list[tuple[int, str, list[int]]] = []  # reader, key, earlier writers left
    questions: list[tuple[int, int]] = []
    for index, action in enumerate(proposal.actions):
        direct: set[int] | None = None
        mine = level(index)
        for key in dict.fromkeys(action.state_dependencies):
            all_writers = order.writers.get(key)
            if not all_writers or all_writers[0] >= index:
                continue
            if direct is None:
                direct = set(order.preds(index))
            earlier = [w for w in all_writers[: bisect_left(all_writers, index)] if w not in direct]
            if earlier:
                asked.append((index, key, earlier))
                questions += [
                    (w, index) for w in earlier if level(w) < mine or min(mine, level(w)) < 0
                ]
    reached = order.reachable(questions)
    for index, key, earlier in asked:
        writers = [w for w in earlier if (w, index) not in reached]
        if not writers:
            continue
        names = ", ".join(order.ids[w] for w in writers[:3])
        if len(writers) > 3:
            names += f" and {len(writers) - 3:,} more"
        levels = ", ".join(str(order.level_of(w)) for w in writers[:3])
        yield ctx.issue(
            "car-spec-deviation",
            f"CAR does not order {proposal.actions[index].id} after {names}, "
            f"{'an earlier writer' if len(writers) == 1 else 'earlier writers'} of {key!r} "
            f"it depends on (levels {levels} and {order.level_of(index)}): the two can race "
            "at run time (spec: 'actions in the same layer are independent')",
            index=index,
        )
    count, limit = len(proposal.actions), ctx.max_actions
    if limit is not None and count > limit:
        yield ctx.issue(
            "car-spec-deviation",
            f"CAR returns valid: true for {count} actions over the limit of "
            f"{limit} (spec: such proposals 'are rejected at verification time')",
        )


_CALL = {"type": "tool_call", "tool": "get_status", "parameters": {"job": "j-1"}}
_TOOLS: list[dict[str, Any]] = [
    {
        "name": "deploy",
        "parameters": {
            "type": "object",
            "required": ["env"],
            "properties": {"env": {"type": "string", "enum": ["prod", "staging"]}},
        },
    },
    {"name": "undeploy"},
]


class CarPass(Pass):
    """What CAR alone reports, and CAR's evidence (docs/semantics.md §9).

    It reports the one finding of CAR's checks that no other pass makes
    (``duplicate-call``) and car-verify's notes beside CAR's verdict. In the evidence
    it stands for the passes that make CAR's eight checks: their records are
    replaced by CAR's eight, which count their findings (:data:`CAR_CHECKS`), with
    CAR's assumptions, untested regions, residual risks and coverage score, as
    ``car_runtime.verify`` says them.
    """

    name = "car"
    tier = D
    stands_for = frozenset(n for check in CAR_CHECKS for n in check.passes) - {"car"}
    codes = OWN_CODES
    verifies = "the upstream runtime's eight checks, as its verify runs them"
    cannot_verify = "what each of the eight says it cannot verify (its evidence record)"
    examples = (
        Example("a sound one-call plan", {"actions": [{**_CALL, "id": "a"}]}, profile="car"),
        Example(
            "one call made twice, over the limit: the runtime's verdict stays valid",
            {"actions": [{**_CALL, "id": f"p{n}"} for n in range(2)]},
            ("duplicate-call", "car-spec-deviation"),
            max_actions=1,
            profile="car",
        ),
        Example(
            "parameters the tool's full JSON Schema rejects and the runtime lets through",
            {
                "actions": [
                    {
                        "id": "d",
                        "type": "tool_call",
                        "tool": "deploy",
                        "parameters": {"env": "dev"},
                    },
                ]
            },
            ("param-schema-full",),
            tools=_TOOLS,
            profile="car",
        ),
        Example(
            "a write conflict the runtime reports between writers it orders",
            {
                "actions": [
                    {
                        "id": "a",
                        "type": "tool_call",
                        "tool": "t",
                        "expected_effects": {"k": 1, "j": 1},
                    },
                    {
                        "id": "b",
                        "type": "tool_call",
                        "tool": "u",
                        "expected_effects": {"k": 2},
                        "state_dependencies": ["j"],
                    },
                ]
            },
            ("car-spec-deviation",),
            profile="car",
        ),
        Example(
            "what the runtime ignores: a dependency, an output reference",
            {
                "actions": [
                    {"id": "a", "type": "tool_call", "tool": "build"},
                    {
                        "id": "b",
                        "type": "tool_call",
                        "tool": "deploy",
                        "dependencies": ["a"],
                        "parameters": {"image": "$a.output"},
                    },
                ]
            },
            ("extension-ignored", "dependency-overtaken"),
            profile="car",
        ),
        Example(
            "an assertion's `parameters` predicate, which the runtime never evaluates",
            {
                "actions": [
                    {
                        "id": "c",
                        "type": "assertion",
                        "parameters": {"key": "k", "operator": "exists"},
                    },
                ]
            },
            ("assertion-not-evaluated",),
            profile="car",
        ),
        Example(
            "a dependency the runtime ignores while the action would run beside it: the "
            "check does not gate the deploy",
            {
                "actions": [
                    {"id": "check", "type": "tool_call", "tool": "run_checks"},
                    {
                        "id": "deploy",
                        "type": "tool_call",
                        "tool": "deploy",
                        "dependencies": ["check"],
                    },
                ]
            },
            ("extension-ignored", "dependency-overtaken"),
            profile="car",
        ),
    )

    def run(self, ctx: Context) -> Iterable[Issue]:
        for part in _PARTS:
            yield from part(ctx)

    def sum_up(
        self, ctx: Context, found: Sequence[Issue], records: Mapping[str, CheckRecord]
    ) -> Said:
        return _summary(ctx, found, records)


_PARTS = (
    _duplicates,
    _full_schema,
    _ignored,
    _overtaken,
    _deviations,
)
