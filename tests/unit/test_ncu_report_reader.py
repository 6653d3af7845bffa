"""Opening a report through ncu: the ``ncu -i`` fallback (through the stand-in ncu), and the one rule that finds ncu
(:func:`gputop_trace.ncu.locate.find_ncu`), asked by every place that runs ncu or reads a report with it."""

from __future__ import annotations

import ast
import shutil
import stat
from pathlib import Path

import pytest

from gputop_trace.cli.main import main
from gputop_trace.errors import TraceError
from gputop_trace.ncu import locate
from gputop_trace.ncu.report_reader import load_report
from gputop_trace.parsers.ncu import REPORT_MAGIC
from tests.paths import ROOT


@pytest.mark.corpus
def test_ncu_cli_fallback_reads_the_same_numbers(fake_ncu: Path, corpus: Path, tmp_path: Path) -> None:
    """Without the ncu-report package: ``ncu -i REPORT --csv --print-units base --page raw|details``."""
    report = tmp_path / "full.ncu-rep"
    shutil.copy(corpus / "ncu" / "full.ncu-rep", report)
    via_cli = load_report(str(report), reader="ncu-csv")
    via_pkg = load_report(str(report), reader="ncu_report")
    assert via_cli.reader == "ncu-csv"
    a, b = via_cli.kernels[0], via_pkg.kernels[0]
    assert a.name == b.name == "fma_heavy"
    for m in ("gpu__time_duration.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_read.sum"):
        assert a.metrics[m] == pytest.approx(b.metrics[m], rel=1e-3)
    assert [r.identifier for r in a.rules].count("CPIStall") == 3
    argv = [line for line in fake_ncu.read_text().splitlines() if line]
    assert any('"--page", "raw"' in line and '"--print-units", "base"' in line for line in argv)


@pytest.mark.corpus
def test_ncu_cli_fallback_reports_ncu_errors(fake_ncu: Path, tmp_path: Path) -> None:
    report = tmp_path / "gone.ncu-rep"
    report.write_bytes(REPORT_MAGIC + b"\0" * 16)
    with pytest.raises(TraceError, match=r"no recorded raw page|Could not"):
        load_report(str(report), reader="ncu-csv")


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(stat.S_IRWXU)
    return path


def test_find_ncu_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on_path = _executable(tmp_path / "bin" / "ncu")
    monkeypatch.setenv("PATH", str(on_path.parent))
    monkeypatch.delenv("GPUTOP_NCU", raising=False)
    assert locate.find_ncu() == str(on_path)
    explicit = _executable(tmp_path / "other" / "ncu")
    monkeypatch.setenv("GPUTOP_NCU", str(explicit))
    assert locate.find_ncu() == str(explicit)  # $GPUTOP_NCU first
    monkeypatch.setenv("GPUTOP_NCU", str(tmp_path / "missing"))
    assert locate.find_ncu() is None  # a wrong $GPUTOP_NCU is not silently replaced by another ncu


def test_the_ncu_report_module_is_looked_for_next_to_the_ncu_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = tmp_path / "nsight-compute" / "ncu"
    monkeypatch.setattr(locate, "find_ncu", lambda: str(found))
    assert locate.ncu_report_folders()[0] == str(tmp_path / "nsight-compute" / "extras" / "python")
    given = tmp_path / "given" / "ncu"
    assert locate.ncu_report_folders(str(given))[0] == str(tmp_path / "given" / "extras" / "python")


@pytest.mark.corpus
def test_the_report_reader_and_the_command_line_ask_the_one_locator(
    fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The stand-in ncu is on PATH, but the locator says there is none: neither call site runs it."""
    asked: list[str] = []

    def no_ncu() -> None:
        asked.append("asked")

    monkeypatch.setattr(locate, "find_ncu", no_ncu)
    report = tmp_path / "r.ncu-rep"
    report.write_bytes(REPORT_MAGIC + b"\0" * 16)
    with pytest.raises(TraceError, match="ncu is not on PATH"):
        load_report(str(report), reader="ncu-csv")
    assert asked == ["asked"]
    assert main(["ncu", "--kernel", "k", "--yes", "--", "./app"]) == 2
    assert "ncu was not found" in " ".join(capsys.readouterr().err.split())
    assert asked == ["asked", "asked"]
    assert not fake_ncu.exists()  # ncu was never started


def test_only_the_locator_reads_gputop_ncu_or_searches_path() -> None:
    """One rule for finding ncu: no other module reads ``$GPUTOP_NCU`` or calls ``shutil.which("ncu")``."""
    sites = set()
    for folder in ("gputop_trace", "parsers", "analysis", "tui"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and any(
                    isinstance(a, ast.Constant) and a.value in ("GPUTOP_NCU", "ncu") for a in node.args
                ):
                    func = ast.unparse(node.func)
                    if func in ("os.environ.get", "os.getenv", "shutil.which"):
                        sites.add((str(path.relative_to(ROOT)), func))
                if isinstance(node, ast.Subscript) and ast.unparse(node) == "os.environ['GPUTOP_NCU']":
                    sites.add((str(path.relative_to(ROOT)), "os.environ[]"))
    assert sites == {("gputop_trace/ncu/locate.py", "os.environ.get"), ("gputop_trace/ncu/locate.py", "shutil.which")}
