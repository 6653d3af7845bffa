"""Many ranks analysed from small per-rank summaries: :mod:`.rank_summary` (a rank's trace reduced to what a fleet
run ships between machines), :mod:`.collectives` (collectives matched across ranks from the summaries) and
:mod:`.analyse` (which ranks stand out, what holds the fleet's GPUs idle). Times are int64 ns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputop_trace.lazy_exports import lazy_names

if TYPE_CHECKING:
    from gputop_trace.analysis.fleet.analyse import FleetRank, FleetReport, analyse_fleet
    from gputop_trace.analysis.fleet.rank_summary import RankSummary, SummaryOptions, summarize_trace

#: where each public name lives (imported when first read: gputop_trace/lazy_exports.py)
_HOMES: dict[str, tuple[str, ...]] = {
    "analyse": ("FleetRank", "FleetReport", "analyse_fleet"),
    "rank_summary": ("RankSummary", "SummaryOptions", "summarize_trace"),
}
__getattr__ = lazy_names(__name__, _HOMES)

__all__ = ["FleetRank", "FleetReport", "RankSummary", "SummaryOptions", "analyse_fleet", "summarize_trace"]
