"""Achieved throughput of operators and the model FLOPs utilisation (MFU) of each step, from the FLOPs estimated
from input shapes (:mod:`gputop_trace.analysis.operators.flops`: estimates, not measurements).

- Achieved rate of an operator row = its estimated FLOPs (or bytes moved) ÷ its device time (the kernels it and
  its children launched), compared with the published peak of the GPU for the row's precision.
- A step's FLOPs are those of the outermost operators with an estimate inside the step (an operator whose
  enclosing operator already has one, such as ``addmm`` under ``linear``, is not counted twice). MFU = the step's
  FLOPs ÷ (the step's duration × the peak of its dominant precision).
Times in ns, rates in FLOP/s or bytes/s, percentages 0–100.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gputop_trace.analysis.operators.flops import Peak, Work, peak_for
from gputop_trace.analysis.operators.table import OpRow, call_work
from gputop_trace.analysis.operators.tree import OpTree
from gputop_trace.analysis.steps import find_steps
from gputop_trace.model.trace import Trace


@dataclass(frozen=True)
class Achieved:
    """An operator row's achieved rate over its device time, and the share of the GPU's peak in percent (None
    when unknown, or above 100: the estimate then overcounts the work)."""

    flop_per_s: float | None
    bytes_per_s: float | None
    peak_pct: float | None


@dataclass(frozen=True)
class StepMfu:
    """One step: its annotation event, duration (ns), estimated FLOPs, dominant precision and MFU (% of the
    peak of that precision; None when the GPU or precision has no published peak)."""

    rank: int
    event: int
    name: str
    dur_ns: int
    flops: int
    precision: str
    mfu_pct: float | None


def gpu_name(trace: Trace, rank: int = 0) -> str:
    """The name of the first GPU the trace describes on ``rank`` (``""`` when none)."""
    for g in trace.meta.gpus:
        if g.rank == rank:
            return g.name
    return trace.meta.gpus[0].name if trace.meta.gpus else ""


def achieved(row: OpRow, gpu: str) -> Achieved:
    """``row``'s achieved FLOP/s or bytes/s over its device time, and its share of ``gpu``'s peak."""
    if row.device_total_ns <= 0:
        return Achieved(None, None, None)
    secs = row.device_total_ns / 1e9
    flop_rate = row.flops / secs if row.flops else None
    byte_rate = row.bytes_moved / secs if row.bytes_moved else None
    peak: Peak | None = peak_for(gpu, row.precision) if gpu and row.precision else None
    pct = None
    if peak is not None:
        if row.work_kind in ("gemm", "attention", "conv") and flop_rate is not None:
            pct = 100.0 * flop_rate / peak.flop_per_s
        elif byte_rate is not None:
            pct = 100.0 * byte_rate / peak.bytes_per_s
    if pct is not None and pct > 100.0:
        pct = None  # above the peak: the estimate overcounts (a causal mask, a fused op), no share to give
    return Achieved(flop_rate, byte_rate, pct)


def outermost_flops(trace: Trace, tree: OpTree, work: list[Work | None] | None = None) -> tuple[np.ndarray, list[str]]:
    """Per tree position: the estimated FLOPs counted for a step (0 where an enclosing operator has an estimate
    or there is none), and the precision of each position's estimate."""
    work = work if work is not None else call_work(trace, tree.event)
    flops = [w.flops if w is not None and w.flops is not None else 0 for w in work]
    prec = [w.precision if w is not None else "" for w in work]
    parent = tree.parent.tolist()
    counted = np.zeros(len(flops), dtype=np.int64)
    covered = [False] * len(flops)  # an ancestor (or the event itself) has an estimate
    for i in range(len(flops)):  # parents come before their children
        p = parent[i]
        above = p >= 0 and covered[p]
        if flops[i] and not above:
            counted[i] = flops[i]
        covered[i] = above or flops[i] > 0
    return counted, prec


def step_mfu(trace: Trace, tree: OpTree) -> list[StepMfu]:
    """The MFU of every step the trace marks (``ProfilerStep#N``, ``step_3`` …)."""
    counted, prec = outermost_flops(trace, tree)
    if not counted.any():
        return []
    ev = tree.event
    start = trace.start_ns[ev]
    rank = trace.lane_rank[trace.lane[ev]]
    out: list[StepMfu] = []
    for steps in find_steps(trace):
        gpu = gpu_name(trace, steps.rank)
        for e, s, d in zip(steps.events.tolist(), steps.start_ns.tolist(), steps.dur_ns.tolist(), strict=True):
            inside = np.flatnonzero((rank == steps.rank) & (start >= s) & (start < s + d) & (counted > 0))
            total = int(counted[inside].sum())
            by_prec: dict[str, int] = {}
            for i in inside.tolist():
                by_prec[prec[i]] = by_prec.get(prec[i], 0) + int(counted[i])
            main = max(by_prec, key=lambda k: by_prec[k]) if by_prec else ""
            peak = peak_for(gpu, main) if gpu and main else None
            pct = 100.0 * total / (d / 1e9) / peak.flop_per_s if peak is not None and d > 0 else None
            out.append(StepMfu(steps.rank, e, trace.event_name(e), d, total, main, pct))
    return out
