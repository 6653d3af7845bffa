"""Findings about kernel launches (detectors.md §2.5, §5): launch-bound GPUs, kernels shorter than their own
launch call, and very slow launch calls. Times are int64 ns."""

from __future__ import annotations

import numpy as np

from gputop_trace.analysis.compiled.regions import CompiledProgram
from gputop_trace.analysis.findings.compiled import launch_fix
from gputop_trace.analysis.findings.draft import Draft, name_of, pct
from gputop_trace.analysis.gaps.detect import LAUNCH_GAP_NS, SHORT_OP_NS, DeviceGaps
from gputop_trace.analysis.kernels import short_name
from gputop_trace.analysis.launches import VERY_SLOW_LAUNCH_NS, LaunchReport
from gputop_trace.model.arrays import isin
from gputop_trace.model.devices import DeviceWords
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace
from gputop_trace.units import format_ns, plural

#: Launch overhead: kernels shorter than their launch call, at least this many and this share of kernels.
MIN_TINY_KERNELS = 100
MIN_TINY_SHARE = 0.3


def lazy_loading_words(trace: Trace, api: int, words: DeviceWords) -> tuple[str, str]:
    """(what is loaded lazily, the fix's second half) for a slow launch call ``api`` on a device: CUDA's
    lazy module loading, HIP's deferred code-object loading (told by a ``hip*`` call or a ROCm device), and
    on other accelerators only the kernel's code (their loaders have no switch this tool knows)."""
    if name_of(trace, api).startswith("hip") or words.runtime == "HIP":
        return "code object (HIP deferred loading)", ", or set HIP_ENABLE_DEFERRED_LOADING=0 if it happens every run"
    if words.runtime == "CUDA":
        return "module (CUDA_MODULE_LOADING=LAZY)", ", or set CUDA_MODULE_LOADING=EAGER if it happens every run"
    return "code", ""


def launch_bound_finding(dg: DeviceGaps, multi: bool, prog: CompiledProgram | None = None) -> Draft:
    """The finding for a launch-bound GPU (:attr:`~gputop_trace.analysis.gaps.detect.DeviceGaps.launch_bound`)."""
    label = dg.trace.device_label(dg.rank, dg.device)
    gpu = f"rank {dg.rank} {label}" if multi else label
    words = dg.trace.device_words(dg.rank, dg.device)
    return Draft(
        kind="launch_bound",
        title=f"{gpu} is launch-bound: {plural(dg.short_gaps, 'gap')} under {format_ns(LAUNCH_GAP_NS)} between short "
        f"kernels ({format_ns(dg.short_gaps_ns)}, {pct(dg.short_gaps_ns, dg.span_ns)} of its active time)",
        detail=f"Kernels shorter than {format_ns(SHORT_OP_NS)} run back to back with small idle gaps between them: "
        f"launch overhead, not {words.noun} work, sets the pace. Fix: {launch_fix(prog, words)}.",
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
    words = trace.device_words()
    if len(tiny) >= MIN_TINY_KERNELS and kernels and len(tiny) >= MIN_TINY_SHARE * kernels:
        lost = int((rep.launch_ns[tiny] - trace.dur_ns[rep.op[tiny]]).sum())
        out.append(
            Draft(
                kind="launch_overhead",
                title=f"{len(tiny):,} of {kernels:,} kernels ({pct(len(tiny), kernels)}) run shorter than their own "
                f"launch call (median launch {format_ns(float(np.median(rep.launch_ns[tiny])))}, median kernel "
                f"{format_ns(float(np.median(trace.dur_ns[rep.op[tiny]])))})",
                detail=f"The host spends longer launching these kernels than the {words.noun} spends running them, "
                f"so the {words.noun} cannot get ahead of the host. Fix: {launch_fix(prog, words)}.",
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
        slow = slow[~isin(rep.api[slow], np.fromiter(reported, dtype=np.int64))]
    if len(slow):
        worst = int(slow[np.argmax(rep.launch_ns[slow])])
        total = int(rep.launch_ns[slow].sum())
        op = int(rep.op[worst])
        loading, eager = lazy_loading_words(
            trace,
            int(rep.api[worst]),
            trace.device_words(int(trace.event_rank[op]), int(trace.event_device[op])),
        )
        out.append(
            Draft(
                kind="slow_launch",
                title=f"{plural(len(slow), 'kernel launch call')} took over "
                f"{format_ns(VERY_SLOW_LAUNCH_NS)} (worst: `{name_of(trace, int(rep.api[worst]))}` "
                f"{format_ns(int(rep.launch_ns[worst]))} for {short_name(name_of(trace, int(rep.op[worst])))})",
                detail="A launch this slow is usually one-time work inside the call: lazy loading of the kernel's "
                f"{loading}, autotuning, or allocator growth. Fix: warm up before profiling{eager}.",
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
