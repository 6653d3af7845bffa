"""A critical path built by hand over the app tests' synthetic trace (``tests.tui_helpers.synthetic_trace``), so that
the app's drawing, walking and panel can be checked against numbers worked out by hand, whatever the analysis
finds on that trace."""

from __future__ import annotations

from gputop_trace.analysis.critical_path.path import PathSegment, StepPath, WhatIf
from gputop_trace.model.trace import Trace


def event_at(trace: Trace, name: str, start: int) -> int:
    """The event named ``name`` starting at ``start`` ns."""
    nid = trace.name_ids[name]
    for i in range(len(trace)):
        if int(trace.name[i]) == nid and int(trace.start_ns[i]) == start:
            return i
    raise AssertionError(f"no {name} at {start}")


def lane_of(trace: Trace, name: str) -> int:
    return next(i for i, ln in enumerate(trace.lanes) if ln.name == name)


def synthetic_path(trace: Trace, *, idle_lane: int = -1) -> StepPath:
    """The path of the synthetic trace's one step [0, 1000): the launch [0, 3), sgemm_big from 3 to 300 (the part
    after its launch), the elementwise kernel [300, 400), idle [400, 600) (on lane ``idle_lane``; -1: none), the
    first ``tiny`` kernel [600, 605), the HtoD copy [800, 900) after 195 ns of sync wait on the CPU thread.
    Length 3 + 297 + 100 + 200 + 5 + 195 + 100 = 900 ns. What-ifs for sgemm_big and the copy."""
    gpu, cpu = lane_of(trace, "stream 7"), lane_of(trace, "thread 1 (python)")
    segs = (
        PathSegment(0, 3, "launch", "cudaLaunchKernel", event_at(trace, "cudaLaunchKernel", 0), cpu, 0),
        PathSegment(3, 297, "kernel", "sgemm_big", event_at(trace, "sgemm_big", 0), gpu, 0),
        PathSegment(
            300,
            100,
            "kernel",
            "vectorized_elementwise_kernel",
            event_at(trace, "vectorized_elementwise_kernel", 300),
            gpu,
            0,
        ),
        PathSegment(400, 200, "idle", "idle: GPU", -1, idle_lane, 0),
        PathSegment(600, 5, "kernel", "tiny", event_at(trace, "tiny", 600), gpu, 0),
        PathSegment(605, 195, "sync_wait", "cudaMemcpyAsync wait", -1, cpu, 0),
        PathSegment(800, 100, "copy", "Memcpy HtoD", event_at(trace, "Memcpy HtoD", 800), gpu, 0),
    )
    breakdown = {"cpu_op": 0, "launch": 3, "kernel": 402, "copy": 100, "sync_wait": 195, "collective": 0, "idle": 200}
    by_item = (
        ("kernel", "sgemm_big", 297),
        ("idle", "idle: GPU", 200),
        ("sync_wait", "cudaMemcpyAsync wait", 195),
        ("kernel", "vectorized_elementwise_kernel", 100),
        ("copy", "Memcpy HtoD", 100),
        ("kernel", "tiny", 5),
        ("launch", "cudaLaunchKernel", 3),
    )
    what_if = (
        WhatIf("sgemm_big", "kernel", 297, 900, 760, 650),
        WhatIf("Memcpy HtoD", "copy", 100, 900, 850, 800),
    )
    return StepPath(0, 0, "ProfilerStep#0", 0, 1000, 900, segs, breakdown, by_item, what_if)
