"""Panel 5, Drill-down: the place where the ncu drill-down (``DrilldownPanel``, from the ncu work) is mounted.

Until it is, the slot says what ``c`` will do for the selected kernel and shows the exact command it would
offer to run. ``c`` posts :class:`~gputop_trace.tui.messages.DrilldownRequested`; wiring the real panel is
one line in the app's handler (mount it here and hand it the request)."""

from __future__ import annotations

import os

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from gputop_trace.safe_text import clean
from gputop_trace.tui.messages import DrilldownRequest

IDLE = (
    "Drill-down with Nsight Compute. Select a kernel on the timeline (or in Kernels, panel 1) and press c: "
    "this panel then shows the exact ncu command for that launch. Running it needs the program that produced "
    "the trace and a GPU; it only runs after you confirm."
)


class DrilldownSlot(VerticalScroll):
    """Container for the drill-down panel; shows the pending request until the real panel is mounted."""

    DEFAULT_CSS = """
    DrilldownSlot { height: 1fr; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.request: DrilldownRequest | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text(IDLE), id="drilldown-placeholder")

    def show_request(self, req: DrilldownRequest) -> None:
        """Describe what the drill-down will profile for ``req``."""
        self.request = req
        text = Text()
        text.append("ncu drill-down — not wired into this build yet\n", style="bold")
        text.append("kernel   ")
        text.append(clean(req.short_name), style="bold")
        text.append(f"\nlaunch   {req.launch_index + 1} of {req.launch_count} with this name on rank {req.rank}, ")
        text.append(f"GPU {req.device} (ncu --launch-skip {req.launch_index})\n")
        text.append("range    " + (clean(" › ".join(req.nvtx_path)) if req.nvtx_path else "(none around the launch)"))
        shown = ", ".join(os.path.basename(p) for p in req.trace_path.split(os.pathsep))
        text.append("\ntrace    " + clean(shown))
        text.append("\n\nOnce wired, c will offer to run, after you confirm:\n", style="dim")
        text.append("  " + clean(req.command_text()))
        for w in self.query("#drilldown-placeholder"):
            if isinstance(w, Static):
                w.update(text)
