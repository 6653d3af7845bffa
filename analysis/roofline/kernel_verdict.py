"""What the drill-down shows for one kernel (:class:`KernelVerdict`), as the roofline verdict
(:func:`gputop_trace.analysis.roofline.verdict.analyze_kernel`) makes it and the plain-words explanation
(:mod:`gputop_trace.analysis.roofline.explain`) reads it. Times in ns, rates per second, percentages 0–100."""

from __future__ import annotations

from dataclasses import dataclass

from gputop_trace.analysis.ncu_diagnosis.checks import Finding, HotLine
from gputop_trace.analysis.ncu_diagnosis.trust import TrustNote
from gputop_trace.analysis.roofline.limits import Occupancy, PrecisionWork, Stall
from gputop_trace.model.ncu import NcuKernel, NcuRule


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
