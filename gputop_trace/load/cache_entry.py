"""The on-disk form of a cache entry: every numpy column of a :class:`~gputop_trace.model.trace.Trace` as a
``.npy`` file (memory-mapped read-only on reopen), names as one UTF-8 blob plus offsets, lanes and metadata as
exact JSON, and ``header.json`` with each column's dtype, shape, size (bytes) and CRC-32. Writing is atomic
(a private temporary folder renamed into place); reading validates everything before a trace is returned.
See :mod:`gputop_trace.load.cache` for when an entry is used."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import re
import shutil
import stat
import tempfile
import time
import zlib
from collections.abc import Callable
from decimal import Decimal
from enum import IntEnum
from pathlib import Path
from typing import Any

import numpy as np

from gputop_trace.load.cache_keys import FORMAT_VERSION, SourceKey
from gputop_trace.model.kinds import CopyKind, FlowKind, Kind, LaneKind, MemKind
from gputop_trace.model.tables import (
    EVENT_COLUMNS,
    CollectiveTable,
    CopyTable,
    CounterSeries,
    FlowTable,
    GpuInfo,
    KernelTable,
    Lane,
    MemoryTable,
    OpArgTable,
    TraceMeta,
)
from gputop_trace.model.trace import Trace

HEADER = "header.json"
TMP_PREFIX = ".tmp-"
STALE_TMP_SECONDS = 3600.0

_ENUMS: dict[str, type[IntEnum]] = {c.__name__: c for c in (Kind, LaneKind, CopyKind, MemKind, FlowKind)}
_COLUMN_NAME = re.compile(r"[A-Za-z0-9_]+(/[A-Za-z0-9_]+)?(\.[a-z0-9]+)+")
_SIDE_TABLES: dict[str, type[Any]] = {
    c.__name__: c for c in (KernelTable, CopyTable, CollectiveTable, FlowTable, OpArgTable, MemoryTable)
}
_DATACLASSES: dict[str, type[Any]] = {c.__name__: c for c in (Lane, GpuInfo, TraceMeta)}


def _crc32() -> Callable[[Any], int]:
    try:
        from isal import isal_zlib

        return isal_zlib.crc32  # type: ignore[no-any-return]
    except ImportError:  # pragma: no cover - depends on the environment
        return zlib.crc32


_CRC = _crc32()


class Uncacheable(Exception):  # noqa: N818 - a signal, not an error the user sees
    """The trace holds a value this format cannot store exactly (it is then simply not cached)."""


# --------------------------------------------------------------------------------------------------------
# exact JSON for lanes and metadata
# --------------------------------------------------------------------------------------------------------
def _enc(v: Any) -> Any:
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, IntEnum):
        if type(v).__name__ not in _ENUMS:
            raise Uncacheable(type(v).__name__)
        return {"$enum": type(v).__name__, "v": int(v)}
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else {"$float": repr(v)}
    if isinstance(v, tuple):
        return {"$tuple": [_enc(x) for x in v]}
    if isinstance(v, list):
        return [_enc(x) for x in v]
    if isinstance(v, dict):
        return {"$dict": [[_enc(k), _enc(x)] for k, x in v.items()]}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        name = type(v).__name__
        if name not in _DATACLASSES:
            raise Uncacheable(name)
        return {"$dc": name, "f": {f.name: _enc(getattr(v, f.name)) for f in dataclasses.fields(v)}}
    if isinstance(v, np.generic):
        return {"$np": v.dtype.str, "v": _enc(v.item())}
    if isinstance(v, Decimal):
        return {"$dec": str(v)}
    raise Uncacheable(type(v).__name__)


def _dec(v: Any) -> Any:
    if isinstance(v, list):
        return [_dec(x) for x in v]
    if not isinstance(v, dict):
        return v
    if "$tuple" in v:
        return tuple(_dec(x) for x in v["$tuple"])
    if "$dict" in v:
        return {_dec(k): _dec(x) for k, x in v["$dict"]}
    if "$enum" in v:
        return _ENUMS[v["$enum"]](v["v"])
    if "$float" in v:
        return float(v["$float"])
    if "$dc" in v:
        cls = _DATACLASSES[v["$dc"]]
        return cls(**{k: _dec(x) for k, x in v["f"].items()})
    if "$np" in v:
        return np.dtype(v["$np"]).type(_dec(v["v"]))
    if "$dec" in v:
        return Decimal(v["$dec"])
    raise ValueError(f"unknown tagged value {sorted(v)}")


# --------------------------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------------------------
class _Writer:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.columns: dict[str, dict[str, Any]] = {}

    def column(self, rel: str, a: np.ndarray[Any, Any]) -> str:
        a = np.ascontiguousarray(a)
        if a.dtype.hasobject:
            raise Uncacheable(f"object column {rel}")
        path = self.folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            np.save(f, a, allow_pickle=False)
            f.flush()
            os.fsync(f.fileno())
        self.columns[rel] = {
            "dtype": a.dtype.str,
            "shape": list(a.shape),
            "bytes": path.stat().st_size,
            "crc32": _CRC(a.data) if a.size else 0,
        }
        return rel


def _store_field(w: _Writer, name: str, v: Any) -> dict[str, Any]:
    """Write one field of the trace; returns how to read it back."""
    if isinstance(v, np.ndarray):
        return {"kind": "column", "column": w.column(f"{name}.npy", v)}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        fields = [f.name for f in dataclasses.fields(v)]
        if all(isinstance(getattr(v, f), np.ndarray) for f in fields):
            return {
                "kind": "table",
                "class": type(v).__name__,
                "columns": {f: w.column(f"{name}/{f}.npy", getattr(v, f)) for f in fields},
            }
        return {"kind": "json", "value": _enc(v)}
    if name == "names" or (isinstance(v, tuple) and v and all(isinstance(s, str) for s in v)):
        if not all(isinstance(s, str) for s in v):
            raise Uncacheable("names that are not strings")
        text = "".join(v)
        lengths = np.fromiter(map(len, v), dtype=np.int64, count=len(v))
        offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        blob = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
        return {
            "kind": "strings",
            "blob": w.column(f"{name}.utf8.npy", blob),
            "offsets": w.column(f"{name}.offsets.npy", offsets),
        }
    if isinstance(v, tuple) and v and all(isinstance(x, CounterSeries) for x in v):
        return _store_series(w, name, v)
    return {"kind": "json", "value": _enc(v)}


def _store_series(w: _Writer, name: str, series: tuple[Any, ...]) -> dict[str, Any]:
    """A tuple of :class:`CounterSeries`: array fields concatenated into one column each, the rest JSON."""
    fields = [f.name for f in dataclasses.fields(CounterSeries)]
    arrays = [f for f in fields if isinstance(getattr(series[0], f), np.ndarray)]
    lengths = [int(s.ts_ns.shape[0]) for s in series]
    cols = {}
    for f in arrays:
        parts = [getattr(s, f) for s in series]
        if any(p.shape != (n,) for p, n in zip(parts, lengths, strict=True)):
            raise Uncacheable("counter arrays of unequal length")
        if len({p.dtype.str for p in parts}) != 1:
            raise Uncacheable("counter arrays of mixed dtypes")
        cols[f] = w.column(f"{name}/{f}.npy", np.concatenate(parts))
    scalars = [{f: _enc(getattr(s, f)) for f in fields if f not in arrays} for s in series]
    return {"kind": "series", "columns": cols, "lengths": lengths, "scalars": scalars}


def save_trace(trace: Trace, folder: Path) -> None:
    """Store a trace in ``folder`` (replaced atomically) in the cache's layout, outside the cache
    (benchmark models, exports). Reopen it with :func:`open_trace`."""
    key = SourceKey(str(folder.resolve()), 0, 0, (), "saved")
    folder.parent.mkdir(parents=True, exist_ok=True)
    if folder.exists():
        remove_entry(folder)
    write_entry(trace, key, folder.parent, name=folder.name)


def open_trace(folder: Path) -> Trace:
    """A trace stored by :func:`save_trace`, memory-mapped and validated like a cache entry."""
    key = SourceKey(str(folder.resolve()), 0, 0, (), "saved")
    try:
        return read_entry(folder, key)
    except InvalidEntry as e:
        raise ValueError(f"{folder} does not hold a valid saved trace: {e}") from None


def write_entry(trace: Trace, key: SourceKey, root: Path, *, name: str = "") -> Path | None:
    """Write an entry atomically; returns its folder (the one another process wrote, if it won the race)."""
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    name = name or key.name
    tmp = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{name}-", dir=root))
    final = root / name
    try:
        w = _Writer(tmp)
        fields = {f.name: _store_field(w, f.name, getattr(trace, f.name)) for f in dataclasses.fields(Trace)}
        header = {
            "format": "gputop-trace cache",
            "format_version": FORMAT_VERSION,
            "source": key.as_json(),
            "n_events": len(trace),
            "fields": fields,
            "columns": w.columns,
            "created": time.time(),
        }
        with open(tmp / HEADER, "w", encoding="utf-8") as f:
            json.dump(header, f, allow_nan=False)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.rename(tmp, final)
        except OSError:
            if final.is_dir():  # another process finished first: keep its entry
                shutil.rmtree(tmp, ignore_errors=True)
                return final
            raise
        _fsync_dir(root)
        return final
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# --------------------------------------------------------------------------------------------------------
# reading and validating
# --------------------------------------------------------------------------------------------------------
class InvalidEntry(Exception):  # noqa: N818 - a signal
    """An entry that must not be trusted (with the reason)."""


def _open_column(folder: Path, rel: str, spec: dict[str, Any]) -> np.ndarray[Any, Any]:
    if not _COLUMN_NAME.fullmatch(rel):
        raise InvalidEntry(f"bad column name {rel!r}")
    path = folder / rel
    st = path.lstat()
    if not stat.S_ISREG(st.st_mode):
        raise InvalidEntry(f"{rel} is not a plain file")
    size = st.st_size
    if size != spec["bytes"]:
        raise InvalidEntry(f"{rel} holds {size} bytes, the header says {spec['bytes']}")
    shape = tuple(spec["shape"])
    if math.prod(shape) == 0:
        a = np.load(path, allow_pickle=False)
    else:
        a = np.load(path, mmap_mode="r", allow_pickle=False).view(np.ndarray)
    if a.dtype.str != spec["dtype"] or a.shape != shape:
        raise InvalidEntry(f"{rel} is {a.dtype.str}{list(a.shape)}, the header says {spec['dtype']}{list(shape)}")
    if a.size and _CRC(np.ascontiguousarray(a).data) != spec["crc32"]:
        raise InvalidEntry(f"{rel} does not match its checksum")
    a.flags.writeable = False
    out: np.ndarray[Any, Any] = a
    return out


def _read_field(folder: Path, spec: dict[str, Any], cols: dict[str, Any]) -> Any:
    kind = spec["kind"]

    def col(rel: str) -> np.ndarray[Any, Any]:
        if rel not in cols:
            raise InvalidEntry(f"column {rel!r} is not described")
        return _open_column(folder, rel, cols[rel])

    if kind == "column":
        return col(spec["column"])
    if kind == "table":
        cls = _SIDE_TABLES.get(str(spec["class"]))
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__name__.endswith("Table")):
            raise InvalidEntry(f"unknown table {spec['class']!r}")
        return cls(**{f: col(rel) for f, rel in spec["columns"].items()})
    if kind == "strings":
        blob = col(spec["blob"])
        offsets = col(spec["offsets"])
        text = bytes(blob).decode("utf-8", "surrogatepass")
        if len(offsets) == 0 or offsets[0] != 0 or offsets[-1] != len(text) or np.any(np.diff(offsets) < 0):
            raise InvalidEntry("name offsets do not fit the name blob")
        o = offsets.tolist()
        return tuple(text[a:b] for a, b in itertools.pairwise(o))
    if kind == "series":
        arrays = {f: col(rel) for f, rel in spec["columns"].items()}
        lengths = spec["lengths"]
        ends = np.cumsum([0, *lengths]).tolist()
        if any(a.shape != (ends[-1],) for a in arrays.values()) or len(lengths) != len(spec["scalars"]):
            raise InvalidEntry("counter columns do not fit their lengths")
        out = []
        for i, scalars in enumerate(spec["scalars"]):
            fields: dict[str, Any] = {f: a[ends[i] : ends[i + 1]] for f, a in arrays.items()}
            fields.update({k: _dec(v) for k, v in scalars.items()})
            out.append(CounterSeries(**fields))
        return tuple(out)
    if kind == "json":
        return _dec(spec["value"])
    raise InvalidEntry(f"unknown field kind {kind!r}")


def read_entry(folder: Path, key: SourceKey) -> Trace:
    """The trace stored in ``folder``, after checking everything; raises :class:`InvalidEntry` or ``OSError``."""
    try:
        with open(folder / HEADER, encoding="utf-8") as f:
            header = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        raise InvalidEntry(f"unreadable header ({e})") from None
    if not isinstance(header, dict) or header.get("format_version") != FORMAT_VERSION:
        raise InvalidEntry("another cache format")
    if header.get("source") != key.as_json():
        raise InvalidEntry("made from another state of the file or by other code")
    try:
        names = [f.name for f in dataclasses.fields(Trace)]
        if sorted(header["fields"]) != sorted(names):
            raise InvalidEntry("made for another model")
        values = {n: _read_field(folder, header["fields"][n], header["columns"]) for n in names}
        trace = Trace(**values)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise InvalidEntry(f"malformed entry ({type(e).__name__}: {e})") from None
    _check_consistent(trace, int(header.get("n_events", -1)))
    return trace


def _check_consistent(t: Trace, n_events: int) -> None:
    """The columns agree with each other (cheap, vectorized)."""
    n = len(t)
    if n != n_events:
        raise InvalidEntry(f"{n} events, the header says {n_events}")
    for name in EVENT_COLUMNS:
        if getattr(t, name).shape != (n,):
            raise InvalidEntry(f"column {name} is not {n} long")
    lo = t.lane_offsets
    if lo.shape != (len(t.lanes) + 1,) or lo[0] != 0 or lo[-1] != n or np.any(np.diff(lo) < 0):
        raise InvalidEntry("lane offsets do not partition the events")
    if n:
        if t.name.min() < 0 or t.name.max() >= len(t.names):
            raise InvalidEntry("event names out of range")
        if t.lane.min() < 0 or t.lane.max() >= len(t.lanes):
            raise InvalidEntry("event lanes out of range")
    for field in dataclasses.fields(t):
        table = getattr(t, field.name)
        event = getattr(table, "event", None)
        if isinstance(event, np.ndarray) and len(event) and (event.min() < 0 or event.max() >= n):
            raise InvalidEntry(f"{type(table).__name__} rows point outside the events")
    f = t.flows
    if len(f) and (min(f.src.min(), f.dst.min()) < 0 or max(f.src.max(), f.dst.max()) >= n):
        raise InvalidEntry("flows point outside the events")


def remove_entry(folder: Path) -> None:
    """Remove an entry: renamed away first, so no reader ever sees it half deleted."""
    trash = folder.with_name(f"{TMP_PREFIX}del-{folder.name}-{os.getpid()}-{time.monotonic_ns()}")
    try:
        os.rename(folder, trash)
    except OSError:
        return
    shutil.rmtree(trash, ignore_errors=True)
