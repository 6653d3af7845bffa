"""The trace model: one frozen, columnar :class:`Trace`, the same for every input format.

Times are integer nanoseconds. ``Trace.start_ns`` is relative to the trace's first event; the file's own time
base is ``start_ns + meta.t0_ns`` (minus the rank's clock shift for aligned multi-rank traces, see
:meth:`Trace.file_time_ns`).

Events are sorted by ``(lane, start, -duration)``, so each lane is one contiguous slice
(``lane_offsets[i]:lane_offsets[i+1]``), and every event has a ``depth``: the row inside its lane in which it
is drawn. Rows never hold two overlapping events; nested events get deeper rows; no event is ever dropped.

Per-kind details live in side tables keyed by event index (:class:`KernelTable`, :class:`CopyTable`);
launch → GPU-op links and other arrows in :class:`FlowTable`. Build a trace with :class:`TraceBuilder`.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
I16 = npt.NDArray[np.int16]
U8 = npt.NDArray[np.uint8]
F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]


class Kind(IntEnum):
    """What an event is. Stored as ``uint8`` in ``Trace.kind``."""

    KERNEL = 0
    MEMCPY = 1
    MEMSET = 2
    API = 3  # CUDA runtime / driver API call on a CPU thread
    SYNC = 4  # host-side wait (Kineto cuda_sync, nsys CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)
    CPU_OP = 5  # framework operator (ATen op, XLA host op)
    RANGE = 6  # annotation range on a CPU thread (record_function, NVTX push/pop, JAX TraceAnnotation)
    GPU_RANGE = 7  # annotation projected on a GPU (Kineto gpu_user_annotation)
    PYTHON = 8  # Python stack frame
    GRAPH = 9  # whole CUDA-graph execution on the GPU (nsys graph trace)
    MARKER = 10  # instant / NVTX mark
    OSRT = 11  # OS runtime call (nsys OSRT_API: poll, pthread_cond_wait ...)
    OVERHEAD = 12  # profiler bookkeeping
    UVM = 13  # unified-memory migration
    OTHER = 14


#: Kinds that make a GPU busy (detectors.md §2.1).
GPU_BUSY_KINDS: tuple[Kind, ...] = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.GRAPH)
#: Kinds that run on a GPU.
GPU_KINDS: tuple[Kind, ...] = (*GPU_BUSY_KINDS, Kind.UVM)

#: The key each kind has in the ``events`` object of the JSON contract.
KIND_JSON_KEY: dict[Kind, str] = {
    Kind.KERNEL: "kernel",
    Kind.MEMCPY: "memcpy",
    Kind.MEMSET: "memset",
    Kind.API: "api",
    Kind.CPU_OP: "cpu_op",
    Kind.RANGE: "range",
    Kind.GPU_RANGE: "range",
    Kind.PYTHON: "python",
}


class LaneKind(IntEnum):
    """What a lane shows."""

    CPU_THREAD = 0
    GPU_STREAM = 1
    GPU_RANGES = 2  # annotation bands of one GPU (Kineto gpu_user_annotation)
    UVM = 3  # unified-memory migrations of one GPU
    ASYNC = 4  # async (b/e) and cross-thread ranges of one process
    OTHER = 5  # profiler bookkeeping, unknown producers


class CopyKind(IntEnum):
    """Direction of a copy; values follow CUPTI's ``CUpti_ActivityMemcpyKind`` (and nsys' ``copyKind``)."""

    UNKNOWN = 0
    HTOD = 1
    DTOH = 2
    HTOA = 3
    ATOH = 4
    ATOA = 5
    ATOD = 6
    DTOA = 7
    DTOD = 8
    HTOH = 9
    PTOP = 10
    UVM_HTOD = 11
    UVM_DTOH = 12
    UVM_DTOD = 13


COPY_KIND_LABEL: dict[int, str] = {
    0: "unknown",
    1: "HtoD",
    2: "DtoH",
    3: "HtoA",
    4: "AtoH",
    5: "AtoA",
    6: "AtoD",
    7: "DtoA",
    8: "DtoD",
    9: "HtoH",
    10: "PtoP",
    11: "UVM",
    12: "UVM",
    13: "UVM",
}


class MemKind(IntEnum):
    """Memory kind of a copy's source or destination; values follow CUPTI's ``CUpti_ActivityMemoryKind``."""

    UNKNOWN = 0
    PAGEABLE = 1
    PINNED = 2
    DEVICE = 3
    ARRAY = 4
    MANAGED = 5
    DEVICE_STATIC = 6
    MANAGED_STATIC = 7


MEM_KIND_LABEL: dict[int, str] = {
    0: "unknown",
    1: "pageable",
    2: "pinned",
    3: "device",
    4: "array",
    5: "managed",
    6: "device static",
    7: "managed static",
}


class FlowKind(IntEnum):
    """What an arrow between two events means."""

    LAUNCH = 0  # CPU launch call -> GPU op (Kineto ac2g, nsys correlationId)
    FWDBWD = 1  # forward op -> its backward op (Kineto fwdbwd)
    OTHER = 2


@dataclass(frozen=True)
class Lane:
    """One horizontal track of the timeline.

    ``pid``/``tid`` identify a CPU thread (tid is ``-1`` for GPU lanes); ``device``/``stream`` a GPU stream
    (``-1`` on CPU lanes). ``sort_key`` orders lanes on screen; lane ids are positions in ``Trace.lanes``.
    """

    kind: LaneKind
    name: str
    rank: int = 0
    pid: int = -1
    tid: int = -1
    device: int = -1
    stream: int = -1
    process_name: str = ""
    sort_key: tuple[Any, ...] = ()


@dataclass(frozen=True)
class GpuInfo:
    """One GPU as the profile describes it. Sizes in bytes, clocks in kHz, bandwidth in bytes/s."""

    device: int
    name: str
    rank: int = 0
    sm_count: int | None = None
    total_memory: int | None = None
    compute_capability: str | None = None
    memory_bandwidth: float | None = None
    clock_khz: int | None = None
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CounterSeries:
    """A named numeric series over time (Chrome ``C`` events, nsys metrics). ``ts_ns`` relative to trace start."""

    name: str
    ts_ns: I64
    values: F64
    rank: int = 0
    pid: int = -1


@dataclass(frozen=True)
class TraceMeta:
    """Everything about a trace that is not an event.

    ``t0_ns`` is the file-time (ns) of relative time 0. ``rank_shift_ns`` maps a rank to the shift (ns) that was
    added to its events when clocks were aligned; file time of an event = start_ns + t0_ns - shift.
    """

    format: str  # "kineto" | "chrome" | "jax" | "nsys"
    source: tuple[str, ...] = ()
    producer: str = ""
    t0_ns: int = 0
    gpus: tuple[GpuInfo, ...] = ()
    ranks: tuple[int, ...] = (0,)
    world_size: int | None = None
    rank_shift_ns: dict[int, int] = field(default_factory=dict)
    truncated_bytes: int = 0
    warnings: tuple[str, ...] = ()
    properties: dict[str, Any] = field(default_factory=dict)


#: ``TraceMeta.properties`` key: how many ``python_function`` events ``include_python=False`` left out
PYTHON_LEFT_OUT = "python_function_left_out"


def python_left_out(trace: Trace) -> int:
    """``python_function`` events left out of ``trace`` on request (``--no-python``), over every rank."""
    props = trace.meta.properties
    ranks = props.get("ranks")
    per_rank: list[Any] = ranks if isinstance(ranks, list) else [props]
    total = 0
    for p in per_rank:
        if isinstance(p, dict):
            total += int(p.get(PYTHON_LEFT_OUT, 0))
    return total


def _frozen(a: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    a.flags.writeable = False
    return a


@dataclass(frozen=True)
class KernelTable:
    """Launch geometry and resources of kernels, one row per kernel event (``event`` is sorted).

    ``grid``/``block`` are (n, 3) int32; ``shared_static``/``shared_dynamic`` bytes; ``registers`` per thread;
    ``occupancy`` Kineto's "est. achieved occupancy %" (NaN when unknown); ``raw_name`` the mangled or raw name
    id (``-1`` when the event name is already the raw name); ``graph_id`` ``-1`` outside CUDA graphs.
    """

    event: I64
    grid: I32
    block: I32
    registers: I32
    shared_static: I32
    shared_dynamic: I32
    occupancy: F32
    blocks_per_sm: F32
    warps_per_sm: F32
    raw_name: I32
    graph_id: I64

    @staticmethod
    def empty() -> KernelTable:
        return KernelTable(**_empty_columns(KernelTable))

    def __len__(self) -> int:
        return int(self.event.shape[0])


@dataclass(frozen=True)
class CopyTable:
    """Bytes, direction and memory kinds of memcpy / memset / UVM events (``event`` sorted).

    ``direction`` is a :class:`CopyKind` (0 for memsets), ``src_kind``/``dst_kind`` :class:`MemKind` (a memset's
    memory kind is in ``dst_kind``), ``is_async`` 1/0, or -1 when unknown.
    """

    event: I64
    bytes: I64
    direction: U8
    src_kind: U8
    dst_kind: U8
    is_async: npt.NDArray[np.int8]

    @staticmethod
    def empty() -> CopyTable:
        return CopyTable(**_empty_columns(CopyTable))

    def __len__(self) -> int:
        return int(self.event.shape[0])


@dataclass(frozen=True)
class CollectiveTable:
    """What the profiler recorded about collective (NCCL) kernels, one row per kernel event (``event`` sorted).

    ``op`` is the interned collective name as the framework wrote it (``allreduce``), ``group`` the interned
    process-group name (``-1`` unknown), ``group_size`` ranks in the group (0 unknown), ``bytes_in``/``bytes_out``
    message sizes in bytes (``-1`` unknown), ``dtype`` the interned element type name (``-1`` unknown).
    """

    event: I64
    op: I32
    group: I32
    group_size: I32
    bytes_in: I64
    bytes_out: I64
    dtype: I32

    @staticmethod
    def empty() -> CollectiveTable:
        return CollectiveTable(**_empty_columns(CollectiveTable))

    def __len__(self) -> int:
        return int(self.event.shape[0])


@dataclass(frozen=True)
class FlowTable:
    """Arrows between events: ``src`` → ``dst`` event indices, with a :class:`FlowKind`."""

    src: I64
    dst: I64
    kind: U8

    @staticmethod
    def empty() -> FlowTable:
        return FlowTable(**_empty_columns(FlowTable))

    def __len__(self) -> int:
        return int(self.src.shape[0])


_SIDE_DTYPES: dict[str, dict[str, Any]] = {
    "KernelTable": {
        "event": np.int64,
        "grid": (np.int32, 3),
        "block": (np.int32, 3),
        "registers": np.int32,
        "shared_static": np.int32,
        "shared_dynamic": np.int32,
        "occupancy": np.float32,
        "blocks_per_sm": np.float32,
        "warps_per_sm": np.float32,
        "raw_name": np.int32,
        "graph_id": np.int64,
    },
    "CopyTable": {
        "event": np.int64,
        "bytes": np.int64,
        "direction": np.uint8,
        "src_kind": np.uint8,
        "dst_kind": np.uint8,
        "is_async": np.int8,
    },
    "FlowTable": {"src": np.int64, "dst": np.int64, "kind": np.uint8},
    "CollectiveTable": {
        "event": np.int64,
        "op": np.int32,
        "group": np.int32,
        "group_size": np.int32,
        "bytes_in": np.int64,
        "bytes_out": np.int64,
        "dtype": np.int32,
    },
}


def side_table_dtypes(cls: type) -> dict[str, Any]:
    """Column name → numpy dtype (or ``(dtype, width)`` for 2-D columns) of a side table class."""
    return _SIDE_DTYPES[cls.__name__]


def _empty_columns(cls: type) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, dt in side_table_dtypes(cls).items():
        out[name] = np.zeros((0, dt[1]) if isinstance(dt, tuple) else 0, dtype=dt[0] if isinstance(dt, tuple) else dt)
    return out


EVENT_COLUMNS: dict[str, Any] = {
    "start_ns": np.int64,
    "dur_ns": np.int64,
    "kind": np.uint8,
    "lane": np.int32,
    "name": np.int32,
    "depth": np.int16,
    "corr": np.int64,
    "ext": np.int64,
}


@dataclass(frozen=True, eq=False)
class Trace:
    """A loaded profile: events as numpy columns plus lanes, names, side tables, flows, counters and metadata.

    Columns (one entry per event, sorted by lane, then start, then longest first):
    ``start_ns`` int64 ns from the trace start; ``dur_ns`` int64 ns (≥ 0); ``kind`` uint8 :class:`Kind`;
    ``lane`` int32 index into ``lanes``; ``name`` int32 index into ``names``; ``depth`` int16 row in the lane;
    ``corr`` int64 correlation id scoped to the event's process (``-1`` none); ``ext`` int64 Kineto External id
    (``-1`` none).
    """

    start_ns: I64
    dur_ns: I64
    kind: U8
    lane: I32
    name: I32
    depth: I16
    corr: I64
    ext: I64
    names: tuple[str, ...]
    lanes: tuple[Lane, ...]
    lane_offsets: I64
    kernels: KernelTable
    copies: CopyTable
    flows: FlowTable
    counters: tuple[CounterSeries, ...]
    meta: TraceMeta
    collectives: CollectiveTable = field(default_factory=CollectiveTable.empty)

    # ---- sizes -------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.start_ns.shape[0])

    @property
    def n_events(self) -> int:
        """Number of events."""
        return len(self)

    @cached_property
    def end_ns(self) -> I64:
        """End of every event (ns from trace start)."""
        return _frozen(self.start_ns + self.dur_ns)

    @cached_property
    def span_ns(self) -> int:
        """Time from the first event's start to the last event's end (ns)."""
        return int(self.end_ns.max()) if len(self) else 0

    # ---- lanes -------------------------------------------------------------------------------------------
    def lane_slice(self, lane: int) -> slice:
        """The events of one lane, as a slice of every column (sorted by start)."""
        return slice(int(self.lane_offsets[lane]), int(self.lane_offsets[lane + 1]))

    @cached_property
    def lane_rows(self) -> I32:
        """Number of rows (max depth + 1) per lane; 0 for an empty lane."""
        rows = np.zeros(len(self.lanes), dtype=np.int32)
        if len(self):
            np.maximum.at(rows, self.lane, self.depth.astype(np.int32) + 1)
        return _frozen(rows)

    @cached_property
    def lane_kind(self) -> U8:
        """:class:`LaneKind` of each lane."""
        return _frozen(np.array([int(ln.kind) for ln in self.lanes], dtype=np.uint8))

    @cached_property
    def lane_rank(self) -> I32:
        """Rank of each lane."""
        return _frozen(np.array([ln.rank for ln in self.lanes], dtype=np.int32))

    @cached_property
    def lane_device(self) -> I32:
        """GPU device of each lane (``-1`` for CPU lanes)."""
        return _frozen(np.array([ln.device for ln in self.lanes], dtype=np.int32))

    @cached_property
    def lane_pid(self) -> I64:
        """Process id of each lane (``-1`` when the lane has none)."""
        return _frozen(np.array([ln.pid for ln in self.lanes], dtype=np.int64))

    @cached_property
    def lane_order(self) -> I32:
        """Lane ids in display order."""
        keys = [(ln.sort_key, i) for i, ln in enumerate(self.lanes)]
        return _frozen(np.array([i for _, i in sorted(keys, key=lambda k: (*_sortable(k[0]), k[1]))], dtype=np.int32))

    # ---- rows --------------------------------------------------------------------------------------------
    @cached_property
    def _row_index(self) -> tuple[I64, dict[tuple[int, int], tuple[int, int]]]:
        order = np.lexsort((self.start_ns, self.depth, self.lane))
        lane_s, depth_s = self.lane[order], self.depth[order]
        if len(order):
            brk = np.flatnonzero((np.diff(lane_s) != 0) | (np.diff(depth_s) != 0)) + 1
            starts = np.concatenate(([0], brk))
            ends = np.concatenate((brk, [len(order)]))
            index = {(int(lane_s[s]), int(depth_s[s])): (int(s), int(e)) for s, e in zip(starts, ends, strict=True)}
        else:
            index = {}
        return _frozen(order.astype(np.int64)), index

    def row_events(self, lane: int, depth: int) -> I64:
        """Indices of the events drawn in one row of a lane, sorted by start (they never overlap)."""
        order, index = self._row_index
        s, e = index.get((lane, depth), (0, 0))
        return order[s:e]

    # ---- names -------------------------------------------------------------------------------------------
    @cached_property
    def name_ids(self) -> dict[str, int]:
        """Name → id, the inverse of ``names``."""
        return {n: i for i, n in enumerate(self.names)}

    def event_name(self, i: int) -> str:
        """The full name of event ``i``."""
        return self.names[int(self.name[i])]

    # ---- kinds -------------------------------------------------------------------------------------------
    def of_kind(self, *kinds: Kind) -> I64:
        """Indices of every event whose kind is one of ``kinds``, in index order."""
        return np.flatnonzero(np.isin(self.kind, np.array([int(k) for k in kinds], dtype=np.uint8))).astype(np.int64)

    @cached_property
    def event_device(self) -> I32:
        """GPU device of every event's lane (``-1`` on CPU lanes)."""
        return _frozen(self.lane_device[self.lane])

    @cached_property
    def event_rank(self) -> I32:
        """Rank of every event."""
        return _frozen(self.lane_rank[self.lane])

    def count_by_kind(self) -> dict[Kind, int]:
        """Number of events of every kind present."""
        counts = np.bincount(self.kind, minlength=len(Kind))
        return {Kind(k): int(c) for k, c in enumerate(counts) if c}

    # ---- flows -------------------------------------------------------------------------------------------
    @cached_property
    def launch_of(self) -> I64:
        """For every event, the index of the CPU call that launched it (``-1`` when none is known)."""
        out = np.full(len(self), -1, dtype=np.int64)
        sel = self.flows.kind == FlowKind.LAUNCH
        out[self.flows.dst[sel]] = self.flows.src[sel]
        return _frozen(out)

    # ---- side tables -------------------------------------------------------------------------------------
    def kernel_row(self, event: int) -> int:
        """Row of ``kernels`` for a kernel event, or ``-1``."""
        return _side_row(self.kernels.event, event)

    def copy_row(self, event: int) -> int:
        """Row of ``copies`` for a memcpy/memset/UVM event, or ``-1``."""
        return _side_row(self.copies.event, event)

    # ---- time --------------------------------------------------------------------------------------------
    def file_time_ns(self, rel_ns: int, rank: int = 0) -> int:
        """A relative time converted back into the input file's own time base (ns)."""
        return int(rel_ns) + self.meta.t0_ns - self.meta.rank_shift_ns.get(rank, 0)

    @property
    def devices(self) -> list[tuple[int, int]]:
        """(rank, device) of every GPU that has a lane, sorted."""
        pairs = {(ln.rank, ln.device) for ln in self.lanes if ln.device >= 0}
        return sorted(pairs)

    def gpu_info(self, rank: int, device: int) -> GpuInfo | None:
        """What the profile says about one GPU, if anything."""
        for g in self.meta.gpus:
            if g.rank == rank and g.device == device:
                return g
        return None

    def with_meta(self, **changes: Any) -> Trace:
        """A copy with some metadata fields replaced (the columns are shared, not copied)."""
        return dataclasses.replace(self, meta=dataclasses.replace(self.meta, **changes))


def _side_row(events: I64, event: int) -> int:
    pos = int(np.searchsorted(events, event))
    return pos if pos < len(events) and int(events[pos]) == event else -1


def _sortable(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """Make a sort key of mixed ints and strings comparable."""
    return tuple((0, k, "") if isinstance(k, (int, float)) else (1, 0, str(k)) for k in key)


# ---------------------------------------------------------------------------------------------------------
# depth assignment
# ---------------------------------------------------------------------------------------------------------
def assign_depths(start: I64, dur: I64, lane_offsets: I64) -> I16:
    """Row of every event inside its lane so that no row holds two overlapping events.

    Events must be sorted by (lane, start, -dur). Properly nested events get their nesting depth (a child is one
    row below its parent); a zero-length event occupies its instant. Vectorized per lane; lanes whose events
    overlap without nesting fall back to greedy first-free-row packing, which never drops an event.
    """
    n = start.shape[0]
    depth = np.zeros(n, dtype=np.int64)
    if n == 0:
        return depth.astype(np.int16)
    # doubled time so that a zero-length event occupies [2s, 2s+1)
    s2 = start * 2
    e2 = np.where(dur > 0, (start + dur) * 2, s2 + 1)
    for li in range(len(lane_offsets) - 1):
        a, b = int(lane_offsets[li]), int(lane_offsets[li + 1])
        if b - a <= 1:
            continue
        ls, le = s2[a:b], e2[a:b]
        # quick exit: nothing overlaps its predecessor's running maximum end → one row
        prev_max = np.maximum.accumulate(le)
        if not np.any(ls[1:] < prev_max[:-1]):
            continue
        cand = np.arange(b - a, dtype=np.int64) - np.searchsorted(np.sort(le), ls, side="right")
        if _rows_are_disjoint(ls, le, cand):
            depth[a:b] = cand
        else:
            depth[a:b] = _greedy_rows(ls, le)
    if depth.max(initial=0) > np.iinfo(np.int16).max:
        raise OverflowError("more than 32767 overlapping events in one lane")
    return depth.astype(np.int16)


def _rows_are_disjoint(ls: I64, le: I64, rows: I64) -> bool:
    if rows.min() < 0:
        return False
    order = np.lexsort((ls, rows))
    r, s, e = rows[order], ls[order], le[order]
    same = r[1:] == r[:-1]
    return not bool(np.any(same & (s[1:] < e[:-1])))


def _greedy_rows(ls: I64, le: I64) -> I64:
    """First-free-row packing (events sorted by start): O(n log n), used only for non-nested overlaps."""
    rows = np.empty(ls.shape[0], dtype=np.int64)
    free: list[int] = []  # min-heap of free row numbers
    busy: list[tuple[int, int]] = []  # min-heap of (end, row)
    next_row = 0
    for i, (s, e) in enumerate(zip(ls.tolist(), le.tolist(), strict=True)):
        while busy and busy[0][0] <= s:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            row = heapq.heappop(free)
        else:
            row, next_row = next_row, next_row + 1
        rows[i] = row
        heapq.heappush(busy, (e, row))
    return rows


# ---------------------------------------------------------------------------------------------------------
# building
# ---------------------------------------------------------------------------------------------------------
class StringTable:
    """Interns strings to dense int ids."""

    def __init__(self, initial: Iterable[str] = ()) -> None:
        self.ids: dict[str, int] = {}
        self.strings: list[str] = []
        for s in initial:
            self.intern(s)

    def intern(self, s: str) -> int:
        """The id of ``s``, adding it when new."""
        i = self.ids.get(s)
        if i is None:
            i = self.ids[s] = len(self.strings)
            self.strings.append(s)
        return i

    def __len__(self) -> int:
        return len(self.strings)


@dataclass
class _Chunk:
    cols: dict[str, np.ndarray[Any, Any]]


class TraceBuilder:
    """Collects events column-wise from a parser, then sorts, packs rows and freezes them into a :class:`Trace`.

    Event indices handed out by :meth:`add_events` are provisional (append order); side tables and flows given
    with those indices are re-keyed to the final order by :meth:`build`.
    """

    def __init__(self, fmt: str) -> None:
        self.format = fmt
        self.names = StringTable()
        self.lanes: list[Lane] = []
        self._lane_ids: dict[Any, int] = {}
        self._events: list[_Chunk] = []
        self._n = 0
        self._kernels: list[dict[str, np.ndarray[Any, Any]]] = []
        self._copies: list[dict[str, np.ndarray[Any, Any]]] = []
        self._flows: list[dict[str, np.ndarray[Any, Any]]] = []
        self._collectives: list[dict[str, np.ndarray[Any, Any]]] = []
        self.counters: list[CounterSeries] = []
        self.warnings: list[str] = []

    # lanes ------------------------------------------------------------------------------------------------
    def lane(self, key: Any, make: Lane | None = None) -> int:
        """The id of the lane registered under ``key``; registers ``make`` first when the key is new."""
        lid = self._lane_ids.get(key)
        if lid is None:
            if make is None:
                raise KeyError(key)
            lid = self._lane_ids[key] = len(self.lanes)
            self.lanes.append(make)
        return lid

    def has_lane(self, key: Any) -> bool:
        """Whether a lane is registered under ``key``."""
        return key in self._lane_ids

    def replace_lane(self, lane_id: int, lane: Lane) -> None:
        """Replace a lane's description (names learnt late from metadata events)."""
        self.lanes[lane_id] = lane

    # events -----------------------------------------------------------------------------------------------
    @property
    def n_events(self) -> int:
        """Events added so far."""
        return self._n

    def add_events(
        self,
        *,
        start_ns: npt.ArrayLike,
        dur_ns: npt.ArrayLike,
        kind: npt.ArrayLike,
        lane: npt.ArrayLike,
        name: npt.ArrayLike,
        corr: npt.ArrayLike | None = None,
        ext: npt.ArrayLike | None = None,
    ) -> I64:
        """Append events given as equally long columns; returns their provisional indices.

        ``start_ns`` is in the file's time base (the builder makes times relative at :meth:`build`).
        Negative durations are clamped to 0 by the caller's choice — here they raise ``ValueError``.
        """
        s = np.asarray(start_ns, dtype=np.int64)
        n = s.shape[0]
        cols = {
            "start_ns": s,
            "dur_ns": _broadcast(dur_ns, n, np.int64),
            "kind": _broadcast(kind, n, np.uint8),
            "lane": _broadcast(lane, n, np.int32),
            "name": _broadcast(name, n, np.int32),
            "corr": _broadcast(-1 if corr is None else corr, n, np.int64),
            "ext": _broadcast(-1 if ext is None else ext, n, np.int64),
        }
        for k, v in cols.items():
            if v.shape != (n,):
                raise ValueError(f"column {k} has shape {v.shape}, expected ({n},)")
        if n and cols["dur_ns"].min() < 0:
            raise ValueError("negative durations must be clamped by the parser")
        self._events.append(_Chunk(cols))
        first = self._n
        self._n += n
        return np.arange(first, self._n, dtype=np.int64)

    def add_kernels(self, **cols: npt.ArrayLike) -> None:
        """Append kernel side-table rows (``event`` = provisional indices); missing columns get defaults."""
        self._kernels.append(_side_columns(KernelTable, cols))

    def add_copies(self, **cols: npt.ArrayLike) -> None:
        """Append copy side-table rows (``event`` = provisional indices); missing columns get defaults."""
        self._copies.append(_side_columns(CopyTable, cols))

    def add_collectives(self, **cols: npt.ArrayLike) -> None:
        """Append collective side-table rows (``event`` = provisional indices; name columns are interned ids)."""
        self._collectives.append(_side_columns(CollectiveTable, cols))

    def add_flows(self, src: npt.ArrayLike, dst: npt.ArrayLike, kind: FlowKind | npt.ArrayLike) -> None:
        """Append arrows between provisional event indices."""
        self._flows.append(_side_columns(FlowTable, {"src": src, "dst": dst, "kind": kind}))

    def warn(self, message: str) -> None:
        """Record a warning for the user (shown by every command and the app)."""
        if message not in self.warnings:
            self.warnings.append(message)

    # build ------------------------------------------------------------------------------------------------
    def build(self, meta: TraceMeta, *, t0_ns: int | None = None) -> Trace:
        """Sort, make times relative, pack rows, re-key side tables, and freeze.

        ``t0_ns`` (file time of relative 0) defaults to the earliest event start.
        """
        cols = {
            k: (np.concatenate([c.cols[k] for c in self._events]) if self._events else np.zeros(0, dtype=dt))
            for k, dt in EVENT_COLUMNS.items()
            if k != "depth"
        }
        n = cols["start_ns"].shape[0]
        if t0_ns is None:
            t0_ns = int(cols["start_ns"].min()) if n else 0
        start = cols["start_ns"] - np.int64(t0_ns)
        n_lanes = len(self.lanes)
        order = np.lexsort((-cols["dur_ns"], start, cols["lane"]))
        out = {k: _frozen(v[order]) for k, v in cols.items() if k != "start_ns"}
        start = start[order]
        lane_sorted = out["lane"]
        lane_offsets = np.searchsorted(lane_sorted, np.arange(n_lanes + 1), side="left").astype(np.int64)
        depth = assign_depths(start, out["dur_ns"], lane_offsets)
        inverse = np.empty(n, dtype=np.int64)
        inverse[order] = np.arange(n, dtype=np.int64)

        kernels = _build_side(KernelTable, self._kernels, inverse)
        copies = _build_side(CopyTable, self._copies, inverse)
        flows = _build_flows(self._flows, inverse)
        collectives = _build_side(CollectiveTable, self._collectives, inverse)
        counters = tuple(
            dataclasses.replace(c, ts_ns=_frozen(c.ts_ns - np.int64(t0_ns)), values=_frozen(c.values))
            for c in self.counters
        )
        meta = dataclasses.replace(
            meta,
            t0_ns=int(t0_ns),
            warnings=tuple(dict.fromkeys((*meta.warnings, *self.warnings))),
        )
        return Trace(
            start_ns=_frozen(start),
            dur_ns=out["dur_ns"],
            kind=out["kind"],
            lane=out["lane"],
            name=out["name"],
            depth=_frozen(depth),
            corr=out["corr"],
            ext=out["ext"],
            names=tuple(self.names.strings),
            lanes=tuple(self.lanes),
            lane_offsets=_frozen(lane_offsets),
            kernels=kernels,
            copies=copies,
            flows=flows,
            counters=counters,
            meta=meta,
            collectives=collectives,
        )


def _broadcast(v: npt.ArrayLike, n: int, dtype: Any) -> np.ndarray[Any, Any]:
    a = np.asarray(v, dtype=dtype)
    return np.full(n, a, dtype=dtype) if a.ndim == 0 else a


_SIDE_DEFAULTS: dict[str, Any] = {
    "occupancy": np.nan,
    "blocks_per_sm": np.nan,
    "warps_per_sm": np.nan,
    "raw_name": -1,
    "graph_id": -1,
    "is_async": -1,
    "group": -1,
    "bytes_in": -1,
    "bytes_out": -1,
    "dtype": -1,
}


def _side_columns(cls: type, cols: dict[str, npt.ArrayLike]) -> dict[str, np.ndarray[Any, Any]]:
    dtypes = side_table_dtypes(cls)
    unknown = set(cols) - set(dtypes)
    if unknown:
        raise TypeError(f"{cls.__name__} has no columns {sorted(unknown)}")
    first = "event" if "event" in dtypes else "src"
    n = np.asarray(cols[first]).shape[0]
    out: dict[str, np.ndarray[Any, Any]] = {}
    for name, dt in dtypes.items():
        if isinstance(dt, tuple):
            v = cols.get(name)
            a = np.zeros((n, dt[1]), dtype=dt[0]) if v is None else np.asarray(v, dtype=dt[0]).reshape(n, dt[1])
        else:
            a = _broadcast(cols.get(name, _SIDE_DEFAULTS.get(name, 0)), n, dt)
        out[name] = a
    return out


def _concat_side(cls: type, parts: Sequence[dict[str, np.ndarray[Any, Any]]]) -> dict[str, np.ndarray[Any, Any]]:
    if not parts:
        return _empty_columns(cls)
    return {k: np.concatenate([p[k] for p in parts]) for k in side_table_dtypes(cls)}


def _build_side(cls: type, parts: Sequence[dict[str, np.ndarray[Any, Any]]], inverse: I64) -> Any:
    cols = _concat_side(cls, parts)
    if cols["event"].shape[0]:
        cols["event"] = inverse[cols["event"]]
        order = np.argsort(cols["event"], kind="stable")
        cols = {k: v[order] for k, v in cols.items()}
        dup = np.flatnonzero(np.diff(cols["event"]) == 0)
        if dup.size:
            raise ValueError(f"{cls.__name__}: {dup.size} events have two rows")
    return cls(**{k: _frozen(v) for k, v in cols.items()})


def _build_flows(parts: Sequence[dict[str, np.ndarray[Any, Any]]], inverse: I64) -> FlowTable:
    cols = _concat_side(FlowTable, parts)
    if cols["src"].shape[0]:
        cols["src"] = inverse[cols["src"]]
        cols["dst"] = inverse[cols["dst"]]
        order = np.lexsort((cols["src"], cols["dst"], cols["kind"]))
        cols = {k: v[order] for k, v in cols.items()}
    return FlowTable(**{k: _frozen(v) for k, v in cols.items()})


def merge_traces(traces: Sequence[Trace], *, fmt: str | None = None) -> Trace:
    """Concatenate several traces (ranks) into one: lanes and names are re-indexed, times put on one axis.

    Each input's absolute time is ``start_ns + meta.t0_ns``; the result's relative 0 is the earliest of them.
    Lane ranks are kept as they are in the inputs.
    """
    if len(traces) == 1:
        return traces[0]
    t0 = min(t.meta.t0_ns + (int(t.start_ns.min()) if len(t) else 0) for t in traces)
    names = StringTable()
    lanes: list[Lane] = []
    cols: dict[str, list[np.ndarray[Any, Any]]] = {k: [] for k in EVENT_COLUMNS}
    kernels: list[dict[str, np.ndarray[Any, Any]]] = []
    copies: list[dict[str, np.ndarray[Any, Any]]] = []
    colls: list[dict[str, np.ndarray[Any, Any]]] = []
    flows: list[dict[str, np.ndarray[Any, Any]]] = []
    counters: list[CounterSeries] = []
    offset = 0
    for t in traces:
        remap = np.array([names.intern(s) for s in t.names], dtype=np.int32)
        lane_base = len(lanes)
        lanes.extend(t.lanes)
        shift = np.int64(t.meta.t0_ns - t0)
        cols["start_ns"].append(t.start_ns + shift)
        cols["dur_ns"].append(t.dur_ns)
        cols["kind"].append(t.kind)
        cols["lane"].append(t.lane + np.int32(lane_base))
        cols["name"].append(remap[t.name] if len(t) else t.name)
        cols["depth"].append(t.depth)
        cols["corr"].append(t.corr)
        cols["ext"].append(t.ext)
        k = {f.name: getattr(t.kernels, f.name) for f in dataclasses.fields(KernelTable)}
        k["event"] = k["event"] + offset
        k["raw_name"] = (
            np.where(k["raw_name"] >= 0, remap[np.maximum(k["raw_name"], 0)], -1).astype(np.int32)
            if len(remap)
            else k["raw_name"]
        )
        kernels.append(k)
        c = {f.name: getattr(t.copies, f.name) for f in dataclasses.fields(CopyTable)}
        c["event"] = c["event"] + offset
        copies.append(c)
        co = {f.name: getattr(t.collectives, f.name) for f in dataclasses.fields(CollectiveTable)}
        co["event"] = co["event"] + offset
        for col in ("op", "group", "dtype"):
            ids = co[col]
            co[col] = np.where(ids >= 0, remap[np.maximum(ids, 0)], -1).astype(np.int32) if len(remap) else ids
        colls.append(co)
        flows.append({"src": t.flows.src + offset, "dst": t.flows.dst + offset, "kind": t.flows.kind})
        counters.extend(dataclasses.replace(cs, ts_ns=cs.ts_ns + shift) for cs in t.counters)
        offset += len(t)
    merged_cols = {k: np.concatenate(v) for k, v in cols.items()}
    lane_offsets = np.searchsorted(merged_cols["lane"], np.arange(len(lanes) + 1), side="left").astype(np.int64)
    metas = [t.meta for t in traces]
    meta = TraceMeta(
        format=fmt or metas[0].format,
        source=tuple(s for m in metas for s in m.source),
        producer=" / ".join(dict.fromkeys(m.producer for m in metas if m.producer)),
        t0_ns=t0,
        gpus=tuple(g for m in metas for g in m.gpus),
        ranks=tuple(sorted({r for m in metas for r in m.ranks})),
        world_size=max((m.world_size or 0 for m in metas), default=0) or None,
        rank_shift_ns={r: s for m in metas for r, s in m.rank_shift_ns.items()},
        truncated_bytes=sum(m.truncated_bytes for m in metas),
        warnings=tuple(dict.fromkeys(w for m in metas for w in m.warnings)),
        properties={"ranks": [m.properties for m in metas]},
    )
    return Trace(
        **{k: _frozen(v) for k, v in merged_cols.items()},
        names=tuple(names.strings),
        lanes=tuple(lanes),
        lane_offsets=_frozen(lane_offsets),
        kernels=KernelTable(**{k: _frozen(v) for k, v in _concat_side(KernelTable, kernels).items()}),
        copies=CopyTable(**{k: _frozen(v) for k, v in _concat_side(CopyTable, copies).items()}),
        flows=_build_flows(flows, np.arange(offset, dtype=np.int64)),
        counters=tuple(counters),
        meta=meta,
        collectives=CollectiveTable(**{k: _frozen(v) for k, v in _concat_side(CollectiveTable, colls).items()}),
    )
