"""Per-GPU busy time: the union of all GPU work on every stream of a device (detectors.md §2.1)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gputop_trace.analysis.intervals import union
from gputop_trace.model.arrays import I64
from gputop_trace.model.kinds import GPU_BUSY_KINDS
from gputop_trace.model.trace import Trace


@dataclass(frozen=True)
class DeviceBusy:
    """Busy/idle summary of one GPU. Times in ns relative to the trace start.

    ``span_ns`` runs from the device's first GPU op start to its last GPU op end (no leading or trailing
    idle); ``idle_ns = span_ns - busy_ns``; ``busy_starts``/``busy_ends`` is the busy union. ``label`` is the
    device's own name (``GPU 0``, ``MTIA 9``: :meth:`~gputop_trace.model.trace.Trace.device_label`) and
    ``accelerator`` its kind (:mod:`gputop_trace.model.devices`).
    """

    rank: int
    device: int
    first_ns: int
    last_ns: int
    span_ns: int
    busy_ns: int
    idle_ns: int
    busy_pct: float
    ops: int
    label: str = ""
    accelerator: str = "cuda"
    busy_starts: I64 = field(repr=False, compare=False, default_factory=lambda: np.zeros(0, dtype=np.int64))
    busy_ends: I64 = field(repr=False, compare=False, default_factory=lambda: np.zeros(0, dtype=np.int64))


def gpu_ops(trace: Trace, rank: int | None = None, device: int | None = None) -> I64:
    """Indices of the events that make a GPU busy (kernels, copies, memsets, graph rows), optionally filtered."""
    idx = trace.of_kind(*GPU_BUSY_KINDS)
    if rank is not None:
        idx = idx[trace.event_rank[idx] == rank]
    if device is not None:
        idx = idx[trace.event_device[idx] == device]
    return idx


def _distinct_pairs(a: I64, b: I64) -> list[tuple[int, int]]:
    """The distinct ``(a[i], b[i])`` pairs, ascending: one sort of the columns, not a Python set of every pair."""
    order = np.lexsort((b, a))
    sa, sb = a[order], b[order]
    new = np.ones(len(sa), dtype=bool)
    new[1:] = (sa[1:] != sa[:-1]) | (sb[1:] != sb[:-1])
    return list(zip(sa[new].tolist(), sb[new].tolist(), strict=True))


def device_busy(trace: Trace) -> list[DeviceBusy]:
    """Busy summary of every (rank, device) that has GPU work, sorted by rank then device."""
    idx = trace.of_kind(*GPU_BUSY_KINDS)
    out: list[DeviceBusy] = []
    if not len(idx):
        return out
    rk = trace.event_rank[idx].astype(np.int64)
    dv = trace.event_device[idx].astype(np.int64)
    for r, d in _distinct_pairs(rk, dv):
        sel = idx[(rk == r) & (dv == d)]
        s = trace.start_ns[sel]
        e = s + trace.dur_ns[sel]
        us, ue = union(s, e)
        first, last = int(s.min()), int(e.max())
        span = last - first
        busy = int((ue - us).sum())
        out.append(
            DeviceBusy(
                rank=r,
                device=d,
                first_ns=first,
                last_ns=last,
                span_ns=span,
                busy_ns=busy,
                idle_ns=span - busy,
                label=trace.device_label(r, d),
                accelerator=trace.accelerator(r, d),
                busy_pct=100.0 * busy / span if span else 0.0,
                ops=int(sel.size),
                busy_starts=us,
                busy_ends=ue,
            )
        )
    return out
