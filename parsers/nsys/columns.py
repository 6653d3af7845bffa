"""Reading integer columns of an nsys export into numpy arrays, fast.

The ``sqlite3`` module builds one Python tuple per row (about 350 k rows/s for a kernel row here). Instead, each
chunk of rows is read with one aggregate query, ``SELECT count(*), group_concat(expr1), group_concat(expr2) ...
FROM table WHERE rowid BETWEEN ...``: SQLite formats the integers in C and numpy parses each column's text in
one call (``np.fromstring(..., sep=",")``), so no Python object exists per row. Chunks are read by two threads
on their own read-only connections (SQLite releases the GIL while it scans).

Expressions must yield one non-NULL integer per row (wrap nullable columns in ``ifnull``); ``group_concat``
skips NULLs, so a column with an unexpected NULL, a REAL or a TEXT value comes back short or unparsable. Every
array is checked against the chunk's row count, and on any mismatch the table is read again the slow, safe way
(``CAST(... AS INTEGER)`` per row). Tables without a rowid take the safe way directly. Because a NULL cannot slip
through unnoticed, the fast path drops the ``ifnull(<column>, 0)`` guards (:func:`lean`): columns that hold NULL
in practice are guarded with another default, which stays.

Where the optional compiled module ``_sqlite_ints`` (``_sqlite_ints.c``) is built, a chunk is first read by it: a
plain ``SELECT expr1, expr2 ... WHERE rowid BETWEEN ...`` stepped in C on the worker's own connection (through
the same SQLite library Python uses), every value written straight into an int64 buffer, the GIL released while
SQLite steps. That skips SQLite formatting every integer as text and numpy parsing it back, which took about two
thirds of the worker threads' CPU time. It takes a chunk only when every value is an SQLite INTEGER; a chunk with
any other value (NULL, REAL, TEXT) is read again the text way above, which decides what such values mean, so both
ways give the same arrays (tests/unit/test_nsys_native.py). ``GPUTOP_PURE_PYTHON=1`` turns it off.
"""

from __future__ import annotations

import itertools
import os
import re
import sqlite3
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np

from gputop_trace.model.arrays import I64
from gputop_trace.model.native import pure_python_forced
from gputop_trace.parsers.cores import usable_cores
from gputop_trace.parsers.nsys import native_ints
from gputop_trace.parsers.nsys.schema import TextDecoder, as_text, connect_readonly, rowid_bounds

T = TypeVar("T")
P = TypeVar("P")

#: Rows read per aggregate query.
CHUNK_ROWS = 1 << 16
#: Chunks read ahead of the one being decoded, per worker thread.
CHUNKS_AHEAD = 4
#: Rowid spans up to the file's size in bytes / this are read in fixed rowid steps without counting their rows.
SPAN_BYTES_PER_ROWID = 32
#: Threads reading chunks (each on its own connection): two where there are two cores (the loading thread's own
#: work is small while a large table is read: the kernels' registration took 0.4 s of the 5.5 s the reader threads
#: took on nsys_10m.sqlite's 10 M kernels), up to six where the process may use more (the reader threads, SQLite's
#: record decoding and each chunk's numpy preparation, bound the kernel and runtime phases there).
WORKERS = min(usable_cores(), max(2, min(6, usable_cores() - 1)))


def _same(cols: list[I64]) -> list[I64]:
    return cols


_ZERO_GUARD = re.compile(r'ifnull\(("[A-Za-z_][A-Za-z0-9_]*"), 0\)')


def lean(expr: str) -> str:
    """``expr`` without its ``ifnull("column", 0)`` guards (a NULL then shows up as a short chunk)."""
    return _ZERO_GUARD.sub(r"\1", expr)


class _MismatchError(Exception):
    """A chunk's column text did not parse into exactly one integer per row."""


def _parse_ints(text: bytes | None, n: int) -> I64:
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if text is None:
        raise _MismatchError
    try:
        # numpy ≥ 2.x raises ValueError on text that is not an integer ("8000.5", "abc"); older numpy stops there
        # with a DeprecationWarning (an exception only where warnings are errors) and the length check catches it.
        # (No warnings.catch_warnings here: it is not thread-safe, and this runs in worker threads.)
        a = np.fromstring(text, dtype=np.int64, sep=",")
    except (ValueError, DeprecationWarning):
        raise _MismatchError from None
    if a.shape[0] != n:
        raise _MismatchError
    return a


def file_bytes(path: str) -> int:
    """The size of the file at ``path`` in bytes (0 when it cannot be read)."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


class ColumnReader:
    """Reads integer expressions over one table of one export; see the module docstring.

    ``on_rows(n)`` is called with the number of rows read after each chunk (it may raise to cancel).
    """

    def __init__(
        self,
        path: str,
        conn: sqlite3.Connection,
        *,
        workers: int | None = None,
        chunk_rows: int | None = None,
        on_rows: Callable[[int], None] | None = None,
    ) -> None:
        self.path = path
        self.conn = conn
        self.workers = WORKERS if workers is None else workers
        self.chunk_rows = CHUNK_ROWS if chunk_rows is None else chunk_rows
        self.on_rows = on_rows
        self.slow_tables: list[str] = []
        #: table → column → rows whose value is not an integer (REAL, TEXT, BLOB), found when a table is read the
        #: slow way; such values were cast (``8000.5`` → 8000, ``'abc'`` → 0)
        self.not_integers: dict[str, dict[str, int]] = {}
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        #: whether chunks go to the compiled reader first (turned off for good after an SQLite error in it)
        self._native = native_ints.available() and not pure_python_forced()
        self._natives: list[native_ints.NativeReader] = []
        #: aggregate SQL of the text path → the plain SELECT of the same rows for the compiled reader
        self._plain_sql: dict[str, str] = {}

    def close(self) -> None:
        """Close the worker connections."""
        for c in self._conns:
            c.close()
        self._conns.clear()
        for r in self._natives:
            r.close()
        self._natives.clear()

    def _thread_conn(self) -> sqlite3.Connection:
        c: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if c is None:
            c = connect_readonly(self.path, TextDecoder())
            c.text_factory = bytes  # the aggregates are ASCII digits: skip decoding them into str
            self._local.conn = c
            with self._lock:
                self._conns.append(c)
        return c

    def read(self, table: str, exprs: Sequence[str], *, where: str = "") -> list[I64]:
        """One int64 array per expression, rows in rowid order, restricted by the SQL condition ``where``."""
        try:
            whole = self._read_whole(table, exprs, where)
        except _MismatchError:
            self.slow_tables.append(table)
            return self._read_slow(table, exprs, where, order_by_rowid=True)
        if whole is not None:
            return whole
        parts = self.read_decoded(table, exprs, lambda cols: cols, where=where)
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return [np.zeros(0, dtype=np.int64) for _ in exprs]
        return [np.concatenate([p[i] for p in parts]) for i in range(len(exprs))]

    def read_decoded(
        self, table: str, exprs: Sequence[str], decode: Callable[[list[I64]], T], *, where: str = ""
    ) -> list[T]:
        """``decode`` applied to every chunk of rows (its int64 columns, one per expression), in rowid order.

        Chunks are fetched by the worker threads ahead of the one being decoded, so decoding (numpy, in this
        thread) overlaps the SQL scans, and decoding works on chunk-sized arrays. When a chunk turns out not to
        parse, the chunks decoded so far are dropped and the whole table is decoded once from the safe reader
        (``decode`` must not count anything twice: lane and name registration are idempotent).
        """
        return self.read_prepared(table, exprs, _same, decode, where=where)

    def read_prepared(
        self,
        table: str,
        exprs: Sequence[str],
        prepare: Callable[[list[I64]], P],
        decode: Callable[[P], T],
        *,
        where: str = "",
        restart: Callable[[], None] | None = None,
    ) -> list[T]:
        """As :meth:`read_decoded`, with ``prepare`` applied to each chunk first on the worker thread that read it:
        the pure part of decoding (numpy on the chunk's own arrays; no shared state), so that this thread is left
        only the part that registers names and lanes. ``restart()`` is called before the table is decoded again
        from the safe reader (after chunks were decoded)."""
        try:
            bounds = rowid_bounds(self.conn, table)
        except sqlite3.OperationalError:
            return [decode(prepare(self._read_slow(table, exprs, where, order_by_rowid=False)))]
        lo, hi = bounds
        if lo is None or hi is None:
            return []
        ranges = self._rowid_ranges(table, lo, hi)
        sql = self._chunk_sql(table, exprs, where)
        try:
            return [decode(part) for part in self._run_chunks(sql, ranges, len(exprs), prepare)]
        except _MismatchError:
            self.slow_tables.append(table)
            if restart is not None:
                restart()
            return [decode(prepare(self._read_slow(table, exprs, where, order_by_rowid=True)))]

    def _chunk_sql(self, table: str, exprs: Sequence[str], where: str) -> str:
        """The text path's aggregate query of one chunk (``?`` = first and last rowid); the compiled reader's plain
        query of the same rows is recorded for it in ``_plain_sql``."""
        sql = (
            "SELECT count(*), "
            + ", ".join(f"group_concat({lean(e)})" for e in exprs)
            + f' FROM "{table}" WHERE rowid >= ? AND rowid <= ?'
            + (f" AND ({where})" if where else "")
        )
        self._plain_sql[sql] = (
            "SELECT "
            + ", ".join(lean(e) for e in exprs)
            + f' FROM "{table}" WHERE rowid >= ?1 AND rowid <= ?2'
            + (f" AND ({where})" if where else "")
        )
        return sql

    def _read_whole(self, table: str, exprs: Sequence[str], where: str) -> list[I64] | None:
        """The columns of the whole table written by the compiled reader straight into one array per expression
        (each chunk into its own slot, on the worker threads), so that no chunk is copied again into the whole;
        ``None`` where that cannot be done (no compiled reader, no rowid, an empty table, or rowid ranges wider
        than a chunk: the caller reads chunks and concatenates them). A chunk the compiled reader does not take
        is read the text way into its slot (:class:`_MismatchError` when that fails too)."""
        if not self._native:
            return None
        try:
            lo, hi = rowid_bounds(self.conn, table)
        except sqlite3.OperationalError:
            return None
        if lo is None or hi is None:
            return None
        ranges = self._rowid_ranges(table, lo, hi)
        sizes = [b - a + 1 for a, b in ranges]
        if max(sizes) > self.chunk_rows:
            return None
        sql = self._chunk_sql(table, exprs, where)
        ends = list(itertools.accumulate(sizes))
        offsets = [0, *ends[:-1]]
        out = np.empty((len(exprs), ends[-1]), dtype=np.int64)
        jobs = [(sql, a, b, len(exprs), out, off, n) for (a, b), off, n in zip(ranges, offsets, sizes, strict=True)]
        got: list[int] = []
        if self.workers <= 1 or len(jobs) == 1:
            for job in jobs:
                got.append(self._chunk_into(*job))
                self._report_rows(got[-1])
        else:
            pool = ThreadPoolExecutor(max_workers=self.workers)
            try:
                for fut in [pool.submit(self._chunk_into, *job) for job in jobs]:
                    got.append(fut.result())
                    self._report_rows(got[-1])
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
        if got == sizes:  # every rowid of every range holds a row (nsys writes rowids 1..n)
            return [out[i] for i in range(len(exprs))]
        keep = np.zeros(ends[-1], dtype=bool)
        for off, n in zip(offsets, got, strict=True):
            keep[off : off + n] = True
        return [out[i][keep] for i in range(len(exprs))]

    def _chunk_into(self, sql: str, lo: int, hi: int, n_expr: int, out: I64, offset: int, room: int) -> int:
        """Read one chunk into ``out[:, offset : offset + room]``; returns its rows."""
        reader = self._native_reader()
        plain = self._plain_sql[sql]
        if reader is not None:
            n = reader.read_into(plain, lo, hi, out, offset, room)
            if isinstance(n, int):
                return n
            if n == native_ints.FAILED:
                self._native = False
        part = self._text_chunk(sql, lo, hi, n_expr, None)
        n = int(part[0].shape[0])
        for i, column in enumerate(part):
            out[i, offset : offset + n] = column
        return n

    def _report_rows(self, n: int) -> None:
        if self.on_rows is not None:
            self.on_rows(n)

    def _rowid_ranges(self, table: str, lo: int, hi: int) -> list[tuple[int, int]]:
        """Inclusive rowid ranges of about ``chunk_rows`` rows each, covering ``lo..hi`` (inclusive: a rowid of
        2^63 - 1 has no successor to bind).

        nsys writes rowids 1..n, so fixed steps are right. A damaged or edited file can hold a rowid far beyond
        its row count (one bit flipped: 2^62): stepping through that span would make billions of empty ranges
        (the long fuzz run was OOM-killed by one), so sparse rowids are cut at every ``chunk_rows``-th real row.
        Only a span wider than :data:`SPAN_BYTES_PER_ROWID` per byte of the file is counted for that (counting
        reads every page of the table: 0.5-1 s for each large table of a 1.9 GB export); a narrower one makes at
        most that many ranges, dense or not."""
        step = self.chunk_rows
        n_ranges = (hi - lo) // step + 1
        if n_ranges > 64 and (hi - lo + 1) * SPAN_BYTES_PER_ROWID > file_bytes(self.path):
            count = int(self.conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])
            if n_ranges > 2 * (count // step + 1):
                rows = self.conn.execute(
                    f'SELECT r FROM (SELECT rowid AS r, row_number() OVER (ORDER BY rowid) - 1 AS i FROM "{table}") '
                    "WHERE i % ? = 0",
                    (step,),
                )
                starts = [int(r[0]) for r in rows]
                return list(zip(starts, [*(b - 1 for b in starts[1:]), hi], strict=True))
        return [(a, min(a + step - 1, hi)) for a in range(lo, hi + 1, step)]

    def _chunk(self, sql: str, lo: int, hi: int, n_expr: int, conn: sqlite3.Connection | None) -> list[I64]:
        """One chunk's columns: the compiled reader's when it takes the chunk whole, else the text path's on
        ``conn`` (``None``: this worker thread's own connection)."""
        native = self._native_chunk(sql, lo, hi, n_expr)
        if native is not None:
            return native
        return self._text_chunk(sql, lo, hi, n_expr, conn)

    def _text_chunk(self, sql: str, lo: int, hi: int, n_expr: int, conn: sqlite3.Connection | None) -> list[I64]:
        """One chunk's columns from the aggregate text query (raises :class:`_MismatchError`)."""
        if conn is None:
            conn = self._thread_conn()
        factory = conn.text_factory
        conn.text_factory = bytes
        try:
            row = conn.execute(sql, (lo, hi)).fetchone()
        finally:
            conn.text_factory = factory
        n = int(row[0])
        return [_parse_ints(row[1 + i], n) for i in range(n_expr)]

    def _native_reader(self) -> native_ints.NativeReader | None:
        """This thread's connection of the compiled reader (``None``: not built, turned off, or unable to open)."""
        if not self._native:
            return None
        reader: native_ints.NativeReader | None = getattr(self._local, "native", None)
        if reader is None:
            reader = native_ints.NativeReader.open(self.path)
            if reader is None:
                self._native = False
                return None
            self._local.native = reader
            with self._lock:
                self._natives.append(reader)
        return reader

    def _native_chunk(self, sql: str, lo: int, hi: int, n_expr: int) -> list[I64] | None:
        """The chunk read by the compiled reader on this thread's own connection, or ``None`` (not built, turned
        off, or a value that is not an INTEGER: the caller reads the chunk the text way)."""
        reader = self._native_reader()
        plain = self._plain_sql.get(sql)
        if reader is None or plain is None:
            return None
        got = reader.read(plain, lo, hi, n_expr, min(hi - lo + 1, self.chunk_rows))
        if got is native_ints.FAILED:
            self._native = False  # an SQLite error: the text path reads (and reports) it from here on
            return None
        return got if isinstance(got, list) else None

    def _chunk_in_thread(
        self,
        sql: str,
        lo: int,
        hi: int,
        n_expr: int,
        prepare: Callable[[list[I64]], P],
        conn: sqlite3.Connection | None,
    ) -> tuple[int, P | None]:
        """(rows, the prepared chunk); ``None`` for a chunk without rows."""
        part = self._chunk(sql, lo, hi, n_expr, conn)
        n = int(part[0].shape[0])
        return n, (prepare(part) if n else None)

    def _run_chunks(
        self, sql: str, ranges: list[tuple[int, int]], n_expr: int, prepare: Callable[[list[I64]], P]
    ) -> Iterator[P]:
        """Prepared chunks with rows, in order; with workers, at most :data:`CHUNKS_AHEAD` per worker are read (and
        prepared) ahead of the one handed out (the compiled reader outruns the decoding: queued all at once, every
        chunk of a table was in memory)."""
        if self.workers <= 1 or len(ranges) == 1:
            for lo, hi in ranges:
                n, part = self._chunk_in_thread(sql, lo, hi, n_expr, prepare, self.conn)
                self._report_rows(n)
                if part is not None:
                    yield part
            return
        pool = ThreadPoolExecutor(max_workers=self.workers)
        try:
            todo = iter(ranges)
            futures = deque(
                pool.submit(self._chunk_in_thread, sql, lo, hi, n_expr, prepare, None)
                for lo, hi in itertools.islice(todo, CHUNKS_AHEAD * self.workers)
            )
            while futures:
                n, part = futures.popleft().result()
                nxt = next(todo, None)
                if nxt is not None:
                    futures.append(pool.submit(self._chunk_in_thread, sql, nxt[0], nxt[1], n_expr, prepare, None))
                self._report_rows(n)
                if part is not None:
                    yield part
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _count_not_integers(self, table: str, exprs: Sequence[str], where: str) -> None:
        """Record how many rows hold a value that is not an integer in the columns ``exprs`` read."""
        try:
            names = [str(r[1]) for r in self.conn.execute(f'PRAGMA table_info("{table}")')]
        except sqlite3.Error:
            return
        text = " ".join(exprs)
        used = [n for n in names if re.search(rf'(?<![\w"]){re.escape(n)}(?![\w"])|"{re.escape(n)}"', text)]
        if not used:
            return
        sums = ", ".join(f"""sum(typeof("{n}") NOT IN ('integer', 'null'))""" for n in used)
        try:
            row = self.conn.execute(f'SELECT {sums} FROM "{table}"' + (f" WHERE {where}" if where else "")).fetchone()
        except sqlite3.Error:
            return
        bad = {n: int(c) for n, c in zip(used, row, strict=True) if c}
        if bad:
            found = self.not_integers.setdefault(table, {})
            for n, c in bad.items():
                found[n] = max(found.get(n, 0), c)

    def _read_slow(self, table: str, exprs: Sequence[str], where: str, *, order_by_rowid: bool) -> list[I64]:
        self._count_not_integers(table, exprs, where)
        cols = ", ".join(f"ifnull(CAST(({e}) AS INTEGER), 0)" for e in exprs)
        sql = f'SELECT {cols} FROM "{table}"' + (f" WHERE {where}" if where else "")
        if order_by_rowid:
            sql += " ORDER BY rowid"
        cur = self.conn.execute(sql)
        chunks: list[I64] = []
        while True:
            rows = cur.fetchmany(65536)
            if not rows:
                break
            chunks.append(np.array(rows, dtype=np.int64).reshape(len(rows), len(exprs)))
            if self.on_rows is not None:
                self.on_rows(len(rows))
        if not chunks:
            return [np.zeros(0, dtype=np.int64) for _ in exprs]
        allrows = np.concatenate(chunks)
        return [np.ascontiguousarray(allrows[:, i]) for i in range(len(exprs))]


def read_text_by_rowid(conn: sqlite3.Connection, table: str, column: str, where: str = "") -> tuple[I64, list[str]]:
    """(rowids, texts) of the rows whose ``column`` is not NULL (texts decoded with invalid bytes replaced)."""
    cond = f'"{column}" IS NOT NULL' + (f" AND ({where})" if where else "")
    rows = conn.execute(f'SELECT rowid, "{column}" FROM "{table}" WHERE {cond} ORDER BY rowid').fetchall()
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    return ids, [as_text(r[1]) for r in rows]
