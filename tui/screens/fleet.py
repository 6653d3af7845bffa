"""The fleet screen: one row per rank of a ``gputop-trace fleet --out`` Parquet file, sorted by a chosen column,
with a rank × step heat strip, and Enter to open a rank's own trace.

The heat strip shows each of a rank's steps against the median rank's duration of the same step (the k-th
recorded step of every rank): a higher block and a warmer colour is a slower step. With more steps than cells,
consecutive steps share a cell, which shows the slowest of them. Failed ranks are listed last, with their error.

The screen is self-contained: build it with :meth:`FleetScreen.from_parquet` (or from a
:class:`~gputop_trace.fleet.parquet.FleetFile`) and push it; Enter posts :class:`FleetScreen.OpenRank` (and calls
``on_open`` when given) with the rank's trace path.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Static

from gputop_trace.analysis.gaps.causes import CAUSE_SHORT
from gputop_trace.fleet.parquet import FleetFile, read_fleet
from gputop_trace.safe_text import clean
from gputop_trace.tui.theme import theme_palette
from gputop_trace.tui.view.palette import Palette
from gputop_trace.units import format_ns, plural

#: Heat levels: step time / median rank's, upper bounds of each level (the last level is open).
HEAT_BOUNDS = (0.97, 1.03, 1.10, 1.25)
HEAT_GLYPHS = ("▁", "▂", "▄", "▆", "█")
#: the theme variable of each heat level's colour (tui/view/palette.py: THEME_COLOURS)
HEAT_COLOURS = tuple(f"gputop-heat-{lv}" for lv in range(len(HEAT_GLYPHS)))


@dataclass(frozen=True)
class SortKey:
    """A column the table can be sorted by: its label, the row value (None sorts last) and whether larger
    values come first by default."""

    label: str
    value: Callable[[dict[str, Any]], float | None]
    descending: bool = True


SORT_KEYS: tuple[SortKey, ...] = (
    SortKey("late", lambda r: r.get("arrival_late_ns")),
    SortKey("step", lambda r: r.get("mean_step_ns")),
    SortKey("made wait", lambda r: r.get("imposed_wait_ns")),
    SortKey("waiting", lambda r: r.get("collective_wait_ns")),
    SortKey("idle", lambda r: r.get("idle_ns")),
    SortKey("busy", lambda r: r.get("busy_pct")),
    SortKey("rank", lambda r: r.get("rank"), descending=False),
)


def step_ratios(rows: Sequence[dict[str, Any]]) -> list[np.ndarray]:
    """Per row: each step's duration over the median rank's duration of the same step (NaN where unknown)."""
    n = max((len(r.get("step_ns") or []) for r in rows), default=0)
    if not n:
        return [np.zeros(0) for _ in rows]
    m = np.full((len(rows), n), np.nan)
    for i, r in enumerate(rows):
        v = r.get("step_ns") or []
        m[i, : len(v)] = v
    with np.errstate(all="ignore"):
        med = np.nanmedian(m, axis=0) if len(rows) else np.full(n, np.nan)
        ratio = m / med
    return [ratio[i, : len(rows[i].get("step_ns") or [])] for i in range(len(rows))]


def heat_levels(ratio: np.ndarray, width: int, *, cells_per_step: int = 1) -> np.ndarray:
    """Heat level (0–4) of each of ``width`` cells for one rank's step ratios; -1 for cells past its last step.

    With more steps than cells, a cell takes the slowest of the steps it covers; with room to spare, each step
    takes ``cells_per_step`` cells (the screen passes the same number for every rank, so steps line up)."""
    if width <= 0:
        return np.zeros(0, dtype=np.int64)
    out = np.full(width, -1, dtype=np.int64)
    n = len(ratio)
    if not n:
        return out
    cells = min(width, n)
    starts = (np.arange(cells, dtype=np.int64) * n) // cells  # strictly increasing: n >= cells
    worst = np.maximum.reduceat(np.nan_to_num(ratio, nan=1.0), starts)
    lv = np.searchsorted(np.array(HEAT_BOUNDS), worst, side="right")
    k = max(1, min(cells_per_step, width // cells)) if cells == n else 1
    out[: cells * k] = np.repeat(lv, k)
    return out


def heat_text(levels: np.ndarray, palette: Palette) -> Text:
    """The strip as text: one glyph per cell, in ``palette``'s heat colours (none in monochrome)."""
    t = Text(no_wrap=True, overflow="crop")
    for lv in levels.tolist():
        if lv < 0:
            t.append(" ")
        else:
            t.append(HEAT_GLYPHS[lv], style=palette.colour(HEAT_COLOURS[lv]))
    return t


class FleetScreen(Screen[None]):
    """Per-rank table of a fleet run, sortable, with a rank × step heat strip; Enter opens the rank's trace."""

    class OpenRank(Message):
        """Enter on a rank: open its trace (``path``) in the timeline."""

        def __init__(self, path: str, rank: int) -> None:
            super().__init__()
            self.path = path
            self.rank = rank

    DEFAULT_CSS = """
    FleetScreen { layout: vertical; }
    FleetScreen > #fleet-title { height: 1; padding: 0 1; text-style: bold; }
    FleetScreen > #fleet-findings {
        height: auto; max-height: 3; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis;
    }
    FleetScreen > DataTable { height: 1fr; }
    FleetScreen > #fleet-keys { height: 1; padding: 0 1; color: $text-muted; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "sort(1)", "Sort by next column"),
        Binding("S", "sort(-1)", "Sort by previous column", show=False),
        Binding("r", "reverse", "Reverse the order"),
        Binding("j", "row(1)", "Next rank", show=False),
        Binding("k", "row(-1)", "Previous rank", show=False),
        Binding("escape", "close", "Back"),
    ]

    def __init__(
        self,
        fleet: FleetFile,
        *,
        on_open: Callable[[str, int], None] | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        self.fleet = fleet
        self.on_open = on_open
        has_late = any(r.get("arrival_late_ns") is not None for r in fleet.rows)
        self.sort_index = 0 if has_late else 1
        self.descending = SORT_KEYS[self.sort_index].descending
        self.order: list[dict[str, Any]] = []
        ratios = step_ratios(fleet.rows)
        self._ratio = {id(r): q for r, q in zip(fleet.rows, ratios, strict=True)}
        self._max_steps = max((len(q) for q in ratios), default=0)
        self._width = 0

    @classmethod
    def from_parquet(cls, path: str, **kwargs: Any) -> FleetScreen:
        """A screen for a fleet Parquet file (raises :class:`~gputop_trace.errors.TraceError` for other files)."""
        return cls(read_fleet(path), **kwargs)

    # composition -------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(id="fleet-title")
        yield Static(id="fleet-findings")
        yield DataTable(cursor_type="row", zebra_stripes=False)
        yield Static(self._keys_text(), id="fleet-keys")

    def on_mount(self) -> None:
        self._fill_findings()
        self._refill()
        self.query_one(DataTable).focus()

    def on_resize(self) -> None:
        if self._strip_width() != self._width:
            self._refill()

    # content -----------------------------------------------------------------------------------------------
    def _title_text(self) -> Text:
        fl = self.fleet.doc.get("fleet", {})
        med = fl.get("median_step_ns")
        key = SORT_KEYS[self.sort_index]
        parts = [
            f"{os.path.basename(self.fleet.path)}: {plural(len(self.fleet.rows), 'rank')}",
            f"{len(self.fleet.errors)} failed",
        ]
        if med is not None:
            parts.append(f"median step {format_ns(med)}")
        parts.append(f"sorted by {key.label} {'↓' if self.descending else '↑'}")
        return Text(clean(" · ".join(parts)), no_wrap=True, overflow="ellipsis")

    def _fill_findings(self) -> None:
        findings = self.fleet.findings[:3]
        text = Text(no_wrap=True, overflow="ellipsis")
        for i, f in enumerate(findings):
            if i:
                text.append("\n")
            text.append(f"{f.get('priority', i + 1)}. ", style="bold")
            text.append(clean(str(f.get("title", ""))))
        if not findings:
            text.append("No rank stands out.", style="dim")
        self.query_one("#fleet-findings", Static).update(text)

    @property
    def palette(self) -> Palette:
        """The colours of the app's theme (none under ``NO_COLOR``: the monochrome theme)."""
        return theme_palette(self.app.current_theme)

    def _keys_text(self) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append("Enter open rank  s sort  r reverse  Esc back  heat: step vs median rank ")
        for lv, g in enumerate(HEAT_GLYPHS):
            t.append(g, style=self.palette.colour(HEAT_COLOURS[lv]))
        t.append(" (≤-3% … ≥+25%)")
        return t

    #: (label, width, right-aligned, narrowest screen that shows it)
    _COLUMNS: ClassVar[tuple[tuple[str, int, bool, int], ...]] = (
        ("rank", 5, True, 0),
        ("step", 8, True, 0),
        ("busy", 4, True, 0),
        ("top idle", 14, False, 0),
        ("waiting", 8, True, 100),
        ("late", 8, True, 0),
        ("z", 5, True, 100),
        ("made wait", 9, True, 0),
    )

    def _screen_width(self) -> int:
        return self.size.width or (self.app.size.width if self.is_attached else 80)

    def _visible(self) -> list[tuple[str, int, bool, int]]:
        width = self._screen_width()
        return [c for c in self._COLUMNS if width >= c[3]]

    def _strip_width(self) -> int:
        """Cells left for the heat strip (and a failed rank's error) after the other columns."""
        fixed = sum(c[1] + 2 for c in self._visible())
        return max(4, self._screen_width() - fixed - 4)

    def _sorted(self) -> list[dict[str, Any]]:
        key = SORT_KEYS[self.sort_index]

        def k(r: dict[str, Any]) -> tuple[int, float, int]:
            v = key.value(r)
            if v is None:
                return (1, 0.0, int(r["rank"]))
            return (0, -float(v) if self.descending else float(v), int(r["rank"]))

        return sorted(self.fleet.rows, key=k)

    def _refill(self) -> None:
        table: DataTable[Any] = self.query_one(DataTable)
        keep = self.current_row()
        self._width = self._strip_width()
        cols = self._visible()
        table.clear(columns=True)
        for label, w, right, _ in cols:
            table.add_column(Text(label.rjust(w) if right else label), width=w, key=label)
        table.add_column(Text("steps (heat)"), width=self._width, key="steps")
        self.order = self._sorted()
        for r in self.order:
            table.add_row(*self._cells(r, cols), key=f"{r['rank']}:{r['path']}")
        for e in self.fleet.errors:
            table.add_row(*self._error_cells(e, cols), key=f"error:{e['rank']}:{e['path']}")
        self.query_one("#fleet-title", Static).update(self._title_text())
        if keep is not None and keep in self.order:
            table.move_cursor(row=self.order.index(keep), animate=False)

    def _values(self, r: dict[str, Any]) -> dict[str, str]:
        causes = sorted((r.get("idle_by_cause") or {}).items(), key=lambda kv: -(kv[1] or {}).get("total_ns", 0))
        cause = "-"
        if causes and (causes[0][1] or {}).get("total_ns"):
            cause = CAUSE_SHORT.get(causes[0][0], causes[0][0])
        z = r.get("arrival_z")
        flagged = bool(r.get("late_outlier") or r.get("step_outlier"))
        return {
            "rank": f"{'!' if flagged else ''}{r['rank']}",
            "step": format_ns(r["mean_step_ns"]) if r.get("mean_step_ns") is not None else "-",
            "busy": f"{r.get('busy_pct') or 0:.0f}%",
            "top idle": cause,
            "waiting": format_ns(r.get("collective_wait_ns") or 0),
            "late": format_ns(r["arrival_late_ns"]) if r.get("arrival_late_ns") is not None else "-",
            "z": "-" if z is None else (f"{z:.0f}" if abs(z) >= 100 else f"{z:.1f}"),
            "made wait": format_ns(r.get("imposed_wait_ns") or 0),
        }

    def _cells(self, r: dict[str, Any], cols: list[tuple[str, int, bool, int]]) -> list[Text]:
        flagged = bool(r.get("late_outlier") or r.get("step_outlier"))
        values = self._values(r)
        palette = self.palette
        straggler = palette.text_style("gputop-straggler", bold=True) if flagged else ""
        cells = []
        for label, w, right, _ in cols:
            v = values[label][:w]
            style = straggler if label == "rank" else ""
            cells.append(Text(v.rjust(w) if right else v, style=style, no_wrap=True, overflow="ellipsis"))
        per_step = max(1, min(3, self._width // max(1, self._max_steps)))
        levels = heat_levels(self._ratio.get(id(r), np.zeros(0)), self._width, cells_per_step=per_step)
        return [*cells, heat_text(levels, palette)]

    def _error_cells(self, e: dict[str, Any], cols: list[tuple[str, int, bool, int]]) -> list[Text]:
        style = self.palette.text_style("gputop-straggler")
        cells = [
            Text(
                str(e["rank"]).rjust(w) if label == "rank" else ("-".rjust(w) if right else "-"),
                style=style if label == "rank" else "",
            )
            for label, w, right, _ in cols
        ]
        cells.append(
            Text("failed: " + clean(str(e.get("error") or "")), style=style, no_wrap=True, overflow="ellipsis")
        )
        return cells

    # rows and actions --------------------------------------------------------------------------------------
    def current_row(self) -> dict[str, Any] | None:
        """The analysed rank under the cursor (None on a failed rank or an empty table)."""
        table: DataTable[Any] = self.query_one(DataTable)
        i = table.cursor_row
        return self.order[i] if 0 <= i < len(self.order) and table.row_count else None

    def _current_error(self) -> dict[str, Any] | None:
        i = self.query_one(DataTable).cursor_row - len(self.order)
        return self.fleet.errors[i] if 0 <= i < len(self.fleet.errors) else None

    def action_sort(self, step: int) -> None:
        """Sort by the next (or previous) column, in its natural direction."""
        self.sort_index = (self.sort_index + step) % len(SORT_KEYS)
        self.descending = SORT_KEYS[self.sort_index].descending
        self._refill()

    def action_reverse(self) -> None:
        """Reverse the order."""
        self.descending = not self.descending
        self._refill()

    def action_row(self, step: int) -> None:
        """Move the cursor."""
        table: DataTable[Any] = self.query_one(DataTable)
        table.move_cursor(row=max(0, min(table.row_count - 1, table.cursor_row + step)), animate=False)

    def action_close(self) -> None:
        """Leave the screen (or the app, when it is the only screen)."""
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()
        else:
            self.app.exit()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        row = self.current_row()
        if row is None:
            err = self._current_error()
            if err is not None:
                self.notify(clean(f"rank {err['rank']} was not analysed: {err.get('error')}"), severity="warning")
            return
        self.post_message(self.OpenRank(str(row["path"]), int(row["rank"])))
        if self.on_open is not None:
            self.on_open(str(row["path"]), int(row["rank"]))
