"""The nsys reader's work split between the loading thread and the reader threads (issue 29 item 3): the pure part
of decoding kernel chunks runs on the reader threads, table bounds are found without reading every page, and the
model is the same whichever thread did the work."""

from __future__ import annotations

import shutil
import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest

from gputop_trace.parsers.nsys import columns as nsys_columns
from gputop_trace.parsers.nsys import loader as nsys
from gputop_trace.parsers.nsys.columns import ColumnReader
from gputop_trace.parsers.nsys.schema import connect_readonly, row_count, row_span, rowid_bounds
from tests.conftest import CORPUS, require_corpus
from tests.trace_compare import trace_differences

NSYS = CORPUS / "nsys"
FILES = sorted(p.name for p in NSYS.glob("*.sqlite")) if NSYS.is_dir() else []


def _table(path: Path, rows: int, *, delete_every: int = 0) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (a INTEGER, b INTEGER)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, i * 7) for i in range(rows)])
    if delete_every:
        conn.execute("DELETE FROM t WHERE rowid % ? = 0", (delete_every,))
    conn.commit()
    conn.close()


@pytest.mark.parametrize("workers", [1, 2])
def test_prepare_runs_on_the_reader_threads_and_decode_here_in_order(tmp_path: Path, workers: int) -> None:
    path = tmp_path / "t.sqlite"
    _table(path, 1000, delete_every=7)
    here = threading.get_ident()
    prepared_on: set[int] = set()

    def prepare(cols: list[np.ndarray]) -> tuple[list[int], list[int]]:
        prepared_on.add(threading.get_ident())
        return cols[0].tolist(), (cols[1] * 2).tolist()

    decoded_on: set[int] = set()

    def decode(p: tuple[list[int], list[int]]) -> tuple[list[int], list[int]]:
        decoded_on.add(threading.get_ident())
        return p

    ro = connect_readonly(str(path))
    reader = ColumnReader(str(path), ro, workers=workers, chunk_rows=64)
    try:
        parts = reader.read_prepared("t", ["a", "b"], prepare, decode)
        plain = reader.read_decoded("t", ["a", "b"], lambda cols: (cols[0].tolist(), (cols[1] * 2).tolist()))
    finally:
        reader.close()
        ro.close()
    kept = [i for i in range(1000) if (i + 1) % 7]
    assert [x for p in parts for x in p[0]] == kept
    assert [x for p in parts for x in p[1]] == [i * 14 for i in kept]
    assert parts == plain and len(parts) == 16  # 1,000 rowids in chunks of 64
    assert decoded_on == {here}
    assert (here in prepared_on) == (workers == 1)  # two workers: every chunk prepared on a reader thread


def test_rowid_bounds_and_row_span_without_reading_every_page(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    _table(path, 500, delete_every=10)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE empty (a INTEGER)")
    conn.execute("CREATE TABLE nr (a INTEGER PRIMARY KEY, b INTEGER) WITHOUT ROWID")
    conn.executemany("INSERT INTO nr VALUES (?, ?)", [(i * 3, i) for i in range(40)])
    conn.commit()
    assert rowid_bounds(conn, "t") == (1, 499)  # rowid 500 was deleted
    assert rowid_bounds(conn, "empty") == (None, None)
    assert row_span(conn, "t") == 499 >= row_count(conn, "t") == 450  # an upper bound where rowids have gaps
    assert row_span(conn, "empty") == 0 and row_span(conn, None) == 0
    assert row_span(conn, "nr") == 40  # no rowids: counted
    conn.close()


def test_progress_total_is_reached_on_an_export_with_rowid_gaps(tmp_path: Path) -> None:
    require_corpus()  # skips on a machine without the corpus, fails in CI (GPUTOP_REQUIRE_CORPUS=1)
    src = NSYS / "GindaChen__nsys-ai__h100_2gpu_1s.sqlite"
    path = tmp_path / "gaps.sqlite"
    shutil.copy(src, path)
    conn = sqlite3.connect(path)
    before = conn.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    conn.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 3 = 0")
    conn.commit()
    conn.close()
    seen: list[tuple[int, int]] = []
    t = nsys.load(str(path), progress=lambda done, total, n: seen.append((done, total)))
    assert t.meta.properties["rows"]["CUPTI_ACTIVITY_KIND_KERNEL"] == before - before // 3
    total = seen[-1][1]
    assert seen[-1][0] == total and all(done <= total for done, _ in seen)  # never past 100 %


@pytest.mark.corpus
@pytest.mark.parametrize("name", FILES)
def test_every_export_gives_the_same_model_whichever_thread_prepares_its_chunks(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks of 64 rows prepared on the loading thread (one worker) and on two and six reader threads, and their
    launches linked on the loading thread and on one and five more."""
    path = str(NSYS / name)
    monkeypatch.setattr(nsys_columns, "CHUNK_ROWS", 64)
    monkeypatch.setattr(nsys_columns, "WORKERS", 1)
    monkeypatch.setattr(nsys, "LINK_WORKERS", 1)
    here = nsys.load(path)
    for workers in (2, 6):  # six: as many as a machine of many cores gets (more threads than chunks ahead here)
        monkeypatch.setattr(nsys_columns, "WORKERS", workers)
        monkeypatch.setattr(nsys, "LINK_WORKERS", workers - 1)  # GPU batches linked to their calls on threads
        threads = nsys.load(path)
        assert not trace_differences(threads, here), trace_differences(threads, here)[:8]
        assert threads.meta.properties == here.meta.properties
        assert threads.meta.warnings == here.meta.warnings


@pytest.mark.parametrize("shape", ["dense", "gaps", "two-processes", "repeated", "one"])
def test_launch_lookup_finds_what_a_binary_search_finds(shape: str) -> None:
    from gputop_trace.parsers.nsys.loader import _SortedKeys

    rng = np.random.default_rng(3)
    corr = np.sort(rng.choice(np.arange(1, 50_000), size=20_000, replace=False)).astype(np.int64)
    keys = {
        "dense": np.arange(7, 20_007, dtype=np.int64),
        "gaps": corr,
        "two-processes": np.concatenate([corr, (1 << 32) | corr]),
        "repeated": np.sort(np.concatenate([corr, corr[::5]])),
        "one": np.array([5], dtype=np.int64),
    }[shape]
    lookup = _SortedKeys(keys)
    assert (lookup.table is not None) == (shape in ("dense", "gaps", "one"))  # the table where it is small
    want = np.concatenate([keys, rng.integers(-5, 60_000, size=5_000), [(1 << 32) | 9, -(2**62), 2**62]])
    hit, pos = lookup.find(want.astype(np.int64))
    expect = np.searchsorted(keys, want)
    expect_hit = expect < keys.shape[0]
    expect_hit[expect_hit] = keys[expect[expect_hit]] == want[expect_hit]
    assert np.array_equal(hit, expect_hit) and hit[: keys.shape[0]].all()
    assert np.array_equal(pos[hit], expect[expect_hit])  # the first of repeated keys, as searchsorted's
