"""CUPTI range-profiler traces in the JSON contract: what ``summary`` and ``kernels`` say about them."""

from __future__ import annotations

from typing import Any

from gputop_trace.analysis.profiler_ranges import ProfiledKernel, profiler_ranges, profiler_summary_line
from gputop_trace.model.trace import Trace


def range_profiler_json(trace: Trace) -> dict[str, Any] | None:
    """``range_profiler`` of ``summary``: ``null`` for an activity trace; else the number of profiled ranges,
    kernel names, the counters' names, the ranges' distinct lengths (ns: replay windows, not kernel durations)
    and the sentence the text output prints."""
    rep = profiler_ranges(trace)
    if rep is None:
        return None
    return {
        "ranges": rep.ranges,
        "kernel_names": len({k.name for k in rep.kernels}),
        "counters": list(rep.metrics),
        "range_window_ns": list(rep.window_ns),
        "note": profiler_summary_line(rep),
    }


def profiled_kernel_json(k: ProfiledKernel) -> dict[str, Any]:
    """One row of ``profiled_kernels``: a kernel name on a device, its range count and summed counters."""
    counters = {m: int(v) if float(v).is_integer() else v for m, v in k.counters.items()}
    return {"name": k.name, "device": k.device, "rank": k.rank, "ranges": k.ranges, "counters": counters}


def profiled_kernel_csv_rows(rows: list[dict[str, Any]], metrics: list[str]) -> list[dict[str, Any]]:
    """``profiled_kernels`` rows flattened for CSV: one column per counter (full counter names)."""
    return [{k: v for k, v in r.items() if k != "counters"} | dict(r["counters"]) for r in rows]
