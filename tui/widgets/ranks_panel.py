"""Panel 7, Ranks: one row per rank (steps, mean step, GPU busy, collective time, exposed, hidden share, waiting,
times last) under the straggler verdict, sortable (``o`` cycles the column, ``r`` reverses). Enter shows that
rank's lanes on the timeline; ``R`` compares the ranks side by side."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.widgets import DataTable, Static

from gputop_trace.analysis.ranks.collectives import OP_LABEL
from gputop_trace.analysis.ranks.table import RankRow
from gputop_trace.tui.keymap import SORT_BINDINGS
from gputop_trace.tui.messages import JumpToRank
from gputop_trace.tui.view.ranks_view import RanksView
from gputop_trace.tui.widgets.figure_static import FigureStatic
from gputop_trace.tui.widgets.table_panel import Column, TablePanel
from gputop_trace.units import format_bytes, format_ns, format_range, plural

SORTS: tuple[str, ...] = ("rank", "step", "busy", "collective", "exposed", "waiting", "last")


def mean_step_ns(r: RankRow) -> float | None:
    """A rank's mean step time (ns), None without steps."""
    return sum(r.step_ns) / len(r.step_ns) if r.step_ns else None


_KEYS: dict[str, Callable[[RankRow], float]] = {
    "rank": lambda r: r.rank,
    "step": lambda r: mean_step_ns(r) or 0.0,
    "busy": lambda r: r.busy_ns,
    "collective": lambda r: r.collective_ns,
    "exposed": lambda r: r.exposed_collective_ns,
    "waiting": lambda r: r.collective_wait_ns,
    "last": lambda r: r.times_last,
}


class RanksPanel(TablePanel):
    """The per-rank table with the straggler verdict above it."""

    title: ClassVar[str] = "Ranks panel"  # type: ignore[misc]
    has_filter: ClassVar[bool] = False

    DEFAULT_CSS = """
    RanksPanel > #ranks-verdict { height: auto; max-height: 5; padding: 0 1; }
    RanksPanel > DataTable { height: 1fr; }
    RanksPanel > #rank-detail {
        height: 1; padding: 0 1; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = SORT_BINDINGS

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.sort = "rank"
        self.descending = False
        self.view: RanksView | None = None

    def compose(self) -> ComposeResult:
        yield FigureStatic("", id="ranks-verdict")
        yield DataTable(cursor_type="row", zebra_stripes=False, show_cursor=True)
        yield FigureStatic("", id="rank-detail")
        yield FigureStatic("", classes="panel-note")

    def columns(self) -> Sequence[Column]:
        arrow = "▼" if self.descending else "▲"

        def lab(name: str, text: str) -> str:
            return f"{text}{arrow}" if self.sort == name else text

        return (
            Column(lab("rank", "rank"), 5),
            Column("steps", 5),
            Column(lab("step", "step"), 8),
            Column(lab("busy", self.say("GPU busy")), 9),
            Column(lab("collective", "collect."), 9),
            Column(lab("exposed", "exposed"), 8),
            Column("hidden", 6),
            Column(lab("waiting", "waiting"), 8),
            Column(lab("last", "last"), 5),
            Column("", None, right=False, min_panel=110),
        )

    def cells(self, item: Any) -> Sequence[Text | str]:
        r: RankRow = item
        mean = mean_step_ns(r)
        straggler = self.view is not None and self.view.straggler == r.rank
        note = Text("")
        if straggler:
            note = Text(f"straggler: last at {plural(r.times_last, 'collective')}", style="yellow")
        elif r.collective_wait_ns and self.view is not None and self.view.straggler is not None:
            s = self.view.straggler
            # only the waiting for the straggler (with more ranks, some of it is for others that came last)
            waited = next((w.waited_for.get(s, 0) for w in self.view.report.ranks if w.rank == r.rank), 0)
            if waited:
                note = Text(f"waits {format_ns(waited)} for rank {s}")
        return (
            Text(f"{r.rank}{' ⚑' if straggler else ''}", style="bold yellow" if straggler else ""),
            str(r.steps),
            format_ns(mean) if mean is not None else "–",
            format_ns(r.busy_ns) if r.devices else "–",
            format_ns(r.collective_ns) if r.collectives else "–",
            format_ns(r.exposed_collective_ns) if r.collectives else "–",
            f"{r.hidden_collective_pct:.0f}%" if r.collectives else "–",
            format_ns(r.collective_wait_ns) if r.collectives else "–",
            str(r.times_last) if r.collectives else "–",
            note,
        )

    def sorted_rows(self, rows: Sequence[RankRow]) -> list[RankRow]:
        """The rows in the panel's order (ties by rank)."""
        key = _KEYS[self.sort]
        return sorted(sorted(rows, key=lambda r: r.rank), key=key, reverse=self.descending)

    def action_cycle_sort(self) -> None:
        """Sort by the next column (rank, step, GPU busy, collective, exposed, waiting, last)."""
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        self.descending = self.sort != "rank"
        self._resort()

    def action_reverse_sort(self) -> None:
        """Reverse the sort order."""
        self.descending = not self.descending
        self._resort()

    def _resort(self) -> None:
        self.items = self.sorted_rows(self.items)
        self.set_items(self.items, self._note())
        self._detail_of_current()

    def _note(self) -> str:
        arrow = "↓" if self.descending else "↑"
        return (
            f"{plural(len(self.items), 'rank')} · by {self.sort} {arrow} · o sort · "
            "r reverse · Enter: its lanes · R: ranks side by side"
        )

    def row_detail(self, r: RankRow) -> str:
        """A line about the highlighted rank: GPUs, step spread, collectives by op."""
        devices = f"GPU{'s' if len(r.devices) != 1 else ''} {', '.join(map(str, r.devices)) or '–'}"
        parts = [f"rank {r.rank}: {self.say(devices)}"]
        if r.step_ns:
            spread = format_range(format_ns(min(r.step_ns)), format_ns(max(r.step_ns)), sep=" – ")
            parts.append(f"{plural(r.steps, 'step')} {spread}")
        parts.append(f"busy {format_ns(r.busy_ns)} of {format_ns(r.span_ns)}")
        for op, (n, total, nbytes) in r.by_op.items():
            size = f", {format_bytes(nbytes)}" if nbytes > 0 else ""
            parts.append(f"{OP_LABEL.get(op, op)} {n}× {format_ns(total)}{size}")
        if r.times_last:
            parts.append(f"late by {format_ns(r.late_median_ns)} median when last")
        return " · ".join(parts)

    def highlighted(self, item: Any) -> None:
        self.query_one("#rank-detail", Static).update(Text(self.row_detail(item)))

    def _detail_of_current(self) -> None:
        cur = self.current_item()
        if cur is not None:
            self.highlighted(cur)

    def activate(self, item: Any) -> None:
        r: RankRow = item
        self.post_message(JumpToRank(r.rank))

    def show(self, view: RanksView) -> None:
        """Fill the panel from the rank analysis."""
        self.view = view
        style = "yellow" if view.straggler is not None else ""
        self.query_one("#ranks-verdict", Static).update(Text(view.verdict, style=style))
        if not view.rows:
            self.set_message("No ranks: this trace holds no events.")
            return
        self.items = self.sorted_rows(view.rows)
        self.set_items(self.items, self._note())
        self._detail_of_current()

    def set_error(self, text: str) -> None:
        """The rank analysis failed."""
        self.query_one("#ranks-verdict", Static).update("")
        self.set_message(Text(text, style="red"))
