"""The status bar: file, format, GPUs, span, window width, cursor time, events, warnings, and the state of a
search. Always one line; the file name gives way first when the terminal is narrow."""

from __future__ import annotations

import os

from rich.text import Text
from textual.widgets import Static

from gputop_trace.model.trace import Trace
from gputop_trace.safe_text import clean
from gputop_trace.tui.view.timeline_math import fit_label
from gputop_trace.units import format_ns, plural


def source_label(trace: Trace, paths: list[str]) -> str:
    """The file (or folder / number of files) a trace came from."""
    if len(paths) == 1:
        return clean(os.path.basename(paths[0].rstrip("/")) or paths[0])
    return f"{len(paths)} files"


#: characters of the file name the status bar always keeps (the whole name when shorter)
NAME_MIN = 16


def status_text(
    trace: Trace,
    paths: list[str],
    *,
    width: int,
    window_ns: int,
    cursor_ns: int,
    search: str = "",
) -> Text:
    """The status line for a terminal ``width`` columns wide: the roomiest layout that fits with at least
    :data:`NAME_MIN` characters of the file name (during a search too: the file name stays, the counts go)."""
    gpus = len(trace.devices)
    fmt = trace.meta.format
    warn = len(trace.meta.warnings)
    src = source_label(trace, paths)
    gpu_text = trace.device_words().say(f"{gpus} GPU{'s' if gpus != 1 else ''}")
    layouts = [
        (
            f" {fmt} · {gpu_text} · span {format_ns(trace.span_ns)}",
            f" │ win {format_ns(window_ns)} │ @ {format_ns(cursor_ns, precision=6)} │ {plural(len(trace), 'event')}"
            + (f" · ⚠ {plural(warn, 'warning')}" if warn else ""),
        ),
        (
            f" {fmt} {gpu_text} {format_ns(trace.span_ns)}",
            f"│win {format_ns(window_ns)}│@{format_ns(cursor_ns, precision=6)}│{len(trace):,} ev"
            + (f"│⚠{warn}" if warn else ""),
        ),
    ]
    layouts += [
        (f" {gpu_text}", f"│@{format_ns(cursor_ns, precision=6)}" + (f"│⚠{warn}" if warn else "")),
        ("", ""),
    ]
    need = min(len(src), NAME_MIN)
    for left, right in layouts:
        if search:
            right += f" │ {search}" if right.startswith(" ") else f"│{search}"
        if need + len(left) + len(right) <= width:
            break
    if need + len(left) + len(right) > width:  # a long pattern: its start is cut (not the name, nor the count)
        room = max(width - need - len(left) - 2, 0)
        right = "│…" + right[len(right) - room :] if room else ""
    room = width - len(right) - len(left)
    name = fit_label(src, max(room, 0), min_chars=3)
    out = Text(name, style="bold") + Text(left) + Text(right)
    out.truncate(width, overflow="ellipsis")
    return out


class StatusBar(Static):
    """One line at the bottom of the main screen."""

    DEFAULT_CSS = """
    StatusBar { height: 1; width: 100%; background: $panel; color: $text; }
    """
