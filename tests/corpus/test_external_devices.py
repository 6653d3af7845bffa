"""Traces other teams recorded on other accelerators (``external/`` of the corpus: ROCm/HIP, Triton, MTIA,
CUPTI range profiler): the loader's device-op totals, device busy and idle are checked against an independent
computation with the standard library (``json``/``gzip``, the interval union by hand)."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from decimal import Decimal
from typing import Any

import pytest

from gputop_trace.analysis.busy import device_busy
from gputop_trace.analysis.kernels import kernel_table
from gputop_trace.load.loader import load_paths
from gputop_trace.parsers.chrome.lenient import EXAMPLE_CHARS, quote_example
from tests.conftest import CORPUS

pytestmark = pytest.mark.corpus

AMD = "external/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"
TRITON = "external/triton_example/triton_example.json.gz"
MTIA = "external/mtia_trace_single_rank/mtia_rank_0.json.gz"


def _events(rel: str) -> list[dict[str, Any]]:
    with gzip.open(CORPUS / rel, "rt") as f:
        doc = json.load(f, parse_float=Decimal)
    events: list[dict[str, Any]] = doc["traceEvents"]
    return events


def _ns(v: Any) -> int:
    return int((Decimal(v) * 1000).to_integral_value())


def stdlib_device_busy(rel: str, cats: tuple[str, ...]) -> dict[int, tuple[int, int, int]]:
    """device → (ops total ns, busy ns = the union of the ops, idle ns = span − busy), from the raw JSON."""
    ops: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for e in _events(rel):
        if e.get("ph") == "X" and e.get("cat") in cats:
            start = _ns(e["ts"])
            ops[int(e.get("args", {}).get("device", e["pid"]))].append((start, start + max(_ns(e.get("dur", 0)), 0)))
    out = {}
    for dev, spans in ops.items():
        spans.sort()
        busy = 0
        cur_s, cur_e = spans[0]
        for lo, hi in spans[1:]:
            if lo > cur_e:
                busy += cur_e - cur_s
                cur_s, cur_e = lo, hi
            else:
                cur_e = max(cur_e, hi)
        busy += cur_e - cur_s
        span = max(hi for _, hi in spans) - spans[0][0]
        out[dev] = (sum(hi - lo for lo, hi in spans), busy, span - busy)
    return out


def _loaded_busy(rel: str) -> dict[int, tuple[int, int]]:
    t = load_paths([str(CORPUS / rel)], use_cache=False)
    return {b.device: (b.busy_ns, b.idle_ns) for b in device_busy(t)}


def test_rocm_copy_bytes_come_from_the_hip_call_and_string_fields_are_no_wrong_types() -> None:
    """HIP writes the bytes of a copy in the runtime call's args as text (``"size": "2560"``), and
    ``"stream": "0x0"``/``"kind": "1"``: the copy gets 2560 B, and no field is of the wrong type."""
    t = load_paths([str(CORPUS / AMD)], use_cache=False)
    sizes = {
        int(e["args"]["correlation"]): int(e["args"]["size"])
        for e in _events(AMD)
        if e.get("cat") == "cuda_runtime" and "size" in e.get("args", {})
    }
    copies = t.copies.bytes.tolist()
    assert copies and all(b > 0 for b in copies)
    assert sorted(copies) == sorted(
        sizes[int(e["args"]["correlation"])] for e in _events(AMD) if e.get("cat") == "gpu_memcpy"
    )
    assert not [w for w in t.meta.warnings if "wrong type" in w], t.meta.warnings


def test_rocm_kernels_busy_and_idle_match_the_stdlib() -> None:
    t = load_paths([str(CORPUS / AMD)], use_cache=False)
    ref = stdlib_device_busy(AMD, ("kernel", "gpu_memcpy", "gpu_memset"))
    kref = stdlib_device_busy(AMD, ("kernel",))
    assert {d: v[1:] for d, v in ref.items()} == _loaded_busy(AMD)
    assert sum(r.total_ns for r in kernel_table(t)) == sum(v[0] for v in kref.values())


def test_triton_grid_text_on_a_cpu_op_is_no_kernel_and_no_wrong_type() -> None:
    """Triton's CPU op carries ``"grid": "grid(100,)"``: not a launch grid, not a field of the wrong type."""
    t = load_paths([str(CORPUS / TRITON)], use_cache=False)
    assert not [w for w in t.meta.warnings if "wrong type" in w], t.meta.warnings
    rows = kernel_table(t)
    assert [(r.name, r.count) for r in rows] == [("triton_poi_fused_add_cos_sin_0", 1)]
    ref = stdlib_device_busy(TRITON, ("kernel", "gpu_memcpy", "gpu_memset"))
    assert {d: v[1:] for d, v in ref.items()} == _loaded_busy(TRITON)
    assert rows[0].total_ns == sum(v[0] for v in ref.values())


def test_a_quoted_example_is_never_cut_in_a_number() -> None:
    raw = json.dumps(
        {"ph": "X", "name": "k", "ts": 4203669603438.301, "args": {"v": 12345678901234567}}
        | {f"key{i}": 1234567.891 for i in range(20)}
    ).encode()
    text = quote_example(raw)
    assert len(text) <= EXAMPLE_CHARS + 3 and text.endswith(", …")
    assert text[:-3].endswith(("1234567.891", "12345678901234567}", "4203669603438.301")), text
    assert quote_example(b'{"ph": 1}') == '{"ph": 1}'


def test_mtia_device_ops_are_device_work_with_lanes_busy_gaps_kernels_and_copies() -> None:
    """Meta MTIA puts its device work in ``mtia_ccp_events`` (process "MTIA 9"; ``dma_request`` is a DMA copy
    with its own ``size`` and ``direction``): device lanes named for the device, busy and idle as the stdlib
    union gives them, the kernel table, and no "No GPU activity" finding."""
    from gputop_trace.analysis.findings import find_findings
    from gputop_trace.model.kinds import CopyKind, LaneKind

    t = load_paths([str(CORPUS / MTIA)], use_cache=False)
    ref = stdlib_device_busy(MTIA, ("mtia_ccp_events",))
    assert {d: v[1:] for d, v in ref.items()} == _loaded_busy(MTIA)
    ops = [e for e in _events(MTIA) if e.get("ph") == "X" and e.get("cat") == "mtia_ccp_events"]
    kernels = [e for e in ops if e["name"] != "dma_request"]
    rows = kernel_table(t)
    assert sum(r.count for r in rows) == len(kernels)
    assert sum(r.total_ns for r in rows) == sum(_ns(e["dur"]) for e in kernels)
    dma = [e for e in ops if e["name"] == "dma_request"]
    assert len(t.copies.bytes) == len(dma) and int(t.copies.bytes.sum()) == sum(e["args"]["size"] for e in dma)
    d2h = sum(e["args"]["direction"] == "DEVICE_TO_HOST" for e in dma)
    assert int((t.copies.direction == CopyKind.DTOH).sum()) == d2h
    lanes = [ln for ln in t.lanes if ln.kind == LaneKind.GPU_STREAM]
    assert lanes and {ln.process_name for ln in lanes} == {"MTIA 9"}
    assert not [f for f in find_findings(t) if "No GPU activity" in f.title]
