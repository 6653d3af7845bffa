"""Small two-rank traces whose comparison can be worked out by hand (times in ns, relative 0 = file time 0).

``straggler_pair()``: two ranks, three steps ``ProfilerStep#1..3``. Rank 0's step k starts at ``10 ms * k``, rank 1's
0.5 ms later; both are 9.5 ms long. In every step (``S`` = rank 0's step start):

- all-reduce 1: rank 0's kernel starts at S + 6.0 ms, rank 1's at S + 8.0 ms (2 ms late), both end at S + 9.0 ms;
- all-reduce 2: rank 0 at S + 9.1 ms, rank 1 at S + 9.2 ms, both end at S + 9.5 ms;
- rank 0's main thread runs ``aten::mm`` [S + 0.5, S + 5.5); rank 1's runs ``aten::slow_op`` [S + 3.5, S + 7.9), so
  when rank 0 reaches all-reduce 1 rank 1's host is inside ``aten::slow_op``;
- the all-reduces are launched from the main thread inside the step (rank 0 at S + 5.9 / 9.0 ms, rank 1 at
  S + 7.95 / 9.1 ms); a GEMM runs on stream 7 [S + 0.6, S + 5.4).

So rank 1 is last at every collective and rank 0 waits 2.0 + 0.1 ms per step.
"""

from __future__ import annotations

from gputop_trace.model.builder import TraceBuilder
from gputop_trace.model.kinds import FlowKind, Kind, LaneKind
from gputop_trace.model.merge import merge_traces
from gputop_trace.model.tables import GpuInfo, Lane, TraceMeta
from gputop_trace.model.trace import Trace

MS = 1_000_000
US = 1_000
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
STEPS = 3


def _rank(rank: int, *, step_format: str | None, collectives: bool) -> Trace:
    b = TraceBuilder("kineto")
    pid = 100 + rank
    main = b.lane(
        "main",
        Lane(kind=LaneKind.CPU_THREAD, name=f"thread {pid} (python)", rank=rank, pid=pid, tid=pid,
             process_name="python", sort_key=(rank, 0, pid)),
    )  # fmt: skip
    comp = b.lane(
        "s7",
        Lane(kind=LaneKind.GPU_STREAM, name="stream 7", rank=rank, pid=pid, device=rank, stream=7,
             process_name=f"GPU {rank}", sort_key=(rank, 1, 7)),
    )  # fmt: skip
    comm = b.lane(
        "s20",
        Lane(kind=LaneKind.GPU_STREAM, name="stream 20", rank=rank, pid=pid, device=rank, stream=20,
             process_name=f"GPU {rank}", sort_key=(rank, 1, 20)),
    )  # fmt: skip
    n = b.names.intern
    for k in range(STEPS):
        s = 10 * MS * k
        mine = s + (500 * US if rank else 0)
        b.add_events(
            start_ns=[mine],
            dur_ns=[9500 * US],
            kind=Kind.RANGE,
            lane=main,
            name=n(step_format.format(k=k + 1) if step_format else "train"),
        )
        op = ("aten::slow_op", s + 3500 * US, 4400 * US) if rank else ("aten::mm", s + 500 * US, 5000 * US)
        b.add_events(start_ns=[op[1]], dur_ns=[op[2]], kind=Kind.CPU_OP, lane=main, name=n(op[0]))
        b.add_events(start_ns=[s + 600 * US], dur_ns=[4800 * US], kind=Kind.KERNEL, lane=comp, name=n("sm90_gemm"))
        if not collectives:
            continue
        arrivals = [s + 8000 * US, s + 9200 * US] if rank else [s + 6000 * US, s + 9100 * US]
        ends = [s + 9000 * US, s + 9500 * US]
        issues = [s + 7950 * US, s + 9100 * US] if rank else [s + 5900 * US, s + 9000 * US]
        kernels = b.add_events(
            start_ns=arrivals,
            dur_ns=[e - a for a, e in zip(arrivals, ends, strict=True)],
            kind=Kind.KERNEL,
            lane=comm,
            name=n(ALLREDUCE),
        )
        api = b.add_events(start_ns=issues, dur_ns=10 * US, kind=Kind.API, lane=main, name=n("cudaLaunchKernel"))
        b.add_flows(api, kernels, FlowKind.LAUNCH)
    meta = TraceMeta(format="kineto", source=(f"rank{rank}.json",), ranks=(rank,), world_size=2,
                     gpus=(GpuInfo(rank, "NVIDIA H200", rank=rank),))  # fmt: skip
    return b.build(meta, t0_ns=0)


def straggler_pair(
    *, step_names: bool = True, collectives: bool = True, step_formats: tuple[str, str] = ("ProfilerStep#{k}",) * 2
) -> Trace:
    """The two ranks described above, merged as the loader merges a directory of per-rank traces.
    ``step_names=False`` names every step range ``train`` (no step ranges found); ``collectives=False`` leaves the
    all-reduces out; ``step_formats`` names each rank's steps (``{k}``: 1, 2, 3)."""
    return merge_traces(
        [_rank(r, step_format=step_formats[r] if step_names else None, collectives=collectives) for r in (0, 1)]
    )
