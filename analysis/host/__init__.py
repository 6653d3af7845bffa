"""What the host threads were doing: :mod:`.classes` (the activity class of every CPU-thread event, which the gap
detector attributes idle GPU time to) and :mod:`.activity` (what a late rank's host did while the others waited).
Times are int64 ns relative to the trace start.
"""

from __future__ import annotations

from gputop_trace.analysis.host.activity import host_activity, host_activity_weights
from gputop_trace.analysis.host.classes import (
    HostClass,
    cpu_lanes,
    host_classes,
    is_sync_call_name,
    pageable_copy_calls,
)

__all__ = [
    "HostClass",
    "cpu_lanes",
    "host_activity",
    "host_activity_weights",
    "host_classes",
    "is_sync_call_name",
    "pageable_copy_calls",
]
