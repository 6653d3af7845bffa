"""Accelerator kinds and the words for them (issue 14, item 1): the parser decides a device's kind from what the
producer wrote, and every label and piece of advice follows it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from gputop_trace.analysis.findings.assemble import find_findings
from gputop_trace.load.loader import load_paths
from gputop_trace.model.devices import CUDA, HPU, MTIA, OTHER, ROCM, XPU, DeviceWords, common_words, words_for


def test_words_per_kind() -> None:
    assert [DeviceWords(a).label(3) for a in (CUDA, ROCM, MTIA, XPU, HPU, OTHER)] == [
        "GPU 3", "GPU 3", "MTIA 3", "XPU 3", "HPU 3", "device 3",
    ]  # fmt: skip
    assert (DeviceWords(CUDA).graphs, DeviceWords(ROCM).graphs, DeviceWords(MTIA).graphs) == (
        "CUDA graph",
        "HIP graph",
        None,
    )
    assert DeviceWords(MTIA).say("the GPU queue; GPU-side; GPUs; GPUTOP") == "the MTIA queue; MTIA-side; MTIAs; GPUTOP"
    assert DeviceWords(ROCM).say("the GPU queue") == "the GPU queue"
    assert words_for("") == DeviceWords(CUDA) and words_for("nonsense") == DeviceWords(CUDA)
    assert common_words({MTIA}) == DeviceWords(MTIA) and common_words({CUDA, MTIA}).noun == "device"


def _trace(tmp_path: Path, events: list[dict[str, Any]], **header: Any) -> Path:
    p = tmp_path / "t.json.gz"
    with gzip.open(p, "wt") as f:
        json.dump({"schemaVersion": 1, **header, "traceEvents": events}, f)
    return p


def _launch_bound_events(runtime_cat: str, launch: str, kernel_cat: str = "kernel") -> list[dict[str, Any]]:
    """200 kernels of 5 µs, each launched by a 30 µs call: kernels shorter than their launch (launch overhead)."""
    out: list[dict[str, Any]] = []
    for i in range(200):
        t = 100 + i * 40
        out.append({"ph": "X", "cat": runtime_cat, "name": launch, "pid": 1, "tid": 1, "ts": t, "dur": 30,
                    "args": {"correlation": i + 1}})  # fmt: skip
        out.append({"ph": "X", "cat": kernel_cat, "name": f"k{i % 3}", "pid": 0, "tid": 7, "ts": t + 32, "dur": 5,
                    "args": {"correlation": i + 1, "device": 0, "stream": 7}})  # fmt: skip
    return out


@pytest.mark.parametrize(
    ("runtime_cat", "launch", "kernel_cat", "header", "kind", "graphs"),
    [
        ("cuda_runtime", "cudaLaunchKernel", "kernel", {}, CUDA, "capture the step in a CUDA graph"),
        ("cuda_runtime", "hipLaunchKernel", "kernel", {}, ROCM, "capture the step in a HIP graph"),
        (
            "cuda_runtime",
            "cudaLaunchKernel",
            "kernel",
            {"deviceProperties": [{"id": 0, "name": "AMD Instinct MI300X"}]},
            ROCM,
            "capture the step in a HIP graph",
        ),
        ("xpu_runtime", "zeCommandListAppendLaunchKernel", "kernel", {}, XPU, None),
        ("privateuse1_runtime", "launch", "kernel", {}, OTHER, None),
    ],
)
def test_the_kind_comes_from_the_file_and_the_advice_follows(
    tmp_path: Path,
    runtime_cat: str,
    launch: str,
    kernel_cat: str,
    header: dict[str, Any],
    kind: str,
    graphs: str | None,
) -> None:
    t = load_paths([str(_trace(tmp_path, _launch_bound_events(runtime_cat, launch, kernel_cat), **header))])
    assert t.accelerator(0, 0) == kind
    (f,) = [f for f in find_findings(t) if f.kind == "launch_overhead"]
    noun = DeviceWords(kind).noun
    assert f"than the {noun} spends running them" in f.detail
    if graphs:
        assert graphs in f.detail
    else:
        assert "graph" not in f.detail and "CUDA" not in f.detail


def test_an_mtia_process_names_its_lanes(tmp_path: Path) -> None:
    events = _launch_bound_events("mtia_runtime", "runFunction", "mtia_ccp_events")
    events.append({"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "MTIA 0"}})
    t = load_paths([str(_trace(tmp_path, events))])
    assert t.accelerator(0, 0) == MTIA and t.device_label(0, 0) == "MTIA 0"
    assert all("GPU" not in f.title + f.detail and "CUDA" not in f.detail for f in find_findings(t))
