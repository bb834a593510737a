"""Importers and the corpus audit (issue 28): each format on hand-written records
and on the shipped corpus, the lifting's properties, identical output across
worker counts, a corrupted line, and resuming."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from samples import anthropic_record, atif_record, openai_record, tool_call

from car_verify.cli import main
from car_verify.importers import ImportProblem, Trajectory, read, read_file

pq = pytest.importorskip("pyarrow.parquet")

ROOT = Path(__file__).resolve().parent.parent
#: The tau-bench airline corpus (MIT), bundled gzipped with its licence.
CORPUS = ROOT / "examples" / "tau-bench-airline" / "gpt-4o-airline.json.gz"


def trajectories(path: Path) -> list[Trajectory]:
    items = list(read_file(path))
    assert not [i for i in items if isinstance(i, ImportProblem)], items
    return [i for i in items if isinstance(i, Trajectory)]


def test_openai_chat_records(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(openai_record()) + "\n")
    [t] = trajectories(path)
    assert (t.id, t.format, t.outcome, t.model) == ("run-1", "openai-chat", "success", "gpt-x")
    assert [(c.tool, c.failed) for c in t.calls] == [
        ("search", False),
        ("book", True),
        ("search", False),
    ]
    assert t.calls[0].result == '["r1"]' and t.calls[2].result is None  # a reused id: unanswered
    assert t.calls[1].arguments == "not json" and "not JSON" in t.notes[0]
    proposal = t.proposal()
    assert [a["id"] for a in proposal["actions"]] == ["c1", "c2", "c3"]
    assert proposal["actions"][1]["parameters"] == {"_arguments": "not json"}
    assert proposal["actions"][2]["state_dependencies"] == ["result:c2"]
    assert t.trace()[1] == ("book", {"_arguments": "not json"}, "failed")


def test_anthropic_and_atif_records(tmp_path: Path) -> None:
    anthropic, atif = anthropic_record(), atif_record()
    path = tmp_path / "mixed.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write(json.dumps(anthropic) + "\n" + json.dumps(atif) + "\n")
    first, second = trajectories(path)
    assert (first.format, [(c.tool, c.failed, c.result) for c in first.calls]) == (
        "anthropic", [("read", True, "ok")],
    )  # fmt: skip
    assert (second.format, second.id, second.model, second.outcome) == (
        "atif",
        "sess",
        "m",
        "failure",
    )
    assert second.calls[0].arguments == {"d": "/"} and second.calls[0].result == "a b"
    # the scalars of `extra` (less the reward) and the agent's name; nested values left out
    assert second.metadata == {"task": "t7", "agent_name": "a", "schema_version": "ATIF-v1.7"}


def test_the_tau_bench_corpus() -> None:
    found = trajectories(CORPUS)
    assert len(found) == 200
    assert sum(len(t.calls) for t in found) == 1164
    assert len({c.tool for t in found for c in t.calls}) == 14
    assert len({t.id for t in found}) == 200  # task and trial together
    doc = json.loads(gzip.decompress(CORPUS.read_bytes()))
    assert sum(t.outcome == "success" for t in found) == sum(r["reward"] >= 1 for r in doc)
    assert [(t.metadata["task_id"], t.metadata["trial"]) for t in found] == [
        (r["task_id"], r["trial"]) for r in doc
    ]


call = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["a", "b", "c"]),
        "args": st.dictionaries(st.sampled_from(["x", "y"]), st.integers(0, 3)),
    }
)


@settings(deadline=None, max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(call, min_size=1, max_size=3), max_size=5))
def test_lifting_keeps_the_order_one_action_per_call_and_stable_ids(
    turns: list[list[dict[str, Any]]],
) -> None:
    from car_verify.importers.openai_chat import OpenAIChatImporter

    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    made = []
    for turn in turns:
        calls = []
        for c in turn:
            made.append((c["name"], c["args"]))
            calls.append(tool_call(f"id{len(made)}", c["name"], json.dumps(c["args"])))
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
    [t] = OpenAIChatImporter().lift({"messages": messages}, source="s", line=1, index=0)
    actions = t.proposal()["actions"]
    assert [(a["tool"], a["parameters"]) for a in actions] == made
    assert [a["id"] for a in actions] == [f"c{n}" for n in range(1, len(made) + 1)]
    [again] = OpenAIChatImporter().lift({"messages": messages}, source="s", line=1, index=0)
    assert json.dumps(again.proposal()) == json.dumps(t.proposal())  # the same bytes
    from car_verify import verify

    if actions:  # the chain orders the actions as they ran, under both profiles
        for profile in ("car", "strict"):
            levels = verify(t.proposal(), profile=profile).execution_levels
            assert levels == [[a["id"]] for a in actions]


def corpus_lines(tmp_path: Path) -> Path:
    path = tmp_path / "runs.jsonl"
    lines = []
    for n in range(45):
        record = openai_record()
        record["id"] = f"run-{n}"
        record["reward"] = n % 2
        record["metadata"] = {"task": n % 3, "split": "dev", "deep": {"x": 1}}
        lines.append(json.dumps(record))
        if n == 20:
            lines.append("{corrupted")
    path.write_text("\n".join(lines) + "\n")
    return path


def run(*args: str) -> int:
    return main(["audit", *args, "--no-progress"])


def test_the_audit_is_the_same_whatever_the_workers_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = corpus_lines(tmp_path)
    one, two = tmp_path / "one", tmp_path / "two"
    assert run(str(source), "-o", str(one), "--shard-size", "10") == 0
    out = capsys.readouterr()
    assert "45 trajectories, 1 malformed record, 45 findings" in out.out
    assert f"{source}:22: not JSON" in out.err  # the corrupted line, named; the rest go on
    assert run(str(source), "-o", str(two), "--shard-size", "10", "--workers", "2") == 0
    for table in ("findings.parquet", "trajectories.parquet"):
        assert (one / table).read_bytes() == (two / table).read_bytes()
    rows = pq.read_table(one / "trajectories.parquet").to_pylist()
    assert len(rows) == 46 and sum(r["status"] == "malformed" for r in rows) == 1
    findings = pq.read_table(one / "findings.parquet").to_pylist()
    assert {f["code"] for f in findings} >= {"duplicate-call"}
    assert all(f["outcome"] in ("success", "failure") for f in findings)
    # the source's scalar metadata rides along, as canonical JSON, in both tables
    assert {r["metadata"] for r in rows} == {
        None,  # the malformed record
        *(json.dumps({"split": "dev", "task": n}, separators=(",", ":")) for n in range(3)),
    }
    assert {json.loads(f["metadata"])["task"] for f in findings} == {0, 1, 2}
    # an interrupted run: a shard's rows were never written; the rerun does only it
    (one / "shards" / "000002.trajectories.parquet").unlink()
    capsys.readouterr()
    assert run(str(source), "-o", str(one), "--shard-size", "10") == 0
    assert "(4 of 5 shards done before)" in capsys.readouterr().out
    assert (one / "findings.parquet").read_bytes() == (two / "findings.parquet").read_bytes()
    # other settings in the same folder: refused, not mixed
    (tmp_path / "pol").mkdir()
    (tmp_path / "pol" / "p.toml").write_text('deny_tool = ["book"]\n')
    assert run(str(source), "-o", str(one), "--policies", str(tmp_path / "pol")) == 2
    assert "--fresh" in capsys.readouterr().err
    assert run(str(source), "-o", str(one), "--policies", str(tmp_path / "pol"), "--fresh") == 0
    codes = {f["code"] for f in pq.read_table(one / "findings.parquet").to_pylist()}
    assert "deny_tool:book" in codes


def test_trace_rules_over_the_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pol").mkdir()
    (tmp_path / "pol" / "auth.toml").write_text(
        '[[trace_rule]]\nname = "authenticate-first"\n'
        'rule = "update_reservation_flights only after get_user_details"\n'
    )
    assert run(str(CORPUS), "-o", str(tmp_path / "out"), "--policies", str(tmp_path / "pol")) == 0
    out = capsys.readouterr().out
    assert "200 trajectories" in out and "trace_rule:authenticate-first" in out
    rows = pq.read_table(tmp_path / "out" / "findings.parquet").to_pylist()
    broken = {r["trajectory_id"] for r in rows if r["code"] == "trace_rule:authenticate-first"}
    assert broken and all(":" in t for t in broken)
    assert list(read([CORPUS]))  # the generator form reads the same file


def test_policy_replay_and_tool_rates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = corpus_lines(tmp_path)
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    (old / "p.toml").write_text('deny_tool = ["book"]\n')
    (new / "p.toml").write_text('deny_tool = ["search"]\n')
    out = tmp_path / "out"
    args = [str(source), "-o", str(out), "--policies", str(old), "--compare-policies", str(new)]
    assert run(*args) == 0
    text = capsys.readouterr().out
    # 45 runs of search, book, search: book is allowed now, both searches newly denied
    assert "90 calls newly denied, 45 no longer denied, 0 still denied, in 135 calls" in text
    table = pq.read_table(out / "replay.parquet")
    rows = table.to_pylist()
    first = [r for r in rows if r["trajectory"] == "run-0"]
    assert [(r["index"], r["change"]) for r in first] == [
        (0, "newly_denied"), (1, "no_longer_denied"), (2, "newly_denied"),
    ]  # fmt: skip
    assert first[1]["old_rules"] == ["deny_tool:book"] and first[1]["new_rules"] == []
    # one vocabulary and one table with policy impact (issue 59): the same rows
    from car_verify.corpora.impact import impact
    from car_verify.corpora.replay import replay_schema

    assert table.schema.equals(replay_schema())
    replayed = impact(str(old), str(new), [str(source)])
    assert sorted(rows, key=str) == sorted((r.to_dict() for r in replayed.rows), key=str)
    assert main(["policy", "impact", str(old), str(new), str(source), "-o",
                 str(tmp_path / "calls.parquet")]) == 1  # fmt: skip
    capsys.readouterr()
    assert pq.read_table(tmp_path / "calls.parquet").equals(table)
    rates = json.loads((out / "tool_rates.json").read_text())
    assert rates["tools"]["book"] == {"dispatched": 45, "succeeded": 0}  # "Error: sold out"
    assert rates["tools"]["search"] == {"dispatched": 90, "succeeded": 90}
    from car_verify.plan.risk import rates_from_history

    history = rates_from_history([out])
    assert history.rate("book") == pytest.approx(1 / 47)
    assert not history.notes


def test_the_report_is_one_self_contained_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    source = corpus_lines(tmp_path)
    (tmp_path / "pol").mkdir()
    (tmp_path / "pol" / "p.toml").write_text('deny_tool = ["book"]\n')
    report = tmp_path / "report.html"
    args = [str(source), "-o", str(tmp_path / "out"), "--policies", str(tmp_path / "pol")]
    assert run(*args, "--report", str(report)) == 0
    page = report.read_text()
    assert page.count("data:image/png;base64,") == 2 and "http" not in page.split("<body>")[1]
    assert "deny_tool:book" in page and "trajectories checked" in page
    from car_verify.corpora.audit_report import per_code

    rows = pq.read_table(tmp_path / "out" / "trajectories.parquet").to_pylist()
    found = pq.read_table(tmp_path / "out" / "findings.parquet").to_pylist()
    [book] = [r for r in per_code(rows, found) if r["code"] == "deny_tool:book"]
    # every run calls book: found in all of the successful and all of the failed
    assert (book["trajectories"], book["success"], book["failure"]) == (45, 1.0, 1.0)
    # with its counts, intervals and an exact test; and where the numbers come from
    assert book["in_success"].endswith(f"of {book['in_success'].split()[-1]}")
    assert book["difference"] == "none shown (p >= 0.05)" and float(book["p"]) == 1.0
    assert "Where this comes from" in page and "profile" in page and "sha256" in page
    # the budget is a duration, not a share; the interval and the test are named
    assert "<td>budget</td><td>10 s per trajectory</td>" in page and "1000.0%" not in page
    assert "95% Wilson score interval" in page and "scipy.stats.fisher_exact" in page
    assert "<th>p (Fisher&#x27;s exact test, two-sided)</th>" in page


def test_a_difference_the_counts_do_not_support_is_said_to_be_none() -> None:
    """The issue's example: 2 of 84 successful against 11 of 116 failed runs is a
    rate four times higher, and Fisher's exact test gives p = 0.078: not shown."""
    pytest.importorskip("scipy")
    from car_verify.corpora.audit_report import _statistics

    stats = _statistics(2, 84, 11, 116)
    assert stats["p"] == "0.0775" and stats["difference"] == "none shown (p >= 0.05)"
    assert stats["success_ci"] == "0.7% to 8.3%"
    assert _statistics(0, 50, 30, 50)["difference"] == "significant (p < 0.05)"


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["dask", "ray"])
def test_the_ray_and_dask_engines_write_what_the_local_pool_does(
    tmp_path: Path, engine: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A local Dask cluster and a local Ray, each with two workers: the same bytes."""
    pytest.importorskip("dask.distributed" if engine == "dask" else "ray.data")
    source = corpus_lines(tmp_path)
    local, other = tmp_path / "local", tmp_path / engine
    assert run(str(source), "-o", str(local), "--shard-size", "7") == 0
    args = [str(source), "-o", str(other), "--shard-size", "7", "--engine", engine]
    code = run(*args, "--workers", "2")
    said = capsys.readouterr().err
    if code == 2 and "did not start" in said:  # the engine's own start-up, not ours
        pytest.skip(said.strip())
    assert code == 0, said
    for table in ("findings.parquet", "trajectories.parquet"):
        assert (local / table).read_bytes() == (other / table).read_bytes(), table


def test_a_trajectory_past_its_budget_is_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    import time as clock

    import car_verify.api
    from car_verify.corpora import audit as module
    from car_verify.corpora.audit import AuditSettings

    original = car_verify.api.verify

    def slow(*args: Any, **kwargs: Any) -> Any:
        clock.sleep(0.3)
        return original(*args, **kwargs)

    monkeypatch.setattr(car_verify.api, "verify", slow)
    [t] = trajectories_of_record(tmp_path)
    settings = AuditSettings(budget=0.05)
    assert module._check(t, settings, None)[0] == "unknown"  # the timer, in the main thread
    found: list[str] = []
    thread = threading.Thread(target=lambda: found.append(module._check(t, settings, None)[0]))
    thread.start()
    thread.join()
    assert found == ["unknown"]  # a thread of its own elsewhere (a Dask worker's thread)
    assert module._check(t, AuditSettings(budget=5), None)[0] == "checked"


def trajectories_of_record(tmp_path: Path) -> list[Trajectory]:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(openai_record()) + "\n")
    return trajectories(path)


MEASURE = """
import json, random, resource, sys, tempfile
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from bench_audit import trajectory
from car_verify.corpora.audit import audit
n = int(sys.argv[1])
rng = random.Random(5)
with tempfile.TemporaryDirectory() as tmp:
    corpus = Path(tmp) / "c.jsonl"
    with corpus.open("w") as f:
        for i in range(n):
            f.write(json.dumps(trajectory(rng, i)) + "\\n")
    audit([str(corpus)], Path(tmp) / "out", shard_size=500)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


@pytest.mark.slow
def test_memory_stays_flat_as_the_corpus_grows() -> None:
    """Ten times the trajectories, about the same peak memory (one shard at a time)."""
    import subprocess
    import sys

    def peak(n: int) -> int:
        done = subprocess.run(
            [sys.executable, "-c", MEASURE, str(n), str(ROOT / "benchmarks")],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        return int(done.stdout.split()[-1])  # KiB

    small, large = peak(2_000), peak(20_000)
    assert large < small * 1.25 + 20_000, (small, large)


def test_parquet_sources_with_json_columns(tmp_path: Path) -> None:
    """A Parquet shard whose rows hold the transcript as JSON text (as benchmark
    dumps often do): each row one trajectory."""
    import pyarrow as pa

    records = []
    for n in range(3):
        record = openai_record()
        records.append({"id": f"p{n}", "reward": n % 2, "messages": json.dumps(record["messages"])})
    path = tmp_path / "runs.parquet"
    pq.write_table(pa.Table.from_pylist(records), path)
    found = trajectories(path)
    assert [t.id for t in found] == ["p0", "p1", "p2"]
    assert [t.outcome for t in found] == ["failure", "success", "failure"]
    assert [len(t.calls) for t in found] == [3, 3, 3]
    out = tmp_path / "out"
    assert run(str(tmp_path), "-o", str(out)) == 0  # a folder: its corpus files
    assert pq.read_table(out / "trajectories.parquet").num_rows == 3
    assert run(str(tmp_path), "-o", str(out)) == 0  # the output folder is never read as corpus
    assert pq.read_table(out / "trajectories.parquet").num_rows == 3


def test_a_shard_starts_at_its_line_without_reading_what_comes_before(tmp_path: Path) -> None:
    from car_verify.corpora.audit import plan_shards
    from car_verify.importers import importers
    from car_verify.importers.base import read_lines

    source = corpus_lines(tmp_path)
    shards = plan_shards([source], 10)
    assert [s.first_line for s in shards] == [1, 11, 21, 31, 41]  # 46 lines, 22 is corrupt
    for shard in shards:
        assert shard.offset is not None
        known = list(read_lines(source, shard.offset, shard.lines, importers(), shard.first_line))
        counted = list(read_lines(source, shard.offset, shard.lines, importers()))
        assert [(getattr(i, "line", None), str(i)[:40]) for i in known] == [
            (getattr(i, "line", None), str(i)[:40]) for i in counted
        ]


def test_a_corpus_with_no_readable_trajectory_is_said_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "junk.jsonl"
    source.write_text("{corrupted\nnot json either\n")
    assert run(str(source), "-o", str(tmp_path / "out")) == 2
    said = capsys.readouterr()
    assert said.out == "" and "no readable trajectory (2 malformed records)" in said.err
    assert "nothing was audited" in said.err


def test_hostile_files_are_malformed_rows_naming_the_file_and_the_audit_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A truncated or non-gzip .gz, bad UTF-8 inside one, a corrupt Parquet file, an
    over-nested record and a compression bomb each end as a malformed row naming
    the file; the good file is audited all the same."""

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.jsonl").write_text(json.dumps(openai_record()) + "\n")
    whole = gzip.compress(((json.dumps(openai_record()) + "\n") * 50).encode())
    (corpus / "truncated.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    (corpus / "not-gzip.jsonl.gz").write_bytes(b"plain text, not gzip\n")
    (corpus / "bad-utf8.jsonl.gz").write_bytes(gzip.compress(b'{"id": "\xff\xfe"}\n'))
    (corpus / "corrupt.parquet").write_bytes(b"PAR1" + b"\x00" * 64 + b"PAR1")
    (corpus / "deep.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n")
    with gzip.open(corpus / "bomb.jsonl.gz", "wb", compresslevel=9) as bomb:
        chunk = b"a" * (1 << 20)
        for _ in range(80):  # one line of 80 MiB
            bomb.write(chunk)
        bomb.write(b"\n")
    out = tmp_path / "out"
    assert run(str(corpus), "-o", str(out)) == 0
    said = capsys.readouterr()
    assert said.out.startswith("1 trajectory, ")
    for name in ("truncated.jsonl.gz", "not-gzip.jsonl.gz", "bad-utf8.jsonl.gz",
                 "corrupt.parquet", "deep.jsonl", "bomb.jsonl.gz"):  # fmt: skip
        assert name in said.err, name
    rows = pq.read_table(out / "trajectories.parquet").to_pylist()
    assert sum(r["status"] == "malformed" for r in rows) >= 6


def test_a_record_whose_calls_make_no_proposal_is_a_malformed_row(tmp_path: Path) -> None:
    """Issue 37, found by the corpus fuzz: a number past a float's range in a
    record (``1e999``) was read as infinity, and the proposal lifted from it
    could not be loaded; the record is a problem naming its line, and a value no
    proposal can hold that reaches the check is a malformed row, not an abort."""
    from car_verify.corpora import audit as audit_module
    from car_verify.importers import base

    path = tmp_path / "runs.jsonl"
    big = json.dumps(openai_record()).replace('"reward": 1', '"reward": 1e999')
    path.write_text(big + "\n" + json.dumps(openai_record()) + "\n")
    first, second = list(read_file(path))
    assert isinstance(first, ImportProblem) and first.line == 1 and "1e999" in first.message
    assert isinstance(second, Trajectory)
    lifted = second.proposal()
    lifted["actions"][0]["parameters"]["q"] = float("nan")  # as a Parquet float may hold
    shard = audit_module.Shard(0, str(path), None, 2, 2)
    settings = audit_module.AuditSettings()
    original = base.Trajectory.proposal
    try:
        base.Trajectory.proposal = lambda self: lifted  # type: ignore[method-assign]
        audit_module.audit_shard(shard, settings, str(tmp_path / "out"))
    finally:
        base.Trajectory.proposal = original  # type: ignore[method-assign]
    rows = pq.read_table(tmp_path / "out" / "shards" / "000000.trajectories.parquet").to_pylist()
    assert [r["status"] for r in rows] == ["malformed", "malformed"]
    assert "do not make a proposal" in rows[1]["problem"]


def gzip_bomb(path: Path, mebibytes: int, prefix: bytes = b'{"messages": "') -> None:
    """One line of ``mebibytes`` MiB, gzipped to about a thousandth of that: one
    member of 1 MiB compressed once and repeated (gzip reads members one after the
    other), so that making it costs nothing."""
    first = gzip.compress(prefix + b"a" * ((1 << 20) - len(prefix)), 9)
    member = gzip.compress(b"a" * (1 << 20), 9)
    path.write_bytes(first + member * (mebibytes - 1) + gzip.compress(b'"}\n', 9))


def test_a_gzip_bomb_is_cut_off_at_the_bounds_in_seconds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A record past the record bound is a malformed row, said as soon as it is seen
    and skipped a block at a time; a compressed file past the file bound is cut off,
    said as a row of its own; the good records before the bomb are audited."""
    import time

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    good = (json.dumps(openai_record()) + "\n").encode()
    bomb = corpus / "bomb.jsonl.gz"
    gzip_bomb(tmp_path / "part.gz", 2048)  # 2 GiB in one line
    bomb.write_bytes(gzip.compress(good) + (tmp_path / "part.gz").read_bytes())
    assert bomb.stat().st_size < 4 << 20
    clock = time.monotonic()
    code = run(str(corpus), "-o", str(tmp_path / "out"), "--max-record-size", "1",
               "--max-file-size", "16")  # fmt: skip
    elapsed = time.monotonic() - clock
    assert code == 0 and elapsed < 10, elapsed
    said = capsys.readouterr()
    assert said.out.startswith("1 trajectory, 2 malformed records")
    rows = pq.read_table(tmp_path / "out" / "trajectories.parquet").to_pylist()
    problems = [(r["line"], r["problem"]) for r in rows if r["status"] == "malformed"]
    assert problems == [
        (2, "the record is longer than 1 MiB decompressed (the record bound, "
            "--max-record-size): not read"),
        (None, "the file is longer than 16 MiB decompressed (the file bound, "
               "--max-file-size): cut off there, the rest not read"),
    ]  # fmt: skip
    assert "bomb.jsonl.gz:2: the record is longer than 1 MiB" in said.err


def test_the_bounds_are_named_constants_and_a_line_is_never_held_whole(tmp_path: Path) -> None:
    """The defaults are the documented constants; a line far past the record bound
    is read a block at a time (what is held stays near the bound); bad UTF-8 in one
    line of a .gz is that line's problem, and the lines after it are read."""
    import tracemalloc

    from car_verify.corpora.audit import AuditSettings
    from car_verify.importers.base import MAX_FILE, MAX_RECORD, Bounds, records

    assert (MAX_RECORD, MAX_FILE) == (64 << 20, 512 << 20)
    assert AuditSettings().bounds() == Bounds(MAX_RECORD, MAX_FILE)
    long = tmp_path / "long.jsonl.gz"
    gzip_bomb(long, 64)
    tracemalloc.start()
    try:
        found = list(records(long, Bounds(record=1 << 20, file=1 << 30)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(line, type(r).__name__) for line, r in found] == [(1, "InputError")]
    assert peak < 8 << 20, peak
    mixed = tmp_path / "mixed.jsonl.gz"
    good = json.dumps(openai_record()).encode()
    mixed.write_bytes(gzip.compress(b'{"id": "\xff"}\n' + good + b"\n"))
    (first, bad), (second, record) = records(mixed)
    assert first == 1 and "not UTF-8" in str(bad) and second == 2 and record["id"] == "run-1"


def test_one_audit_at_a_time_per_output_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second audit into a folder being written exits 2 at once, naming the holder
    (pid, host, start, command); the first finishes untouched. A lock whose holder
    is gone is taken over, and that is said."""
    import os
    import socket
    import subprocess
    import sys
    import time

    from car_verify.corpora.audit import audit

    source = corpus_lines(tmp_path)
    out = tmp_path / "out"
    second: list[tuple[int, str, float]] = []

    class Meanwhile:
        """After the first shard, another audit into the same folder."""

        def update(self, _done: int) -> None:
            if second:
                return
            clock = time.monotonic()
            ran = subprocess.run(
                [sys.executable, "-m", "car_verify", "audit", str(source), "-o", str(out),
                 "--no-progress", "--shard-size", "10"],
                capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            second.append((ran.returncode, ran.stderr, time.monotonic() - clock))

    summary = audit([str(source)], out, shard_size=10, progress=Meanwhile())
    assert summary.trajectories == 45
    ((code, err, seconds),) = second
    assert code == 2 and seconds < 30, (code, err)
    assert f"{out} is being written by another audit (pid {os.getpid()} on" in err
    assert socket.gethostname() in err and "started 20" in err
    assert (out / "findings.partial").exists() is False
    assert pq.read_table(out / "trajectories.parquet").num_rows == 46
    # a killed holder: its lock file says who, but nobody holds the lock
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    holder = {"pid": int(dead.stdout), "host": "elsewhere", "started": "2026-01-01T00:00:00",
              "command": "car-verify audit runs.jsonl -o out"}  # fmt: skip
    (out / "audit.lock").write_text(json.dumps(holder))
    capsys.readouterr()
    assert run(str(source), "-o", str(out), "--shard-size", "10") == 0
    err = capsys.readouterr().err
    assert f"the audit that held it is no longer running (pid {holder['pid']} on elsewhere" in err
    assert "taking it over" in err
    assert (out / "audit.lock").read_text() == ""  # released cleanly: nothing to take over
    assert run(str(source), "-o", str(out), "--shard-size", "10") == 0
    assert "taking it over" not in capsys.readouterr().err


def children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc), zombies left out."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == pid and state != "Z":
            found.append(int(entry.name))
    return found


def running(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
def test_workers_end_with_a_killed_audit_and_its_resume_writes_the_same_bytes(
    tmp_path: Path,
) -> None:
    """``kill -9`` of ``audit --workers 2``: its workers are gone within seconds (they
    stayed, idle, for good); the rerun takes the lock over, resumes, and writes the
    tables an uninterrupted run writes, byte for byte."""
    import os
    import signal
    import subprocess
    import sys
    import time

    source = tmp_path / "runs.jsonl"
    with source.open("w") as stream:
        for n in range(400):
            record = openai_record()
            record["id"], record["reward"] = f"run-{n}", n % 2
            stream.write(json.dumps(record) + "\n")
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    command = [sys.executable, "-m", "car_verify", "audit", str(source), "--shard-size", "5",
               "--no-progress"]  # fmt: skip
    audit = subprocess.Popen([*command, "-o", str(killed), "--workers", "2"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        workers: list[int] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and audit.poll() is None:
            workers = children_of(audit.pid)
            if len(workers) >= 2 and list((killed / "shards").glob("*.trajectories.parquet")):
                break
            time.sleep(0.05)
        assert len(workers) >= 2 and audit.poll() is None, "the audit ended before the kill"
        os.kill(audit.pid, signal.SIGKILL)
        audit.wait()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(running(w) for w in workers):
            time.sleep(0.05)
        assert not [w for w in workers if running(w)], "the workers outlived the audit"
    finally:
        if audit.poll() is None:
            audit.kill()
            audit.wait()
        assert audit.stderr is not None
        audit.stderr.close()
    assert not (killed / "trajectories.parquet").exists()  # it was cut short
    resumed = subprocess.run([*command, "-o", str(killed)], capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert "no longer running" in resumed.stderr and "shards done before" in resumed.stdout
    assert run(str(source), "-o", str(whole), "--shard-size", "5") == 0
    for table in ("findings.parquet", "trajectories.parquet", "tool_rates.json"):
        assert (killed / table).read_bytes() == (whole / table).read_bytes(), table


@pytest.mark.parametrize("engine", ["ray", "dask"])
def test_an_engine_that_does_not_start_is_one_clear_error(
    tmp_path: Path,
    engine: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Ray or Dask failing to start (a time-out on a loaded machine) exits 2 naming the
    engine and what to try, never an internal error, and writes no tables."""
    import sys
    import types

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise TimeoutError("The current node timed out during startup.")

    if engine == "ray":
        fake = types.ModuleType("ray")
        fake.is_initialized = lambda: False  # type: ignore[attr-defined]
        fake.init = refuse  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "ray", fake)
    else:
        bag = types.ModuleType("dask.bag")
        distributed = types.ModuleType("dask.distributed")
        distributed.LocalCluster = refuse  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "dask.bag", bag)
        monkeypatch.setitem(sys.modules, "dask.distributed", distributed)
    source = corpus_lines(tmp_path)
    out = tmp_path / "out"
    assert run(str(source), "-o", str(out), "--engine", engine) == 2
    said = capsys.readouterr().err
    assert "internal error" not in said
    assert f"--engine {engine}:" in said and "did not start a local cluster" in said
    assert "timed out during startup" in said and "--engine local" in said
    assert not (out / "findings.parquet").exists()
