"""Transfer overlap (detectors.md §3, "transfer-overlap detector"): how much copy time the GPU hides behind
kernels, and the copy patterns that keep it from doing so.

For every memcpy and memset on device *d*: ``overlap`` = the part of it during which a kernel ran on *d* on
**another** stream (work on one stream is serialized, so kernels of the copy's own stream never count);
``exposed = duration - overlap``. Per device, exposed copy time = |union(copies) − union(kernels)|.
Unified-memory migrations (copy kinds 11–13, ``Kind.UVM``) are listed separately and never counted as exposed
transfers.

Flags (each lists the copies that raised it, with a one-sentence fix):

* ``pageable_async`` — an ``*Async`` copy whose host side is pageable: the driver stages it through a bounce
  buffer, so the call blocks the host and the copy cannot overlap (the ``nsys analyze`` rule
  ``cuda_memcpy_async``; we match any ``Memcpy*Async`` call, runtime or driver);
* ``sync_copy`` — a copy launched by a non-``Async`` ``cudaMemcpy*``/``cuMemcpy*`` (host blocked), except
  host-to-device copies of 64 KiB or less (rule ``cuda_memcpy_sync``);
* ``copy_on_compute_stream`` — a host↔device or peer copy on a stream that runs kernels both before and after
  it, so it is serialized between them;
* ``sync_memset`` — a synchronous ``cudaMemset*`` on pinned or managed memory (rule ``cuda_memset_sync``).

Times are int64 ns relative to the trace start; bandwidth in bytes per second.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import overload

import numpy as np
import numpy.typing as npt

from gputop_trace.analysis.enclosing import innermost_enclosing
from gputop_trace.analysis.intervals import overlap_with_union, union
from gputop_trace.model.arrays import I64, distinct, isin
from gputop_trace.model.devices import DeviceWords
from gputop_trace.model.kinds import COPY_KIND_LABEL, CopyKind, Kind, MemKind
from gputop_trace.model.trace import Trace

SMALL_HTOD_BYTES = 64 * 1024

FLAGS: tuple[str, ...] = ("pageable_async", "sync_copy", "copy_on_compute_stream", "sync_memset")
FLAG_TITLES: dict[str, str] = {
    "pageable_async": "async copy from pageable memory",
    "sync_copy": "synchronous copy",
    "copy_on_compute_stream": "copy on the compute stream",
    "sync_memset": "synchronous memset",
}
FLAG_FIX: dict[str, str] = {
    "pageable_async": "Pin the host buffer (tensor.pin_memory(), DataLoader(pin_memory=True), cudaHostAlloc) so the "
    "copy is truly asynchronous and can overlap with kernels.",
    "sync_copy": "Use cudaMemcpyAsync on a stream (in PyTorch: .to(device, non_blocking=True) from pinned memory) "
    "so the host does not block on the copy.",
    "copy_on_compute_stream": "Issue the copy on a side stream (torch.cuda.Stream with wait_stream/events) so it "
    "overlaps with the kernels instead of running between them.",
    "sync_memset": "Use cudaMemsetAsync on a stream instead of the synchronous cudaMemset on pinned or managed memory.",
}


def flag_fix(flag: str, words: DeviceWords) -> str:
    """The fix of a flag on a device: :data:`FLAG_FIX` on CUDA; HIP's calls on ROCm; no vendor API elsewhere."""
    rt = words.runtime
    if rt == "CUDA":
        return FLAG_FIX[flag]
    api = rt.lower() if rt else ""
    if flag == "pageable_async":
        return (
            f"Pin the host buffer (tensor.pin_memory(), DataLoader(pin_memory=True), {words.pinned_alloc}) so the "
            "copy is truly asynchronous and can overlap with kernels."
        )
    if flag == "sync_copy":
        call = f"{api}MemcpyAsync" if api else "an asynchronous copy"
        return (
            f"Use {call} on a stream (in PyTorch: .to(device, non_blocking=True) from pinned memory) so the host "
            "does not block on the copy."
        )
    if flag == "copy_on_compute_stream":
        return (
            "Issue the copy on a side stream (a second stream, ordered with wait_stream/events) so it overlaps with "
            "the kernels instead of running between them."
        )
    if api:
        return f"Use {api}MemsetAsync on a stream instead of the synchronous {api}Memset on pinned or managed memory."
    return "Use an asynchronous memset on a stream instead of the synchronous one on pinned or managed memory."


_ASYNC = re.compile(r"Async", re.IGNORECASE)
_COPY_API = re.compile(r"^(?:cuda|cu|hip)Mem(?:cpy|set)", re.IGNORECASE)
_HOST_DIRECTIONS = (CopyKind.HTOD, CopyKind.DTOH, CopyKind.PTOP, CopyKind.HTOA, CopyKind.ATOH)


@dataclass(frozen=True)
class CopyRow:
    """One memcpy/memset/UVM migration. ``event`` is its index in the trace; times in ns; ``bytes`` moved or set.

    ``direction``: ``HtoD``, ``DtoH``, ``DtoD``, ``PtoP`` ... (``memset`` for memsets, ``UVM`` for migrations);
    ``host_memory``: ``pageable``/``pinned``/other memory kind of the host side, ``None`` without one;
    ``is_async``: launched by an ``*Async`` call (``None`` unknown); ``api``: the launching call's name;
    ``range_name``: innermost annotation range around the launching call.
    """

    event: int
    rank: int
    device: int
    stream: int
    lane: int
    start_ns: int
    dur_ns: int
    kind: str
    direction: str
    host_memory: str | None
    bytes: int
    overlap_ns: int
    exposed_ns: int
    is_async: bool | None
    api: str | None
    range_name: str | None
    flags: tuple[str, ...]

    @property
    def hidden_pct(self) -> float:
        """Share of the copy hidden behind kernels on other streams, 0–100 (100 for zero-length copies)."""
        return 100.0 * self.overlap_ns / self.dur_ns if self.dur_ns else 100.0

    @property
    def bytes_per_s(self) -> float:
        """Achieved bandwidth (bytes/s; 0 for zero-length copies)."""
        return self.bytes * 1e9 / self.dur_ns if self.dur_ns else 0.0


@dataclass(frozen=True)
class DirectionRow:
    """Copies of one direction and host-memory kind: count, bytes, time, exposed time (ns), bandwidth (B/s)."""

    direction: str
    host_memory: str | None
    count: int
    bytes: int
    time_ns: int
    exposed_ns: int

    @property
    def hidden_pct(self) -> float:
        """Share of the copy time hidden behind kernels, 0–100."""
        return 100.0 * (self.time_ns - self.exposed_ns) / self.time_ns if self.time_ns else 100.0

    @property
    def bytes_per_s(self) -> float:
        """Bytes moved per second of copy time."""
        return self.bytes * 1e9 / self.time_ns if self.time_ns else 0.0


@dataclass(frozen=True)
class DeviceTransfers:
    """Copy totals of one GPU: time of the copy union and its exposed part (not under any kernel), ns."""

    rank: int
    device: int
    copies: int
    copy_ns: int
    exposed_ns: int


class CopyRows(Sequence["CopyRow"]):
    """Copies of a report as rows, made only when read: ``positions`` index the report's columns (in the order
    given). A flag on a trace of millions of copies holds hundreds of thousands; the findings read the first ten
    and totals from the columns."""

    def __init__(self, report: TransferReport, positions: I64) -> None:
        self.report = report
        self.positions = positions

    def __len__(self) -> int:
        return int(self.positions.shape[0])

    @overload
    def __getitem__(self, i: int) -> CopyRow: ...

    @overload
    def __getitem__(self, i: slice) -> list[CopyRow]: ...

    def __getitem__(self, i: int | slice) -> CopyRow | list[CopyRow]:
        if isinstance(i, slice):
            return [_row(self.report, p) for p in self.positions[i].tolist()]
        return _row(self.report, int(self.positions[i]))

    def __iter__(self) -> Iterator[CopyRow]:
        for p in self.positions.tolist():
            yield _row(self.report, p)

    @property
    def events(self) -> I64:
        """The copies' events."""
        return self.report.columns.event[self.positions]

    def total(self, column: str) -> int:
        """The sum of ``exposed_ns``, ``bytes`` (report columns) or ``dur_ns`` (the trace's) over these copies."""
        if column == "dur_ns":
            return int(self.report.trace.dur_ns[self.events].sum())
        values: I64 = getattr(self.report.columns, column)
        return int(values[self.positions].sum())


@dataclass(frozen=True, eq=False)
class TransferFlag:
    """A copy pattern found in the trace: which copies (``rows``, most exposed first), and what to do."""

    flag: str
    title: str
    fix: str
    rows: CopyRows

    @property
    def count(self) -> int:
        """Number of copies flagged."""
        return len(self.rows)

    @property
    def exposed_ns(self) -> int:
        """Exposed time of the flagged copies (ns)."""
        return self.rows.total("exposed_ns")

    @property
    def time_ns(self) -> int:
        """Summed duration of the flagged copies (ns)."""
        return self.rows.total("dur_ns")

    @property
    def bytes(self) -> int:
        """Bytes of the flagged copies."""
        return self.rows.total("bytes")


@dataclass(frozen=True)
class CopyColumns:
    """Every memcpy/memset as columns (event order); ``flags`` is a bit set over :data:`FLAGS`."""

    event: I64
    direction: npt.NDArray[np.uint8]
    host_kind: npt.NDArray[np.uint8]
    is_memset: npt.NDArray[np.bool_]
    bytes: I64
    overlap_ns: I64
    exposed_ns: I64
    is_async: npt.NDArray[np.int8]
    flags: npt.NDArray[np.uint8]

    def __len__(self) -> int:
        return int(self.event.shape[0])


@dataclass(frozen=True, eq=False)
class TransferReport:
    """The transfer-overlap analysis of a trace (optionally one rank / device)."""

    by_direction: list[DirectionRow]
    devices: list[DeviceTransfers]
    columns: CopyColumns = field(repr=False)
    uvm_events: I64 = field(repr=False)
    trace: Trace = field(repr=False)

    @property
    def exposed_ns(self) -> int:
        """Exposed copy time summed over devices (ns)."""
        return sum(d.exposed_ns for d in self.devices)

    @property
    def exposed_by_device(self) -> dict[tuple[int, int], int]:
        """Exposed copy time (ns) per (rank, device)."""
        return {(d.rank, d.device): d.exposed_ns for d in self.devices}

    @cached_property
    def range_events(self) -> I64:
        """Innermost annotation range around each copy's launching call (``-1`` none), one entry per copy."""
        t = self.trace
        api = t.launch_of[self.columns.event]
        out = np.full(len(api), -1, dtype=np.int64)
        has = np.flatnonzero(api >= 0)
        if len(has):
            out[has] = innermost_enclosing(t, t.lane[api[has]], t.start_ns[api[has]], (Kind.RANGE,))
        return out

    @cached_property
    def copies(self) -> list[CopyRow]:
        """Every memcpy and memset, in trace order (lane, then start)."""
        return [_row(self, i) for i in range(len(self.columns))]

    @cached_property
    def uvm(self) -> list[CopyRow]:
        """Unified-memory migrations (never counted as exposed transfers)."""
        return [_uvm_row(self.trace, int(e)) for e in self.uvm_events.tolist()]

    @cached_property
    def flags(self) -> list[TransferFlag]:
        """The flags raised, in :data:`FLAGS` order (flags with no copy are absent)."""
        out = []
        for bit, name in enumerate(FLAGS):
            sel = np.flatnonzero(self.columns.flags & (1 << bit))
            if not len(sel):
                continue
            order = sel[np.lexsort((self.columns.event[sel], -self.columns.exposed_ns[sel]))]
            fix = flag_fix(name, self.trace.device_words())
            out.append(TransferFlag(name, FLAG_TITLES[name], fix, CopyRows(self, order)))
        return out

    def most_exposed(self, limit: int | None = None) -> list[CopyRow]:
        """The ``limit`` copies (None: all) with the most exposed time, earliest first among equals (then in
        trace order), as rows."""
        cols = self.columns
        order = np.lexsort((self.trace.start_ns[cols.event], -cols.exposed_ns))
        return CopyRows(self, order[:limit])[:]


def _api_async(trace: Trace, api: I64) -> npt.NDArray[np.int8]:
    """1 / 0 whether each launching call is an ``*Async`` copy/memset call, -1 unknown."""
    out = np.full(api.shape, -1, dtype=np.int8)
    known = np.flatnonzero(api >= 0)
    if not len(known):
        return out
    ids, inv = np.unique(trace.name[api[known]], return_inverse=True)
    vals = []
    for i in ids.tolist():
        n = trace.names[int(i)]
        vals.append(1 if _ASYNC.search(n) else (0 if _COPY_API.match(n) else -1))
    out[known] = np.array(vals, dtype=np.int8)[np.asarray(inv).reshape(-1)]
    return out


def transfer_overlap(trace: Trace, *, rank: int | None = None, device: int | None = None) -> TransferReport:
    """Overlap, exposed time, per-direction totals and flags of every copy and memset (see the module doc)."""
    c = trace.copies
    ev = c.event
    rows, uvm_rows, extra = _selected(trace, rank, device)
    events = np.concatenate((ev[rows], extra)).astype(np.int64)
    direction = np.concatenate((c.direction[rows], np.zeros(len(extra), dtype=np.uint8)))
    src = np.concatenate((c.src_kind[rows], np.zeros(len(extra), dtype=np.uint8)))
    dst = np.concatenate((c.dst_kind[rows], np.zeros(len(extra), dtype=np.uint8)))
    nbytes = np.concatenate((c.bytes[rows], np.zeros(len(extra), dtype=np.int64)))
    side_async = np.concatenate((c.is_async[rows], np.full(len(extra), -1, dtype=np.int8)))
    order = np.argsort(events, kind="stable")
    events, nbytes = events[order], nbytes[order]
    direction, src, dst, side_async = direction[order], src[order], dst[order], side_async[order]
    is_memset = trace.kind[events] == Kind.MEMSET
    host_kind = np.where(
        direction == CopyKind.HTOD, src, np.where(direction == CopyKind.DTOH, dst, np.uint8(0))
    ).astype(np.uint8)
    start = trace.start_ns[events]
    end = start + trace.dur_ns[events]
    lanes = trace.lane[events].astype(np.int64)
    kernels = trace.of_kind(Kind.KERNEL, Kind.GRAPH)
    overlap, devices = _overlap_by_device(trace, events, start, end, lanes, kernels)
    exposed = (end - start) - overlap
    api = trace.launch_of[events]
    is_async = np.where(side_async >= 0, side_async, _api_async(trace, api)).astype(np.int8)
    flags = _flags(trace, events, direction, host_kind, is_memset, nbytes, is_async, dst, lanes, kernels)
    columns = CopyColumns(
        event=events,
        direction=direction,
        host_kind=host_kind,
        is_memset=is_memset,
        bytes=nbytes,
        overlap_ns=overlap,
        exposed_ns=exposed,
        is_async=is_async,
        flags=flags,
    )
    return TransferReport(
        by_direction=_by_direction(columns, trace),
        devices=devices,
        columns=columns,
        uvm_events=np.sort(ev[uvm_rows]).astype(np.int64),
        trace=trace,
    )


def _selected(trace: Trace, rank: int | None, device: int | None) -> tuple[I64, I64, I64]:
    """The copy-table rows of the copies and memsets of ``rank`` / ``device`` (None: all), those of the unified
    memory events, and the memcpy/memset events that have no side-table row (they still count, direction
    unknown)."""
    c = trace.copies
    ev = c.event
    kind = trace.kind[ev] if len(ev) else np.zeros(0, dtype=np.uint8)
    sel = isin(kind, np.array([Kind.MEMCPY, Kind.MEMSET], dtype=np.uint8)) & (c.direction < CopyKind.UVM_HTOD)
    uvm_sel = (kind == Kind.UVM) | (c.direction >= CopyKind.UVM_HTOD)
    dev_all = trace.event_device[ev] if len(ev) else np.zeros(0, dtype=np.int32)
    rk_all = trace.event_rank[ev] if len(ev) else np.zeros(0, dtype=np.int32)
    if rank is not None:
        sel &= rk_all == rank
        uvm_sel &= rk_all == rank
    if device is not None:
        sel &= dev_all == device
        uvm_sel &= dev_all == device
    rows = np.flatnonzero(sel)
    uvm_rows = np.flatnonzero(uvm_sel)
    # memcpy/memset events that have no side-table row still count (direction unknown)
    extra = trace.of_kind(Kind.MEMCPY, Kind.MEMSET)
    extra = extra[~isin(extra, ev)]
    if rank is not None:
        extra = extra[trace.event_rank[extra] == rank]
    if device is not None:
        extra = extra[trace.event_device[extra] == device]
    return rows, uvm_rows, extra


def _overlap_by_device(
    trace: Trace, events: I64, start: I64, end: I64, lanes: I64, kernels: I64
) -> tuple[I64, list[DeviceTransfers]]:
    """Each copy's time (ns) overlapped by kernels (``kernels``: of every device) on other lanes of its device,
    and per device the copies' total and exposed time (ns)."""
    overlap = np.zeros(len(events), dtype=np.int64)
    devices: list[DeviceTransfers] = []
    k_dev = trace.event_device[kernels]
    k_rank = trace.event_rank[kernels]
    c_dev = trace.event_device[events]
    c_rank = trace.event_rank[events]
    for r, d in sorted({(int(a), int(b)) for a, b in zip(c_rank.tolist(), c_dev.tolist(), strict=True)}):
        here = np.flatnonzero((c_rank == r) & (c_dev == d))
        kd = kernels[(k_rank == r) & (k_dev == d)]
        kd_lane = trace.lane[kd]
        ks = trace.start_ns[kd]
        ke = ks + trace.dur_ns[kd]
        for ln in distinct(lanes[here]).tolist():
            mine = here[lanes[here] == ln]
            other = kd_lane != ln
            us, ue = union(ks[other], ke[other])
            overlap[mine] = overlap_with_union(start[mine], end[mine], us, ue)
        cs, ce = union(start[here], end[here])
        kus, kue = union(ks, ke)
        copy_ns = int((ce - cs).sum())
        hidden = int(overlap_with_union(cs, ce, kus, kue).sum())
        devices.append(DeviceTransfers(r, d, len(here), copy_ns, copy_ns - hidden))
    return overlap, devices


def _flags(
    trace: Trace,
    events: I64,
    direction: npt.NDArray[np.uint8],
    host_kind: npt.NDArray[np.uint8],
    is_memset: npt.NDArray[np.bool_],
    nbytes: I64,
    is_async: npt.NDArray[np.int8],
    dst: npt.NDArray[np.uint8],
    lanes: I64,
    kernels: I64,
) -> npt.NDArray[np.uint8]:
    flags = np.zeros(len(events), dtype=np.uint8)
    memcpy = ~is_memset
    pageable = host_kind == MemKind.PAGEABLE
    flags |= ((memcpy & pageable & (is_async == 1)).astype(np.uint8)) << 0
    small_htod = (direction == CopyKind.HTOD) & (nbytes <= SMALL_HTOD_BYTES)
    flags |= ((memcpy & (is_async == 0) & ~small_htod).astype(np.uint8)) << 1
    # kernels on the copy's own lane before and after it
    start = trace.start_ns[events]
    end = start + trace.dur_ns[events]
    n_lanes = len(trace.lanes)
    first_k = np.full(n_lanes, np.iinfo(np.int64).max, dtype=np.int64)
    last_k = np.full(n_lanes, np.iinfo(np.int64).min, dtype=np.int64)
    if len(kernels):
        kl = trace.lane[kernels]
        np.minimum.at(first_k, kl, trace.start_ns[kernels])
        np.maximum.at(last_k, kl, trace.start_ns[kernels] + trace.dur_ns[kernels])
    between = (first_k[lanes] < start) & (last_k[lanes] > end)
    host_dir = isin(direction, np.array([int(k) for k in _HOST_DIRECTIONS], dtype=np.uint8))
    flags |= ((memcpy & host_dir & between).astype(np.uint8)) << 2
    pinned_or_managed = isin(dst, np.array([MemKind.PINNED, MemKind.MANAGED, MemKind.MANAGED_STATIC], dtype=np.uint8))
    flags |= ((is_memset & (is_async == 0) & pinned_or_managed).astype(np.uint8)) << 3
    return flags


def direction_label(direction: int, is_memset: bool) -> str:
    """``HtoD``, ``DtoH`` ... for a copy kind; ``memset`` for memsets; ``unknown`` when not recorded."""
    if is_memset:
        return "memset"
    return COPY_KIND_LABEL.get(int(direction), "unknown")


def host_memory_label(kind: int) -> str | None:
    """``pageable``/``pinned``/... for a host-side memory kind, ``None`` when the copy has no host side."""
    if kind == 0:
        return None
    from gputop_trace.model.kinds import MEM_KIND_LABEL

    return MEM_KIND_LABEL.get(int(kind), "unknown")


def _by_direction(cols: CopyColumns, trace: Trace) -> list[DirectionRow]:
    if not len(cols):
        return []
    dir_key = np.where(cols.is_memset, 255, cols.direction).astype(np.int64)
    keys = np.stack([dir_key, cols.host_kind.astype(np.int64)])
    uniq, inv = np.unique(keys, axis=1, return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    dur = trace.dur_ns[cols.event]
    count = np.bincount(inv, minlength=uniq.shape[1])
    nbytes = np.bincount(inv, weights=cols.bytes, minlength=uniq.shape[1])
    time = np.bincount(inv, weights=dur, minlength=uniq.shape[1])
    exposed = np.bincount(inv, weights=cols.exposed_ns, minlength=uniq.shape[1])
    out = [
        DirectionRow(
            direction=direction_label(int(uniq[0, j]), int(uniq[0, j]) == 255),
            host_memory=host_memory_label(int(uniq[1, j])),
            count=int(count[j]),
            bytes=int(nbytes[j]),
            time_ns=int(time[j]),
            exposed_ns=int(exposed[j]),
        )
        for j in range(uniq.shape[1])
    ]
    out.sort(key=lambda r: (-r.exposed_ns, -r.time_ns, r.direction))
    return out


def _row(rep: TransferReport, i: int) -> CopyRow:
    cols, t = rep.columns, rep.trace
    e = int(cols.event[i])
    ln = t.lanes[int(t.lane[e])]
    api = int(t.launch_of[e])
    rng = int(rep.range_events[i])
    memset = bool(cols.is_memset[i])
    fl = int(cols.flags[i])
    return CopyRow(
        event=e,
        rank=ln.rank,
        device=ln.device,
        stream=ln.stream,
        lane=int(t.lane[e]),
        start_ns=int(t.start_ns[e]),
        dur_ns=int(t.dur_ns[e]),
        kind="memset" if memset else "memcpy",
        direction=direction_label(int(cols.direction[i]), memset),
        host_memory=host_memory_label(int(cols.host_kind[i])),
        bytes=int(cols.bytes[i]),
        overlap_ns=int(cols.overlap_ns[i]),
        exposed_ns=int(cols.exposed_ns[i]),
        is_async=None if cols.is_async[i] < 0 else bool(cols.is_async[i]),
        api=t.event_name(api) if api >= 0 else None,
        range_name=t.event_name(rng) if rng >= 0 else None,
        flags=tuple(name for bit, name in enumerate(FLAGS) if fl & (1 << bit)),
    )


def _uvm_row(t: Trace, e: int) -> CopyRow:
    ln = t.lanes[int(t.lane[e])]
    r = t.copy_row(e)
    nbytes = int(t.copies.bytes[r]) if r >= 0 else 0
    return CopyRow(
        event=e,
        rank=ln.rank,
        device=ln.device,
        stream=ln.stream,
        lane=int(t.lane[e]),
        start_ns=int(t.start_ns[e]),
        dur_ns=int(t.dur_ns[e]),
        kind="uvm",
        direction="UVM",
        host_memory=None,
        bytes=nbytes,
        overlap_ns=0,
        exposed_ns=0,
        is_async=None,
        api=None,
        range_name=None,
        flags=(),
    )
