"""``gputop-trace ncu``: opening reports (text and the JSON contract) and profiling through the stand-in ncu."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gputop_trace.cli.main import main
from tests.conftest import wait_gone

pytestmark = pytest.mark.corpus

JSON_FIELDS = {
    "name",
    "launch",
    "duration_ns",
    "sm_pct",
    "memory_pct",
    "dram_pct",
    "achieved_occupancy_pct",
    "theoretical_occupancy_pct",
    "occupancy_limiter",
    "registers",
    "flops",
    "dram_bytes",
    "intensity_flop_per_byte",
    "ridge_flop_per_byte",
    "verdict",
    "explanation",
    "stalls",
    "tensor_pipe_pct",
    "rules",
}


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict[str, Any]]:
    code = main(argv)
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    # the envelope every command shares (README "JSON output")
    assert doc["schema_version"] == 1 and doc["tool"] == "gputop-trace" and doc["command"] == "ncu"
    assert set(doc["source"]) >= {"path", "format", "producer", "ranks", "truncated_bytes"}
    assert isinstance(doc["warnings"], list) and isinstance(doc["kernels"], list)
    return code, doc


def test_tc_report_json_calls_the_gemm_compute_bound(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _json(capsys, ["ncu", str(corpus / "ncu" / "tc.ncu-rep"), "--json"])
    assert code == 0
    assert doc["schema_version"] == 1 and doc["command"] == "ncu"
    assert doc["source"]["format"] == "ncu"
    (k,) = doc["kernels"]
    assert set(k) >= JSON_FIELDS
    assert k["verdict"] == "compute-bound" and k["tensor_use"] == "heavy" and k["tensor_pipe_pct"] > 85
    assert k["name"] == "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
    assert k["duration_ns"] == 177888 and isinstance(k["duration_ns"], int)
    assert k["flops"] == 2 * 4096**3 and isinstance(k["dram_bytes"], int)
    assert k["intensity_flop_per_byte"] == pytest.approx(k["flops"] / k["dram_bytes"], rel=1e-6)
    assert k["intensity_flop_per_byte"] > k["ridge_flop_per_byte"]
    assert k["stalls"][0] == {
        "reason": "barrier",
        "label": "barrier",
        "value": pytest.approx(5.9758, abs=1e-3),
        "share_pct": pytest.approx(30.68, abs=0.01),
    }
    assert {"name", "type", "text"} <= set(k["rules"][0]) and k["rules"][0]["type"] == "OPT"
    assert "Tensor cores are busy" in k["explanation"]


def test_full_report_json_verdict_from_its_numbers(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _json(capsys, ["ncu", str(corpus / "ncu" / "full.ncu-rep"), "--json"])
    (k,) = doc["kernels"]
    assert code == 0 and k["name"] == "fma_heavy"
    assert k["flops"] == pytest.approx(1056 * 256 * 4096 * 8, rel=2e-3)
    assert k["verdict"] == ("compute-bound" if k["intensity_flop_per_byte"] >= k["ridge_flop_per_byte"] else "x")
    assert k["occupancy_limiter"] == "none" and k["tensor_use"] == "none"
    assert k["launch"] is None  # an existing report does not say which launch of the name it was


def test_text_output_fits_80_columns(
    corpus: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["ncu", str(corpus / "ncu" / "tc.ncu-rep")]) == 0
    out = capsys.readouterr().out
    assert "COMPUTE-BOUND" in out and "heavy tensor-core use" in out and "Roofline" in out
    assert "this kernel" in out and "ridge 178" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_csv_page_opens_too(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _json(capsys, ["ncu", str(corpus / "ncu" / "details_basic.csv"), "--json"])
    (k,) = doc["kernels"]
    assert code == 0 and k["verdict"] == "memory-bound" and k["flops"] is None
    assert any("--set basic" in w for w in k["warnings"])


def test_bad_report_path_is_exit_code_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ncu", str(tmp_path / "missing.ncu-rep")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["ncu"]) == 2


def test_profile_with_yes_runs_and_opens_the_report(fake_ncu: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _json(
        capsys,
        [
            "ncu",
            "--kernel",
            "void at::native::foo<int>(int)",
            "--launch",
            "4",
            "--nvtx",
            "step_2",
            "--set",
            "detailed",
            "--clock-control",
            "none",
            "--yes",
            "--json",
            "--",
            sys.executable,
            "-c",
            "print('workload')",
        ],
    )
    assert code == 0
    run = doc["run"]
    assert run["returncode"] == 0 and run["launch_skip"] == 4 and run["nvtx_include"] == "step_2/"
    argv = run["command"]
    assert argv[argv.index("-k") + 1] == "regex:^foo$" and argv[argv.index("--set") + 1] == "detailed"
    assert argv[argv.index("--clock-control") + 1] == "none"
    assert argv[argv.index("--") + 1 :] == [sys.executable, "-c", "print('workload')"]
    (received,) = [json.loads(x) for x in fake_ncu.read_text().splitlines()]
    assert received == argv[1:]
    (k,) = doc["kernels"]
    assert k["launch"] == 4 and k["verdict"] == "compute-bound"
    assert str(run["report"]).startswith(os.environ["GPUTOP_CACHE_DIR"])


def test_profile_failure_prints_guidance_and_exit_2(
    fake_ncu: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NCU_SCENARIO", "no_kernel")
    code = main(["ncu", "--kernel", "foo", "--yes", "--", sys.executable, "-c", "pass"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2
    assert "No kernel matched" in err and "fma_heavy, saxpy, tiny" in err
    assert "gputop-trace ncu --kernel fma_heavy --" in err
    monkeypatch.setenv("FAKE_NCU_SCENARIO", "permission")
    code, doc = _json(capsys, ["ncu", "--kernel", "foo", "--yes", "--json", "--", sys.executable, "-c", "pass"])
    assert code == 2 and doc["error"]["kind"] == "permission" and doc["kernels"] == []


def test_without_yes_and_without_a_terminal_nothing_runs(fake_ncu: Path, tmp_path: Path) -> None:
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-m", "gputop_trace", "ncu", "--kernel", "foo", "--", sys.executable, "-c", "pass"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 2
    assert "ncu command:" in proc.stderr and "--yes" in proc.stderr
    assert not fake_ncu.exists()  # ncu was never started


def test_ncu_not_installed(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("GPUTOP_NCU", raising=False)
    monkeypatch.setattr("gputop_trace.ncu.locate.find_ncu", lambda: None)
    assert main(["ncu", "--kernel", "k", "--yes", "--", "./app"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "ncu was not found. Nsight Compute ships with the CUDA toolkit" in err and "GPUTOP_NCU" in err


def test_ncu_cli_path_needs_neither_textual_nor_numpy(corpus: Path) -> None:
    """A bare GPU box may lack them: opening a report and the JSON path import neither."""
    code = (
        "import sys; from gputop_trace.cli.main import main; rc = main(['ncu', sys.argv[1], '--json']); "
        "print('LOADED', sorted(m for m in ('textual', 'numpy', 'msgspec', 'pandas') if m in sys.modules), rc)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(corpus / "ncu" / "tc.ncu-rep")], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "LOADED [] 0"


def test_ctrl_c_stops_ncu_and_the_workload(fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NCU_SCENARIO", "slow")
    pid_file = tmp_path / "child.pid"
    monkeypatch.setenv("FAKE_NCU_CHILD_PID", str(pid_file))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gputop_trace",
            "ncu",
            "--kernel",
            "k",
            "--yes",
            "--",
            sys.executable,
            "-c",
            "import time; time.sleep(120)",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text():
            break
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)  # generous: a loaded CI machine, not a hang
    assert proc.returncode == 130 and "interrupted" in err
    assert wait_gone(int(pid_file.read_text())), "the workload survived Ctrl+C"
