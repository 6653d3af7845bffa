"""The Diff view (``gputop-trace diff --view BASE TEST``, ``gputop-trace view --diff BASE TEST``): the verdict on
step time and what weakens the comparison on top, the Diff panel (where the difference comes from, ranked) in the
middle, and the same step of both runs stacked on one time axis below. ``[`` / ``]`` step through the compared
steps; ``R`` gives the stacking the whole screen and back; ``tab`` moves between the panel and the stacking."""

from __future__ import annotations

import os
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Static

from gputop_trace.analysis.diff.compare import RunDiff
from gputop_trace.safe_text import clean
from gputop_trace.tui.keymap import FIT, ZOOM_PAN, help_sections, nav_bindings
from gputop_trace.tui.screens.help import HelpScreen, HelpSection
from gputop_trace.tui.theme import theme_palette
from gputop_trace.tui.view.diff_stack import stack_title, stacked_step
from gputop_trace.tui.view.palette import Palette
from gputop_trace.tui.view.timeline_data import TimelineData
from gputop_trace.tui.view.timeline_math import fit_label
from gputop_trace.tui.widgets.diff_panel import DiffPanel, panel_rows
from gputop_trace.tui.widgets.diff_stack import DiffStack
from gputop_trace.tui.widgets.footer import FittingFooter
from gputop_trace.units import plural

DIFF_BINDINGS: list[BindingType] = [
    Binding("left_square_bracket", "step(-1)", "Prev step", key_display="[", tooltip="The previous compared step"),
    Binding("right_square_bracket", "step(1)", "Next step", key_display="]", tooltip="The next compared step"),
    Binding("R", "toggle_stack", "Stack", tooltip="The stacked step of both runs on the whole screen, and back"),
    *nav_bindings(
        ZOOM_PAN,
        {
            "zoom(0.5)": ("Zoom in", "Zoom the stacking in"),
            "zoom(2.0)": ("Zoom out", "Zoom the stacking out"),
            "pan(-0.25)": ("Pan left", "Pan the stacking left"),
            "pan(0.25)": ("Pan right", "Pan the stacking right"),
        },
    ),
    *nav_bindings(FIT, {"fit": ("Fit the step", "Show the whole step of both runs")}),
    Binding("tab", "switch_focus", "Panel/stack", show=False, tooltip="Move between the Diff panel and the stacking"),
    Binding("question_mark", "help", "Help", key_display="?", tooltip="This help"),
]


def short_path(path: str) -> str:
    """A path as the title shows it: its last two parts (``h200_ddp_2gpu/rank0.pt.trace.json.gz``)."""
    parts = [p for p in path.replace(os.sep, "/").split("/") if p]
    return "/".join(parts[-2:]) if parts else path


def _verdict_style(kind: str, palette: Palette) -> str:
    """The verdict's style: bold, in the colour of a faster, slower or unclear TEST (none when identical)."""
    if kind == "identical":
        return "bold"
    return palette.text_style(_VERDICT_COLOURS.get(kind, "gputop-verdict-unclear"), bold=True)


#: verdict kind -> the theme variable of its colour
_VERDICT_COLOURS = {"faster": "gputop-verdict-faster", "slower": "gputop-verdict-slower"}


class DiffScreen(Screen[None]):
    """Two runs compared."""

    HELP_TITLE: ClassVar[str] = "Two runs compared"

    BINDINGS: ClassVar[list[BindingType]] = DIFF_BINDINGS

    def __init__(self, diff: RunDiff, data: tuple[TimelineData, TimelineData], paths: tuple[str, str]) -> None:
        super().__init__()
        self.diff = diff
        self.data = data
        self.paths = paths
        self.pair = 0

    def compose(self) -> ComposeResult:
        yield Static("", id="diff-title")
        yield Static("", id="diff-verdict")
        yield DiffPanel(id="diff-panel")
        yield Static("", id="stack-title")
        yield DiffStack(self.data, id="diff-stack")
        yield FittingFooter()

    @property
    def panel(self) -> DiffPanel:
        return self.query_one(DiffPanel)

    @property
    def stack(self) -> DiffStack:
        return self.query_one(DiffStack)

    def on_mount(self) -> None:
        d = self.diff
        self.query_one("#diff-title", Static).update(
            Text(
                f" Diff · BASE {clean(short_path(self.paths[0]))} → TEST {clean(short_path(self.paths[1]))}",
                style="bold",
            )
        )
        text = Text(d.verdict.sentence, style=_verdict_style(d.verdict.kind, theme_palette(self.app.current_theme)))
        for x in d.comparability.differences:
            text.append(f"\n! {x.what}: BASE {clean(x.base)}, TEST {clean(x.test)}: {x.weakens}", style="yellow")
        self.query_one("#diff-verdict", Static).update(text)
        # the panel's own table is composed when the panel mounts, which can come after this screen's Mount
        self.call_after_refresh(self._fill)

    def _fill(self) -> None:
        """Fill the Diff panel and stack the first compared pair (once the panel's table exists)."""
        d = self.diff
        rows = panel_rows(d.rows)
        per = "whole span" if d.pairs.matched_by == "span" else f"mean of {plural(len(d.pairs), 'compared step')}"
        note = f"{plural(len(rows), 'row')} · Δ/step: {per} · noise: 95 % interval · bold: beyond noise · / filter"
        if rows:
            self.panel.set_items(rows, note)
        else:
            self.panel.set_message("Nothing to attribute: neither run has GPU work, ranges or copies.")
        self.show_pair(0)
        self.panel.focus_table()

    def show_pair(self, index: int) -> None:
        """Stack compared pair ``index``."""
        title = self.query_one("#stack-title", Static)
        n = len(self.diff.pairs)
        if not n:
            title.update(Text(" Same step, both runs · no step is in both runs", style="bold"))
            return
        self.pair = index
        step = stacked_step(self.diff, self.data, index)
        self.stack.show(step)
        keys = " · [ ] step · R stack · Esc/q quit"
        width = self.size.width or 80
        text = " " + stack_title(step, n)
        title.update(Text(text + keys if len(text + keys) <= width else fit_label(text, width), style="bold"))

    # ---- actions -------------------------------------------------------------------------------------------
    def action_step(self, delta: int) -> None:
        """Previous / next compared step."""
        nxt = self.pair + delta
        if not 0 <= nxt < len(self.diff.pairs):
            self.notify(f"No {'next' if delta > 0 else 'previous'} compared step.", timeout=2)
            return
        self.show_pair(nxt)

    def action_toggle_stack(self) -> None:
        """The stacking on the whole screen, and back."""
        self.toggle_class("-stack-only")
        if self.has_class("-stack-only"):
            self.stack.focus()
        else:
            self.panel.focus_table()

    def action_zoom(self, factor: float) -> None:
        """Zoom the stacking."""
        self.stack.zoom(factor)

    def action_pan(self, fraction: float) -> None:
        """Pan the stacking."""
        self.stack.pan(fraction)

    def action_fit(self) -> None:
        """Show the whole step of both runs."""
        self.stack.fit()

    def action_switch_focus(self) -> None:
        """Panel ↔ stacking."""
        if self.stack.has_focus or self.has_class("-stack-only"):
            self.remove_class("-stack-only")
            self.panel.focus_table()
        else:
            self.stack.focus()

    def help_sections(self) -> list[HelpSection]:
        """Help generated from this screen's bindings."""
        return help_sections(self, DIFF_BINDINGS)

    def action_help(self) -> None:
        """The keys of this view."""
        self.app.push_screen(HelpScreen(self.help_sections()))
