"""A duration histogram for a terminal: log-spaced bins over a kernel's launch durations, drawn as bars.
numpy and Rich only."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from rich.text import Text

from gputop_trace.model.arrays import I64
from gputop_trace.units import format_ns


@dataclass(frozen=True)
class HistBin:
    """Durations in ``[lo_ns, hi_ns)`` (the last bin includes ``hi_ns``) and how many fall there."""

    lo_ns: float
    hi_ns: float
    count: int


def duration_bins(durations: I64, bins: int = 8) -> list[HistBin]:
    """Log-spaced bins from the shortest to the longest duration (one bin when they are all equal)."""
    d = np.asarray(durations, dtype=np.float64)
    if d.size == 0:
        return []
    lo, hi = float(d.min()), float(d.max())
    if hi <= lo or lo <= 0:
        if hi <= lo:
            return [HistBin(lo, hi, int(d.size))]
        edges = np.linspace(lo, hi, bins + 1)
    else:
        edges = np.geomspace(lo, hi, bins + 1)
    counts, edges = np.histogram(d, bins=edges)
    return [HistBin(float(edges[i]), float(edges[i + 1]), int(counts[i])) for i in range(len(counts))]


def bin_labels(hb: list[HistBin]) -> list[str]:
    """The bins' lower bounds, with as many digits as it takes for no two to read the same (3 to 6); bins whose
    bounds are below 1 µs apart at 6 digits (whole ns) may still repeat."""
    labels = [format_ns(b.lo_ns) for b in hb]
    for precision in range(4, 7):
        if len(set(labels)) == len(labels):
            break
        labels = [format_ns(b.lo_ns, precision=precision) for b in hb]
    return labels


def histogram_text(durations: I64, *, width: int, title: str = "", bins: int = 8) -> Text:
    """The histogram as text lines ``≥ lower bound  bar  count`` fitting ``width`` columns, with a summary line."""
    out = Text()
    if title:
        out.append(title, style="bold")
        out.append("\n")
    n = int(np.asarray(durations).size)
    hb = duration_bins(durations, max(1, min(bins, math.ceil(math.sqrt(n)))))
    if not hb:
        out.append("no launches", style="dim")
        return out
    d = np.asarray(durations)
    summary = f"{d.size:,}× · median {format_ns(float(np.median(d)))} · max {format_ns(float(d.max()))}"
    if len(summary) > width:
        summary = summary.replace(" · max", "\nmax")
    out.append(summary + "\n", style="dim")
    labels = bin_labels(hb)
    label_w = max(len(label) for label in labels)
    count_w = max(len(f"{b.count:,}") for b in hb)
    bar_w = max(1, width - label_w - count_w - 3)
    top = max(b.count for b in hb) or 1
    for b, label in zip(hb, labels, strict=True):
        n = round(bar_w * b.count / top)
        if b.count and n == 0:
            n = 1
        out.append(f"{label:>{label_w}} ")
        out.append("█" * n, style="bold")
        out.append(" " * (bar_w - n))
        out.append(f" {b.count:>{count_w},}\n")
    out.rstrip()
    return out
