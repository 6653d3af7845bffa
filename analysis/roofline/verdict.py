"""Why one kernel is slow, from its Nsight Compute metrics (detectors.md §6): the roofline verdict with speed of
light, occupancy and its limiter, warp-stall ranking, tensor-pipe use, cache hit rates, warnings, and a plain-words
explanation (:mod:`gputop_trace.analysis.roofline.explain`).

Pure functions of an :class:`~gputop_trace.model.ncu.NcuKernel`'s metrics (ncu base units). The FLOP counts, peaks
and ridge point are defined in :mod:`gputop_trace.analysis.roofline.limits`; here:

- DRAM bytes = ``dram__bytes_read.sum`` + ``dram__bytes_write.sum``; arithmetic intensity I = FLOPs / DRAM bytes.
- Ridge point = peak FLOP/s of the kernel's dominant precision (the one closest to its own peak) ÷ peak DRAM B/s.
- Verdict (``unknown`` when the report lacks both throughput metrics): when both SM and memory throughput are
  under :data:`~gputop_trace.analysis.roofline.limits.SATURATED_PCT` (60 %, ncu's own threshold) of peak, the
  kernel is **latency-bound**: neither unit is busy, it waits. Otherwise I ≥ ridge → **compute-bound**, I < ridge →
  **memory-bound**; when the speed-of-light figures contradict the roofline (the busy unit is the other one:
  integer/load-store work the FLOP roofline cannot see, or traffic that stays in L1/L2), the busy unit wins and the
  explanation says why. Without FLOP counts (``--set basic``), the busier unit decides.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from gputop_trace.analysis.ncu_diagnosis.checks import Finding, HotLine, diagnose, hottest_lines
from gputop_trace.analysis.ncu_diagnosis.trust import TrustNote, trust_notes
from gputop_trace.analysis.roofline.explain import explain
from gputop_trace.analysis.roofline.limits import (
    SATURATED_PCT,
    Occupancy,
    PrecisionWork,
    Stall,
    first_metric,
    fp_flops,
    nan_to_zero,
    occupancy,
    peak_rates,
    precision_work,
    rank_stalls,
    ridge_point,
    tensor_flops,
    tensor_use,
)
from gputop_trace.model.ncu import NcuKernel, NcuRule

#: Kernels shorter than this (ns) give unreliable counter values (replay overhead, counter noise).
TINY_KERNEL_NS = 10_000


@dataclass(frozen=True)
class KernelVerdict:
    """Everything the drill-down shows for one kernel. Times in ns, rates per second, percentages 0–100,
    NaN where the report lacks the metric."""

    kernel: NcuKernel
    launch: int | None
    duration_ns: float
    sm_pct: float
    memory_pct: float
    dram_pct: float
    l1_hit_pct: float
    l2_hit_pct: float
    tensor_pipe_pct: float
    tensor_use: str
    occupancy: Occupancy
    registers: int | None
    flops: float
    dram_bytes: float
    intensity: float
    ridge: float
    precision: str
    peak_flop_per_s: float
    peak_dram_bytes_per_s: float
    achieved_flop_per_s: float
    peaks_from: str
    work: tuple[PrecisionWork, ...]
    verdict: str
    verdict_basis: str
    explanation: tuple[str, ...]
    stalls: tuple[Stall, ...]
    no_eligible_pct: float
    sectors_per_request: float
    rules: tuple[NcuRule, ...]
    warnings: tuple[str, ...]
    trust: tuple[TrustNote, ...] = ()
    diagnosis: tuple[Finding, ...] = ()
    hot_lines: tuple[HotLine, ...] = ()

    @property
    def name(self) -> str:
        """The kernel's function name."""
        return self.kernel.name


def classify(sm_pct: float, memory_pct: float, intensity: float, ridge: float) -> tuple[str, str, str]:
    """``(verdict, basis, note)``: verdict ``compute-bound`` / ``memory-bound`` / ``latency-bound`` (``unknown``
    when the report has no speed-of-light metrics); basis
    ``roofline`` or ``speed of light``; note says why speed of light overruled the roofline (or ``""``)."""
    if math.isnan(sm_pct) and math.isnan(memory_pct):
        return "unknown", "", ""
    sm, mem = nan_to_zero(sm_pct), nan_to_zero(memory_pct)
    if sm < SATURATED_PCT and mem < SATURATED_PCT:
        return "latency-bound", "speed of light", ""
    if math.isnan(intensity) or math.isnan(ridge):
        return ("compute-bound" if sm >= mem else "memory-bound"), "speed of light", ""
    roof = "compute-bound" if intensity >= ridge else "memory-bound"
    if roof == "memory-bound" and sm >= SATURATED_PCT > mem:
        return (
            "compute-bound",
            "speed of light",
            "The FLOP roofline puts it on the memory side, but memory is not busy and the SMs are: the work is "
            "integer, address or load/store instructions that the roofline does not count as FLOPs.",
        )
    if roof == "compute-bound" and mem >= SATURATED_PCT > sm:
        return (
            "memory-bound",
            "speed of light",
            "The FLOP roofline puts it on the compute side for DRAM, but the traffic that saturates is inside the "
            "chip (L1, shared memory or L2), not DRAM.",
        )
    return roof, "roofline", ""


_COMPILED = re.compile(r"(^triton_|cudagraph|cuda_graph|^fused_|_fused_\w*triton|^cutlass_.*_fused_)", re.IGNORECASE)


def is_compiled_kernel(name: str) -> bool:
    """Whether a kernel name looks generated by torch.compile / Inductor (``triton_*``) or a CUDA-graph capture."""
    return bool(_COMPILED.search(name))


def kernel_warnings(k: NcuKernel, duration_ns: float, *, compiled: bool = False, has_flops: bool = True) -> list[str]:
    """Reliability and context warnings for one kernel (tiny kernel, >100 % counters, compiled/graph, basic set)."""
    out = []
    if not math.isnan(duration_ns) and duration_ns < TINY_KERNEL_NS:
        out.append(
            f"This kernel ran for {_fmt_time(duration_ns)}: under ~10 µs, replay overhead and counter noise make "
            "ncu's numbers unreliable (values can exceed 100% of peak). Profile a larger launch of it, or read these "
            "figures as rough."
        )
    over = [
        (n, v)
        for n, v in k.metrics.items()
        if n.endswith("pct_of_peak_sustained_elapsed") and ".avg." in n and v > 100.5 and "breakdown" not in n
    ]
    if over:
        n, v = max(over, key=lambda x: x[1])
        out.append(
            f"ncu measured {v:.0f}% of peak for {n}: counters above 100% mean the kernel is too short to measure."
        )
    if compiled or is_compiled_kernel(k.name) or is_compiled_kernel(k.demangled):
        out.append(
            "This kernel was generated by torch.compile (Inductor/Triton) or replayed from a CUDA graph: its name "
            "differs from your source operators. Map it back with TORCH_LOGS=output_code (Inductor prints which ops "
            "each triton_* kernel fuses); ncu profiles graph-launched kernels one node at a time."
        )
    if not has_flops:
        out.append(
            "The report holds no instruction counters (collected with --set basic?), so the roofline cannot count "
            "FLOPs: the verdict comes from speed of light only. Profile with --set detailed or full for the roofline."
        )
    return out


def _fmt_time(ns: float) -> str:
    if ns < 1_000:
        return f"{ns:.0f} ns"
    if ns < 1_000_000:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns / 1e6:.2f} ms"


def analyze_kernel(kernel: NcuKernel, *, launch: int | None = None, compiled: bool = False) -> KernelVerdict:
    """The full drill-down verdict for one profiled kernel. ``launch`` is which launch of its name it was (when
    known); ``compiled`` marks kernels known to come from torch.compile or a CUDA graph."""
    m = kernel.metrics
    duration = first_metric(m, "gpu__time_duration.sum")
    sm_pct = first_metric(m, "sm__throughput.avg.pct_of_peak_sustained_elapsed")
    mem_pct = first_metric(m, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed")
    dram_pct = first_metric(
        m,
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    )
    dram_bytes = nan_to_zero(first_metric(m, "dram__bytes_read.sum")) + nan_to_zero(
        first_metric(m, "dram__bytes_write.sum")
    )
    if math.isnan(first_metric(m, "dram__bytes_read.sum")):
        dram_bytes = first_metric(m, "dram__bytes.sum")
    work, dram_peak, source = precision_work(m, kernel.device_name)
    fp = {w.precision: w for w in work}
    flops = sum(w.flops for w in work if w.precision not in ("tensor INT8",))
    has_counts = bool(fp_flops(m)) or bool(tensor_flops(m))
    dominant = work[0] if work else None
    if dominant is None:
        peaks, _, _ = peak_rates(m, kernel.device_name)
        prec = "FP32" if "FP32" in peaks else ""
        peak = peaks.get(prec, math.nan) if prec else math.nan
    else:
        prec, peak = dominant.precision, dominant.peak_flop_per_s or math.nan
    intensity = flops / dram_bytes if has_counts and dram_bytes and not math.isnan(dram_bytes) else math.nan
    if has_counts and flops > 0 and dram_bytes == 0:
        intensity = math.inf
    ridge = ridge_point(peak, dram_peak)
    verdict, basis, note = classify(sm_pct, mem_pct, intensity, ridge)
    ld_sectors = first_metric(m, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")
    ld_requests = first_metric(m, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")
    spr = ld_sectors / ld_requests if not math.isnan(ld_requests) and ld_requests > 0 else math.nan
    tensor_pct = first_metric(m, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed")
    regs = first_metric(m, "launch__registers_per_thread")
    v = KernelVerdict(
        kernel=kernel,
        launch=launch,
        duration_ns=duration,
        sm_pct=sm_pct,
        memory_pct=mem_pct,
        dram_pct=dram_pct,
        l1_hit_pct=first_metric(m, "l1tex__t_sector_hit_rate.pct"),
        l2_hit_pct=first_metric(m, "lts__t_sector_hit_rate.pct"),
        tensor_pipe_pct=tensor_pct,
        tensor_use=tensor_use(tensor_pct),
        occupancy=occupancy(m),
        registers=None if math.isnan(regs) else int(regs),
        flops=flops if has_counts else math.nan,
        dram_bytes=dram_bytes,
        intensity=intensity,
        ridge=ridge,
        precision=prec,
        peak_flop_per_s=peak,
        peak_dram_bytes_per_s=dram_peak,
        achieved_flop_per_s=sum(w.achieved_flop_per_s for w in fp.values()) if work else math.nan,
        peaks_from=source,
        work=tuple(work),
        verdict=verdict,
        verdict_basis=basis,
        explanation=(),
        stalls=tuple(rank_stalls(m)),
        no_eligible_pct=first_metric(m, "smsp__issue_inst0.avg.pct_of_peak_sustained_active"),
        sectors_per_request=spr,
        rules=tuple(sorted(kernel.rules, key=_rule_order)),
        warnings=tuple(kernel_warnings(kernel, duration, compiled=compiled, has_flops=has_counts)),
        trust=tuple(trust_notes(kernel)),
        diagnosis=tuple(diagnose(m)),
        hot_lines=tuple(hottest_lines(kernel.source)),
    )
    return replace(v, explanation=tuple(explain(v, note)))


def _rule_order(r: NcuRule) -> tuple[int, float]:
    rank = {"ERR": 0, "WRN": 1, "OPT": 2, "INF": 3}.get(r.type, 4)
    return rank, -(r.speedup_pct or 0.0)
