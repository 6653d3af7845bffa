"""The ``ops`` JSON document: PyTorch's ``key_averages()`` rows (times ns, memory bytes), the FLOP and byte
estimates from shapes with the achieved rates, the MFU of each step and the memory peaks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gputop_trace.analysis.operators.memory import MemorySeries
    from gputop_trace.analysis.operators.mfu import StepMfu
    from gputop_trace.analysis.operators.table import OpRow
    from gputop_trace.model.trace import Trace

#: what the FLOP and byte figures are, said in every document that has them
ESTIMATE_NOTE = (
    "flops and bytes_moved are estimates from the input shapes record_shapes wrote (GEMMs exact: 2*M*K*N per call; "
    "attention, convolution and memory-bound ops approximate), not measurements; achieved rates are over the "
    "op's device time, peak_pct against the GPU's published dense peak for the op's precision."
)
#: why an nsys export's operators have no FLOPs (``flops_unavailable`` in the JSON, one line in the text)
NSYS_NO_FLOPS = (
    "Nsight Systems exports carry no operator input shapes with their types (emit_nvtx ranges name the operator "
    "and at most its sizes, without dtypes), so no FLOPs, bytes moved or achieved rates are estimated: record with "
    "torch.profiler(record_shapes=True) for them."
)
#: the same in one line of 80 columns, under the text table
NSYS_NO_FLOPS_LINE = "No FLOPs: nsys exports carry no operator input shapes with their types."


def flops_unavailable(trace: Trace) -> str | None:
    """Why no operator of ``trace`` can have FLOP or byte estimates, or None when they can (from the input format:
    an nsys export has no shapes)."""
    return NSYS_NO_FLOPS if trace.meta.format == "nsys" else None


CSV_COLUMNS = (
    "name",
    "kind",
    "shapes",
    "count",
    "cpu_total_ns",
    "self_cpu_ns",
    "cpu_mean_ns",
    "device_total_ns",
    "self_device_ns",
    "device_mean_ns",
    "cpu_memory_bytes",
    "self_cpu_memory_bytes",
    "device_memory_bytes",
    "self_device_memory_bytes",
    "flops",
    "bytes_moved",
    "precision",
    "achieved_flop_per_s",
    "achieved_bytes_per_s",
    "peak_pct",
)


def op_json(row: OpRow, gpu: str) -> dict[str, Any]:
    """One row (times ns, memory bytes, rates per second, ``peak_pct`` 0-100 or null)."""
    from gputop_trace.analysis.operators.mfu import achieved

    a = achieved(row, gpu)
    out: dict[str, Any] = {
        "name": row.name,
        "kind": row.kind,
        "shapes": row.shapes,
        "count": row.count,
        "cpu_total_ns": row.cpu_total_ns,
        "self_cpu_ns": row.self_cpu_ns,
        "cpu_mean_ns": round(row.cpu_mean_ns, 3),
        "device_total_ns": row.device_total_ns,
        "self_device_ns": row.self_device_ns,
        "device_mean_ns": round(row.device_mean_ns, 3),
        "cpu_memory_bytes": row.cpu_mem,
        "self_cpu_memory_bytes": row.self_cpu_mem,
        "device_memory_bytes": row.device_mem,
        "self_device_memory_bytes": row.self_device_mem,
        "flops": row.flops,
        "bytes_moved": row.bytes_moved,
        "precision": row.precision or None,
        "achieved_flop_per_s": a.flop_per_s,
        "achieved_bytes_per_s": a.bytes_per_s,
        "peak_pct": a.peak_pct,
    }
    if row.stack:
        out["stack"] = list(row.stack)
    return out


def memory_json(s: MemorySeries) -> dict[str, Any]:
    """A device's memory peak (bytes; ``device`` -1 = host memory)."""
    return {
        "rank": s.rank,
        "device": s.device,
        "records": len(s.ts_ns),
        "peak_allocated_bytes": s.peak_bytes,
        "peak_reserved_bytes": s.reserved_peak_bytes if s.reserved_peak_bytes >= 0 else None,
        "peak_ns": s.peak_ns,
        "peak_op": s.peak_op or None,
        "peak_stack": list(s.peak_stack),
    }


def step_json(s: StepMfu) -> dict[str, Any]:
    """A step's estimated FLOPs and MFU (percent, null when the GPU or precision has no published peak)."""
    return {
        "rank": s.rank,
        "name": s.name,
        "dur_ns": s.dur_ns,
        "flops": s.flops,
        "precision": s.precision or None,
        "mfu_pct": s.mfu_pct,
    }


def build(
    trace: Trace,
    paths: list[str],
    rows: list[OpRow],
    group_by: str,
    steps: list[StepMfu],
    memory: list[MemorySeries],
    gpu: str,
) -> dict[str, Any]:
    """The ``ops`` JSON document."""
    from gputop_trace.report.envelope import envelope

    return envelope(
        "ops",
        trace,
        paths,
        group_by=group_by,
        estimates=ESTIMATE_NOTE,
        flops_unavailable=flops_unavailable(trace),
        gpu=gpu or None,
        ops=[op_json(r, gpu) for r in rows],
        steps=[step_json(s) for s in steps],
        memory=[memory_json(m) for m in memory],
    )
