"""A kernel's roofline verdict in plain words: what limits it and what to check or change, most useful first.
Percentages 0–100, rates per second, FLOP per byte; NaN figures print as ``-``."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from gputop_trace.analysis.roofline.limits import SATURATED_PCT, first_metric, nan_to_zero
from gputop_trace.units import format_si

if TYPE_CHECKING:
    from gputop_trace.analysis.roofline.kernel_verdict import KernelVerdict

#: "No eligible warp" share (% of active cycles) that counts as starved of ready warps.
STARVED_ISSUE_PCT = 70.0


def _fmt_count(x: float) -> str:
    for factor, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= factor:
            return f"{x / factor:.3g}{suffix}"
    return f"{x:.3g}"


def format_intensity(x: float) -> str:
    """FLOP/byte with a sensible number of digits."""
    if math.isnan(x):
        return "-"
    if math.isinf(x):
        return "∞"
    return f"{x:.3g}" if x < 1000 else f"{x:,.0f}"


def explain(v: KernelVerdict, note: str = "") -> list[str]:
    """The verdict in plain words: what limits the kernel and what to check or change, most useful first."""
    out: list[str] = []
    sol = f"SMs at {_pct(v.sm_pct)} and memory at {_pct(v.memory_pct)} of peak (DRAM {_pct(v.dram_pct)})"
    top = v.stalls[0] if v.stalls else None
    if v.verdict == "compute-bound":
        out += _compute_bound(v, sol, _roof_text(v))
    elif v.verdict == "memory-bound":
        out += _memory_bound(v, sol, _roof_text(v))
    elif v.verdict == "unknown":
        out.append(
            "No verdict: the report lacks the speed-of-light metrics (SM and memory throughput). Profile with "
            "--set basic or more (the drill-down uses --set full)."
        )
    else:
        out += _latency_bound(v, sol)
    if note:
        out.append(note)
    if v.stalls and v.verdict != "latency-bound":
        names = ", ".join(f"{s.label} {_pct(s.share_pct)}" for s in v.stalls[:3])
        out.append(f"Top warp stalls: {names}.")
    elif v.stalls and top is not None and top.reason != "long_scoreboard":
        out.append(f"Warps lose most cycles to {top.label} stalls ({_pct(top.share_pct)}): {top.meaning}.")
    return out


def _roof_text(v: KernelVerdict) -> str:
    """Where the kernel sits against the ridge point of its GPU (empty where intensity or ridge is unknown)."""
    if math.isnan(v.intensity) or math.isnan(v.ridge):
        return ""
    gpu = v.kernel.device_name or "this GPU"
    return (
        f"It does {format_intensity(v.intensity)} FLOP per byte of DRAM traffic "
        f"({_fmt_count(v.flops)} FLOP over {_fmt_count(v.dram_bytes)}B); the ridge point of {gpu} for "
        f"{v.precision} is {format_intensity(v.ridge)} FLOP/byte ({format_si(v.peak_flop_per_s, 'FLOP/s')} ÷ "
        f"{format_si(v.peak_dram_bytes_per_s, 'B/s')})."
    )


def _occupancy_text(v: KernelVerdict) -> str:
    """The achieved and theoretical occupancy (%) and what limits it."""
    occ = v.occupancy
    return (
        f"achieved occupancy {_pct(occ.achieved_pct)} of a theoretical {_pct(occ.theoretical_pct)}"
        + (f", limited by {occ.limiter}" if occ.limiter not in ("none", "unknown") else "")
        + (f" ({v.registers} registers per thread)" if "registers" in occ.limiter and v.registers else "")
    )


def _compute_bound(v: KernelVerdict, sol: str, roof: str) -> list[str]:
    """The lines of a compute-bound kernel (``sol``: its speed-of-light figures; ``roof``: :func:`_roof_text`)."""
    out: list[str] = []
    top = v.stalls[0] if v.stalls else None
    out.append(f"Compute-bound: {sol}. {roof}".strip())
    if v.tensor_use == "heavy":
        out.append(
            f"Tensor cores are busy {_pct(v.tensor_pipe_pct)} of the time: this is what they are for, and the "
            "kernel is near the GPU's limit. To go faster, do less math (lower precision such as FP8, fewer or "
            "smaller matrix products, work fused into the epilogue) rather than tuning this kernel."
        )
    elif v.precision in ("FP32", "FP64", "FP16") and v.tensor_use == "none":
        w = v.work[0] if v.work else None
        pct = f" ({_pct(w.pct_of_peak)} of the {w.precision} peak)" if w and not math.isnan(w.pct_of_peak) else ""
        out.append(
            f"All the math runs on the {v.precision} pipes{pct} and tensor cores are idle. If this is matrix or "
            "convolution math, tensor cores (TF32, BF16, FP16) have several times the throughput; otherwise "
            "reduce the instruction count (cheaper math, fewer recomputations)."
        )
    if not math.isnan(v.sm_pct) and v.sm_pct < 80 and top is not None:
        out.append(
            f"The SMs are busy but below their peak; warps lose most cycles to {top.label} stalls "
            f"({top.cycles:.1f} cycles per instruction, {_pct(top.share_pct)}): {top.meaning}."
        )
    return out


def _memory_bound(v: KernelVerdict, sol: str, roof: str) -> list[str]:
    """The lines of a memory-bound kernel (arguments as :func:`_compute_bound`'s)."""
    out: list[str] = []
    out.append(f"Memory-bound: {sol}. {roof}".strip())
    if not math.isnan(v.dram_pct) and v.dram_pct >= 80:
        out.append(
            "DRAM bandwidth is nearly saturated: the remaining gains are in moving fewer bytes — fuse this kernel "
            "with its neighbours, use a smaller data type, avoid reading the same data twice."
        )
    else:
        out.append(
            f"Bandwidth is not saturated ({_pct(v.dram_pct)} of DRAM peak): more bytes in flight would help — "
            f"{_occupancy_text(v)}."
        )
    out.extend(_coalescing(v))
    return out


def _latency_bound(v: KernelVerdict, sol: str) -> list[str]:
    """The lines of a latency-bound kernel: what to check, in order (``sol``: its speed-of-light figures)."""
    out: list[str] = []
    top = v.stalls[0] if v.stalls else None
    occ = v.occupancy
    out.append(
        f"Latency-bound: neither compute nor memory is saturated ({sol}; ncu treats anything under "
        f"{SATURATED_PCT:.0f}% as a latency problem). The GPU mostly waits. Check, in order:"
    )
    coal = _coalescing(v)
    out.append("(1) " + (coal[0] if coal else "memory access pattern: no global-load counters in this report."))
    grid_note = ""
    blocks = v.kernel.grid[0] * v.kernel.grid[1] * v.kernel.grid[2] if v.kernel.grid else 0
    sms = int(nan_to_zero(first_metric(v.kernel.metrics, "device__attribute_multiprocessor_count", "launch__sm_count")))
    if blocks and sms and blocks < sms:
        grid_note = f"; the grid has only {blocks} blocks for {sms} SMs, so most SMs sit idle"
    out.append(f"(2) occupancy: {_occupancy_text(v)}{grid_note}.")
    threads = first_metric(v.kernel.metrics, "launch__thread_count")
    if v.dram_bytes > 0 and not math.isnan(threads) and threads > 0:
        out.append(
            f"(3) redundant DRAM traffic: {_fmt_count(v.dram_bytes)}B for {_fmt_count(threads)} threads "
            f"({v.dram_bytes / threads:.1f} bytes per thread) — compare with what each thread must read and "
            "write once; more means data is loaded again instead of reused."
        )
    if top is not None and top.reason == "long_scoreboard":
        out.append(
            "Warps mostly wait for global memory (long-scoreboard stalls): memory latency is exposed — more "
            "warps in flight, prefetching, or staging data through shared memory hides it."
        )
    if (
        not math.isnan(v.no_eligible_pct)
        and v.no_eligible_pct >= STARVED_ISSUE_PCT
        and not math.isnan(occ.achieved_pct)
        and occ.achieved_pct < 30
    ):
        out.append(
            f"In {_pct(v.no_eligible_pct)} of cycles no warp is ready to issue while few warps are resident: "
            "too little parallelism — launch more threads or give each more independent work."
        )
    return out


def _coalescing(v: KernelVerdict) -> list[str]:
    spr = v.sectors_per_request
    l1 = f"L1 hit rate {_pct(v.l1_hit_pct)}, L2 hit rate {_pct(v.l2_hit_pct)}"
    if math.isnan(spr):
        return [f"access pattern: {l1}."] if not math.isnan(v.l1_hit_pct) else []
    if spr > 4.5:
        return [
            f"uncoalesced loads: global loads use {spr:.1f} sectors per request (4 is ideal for 32 threads reading "
            f"4 bytes each): make neighbouring threads read neighbouring addresses ({l1})."
        ]
    return [f"loads are coalesced ({spr:.1f} sectors per request; {l1})."]


def _pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.1f}%"
