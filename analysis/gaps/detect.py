"""GPU idle gaps, attributed to what the host was doing (detectors.md §2, "CPU-gap detector").

Per GPU (rank, device, process): busy = every kernel, memcpy, memset and CUDA-graph row on every stream, plus
the profiler-overhead rows nsys counts as GPU work when they fall strictly inside the device's active span.
Holes in busy between the first op's start and the last op's end are gaps, found exactly the way
``nsys analyze -r gpu_gaps`` finds them (a zero-length op splits a hole). A gap is reported when it is at least
``threshold_ns`` long.

Attribution of a gap, from the GPU op that ends it and that op's launching CUDA call:

* the launch call had returned before the gap began → the op sat queued while the GPU idled:
  **GPU-side dependency** (an event wait on another stream, a collective, a graph or host-function node);
* otherwise the GPU waited for the host. The launching thread's activity in the window from the gap start to
  the end of the launch call is split by :mod:`gputop_trace.analysis.host.classes` classes (sync, OS call, data
  loading, other traced work, nothing traced); the class holding most of the window names the cause. A gap
  that opens while the thread is still in a synchronizing call, and is then spent in ordinary framework work,
  is a **sync stall**: the sync drained the GPU queue, so that work could not run ahead of the GPU.
* ops with no known launch call are attributed with the device's main launching thread and the whole gap.
* a gap the host spent in traced work whose window is mostly the launch call (of at least 1 ms) of the kernel
  that ends it is a **slow launch**: the host sat inside that one call (lazy module loading, a driver stall),
  not in framework overhead.

All times are int64 ns relative to the trace start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from gputop_trace.analysis.gaps.attribution import BREAKDOWN_KEYS, GapColumns, attribute_gaps
from gputop_trace.analysis.gaps.causes import CAUSES, cause_label
from gputop_trace.analysis.gaps.detail import gap_detail
from gputop_trace.analysis.intervals import holes
from gputop_trace.model.arrays import I64, isin
from gputop_trace.model.devices import DeviceWords
from gputop_trace.model.kinds import GPU_BUSY_KINDS, Kind
from gputop_trace.model.trace import Trace

#: What to do about a cause, in one sentence (on a CUDA GPU; :func:`cause_fix` says it of any device).
CAUSE_FIX: dict[str, str] = {
    "sync_stall": "remove the host synchronization from the step (avoid .item()/.cpu()/print of GPU values, "
    "log every N steps, use non_blocking copies and events) so the host can queue work ahead of the GPU",
    "blocked_os": "find why the thread blocks (lock, queue, file or socket read) and move it off the "
    "launching thread or overlap it with GPU work",
    "data_loading": "overlap input loading with compute: more DataLoader workers, pin_memory=True, prefetching, "
    "or a faster input pipeline",
    "cpu_bound": "cut host overhead per step: larger batches or fused ops, torch.compile or CUDA graphs, less "
    "Python per kernel",
    "untraced": "the launching thread did something the profiler did not record: add record_function/NVTX "
    "ranges (or Python stack tracing) around it to see what",
    "gpu_dependency": "the GPU waited on another stream, event, collective or graph dependency: check stream "
    "ordering, and whether another rank or stream is late",
    "slow_launch": "the launch call itself was slow (one-time work inside it: lazy loading of the kernel's module, "
    "a driver stall, autotuning): warm up before profiling, or set CUDA_MODULE_LOADING=EAGER if it happens every run",
}


def cause_fix(cause: str, words: DeviceWords) -> str:
    """What to do about a cause on one device: :data:`CAUSE_FIX` on a CUDA GPU; elsewhere the same advice said
    of the device, with HIP graphs and roctx on ROCm and no vendor-specific API on other accelerators."""
    if words.accelerator == "cuda":
        return CAUSE_FIX[cause]
    if cause == "cpu_bound":
        graphs = f"torch.compile or {words.graphs}s" if words.graphs else "torch.compile"
        return f"cut host overhead per step: larger batches or fused ops, {graphs}, less Python per kernel"
    if cause == "untraced":
        ranges = "record_function/roctx" if words.runtime == "HIP" else "record_function"
        return (
            f"the launching thread did something the profiler did not record: add {ranges} ranges (or Python stack "
            "tracing) around it to see what"
        )
    if cause == "slow_launch":
        eager = ", or set HIP_ENABLE_DEFERRED_LOADING=0 if it happens every run" if words.runtime == "HIP" else ""
        return (
            "the launch call itself was slow (one-time work inside it: lazy loading of the kernel's code, a driver "
            f"stall, autotuning): warm up before profiling{eager}"
        )
    if cause == "data_loading" and not words.is_gpu:
        return (
            "overlap input loading with compute: more DataLoader workers, pinned host buffers, prefetching, or a "
            "faster input pipeline"
        )
    return words.say(CAUSE_FIX[cause])


DEFAULT_THRESHOLD_NS = 20_000
#: Gap-length histogram bin edges (ns); the last bin is open-ended.
HISTOGRAM_EDGES_NS: tuple[int, ...] = (
    0,
    1_000,
    10_000,
    20_000,
    50_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
)
#: Launch-bound detection: gaps shorter than this between ops shorter than SHORT_OP_NS ...
LAUNCH_GAP_NS = 10_000
SHORT_OP_NS = 10_000
#: ... at least this many of them, holding at least this share of the device's active span.
LAUNCH_BOUND_MIN_GAPS = 50
LAUNCH_BOUND_MIN_SHARE = 0.10


@dataclass(frozen=True)
class CauseTotal:
    """Reported gaps of one cause on one device: how many, and their summed length (ns)."""

    cause: str
    label: str
    count: int
    total_ns: int


@dataclass(frozen=True)
class GapHistogram:
    """Lengths of all idle holes of a device (whatever the threshold): counts and summed ns per bin.

    Bin ``i`` holds holes with ``edges_ns[i] <= length < edges_ns[i + 1]``; the last bin is open-ended.
    """

    edges_ns: tuple[int, ...]
    counts: tuple[int, ...]
    total_ns: tuple[int, ...]

    def labels(self) -> list[str]:
        """Human bin labels (``"10–20 µs"``)."""
        from gputop_trace.units import format_ns

        out = []
        for i, lo in enumerate(self.edges_ns):
            if i + 1 < len(self.edges_ns):
                out.append(
                    f"{format_ns(lo)}–{format_ns(self.edges_ns[i + 1])}" if lo else f"< {format_ns(self.edges_ns[1])}"
                )
            else:
                out.append(f"≥ {format_ns(lo)}")
        return out


@dataclass(frozen=True)
class Gap:
    """One GPU idle gap of at least the threshold, with its attribution. Times in ns from the trace start.

    ``next_op``/``prev_op``: the GPU ops that end and open the gap; ``launch_event`` the CUDA call that launched
    ``next_op`` (``-1`` unknown); ``thread_lane`` the CPU thread examined (``-1`` none); ``cause_event`` the call,
    range or operator that explains the gap (``-1`` none); ``after_sync`` the synchronizing call the thread was
    in when the GPU went idle (``-1`` none); ``range_event``/``range_name`` the innermost annotation range on
    the thread at the gap start; ``breakdown_ns`` what the thread did in the examined window (``window_ns``
    long), per
    :data:`~gputop_trace.analysis.gaps.attribution.BREAKDOWN_KEYS`.
    """

    rank: int
    device: int
    pid: int
    start_ns: int
    dur_ns: int
    cause: str
    range_name: str | None
    launch_event: int
    next_op: int
    prev_op: int
    thread_lane: int
    cause_event: int
    after_sync: int
    range_event: int
    window_ns: int
    breakdown_ns: dict[str, int]
    detail: str
    words: DeviceWords = field(default=DeviceWords(), repr=False)

    @property
    def end_ns(self) -> int:
        """End of the gap (ns): the start of ``next_op``."""
        return self.start_ns + self.dur_ns

    @property
    def cause_label(self) -> str:
        """Display label of the cause, said of the gap's device."""
        return cause_label(self.cause, self.words)


@dataclass(frozen=True, eq=False)
class DeviceGaps:
    """Idle time and gaps of one GPU (one rank, device and process). Times in ns from the trace start.

    ``span_ns`` = first op start → last op end; ``busy_ns`` = union of GPU work; ``idle_ns = span_ns - busy_ns``
    (all holes, whatever their length). ``gaps``/``columns`` hold the holes of at least ``threshold_ns``;
    ``by_cause`` counts and sums them per cause (every cause present, zeros included). ``launch_bound`` is set
    when at least :data:`LAUNCH_BOUND_MIN_GAPS` holes shorter than :data:`LAUNCH_GAP_NS` sit between ops shorter
    than :data:`SHORT_OP_NS` and those holes add up to :data:`LAUNCH_BOUND_MIN_SHARE` of the span.
    """

    rank: int
    device: int
    pid: int
    first_ns: int
    last_ns: int
    span_ns: int
    busy_ns: int
    idle_ns: int
    ops: int
    threshold_ns: int
    holes: int
    gaps_ns: int
    by_cause: dict[str, CauseTotal]
    histogram: GapHistogram
    launch_bound: bool
    short_gaps: int
    short_gaps_ns: int
    columns: GapColumns = field(repr=False)
    trace: Trace = field(repr=False)

    @property
    def idle_pct(self) -> float:
        """Idle share of the active span, 0–100."""
        return 100.0 * self.idle_ns / self.span_ns if self.span_ns else 0.0

    @property
    def busy_pct(self) -> float:
        """Busy share of the active span, 0–100."""
        return 100.0 * self.busy_ns / self.span_ns if self.span_ns else 0.0

    @cached_property
    def gaps(self) -> list[Gap]:
        """The reported gaps as objects, in start order."""
        return [_gap_object(self, i) for i in range(len(self.columns))]

    def gap(self, i: int) -> Gap:
        """Gap ``i`` (start order) without building the whole list."""
        return _gap_object(self, i)

    def longest(self, n: int) -> list[Gap]:
        """The ``n`` longest reported gaps, longest first (ties: earlier first)."""
        c = self.columns
        order = np.lexsort((c.start_ns, -c.dur_ns))[:n]
        return [_gap_object(self, int(i)) for i in order.tolist()]


def busy_ops(trace: Trace, rank: int | None = None, device: int | None = None) -> I64:
    """Indices of the events that make a GPU busy for the gap detector: kernels, memcpys, memsets, graph rows
    and profiler-overhead rows on GPU lanes (the latter are clipped to the active span in :func:`find_gaps`)."""
    idx = trace.of_kind(*GPU_BUSY_KINDS, Kind.OVERHEAD)
    idx = idx[trace.event_device[idx] >= 0]
    if rank is not None:
        idx = idx[trace.event_rank[idx] == rank]
    if device is not None:
        idx = idx[trace.event_device[idx] == device]
    return idx


def find_gaps(
    trace: Trace, threshold_ns: int = DEFAULT_THRESHOLD_NS, *, rank: int | None = None, device: int | None = None
) -> list[DeviceGaps]:
    """Idle gaps of every GPU (optionally one rank / device), sorted by rank, device, pid.

    ``threshold_ns``: report holes at least this long (ns, ≥ 0). Devices with no GPU work are absent.
    """
    if threshold_ns < 0:
        raise ValueError("threshold_ns must be >= 0")
    idx = busy_ops(trace, rank, device)
    if not len(idx):
        return []
    # group by (rank, device, pid) through the lanes: a few lanes, no sort over the events
    lane_ids = np.flatnonzero(np.bincount(trace.lane[idx], minlength=len(trace.lanes)))
    group_of_lane: dict[tuple[int, int, int], list[int]] = {}
    for ln in lane_ids.tolist():
        lane = trace.lanes[ln]
        group_of_lane.setdefault((lane.rank, lane.device, lane.pid), []).append(ln)
    op_lane = trace.lane[idx]
    is_overhead = trace.kind == Kind.OVERHEAD
    staged: list[dict[str, Any]] = []
    for (g_rank, g_device, g_pid), g_lanes in sorted(group_of_lane.items()):
        ops = idx[isin(op_lane, g_lanes)] if len(group_of_lane) > 1 else idx
        st = _device_holes(trace, ops, is_overhead, threshold_ns)
        if st is not None:
            staged.append({"rank": g_rank, "device": g_device, "pid": g_pid, **st})
    if not staged:
        return []
    return _attributed(trace, staged, threshold_ns)


def _device_holes(trace: Trace, ops: I64, is_overhead: np.ndarray, threshold_ns: int) -> dict[str, Any] | None:
    """The active span, idle time, histogram and launch-bound counts of one GPU (its busy events ``ops``; profiler
    overhead rows only inside the span of the others), and its holes of at least ``threshold_ns`` (the keys
    starting with ``_``, to be attributed); None where it has no work but overhead."""
    real = ops[~is_overhead[ops]]
    if not len(real):
        return None
    s_r = trace.start_ns[real]
    e_r = s_r + trace.dur_ns[real]
    first, last = int(s_r.min()), int(e_r.max())
    ovh = ops[is_overhead[ops]]
    if len(ovh):
        s_o = trace.start_ns[ovh]
        ovh = ovh[(s_o > first) & (s_o + trace.dur_ns[ovh] < last)]
        ops = np.concatenate((real, ovh))
    else:
        ops = real
    s = trace.start_ns[ops]
    e = s + trace.dur_ns[ops]
    hs, he, before, after = holes(s, e)
    hl = he - hs
    span = last - first
    busy = span - int(hl.sum())  # the holes are exactly the idle part of the active span
    sel = np.flatnonzero(hl >= threshold_ns)
    # launch-bound: short holes between short ops
    short = (hl < LAUNCH_GAP_NS) & (trace.dur_ns[ops[before]] < SHORT_OP_NS) & (trace.dur_ns[ops[after]] < SHORT_OP_NS)
    short_n, short_ns = int(short.sum()), int(hl[short].sum())
    edges = np.array(HISTOGRAM_EDGES_NS, dtype=np.int64)
    b = np.searchsorted(edges, hl, side="right") - 1
    counts = np.bincount(b, minlength=len(edges))
    totals = np.bincount(b, weights=hl, minlength=len(edges)).astype(np.int64)
    return {
        "first_ns": first,
        "last_ns": last,
        "span_ns": span,
        "busy_ns": busy,
        "idle_ns": span - busy,
        "ops": len(real),
        "holes": len(hl),
        "histogram": GapHistogram(HISTOGRAM_EDGES_NS, tuple(counts.tolist()), tuple(totals.tolist())),
        "launch_bound": bool(
            short_n >= LAUNCH_BOUND_MIN_GAPS and span > 0 and short_ns >= LAUNCH_BOUND_MIN_SHARE * span
        ),
        "short_gaps": short_n,
        "short_gaps_ns": short_ns,
        "_g0": hs[sel],
        "_g1": he[sel],
        "_next": ops[after[sel]],
        "_prev": ops[before[sel]],
        "_launcher": _main_launcher(trace, real),
    }


def _attributed(trace: Trace, staged: list[dict[str, Any]], threshold_ns: int) -> list[DeviceGaps]:
    """Every GPU's reported gaps attributed to causes (in one vectorized pass over all of them), and its
    :class:`DeviceGaps` with the totals by cause."""
    # attribute every reported gap of every device in one vectorized pass
    sizes = [len(st["_g0"]) for st in staged]
    g0 = np.concatenate([st["_g0"] for st in staged])
    g1 = np.concatenate([st["_g1"] for st in staged])
    nxt = np.concatenate([st["_next"] for st in staged])
    prev = np.concatenate([st["_prev"] for st in staged])
    fallback = np.repeat(np.array([st["_launcher"] for st in staged], dtype=np.int64), sizes)
    cols = attribute_gaps(trace, g0, g1, nxt, prev, fallback)
    out: list[DeviceGaps] = []
    offset = 0
    for st, n in zip(staged, sizes, strict=True):
        part = cols.take(slice(offset, offset + n))
        offset += n
        words = trace.device_words(int(st["rank"]), int(st["device"]))
        code_counts = np.bincount(part.cause, minlength=len(CAUSES))
        code_ns = np.bincount(part.cause, weights=part.dur_ns, minlength=len(CAUSES)).astype(np.int64)
        by_cause = {
            c: CauseTotal(c, cause_label(c, words), int(code_counts[i]), int(code_ns[i])) for i, c in enumerate(CAUSES)
        }
        public = {k: v for k, v in st.items() if not k.startswith("_")}
        out.append(
            DeviceGaps(
                **public,
                threshold_ns=int(threshold_ns),
                gaps_ns=int(part.dur_ns.sum()),
                by_cause=by_cause,
                columns=part,
                trace=trace,
            )
        )
    return out


def _main_launcher(trace: Trace, ops: I64) -> int:
    """The CPU lane that launched most of ``ops`` (``-1`` when no launch is known)."""
    api = trace.launch_of[ops]
    api = api[api >= 0]
    if not len(api):
        return -1
    return int(np.bincount(trace.lane[api]).argmax())


def _gap_object(dg: DeviceGaps, i: int) -> Gap:
    c = dg.columns
    t = dg.trace
    cause = CAUSES[int(c.cause[i])]
    rng = int(c.range_event[i])
    return Gap(
        rank=dg.rank,
        device=dg.device,
        pid=dg.pid,
        start_ns=int(c.start_ns[i]),
        dur_ns=int(c.dur_ns[i]),
        cause=cause,
        range_name=t.event_name(rng) if rng >= 0 else None,
        launch_event=int(c.launch_event[i]),
        next_op=int(c.next_op[i]),
        prev_op=int(c.prev_op[i]),
        thread_lane=int(c.thread_lane[i]),
        cause_event=int(c.cause_event[i]),
        after_sync=int(c.after_sync[i]),
        range_event=rng,
        window_ns=int(c.window_ns[i]),
        breakdown_ns={k: int(v) for k, v in zip(BREAKDOWN_KEYS, c.breakdown_ns[i].tolist(), strict=True)},
        detail=gap_detail(
            t,
            cause,
            int(c.cause_event[i]),
            int(c.after_sync[i]),
            rng,
            int(c.next_op[i]),
            int(c.launch_event[i]),
            int(c.start_ns[i]),
        ),
        words=t.device_words(dg.rank, dg.device),
    )
