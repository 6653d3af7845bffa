"""Results written to a pipe or a file: nothing cut to the width of a terminal that is not there (unless
``COLUMNS`` asks for a width), no trailing spaces. A terminal keeps Rich's own width."""

from __future__ import annotations

import os
from typing import IO

#: The console width when stdout is not a terminal: wide enough that no name or header is cut and no table
#: column is dropped for room; paragraphs stay on one line each.
PIPE_WIDTH = 4096


class NoTrailingSpaces:
    """A text stream that writes complete lines to ``out`` without their trailing spaces (Rich pads every
    table row and title to the table's width). ``isatty()`` is False, so Rich writes no colours."""

    def __init__(self, out: IO[str]) -> None:
        self._out = out
        self._pending = ""

    @property
    def encoding(self) -> str:
        """The encoding of the wrapped stream."""
        return getattr(self._out, "encoding", None) or "utf-8"

    def write(self, text: str) -> int:
        """Buffer ``text`` and write the lines it completes, right-stripped of spaces."""
        lines = (self._pending + text).split("\n")
        self._pending = lines.pop()
        if lines:
            self._out.write("\n".join(line.rstrip(" ") for line in lines) + "\n")
        return len(text)

    def flush(self) -> None:
        """Write any partial line as it is, and flush the wrapped stream."""
        if self._pending:
            self._out.write(self._pending)
            self._pending = ""
        self._out.flush()

    def isatty(self) -> bool:
        """Never a terminal."""
        return False


def is_terminal(out: IO[str]) -> bool:
    """Whether ``out`` is a terminal (False for a closed or odd stream)."""
    try:
        return bool(out.isatty())
    except (AttributeError, ValueError):
        return False


def pipe_width() -> int | None:
    """The width to give Rich for output that is not a terminal: :data:`PIPE_WIDTH`, or ``None`` (Rich reads
    ``COLUMNS``) when ``COLUMNS`` is set."""
    return None if os.environ.get("COLUMNS") else PIPE_WIDTH


def cut_at(is_terminal: bool, width: int) -> int | None:
    """A column's ``max_width``: ``width`` on a terminal, no limit in a pipe or a file."""
    return width if is_terminal else None
