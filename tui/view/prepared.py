"""What the app needs to show a loaded trace, computed off the UI thread: the trace with its torch.compile debug
output attached (``--inductor-dir``), the timeline's lookups (:func:`prepare_timeline`) and the launch flows. No
Textual: ``gputop-trace view`` runs it on the load's own thread, right after the load and while the app is still
being imported (``cli/view.py``); the app's load worker runs it otherwise (a load the app started itself)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gputop_trace.load.inductor import attach_inductor_dir
from gputop_trace.model.trace import Trace
from gputop_trace.tui.view.navigation import FlowIndex
from gputop_trace.tui.view.timeline_data import TimelineData, prepare_timeline


@dataclass(frozen=True)
class PreparedView:
    """A trace ready to show: the trace (its inductor kernels attached), its timeline lookups and launch flows."""

    trace: Trace
    data: TimelineData
    flows: FlowIndex


def prepare_view(
    trace: Trace, inductor_dir: str | None = None, *, step: Callable[[str], None] | None = None
) -> PreparedView:
    """Attach ``inductor_dir`` (None: nothing), prepare the timeline and index the launch flows (``step(what)``
    before each stage, for a progress line). Raises what :func:`attach_inductor_dir` raises for a bad folder."""
    trace = attach_inductor_dir(trace, inductor_dir)
    data = prepare_timeline(trace, step=step)
    if step:
        step("launch flows")
    return PreparedView(trace, data, FlowIndex(trace))
