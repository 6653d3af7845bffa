"""GPU idle gaps, attributed to what the host was doing (detectors.md §2): :mod:`.detect` (:func:`find_gaps`),
:mod:`.attribution` (each gap's cause and evidence), :mod:`.detail` (the one line saying what the host did) and
:mod:`.causes` (the cause ids and the words every view uses for them). Times are int64 ns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputop_trace.lazy_exports import lazy_names

if TYPE_CHECKING:
    from gputop_trace.analysis.gaps.attribution import BREAKDOWN_KEYS, SLOW_LAUNCH_SHARE
    from gputop_trace.analysis.gaps.causes import CAUSE_LABELS, CAUSE_SHORT, CAUSES, cause_label
    from gputop_trace.analysis.gaps.detect import (
        CAUSE_FIX,
        DEFAULT_THRESHOLD_NS,
        LAUNCH_GAP_NS,
        SHORT_OP_NS,
        DeviceGaps,
        Gap,
        cause_fix,
        find_gaps,
    )

#: where each public name lives (imported when first read: gputop_trace/lazy_exports.py)
_HOMES: dict[str, tuple[str, ...]] = {
    "attribution": ("BREAKDOWN_KEYS", "SLOW_LAUNCH_SHARE"),
    "causes": ("CAUSE_LABELS", "CAUSE_SHORT", "CAUSES", "cause_label"),
    "detect": (
        "CAUSE_FIX",
        "DEFAULT_THRESHOLD_NS",
        "LAUNCH_GAP_NS",
        "SHORT_OP_NS",
        "DeviceGaps",
        "Gap",
        "cause_fix",
        "find_gaps",
    ),
}
__getattr__ = lazy_names(__name__, _HOMES)

__all__ = [
    "BREAKDOWN_KEYS",
    "CAUSES",
    "CAUSE_FIX",
    "CAUSE_LABELS",
    "CAUSE_SHORT",
    "DEFAULT_THRESHOLD_NS",
    "LAUNCH_GAP_NS",
    "SHORT_OP_NS",
    "SLOW_LAUNCH_SHARE",
    "DeviceGaps",
    "Gap",
    "cause_fix",
    "cause_label",
    "find_gaps",
]
