"""The command line's console: Rich's, with the text it lays out wrapped so that a figure stays with its unit and a
count with its noun (``29.0 ms``, ``12 kernels``: never ``12`` at the end of one line and ``kernels`` at the start
of the next), by :class:`~gputop_trace.presentation.figure_wrap.FigureText`, the wrap the app uses too.

Rich joins the texts given to one ``print`` call into a plain ``Text`` (losing the subclass), so a text printed
alone is handed over inside a small renderable, and the texts inside tables, groups, padding and panels are
swapped for :class:`FigureText` before printing; strings Rich renders itself (a table's string cells) go through
:meth:`FigureConsole.render_str`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from gputop_trace.presentation.figure_wrap import FigureText, figure_text


class _Whole:
    """A :class:`FigureText` that Rich renders as it is (not joined into a plain ``Text``)."""

    def __init__(self, text: FigureText) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[FigureText]:
        yield self.text


def figures(renderable: Any) -> Any:
    """``renderable`` with its texts (its own, or its cells', parts' or content's) as :class:`FigureText`."""
    if isinstance(renderable, Text):
        return figure_text(renderable)
    if isinstance(renderable, Table):
        for column in renderable.columns:
            column._cells[:] = [figures(c) for c in column._cells]
    elif isinstance(renderable, Group):
        parts = renderable.renderables  # the group's own list
        parts[:] = [figures(r) for r in parts]
    elif isinstance(renderable, (Padding, Panel)):
        renderable.renderable = figures(renderable.renderable)
    return renderable


class FigureConsole(Console):
    """A Rich console whose texts wrap as :class:`FigureText` does (see the module docstring)."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return figure_text(super().render_str(text, **kwargs))

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if len(objects) == 1 and isinstance(objects[0], Text) and not kwargs:
            text: RenderableType = _Whole(figure_text(objects[0]))
            super().print(text)
            return
        super().print(*(o if isinstance(o, (str, Text)) else figures(o) for o in objects), **kwargs)
