"""The streamer's window (parsers/chrome/stream.py): heap memory sized to its span and a little slack, which grows
for an element longer than that; every event of a file with such elements loads, plain or gzip, on both paths."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gputop_trace.parsers.chrome import loader as chrome
from gputop_trace.parsers.chrome import stream


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure-python"])
@pytest.mark.parametrize("gz", [False, True], ids=["json", "gzip"])
def test_elements_longer_than_the_window_and_its_slack_load_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gz: bool, pure: bool
) -> None:
    monkeypatch.setattr(stream, "CHUNK", 1 << 12)  # a window of a few KiB: the long elements pass its slack
    if pure:
        monkeypatch.setenv("GPUTOP_PURE_PYTHON", "1")
    ev = [{"ph": "X", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i * 10, "dur": 2} for i in range(3000)]
    long_name = "big" + "x" * (stream.SLACK * 2)
    ev[1500]["name"] = long_name
    ev[2500]["args"] = {"note": "y" * (stream.SLACK + 7)}
    data = json.dumps({"traceEvents": ev}, indent=1).encode()
    path = tmp_path / ("t.json.gz" if gz else "t.json")
    path.write_bytes(gzip.compress(data) if gz else data)
    trace = chrome.load(str(path))
    names = [trace.names[i] for i in trace.name.tolist()]
    assert len(trace) == 3000 and not trace.meta.warnings
    assert long_name in names and sorted(n for n in names if n.startswith("op")) == sorted(
        f"op{i}" for i in range(3000) if i != 1500
    )


def test_parts_of_two_chunks_where_four_threads_or_more_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With 4 scanning threads or more a window is cut into parts of two chunks (half as many parts for the loading
    thread to turn into columns), with 2 into parts of one; the model is the same."""
    from gputop_trace.parsers.chrome import fast, parallel_scan
    from tests.conftest import require_compiled
    from tests.trace_compare import trace_differences

    require_compiled(fast.available(), "the compiled scanner (_fastscan)")
    monkeypatch.delenv(fast.PURE_PYTHON_ENV, raising=False)
    evs = [
        {
            "ph": "X",
            "cat": "kernel",
            "name": f"k{i % 7}",
            "pid": 0,
            "tid": 7,
            "ts": i,
            "dur": 1,
            "args": {"correlation": i},
        }
        for i in range(40_000)
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": evs}))
    monkeypatch.setattr(stream, "CHUNK", 64 << 10)
    got = {}
    for threads in (2, 4):
        monkeypatch.setenv(parallel_scan.SCAN_THREADS_ENV, str(threads))
        before = parallel_scan.stats["parts"]
        got[threads] = chrome.load(str(path)), parallel_scan.stats["parts"] - before
    size = path.stat().st_size
    assert got[2][1] >= 0.8 * size / (64 << 10) and got[4][1] <= 0.65 * got[2][1], (size, got[2][1], got[4][1])
    assert not trace_differences(got[4][0], got[2][0])
