"""CUPTI range-profiler traces: a kernel table from the ranges and their hardware counters.

In range-profiler mode (``torch.profiler`` with an ``experimental_config`` naming ``profiler_metrics``) Kineto
replays each kernel inside its own range to read hardware counters and records no kernel activity: the trace
holds one ``cuda_profiler_range`` event per profiled kernel, named for the kernel, with the counters in its
``args``. The parser puts the ranges on the device's :data:`~gputop_trace.model.devices.PROFILER_LANE` lane and
each counter in a series named :data:`~gputop_trace.model.devices.PROFILER_SERIES` + the counter's name, one
sample per range at the range's start. Here each sample is matched to the range that starts at that exact time
(ranges run one after the other; a sample with no such range is left out), and the ranges are grouped per kernel
name and device with their counters summed.

A range's own length is the profiler's replay window, not the kernel's duration (every range of the corpus file
lasts the same 121 ms), so no time is derived from it: idle gaps, overlap and busy time need activity tracing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gputop_trace.model.arrays import distinct
from gputop_trace.model.devices import PROFILER_LANE, PROFILER_SERIES
from gputop_trace.model.kinds import LaneKind
from gputop_trace.model.trace import Trace

#: How the finding and the summary line of a range-profiler trace begin (the app's first screen looks for it)
RANGE_PROFILER_TITLE = "CUPTI range-profiler trace"


@dataclass(frozen=True)
class ProfiledKernel:
    """One kernel name on one device: how many ranges profiled it and each counter summed over them."""

    name: str
    rank: int
    device: int
    ranges: int
    counters: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ProfilerRanges:
    """What a range-profiler trace holds: ``ranges`` profiled ranges, ``metrics`` the counters' names (file
    order), ``kernels`` one row per kernel name and device (most ranges first, then by name), ``window_ns`` the
    distinct range lengths (ns) — the profiler's replay windows."""

    ranges: int
    metrics: tuple[str, ...]
    kernels: list[ProfiledKernel]
    window_ns: tuple[int, ...]


def profiler_lanes(trace: Trace) -> list[int]:
    """The lanes holding CUPTI range-profiler ranges."""
    return [i for i, ln in enumerate(trace.lanes) if ln.kind == LaneKind.GPU_RANGES and ln.name == PROFILER_LANE]


def profiler_ranges(trace: Trace) -> ProfilerRanges | None:
    """The range-profiler kernel table, or ``None`` when the trace has no profiler ranges."""
    lanes = profiler_lanes(trace)
    if not lanes:
        return None
    metrics: list[str] = []
    groups: dict[tuple[str, int, int], tuple[int, dict[str, float]]] = {}
    n_ranges = 0
    windows: set[int] = set()
    for lane in lanes:
        ln = trace.lanes[lane]
        sl = trace.lane_slice(lane)
        starts = trace.start_ns[sl]
        names = trace.name[sl]
        n_ranges += len(starts)
        windows.update(int(d) for d in distinct(trace.dur_ns[sl]).tolist())
        per_range: dict[str, np.ndarray] = {}
        for s in trace.counters:
            if not s.name.startswith(PROFILER_SERIES) or s.rank != ln.rank or s.pid != ln.pid:
                continue
            metric = s.name[len(PROFILER_SERIES) :]
            if metric not in metrics:
                metrics.append(metric)
            pos = np.minimum(np.searchsorted(starts, s.ts_ns), max(len(starts) - 1, 0))
            ok = starts[pos] == s.ts_ns if len(starts) else np.zeros(len(s.ts_ns), dtype=bool)
            vals = np.zeros(len(starts), dtype=np.float64)
            np.add.at(vals, pos[ok], s.values[ok])
            per_range[metric] = vals
        for j, name_id in enumerate(names.tolist()):
            key = (trace.names[name_id], ln.rank, ln.device)
            count, sums = groups.get(key, (0, {}))
            for metric, vals in per_range.items():
                sums[metric] = sums.get(metric, 0.0) + float(vals[j])
            groups[key] = (count + 1, sums)
    kernels = [
        ProfiledKernel(name=k[0], rank=k[1], device=k[2], ranges=c, counters={m: sums.get(m, 0.0) for m in metrics})
        for k, (c, sums) in groups.items()
    ]
    kernels.sort(key=lambda r: (-r.ranges, r.name, r.rank, r.device))
    return ProfilerRanges(ranges=n_ranges, metrics=tuple(metrics), kernels=kernels, window_ns=tuple(sorted(windows)))


def short_metric(metric: str) -> str:
    """A counter's name short enough for a column head: the part that differs between the usual CUPTI
    instruction counters (``smsp__sass_thread_inst_executed_op_ffma_pred_on.sum`` → ``ffma``)."""
    out = metric
    for prefix in ("smsp__sass_thread_inst_executed_op_", "smsp__sass_", "smsp__", "sm__"):
        if out.startswith(prefix):
            out = out[len(prefix) :]
            break
    for suffix in ("_pred_on.sum", ".sum", ".avg", ".max"):
        if out.endswith(suffix):
            out = out[: -len(suffix)]
            break
    return out or metric


def profiler_summary_line(rep: ProfilerRanges) -> str:
    """The plain sentence that says what a range-profiler trace holds and what it cannot show."""
    kernels = len({k.name for k in rep.kernels})
    windows = (
        f"every range lasts the same {rep.window_ns[0] / 1e6:.1f} ms, the profiler's replay window"
        if len(rep.window_ns) == 1
        else "their lengths are the profiler's replay windows"
    )
    return (
        f"{RANGE_PROFILER_TITLE}: {rep.ranges} kernel ranges ({kernels} kernel names) with hardware counters "
        f"({len(rep.metrics)} counters per kernel), no kernel activity; {windows}, not kernel durations. "
        "Timeline analyses (idle gaps, overlap, busy time) need activity tracing: re-record with "
        "ProfilerActivity.CUDA without the profiler config (experimental_config's profiler_metrics). "
        "`gputop-trace kernels` lists the counters per kernel."
    )
