"""OpenTelemetry traces in (issue 40): the GenAI and OpenInference conventions, as an
OTLP JSON export and as spans one per line; a trace's spans merged by trace id
wherever they sit in the file; and ``audit`` reading them as it reads tau-bench."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("opentelemetry.semconv", reason="the [otel] extra is not installed")
pytest.importorskip("openinference.semconv", reason="the [otel] extra is not installed")

from car_verify.corpora.audit import plan_shards
from car_verify.importers import ImportProblem, Trajectory, read_file

HERE = Path(__file__).parent / "fixtures" / "otel"


def trajectories(path: Path) -> list[Trajectory]:
    items = list(read_file(path))
    assert not [i for i in items if isinstance(i, ImportProblem)], items
    return [i for i in items if isinstance(i, Trajectory)]


def calls(t: Trajectory) -> list[tuple[str, Any, bool]]:
    return [(c.tool, c.arguments, c.failed) for c in t.calls]


def test_a_genai_export_is_one_trajectory_per_trace_in_start_order() -> None:
    (t,) = trajectories(HERE / "genai-export.json")
    assert t.format == "otel" and t.id == "5b8efff798038103d269b633813fc60c"
    # declared out of order; the chat span is no call; deploy's status is an error
    assert calls(t) == [
        ("run_tests", {"suite": "billing"}, False),
        ("deploy", {"env": "prod"}, True),
    ]
    assert [c.call_id for c in t.calls] == ["call_1", "call_2"] and t.calls[0].result == "12 passed"
    assert t.model == "claude-opus-4-7"
    assert t.metadata["gen_ai.agent.name"] == "billing-bot"
    assert t.metadata["service.name"] == "billing-agent"
    proposal = t.proposal()
    assert [a["tool"] for a in proposal["actions"]] == ["run_tests", "deploy"]


def test_openinference_spans_one_per_line_merge_by_trace() -> None:
    found = {t.id: t for t in trajectories(HERE / "openinference-spans.jsonl")}
    assert set(found) == {"11", "22"}
    assert calls(found["11"]) == [
        ("refund", {"order_id": "A7", "amount": 20}, True),
        ("get_order", {"order_id": "A7"}, False),
    ]
    assert found["11"].model == "gpt-5" and "otel.start_times" not in found["11"].metadata
    assert calls(found["22"]) == [("search", {"q": "refund policy"}, False)]


def test_a_trace_split_across_export_lines_is_one_trajectory(tmp_path: Path) -> None:
    export = json.loads((HERE / "genai-export.json").read_text())
    spans = export["resourceSpans"][0]["scopeSpans"][0]["spans"]
    path = tmp_path / "collector.jsonl"  # the Collector's file exporter: a batch per line
    with path.open("w") as out:
        for part in (spans[:2], spans[2:]):
            batch = {
                "resourceSpans": [{**export["resourceSpans"][0], "scopeSpans": [{"spans": part}]}]
            }
            out.write(json.dumps(batch) + "\n")
    (t,) = trajectories(path)
    assert [c.tool for c in t.calls] == ["run_tests", "deploy"]
    (shard,) = plan_shards([path], shard_size=1)  # one shard: the trace is not cut in two
    assert shard.offset is None


def test_audit_reads_a_trace_export_as_it_reads_tau_bench(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from car_verify.cli import main

    assert main(["audit", str(HERE), "-o", str(tmp_path / "out")]) in (0, 1)
    table = pq.read_table(tmp_path / "out" / "trajectories.parquet").to_pylist()
    assert sorted(r["trajectory_id"] for r in table) == sorted(
        ["5b8efff798038103d269b633813fc60c", "11", "22"]
    )
    assert {r["format"] for r in table} == {"otel"}


@pytest.mark.parametrize("workers", ["1", "2"])
def test_without_the_otel_extra_an_otlp_source_is_one_clear_error(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    workers: str,
) -> None:
    """Without the conventions' packages an OTLP source fails the audit once, naming
    the extra (exit 2), not record by record and then as "no readable trajectory";
    so does a span met in the middle of a file of another format."""
    pytest.importorskip("pyarrow")
    import sys

    from samples import openai_record

    from car_verify.cli import main
    from car_verify.importers import otel

    mixed = tmp_path / "mixed" / "runs.jsonl"
    mixed.parent.mkdir()
    span = (HERE / "openinference-spans.jsonl").read_text().splitlines()[0]
    mixed.write_text(json.dumps(openai_record()) + "\n" + span + "\n")
    monkeypatch.setitem(sys.modules, "openinference.semconv.trace", None)  # not installed
    otel._names.cache_clear()
    try:
        for source in (HERE, mixed.parent):
            out = tmp_path / f"out-{source.name}"
            assert main(["audit", str(source), "-o", str(out), "--workers", workers]) == 2
            said = capsys.readouterr()
            assert said.out == "" and said.err.count("\n") == 1, said.err
            assert "needs the [otel] extra" in said.err
            assert "pip install 'car-verify[otel]'" in said.err
            assert "malformed" not in said.err and "skipped a record" not in said.err
    finally:
        otel._names.cache_clear()


def genai_span(trace: str, span: str, tool: str, start: int, **extra: Any) -> dict[str, Any]:
    """An OTLP span of a GenAI tool call, as the Collector's exporter writes it."""
    attributes = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
        {"key": "gen_ai.tool.name", "value": {"stringValue": tool}},
        {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": json.dumps(extra)}},
    ]
    return {"traceId": trace, "spanId": span, "parentSpanId": "a0", "name": tool,
            "startTimeUnixNano": str(start), "attributes": attributes}  # fmt: skip


def export_line(spans: list[dict[str, Any]]) -> str:
    """One Collector export (a batch of spans) as one JSON line."""
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]}
    return json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": spans}]}]})


def test_a_trace_split_across_the_files_of_a_rotated_export_is_one_trajectory(
    tmp_path: Path,
) -> None:
    """A rotated Collector export: trace T's read is in the first file, its send in
    the second. It is one trajectory (id: the trace id), its calls in start order,
    and ``never send after read`` finds it once (it found nothing: two
    trajectories of one id); the traces of one file stay in that file's shard, and
    two workers write the bytes one does."""
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from car_verify.cli import main
    from car_verify.importers import read

    corpus = tmp_path / "export"
    corpus.mkdir()
    t, u, v = "aa" * 16, "bb" * 16, "cc" * 16
    (corpus / "traces-1.jsonl").write_text(
        export_line([genai_span(u, "u1", "read", 5), genai_span(t, "t1", "read", 10)]) + "\n"
    )
    (corpus / "traces-2.jsonl").write_text(
        export_line([genai_span(t, "t3", "send", 30), genai_span(v, "v1", "send", 1)]) + "\n"
        + export_line([genai_span(t, "t2", "lookup", 20)]) + "\n"
    )  # fmt: skip
    (tmp_path / "pol").mkdir()
    (tmp_path / "pol" / "p.toml").write_text(
        '[[trace_rule]]\nname = "no-leak"\nrule = "never send after read"\n'
    )
    found = {i.id: i for i in read(sorted(corpus.iterdir())) if isinstance(i, Trajectory)}
    assert set(found) == {t, u, v}
    assert [c.tool for c in found[t].calls] == ["read", "lookup", "send"]
    shards = plan_shards(sorted(corpus.iterdir()), shard_size=1)
    assert [(s.drop, s.keep) for s in shards] == [
        (frozenset({t}), None), (frozenset({t}), None), (frozenset(), frozenset({t})),
    ]  # fmt: skip
    outs = []
    for workers in ("1", "2"):
        out = tmp_path / f"out-{workers}"
        outs.append(out)
        args = ["audit", str(corpus), "-o", str(out), "--policies", str(tmp_path / "pol")]
        assert main([*args, "--workers", workers, "--no-progress"]) in (0, 1)
    rows = pq.read_table(outs[0] / "trajectories.parquet").to_pylist()
    assert sorted((r["trajectory_id"], r["calls"]) for r in rows) == [(t, 3), (u, 1), (v, 1)]
    findings = pq.read_table(outs[0] / "findings.parquet").to_pylist()
    leaks = [(f["trajectory_id"], f["tool"]) for f in findings if f["code"] == "trace_rule:no-leak"]
    assert leaks == [(t, "send")]
    for table in ("findings.parquet", "trajectories.parquet"):
        assert (outs[0] / table).read_bytes() == (outs[1] / table).read_bytes()


def test_a_span_sent_twice_is_one_call_and_ties_in_time_keep_one_order(tmp_path: Path) -> None:
    """A batch the Collector sent again (the same span ids) adds no call; spans that
    start at the same time are ordered by span id, whichever file or line each
    sits in."""
    from car_verify.importers import read

    t = "dd" * 16
    spans = [genai_span(t, "s2", "b", 7), genai_span(t, "s1", "a", 7), genai_span(t, "s3", "c", 9)]
    one = tmp_path / "one.jsonl"
    one.write_text(export_line(spans) + "\n")
    split = [tmp_path / "x.jsonl", tmp_path / "y.jsonl"]
    split[0].write_text(export_line(spans[:1]) + "\n" + export_line(spans[2:]) + "\n")
    split[1].write_text(export_line(spans[1:]) + "\n")  # s3 again
    for paths in ([one], split):
        (t_,) = [i for i in read(paths) if isinstance(i, Trajectory)]
        assert [c.tool for c in t_.calls] == ["a", "b", "c"], paths


FINDING = ("trajectory_id", "code", "step", "action_id", "tool", "severity", "message")


def findings_of(out: Path) -> list[tuple[Any, ...]]:
    import pyarrow.parquet as pq

    rows = pq.read_table(out / "findings.parquet").to_pylist()
    return sorted(tuple(r[k] for k in FINDING) for r in rows)


span_specs = st.lists(
    st.tuples(
        st.integers(0, 2),  # which trace
        st.sampled_from(["read", "send", "lookup"]),
        st.integers(0, 6),  # start: ties happen
        st.integers(0, 3),  # the file it lands in
        st.booleans(),  # sent twice (the second copy in another file)
    ),
    min_size=1,
    max_size=10,
)
hostile = st.lists(
    st.sampled_from(["empty", "empty.gz", "truncated.gz", "not-gzip.gz", "huge", "huge.gz"]),
    max_size=3,
)


@settings(deadline=None, max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(specs=span_specs, junk=hostile, gz=st.lists(st.booleans(), min_size=4, max_size=4),
       batch=st.integers(1, 3))  # fmt: skip
def test_hostile_splits_of_a_trace_audit_as_the_same_spans_in_one_file(
    tmp_path_factory: pytest.TempPathFactory,
    specs: list[tuple[int, str, int, int, bool]],
    junk: list[str],
    gz: list[bool],
    batch: int,
) -> None:
    """The spans of a few traces, split at random over files (some gzipped, some
    spans sent twice, ``batch`` spans per export line) beside hostile files (empty,
    truncated or non-gzip .gz, lines past the record bound), give the findings of
    the same spans in one file: never a crash, within a time bound, each trace one
    trajectory."""
    pytest.importorskip("pyarrow")
    import gzip
    import time

    import pyarrow.parquet as pq

    from car_verify.cli import main

    base = tmp_path_factory.mktemp("split")
    traces = [f"{n:032x}" for n in (0xA1, 0xB2, 0xC3)]
    spans = [
        (where, twice, genai_span(traces[t], f"{n:016x}", tool, start, n=n))
        for n, (t, tool, start, where, twice) in enumerate(specs)
    ]
    whole = base / "whole"
    whole.mkdir()
    (whole / "one.jsonl").write_text(export_line([s for _, _, s in spans]) + "\n")
    files: list[list[dict[str, Any]]] = [[] for _ in range(4)]
    for where, twice, span in spans:
        files[where].append(span)
        if twice:
            files[(where + 1) % 4].append(span)
    corpus = base / "corpus"
    corpus.mkdir()
    for n, part in enumerate(files):
        text = "".join(export_line(part[i : i + batch]) + "\n" for i in range(0, len(part), batch))
        name = corpus / f"spans-{n}.jsonl"
        if gz[n]:
            Path(f"{name}.gz").write_bytes(gzip.compress(text.encode()))
        else:
            name.write_text(text)
    for n, kind in enumerate(junk):
        name = corpus / f"junk-{n}.jsonl{'.gz' if kind.endswith('.gz') else ''}"
        huge = ("x" * 40_000 + "\n").encode()
        data = {"empty": b"", "empty.gz": gzip.compress(b""), "huge": huge,
                "huge.gz": gzip.compress(huge), "not-gzip.gz": b"not gzip at all\n",
                "truncated.gz": gzip.compress(huge * 3)[:200]}[kind]  # fmt: skip
        name.write_bytes(data)
    results = []
    for source in (whole, corpus):
        out = base / f"out-{source.name}"
        clock = time.monotonic()
        code = main(["audit", str(source), "-o", str(out), "--no-progress",
                     "--max-record-size", "0.02", "--shard-size", "2"])  # fmt: skip
        assert code in (0, 1) and time.monotonic() - clock < 60
        rows = pq.read_table(out / "trajectories.parquet").to_pylist()
        checked = sorted(r["trajectory_id"] for r in rows if r["status"] == "checked")
        assert checked == sorted({traces[t] for t, *_ in specs})  # each trace once
        results.append(findings_of(out))
    assert results[0] == results[1]


def test_past_the_id_bound_the_files_of_a_split_trace_are_one_shard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With more ids than the planner keeps, the files of a merging format are read
    as one shard: the split trace is still one trajectory."""
    from car_verify.corpora import audit as audit_module

    t = "ee" * 16
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text(export_line([genai_span(t, "1", "read", 1)]) + "\n")
    second.write_text(export_line([genai_span(t, "2", "send", 2)]) + "\n")
    monkeypatch.setattr(audit_module, "MAX_MERGE_IDS", 0)
    (shard,) = plan_shards([first, second], shard_size=1)
    assert (shard.path, shard.also, shard.keep, shard.drop) == (str(first), (str(second),),
                                                                 None, frozenset())  # fmt: skip
    items = list(audit_module._shard_items(shard, audit_module.Bounds()))
    assert [(i.id, [c.tool for c in i.calls]) for i in items] == [(t, ["read", "send"])]
