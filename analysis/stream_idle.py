"""Idle time between consecutive ops of each GPU stream, split the way Holistic Trace Analysis splits it (a
second view of detectors.md §2). Times are int64 ns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gputop_trace.model.kinds import GPU_BUSY_KINDS
from gputop_trace.model.trace import Trace

#: Per-stream view: a stream gap shorter than this whose next op was already queued is launch latency.
KERNEL_WAIT_NS = 30_000


@dataclass(frozen=True)
class StreamIdle:
    """Idle time between consecutive ops of one GPU stream (ns), split the way Holistic Trace Analysis splits
    it: ``host_wait`` — the next op's launch call started after the previous op on the stream ended (the
    stream waited for the host); ``kernel_wait`` — otherwise, and the gap is under :data:`KERNEL_WAIT_NS`
    (launch latency between queued kernels); ``other`` — the rest (event waits, other streams). Ops with no
    known launch call count as ``other``."""

    rank: int
    device: int
    stream: int
    lane: int
    ops: int
    idle_ns: int
    host_wait_ns: int
    kernel_wait_ns: int
    other_ns: int


def stream_idle_breakdown(trace: Trace, *, rank: int | None = None, device: int | None = None) -> list[StreamIdle]:
    """The per-stream idle breakdown of every GPU stream lane with at least one op (a second view of §2)."""
    idx = trace.of_kind(*GPU_BUSY_KINDS)
    if rank is not None:
        idx = idx[trace.event_rank[idx] == rank]
    if device is not None:
        idx = idx[trace.event_device[idx] == device]
    out: list[StreamIdle] = []
    if not len(idx):
        return out
    lanes = trace.lane[idx]
    for ln in np.flatnonzero(np.bincount(lanes, minlength=len(trace.lanes))).tolist():
        ops = idx[lanes == ln]  # one lane, in start order
        s = trace.start_ns[ops]
        e = s + trace.dur_ns[ops]
        prev_end = np.maximum.accumulate(e)[:-1]
        gap = np.maximum(s[1:] - prev_end, 0)
        api = trace.launch_of[ops[1:]]
        known = api >= 0
        api_start = np.where(known, trace.start_ns[np.maximum(api, 0)], 0)
        host = known & (api_start > prev_end)
        kernel = known & ~host & (gap < KERNEL_WAIT_NS)
        other = ~host & ~kernel
        lane = trace.lanes[ln]
        out.append(
            StreamIdle(
                rank=lane.rank,
                device=lane.device,
                stream=lane.stream,
                lane=int(ln),
                ops=len(ops),
                idle_ns=int(gap.sum()),
                host_wait_ns=int(gap[host].sum()),
                kernel_wait_ns=int(gap[kernel].sum()),
                other_ns=int(gap[other].sum()),
            )
        )
    out.sort(key=lambda r: (r.rank, r.device, r.stream))
    return out
