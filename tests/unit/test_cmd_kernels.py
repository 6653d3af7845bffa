"""``gputop-trace kernels``: the same figures as ``nsys stats -r cuda_gpu_kern_sum`` on nsys exports, and the
table, --json, --csv, filters and grouping options."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gputop_trace.analysis.kernels import kernel_table
from gputop_trace.cli.main import main
from gputop_trace.parsers.nsys import loader as nsys
from gputop_trace.report.kernels_json import round_half_up
from tests.conftest import CORPUS
from tests.fixtures.nsys_synth import PID, SynthExport

NSYS = CORPUS / "nsys"
EXPECTED = sorted(p.name.split(".cuda_gpu_kern_sum")[0] for p in (NSYS / "expected").glob("*.cuda_gpu_kern_sum.csv"))


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main(["kernels", "--json", *args]) == 0
    doc: dict[str, object] = json.loads(capsys.readouterr().out)
    return doc


@pytest.mark.corpus
def test_three_expected_reports_are_in_the_corpus() -> None:
    assert len(EXPECTED) == 3


@pytest.mark.corpus
@pytest.mark.parametrize("stem", EXPECTED)
def test_merge_devices_reproduces_nsys_stats_cuda_gpu_kern_sum(stem: str, capsys: pytest.CaptureFixture[str]) -> None:
    with open(NSYS / "expected" / f"{stem}.cuda_gpu_kern_sum.csv", newline="") as f:
        want = list(csv.DictReader(f))
    doc = run_json(capsys, "--merge-devices", str(NSYS / f"{stem}.sqlite"))
    rows = doc["kernels"]
    assert isinstance(rows, list)
    # same rows in the same order (nsys: total desc, then instances, then name)
    assert [r["name"] for r in rows] == [w["Name"] for w in want]
    for r, w in zip(rows, want, strict=True):
        assert r["device"] is None and r["rank"] is None
        assert r["total_ns"] == int(w["Total Time (ns)"])
        assert r["count"] == int(w["Instances"])
        assert r["min_ns"] == int(w["Min (ns)"])
        assert r["max_ns"] == int(w["Max (ns)"])
        assert r["mean_ns"] == float(w["Avg (ns)"])
        assert r["median_ns"] == float(w["Med (ns)"])
        assert r["std_ns"] == float(w["StdDev (ns)"])
        assert round_half_up(float(r["pct"]), 1) == float(w["Time (%)"])
    # Time (%) from the unrounded figure too (the JSON keeps three decimals)
    full = kernel_table(nsys.load(str(NSYS / f"{stem}.sqlite")), merge_devices=True)
    pct = {k.name: round_half_up(k.pct, 1) for k in full}
    assert all(pct[w["Name"]] == float(w["Time (%)"]) for w in want)


@pytest.mark.corpus
@pytest.mark.parametrize("stem", ["kmcho2019__Rodinia_3.1_Gaussian__report3", "lockfuehrer__beast_ressoruces__report2"])
def test_on_one_gpu_the_default_per_device_rows_are_nsys_stats_rows(
    stem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(NSYS / f"{stem}.sqlite")
    merged = run_json(capsys, "--merge-devices", path)["kernels"]
    per_device = run_json(capsys, path)["kernels"]
    assert isinstance(merged, list) and isinstance(per_device, list)
    assert {r["device"] for r in per_device} == {0}
    keys = ("name", "count", "total_ns", "mean_ns", "median_ns", "min_ns", "max_ns", "std_ns", "pct")
    assert [[r[k] for k in keys] for r in per_device] == [[r[k] for k in keys] for r in merged]


@pytest.mark.corpus
def test_per_device_rows_split_the_two_gpu_export(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(NSYS / "GindaChen__nsys-ai__h100_2gpu_1s.sqlite")
    per_device = run_json(capsys, path)["kernels"]
    merged = run_json(capsys, "--merge-devices", path)["kernels"]
    assert isinstance(per_device, list) and isinstance(merged, list)
    assert {r["device"] for r in per_device} == {0, 1}
    assert len(per_device) == 2 * len(merged)
    totals: dict[str, int] = {}
    for r in per_device:
        totals[r["name"]] = totals.get(r["name"], 0) + r["total_ns"]
    assert totals == {r["name"]: r["total_ns"] for r in merged}
    only1 = run_json(capsys, "--device", "1", path)["kernels"]
    assert isinstance(only1, list) and {r["device"] for r in only1} == {1}
    assert sum(r["count"] for r in only1) == 1721
    assert round(sum(r["pct"] for r in only1), 1) == 100.0


def synthetic(tmp_path: Path) -> str:
    ex = SynthExport()
    ex.thread(PID, "python3")
    corr = 1
    for i, (name, grid, dur) in enumerate(
        [("void gemm<float>(float *)", (64, 1, 1), 900), ("void gemm<float>(float *)", (128, 1, 1), 1500)] * 3
        + [("relu(float *)", (32, 1, 1), 100)] * 4
    ):
        ex.nvtx(i * 10_000, i * 10_000 + 5000, tid=PID, text="forward" if i % 2 else "backward")
        ex.runtime(i * 10_000 + 100, i * 10_000 + 200, tid=PID, corr=corr, name="cudaLaunchKernel_v7000")
        ex.kernel(i * 10_000 + 1000, i * 10_000 + 1000 + dur, corr=corr, name=name, grid=grid)
        corr += 1
    return str(ex.write(tmp_path / "k.sqlite"))


def test_json_rows_are_per_name_and_device(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, synthetic(tmp_path))
    assert doc["command"] == "kernels" and doc["schema_version"] == 2
    assert doc["group_by"] == "name" and doc["merged_devices"] is False
    rows = doc["kernels"]
    assert isinstance(rows, list)
    assert [(r["name"], r["device"], r["count"], r["total_ns"]) for r in rows] == [
        ("void gemm<float>(float *)", 0, 6, 7200),
        ("relu(float *)", 0, 4, 400),
    ]
    gemm = rows[0]
    assert (gemm["mean_ns"], gemm["median_ns"], gemm["min_ns"], gemm["max_ns"]) == (1200.0, 1200.0, 900, 1500)
    assert gemm["std_ns"] == round_half_up(328.63353450309969, 1)  # sample standard deviation
    assert gemm["pct"] == round_half_up(100 * 7200 / 7600, 3)
    assert gemm["raw_name"] == "_Z4kernIiEvPi"
    assert doc["total_ns"] == 7600


def test_group_by_geometry_and_launcher(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = synthetic(tmp_path)
    geo = run_json(capsys, "--group-by", "geometry", path)["kernels"]
    assert isinstance(geo, list)
    assert sorted((r["name"], r["count"]) for r in geo) == [
        ("relu(float *) grid(32, 1, 1) block(256, 1, 1)", 4),
        ("void gemm<float>(float *) grid(128, 1, 1) block(256, 1, 1)", 3),
        ("void gemm<float>(float *) grid(64, 1, 1) block(256, 1, 1)", 3),
    ]
    launcher = run_json(capsys, "--group-by", "launcher", path)["kernels"]
    assert isinstance(launcher, list)
    assert sorted((r["name"], r["count"]) for r in launcher) == [("backward", 5), ("forward", 5)]


def test_csv_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kernels", "--csv", synthetic(tmp_path)]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["name"], r["count"], r["total_ns"], r["grid"]) for r in rows] == [
        ("void gemm<float>(float *)", "6", "7200", "[64, 1, 1]"),
        ("relu(float *)", "4", "400", "[32, 1, 1]"),
    ]


def test_table_output_and_limit(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gputop_trace", "kernels", "--limit", "1", synthetic(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "120"},
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Top 1 of 2 kernel rows" in proc.stdout
    assert "gemm" in proc.stdout and "relu" not in proc.stdout
    assert "7.20 µs" in proc.stdout or "7.2 µs" in proc.stdout


def test_help_explains_how_to_reproduce_nsys_stats() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gputop_trace", "kernels", "--help"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "nsys stats -r cuda_gpu_kern_sum" in text and "--merge-devices" in text
    assert "sample standard deviation" in text


def test_bad_inputs_exit_2(tmp_path: Path) -> None:
    text = tmp_path / "notes.sqlite"
    text.write_text("this is not a database\n")
    proc = subprocess.run(
        [sys.executable, "-m", "gputop_trace", "kernels", str(text)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "not a SQLite database" in " ".join(proc.stderr.split())
