"""Audit a corpus: agent trajectories in, findings as tables out.

``audit(sources, out, ...)`` reads every trajectory of the sources (files,
folders, globs; ``.json``, ``.jsonl``, ``.gz``, ``.parquet``; any format
:mod:`car_verify.importers` knows), lifts each to a proposal, checks it as
``verify`` does (the profile's checks, the policies and their trace rules, the
flow pass with labels) and writes two Parquet tables in ``out``:

- ``findings.parquet``: a row per finding: ``trajectory_id``, ``source``,
  ``line``, ``step`` (the call's place in the trajectory), ``action_id``,
  ``tool``, ``code``, ``severity``, ``tier``, ``message``, and the trajectory's
  ``format``, ``outcome``, ``reward``, ``model`` and ``metadata`` (the source's
  scalar metadata, such as a task id and trial, as canonical JSON);
- ``tool_rates.json``: per tool, the calls made and those whose result was not an
  error (``car-verify risk --history OUT/`` takes its success rates from it);
- ``trajectories.parquet``: a row per trajectory (and per record that could not
  be read, ``status: malformed`` with its ``problem``): ``status`` (``checked`` |
  ``unknown`` past the per-item budget | ``malformed``), ``valid``, ``calls``,
  counts by severity, ``code_counts`` (code -> count), ``outcome``, ``reward``,
  ``model``, ``metadata``, ``format``.

**Shards.** The work is cut into shards of ``shard_size`` trajectories, each file
on its own. A shard is checked by :func:`audit_shard`, the one function every
engine runs (the local process pool here), and its rows are written to
``out/shards/<n>.*.parquet`` by renaming a finished file into place, so a rerun
skips the shards already done and a killed run leaves no half shard. The two
tables are then assembled from the shards in shard order: the same rows and the
same bytes whatever the number of workers. Memory is bounded by one shard per
worker and one row group at a time while assembling. A trace whose spans sit in
several files is one trajectory (:func:`plan_shards` puts its spans in one shard).

**One audit per folder, and workers that end with it.** ``out/audit.lock`` is
locked while an audit runs (:data:`LOCK`); the local pool's workers end when the
audit does, ``kill -9`` included (:func:`_worker_start`).
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import json
import os
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.errors import EngineError, InputError, UsageError
from ..base.values import listed
from ..importers.base import MAX_FILE, MAX_RECORD, Bounds, count_records
from ..semantics.profiles import DEFAULT_PROFILE

if TYPE_CHECKING:
    from ..base.config import ProfileName

#: ``tool_rates.json``'s ``format``: ``car-verify risk --history OUT/`` reads it.
RATES_FORMAT = "car-verify tool rates"

#: A corpus file's name says what it holds.
SUFFIXES = (".json", ".jsonl", ".ndjson", ".parquet", ".json.gz", ".jsonl.gz", ".ndjson.gz")


@dataclass(frozen=True)
class AuditSettings:
    """What each trajectory is checked with (picklable: it travels to workers)."""

    profile: ProfileName = DEFAULT_PROFILE.value
    policies: str | None = None  # a policy directory
    #: A second policy directory: what changing ``policies`` to it would do.
    compare_policies: str | None = None
    labels: Mapping[str, Any] | None = None
    flow_policy: Mapping[str, Any] | None = None
    #: Seconds one trajectory may take; past it the row says ``unknown``.
    budget: float = 10.0
    #: Bytes of one record, and of one compressed file, read decompressed (see
    #: :data:`car_verify.importers.base.MAX_RECORD` and ``MAX_FILE``).
    max_record: int = MAX_RECORD
    max_file: int = MAX_FILE

    def bounds(self) -> Bounds:
        return Bounds(self.max_record, self.max_file)


@dataclass(frozen=True)
class Shard:
    """A piece of one file: ``lines`` lines from byte ``offset`` of a JSON-lines
    file, or (``offset`` None) the whole file. ``count``: its records;
    ``first_line``: the file's line number at ``offset`` (found when planning, so a
    worker seeks to its shard and reads nothing before it)."""

    number: int
    path: str
    offset: int | None
    lines: int
    count: int
    first_line: int = 1
    #: More files read with ``path`` as one, their parts merged by id (the files
    #: that share the spans of a trace).
    also: tuple[str, ...] = ()
    #: Only the merged trajectories of these ids (those split across files), or
    #: None: all.
    keep: frozenset[str] | None = None
    #: Not the merged trajectories of these ids (a shard that reads every file they
    #: sit in has them).
    drop: frozenset[str] = frozenset()


def sources_of(given: Iterable[str]) -> list[Path]:
    """The corpus files: each file named, each folder's corpus files (recursively),
    each glob's matches; sorted, each once. Nothing found is a usage error."""
    found: dict[Path, None] = {}
    for item in given:
        path = Path(item)
        if path.is_dir():
            for sub in sorted(path.rglob("*")):
                if sub.is_file() and sub.name.endswith(SUFFIXES):
                    found[sub] = None
        elif path.is_file():
            found[path] = None
        else:
            matches = sorted(Path(m) for m in glob.glob(item, recursive=True))
            if not matches:
                raise UsageError(f"no such file, folder or glob match: {item}")
            for m in matches:
                if m.is_file():
                    found[m] = None
    if not found:
        raise UsageError("no corpus files found in the sources given")
    return list(found)


#: The most distinct trajectory ids the planner keeps while it finds which traces
#: have spans in more than one file: past it, the files of a format that merges by
#: id are read as one shard (correct, and no longer spread over the workers).
MAX_MERGE_IDS = 1_000_000


def plan_shards(
    files: Sequence[Path], shard_size: int, bounds: Bounds | None = None
) -> list[Shard]:
    """Cut each plain JSON-lines file into shards of ``shard_size`` lines (found in
    one pass over its bytes); any other file (a JSON array, ``.gz``, Parquet) is
    one shard. A file of a format whose records merge by id (a trace's spans) is
    one shard less the ids it shares with other files, and those shared ids are
    one more shard, last, that reads them from every file they sit in: so the
    spans of one trace meet in one shard however the files split them.
    ``bounds``: how much of a record and of a compressed file is read."""
    from ..importers import importers

    limits = bounds or Bounds()
    formats = importers()
    kinds = [_first_format(path, formats, limits) for path in files]
    merging = [path for path, kind in zip(files, kinds, strict=True) if _merges(kind)]
    split = _split_ids(merging, formats, limits)
    shards: list[Shard] = []
    for path, kind in zip(files, kinds, strict=True):
        if _merges(kind):
            if split is None:  # too many ids to keep: every such file in one shard
                if path == merging[0]:
                    count = sum(count_records(m, limits) for m in merging)
                    also = tuple(str(m) for m in merging[1:])
                    shards.append(Shard(len(shards), str(path), None, 0, count, also=also))
                continue
            count, drop = split.files[path]
            shards.append(Shard(len(shards), str(path), None, 0, count, drop=drop))
            continue
        if not path.name.endswith((".jsonl", ".ndjson")):
            shards.append(Shard(len(shards), str(path), None, 0, count_records(path, limits)))
            continue
        start, lines, position, physical, first = 0, 0, 0, 0, 1
        with path.open("rb") as stream:
            for raw in stream:
                if lines == 0:
                    start, first = position, physical + 1
                position += len(raw)
                physical += 1
                if raw.strip():
                    lines += 1
                    if lines == shard_size:
                        shards.append(Shard(len(shards), str(path), start, lines, lines, first))
                        lines = 0
        if lines:
            shards.append(Shard(len(shards), str(path), start, lines, lines, first))
    if split is not None and split.shared:
        where = [str(path) for path in merging if split.files[path][1]]
        shared = frozenset(split.shared)
        shards.append(
            Shard(len(shards), where[0], None, 0, len(shared), also=tuple(where[1:]), keep=shared)
        )
    return shards


def _merges(kind: Any) -> bool:
    return bool(getattr(kind, "merges_by_id", False))


@dataclass
class _Split:
    """Which ids of a merging format sit in more than one file: per file, its records
    and the shared ids it holds; and every shared id."""

    files: dict[Path, tuple[int, frozenset[str]]]
    shared: list[str]


def _split_ids(files: Sequence[Path], formats: Sequence[Any], bounds: Bounds) -> _Split | None:
    """One streamed pass over ``files``, asking each record's importer which ids it
    has parts of (``ids``, no lifting): the ids found in more than one file. None
    past :data:`MAX_MERGE_IDS` distinct ids (the memory this pass may take)."""
    from ..importers import records

    first: dict[str, int] = {}
    shared: dict[str, list[int]] = {}
    counts: list[int] = []
    for n, path in enumerate(files):
        seen = 0
        for _, record in records(path, bounds):
            seen += 1
            if isinstance(record, InputError):
                continue
            importer = next((i for i in formats if i.sniff(record)), None)
            if importer is None or not _merges(importer):
                continue
            for key in importer.ids(record):
                at = first.setdefault(key, n)
                if at != n:
                    where = shared.setdefault(key, [at])
                    if where[-1] != n:
                        where.append(n)
            if len(first) > MAX_MERGE_IDS:
                return None
        counts.append(seen)
    held: list[list[str]] = [[] for _ in files]
    for key, where in shared.items():
        for n in where:
            held[n].append(key)
    return _Split(
        {path: (counts[n], frozenset(held[n])) for n, path in enumerate(files)}, list(shared)
    )


#: How many records that cannot be read the planner passes over to find a file's
#: format (a corrupted first line must not hide it).
_SNIFF_RECORDS = 64


def _first_format(path: Path, formats: Sequence[Any], bounds: Bounds) -> Any:
    """The importer of the file's first readable record (None when there is none
    among its first :data:`_SNIFF_RECORDS`, or no importer knows it). An importer
    that cannot read its format here (a missing extra) fails the audit now, once,
    rather than each of its records."""
    from ..importers import records
    from ..importers.base import require

    stream = records(path, bounds)
    try:
        first = next(
            (
                r
                for _, r in itertools.islice(stream, _SNIFF_RECORDS)
                if not isinstance(r, InputError)
            ),
            None,
        )
    finally:
        getattr(stream, "close", lambda: None)()  # closed now, not left to the collector
    if first is None:
        return None
    found = next((i for i in formats if i.sniff(first)), None)
    if found is not None:
        require(found)
    return found


def _shard_items(shard: Shard, bounds: Bounds) -> Iterator[Any]:
    """The trajectories (and import problems) of one shard."""
    from ..importers import importers
    from ..importers.base import read_lines

    formats = importers()
    if shard.also or shard.keep is not None or shard.drop:
        from ..importers.base import read_merged

        paths = [shard.path, *shard.also]
        yield from read_merged(paths, formats, bounds, keep=shard.keep, drop=shard.drop)
        return
    if shard.offset is None:
        from ..importers import read_file

        yield from read_file(shard.path, formats, bounds)
        return
    yield from read_lines(shard.path, shard.offset, shard.lines, formats, shard.first_line, bounds)


class _Timeout(Exception):
    pass


def _alarm(_signum: int, _frame: Any) -> None:
    raise _Timeout


def _check(
    trajectory: Any,
    settings: AuditSettings,
    engine: Any,
    proposal: Any = None,
    check: Callable[[dict[str, Any], AuditSettings, Any], Any] | None = None,
) -> tuple[str, Any]:
    """``(status, verification result or None)`` for one trajectory, within the
    budget: in a process's main thread an interval timer interrupts the check;
    elsewhere (a Dask worker's thread) it runs in a thread of its own that is
    waited for at most the budget, and left behind when it takes longer. ``check``:
    :func:`checked` by default (:func:`checked_plain`: the benchmark's baseline)."""
    lifted = trajectory.proposal() if proposal is None else proposal

    def run() -> Any:
        return (check or checked)(lifted, settings, engine)

    if settings.budget <= 0:
        return "checked", run()
    import threading

    if hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, settings.budget)
        try:
            return "checked", run()
        except _Timeout:
            return "unknown", None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    box: list[Any] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            box.append(run())
        except BaseException as err:  # re-raised in the caller's thread
            failure.append(err)

    worker = threading.Thread(target=target, daemon=True, name="car-verify-audit-check")
    worker.start()
    worker.join(settings.budget)
    if failure:
        raise failure[0]
    return ("checked", box[0]) if box else ("unknown", None)


def checked_plain(lifted: dict[str, Any], settings: AuditSettings, engine: Any) -> Any:
    """The check of one lifted proposal: ``verify`` with the audit's policies, labels
    and flow policy (the plain runner, every pass over the model). The plain twin
    of :func:`checked`."""
    from ..ir.model import load_parsed

    return _verify(load_parsed(lifted), settings, engine)  # built here, handed over


def _verify(model: Any, settings: AuditSettings, engine: Any) -> Any:
    from ..api import verify

    return verify(
        model,
        policies=engine,
        profile=settings.profile,
        labels=settings.labels,
        flow_policy=settings.flow_policy,
    )


@dataclass(frozen=True, slots=True)
class Checked:
    """What the audit reads of a check: the findings, in the plain runner's order,
    and whether none is an error."""

    issues: list[Any]
    valid: bool


def checked(lifted: dict[str, Any], settings: AuditSettings, engine: Any) -> Any:
    """:func:`checked_plain`'s findings and verdict (all the audit reads of it), with
    the default passes run by the fused kernel (:mod:`car_verify.passes.fused`) and
    the policies pass beside it over the model. The policies pass reads none of the
    other passes' records, and the plain runner sorts the findings of all its
    passes together by (position, code) with a stable sort; the policies pass's
    codes (rule names, its own two) are none of the codes the default passes
    declare (checked on each finding), so the fused findings (already in that
    order) and the policies pass's, sorted once more, are the plain runner's.
    Anything else (labels, a flow policy, no policies, a document or a selection of
    passes the kernel does not model) is :func:`checked_plain`'s.
    ``tests/test_audit_fast.py`` holds the two to the same findings table on
    generated runs."""
    if engine is None or settings.labels is not None or settings.flow_policy is not None:
        return checked_plain(lifted, settings, engine)
    from ..api import _fused
    from ..base.findings import Issue, Severity
    from ..ir._codec import Bad, d_json
    from ..ir.flat import flat_plan
    from ..ir.model import load_owned
    from ..passes import Context, run_and_say
    from ..passes.registry import registry_build
    from ..semantics import semantics_of

    sem = semantics_of(settings.profile)
    key = (sem, registry_build())
    policies = _POLICIES_PASS.get(key, ...)
    fused = None
    if policies is not None and type(lifted) is dict:
        try:  # JSON all the way down, as ``load`` checks it; handed over: not copied
            plan = flat_plan(d_json(lifted))
        except (Bad, RecursionError):
            plan = None
        fused = None if plan is None else _fused(plan, settings.profile, None, None, 3)
    if fused is None:
        return checked_plain(lifted, settings, engine)
    found = list(fused.issues)  # made now: the model takes the document apart
    model = load_owned(lifted)
    ctx = Context(model, policies=engine, semantics=sem)
    if policies is ...:
        policies = _POLICIES_PASS[key] = _policies_pass(ctx)
        if policies is None:
            return _verify(model, settings, engine)
    policies, theirs = policies
    own = run_and_say(ctx, [policies])[0]
    if any(issue.code in theirs for issue in own):  # a tie the plain order would break
        return _verify(model, settings, engine)
    found += own
    found.sort(key=Issue.sort_key)
    error = Severity.ERROR
    return Checked(found, not any(i.severity is error for i in found))


def _policies_pass(ctx: Any) -> Any:
    """The policies pass and the codes the other passes declare, where the plain
    runner's selection for ``ctx`` (policies and nothing else given) is the fused
    kernel's selection with the policies pass; else None."""
    from ..passes import Requirement
    from ..passes.fused import runnable
    from ..passes.registry import default_selection, resolve_passes

    plain = resolve_passes(None, ctx)
    limit = ctx.max_actions is not None
    fused = default_selection(ctx.profile, lambda r: limit and r is Requirement.MAX_ACTIONS)
    if fused is None or not runnable(fused) or any(p.dynamic_codes for p in fused):
        return None
    policies = [p for p in plain if p.name == "policies"]
    if len(policies) != 1 or [p.name for p in plain if p not in policies] != [
        p.name for p in fused
    ]:
        return None
    return policies[0], frozenset(code for p in fused for code in p.codes)


#: The policies pass :func:`checked` runs beside the fused kernel, by semantics and
#: build of the pass registry (None: that run is the plain runner's).
_POLICIES_PASS: dict[tuple[Any, int], Any] = {}


def _engine(settings: AuditSettings, directory: str | None = None) -> Any:
    chosen = settings.policies if directory is None else directory
    if chosen is None:
        return None
    from ..rules.policy import load_policies

    return load_policies(chosen).engine()


def _replay_rows(trajectory: Any, old: Any, new: Any) -> Iterator[dict[str, Any]]:
    """What changing the policies from ``old`` to ``new`` does to each call: the rows
    ``policy impact`` writes (:mod:`car_verify.corpora.replay`), one per call. The
    gate decides a call the same way under both profiles."""
    from ..plan.gate import UNDECIDED
    from .replay import trajectory_rows

    for row in trajectory_rows(
        trajectory, old, new, UNDECIDED["audit"]
    ):  # both given (--policies is checked)
        yield row.to_dict()


def audit_shard(shard: Shard, settings: AuditSettings, out: str) -> str:
    """Check one shard and write its rows (``out/shards/<n>.findings.parquet`` and
    ``.trajectories.parquet``); a shard already written is skipped. Every engine
    runs this function; it returns the shard's name."""
    from ..importers import ImportProblem

    folder = Path(out) / "shards"
    name = f"{shard.number:06d}"
    done = folder / f"{name}.trajectories.parquet"
    if done.exists():
        return name
    folder.mkdir(parents=True, exist_ok=True)
    engine = _engine(settings)
    newer = _engine(settings, settings.compare_policies) if settings.compare_policies else None
    findings: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    replay: list[dict[str, Any]] = []
    tools: dict[str, list[int]] = {}  # tool -> [calls, failed]
    spent = {"read": 0.0, "lift": 0.0, "check": 0.0, "write": 0.0}
    items = iter(_shard_items(shard, settings.bounds()))
    while True:
        clock = time.perf_counter()
        item = next(items, None)
        spent["read"] += time.perf_counter() - clock
        if item is None:
            break
        if isinstance(item, ImportProblem):
            rows.append(_problem_row(item))
            continue
        for call in item.calls:
            tally = tools.setdefault(call.tool, [0, 0])
            tally[0] += 1
            tally[1] += call.failed
        clock = time.perf_counter()
        proposal = item.proposal()
        lifted = time.perf_counter()
        try:
            status, result = _check(item, settings, engine, proposal)
        except InputError as err:  # a value the record holds that no proposal can
            why = f"its calls do not make a proposal: {err}"
            rows.append(_problem_row(ImportProblem(item.source, item.line, item.id, why)))
            continue
        spent["lift"] += lifted - clock
        spent["check"] += time.perf_counter() - lifted
        rows.append(_trajectory_row(item, status, result))
        if result is not None:
            findings.extend(_finding_rows(item, result))
        if newer is not None:
            replay.extend(_replay_rows(item, engine, newer))
    clock = time.perf_counter()
    _write(folder / f"{name}.findings.parquet", findings, findings_schema())
    (folder / f"{name}.tools.json").write_text(json.dumps(tools, sort_keys=True), encoding="utf-8")
    if newer is not None:
        _write(folder / f"{name}.replay.parquet", replay, replay_schema())
    spent["write"] = time.perf_counter() - clock
    (folder / f"{name}.stats.json").write_text(json.dumps(spent), encoding="utf-8")
    _write(done, rows, trajectories_schema())  # last: its presence means the shard is done
    return name


def _finding_rows(trajectory: Any, result: Any) -> Iterator[dict[str, Any]]:
    calls = trajectory.calls
    for issue in result.issues:
        index = issue.index
        yield {
            "trajectory_id": trajectory.id,
            "source": trajectory.source,
            "line": trajectory.line,
            "step": index if index is not None else None,
            "action_id": issue.action_id,
            "tool": calls[index].tool if index is not None and index < len(calls) else None,
            "code": issue.code,
            "severity": issue.severity.value,
            "tier": issue.tier.value,
            "message": issue.message,
            "format": trajectory.format,
            "outcome": trajectory.outcome,
            "reward": trajectory.reward,
            "model": trajectory.model,
            "metadata": _metadata(trajectory),
        }


def _trajectory_row(trajectory: Any, status: str, result: Any) -> dict[str, Any]:
    issues = result.issues if result is not None else []
    severity = Counter(i.severity.value for i in issues)
    codes = Counter(i.code for i in issues)
    return {
        "trajectory_id": trajectory.id,
        "source": trajectory.source,
        "line": trajectory.line,
        "format": trajectory.format,
        "status": status,
        "valid": None if result is None else result.valid,
        "calls": len(trajectory.calls),
        "errors": severity.get("error", 0),
        "warnings": severity.get("warning", 0),
        "infos": severity.get("info", 0),
        "code_counts": sorted(codes.items()),
        "outcome": trajectory.outcome,
        "reward": trajectory.reward,
        "model": trajectory.model,
        "metadata": _metadata(trajectory),
        "problem": "; ".join(trajectory.notes) or None,
    }


def _metadata(trajectory: Any) -> str | None:
    """The source's metadata (task id, trial, ...) as canonical JSON, or null."""
    meta = trajectory.metadata
    return json.dumps(meta, sort_keys=True, separators=(",", ":")) if meta else None


def _problem_row(problem: Any) -> dict[str, Any]:
    return {
        "trajectory_id": problem.record_id,
        "source": problem.source,
        "line": problem.line,
        "format": None,
        "status": "malformed",
        "valid": None,
        "calls": 0,
        "errors": 0,
        "warnings": 0,
        "infos": 0,
        "code_counts": [],
        "outcome": None,
        "reward": None,
        "model": None,
        "metadata": None,
        "problem": problem.message,
    }


def findings_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("trajectory_id", pa.string()),
            ("source", pa.string()),
            ("line", pa.int64()),
            ("step", pa.int64()),
            ("action_id", pa.string()),
            ("tool", pa.string()),
            ("code", pa.string()),
            ("severity", pa.string()),
            ("tier", pa.string()),
            ("message", pa.string()),
            ("format", pa.string()),
            ("outcome", pa.string()),
            ("reward", pa.float64()),
            ("model", pa.string()),
            ("metadata", pa.string()),
        ]
    )


def trajectories_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("trajectory_id", pa.string()),
            ("source", pa.string()),
            ("line", pa.int64()),
            ("format", pa.string()),
            ("status", pa.string()),
            ("valid", pa.bool_()),
            ("calls", pa.int64()),
            ("errors", pa.int64()),
            ("warnings", pa.int64()),
            ("infos", pa.int64()),
            ("code_counts", pa.map_(pa.string(), pa.int64())),
            ("outcome", pa.string()),
            ("reward", pa.float64()),
            ("model", pa.string()),
            ("metadata", pa.string()),
            ("problem", pa.string()),
        ]
    )


def replay_schema() -> Any:
    """``replay.parquet``'s schema: ``policy impact``'s table (one vocabulary, one
    schema: :func:`car_verify.corpora.replay.replay_schema`)."""
    from .replay import replay_schema as schema

    return schema()


def _pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError:
        raise UsageError(
            "the audit writes Parquet: pip install 'car-verify[audit]' (pyarrow)"
        ) from None
    return pyarrow


def _write(path: Path, rows: list[dict[str, Any]], schema: Any) -> None:
    """Write ``rows`` to ``path`` by renaming a finished file into place."""
    pa = _pyarrow()
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(rows, schema=schema)
    partial = path.with_suffix(".partial")
    pq.write_table(table, partial)
    os.replace(partial, path)


def _assemble(out: Path, shards: Sequence[Shard], replay: bool = False) -> dict[str, int]:
    """``findings.parquet`` and ``trajectories.parquet`` (and ``replay.parquet``) from
    the shards, in order."""
    import pyarrow.parquet as pq

    counts = {}
    tables = [("findings", findings_schema()), ("trajectories", trajectories_schema())]
    if replay:
        tables.append(("replay", replay_schema()))
    for table, schema in tables:
        target = out / f"{table}.parquet"
        partial = target.with_suffix(".partial")
        rows = 0
        with pq.ParquetWriter(partial, schema) as writer:
            for shard in shards:
                part = pq.read_table(out / "shards" / f"{shard.number:06d}.{table}.parquet")
                rows += part.num_rows
                writer.write_table(part)
        os.replace(partial, target)
        counts[table] = rows
    calls: dict[str, list[int]] = {}
    for shard in shards:
        part = json.loads((out / "shards" / f"{shard.number:06d}.tools.json").read_text("utf-8"))
        for tool, (made, failed) in part.items():
            tally = calls.setdefault(tool, [0, 0])
            tally[0] += made
            tally[1] += failed
    rates = {
        "format": RATES_FORMAT,
        "tools": {
            t: {"dispatched": made, "succeeded": made - failed}
            for t, (made, failed) in sorted(calls.items())
        },
    }
    (out / "tool_rates.json").write_text(json.dumps(rates, indent=2), encoding="utf-8")
    return counts


@dataclass
class AuditSummary:
    """What a run did: the tables' rows, and where the time went."""

    out: Path
    trajectories: int = 0
    findings: int = 0
    shards: int = 0
    skipped: int = 0
    #: Records that could not be read or lifted (rows with ``status: malformed``),
    #: and the first few of their problems, for the caller to say.
    malformed: int = 0
    unknown: int = 0
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: Wall-clock seconds of each phase of the run: planning the shards, checking
    #: them, assembling the tables.
    stages: dict[str, float] = field(default_factory=dict)
    #: Seconds of work per stage inside the shards (read, lift, check, write),
    #: summed over the workers.
    work: dict[str, float] = field(default_factory=dict)


#: The file in an output folder that says which audit writes there now: one at a
#: time. It is locked (``flock``) while an audit runs and holds who runs it.
LOCK = "audit.lock"

#: The descriptor of the lock this process holds, if any: a worker forked from it
#: closes its copy, so that the lock lives and dies with the audit itself.
_held_lock: int | None = None


def _holder(fd: int) -> str:
    """Who the lock file says holds it, as words ('' when it says nothing)."""
    os.lseek(fd, 0, os.SEEK_SET)
    raw = os.read(fd, 1 << 16)
    try:
        who = json.loads(raw) if raw.strip() else None
    except ValueError:
        who = None
    if not isinstance(who, dict):
        return raw.decode("utf-8", "replace").strip()[:200]
    return (
        f"pid {who.get('pid')} on {who.get('host')}, started {who.get('started')}: "
        f"{who.get('command')}"
    )


@contextlib.contextmanager
def _locked(out: Path, say: Callable[[str], None] | None) -> Iterator[None]:
    """Hold ``out``'s lock for the block: another audit holding it is a usage error
    naming it, at once; a lock whose holder is gone (killed) is taken over, said.
    Without ``fcntl`` (not POSIX) there is no lock."""
    global _held_lock
    try:
        import fcntl
    except ImportError:
        yield
        return
    import socket
    import sys
    from datetime import UTC, datetime

    path = out / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise UsageError(
                f"{out} is being written by another audit ({_holder(fd) or 'unknown'}): "
                "wait for it to end, or give another output folder"
            ) from None
        before = _holder(fd)
        if before and say is not None:
            say(f"{path}: the audit that held it is no longer running ({before}): taking it over")
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv),
        }
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, json.dumps(holder).encode())
        _held_lock = fd
        try:
            yield
        finally:
            _held_lock = None
            os.ftruncate(fd, 0)  # released cleanly: nobody to take over from
    finally:
        os.close(fd)  # closing it releases the lock


def audit(
    sources: Iterable[str],
    out: str | os.PathLike[str],
    *,
    settings: AuditSettings | None = None,
    workers: int = 1,
    shard_size: int = 1000,
    progress: Any = None,
    fresh: bool = False,
    engine: str = "local",
    address: str | None = None,
    say: Callable[[str], None] | None = None,
) -> AuditSummary:
    """Audit the corpus in ``sources`` into ``out`` (see the module docs). One audit
    at a time writes to ``out`` (:data:`LOCK`); ``say`` is told what is worth
    saying at once (a stale lock taken over)."""
    _pyarrow()
    if workers < 1 or shard_size < 1:
        raise UsageError("workers and shard_size must be at least 1")
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}; expected {', '.join(ENGINES)}")
    if address is not None and engine == "local":
        raise UsageError("--address / --scheduler name a Ray or Dask cluster: give --engine")
    chosen = settings or AuditSettings()
    if chosen.compare_policies is not None and chosen.policies is None:
        raise UsageError("--compare-policies compares against --policies: give both")
    if chosen.policies is not None:
        _engine(chosen)  # a broken policy directory fails before any work
    if chosen.compare_policies is not None:
        _engine(chosen, chosen.compare_policies)
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    with _locked(target, say):
        return _audit(sources, target, chosen, workers, shard_size, progress, fresh, engine,
                      address)  # fmt: skip


def _audit(sources: Iterable[str], target: Path, chosen: AuditSettings, workers: int,
           shard_size: int, progress: Any, fresh: bool, engine: str,
           address: str | None) -> AuditSummary:  # fmt: skip
    started = time.perf_counter()
    inside = target.resolve()
    files = [f for f in sources_of(sources) if inside not in f.resolve().parents]  # not our output
    if not files:
        raise UsageError("no corpus files found in the sources given (outside the output folder)")
    _claim(target, _manifest(files, chosen, shard_size), fresh)
    shards = plan_shards(files, shard_size, chosen.bounds())
    planned = time.perf_counter()
    if progress is not None:
        getattr(progress, "total", lambda _n: None)(sum(s.count for s in shards))
    done_before = sum(
        (target / "shards" / f"{s.number:06d}.trajectories.parquet").exists() for s in shards
    )
    todo = [s for s in shards if not _done(target, s)]
    if progress is not None:
        progress.update(sum(s.count for s in shards) - sum(s.count for s in todo))
    ENGINES[engine](todo, chosen, str(target), workers, address, progress)
    checked = time.perf_counter()
    counts = _assemble(target, shards, replay=chosen.compare_policies is not None)
    ended = time.perf_counter()
    work = {"read": 0.0, "lift": 0.0, "check": 0.0, "write": 0.0}
    for shard in shards:  # seconds of work in the workers, summed (time on all cores)
        stats = target / "shards" / f"{shard.number:06d}.stats.json"
        if stats.exists():
            for stage, seconds in json.loads(stats.read_text("utf-8")).items():
                work[stage] = work.get(stage, 0.0) + seconds
    summary = AuditSummary(
        target,
        trajectories=counts["trajectories"],
        findings=counts["findings"],
        shards=len(shards),
        skipped=done_before,
        seconds=ended - started,
        stages={
            "plan": planned - started,
            "shards": checked - planned,
            "assemble": ended - checked,
        },
        work=work,
    )
    import pyarrow.parquet as pq

    table = pq.read_table(
        target / "trajectories.parquet", columns=["status", "source", "line", "problem"]
    )
    for status, source, line, problem in zip(
        *(table.column(c).to_pylist() for c in table.column_names), strict=True
    ):
        if status == "malformed":
            summary.malformed += 1
            if len(summary.problems) < 20:
                summary.problems.append(f"{source}" + (f":{line}" if line else "") + f": {problem}")
        elif status == "unknown":
            summary.unknown += 1
    summary.trajectories -= summary.malformed
    return summary


def _done(out: Path, shard: Shard) -> bool:
    return (out / "shards" / f"{shard.number:06d}.trajectories.parquet").exists()


# --- engines: each only moves shards to audit_shard and waits -----------------------------


def _local(shards: Sequence[Shard], settings: AuditSettings, out: str, workers: int,
           address: str | None, progress: Any) -> None:  # fmt: skip
    """This process (one worker), or a local process pool."""
    if workers == 1:
        for shard in shards:
            audit_shard(shard, settings, out)
            if progress is not None:
                progress.update(shard.count)
        return
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(workers, initializer=_worker_start, initargs=(os.getpid(),)) as pool:
        futures = [pool.submit(audit_shard, s, settings, out) for s in shards]
        for shard, future in zip(shards, futures, strict=True):
            future.result()
            if progress is not None:
                progress.update(shard.count)


#: How often a worker of the local pool looks whether the audit is still there.
WATCH_SECONDS = 0.5

#: ``prctl``'s option that has the kernel signal a process when its parent dies.
_PR_SET_PDEATHSIG = 1


def _worker_start(audit_pid: int) -> None:
    """Each worker of the local pool ends with the audit that started it, however the
    audit ends (``kill -9`` included): on Linux the kernel kills it when its parent
    dies (``prctl(PR_SET_PDEATHSIG)``), and everywhere a thread of the worker looks
    every :data:`WATCH_SECONDS` whether its parent is still the one it had. A worker
    forked with the audit's lock closes its copy: the lock is the audit's alone."""
    global _held_lock
    if _held_lock is not None:
        os.close(_held_lock)
        _held_lock = None
    import sys
    import threading

    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    parent = os.getppid()
    if parent != audit_pid and not _alive(audit_pid):
        os._exit(1)  # the audit ended before this worker was ready

    def watch() -> None:
        while True:
            time.sleep(WATCH_SECONDS)
            if os.getppid() != parent or (parent != audit_pid and not _alive(audit_pid)):
                os._exit(1)

    threading.Thread(target=watch, daemon=True, name="car-verify-audit-watch").start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _ray(shards: Sequence[Shard], settings: AuditSettings, out: str, workers: int,
         address: str | None, progress: Any) -> None:  # fmt: skip
    """Ray Data over the shards: ``address`` an existing cluster, else a local Ray
    with ``workers`` CPUs. ``out`` must be a folder every node can write."""
    import importlib

    try:
        ray: Any = importlib.import_module("ray")  # typed loosely: Ray's own stubs vary
    except ImportError:
        raise UsageError("--engine ray needs Ray: pip install 'car-verify[ray]'") from None
    started = not ray.is_initialized()
    if started:
        try:
            ray.init(address=address, num_cpus=None if address else workers,
                     log_to_driver=False, include_dashboard=False)  # fmt: skip
        except Exception as err:  # Ray's own start-up errors: one line, no traceback
            raise EngineError(_engine_failed("Ray", address, err)) from None
    try:
        data: Any = importlib.import_module("ray.data")
        items = [{"shard": s} for s in shards]
        if items:
            rows = data.from_items(items).map(
                lambda row: {"name": audit_shard(row["shard"], settings, out)}
            )
            rows.materialize()
        if progress is not None:
            progress.update(sum(s.count for s in shards))
    finally:
        if started:
            ray.shutdown()


def _engine_failed(engine: str, address: str | None, err: BaseException) -> str:
    """Why ``engine`` did not start, and what to try: the same words for Ray and Dask."""
    where = f"the cluster at {address}" if address else "a local cluster"
    text = " ".join(str(err).split()) or type(err).__name__
    return (
        f"--engine {engine.lower()}: {engine} did not start {where}: {text}; nothing was "
        f"audited (try again on a less loaded machine, --address of a running cluster, "
        f"or --engine local)"
    )


def _dask(shards: Sequence[Shard], settings: AuditSettings, out: str, workers: int,
          address: str | None, progress: Any) -> None:  # fmt: skip
    """A Dask bag over the shards: ``address`` a scheduler, else a local cluster of
    ``workers`` processes. ``out`` must be a folder every worker can write."""
    import importlib

    try:  # typed loosely: Dask's own annotations are partial
        bags: Any = importlib.import_module("dask.bag")
        distributed: Any = importlib.import_module("dask.distributed")
    except ImportError:
        raise UsageError("--engine dask needs Dask: pip install 'car-verify[dask]'") from None
    cluster = None
    try:
        if address is None:
            cluster = distributed.LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            )
        client = distributed.Client(address or cluster)
    except Exception as err:  # Dask's own start-up errors (a time-out, a refused address)
        if cluster is not None:
            cluster.close()
        raise EngineError(_engine_failed("Dask", address, err)) from None
    try:
        if shards:
            bag = bags.from_sequence(
                list(shards), npartitions=max(1, min(len(shards), workers * 4))
            )
            bag.map(audit_shard, settings, out).compute(scheduler=client)
        if progress is not None:
            progress.update(sum(s.count for s in shards))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


ENGINES = {"local": _local, "ray": _ray, "dask": _dask}


def _manifest(files: Sequence[Path], settings: AuditSettings, shard_size: int) -> dict[str, Any]:
    """What the shards in an output folder were made from: a rerun may reuse them
    only when this is the same (the sources unchanged, the same checks)."""
    import json

    policy = _digest(settings.policies)
    return {
        "sources": [[str(f), f.stat().st_size, f.stat().st_mtime_ns] for f in files],
        "shard_size": shard_size,
        "profile": settings.profile,
        "policies": policy,
        "compare_policies": _digest(settings.compare_policies),
        # as JSON values, null when not given (a round trip through the file's JSON)
        "labels": json.loads(json.dumps(settings.labels, sort_keys=True)),
        "flow_policy": json.loads(json.dumps(settings.flow_policy, sort_keys=True)),
        "budget": settings.budget,
        "max_record": settings.max_record,
        "max_file": settings.max_file,
    }


def _digest(folder: str | None) -> str | None:
    import hashlib

    if folder is None:
        return None
    digest = hashlib.sha256()
    for path in sorted(Path(folder).rglob("*")):
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


#: How a rerun's refusal names each setting of the manifest.
_SETTINGS = {
    "shard_size": "--shard-size",
    "profile": "the profile",
    "policies": "--policies",
    "compare_policies": "--compare-policies",
    "labels": "--labels",
    "flow_policy": "--flow-policy",
    "budget": "--budget",
    "max_record": "--max-record-size",
    "max_file": "--max-file-size",
}


def _differences(before: Any, now: dict[str, Any]) -> str:
    """What differs between the manifest in the folder and this run's, in words: the
    sources added, gone or changed since, and each setting with its two values
    (a digest's change said as "its files changed")."""
    if not isinstance(before, dict):
        return "the folder's audit.json cannot be read"
    said: list[str] = []
    old_files = {f[0]: f[1:] for f in before.get("sources", []) if isinstance(f, list) and f}
    new_files = {f[0]: f[1:] for f in now["sources"]}
    for what, names in (
        ("new sources", [n for n in new_files if n not in old_files]),
        ("sources left out", [n for n in old_files if n not in new_files]),
        (
            "sources changed since",
            [n for n in new_files if n in old_files and old_files[n] != new_files[n]],
        ),
    ):
        if names:
            said.append(f"{what}: {listed(names, 3)}")
    for key, name in _SETTINGS.items():
        was, is_ = before.get(key), now.get(key)
        if was == is_:
            continue
        if key in ("policies", "compare_policies") and was is not None and is_ is not None:
            said.append(f"{name}: the policies' files changed")
        elif key in ("labels", "flow_policy") and was is not None and is_ is not None:
            said.append(f"{name}: another file")
        else:
            said.append(f"{name}: {_setting(was)} before, {_setting(is_)} now")
    return "; ".join(said) or "a setting this version records differently"


def _setting(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, str) and len(value) == 64:  # a digest
        return "given"
    return str(value) if isinstance(value, (int, float, str)) else "given"


def _claim(out: Path, manifest: dict[str, Any], fresh: bool) -> None:
    """Record ``manifest`` in ``out/audit.json``; shards of a different audit there
    are an error (unless ``fresh``: they are removed)."""
    import json
    import shutil

    path = out / "audit.json"
    if not path.exists() and (out / "shards").exists() and not fresh:
        raise UsageError(f"{out} holds shards of an unknown audit: --fresh to start over")
    if path.exists() and not fresh:
        try:
            before = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            before = None
        if before != manifest:
            said = _differences(before, manifest)
            raise UsageError(
                f"{out} holds the shards of an audit with other sources or settings "
                f"({said}): give another output folder, or --fresh to start over"
            )
        return
    if fresh and (out / "shards").exists():
        shutil.rmtree(out / "shards")
    path.write_text(json.dumps(manifest, indent=2), encoding="utf-8")


def rates_by_outcome(out: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """For each code: how many trajectories it was found in, and its rate among the
    successful and the failed ones (the false-positive view)."""
    import pyarrow.parquet as pq

    table = pq.read_table(
        Path(out) / "trajectories.parquet", columns=["outcome", "code_counts", "status"]
    )
    totals: Counter[str] = Counter()
    hits: dict[str, Counter[str]] = {}
    for outcome, counts, status in zip(
        *(table.column(c).to_pylist() for c in ("outcome", "code_counts", "status")), strict=True
    ):
        if status != "checked":
            continue
        key = outcome or "unknown"
        totals[key] += 1
        for code, _n in counts or []:
            hits.setdefault(code, Counter())[key] += 1
    rows = []
    for code in sorted(hits):
        row: dict[str, Any] = {"code": code, "trajectories": sum(hits[code].values())}
        for key in ("success", "failure"):
            row[f"rate_{key}"] = hits[code][key] / totals[key] if totals[key] else None
        rows.append(row)
    return rows
