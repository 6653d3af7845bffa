"""Launch behaviour (detectors.md §5): how long CUDA launch calls take and how long GPU work waits after them.

For every GPU op with a known launching call: ``launch_ns`` = the call's duration, ``delay_ns`` = GPU start −
call end, clipped at 0 (a kernel may start before its launch call returns). Flags:

* ``delay_outlier`` — delay above :data:`DELAY_OUTLIER_NS` (100 µs): the op waited in its stream's queue
  (the GPU was behind, or the stream waited on an event) — harmless when the GPU is busy, a problem when idle;
* ``slow_launch`` — a launch call above :data:`SLOW_LAUNCH_NS` (50 µs): the host is slow to issue work
  (lazy module loading, allocator, contention);
* ``shorter_than_launch`` — a kernel that runs for less time than its own launch call took: the host cannot
  keep the GPU fed one kernel at a time; candidates for fusion or CUDA graphs.

A call that launched several ops (a CUDA graph launch) counts once as a launch and is left out of the delay
and kernel-duration flags. Queue depth per stream: +1 when a launch call starts, −1 when its op starts on the
GPU. Times in int64 ns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gputop_trace.model.arrays import I64, distinct
from gputop_trace.model.kinds import GPU_BUSY_KINDS, Kind
from gputop_trace.model.trace import Trace

#: A single launch call at least this long is reported (a slow launch: lazy loading, a driver stall).
VERY_SLOW_LAUNCH_NS = 1_000_000

DELAY_OUTLIER_NS = 100_000
SLOW_LAUNCH_NS = 50_000


@dataclass(frozen=True)
class StreamQueue:
    """Launch-queue depth of one GPU stream lane: ``times_ns``/``depth`` is a step function (depth after each
    time); ``max_depth``, and the time-weighted ``mean_depth`` between the first launch and the last op start."""

    lane: int
    rank: int
    device: int
    stream: int
    launches: int
    max_depth: int
    mean_depth: float
    times_ns: I64 = field(repr=False, compare=False)
    depth: I64 = field(repr=False, compare=False)


@dataclass(frozen=True)
class LaunchReport:
    """Per-launch columns (``op`` GPU event, ``api`` its launch call, ``launch_ns``, ``delay_ns``), the indices
    (into those columns) of each flag, and the per-stream queues. Kernels only for ``shorter_than_launch``."""

    op: I64
    api: I64
    launch_ns: I64
    delay_ns: I64
    delay_outliers: I64
    slow_launches: I64
    shorter_than_launch: I64
    streams: list[StreamQueue]
    delay_threshold_ns: int = DELAY_OUTLIER_NS
    slow_threshold_ns: int = SLOW_LAUNCH_NS

    def __len__(self) -> int:
        return int(self.op.shape[0])

    @property
    def kernels(self) -> int:
        """Number of launches in the report."""
        return len(self)


def launch_behaviour(trace: Trace, *, rank: int | None = None, device: int | None = None) -> LaunchReport:
    """Launch durations, delays, flags and queue depth of every GPU op with a known launch call."""
    ops = trace.of_kind(*GPU_BUSY_KINDS)
    if rank is not None:
        ops = ops[trace.event_rank[ops] == rank]
    if device is not None:
        ops = ops[trace.event_device[ops] == device]
    api = trace.launch_of[ops]
    keep = api >= 0
    ops, api = ops[keep], api[keep]
    launch_ns = trace.dur_ns[api]
    api_end = trace.start_ns[api] + launch_ns
    delay = np.maximum(trace.start_ns[ops] - api_end, 0)
    is_kernel = trace.kind[ops] == Kind.KERNEL
    # one call that launched several ops (a CUDA graph): its nodes run one after another by design, so their
    # delays and their durations are not comparable with the whole call; the call counts once
    if len(api):
        uniq, first, n_ops = np.unique(api, return_index=True, return_counts=True)
        single = (n_ops == 1)[np.searchsorted(uniq, api)]
        is_first = np.zeros(len(api), dtype=bool)
        is_first[first] = True
    else:
        single = is_first = np.zeros(0, dtype=bool)
    streams = _queues(trace, ops, api)
    return LaunchReport(
        op=ops,
        api=api,
        launch_ns=launch_ns,
        delay_ns=delay,
        delay_outliers=np.flatnonzero(single & (delay > DELAY_OUTLIER_NS)),
        slow_launches=np.flatnonzero(is_first & (launch_ns > SLOW_LAUNCH_NS)),
        shorter_than_launch=np.flatnonzero(single & is_kernel & (trace.dur_ns[ops] < launch_ns)),
        streams=streams,
    )


def _queues(trace: Trace, ops: I64, api: I64) -> list[StreamQueue]:
    out: list[StreamQueue] = []
    if not len(ops):
        return out
    lanes = trace.lane[ops]
    for ln in distinct(lanes).tolist():
        m = lanes == ln
        up = trace.start_ns[api[m]]
        down = trace.start_ns[ops[m]]
        times = np.concatenate((up, down))
        steps = np.concatenate((np.ones(len(up), dtype=np.int64), -np.ones(len(down), dtype=np.int64)))
        # at equal times the GPU start (-1) comes after the launch (+1) so depth never goes below zero
        order = np.lexsort((-steps, times))
        times, steps = times[order], steps[order]
        depth = np.cumsum(steps)
        dt = np.diff(times)
        span = int(times[-1] - times[0])
        mean = float((depth[:-1] * dt).sum()) / span if span > 0 else 0.0
        lane = trace.lanes[ln]
        out.append(
            StreamQueue(
                lane=int(ln),
                rank=lane.rank,
                device=lane.device,
                stream=lane.stream,
                launches=int(m.sum()),
                max_depth=int(depth.max()),
                mean_depth=mean,
                times_ns=times,
                depth=depth,
            )
        )
    return out
