"""The loader's event columns (``state._Columns``): each part copied into one growing array per column, cast to
the column's dtype as ``np.concatenate(..., casting="unsafe")`` of the parts would; the latest end; and the load's
sizing of the columns from the first bytes of a plain file, which must not change the model."""

from __future__ import annotations

import gzip
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gputop_trace.parsers.chrome import loader as chrome
from gputop_trace.parsers.chrome import state
from gputop_trace.parsers.chrome import stream as chrome_stream
from gputop_trace.parsers.chrome.state import COLUMNS, _Columns
from tests.conftest import SAMPLES
from tests.corpus.test_reference_loader import _edge_files
from tests.trace_compare import trace_differences


def _part(rng: np.random.Generator, n: int) -> dict[str, np.ndarray[Any, Any]]:
    big = 2**40  # ids beyond int32 wrap as the unsafe cast wraps them
    return {
        k: (rng.integers(-big, big, n) if dt != np.uint8 else rng.integers(0, 5, n)).astype(
            np.int64 if dt != np.uint8 else np.uint8
        )
        for k, dt in COLUMNS.items()
    }


@pytest.mark.parametrize("reserve", [None, 10, 5000, 100_000])
@pytest.mark.parametrize("fault_in", [False, True], ids=["", "faulted-in"])
def test_columns_hold_the_parts_in_order(reserve: int | None, fault_in: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Also with the fault-in thread writing the memory ahead (a gap of 4000 events: the parts of up to 3000
    events come close to it, and one of 5000 stops it)."""
    monkeypatch.setattr(state, "FAULT_IN_GAP", 4000)
    monkeypatch.setattr(state, "FAULT_IN_BLOCK", 64)
    rng = np.random.default_rng(5)
    cols = _Columns()
    if reserve is not None:
        cols.reserve(reserve, fault_in=reserve if fault_in else 0)
    parts = [_part(rng, int(n)) for n in [*rng.integers(0, 3000, 40), 5000, 10]]
    for p in parts:
        cols.append(**p)
    cols.settle()
    assert cols.n == sum(len(p["start"]) for p in parts)
    for k, dt in COLUMNS.items():
        got = cols.column(k)
        want = np.concatenate([p[k] for p in parts], dtype=dt, casting="unsafe")
        assert got.dtype == want.dtype and np.array_equal(got, want), k
    ends = [int((p["start"] + p["dur"]).max()) for p in parts if len(p["start"])]
    assert cols.end == max(ends)


def _copy_in_and_check(rng: np.random.Generator, room: int, sizes: np.ndarray[Any, Any]) -> None:
    """Parts of ``sizes`` events copied into columns sized ``room`` with the fault-in thread on: once settled, the
    thread has stopped and every column holds the parts in order, as their concatenation would."""
    cols = _Columns()
    cols.reserve(room, fault_in=room)
    parts = [_part(rng, int(n)) for n in sizes]
    for p in parts:
        cols.append(**p)
    cols.settle()
    assert cols._thread is None
    for k in COLUMNS:
        want = np.concatenate([p[k] for p in parts], dtype=COLUMNS[k], casting="unsafe")
        assert np.array_equal(np.asarray(cols.column(k)), want), k


def test_the_fault_in_thread_never_writes_over_events(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many loads' worth of small parts copied in while the thread writes blocks of 8 events 16 above them."""
    monkeypatch.setattr(state, "FAULT_IN_GAP", 16)
    monkeypatch.setattr(state, "FAULT_IN_BLOCK", 8)
    rng = np.random.default_rng(9)
    for _ in range(100):
        _copy_in_and_check(rng, 4000, rng.integers(1, 12, 300))


class _SlowFill(np.ndarray):  # type: ignore[type-arg]
    """An array whose fills (the fault-in thread's ``a[i:j] = 0``) take a while, so that parts are copied in while
    the thread is in the middle of one."""

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(value, int):
            time.sleep(0.0005)
        super().__setitem__(key, value)


class _NumpyWithSlowFills:
    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    @staticmethod
    def empty(n: int, dtype: Any) -> np.ndarray[Any, Any]:
        return np.empty(n, dtype=dtype).view(_SlowFill)


def test_parts_copied_in_while_the_thread_fills_stay_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "np", _NumpyWithSlowFills())
    monkeypatch.setattr(state, "FAULT_IN_GAP", 40)
    monkeypatch.setattr(state, "FAULT_IN_BLOCK", 16)
    rng = np.random.default_rng(4)
    for _ in range(10):
        _copy_in_and_check(rng, 3000, rng.integers(1, 30, 200))


def test_no_events_no_end() -> None:
    cols = _Columns()
    cols.append(**{k: np.zeros(0, dtype=dt) for k, dt in COLUMNS.items()})
    assert cols.n == 0 and cols.end is None and cols.column("start").shape == (0,)


def test_columns_sized_from_the_first_bytes_give_the_same_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sized after a few KiB (under- and over-estimates both: the samples' density varies along the file) and
    grown from there, against columns that only grow."""
    paths = list(_edge_files(tmp_path).values())
    for p in sorted(SAMPLES.glob("*.json.gz")):  # (the bundled traces, inflated: gzip files are not sized ahead)
        plain = tmp_path / p.name.removesuffix(".gz")
        plain.write_bytes(gzip.decompress(p.read_bytes()))
        paths.append(str(plain))
    monkeypatch.setattr(chrome_stream, "CHUNK", 4096)
    sized = 0
    reserve = chrome.State().cols.reserve.__func__  # type: ignore[attr-defined]

    def counting(self: _Columns, n: int, fault_in: int = 0) -> None:
        nonlocal sized
        sized += sys._getframe(1).f_code.co_name == "_stream_into"  # (the loader's estimate, not a growth)
        reserve(self, n, fault_in=fault_in)

    monkeypatch.setattr(chrome, "FAULT_IN_CORES", 1)  # faulted in ahead, whatever the cores
    monkeypatch.setattr(state, "FAULT_IN_GAP", 256)
    monkeypatch.setattr(state, "FAULT_IN_BLOCK", 32)
    for path in paths:
        monkeypatch.setattr(chrome, "ESTIMATE_AFTER", 1 << 40)  # never sized ahead
        grown = chrome.load(path)
        monkeypatch.setattr(chrome, "ESTIMATE_AFTER", 2048)
        monkeypatch.setattr(_Columns, "reserve", counting)
        ahead = chrome.load(path)
        monkeypatch.setattr(_Columns, "reserve", reserve)
        diffs = trace_differences(ahead, grown)
        assert not diffs, f"{path}: {diffs[:5]}"
    assert sized >= 5
