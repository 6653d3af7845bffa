"""A columnar cache of loaded traces: reopening a trace seen before maps its columns instead of parsing it.

Where: ``$GPUTOP_TRACE_CACHE_DIR``, else ``$XDG_CACHE_HOME/gputop-trace``, else ``~/.cache/gputop-trace``
(created private to the user). The cache never writes next to a trace and never changes one.

What: one folder per (trace file, load options, file state). Every numpy column of the :class:`Trace` is a plain
``.npy`` file, memory-mapped read-only on reopen; names are one UTF-8 blob plus offsets; lanes, counters' labels
and metadata are JSON (with tags that keep tuples, int dict keys, enums and non-finite floats exact);
``header.json`` records the format version, the loader's fingerprint, the source's absolute path, size and
mtime (ns), the load options, and each column's dtype, shape, size and CRC-32.

Trust: an entry is used only when its header matches the source as it is now and the current code (the
fingerprint hashes the package version and the parser and model sources, so any change to how traces are
parsed invalidates every entry), and when every column file has exactly the dtype, shape, size and checksum the
header promises and the columns agree with each other (ids in range, lanes partitioned). Anything else (a
truncated or rewritten column, a damaged header, a stale source) is removed and the trace parsed again.

Concurrency: an entry is written into a private temporary folder and renamed into place in one step; an entry
is never modified after that, so a reader sees a whole entry or none. When two processes parse the same trace
at once, the first rename wins and the other discards its copy. Entries of older versions of a trace are
removed when a new one is written; a reader still holding them keeps its mapping (POSIX keeps unlinked files).

Size: at most ``$GPUTOP_TRACE_CACHE_SIZE`` (default 4G; ``0`` turns writing off), least recently used entries
evicted first. Only traces of at least ``$GPUTOP_TRACE_CACHE_MIN`` (default 16M) are cached: smaller ones
load faster than a cache check is worth. ``GPUTOP_TRACE_NO_CACHE=1`` or ``--no-cache`` bypasses the cache.
"""

from __future__ import annotations

import dataclasses
import hashlib
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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from enum import IntEnum
from pathlib import Path
from typing import Any

import numpy as np

from gputop_trace import __version__, model
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
    TraceMeta,
)
from gputop_trace.model.trace import Trace

FORMAT_VERSION = 1
HEADER = "header.json"
DEFAULT_MAX_BYTES = 4 << 30
DEFAULT_MIN_SOURCE_BYTES = 16 << 20
TMP_PREFIX = ".tmp-"
STALE_TMP_SECONDS = 3600.0

_ENUMS: dict[str, type[IntEnum]] = {c.__name__: c for c in (Kind, LaneKind, CopyKind, MemKind, FlowKind)}
_COLUMN_NAME = re.compile(r"[A-Za-z0-9_]+(/[A-Za-z0-9_]+)?(\.[a-z0-9]+)+")
_SIDE_TABLES: dict[str, type[Any]] = {c.__name__: c for c in (KernelTable, CopyTable, CollectiveTable, FlowTable)}
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
# settings
# --------------------------------------------------------------------------------------------------------
def parse_size(text: str) -> int:
    """``"4G"``, ``"500M"``, ``"64k"``, ``"1000"`` → bytes (powers of 1024)."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(t[-1:], 1)
    number = t[:-1] if t[-1:] in "KMGT" else t
    value = float(number)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"not a size: {text!r}")
    return int(value * mult)


def cache_root() -> Path:
    """The folder holding every entry (not created here)."""
    explicit = os.environ.get("GPUTOP_TRACE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gputop-trace"


def cache_disabled() -> bool:
    """Whether ``GPUTOP_TRACE_NO_CACHE`` turns the cache off."""
    return os.environ.get("GPUTOP_TRACE_NO_CACHE", "").strip().lower() not in ("", "0", "false", "no")


def _size_setting(name: str, default: int) -> int:
    text = os.environ.get(name)
    if not text:
        return default
    try:
        return parse_size(text)
    except ValueError:
        return default


def max_bytes() -> int:
    """The cache's size bound (``GPUTOP_TRACE_CACHE_SIZE``)."""
    return _size_setting("GPUTOP_TRACE_CACHE_SIZE", DEFAULT_MAX_BYTES)


def _worth_caching(path: str, size: int, min_bytes: int) -> bool:
    """Whether a trace is large enough to cache: judged on what it holds once decompressed (a 3 MB gzip can
    hold 87 MB of JSON that takes seconds to parse), not on its size on disk."""
    if size >= min_bytes:
        return True
    from gputop_trace.load.resources import decompressed_size

    try:
        return decompressed_size(path) >= min_bytes
    except OSError:
        return False


def min_source_bytes() -> int:
    """The smallest trace file worth caching (``GPUTOP_TRACE_CACHE_MIN``)."""
    return _size_setting("GPUTOP_TRACE_CACHE_MIN", DEFAULT_MIN_SOURCE_BYTES)


_FINGERPRINT: list[str] = []


def fingerprint_sources() -> list[tuple[str, Path]]:
    """The source files whose text decides what a loaded trace holds, as (name inside the package, path): the
    loader, every module of the model and every module of the parsers, sub-folders included (``chrome/``,
    ``nsys/``), so that an edit to any of them makes older cache entries stale."""
    from gputop_trace import parsers
    from gputop_trace.load import loader

    files = [("load/loader.py", Path(loader.__file__))]
    for base, folder in (("model", Path(model.__file__).parent), ("parsers", Path(parsers.__file__).parent)):
        files += [(f"{base}/{f.relative_to(folder).as_posix()}", f) for f in sorted(folder.rglob("*.py"))]
    return files


def code_fingerprint() -> str:
    """A hash of everything that decides what a loaded trace holds: package version, this format, and the
    sources of the loader, the model and every parser (:func:`fingerprint_sources`)."""
    if not _FINGERPRINT:
        h = hashlib.sha256(f"{__version__}/{FORMAT_VERSION}".encode())
        for rel, f in fingerprint_sources():
            try:
                h.update(rel.encode() + b"\0" + f.read_bytes())
            except OSError:
                h.update(rel.encode() + b"\0?")
        _FINGERPRINT.append(h.hexdigest()[:32])
    return _FINGERPRINT[0]


# --------------------------------------------------------------------------------------------------------
# keys
# --------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SourceKey:
    """What an entry must match: the source file as it is now, the load options, the code."""

    path: str  # absolute
    size: int
    mtime_ns: int
    options: tuple[tuple[str, Any], ...]
    code: str

    @staticmethod
    def of(path: str, options: Mapping[str, Any]) -> SourceKey:
        """The key of a file now (raises ``OSError`` when it cannot be stat'ed)."""
        p = os.path.abspath(path)
        st = os.stat(p)
        return SourceKey(p, st.st_size, st.st_mtime_ns, tuple(sorted(options.items())), code_fingerprint())

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "size": self.size,
            "mtime_ns": self.mtime_ns,
            "options": [[k, v] for k, v in self.options],
            "code": self.code,
        }

    @property
    def family(self) -> str:
        """Name prefix shared by every entry of this file with these options (older states of the file)."""
        return f"{_h(self.path)}-{_h(json.dumps(self.options))}"

    @property
    def name(self) -> str:
        """The entry folder's name."""
        return f"{self.family}-{_h(json.dumps([self.size, self.mtime_ns, self.code]))}"


def _h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


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
        _remove(folder)
    _write_entry(trace, key, folder.parent, name=folder.name)


def open_trace(folder: Path) -> Trace:
    """A trace stored by :func:`save_trace`, memory-mapped and validated like a cache entry."""
    key = SourceKey(str(folder.resolve()), 0, 0, (), "saved")
    try:
        return _read_entry(folder, key)
    except InvalidEntry as e:
        raise ValueError(f"{folder} does not hold a valid saved trace: {e}") from None


def _write_entry(trace: Trace, key: SourceKey, root: Path, *, name: str = "") -> Path | None:
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


def _read_entry(folder: Path, key: SourceKey) -> Trace:
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


def _remove(folder: Path) -> None:
    """Remove an entry: renamed away first, so no reader ever sees it half deleted."""
    trash = folder.with_name(f"{TMP_PREFIX}del-{folder.name}-{os.getpid()}-{time.monotonic_ns()}")
    try:
        os.rename(folder, trash)
    except OSError:
        return
    shutil.rmtree(trash, ignore_errors=True)


# --------------------------------------------------------------------------------------------------------
# the entry point
# --------------------------------------------------------------------------------------------------------
@dataclass
class CacheResult:
    """What :func:`load_cached` did (for tests, benchmarks and ``--verbose`` output)."""

    hit: bool = False
    written: bool = False
    rebuilt_because: str = ""
    entry: Path | None = None


def load_cached(
    path: str,
    options: Mapping[str, Any],
    parse: Callable[[], Trace],
    *,
    root: Path | None = None,
    min_bytes: int | None = None,
    result: CacheResult | None = None,
) -> Trace:
    """The trace of ``path`` from the cache when a valid entry exists, else ``parse()`` (then cached).

    ``options`` are the load options that change the result (they are part of the key). Caching is best
    effort: any problem with the cache folder falls back to parsing, silently.
    """
    res = result if result is not None else CacheResult()
    root = root if root is not None else cache_root()
    try:
        key = SourceKey.of(path, options)
    except OSError:
        return parse()  # the parser reports a missing or unreadable file properly
    limit = max_bytes()
    if not _worth_caching(path, key.size, min_source_bytes() if min_bytes is None else min_bytes):
        return parse()
    folder = root / key.name
    if folder.is_dir():
        try:
            trace = _read_entry(folder, key)
        except InvalidEntry as e:
            res.rebuilt_because = str(e)
            _remove(folder)
        except OSError as e:
            if (folder / HEADER).is_file():  # a file of the entry is missing or unreadable: damaged
                res.rebuilt_because = f"unreadable entry ({e.strerror or e}: {getattr(e, 'filename', '')})"
                _remove(folder)
            else:  # removed or evicted by another process while reading
                res.rebuilt_because = f"entry vanished ({e.strerror or e})"
        else:
            res.hit, res.entry = True, folder
            _touch(folder)
            return trace
    trace = parse()
    if limit <= 0:
        return trace
    try:
        res.entry = _write_entry(trace, key, root)
        res.written = res.entry is not None
    except (OSError, Uncacheable):
        return trace
    _remove_older_states(root, key)
    evict(root, limit, keep=key.name)
    return trace


def _touch(folder: Path) -> None:
    try:
        os.utime(folder)
    except OSError:
        pass


def _entries(root: Path) -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(root) as it:
            yield from (e for e in it if e.is_dir(follow_symlinks=False))
    except OSError:
        return


def _remove_older_states(root: Path, key: SourceKey) -> None:
    for e in _entries(root):
        if e.name.startswith(key.family + "-") and e.name != key.name:
            _remove(Path(e.path))


def _entry_bytes(folder: str) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total


def evict(root: Path, limit: int, *, keep: str = "") -> list[str]:
    """Remove least recently used entries until the cache holds at most ``limit`` bytes (never ``keep``);
    also clears temporary folders left by processes that died. Returns the names removed."""
    now = time.time()
    sized: list[tuple[float, str, int]] = []
    removed: list[str] = []
    for e in _entries(root):
        try:
            mtime = e.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if e.name.startswith(TMP_PREFIX):
            if now - mtime > STALE_TMP_SECONDS:
                shutil.rmtree(e.path, ignore_errors=True)
                removed.append(e.name)
            continue
        sized.append((mtime, e.name, _entry_bytes(e.path)))
    total = sum(s for _, _, s in sized)
    for _mtime, name, size in sorted(sized):
        if total <= limit:
            break
        if name == keep:
            continue
        _remove(root / name)
        removed.append(name)
        total -= size
    return removed
