"""What the nsys table readers share: the string table, lanes, ids and event batches.

IDs (formats.md §2): ``tid = globalTid & 0xFFFFFF``, ``pid = (globalTid >> 24) & 0xFFFFFF``,
``globalPid = globalTid & ~0xFFFFFF``; correlation ids are unique per process, so joins use
(correlationId, globalPid). Times stay in the file's own time base (ns) until the builder makes them relative.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from gputop_trace.model.arrays import I64
from gputop_trace.model.builder import TraceBuilder
from gputop_trace.model.kinds import Kind, LaneKind
from gputop_trace.model.tables import GpuInfo, Lane
from gputop_trace.parsers.nsys.columns import ColumnReader
from gputop_trace.parsers.nsys.schema import Enums, ExportInfo, Schema, as_text

I32 = npt.NDArray[np.int32]

#: ``dur`` expression result for a row whose ``end`` is NULL (an open NVTX range, a lost GPU record).
NULL_DUR = -(2**63) + 1
#: SQL for a duration that survives a NULL end (see :data:`NULL_DUR`).
DUR_SQL = f"ifnull(end - start, {NULL_DUR})"
#: Mask that turns a globalTid into its globalPid.
GPID_MASK = ~0xFFFFFF


def pid_of(gtid: I64) -> I64:
    """Process id of globalTid/globalPid values."""
    return (gtid >> 24) & 0xFFFFFF


def tid_of(gtid: I64) -> I64:
    """Thread id of globalTid values."""
    return gtid & 0xFFFFFF


def factorize(values: I64) -> tuple[I64, I64]:
    """(sorted distinct values, code of each value) — ``np.unique(values, return_inverse=True)`` without a
    full sort in the common cases: small non-negative ids (a lookup table) and few distinct values (found in a
    sample, then matched with ``searchsorted``). Falls back to ``np.unique`` otherwise."""
    n = values.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    lo, hi = int(values.min()), int(values.max())
    if lo == hi:
        return np.array([lo], dtype=np.int64), np.zeros(n, dtype=np.int64)
    if hi - lo < 1 << 22:
        off = values - lo
        present = np.zeros(hi - lo + 1, dtype=bool)
        present[off] = True
        uniq = np.flatnonzero(present)
        lut = np.zeros(hi - lo + 1, dtype=np.int64)
        lut[uniq] = np.arange(uniq.shape[0], dtype=np.int64)
        return uniq.astype(np.int64) + lo, lut[off]
    sample = np.unique(np.concatenate([values[:256], values[:: max(1, n // 1024)], values[-256:]]))
    pos = np.searchsorted(sample, values)
    np.minimum(pos, sample.shape[0] - 1, out=pos)
    if np.array_equal(sample[pos], values):
        return sample.astype(np.int64), pos.astype(np.int64, copy=False)
    uniq, inverse = np.unique(values, return_inverse=True)
    return uniq.astype(np.int64), np.asarray(inverse).reshape(-1).astype(np.int64)


def col_or(schema: Schema, table: str, default: str, *candidates: str) -> str:
    """A column of ``table`` as SQL (double-quoted), or ``default`` (an SQL literal) when it has none of them."""
    c = schema.column(table, *candidates)
    return f'"{c}"' if c else default


def thread_row_exprs(schema: Schema, table: str, *extra: str) -> list[str]:
    """The SQL of a CPU-side table's start and duration (ns), thread (``globalTid``, 0 when missing) and name
    (``nameId``, -1 when missing), then ``extra``: the columns every table of calls or events on threads gives."""
    return [
        "start",
        DUR_SQL,
        f"ifnull({col_or(schema, table, '0', 'globalTid')}, 0)",
        f"ifnull({col_or(schema, table, '-1', 'nameId')}, -1)",
        *extra,
    ]


class Strings:
    """The export's ``StringIds`` table, interning into the builder's names only the strings events use."""

    def __init__(self, conn: sqlite3.Connection, schema: Schema, builder: TraceBuilder) -> None:
        self.builder = builder
        self.values: dict[int, str] = {}
        self._ids: I64 | None = None
        t = schema.table("StringIds")
        if t and {"id", "value"} <= schema.cols(t):
            for i, v in conn.execute(f'SELECT id, value FROM "{t}"'):
                if isinstance(i, int):
                    self.values[i] = as_text(v)

    def known(self, sids: I64) -> npt.NDArray[np.bool_]:
        """Which ids have a string."""
        if not self.values:
            return np.zeros(sids.shape[0], dtype=bool)
        if self._ids is None:
            self._ids = np.array(sorted(self.values), dtype=np.int64)
        pos = np.minimum(np.searchsorted(self._ids, sids), self._ids.shape[0] - 1)
        found: npt.NDArray[np.bool_] = self._ids[pos] == sids
        return found

    def get(self, sid: int) -> str | None:
        """The string with this id (``None`` when unknown)."""
        return self.values.get(int(sid))

    def intern(self, sids: I64, *, missing: str, transform: Any = None) -> I32:
        """Builder name ids for an array of StringIds ids; unknown ids (and -1) become ``missing``.

        ``transform(str) -> str`` is applied once per distinct string (e.g. to strip API version suffixes).
        """
        if sids.shape[0] == 0:
            return np.zeros(0, dtype=np.int32)
        return self.intern_codes(*factorize(sids), missing=missing, transform=transform)

    def intern_codes(self, uniq: I64, inverse: I64, *, missing: str, transform: Any = None) -> I32:
        """:meth:`intern` of ids already factorized (``factorize(sids)``, e.g. on a reader thread)."""
        mapped = np.empty(uniq.shape[0], dtype=np.int32)
        for i, sid in enumerate(uniq.tolist()):
            s = self.values.get(sid)
            if s is None:
                s = missing
            elif transform is not None:
                s = transform(s)
            mapped[i] = self.builder.names.intern(s)
        return mapped[inverse]


@dataclass
class Batch:
    """Events of one kind group read from one table, in file time. ``dur`` may hold :data:`NULL_DUR`.

    ``open_ended`` marks rows whose missing end means "until the end of the profile" (NVTX ranges); other
    rows with a missing end get zero length. ``kernel``/``copy`` are side-table columns (without ``event``).
    ``launch_key`` (dense process index << 32 | correlationId) links GPU ops to the API calls of ``api_key``;
    ``api_order`` is the stable argsort of ``api_key`` when the reader already made it (dropped by :meth:`keep`);
    a reader that made it may keep the keys sorted (``api_sorted``) instead of in row order (``api_key`` None).
    """

    table: str
    start: I64
    dur: I64
    kind: npt.NDArray[np.uint8]
    lane: I32
    name: I32
    corr: I64 | None = None
    open_ended: bool = False
    kernel: dict[str, Any] | None = None
    copy: dict[str, Any] | None = None
    launch_key: I64 | None = None
    api_key: I64 | None = None
    api_name: I32 | None = None
    api_order: I64 | None = None
    #: ``api_key[api_order]`` when the reader made it (dropped by :meth:`keep`)
    api_sorted: I64 | None = None
    #: the batch's first row in :class:`EventStore` (its event columns are views of the store's), -1: not stored
    slot: int = -1

    def __len__(self) -> int:
        return int(self.start.shape[0])

    def join_keys(self) -> I64 | None:
        """``api_key`` in row order (made from ``api_sorted`` and ``api_order`` where the reader kept only those)."""
        if self.api_key is None and self.api_sorted is not None and self.api_order is not None:
            key = np.empty_like(self.api_sorted)
            key[self.api_order] = self.api_sorted
            return key
        return self.api_key

    def keep(self, mask: npt.NDArray[np.bool_]) -> None:
        """Keep only the rows where ``mask`` is True (every per-row column and side-table column)."""
        n = len(self)
        self.api_key = self.join_keys()
        self.api_order = self.api_sorted = None  # a permutation of the rows and the keys in it: no longer right
        self.slot = -1  # its columns become copies: no longer the store's rows
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray) and v.shape[:1] == (n,):
                setattr(self, f.name, v[mask])
            elif isinstance(v, dict):
                setattr(self, f.name, {k: a[mask] if isinstance(a, np.ndarray) and a.shape[:1] == (n,) else a
                                       for k, a in v.items()})  # fmt: skip


#: the event columns :class:`EventStore` holds, with the builder's dtypes (``corr`` -1 where a batch has none)
STORE_COLUMNS: tuple[tuple[str, type[np.generic]], ...] = (
    ("start", np.int64),
    ("dur", np.int64),
    ("kind", np.uint8),
    ("lane", np.int32),
    ("name", np.int32),
    ("corr", np.int64),
)


class EventStore:
    """Every batch's event columns in one array per column, batches in the order they were added: what the builder
    would concatenate at the end. A batch is copied into its slot when it is added and keeps views of it, so the
    readers' chunk arrays are freed while the next chunks are read (their memory is reused at once instead of
    every chunk staying alive until the build, then being copied), and the builder is handed whole columns.

    The arrays are allocated for ``capacity`` rows (the export's row span: pages never written take no memory) and
    grow when the tables yield more. Code that changes a batch's event columns must do it in place (``b.dur[m] =
    0``); :meth:`Batch.keep` copies, and :meth:`columns` then tells the caller to concatenate the batches instead."""

    def __init__(self, capacity: int, plausible: int | None = None) -> None:
        self.capacity = max(int(capacity), 1)
        #: the most rows one table may reserve (:meth:`reserve`; a damaged rowid may make a table's span 2**62)
        self.plausible = self.capacity if plausible is None else plausible
        self.cols: dict[str, npt.NDArray[Any]] = {k: np.empty(self.capacity, dtype=dt) for k, dt in STORE_COLUMNS}
        self.n = 0
        self.batches: list[Batch] = []

    def reserve(self, m: int) -> dict[str, npt.NDArray[Any]]:
        """Views of the next ``m`` rows of every column, for a reader to write a table's rows into before it adds
        them (as one batch whose columns are these views or their first rows: :meth:`put` then copies nothing).
        Nothing else may be put in between."""
        if self.n + m > self.capacity:
            self._grow(max(self.n + m, self.capacity + self.capacity // 2))
        return {k: v[self.n : self.n + m] for k, v in self.cols.items()}

    def put(self, batch: Batch) -> None:
        """Copy the batch's event columns into the next rows and point the batch at them."""
        m = len(batch)
        if not m:
            return
        if self.n + m > self.capacity:
            self._grow(max(self.n + m, self.capacity + self.capacity // 2))
        at, end = self.n, self.n + m
        for k, _ in STORE_COLUMNS:
            v = getattr(batch, k)
            dst = self.cols[k][at:end]
            if v is None:
                dst.fill(-1)
            elif v.base is not self.cols[k] or v.ctypes.data != dst.ctypes.data or v.shape != dst.shape:
                dst[...] = v
                setattr(batch, k, dst)
        batch.slot = at
        self.n = end
        self.batches.append(batch)

    def _grow(self, capacity: int) -> None:
        old = self.cols
        self.cols = {k: np.empty(capacity, dtype=dt) for k, dt in STORE_COLUMNS}
        for k, _ in STORE_COLUMNS:
            self.cols[k][: self.n] = old[k][: self.n]
        for b in self.batches:
            if b.slot < 0:
                continue
            for k, _ in STORE_COLUMNS:
                v = getattr(b, k)
                if v is not None and v.base is old[k]:
                    setattr(b, k, self.cols[k][b.slot : b.slot + len(b)])
        self.capacity = capacity

    def columns(self) -> dict[str, npt.NDArray[Any]] | None:
        """The stored rows' columns (``n`` rows each), or ``None`` where a batch's columns are no longer its rows
        of the store (rows dropped, a column replaced): the caller then concatenates the batches."""
        at = 0
        for b in self.batches:
            m = len(b)
            if b.slot != at or not m:
                return None
            for k, _ in STORE_COLUMNS:
                v = getattr(b, k)
                if v is None:
                    continue
                arr = self.cols[k]
                if v.base is not arr or v.shape != (m,) or v.ctypes.data != arr.ctypes.data + at * arr.itemsize:
                    return None
            at += m
        if at != self.n:
            return None
        return {k: v[: self.n] for k, v in self.cols.items()}


def pack_join_key(proc_index: I64, corr: I64, out: I64 | None = None) -> I64:
    """The key that joins a CUDA call to its GPU work: the process's index (:meth:`Context.process_index`) in the
    high 32 bits, the correlationId's low 32 bits below (``out``: written there)."""
    key = np.bitwise_and(np.asarray(corr, dtype=np.int64), 0xFFFFFFFF, out=out)
    key |= np.left_shift(proc_index, 32)
    return key


@dataclass
class Context:
    """State shared by the table readers of one export."""

    path: str
    conn: sqlite3.Connection
    schema: Schema
    info: ExportInfo
    enums: Enums
    reader: ColumnReader
    builder: TraceBuilder
    strings: Strings
    rank: int = 0
    batches: list[Batch] = field(default_factory=list)
    thread_names: dict[int, str] = field(default_factory=dict)
    nvtx_thread_names: dict[int, str] = field(default_factory=dict)
    process_names: dict[int, str] = field(default_factory=dict)
    gpus: dict[int, GpuInfo] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    properties: dict[str, Any] = field(default_factory=dict)
    gpu_spans: dict[tuple[int, int], tuple[int, int, int]] = field(default_factory=dict)
    #: the API calls' join keys sorted, their lanes (unsorted), and the permutation that sorts them
    api_lookup: tuple[I64, I32, I64] | None = None
    cpu_lane_gtid: dict[int, int] = field(default_factory=dict)
    #: where :meth:`add` copies the batches' event columns (``None``: batches keep their own arrays)
    store: EventStore | None = None
    _process_index: dict[int, int] = field(default_factory=dict)

    def warn(self, message: str) -> None:
        """Record a warning for the user."""
        self.builder.warn(message)

    def event_table(self, logical: str, *required: str) -> str | None:
        """The real name of an event table, or ``None`` when the export lacks it or it lacks the columns
        every row needs (``start``, ``end`` and ``required``), which is reported as a warning."""
        t = self.schema.table(logical)
        if t is None:
            return None
        missing = [c for c in ("start", "end", *required) if c.lower() not in self.schema.cols(t)]
        if missing:
            self.warn(f"Table {t} has no {', '.join(missing)} column; its rows are left out.")
            return None
        return t

    # ---- ids ---------------------------------------------------------------------------------------------
    def process_index(self, gpids: I64) -> I64:
        """A dense index per globalPid (stable for the whole load), for (process, correlation) join keys."""
        if gpids.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        return self.process_index_codes(*factorize(gpids))

    def process_index_codes(self, uniq: I64, inverse: I64) -> I64:
        """:meth:`process_index` of globalPids already factorized."""
        idx = np.array([self._process_index.setdefault(int(g), len(self._process_index)) for g in uniq.tolist()])
        return idx.astype(np.int64)[inverse]

    def note_gpu_span(self, start: I64, dur: I64, gpid: I64, device: I64) -> None:
        """Extend the (pid, device) spans of GPU work (rows with ``start > 0``, as nsys' GPU reports count them):
        ``gpu_spans[(pid, device)] = (first start, last end, a globalPid of that pid)``."""
        self.merge_gpu_spans(gpu_span_parts(start, dur, gpid, device))

    def merge_gpu_spans(self, parts: list[tuple[int, int, int, int]]) -> None:
        """Extend :attr:`gpu_spans` by the ``(pid << 32 | device, first start, last end, globalPid)`` of
        :func:`gpu_span_parts`."""
        for k, a, b, gp in parts:
            key = (k >> 32, k & 0xFFFFFFFF)
            old = self.gpu_spans.get(key)
            self.gpu_spans[key] = (min(a, old[0]), max(b, old[1]), old[2]) if old else (a, b, gp)

    def gpid_of_index(self, index: int) -> int:
        """The globalPid that :meth:`process_index` numbered ``index``."""
        for g, i in self._process_index.items():
            if i == index:
                return g
        raise KeyError(index)

    def join_key(self, gpids: I64, corr: I64) -> I64:
        """(process, correlationId) packed into one int64 (:func:`pack_join_key`)."""
        return pack_join_key(self.process_index(gpids), corr)

    def join_key_codes(self, procs: I64, proc_code: I64, corr: I64) -> I64:
        """:meth:`join_key` of globalPids already factorized (``procs, proc_code = factorize(gpids)``)."""
        return pack_join_key(self.process_index_codes(procs, proc_code), corr)

    # ---- names ---------------------------------------------------------------------------------------------
    def process_label(self, gpid: int) -> str:
        """``"[466] python3"`` (nsys' own style), or ``"[466]"`` when the process has no recorded name."""
        pid = (gpid >> 24) & 0xFFFFFF
        name = self.process_names.get(gpid & GPID_MASK)
        if not name:
            name = self.thread_names.get((gpid & GPID_MASK) | pid, "")
        return f"[{pid}] {name}" if name else f"[{pid}]"

    def thread_label(self, gtid: int) -> str:
        """The thread's NVTX name, else its OS name, else ``"thread <tid>"``."""
        tid = gtid & 0xFFFFFF
        return self.nvtx_thread_names.get(gtid) or self.thread_names.get(gtid) or f"thread {tid}"

    # ---- lanes -------------------------------------------------------------------------------------------
    def lanes_by(self, keys: I64, make: Any) -> I32:
        """Lane id per row where ``make(key) -> lane id`` is called once per distinct key."""
        if keys.shape[0] == 0:
            return np.zeros(0, dtype=np.int32)
        uniq, inverse = factorize(keys)
        ids = np.array([make(int(k)) for k in uniq.tolist()], dtype=np.int32)
        return ids[inverse]

    def cpu_lanes(self, gtids: I64) -> I32:
        """Lane id per row for CPU-thread rows (one lane per globalTid)."""
        return self.lanes_by(gtids, self.cpu_lane)

    def cpu_lane(self, gtid: int) -> int:
        """The lane of one CPU thread."""
        pid, tid = (gtid >> 24) & 0xFFFFFF, gtid & 0xFFFFFF
        lane = self.builder.lane(
            ("cpu", gtid),
            Lane(
                kind=LaneKind.CPU_THREAD,
                name=self.thread_label(gtid),
                rank=self.rank,
                pid=pid,
                tid=tid,
                process_name=self.process_label(gtid),
                sort_key=(self.rank, 0, pid, str(gtid & GPID_MASK), -1 if tid == pid else tid, str(tid)),
            ),
        )
        self.cpu_lane_gtid[lane] = gtid
        return lane

    def async_lane(self, gpid: int) -> int:
        """The lane of a process' NVTX start/end ranges that end on another thread."""
        pid = (gpid >> 24) & 0xFFFFFF
        return self.builder.lane(
            ("async", gpid & GPID_MASK),
            Lane(
                kind=LaneKind.ASYNC,
                name="NVTX ranges across threads",
                rank=self.rank,
                pid=pid,
                process_name=self.process_label(gpid),
                sort_key=(self.rank, 0, pid, str(gpid & GPID_MASK), 1 << 40, "nvtx"),
            ),
        )

    def process_other_lane(self, gpid: int, name: str) -> int:
        """A per-process lane for rows that belong to no known thread."""
        pid = (gpid >> 24) & 0xFFFFFF
        return self.builder.lane(
            ("other", gpid & GPID_MASK, name),
            Lane(
                kind=LaneKind.OTHER,
                name=name,
                rank=self.rank,
                pid=pid,
                process_name=self.process_label(gpid),
                sort_key=(self.rank, 0, pid, str(gpid & GPID_MASK), 1 << 41, name),
            ),
        )

    def gpu_process_label(self, device: int) -> str:
        """``"GPU 0 (NVIDIA H200)"``."""
        info = self.gpus.get(device)
        return f"GPU {device} ({info.name})" if info and info.name else f"GPU {device}"

    def stream_lanes(self, gpids: I64, devices: I64, streams: I64) -> I32:
        """Lane id per row for GPU-stream rows: one lane per (process, device, stream)."""
        if gpids.shape[0] == 0:
            return np.zeros(0, dtype=np.int32)
        procs, proc_code = factorize(gpids)
        return self.stream_lanes_codes(procs, *stream_codes(proc_code, devices, streams))

    def stream_lanes_codes(self, procs: I64, pd_values: I64, keys: I64, code: I64) -> I32:
        """:meth:`stream_lanes` of rows already factorized: ``factorize(gpids)[0]`` and :func:`stream_codes`."""
        ids = np.empty(keys.shape[0], dtype=np.int32)
        for i, k in enumerate(keys.tolist()):
            pd = int(pd_values[k >> 32])
            ids[i] = self.stream_lane(int(procs[pd >> 32]), pd & 0xFFFFFFFF, k & 0xFFFFFFFF)
        return ids[code]

    def stream_lane(self, gpid: int, device: int, stream: int) -> int:
        """The lane of one CUDA stream of one process on one device."""
        pid = (gpid >> 24) & 0xFFFFFF
        return self.builder.lane(
            ("gpu", gpid, device, stream),
            Lane(
                kind=LaneKind.GPU_STREAM,
                name=f"stream {stream}",
                rank=self.rank,
                pid=pid,
                device=device,
                stream=stream,
                process_name=self.gpu_process_label(device),
                sort_key=(self.rank, 1, device, 1, stream, pid),
            ),
        )

    def uvm_lanes(self, gpids: I64, devices: I64) -> I32:
        """Lane id per row for unified-memory migrations: one lane per (process, device), so that the migrations
        count with that process's GPU work on the device (as ``nsys analyze -r gpu_gaps`` groups them)."""
        if gpids.shape[0] == 0:
            return np.zeros(0, dtype=np.int32)
        procs, proc_code = factorize(gpids)
        keys, code = factorize((proc_code << 32) | (devices & 0xFFFFFFFF))
        ids = np.array([self.uvm_lane(int(procs[k >> 32]), k & 0xFFFFFFFF) for k in keys.tolist()], dtype=np.int32)
        return ids[code]

    def uvm_lane(self, gpid: int, device: int) -> int:
        """The unified-memory migration lane of one process on one device."""
        pid = (gpid >> 24) & 0xFFFFFF
        return self.builder.lane(
            ("uvm", pid, device),
            Lane(
                kind=LaneKind.UVM,
                name="unified memory",
                rank=self.rank,
                pid=pid,
                device=device,
                process_name=self.gpu_process_label(device),
                sort_key=(self.rank, 1, device, 2, 0, pid),
            ),
        )

    def overhead_lane(self, gpid: int, device: int) -> int:
        """The lane of profiler overhead that nsys counts as GPU busy, for one process on one device."""
        pid = (gpid >> 24) & 0xFFFFFF
        return self.builder.lane(
            ("gpu-overhead", gpid & GPID_MASK, device),
            Lane(
                kind=LaneKind.OTHER,
                name="profiler overhead",
                rank=self.rank,
                pid=pid,
                device=device,
                process_name=self.gpu_process_label(device),
                sort_key=(self.rank, 1, device, 3, 0, pid),
            ),
        )

    def relabel_lanes(self) -> None:
        """Name CPU lanes once every name source is known (NVTX thread names come with the NVTX table), and add
        the pid to stream lanes where several processes share a device."""
        for lane, gtid in self.cpu_lane_gtid.items():
            ln = self.builder.lanes[lane]
            self.builder.replace_lane(
                lane, dataclasses.replace(ln, name=self.thread_label(gtid), process_name=self.process_label(gtid))
            )
        self.rename_lanes_with_pids()

    def rename_lanes_with_pids(self) -> None:
        """Where several processes share a device, add the pid to their stream lanes' names."""
        per_device: dict[int, set[int]] = {}
        for ln in self.builder.lanes:
            if ln.kind == LaneKind.GPU_STREAM:
                per_device.setdefault(ln.device, set()).add(ln.pid)
        for i, ln in enumerate(self.builder.lanes):
            if ln.kind == LaneKind.GPU_STREAM and len(per_device.get(ln.device, ())) > 1:
                self.builder.replace_lane(i, dataclasses.replace(ln, name=f"{ln.name} (pid {ln.pid})"))

    def add(self, batch: Batch) -> None:
        """Queue a batch of events (added to the builder once every table is read)."""
        if self.store is not None:
            self.store.put(batch)
        self.batches.append(batch)
        self.counts[batch.table] = self.counts.get(batch.table, 0) + len(batch)


def stream_codes(proc_code: I64, devices: I64, streams: I64) -> tuple[I64, I64, I64]:
    """The (process, device, stream) factorization :meth:`Context.stream_lanes` registers lanes from:
    ``(distinct process code << 32 | device, distinct pd code << 32 | stream, code of each row)``. Pure numpy
    (no shared state), so it may run on a reader thread."""
    pd_values, pd_code = factorize((proc_code << 32) | (devices & 0xFFFFFFFF))
    keys, code = factorize((pd_code << 32) | (streams & 0xFFFFFFFF))
    return pd_values, keys, code


def gpu_span_parts(start: I64, dur: I64, gpid: I64, device: I64) -> list[tuple[int, int, int, int]]:
    """Per (pid, device) of GPU rows with ``start > 0``: ``(pid << 32 | device, first start, last end, the first
    row's globalPid)`` (a NULL end counts as the smallest int64). Pure numpy: may run on a reader thread."""
    keep = start > 0
    if not keep.any():
        return []
    s, g, d = start[keep], gpid[keep], device[keep]
    e = np.where(dur[keep] == NULL_DUR, np.iinfo(np.int64).min, s + dur[keep])
    keys, code = factorize((pid_of(g) << 32) | (d & 0xFFFFFFFF))
    if keys.shape[0] == 1:
        lo, hi = s.min(keepdims=True), e.max(keepdims=True)
    else:
        lo = np.full(keys.shape[0], np.iinfo(np.int64).max, dtype=np.int64)
        hi = np.full(keys.shape[0], np.iinfo(np.int64).min, dtype=np.int64)
        np.minimum.at(lo, code, s)
        np.maximum.at(hi, code, e)
    first = np.zeros(keys.shape[0], dtype=np.int64)
    first[code[::-1]] = g[::-1]
    return list(zip(keys.tolist(), lo.tolist(), hi.tolist(), first.tolist(), strict=True))


def kind_array(kind: Kind, n: int) -> npt.NDArray[np.uint8]:
    """A column of one kind."""
    return np.full(n, int(kind), dtype=np.uint8)
