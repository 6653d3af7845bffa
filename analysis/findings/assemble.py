"""Findings: the few things to fix first, in plain words, each with its evidence and the thresholds used.

Each detector turns one analysis into findings with a ``time_ns`` at stake (GPU time lost or exposed) and a
``severity`` = that time / the active span of the GPU concerned (0–1). Findings are ranked by time at stake, most
first (severity, then the kind's order, break ties); ``priority`` is the 1-based position. Times in ``evidence``
are int64 ns relative to the trace start, like everything in :mod:`gputop_trace.analysis` (the command layer
converts them to the file's time base).

Detectors, one module each: idle gaps grouped by cause (§2, :mod:`~gputop_trace.analysis.findings.idle`), host
synchronizations (§2.4, :mod:`~gputop_trace.analysis.findings.sync`), transfer flags and side-stream copy hiding
(§3, :mod:`~gputop_trace.analysis.findings.transfer`), launch-bound devices and launch overhead (§2.5, §5,
:mod:`~gputop_trace.analysis.findings.launch`), time ranks spend waiting in collectives for a straggler
(:mod:`~gputop_trace.analysis.findings.collective`), graph breaks, recompilation, eager kernels and CUDA-graph
coverage of a compiled program, and the note on where a torch.profiler trace misleads
(:mod:`~gputop_trace.analysis.findings.compiled`); and here, a profile with no GPU activity at all, and the
ranking of them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gputop_trace.analysis.compiled.regions import compiled_program
from gputop_trace.analysis.findings.collective import collective_wait_findings
from gputop_trace.analysis.findings.compiled import compiled_findings, profile_caveat
from gputop_trace.analysis.findings.critical_path import critical_path_findings
from gputop_trace.analysis.findings.draft import Draft
from gputop_trace.analysis.findings.idle import idle_findings
from gputop_trace.analysis.findings.launch import launch_bound_finding, launch_findings
from gputop_trace.analysis.findings.sync import sync_findings
from gputop_trace.analysis.findings.transfer import transfer_findings
from gputop_trace.analysis.gaps.detect import DEFAULT_THRESHOLD_NS, DeviceGaps, find_gaps
from gputop_trace.analysis.launches import LaunchReport, launch_behaviour
from gputop_trace.analysis.transfers import TransferReport, transfer_overlap
from gputop_trace.model.kinds import GPU_BUSY_KINDS, KIND_WORDS, Kind
from gputop_trace.model.trace import Trace
from gputop_trace.units import plural

#: At most this many findings are returned.
MAX_FINDINGS = 10


#: Order of findings of equal weight: the root cause before its consequences.
_KIND_ORDER = {
    k: i
    for i, k in enumerate(
        (
            "no_gpu_activity",
            "range_profiler_only",
            "collective_wait",
            "idle_gaps",
            "pageable_async",
            "sync_copy",
            "sync_memset",
            "host_sync",
            "copy_on_compute_stream",
            "launch_bound",
            "slow_launch",
            "launch_overhead",
            "graph_breaks",
            "recompilation",
            "replay_cover",
            "outside_compiled",
            "side_stream_copy",
            "critical_path",
        )
    )
}


@dataclass(frozen=True)
class Finding:
    """One thing to look at. ``kind`` is a stable id (``idle_gaps``, ``host_sync``, ``pageable_async``, ...);
    ``title`` one line, ``detail`` a short paragraph with the fix; ``evidence`` the figures and event indices
    behind it (ns, model time); ``thresholds`` the limits that made it a finding. ``time_ns`` is the time at
    stake, ``severity`` its share of the concerned GPU's active span (0–1). ``event`` (trace index, ``-1``
    none) or ``interval`` (start, end ns) is where the timeline should jump. ``gpu_rank``/``device`` say
    which GPU it concerns (``None`` for the whole trace). ``priority`` is its place in the list (1 = fix first;
    0 before ranking), not to be confused with a distributed rank (``gpu_rank``)."""

    priority: int
    kind: str
    title: str
    detail: str
    severity: float
    time_ns: int
    evidence: dict[str, Any] = field(default_factory=dict)
    thresholds: dict[str, Any] = field(default_factory=dict)
    event: int = -1
    interval: tuple[int, int] | None = None
    gpu_rank: int | None = None
    device: int | None = None


def find_findings(
    trace: Trace,
    *,
    gap_threshold_ns: int = DEFAULT_THRESHOLD_NS,
    gaps: list[DeviceGaps] | None = None,
    transfers: TransferReport | None = None,
    launches: LaunchReport | None = None,
    limit: int = MAX_FINDINGS,
) -> list[Finding]:
    """The ranked findings of a trace (most important first). Analyses already computed can be passed in."""
    if not len(trace.of_kind(*GPU_BUSY_KINDS)):
        # graph breaks and recompilation are host-side facts: a CPU-only compiled run has them too
        host = compiled_findings(trace, compiled_program(trace), trace.span_ns)
        host = sorted((d for d in host if d.time_ns > 0), key=lambda d: (-d.severity, -d.time_ns))
        return [_rank(i + 1, d) for i, d in enumerate((_no_gpu(trace) + host)[: max(limit, 1)])]
    gaps = gaps if gaps is not None else find_gaps(trace, gap_threshold_ns)
    transfers = transfers if transfers is not None else transfer_overlap(trace)
    launches = launches if launches is not None else launch_behaviour(trace)
    spans = {(g.rank, g.device): g.span_ns for g in gaps}
    prog = compiled_program(trace)
    drafts: list[Draft] = []
    for dg in gaps:
        drafts.extend(idle_findings(trace, dg, len(gaps) > 1, prog))
        if dg.launch_bound:
            drafts.append(launch_bound_finding(dg, len(gaps) > 1, prog))
    drafts.extend(collective_wait_findings(trace, gaps))
    drafts.extend(sync_findings(trace, gaps, spans))
    drafts.extend(transfer_findings(trace, transfers, spans))
    named = frozenset(e for d in drafts if d.kind == "slow_launch" for e in d.evidence["launch_events"])
    drafts.extend(launch_findings(trace, launches, spans, named, prog))
    drafts.extend(compiled_findings(trace, prog, max(spans.values(), default=trace.span_ns), gaps))
    drafts.extend(critical_path_findings(trace))
    drafts = [d for d in drafts if d.time_ns > 0 or d.kind in ("side_stream_copy",)]
    drafts.sort(key=lambda d: at_stake_order(d.time_ns, d.severity, d.kind, _KIND_ORDER))
    # where the profile itself misleads: a note after the findings it qualifies, never crowded out by them
    caveat = profile_caveat(trace, gaps) if limit > 0 else None
    ranked = drafts[: limit - 1 if caveat is not None else limit] + ([caveat] if caveat is not None else [])
    return [_rank(i + 1, d) for i, d in enumerate(ranked)]


def at_stake_order(time_ns: int, severity: float, kind: str, kind_order: dict[str, int]) -> tuple[int, float, int]:
    """The sort key of a finding: most time at stake (ns) first, then the larger share of its GPU's span, then
    ``kind_order`` (the root cause before its consequences). The one ordering of every findings list."""
    return (-int(time_ns), -severity, kind_order.get(kind, 99))


def _rank(i: int, d: Draft) -> Finding:
    return Finding(
        priority=i,
        kind=d.kind,
        title=d.title,
        detail=d.detail,
        severity=d.severity,
        time_ns=int(d.time_ns),
        evidence=d.evidence,
        thresholds=d.thresholds,
        event=d.event,
        interval=d.interval,
        gpu_rank=d.gpu_rank,
        device=d.device,
    )


def _no_gpu(trace: Trace) -> list[Draft]:
    from gputop_trace.analysis.profiler_ranges import RANGE_PROFILER_TITLE, profiler_ranges, profiler_summary_line

    counts = trace.count_by_kind()
    rep = profiler_ranges(trace)
    if rep is not None:
        return [
            Draft(
                kind="range_profiler_only",
                title=f"{RANGE_PROFILER_TITLE}: {rep.ranges} profiled kernels with hardware counters, no kernel "
                "activity, so no timeline analysis",
                detail=profiler_summary_line(rep),
                time_ns=trace.span_ns,
                span_ns=trace.span_ns,
                evidence={
                    "ranges": rep.ranges,
                    "kernel_names": len({k.name for k in rep.kernels}),
                    "counters": list(rep.metrics),
                    "range_window_ns": list(rep.window_ns),
                },
                thresholds={},
                interval=(0, trace.span_ns),
            )
        ]
    what = ", ".join(plural(n, *KIND_WORDS[k]) for k, n in counts.items()) or "no events"
    detail = (
        f"The profile holds {what}, but nothing that ran on a GPU, so GPU time, idle gaps and transfers "
        "cannot be analysed. CUDA tracing was off or failed (for example an Nsight Systems version too old for "
        "the installed CUDA, or torch.profiler without ProfilerActivity.CUDA). Re-record with CUDA tracing on."
    )
    evidence: dict[str, Any] = {"events": {k.name.lower(): n for k, n in counts.items()}}
    if counts.get(Kind.CPU_OP):  # a CPU run: say where the host time went
        from gputop_trace.analysis.operators.host_time import cpu_run_detail

        detail, evidence["top_ops"] = cpu_run_detail(trace, what)
    return [
        Draft(
            kind="no_gpu_activity",
            title="No GPU activity in this profile: no kernel, copy or memset was recorded",
            detail=detail,
            time_ns=trace.span_ns,
            span_ns=trace.span_ns,
            evidence=evidence,
            thresholds={},
            interval=(0, trace.span_ns),
        )
    ]
