"""The Diff panel: where the difference between the two runs comes from, one row per item (GPU busy / idle,
kernel, launching operator or range, annotation range, idle cause, copy kind), category by category, each ranked
by its per-step change, with its noise, its share of the step change and its exact whole-run delta. Rows whose
change is beyond their noise are bold; ``/`` filters."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rich.text import Text

from gputop_trace.analysis.diff.attribution import CATEGORY_LABELS, DiffRow
from gputop_trace.presentation.kernel_labels import kernel_label
from gputop_trace.safe_text import clean
from gputop_trace.tui.widgets.table_panel import Column, TablePanel
from gputop_trace.units import format_ns

_SHORT_CATEGORY = {
    "gpu": "GPU",
    "kernel": "kernel",
    "launcher": "launcher",
    "range": "range",
    "idle_cause": "idle",
    "copy": "copy",
}


def signed_ns(ns: float) -> str:
    """A change in ns with its sign (``+1.2 ms``, ``-30 µs``, ``±0 ns``)."""
    if not math.isfinite(ns):
        return "—"
    r = round(ns)
    return ("+" if r > 0 else "-" if r < 0 else "±") + format_ns(abs(r))


class DiffPanel(TablePanel):
    """The ranked attribution rows of a comparison."""

    title = "Diff panel"

    def columns(self) -> Sequence[Column]:
        return (
            Column("what", 8, right=False),
            Column("Δ/step", 9),
            Column("± noise", 8, min_panel=70),
            Column("share", 6),
            Column("BASE", 8, min_panel=100),
            Column("TEST", 8, min_panel=100),
            Column("Δ total", 9, min_panel=120),
            Column("count", 11, min_panel=140),
            Column("name", None, right=False),
        )

    def cells(self, item: Any) -> Sequence[Text | str]:
        r: DiffRow = item
        name = clean(kernel_label(r.name) if r.category == "kernel" else r.name)
        if r.status:
            name += f" [{r.status}]"
        style = "bold" if r.beyond_noise else ""
        share = f"{r.share_pct:+.0f}%" if math.isfinite(r.share_pct) else "—"
        count = f"{r.base_count}→{r.test_count}" if r.base_count != r.test_count else f"{r.base_count:,}"
        return (
            _SHORT_CATEGORY.get(r.category, r.category),
            Text(signed_ns(r.step_delta_ns), style=style),
            format_ns(round(r.noise_ns)) if math.isfinite(r.noise_ns) else "—",
            share,
            format_ns(round(r.step_base_ns)),
            format_ns(round(r.step_test_ns)),
            signed_ns(r.delta_ns),
            count,
            Text(name, style=style),
        )

    def matches(self, item: Any, pattern: Any) -> bool:
        r: DiffRow = item
        return bool(pattern.search(f"{r.name} {CATEGORY_LABELS.get(r.category, '')} {r.status}"))


def panel_rows(rows: dict[str, list[DiffRow]], per_category: int | None = None) -> list[DiffRow]:
    """The rows the panel lists: category by category, each ranked, rows that are zero in both runs left out."""
    out: list[DiffRow] = []
    for cat_rows in rows.values():
        kept = [r for r in cat_rows if r.base_count or r.test_count or r.base_ns or r.test_ns]
        out.extend(kept if per_category is None else kept[:per_category])
    return out
