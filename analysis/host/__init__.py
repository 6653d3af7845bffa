"""What the host threads were doing: :mod:`.classes` (the activity class of every CPU-thread event, which the gap
detector attributes idle GPU time to) and :mod:`.activity` (what a late rank's host did while the others waited).
Times are int64 ns relative to the trace start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputop_trace.lazy_exports import lazy_names

if TYPE_CHECKING:
    from gputop_trace.analysis.host.activity import host_activity, host_activity_weights
    from gputop_trace.analysis.host.classes import (
        HostClass,
        cpu_lanes,
        host_classes,
        is_sync_call_name,
        pageable_copy_calls,
    )

#: where each public name lives (imported when first read: gputop_trace/lazy_exports.py)
_HOMES: dict[str, tuple[str, ...]] = {
    "activity": ("host_activity", "host_activity_weights"),
    "classes": ("HostClass", "cpu_lanes", "host_classes", "is_sync_call_name", "pageable_copy_calls"),
}
__getattr__ = lazy_names(__name__, _HOMES)

__all__ = [
    "HostClass",
    "cpu_lanes",
    "host_activity",
    "host_activity_weights",
    "host_classes",
    "is_sync_call_name",
    "pageable_copy_calls",
]
