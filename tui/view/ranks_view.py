"""The rank analyses as the app needs them, built once in the analyses worker: the per-rank table and the
straggler verdict (panel 7, Ranks), and the steps lined up across ranks with the lanes that stand for each rank
(the side-by-side comparison). No Textual."""

from __future__ import annotations

from dataclasses import dataclass

from gputop_trace.analysis.ranks.collectives import Collectives, find_collectives
from gputop_trace.analysis.ranks.job import job_coverage
from gputop_trace.analysis.ranks.stragglers import StragglerReport, find_stragglers
from gputop_trace.analysis.ranks.table import RankRow, rank_table
from gputop_trace.analysis.steps import find_steps
from gputop_trace.model.trace import Trace
from gputop_trace.report.ranks import straggler_sentence
from gputop_trace.tui.view.rank_compare import RankLanes, StepSlot, rank_lanes, step_slots

ONE_RANK = (
    "This trace has one rank: there is nothing to compare. Open a directory of per-rank traces, or an nsys export "
    "of several processes, to compare ranks."
)
NO_COLLECTIVES = "No collective kernels in this trace: the ranks do not communicate through NCCL/RCCL here."
NO_STRAGGLER = "No rank stands out: collectives start within noise of each other on every rank."


@dataclass(frozen=True)
class RanksView:
    """Everything the Ranks panel and the rank comparison show."""

    rows: list[RankRow]
    report: StragglerReport
    verdict: str
    collectives: Collectives
    slots: list[StepSlot]
    lanes: dict[int, RankLanes]

    @property
    def straggler(self) -> int | None:
        """The rank that makes the others wait, if one does."""
        return self.report.straggler

    @property
    def multi_rank(self) -> bool:
        """Whether there is more than one rank to compare."""
        return len(self.rows) > 1


def ranks_verdict(report: StragglerReport, rows: list[RankRow], trace: Trace | None = None) -> str:
    """The straggler verdict as ``gputop-trace ranks`` words it, or why there is none; when the job has more
    ranks than were loaded, that comes first."""
    job = job_coverage(trace.meta) if trace is not None else None
    verdict = _verdict(report, rows)
    return f"{job.note}\n{verdict}" if job is not None else verdict


def _verdict(report: StragglerReport, rows: list[RankRow]) -> str:
    sentence = straggler_sentence(report, rows)
    if sentence:
        return sentence
    if len(rows) <= 1:
        return ONE_RANK
    if not any(r.collectives for r in rows):
        return NO_COLLECTIVES
    return NO_STRAGGLER


def ranks_view(trace: Trace, util_keys: set[tuple[int, int]]) -> RanksView:
    """Run the rank analyses (in a worker: they walk every collective and step)."""
    report = find_stragglers(trace)
    rows = rank_table(trace, report)
    coll = find_collectives(trace)
    steps = find_steps(trace)
    return RanksView(
        rows=rows,
        report=report,
        verdict=ranks_verdict(report, rows, trace),
        collectives=coll,
        slots=step_slots(trace, steps),
        lanes=rank_lanes(trace, steps, coll, util_keys),
    )
