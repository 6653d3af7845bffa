"""Opt-in (``GPUTOP_REAL_NCU=1``): the whole drill-down for real — a PyTorch workload annotated with
``gputop_trace.annotate`` recorded under torch.profiler, then profiled with the real ncu through
``gputop-trace ncu --kernel ... --nvtx step_2`` (scripts/real_ncu_check.py). Needs ncu, a GPU and PyTorch with
CUDA; set ``GPUTOP_REAL_NCU_CLOCK=base`` where ncu may lock the clocks (default ``none``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT


def _skip_reason() -> str | None:
    if os.environ.get("GPUTOP_REAL_NCU") != "1":
        return "set GPUTOP_REAL_NCU=1 to profile a real workload with the real ncu on a GPU"
    from gputop_trace.ncu.locate import find_ncu

    if find_ncu() is None:
        return "GPUTOP_REAL_NCU=1 but ncu is not installed (PATH, GPUTOP_NCU, /usr/local/cuda/bin)"
    probe = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        return "GPUTOP_REAL_NCU=1 but PyTorch is not importable"
    if probe.stdout.strip() != "True":
        return "GPUTOP_REAL_NCU=1 but PyTorch sees no CUDA GPU"
    return None


@pytest.mark.slow
def test_real_drilldown_on_a_gpu(tmp_path: Path) -> None:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    clock = os.environ.get("GPUTOP_REAL_NCU_CLOCK", "none")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "real_ncu_check.py"), "--out", str(tmp_path), "--clock-control", clock],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    summary = json.loads((tmp_path / "summary.json").read_text())
    failed = [c for c in summary["checks"] if not c["passed"]]
    assert proc.returncode == 0 and summary["ok"], (
        f"failed checks: {failed}\n{proc.stdout[-4000:]}{proc.stderr[-2000:]}"
    )
    names = {c["check"] for c in summary["checks"]}
    assert "annotate → record_function ranges in the Kineto trace" in names
    assert "gemm-nvtx-full: GEMM verdict" in names
    assert summary["verdicts"]["gemm-nvtx-full"]["verdict"] == "compute-bound"
