"""The causes of GPU idle gaps (detectors.md §2): their ids, and the words every view uses for them.

The gap detector (:mod:`gputop_trace.analysis.gaps.detect`) gives each gap one of :data:`CAUSES`; the findings, the
command-line tables, the fleet summary and the app all name a cause with :data:`CAUSE_LABELS` (a full phrase) or,
in a narrow table cell or on the timeline's busy strip, :data:`CAUSE_SHORT`.
"""

from __future__ import annotations

from gputop_trace.model.devices import DeviceWords

#: Cause ids, in the order the views list them.
CAUSES: tuple[str, ...] = (
    "sync_stall",
    "blocked_os",
    "data_loading",
    "cpu_bound",
    "untraced",
    "gpu_dependency",
    "slow_launch",  # last: the ids of the others are kept (fleet Parquet files hold them)
)
#: Display label of each cause (a full phrase, for sentences and wide tables).
CAUSE_LABELS: dict[str, str] = {
    "sync_stall": "sync stall",
    "blocked_os": "blocked in an OS call",
    "data_loading": "data loading",
    "cpu_bound": "CPU-bound (framework/Python overhead)",
    "untraced": "untraced host time",
    "gpu_dependency": "GPU-side dependency",
    "slow_launch": "one slow launch call",
}
#: A few words per cause, for table cells and the busy strip's gap marks.
CAUSE_SHORT: dict[str, str] = {
    "sync_stall": "sync stall",
    "blocked_os": "OS call",
    "data_loading": "data loading",
    "cpu_bound": "CPU-bound",
    "untraced": "untraced host",
    "gpu_dependency": "GPU dependency",
    "slow_launch": "slow launch",
}


def cause_label(cause: str, words: DeviceWords, *, short: bool = False) -> str:
    """The label of a cause said of one device (``MTIA-side dependency`` on an MTIA)."""
    return words.say((CAUSE_SHORT if short else CAUSE_LABELS)[cause])
