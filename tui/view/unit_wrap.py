"""Where to break a line of the details pane so that a figure and its unit stay on one line (``29.0 ms``, never
``29.0`` at the end of one line and ``ms`` at the start of the next). Textual-free: Rich's own word wrap, told
that the space between a number and its unit is not a place to break; ``widgets/details_pane.py`` draws the
pane's text with it.

A no-break space would not do: Rich and Textual break lines at any ``\\s``, U+00A0 included."""

from __future__ import annotations

import re

from rich._wrap import divide_line
from rich.console import Console, JustifyMethod, OverflowMethod
from rich.containers import Lines
from rich.text import Text

#: the units the app writes after a figure (``units.format_ns``, ``format_bytes``, ``format_si``, ``format_rate``,
#: percentages), each a whole word: ``5 steps`` is a count and a noun, not ``5 s`` and ``teps``
_UNIT = r"(?:[nµu]s|ms|s|min|h|%|[KMGTP]iB|[kKMGTP]?B(?:/s)?|[kMGTP]?FLOP(?:/s|/byte)?|[kMGT]?Hz|[kM]?W)(?![\w/])"
#: a figure (``29.0``, ``1,024``, ``-3.2``, ``+5``) then one space then its unit: the space is the one to keep
_FIGURE_SPACE = re.compile(rf"(?<![\w.,])[-+−]?\d[\d,]*(?:\.\d+)?( )(?={_UNIT})")


def unit_spaces(line: str) -> list[int]:
    """Offsets in ``line`` of every space between a figure and its unit."""
    return [m.start(1) for m in _FIGURE_SPACE.finditer(line)]


def break_offsets(line: str, width: int) -> list[int]:
    """Where to break ``line`` (no newlines) to fit ``width`` cells: Rich's word wrap (``rich._wrap.divide_line``,
    the one Textual wraps a widget's text with), on the line with each figure-unit space masked as a letter of
    the same width, so that a figure and its unit wrap as one word."""
    return divide_line(_masked(line), max(width, 1), fold=True)


#: what stands for a figure-unit space while a line is wrapped: one cell wide, not whitespace (a private-use code
#: point; text that holds one already wraps as plain ``Text``, so that it is not turned into a space)
_KEEP = "\ue000"


def _masked(line: str) -> str:
    chars = list(line)
    for i in unit_spaces(line):
        chars[i] = _KEEP
    return "".join(chars)


class FigureText(Text):
    """Rich ``Text`` whose word wrap keeps each figure with its unit (for text that Rich lays out itself, as in
    a table's cells)."""

    def wrap(
        self,
        console: Console,
        width: int,
        *,
        justify: JustifyMethod | None = None,
        overflow: OverflowMethod | None = None,
        tab_size: int = 8,
        no_wrap: bool | None = None,
    ) -> Lines:
        if _KEEP in self.plain:
            return super().wrap(console, width, justify=justify, overflow=overflow, tab_size=tab_size, no_wrap=no_wrap)
        masked = self.copy()
        masked.plain = "\n".join(_masked(line) for line in self.plain.split("\n"))
        lines = masked.wrap(console, width, justify=justify, overflow=overflow, tab_size=tab_size, no_wrap=no_wrap)
        for line in lines:
            line.plain = line.plain.replace(_KEEP, " ")
        return lines
