"""Findings about kernel launches (detectors.md §2.5, §5): launch-bound GPUs, kernels shorter than their own
launch call, and very slow launch calls. Times are int64 ns."""

from __future__ import annotations

import numpy as np

from gputop_trace.analysis.compiled import CompiledProgram
from gputop_trace.analysis.compiled_findings import launch_fix
from gputop_trace.analysis.finding_draft import Draft, name_of, pct
from gputop_trace.analysis.gaps import LAUNCH_GAP_NS, SHORT_OP_NS, DeviceGaps
from gputop_trace.analysis.kernels import short_name
from gputop_trace.analysis.launches import LaunchReport
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace
from gputop_trace.units import format_ns

#: Launch overhead: kernels shorter than their launch call, at least this many and this share of kernels.
MIN_TINY_KERNELS = 100
MIN_TINY_SHARE = 0.3
#: A single launch call at least this long is reported.
VERY_SLOW_LAUNCH_NS = 1_000_000


def launch_bound_finding(dg: DeviceGaps, multi: bool, prog: CompiledProgram | None = None) -> Draft:
    """The finding for a launch-bound GPU (:attr:`~gputop_trace.analysis.gaps.DeviceGaps.launch_bound`)."""
    gpu = f"GPU {dg.device}" if not multi else f"rank {dg.rank} GPU {dg.device}"
    return Draft(
        kind="launch_bound",
        title=f"{gpu} is launch-bound: {dg.short_gaps:,} gaps under {format_ns(LAUNCH_GAP_NS)} between short "
        f"kernels ({format_ns(dg.short_gaps_ns)}, {pct(dg.short_gaps_ns, dg.span_ns)} of its active time)",
        detail=f"Kernels shorter than {format_ns(SHORT_OP_NS)} run back to back with small idle gaps between them: "
        f"launch overhead, not GPU work, sets the pace. Fix: {launch_fix(prog)}.",
        time_ns=dg.short_gaps_ns,
        span_ns=dg.span_ns,
        evidence={"rank": dg.rank, "device": dg.device, "short_gaps": dg.short_gaps, "short_gaps_ns": dg.short_gaps_ns},
        thresholds={"gap_below_ns": LAUNCH_GAP_NS, "kernel_below_ns": SHORT_OP_NS},
        interval=(dg.first_ns, dg.last_ns),
        gpu_rank=dg.rank,
        device=dg.device,
    )


def launch_findings(
    trace: Trace,
    rep: LaunchReport,
    spans: dict[tuple[int, int], int],
    reported: frozenset[int] = frozenset(),
    prog: CompiledProgram | None = None,
) -> list[Draft]:
    """Launch overhead (many kernels shorter than their own launch call) and very slow kernel launch calls;
    ``spans``: active span (ns) per (rank, device); ``reported``: launch calls (event indices) another finding
    already names (a gap that is mostly one slow launch), left out here."""
    out: list[Draft] = []
    if not len(rep):
        return out
    span_all = max(spans.values(), default=trace.span_ns)
    kernels = int((trace.kind[rep.op] == Kind.KERNEL).sum())
    tiny = rep.shorter_than_launch
    if len(tiny) >= MIN_TINY_KERNELS and kernels and len(tiny) >= MIN_TINY_SHARE * kernels:
        lost = int((rep.launch_ns[tiny] - trace.dur_ns[rep.op[tiny]]).sum())
        out.append(
            Draft(
                kind="launch_overhead",
                title=f"{len(tiny):,} of {kernels:,} kernels ({pct(len(tiny), kernels)}) run shorter than their own "
                f"launch call (median launch {format_ns(float(np.median(rep.launch_ns[tiny])))}, median kernel "
                f"{format_ns(float(np.median(trace.dur_ns[rep.op[tiny]])))})",
                detail="The host spends longer launching these kernels than the GPU spends running them, so the GPU "
                f"cannot get ahead of the host. Fix: {launch_fix(prog)}.",
                time_ns=lost,
                span_ns=span_all,
                evidence={"kernels": kernels, "shorter_than_launch": len(tiny), "excess_launch_ns": lost},
                thresholds={"min_count": MIN_TINY_KERNELS, "min_share": MIN_TINY_SHARE},
                event=int(rep.op[tiny[0]]),
            )
        )
    slow = rep.slow_launches[rep.launch_ns[rep.slow_launches] >= VERY_SLOW_LAUNCH_NS]
    # copies have their own findings (a pageable copy call blocks for the whole copy)
    slow = slow[trace.kind[rep.op[slow]] == Kind.KERNEL]
    if reported:
        slow = slow[~np.isin(rep.api[slow], np.fromiter(reported, dtype=np.int64))]
    if len(slow):
        worst = int(slow[np.argmax(rep.launch_ns[slow])])
        total = int(rep.launch_ns[slow].sum())
        out.append(
            Draft(
                kind="slow_launch",
                title=f"{len(slow)} kernel launch call{'s' if len(slow) > 1 else ''} took over "
                f"{format_ns(VERY_SLOW_LAUNCH_NS)} (worst: `{name_of(trace, int(rep.api[worst]))}` "
                f"{format_ns(int(rep.launch_ns[worst]))} for {short_name(name_of(trace, int(rep.op[worst])))})",
                detail="A launch this slow is usually one-time work inside the call: lazy loading of the kernel's "
                "module (CUDA_MODULE_LOADING=LAZY), autotuning, or allocator growth. Fix: warm up before profiling, "
                "or set CUDA_MODULE_LOADING=EAGER if it happens every run.",
                time_ns=total,
                span_ns=span_all,
                evidence={
                    "launches": [
                        {"api": int(rep.api[i]), "op": int(rep.op[i]), "launch_ns": int(rep.launch_ns[i])}
                        for i in slow[:10].tolist()
                    ]
                },
                thresholds={"min_launch_ns": VERY_SLOW_LAUNCH_NS},
                event=int(rep.api[worst]),
            )
        )
    return out
