"""Panel 8, Ops: the operator table of ``gputop-trace ops`` (``torch.profiler``'s ``key_averages()``: calls, CPU
and device time, self and total), sortable (``o`` cycles the column, ``r`` reverses) and filterable (``/``), with
the highlighted operator's calls by input shape beside it. Enter shows an instance of the operator on the
timeline; Enter again walks to the next."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.widgets import Static

from gputop_trace.analysis.operators.table import OpRow
from gputop_trace.safe_text import clean
from gputop_trace.tui.keymap import SORT_BINDINGS
from gputop_trace.tui.messages import JumpToEvent
from gputop_trace.tui.view.ops_view import SORTS, OpsView, shape_breakdown, sort_key
from gputop_trace.tui.widgets.table_panel import Column, SortedTablePanel
from gputop_trace.units import format_ns, format_si


class OpsTable(SortedTablePanel):
    """The sortable, filterable operator table."""

    title = "Ops panel"

    BINDINGS: ClassVar[list[BindingType]] = SORT_BINDINGS

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.sort = "self CPU"
        self.descending = True
        self.view: OpsView | None = None
        self.walk: dict[str, int] = {}  # operator name -> the instance Enter showed last

    def columns(self) -> Sequence[Column]:
        arrow = "▼" if self.descending else "▲"

        def lab(text: str) -> str:
            return f"{text}{arrow}" if self.sort == text else text

        dev = self.view is not None and self.view.has_device
        flops = self.view is not None and any(r.flops for r in self.view.rows)
        cols = [Column(lab("self CPU"), 9), Column(lab("CPU"), 9, min_panel=70)]
        if dev:
            cols += [Column(lab("self dev"), 9), Column(lab("device"), 9, min_panel=60)]
        cols.append(Column(lab("calls"), 7))
        if flops:
            cols.append(Column(lab("FLOPs"), 10, min_panel=110))
        cols.append(Column(lab("name"), None, right=False))
        return cols

    def cells(self, item: Any) -> Sequence[Text | str]:
        r: OpRow = item
        dev = self.view is not None and self.view.has_device
        flops = self.view is not None and any(x.flops for x in self.view.rows)
        out: list[Text | str] = [format_ns(r.self_cpu_ns), format_ns(r.cpu_total_ns)]
        if dev:
            out += [format_ns(r.self_device_ns), format_ns(r.device_total_ns)]
        out.append(f"{r.count:,}")
        if flops:
            out.append(format_si(r.flops, "FLOP") if r.flops else "-")
        out.append(Text(clean(r.name)))
        return out

    def matches(self, item: Any, pattern: re.Pattern[str]) -> bool:
        r: OpRow = item
        return bool(pattern.search(r.name))

    sorts = SORTS

    def sort_value(self, name: str) -> Any:
        return sort_key(name)

    def sort_note(self) -> str:
        return self._note()

    def _note(self, extra: str = "") -> str:
        arrow = "↓" if self.descending else "↑"
        count = f"{len(self.items):,} operators"
        if self.pattern is not None:
            count = f"{len(self.shown):,} of {count} match"
        tail = extra or "o sort · r reverse · Enter show (again: next call)"
        return f"{count} · by {self.sort} {arrow} · {tail}"

    def refill(self) -> None:
        """Redraw the rows, and the note's count with them."""
        super().refill()
        if self.items and not self.note.has_class("-message"):
            self.note.update(Text(self._note()))

    def activate(self, item: Any) -> None:
        """Show the next instance of the operator (the first on the first Enter) on the timeline."""
        r: OpRow = item
        n = len(r.events)
        if not n:
            return
        i = (self.walk.get(r.name, -1) + 1) % n
        self.walk[r.name] = i
        self.note.update(Text(self._note(f"call {i + 1:,} of {n:,} of {clean(r.name)} · Enter: next")))
        self.post_message(JumpToEvent(int(r.events[i]), rezoom=True))

    def highlighted(self, item: Any) -> None:
        parent = self.parent
        if isinstance(parent, OpsPanel):
            parent.show_shapes(item)


class OpsPanel(Horizontal):
    """The operator table and, beside it, the highlighted operator's calls by input shape."""

    DEFAULT_CSS = """
    OpsPanel { height: 1fr; }
    OpsPanel > OpsTable { width: 1fr; }
    OpsPanel > #ops-shapes {
        width: 34%; min-width: 26; max-width: 56; height: 1fr; padding: 0 1; border-left: solid $panel;
    }
    """

    title = "Ops"

    def compose(self) -> ComposeResult:
        yield OpsTable(id="ops-table")
        yield Static(Text("building the operator table…", style="dim"), id="ops-shapes")

    @property
    def table_panel(self) -> OpsTable:
        return self.query_one(OpsTable)

    def focus_table(self) -> None:
        self.table_panel.focus_table()

    def leave_filter(self) -> bool:
        return self.table_panel.leave_filter()

    def set_view(self, view: OpsView) -> None:
        """Fill the table from :func:`~gputop_trace.tui.view.ops_view.ops_view`."""
        tp = self.table_panel
        tp.view = view
        if not view.rows:
            tp.set_message(
                "No framework operators in this profile: record with torch.profiler (cpu_op events), or run under "
                "torch.autograd.profiler.emit_nvtx for Nsight Systems."
            )
            self.query_one("#ops-shapes", Static).update("")
            return
        tp.items = tp.sorted_rows(view.rows)
        tp.set_items(tp.items, tp._note())
        self.show_shapes(tp.current_item())

    def set_error(self, text: str) -> None:
        self.table_panel.set_message(Text(text, style="red"))

    def show_shapes(self, row: OpRow | None) -> None:
        """Draw the shape breakdown of ``row``."""
        box = self.query_one("#ops-shapes", Static)
        view = self.table_panel.view
        if view is None:
            return
        box.update(shape_breakdown(view, row, max(16, (box.size.width or 30) - 2), max(4, box.size.height or 10)))

    def on_resize(self) -> None:
        """Redraw the breakdown for the new room (its first drawing may come before the layout)."""
        self.show_shapes(self.table_panel.current_item())
