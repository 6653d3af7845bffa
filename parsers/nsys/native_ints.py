"""The compiled integer reader of nsys exports (``_sqlite_ints.c``), wrapped: one read-only connection per
worker thread, each chunk's integer columns written by C straight into one int64 buffer.

Optional like the other compiled parts: where the module is not built, or the SQLite functions of Python's own
``sqlite3`` library cannot be found in it (:func:`available`), :mod:`.columns` keeps its text path. Imports no
other part of the loader.
"""

from __future__ import annotations

import functools
import os
import threading
import urllib.parse
from types import ModuleType
from typing import Any, Final

import numpy as np

from gputop_trace.model.arrays import I64

_mod: ModuleType | None
try:
    from gputop_trace.parsers.nsys import _sqlite_ints as _mod  # type: ignore[attr-defined,no-redef,unused-ignore]
except ImportError:  # pragma: no cover - the build without a C compiler
    _mod = None

#: bytes of the file each connection reads through a memory map (as :func:`.schema.connect_readonly`)
MMAP_BYTES: Final = 1 << 34
#: what :meth:`NativeReader.read` returns when SQLite failed (the caller stops using the compiled reader)
FAILED: Final = "failed"

#: chunks the compiled reader took whole, and chunks it handed back to the text path (tests check the first ran)
stats: dict[str, int] = {"chunks": 0, "fallback": 0}
_stats_lock = threading.Lock()


@functools.cache
def available() -> bool:
    """Whether the compiled reader is built and bound to the SQLite library Python's ``sqlite3`` uses."""
    if _mod is None:
        return False
    try:
        import _sqlite3

        return bool(_mod.bind(str(_sqlite3.__file__)))
    except (ImportError, AttributeError, TypeError):
        return False


def _uri(path: str, *, immutable: bool) -> str:
    quoted = urllib.parse.quote(os.path.abspath(path))
    return f"file:{quoted}?mode=ro" + ("&immutable=1" if immutable else "")


class NativeReader:
    """One read-only connection of the compiled reader (use it from one thread at a time)."""

    def __init__(self, handle: Any) -> None:
        self._handle: Any = handle

    @classmethod
    def open(cls, path: str) -> NativeReader | None:
        """A connection to ``path`` (``mode=ro``, else ``immutable`` as the text path's connection falls back to),
        or ``None`` when the reader is unavailable or SQLite cannot open the file."""
        if not available() or _mod is None:
            return None
        for immutable in (False, True):
            try:
                handle = _mod.open(_uri(path, immutable=immutable), MMAP_BYTES)
                probe = "SELECT count(*) FROM sqlite_master WHERE ?1 <= ?2"
                _mod.read(handle, probe, 0, 0, np.empty((1, 1), dtype=np.int64))
                return cls(handle)
            except RuntimeError:
                continue
        return None

    def read(self, sql: str, lo: int, hi: int, n_expr: int, capacity: int) -> list[I64] | str | None:
        """The ``n_expr`` int64 columns of ``sql`` run with ``?1 = lo``, ``?2 = hi`` (at most ``capacity`` rows);
        ``None`` when a value is not an INTEGER or there are more rows; :data:`FAILED` on an SQLite error."""
        assert _mod is not None
        out = np.empty((n_expr, max(capacity, 1)), dtype=np.int64)
        try:
            n = int(_mod.read(self._handle, sql, lo, hi, out))
        except RuntimeError:
            return FAILED
        with _stats_lock:
            stats["fallback" if n < 0 else "chunks"] += 1
        if n < 0:
            return None
        if n < out.shape[1] // 2:  # few rows (a WHERE condition): don't keep the whole buffer alive
            out = np.ascontiguousarray(out[:, :n])
        return [out[i, :n] for i in range(n_expr)]

    def read_into(self, sql: str, lo: int, hi: int, out: I64, offset: int, room: int) -> int | str | None:
        """Like :meth:`read`, writing column ``i`` into ``out[i, offset : offset + room]`` (``out`` a C-contiguous
        int64 array of shape (expressions, n)); returns the rows written."""
        assert _mod is not None
        try:
            n = int(_mod.read(self._handle, sql, lo, hi, out, offset, room))
        except RuntimeError:
            return FAILED
        with _stats_lock:
            stats["fallback" if n < 0 else "chunks"] += 1
        return None if n < 0 else n

    def close(self) -> None:
        """Drop the connection (SQLite closes it when the handle is freed)."""
        self._handle = None
