"""Analysis results as JSON-contract objects (shared by ``gaps``, ``transfers``, ``ranges`` and ``summary``).

The analyses keep model times (ns from the trace start); here every point in time becomes the file's own
time base (``trace.file_time_ns``) and every event index a small ``{"name", "start_ns", "dur_ns"}`` object, so
results can be compared with other tools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gputop_trace.analysis.autograd import AutogradThread
    from gputop_trace.analysis.findings.assemble import Finding
    from gputop_trace.analysis.gaps.detect import DeviceGaps, Gap
    from gputop_trace.analysis.ranges import RangeRow
    from gputop_trace.analysis.transfers import CopyRow, DirectionRow, TransferFlag, TransferReport
    from gputop_trace.model.trace import Trace

#: Evidence keys whose integer values are event indices.
_EVENT_KEYS = frozenset({"event", "next_op", "launch", "cause_event", "api", "op", "prev_op"})
#: Evidence keys whose values are points in time (model ns).
_TIME_KEYS = frozenset({"start_ns", "end_ns", "first_ns", "last_ns"})


def event_json(trace: Trace, i: int) -> dict[str, Any] | None:
    """An event as ``{"name", "start_ns", "dur_ns", "lane"}`` (file time), ``None`` for ``-1``."""
    if i < 0:
        return None
    rank = int(trace.event_rank[i])
    return {
        "name": trace.event_name(i),
        "start_ns": trace.file_time_ns(int(trace.start_ns[i]), rank),
        "dur_ns": int(trace.dur_ns[i]),
        "lane": trace.lanes[int(trace.lane[i])].name,
    }


def evidence_json(trace: Trace, value: Any, rank: int = 0, key: str = "") -> Any:
    """Finding evidence with event indices described and times in the file's time base."""
    if isinstance(value, dict):
        if key == "events":  # event counts per kind ({"api": 3}), not event indices
            return dict(value)
        r = value.get("rank", rank)
        r = r if isinstance(r, int) else rank
        return {k: evidence_json(trace, v, r, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if key == "events":
            return [event_json(trace, int(v)) for v in value]
        return [evidence_json(trace, v, rank) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        if key in _EVENT_KEYS:
            return event_json(trace, value)
        if key in _TIME_KEYS:
            return trace.file_time_ns(value, rank)
    return value


def finding_head(f: Finding) -> dict[str, Any]:
    """What every ``findings`` entry starts with (one run's or a fleet's): position (``priority``, 1 first),
    kind, words, weight (``severity`` 0–1) and the time at stake (ns)."""
    return {
        "priority": f.priority,
        "kind": f.kind,
        "title": f.title,
        "detail": f.detail,
        "severity": round(f.severity, 4),
        "time_ns": f.time_ns,
    }


def finding_json(trace: Trace, f: Finding) -> dict[str, Any]:
    """One entry of ``findings``: :func:`finding_head`, the GPU, evidence, thresholds and where to look."""
    rank = f.gpu_rank if f.gpu_rank is not None else 0
    return {
        **finding_head(f),
        "gpu": {"rank": f.gpu_rank, "device": f.device},
        "evidence": evidence_json(trace, f.evidence, rank),
        "thresholds": f.thresholds,
        "event": event_json(trace, f.event),
        "interval": (
            [trace.file_time_ns(f.interval[0], rank), trace.file_time_ns(f.interval[1], rank)] if f.interval else None
        ),
    }


def gap_json(trace: Trace, g: Gap) -> dict[str, Any]:
    """One gap row (file time)."""
    launch = None
    if g.launch_event >= 0:
        lane = trace.lanes[int(trace.lane[g.launch_event])]
        launch = {
            "name": trace.event_name(g.launch_event),
            "start_ns": trace.file_time_ns(int(trace.start_ns[g.launch_event]), g.rank),
            "dur_ns": int(trace.dur_ns[g.launch_event]),
            "thread": lane.tid,
            "thread_name": lane.name,
        }
    nxt_lane = trace.lanes[int(trace.lane[g.next_op])]
    return {
        "rank": g.rank,
        "device": g.device,
        "pid": g.pid,
        "start_ns": trace.file_time_ns(g.start_ns, g.rank),
        "dur_ns": g.dur_ns,
        "cause": g.cause,
        "cause_label": g.cause_label,
        "detail": g.detail,
        "range": g.range_name,
        "launch": launch,
        "next_op": trace.event_name(g.next_op),
        "next_op_stream": nxt_lane.stream,
        "prev_op": trace.event_name(g.prev_op),
        "cause_event": event_json(trace, g.cause_event),
        "after_sync": event_json(trace, g.after_sync),
        "window_ns": g.window_ns,
        "breakdown_ns": g.breakdown_ns,
    }


def device_gaps_json(trace: Trace, d: DeviceGaps, *, with_gaps: bool = True) -> dict[str, Any]:
    """One device of the ``gaps`` document; gaps sorted longest first (ties: earlier first), as nsys sorts."""
    doc: dict[str, Any] = {
        "rank": d.rank,
        "device": d.device,
        "pid": d.pid,
        "first_ns": trace.file_time_ns(d.first_ns, d.rank),
        "last_ns": trace.file_time_ns(d.last_ns, d.rank),
        "span_ns": d.span_ns,
        "busy_ns": d.busy_ns,
        "idle_ns": d.idle_ns,
        "idle_pct": round(d.idle_pct, 3),
        "ops": d.ops,
        "holes": d.holes,
        "gap_count": len(d.columns),
        "gaps_ns": d.gaps_ns,
        "by_cause": {
            c.cause: {"count": c.count, "total_ns": c.total_ns, "label": c.label} for c in d.by_cause.values()
        },
        "histogram": {
            "edges_ns": list(d.histogram.edges_ns),
            "counts": list(d.histogram.counts),
            "total_ns": list(d.histogram.total_ns),
        },
        "launch_bound": d.launch_bound,
        "short_gaps": d.short_gaps,
        "short_gaps_ns": d.short_gaps_ns,
    }
    if with_gaps:
        doc["gaps"] = [gap_json(trace, g) for g in d.longest(len(d.columns))]
    return doc


def copy_json(trace: Trace, r: CopyRow) -> dict[str, Any]:
    """One copy row (file time)."""
    return {
        "rank": r.rank,
        "device": r.device,
        "stream": r.stream,
        "start_ns": trace.file_time_ns(r.start_ns, r.rank),
        "dur_ns": r.dur_ns,
        "kind": r.kind,
        "direction": r.direction,
        "host_memory": r.host_memory,
        "bytes": r.bytes,
        "overlap_ns": r.overlap_ns,
        "exposed_ns": r.exposed_ns,
        "hidden_pct": round(r.hidden_pct, 3),
        "gbps": round(r.bytes_per_s / 1e9, 4),
        "async": r.is_async,
        "api": r.api,
        "range": r.range_name,
        "flags": list(r.flags),
    }


def direction_json(r: DirectionRow) -> dict[str, Any]:
    """One ``by_direction`` row."""
    return {
        "direction": r.direction,
        "host_memory": r.host_memory,
        "count": r.count,
        "bytes": r.bytes,
        "time_ns": r.time_ns,
        "exposed_ns": r.exposed_ns,
        "hidden_pct": round(r.hidden_pct, 3),
        "gbps": round(r.bytes_per_s / 1e9, 4),
    }


def flag_json(trace: Trace, f: TransferFlag, *, examples: int = 10) -> dict[str, Any]:
    """One transfer flag with its first ``examples`` rows (most exposed first)."""
    return {
        "flag": f.flag,
        "title": f.title,
        "count": f.count,
        "bytes": f.bytes,
        "time_ns": f.time_ns,
        "exposed_ns": f.exposed_ns,
        "fix": f.fix,
        "examples": [copy_json(trace, r) for r in f.rows[:examples]],
    }


def transfers_json(trace: Trace, rep: TransferReport, *, copies: bool = True) -> dict[str, Any]:
    """The payload of the ``transfers`` document."""
    doc: dict[str, Any] = {
        "exposed_ns": rep.exposed_ns,
        "devices": [
            {"rank": d.rank, "device": d.device, "copies": d.copies, "copy_ns": d.copy_ns, "exposed_ns": d.exposed_ns}
            for d in rep.devices
        ],
        "by_direction": [direction_json(r) for r in rep.by_direction],
        "flags": [flag_json(trace, f) for f in rep.flags],
    }
    if copies:
        doc["copies"] = [copy_json(trace, r) for r in rep.copies]
        doc["uvm"] = [copy_json(trace, r) for r in rep.uvm]
    return doc


def range_json(r: RangeRow) -> dict[str, Any]:
    """One ``ranges`` row."""
    return {
        "name": r.name,
        "domain": r.domain,
        "count": r.count,
        "total_ns": r.total_ns,
        "mean_ns": round(r.mean_ns, 1),
        "min_ns": r.min_ns,
        "max_ns": r.max_ns,
        "gpu_ns": r.gpu_ns,
        "gpu_span_ns": r.gpu_span_ns,
        "gpu_ops": r.gpu_ops,
        "gpu_ops_autograd": r.gpu_ops_autograd,
        "gpu_annotation_ns": r.gpu_annotation_ns,
        "max_depth": r.max_depth,
        "threads": r.threads,
        "cut": r.cut,
        "recorded_total_ns": r.recorded_total_ns if r.recorded_total_ns is not None else r.total_ns,
    }


def autograd_threads_json(trace: Trace, threads: dict[int, AutogradThread]) -> list[dict[str, Any]]:
    """The ``ranges`` document's ``autograd_threads``: each thread whose launches count in another thread's
    ranges (``rank``, ``pid``, ``thread``, ``owner_thread``, ``via``, ``evidence``, ``note``)."""
    from gputop_trace.analysis.autograd import autograd_note

    out = []
    for th in sorted(threads.values(), key=lambda t: t.lane):
        ln, owner = trace.lanes[th.lane], trace.lanes[th.owner]
        out.append(
            {
                "rank": ln.rank,
                "pid": ln.pid,
                "thread": ln.name,
                "owner_thread": owner.name,
                "via": th.via,
                "evidence": th.evidence,
                "note": autograd_note(trace, {th.lane: th})[0],
            }
        )
    return out
