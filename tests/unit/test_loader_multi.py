"""Directories and lists of per-rank traces: ranks, parallel parsing bounded by memory, cancellation, clashes."""

from __future__ import annotations

import gzip
import json
import shutil
import time
from pathlib import Path

import pytest

from gputop_trace.errors import LoadCancelled, TraceError
from gputop_trace.load import loader
from gputop_trace.parsers import sniff
from tests.conftest import CORPUS
from tests.trace_compare import assert_traces_equal

DDP = CORPUS / "kineto/h200_ddp_2gpu"


@pytest.mark.corpus
def test_parallel_parse_gives_the_same_trace_as_serial(monkeypatch: pytest.MonkeyPatch) -> None:
    serial = loader.load_paths([str(DDP)], use_cache=False)
    monkeypatch.setattr(loader, "PARALLEL_MIN_BYTES", 0)
    files = sniff.list_trace_files(str(DDP))
    assert loader.parallel_workers(files) == 2
    seen: list[tuple[int, int, int]] = []
    parallel = loader.load_paths([str(DDP)], use_cache=False, progress=lambda *a: seen.append(a))
    assert_traces_equal(serial, parallel)
    assert seen[-1][0] == seen[-1][1]  # every byte accounted for at the end
    assert seen[-1][2] == len(parallel)


def test_workers_are_bounded_by_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = []
    for i in range(4):
        p = tmp_path / f"rank{i}.json"
        p.write_bytes(b" " * (40 << 20))
        files.append(str(p))
    import gputop_trace.load.resources as res

    monkeypatch.setattr(res, "available_memory", lambda: 10 << 30)
    assert loader.parallel_workers(files) == min(4, len(__import__("os").sched_getaffinity(0)))
    need = res.estimate([files[0]]).needed
    monkeypatch.setattr(res, "available_memory", lambda: need + 1)
    assert loader.parallel_workers(files) == 1
    monkeypatch.setattr(res, "available_memory", lambda: 10 << 30)
    assert loader.parallel_workers(files[:1]) == 1


@pytest.mark.corpus
def test_cancel_during_a_parallel_load_stops_the_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader, "PARALLEL_MIN_BYTES", 0)

    def cancel(*_: int) -> None:
        raise LoadCancelled

    t0 = time.monotonic()
    with pytest.raises(LoadCancelled):
        loader.load_paths([str(DDP)], use_cache=False, progress=cancel)
    assert time.monotonic() - t0 < 60


@pytest.mark.corpus
def test_two_files_claiming_the_same_rank_is_a_clear_error(tmp_path: Path) -> None:
    src = DDP / "rank0.pt.trace.json.gz"
    shutil.copy(src, tmp_path / "a.json.gz")
    shutil.copy(src, tmp_path / "b.json.gz")
    with pytest.raises(TraceError, match=r"claim the same rank \(0\)"):
        loader.load_paths([str(tmp_path)], use_cache=False)


@pytest.mark.corpus
def test_ranks_from_file_names_when_the_trace_does_not_say(tmp_path: Path) -> None:
    for r in (0, 1):
        doc = json.loads(gzip.decompress((DDP / f"rank{r}.pt.trace.json.gz").read_bytes()))
        del doc["distributedInfo"]
        (tmp_path / f"worker_rank{7 - r}.json").write_text(json.dumps(doc))
    t = loader.load_paths([str(tmp_path)], use_cache=False)
    assert t.meta.ranks == (6, 7)


@pytest.mark.corpus
@pytest.mark.parametrize("workers", [1, 2])
def test_a_rank_that_cannot_be_read_is_left_out_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """A folder of ranks where one file is not a trace (a crashed rank, a stray file) still opens: the other
    ranks load, and a warning names the file left out and why."""
    for p in sorted((CORPUS / "kineto" / "h200_ddp_2gpu").iterdir()):
        shutil.copy(p, tmp_path / p.name)
    (tmp_path / "rank2.pt.trace.json").write_text("Killed\n")
    monkeypatch.setattr(loader, "parallel_workers", lambda files: workers)
    trace = loader.load_paths([str(tmp_path)], use_cache=False)
    assert trace.meta.ranks == (0, 1)
    left_out = [w for w in trace.meta.warnings if "left out" in w]
    assert len(left_out) == 1
    assert left_out[0].startswith("rank2.pt.trace.json was left out (2 of 3 traces were loaded):")
    assert "not a profile gputop-trace can read" in left_out[0]


def test_when_no_rank_can_be_read_the_first_error_is_raised(tmp_path: Path) -> None:
    (tmp_path / "rank0.json").write_text("Killed\n")
    (tmp_path / "rank1.json").write_bytes(b"")
    with pytest.raises(TraceError, match=r"rank0\.json is a text file"):
        loader.load_paths([str(tmp_path)], use_cache=False)


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("a", "b", "why"),
    [
        (  # two jobs of other teams: 16 and 128 ranks
            "external/negative_queue_length_values_check/rank0.json.gz",
            "external/trace_filter/sampled_rank-1.json.gz",
            "their world size differs (rank0.json.gz: 16; sampled_rank-1.json.gz: 128)",
        ),
        (
            "external/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
            "kineto/h200_ddp_2gpu/rank1.pt.trace.json.gz",
            "their world size differs",
        ),
        (  # neither records a job: their clocks say they were recorded seven weeks apart
            "external/trace_compare/base/base.json.gz",
            "external/call_stack/backward_thread.json",
            "recorded 48.7 days apart (backward_thread.json starts 48.7 days after base.json.gz ends)",
        ),
    ],
)
def test_files_of_different_jobs_are_refused_as_one_job(a: str, b: str, why: str) -> None:
    with pytest.raises(TraceError) as err:
        loader.load_paths([str(CORPUS / a), str(CORPUS / b)], use_cache=False)
    assert "cannot be ranks of one job" in err.value.message and why in err.value.message
    assert "gputop-trace diff BASE TEST" in err.value.message


@pytest.mark.corpus
def test_a_rank_on_another_gpu_model_is_not_a_rank_of_the_job(tmp_path: Path) -> None:
    doc = json.loads(gzip.decompress((DDP / "rank1.pt.trace.json.gz").read_bytes()))
    for d in doc["deviceProperties"]:
        d["name"] = "NVIDIA A100-SXM4-80GB"
    other = tmp_path / "rank1.pt.trace.json"
    other.write_text(json.dumps(doc))
    with pytest.raises(TraceError, match=r"their GPU model differs \(rank0.pt.trace.json.gz: NVIDIA H200; "):
        loader.load_paths([str(DDP / "rank0.pt.trace.json.gz"), str(other)], use_cache=False)


@pytest.mark.corpus
def test_ranks_recorded_apart_in_time_are_not_one_job() -> None:
    """Ranks of one job are recorded at the same time: an hour between their windows is the most allowed."""
    t = loader.load_paths([str(DDP / "rank0.pt.trace.json.gz")], use_cache=False)
    one = t.with_meta(ranks=(1,))
    hour = loader.MAX_RANK_GAP_NS
    late = one.with_meta(t0_ns=t.meta.t0_ns + t.span_ns + hour)
    assert loader.not_one_job([t, late], ["a.json", "b.json"]) is None
    later = one.with_meta(t0_ns=t.meta.t0_ns + t.span_ns + hour + 1)
    assert loader.not_one_job([later, t], ["b.json", "a.json"]) == (
        "they were recorded 1.0 hours apart (b.json starts 1.0 hours after a.json ends), and the ranks of one job "
        "are recorded at the same time"
    )
    overlapping = one.with_meta(t0_ns=t.meta.t0_ns + t.span_ns // 2)
    assert loader.not_one_job([t, overlapping], ["a.json", "b.json"]) is None


@pytest.mark.corpus
def test_a_rank_beyond_the_world_size_is_refused() -> None:
    t = loader.load_paths([str(DDP / "rank0.pt.trace.json.gz")], use_cache=False)
    assert loader.not_one_job([t], ["rank0.json"]) is None
    odd = t.with_meta(ranks=(3,), world_size=2)
    assert loader.not_one_job([odd], ["r3.json"]) == "r3.json is rank 3 of a job of 2 ranks"


@pytest.mark.corpus
def test_clock_offsets_in_json_are_the_ones_applied(tmp_path: Path) -> None:
    """Rank 1's clock moved 40 ms ahead: the JSON's offset for it is what the loader applied (-rank_shift_ns)."""
    from gputop_trace.report.ranks import ranks_document

    for name in ("rank0.pt.trace.json.gz", "rank1.pt.trace.json.gz"):
        doc = json.loads(gzip.decompress((DDP / name).read_bytes()))
        if name.startswith("rank1"):
            for e in doc["traceEvents"]:
                if isinstance(e.get("ts"), (int, float)):
                    e["ts"] += 40_000  # µs
        (tmp_path / name.removesuffix(".gz")).write_text(json.dumps(doc))
    t = loader.load_paths([str(tmp_path)], use_cache=False)
    assert set(t.meta.rank_shift_ns) == {1}
    out = ranks_document(t, [str(tmp_path)])["stragglers"]
    assert out["clock_offset_ns"] == {"0": 0, "1": -t.meta.rank_shift_ns[1]}
    assert abs(out["clock_offset_ns"]["1"] - 40_000_000) < 1_000_000
    assert all(abs(v) < 500_000 for v in out["residual_clock_offset_ns"].values())
