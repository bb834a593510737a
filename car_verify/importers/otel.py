"""OpenTelemetry traces of agent runs: the GenAI semantic conventions and
OpenInference's (Phoenix, Langfuse and others), as an OTLP JSON export
(``{resourceSpans: [{resource, scopeSpans: [{spans}]}]}``, a whole file or one
export per line, as the Collector's file exporter writes them) or as spans, one
per JSON line (an OTLP span, or the Python SDK's ``span.to_json()``).

A trace is a trajectory (its id the trace id). Each tool span is a call, in
start order: a span whose ``gen_ai.operation.name`` is ``execute_tool`` (its
``gen_ai.tool.name``, ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``,
``gen_ai.tool.call.id``), or whose ``openinference.span.kind`` is ``TOOL`` (its
``tool.name``, ``input.value``, ``output.value``, ``tool.id``). A call failed when
its span's status is an error (or it carries ``error.type``). The agent span
(``invoke_agent``, or OpenInference's ``AGENT``; else the trace's root) gives the
model (``gen_ai.request.model``, ``gen_ai.response.model``, ``llm.model_name``,
else an LLM span's) and the metadata (its scalar attributes and the resource's).

The attribute names are the conventions' own, read from their published
packages (``opentelemetry-semantic-conventions``, ``openinference-semantic-
conventions``: the ``[otel]`` extra), not retyped here; without them
:meth:`OtelImporter.require` (and the first record lifted) raises
:class:`~car_verify.importers.base.MissingExtra` naming the extra. The spans of
one trace may sit in several records, or several files (a rotated export): the
partial trajectories are merged by trace id (:meth:`OtelImporter.merge`: calls in
start order, a tie by span id, a span sent twice once) once every file they sit in
is read; :meth:`OtelImporter.ids` gives a record's trace ids without lifting it, so
the audit's planner can put each trace in one shard.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..base.errors import InputError
from .base import (
    Call,
    MissingExtra,
    Trajectory,
    parse_arguments,
    scalar_metadata,
    string_or_none,
)

__all__ = ["OtelImporter"]

#: Where each partial trajectory keeps its calls' start times and span ids until
#: merged.
_STARTS = "otel.start_times"
_SPAN_IDS = "otel.span_ids"


@functools.cache
def _names() -> Any:
    """The conventions' attribute names and values, from their packages."""
    try:
        from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
        from openinference.semconv.trace import SpanAttributes as OI
        from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
        from opentelemetry.semconv.attributes import error_attributes, service_attributes
    except ImportError as err:
        raise MissingExtra(
            "reading OpenTelemetry traces needs the [otel] extra (the semantic conventions' "
            f"packages; {err.name or 'one'} is missing): pip install 'car-verify[otel]'"
        ) from None

    @dataclass(frozen=True)
    class Names:
        operation: str = gen_ai.GEN_AI_OPERATION_NAME
        execute_tool: str = gen_ai.GenAiOperationNameValues.EXECUTE_TOOL.value
        invoke_agent: str = gen_ai.GenAiOperationNameValues.INVOKE_AGENT.value
        tool_name: str = gen_ai.GEN_AI_TOOL_NAME
        tool_call_id: str = gen_ai.GEN_AI_TOOL_CALL_ID
        tool_arguments: str = gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS
        tool_result: str = gen_ai.GEN_AI_TOOL_CALL_RESULT
        models: tuple[str, ...] = (
            gen_ai.GEN_AI_REQUEST_MODEL, gen_ai.GEN_AI_RESPONSE_MODEL, OI.LLM_MODEL_NAME,
        )  # fmt: skip
        kind: str = OI.OPENINFERENCE_SPAN_KIND
        kind_tool: str = Kind.TOOL.value
        kind_agent: str = Kind.AGENT.value
        oi_tool_name: str = OI.TOOL_NAME
        oi_tool_id: str = OI.TOOL_ID
        oi_input: str = OI.INPUT_VALUE
        oi_output: str = OI.OUTPUT_VALUE
        error_type: str = error_attributes.ERROR_TYPE
        service: str = service_attributes.SERVICE_NAME

    return Names()


@dataclass(frozen=True, slots=True)
class _Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int  # ns since the epoch
    attributes: Mapping[str, Any]
    error: bool
    resource: Mapping[str, Any]


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _any_value(value: Any) -> Any:
    """An OTLP JSON ``AnyValue`` as a plain value."""
    if not isinstance(value, Mapping):
        return value
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:  # a string in OTLP JSON (64-bit)
        return int(value["intValue"])
    if "arrayValue" in value:
        return [_any_value(v) for v in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return _attributes(value["kvlistValue"].get("values", []))
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def _attributes(raw: Any) -> dict[str, Any]:
    if isinstance(raw, Mapping):  # the SDK's to_json(): already flat
        return dict(raw)
    out: dict[str, Any] = {}
    for item in raw or []:
        if isinstance(item, Mapping) and isinstance(item.get("key"), str):
            out[item["key"]] = _any_value(item.get("value"))
    return out


def _nanos(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        if value.isdigit():
            return int(value)
        from datetime import datetime

        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return 0
        return int(moment.timestamp() * 1e9)
    return 0


def _hex(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    return value[2:] if value.startswith("0x") else value


def _trace_id(raw: Mapping[str, Any]) -> str | None:
    return _hex(raw.get("traceId")) or _hex(_mapping(raw.get("context")).get("trace_id"))


def _span(raw: Mapping[str, Any], resource: Mapping[str, Any]) -> _Span:
    """An OTLP span (camelCase) or an SDK span's ``to_json()`` (snake_case)."""
    context = _mapping(raw.get("context"))
    trace_id = _trace_id(raw)
    span_id = _hex(raw.get("spanId")) or _hex(context.get("span_id")) or ""
    if trace_id is None:
        raise InputError("a span without a trace id", ["traceId"])
    status = _mapping(raw.get("status"))
    code = status.get("code", status.get("status_code"))
    attributes = _attributes(raw.get("attributes"))
    error = code in (2, "STATUS_CODE_ERROR", "ERROR") or _names().error_type in attributes
    return _Span(
        trace_id,
        span_id,
        _hex(raw.get("parentSpanId")) or _hex(raw.get("parent_id")),
        str(raw.get("name", "")),
        _nanos(raw.get("startTimeUnixNano", raw.get("start_time"))),
        attributes,
        bool(error),
        resource,
    )


def _raw_spans(record: Mapping[str, Any]) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """``(span, its resource)`` for each span of an OTLP export."""
    for n, rs in enumerate(record["resourceSpans"]):
        if not isinstance(rs, Mapping):
            raise InputError("expected a ResourceSpans object", ["resourceSpans", n])
        resource = _mapping(rs.get("resource"))
        for scope in rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []:
            for raw in (scope.get("spans") if isinstance(scope, Mapping) else None) or []:
                if isinstance(raw, Mapping):
                    yield raw, resource


def _spans_of_export(record: Mapping[str, Any]) -> list[_Span]:
    resources: dict[int, dict[str, Any]] = {}
    spans: list[_Span] = []
    for raw, resource in _raw_spans(record):
        if id(resource) not in resources:
            resources[id(resource)] = _attributes(resource.get("attributes"))
        spans.append(_span(raw, resources[id(resource)]))
    return spans


def _is_span(record: Any) -> bool:
    if not isinstance(record, Mapping) or not isinstance(record.get("name"), str):
        return False
    context = record.get("context")
    return "traceId" in record or (isinstance(context, Mapping) and "trace_id" in context)


class OtelImporter:
    """OpenTelemetry spans (GenAI and OpenInference conventions) to trajectories."""

    name = "otel"
    #: A trace's spans may sit in several records: the file's partial trajectories
    #: are merged by id (:meth:`merge`).
    merges_by_id = True

    def require(self) -> None:
        """Raise :class:`MissingExtra` without the ``[otel]`` extra."""
        _names()

    def sniff(self, record: Any) -> bool:
        if isinstance(record, Mapping) and isinstance(record.get("resourceSpans"), list):
            return True
        return _is_span(record)

    def ids(self, record: Any) -> set[str]:
        """The trace ids a record has spans of (those :meth:`lift` gives parts of),
        read without lifting it."""
        found: set[str] = set()
        with contextlib.suppress(InputError, AttributeError, TypeError):
            if isinstance(record, Mapping) and "resourceSpans" in record:
                for raw, _ in _raw_spans(record):
                    found.add(_trace_id(raw) or "")
            elif isinstance(record, Mapping):
                found.add(_trace_id(record) or "")
        found.discard("")
        return found

    def lift(self, record: Any, *, source: str, line: int | None, index: int) -> list[Trajectory]:
        if isinstance(record, Mapping) and "resourceSpans" in record:
            spans = _spans_of_export(record)
        else:
            resource = _mapping(record.get("resource"))
            spans = [_span(record, _attributes(resource.get("attributes", resource)))]
        traces: dict[str, list[_Span]] = {}
        for span in spans:
            traces.setdefault(span.trace_id, []).append(span)
        return [_partial(tid, group, source, line) for tid, group in traces.items()]

    def merge(self, parts: Sequence[Trajectory]) -> Trajectory:
        """One trace's partial trajectories (from one record, several, or several
        files) as one: calls in span start order (a tie by span id, so the order
        is the same however the spans were split), a span given twice (a re-sent
        batch) once; the first model and metadata found."""
        timed: list[tuple[int, str, int, Call]] = []
        seen: set[str] = set()
        for part in parts:
            starts = part.metadata.get(_STARTS, [])
            spans = part.metadata.get(_SPAN_IDS, [""] * len(starts))
            for start, span, call in zip(starts, spans, part.calls, strict=True):
                if span and span in seen:
                    continue
                seen.add(span)
                timed.append((start, span, len(timed), call))
        timed.sort(key=lambda t: (t[0], t[1], t[2]))
        first = parts[0]
        metadata: dict[str, Any] = {}
        for part in parts:
            for key, value in part.metadata.items():
                if key not in (_STARTS, _SPAN_IDS):
                    metadata.setdefault(key, value)
        return Trajectory(
            id=first.id,
            format=self.name,
            calls=[c for *_, c in timed],
            model=next((p.model for p in parts if p.model), None),
            source=first.source,
            line=first.line,
            metadata=metadata,
            notes=[n for p in parts for n in p.notes],
        )


def _partial(trace_id: str, spans: list[_Span], source: str, line: int | None) -> Trajectory:
    names = _names()
    calls: list[tuple[int, str, Call]] = []
    notes: list[str] = []
    agent: _Span | None = None
    model: str | None = None
    for span in sorted(spans, key=lambda s: s.start):
        a = span.attributes
        operation, kind = a.get(names.operation), a.get(names.kind)
        if operation == names.execute_tool or kind == names.kind_tool:
            gen_ai = operation == names.execute_tool
            tool = a.get(names.tool_name if gen_ai else names.oi_tool_name) or span.name
            raw_args = a.get(names.tool_arguments if gen_ai else names.oi_input)
            arguments, note = parse_arguments(raw_args)
            if note:
                notes.append(f"call {len(calls) + 1} ({tool}): {note}")
            call_id = string_or_none(a.get(names.tool_call_id if gen_ai else names.oi_tool_id))
            result = a.get(names.tool_result if gen_ai else names.oi_output)
            call = Call(str(tool), arguments, call_id or span.span_id, result, span.error)
            calls.append((span.start, span.span_id, call))
        elif operation == names.invoke_agent or kind == names.kind_agent:
            agent = agent or span
        if model is None:
            model = next((str(a[k]) for k in names.models if a.get(k)), None)
    root = agent or next((s for s in spans if s.parent_id is None), None)
    metadata: dict[str, Any] = {}
    if root is not None:
        metadata.update(scalar_metadata(root.attributes))
        owned = next(
            (str(root.attributes[k]) for k in names.models if root.attributes.get(k)), None
        )
        model = owned or model
        service = root.resource.get(names.service)
        if isinstance(service, str):
            metadata.setdefault(names.service, service)
    metadata[_STARTS] = [start for start, _, _ in calls]
    metadata[_SPAN_IDS] = [span for _, span, _ in calls]
    return Trajectory(
        id=trace_id,
        format="otel",
        calls=[c for _, _, c in calls],
        model=model,
        source=source,
        line=line,
        metadata=metadata,
        notes=notes,
    )
