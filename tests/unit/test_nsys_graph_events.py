"""Issue 31, 3e: nsys ``CUDA_GRAPH_EVENTS`` (host-side graph creation, node creation, clone, instantiation, exec
updates; nsys ``--cuda-graph-trace``) are read as events on their threads, on a synthetic export with the table's
real schema (the corpus has the table only empty: hpcgroup/pipit's saxpy export, nsys 2022.2)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gputop_trace.analysis.busy import device_busy
from gputop_trace.model.kinds import Kind, LaneKind
from gputop_trace.parsers.nsys import loader as nsys
from gputop_trace.parsers.nsys.graph_events import class_words
from tests.fixtures.nsys_synth import SynthExport
from tests.paths import CORPUS
from tests.unit.test_nsys_synthetic import MAIN, WORKER, basic, events, lane_of, load, name_of


def _with_graph() -> SynthExport:
    ex = basic()
    ex.graph_event(4000, 4100, tid=MAIN, name="cudaStreamEndCapture", node=0, event_class=95)
    ex.graph_event(4200, 4260, tid=MAIN, name="cudaGraphAddKernelNode", node=21)
    ex.graph_event(4300, 4350, tid=WORKER, name="cudaGraphAddKernelNode", node=22)
    ex.graph_event(5100, 5900, tid=MAIN, name="cudaGraphInstantiate", node=0, event_class=94)
    ex.graph_event(5200, 5210, tid=MAIN, name="cudaGraphInstantiate", node=31, event_class=96, original=21)
    ex.runtime(5000, 6000, tid=MAIN, corr=40, name="cudaGraphInstantiate_v12000")
    ex.runtime(9000, 9100, tid=MAIN, corr=41, name="cudaGraphLaunch_v10000")
    ex.graph(9200, 9900, corr=41, graph_id=12)
    return ex


def test_graph_events_are_read_on_their_threads(tmp_path: Path) -> None:
    t = load(_with_graph(), tmp_path)
    base = load(basic(), tmp_path, name="base.sqlite")
    got = sorted(
        (t.file_time_ns(int(t.start_ns[i])), int(t.dur_ns[i]), name_of(t, int(i)), lane_of(t, int(i)).tid)
        for i in events(t, Kind.OTHER)
        if "CUDA graph" in name_of(t, int(i))
    )
    assert got == [
        (4000, 100, "CUDA graph creation: cudaStreamEndCapture", MAIN),
        (4200, 60, "CUDA graph node creation: cudaGraphAddKernelNode", MAIN),
        (4300, 50, "CUDA graph node creation: cudaGraphAddKernelNode", WORKER),
        (5100, 800, "CUDA graph exec creation: cudaGraphInstantiate", MAIN),
        (5200, 10, "CUDA graph clone: cudaGraphInstantiate", MAIN),
    ]
    for i in events(t, Kind.OTHER):
        if "CUDA graph" in name_of(t, int(i)):
            assert lane_of(t, int(i)).kind == LaneKind.CPU_THREAD
    assert t.meta.properties["cuda_graph_events"] == 5
    # host-side: no GPU busy time and no API call added (the calls that did them are in the runtime table)
    assert t.count_by_kind()[Kind.API] == base.count_by_kind()[Kind.API] + 2
    assert t.count_by_kind()[Kind.GRAPH] == 1
    busy = {d.device: d.busy_ns for d in device_busy(t)}
    assert busy[0] == {d.device: d.busy_ns for d in device_busy(base)}[0] + 700  # the graph launch only


def test_event_classes_come_from_the_files_enum_table(tmp_path: Path) -> None:
    ex = basic()
    ex.graph_event(4000, 4100, tid=MAIN, name="cudaGraphClone", node=5, event_class=200)
    ex.graph_event(4200, 4300, tid=MAIN, name="cudaGraphAddKernelNode", node=6, event_class=77)
    path = ex.write(tmp_path / "enum.sqlite")
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE ENUM_NSYS_EVENT_CLASS (id INTEGER PRIMARY KEY, name TEXT, label TEXT)")
    conn.execute("INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (200, 'TRACE_PROCESS_EVENT_CUDA_GRAPH_CLONE', 'x')")
    conn.commit()
    conn.close()
    t = nsys.load(str(path))
    names = sorted(name_of(t, int(i)) for i in events(t, Kind.OTHER) if "graph" in name_of(t, int(i)).lower())
    # 77 is not named by this file's table: nsys 2026.2's value is used
    assert names == ["CUDA graph clone: cudaGraphClone", "CUDA graph node creation: cudaGraphAddKernelNode"]
    assert class_words(12345, {}) == "CUDA graph event"


@pytest.mark.corpus
def test_the_corpus_export_with_an_empty_graph_events_table_loads_as_before() -> None:
    path = CORPUS / "nsys" / "hpcgroup__pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
    t = nsys.load(str(path))
    assert "cuda_graph_events" not in t.meta.properties
    assert not any("graph" in name_of(t, int(i)).lower() for i in events(t, Kind.OTHER))
