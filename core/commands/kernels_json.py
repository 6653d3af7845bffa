"""Kernel-table rows as JSON-contract objects (shared by ``summary`` and ``kernels``)."""

from __future__ import annotations

from typing import Any

from gputop_trace.analysis.kernels import KernelRow


def kernel_row_json(r: KernelRow) -> dict[str, Any]:
    """One ``kernels`` row: integer ns times (mean/median/std rounded to 0.1 ns), ``pct`` 0–100."""
    return {
        "name": r.name,
        "device": r.device if r.device >= 0 else None,
        "rank": r.rank if r.rank >= 0 else None,
        "count": r.count,
        "total_ns": r.total_ns,
        "mean_ns": round(r.mean_ns, 1),
        "median_ns": round(r.median_ns, 1),
        "min_ns": r.min_ns,
        "max_ns": r.max_ns,
        "std_ns": round(r.std_ns, 1),
        "pct": round(r.pct, 3),
        "grid": list(r.grid) if r.grid else None,
        "block": list(r.block) if r.block else None,
        "registers": r.registers,
        "shared_bytes": r.shared_bytes,
        "occupancy_pct": None if r.occupancy_pct != r.occupancy_pct else round(r.occupancy_pct, 2),
        "launch_ns": r.launch_ns,
        "raw_name": r.raw_name,
    }
