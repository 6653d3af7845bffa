"""Nsight Systems exports: ``gaps --gap-threshold 1ms --json`` against ``nsys analyze -r gpu_gaps:gap=1``, and the
analyses on the rest of the nsys corpus.

These need the nsys loader (``gputop_trace.parsers.nsys.loader``); where it is not installed they are skipped.
"""

from __future__ import annotations

import csv
import json
from functools import cache
from pathlib import Path

import pytest

from gputop_trace.analysis.findings.assemble import find_findings
from gputop_trace.analysis.gaps.detect import find_gaps
from gputop_trace.analysis.ranges import range_summary
from gputop_trace.analysis.transfers import transfer_overlap
from gputop_trace.load.loader import load_paths
from gputop_trace.model.trace import Trace
from tests.cli_run import run_cli
from tests.conftest import corpus_file

pytestmark = pytest.mark.corpus

EXPECTED = ("lockfuehrer__beast_ressoruces__report2", "martisu1631998__kmeans-parallel__report2")


def _nsys(stem: str) -> str:
    return corpus_file(f"nsys/{stem}.sqlite")


@cache
def _load(stem: str) -> Trace:
    return load_paths([_nsys(stem)])


def _expected(stem: str) -> list[tuple[int, int, int, int]]:
    path = Path(corpus_file(f"nsys/expected/{stem}.gpu_gaps_gap1ms.csv"))
    with path.open() as fh:
        return [
            (int(r["Start (ns)"]), int(r["Duration (ns)"]), int(r["PID"]), int(r["Device ID"]))
            for r in csv.DictReader(fh)
        ]


@pytest.mark.parametrize("stem", EXPECTED)
def test_gaps_json_matches_nsys_gpu_gaps_row_for_row(stem: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "gaps", _nsys(stem), "--gap-threshold", "1ms", "--json")
    assert code == 0
    doc = json.loads(out)
    ours = [(g["start_ns"], g["dur_ns"], g["pid"], g["device"]) for d in doc["devices"] for g in d["gaps"]]
    expected = _expected(stem)
    # the same rows in the same order: longest first, ties by start (nsys' Row# order)
    assert ours == expected


@pytest.mark.parametrize("stem", EXPECTED)
def test_every_nsys_gap_is_attributed(stem: str) -> None:
    t = _load(stem)
    for d in find_gaps(t, 1_000_000):
        for g in d.gaps:
            assert g.launch_event >= 0  # nsys correlates every GPU op with its launch call
            assert sum(g.breakdown_ns.values()) == g.window_ns


def test_export_without_gpu_activity_reports_it() -> None:
    t = _load("h200_nsys2022.4_nvtx_osrt_only")
    assert find_gaps(t) == []
    (f,) = find_findings(t)
    assert f.kind == "no_gpu_activity"
    assert transfer_overlap(t).copies == []


def test_two_gpu_export_has_a_row_per_device_and_nvtx_operator_ranges_grouped() -> None:
    t = _load("GindaChen__nsys-ai__h100_2gpu_1s")
    assert [d.device for d in find_gaps(t)] == [0, 1]
    rows = {r.name: r for r in range_summary(t)}
    # emit_nvtx ranges carry ", op_id = N" per call; they group by operator
    assert "aten::item" in rows and rows["aten::item"].count > 1
    assert not any(", op_id = " in n for n in rows)


def test_mpi_domain_ranges() -> None:
    t = _load("hpcgroup__pipit__saxpy-mpi-cuda_nsys_perlmutter0")
    rows = {(r.domain, r.name): r for r in range_summary(t)}
    assert ("MPI", "MPI_Send") in rows and rows[("MPI", "MPI_Send")].count == 10


def test_synchronous_pageable_copies_are_flagged() -> None:
    rep = transfer_overlap(_load("kmcho2019__Rodinia_3.1_Gaussian__report3"))
    (flag,) = [f for f in rep.flags if f.flag == "sync_copy"]
    assert flag.count == 5 and all(r.api and not r.api.endswith("Async") for r in flag.rows)
    assert all(r.host_memory == "pageable" for r in flag.rows)
