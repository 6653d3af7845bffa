"""Where the host time went, by operator: for a profile with no GPU activity (a run of PyTorch's CPU build, a
model left on the CPU), the step time is host time, and what the summary and its first finding name is the
operators that took it.

The rows are ``gputop-trace ops``' own (:func:`gputop_trace.analysis.operators.table.op_table`, ``key_averages()``'s
figures:
operators and annotation ranges, Python frames and runtime calls left out), most self CPU time first. A row's
share is its self CPU time over the sum of every row's: the host time spent inside operators and annotation
ranges, each instant counted once per thread and summed over threads, so the shares add up to 100 %. Computed once
per trace (the summary's host table and the no-GPU finding read the same rows). Times in ns.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from gputop_trace.analysis.operators.table import OPERATOR_KINDS, OpRow, op_table
from gputop_trace.model.trace import Trace


@dataclass(frozen=True)
class HostOps:
    """The operator rows by self CPU time, most first (``rows``); ``self_cpu_total_ns`` the sum of every row's self
    CPU time (ns), what each row's share is of."""

    rows: tuple[OpRow, ...]
    self_cpu_total_ns: int

    def pct(self, row: OpRow) -> float:
        """``row``'s self CPU time as a percentage (0–100) of :attr:`self_cpu_total_ns`."""
        return 100.0 * row.self_cpu_ns / self.self_cpu_total_ns if self.self_cpu_total_ns > 0 else 0.0


_CACHE: weakref.WeakKeyDictionary[Trace, HostOps] = weakref.WeakKeyDictionary()


def host_ops(trace: Trace) -> HostOps:
    """The operators of ``trace`` by self CPU time (see the module); computed once per trace."""
    got = _CACHE.get(trace)
    if got is None:
        rows = sorted((r for r in op_table(trace) if r.kind in OPERATOR_KINDS), key=lambda r: (-r.self_cpu_ns, r.name))
        got = HostOps(rows=tuple(rows), self_cpu_total_ns=sum(r.self_cpu_ns for r in rows))
        _CACHE[trace] = got
    return got


def cpu_run_detail(trace: Trace, holds: str) -> tuple[str, list[dict[str, Any]]]:
    """The no-GPU finding's paragraph for a profile that holds CPU operators (``holds``: what the profile holds, in
    words), naming the three operators with the most self CPU time, and those three as evidence (``name``,
    ``self_cpu_ns``, ``pct`` of the time in operators)."""
    host = host_ops(trace)
    top = [r for r in host.rows[:3] if r.self_cpu_ns > 0]
    where = ", ".join(f"{r.name} {host.pct(r):.1f}%" for r in top)
    detail = (
        f"The profile holds {holds}, but nothing that ran on a GPU: a CPU run (PyTorch's CPU build, or a model and "
        "inputs left on the CPU), so the step time is host time. "
        + (f"Where it went, by self CPU time: {where} of the time in operators. " if top else "")
        + "The host table of the summary and gputop-trace ops list the operators (--group-by shape or stack says "
        "which calls). If the run was meant to use a GPU, move the model and its inputs to it and record with CUDA "
        "tracing on (torch.profiler with ProfilerActivity.CUDA)."
    )
    return detail, [{"name": r.name, "self_cpu_ns": r.self_cpu_ns, "pct": round(host.pct(r), 3)} for r in top]
