"""Critical path (issue 30) on every corpus Kineto and nsys trace: it runs, the replay of the recorded graph gives
back every recorded time, and on each step the path is no longer than the step, no shorter than the busiest lane's
busy time in it, and its segments, breakdown and items sum exactly to its length; where a stream waits on an
event, the path crosses streams; the command's text, JSON and errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gputop_trace.analysis.critical_path.path import StepPath, critical_paths, replay_matches
from gputop_trace.analysis.steps import is_step_name
from gputop_trace.model.kinds import Kind, LaneKind
from gputop_trace.model.trace import Trace
from tests.cli_run import run_cli
from tests.corpus_traces import corpus_trace
from tests.paths import CORPUS

pytestmark = pytest.mark.corpus

#: non-traces and the job folders (loaded as one trace each)
_SKIP = ("external/execution_trace/benchmark_simple_add_et.json.gz", "external/memory_analysis/")
_JOBS = ("kineto/h200_ddp_2gpu", "external/trace_filter")
_GPT = "kineto/h200_gpt_train_small.json.gz"


def _targets() -> list[str]:
    if not CORPUS.is_dir():
        return []
    files = [p for sub in ("kineto", "external") for p in sorted((CORPUS / sub).rglob("*")) if p.is_file()]
    files += sorted((CORPUS / "nsys").glob("*.sqlite"))
    rels = [str(p.relative_to(CORPUS)) for p in files if not p.name.lower().startswith("readme")]
    rels = [r for r in rels if not r.startswith(_SKIP) and not r.startswith(_JOBS)]
    return rels + [j for j in _JOBS if (CORPUS / j).is_dir()]


def _busiest_lane_ns(trace: Trace, p: StepPath) -> int:
    """The busy time (union of its events, clipped to the step) of the busiest thread or stream of the step's
    rank, counting the kinds the graph holds (the step ranges themselves left out)."""
    s, e = p.start_ns, p.start_ns + p.dur_ns
    best = 0
    step_ids = [i for i, name in enumerate(trace.names) if is_step_name(name)]
    for ln, lane in enumerate(trace.lanes):
        if lane.rank != p.rank or lane.kind not in (LaneKind.CPU_THREAD, LaneKind.GPU_STREAM):
            continue
        sl = trace.lane_slice(ln)
        st = np.maximum(trace.start_ns[sl], s)
        en = np.minimum(trace.end_ns[sl], e)
        kinds = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.API, Kind.SYNC, Kind.CPU_OP, Kind.RANGE)
        keep = (en > st) & np.isin(trace.kind[sl], [int(k) for k in kinds]) & ~np.isin(trace.name[sl], step_ids)
        st, en = st[keep], en[keep]
        if not len(st):
            continue
        o = np.argsort(st, kind="stable")
        st, reach = st[o], np.maximum.accumulate(en[o])
        prev = np.concatenate(([s], reach[:-1]))
        best = max(best, int(np.sum(np.maximum(0, reach - np.maximum(st, prev)))))
    return best


@pytest.mark.parametrize("rel", _targets())
def test_every_step_path_keeps_its_invariants(rel: str) -> None:
    trace = corpus_trace(rel)
    assert replay_matches(trace), "replaying the recorded graph must give back every recorded time"
    paths = critical_paths(trace)
    for p in paths:
        where = f"{rel} rank {p.rank} step {p.step}"
        assert 0 <= p.length_ns <= p.dur_ns, where
        assert p.length_ns >= _busiest_lane_ns(trace, p), where
        assert sum(s.dur_ns for s in p.segments) == p.length_ns, where
        assert sum(p.breakdown.values()) == p.length_ns, where
        assert sum(ns for _, _, ns in p.by_item) == p.length_ns, where
        ends = [s.start_ns + s.dur_ns for s in p.segments]
        assert all(a <= b.start_ns for a, b in zip(ends, p.segments[1:], strict=False)), where
        for w in p.what_if:
            assert 0 <= w.if_gone_ns <= w.if_2x_ns <= w.step_ns == p.length_ns, where
            assert w.category != "idle"


@pytest.mark.parametrize("rel", ["external/negative_queue_length_values_check/rank0.json.gz", "kineto/h200_ddp_2gpu"])
def test_the_path_crosses_streams_where_a_stream_waits_on_an_event(rel: str) -> None:
    trace = corpus_trace(rel)
    paths = critical_paths(trace, what_if=False)
    assert sum(p.edges["event_wait"] for p in paths) > 0
    gpu = LaneKind.GPU_STREAM
    crossings = [
        (a.lane, b.lane)
        for p in paths
        for a, b in zip(p.segments, p.segments[1:], strict=False)
        if a.lane != b.lane and trace.lanes[a.lane].kind == gpu and trace.lanes[b.lane].kind == gpu
    ]
    assert crossings, "no step's path goes from one stream to another"


def test_ddp_collectives_join_the_ranks_and_the_straggler_sets_the_path() -> None:
    trace = corpus_trace("kineto/h200_ddp_2gpu")
    paths = critical_paths(trace, rank=0, what_if=False)
    # every step after the first (whose all-reduces ran before it) joins the ranks' all-reduce kernels
    assert [p.step for p in paths if p.edges["collective"] > 0] == [1, 2, 3, 4]
    # rank 0 waits in all-reduce for rank 1 (which sleeps 4 ms a step): its last steps' paths run through rank 1
    assert [p.step for p in paths if any(s.rank == 1 for s in p.segments)] == [3, 4]


def test_partial_job_keeps_the_path_on_each_rank_and_says_so() -> None:
    trace = corpus_trace("external/trace_filter")
    paths = critical_paths(trace, what_if=False)
    assert paths and all(p.edges.get("collective", 0) == 0 for p in paths)
    assert all(any("of the job's 128 ranks" in n for n in p.notes) for p in paths)


def test_gpt_step_with_the_pageable_checkpoint_copy_is_set_by_that_copy(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # a terminal wide enough for the whole name
    code, out, err = run_cli(capsys, "critical-path", str(CORPUS / _GPT), "--step", "1")
    assert code == 0, err
    assert "step 1 (step_1)" in out and "critical path" in out
    assert "Memcpy DtoH (Device -> Pageable)" in out
    trace = corpus_trace(_GPT)
    (p,) = critical_paths(trace, step=1)
    w = next(x for x in p.what_if if x.item == "Memcpy DtoH (Device -> Pageable)")
    # the 24 ms copy is the largest item; 2x faster saves half of it, gone saves all of it
    assert p.by_item[0][1] == w.item
    assert w.step_ns - w.if_gone_ns == w.on_path_ns
    assert abs((w.step_ns - w.if_2x_ns) - w.on_path_ns // 2) <= 1


def test_json_follows_the_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "critical-path", "--json", str(CORPUS / _GPT))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["command"] == "critical-path" and doc["schema_version"] >= 2
    trace = corpus_trace(_GPT)
    assert len(doc["steps"]) == 3
    for st in doc["steps"]:
        assert st["length_ns"] <= st["dur_ns"]
        assert sum(b["total_ns"] for b in st["breakdown"]) == st["length_ns"]
        assert sum(s["dur_ns"] for s in st["segments"]) == st["length_ns"]
        assert 0 <= st["length_pct"] <= 100
        assert st["start_ns"] == trace.file_time_ns(critical_paths(trace, what_if=False)[st["step"]].start_ns)
        for w in st["what_if"]:
            assert w["saves_if_2x_ns"] == w["step_ns"] - w["if_2x_ns"] >= 0


def test_summary_names_the_item_to_speed_up(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "summary", "--json", str(CORPUS / _GPT))
    assert code == 0, err
    found = [f for f in json.loads(out)["findings"] if f["kind"] == "critical_path"]
    assert len(found) == 1
    assert (
        "of its critical path is copy time in `Memcpy DtoH (Device -> Pageable)` (checkpoint_d2h)"
        in (found[0]["title"])
    )
    assert "making it 2x faster saves 12.0 ms" in found[0]["title"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--step", "9"), "--step 9: no such step (rank 0: steps 0–2)"),
        (("--rank", "3"), "--rank 3"),
        (("--step", "-1"), "numbered from 0"),
    ],
)
def test_bad_selection_is_a_clear_error(capsys: pytest.CaptureFixture[str], args: tuple[str, ...], words: str) -> None:
    code, _out, err = run_cli(capsys, "critical-path", str(CORPUS / _GPT), *args)
    assert code == 2
    assert words in err and "Traceback" not in err


def test_a_trace_without_steps_is_one_pseudo_step_per_rank(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # a terminal wide enough for the whole names
    rel = "nsys/GindaChen__nsys-ai__h100_2gpu_1s.sqlite"
    code, out, err = run_cli(capsys, "critical-path", str(CORPUS / rel))
    assert code == 0, err
    assert out.count("step 0 (whole recording: no step ranges)") == 2  # one per rank
    assert "note: no step ranges" not in out  # the header says it once
    assert "Memcpy HtoD (Pinned -> Device)" in out
    paths = critical_paths(corpus_trace(rel), what_if=False)
    assert [(p.rank, p.step, p.step_name) for p in paths] == [(0, 0, ""), (1, 0, "")]


@pytest.mark.parametrize(
    ("rel", "columns"),
    [
        ("kineto/h200_ddp_2gpu", "80"),
        # three cutlass templates share the short name cutlass::Kernel on step 1's path
        ("external/negative_queue_length_values_check/rank0.json.gz", "80"),
        ("external/negative_queue_length_values_check/rank0.json.gz", "100"),
    ],
)
def test_item_names_fit_an_80_column_terminal_and_still_read_apart(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, rel: str, columns: str
) -> None:
    """At the terminal's width no line of the item table is wider than it, names are cut on one line (never
    folded onto the next), and two different items never read alike."""
    monkeypatch.setenv("COLUMNS", columns)
    code, out, err = run_cli(capsys, "critical-path", str(CORPUS / rel))
    assert code == 0, err
    lines = out.splitlines()
    assert all(len(ln) <= int(columns) for ln in lines), max(lines, key=len)
    for head in (i for i, ln in enumerate(lines) if ln.startswith("item ")):
        rows = []
        for ln in lines[head + 2 :]:
            if not ln.strip():
                break
            rows.append(ln)
        kinds = {"CPU op", "launch", "kernel", "copy", "sync wait", "collective", "idle"}
        assert all(any(f"   {k}   " in r for k in kinds) for r in rows), rows  # one row a line: nothing folded
        names = [r.split("   ")[0].strip() for r in rows]
        assert len(set(names)) == len(names), names


def test_item_names_that_look_like_markup_are_printed_as_they_are(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An external trace (execution_trace) whose annotation ranges are named `[param|cuda]`: the items table prints
    the names, not empty cells (Rich would read a bare string as markup and drop the bracketed name)."""
    monkeypatch.setenv("COLUMNS", "200")  # a terminal wide enough for the whole names
    rel = "external/execution_trace/benchmark_simple_add_trace.json.gz"
    code, out, err = run_cli(capsys, "critical-path", str(CORPUS / rel))
    assert code == 0, err
    assert "[param|cuda]" in out and "[param|clear_cache]" in out
    # the step is the first CUDA call's 19.6 s (cudaDeviceGetStreamPriorityRange: the context's creation)
    assert "cudaDeviceGetStreamPriorityRange" in out


@pytest.mark.parametrize(
    ("rel", "first_call"),
    [
        ("external/execution_trace/benchmark_simple_add_trace.json.gz", True),  # cudaDeviceGetStreamPriorityRange
        ("nsys/MohanadOdema__DLProf__nsys_profile.sqlite", True),  # cudaMalloc, 2.11 s
        (_GPT, False),  # the pageable checkpoint copy: a cost of every step
    ],
)
def test_the_finding_says_when_its_item_is_the_first_cuda_call(
    rel: str, first_call: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first CUDA call of a process creates the CUDA context (seconds, once): the finding names it so instead of
    only offering to make that call faster."""
    code, out, err = run_cli(capsys, "summary", "--json", str(CORPUS / rel))
    assert code == 0, err
    (f,) = [f for f in json.loads(out)["findings"] if f["kind"] == "critical_path"]
    assert f["evidence"]["first_cuda_call"] is first_call
    assert ("creates the CUDA context" in f["title"]) is first_call
