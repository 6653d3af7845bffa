"""The nsys loader on all 20 real exports (nsys 2020.3 to 2026.2): lane and event counts against direct SQL
counts, launch links against an SQL join, kernel durations, GPUs, names, versions and the no-GPU export."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from gputop_trace.cli.main import main
from gputop_trace.model.kinds import Kind, LaneKind
from gputop_trace.model.trace import Trace
from gputop_trace.parsers.nsys import loader as nsys
from tests.conftest import CORPUS

pytestmark = pytest.mark.corpus

NSYS = CORPUS / "nsys"
FILES = sorted(p.name for p in NSYS.glob("*.sqlite")) if NSYS.is_dir() else []

#: EXPORT_PRODUCT_VERSION per file (corpus README), or the generation guessed for exports that do not record it.
VERSIONS = {
    "lockfuehrer__beast_ressoruces__report2.sqlite": "2020.x (version not recorded in the export)",
    "PolPuigPuy__OpenACC_Project_PolPuig__report12.sqlite": "2020.x (version not recorded in the export)",
    "martisu1631998__kmeans-parallel__report2.sqlite": "2020.x (version not recorded in the export)",
    "bwyogatama__Mordred-Deprecated__report1.sqlite": "2021.x (version not recorded in the export)",
    "mabdullahsoyturk__cardiac-simulation__report1.sqlite": "2021.x (version not recorded in the export)",
    "MohanadOdema__DLProf__nsys_profile.sqlite": "2022.1.3.3",
    "SMcMann__cudaHW__report1.sqlite": "2022.2.1.31",
    "hpcgroup__pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite": "2022.2.1.31",
    "kmcho2019__Rodinia_3.1_Gaussian__report3.sqlite": "2022.4.2.1",
    "Ayanokoji-li__cuckoo_hash__report1.sqlite": "2023.1.2.43",
    "RajaATAli__SC23_Programming-Your-GPU-with-OpenMP_Tutorial__report3.sqlite": "2023.3.1.92",
    "IllusiveAldebaran__nussinov-gpu__report1.sqlite": "2023.3.3.42",
    "MosesChuka__EasyCUDA__nsys_easy.sqlite": "2023.4.4.54",
    "hpcgroup__pipit__perlmutter-cloverleaf-cuda.sqlite": "2024.5.1.113",
    "danae-pan__hpc_assignment3__report2.sqlite": "2024.6.1.90",
    "Faraz-Nasir__CUDA---Recap__report1.sqlite": "2025.3.2.474",
    "p4arth__cuda-perf-sandbox__report1.sqlite": "2025.5.2.266",
    "0x822a5b87__test-cuda__report1.sqlite": "2026.1.1.204",
    "GindaChen__nsys-ai__h100_2gpu_1s.sqlite": "2026.2.1.210",
    "h200_nsys2022.4_nvtx_osrt_only.sqlite": "2022.4.2.1",
}

_UVM = "(11, 12, 13)"
_BACKTRACE = 67  # ENUM_NSYS_EVENT_CLASS TRACE_PROCESS_EVENT_CUDABACKTRACE
_BUSY_OVERHEAD = "('CUDA profiling data flush overhead', 'CUDA profiling stop overhead', 'CUDA profiling overhead')"


class Sql:
    """Direct SQL on an export, independent of the loader."""

    def __init__(self, path: Path) -> None:
        self.c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        self.c.text_factory = bytes
        self.tables = {r[0].decode() for r in self.c.execute("SELECT name FROM sqlite_master WHERE type='table'")}

    def has(self, t: str) -> bool:
        return t in self.tables

    def one(self, sql: str) -> int:
        return int(self.c.execute(sql).fetchone()[0] or 0)

    def rows(self, sql: str) -> list[tuple[int, ...]]:
        return [tuple(r) for r in self.c.execute(sql).fetchall()]

    def runtime_filter(self) -> str:
        cols = {r[1].decode() for r in self.c.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_RUNTIME)")}
        return f"eventClass != {_BACKTRACE}" if "eventClass" in cols else "1"

    def gpu_ops_union(self) -> str:
        parts = [
            f"SELECT start, end, (globalPid >> 24) & 16777215 AS pid, deviceId FROM {t} WHERE start > 0"
            for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
            if self.has(t)
        ]
        return " UNION ALL ".join(parts)

    def busy_overhead(self) -> list[tuple[int, ...]]:
        """(pid, device) of every PROFILER_OVERHEAD row nsys' GPU reports count as busy (their own query)."""
        if not self.has("PROFILER_OVERHEAD") or not self.gpu_ops_union():
            return []
        return self.rows(
            f"""WITH ops AS ({self.gpu_ops_union()}),
                span AS (SELECT min(start) AS start, max(end) AS end, pid, deviceId FROM ops GROUP BY deviceId, pid),
                o AS (SELECT po.start, po.end, (po.globalTid >> 24) & 16777215 AS pid FROM PROFILER_OVERHEAD po
                      JOIN StringIds s ON s.id = po.nameId WHERE CAST(s.value AS TEXT) IN {_BUSY_OVERHEAD})
            SELECT o.pid, span.deviceId FROM o JOIN span ON o.pid = span.pid AND o.start > span.start
                   AND o.end < span.end"""
        )


def expected_kind_counts(q: Sql) -> Counter[str]:
    n: Counter[str] = Counter()
    if q.has("CUPTI_ACTIVITY_KIND_KERNEL"):
        n["KERNEL"] = q.one("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    if q.has("CUPTI_ACTIVITY_KIND_MEMCPY"):
        n["MEMCPY"] = q.one(f"SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind NOT IN {_UVM}")
        n["UVM"] = q.one(f"SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind IN {_UVM}")
    if q.has("CUPTI_ACTIVITY_KIND_MEMSET"):
        n["MEMSET"] = q.one("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET")
    if q.has("CUPTI_ACTIVITY_KIND_RUNTIME"):
        n["API"] = q.one(f"SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE {q.runtime_filter()}")
    if q.has("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"):
        n["SYNC"] = q.one("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
    if q.has("NVTX_EVENTS"):
        n["RANGE"] = q.one("SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60, 70, 71)")
        n["MARKER"] = q.one("SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (34, 65)")
    if q.has("OSRT_API"):
        n["OSRT"] = q.one("SELECT count(*) FROM OSRT_API")
    for t in ("PROFILER_OVERHEAD", "CUPTI_ACTIVITY_KIND_OVERHEAD"):
        if q.has(t):
            n["OVERHEAD"] += q.one(f"SELECT count(*) FROM {t}")
    n["OVERHEAD"] += len(q.busy_overhead())
    return +n


def expected_lane_counts(q: Sql) -> Counter[str]:
    n: Counter[str] = Counter()
    streams = [
        f"SELECT globalPid, deviceId, streamId FROM {t}" + (f" WHERE copyKind NOT IN {_UVM}" if "MEMCPY" in t else "")
        for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
        if q.has(t)
    ]
    if streams:
        n["GPU_STREAM"] = q.one(f"SELECT count(*) FROM ({' UNION '.join(streams)})")
    if q.has("CUPTI_ACTIVITY_KIND_MEMCPY"):
        n["UVM"] = q.one(f"SELECT count(DISTINCT deviceId) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind IN {_UVM}")
    n["OTHER"] = len(set(q.busy_overhead()))
    threads = []
    if q.has("CUPTI_ACTIVITY_KIND_RUNTIME"):
        threads.append(f"SELECT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE {q.runtime_filter()}")
    if q.has("NVTX_EVENTS"):
        threads.append("SELECT globalTid FROM NVTX_EVENTS WHERE eventType IN (34, 59, 65, 70) OR (eventType IN (60, 71)"
                       " AND (endGlobalTid IS NULL OR endGlobalTid = globalTid))")  # fmt: skip
    for t in ("OSRT_API", "PROFILER_OVERHEAD", "CUPTI_ACTIVITY_KIND_OVERHEAD"):
        if q.has(t):
            threads.append(f"SELECT globalTid FROM {t}")
    if threads:
        n["CPU_THREAD"] = q.one(f"SELECT count(*) FROM ({' UNION '.join(threads)})")
    return +n


def expected_launch_links(q: Sql) -> int:
    if not q.has("CUPTI_ACTIVITY_KIND_RUNTIME"):
        return 0
    total = 0
    for t, cond in (
        ("CUPTI_ACTIVITY_KIND_KERNEL", "1"),
        ("CUPTI_ACTIVITY_KIND_MEMCPY", f"g.copyKind NOT IN {_UVM}"),
        ("CUPTI_ACTIVITY_KIND_MEMSET", "1"),
    ):
        if q.has(t):
            total += q.one(
                f"""SELECT count(*) FROM {t} g WHERE {cond} AND EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r
                    WHERE r.correlationId = g.correlationId AND (r.globalTid & -16777216) = g.globalPid
                    AND r.{q.runtime_filter()})"""
            )
    return total


_LOADED: dict[str, Trace] = {}


def loaded(name: str) -> Trace:
    if name not in _LOADED:
        _LOADED[name] = nsys.load(str(NSYS / name))
    return _LOADED[name]


def test_the_corpus_has_twenty_exports() -> None:
    assert len(FILES) == 20


@pytest.mark.parametrize("name", FILES)
def test_event_counts_per_kind_equal_direct_sql_counts(name: str) -> None:
    t = loaded(name)
    got = Counter({k.name: v for k, v in t.count_by_kind().items()})
    assert got == expected_kind_counts(Sql(NSYS / name))


@pytest.mark.parametrize("name", FILES)
def test_lane_counts_per_kind_equal_direct_sql_counts(name: str) -> None:
    t = loaded(name)
    got = Counter(ln.kind.name for ln in t.lanes)
    assert got == expected_lane_counts(Sql(NSYS / name))
    assert all(t.lane_rows[i] > 0 for i in range(len(t.lanes)))  # no empty lane


@pytest.mark.parametrize("name", FILES)
def test_every_gpu_op_with_a_launch_call_is_linked_to_it(name: str) -> None:
    t = loaded(name)
    q = Sql(NSYS / name)
    assert len(t.flows) == expected_launch_links(q)
    links = t.flows.src, t.flows.dst
    assert set(t.kind[links[0]].tolist()) <= {int(Kind.API)}
    assert bool(np.all(t.corr[links[0]] == t.corr[links[1]]))
    assert bool(np.all(t.lane_pid[t.lane[links[0]]] == t.lane_pid[t.lane[links[1]]]))


@pytest.mark.parametrize("name", FILES)
def test_kernel_times_are_the_files_own(name: str) -> None:
    t = loaded(name)
    q = Sql(NSYS / name)
    if not q.has("CUPTI_ACTIVITY_KIND_KERNEL"):
        assert Kind.KERNEL not in t.count_by_kind()
        return
    want = sorted(q.rows("SELECT deviceId, start, end - start FROM CUPTI_ACTIVITY_KIND_KERNEL"))
    k = t.of_kind(Kind.KERNEL)
    got = sorted(
        zip(
            t.event_device[k].tolist(),
            (t.start_ns[k] + t.meta.t0_ns).tolist(),
            t.dur_ns[k].tolist(),
            strict=True,
        )
    )
    assert got == want


@pytest.mark.parametrize("name", FILES)
def test_real_exports_take_the_fast_column_reader(name: str) -> None:
    # every table of every real export parses through the bulk path (no row-by-row fallback)
    assert "tables_read_row_by_row" not in loaded(name).meta.properties


@pytest.mark.parametrize("name", FILES)
def test_producer_version(name: str) -> None:
    assert loaded(name).meta.producer == f"Nsight Systems {VERSIONS[name]}"


@pytest.mark.parametrize("name", FILES)
def test_summary_command_works_on_every_export(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", "--json", str(NSYS / name)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["source"]["format"] == "nsys"
    t = loaded(name)
    assert doc["events"]["kernel"] == t.count_by_kind().get(Kind.KERNEL, 0)


def test_gpu_names_and_properties_from_target_info() -> None:
    gpus = loaded("kmcho2019__Rodinia_3.1_Gaussian__report3.sqlite").meta.gpus
    assert [(g.device, g.name, g.sm_count, g.compute_capability) for g in gpus] == [
        (d, "NVIDIA GeForce RTX 3090", 82, "8.6") for d in range(7)
    ]
    (h200,) = loaded("h200_nsys2022.4_nvtx_osrt_only.sqlite").meta.gpus
    assert (h200.name, h200.sm_count, h200.memory_bandwidth, h200.clock_khz, h200.total_memory) == (
        "NVIDIA H200",
        132,
        4814304000000.0,
        1980000,
        150109880320,
    )
    v100 = loaded("lockfuehrer__beast_ressoruces__report2.sqlite").meta.gpus  # 2020.3: TARGET_INFO_CUDA_GPU
    assert [(g.device, g.name, g.sm_count, g.clock_khz, g.compute_capability) for g in v100] == [
        (0, "Tesla V100-PCIE-32GB", 80, 1380000, "7.0"),
        (1, "Tesla V100-PCIE-32GB", 80, 1380000, "7.0"),
    ]
    windows = loaded("Faraz-Nasir__CUDA---Recap__report1.sqlite").meta.gpus  # a display adapter with no SMs
    assert [g.name for g in windows] == ["NVIDIA GeForce GTX 1650"]


def test_two_gpu_export_lanes() -> None:
    t = loaded("GindaChen__nsys-ai__h100_2gpu_1s.sqlite")
    streams = sorted((ln.device, ln.name, ln.process_name) for ln in t.lanes if ln.kind == LaneKind.GPU_STREAM)
    assert streams == [(0, "stream 7", "GPU 0"), (1, "stream 15", "GPU 1")]
    threads = sorted((ln.process_name, ln.name) for ln in t.lanes if ln.kind == LaneKind.CPU_THREAD)
    assert [p.split("] ")[1] for p, _ in threads] == ["python3", "python3"]
    assert t.count_by_kind()[Kind.RANGE] == 16782
    assert t.meta.properties["session_start_utc_ns"] == 1779630014975716426


def test_nvtx_domains_and_nvtx_thread_names() -> None:
    t = loaded("hpcgroup__pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite")
    names = Counter(t.names[int(i)] for i in t.name[t.of_kind(Kind.RANGE)])
    assert names == {"MPI:MPI_Send": 10, "MPI:MPI_Recv": 5, "saxpy": 5, "MPI:MPI_Init": 1, "MPI:MPI_Finalize": 1}
    assert t.meta.properties["nvtx_domains"] == ["MPI"]
    main_thread = [ln for ln in t.lanes if ln.kind == LaneKind.CPU_THREAD and ln.tid == ln.pid]
    assert [ln.name for ln in main_thread] == ["MPI Rank 0"]  # the NVTX thread name wins over the OS name
    assert t.meta.properties["cuda_backtrace_rows_skipped"] == 38


def test_unified_memory_migrations_on_their_own_lane() -> None:
    t = loaded("MosesChuka__EasyCUDA__nsys_easy.sqlite")
    uvm = t.of_kind(Kind.UVM)
    assert len(uvm) == 72
    assert {(t.lanes[int(i)].kind, t.lanes[int(i)].device) for i in t.lane[uvm]} == {(LaneKind.UVM, 0)}
    rows = np.searchsorted(t.copies.event, uvm)
    assert Counter(t.copies.direction[rows].tolist()) == {11: 48, 12: 24}
    assert bool(np.all(t.launch_of[uvm] == -1))


def test_copy_kinds_and_async_flags() -> None:
    t = loaded("GindaChen__nsys-ai__h100_2gpu_1s.sqlite")
    c = t.of_kind(Kind.MEMCPY)
    names = Counter(t.names[int(i)] for i in t.name[c])
    assert names == {
        "Memcpy HtoD (Pinned -> Device)": 446,
        "Memcpy DtoD (Device -> Device)": 450,
        "Memcpy HtoD (Pageable -> Device)": 4,
        "Memcpy DtoH (Device -> Pinned)": 4,
    }
    rows = np.searchsorted(t.copies.event, c)
    launch = t.launch_of[c]
    assert (launch >= 0).sum() == 438  # this derived 1 s slice kept the API calls of only half of its copies
    for r, api in zip(rows.tolist(), launch.tolist(), strict=True):
        want = -1 if api < 0 else (1 if "Async" in t.event_name(api) else 0)
        assert int(t.copies.is_async[r]) == want


def test_export_without_gpu_activity_explains_it_in_plain_words() -> None:
    t = loaded("h200_nsys2022.4_nvtx_osrt_only.sqlite")
    assert not t.devices
    assert t.count_by_kind()[Kind.OSRT] == 15547
    (w,) = [w for w in t.meta.warnings if "no GPU activity" in w]
    assert "15,547 OS-runtime calls" in w
    assert "nsys profile -t cuda" in w
    assert "older than the CUDA version" in w and "CUDA driver 13.0" in w and "2022.4.2.1" in w
    empty = loaded("mabdullahsoyturk__cardiac-simulation__report1.sqlite")
    assert len(empty) == 0 and any("holds no events" in w for w in empty.meta.warnings)


def test_summary_text_of_the_no_gpu_export(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(NSYS / "h200_nsys2022.4_nvtx_osrt_only.sqlite")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "No GPU activity in this profile" in out and "no GPU activity" in out and "-t cuda" in out
