"""Several profiled launches of one kernel (``ncu --launch-count N``): how much they differ.

Pure functions of :class:`~gputop_trace.model.ncu.NcuKernel` records (ncu base units: ns, bytes, percentages 0–100).
Launches are grouped by function name; for each group of two or more, every figure in :data:`SPREAD_METRICS` gets
its minimum, median and maximum, and a relative spread ``(max - min) / median``. When the duration spreads by more
than :data:`VARY_REL`, the launches did different work (inputs that change between launches, data-dependent
control flow) and one launch's verdict does not speak for the others.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from gputop_trace.analysis.ncu_diagnosis.trust import TrustNote
from gputop_trace.model.ncu import NcuKernel

#: Relative duration spread (0.10 = 10 %) from which the launches of one kernel are said to differ.
VARY_REL = 0.10
#: (label, metric, unit) of the figures compared across launches.
SPREAD_METRICS: tuple[tuple[str, str, str], ...] = (
    ("duration", "gpu__time_duration.sum", "ns"),
    ("SM throughput", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%"),
    ("memory throughput", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "%"),
    ("DRAM throughput", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "%"),
    ("achieved occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active", "%"),
)


@dataclass(frozen=True)
class MetricSpread:
    """One figure over the launches: ``n`` values, their minimum, median and maximum (in ``unit``)."""

    label: str
    metric: str
    unit: str
    n: int
    min: float
    median: float
    max: float

    @property
    def rel_spread(self) -> float:
        """``(max - min) / median`` (0 when all launches agree; NaN when the median is 0)."""
        return (self.max - self.min) / self.median if self.median else math.nan


@dataclass(frozen=True)
class LaunchSpread:
    """The launches of one kernel in a report: their report indices, the spread of each figure, and a note when
    they differ enough to matter."""

    name: str
    indices: tuple[int, ...]
    figures: tuple[MetricSpread, ...]
    note: TrustNote | None = None


def _spread(label: str, metric: str, unit: str, kernels: Sequence[NcuKernel]) -> MetricSpread | None:
    vals = [v for k in kernels if (v := k.metrics.get(metric)) is not None and not math.isnan(v)]
    if len(vals) < 2:
        return None
    return MetricSpread(label, metric, unit, len(vals), min(vals), statistics.median(vals), max(vals))


def launch_spreads(kernels: Sequence[NcuKernel], vary_rel: float = VARY_REL) -> list[LaunchSpread]:
    """One :class:`LaunchSpread` per kernel name profiled more than once, in report order of first launch."""
    groups: dict[str, list[NcuKernel]] = {}
    for k in kernels:
        groups.setdefault(k.name, []).append(k)
    out = []
    for name, ks in groups.items():
        if len(ks) < 2:
            continue
        figures = tuple(s for lab, met, unit in SPREAD_METRICS if (s := _spread(lab, met, unit, ks)) is not None)
        note = None
        dur = next((f for f in figures if f.metric == "gpu__time_duration.sum"), None)
        if dur is not None and dur.rel_spread > vary_rel:
            note = TrustNote(
                "launch_spread",
                "warning",
                f"The {len(ks)} launches of {name} differ: duration from {dur.min / 1e3:,.1f} to "
                f"{dur.max / 1e3:,.1f} µs "
                f"({dur.rel_spread:.0%} of the median). They did different work (inputs that change between "
                "launches, data-dependent loops): one launch's verdict does not speak for the others.",
            )
        out.append(LaunchSpread(name, tuple(k.index for k in ks), figures, note))
    return out
