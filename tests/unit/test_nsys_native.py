"""The compiled integer reader of nsys exports (``parsers/nsys/_sqlite_ints.c``, optional) gives exactly the arrays
and the model of the text path (``group_concat`` parsed by numpy, the reference and the fallback): on every corpus
export, and on synthetic tables whose cells are NULL, REAL, TEXT or BLOB where integers belong, with rowid gaps,
sparse rowids and a WHERE condition; and the compiled path is really the one that ran."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gputop_trace.model.native import PURE_PYTHON_ENV
from gputop_trace.parsers.nsys import loader as nsys
from gputop_trace.parsers.nsys import native_ints
from gputop_trace.parsers.nsys.columns import ColumnReader
from gputop_trace.parsers.nsys.schema import connect_readonly
from tests.conftest import CORPUS, require_compiled
from tests.trace_compare import trace_differences

require_compiled(native_ints.available(), "the compiled nsys reader (_sqlite_ints)", module=True)

NSYS = CORPUS / "nsys"
FILES = sorted(p.name for p in NSYS.glob("*.sqlite")) if NSYS.is_dir() else []


def _read(
    path: Path, exprs: list[str], where: str, *, native: bool, chunk_rows: int, workers: int
) -> tuple[list[list[int]], list[str]]:
    """The columns read, and the tables read row by row."""
    ro = connect_readonly(str(path))
    try:
        reader = ColumnReader(str(path), ro, workers=workers, chunk_rows=chunk_rows)
        reader._native = native
        try:
            arrays = reader.read("t", exprs, where=where)
        finally:
            reader.close()
        return [a.tolist() for a in arrays], sorted(set(reader.slow_tables))
    finally:
        ro.close()


def _table(path: Path, odd: dict[int, object], *, sparse: bool = True) -> None:
    """Table ``t`` (a, b, c) of random int64 values, with rowid gaps and the cells ``odd`` (rowid → value of b);
    ``sparse``: and one rowid far beyond the others (the chunks then follow the rows, not fixed rowid steps)."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (a INTEGER, b INTEGER, c INTEGER)")
    rng = np.random.default_rng(7)
    rows = [(int(x), int(y), int(z)) for x, y, z in rng.integers(-(2**62), 2**62, size=(3000, 3))]
    conn.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
    for rowid, value in odd.items():
        conn.execute("UPDATE t SET b = ? WHERE rowid = ?", (value, rowid))
    conn.execute("DELETE FROM t WHERE rowid % 89 = 0")
    if sparse:
        conn.execute("INSERT INTO t (rowid, a, b, c) VALUES (?, 5, 6, 7)", (2**62,))  # an edited file's rowid
    conn.commit()
    conn.close()


@pytest.mark.parametrize(
    ("odd", "falls_back"),
    [({}, False), ({10: None}, True), ({700: 8000.5}, True), ({2500: "123"}, False), ({1500: "abc"}, True),
     ({40: b"\x01\x02"}, True), ({5: 1.0, 2999: None}, True)],
    ids=["integers", "null", "real", "text-number", "text", "blob", "mixed"],
)  # fmt: skip
def test_compiled_and_text_paths_read_the_same_arrays(tmp_path: Path, odd: dict[int, object], falls_back: bool) -> None:
    # (an INTEGER column stores the text '123' and the real 1.0 as integers: SQLite's type affinity)
    exprs = ["a", 'ifnull("b", 0)', "c >> 3", "rowid", "(a & 65535) | ((c & 255) << 16)"]
    before = dict(native_ints.stats)
    for sparse in (True, False):  # dense rowids: whole columns are written in place (ColumnReader._read_whole)
        path = tmp_path / f"cols{sparse}.sqlite"
        _table(path, odd, sparse=sparse)
        for chunk_rows, workers in ((1 << 20, 1), (37, 2), (1000, 2)):
            for where in ("", "a > 0"):
                text = _read(path, exprs, where, native=False, chunk_rows=chunk_rows, workers=workers)
                compiled = _read(path, exprs, where, native=True, chunk_rows=chunk_rows, workers=workers)
                assert compiled == text
    assert native_ints.stats["chunks"] > before["chunks"]
    if falls_back:  # a chunk holding a cell that is no INTEGER went back to the text path
        assert native_ints.stats["fallback"] > before["fallback"]


def test_the_compiled_reader_refuses_what_it_cannot_take_whole(tmp_path: Path) -> None:
    path = tmp_path / "cols.sqlite"
    _table(path, {3: 2.5})
    reader = native_ints.NativeReader.open(str(path))
    assert reader is not None
    sql = "SELECT a, b FROM t WHERE rowid >= ?1 AND rowid <= ?2"
    got = reader.read(sql, 1, 2, 2, 2)
    assert isinstance(got, list) and len(got) == 2 and got[0].shape == (2,)
    assert reader.read(sql, 1, 3, 2, 3) is None  # a REAL in b
    assert reader.read(sql, 4, 100, 2, 10) is None  # more rows than the buffer holds
    assert reader.read("SELECT nothing FROM t WHERE rowid >= ?1 AND rowid <= ?2", 1, 2, 1, 2) == native_ints.FAILED
    assert native_ints.NativeReader.open(str(tmp_path / "missing.sqlite")) is None


@pytest.mark.corpus
@pytest.mark.parametrize("name", FILES)
def test_every_export_gives_the_same_model_on_both_paths(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(NSYS / name)
    monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    text = nsys.load(path)
    monkeypatch.delenv(PURE_PYTHON_ENV)
    before = native_ints.stats["chunks"]
    compiled = nsys.load(path)
    assert not trace_differences(compiled, text), trace_differences(compiled, text)[:8]
    assert compiled.meta.properties == text.meta.properties
    assert compiled.meta.warnings == text.meta.warnings
    if compiled.meta.properties.get("rows"):
        assert native_ints.stats["chunks"] > before  # the compiled reader really read this export


def test_whole_columns_are_written_in_place_and_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "dense.sqlite"
    _table(path, {77: 2.5}, sparse=False)  # one chunk goes the text way into its slot
    calls: list[int] = []
    into = ColumnReader._chunk_into

    def spy(self: ColumnReader, *a: Any) -> int:
        n = into(self, *a)
        calls.append(n)
        return n

    monkeypatch.setattr(ColumnReader, "_chunk_into", spy)
    exprs = ["a", "c", "rowid"]
    for where in ("", "a > 0", "a > 0 AND a < 0"):
        text = _read(path, exprs, where, native=False, chunk_rows=100, workers=2)
        assert not calls
        compiled = _read(path, exprs, where, native=True, chunk_rows=100, workers=2)
        assert compiled == text and len(calls) == 30  # 3,000 rowids in 30 slots of 100
        calls.clear()
