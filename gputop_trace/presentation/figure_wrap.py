"""Where to break a line so that a figure and its unit stay on one line (``29.0 ms``, never ``29.0`` at the end of
one line and ``ms`` at the start of the next), and a count and its noun too (``12 kernels``, ``3 × 16.0 KiB``).
Textual-free: Rich's own word wrap, told that the space between a number and its unit or noun is not a place to
break; the app's details pane (``tui/widgets/details_pane.py``) draws its text with it, the panels and the findings
draw :class:`FigureText`, and the command line's console (``cli/figure_console.py``) wraps every text it prints with
it.

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


#: a count then one space then a word (``12 kernels``, ``1,675 CPU operators``: the count stays with the noun's
#: first word), a count then ``×`` (``3 × 16.0 KiB``), and ``×`` then a figure; not a number in code (``kernel<8, at``)
_COUNT_SPACE = re.compile(r"(?<![\w.,#<])[-+−]?\d+(?:,\d{3})*(?:\.\d+)?( )(?=[^\W\d_]|×)|×( )(?=\d)")


def unit_spaces(line: str) -> list[int]:
    """Offsets in ``line`` of every space between a figure and its unit."""
    return [m.start(1) for m in _FIGURE_SPACE.finditer(line)]


def keep_spaces(line: str) -> list[int]:
    """Offsets in ``line`` of every space not to break at: between a figure and its unit (:func:`unit_spaces`)
    and between a count and its noun (``12 kernels``, ``3 × 16.0 KiB``)."""
    counts = {m.start(1) if m.group(1) else m.start(2) for m in _COUNT_SPACE.finditer(line)}
    return sorted(counts.union(unit_spaces(line)))


def break_offsets(line: str, width: int) -> list[int]:
    """Where to break ``line`` (no newlines) to fit ``width`` cells: Rich's word wrap (``rich._wrap.divide_line``,
    the one Textual wraps a widget's text with), on the line with each figure-unit and count-noun space
    (:func:`keep_spaces`) masked as a letter of the same width, so that they wrap as one word."""
    return divide_line(_masked(line), max(width, 1), fold=True)


#: what stands for a figure-unit space while a line is wrapped: one cell wide, not whitespace (a private-use code
#: point; text that holds one already wraps as plain ``Text``, so that it is not turned into a space)
_KEEP = "\ue000"


def _masked(line: str) -> str:
    chars = list(line)
    for i in keep_spaces(line):
        chars[i] = _KEEP
    return "".join(chars)


class FigureText(Text):
    """Rich ``Text`` whose word wrap keeps each figure with its unit and each count with its noun (for text that
    Rich lays out itself, as in a table's cells)."""

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


def figure_text(text: Text) -> FigureText:
    """``text`` (its styles, justification and overflow) as a :class:`FigureText`."""
    if isinstance(text, FigureText):
        return text
    out = FigureText(
        text.plain,
        style=text.style,
        justify=text.justify,
        overflow=text.overflow,
        no_wrap=text.no_wrap,
        end=text.end,
        tab_size=text.tab_size,
    )
    out._spans[:] = text._spans
    return out
