"""Kernel-table rows as JSON-contract objects (shared by ``summary`` and ``kernels``)."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from gputop_trace.analysis.kernels import KernelRow


def round_half_up(x: float, digits: int) -> float:
    """``x`` rounded to ``digits`` decimals, ties away from zero, on its shortest decimal form — what SQLite's
    ``round()`` does, so figures equal ``nsys stats`` output (Python's ``round`` gives 2.2 for 2.25)."""
    if not math.isfinite(x):
        return x
    return float(Decimal(repr(x)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def kernel_row_json(r: KernelRow) -> dict[str, Any]:
    """One ``kernels`` row: integer ns times (mean/median/std rounded to 0.1 ns), ``pct`` 0–100."""
    return {
        "name": r.name,
        "device": r.device if r.device >= 0 else None,
        "rank": r.rank if r.rank >= 0 else None,
        "count": r.count,
        "total_ns": r.total_ns,
        "mean_ns": round_half_up(r.mean_ns, 1),
        "median_ns": round_half_up(r.median_ns, 1),
        "min_ns": r.min_ns,
        "max_ns": r.max_ns,
        "std_ns": round_half_up(r.std_ns, 1),
        "pct": round_half_up(r.pct, 3),
        "grid": list(r.grid) if r.grid else None,
        "block": list(r.block) if r.block else None,
        "registers": r.registers,
        "shared_bytes": r.shared_bytes,
        "occupancy_pct": None if r.occupancy_pct != r.occupancy_pct else round(r.occupancy_pct, 2),
        "launch_ns": r.launch_ns,
        "raw_name": r.raw_name,
        "inductor": r.inductor.to_json() if r.inductor is not None else None,
    }
