"""Panels 2–4: Gaps (GPU idle time and why, longest first), Transfers (copies, most exposed first, with the
flags and their fixes) and Ranges (annotation ranges with their GPU projection). Each has summary lines above a
filterable table; Enter shows the row's gap, copy or first range on the timeline."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Input, Static

from gputop_trace.analysis.gaps.detect import CAUSE_FIX
from gputop_trace.analysis.ranges import RangeRow
from gputop_trace.analysis.transfers import FLAG_FIX, FLAG_TITLES
from gputop_trace.safe_text import clean
from gputop_trace.tui.hosts import shown_trace
from gputop_trace.tui.messages import JumpToEvent, JumpToInterval
from gputop_trace.tui.view.analysis_views import MAX_ROWS, CopyItem, GapItem, cause_short, flag_short
from gputop_trace.tui.widgets.figure_static import FigureStatic
from gputop_trace.tui.widgets.table_panel import Column, TablePanel
from gputop_trace.units import format_bytes, format_ns, plural


class SummaryTablePanel(TablePanel):
    """A table panel with summary lines above the table."""

    DEFAULT_CSS = """
    SummaryTablePanel > .panel-summary {
        height: auto; max-height: 2; padding: 0 1; color: $text; text-wrap: nowrap; text-overflow: ellipsis;
    }
    SummaryTablePanel > .row-detail { height: auto; max-height: 2; padding: 0 1; color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        yield FigureStatic("", classes="panel-summary")
        if self.has_filter:
            yield Input(placeholder=self.filter_hint, classes="panel-filter")
        yield DataTable(cursor_type="row", zebra_stripes=False, show_cursor=True)
        yield FigureStatic("", classes="row-detail")
        yield FigureStatic("", classes="panel-note")

    def set_summary(self, lines: Sequence[str]) -> None:
        """The lines above the table, one each (cut at the edge, never wrapped, so the table stays visible)."""
        self.query_one(".panel-summary", Static).update(Text("\n".join(lines)))

    def row_detail(self, item: Any) -> str:
        """A sentence about the highlighted row (why, what to do), shown under the table."""
        return ""

    def highlighted(self, item: Any) -> None:
        self.query_one(".row-detail", Static).update(Text(self.row_detail(item)))

    def showing(self, shown: int, total: int, what: str, order: str) -> str:
        more = f" (the {shown:,} {order} of {total:,})" if total > shown else ""
        return f"{total:,} {what}{more} · Enter shows it on the timeline · / filter"


class GapsPanel(SummaryTablePanel):
    """GPU idle gaps the gap detector reported, longest first."""

    title: ClassVar[str] = "Gaps panel"  # type: ignore[misc]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.multi_rank = False
        self.noun = "GPU"  # what the gaps' devices are called (``MTIA`` ...), for the device column
        self.details: Any = None  # callable: Gap -> rows for the details pane

    def columns(self) -> Sequence[Column]:
        return (
            Column("idle", 9),
            Column("at", 11, min_panel=60),
            Column(self.noun, 5, min_panel=70),
            Column("cause", 14, right=False),
            Column("inside", 16, right=False, min_panel=90),
            Column("ended by", None, right=False, distinct=True),
        )

    def cells(self, item: Any) -> Sequence[Text | str]:
        it: GapItem = item
        g = it.gap
        return (
            format_ns(g.dur_ns),
            format_ns(g.start_ns, precision=5),
            f"{g.rank}:{g.device}" if self.multi_rank else str(g.device),
            cause_short(g.cause),
            clean(g.range_name or ""),
            Text(it.next_label),
        )

    def row_detail(self, item: Any) -> str:
        it: GapItem = item
        g = it.gap
        return f"{clean(g.detail)} Fix: {it.fix or CAUSE_FIX.get(g.cause, '')}"

    def matches(self, item: Any, pattern: re.Pattern[str]) -> bool:
        it: GapItem = item
        g = it.gap
        return bool(pattern.search(" ".join((g.cause, cause_short(g.cause), g.range_name or "", it.next_label))))

    def activate(self, item: Any) -> None:
        it: GapItem = item
        g = it.gap
        rows = self.details(g) if self.details else []
        self.post_message(
            JumpToInterval(
                g.start_ns,
                g.end_ns,
                rank=g.rank,
                device=g.device,
                label=f"idle {format_ns(g.dur_ns)} · {cause_short(g.cause)}",
                details=rows,
            )
        )

    def show(self, items: list[GapItem], total: int, summary: list[str]) -> None:
        self.multi_rank = len({it.gap.rank for it in items}) > 1
        nouns = {it.gap.words.noun for it in items}
        self.noun = nouns.pop() if len(nouns) == 1 else ("device" if nouns else "GPU")
        self.set_summary(summary)
        if not items:
            self.set_message("No idle gap on any GPU is as long as the threshold.")
            return
        self.set_items(items, self.showing(len(items), total, "gaps", "longest"))
        first = self.current_item()
        if first is not None:
            self.highlighted(first)


class TransfersPanel(SummaryTablePanel):
    """Every memcpy and memset, most exposed first (exposed: not hidden under a kernel on another stream)."""

    title: ClassVar[str] = "Transfers panel"  # type: ignore[misc]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.multi_rank = False

    def columns(self) -> Sequence[Column]:
        where = self.say("GPU/stream")
        return (
            Column("exposed", 9),
            Column("length", 9),
            Column("copy", 7, right=False),
            Column("size", 10),
            Column("host", 8, right=False, min_panel=70),
            Column(where, max(10, len(where)), min_panel=110),
            Column("at", 11, min_panel=130),
            Column("flags", None, right=False),
        )

    def cells(self, item: Any) -> Sequence[Text | str]:
        c: CopyItem = item
        where = f"{c.rank}:{c.device}/{c.stream}" if self.multi_rank else f"{c.device}/{c.stream}"
        flags = ", ".join(flag_short(f) for f in c.flags)
        if c.range_name:
            flags = f"{flags} · in {c.range_name}" if flags else f"in {c.range_name}"
        return (
            format_ns(c.exposed_ns) if c.exposed_ns else "hidden",
            format_ns(c.dur_ns),
            c.direction,
            format_bytes(c.bytes),
            c.host_memory,
            where,
            format_ns(c.start_ns, precision=5),
            Text(flags, style="yellow" if c.flags else ""),
        )

    def row_detail(self, item: Any) -> str:
        c: CopyItem = item
        if not c.flags:
            hidden = c.dur_ns - c.exposed_ns
            return (
                f"{c.direction} {format_bytes(c.bytes)}: {format_ns(hidden)} of {format_ns(c.dur_ns)} "
                "hidden under kernels on other streams."
            )
        return " ".join(f"{FLAG_TITLES.get(f, f)}: {FLAG_FIX.get(f, '')}" for f in c.flags)

    def activate(self, item: Any) -> None:
        c: CopyItem = item
        self.post_message(JumpToEvent(c.event, rezoom=True))

    def show(self, items: list[CopyItem], total: int, summary: list[str]) -> None:
        self.multi_rank = len({it.rank for it in items}) > 1
        self.set_summary(summary)
        if not items:
            self.set_message("This trace has no memcpy or memset.")
            return
        self.set_items(items, self.showing(len(items), total, "copies and memsets", "most exposed"))
        first = self.current_item()
        if first is not None:
            self.highlighted(first)


class RangesPanel(SummaryTablePanel):
    """Annotation ranges (NVTX, record_function, TraceAnnotation) by total time, with the GPU time of the work
    launched inside them."""

    title: ClassVar[str] = "Ranges panel"  # type: ignore[misc]
    #: how the autograd threads were tied to their forward threads ("" when there are none)
    autograd_via: str = ""

    def columns(self) -> Sequence[Column]:
        return (
            Column("total", 9),
            Column("count", 6),
            Column("mean", 9, min_panel=70),
            Column(self.say("GPU time"), 9),
            Column("max", 9, min_panel=110),
            Column("threads", 7, min_panel=120),
            Column("range", None, right=False, distinct=True),
        )

    def cells(self, item: Any) -> Sequence[Text | str]:
        r: RangeRow = item
        name = clean(r.name if not r.domain else f"{r.domain}:{r.name}")
        return (
            format_ns(r.total_ns),
            f"{r.count:,}",
            format_ns(r.mean_ns),
            format_ns(r.gpu_ns) if r.gpu_ops else "–",
            format_ns(r.max_ns),
            str(r.threads),
            Text(name),
        )

    def matches(self, item: Any, pattern: re.Pattern[str]) -> bool:
        r: RangeRow = item
        return bool(pattern.search(r.name) or pattern.search(r.domain))

    def activate(self, item: Any) -> None:
        r: RangeRow = item
        if len(r.events):
            self.post_message(JumpToEvent(int(r.events[0]), rezoom=True))

    def row_detail(self, item: Any) -> str:
        r: RangeRow = item
        if not r.gpu_ops:
            return f"{clean(r.name)}: " + self.say("no GPU work was launched inside it.")
        text = f"{clean(r.name)}: " + self.say(f"{format_ns(r.gpu_ns)} of GPU time from {plural(r.gpu_ops, 'GPU op')}")
        if r.gpu_ops_autograd:
            via = f" ({self.autograd_via})" if self.autograd_via else ""
            text += f"; {r.gpu_ops_autograd:,} launched by its autograd thread{via}"
        return text + "."

    def show(self, rows: list[RangeRow]) -> None:
        from gputop_trace.analysis.autograd import autograd_note, autograd_threads

        trace = shown_trace(self)
        threads = autograd_threads(trace) if trace is not None else {}
        vias = sorted({th.via for th in threads.values()})
        self.autograd_via = " and ".join(vias)
        lines = [
            self.say(
                "GPU time: the busy time of the GPU work launched inside the range (n / N then walk its instances)"
            )
        ]
        if trace is not None and threads:
            lines.append("Backward pass: " + "; ".join(clean(n) for n in autograd_note(trace, threads)))
        self.set_summary(lines)
        if not rows:
            self.set_message("This trace has no annotation ranges (NVTX, record_function or TraceAnnotation).")
            return
        shown = rows[:MAX_ROWS]
        self.set_items(shown, self.showing(len(shown), len(rows), "range names", "largest"))
