"""Traces other teams recorded on other accelerators (``external/`` of the corpus: ROCm/HIP, Triton, MTIA,
CUPTI range profiler): the loader's device-op totals, device busy and idle are checked against an independent
computation with the standard library (``json``/``gzip``, the interval union by hand).

:func:`test_every_external_trace_matches_the_stdlib` does it for every Kineto trace in ``external/`` through the
commands a user runs (``kernels --json``, ``summary --json``): per kernel name and device the count and total
time, per device the busy and idle time, all exact to the nanosecond. Exact because the loader turns the file's
decimal microseconds into integer ns without rounding through a float (the stdlib side reads them as
``Decimal``) and because both sides take the same union of the same intervals; a negative duration counts as 0
on both sides. The files in ``external/`` that are not traces are refused by both commands."""

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


def _busy_idle(spans: list[tuple[int, int]]) -> tuple[int, int]:
    """(busy, idle) ns of a device's op intervals: their union, and the rest of first start to last end (plain
    Python, independent of the tool)."""
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
    return busy, span - busy


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
        busy, idle = _busy_idle(spans)
        out[dev] = (sum(hi - lo for lo, hi in spans), busy, idle)
    return out


#: Kineto categories of device work (lower-cased; old PyTorch wrote ``Kernel``/``Memcpy``/``Memset``)
DEVICE_CATS = ("kernel", "gpu_memcpy", "memcpy", "gpu_memset", "memset", "mtia_ccp_events")
#: the categories of kernels among them (MTIA's ``dma_request`` in ``mtia_ccp_events`` is a copy)
KERNEL_CATS = ("kernel", "mtia_ccp_events")


def _external_files() -> list[str]:
    if not (CORPUS / "external").is_dir():
        return []
    return sorted(str(p.relative_to(CORPUS)) for p in (CORPUS / "external").rglob("*") if p.is_file())


def _document(rel: str) -> Any:
    """The file's JSON, or ``None`` when it is not JSON at all."""
    path = CORPUS / rel
    raw = path.read_bytes()
    text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    try:
        return json.loads(text, parse_float=Decimal)
    except ValueError:
        return None


def _is_kineto_trace(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list)


def stdlib_figures(
    events: list[dict[str, Any]],
) -> tuple[dict[tuple[str, int], tuple[int, int]], dict[int, tuple[int, int]]]:
    """From the raw events with the standard library only: ((kernel name, device) → (count, total ns)),
    (device → (busy ns = union of its kernels, copies and memsets, idle ns = its first-op-to-last-op span −
    busy)). A device op's device is ``args.device``, else its ``pid``."""
    kernels: dict[tuple[str, int], tuple[int, int]] = {}
    spans: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for e in events:
        cat = str(e.get("cat", "")).lower()
        if e.get("ph") != "X" or cat not in DEVICE_CATS:
            continue
        args = e.get("args") or {}
        dev = int(args.get("device", e.get("pid", 0)))
        start = _ns(e["ts"])
        dur = max(_ns(e.get("dur", 0)), 0)
        spans[dev].append((start, start + dur))
        if cat in KERNEL_CATS and not (cat == "mtia_ccp_events" and e["name"] == "dma_request"):
            n, total = kernels.get((e["name"], dev), (0, 0))
            kernels[(e["name"], dev)] = (n + 1, total + dur)
    busy_idle = {dev: _busy_idle(iv) for dev, iv in spans.items()}
    return kernels, busy_idle


@pytest.mark.parametrize("rel", _external_files())
def test_every_external_trace_matches_the_stdlib(rel: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Kernel counts and totals per name and device (``kernels --json``) and each device's busy and idle time
    (``summary --json``) equal the stdlib computation exactly; a file that is not a trace is refused (exit 2,
    one paragraph on stderr)."""
    from tests.cli_run import run_cli

    doc = _document(rel)
    path = str(CORPUS / rel)
    if not _is_kineto_trace(doc):
        for cmd in ("kernels", "summary"):
            code, out, err = run_cli(capsys, cmd, "--json", path)
            assert code == 2 and not out and err.strip() and "Traceback" not in err, (cmd, err)
        return
    ref_kernels, ref_busy = stdlib_figures(doc["traceEvents"])
    code, out, err = run_cli(capsys, "kernels", "--json", path)
    assert code == 0, err
    rows = json.loads(out)["kernels"]
    assert {(r["name"], r["device"]): (r["count"], r["total_ns"]) for r in rows} == ref_kernels
    code, out, err = run_cli(capsys, "summary", "--json", path)
    assert code == 0, err
    devices = json.loads(out)["devices"]
    assert {d["device"]: (d["busy_ns"], d["idle_ns"]) for d in devices} == ref_busy


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
    from gputop_trace.analysis.findings.assemble import find_findings
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


CUPTI = "external/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz"


def test_cupti_range_profiler_trace_says_what_it_holds(capsys: pytest.CaptureFixture[str]) -> None:
    """A CUPTI range-profiler trace is no "no GPU activity": summary names the mode, the number of profiled
    kernels and what needs activity tracing (text and JSON), and the ranges are a lane of GPU 0."""
    from gputop_trace.analysis.profiler_ranges import profiler_lanes
    from tests.cli_run import run_cli

    ranges = [e for e in _events(CUPTI) if e.get("cat") == "cuda_profiler_range"]
    code, out, _ = run_cli(capsys, "summary", str(CORPUS / CUPTI))
    assert code == 0
    assert "No GPU activity" not in out
    flat = " ".join(out.split())
    assert f"CUPTI range-profiler trace: {len(ranges)} profiled kernels with hardware counters" in flat
    assert "need activity tracing: re-record with ProfilerActivity.CUDA without the profiler config" in flat
    code, out, _ = run_cli(capsys, "summary", "--json", str(CORPUS / CUPTI))
    doc = json.loads(out)
    (finding,) = doc["findings"]
    assert finding["kind"] == "range_profiler_only" and finding["evidence"]["ranges"] == len(ranges)
    rp = doc["range_profiler"]
    assert rp["ranges"] == len(ranges) and rp["kernel_names"] == len({e["name"] for e in ranges})
    assert rp["counters"] == list(ranges[0]["args"]) and rp["range_window_ns"] == sorted(
        {_ns(e["dur"]) for e in ranges}
    )
    assert doc["devices"] == [] and doc["top_kernels"] == []
    t = load_paths([str(CORPUS / CUPTI)], use_cache=False)
    (lane,) = profiler_lanes(t)
    assert t.lanes[lane].device == 0 and len(range(*t.lane_slice(lane).indices(len(t)))) == len(ranges)
    # an activity trace has none
    code, out, _ = run_cli(capsys, "summary", "--json", str(CORPUS / TRITON))
    assert json.loads(out)["range_profiler"] is None


def test_cupti_kernel_table_is_the_ranges_counters_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    """``kernels`` on a range-profiler trace: one row per kernel name with its range count and every counter
    summed over its ranges, equal to the stdlib grouping of the ``cuda_profiler_range`` events (JSON, CSV, text)."""
    import csv
    import io

    from tests.cli_run import run_cli

    ref: dict[str, tuple[int, dict[str, int]]] = {}
    metrics: list[str] = []
    for e in _events(CUPTI):
        if e.get("cat") != "cuda_profiler_range":
            continue
        n, sums = ref.get(e["name"], (0, {}))
        for k, v in e["args"].items():
            sums[k] = sums.get(k, 0) + int(v)
            if k not in metrics:
                metrics.append(k)
        ref[e["name"]] = (n + 1, sums)
    code, out, _ = run_cli(capsys, "kernels", "--json", str(CORPUS / CUPTI))
    assert code == 0
    doc = json.loads(out)
    assert doc["mode"] == "range_profiler" and doc["kernels"] == [] and doc["counters"] == metrics
    rows = doc["profiled_kernels"]
    assert {r["name"]: (r["ranges"], r["counters"]) for r in rows} == ref
    assert all(r["device"] == 0 for r in rows) and [r["ranges"] for r in rows] == sorted(
        (r["ranges"] for r in rows), reverse=True
    )
    code, out, _ = run_cli(capsys, "kernels", "--csv", str(CORPUS / CUPTI))
    table = list(csv.DictReader(io.StringIO(out)))
    assert list(table[0]) == ["name", "device", "rank", "ranges", *metrics]
    ffma = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
    assert {r["name"]: int(r[ffma]) for r in table} == {k: v[1][ffma] for k, v in ref.items()}
    code, out, _ = run_cli(capsys, "kernels", str(CORPUS / CUPTI))
    assert "CUPTI range-profiler trace" in out and "ffma" in out and "No kernels" not in out
    # an activity trace keeps its mode and has no profiled rows
    code, out, _ = run_cli(capsys, "kernels", "--json", str(CORPUS / TRITON))
    doc = json.loads(out)
    assert doc["mode"] == "activity" and doc["profiled_kernels"] == [] and doc["kernels"]
