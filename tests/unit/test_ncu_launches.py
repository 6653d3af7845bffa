"""Several launches of one kernel (issue 19 §2): ``--launch-count`` and ``--kernel-regex`` in the ncu command, the
spread of the profiled launches (the corpus' 4-launch saxpy page) and the warning when launches differ."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gputop_trace.analysis.ncu_diagnosis.launches import launch_spreads
from gputop_trace.cli.main import main
from gputop_trace.model.ncu import NcuKernel
from gputop_trace.ncu.drilldown import build_ncu_command
from gputop_trace.ncu.report_reader import load_report


def _cmd(**kw: Any) -> list[str]:
    return list(build_ncu_command("saxpy", ["./app"], report_base="/tmp/r", log_path="/tmp/r.log", **kw).argv)


def test_launch_count_and_kernel_regex_reach_the_ncu_command() -> None:
    argv = _cmd(launch_skip=2, launch_count=4)
    assert argv[argv.index("-s") + 1] == "2" and argv[argv.index("-c") + 1] == "4"
    argv = _cmd(kernel_regex="^(saxpy|fma_heavy)$")
    assert argv[argv.index("-k") + 1] == "regex:^(saxpy|fma_heavy)$"
    assert argv[argv.index("--kernel-name-base") + 1] == "function"
    with pytest.raises(ValueError, match="launch count"):
        _cmd(launch_count=0)
    with pytest.raises(ValueError, match="not valid"):
        _cmd(kernel_regex="saxpy(")


@pytest.mark.corpus
def test_four_saxpy_launches_show_a_small_spread(corpus: Path) -> None:
    report = load_report(str(corpus / "ncu" / "metrics_raw.csv"))
    (s,) = launch_spreads(report.kernels)
    assert s.name == "saxpy" and len(s.indices) == 4
    dur = s.figures[0]
    assert (dur.min, dur.max) == (57_536.0, 58_720.0) and dur.median == pytest.approx(58_336.0)
    assert dur.rel_spread == pytest.approx(0.0203, abs=1e-3)
    assert s.note is None  # 2 %: the launches did the same work


def test_launches_that_differ_are_flagged() -> None:
    ks = [
        NcuKernel(i, "k", metrics={"gpu__time_duration.sum": d}) for i, d in enumerate((10_000.0, 10_500.0, 20_000.0))
    ]
    ks.append(NcuKernel(3, "other", metrics={"gpu__time_duration.sum": 5.0}))
    (s,) = launch_spreads(ks)
    assert s.indices == (0, 1, 2) and s.note is not None and "differ" in s.note.text and "95%" in s.note.text


@pytest.mark.corpus
def test_cli_shows_the_spread(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ncu", str(corpus / "ncu" / "metrics_raw.csv"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (s,) = doc["launch_spread"]
    assert s["report_indices"] == [0, 1, 2, 3] and s["figures"][0]["label"] == "duration" and s["warning"] is None
    assert main(["ncu", str(corpus / "ncu" / "metrics_raw.csv")]) == 0
    out = capsys.readouterr().out
    assert "4 launches of saxpy" in out and "57.5 µs" in out and "58.7 µs" in out


@pytest.mark.corpus
def test_profile_several_launches_of_a_family(
    fake_ncu: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(
        [
            "ncu",
            "--kernel-regex",
            "^saxpy$",
            "--launch-count",
            "3",
            "--yes",
            "--json",
            "--output",
            str(tmp_path / "r"),
            "--",
            "true",
        ]
    )
    assert code == 0, capsys.readouterr().err
    doc = json.loads(capsys.readouterr().out)
    argv = json.loads(fake_ncu.read_text().splitlines()[0])
    assert argv[argv.index("-k") + 1] == "regex:^saxpy$" and argv[argv.index("-c") + 1] == "3"
    assert doc["run"]["launch_count"] == 3


def test_kernel_and_regex_together_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ncu", "--kernel", "a", "--kernel-regex", "b", "--", "true"]) == 2
    assert "not both" in capsys.readouterr().err
