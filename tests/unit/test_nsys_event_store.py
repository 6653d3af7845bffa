"""The nsys loader's event store (issue 29 item 3): every batch's event columns copied into whole-trace arrays as
the batch is read, handed to the builder whole. The model must be the one the batches give when concatenated, on
every corpus export and on damaged files whose rows are dropped (the store then steps aside)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace
from gputop_trace.parsers.nsys import columns as nsys_columns
from gputop_trace.parsers.nsys import loader as nsys
from gputop_trace.parsers.nsys.common import Batch, EventStore, kind_array
from tests.conftest import CORPUS
from tests.fixtures.nsys_synth import PID, SynthExport
from tests.trace_compare import trace_differences

NSYS = CORPUS / "nsys"
FILES = sorted(p.name for p in NSYS.glob("*.sqlite")) if NSYS.is_dir() else []


def _batch(start: list[int], *, corr: bool = True) -> Batch:
    n = len(start)
    return Batch(
        table="t",
        start=np.array(start, dtype=np.int64),
        dur=np.arange(n, dtype=np.int64),
        kind=kind_array(Kind.KERNEL, n),
        lane=np.full(n, 3, dtype=np.int32),
        name=np.arange(n, dtype=np.int32),
        corr=np.arange(n, dtype=np.int64) + 100 if corr else None,
    )


def test_the_store_grows_and_its_batches_stay_views_of_their_rows() -> None:
    store = EventStore(2)
    batches = [_batch([5, 6]), _batch([]), _batch([7, 8, 9], corr=False), _batch([1])]
    for b in batches:
        store.put(b)
    cols = store.columns()
    assert cols is not None and store.capacity >= 6
    assert cols["start"].tolist() == [5, 6, 7, 8, 9, 1]
    assert cols["corr"].tolist() == [100, 101, -1, -1, -1, 100]  # -1 where a batch has no correlation ids
    assert batches[2].corr is None and batches[2].slot == 2
    batches[2].dur[1] = 42  # a change in place is a change of the store's rows
    assert cols["dur"].tolist() == [0, 1, 0, 42, 2, 0]
    batches[0].keep(np.array([True, False]))  # rows dropped: the batch's columns are copies now
    assert batches[0].slot == -1 and store.columns() is None


def _damaged() -> SynthExport:
    ex = SynthExport()
    ex.process("python3")
    ex.thread(PID, "python3")
    ex.gpu(0)
    for i in range(40):
        ex.runtime(1000 + 100 * i, 1050 + 100 * i, tid=PID, corr=i + 1, name="cudaLaunchKernel_v7000")
        ex.kernel(5000 + 100 * i, 5080 + 100 * i, corr=i + 1)
    ex.runtime(2**62, 2**62 + 5, tid=PID, corr=99, name="cudaLaunchKernel_v7000")  # beyond ±73 years: dropped
    ex.kernel(9000, 9000 + 2**62, corr=3)  # lasts longer than 73 years: zero length
    ex.kernel(9500, None, corr=4)  # lost end
    ex.nvtx(500, None, tid=PID, text="never ends")
    return ex


def _without_store(monkeypatch: pytest.MonkeyPatch, path: str) -> Trace:
    with monkeypatch.context() as m:
        m.setattr(nsys, "EventStore", lambda capacity, plausible: None)
        return nsys.load(path)


def _same(a: Trace, b: Trace) -> None:
    assert not trace_differences(a, b), trace_differences(a, b)[:8]
    assert a.meta.properties == b.meta.properties and a.meta.warnings == b.meta.warnings


def test_a_damaged_export_whose_rows_are_dropped_gives_the_model_the_batches_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(_damaged().write(tmp_path / "damaged.sqlite"))
    kept: list[Any] = []
    columns = EventStore.columns

    def spy(self: EventStore) -> Any:
        kept.append(columns(self))
        return kept[-1]

    monkeypatch.setattr(EventStore, "columns", spy)
    stored = nsys.load(path)
    assert kept == [None]  # a row was dropped: the batches are concatenated instead
    _same(stored, _without_store(monkeypatch, path))
    assert len(stored) == 40 + 42 + 1  # the API call beyond ±73 years is left out
    text = " ".join(stored.meta.warnings)
    assert "start times beyond" in text and "longer than 73 years" in text and "no end time" in text


def test_a_store_that_must_grow_gives_the_same_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(_damaged().write(tmp_path / "damaged.sqlite"))
    monkeypatch.setattr(nsys, "EventStore", lambda capacity, plausible: EventStore(3, plausible))
    grown = nsys.load(path)
    monkeypatch.undo()
    _same(grown, nsys.load(path))


@pytest.mark.corpus
@pytest.mark.parametrize("name", FILES)
def test_every_export_gives_the_same_model_with_and_without_the_store(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(NSYS / name)
    whole: list[bool] = []
    columns = EventStore.columns

    def spy(self: EventStore) -> Any:
        got = columns(self)
        whole.append(got is not None)
        return got

    monkeypatch.setattr(EventStore, "columns", spy)
    stored = nsys.load(path)
    monkeypatch.undo()
    assert whole in ([True], [])  # the builder was given whole columns (no batches: nothing to give)
    _same(stored, _without_store(monkeypatch, path))


def test_runtime_chunks_read_again_the_safe_way_give_the_model_of_one_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runtime table is placed chunk by chunk; a value no integer reader takes (a REAL) found after some
    chunks were placed makes the reader start the table again the safe way, and the rows start again at its
    first row: the model is the one a single chunk gives, with every call on its thread, named and linked."""
    ex = SynthExport()
    ex.process("python3")
    ex.gpu(0)
    for i in range(30):
        tid = PID if i % 3 else PID + 1 + i % 2
        ex.runtime(1000 + 100 * i, 1050 + 100 * i, tid=tid, corr=i + 1, name=f"cudaCall{i % 4}_v7000")
        ex.kernel(5000 + 100 * i, 5080 + 100 * i, corr=i + 1)
    ex.runtime(990, 1010, tid=PID, corr=7, name="cudaCall3", event_class=67)  # a --cudabacktrace wrapper
    first = ex.rows["CUPTI_ACTIVITY_KIND_RUNTIME"][0]["globalTid"]
    odd = {"eventClass": 0, "globalTid": first, "correlationId": 500, "nameId": ex.sid("cudaOdd"), "returnValue": 0}
    ex.add("CUPTI_ACTIVITY_KIND_RUNTIME", start=9000.5, end=9100, **odd)  # a REAL: no integer reader takes it
    path = str(ex.write(tmp_path / "odd.sqlite"))

    monkeypatch.setattr(nsys_columns, "CHUNK_ROWS", 4)
    chunked = nsys.load(path)
    monkeypatch.setattr(nsys_columns, "CHUNK_ROWS", 1 << 16)
    _same(chunked, nsys.load(path))
    assert chunked.meta.properties["tables_read_row_by_row"] == ["CUPTI_ACTIVITY_KIND_RUNTIME"]
    assert chunked.meta.properties["cuda_backtrace_rows_skipped"] == 1
    api = chunked.of_kind(Kind.API)
    names = sorted(chunked.names[int(chunked.name[i])] for i in api)
    assert len(api) == 31 and names.count("cudaCall3") == 7 and "cudaOdd" in names
    assert int(chunked.flows.src.shape[0]) == 30  # every kernel linked to its call
    tids = {chunked.lanes[int(chunked.lane[i])].tid for i in api}
    assert tids == {PID, PID + 1, PID + 2}
