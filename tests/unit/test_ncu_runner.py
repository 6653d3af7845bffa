"""The asynchronous ncu runner against the stand-in ncu (tests/fake_ncu/ncu) replaying the corpus: streaming,
no shell, cancel kills the process group, timeout, and every failure turned into guidance."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gputop_trace.ncu.drilldown import NcuCommand, build_ncu_command
from gputop_trace.ncu.report_reader import load_report
from gputop_trace.ncu.runner import NcuRunner, NcuRunResult, available_kernels, classify_run
from tests.conftest import wait_gone

pytestmark = pytest.mark.corpus

HOSTILE = "_Z3k$(touch${IFS}PWNED)`touch${IFS}PWNED2`;rm|x.*+?[2]{3}^\\"  # mangled: kept whole in -k


def _target(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def _command(tmp_path: Path, target: list[str], **kw: Any) -> NcuCommand:
    args: dict[str, Any] = {
        "launch_skip": 2,
        "report_base": str(tmp_path / "out" / "rep"),
        "log_path": str(tmp_path / "out" / "rep.log"),
    }
    args.update(kw)
    return build_ncu_command(str(args.pop("name", "void at::native::foo<int>(int)")), target, **args)


def _run(cmd: NcuCommand, **kw: Any) -> tuple[NcuRunResult, list[tuple[str, str]]]:
    lines: list[tuple[str, str]] = []
    runner = NcuRunner(cmd, on_line=lambda s, ln: lines.append((s, ln)), **kw)
    return asyncio.run(runner.run()), lines


def test_success_streams_both_sources_and_passes_argv_untouched(
    fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = [*_target("print('step 1'); print('step 2')"), "; rm -rf ~", "$(touch PWNED3)", "a b"]
    cmd = _command(tmp_path, target, name=HOSTILE, nvtx_range="step 2")
    monkeypatch.chdir(tmp_path)
    result, lines = _run(cmd, cwd=str(tmp_path))
    assert result.ok and result.failure is None and result.returncode == 0
    assert result.report_path == cmd.report_path and Path(cmd.report_path).is_file()
    # ncu got exactly the argument list, one element per argument: no shell split or expanded anything
    (argv,) = [json.loads(ln) for ln in fake_ncu.read_text().splitlines()]
    assert tuple(argv) == cmd.argv[1:]
    assert not list(tmp_path.glob("PWNED*"))
    assert ("app", "step 1") in lines and ("app", "step 2") in lines
    ncu_lines = [ln for s, ln in lines if s == "ncu"]
    assert any(ln.startswith("==PROF== Connected to process") for ln in ncu_lines)
    assert ncu_lines[-1] == f"==PROF== Report: {cmd.report_path}"
    assert result.log_lines == tuple(ncu_lines)
    assert any("unlocked GPU clocks" in w for w in result.warnings)
    (k,) = load_report(cmd.report_path).kernels
    assert k.name.startswith("nvjet_sm90")


def test_no_kernel_matched_lists_what_ncu_saw(fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NCU_SCENARIO", "no_kernel")
    result, _ = _run(_command(tmp_path, _target("print('app done: no error')"), nvtx_range="step_2"))
    assert result.returncode == 0  # ncu exits 0 here: the log decides
    g = result.failure
    assert g is not None and g.kind == "no_kernels"
    assert g.available_kernels == ("fma_heavy", "saxpy", "tiny")
    assert "without the NVTX filter" in g.text
    assert result.report_path is None


def test_permission_error_explains_both_fixes(fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NCU_SCENARIO", "permission")
    result, _ = _run(_command(tmp_path, _target("pass")))
    g = result.failure
    assert g is not None and g.kind == "permission"
    assert "NVreg_RestrictProfilingToAdminUsers=0" in g.text and "--cap-add=SYS_ADMIN" in g.text
    assert any("ERR_NVGPUCTRPERM" in d for d in g.details)


def test_target_failure_gives_exit_code_and_last_lines(
    fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NCU_SCENARIO", "target_failed")
    code = "import sys\nfor i in range(60): print('line', i)\nprint('Traceback: boom', file=sys.stderr)\nsys.exit(3)"
    result, _ = _run(_command(tmp_path, _target(code)))
    g = result.failure
    assert g is not None and g.kind == "target_failed" and g.exit_code == 3
    assert result.returncode == 3
    assert g.details[-1] == "Traceback: boom" and "line 59" in g.details
    assert len(g.details) <= 40


def test_cancel_kills_ncu_and_the_workload(fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NCU_SCENARIO", "slow")
    pid_file = tmp_path / "child.pid"
    monkeypatch.setenv("FAKE_NCU_CHILD_PID", str(pid_file))
    cmd = _command(tmp_path, _target("import time; print('working', flush=True); time.sleep(120)"))
    lines: list[tuple[str, str]] = []

    async def scenario() -> NcuRunResult:
        runner = NcuRunner(cmd, on_line=lambda s, ln: lines.append((s, ln)), timeout_s=60)
        task = asyncio.ensure_future(runner.run())
        for _ in range(200):
            await asyncio.sleep(0.05)
            if any("pass 2" in ln for _, ln in lines) and pid_file.exists():
                break
        assert runner.elapsed_s > 0
        runner.cancel()
        return await task

    t0 = time.monotonic()
    result = asyncio.run(scenario())
    assert time.monotonic() - t0 < 20
    assert result.failure is not None and result.failure.kind == "cancelled"
    child = int(pid_file.read_text())
    assert wait_gone(child), f"the workload (pid {child}) survived the cancel"


def test_timeout_stops_the_run(fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NCU_SCENARIO", "slow")
    result, lines = _run(_command(tmp_path, _target("pass")), timeout_s=0.8)
    assert result.failure is not None and result.failure.kind == "timeout"
    assert "--set detailed" in result.failure.text
    assert any(s == "ncu" and "Profiling" in ln for s, ln in lines)


@pytest.mark.parametrize(
    ("scenario", "kind", "phrase"),
    [
        ("unsupported", "unsupported_gpu", "--list-chips"),
        ("counters_busy", "counters_busy", "dcgmi profile --pause"),
        ("report_exists", "report_exists", "-f"),
        ("no_app", "target_not_found", "absolute path"),
    ],
)
def test_other_failures_become_guidance(
    fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: str, kind: str, phrase: str
) -> None:
    monkeypatch.setenv("FAKE_NCU_SCENARIO", scenario)
    result, _ = _run(_command(tmp_path, _target("pass")))
    assert result.failure is not None and result.failure.kind == kind
    assert phrase in result.failure.text


def test_missing_ncu_is_guidance_not_a_traceback(tmp_path: Path) -> None:
    cmd = build_ncu_command(
        "k", ["./app"], report_base=str(tmp_path / "r"), log_path=str(tmp_path / "r.log"), ncu=str(tmp_path / "no-ncu")
    )
    result, _ = _run(cmd)
    assert result.failure is not None and result.failure.kind == "not_installed"
    assert "nsight-compute" in result.failure.text and "GPUTOP_NCU" in result.failure.text


def test_classify_recorded_outputs(corpus: Path) -> None:
    """The corpus' recorded ncu outputs, classified directly."""
    blocks = {
        b.splitlines()[0]: b.splitlines()[1:]
        for b in (corpus / "ncu" / "error_cases.txt").read_text().split("### ")
        if b.strip()
    }

    def lines_of(prefix: str) -> list[str]:
        (key,) = [k for k in blocks if k.startswith(prefix)]
        return [ln for ln in blocks[key] if not ln.startswith("rc=")]

    # the program failed after the kernel was profiled: the report is complete, the failure is a warning
    after = lines_of("ncu --clock-control none -c 1 python3 -c import torch")
    g, warnings = classify_run(after, [], 5, report_exists=True)
    assert g is None and any("exited with code 5 after the kernel was profiled" in w for w in warnings)
    g, _ = classify_run(lines_of("ncu --clock-control none -c 1 python3 -c import sys"), [], 3, report_exists=False)
    assert g is not None and g.kind == "target_failed" and g.exit_code == 3
    g, _ = classify_run(
        lines_of("ncu --clock-control none --target-processes application-only"), [], 0, report_exists=False
    )
    assert g is not None and g.kind == "no_kernels"
    g, _ = classify_run(lines_of("ncu --clock-control none --page bogus"), [], 1, report_exists=False)
    assert g is not None and g.kind == "failed" and "--page" in g.text
    nokernel = (corpus / "ncu" / "nokernel.txt").read_text().splitlines()
    assert available_kernels(nokernel) == ["fma_heavy", "saxpy", "tiny"]
    namebase = (corpus / "ncu" / "namebase.txt").read_text().splitlines()
    assert available_kernels(namebase) == [
        "demo::fma_heavy(float *, int)",
        "tiny(float *)",
        "void saxpy<float>(int, T1, const T1 *, T1 *)",
    ]
