"""Compact Rich tables for the analysis commands: no outer edge, no vertical rules, so they fit 80 columns."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table


def compact_table(title: str | None = None, **kwargs: Any) -> Table:
    """A table with a header rule only (``box.SIMPLE_HEAD``), left-aligned title, no padding at the edges."""
    return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, **kwargs)


def add_number_columns(table: Table, *headers: str, width: int = 7) -> None:
    """Right-aligned, unwrapped columns that never shrink below ``width`` (or their header)."""
    for h in headers:
        table.add_column(h, justify="right", no_wrap=True, min_width=max(width, len(h)))
