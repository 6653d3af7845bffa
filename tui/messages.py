"""Typed messages between the app's workers, panels and screens."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from textual.message import Message

if TYPE_CHECKING:
    from gputop_trace.analysis.critical_path.path import StepPath
    from gputop_trace.analysis.kernels import KernelRow
    from gputop_trace.analysis.ranges import RangeRow
    from gputop_trace.model.trace import Trace
    from gputop_trace.ncu.drilldown import DrilldownRequest
    from gputop_trace.report.summary import Analyses
    from gputop_trace.tui.analysis_results import AnalysisResults
    from gputop_trace.tui.view.analysis_views import FindingItem, GapsView, TransfersView
    from gputop_trace.tui.view.navigation import FlowIndex, NameIndex, RangeName
    from gputop_trace.tui.view.ops_view import OpsView
    from gputop_trace.tui.view.overview import Overview
    from gputop_trace.tui.view.ranks_view import RanksView
    from gputop_trace.tui.view.timeline_data import TimelineData


class LoadProgress(Message):
    """Loading advanced: ``done``/``total`` bytes read, ``events`` decoded so far, ``stage`` in words."""

    def __init__(self, done: int, total: int, events: int, stage: str) -> None:
        super().__init__()
        self.done = done
        self.total = total
        self.events = events
        self.stage = stage


class TraceLoaded(Message):
    """The trace is loaded and its timeline lookups prepared (``token``: the load it belongs to)."""

    def __init__(self, trace: Trace, data: TimelineData, flows: FlowIndex, seconds: float, token: int = 0) -> None:
        super().__init__()
        self.token = token
        self.trace = trace
        self.data = data
        self.flows = flows
        self.seconds = seconds


class AnalysisResult(Message, bubble=False):
    """An analysis finished in its worker (``token``: the load of the trace it was run on). The app keeps it in
    its :class:`~gputop_trace.tui.analysis_results.AnalysisResults` (:meth:`keep`) and hands it to the main
    screen, which shows it (one subclass, and one handler, per result). Each subclass says ``bubble=False`` too
    (Textual sets it per class): handed to the screen, a result must not bubble back up to the app."""

    #: the analysis in words, for the notice when it fails
    name: ClassVar[str] = ""

    def __init__(self, token: int) -> None:
        super().__init__()
        self.token = token

    def keep(self, results: AnalysisResults) -> None:
        """Record this result in ``results``."""
        raise NotImplementedError


class NamesReady(AnalysisResult, bubble=False):
    """The index of event names (``n`` / ``N`` walk a name's instances)."""

    name = "names"

    def __init__(self, names: NameIndex, token: int = 0) -> None:
        super().__init__(token)
        self.names = names

    def keep(self, results: AnalysisResults) -> None:
        results.names = self.names


class RangeNamesReady(AnalysisResult, bubble=False):
    """The annotation ranges' names, for the palette."""

    name = "range_names"

    def __init__(self, range_names: list[RangeName], token: int = 0) -> None:
        super().__init__(token)
        self.range_names = range_names

    def keep(self, results: AnalysisResults) -> None:
        results.range_names = self.range_names


class KernelsReady(AnalysisResult, bubble=False):
    """Panel 1's kernel rows."""

    name = "kernels"

    def __init__(self, rows: list[KernelRow], token: int = 0) -> None:
        super().__init__(token)
        self.rows = rows

    def keep(self, results: AnalysisResults) -> None:
        results.kernels = self.rows


class GapsReady(AnalysisResult, bubble=False):
    """Panel 2's idle gaps and their marks on the timeline."""

    name = "gaps"

    def __init__(self, view: GapsView, token: int = 0) -> None:
        super().__init__(token)
        self.view = view

    def keep(self, results: AnalysisResults) -> None:
        results.gaps = self.view


class TransfersReady(AnalysisResult, bubble=False):
    """Panel 3's copies and their overlap with compute."""

    name = "transfers"

    def __init__(self, view: TransfersView, token: int = 0) -> None:
        super().__init__(token)
        self.view = view

    def keep(self, results: AnalysisResults) -> None:
        results.transfers = self.view


class FindingsReady(AnalysisResult, bubble=False):
    """Panel 6's findings, in the analysis's order."""

    name = "findings"

    def __init__(self, items: list[FindingItem], token: int = 0) -> None:
        super().__init__(token)
        self.items = items

    def keep(self, results: AnalysisResults) -> None:
        results.findings = self.items


class OverviewReady(AnalysisResult, bubble=False):
    """Where the time went, for the details pane while nothing is selected."""

    name = "overview"

    def __init__(self, overview: Overview, token: int = 0) -> None:
        super().__init__(token)
        self.overview = overview

    def keep(self, results: AnalysisResults) -> None:
        results.overview = self.overview


class RangesReady(AnalysisResult, bubble=False):
    """Panel 4's annotation ranges."""

    name = "ranges"

    def __init__(self, rows: list[RangeRow], token: int = 0) -> None:
        super().__init__(token)
        self.rows = rows

    def keep(self, results: AnalysisResults) -> None:
        results.ranges = self.rows


class RanksReady(AnalysisResult, bubble=False):
    """Panel 7's ranks compared (and the rank comparison's view)."""

    name = "ranks"

    def __init__(self, view: RanksView, token: int = 0) -> None:
        super().__init__(token)
        self.view = view

    def keep(self, results: AnalysisResults) -> None:
        results.ranks = self.view


class OpsReady(AnalysisResult, bubble=False):
    """Panel 8's operators."""

    name = "ops"

    def __init__(self, view: OpsView, token: int = 0) -> None:
        super().__init__(token)
        self.view = view

    def keep(self, results: AnalysisResults) -> None:
        results.ops = self.view


class CriticalPathReady(AnalysisResult, bubble=False):
    """Every step's critical path (computed when first asked for: ``p``, panel 9)."""

    name = "critical_path"

    def __init__(self, paths: list[StepPath], token: int = 0) -> None:
        super().__init__(token)
        self.paths = paths

    def keep(self, results: AnalysisResults) -> None:
        results.critical_path = self.paths


class AnalysisFailed(Message, bubble=False):
    """An analysis raised: the panel that needed the ``analysis`` result shows ``text`` instead."""

    def __init__(self, analysis: type[AnalysisResult], text: str, token: int = 0) -> None:
        super().__init__()
        self.token = token
        self.analysis = analysis
        self.text = text


class AnalysesDone(Message, bubble=False):
    """Every analysis run after loading has posted its result; ``summary`` is the bundle the export writes (None
    when one of its analyses failed)."""

    def __init__(self, summary: Analyses | None, token: int = 0) -> None:
        super().__init__()
        self.token = token
        self.summary = summary


class JumpToEvent(Message):
    """Show and select an event on the timeline (from a panel row, the palette or a finding)."""

    def __init__(self, event: int, *, rezoom: bool = True) -> None:
        super().__init__()
        self.event = event
        self.rezoom = rezoom


class JumpToInterval(Message):
    """Show and select a time interval on a GPU (an idle gap, a range's extent); ``details`` for the pane."""

    def __init__(
        self, start: int, end: int, *, rank: int = -1, device: int = -1, label: str = "", details: Any = None
    ) -> None:
        super().__init__()
        self.start = start
        self.end = end
        self.rank = rank
        self.device = device
        self.label = label
        self.details = details


class JumpToRank(Message):
    """Show one rank's lanes on the timeline (from the Ranks panel)."""

    def __init__(self, rank: int) -> None:
        super().__init__()
        self.rank = rank


class DrilldownRequested(Message):
    """``c`` was pressed on a kernel: the drill-down panel (``#drilldown``) offers to profile this launch."""

    def __init__(self, request: DrilldownRequest) -> None:
        super().__init__()
        self.request = request
