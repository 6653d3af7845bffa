"""``gputop-trace summary``: findings first (text and JSON), the analysis sections, and ``--fail-on``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli_run import run_cli
from tests.conftest import corpus_file

GPT = corpus_file("kineto/h200_gpt_train_small.json.gz")


@pytest.mark.corpus
def test_text_puts_the_findings_first(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # the layout of an 80-column terminal (a pipe is as wide as it needs)
    code, out, _ = run_cli(capsys, "summary", GPT)
    assert code == 0
    fix = out.index("What to fix first")
    assert fix < out.index("GPU busy time") < out.index("Idle gaps") < out.index("Exposed copy time")
    assert "1. " in out[fix:] and "data_load" in out[fix : out.index("GPU busy time")]
    assert "Top 10 ranges by CPU time" in out
    assert max(len(line) for line in out.splitlines()) <= 80


@pytest.mark.corpus
def test_json_findings_and_sections(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "summary", GPT, "--json")
    assert code == 0
    doc = json.loads(out)
    fs = doc["findings"]
    assert [f["priority"] for f in fs] == list(range(1, len(fs) + 1))
    assert all("rank" not in f for f in fs)  # a finding's place is "priority": "rank" reads as a GPU rank
    for f in fs:
        assert f["title"] and f["detail"] and isinstance(f["evidence"], dict) and 0 <= f["severity"] <= 1
    idle = next(f for f in fs if f["kind"] == "idle_gaps" and f["evidence"]["cause"] == "data_loading")
    (dev,) = doc["gaps"]
    # evidence times are in the file's time base, inside the GPU's active span; events are described
    for g in idle["evidence"]["longest"]:
        assert dev["first_ns"] <= g["start_ns"] <= dev["last_ns"]
        assert g["cause_event"]["name"] == "data_load"
    assert dev["first_ns"] <= idle["interval"][0] < idle["interval"][1] <= dev["last_ns"]
    assert doc["gap_threshold_ns"] == 20_000 and len(dev["longest"]) == 5
    assert doc["transfers"]["exposed_ns"] > 24_000_000 and "copies" not in doc["transfers"]
    assert doc["top_ranges"][0]["name"] == "step_1"


@pytest.mark.corpus
def test_fail_on(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "summary", GPT, "--fail-on", "idle=50%,pageable_async")
    assert code == 1
    assert "idle 59.7% > 50%" in err and "pageable_async present" in err
    code, _, err = run_cli(capsys, "summary", GPT, "--json", "--fail-on", "idle=80,exposed=1s,sync_copy")
    assert code == 0 and err == ""
    code, _, err = run_cli(capsys, "summary", GPT, "--fail-on", "severity=25%")
    assert code == 1 and "costs" in err
    code, _, err = run_cli(capsys, "summary", GPT, "--fail-on", "idle=120")
    assert code == 2 and "percentage" in err
    code, _, err = run_cli(capsys, "summary", GPT, "--fail-on", "speed=fast")
    assert code == 2 and "unknown condition" in err


def test_a_trace_without_gpu_work_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "cpu_only.json"
    p.write_text(
        json.dumps(
            {
                "traceEvents": [
                    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 100, "pid": 1, "tid": 1},
                    {"ph": "X", "cat": "user_annotation", "name": "step", "ts": 0, "dur": 500, "pid": 1, "tid": 1},
                ]
            }
        )
    )
    code, out, _ = run_cli(capsys, "summary", str(p), "--json")
    doc = json.loads(out)
    assert code == 0 and [f["kind"] for f in doc["findings"]] == ["no_gpu_activity"]
    assert doc["gaps"] == [] and doc["transfers"]["devices"] == []
    code, _, _ = run_cli(capsys, "summary", str(p), "--fail-on", "any")
    assert code == 1
    code, out, _ = run_cli(capsys, "gaps", str(p))
    assert code == 0 and "No GPU activity" in out
    code, out, _ = run_cli(capsys, "transfers", str(p))
    assert code == 0 and "No copies" in out


@pytest.mark.corpus
def test_busy_gpus_of_a_trace_without_device_properties_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    """No deviceProperties: the GPUs line names the busy GPUs instead of saying "none recorded" above their table."""
    code, out, _ = run_cli(capsys, "summary", corpus_file("external/trace_compare/base/base.json.gz"))
    assert code == 0
    (line,) = [ln for ln in out.splitlines() if ln.startswith("GPUs:")]
    assert "none recorded" not in line
    assert re.search(r"GPUs: GPU \d", line) and "no deviceProperties" in line
    assert "GPU busy time" in out


@pytest.mark.corpus
def test_summary_says_the_step_time(capsys: pytest.CaptureFixture[str]) -> None:
    """The step time, checked against the step ranges (``step_N`` here) read with the standard library."""
    import gzip

    path = corpus_file("kineto/h200_gpt_train_small.json.gz")
    raw = json.loads(gzip.decompress(Path(path).read_bytes()))
    durs = sorted(
        round(e["dur"] * 1000)
        for e in raw["traceEvents"]
        if e.get("ph") == "X" and re.fullmatch(r"step_\d+", str(e.get("name", "")))
    )
    code, out, _ = run_cli(capsys, "summary", path, "--json")
    assert code == 0
    (steps,) = json.loads(out)["steps"]
    assert steps["count"] == len(durs) == 3
    assert sorted(steps["step_ns"]) == durs and steps["mean_ns"] == sum(durs) // 3
    code, out, _ = run_cli(capsys, "summary", path)
    from gputop_trace.units import format_ns

    assert f"step time: {format_ns(sum(durs) // 3)} mean over 3 steps" in out


@pytest.mark.corpus
def test_ranks_of_a_trace_without_gpu_work_show_no_figure_rather_than_zero(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys, "ranks", corpus_file("external/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
    )
    assert code == 0
    (row,) = [ln for ln in out.splitlines() if ln.strip().startswith("34 ")]
    assert "0 ns" not in row and "0%" not in row and "–" in row
