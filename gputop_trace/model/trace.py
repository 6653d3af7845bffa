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
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from gputop_trace.model.arrays import I16, I32, I64, U8
from gputop_trace.model.devices import DeviceWords, common_words, words_for
from gputop_trace.model.kinds import FlowKind, Kind
from gputop_trace.model.tables import (
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
    read_only,
)

#: ``TraceMeta.properties`` key: how many ``python_function`` events ``include_python=False`` left out
PYTHON_LEFT_OUT = "python_function_left_out"
#: ``TraceMeta.properties`` key: torch.compile launcher ops' args by op name (``kernel_file``, ``kernel_hash``,
#: ``kernel_backend``), each name's distinct records in a list
INDUCTOR_LAUNCHERS = "inductor_launchers"


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


def inductor_launch_args(trace: Trace) -> dict[str, list[dict[str, str]]]:
    """The ``kernel_file`` / ``kernel_hash`` / ``kernel_backend`` args torch.compile's launcher ops carry, by op
    (= kernel) name, over every rank; empty when the trace has none."""
    props = trace.meta.properties
    ranks = props.get("ranks")
    per_rank: list[Any] = ranks if isinstance(ranks, list) else [props]
    out: dict[str, list[dict[str, str]]] = {}
    for p in per_rank:
        table = p.get(INDUCTOR_LAUNCHERS) if isinstance(p, dict) else None
        if not isinstance(table, dict):
            continue
        for name, records in table.items():
            have = out.setdefault(str(name), [])
            for r in records if isinstance(records, list) else []:
                if isinstance(r, dict) and r not in have:
                    have.append({k: str(v) for k, v in r.items()})
    return out


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
    #: ``record_shapes`` args of operators and ``profile_memory`` allocator records (Kineto; empty otherwise)
    op_args: OpArgTable = field(default_factory=OpArgTable.empty)
    memory: MemoryTable = field(default_factory=MemoryTable.empty)

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
        return read_only(self.start_ns + self.dur_ns)

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
        return read_only(rows)

    @cached_property
    def lane_kind(self) -> U8:
        """:class:`LaneKind` of each lane."""
        return read_only(np.array([int(ln.kind) for ln in self.lanes], dtype=np.uint8))

    @cached_property
    def lane_rank(self) -> I32:
        """Rank of each lane."""
        return read_only(np.array([ln.rank for ln in self.lanes], dtype=np.int32))

    @cached_property
    def lane_device(self) -> I32:
        """GPU device of each lane (``-1`` for CPU lanes)."""
        return read_only(np.array([ln.device for ln in self.lanes], dtype=np.int32))

    @cached_property
    def lane_pid(self) -> I64:
        """Process id of each lane (``-1`` when the lane has none)."""
        return read_only(np.array([ln.pid for ln in self.lanes], dtype=np.int64))

    @cached_property
    def lane_order(self) -> I32:
        """Lane ids in display order."""
        keys = [(ln.sort_key, i) for i, ln in enumerate(self.lanes)]
        return read_only(np.array([i for _, i in sorted(keys, key=lambda k: (*_sortable(k[0]), k[1]))], dtype=np.int32))

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
        return read_only(order.astype(np.int64)), index

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
        """Indices of every event whose kind is one of ``kinds``, in index order. (One comparison per kind:
        ``np.isin`` built an index table over the whole column on each call, ~2 ms at 400 k events.)"""
        mask = np.zeros(len(self.kind), dtype=bool)
        for k in sorted({int(k) for k in kinds}):
            mask |= self.kind == k
        return np.flatnonzero(mask).astype(np.int64, copy=False)

    @cached_property
    def event_device(self) -> I32:
        """GPU device of every event's lane (``-1`` on CPU lanes)."""
        return read_only(self.lane_device[self.lane])

    @cached_property
    def event_rank(self) -> I32:
        """Rank of every event."""
        return read_only(self.lane_rank[self.lane])

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
        return read_only(out)

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

    @cached_property
    def _accelerators(self) -> dict[tuple[int, int], str]:
        out: dict[tuple[int, int], str] = {}
        for ln in self.lanes:
            if ln.device >= 0:
                acc = words_for(ln.accelerator).accelerator
                if out.setdefault((ln.rank, ln.device), acc) != acc:
                    out[(ln.rank, ln.device)] = "other"
        return out

    def accelerator(self, rank: int, device: int) -> str:
        """The kind of one device (:mod:`gputop_trace.model.devices`: ``cuda``, ``rocm``, ``mtia`` ...)."""
        return self._accelerators.get((rank, device), words_for("").accelerator)

    def device_words(self, rank: int | None = None, device: int | None = None) -> DeviceWords:
        """The words for one device, or with ``device`` ``None`` for every device of the trace (or of ``rank``)
        together: ``GPU``/``MTIA``/``device`` and the advice that applies to it."""
        if device is not None:
            return words_for(self.accelerator(rank if rank is not None else 0, device))
        return common_words({a for (r, _), a in self._accelerators.items() if rank is None or r == rank})

    def device_label(self, rank: int, device: int) -> str:
        """A device by its own name: ``GPU 0`` (CUDA, ROCm), ``MTIA 9``, ``device 3``."""
        return self.device_words(rank, device).label(device)

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
