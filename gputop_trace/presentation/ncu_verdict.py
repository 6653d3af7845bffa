"""Rich renderables for the ncu drill-down: speed-of-light bars, a terminal roofline plot, stalls, occupancy,
rules, the explanation and warnings — shared by ``gputop-trace ncu`` (printed) and the app's Drill-down panel
(inside a Textual ``Static``). No Textual import; nothing is printed here.

Every renderable adapts to the width it is given (``options.max_width``): labels are cut with an ellipsis, never
wrapped; only the explanation and rule paragraphs wrap. Text from reports (kernel names, rule messages) goes
through :func:`gputop_trace.safe_text.clean` and ``rich.text.Text``, never markup.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.text import Text

from gputop_trace.analysis.ncu_diagnosis.launches import LaunchSpread
from gputop_trace.analysis.roofline.explain import format_intensity
from gputop_trace.analysis.roofline.verdict import KernelVerdict
from gputop_trace.ncu.runner import Guidance
from gputop_trace.safe_text import clean
from gputop_trace.units import format_ns, format_si

VERDICT_STYLE = {
    "compute-bound": "bold black on green",
    "memory-bound": "bold black on yellow",
    "latency-bound": "bold white on red",
    "unknown": "bold white on grey37",
}
POINT_STYLE = {"compute-bound": "bold green", "memory-bound": "bold yellow", "latency-bound": "bold red"}
TENSOR_NOTE = {"heavy": "heavy tensor-core use", "moderate": "moderate use", "light": "light use", "none": "idle"}
RULE_STYLE = {"ERR": "bold red", "WRN": "yellow", "OPT": "cyan", "INF": "dim", "NONE": "dim"}


def _pct(x: float) -> str:
    return "   -  " if math.isnan(x) else f"{x:5.1f}%"


def _fit(text: str, width: int) -> str:
    if width <= 0:
        return ""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


class PctBar:
    """One labelled percentage bar: ``label ██████░░░░  62.4%  note``. ``marker`` (0–100) draws a ``┃`` at that
    position (theoretical occupancy on the achieved-occupancy bar)."""

    def __init__(
        self,
        label: str,
        pct: float,
        note: str = "",
        *,
        label_width: int = 16,
        style: str = "cyan",
        marker: float | None = None,
    ) -> None:
        self.label = label
        self.pct = pct
        self.note = note
        self.label_width = label_width
        self.style = style
        self.marker = marker

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(self.label_width + 20, options.max_width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        lw = min(self.label_width, max(6, width // 4))
        note = f"  {self.note}" if self.note else ""
        bar_w = max(6, min(30, (width - lw - 9) // 2))
        text = Text(_fit(self.label, lw).ljust(lw) + " ", style="bold")
        if math.isnan(self.pct):
            text.append("·" * bar_w, style="grey37")
        else:
            filled = max(0, min(bar_w, round(bar_w * min(self.pct, 100.0) / 100.0)))
            cells = ["█"] * filled + ["░"] * (bar_w - filled)
            if self.marker is not None and not math.isnan(self.marker):
                pos = max(0, min(bar_w - 1, round(bar_w * self.marker / 100.0) - 1))
                cells[pos] = "┃"
            for ch in cells:
                text.append(ch, style=self.style if ch == "█" else ("bold white" if ch == "┃" else "grey37"))
        text.append(" " + _pct(self.pct))
        rest = width - text.cell_len
        if note and rest > 3:
            text.append(_fit(note, rest), style="dim")
        text.truncate(width)
        yield text


class RooflinePlot:
    """A log-log roofline in text cells: the memory roof (slope), the compute roof (flat), a dotted line at the
    ridge point and the kernel as ``●`` at (its arithmetic intensity, its achieved FLOP/s)."""

    def __init__(self, v: KernelVerdict, *, height: int = 9, max_width: int = 72) -> None:
        self.v = v
        self.height = max(5, height)
        self.max_width = max_width

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(30, min(options.max_width, self.max_width))

    def unavailable_reason(self) -> str:
        """Why no plot can be drawn (``""`` when it can)."""
        v = self.v
        if math.isnan(v.peak_flop_per_s) or math.isnan(v.peak_dram_bytes_per_s):
            return "roofline unavailable: the report has no peak figures for this GPU"
        if math.isnan(v.intensity) or math.isinf(v.intensity) or v.intensity <= 0:
            return "roofline unavailable: no FLOP or DRAM counts (profile with --set full)"
        if math.isnan(v.achieved_flop_per_s) or v.achieved_flop_per_s <= 0:
            return "roofline unavailable: no achieved FLOP rate"
        return ""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        reason = self.unavailable_reason()
        if reason:
            yield Text(_fit(reason, options.max_width), style="dim")
            return
        yield from self.lines(min(options.max_width, self.max_width))

    def lines(self, width: int) -> list[Text]:
        """The plot as text lines for a given total width (cells): the y labels (FLOP/s), the roofs and the
        kernel's point, the x axis and its labels (FLOP/byte)."""
        v = self.v
        ylab_w = 12
        axes = _Axes.around(v, max(16, width - ylab_w - 1), self.height)
        w, h = axes.width, axes.height
        grid = [[" "] * w for _ in range(h)]
        styles: list[list[str]] = [[""] * w for _ in range(h)]
        _draw_roofs(axes, v, grid, styles)
        _draw_point(axes, v, grid, styles)
        out: list[Text] = []
        top_label = format_si(v.peak_flop_per_s, "FLOP/s")
        bottom_label = format_si(axes.ymin, "FLOP/s")
        for r in range(h):
            lab = top_label if r == axes.row_of(v.peak_flop_per_s) else (bottom_label if r == h - 1 else "")
            t = Text(_fit(lab, ylab_w).rjust(ylab_w), style="dim")
            t.append("│", style="grey50")
            for c in range(w):
                t.append(grid[r][c], style=styles[r][c] or None)
            out.append(t)
        axis = Text(" " * ylab_w + "└" + "─" * w, style="grey50")
        out.append(axis)
        xl = Text(" " * (ylab_w + 1))
        xl.append(_x_labels(axes, v.ridge), style="dim")
        out.append(xl)
        return out


@dataclass(frozen=True)
class _Axes:
    """The roofline's log-log axes: ``width`` × ``height`` cells, arithmetic intensity ``lo`` to ``hi``
    (FLOP/byte) across, ``ymin`` to ``ymax`` (FLOP/s) up."""

    width: int
    height: int
    lo: float
    hi: float
    ymin: float
    ymax: float

    @staticmethod
    def around(v: KernelVerdict, width: int, height: int) -> _Axes:
        """Axes a decade wider than the kernel's intensity and the ridge on each side, up to 15 % above the
        compute roof and down to half the kernel's FLOP rate (or the memory roof at ``lo``)."""
        inten, ridge = v.intensity, v.ridge
        lo = 10 ** math.floor(math.log10(min(inten, ridge)) - 1)
        hi = 10 ** math.ceil(math.log10(max(inten, ridge)) + 1)
        ymax = v.peak_flop_per_s * 1.15
        ymin = min(v.achieved_flop_per_s / 2.0, lo * v.peak_dram_bytes_per_s)
        return _Axes(width, height, lo, hi, ymin, ymax)

    def col_of(self, x: float) -> int:
        """The column of intensity ``x`` (FLOP/byte)."""
        lo, hi, w = self.lo, self.hi, self.width
        return max(0, min(w - 1, round((math.log10(x) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * (w - 1))))

    def row_of(self, y: float) -> int:
        """The row of rate ``y`` (FLOP/s; row 0 at the top)."""
        ymin, ymax, h = self.ymin, self.ymax, self.height
        f = (math.log10(max(y, ymin)) - math.log10(ymin)) / (math.log10(ymax) - math.log10(ymin))
        return max(0, min(h - 1, h - 1 - round(f * (h - 1))))


def _draw_roofs(axes: _Axes, v: KernelVerdict, grid: list[list[str]], styles: list[list[str]]) -> None:
    """The memory roof (``╱``, joined by ``│`` where it climbs more than a row a column), the compute roof (``━``)
    and a dotted line (``┊``) down from the ridge point."""
    peak, bw = v.peak_flop_per_s, v.peak_dram_bytes_per_s
    w, h, lo, hi = axes.width, axes.height, axes.lo, axes.hi
    prev_row: int | None = None
    ridge_col = axes.col_of(v.ridge)
    for c in range(w):
        x = lo * (hi / lo) ** (c / (w - 1))
        r = axes.row_of(min(x * bw, peak))
        flat = x * bw >= peak
        grid[r][c] = "━" if flat else "╱"
        styles[r][c] = "bright_white"
        if prev_row is not None and abs(prev_row - r) > 1:
            for rr in range(min(prev_row, r) + 1, max(prev_row, r)):
                grid[rr][c] = "│"
                styles[rr][c] = "bright_white"
        prev_row = r
    for rr in range(axes.row_of(peak) + 1, h):
        if grid[rr][ridge_col] == " ":
            grid[rr][ridge_col] = "┊"
            styles[rr][ridge_col] = "grey50"


def _draw_point(axes: _Axes, v: KernelVerdict, grid: list[list[str]], styles: list[list[str]]) -> None:
    """The kernel as ``●`` at (its intensity, its FLOP rate), labelled ``this kernel`` at the first place around it
    where the label covers nothing."""
    w, h = axes.width, axes.height
    pc, pr = axes.col_of(v.intensity), axes.row_of(v.achieved_flop_per_s)
    grid[pr][pc] = "●"
    styles[pr][pc] = POINT_STYLE.get(v.verdict, "bold magenta")
    point_style = POINT_STYLE.get(v.verdict, "")
    name = "this kernel"
    candidates = [
        (pr, pc + 2, name),
        (pr, pc - len(name) - 1, name),
        (pr + 1, pc, "↑ " + name),
        (pr + 1, pc - len(name) - 1, name + " ↑"),
        (pr - 1, pc, "↓ " + name),
        (pr - 1, pc - len(name) - 1, name + " ↓"),
    ]
    for lr, start, text in candidates:
        if not (0 <= lr < h and start >= 0 and start + len(text) <= w):
            continue
        if all(grid[lr][i] == " " for i in range(start, start + len(text))):
            for i, ch in enumerate(text):
                grid[lr][start + i] = ch
                styles[lr][start + i] = point_style
            break


def _x_labels(axes: _Axes, ridge: float) -> str:
    """The x axis's labels in its width: ``lo`` at the left, ``hi FLOP/byte`` at the right, ``ridge …`` under the
    ridge point where it fits between them."""
    w = axes.width
    left, right = f"{format_intensity(axes.lo)}", f"{format_intensity(axes.hi)} FLOP/byte"
    ridge_txt = f"ridge {format_intensity(ridge)}"
    ridge_col = axes.col_of(ridge)
    line = [" "] * w
    for i, ch in enumerate(left[:w]):
        line[i] = ch
    start = max(0, w - len(right))
    for i, ch in enumerate(right[: w - start]):
        line[start + i] = ch
    rs = max(len(left) + 1, min(ridge_col - len(ridge_txt) // 2, start - len(ridge_txt) - 1))
    if rs >= len(left) + 1 and rs + len(ridge_txt) < start:
        for i, ch in enumerate(ridge_txt):
            line[rs + i] = ch
    return "".join(line)


def _kv(label: str, value: str, width: int = 16) -> Text:
    return Text(_fit(label, width).ljust(width) + " ", style="bold") + Text(clean(value))


def header(v: KernelVerdict) -> Group:
    """Kernel name, GPU, duration, launch, geometry."""
    k = v.kernel
    parts = [k.device_name or "GPU ?", format_ns(v.duration_ns) if not math.isnan(v.duration_ns) else "- ns"]
    if v.launch is not None:
        parts.append(f"launch {v.launch}")
    first = Text(clean(k.name or "?"), style="bold") + Text(clean("  ·  " + "  ·  ".join(parts)))
    first.no_wrap = True
    first.overflow = "ellipsis"
    lines: list[RenderableType] = [first]
    if k.demangled and k.demangled != k.name:
        full = Text(clean(k.demangled), style="dim", no_wrap=True, overflow="ellipsis")
        lines.append(full)
    geo = []
    if k.grid and k.block:
        geo.append(f"grid {k.grid[0]}×{k.grid[1]}×{k.grid[2]} · block {k.block[0]}×{k.block[1]}×{k.block[2]}")
    if v.registers is not None:
        geo.append(f"{v.registers} registers/thread")
    if geo:
        lines.append(Text(" · ".join(geo), style="dim", no_wrap=True, overflow="ellipsis"))
    return Group(*lines)


def verdict_line(v: KernelVerdict) -> Text:
    """``COMPUTE-BOUND`` badge and the figures it rests on."""
    t = Text(f" {v.verdict.upper()} ", style=VERDICT_STYLE.get(v.verdict, "bold"))
    bits = []
    if not math.isnan(v.intensity):
        bits.append(f"{format_intensity(v.intensity)} FLOP/B")
    if not math.isnan(v.ridge):
        bits.append(f"ridge {format_intensity(v.ridge)} FLOP/B ({v.precision})")
    if v.verdict_basis:
        bits.append(f"by {v.verdict_basis}")
    t.append("  " + " · ".join(bits))
    t.no_wrap = True
    t.overflow = "ellipsis"
    return t


def speed_of_light(v: KernelVerdict) -> Group:
    """SM %, memory %, DRAM % and tensor pipe as bars."""
    return Group(
        PctBar("SM throughput", v.sm_pct, "of peak", style="green"),
        PctBar("Memory", v.memory_pct, f"DRAM {_pct(v.dram_pct).strip()}", style="yellow"),
        PctBar("Tensor pipe", v.tensor_pipe_pct, TENSOR_NOTE.get(v.tensor_use, ""), style="magenta"),
    )


def occupancy_block(v: KernelVerdict) -> Group:
    """Achieved vs theoretical occupancy, the limiter, cache hit rates."""
    o = v.occupancy
    note = f"of {_pct(o.theoretical_pct).strip()} theoretical"
    if o.limiter not in ("none", "unknown"):
        note += f" · limit: {o.limiter}"
    return Group(
        PctBar("Occupancy", o.achieved_pct, note, style="cyan", marker=o.theoretical_pct),
        PctBar("L1 hit rate", v.l1_hit_pct, style="blue"),
        PctBar("L2 hit rate", v.l2_hit_pct, style="blue"),
    )


def stalls_block(v: KernelVerdict, top: int = 5) -> Group:
    """The top warp stall reasons, as bars of their share of cycles between issued instructions."""
    rows: list[RenderableType] = [Text("Warp stalls (share of cycles between issues)", style="bold underline")]
    if not v.stalls:
        rows.append(Text("no stall counters in this report (--set full collects them)", style="dim"))
    for s in v.stalls[:top]:
        rows.append(PctBar(s.label, s.share_pct, f"{s.cycles:.2f} cyc · {s.meaning}", style="red"))
    if not math.isnan(v.no_eligible_pct):
        rows.append(PctBar("no eligible warp", v.no_eligible_pct, "of active cycles", style="red"))
    return Group(*rows)


def explanation_block(v: KernelVerdict) -> Group:
    """The plain-words explanation (wrapping paragraphs)."""
    rows: list[RenderableType] = [Text("Why", style="bold underline")]
    rows.extend(Text(clean(p)) for p in v.explanation)
    return Group(*rows)


def rules_block(v: KernelVerdict, limit: int = 8) -> Group:
    """ncu's own rule results: type, rule, title, estimated speedup, message."""
    rows: list[RenderableType] = [Text("ncu rules", style="bold underline")]
    if not v.rules:
        rows.append(Text("none in this report", style="dim"))
    for r in v.rules[:limit]:
        head = Text(f"{clean(r.type):<3} ", style=RULE_STYLE.get(r.type, ""))
        head.append(clean(r.identifier), style="bold")
        if r.title:
            head.append(" · " + clean(r.title))
        if r.speedup_pct is not None and r.speedup_pct >= 0.05:
            head.append(
                f" · est. speedup {r.speedup_pct:.1f}%" + (f" ({clean(r.speedup_type)})" if r.speedup_type else "")
            )
        head.no_wrap = True
        head.overflow = "ellipsis"
        rows.append(head)
        rows.append(Padding(Text(clean(r.text), style="dim"), (0, 0, 0, 4)))
    if len(v.rules) > limit:
        rows.append(Text(f"… {len(v.rules) - limit} more", style="dim"))
    return Group(*rows)


def warnings_block(warnings: Iterable[str]) -> Group | None:
    """Yellow warning lines, or None when there are none."""
    ws = [w for w in warnings if w]
    if not ws:
        return None
    return Group(*[Text("⚠ " + clean(w), style="yellow") for w in ws])


def trust_block(v: KernelVerdict) -> Group | None:
    """How far the figures can be trusted (replay passes, atomics, pass-dependent disagreement), or None."""
    if not v.trust:
        return None
    return Group(
        *[
            Text(
                ("⚠ " if t.level == "warning" else "ⓘ ") + clean(t.text),
                style="yellow" if t.level == "warning" else "dim",
            )
            for t in v.trust
        ]
    )


def diagnosis_block(v: KernelVerdict) -> Group | None:
    """Spills, bank conflicts, coalescing (✗ a problem, ✓ fine) and the hottest source lines, or None."""
    if not v.diagnosis and not v.hot_lines:
        return None
    rows: list[RenderableType] = [Text("Diagnosis", style="bold underline")]
    for f in v.diagnosis:
        rows.append(Text(("✗ " if f.problem else "✓ ") + clean(f.text), style="red" if f.problem else "green"))
    if v.hot_lines:
        rows.append(Text("Hottest lines (share of warp-stall samples)", style="bold"))
        for h in v.hot_lines:
            line = Text(f"{h.share_pct:5.1f}%  {clean(h.line.address)}  ", style="dim")
            line.append(clean(h.line.source))
            line.no_wrap = True
            line.overflow = "ellipsis"
            rows.append(line)
    return Group(*rows)


def spread_table(s: LaunchSpread) -> Group:
    """Several launches of one kernel: min / median / max / spread of each figure, and the warning when they
    differ."""
    from rich.table import Table

    def fmt(x: float, unit: str) -> str:
        return format_ns(x) if unit == "ns" else _pct(x)

    table = Table(box=None, padding=(0, 2), show_edge=False)
    for col in ("figure", "min", "median", "max", "spread"):
        table.add_column(col, justify="left" if col == "figure" else "right")
    for f in s.figures:
        spread = "-" if math.isnan(f.rel_spread) else f"{f.rel_spread:.1%}"
        table.add_row(f.label, fmt(f.min, f.unit), fmt(f.median, f.unit), fmt(f.max, f.unit), spread)
    rows: list[RenderableType] = [table]
    if s.note is not None:
        rows.append(Text("⚠ " + clean(s.note.text), style="yellow"))
    return Group(*rows)


#: From this width on, the result is laid out in two columns (measures left, roofline and explanation right).
WIDE = 140


class VerdictView:
    """The whole drill-down result for one kernel. Below :data:`WIDE` columns: one column, top to bottom; from
    :data:`WIDE` on, the bars and stalls on the left and the roofline and explanation on the right."""

    def __init__(self, v: KernelVerdict, *, extra_warnings: Sequence[str] = (), plot_height: int = 9) -> None:
        self.v = v
        self.extra_warnings = tuple(extra_warnings)
        self.plot_height = plot_height

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        v = self.v
        top: list[RenderableType] = [header(v), verdict_line(v)]
        warn = warnings_block([*v.warnings, *self.extra_warnings])
        if warn is not None:
            top.append(warn)
        trust = trust_block(v)
        if trust is not None:
            top.append(trust)
        diag = diagnosis_block(v)
        diagnosis: list[RenderableType] = [Text(""), diag] if diag is not None else []
        measures: list[RenderableType] = [speed_of_light(v), occupancy_block(v), Text(""), stalls_block(v)]
        roofline: list[RenderableType] = [
            Text("Roofline", style="bold underline"),
            RooflinePlot(v, height=self.plot_height),
        ]
        if options.max_width >= WIDE:
            from rich.table import Table

            grid = Table.grid(expand=True, padding=(0, 2))
            grid.add_column(ratio=1)
            grid.add_column(ratio=1)
            grid.add_row(Group(*measures), Group(*roofline, Text(""), explanation_block(v)))
            yield Group(*top, Text(""), grid, *diagnosis, Text(""), rules_block(v))
            return
        yield Group(
            *top,
            Text(""),
            speed_of_light(v),
            occupancy_block(v),
            Text(""),
            *roofline,
            Text(""),
            explanation_block(v),
            *diagnosis,
            Text(""),
            stalls_block(v),
            Text(""),
            rules_block(v),
        )


def render_verdict(v: KernelVerdict, *, extra_warnings: Sequence[str] = (), plot_height: int = 9) -> VerdictView:
    """The whole drill-down result for one kernel (see :class:`VerdictView`)."""
    return VerdictView(v, extra_warnings=extra_warnings, plot_height=plot_height)


def render_guidance(g: Guidance, *, list_kernels: bool = True) -> Group:
    """A failed run: title, what to do, supporting lines, ncu's list of kernels (unless ``list_kernels`` is
    False: the app shows them in a list of its own)."""
    parts: list[RenderableType] = [
        Text("✗ " + clean(g.title), style="bold red"),
        Text(clean(g.text)),
    ]
    if g.available_kernels and list_kernels:
        parts.append(Text("Kernels ncu saw:", style="bold"))
        parts.extend(
            Text(f"  {i + 1}. {clean(n)}", no_wrap=True, overflow="ellipsis") for i, n in enumerate(g.available_kernels)
        )
    if g.details:
        parts.append(Text("Last lines:", style="bold"))
        parts.extend(Text("  " + clean(d), style="dim", no_wrap=True, overflow="ellipsis") for d in g.details[-12:])
    return Group(*parts)


__all__ = [
    "PctBar",
    "RooflinePlot",
    "VerdictView",
    "header",
    "render_guidance",
    "render_verdict",
    "spread_table",
]
