"""The results of the analyses for the trace shown, as they arrive: what the app keeps (for the export, a screen
mounted later, and the tests), one typed field per analysis. Textual-free."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gputop_trace.analysis.critical_path.path import StepPath
    from gputop_trace.analysis.kernels import KernelRow
    from gputop_trace.analysis.ranges import RangeRow
    from gputop_trace.report.summary import Analyses
    from gputop_trace.tui.view.analysis_views import FindingItem, GapsView, TransfersView
    from gputop_trace.tui.view.navigation import NameIndex, RangeName
    from gputop_trace.tui.view.ops_view import OpsView
    from gputop_trace.tui.view.overview import Overview
    from gputop_trace.tui.view.ranks_view import RanksView


@dataclass
class AnalysisResults:
    """Each analysis's result once it has arrived (None before, and after it failed: ``failures`` maps the
    analysis's name to the text shown)."""

    names: NameIndex | None = None
    range_names: list[RangeName] | None = None
    kernels: list[KernelRow] | None = None
    gaps: GapsView | None = None
    transfers: TransfersView | None = None
    findings: list[FindingItem] | None = None
    overview: Overview | None = None
    ranges: list[RangeRow] | None = None
    ranks: RanksView | None = None
    ops: OpsView | None = None
    #: every step's critical path, once asked for and computed
    critical_path: list[StepPath] | None = None
    #: the bundle the findings export writes, once every analysis run after loading is done
    summary: Analyses | None = None
    failures: dict[str, str] = field(default_factory=dict)
