"""The help screen, generated from the key bindings active where ``?`` was pressed, plus the colour legend."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gputop_trace.tui.theme import theme_palette
from gputop_trace.tui.view.palette import LEGEND, Overlay, Role, style_key


@dataclass(frozen=True)
class HelpEntry:
    """One line of help: the keys (as shown), what they do, and the action they run."""

    keys: str
    description: str
    action: str
    raw_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class HelpSection:
    """Help entries of one pane or screen."""

    title: str
    entries: tuple[HelpEntry, ...]


class HelpScreen(ModalScreen[None]):
    """Key bindings of the focused pane, then the screen's and the app's, then the colours."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("q", "close", "Close", show=False),
        Binding("question_mark", "close", "Close", show=False),
        Binding("j,down", "scroll(1)", "Scroll", show=False),
        Binding("k,up", "scroll(-1)", "Scroll", show=False),
    ]

    def __init__(self, sections: list[HelpSection]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-scroll"):
            yield Static(Text("gputop-trace keys  (Esc closes; j/k scroll)", style="bold"))
            for sec in self.sections:
                table = Table(title=sec.title, title_justify="left", show_header=False, box=None, expand=True)
                table.add_column("keys", no_wrap=True, style="bold", width=16)
                table.add_column("action", ratio=1)
                for e in sec.entries:
                    table.add_row(Text(e.keys), Text(e.description))
                yield Static(table, classes="help-section")
            yield Static(self._legend())

    def _legend(self) -> Table:
        pal = theme_palette(self.app.current_theme)  # the colours as the timeline draws them
        table = Table(title="Colours", title_justify="left", show_header=False, box=None, expand=True)
        table.add_column("swatch", no_wrap=True, width=14)
        table.add_column("meaning", ratio=1)
        for sid, meaning in LEGEND.items():
            table.add_row(Text("  ████  ", style=pal.sample(sid)) if not pal.mono else Text("  ────  "), meaning)
        for overlay, meaning in (
            (Overlay.PATH, "on the critical path (p shows it; n / N walk it)"),
            (Overlay.PATH_IDLE, "idle time on the critical path"),
        ):
            table.add_row(Text("  path  ", style=pal.style(style_key(0, int(Role.BOX), int(overlay)))), meaning)
        notes = (
            "Cells: a box is one event (name and duration when they fit; ▏ separates touching boxes); a block's "
            "height is the busy fraction of the cell; ▉ means several events fill it; ╌ marks an idle gap. "
            "The selected event is in reverse video, its launch partner highlighted; ▼ on the ruler is the cursor."
        )
        table.add_row("", Text(notes, style="dim"))
        return table

    def action_close(self) -> None:
        self.dismiss(None)

    def action_scroll(self, lines: int) -> None:
        self.query_one("#help-scroll", VerticalScroll).scroll_relative(y=lines, animate=False)
