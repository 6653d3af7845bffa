"""What every findings detector builds: a draft finding (time at stake and the span it is weighed against),
and the few naming helpers the detectors share. Times are int64 ns relative to the trace start."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gputop_trace.analysis.ranges import split_range_name
from gputop_trace.model.trace import Trace


@dataclass
class Draft:
    """A finding before ranking: the fields of :class:`~gputop_trace.analysis.findings.assemble.Finding` but its rank
    and severity, plus ``span_ns``, the active span (ns) of the GPU concerned that ``time_ns`` is weighed against."""

    kind: str
    title: str
    detail: str
    time_ns: int
    span_ns: int
    evidence: dict[str, Any]
    thresholds: dict[str, Any]
    event: int = -1
    interval: tuple[int, int] | None = None
    gpu_rank: int | None = None
    device: int | None = None

    @property
    def severity(self) -> float:
        """``time_ns`` as a share of ``span_ns`` (0–1; 1 when there is time at stake but no span)."""
        return min(1.0, self.time_ns / self.span_ns) if self.span_ns > 0 else (1.0 if self.time_ns else 0.0)


def gpu_label(rank: int, device: int, multi: bool, trace: Trace) -> str:
    """The device by its own name (``GPU 0``, ``MTIA 9``), with its rank (``rank 1 GPU 0``) when the findings
    cover several devices of a multi-rank trace."""
    if multi and len(trace.meta.ranks) > 1:
        return f"rank {rank} {trace.device_label(rank, device)}"
    return trace.device_label(rank, device)


def pct(part: int, whole: int) -> str:
    """``part`` as a percentage of ``whole`` with one decimal (``"12.5%"``; ``"0%"`` when ``whole`` is 0)."""
    return f"{100.0 * part / whole:.1f}%" if whole else "0%"


def name_of(trace: Trace, i: int) -> str:
    """The name of event ``i`` (``""`` for ``-1``)."""
    return trace.event_name(i) if i >= 0 else ""


_NUMBER = re.compile(r"\d+")


def plain_name(name: str) -> str:
    """A range or operator name without PyTorch ``emit_nvtx``'s per-call suffix (``, op_id = 317175``)."""
    return split_range_name(name, set())[1]


def name_family(name: str) -> str:
    """A name with its numbers replaced, so ``step_1`` and ``step_2`` group together as ``step_<n>``."""
    return _NUMBER.sub("<n>", plain_name(name))


def family_label(names: set[str]) -> str:
    """The one name, or the family pattern when several names share it."""
    plain = {plain_name(n) for n in names}
    return next(iter(plain)) if len(plain) == 1 else name_family(next(iter(plain)))
