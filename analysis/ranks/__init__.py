"""Several ranks of one job in one trace: :mod:`.collectives` (collective kernels and their overlap with compute),
:mod:`.stragglers` (collectives matched across ranks, who is late, who waits), :mod:`.clock` (aligning hosts'
clocks), :mod:`.table` (one row per rank) and :mod:`.job` (whether every rank of the job is loaded). Times are
int64 ns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputop_trace.lazy_exports import lazy_names

if TYPE_CHECKING:
    from gputop_trace.analysis.ranks.clock import align_rank_clocks
    from gputop_trace.analysis.ranks.collectives import OP_LABEL, Collectives, comm_compute_overlap, find_collectives
    from gputop_trace.analysis.ranks.job import job_coverage
    from gputop_trace.analysis.ranks.stragglers import (
        STRAGGLER_MIN_LATE_NS,
        MatchedGroup,
        RankSequence,
        RankWait,
        StragglerReport,
        clock_offsets,
        find_stragglers,
        match_collectives,
        match_sequences,
        pick_straggler,
    )
    from gputop_trace.analysis.ranks.table import RankRow, rank_table

#: where each public name lives (imported when first read: gputop_trace/lazy_exports.py)
_HOMES: dict[str, tuple[str, ...]] = {
    "clock": ("align_rank_clocks",),
    "collectives": ("OP_LABEL", "Collectives", "comm_compute_overlap", "find_collectives"),
    "job": ("job_coverage",),
    "stragglers": (
        "STRAGGLER_MIN_LATE_NS",
        "MatchedGroup",
        "RankSequence",
        "RankWait",
        "StragglerReport",
        "clock_offsets",
        "find_stragglers",
        "match_collectives",
        "match_sequences",
        "pick_straggler",
    ),
    "table": ("RankRow", "rank_table"),
}
__getattr__ = lazy_names(__name__, _HOMES)

__all__ = [
    "OP_LABEL",
    "STRAGGLER_MIN_LATE_NS",
    "Collectives",
    "MatchedGroup",
    "RankRow",
    "RankSequence",
    "RankWait",
    "StragglerReport",
    "align_rank_clocks",
    "clock_offsets",
    "comm_compute_overlap",
    "find_collectives",
    "find_stragglers",
    "job_coverage",
    "match_collectives",
    "match_sequences",
    "pick_straggler",
    "rank_table",
]
