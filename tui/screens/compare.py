"""Ranks side by side (``R`` on the timeline): the step under the cursor on every rank, stacked and aligned on
each rank's step start (``t``: on the common clock), with each rank's lateness at the step's collectives and its
waiting time, and a sentence saying who is late, by how much and what its host was doing. ``[`` / ``]`` step
through the steps; Enter shows the rank under the cursor in this step on the timeline; Esc goes back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Static

from gputop_trace.tui.keymap import FIT, LINE_MOVES, ZOOM_PAN, help_sections, nav_bindings
from gputop_trace.tui.screens.help import HelpScreen, HelpSection
from gputop_trace.tui.view.rank_compare import op_label, step_sentence, title_text
from gputop_trace.tui.view.ranks_view import RanksView
from gputop_trace.tui.view.timeline_data import TimelineData
from gputop_trace.tui.widgets.footer import FittingFooter
from gputop_trace.tui.widgets.rank_compare import MARKER, RankCompare

COMPARE_BINDINGS: list[BindingType] = [
    Binding("left_square_bracket", "step(-1)", "Prev step", key_display="[", tooltip="The previous step"),
    Binding("right_square_bracket", "step(1)", "Next step", key_display="]", tooltip="The next step"),
    *nav_bindings(
        ZOOM_PAN + LINE_MOVES,
        {
            "zoom(0.5)": ("Zoom in", "Zoom in around the middle"),
            "zoom(2.0)": ("Zoom out", "Zoom out around the middle"),
            "pan(-0.25)": ("Pan left", "Pan left by a quarter of the window"),
            "pan(0.25)": ("Pan right", "Pan right by a quarter of the window"),
            "line(1)": ("Next line", "Next line (down)"),
            "line(-1)": ("Previous line", "Previous line (up)"),
        },
    ),
    *nav_bindings(FIT, {"fit": ("Fit the step", "Show the whole step on every rank")}),
    Binding("tab", "next_rank(1)", "Next rank", show=False, tooltip="The next rank's header line"),
    Binding("shift+tab", "next_rank(-1)", "Previous rank", show=False, tooltip="The previous rank's header line"),
    Binding(
        "t",
        "toggle_align",
        "Align",
        tooltip="Time 0: each rank's step start, or the common clock (collectives that end together line up)",
    ),
    Binding(
        "enter",
        "open_rank",
        "Show in timeline",
        show=False,
        tooltip="Back to the timeline, showing the rank under the cursor in this step",
    ),
    Binding("escape,R", "close", "Back", tooltip="Back to the timeline"),
    Binding("question_mark", "help", "Help", key_display="?", tooltip="This help"),
]


@dataclass(frozen=True)
class CompareAnchor:
    """Where the comparison starts: the step holding time ``t`` on ``rank``; ``window`` (relative ns) is used
    when the trace has no step ranges."""

    rank: int
    t: int
    window: tuple[int, int]


@dataclass(frozen=True)
class ShowRank:
    """What Enter hands back to the timeline: show ``rank`` over ``[start, end)`` with the cursor at ``cursor``."""

    rank: int
    start: int
    end: int
    cursor: int


class CompareScreen(Screen[ShowRank | None]):
    """The same step on every rank."""

    HELP_TITLE: ClassVar[str] = "Ranks side by side"

    BINDINGS: ClassVar[list[BindingType]] = COMPARE_BINDINGS

    def __init__(self, data: TimelineData, view: RanksView | None, anchor: CompareAnchor) -> None:
        super().__init__()
        self.data = data
        self.view = view
        self.start_at = anchor

    def compose(self) -> ComposeResult:
        yield Static("", id="compare-title")
        yield RankCompare(self.data, id="compare")
        yield Static("", id="compare-summary")
        yield FittingFooter()

    @property
    def compare(self) -> RankCompare:
        return self.query_one(RankCompare)

    def on_mount(self) -> None:
        self.compare.focus()
        if self.view is not None:
            self.set_view(self.view)
        else:
            self.refresh_text()

    def set_view(self, view: RanksView) -> None:
        """The rank analysis is ready: show the anchored step."""
        self.view = view
        a = self.start_at
        self.compare.set_view(view, a.rank, a.t, a.window)
        self.refresh_text()

    def set_error(self, text: str) -> None:
        """The rank analysis failed: say so where the comparison would be."""
        self.compare.message = text
        self.compare.refresh()
        self.query_one("#compare-summary", Static).update(Text(text, style="red"))

    def on_rank_compare_changed(self, message: RankCompare.Changed) -> None:
        message.stop()
        self.refresh_text()

    def on_resize(self) -> None:
        self.refresh_text()

    def refresh_text(self) -> None:
        """The title and the sentence under the comparison."""
        cmp = self.compare
        width = self.size.width or 80
        title = self.query_one("#compare-title", Static)
        summary = self.query_one("#compare-summary", Static)
        if cmp.slot is None or cmp.comparison is None:
            title.update(Text(" Ranks side by side", style="bold"))
            summary.update(Text(cmp.message, style="dim"))
            return
        title.update(Text(title_text(cmp.slot, cmp.slot_index, cmp.steps, cmp.align, width), style="bold"))
        c = cmp.comparison
        text = Text(step_sentence(c))
        if c.worst_op:
            text.append(
                f"\n{MARKER} = rank {c.first_rank} reaching {op_label(c.worst_op)} {c.worst_at} · "
                "Enter: this rank in the timeline",
                style="dim",
            )
        summary.update(text)

    # ---- actions -------------------------------------------------------------------------------------------
    def _ready(self) -> bool:
        if self.compare.slot is None:
            self.notify("Still comparing ranks; try again in a moment.", timeout=2)
            return False
        return True

    def action_step(self, delta: int) -> None:
        """Previous / next step."""
        if self._ready() and not self.compare.step(delta):
            what = "window" if self.compare.steps == 0 else "step"
            self.notify(f"No {'next' if delta > 0 else 'previous'} {what}.", timeout=2)

    def action_zoom(self, factor: float) -> None:
        """Zoom in or out around the middle of the window."""
        if self._ready():
            self.compare.zoom(factor)

    def action_pan(self, fraction: float) -> None:
        """Pan by a fraction of the window."""
        if self._ready():
            self.compare.pan(fraction)

    def action_line(self, delta: int) -> None:
        """Move the line cursor."""
        self.compare.move_line(delta)

    def action_next_rank(self, delta: int) -> None:
        """Move the line cursor to the next / previous rank's header."""
        if not self.compare.next_rank(delta):
            self.notify(f"No {'next' if delta > 0 else 'previous'} rank.", timeout=2)

    def action_fit(self) -> None:
        """Show the whole step."""
        if self._ready():
            self.compare.fit()

    def action_toggle_align(self) -> None:
        """Each rank's step start ↔ the common clock."""
        if self._ready():
            self.compare.toggle_align()  # the title line says which

    def action_open_rank(self) -> None:
        """Close and show the rank under the cursor in this step on the timeline."""
        cmp = self.compare
        rank = cmp.current_rank
        if cmp.slot is None or rank is None or rank not in cmp.slot.spans:
            self.notify("Move to a rank that has this step (j/k).", timeout=2)
            return
        start, end, _ = cmp.slot.spans[rank]
        fig = cmp.comparison.figures.get(rank) if cmp.comparison is not None else None
        cursor = fig.marker_ns if fig is not None and start <= fig.marker_ns < end else (start + end) // 2
        self.dismiss(ShowRank(rank, start, end, cursor))

    def action_close(self) -> None:
        """Back to the timeline."""
        self.dismiss(None)

    def help_sections(self) -> list[HelpSection]:
        """Help generated from this screen's bindings."""
        return help_sections(self, COMPARE_BINDINGS)

    def action_help(self) -> None:
        """The keys of this view."""
        self.app.push_screen(HelpScreen(self.help_sections()))
