"""``gputop-trace record`` (issue 19 §4–5): a real CPU PyTorch script under ``--torch`` (the trace opens with its
steps), ``--nsys`` with the stand-in nsys replaying a recorded export, ``--ncu`` through the stand-in ncu, the
confirmation, and the message without nsys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gputop_trace.analysis.steps import find_steps
from gputop_trace.capture.commands import NSYS_MISSING, nsys_profile_command, torch_command
from gputop_trace.cli.main import main
from gputop_trace.load.loader import load_file
from tests.conftest import CORPUS, FAKE_NSYS_DIR, ROOT

TRAIN = ROOT / "tests" / "fixtures" / "tiny_train.py"


def test_torch_command_runs_the_script_through_the_launcher() -> None:
    argv = torch_command(["python3", "train.py", "--lr", "1"], "t.json", steps=4, with_stack=False)
    assert argv[0] == "python3" and argv[1].endswith("capture/torch_launcher.py")
    assert argv[argv.index("--steps") + 1] == "4" and "--no-stack" in argv
    assert argv[-4:] == ["--", "train.py", "--lr", "1"]
    with pytest.raises(ValueError, match=r"python train\.py"):
        torch_command(["./train.sh"], "t.json")


def test_record_torch_runs_a_real_cpu_script_and_the_trace_opens_with_its_steps(
    torch_required: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tiny.pt.trace.json"
    argv = ["record", "--torch", "--steps", "3", "--out", str(out), "--yes", "--no-open", "--"]
    assert main([*argv, sys.executable, str(TRAIN), "--steps", "6"]) == 0
    captured = capsys.readouterr()
    assert "torch.profiler command:" in captured.err and str(TRAIN) in captured.err
    assert "3 steps" in captured.out
    trace = load_file(str(out), use_cache=False)
    (steps,) = find_steps(trace)
    assert [trace.names[trace.name[e]] for e in steps.events] == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    names = set(trace.names)
    assert "aten::addmm" in names and "Optimizer.step#SGD.step" in names  # record_shapes / CPU ops of the script
    _summary_says_where_the_host_time_went(str(out), capsys)


def _summary_says_where_the_host_time_went(path: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 31, 1: the summary of a CPU-only recording names its aten operators by self CPU time (as ``ops`` has
    them), its step time, and a first finding about a CPU run that names the same operators."""
    assert main(["summary", "--json", path]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["devices"] == [] and doc["steps"][0]["count"] == 3
    host = doc["host"]
    top = [r["name"] for r in host["top_ops"]]
    assert {"aten::addmm", "aten::mm"} <= set(top)  # the MLP's matrix products, forward and backward
    assert main(["ops", "--json", path]) == 0
    ops = {r["name"]: r for r in json.loads(capsys.readouterr().out)["ops"]}
    for r in host["top_ops"]:  # the same figures as ops
        assert (r["count"], r["self_cpu_ns"], r["cpu_total_ns"]) == (
            ops[r["name"]]["count"],
            ops[r["name"]]["self_cpu_ns"],
            ops[r["name"]]["cpu_total_ns"],
        )
    assert [r["self_cpu_ns"] for r in host["top_ops"]] == sorted(
        (r["self_cpu_ns"] for r in host["top_ops"]), reverse=True
    )
    assert host["self_cpu_total_ns"] == sum(r["self_cpu_ns"] for r in ops.values() if r["kind"] in ("op", "annotation"))
    (first,) = [f for f in doc["findings"] if f["priority"] == 1]
    assert first["kind"] == "no_gpu_activity" and "a CPU run" in first["detail"]
    assert f"Where it went, by self CPU time: {top[0]} " in first["detail"]
    assert [o["name"] for o in first["evidence"]["top_ops"]] == top[:3]
    assert main(["summary", path]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "step time: " in text and "mean over 3 steps" in text
    assert "Host time by operator" in text and "aten::addmm" in text and "aten::mm" in text
    assert "0 ns 0 ns" not in text  # no GPU columns for a profile without a GPU


def test_record_torch_too_few_steps_says_so(torch_required: None, tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gputop_trace",
            "record",
            "--torch",
            "--out",
            str(out),
            "--yes",
            "--no-open",
            "--",
            sys.executable,
            str(TRAIN),
            "--steps",
            "1",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 2 and "fewer than 3 optimizer steps" in proc.stderr and not out.exists()


def test_record_asks_before_running(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gputop_trace",
            "record",
            "--torch",
            "--out",
            str(tmp_path / "t.json"),
            "--",
            sys.executable,
            "-c",
            f"open({str(marker)!r}, 'w')",
        ],
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2 and not marker.exists()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gputop_trace",
            "record",
            "--nsys",
            "--nsys-path",
            sys.executable,
            "--out",
            str(tmp_path / "r"),
            "--",
            "touch",
            str(marker),
        ],
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2 and "without confirmation" in proc.stderr and not marker.exists()
    assert "--trace=cuda,nvtx,osrt" in proc.stderr and "export --type sqlite" in proc.stderr


@pytest.mark.corpus
def test_record_nsys_with_a_stand_in_replaying_a_recorded_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "nsys.jsonl"
    monkeypatch.setenv("PATH", f"{FAKE_NSYS_DIR}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NSYS_LOG", str(log))
    monkeypatch.setenv("FAKE_NSYS_EXPORT", str(CORPUS / "nsys" / "0x822a5b87__test-cuda__report1.sqlite"))
    monkeypatch.delenv("GPUTOP_NSYS", raising=False)
    base = tmp_path / "run"
    assert main(["record", "--nsys", "--out", str(base), "--yes", "--no-open", "--", "true"]) == 0
    profile, export = [json.loads(x) for x in log.read_text().splitlines()]
    assert profile == nsys_profile_command(["true"], str(base), "nsys")[1:]
    assert export == ["export", "--type", "sqlite", "--output", f"{base}.sqlite", f"{base}.nsys-rep"]
    out = capsys.readouterr().out
    assert f"{base}.sqlite" in out and "events" in out
    trace = load_file(f"{base}.sqlite", use_cache=False)
    assert trace.n_events > 0


def test_record_nsys_without_nsys_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("GPUTOP_NSYS", raising=False)
    monkeypatch.setattr("gputop_trace.capture.commands.NSYS_PLACES", ())
    assert main(["record", "--nsys", "--yes", "--", "true"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "nsys (Nsight Systems) is not installed" in err and "developer.nvidia.com/nsight-systems" in err
    assert NSYS_MISSING.startswith("nsys (Nsight Systems)")


@pytest.mark.corpus
def test_record_ncu_is_the_ncu_kernel_path(fake_ncu: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["record", "--ncu", "--kernel", "saxpy", "--out", str(tmp_path / "r"), "--yes", "--", "true"])
    assert code == 0, capsys.readouterr().err
    (argv,) = [json.loads(x) for x in fake_ncu.read_text().splitlines() if '"-k"' in x]
    assert argv[argv.index("-k") + 1] == "regex:^saxpy$"
