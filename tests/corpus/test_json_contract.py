"""The --json envelope every command shares (README "JSON output"): versioned, integer ns, full names."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.conftest import CORPUS, SAMPLES


def _json(*args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "gputop_trace", *args], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def _assert_envelope(doc: dict[str, object], command: str) -> None:
    from gputop_trace import __version__

    assert doc["schema_version"] == 2
    assert doc["tool"] == "gputop-trace"
    assert doc["version"] == __version__
    assert doc["command"] == command
    src = doc["source"]
    assert isinstance(src, dict)
    assert set(src) >= {"path", "format", "producer", "ranks", "truncated_bytes"}
    assert isinstance(doc["warnings"], list)


def test_summary_of_the_bundled_sample_without_a_path() -> None:
    doc = _json("summary", "--json")
    _assert_envelope(doc, "summary")
    assert str(doc["source"]["path"]).endswith("h200_train_step.json.gz")
    assert doc["source"]["format"] == "kineto"


def test_summary_fields_and_types_on_the_sample() -> None:
    doc = _json("summary", str(SAMPLES / "h200_train_step.json.gz"), "--json")
    _assert_envelope(doc, "summary")
    (dev,) = doc["devices"]
    assert dev["name"] == "NVIDIA H200" and dev["sm_count"] == 132
    for k in ("span_ns", "busy_ns", "idle_ns"):
        assert isinstance(dev[k], int)
    assert dev["span_ns"] == dev["busy_ns"] + dev["idle_ns"]
    assert 0.0 <= dev["busy_pct"] <= 100.0
    events = doc["events"]
    assert set(events) == {"kernel", "memcpy", "memset", "api", "cpu_op", "range", "python", "other", "memory"}
    top = doc["top_kernels"]
    assert isinstance(top, list) and len(top) == 10
    totals = [r["total_ns"] for r in top]
    assert totals == sorted(totals, reverse=True)
    for r in top:
        assert isinstance(r["total_ns"], int) and isinstance(r["count"], int)
    # names are the full names from the file (shortening is for the screen only)
    assert any(r["name"].startswith("void at::native::") and r["name"].endswith(")") for r in top)
    assert isinstance(doc["findings"], list)


@pytest.mark.corpus
def test_summary_json_of_the_ddp_directory_lists_both_ranks() -> None:
    doc = _json("summary", str(CORPUS / "kineto/h200_ddp_2gpu"), "--json")
    _assert_envelope(doc, "summary")
    assert doc["source"]["ranks"] == [0, 1]
    assert sorted((d["rank"], d["device"]) for d in doc["devices"]) == [(0, 0), (1, 1)]


def test_kernel_rows_carry_the_inductor_object() -> None:
    doc = _json("kernels", str(SAMPLES / "h200_compiled.json.gz"), "--json")
    _assert_envelope(doc, "kernels")
    rows = {r["name"]: r for r in doc["kernels"]}
    assert all("inductor" in r for r in rows.values())
    ind = rows["triton_per_fused_addmm_gelu_native_layer_norm_0"]["inductor"]
    assert set(ind) == {
        "kind",
        "fused_ops",
        "index",
        "launch_args",
        "graphs",
        "source_nodes",
        "post_grad_nodes",
        "source_lines",
        "output_code",
    }
    assert (ind["kind"], ind["fused_ops"], ind["index"]) == (
        "persistent reduction",
        ["addmm", "gelu", "native_layer_norm"],
        0,
    )
    assert all(r["inductor"] is None for n, r in rows.items() if not n.startswith("triton_"))
    findings = _json("summary", str(SAMPLES / "h200_compiled.json.gz"), "--json")["findings"]
    assert all("fuse small ops (torch.compile)" not in f["detail"] for f in findings)
