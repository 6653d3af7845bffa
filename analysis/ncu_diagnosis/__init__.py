"""What an Nsight Compute report says beyond the roofline: :mod:`.checks` (spills, bank conflicts, coalescing,
the hottest source lines), :mod:`.trust` (how far a result can be trusted: replay passes, atomics, passes that
disagree) and :mod:`.launches` (how much several profiled launches of one kernel differ). Metrics in ncu base units.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputop_trace.lazy_exports import lazy_names

if TYPE_CHECKING:
    from gputop_trace.analysis.ncu_diagnosis.checks import Finding, HotLine, diagnose, hottest_lines
    from gputop_trace.analysis.ncu_diagnosis.launches import LaunchSpread, launch_spreads
    from gputop_trace.analysis.ncu_diagnosis.trust import TrustNote, trust_notes

#: where each public name lives (imported when first read: gputop_trace/lazy_exports.py)
_HOMES: dict[str, tuple[str, ...]] = {
    "checks": ("Finding", "HotLine", "diagnose", "hottest_lines"),
    "launches": ("LaunchSpread", "launch_spreads"),
    "trust": ("TrustNote", "trust_notes"),
}
__getattr__ = lazy_names(__name__, _HOMES)

__all__ = [
    "Finding",
    "HotLine",
    "LaunchSpread",
    "TrustNote",
    "diagnose",
    "hottest_lines",
    "launch_spreads",
    "trust_notes",
]
