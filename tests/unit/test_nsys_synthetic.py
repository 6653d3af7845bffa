"""The nsys loader on small synthetic exports: exact lanes, joins and the edge cases real exports have
(NULL ends, negative starts, epoch times, invalid UTF-8, _V2 tables, extra columns, missing tables, views and
triggers, old exports without metadata or ENUM tables)."""

from __future__ import annotations

import hashlib
import itertools
import os
import sqlite3
import stat
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gputop_trace.errors import TraceError
from gputop_trace.model.kinds import CopyKind, FlowKind, Kind, LaneKind, MemKind
from gputop_trace.model.tables import Lane
from gputop_trace.model.trace import Trace
from gputop_trace.parsers.nsys import loader as nsys
from gputop_trace.parsers.nsys.columns import ColumnReader
from gputop_trace.parsers.nsys.schema import connect_readonly
from tests.fixtures.nsys_synth import PID, SynthExport, gtid

MAIN = PID  # the main thread's tid equals the pid
WORKER = 11


def basic() -> SynthExport:
    """One process, one GPU: a launch, a copy, a memset, a sync, NVTX ranges, an OS call, profiler overhead."""
    ex = SynthExport()
    ex.process("python3")
    ex.thread(MAIN, "python3")
    ex.thread(WORKER, "pt_data_worker")
    ex.gpu(0)
    ex.runtime(1000, 1500, tid=MAIN, corr=5, name="cudaLaunchKernel_v7000")
    ex.kernel(2000, 3000, corr=5)
    ex.runtime(1600, 1700, tid=MAIN, corr=6, name="cudaMemcpyAsync_v3020")
    ex.memcpy(3000, 3500, corr=6, kind=1, src=0, dst=2, nbytes=1 << 20)
    ex.runtime(1750, 1800, tid=MAIN, corr=7, name="cudaMemsetAsync_v3020")
    ex.memset(3500, 3600, corr=7)
    ex.runtime(4000, 6000, tid=MAIN, corr=8, name="cudaStreamSynchronize_v3020")
    ex.sync(4100, 5900, corr=8)
    ex.nvtx(500, 7000, tid=MAIN, registered="step 0")
    ex.nvtx(900, 3000, tid=MAIN, text="forward")
    ex.nvtx(1200, None, tid=MAIN, text="checkpoint", event_type=34)
    ex.osrt(7000, 8000, tid=WORKER, name="poll")
    ex.overhead(2500, 2600, tid=MAIN, name="CUDA profiling data flush overhead")
    ex.overhead(100, 200, tid=MAIN, name="CUDA profiling initialization")
    return ex


def load(ex: SynthExport, tmp_path: Path, name: str = "x.sqlite", **kw: Any) -> Trace:
    return nsys.load(str(ex.write(tmp_path / name, **kw)))


def events(t: Trace, kind: Kind) -> np.ndarray:
    return t.of_kind(kind)


def name_of(t: Trace, i: int) -> str:
    return t.names[int(t.name[i])]


def lane_of(t: Trace, i: int) -> Lane:
    return t.lanes[int(t.lane[i])]


def test_basic_export_has_one_lane_per_thread_and_stream(tmp_path: Path) -> None:
    t = load(basic(), tmp_path)
    counts = {k.name: v for k, v in t.count_by_kind().items()}
    # 2 overhead rows on the CPU thread + the flush row copied onto the GPU (it lies inside the GPU's busy span)
    assert counts == {"KERNEL": 1, "MEMCPY": 1, "MEMSET": 1, "API": 4, "SYNC": 1, "RANGE": 2, "MARKER": 1,
                      "OSRT": 1, "OVERHEAD": 3}  # fmt: skip
    kinds = sorted((ln.kind.name, ln.name, ln.process_name) for ln in t.lanes)
    assert kinds == [
        ("CPU_THREAD", "pt_data_worker", "[4242] python3"),
        ("CPU_THREAD", "python3", "[4242] python3"),
        ("GPU_STREAM", "stream 7", "GPU 0 (NVIDIA H200)"),
        ("OTHER", "profiler overhead", "GPU 0 (NVIDIA H200)"),
    ]
    stream = next(ln for ln in t.lanes if ln.kind == LaneKind.GPU_STREAM)
    assert (stream.device, stream.stream, stream.pid) == (0, 7, PID)
    assert t.meta.format == "nsys"
    assert t.meta.producer == "Nsight Systems 2024.5.1.113"
    assert [(g.device, g.name, g.sm_count, g.memory_bandwidth, g.clock_khz) for g in t.meta.gpus] == [
        (0, "NVIDIA H200", 132, 4814304000000.0, 1980000)
    ]
    # file time base kept: first event at 100 ns, t0 is that
    assert t.meta.t0_ns == 100
    k = int(events(t, Kind.KERNEL)[0])
    assert t.file_time_ns(int(t.start_ns[k])) == 2000 and int(t.dur_ns[k]) == 1000


def test_gpu_ops_join_their_launch_call_on_correlation_and_process(tmp_path: Path) -> None:
    ex = basic()
    # a second process reuses correlation id 5: its kernel must join its own call, never the first process'
    ex.process("other", pid=77)
    ex.runtime(1100, 1400, tid=77, pid=77, corr=5, name="cuLaunchKernel")
    ex.kernel(5000, 5200, corr=5, pid=77, name="other_kernel")
    t = load(ex, tmp_path)
    gpu = t.of_kind(Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)
    launches = {name_of(t, int(i)): name_of(t, int(t.launch_of[i])) for i in gpu}
    assert launches == {
        "void kern<int>(int *)": "cudaLaunchKernel",  # runtime ABI suffix _v7000 stripped, as nsys reports do
        "other_kernel": "cuLaunchKernel",
        "Memcpy HtoD (Pageable -> Device)": "cudaMemcpyAsync",
        "Memset (Device)": "cudaMemsetAsync",
    }
    for i in t.of_kind(Kind.KERNEL):
        assert lane_of(t, int(t.launch_of[i])).pid == lane_of(t, int(i)).pid
    assert set(t.flows.kind.tolist()) == {int(FlowKind.LAUNCH)}
    assert int(t.corr[events(t, Kind.KERNEL)[0]]) == 5


def test_kernel_side_table_has_geometry_and_the_mangled_name(tmp_path: Path) -> None:
    t = load(basic(), tmp_path)
    k = int(events(t, Kind.KERNEL)[0])
    row = t.kernel_row(k)
    assert name_of(t, k) == "void kern<int>(int *)"
    assert t.names[int(t.kernels.raw_name[row])] == "_Z4kernIiEvPi"
    assert t.kernels.grid[row].tolist() == [128, 1, 1]
    assert t.kernels.block[row].tolist() == [256, 1, 1]
    assert (int(t.kernels.registers[row]), int(t.kernels.shared_static[row]), int(t.kernels.shared_dynamic[row])) == (
        32,
        1024,
        2048,
    )
    assert int(t.kernels.graph_id[row]) == -1


def test_copy_and_memset_side_tables(tmp_path: Path) -> None:
    t = load(basic(), tmp_path)
    c = int(events(t, Kind.MEMCPY)[0])
    r = t.copy_row(c)
    assert (t.copies.direction[r], t.copies.src_kind[r], t.copies.dst_kind[r]) == (
        CopyKind.HTOD,
        MemKind.PAGEABLE,
        MemKind.DEVICE,
    )
    assert int(t.copies.bytes[r]) == 1 << 20
    assert int(t.copies.is_async[r]) == 1  # launched by cudaMemcpyAsync
    m = int(events(t, Kind.MEMSET)[0])
    r = t.copy_row(m)
    assert (int(t.copies.direction[r]), int(t.copies.dst_kind[r]), int(t.copies.bytes[r])) == (0, MemKind.DEVICE, 512)


def test_sync_wait_sits_inside_its_api_call_on_the_same_thread(tmp_path: Path) -> None:
    t = load(basic(), tmp_path)
    s = int(events(t, Kind.SYNC)[0])
    api = next(int(i) for i in events(t, Kind.API) if name_of(t, int(i)) == "cudaStreamSynchronize")
    assert name_of(t, s) == "Stream sync"
    assert int(t.lane[s]) == int(t.lane[api])
    assert int(t.depth[s]) > int(t.depth[api])


def test_nvtx_names_nesting_marks_and_open_ranges(tmp_path: Path) -> None:
    ex = basic()
    ex.nvtx(6500, None, tid=MAIN, text="never closed")
    t = load(ex, tmp_path)
    ranges = {name_of(t, int(i)): int(i) for i in events(t, Kind.RANGE)}
    assert set(ranges) == {"step 0", "forward", "never closed"}  # registered string and inline text
    assert int(t.depth[ranges["forward"]]) == int(t.depth[ranges["step 0"]]) + 1  # nesting computed per thread
    last_end = int(t.end_ns.max())
    assert int(t.start_ns[ranges["never closed"]] + t.dur_ns[ranges["never closed"]]) == last_end
    assert any("never ended" in w for w in t.meta.warnings)
    mark = int(events(t, Kind.MARKER)[0])
    assert name_of(t, mark) == "checkpoint" and int(t.dur_ns[mark]) == 0
    assert lane_of(t, mark) == lane_of(t, ranges["forward"])


def test_nvtx_cross_thread_ranges_domains_and_thread_names(tmp_path: Path) -> None:
    ex = basic()
    ex.nvtx(10, None, tid=MAIN, text="MPI", event_type=75, domain=1)  # domain create
    ex.nvtx(20, None, tid=WORKER, text="MPI Rank 0", event_type=39)  # NVTX thread name
    ex.nvtx(2000, 2500, tid=MAIN, registered="MPI_Send", domain=1)
    ex.nvtx(3000, 9000, tid=MAIN, text="async io", event_type=60, end_tid=WORKER)
    ex.nvtx(3100, 3200, tid=MAIN, text="same thread", event_type=60, end_tid=MAIN)
    t = load(ex, tmp_path)
    by_name = {name_of(t, int(i)): int(i) for i in events(t, Kind.RANGE)}
    assert "MPI:MPI_Send" in by_name  # nsys' report notation "<domain>:<range>"
    assert t.meta.properties["nvtx_domains"] == ["MPI"]
    cross = lane_of(t, by_name["async io"])
    assert cross.kind == LaneKind.ASYNC and cross.pid == PID
    assert lane_of(t, by_name["same thread"]).kind == LaneKind.CPU_THREAD
    assert {ln.name for ln in t.lanes if ln.kind == LaneKind.CPU_THREAD} == {"python3", "MPI Rank 0"}


def test_null_ends_and_ends_before_starts_become_zero_length_with_warnings(tmp_path: Path) -> None:
    ex = basic()
    ex.kernel(8000, None, corr=99, name="lost")
    ex.kernel(9000, 8500, corr=98, name="backwards")
    t = load(ex, tmp_path)
    by_name = {name_of(t, int(i)): int(i) for i in events(t, Kind.KERNEL)}
    assert int(t.dur_ns[by_name["lost"]]) == 0 and int(t.dur_ns[by_name["backwards"]]) == 0
    assert t.file_time_ns(int(t.start_ns[by_name["lost"]])) == 8000
    text = " ".join(t.meta.warnings)
    assert "1 row has no end time" in text and "1 row ends before it starts" in text


def test_negative_starts_keep_the_file_time_base(tmp_path: Path) -> None:
    ex = basic()
    ex.osrt(-5000, -4000, tid=WORKER, name="read")
    t = load(ex, tmp_path)
    assert t.meta.t0_ns == -5000
    i = next(int(i) for i in events(t, Kind.OSRT) if name_of(t, int(i)) == "read")
    assert int(t.start_ns[i]) == 0 and t.file_time_ns(0) == -5000


def test_epoch_normalized_times(tmp_path: Path) -> None:
    base = 1_779_630_014_975_716_426  # --ts-normalize writes Unix epoch ns
    ex = SynthExport()
    ex.thread(MAIN, "main")
    ex.runtime(base + 1000, base + 1500, tid=MAIN, corr=5, name="cudaLaunchKernel_v7000")
    ex.kernel(base + 2000, base + 3000, corr=5)
    t = load(ex, tmp_path)
    assert t.meta.properties["time_base"] == "epoch"
    assert t.meta.t0_ns == base + 1000
    k = int(events(t, Kind.KERNEL)[0])
    assert int(t.start_ns[k]) == 1000 and t.file_time_ns(int(t.start_ns[k])) == base + 2000
    assert name_of(t, int(t.launch_of[k])) == "cudaLaunchKernel"


def test_invalid_utf8_text_is_replaced_not_fatal(tmp_path: Path) -> None:
    ex = basic()
    ex.thread(WORKER, b"caf\xe9 worker")
    ex.nvtx(7100, 7200, tid=WORKER, text="ok")
    ex.add("NVTX_EVENTS", start=7300, end=7400, eventType=59, text=b"bad \xff\xfe text", globalTid=gtid(WORKER))
    t = load(ex, tmp_path)
    names = {ln.name for ln in t.lanes}
    assert "caf\ufffd worker" in names
    assert "bad \ufffd\ufffd text" in t.names
    assert any("not valid UTF-8" in w for w in t.meta.warnings)


def _summary(t: Trace) -> tuple[object, ...]:
    return (
        sorted((k.name, v) for k, v in t.count_by_kind().items()),
        sorted((ln.kind.name, ln.name) for ln in t.lanes),
        len(t.flows),
        t.meta.producer,
    )


def test_v2_table_names_extra_columns_and_indexes_change_nothing(tmp_path: Path) -> None:
    plain = _summary(load(basic(), tmp_path, "plain.sqlite"))
    assert _summary(load(basic(), tmp_path, "v2.sqlite", suffix="_V2")) == plain
    assert _summary(load(basic(), tmp_path, "extra.sqlite", extra_columns=True)) == plain


def test_missing_tables(tmp_path: Path) -> None:
    t = load(basic(), tmp_path, omit=("CUPTI_ACTIVITY_KIND_RUNTIME", "ThreadNames", "StringIds"))
    assert len(t.flows) == 0
    assert {name_of(t, int(i)) for i in events(t, Kind.KERNEL)} == {"(unnamed kernel)"}
    assert {ln.name for ln in t.lanes if ln.kind == LaneKind.CPU_THREAD} == {f"thread {MAIN}", f"thread {WORKER}"}
    # the sync row's API call is unknown: it goes on a per-process lane, not lost
    s = int(events(t, Kind.SYNC)[0])
    assert lane_of(t, s).name == "CUDA synchronization"


def test_old_export_without_metadata_or_enum_tables_uses_builtin_enums(tmp_path: Path) -> None:
    ex = basic()
    ex.version = None
    t = load(ex, tmp_path, enums=False, omit=("PROCESSES", "TARGET_INFO_SESSION_START_TIME"))
    assert "version not recorded" in t.meta.producer
    assert t.meta.properties["enums_from_file"] is False
    r = t.copy_row(int(events(t, Kind.MEMCPY)[0]))
    assert (t.copies.direction[r], t.copies.src_kind[r]) == (CopyKind.HTOD, MemKind.PAGEABLE)
    assert name_of(t, int(events(t, Kind.SYNC)[0])) == "Stream sync"
    # process name falls back to the main thread's name
    assert {ln.process_name for ln in t.lanes if ln.kind == LaneKind.CPU_THREAD} == {"[4242] python3"}


def test_views_and_triggers_never_run_and_the_file_is_never_written(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = basic().write(folder / "x.sqlite", views_and_triggers=True)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    mtime = path.stat().st_mtime_ns
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)  # a read-only folder, like the shared corpus
    path.chmod(stat.S_IRUSR)
    try:
        t = nsys.load(str(path))
    finally:
        folder.chmod(stat.S_IRWXU)
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert t.count_by_kind()[Kind.KERNEL] == 1
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest and path.stat().st_mtime_ns == mtime
    assert sorted(os.listdir(folder)) == ["x.sqlite"]  # no journal, WAL or shm file
    assert sqlite3.connect(path).execute("SELECT count(*) FROM audit").fetchone() == (0,)


def test_connection_refuses_writes_and_extensions(tmp_path: Path) -> None:
    conn = connect_readonly(str(basic().write(tmp_path / "x.sqlite")))
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("SELECT load_extension('libanything')")


def test_unexpected_cell_types_fall_back_to_the_safe_reader(tmp_path: Path) -> None:
    ex = basic()
    ex.add("CUPTI_ACTIVITY_KIND_KERNEL", start=8000.5, end="8400.5 ns", deviceId=0, streamId=7, correlationId=50,
           globalPid=ex.rows["CUPTI_ACTIVITY_KIND_KERNEL"][0]["globalPid"], demangledName=ex.sid("odd"),
           gridX=1, gridY=1, gridZ=1, blockX=32, blockY=1, blockZ=1)  # fmt: skip
    t = load(ex, tmp_path)
    odd = next(int(i) for i in events(t, Kind.KERNEL) if name_of(t, int(i)) == "odd")
    assert t.file_time_ns(int(t.start_ns[odd])) == 8000 and int(t.dur_ns[odd]) == 400
    assert t.meta.properties["tables_read_row_by_row"] == ["CUPTI_ACTIVITY_KIND_KERNEL"]


def test_column_reader_gives_the_same_arrays_in_chunks_threads_and_the_safe_path(tmp_path: Path) -> None:
    path = tmp_path / "cols.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (a INTEGER, b INTEGER, c INTEGER)")
    rng = np.random.default_rng(1)
    rows: list[tuple[int, int | None, int]] = [
        (int(x), int(y), int(z)) for x, y, z in rng.integers(-(2**62), 2**62, size=(1000, 3))
    ]
    rows[10] = (rows[10][0], None, rows[10][2])
    conn.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
    conn.execute("DELETE FROM t WHERE rowid % 97 = 0")  # rowid gaps
    conn.commit()
    conn.close()
    ro = connect_readonly(str(path))
    exprs = ["a", "ifnull(b, -1)", "c >> 3", "rowid"]
    one = ColumnReader(str(path), ro, workers=1, chunk_rows=1 << 20).read("t", exprs, where="a > 0")
    many = ColumnReader(str(path), ro, workers=2, chunk_rows=37).read("t", exprs, where="a > 0")
    slow = ColumnReader(str(path), ro)._read_slow("t", exprs, "a > 0", order_by_rowid=True)
    want = ro.execute("SELECT a, ifnull(b, -1), c >> 3, rowid FROM t WHERE a > 0 ORDER BY rowid").fetchall()
    for arrays in (one, many, slow):
        assert [tuple(int(v) for v in r) for r in zip(*arrays, strict=True)] == want


def test_graph_rows_and_unified_memory_migrations(tmp_path: Path) -> None:
    ex = basic()
    ex.runtime(9000, 9100, tid=MAIN, corr=40, name="cudaGraphLaunch_v10000")
    ex.graph(9200, 9900, corr=40, graph_id=12)
    ex.memcpy(10_000, 10_500, corr=0, kind=11, src=7, dst=7, stream=0, nbytes=65536)  # UVM HtoD migration
    t = load(ex, tmp_path)
    g = int(events(t, Kind.GRAPH)[0])
    assert name_of(t, g) == "CUDA graph 12"
    assert lane_of(t, g).kind == LaneKind.GPU_STREAM
    assert name_of(t, int(t.launch_of[g])) == "cudaGraphLaunch"
    u = int(events(t, Kind.UVM)[0])
    ln = lane_of(t, u)
    assert (ln.kind, ln.device, ln.name) == (LaneKind.UVM, 0, "unified memory")
    r = t.copy_row(u)
    assert (t.copies.direction[r], int(t.copies.bytes[r])) == (CopyKind.UVM_HTOD, 65536)
    assert int(t.launch_of[u]) == -1
    assert t.count_by_kind()[Kind.MEMCPY] == 1  # migrations are not copies


def test_cuda_backtrace_rows_do_not_duplicate_api_calls(tmp_path: Path) -> None:
    ex = basic()
    ex.runtime(990, 1510, tid=MAIN, corr=5, name="cudaLaunchKernel", event_class=67)  # --cudabacktrace wrapper
    t = load(ex, tmp_path, enums=False)
    assert t.count_by_kind()[Kind.API] == 4
    k = int(events(t, Kind.KERNEL)[0])
    assert t.file_time_ns(int(t.start_ns[int(t.launch_of[k])])) == 1000
    assert t.meta.properties["cuda_backtrace_rows_skipped"] == 1


def test_profiler_overhead_counted_as_gpu_busy_is_copied_to_the_gpu_like_nsys(tmp_path: Path) -> None:
    ex = basic()
    ex.overhead(9000, 9100, tid=MAIN, name="CUDA profiling data flush overhead")  # after the last GPU op: not busy
    ex.overhead(2600, 2700, tid=MAIN, name="CUDA profiling stop overhead")
    t = load(ex, tmp_path)
    gpu_lanes = [i for i, ln in enumerate(t.lanes) if ln.kind == LaneKind.OTHER and ln.device == 0]
    assert len(gpu_lanes) == 1
    sl = t.lane_slice(gpu_lanes[0])
    got = sorted((t.file_time_ns(int(s)), int(d)) for s, d in zip(t.start_ns[sl], t.dur_ns[sl], strict=True))
    assert got == [(2500, 100), (2600, 100)]
    assert set(t.kind[sl].tolist()) == {int(Kind.OVERHEAD)}
    assert (t.lanes[gpu_lanes[0]].pid, t.lanes[gpu_lanes[0]].device) == (PID, 0)


def test_an_export_without_gpu_tables_explains_why(tmp_path: Path) -> None:
    ex = SynthExport()
    ex.thread(MAIN, "python3")
    ex.nvtx(100, 900, tid=MAIN, text="train")
    ex.osrt(200, 300, tid=MAIN, name="poll")
    ex.add("TARGET_INFO_SYSTEM_ENV", name="CudaDriverVersion", value="13000")
    t = load(ex, tmp_path, omit=("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                                 "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME"))  # fmt: skip
    assert t.count_by_kind() == {Kind.RANGE: 1, Kind.OSRT: 1}
    (w,) = [w for w in t.meta.warnings if "no GPU activity" in w]
    assert "1 NVTX range" in w and "1 OS-runtime call" in w
    assert "-t cuda" in w and "older than the CUDA version" in w and "CUDA driver 13.0" in w


# ---------------------------------------------------------------------------------------------------------
# wrong and damaged files
# ---------------------------------------------------------------------------------------------------------
def test_sqlite_file_that_is_not_an_nsys_export(tmp_path: Path) -> None:
    p = tmp_path / "app.sqlite"
    conn = sqlite3.connect(p)
    conn.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(TraceError, match=r"not an Nsight Systems export.*users"):
        nsys.load(str(p))


def test_truncated_export(tmp_path: Path) -> None:
    ex = basic()
    for i in range(3000):
        ex.osrt(10_000 + i * 10, 10_005 + i * 10, tid=WORKER, name=f"call{i % 50}")
    full = ex.write(tmp_path / "full.sqlite")
    cut = tmp_path / "cut.sqlite"
    data = full.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError, match="truncated SQLite file"):
        nsys.load(str(cut))


def test_damaged_pages(tmp_path: Path) -> None:
    ex = basic()
    for i in range(3000):
        ex.osrt(10_000 + i * 10, 10_005 + i * 10, tid=WORKER, name=f"call{i % 50}")
    path = ex.write(tmp_path / "bad.sqlite")
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for p in range(2, len(data) // page):  # scribble over every page's b-tree header, keep the schema page
        data[p * page : p * page + 12] = b"\xff" * 12
    path.write_bytes(bytes(data))
    with pytest.raises(TraceError, match=r"damaged SQLite file|could not be read"):
        nsys.load(str(path))


def test_a_table_without_its_time_columns_is_left_out_with_a_warning(tmp_path: Path) -> None:
    path = basic().write(tmp_path / "x.sqlite")
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE OSRT_API RENAME COLUMN end TO finish")
    conn.commit()
    conn.close()
    t = nsys.load(str(path))
    assert Kind.OSRT not in t.count_by_kind() and t.count_by_kind()[Kind.KERNEL] == 1
    assert "Table OSRT_API has no end column; its rows are left out." in t.meta.warnings


def test_progress_reports_rows_and_can_cancel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gputop_trace.errors import LoadCancelled
    from gputop_trace.parsers.nsys import columns as nsys_columns

    ex = basic()
    for i in range(500):
        ex.osrt(10_000 + i * 10, 10_005 + i * 10, tid=WORKER)
    path = str(ex.write(tmp_path / "x.sqlite"))
    monkeypatch.setattr(nsys_columns, "CHUNK_ROWS", 64)
    seen: list[tuple[int, int]] = []
    nsys.load(path, progress=lambda done, total, n: seen.append((done, total)))
    total = seen[-1][1]
    assert total == 1 + 1 + 1 + 4 + 1 + 3 + 501 + 2  # rows of every event table read
    assert len(seen) > 10  # OS-runtime rows came in chunks of 64
    assert seen[-1][0] == total and all(a[0] <= b[0] for a, b in itertools.pairwise(seen))

    def stop(done: int, total: int, n: int) -> None:
        if done > 100:
            raise LoadCancelled

    with pytest.raises(LoadCancelled):
        nsys.load(path, progress=stop)


def test_cli_gives_exit_code_2_and_one_paragraph_for_bad_exports(tmp_path: Path) -> None:
    import subprocess
    import sys

    foreign = tmp_path / "app.sqlite"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE users (id INTEGER)")
    conn.commit()
    conn.close()
    ex = basic()
    for i in range(3000):
        ex.osrt(10_000 + i * 10, 10_005 + i * 10, tid=WORKER)
    data = ex.write(tmp_path / "full.sqlite").read_bytes()
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(data[: len(data) // 3])
    text = tmp_path / "notes.sqlite"
    text.write_text("id,name\n1,x\n")
    for path, needle in (
        (foreign, "not an Nsight Systems export"),
        (cut, "truncated SQLite file"),
        (text, "not a SQLite database"),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "gputop_trace", "summary", str(path)],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "400"},
            check=False,
        )
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        err = " ".join(proc.stderr.split())
        assert err.startswith("gputop-trace: error:") and needle in err
        assert "nsys export --type sqlite" in err


def test_a_null_in_a_column_the_fast_reader_does_not_guard_falls_back_safely(tmp_path: Path) -> None:
    ex = basic()
    ex.kernel(8000, 8100, corr=60, name="orphan")
    ex.rows["CUPTI_ACTIVITY_KIND_KERNEL"][-1]["correlationId"] = None
    t = load(ex, tmp_path)
    assert t.meta.properties["tables_read_row_by_row"] == ["CUPTI_ACTIVITY_KIND_KERNEL"]
    names = {name_of(t, int(i)): int(i) for i in events(t, Kind.KERNEL)}
    assert set(names) == {"void kern<int>(int *)", "orphan"}
    assert int(t.corr[names["orphan"]]) == 0 and int(t.launch_of[names["orphan"]]) == -1
    assert name_of(t, int(t.launch_of[names["void kern<int>(int *)"]])) == "cudaLaunchKernel"


def test_unified_memory_migrations_are_gpu_activity_but_no_exposed_copy(tmp_path: Path) -> None:
    """A migration between two kernels fills the gap as ``nsys analyze -r gpu_gaps`` counts it (busy time and
    gaps), and stays out of the exposed copies."""
    from gputop_trace.analysis.busy import device_busy
    from gputop_trace.analysis.gaps.detect import find_gaps
    from gputop_trace.analysis.transfers import transfer_overlap

    ex = basic()
    ex.memcpy(10_000, 1_010_000, corr=0, kind=11, src=7, dst=7, stream=0, nbytes=65536)  # UVM HtoD migration
    ex.runtime(1_000_000, 1_000_100, tid=MAIN, corr=9, name="cudaLaunchKernel_v7000")
    ex.kernel(1_020_000, 1_030_000, corr=9)
    t = load(ex, tmp_path)
    uvm = events(t, Kind.UVM)
    assert len(uvm) == 1
    ops = [i for k in (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.UVM) for i in events(t, k).tolist()]
    spans = sorted((int(t.start_ns[i]), int(t.start_ns[i] + t.dur_ns[i])) for i in ops)
    busy, (cs, ce) = 0, spans[0]
    for s, e in spans[1:]:
        if s > ce:
            busy, cs, ce = busy + ce - cs, s, e
        else:
            ce = max(ce, e)
    busy += ce - cs
    (b,) = device_busy(t)
    assert b.busy_ns == busy and b.idle_ns == spans[-1][1] - spans[0][0] - busy
    dgs = find_gaps(t, threshold_ns=1000)
    (dg,) = dgs
    got = [(g.start_ns, g.start_ns + g.dur_ns) for g in dg.gaps]
    u0, u1 = int(t.start_ns[uvm[0]]), int(t.start_ns[uvm[0]] + t.dur_ns[uvm[0]])
    assert len(got) == 2 and got[0][1] == u0 and got[1][0] == u1  # the migration is no idle time
    rep = transfer_overlap(t)
    assert len(rep.uvm) == 1 and rep.uvm[0].exposed_ns == 0
    assert all(c.direction != "UVM" for c in rep.copies)
