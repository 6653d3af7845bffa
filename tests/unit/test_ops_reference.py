"""``ops`` against PyTorch's own ``key_averages()`` for the same profile: the two recordings in tests/data (made
with scripts/record_references.py: PyTorch 2.13 on CPU, PyTorch 2.11 + CUDA 13 on an H200; record_shapes,
profile_memory, with_stack, with_flops). Counts, every time column (within 1 µs per call), every memory column
(exact), the GEMM FLOPs (exact) and the memory peak (the largest ``Total Allocated`` on the device)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from gputop_trace.analysis.operators.memory import memory_series
from gputop_trace.analysis.operators.table import OpRow, op_table
from gputop_trace.analysis.operators.tree import build_op_tree
from gputop_trace.load.loader import load_paths
from gputop_trace.model.trace import Trace

DATA = Path(__file__).resolve().parents[1] / "data"
#: (trace, key_averages reference, whether Python frames are function events in that PyTorch version)
RECORDINGS = {
    "cpu-torch2.13": ("ops_cpu.json.gz", "ops_cpu_key_averages.json.gz", True),
    "h200-torch2.11": ("ops_cuda.json.gz", "ops_cuda_key_averages.json.gz", False),
}
_TIMES = (
    ("cpu_total_ns", "cpu_time_total"),
    ("self_cpu_ns", "self_cpu_time_total"),
    ("device_total_ns", "device_time_total"),
    ("self_device_ns", "self_device_time_total"),
)
_MEMORY = (
    ("cpu_mem", "cpu_memory_usage"),
    ("self_cpu_mem", "self_cpu_memory_usage"),
    ("device_mem", "device_memory_usage"),
    ("self_device_mem", "self_device_memory_usage"),
)


def _load(which: str) -> tuple[Trace, dict[str, Any], bool]:
    trace_file, ref_file, python = RECORDINGS[which]
    trace = load_paths([str(DATA / trace_file)], use_cache=False, include_python=python)
    with gzip.open(DATA / ref_file, "rt", encoding="utf-8") as f:
        return trace, json.load(f), python


def _ours(rows: list[OpRow], by_shape: bool) -> dict[tuple[str, bool, str | None], OpRow]:
    out: dict[tuple[str, bool, str | None], OpRow] = {}
    for r in rows:
        key = (r.name, r.is_device, r.shapes if by_shape else None)
        assert key not in out, f"two rows for {key}"
        out[key] = r
    return out


@pytest.mark.parametrize("which", sorted(RECORDINGS))
@pytest.mark.parametrize("group_by", ["name", "shape"])
def test_ops_equal_key_averages(which: str, group_by: str) -> None:
    trace, ref, python = _load(which)
    by_shape = group_by == "shape"
    ours = _ours(op_table(trace, group_by=group_by, python=python), by_shape)
    theirs = ref["key_averages_by_shape" if by_shape else "key_averages"]
    assert len(theirs) > 150
    for x in theirs:
        key = (x["key"], x["device_type"] != "DeviceType.CPU", str(x["input_shapes"]) if by_shape else None)
        assert key in ours, f"key_averages has {key}, ops does not"
        r = ours.pop(key)
        assert r.count == x["count"], key
        for mine, torchs in _TIMES:
            assert abs(getattr(r, mine) / 1000 - x[torchs]) <= 1.0 * x["count"], (key, mine, getattr(r, mine))
        for mine, torchs in _MEMORY:
            assert getattr(r, mine) == x[torchs], (key, mine)
    assert not ours, f"ops has keys key_averages does not: {sorted(ours)[:5]}"


@pytest.mark.parametrize("which", sorted(RECORDINGS))
def test_ops_times_agree_to_a_few_nanoseconds(which: str) -> None:
    """Tighter than the 1 µs per call the issue asks: the trace writes µs with three decimals, so only the float
    rounding of large timestamps (about 1 ns at 5e12 µs) separates the figures."""
    trace, ref, python = _load(which)
    ours = _ours(op_table(trace, python=python), False)
    worst = 0.0
    for x in ref["key_averages"]:
        r = ours[(x["key"], x["device_type"] != "DeviceType.CPU", None)]
        for mine, torchs in _TIMES:
            worst = max(worst, abs(getattr(r, mine) / 1000 - x[torchs]) / x["count"])
    assert worst < 0.005  # µs per call


def test_device_time_goes_to_the_launching_op_and_its_parents() -> None:
    """On the H200 recording the GEMMs own their kernels (self device = device total) and the step annotation
    owns none of its own but all of its children's."""
    trace, _, _ = _load("h200-torch2.11")
    rows = _ours(op_table(trace, python=False), False)
    mm = rows[("aten::mm", False, None)]
    assert mm.self_device_ns == mm.device_total_ns > 0
    linear = rows[("aten::linear", False, None)]
    assert linear.self_device_ns == 0 and linear.device_total_ns > 0
    step = rows[("step_0", False, None)]
    assert step.self_device_ns == 0 and step.device_total_ns > mm.device_total_ns // 3
    band = rows[("step_0", True, None)]  # the gpu_user_annotation band: a device key of its own
    assert band.kind == "gpu_annotation" and band.cpu_total_ns == 0 and band.device_total_ns > 0


@pytest.mark.parametrize("which", sorted(RECORDINGS))
def test_gemm_flops_equal_with_flops(which: str) -> None:
    """FLOPs of every mm/addmm/bmm shape group equal PyTorch's ``with_flops`` figure exactly (2·M·K·N a call)."""
    trace, ref, python = _load(which)
    ours = _ours(op_table(trace, group_by="shape", python=python), True)
    checked = 0
    for x in ref["key_averages_by_shape"]:
        if x["key"] in ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"):
            r = ours[(x["key"], False, str(x["input_shapes"]))]
            assert x["flops"] > 0 and r.flops == x["flops"], (x["key"], x["input_shapes"])
            checked += 1
    assert checked >= 10


def _raw_peaks(trace_file: str) -> dict[int, int]:
    """Largest ``Total Allocated`` per device id (host: -1) read straight from the JSON."""
    with gzip.open(DATA / trace_file, "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    peaks: dict[int, int] = {}
    for e in events:
        if e.get("name") == "[memory]":
            a = e["args"]
            dev = -1 if a["Device Type"] == 0 else a["Device Id"]
            peaks[dev] = max(peaks.get(dev, 0), a["Total Allocated"])
    return peaks


@pytest.mark.parametrize("which", sorted(RECORDINGS))
def test_memory_peak_is_the_largest_total_allocated(which: str) -> None:
    trace, _, _ = _load(which)
    series = memory_series(trace)
    assert {s.device: s.peak_bytes for s in series} == _raw_peaks(RECORDINGS[which][0])
    for s in series:
        assert s.peak_op, "the peak is inside an operator"
        assert len(s.ts_ns) == len(s.allocated) and (s.ts_ns[1:] >= s.ts_ns[:-1]).all()


def test_python_frames_are_keys_only_when_loaded() -> None:
    trace, _, _ = _load("cpu-torch2.13")
    kinds = {r.kind for r in op_table(trace)}
    assert "python" in kinds
    no_py = load_paths([str(DATA / "ops_cpu.json.gz")], use_cache=False, include_python=False)
    assert "python" not in {r.kind for r in op_table(no_py)}
    assert len(build_op_tree(no_py)) < len(build_op_tree(trace))


def test_group_by_stack_splits_each_operator_by_its_python_frames() -> None:
    trace, _, _ = _load("cpu-torch2.13")
    by_name = {(r.name, r.is_device): r for r in op_table(trace)}
    by_stack = op_table(trace, group_by="stack")
    sums: dict[tuple[str, bool], list[int]] = {}
    for r in by_stack:
        assert len(r.stack) <= 5
        s = sums.setdefault((r.name, r.is_device), [0, 0, 0])
        s[0] += r.count
        s[1] += r.self_cpu_ns
        s[2] += r.cpu_mem
    for key, (count, self_cpu, mem) in sums.items():
        assert (count, self_cpu, mem) == (by_name[key].count, by_name[key].self_cpu_ns, by_name[key].cpu_mem), key
    addmm = [r for r in by_stack if r.name == "aten::addmm"]  # the linears of several modules
    assert len(addmm) > 1 and all(r.stack for r in addmm)


def test_op_args_and_memory_survive_the_cache(tmp_path: Path) -> None:
    """The columnar cache stores the two new side tables: a trace reopened from it gives the same ops table."""
    from gputop_trace.load.cache_entry import open_trace, save_trace

    parsed = load_paths([str(DATA / "ops_cuda.json.gz")], use_cache=False)
    save_trace(parsed, tmp_path / "saved")
    cached = open_trace(tmp_path / "saved")
    for table in ("op_args", "memory"):
        a, b = getattr(parsed, table), getattr(cached, table)
        assert len(a) > 100 and len(a) == len(b)
        for col in a.__dataclass_fields__:
            assert (getattr(a, col) == getattr(b, col)).all(), (table, col)
    assert [(r.name, r.count, r.self_cpu_ns, r.device_mem) for r in op_table(cached, group_by="shape")] == [
        (r.name, r.count, r.self_cpu_ns, r.device_mem) for r in op_table(parsed, group_by="shape")
    ]
