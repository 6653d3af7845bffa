"""Panel 9, Critical path: for one step at a time (``[`` / ``]``), the step time, the critical path's length, its
breakdown by category (ns and % of the path), and the items on the path, most time first, with the what-if
column (the step's path length if the item ran 2× faster or took no time, and what that saves). Enter on an item
shows its first segment on the timeline (with the path drawn, as ``p`` does)."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.timer import Timer
from textual.widgets import DataTable, Input, Static

from gputop_trace.analysis.critical_path.path import StepPath
from gputop_trace.safe_text import clean
from gputop_trace.tui.view.critical_path_view import (
    ItemRow,
    breakdown_lines,
    category_title,
    first_segment_of,
    format_pct,
    item_rows,
    pct,
    step_line,
)
from gputop_trace.tui.widgets.table_panel import Column, TablePanel
from gputop_trace.units import format_ns, plural


class PathStepChosen(Message):
    """The panel moved to step ``index`` (an index into the list of step paths)."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index


class PathSegmentChosen(Message):
    """Enter on an item: show segment ``segment`` of the step path ``index`` on the timeline."""

    def __init__(self, index: int, segment: int) -> None:
        super().__init__()
        self.index = index
        self.segment = segment


def _ns(value: int | None) -> str:
    return format_ns(value) if value is not None else "–"


class CriticalPathPanel(TablePanel):
    """The critical path of one step: breakdown above, items with their what-if below."""

    DEFAULT_CSS = """
    CriticalPathPanel > .path-head { height: auto; max-height: 4; padding: 0 1; text-wrap: nowrap; }
    CriticalPathPanel > .row-detail {
        height: auto; max-height: 2; padding: 0 1; color: $text-muted;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left_square_bracket", "step(-1)", "Previous step", tooltip="Critical path of the previous step"),
        Binding("right_square_bracket", "step(1)", "Next step", tooltip="Critical path of the next step"),
    ]

    title: ClassVar[str] = "Critical path panel"  # type: ignore[misc]
    filter_hint: ClassVar[str] = "filter items (regex) — / to type, Esc to leave"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.paths: list[StepPath] = []
        self.index = 0
        self.multi_rank = False
        self._since = 0.0
        self._clock: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Static("", classes="path-head")
        yield Input(placeholder=self.filter_hint, classes="panel-filter")
        yield DataTable(cursor_type="row", zebra_stripes=False, show_cursor=True)
        yield Static("", classes="row-detail")
        yield Static("", classes="panel-note")

    @property
    def path(self) -> StepPath | None:
        """The step path shown."""
        return self.paths[self.index] if 0 <= self.index < len(self.paths) else None

    # ---- table ---------------------------------------------------------------------------------------------
    def columns(self) -> Sequence[Column]:
        return (
            Column("on path", 9),
            Column("share", 6),
            Column("what", 10, right=False, min_panel=70),
            Column("2×: step", 9, min_panel=120),
            Column("2× saves", 9),
            Column("gone: step", 10, min_panel=120),
            Column("gone saves", 10),
            Column("item", None, right=False, distinct=True),
        )

    def cells(self, item: Any) -> Sequence[Text | str]:
        r: ItemRow = item
        w = r.what_if
        return (
            format_ns(r.on_path_ns),
            format_pct(r.share_pct),
            category_title(r.category),
            _ns(w.if_2x_ns if w is not None else None),
            _ns(r.saving_2x_ns),
            _ns(w.if_gone_ns if w is not None else None),
            _ns(r.saving_gone_ns),
            Text(r.short or clean(r.label)),
        )

    def matches(self, item: Any, pattern: re.Pattern[str]) -> bool:
        r: ItemRow = item
        return bool(pattern.search(r.label) or pattern.search(r.short) or pattern.search(category_title(r.category)))

    def row_detail(self, item: ItemRow) -> str:
        """What the highlighted item's what-if says, in words."""
        name = clean(item.label)
        w = item.what_if
        on = f"{name} ({category_title(item.category)}): {format_ns(item.on_path_ns)} on the path"
        if w is None:
            return f"{on}. No what-if: it is worked out for the top items on the path (not idle time)."
        s2, sg = item.saving_2x_ns or 0, item.saving_gone_ns or 0
        return (
            f"{on}. 2× faster: path {format_ns(w.if_2x_ns)} (saves {format_ns(s2)}, "
            f"{format_pct(pct(s2, w.step_ns))}); gone: {format_ns(w.if_gone_ns)} (saves {format_ns(sg)}, "
            f"{format_pct(pct(sg, w.step_ns))}). Saves less than its time on the path when another chain takes over."
        )

    def highlighted(self, item: Any) -> None:
        self.query_one(".row-detail", Static).update(Text(self.row_detail(item)))

    def activate(self, item: Any) -> None:
        r: ItemRow = item
        path = self.path
        if path is None:
            return
        seg = first_segment_of(path, r.category, r.label)
        if seg >= 0:
            self.post_message(PathSegmentChosen(self.index, seg))

    # ---- filling -------------------------------------------------------------------------------------------
    def show_paths(self, paths: list[StepPath], index: int = 0) -> None:
        """Every step's path (from the worker); show step ``index``."""
        self._stop_clock()
        self.paths = list(paths)
        self.multi_rank = len({p.rank for p in paths}) > 1
        if not paths:
            self.query_one(".path-head", Static).update("")
            self.query_one(".row-detail", Static).update("")
            self.set_message(
                "No step to analyse: the trace has no GPU work the critical path could follow (or nothing at all)."
            )
            return
        self.show_step(index)

    def show_step(self, index: int) -> None:
        """Show step ``index`` (clamped)."""
        if not self.paths:
            return
        self.index = max(0, min(index, len(self.paths) - 1))
        self._fill()

    def _fill(self) -> None:
        path = self.path
        if path is None:
            return
        width = max(20, (self.size.width or (self.app.size.width if self.is_attached else 80)) - 2)
        head = Text(step_line(path, self.index, len(self.paths), multi_rank=self.multi_rank, width=width), style="bold")
        head.truncate(width, overflow="ellipsis")
        for line in breakdown_lines(path, width):
            head.append("\n" + line)
        if path.notes:
            said = Text("\n" + "; ".join(clean(n) for n in path.notes), style="dim")
            said.truncate(width + 1, overflow="ellipsis")
            head.append_text(said)
        self.query_one(".path-head", Static).update(head)
        rows = item_rows(path)
        if not rows:
            self.query_one(".row-detail", Static).update("")
            self.set_message("Nothing on this step's path.")
            return
        more = len(path.by_item) - len(rows)
        note = f"{plural(len(path.by_item), 'item')}" + (f" (the top {len(rows):,} shown)" if more > 0 else "")
        self.set_items(rows, f"{note} · Enter shows it on the timeline · [ ] step · p path on the timeline · / filter")
        first = self.current_item()
        if first is not None:
            self.highlighted(first)

    def show_computing(self) -> None:
        """Say the paths are being worked out, with the seconds it has taken so far (once a second)."""
        self._since = time.monotonic()
        self._stop_clock()
        self._clock = self.set_interval(1.0, self._say_computing)
        self._say_computing()

    def _say_computing(self) -> None:
        secs = int(time.monotonic() - self._since)
        took = f" ({secs} s so far)" if secs else ""
        self.query_one(".path-head", Static).update(Text(f"critical path: working out every step's path…{took}"))
        self.set_message(
            Text("The breakdown and the what-if appear here when done; the timeline stays usable.", style="dim")
        )

    def _stop_clock(self) -> None:
        if self._clock is not None:
            self._clock.stop()
            self._clock = None

    def show_error(self, text: str) -> None:
        """The analysis failed: say why."""
        self._stop_clock()
        self.query_one(".path-head", Static).update("")
        self.set_message(Text(text, style="red"))

    def on_resize(self) -> None:
        if self.path is not None:
            self._fill()

    # ---- keys ----------------------------------------------------------------------------------------------
    def action_step(self, delta: int) -> None:
        """``[`` / ``]``: the previous / next step's path."""
        if not self.paths:
            return
        new = max(0, min(len(self.paths) - 1, self.index + delta))
        if new == self.index:
            self.app.notify(f"No {'next' if delta > 0 else 'previous'} step.", timeout=2)
            return
        self.show_step(new)
        self.post_message(PathStepChosen(self.index))
