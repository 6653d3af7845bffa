"""Typed messages between the app's workers, panels and screens."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.message import Message

if TYPE_CHECKING:
    from gputop_trace.model.trace import Trace
    from gputop_trace.ncu.drilldown import DrilldownRequest
    from gputop_trace.tui.view.navigation import FlowIndex
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


class LoadFailed(Message):
    """Loading failed: ``text`` is exactly what the command line prints; ``exit_code`` what it returns."""

    def __init__(self, text: str, exit_code: int, token: int = 0) -> None:
        super().__init__()
        self.token = token
        self.text = text
        self.exit_code = exit_code


class AnalysisReady(Message):
    """An analysis finished in its worker: ``name`` says which, ``result`` is its return value (``token``: the
    load of the trace it was run on)."""

    def __init__(self, name: str, result: Any, token: int = 0) -> None:
        super().__init__()
        self.token = token
        self.name = name
        self.result = result


class AnalysisFailed(Message):
    """An analysis raised: the panel that needed it shows ``text`` instead of results."""

    def __init__(self, name: str, text: str, token: int = 0) -> None:
        super().__init__()
        self.token = token
        self.name = name
        self.text = text


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
