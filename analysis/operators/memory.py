"""Memory over time from the allocator's records (``profile_memory``: Kineto ``[memory]`` instants): per device,
the allocated and reserved totals after each allocation or free, the peak, and the operator and Python call stack
at the peak. Sizes in bytes, times in ns (trace time). The peak is the largest ``Total Allocated`` the allocator
reported on the device, exactly."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gputop_trace.analysis.operators.tree import DEVICE_MEMORY_TYPES, HOST_MEMORY_TYPES, key_events
from gputop_trace.model.arrays import I64, isin
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace


@dataclass(frozen=True)
class MemorySeries:
    """One device's memory (``device`` ``-1``: host memory) on one rank: ``ts_ns`` of each record,
    ``allocated``/``reserved`` bytes after it (``reserved`` ``-1`` where not recorded), and the peak: its bytes, its
    record (trace event index), time, the innermost operator around it (``""`` none) and the enclosing Python
    frames, innermost first."""

    rank: int
    device: int
    ts_ns: I64
    allocated: I64
    reserved: I64
    peak_bytes: int
    peak_event: int
    peak_ns: int
    peak_op: str
    peak_stack: tuple[str, ...] = field(default=())
    reserved_peak_bytes: int = -1

    @property
    def label(self) -> str:
        return "host" if self.device < 0 else f"GPU {self.device}"


def memory_series(trace: Trace, *, locate_peak: bool = True) -> list[MemorySeries]:
    """The memory series of every (rank, device) with allocator records, host memory last (``locate_peak``
    False: without the operator and stack at the peak)."""
    mem = trace.memory
    if not len(mem):
        return []
    rank = trace.lane_rank[trace.lane[mem.event]]
    host = isin(mem.device_type, HOST_MEMORY_TYPES)
    dev = isin(mem.device_type, DEVICE_MEMORY_TYPES)
    device = np.where(host, -1, mem.device).astype(np.int64)
    out: list[MemorySeries] = []
    keys = sorted({(int(r), int(d)) for r, d, k in zip(rank, device, host | dev, strict=True) if k})
    for r, d in sorted(keys, key=lambda k: (k[0], k[1] < 0, k[1])):
        rows = np.flatnonzero((rank == r) & (device == d) & (host | dev))
        rows = rows[np.argsort(trace.start_ns[mem.event[rows]], kind="stable")]
        allocated = mem.allocated[rows]
        at = int(np.argmax(allocated))
        ev = int(mem.event[rows[at]])
        op, stack = _op_at(trace, ev) if locate_peak else ("", ())
        reserved = mem.reserved[rows]
        out.append(
            MemorySeries(
                rank=r,
                device=d,
                ts_ns=trace.start_ns[mem.event[rows]],
                allocated=allocated,
                reserved=reserved,
                peak_bytes=int(allocated[at]),
                peak_event=ev,
                peak_ns=int(trace.start_ns[ev]),
                peak_op=op,
                peak_stack=stack,
                reserved_peak_bytes=int(reserved.max()) if len(reserved) else -1,
            )
        )
    return out


def _op_at(trace: Trace, event: int) -> tuple[str, tuple[str, ...]]:
    """The innermost operator (or annotation) around a record on its thread, and the Python frames around it."""
    host, _ = key_events(trace)
    same = host[trace.lane[host] == trace.lane[event]]
    t = int(trace.start_ns[event])
    around = same[(trace.start_ns[same] <= t) & (trace.start_ns[same] + trace.dur_ns[same] >= t)]
    if not len(around):
        return "", ()
    around = around[np.lexsort((-trace.dur_ns[around], trace.start_ns[around]))]  # outermost first
    kinds = trace.kind[around]
    ops = around[kinds != Kind.PYTHON]
    frames = around[kinds == Kind.PYTHON][::-1]
    op = trace.event_name(int(ops[-1])) if len(ops) else ""
    return op, tuple(trace.event_name(int(i)) for i in frames[:5])
