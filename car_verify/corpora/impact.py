"""What a policy change does to real runs: ``car-verify policy impact OLD NEW SOURCE...``.

Each trajectory of the sources (read as the audit reads them: any format
:mod:`car_verify.importers` knows) is replayed call by call under each policy
set, as :mod:`car_verify.corpora.replay` says (the one vocabulary and the one
table it shares with ``audit --compare-policies``): each call is then
``newly_denied``, ``no_longer_denied``, ``still_denied`` or ``allowed``.

This is :func:`car_verify.rules.policy_analysis.policy_diff`'s model of a run
(one agent's run replayed against two gates), so the two agree: when ``policy
diff`` says NEW denies everything OLD denies, no call of any corpus is
``no_longer_denied``.

**The intervals.** Each count comes with a 95% Wilson score interval for the
proportion it estimates: for calls, the share of calls made in runs like the
corpus's that the change would move; for trajectories, the share of runs with
at least one such call. The interval treats the calls (the runs) as
independent draws from one population; calls of one run are not independent,
so the interval over calls is narrower than the truth when a change hits some
runs many times: the interval over trajectories has no such bias.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..plan.gate import UNDECIDED
from .replay import CHANGES, ImpactRow, replay, replay_schema, trajectory_rows

if TYPE_CHECKING:
    from ..plan.gate import Decision

__all__ = ["Impact", "ImpactRow", "impact", "replay", "wilson"]


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval for ``k`` successes in ``n`` trials (95% by
    default); ``(0, 1)`` when there is no trial."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    low = 0.0 if k == 0 else max(0.0, centre - half)
    return low, 1.0 if k == n else min(1.0, centre + half)


@dataclass
class Impact:
    """Every call's row, the records that could not be read, and the summary."""

    rows: list[ImpactRow] = field(default_factory=list)
    trajectories: int = 0
    problems: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, Any]:
        """Per change: calls, trajectories, the intervals, an example, and per rule."""
        calls = len(self.rows)
        out: dict[str, Any] = {}
        for change in CHANGES[:3]:
            rows = [r for r in self.rows if r.change == change]
            runs = len({(r.source, r.trajectory) for r in rows})
            rules: Counter[str] = Counter()
            for r in rows:
                named = r.new_rules if change == "newly_denied" else r.old_rules
                if change == "still_denied":
                    named = tuple(dict.fromkeys((*r.old_rules, *r.new_rules)))
                rules.update(named)
            example = rows[0] if rows else None
            out[change] = {
                "calls": len(rows),
                "calls_share": len(rows) / calls if calls else 0.0,
                "calls_ci95": list(wilson(len(rows), calls)),
                "trajectories": runs,
                "trajectories_share": runs / self.trajectories if self.trajectories else 0.0,
                "trajectories_ci95": list(wilson(runs, self.trajectories)),
                "by_rule": dict(sorted(rules.items(), key=lambda kv: (-kv[1], kv[0]))),
                "example": None if example is None else example.to_dict(),
            }
        return out

    def by_trajectory(self) -> list[dict[str, Any]]:
        """The trajectories with a change, each with its counts per change."""
        per: dict[tuple[str, str], Counter[str]] = {}
        for r in self.rows:
            if r.change != "allowed":
                per.setdefault((r.source, r.trajectory), Counter())[r.change] += 1
        return [
            {"trajectory": t, "source": s, **{c: n[c] for c in CHANGES[:3]}}
            for (s, t), n in per.items()
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "calls": len(self.rows),
            "trajectories": self.trajectories,
            "changes": self.counts(),
            "by_trajectory": self.by_trajectory(),
            "unreadable_records": self.problems,
            "interval": "95% Wilson score interval of the proportion (see docs/policies.md)",
        }


def impact(
    old: Any, new: Any, sources: Sequence[str], *, on_unknown: Decision = UNDECIDED["policy impact"]
) -> Impact:
    """Replay every trajectory of ``sources`` under both policy sets (each a policies
    folder, a policy file, loaded policies, a PolicySet or an engine)."""
    old_engine, new_engine = _engine(old), _engine(new)
    found = Impact()
    for item in _trajectories(sources):
        if isinstance(item, str):
            found.problems.append(item)
            continue
        found.trajectories += 1
        found.rows.extend(trajectory_rows(item, old_engine, new_engine, on_unknown))
    return found


def _engine(policies: Any) -> Any:
    """A policies folder, or one policy file, or anything the gate takes."""
    from ..rules.policy import PolicyEngine, load_policy_file, policy_engine

    if isinstance(policies, (str, Path)) and Path(policies).is_file():
        return PolicyEngine(load_policy_file(Path(policies)))
    return policy_engine(policies)


def _trajectories(sources: Sequence[str]) -> Iterator[Any]:
    """The sources' trajectories, as the audit reads them; a record that cannot be
    read is its problem's text."""
    from ..importers import ImportProblem, importers, read_file
    from .audit import sources_of

    formats = importers()
    for path in sources_of(sources):
        for item in read_file(path, formats):
            yield str(item) if isinstance(item, ImportProblem) else item


def write_parquet(found: Impact, out: str | Path) -> None:
    """One row per call (:data:`car_verify.corpora.replay.COLUMNS`): the table
    ``audit --compare-policies`` writes as ``replay.parquet``, which DuckDB and
    pandas read."""
    from .audit import _pyarrow

    pa = _pyarrow()
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist([r.to_dict() for r in found.rows], schema=replay_schema())
    target = Path(out)
    partial = target.with_name(target.name + ".partial")
    pq.write_table(table, partial)
    partial.replace(target)


def write_csv(found: Impact, out: str | Path) -> None:
    """The same rows as :func:`write_parquet`, as CSV with a header (the rule lists
    joined by ``;``, an absent outcome empty), for a spreadsheet."""
    import csv

    from .replay import COLUMNS

    target = Path(out)
    partial = target.with_name(target.name + ".partial")
    with partial.open("w", encoding="utf-8", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(COLUMNS)
        for row in found.rows:
            cells = row.to_dict()
            writer.writerow(
                ";".join(v) if isinstance(v, list) else "" if v is None else v
                for v in (cells[c] for c in COLUMNS)
            )
    partial.replace(target)


#: What ``policy impact -o`` writes, by the file's suffix.
WRITERS = {".parquet": write_parquet, ".csv": write_csv}
