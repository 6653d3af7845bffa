"""A ``Static`` whose text never breaks a line between a figure and its unit or a count and its noun (``29.0 ms``,
``12 kernels``; ``presentation/figure_wrap.py``), for the panels' notes, summaries and the findings' details."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.content import Content
from textual.widgets import Static

from gputop_trace.tui.widgets.details_pane import FiguresKeptWhole


class FigureStatic(Static):
    """``Static`` whose Rich texts wrap with figures and counts kept whole (a text marked ``no_wrap``, a string
    or anything else is shown as ``Static`` shows it)."""

    def update(self, content: Any = "", *, layout: bool = True) -> None:
        if isinstance(content, Text) and not content.no_wrap and content.plain:
            content = FiguresKeptWhole(Content.from_rich_text(content, console=self.app.console))
        super().update(content, layout=layout)
