"""The summary document: the bundle of analyses the summary shows (gaps, transfers, findings, ranges), computed
once, and its JSON-contract form. The command line prints it; the app shows and exports the same bundle.

Times are int64 ns in the file's own time base (see the JSON contract); shares are percentages 0-100.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from gputop_trace.analysis.findings.assemble import Finding
    from gputop_trace.analysis.gaps.detect import DeviceGaps
    from gputop_trace.analysis.ranges import RangeRow
    from gputop_trace.analysis.steps import Steps
    from gputop_trace.analysis.transfers import TransferReport
    from gputop_trace.model.trace import Trace

TOP_KERNELS = 10
TOP_RANGES = 10
TOP_GAPS = 5
TOP_HOST_OPS = 10


@dataclass
class Analyses:
    """Everything the summary is made of (computed once, printed or written as JSON)."""

    gaps: list[DeviceGaps]
    transfers: TransferReport
    findings: list[Finding]
    ranges: list[RangeRow]
    threshold_ns: int


def analyse(trace: Trace, threshold_ns: int | None = None) -> Analyses:
    """Run the analyses the summary shows."""
    from gputop_trace.analysis.findings.assemble import find_findings
    from gputop_trace.analysis.gaps.detect import DEFAULT_THRESHOLD_NS, find_gaps
    from gputop_trace.analysis.ranges import range_summary
    from gputop_trace.analysis.transfers import transfer_overlap

    thr = DEFAULT_THRESHOLD_NS if threshold_ns is None else threshold_ns
    gaps = find_gaps(trace, thr)
    transfers = transfer_overlap(trace)
    findings = find_findings(trace, gap_threshold_ns=thr, gaps=gaps, transfers=transfers)
    return Analyses(gaps, transfers, findings, range_summary(trace, cut=True), thr)


def summary_document(trace: Trace, paths: list[str], analyses: Analyses | None = None) -> dict[str, Any]:
    """The summary as a JSON-contract document."""
    from gputop_trace.analysis.busy import device_busy
    from gputop_trace.analysis.kernels import kernel_table
    from gputop_trace.analysis.operators.memory import memory_series
    from gputop_trace.model.kinds import KIND_JSON_KEY, Kind
    from gputop_trace.report.analysis_json import (
        device_gaps_json,
        finding_json,
        gap_json,
        range_json,
        transfers_json,
    )
    from gputop_trace.report.envelope import envelope
    from gputop_trace.report.kernels_json import kernel_row_json
    from gputop_trace.report.ops_json import memory_json
    from gputop_trace.report.profiler_json import range_profiler_json

    a = analyses if analyses is not None else analyse(trace)
    span_ns, span_note = measured_span_note(trace, a)

    counts = {k: 0 for k in ("kernel", "memcpy", "memset", "api", "cpu_op", "range", "python", "other", "memory")}
    for kind, n in trace.count_by_kind().items():
        counts[KIND_JSON_KEY.get(Kind(kind), "other")] += n
    counts["memory"] = len(trace.memory)  # profile_memory's [memory] records have their own count
    counts["other"] -= len(trace.memory)
    devices = []
    for d in device_busy(trace):
        info = trace.gpu_info(d.rank, d.device)
        devices.append(
            {
                "rank": d.rank,
                "device": d.device,
                "label": d.label,
                "accelerator": d.accelerator,
                "name": info.name if info else None,
                "sm_count": info.sm_count if info else None,
                "span_ns": d.span_ns,
                "busy_ns": d.busy_ns,
                "idle_ns": d.idle_ns,
                "busy_pct": round(d.busy_pct, 3),
            }
        )
    profiler = range_profiler_json(trace)
    return envelope(
        "summary",
        trace,
        paths,
        span_ns=span_ns,
        span_as_recorded_ns=trace.span_ns,
        span_note=span_note,
        gpus=[{"rank": g.rank, "device": g.device, "name": g.name, "sm_count": g.sm_count} for g in trace.meta.gpus],
        devices=devices,
        events=counts,
        top_kernels=[kernel_row_json(r) for r in kernel_table(trace, top=TOP_KERNELS)],
        findings=[finding_json(trace, f) for f in a.findings],
        gap_threshold_ns=a.threshold_ns,
        gaps=[
            {
                **device_gaps_json(trace, d, with_gaps=False),
                "longest": [gap_json(trace, g) for g in d.longest(TOP_GAPS)],
            }
            for d in a.gaps
        ],
        steps=steps_json(trace),
        transfers=transfers_json(trace, a.transfers, copies=False),
        top_ranges=[range_json(r) for r in a.ranges[:TOP_RANGES]],
        range_profiler=profiler,
        memory=[memory_json(m) for m in memory_series(trace)],
        host=host_json(trace) if not devices and profiler is None else None,
    )


def host_json(trace: Trace) -> dict[str, Any]:
    """Where the host time went, for a profile with no GPU activity (:mod:`gputop_trace.analysis.operators.host_time`):
    ``self_cpu_total_ns`` (the time in operators and annotation ranges, summed over threads), ``operators`` (how
    many rows ``ops`` has) and the ``top_ops`` by self CPU time with ``ops``' figures and ``pct`` of that time."""
    from gputop_trace.analysis.operators.host_time import host_ops

    host = host_ops(trace)
    return {
        "self_cpu_total_ns": host.self_cpu_total_ns,
        "operators": len(host.rows),
        "top_ops": [
            {
                "name": r.name,
                "kind": r.kind,
                "count": r.count,
                "self_cpu_ns": r.self_cpu_ns,
                "cpu_total_ns": r.cpu_total_ns,
                "cpu_mean_ns": round(r.cpu_mean_ns, 1),
                "pct": round(host.pct(r), 3),
            }
            for r in host.rows[:TOP_HOST_OPS]
        ],
    }


def measured_span_note(trace: Trace, a: Analyses) -> tuple[int, str | None]:
    """The summary's span (ns): the trace's, with annotation ranges cut to their rank's recording as steps are
    (:func:`gputop_trace.analysis.steps.measured_span`), and what was cut in words (None when nothing was)."""
    from gputop_trace.analysis.steps import measured_span
    from gputop_trace.units import format_ns, plural

    span = measured_span(trace)
    cut = [r for r in a.ranges if r.cut]
    if span == trace.span_ns and not cut:
        return span, None
    n = sum(r.cut for r in cut)
    names = ", ".join(r.name for r in cut[:3]) + (", …" if len(cut) > 3 else "")
    what = f"{plural(n, 'annotation range')} ({names})" if n else "annotation ranges"
    whole = f"; as recorded they make the span {format_ns(trace.span_ns)}" if span != trace.span_ns else ""
    return span, (
        f"{what} {'runs' if n == 1 else 'run'} outside the recording: cut to it as the steps are, in the span and "
        f"in the range times{whole}"
    )


@dataclass(frozen=True)
class CutStep:
    """A step measured shorter than its range because it runs past the recording: ``step_ns`` as measured,
    ``range_ns`` as its range records, times in ns in the rank's file time base."""

    name: str
    step_ns: int
    range_ns: int
    start_ns: int
    end_ns: int
    range_start_ns: int
    range_end_ns: int
    cut_start: bool
    cut_end: bool
    reason: str | None


@dataclass(frozen=True)
class RankSteps:
    """One rank's step ranges (``ProfilerStep#N`` / ``step_N``) and their measured durations, times in ns (start
    times in the rank's file time base): the statistics, the steps ``cut`` to the recording, the step ranges
    ``left_out`` (nothing recorded in them) and ``note`` saying both in words (None when there are none). The
    fields, in this order, are the summary JSON's ``steps`` rows (:func:`steps_json`)."""

    rank: int
    count: int
    step_ns: list[int]
    mean_ns: int
    median_ns: int
    min_ns: int
    max_ns: int
    names: list[str]
    start_ns: list[int]
    range_ns: list[int]
    recording_start_ns: int | None
    recording_end_ns: int | None
    cut: list[CutStep]
    left_out: list[str]
    note: str | None


def rank_steps(trace: Trace) -> list[RankSteps]:
    """Per rank, the step ranges and their measured durations (a step that runs past the end of the recording is
    cut there: :mod:`gputop_trace.analysis.steps`). Empty when the trace marks no steps."""
    from functools import partial

    import numpy as np

    from gputop_trace.analysis.steps import find_steps, steps_note

    out = []
    for s in find_steps(trace):
        if not len(s):
            continue
        d = s.dur_ns.astype(np.int64)
        rank_time = partial(trace.file_time_ns, rank=s.rank)
        out.append(
            RankSteps(
                rank=s.rank,
                count=len(s),
                step_ns=d.tolist(),
                mean_ns=int(d.sum() // len(d)),
                median_ns=int(np.median(d)),
                min_ns=int(d.min()),
                max_ns=int(d.max()),
                names=[trace.event_name(int(e)) for e in s.events.tolist()],
                start_ns=[rank_time(int(x)) for x in s.start_ns.tolist()],
                range_ns=s.range_dur_ns.astype(np.int64).tolist(),
                recording_start_ns=_maybe(rank_time, s.recording_start_ns),
                recording_end_ns=_maybe(rank_time, s.recording_end_ns),
                cut=_cut_steps(trace, s),
                left_out=[trace.event_name(int(e)) for e in s.left_out.tolist()],
                note=steps_note(trace, s),
            )
        )
    return out


def _cut_steps(trace: Trace, s: Steps) -> list[CutStep]:
    """The steps of one rank's ``s`` cut to the recording, times in the rank's file time base (ns)."""
    import numpy as np

    from gputop_trace.analysis.steps import cut_reason

    rstart = s.range_start_ns if s.range_start_ns is not None else s.start_ns
    cut_start, cut_end = s.cut_start, s.cut_end

    def rank_time(t: int) -> int:
        return trace.file_time_ns(t, rank=s.rank)

    return [
        CutStep(
            name=trace.event_name(int(s.events[i])),
            step_ns=int(s.dur_ns[i]),
            range_ns=int(s.range_dur_ns[i]),
            start_ns=rank_time(int(s.start_ns[i])),
            end_ns=rank_time(int(s.start_ns[i] + s.dur_ns[i])),
            range_start_ns=rank_time(int(rstart[i])),
            range_end_ns=rank_time(int(rstart[i] + s.range_dur_ns[i])),
            cut_start=bool(cut_start[i]),
            cut_end=bool(cut_end[i]),
            reason=cut_reason(trace, s, i),
        )
        for i in np.flatnonzero(s.cut).tolist()
    ]


def steps_json(trace: Trace) -> list[dict[str, Any]]:
    """The summary JSON's ``steps``: :func:`rank_steps` as JSON-contract rows (each field a key, in order; times
    in ns)."""
    return [asdict(s) for s in rank_steps(trace)]


def _maybe(f: Callable[[int], int], x: int | None) -> int | None:
    return None if x is None else f(x)
