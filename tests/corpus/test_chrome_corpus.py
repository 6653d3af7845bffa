"""The Chrome loader on every Kineto and JAX file of the corpus, checked against an independent computation
with the standard ``json`` module (exact decimal timestamps) on the same files."""

from __future__ import annotations

import gzip
import json
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from gputop_trace.analysis.kernels import kernel_table
from gputop_trace.errors import TraceError
from gputop_trace.load.loader import load_paths
from gputop_trace.model.kinds import Kind, LaneKind
from gputop_trace.parsers.chrome import loader as chrome
from tests.conftest import CORPUS

KINETO = [
    "kineto/h200_gpt_train_small.json.gz",
    "kineto/h200_inductor_compiled.json.gz",
    "kineto/h200_ddp_2gpu/rank0.pt.trace.json.gz",
    "kineto/h200_ddp_2gpu/rank1.pt.trace.json.gz",
]
JAX = ["jax/h200_jax_mlp.perfetto_trace.json.gz"]

pytestmark = pytest.mark.corpus


def _events(rel: str) -> list[dict[str, object]]:
    with gzip.open(CORPUS / rel, "rt") as f:
        doc = json.load(f, parse_float=Decimal)
    events: list[dict[str, object]] = doc["traceEvents"] if isinstance(doc, dict) else doc
    return events


def _ns(v: object) -> int:
    return int((Decimal(str(v)) * 1000).to_integral_value())


@pytest.mark.parametrize("rel", KINETO)
def test_kineto_event_counts_match_the_file(rel: str) -> None:
    events = _events(rel)
    t = chrome.load(str(CORPUS / rel))
    drawn = [e for e in events if e.get("ph") in ("X", "i", "I")]
    assert len(t) == len(drawn)
    by_cat = Counter(e.get("cat") for e in events if e.get("ph") == "X")
    kinds = t.count_by_kind()
    assert kinds.get(Kind.KERNEL, 0) == by_cat["kernel"]
    assert kinds.get(Kind.MEMCPY, 0) == by_cat["gpu_memcpy"]
    assert kinds.get(Kind.MEMSET, 0) == by_cat["gpu_memset"]
    assert kinds.get(Kind.API, 0) == by_cat["cuda_runtime"] + by_cat["cuda_driver"]
    assert kinds.get(Kind.CPU_OP, 0) == by_cat["cpu_op"]
    assert kinds.get(Kind.RANGE, 0) == by_cat["user_annotation"]
    assert kinds.get(Kind.GPU_RANGE, 0) == by_cat["gpu_user_annotation"]
    assert len(t.kernels) == by_cat["kernel"]
    assert len(t.copies) == by_cat["gpu_memcpy"] + by_cat["gpu_memset"]
    assert t.meta.format == "kineto"
    assert t.meta.warnings == ()


@pytest.mark.parametrize("rel", KINETO)
def test_kineto_per_kernel_totals_equal_the_sum_of_their_durations(rel: str) -> None:
    events = _events(rel)
    expected: dict[str, int] = defaultdict(int)
    counts: Counter[str] = Counter()
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            expected[str(e["name"])] += _ns(e["dur"])
            counts[str(e["name"])] += 1
    rows = kernel_table(chrome.load(str(CORPUS / rel)))
    got = {r.name: r.total_ns for r in rows}
    assert got == dict(expected)
    assert {r.name: r.count for r in rows} == dict(counts)
    assert abs(sum(r.pct for r in rows) - 100.0) < 1e-6


@pytest.mark.parametrize("rel", KINETO + JAX)
def test_timestamps_are_exact_nanoseconds_not_rounded_to_microseconds(rel: str) -> None:
    events = [e for e in _events(rel) if e.get("ph") == "X"]
    t = chrome.load(str(CORPUS / rel))
    want = sorted((_ns(e["ts"]), _ns(e.get("dur", 0))) for e in events)
    x = t.kind != Kind.MARKER  # the file's few instant events are not X events
    got = sorted(zip((t.start_ns[x] + t.meta.t0_ns).tolist(), t.dur_ns[x].tolist(), strict=True))
    assert got == want
    # sub-microsecond precision survives: some starts are not multiples of 1000 ns
    assert np.any((t.start_ns + t.meta.t0_ns) % 1000 != 0)


def test_kineto_gpu_lanes_streams_and_names() -> None:
    t = chrome.load(str(CORPUS / KINETO[0]))
    streams = sorted((ln.device, ln.stream) for ln in t.lanes if ln.kind == LaneKind.GPU_STREAM)
    assert streams == [(0, 7), (0, 13)]
    cpu = {ln.name for ln in t.lanes if ln.kind == LaneKind.CPU_THREAD}
    assert "thread 456 (python3)" in cpu
    assert any(ln.kind == LaneKind.GPU_RANGES and ln.device == 0 for ln in t.lanes)
    assert t.meta.gpus[0].name == "NVIDIA H200" and t.meta.gpus[0].sm_count == 132
    # every GPU op is linked to the CPU call that launched it (Kineto correlation ids)
    gpu = t.of_kind(Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)
    assert np.all(t.launch_of[gpu] >= 0)
    assert set(t.kind[t.launch_of[gpu]].tolist()) == {Kind.API}
    # forward → backward arrows from the fwdbwd flow events
    assert int(np.sum(t.flows.kind == 1)) == 264


def test_kineto_copies_carry_direction_and_memory_kinds() -> None:
    t = chrome.load(str(CORPUS / KINETO[0]))
    big = int(np.argmax(t.copies.bytes))
    ev = int(t.copies.event[big])
    assert t.event_name(ev) == "Memcpy DtoH (Device -> Pageable)"
    assert int(t.copies.bytes[big]) == 33554432
    assert int(t.copies.direction[big]) == 2  # DtoH
    assert (int(t.copies.src_kind[big]), int(t.copies.dst_kind[big])) == (3, 1)  # device -> pageable


def test_jax_trace_is_classified_by_process_and_thread_names() -> None:
    rel = JAX[0]
    events = [e for e in _events(rel) if e.get("ph") == "X"]
    t = chrome.load(str(CORPUS / rel))
    assert t.meta.format == "jax"
    assert len(t) == len(events)
    gpu_events = [e for e in events if e["pid"] == 1]
    kinds = t.count_by_kind()
    n_copy = sum(1 for e in gpu_events if str(e["name"]).startswith("Memcpy"))
    n_set = sum(1 for e in gpu_events if str(e["name"]).startswith("Memset"))
    assert kinds[Kind.MEMCPY] == n_copy
    assert kinds[Kind.MEMSET] == n_set
    assert kinds[Kind.KERNEL] == len(gpu_events) - n_copy - n_set
    streams = sorted(ln.stream for ln in t.lanes if ln.kind == LaneKind.GPU_STREAM)
    assert streams == [14, 15, 16, 17, 18, 19]
    # python frames and CUDA driver calls on the host
    assert kinds[Kind.PYTHON] == sum(1 for e in events if e["pid"] == 701 and str(e["name"]).startswith("$"))
    names = {t.event_name(i) for i in t.of_kind(Kind.RANGE)}
    assert {f"train_step_{i}" for i in range(5)} <= names
    # kernel geometry from kernel_details, copy sizes from memcpy_details
    assert len(t.kernels) == kinds[Kind.KERNEL]
    assert np.all(t.kernels.block[:, 0] > 0)
    assert len(t.copies) == n_copy + n_set
    # GPU ops carry correlation ids, and host launch calls with the same id are linked to them
    gpu = t.of_kind(Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)
    assert np.all(t.corr[gpu] >= 0)
    assert np.mean(t.launch_of[gpu] >= 0) > 0.5


def test_ddp_directory_loads_as_two_ranks() -> None:
    t = load_paths([str(CORPUS / "kineto/h200_ddp_2gpu")])
    assert t.meta.ranks == (0, 1)
    assert t.meta.world_size == 2
    per_rank = {r: int(np.sum((t.event_rank == r) & (t.kind == Kind.KERNEL))) for r in (0, 1)}
    singles = [chrome.load(str(CORPUS / KINETO[2 + r])) for r in (0, 1)]
    assert per_rank == {r: singles[r].count_by_kind()[Kind.KERNEL] for r in (0, 1)}
    assert len(t) == sum(len(s) for s in singles)
    # absolute times are preserved through the merge
    for r, s in enumerate(singles):
        mine = np.sort(t.start_ns[t.event_rank == r] + t.meta.t0_ns)
        assert np.array_equal(mine, np.sort(s.start_ns + s.meta.t0_ns))
    devices = sorted({(ln.rank, ln.device) for ln in t.lanes if ln.kind == LaneKind.GPU_STREAM})
    assert devices == [(0, 0), (1, 1)]


#: JSON files in the corpus that are not timelines (external/README): each is refused with what it is and what to open
NOT_TRACES = {
    "external/execution_trace/benchmark_simple_add_et.json.gz": 'no "traceEvents" array',
    "external/memory_analysis/memory_timeline.raw.gz": "none of its",
}


def test_every_kineto_and_jax_file_in_the_corpus_loads() -> None:
    files = sorted(p for p in Path(CORPUS).rglob("*") if p.name.endswith((".json", ".json.gz", ".raw.gz")))
    assert len(files) >= 5
    seen_refused = set()
    for p in files:
        rel = p.relative_to(CORPUS).as_posix()
        if rel in NOT_TRACES:
            with pytest.raises(TraceError) as err:
                load_paths([str(p)], use_cache=False)
            assert str(p) in str(err.value) and NOT_TRACES[rel] in str(err.value)
            assert "Open a trace written by torch.profiler" in str(err.value)
            seen_refused.add(rel)
            continue
        t = load_paths([str(p)])
        assert len(t) > 0, rel
        assert t.meta.format in ("kineto", "jax"), rel
    assert seen_refused == set(NOT_TRACES)
