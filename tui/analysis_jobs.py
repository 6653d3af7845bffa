"""The analyses the app runs after loading a trace, in the order their results are posted: each job returns its
result message (:mod:`gputop_trace.tui.messages`); later jobs reuse what earlier ones computed (the findings
read the gaps and transfers), and the summary bundle the export writes is made of them. Runs on the analyses'
worker thread."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gputop_trace.tui.messages import (
    AnalysisResult,
    FindingsReady,
    GapsReady,
    KernelsReady,
    NamesReady,
    OpsReady,
    OverviewReady,
    RangeNamesReady,
    RangesReady,
    RanksReady,
    TransfersReady,
)

if TYPE_CHECKING:
    from gputop_trace.analysis.findings.assemble import Finding
    from gputop_trace.analysis.gaps.detect import DeviceGaps
    from gputop_trace.analysis.ranges import RangeRow
    from gputop_trace.analysis.transfers import TransferReport
    from gputop_trace.model.trace import Trace
    from gputop_trace.report.summary import Analyses
    from gputop_trace.tui.view.analysis_views import FindingItem
    from gputop_trace.tui.view.navigation import NameIndex
    from gputop_trace.tui.view.timeline_data import TimelineData

#: a job: the result message it posts (its type, also named when it fails) and the function making it
Job = tuple[type[AnalysisResult], Callable[[], AnalysisResult]]


class TraceAnalyses:
    """The analyses of one trace (``token``: its load), run one job at a time by :meth:`jobs`' caller."""

    def __init__(self, trace: Trace, data: TimelineData, token: int) -> None:
        from gputop_trace.analysis.gaps.detect import DEFAULT_THRESHOLD_NS

        self.trace = trace
        self.data = data
        self.token = token
        self.threshold_ns = DEFAULT_THRESHOLD_NS
        self.names: NameIndex | None = None
        self.gaps: list[DeviceGaps] | None = None
        self.transfers: TransferReport | None = None
        self.findings: list[Finding] | None = None
        self.finding_items: list[FindingItem] | None = None
        self.ranges: list[RangeRow] | None = None

    def jobs(self) -> list[Job]:
        """Every job, in order: names first (``n`` / ``N``), the overview after the findings it lists."""
        return [
            (NamesReady, self._names),
            (RangeNamesReady, self._range_names),
            (KernelsReady, self._kernels),
            (GapsReady, self._gaps),
            (TransfersReady, self._transfers),
            (FindingsReady, self._findings),
            (OverviewReady, self._overview),
            (RangesReady, self._ranges),
            (RanksReady, self._ranks),
            (OpsReady, self._ops),
        ]

    def summary(self) -> Analyses | None:
        """The summary's bundle (what the export writes), when its analyses all succeeded."""
        if self.gaps is None or self.transfers is None or self.findings is None or self.ranges is None:
            return None
        from gputop_trace.report.summary import Analyses

        return Analyses(self.gaps, self.transfers, self.findings, self.ranges, self.threshold_ns)

    # ---- the jobs --------------------------------------------------------------------------------------------
    def _names(self) -> AnalysisResult:
        from gputop_trace.tui.view.navigation import NameIndex

        self.names = NameIndex(self.trace)
        return NamesReady(self.names, self.token)

    def _range_names(self) -> AnalysisResult:
        from gputop_trace.tui.view.navigation import range_names

        return RangeNamesReady(range_names(self.trace, self.names) if self.names is not None else [], self.token)

    def _kernels(self) -> AnalysisResult:
        from gputop_trace.analysis.kernels import kernel_table

        return KernelsReady(kernel_table(self.trace), self.token)

    def _gaps(self) -> AnalysisResult:
        from gputop_trace.analysis.gaps.detect import find_gaps
        from gputop_trace.tui.view.analysis_views import gaps_view

        self.gaps = find_gaps(self.trace, self.threshold_ns)
        return GapsReady(gaps_view(self.data, self.gaps), self.token)

    def _transfers(self) -> AnalysisResult:
        from gputop_trace.analysis.transfers import transfer_overlap
        from gputop_trace.tui.view.analysis_views import transfers_view

        self.transfers = transfer_overlap(self.trace)
        return TransfersReady(transfers_view(self.transfers), self.token)

    def _findings(self) -> AnalysisResult:
        from gputop_trace.analysis.findings.assemble import find_findings
        from gputop_trace.tui.view.analysis_views import finding_items

        self.findings = find_findings(
            self.trace, gap_threshold_ns=self.threshold_ns, gaps=self.gaps, transfers=self.transfers
        )
        self.finding_items = finding_items(self.findings)
        return FindingsReady(self.finding_items, self.token)

    def _overview(self) -> AnalysisResult:
        from gputop_trace.analysis.busy import device_busy
        from gputop_trace.report.summary import rank_steps
        from gputop_trace.tui.view.overview import Overview

        overview = Overview(device_busy(self.trace), rank_steps(self.trace), self.finding_items or [])
        return OverviewReady(overview, self.token)

    def _ranges(self) -> AnalysisResult:
        from gputop_trace.analysis.ranges import range_summary

        self.ranges = range_summary(self.trace)
        return RangesReady(self.ranges, self.token)

    def _ranks(self) -> AnalysisResult:
        from gputop_trace.tui.view.ranks_view import ranks_view

        return RanksReady(ranks_view(self.trace, set(self.data.util)), self.token)

    def _ops(self) -> AnalysisResult:
        from gputop_trace.tui.view.ops_view import ops_view

        return OpsReady(ops_view(self.trace), self.token)
