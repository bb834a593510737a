"""The trajectory model, the lifting to traces and proposals, and the readers.

**Lifting.** A trajectory's tool calls, in the order they were made, become:

- the *trace*: ``(tool, arguments, outcome)`` per call, ``outcome`` being
  ``failed`` when the call's result says it errored (an OpenAI ``tool`` message
  or an Anthropic ``tool_result`` marked as an error, a result text beginning
  ``Error``), else ``succeeded``;
- the *proposal*: one ``tool_call`` action per call, id ``c<n>`` (``n`` from 1, in
  call order: unique and stable whatever the source's ids, which are kept in
  ``metadata.call_id``), ``tool`` the function's name, ``parameters`` its
  arguments (a JSON object; arguments that are not one are kept under
  ``_arguments``, and the record says so). Each call's result becomes the state
  key ``result:c<n>`` (its effect, holding the result as given: known), and each
  call depends on the one before it (``state_dependencies: ["result:c<n-1>"]``),
  so both profiles order the actions as they ran. What is unknown: every other
  effect a tool had on the world, which no transcript records.

A trajectory's ``outcome`` is ``success`` or ``failure`` when the source says
(a reward of 1 / above 0, a pass flag), else None; ``reward`` is kept as given.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..base.errors import InputError, UsageError
from ..ir.model import loads_finite


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call of a trajectory."""

    tool: str
    arguments: Any
    call_id: str | None = None
    result: Any = None
    failed: bool = False
    #: The message index (or step id) in the source where the call was made.
    step: int | None = None


@dataclass(slots=True)
class Trajectory:
    """One agent run: who made which calls, and how it ended."""

    id: str
    format: str
    calls: list[Call]
    reward: float | None = None
    outcome: str | None = None  # success | failure | None (unknown)
    model: str | None = None
    source: str = ""
    line: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: A proposal given as such (the ``proposal`` format): checked as written.
    written: dict[str, Any] | None = None

    def trace(self) -> list[tuple[str, dict[str, Any], str]]:
        """``(tool, arguments, succeeded | failed)`` per call, in order."""
        return [
            (c.tool, _object(c.arguments), "failed" if c.failed else "succeeded")
            for c in self.calls
        ]

    def proposal(self) -> dict[str, Any]:
        """The lifted proposal (see the module docs), as Agent IR JSON."""
        if self.written is not None:
            return self.written
        actions: list[dict[str, Any]] = []
        for n, call in enumerate(self.calls, 1):
            action: dict[str, Any] = {
                "id": f"c{n}",
                "type": "tool_call",
                "tool": call.tool,
                "parameters": _object(call.arguments),
                "expected_effects": {f"result:c{n}": _json_value(call.result)},
            }
            if n > 1:
                action["state_dependencies"] = [f"result:c{n - 1}"]
            meta: dict[str, Any] = {}
            if call.call_id is not None:
                meta["call_id"] = call.call_id
            if call.step is not None:
                meta["step"] = call.step
            if call.failed:
                meta["failed"] = True
            if meta:
                action["metadata"] = meta
            actions.append(action)
        return {"id": self.id, "source": f"{self.format}:{self.source}", "actions": actions}


def _object(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    return {"_arguments": arguments}


def _json_value(value: Any) -> Any:
    """A result as JSON: kept when it is JSON, else its text."""
    if value is None or isinstance(value, (str, int, float, bool, list, dict)):
        return value
    return str(value)


def parse_arguments(raw: Any) -> tuple[Any, str | None]:
    """Arguments given as JSON text (OpenAI's) or as an object; a note when they
    are not a JSON object."""
    if isinstance(raw, dict):
        return raw, None
    if isinstance(raw, str):
        try:
            value = loads_finite(raw) if raw.strip() else {}
        except ValueError:
            return raw, "arguments are not JSON: kept as text under _arguments"
        if isinstance(value, dict):
            return value, None
        return value, "arguments are not a JSON object: kept under _arguments"
    if raw is None:
        return {}, None
    return raw, "arguments are not a JSON object: kept under _arguments"


def errored(text: Any) -> bool:
    """A result text that reports an error, as tool harnesses write it."""
    return isinstance(text, str) and text.lstrip().lower().startswith(("error", "exception"))


def scalar_metadata(meta: Any) -> dict[str, Any]:
    """The scalar entries (string, number, boolean) of a record's ``metadata``.

    Nested values are left out: the audit tables keep metadata as one canonical
    JSON column, and scalars are what a group-by or a filter uses.
    """
    if not isinstance(meta, Mapping):
        return {}
    return {
        str(k): v
        for k, v in meta.items()
        if isinstance(v, (str, int, float, bool)) and not (isinstance(v, float) and v != v)
    }


def reward_of(value: Any) -> int | float | None:
    """A record's reward as a number (a boolean is an outcome, not a reward), or None."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def string_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def outcome_of(reward: Any) -> str | None:
    if isinstance(reward, bool):
        return "success" if reward else "failure"
    if isinstance(reward, (int, float)):
        return "success" if reward > 0 else "failure"
    return None


@dataclass(frozen=True, slots=True)
class ImportProblem:
    """A record that could not be read or lifted: where, and why."""

    source: str
    line: int | None
    record_id: str | None
    message: str

    def __str__(self) -> str:
        where = self.source + (f":{self.line}" if self.line is not None else "")
        what = f" (record {self.record_id})" if self.record_id else ""
        return f"{where}{what}: {self.message}"


class MissingExtra(UsageError):
    """A record's format is known, but reading it needs packages that are not
    installed: one error for the whole run (naming what to install), not a
    problem per record."""


class Importer(Protocol):
    """One format: whether a record is in it, and its trajectories."""

    name: str

    def sniff(self, record: Any) -> bool: ...

    def lift(
        self, record: Any, *, source: str, line: int | None, index: int
    ) -> list[Trajectory]: ...


class MergingImporter(Importer, Protocol):
    """A format whose trajectory may sit in several records (a trace's spans on
    several lines, or files): its importer lifts each part, merges the parts of one
    id, and says which ids a record has parts of without lifting it (``ids``: every
    id its lift gives, so that the audit puts all of a trajectory's parts in one
    shard)."""

    merges_by_id: bool

    def ids(self, record: Any) -> Iterable[str]: ...

    def merge(self, parts: Sequence[Trajectory]) -> Trajectory: ...


def require(importer: Importer) -> None:
    """Raise :class:`MissingExtra` when ``importer`` cannot read its format here (an
    importer with a ``require()`` method says what it lacks)."""
    check = getattr(importer, "require", None)
    if check is not None:
        check()


def merging(formats: Iterable[Importer]) -> list[MergingImporter]:
    """The importers of ``formats`` whose records merge by id (``merges_by_id``)."""
    return [i for i in formats if getattr(i, "merges_by_id", False)]  # type: ignore[misc]


# --- records from files ------------------------------------------------------------------


#: The longest record (a line, or a whole ``.json`` document) read, decompressed:
#: past it the record is a malformed row, so one huge line costs one bad row. Lines
#: are read a block at a time: no more than this is ever held for one record.
MAX_RECORD = 64 * 1024 * 1024

#: The most a compressed file (``.gz``) is read, decompressed: past it the file is
#: cut off with a malformed row that says so, so a compression bomb (a few MB
#: that inflate to gigabytes) costs seconds. A plain file is read as it is on disk.
MAX_FILE = 512 * 1024 * 1024

#: How much is decompressed (or read) at a time.
_BLOCK = 1 << 20

#: What reading a damaged file raises: a truncated or non-gzip ``.gz``, bad UTF-8
#: inside a whole document, a read error.
_UNREADABLE = (OSError, EOFError, UnicodeDecodeError, ValueError, zlib.error)


@dataclass(frozen=True, slots=True)
class Bounds:
    """How much is read of one record and of one compressed file, decompressed."""

    record: int = MAX_RECORD
    file: int = MAX_FILE

    def __post_init__(self) -> None:
        if self.record < 1 or self.file < 1:
            raise ValueError("the record and file bounds must be at least one byte")


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):g} MiB"


class _Blocks:
    """A file's bytes a block at a time: a ``.gz`` decompressed (every member) and
    cut off past ``limit`` bytes (``cut`` then says so), a plain file as it is."""

    def __init__(self, file: Path, limit: int) -> None:
        self.file, self.limit = file, limit
        self.cut = False
        self.read = 0  # bytes given out, decompressed

    def __iter__(self) -> Iterator[bytes]:
        with open(self.file, "rb") as stream:
            if not self.file.name.endswith(".gz"):
                while block := stream.read(_BLOCK):
                    self.read += len(block)
                    yield block
                return
            inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)  # a gzip member
            pending, started = b"", False
            while True:
                if not pending:
                    pending = stream.read(_BLOCK // 16)
                    if not pending:
                        break
                if not started and not pending.strip(b"\0"):
                    pending = b""  # zeros after the last member: padding, as gzip allows
                    continue
                started = True
                block = inflate.decompress(pending, _BLOCK)
                if inflate.eof:  # a member ended; another may follow
                    pending = inflate.unused_data
                    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    started = False
                else:
                    pending = inflate.unconsumed_tail
                if block:
                    room = self.limit - self.read
                    if len(block) > room:
                        self.read += room
                        self.cut = True
                        if room:
                            yield block[:room]
                        return
                    self.read += len(block)
                    yield block
            if started and not inflate.eof:
                raise EOFError("the compressed file ended before its end-of-stream marker")


def _lines(blocks: Iterable[bytes], limit: int) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, its bytes)`` per line of ``blocks``, without the newline; None
    in place of a line longer than ``limit``, said as soon as it is seen (its rest
    is then skipped a block at a time, never held)."""
    held = bytearray()
    line, skipping = 1, False
    for block in blocks:
        start = 0
        while True:
            end = block.find(b"\n", start)
            if end < 0:
                if not skipping:
                    held += block[start:]
                    if len(held) > limit:
                        held.clear()
                        skipping = True
                        yield line, None
                break
            if skipping:
                skipping = False
            elif held:
                held += block[start:end]
                yield line, (bytes(held) if len(held) <= limit else None)
                held.clear()
            else:
                yield line, (block[start:end] if end - start <= limit else None)
            line += 1
            start = end + 1
    if held and not skipping:
        yield line, bytes(held)


def records(
    path: str | os.PathLike[str], bounds: Bounds | None = None
) -> Iterator[tuple[int | None, Any]]:
    """The records of one file, streamed: a ``.jsonl`` line each (``line`` its
    number), the elements of a ``.json`` array (or the one object), a ``.parquet``
    row each (as a dict); ``.gz`` decompressed on the way, a block at a time. A
    record that is not JSON or UTF-8, is nested too deeply or is longer than
    ``bounds.record`` (:data:`MAX_RECORD`) yields an :class:`InputError` in its
    place; a compressed file is cut off past ``bounds.file`` (:data:`MAX_FILE`)
    decompressed, with an InputError that says so; a file that cannot be read
    further (a truncated ``.gz``, a corrupt Parquet file) yields one and ends, so
    that the audit goes on with the next file."""
    limits = bounds or Bounds()
    file = Path(path)
    name = file.name[:-3] if file.name.endswith(".gz") else file.name
    if name.endswith(".parquet"):
        yield from _parquet_rows(file)
        return
    blocks = _Blocks(file, limits.file)
    line = 0
    try:
        if name.endswith((".jsonl", ".ndjson")):
            for line, raw in _lines(blocks, limits.record):
                if raw is None:
                    yield line, _too_long(file, line, limits)
                elif raw.strip():
                    yield line, _decoded_bytes(raw, file, line)
            if blocks.cut:
                yield None, _cut_off(file, limits)
            return
        text = bytearray()
        for block in blocks:
            text += block
            if len(text) > limits.record:
                yield None, _too_long(file, None, limits)
                return
        if blocks.cut:
            yield None, _cut_off(file, limits)
            return
        doc = _decoded_bytes(bytes(text), file, None)
    except _UNREADABLE as err:
        yield (
            (line or None),
            InputError(
                f"cannot read the file further: {type(err).__name__}: {err}", source=str(file)
            ),
        )
        return
    if isinstance(doc, InputError):
        yield None, doc
    elif isinstance(doc, list):
        for item in doc:
            yield None, item
    else:
        yield None, doc


def count_records(path: str | os.PathLike[str], bounds: Bounds | None = None) -> int:
    """How many records :func:`records` gives for a file, found cheaply: a JSON-lines
    file's non-empty lines (undecoded), a Parquet file's rows from its footer."""
    limits = bounds or Bounds()
    file = Path(path)
    name = file.name[:-3] if file.name.endswith(".gz") else file.name
    if name.endswith((".jsonl", ".ndjson")):
        blocks = _Blocks(file, limits.file)
        try:
            found = sum(1 for _, raw in _lines(blocks, limits.record) if raw is None or raw.strip())
        except _UNREADABLE:
            return 1
        return found + blocks.cut
    if name.endswith(".parquet") and not file.name.endswith(".gz"):
        try:
            import pyarrow.parquet as pq

            return int(pq.ParquetFile(file).metadata.num_rows)
        except Exception:  # a corrupt footer: the reader says so, as one record
            return 1
    return sum(1 for _ in records(file, limits))


def _decoded_bytes(raw: bytes, file: Path, line: int | None) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        return InputError(f"not UTF-8: {err}", source=str(file), line=line)
    return _decoded(text, file, line)


def _decoded(text: str, file: Path, line: int | None) -> Any:
    """A record's JSON, or the InputError that says why it is none."""
    try:
        return loads_finite(text)
    except ValueError as err:
        return InputError(f"not JSON: {err}", source=str(file), line=line)
    except RecursionError:
        return InputError("the record is nested too deeply to read", source=str(file), line=line)


def _too_long(file: Path, line: int | None, bounds: Bounds) -> InputError:
    return InputError(
        f"the record is longer than {_mib(bounds.record)} decompressed (the record bound, "
        "--max-record-size): not read",
        source=str(file),
        line=line,
    )


def _cut_off(file: Path, bounds: Bounds) -> InputError:
    return InputError(
        f"the file is longer than {_mib(bounds.file)} decompressed (the file bound, "
        "--max-file-size): cut off there, the rest not read",
        source=str(file),
    )


def _parquet_rows(file: Path) -> Iterator[tuple[int | None, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(
            "reading Parquet needs pyarrow: pip install 'car-verify[audit]'", source=str(file)
        ) from None
    try:
        reader = pq.ParquetFile(file)
        for batch in reader.iter_batches(batch_size=1024):  # a batch at a time: bounded
            yield from _parquet_batch(batch)
    except Exception as err:  # pyarrow's errors for a corrupt file have no common base
        problem = f"not a readable Parquet file: {type(err).__name__}: {err}"
        yield None, InputError(problem, source=str(file))


def _parquet_batch(batch: Any) -> Iterator[tuple[int | None, Any]]:
    """The rows of one Parquet batch, its columns of JSON text decoded."""
    for row in batch.to_pylist():
        for key, value in row.items():  # columns holding JSON text (messages, traj)
            if isinstance(value, str) and value[:1] in "[{":
                with contextlib.suppress(ValueError, RecursionError):
                    row[key] = loads_finite(value)
        yield None, row


def _merging(
    read: Callable[..., Iterator[Trajectory | ImportProblem]],
) -> Callable[..., Iterator[Trajectory | ImportProblem]]:
    """A reader whose partial trajectories (of a format that ``merges_by_id``) come
    out merged (:func:`merged`); its ``formats`` argument says which formats."""

    signature = inspect.signature(read)

    @functools.wraps(read)
    def reader(*args: Any, **kwargs: Any) -> Iterator[Trajectory | ImportProblem]:
        formats = signature.bind(*args, **kwargs).arguments["formats"]
        return merged(read(*args, **kwargs), formats)

    return reader


@_merging
def read_file(
    path: str | os.PathLike[str], formats: Sequence[Importer], bounds: Bounds | None = None
) -> Iterator[Trajectory | ImportProblem]:
    """Every trajectory of one file, and a problem for each record that fails: each
    record goes to the first of ``formats`` that knows it."""
    return _parts(path, formats, bounds)


def read_merged(
    paths: Iterable[str | os.PathLike[str]],
    formats: Sequence[Importer],
    bounds: Bounds | None = None,
    *,
    keep: Collection[str] | None = None,
    drop: Collection[str] = (),
) -> Iterator[Trajectory | ImportProblem]:
    """The trajectories of several files, those of a format that ``merges_by_id``
    merged by id across the files (a trace whose spans sit in two files of a
    rotated export is one trajectory). ``keep``: only the merged trajectories of
    these ids (and nothing else: the problems and the other formats are the files'
    own); ``drop``: not the merged trajectories of these ids."""
    names = {i.name for i in merging(formats)}

    def parts() -> Iterator[Trajectory | ImportProblem]:
        for path in paths:
            for item in _parts(path, formats, bounds):
                if isinstance(item, Trajectory) and item.format in names:
                    if (keep is None or item.id in keep) and item.id not in drop:
                        yield item
                elif keep is None:
                    yield item

    return merged(parts(), formats)


def _parts(
    path: str | os.PathLike[str], formats: Sequence[Importer], bounds: Bounds | None
) -> Iterator[Trajectory | ImportProblem]:
    """:func:`read_file`'s items before the parts of one id are merged."""
    source = str(path)
    for index, (line, record) in enumerate(records(path, bounds)):
        if isinstance(record, InputError):
            yield ImportProblem(source, line, None, record.problem)
            continue
        yield from _lift(record, source, line, index, formats)


def merged(
    items: Iterable[Trajectory | ImportProblem], formats: Sequence[Importer]
) -> Iterator[Trajectory | ImportProblem]:
    """``items``, with the partial trajectories of a format whose importer
    ``merges_by_id`` (a trace whose spans sit in several records) merged by id, at
    the end, in the order their ids first came."""
    by_name = {i.name: i for i in merging(formats)}
    held: dict[tuple[str, str], list[Trajectory]] = {}
    for item in items:
        if isinstance(item, Trajectory) and item.format in by_name:
            held.setdefault((item.format, item.id), []).append(item)
        else:
            yield item
    for (name, _), parts in held.items():
        yield by_name[name].merge(parts)


def _lift(
    record: Any, source: str, line: int | None, index: int, formats: Sequence[Importer]
) -> Iterator[Trajectory | ImportProblem]:
    importer = next((i for i in formats if i.sniff(record)), None)
    rid = _record_id(record)
    if importer is None:
        yield ImportProblem(source, line, rid, "no importer reads this record's format")
        return
    try:
        yield from importer.lift(record, source=source, line=line, index=index)
    except InputError as err:
        yield ImportProblem(source, line, rid, f"{importer.name}: {err}")
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        yield ImportProblem(source, line, rid, f"{importer.name}: malformed record ({err!r})")


@_merging
def read_lines(
    path: str | os.PathLike[str],
    offset: int,
    count: int,
    formats: Sequence[Importer],
    first_line: int | None = None,
    bounds: Bounds | None = None,
) -> Iterator[Trajectory | ImportProblem]:
    """The trajectories of ``count`` non-empty lines of a JSON-lines file, from byte
    ``offset`` (a shard of it): as :func:`read_file`, line numbers included.
    ``first_line``: the line number at ``offset`` when the caller knows it (else the
    lines before are counted, a block at a time)."""
    limits = bounds or Bounds()
    source = str(path)
    with open(path, "rb") as stream:
        if first_line is not None:
            stream.seek(offset)
            line = first_line
        else:
            line = 1 + _newlines_before(stream, offset)
        seen = 0
        while raw := stream.readline(limits.record + 1):
            n, line = line, line + 1
            if len(raw) > limits.record and not raw.endswith(b"\n"):
                while (rest := stream.readline(_BLOCK)) and not rest.endswith(b"\n"):
                    pass  # the rest of an over-long line, dropped a block at a time
                if seen == count:
                    break
                seen += 1
                yield ImportProblem(source, n, None, _too_long(Path(path), n, limits).problem)
                continue
            if not raw.strip():
                continue
            if seen == count:
                break
            seen += 1
            record = _decoded_bytes(raw, Path(path), n)
            if isinstance(record, InputError):
                yield ImportProblem(source, n, None, record.problem)
                continue
            yield from _lift(record, source, n, n, formats)


def _newlines_before(stream: Any, offset: int, block: int = 1 << 20) -> int:
    """The newlines in the first ``offset`` bytes, read a block at a time (memory
    bounded by the block, not the offset); leaves the stream at ``offset``."""
    found, left = 0, offset
    while left > 0:
        chunk = stream.read(min(block, left))
        if not chunk:
            break
        found += chunk.count(b"\n")
        left -= len(chunk)
    return found


def read(
    paths: Iterable[str | os.PathLike[str]], formats: Sequence[Importer]
) -> Iterator[Trajectory | ImportProblem]:
    """:func:`read_file` over many files, in the order given; a trajectory whose
    parts sit in several of the files (a trace's spans) is merged across them, and
    comes once the files are read (:func:`read_merged`)."""
    return read_merged(paths, formats)


def _record_id(record: Any) -> str | None:
    if isinstance(record, Mapping):
        for key in ("id", "trajectory_id", "session_id", "task_id", "instance_id"):
            value = record.get(key)
            if isinstance(value, (str, int)) and not isinstance(value, bool):
                return str(value)
    return None


def record_id(record: Any, source: str, index: int, line: int | None) -> str:
    """A trajectory's id: the record's own, else its place in the file."""
    found = _record_id(record)
    if found is not None:
        return found
    return f"{Path(source).name}:{line if line is not None else index}"


def chat_trajectory(
    format: str,
    doc: Mapping[str, Any],
    calls: list[Call],
    notes: list[str],
    *,
    model: Any,
    metadata: Any,
    source: str,
    line: int | None,
    index: int,
) -> Trajectory:
    """The trajectory of a chat-format record (a message list beside its ``reward``
    or ``score``, ``model`` and ``metadata``), as every chat importer lifts it."""
    reward = doc.get("reward", doc.get("score"))
    return Trajectory(
        record_id(doc, source, index, line),
        format,
        calls,
        reward=reward_of(reward),
        outcome=outcome_of(reward),
        model=string_or_none(model),
        source=source,
        line=line,
        metadata=scalar_metadata(metadata),
        notes=notes,
    )
