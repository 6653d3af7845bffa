"""``gputop-trace ops``: JSON, CSV and text on the H200 reference recording (tests/data) and the corpus GPT trace;
the summary's memory peak; bad input."""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import run_cli
from tests.conftest import corpus_file

DATA = Path(__file__).resolve().parents[1] / "data"
H200 = str(DATA / "ops_cuda.json.gz")


def _doc(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = run_cli(capsys, "ops", *argv, "--json")
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    assert doc["command"] == "ops" and doc["schema_version"] == 2
    return doc


def test_json_rows_are_the_operators_sorted_by_self_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _doc(capsys, H200, "--no-python")
    rows = doc["ops"]
    assert {r["kind"] for r in rows} == {"op", "annotation"}
    selfs = [r["self_cpu_ns"] for r in rows]
    assert selfs == sorted(selfs, reverse=True)
    mm = next(r for r in rows if r["name"] == "aten::mm")
    assert mm["self_device_ns"] == mm["device_total_ns"] > 0 and mm["flops"] > 0 and mm["precision"] == "FP32"
    assert mm["achieved_flop_per_s"] == pytest.approx(mm["flops"] / (mm["device_total_ns"] / 1e9))
    assert doc["gpu"] == "NVIDIA H200" and 0 < mm["peak_pct"] <= 100
    assert "estimates from the input shapes" in str(doc["estimates"])
    steps = doc["steps"]
    assert [s["name"] for s in steps] == ["step_0", "step_1", "step_2"]
    assert all(s["flops"] > 0 and 0 < s["mfu_pct"] < 100 for s in steps)


def test_all_adds_every_key_and_group_by_shape_splits(capsys: pytest.CaptureFixture[str]) -> None:
    every = _doc(capsys, H200, "--all")["ops"]
    kinds = {r["kind"] for r in every}
    assert {"op", "annotation", "python", "runtime", "kernel", "memcpy", "memset", "gpu_annotation"} <= kinds
    by_shape = _doc(capsys, H200, "--group-by", "shape", "--name", "aten::addmm")["ops"]
    assert len(by_shape) == 5
    assert all(r["shapes"].startswith("[[") and r["flops"] % (2 * r["count"]) == 0 for r in by_shape)


def test_memory_peak_in_ops_and_summary(capsys: pytest.CaptureFixture[str]) -> None:
    with gzip.open(H200, "rt") as f:
        records = [e["args"] for e in json.load(f)["traceEvents"] if e.get("name") == "[memory]"]
    peak = max(a["Total Allocated"] for a in records if a["Device Type"] == 1)
    (gpu,) = [m for m in _doc(capsys, H200)["memory"] if m["device"] == 0]
    assert gpu["peak_allocated_bytes"] == peak and gpu["peak_op"]
    code, out, _ = run_cli(capsys, "summary", H200, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["events"]["memory"] == len(records)
    assert [m["peak_allocated_bytes"] for m in doc["memory"] if m["device"] == 0] == [peak]
    code, out, _ = run_cli(capsys, "summary", H200)
    assert "memory peak, GPU 0:" in out


def test_csv_and_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "ops", H200, "--csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and rows and rows[0]["name"] and int(rows[0]["count"]) >= 1
    code, out, _ = run_cli(capsys, "ops", H200, "--top", "5", "--sort", "device")
    assert code == 0 and "Operators (5 of" in out and "by device" in out
    assert "Memory peak, GPU 0:" in out and "model FLOPs utilisation" in out
    code, out, _ = run_cli(capsys, "ops", H200, "--name", "no such op")
    assert code == 0 and "No operators matching that name" in out


def test_bad_rank_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "ops", H200, "--rank", "3")
    assert code == 2 and "no rank 3" in err


@pytest.mark.corpus
def test_gpt_corpus_trace_has_bf16_gemms_near_peak(capsys: pytest.CaptureFixture[str]) -> None:
    """The corpus GPT step runs its linears under autocast: FP32 inputs, BF16 GEMMs; the rate is held against
    the BF16 peak (the GEMM's type), and it is a plausible share of it."""
    doc = _doc(capsys, corpus_file("kineto/h200_gpt_train_small.json.gz"), "--group-by", "shape")
    linears = [r for r in doc["ops"] if r["name"] == "aten::linear" and r["flops"]]
    assert linears and all(r["precision"] == "BF16" for r in linears)
    assert all(r["peak_pct"] is not None and 10 < r["peak_pct"] < 100 for r in linears)
