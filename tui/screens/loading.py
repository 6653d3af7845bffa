"""The screen shown while a trace loads: what is being opened, a progress bar, bytes read and events decoded.
Esc, q or Ctrl+C cancel the load and quit (Esc and q go back to the fleet screen when the trace was opened from
one)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Center, Vertical
from textual.screen import Screen
from textual.widgets import ProgressBar, Static

from gputop_trace.safe_text import clean
from gputop_trace.units import format_bytes, plural

if TYPE_CHECKING:
    from gputop_trace.tui.hosts import CancelsLoad


class LoadingScreen(Screen[None]):
    """Progress of loading ``paths``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("q", "cancel", "Cancel", show=False),
    ]

    def __init__(self, paths: list[str]) -> None:
        super().__init__()
        self.paths = paths

    def compose(self) -> ComposeResult:
        what = self.paths[0] if len(self.paths) == 1 else f"{len(self.paths)} paths ({self.paths[0]} …)"
        with Vertical():
            yield Static(Text("Opening ") + Text(clean(os.path.basename(what.rstrip("/")) or what)), id="loading-title")
            yield Static(Text(clean(what), style="dim"), id="loading-path")
            with Center():
                yield ProgressBar(total=None, show_eta=False, id="loading-bar")
            yield Static("reading", id="loading-counts")
            yield Static(Text("Esc cancels", style="dim"))

    def show_progress(self, done: int, total: int, events: int, stage: str) -> None:
        """Update the bar and the counts."""
        bar = self.query_one("#loading-bar", ProgressBar)
        if total > 0:
            bar.update(total=total, progress=min(done, total))
        counts = f"{stage}: {format_bytes(done)}"
        if total > 0:
            counts += f" of {format_bytes(total)}"
        counts += f" · {plural(events, 'event')}"
        self.query_one("#loading-counts", Static).update(counts)

    def action_cancel(self) -> None:
        """Stop loading and quit (back to the fleet screen when the trace was opened from one)."""
        cast("CancelsLoad", self.app).cancel_load()
