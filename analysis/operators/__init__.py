"""Operators as PyTorch's ``key_averages()`` gives them, rebuilt from a trace: :mod:`.tree` (the operator tree),
:mod:`.table` (the rows of ``gputop-trace ops``), :mod:`.flops` (estimated work from input shapes), :mod:`.mfu`
(achieved throughput and each step's model FLOPs utilisation), :mod:`.memory` (the allocator's memory over time)
and :mod:`.host_time` (where the host time went in a run with no GPU activity). Times are int64 ns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputop_trace.lazy_exports import lazy_names

if TYPE_CHECKING:
    from gputop_trace.analysis.operators.host_time import cpu_run_detail, host_ops
    from gputop_trace.analysis.operators.memory import MemorySeries, memory_series
    from gputop_trace.analysis.operators.mfu import StepMfu, achieved, gpu_name, step_mfu
    from gputop_trace.analysis.operators.table import OPERATOR_KINDS, OpRow, op_table
    from gputop_trace.analysis.operators.tree import DEVICE_MEMORY_TYPES, OpTree, build_op_tree

#: where each public name lives (imported when first read: gputop_trace/lazy_exports.py)
_HOMES: dict[str, tuple[str, ...]] = {
    "host_time": ("cpu_run_detail", "host_ops"),
    "memory": ("MemorySeries", "memory_series"),
    "mfu": ("StepMfu", "achieved", "gpu_name", "step_mfu"),
    "table": ("OPERATOR_KINDS", "OpRow", "op_table"),
    "tree": ("DEVICE_MEMORY_TYPES", "OpTree", "build_op_tree"),
}
__getattr__ = lazy_names(__name__, _HOMES)

__all__ = [
    "DEVICE_MEMORY_TYPES",
    "OPERATOR_KINDS",
    "MemorySeries",
    "OpRow",
    "OpTree",
    "StepMfu",
    "achieved",
    "build_op_tree",
    "cpu_run_detail",
    "gpu_name",
    "host_ops",
    "memory_series",
    "op_table",
    "step_mfu",
]
