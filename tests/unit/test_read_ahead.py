"""Chunks read ahead on a second thread (``parsers/chrome/ahead.py``): the same model as reading on the loader's
thread, errors and cancellation raised where the loader can see them, and no thread left behind."""

from __future__ import annotations

import gzip
import json
import threading
from pathlib import Path

import pytest

from gputop_trace.errors import LoadCancelled, TraceError
from gputop_trace.parsers.chrome import ahead, stream
from gputop_trace.parsers.chrome import loader as chrome
from gputop_trace.parsers.chrome.document import DocumentInfo
from gputop_trace.parsers.source import ByteStream
from tests.trace_compare import trace_differences


def _trace(path: Path, n: int = 3000, *, gz: bool = False) -> str:
    evs = [
        {"ph": "X", "name": f"k{i % 13}", "cat": "kernel", "pid": 1, "tid": i % 4, "ts": 1_790_857_026_000_000 + i,
         "dur": 0.5, "args": {"correlation": i, "grid": [1, 1, 1], "block": [32, 1, 1], "registers per thread": 8}}
        for i in range(n)
    ]  # fmt: skip
    data = json.dumps({"traceEvents": evs}).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return str(path)


@pytest.mark.parametrize("gz", [False, True])
def test_read_ahead_gives_the_model_of_reading_in_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gz: bool
) -> None:
    path = _trace(tmp_path / ("t.json.gz" if gz else "t.json"), gz=gz)
    monkeypatch.setattr(stream, "CHUNK", 8192)  # many chunks through the queue
    monkeypatch.setenv(ahead.READ_AHEAD_ENV, "0")
    inline = chrome.load(path)
    monkeypatch.setenv(ahead.READ_AHEAD_ENV, "1")
    assert not trace_differences(chrome.load(path), inline)
    assert len(inline.kernels) == 3000


def test_cancelling_from_the_progress_callback_stops_the_load_and_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _trace(tmp_path / "t.json")
    monkeypatch.setattr(stream, "CHUNK", 4096)
    calls: list[int] = []

    def progress(done: int, total: int, events: int) -> None:
        calls.append(done)
        if len(calls) == 5:
            raise LoadCancelled()

    before = threading.active_count()
    with pytest.raises(LoadCancelled):
        chrome.load(path, progress=progress)
    assert threading.active_count() == before


def test_an_error_on_the_reading_thread_is_raised_to_the_loader(tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text('{"schema": 1, "nodes": []}')
    with pytest.raises(TraceError, match="not a Chrome trace"):
        chrome.load(str(p))


def test_a_consumer_that_stops_early_stops_the_producer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _trace(tmp_path / "t.json")
    monkeypatch.setattr(stream, "CHUNK", 2048)
    before = threading.active_count()
    with ByteStream(path) as src:
        it = iter(ahead.ReadAhead(src, DocumentInfo()))
        next(it)
        it.close()  # the generator's finally: stop, join
    assert threading.active_count() == before


def test_two_windows_of_parts_may_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """With eight scanning threads a window is eight parts: sixteen may wait, so that the producer scans the next
    window while the loader works through this one; four (the least) with fewer threads or no compiled scanner."""
    from gputop_trace.parsers.chrome import parallel_scan, scanner

    monkeypatch.setenv(parallel_scan.SCAN_THREADS_ENV, "8")
    assert ahead.depth() == (16 if scanner.enabled() else 4)
    monkeypatch.setenv(parallel_scan.SCAN_THREADS_ENV, "2")
    assert ahead.depth() == 4
    monkeypatch.setenv(parallel_scan.SCAN_THREADS_ENV, "8")
    monkeypatch.setenv(scanner.PURE_PYTHON_ENV, "1")
    assert ahead.depth() == 4
