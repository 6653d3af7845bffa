"""Panel 1, Kernels: one row per kernel name and GPU, sortable (``o`` cycles the column, ``r`` reverses) and
filterable (``/``), with the duration histogram of the highlighted kernel. Enter shows its first launch on the
timeline; n / N then walk its launches."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.widgets import Static

from gputop_trace.analysis.kernels import KernelRow
from gputop_trace.analysis.profiler_ranges import profiler_lanes
from gputop_trace.presentation.kernel_labels import (
    FAMILY_LABEL,
    kernel_display_name,
    kernel_family,
    kernel_label,
    kernel_labels,
)
from gputop_trace.safe_text import clean
from gputop_trace.tui.keymap import SORT_BINDINGS
from gputop_trace.tui.messages import JumpToEvent
from gputop_trace.tui.view.histogram import histogram_text
from gputop_trace.tui.widgets.table_panel import Column, SortedTablePanel
from gputop_trace.units import format_ns, plural

SORTS: tuple[str, ...] = ("total", "count", "mean", "max", "name")


class KernelTable(SortedTablePanel):
    """The sortable, filterable kernel table."""

    title = "Kernels panel"

    BINDINGS: ClassVar[list[BindingType]] = SORT_BINDINGS

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.sort = "total"
        self.descending = True
        self.multi_rank = False
        self.multi_gpu = False
        self.noun = "GPU"  # what the kernels' devices are called (``MTIA`` ...), for the device column
        self._names: dict[str, str] = {}

    def display_name(self, row: KernelRow) -> str:
        got = self._names.get(row.name)
        if got is None:
            got = self._names[row.name] = clean(kernel_label(row.name))
        return got

    def columns(self) -> Sequence[Column]:
        arrow = "▼" if self.descending else "▲"

        def lab(name: str, text: str) -> str:
            return f"{text}{arrow}" if self.sort == name else text

        return (
            Column("%", 5),
            Column(lab("total", "total"), 9),
            Column(lab("count", "count"), 7),
            Column(lab("mean", "mean"), 9, min_panel=70),
            Column(lab("max", "max"), 9, min_panel=90),
            Column("family", 11, right=False, min_panel=110),
            # with several GPUs one kernel has a row per GPU: the column that tells them apart always shows
            Column(self.noun, 5, min_panel=0 if self.multi_gpu else 100),
            Column(lab("name", "kernel"), None, right=False, distinct=True),
        )

    def cells(self, item: Any) -> Sequence[Text | str]:
        r: KernelRow = item
        gpu = f"{r.rank}:{r.device}" if self.multi_rank else str(r.device)
        return (
            f"{r.pct:.1f}",
            format_ns(r.total_ns),
            f"{r.count:,}",
            format_ns(r.mean_ns),
            format_ns(r.max_ns),
            FAMILY_LABEL[kernel_family(r.name)],
            gpu,
            Text(self.display_name(r)),
        )

    def matches(self, item: Any, pattern: re.Pattern[str]) -> bool:
        r: KernelRow = item
        return bool(pattern.search(r.name) or pattern.search(self.display_name(r)))

    sorts = SORTS

    def sort_value(self, name: str) -> Any:
        return {
            "total": lambda r: r.total_ns,
            "count": lambda r: r.count,
            "mean": lambda r: r.mean_ns,
            "max": lambda r: r.max_ns,
            "name": lambda r: self.display_name(r).lower(),
        }[name]

    def sort_note(self) -> str:
        return self._note()

    def _note(self) -> str:
        arrow = "↓" if self.descending else "↑"
        count = plural(len(self.items), "kernel")
        if self.pattern is not None:
            count = f"{len(self.shown):,} of {count} match"
        return f"{count} · by {self.sort} {arrow} · o sort · r reverse · Enter show"

    def refill(self) -> None:
        """Redraw the rows, and the note's count with them (a filter changes how many are shown)."""
        super().refill()
        if self.items and not self.note.has_class("-message"):
            self.note.update(Text(self._note()))

    def activate(self, item: Any) -> None:
        r: KernelRow = item
        if len(r.events):
            self.post_message(JumpToEvent(int(r.events[0]), rezoom=True))

    def highlighted(self, item: Any) -> None:
        parent = self.parent
        if isinstance(parent, KernelsPanel):
            parent.show_histogram(item)


class KernelsPanel(Horizontal):
    """The kernel table and, beside it, the duration histogram of the highlighted kernel."""

    DEFAULT_CSS = """
    KernelsPanel { height: 1fr; }
    KernelsPanel > KernelTable { width: 1fr; }
    KernelsPanel > #kernel-histogram {
        width: 30%; min-width: 24; max-width: 44; padding: 0 1; border-left: solid $panel;
    }
    """

    title = "Kernels"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.trace: Any = None

    def compose(self) -> ComposeResult:
        yield KernelTable(id="kernel-table")
        yield Static(Text("computing the kernel table…", style="dim"), id="kernel-histogram")

    @property
    def table_panel(self) -> KernelTable:
        return self.query_one(KernelTable)

    def focus_table(self) -> None:
        self.table_panel.focus_table()

    def leave_filter(self) -> bool:
        return self.table_panel.leave_filter()

    def set_rows(self, trace: Any, rows: list[KernelRow]) -> None:
        """Fill the table (rows from ``kernel_table``)."""
        self.trace = trace
        tp = self.table_panel
        tp.multi_rank = len({r.rank for r in rows}) > 1
        tp.multi_gpu = len({(r.rank, r.device) for r in rows}) > 1
        tp.noun = trace.device_words().noun
        if not rows:
            tp.set_message(
                "No kernel activity: a CUPTI range-profiler trace (one range per kernel with hardware counters; "
                "`gputop-trace kernels` lists them). Re-record with ProfilerActivity.CUDA for kernel times."
                if profiler_lanes(trace)
                else f"This trace has no kernels: no {tp.noun} kernel activity was recorded."
            )
            self.query_one("#kernel-histogram", Static).update("")
            return
        # labels that would read alike for different kernels carry their template arguments (kernel_labels)
        tp._names = {n: clean(label) for n, label in kernel_labels(r.name for r in rows).items()}
        tp.items = list(rows)
        tp.set_items(tp.sorted_rows(rows), tp._note())
        self.show_histogram(tp.current_item())

    def set_error(self, text: str) -> None:
        self.table_panel.set_message(Text(text, style="red"))

    def show_histogram(self, row: KernelRow | None) -> None:
        """Draw the duration histogram of ``row``."""
        box = self.query_one("#kernel-histogram", Static)
        if row is None or self.trace is None:
            box.update("")
            return
        durs = self.trace.dur_ns[row.events]
        width = max(16, (box.size.width or 28) - 2)
        title = clean(kernel_display_name(row.name))
        box.update(histogram_text(durs, width=width, title=title if len(title) <= width else title[: width - 1] + "…"))
