"""The memory lane under each GPU (``profile_memory`` traces): per screen column, the most memory the allocator
had allocated on the device during that column, and below it the most it had reserved (where the trace records
it), each as a block whose height is its share of the device's largest figure (the reserved peak, where
recorded), so the two rows compare: the gap between them is what the caching allocator holds unused. Sizes in
bytes, times in ns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gputop_trace.model.arrays import I64
from gputop_trace.model.trace import Trace

#: the series a memory row draws
ALLOCATED, RESERVED = "allocated", "reserved"


@dataclass(frozen=True)
class MemoryRow:
    """One device's allocated and reserved bytes after each allocator record (``ts_ns`` ascending; ``reserved``
    -1 where not recorded), the allocated peak, and ``scale``: the largest figure of either (a block's 8/8)."""

    ts_ns: I64
    allocated: I64
    peak: int
    reserved: I64 | None = None
    scale: int = 0

    @property
    def has_reserved(self) -> bool:
        """Whether the allocator records carry the reserved total."""
        return self.reserved is not None and bool((self.reserved >= 0).any())

    def series(self, which: str = ALLOCATED) -> I64:
        """The bytes of one series after each record (reserved: -1 where not recorded reads as 0)."""
        if which == RESERVED and self.reserved is not None:
            out: I64 = np.maximum(self.reserved, 0)
            return out
        return self.allocated

    def max_between(self, t0: int, t1: int, which: str = ALLOCATED) -> int:
        """The most bytes of a series at any time in ``[t0, t1)`` (the level carried in from before ``t0``
        too)."""
        return int(column_max(self, np.array([t0, t1], dtype=np.int64), which)[0])


def memory_rows(trace: Trace) -> dict[tuple[int, int], MemoryRow]:
    """The memory lane of every GPU with allocator records, by (rank, device)."""
    from gputop_trace.analysis.operators.memory import memory_series

    return {
        (s.rank, s.device): MemoryRow(
            s.ts_ns, s.allocated, s.peak_bytes, s.reserved, max(s.peak_bytes, s.reserved_peak_bytes, 1)
        )
        for s in memory_series(trace, locate_peak=False)
        if s.device >= 0
    }


def column_max(row: MemoryRow, bounds: I64, which: str = ALLOCATED) -> I64:
    """Per column ``[bounds[i], bounds[i+1])``: the most bytes of a series in it (0 before the first record)."""
    ts, alloc = row.ts_ns, row.series(which)
    width = len(bounds) - 1
    if not len(ts) or width <= 0:
        return np.zeros(max(width, 0), dtype=np.int64)
    # the level at each column's start: the last record before it
    before = np.searchsorted(ts, bounds[:-1], side="left") - 1
    level = np.where(before >= 0, alloc[np.maximum(before, 0)], 0)
    lo = np.searchsorted(ts, bounds[:-1], side="left")
    hi = np.searchsorted(ts, bounds[1:], side="left")
    has = hi > lo
    if has.any():
        # the columns are contiguous: the records of one column with records run up to the next such column's
        starts = lo[has]
        inside = np.maximum.reduceat(alloc[: int(hi[has][-1])], starts)
        level[has] = np.maximum(level[has], inside)
    out: I64 = level.astype(np.int64)
    return out
