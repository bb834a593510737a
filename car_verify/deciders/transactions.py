"""``transaction_check``: read-write hazards, write-write races, stale reads and
belief divergence, within one proposal or across proposals of concurrent agents.

Reads and writes are ``read_set`` / ``write_set`` when non-empty, else derived
(docs/semantics.md §3). Two actions of one proposal are concurrent when neither
reaches the other in its DAG; actions of different proposals are always
concurrent. Within one proposal, two writers of a key race exactly when they are
one of its DAG's write conflicts, which the DAG finds without asking about every
pair of writers; a reader is asked about each writer of its key, unless all of
them form one chain. A stale read is an assumption whose ``read_version`` is behind the
key's current version (``versions``); belief divergence an assumption whose
``expected_value`` differs from the current state (``state``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..api import ProposalLike, _state
from ..base.display import HtmlDisplay
from ..base.errors import InputError, UsageError, deep_values_are_input_errors
from ..base.values import ABSENT, format_value, json_equal
from ..ir.model import ActionProposal, load
from ..semantics import Profile, ProfileLike, profile_of, semantics_of
from ..semantics.base import TxConflict
from ..semantics.profiles import DEFAULT_PROFILE

__all__ = ["Hazard", "TransactionReport", "transaction_check"]

Kind = Literal["write-write", "read-write", "stale-read", "belief-divergence"]
_ORDER = {"write-write": 0, "read-write": 1, "stale-read": 2, "belief-divergence": 3}


@dataclass(frozen=True, slots=True)
class Hazard:
    """One finding. ``actions`` holds ``(proposal_id, action_id)`` of each action involved:
    two for races and hazards (for read-write: the reader, then the writer), one otherwise.
    ``resolution`` says what to do about it."""

    kind: Kind
    key: str
    actions: tuple[tuple[str, str], ...]
    message: str
    resolution: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": self.key,
            "actions": [{"proposal_id": p, "action_id": a} for p, a in self.actions],
            "message": self.message,
            "resolution": self.resolution,
        }


#: The runtime's name of each kind (its ``TransactionReport``'s ``kind``).
_WIRE_KIND: dict[str, str] = {
    "write-write": "write_write",
    "read-write": "read_write",
    "stale-read": "stale_assumption",
    "belief-divergence": "stale_assumption",
}


@dataclass(slots=True)
class TransactionReport(HtmlDisplay):
    """What ``transaction_check`` found, under either profile: the proposals checked
    and their hazards. ``consistent`` and ``conflicts`` are the same answer in the
    runtime's shape (``{consistent, conflicts: [{kind, key, actions, explanation,
    resolution}]}``); ``to_dict()`` holds both."""

    proposals: list[str]
    hazards: list[Hazard]
    #: The profile whose answer this is.
    profile: Profile = DEFAULT_PROFILE

    @property
    def clean(self) -> bool:
        return not self.hazards

    @property
    def consistent(self) -> bool:
        return not self.hazards

    @property
    def conflicts(self) -> list[dict[str, Any]]:
        """The hazards as the runtime reports its conflicts (action ids alone when one
        proposal was checked, ``proposal:action`` when several were)."""
        several = len(self.proposals) > 1
        return [
            {
                "kind": _WIRE_KIND[h.kind],
                "key": h.key,
                "actions": [f"{p}:{a}" if several else a for p, a in h.actions],
                "explanation": h.message,
                "resolution": h.resolution,
            }
            for h in self.hazards
        ]

    def runtime_answer(self) -> dict[str, Any]:
        """The report as ``car_runtime.transaction_check`` returns it."""
        return {"consistent": self.consistent, "conflicts": self.conflicts}

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.runtime_answer(),
            "proposals": list(self.proposals),
            "hazards": [h.to_dict() for h in self.hazards],
            "profile": self.profile.value,
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def explain(self) -> str:
        """One line per hazard, then the verdict: what ``car-verify txcheck`` prints."""
        from ..base.values import plural

        lines = [f"{h.kind} [{h.key}]: {h.message}" for h in self.hazards]
        verdict = "consistent" if self.consistent else "inconsistent"
        count = plural(len(self.hazards), "hazard")
        lines.append(f"{verdict}: {count} in {plural(len(self.proposals), 'proposal')}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def _versions(versions: Mapping[str, Any] | None) -> dict[str, int]:
    if versions is None:
        return {}
    if not isinstance(versions, Mapping):
        raise InputError("the version map must be a JSON object of key -> version")
    for key, value in versions.items():
        if type(value) is not int or value < 0:
            raise InputError("expected a non-negative integer version", [key])
    return dict(versions)


_EXPLAIN = {
    "write_write": (
        "actions {a!r} and {b!r} both write {key!r} with no ordering dependency \u2014 "
        "last-writer-wins is nondeterministic",
        "declare an ordering (add the writer's key to the other action's "
        "state_dependencies), split into distinct keys, or define a semantic merge for "
        "this key",
    ),
    "read_write": (
        "action {a!r} reads {key!r} while {b!r} writes it, unordered \u2014 the read may "
        "observe the pre- or post-write value",
        "sequence the reader after the writer (add {key!r} to {a!r}.state_dependencies) "
        "if the fresh value is intended, or before it if the prior value is",
    ),
    "stale_version": (
        "action {a!r} planned against {key!r} at version {planned} but the shared state "
        "is now at {current} \u2014 the plan is based on a stale read",
        "re-verify the action against current state and reconcile its belief (re-plan "
        "from the new version) before executing",
    ),
    "stale_value": (
        "action {a!r} assumes {key!r} == {planned} but the shared state holds {current} "
        "\u2014 belief divergence",
        "reconcile the assumption against the current value (semantic merge or re-plan); "
        "do not execute on the stale belief",
    ),
}


#: What to do about each kind of hazard, under strict (the runtime says its own, above).
_RESOLVE: dict[str, str] = {
    "write-write": "order the two writers (one depends on the other) or have them write "
    "different keys",
    "read-write": "order the reader and the writer as the reader means to see the key",
    "stale-read": "re-read the key and re-plan from its current version before running",
    "belief-divergence": "reconcile the assumption with the current value before running",
}

#: The hazard kind of each of the runtime's conflicts (a stale assumption by what is stale).
_KIND_OF: dict[tuple[str, str], Kind] = {
    ("write_write", ""): "write-write",
    ("read_write", ""): "read-write",
    ("stale_assumption", "version"): "stale-read",
    ("stale_assumption", "value"): "belief-divergence",
}


def _hazard(kind: Kind, key: str, actions: tuple[tuple[str, str], ...], message: str) -> Hazard:
    """A hazard as the strict check reports it, with what to do about its kind."""
    return Hazard(kind, key, actions, message, _RESOLVE[kind])


def _own_check_report(
    model: ActionProposal,
    found: list[TxConflict],
    versions: dict[str, int],
    state: dict[str, Any] | None,
    profile: ProfileLike,
) -> TransactionReport:
    """A profile's own check of one proposal (the runtime's, under car) as a report:
    its conflicts in its order, with the runtime's explanations and resolutions."""
    ids = [a.id for a in model.actions]
    hazards = []
    for c in found:
        a = ids[c.actions[0]]
        b = ids[c.actions[1]] if len(c.actions) > 1 else ""
        template = c.kind
        planned: Any = None
        current: Any = "absent"
        if c.kind == "stale_assumption":
            assumption = next(x for x in model.actions[c.actions[0]].assumptions if x.key == c.key)
            if c.detail == "version":
                template, planned = "stale_version", assumption.read_version
                current = versions.get(c.key, "absent")
            else:
                template = "stale_value"
                planned = json.dumps(assumption.expected_value)
                if state is not None and c.key in state:
                    current = json.dumps(state[c.key])
        explanation, resolution = _EXPLAIN[template]
        fill = {"a": a, "b": b, "key": c.key, "planned": planned, "current": current}
        hazards.append(
            Hazard(
                _KIND_OF[c.kind, c.detail],
                c.key,
                tuple((model.id, ids[i]) for i in c.actions),
                explanation.format(**fill),
                resolution.format(**fill),
            )
        )
    return TransactionReport([model.id], hazards, profile_of(profile))


@deep_values_are_input_errors
def transaction_check(
    proposals: ProposalLike | Sequence[ProposalLike],
    *,
    versions: Mapping[str, Any] | None = None,
    state: Mapping[str, Any] | None = None,
    profile: ProfileLike = None,
    labels: Sequence[str] | None = None,
) -> TransactionReport:
    """Check one proposal, or several from concurrent agents, for transactional hazards.

    Under the ``car`` profile (the default) one proposal is checked as
    ``car_runtime.transaction_check`` checks it (its conflicts, order and texts);
    several proposals are checked together (docs/semantics.md §3 and 6), each on
    the profile's own order: CAR's under ``car``, where the runtime checks one at
    a time. ``labels``
    name the proposals in messages (``car-verify txcheck`` passes the file names);
    without them a proposal is named by its id, and by its position too when two
    share an id."""
    sem = semantics_of(profile)
    items: Sequence[ProposalLike] = (
        list(proposals)
        if isinstance(proposals, Sequence) and not isinstance(proposals, (str, bytes))
        else [proposals]
    )
    models: list[ActionProposal] = []
    for index, item in enumerate(items):
        try:
            models.append(load(item))
        except InputError as err:  # name which proposal, when there are several
            raise (err if len(items) == 1 or err.source else err.under(index)) from None
    version_map = _versions(versions)
    current = _state(state) if state is not None else None
    for model in models:
        sem.refuse(model)
    if len(models) == 1:  # the profile's own check of one proposal, if it has one
        found = sem.transaction_conflicts(models[0], version_map, current)
        if found is not None:
            return _own_check_report(models[0], found, version_map, current, sem.profile)
    # Each proposal ordered as the profile orders it: several proposals under car are
    # checked together on CAR's order (the runtime checks one at a time).
    dags = [sem.order(m) for m in models]
    actions = [(p, i) for p, m in enumerate(models) for i in range(len(m.actions))]
    readers: dict[str, list[tuple[int, int]]] = {}
    writers: dict[str, list[tuple[int, int]]] = {}
    for p, i in actions:
        action = models[p].actions[i]
        for key in action.reads():
            readers.setdefault(key, []).append((p, i))
        for key in action.writes():
            writers.setdefault(key, []).append((p, i))

    # A key whose writers and readers within one proposal form a chain (a sequential
    # plan's counter) has no hazard there: that is |X| - 1 questions, not |X|^2 pairs.
    # key -> proposal -> the positions of its actions that write or read the key
    touching: dict[str, dict[int, set[int]]] = {}
    for key, ws in writers.items():
        for p, i in [*ws, *readers.get(key, [])]:
            touching.setdefault(key, {}).setdefault(p, set()).add(i)
    chained = {
        (p, key)
        for p, dag in enumerate(dags)
        for key in dag.totally_ordered(
            {k: g[p] for k, g in touching.items() if len(g.get(p, ())) > 2}
        )
    }
    # Two writers of a key in one proposal race when they are a write conflict: the
    # DAG finds those without asking every pair of writers.
    pairs: dict[tuple[tuple[int, int], tuple[int, int]], set[str]] = {}
    for p, dag in enumerate(dags):
        for first, second, key in dag.conflicts:
            pairs.setdefault(((p, first), (p, second)), set()).add(key)
    racing = set(pairs)
    for key, ws in writers.items():
        # Per proposal: the actions that read the key without writing it.
        only_read = {
            p: [i for i in members if not dags[p].is_writer(key, i)]
            for p, members in touching[key].items()
        }
        for w in ws:
            for p, members in touching[key].items():
                if p == w[0] and (p, key) in chained:
                    continue  # the whole chain at once, not pair by pair
                for i in only_read[p] if p == w[0] else members:
                    other = (p, i)
                    pairs.setdefault((min(w, other), max(w, other)), set()).add(key)
    within: dict[int, list[tuple[int, int]]] = {}
    for a, b in pairs:
        if a[0] == b[0] and (a, b) not in racing:
            within.setdefault(a[0], []).extend([(a[1], b[1]), (b[1], a[1])])
    ordered = {p: dags[p].reachable(ps) for p, ps in within.items()}

    ids = [m.id for m in models]
    hazards: list[Hazard] = []

    def ref(x: tuple[int, int]) -> tuple[str, str]:
        return (ids[x[0]], models[x[0]].actions[x[1]].id)

    if labels is not None and len(labels) != len(models):
        raise UsageError(f"{len(labels)} labels for {len(models)} proposals")
    names = list(labels) if labels is not None else list(ids)
    if len(set(names)) < len(names):  # the same name twice: say which, by position
        names = [f"{label}#{p + 1}" for p, label in enumerate(names)]

    def name(x: tuple[int, int]) -> str:
        label = models[x[0]].actions[x[1]].id
        return label if len(models) == 1 else f"{names[x[0]]}:{label}"

    for (a, b), keys in sorted(pairs.items()):
        if a[0] == b[0] and (
            (a[1], b[1]) in ordered.get(a[0], ()) or (b[1], a[1]) in ordered.get(a[0], ())
        ):
            continue
        act_a, act_b = models[a[0]].actions[a[1]], models[b[0]].actions[b[1]]
        for key in sorted(keys):
            if key in act_a.writes() and key in act_b.writes():
                hazards.append(
                    _hazard(
                        "write-write",
                        key,
                        (ref(a), ref(b)),
                        f"{name(a)} and {name(b)} both write {key!r} concurrently",
                    )
                )
            else:
                reader, writer = (a, b) if key in act_a.reads() else (b, a)
                hazards.append(
                    _hazard(
                        "read-write",
                        key,
                        (ref(reader), ref(writer)),
                        f"{name(reader)} reads {key!r} while {name(writer)} may write it",
                    )
                )
    for p, i in actions:
        action = models[p].actions[i]
        for assumption in action.assumptions:
            key = assumption.key
            seen = assumption.read_version
            if seen is not None and key in version_map and seen < version_map[key]:
                hazards.append(
                    _hazard(
                        "stale-read",
                        key,
                        (ref((p, i)),),
                        f"{name((p, i))} read {key!r} at version {assumption.read_version}; "
                        f"it is now at version {version_map[key]}",
                    )
                )
            if current is not None and assumption.has_expected_value:
                actual = current.get(key, ABSENT)
                if actual is ABSENT or not json_equal(actual, assumption.expected_value):
                    hazards.append(
                        _hazard(
                            "belief-divergence",
                            key,
                            (ref((p, i)),),
                            f"{name((p, i))} assumes {key!r} is "
                            f"{format_value(assumption.expected_value)}; it is "
                            f"{format_value(actual)}",
                        )
                    )
    position = {(ids[p], models[p].actions[i].id): (p, i) for p, i in actions}
    hazards.sort(key=lambda h: (_ORDER[h.kind], [position[x] for x in h.actions], h.key))
    return TransactionReport(ids, hazards, sem.profile)
