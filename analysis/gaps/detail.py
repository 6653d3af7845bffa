"""The one line that says what the host (or the GPU) was doing during an idle gap (detectors.md §2)."""

from __future__ import annotations

from gputop_trace.model.devices import DeviceWords
from gputop_trace.model.kernel_names import collective_op
from gputop_trace.model.trace import Trace


def gap_detail(
    trace: Trace, cause: str, cause_event: int, after_sync: int, range_event: int, next_op: int, launch: int, g0: int
) -> str:
    """One line saying what the host (or GPU) was doing during a gap."""
    from gputop_trace.units import format_ns

    def nm(i: int) -> str:
        return trace.event_name(i) if i >= 0 else "?"

    inside = (
        f" inside {nm(range_event)}"
        if range_event >= 0 and (cause_event < 0 or nm(range_event) != nm(cause_event))
        else ""
    )
    if cause == "gpu_dependency":
        op = nm(next_op)
        lead = g0 - int(trace.start_ns[launch] + trace.dur_ns[launch]) if launch >= 0 else 0
        return f"{op} was queued {format_ns(lead)} earlier and waited for {_dependency_kind(trace, next_op, launch)}"
    if cause == "sync_stall":
        if after_sync >= 0 and after_sync == cause_event:
            queue = _words(trace, next_op).say("GPU")
            return f"{queue} queue drained by {nm(after_sync)}{inside}; the host then worked until the next launch"
        return f"host waiting in {nm(cause_event)}{inside}"
    if cause == "blocked_os":
        return f"launching thread blocked in {nm(cause_event)}{inside}"
    if cause == "data_loading":
        return f"host loading data in {nm(cause_event)}"
    if cause == "cpu_bound":
        return f"host busy in {nm(cause_event)}{inside}"
    if cause == "slow_launch":
        took = format_ns(int(trace.dur_ns[launch])) if launch >= 0 else "?"
        return f"host inside one slow {nm(launch)} call ({took}){inside}"
    return f"nothing traced on the launching thread{inside}"


def _words(trace: Trace, op: int) -> DeviceWords:
    """The words for the device of GPU op ``op`` (for the trace's devices together when there is none)."""
    if op < 0:
        return trace.device_words()
    return trace.device_words(int(trace.event_rank[op]), int(trace.event_device[op]))


def _dependency_kind(trace: Trace, next_op: int, launch: int) -> str:
    api = trace.event_name(launch).lower() if launch >= 0 else ""
    if next_op >= 0 and collective_op(trace.event_name(next_op)) is not None:
        return "a collective (the other ranks)"
    if "graph" in api:
        graphs = _words(trace, next_op).graphs
        return f"a dependency inside a {graphs or 'graph'}"
    return "another stream, an event or a host callback"
