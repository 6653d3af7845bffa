"""The worked diagnosis (issue 19 §3): spills and local memory, shared-memory bank conflicts, coalescing, and the
hottest SASS lines of the corpus' source page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputop_trace.analysis.ncu_diagnosis.checks import bank_conflicts, coalescing, diagnose, hottest_lines, spills
from gputop_trace.cli.main import main
from gputop_trace.ncu.report_reader import load_report
from gputop_trace.parsers.ncu import parse_source_csv


def _metrics(corpus: Path, name: str) -> dict[str, float]:
    (k,) = load_report(str(corpus / "ncu" / name)).kernels
    return dict(k.metrics)


@pytest.mark.corpus
def test_gemm_has_store_bank_conflicts_and_no_spills(corpus: Path) -> None:
    m = _metrics(corpus, "tc.ncu-rep")
    bc = bank_conflicts(m)
    assert bc is not None and bc.problem
    assert "shared loads: 1,019 of 1,124,772 wavefronts (0%)" in bc.text
    assert "shared stores: 135,067 of 668,263 wavefronts (20%)" in bc.text
    sp = spills(m)
    assert sp is not None and not sp.problem


@pytest.mark.corpus
def test_fma_heavy_is_clean_and_coalesced(corpus: Path) -> None:
    items = {f.kind: f for f in diagnose(_metrics(corpus, "full.ncu-rep"))}
    assert not items["spills"].problem
    assert "bank_conflicts" not in items  # no shared-memory traffic at all
    assert not items["coalescing"].problem and "stores 4.0 sectors per request" in items["coalescing"].text


def test_spills_and_uncoalesced_access_are_problems() -> None:
    m = {
        "sass__inst_executed_register_spilling": 1200.0,
        "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum": 100.0,
        "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum": 50.0,
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 3200.0,
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 100.0,
    }
    sp, co = spills(m), coalescing(m)
    assert sp is not None and sp.problem and "4,800 bytes" in sp.text and "1,200" in sp.text
    assert co is not None and co.problem and "32.0 sectors per request" in co.text


@pytest.mark.corpus
def test_hottest_sass_lines_from_the_source_page(corpus: Path) -> None:
    ((name, lines),) = parse_source_csv((corpus / "ncu" / "full_source_sass.csv").read_text())
    assert name == "demo::fma_heavy(float *, int)" and len(lines) == 184
    hot = hottest_lines(lines, top=3)
    assert [h.line.source for h in hot] == [
        "FFMA R4, R7, R4, R6",
        "@!P0  BRA 0x7f728b7a1510",
        "@!P0  BRA 0x7f728b7a1480",
    ]
    assert hot[0].line.samples == 2311 and hot[0].share_pct == pytest.approx(8.22, abs=0.01)


@pytest.mark.corpus
def test_cli_shows_the_diagnosis_and_hot_lines(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = str(corpus / "ncu" / "full_source_sass.csv")
    assert main(["ncu", str(corpus / "ncu" / "full.ncu-rep"), "--source-page", page, "--json"]) == 0
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    assert [d["kind"] for d in k["diagnosis"]] == ["spills", "coalescing"]
    assert k["hot_lines"][0]["source"] == "FFMA R4, R7, R4, R6"
    assert main(["ncu", str(corpus / "ncu" / "full.ncu-rep"), "--source-page", page]) == 0
    out = capsys.readouterr().out
    assert "Diagnosis" in out and "Hottest lines" in out and "FFMA R4, R7, R4, R6" in out


@pytest.mark.corpus
def test_source_page_is_read_through_ncu(fake_ncu: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ncu", str(corpus / "ncu" / "full.ncu-rep"), "--json"]) == 0
    k = json.loads(capsys.readouterr().out)["kernels"][0]
    assert k["hot_lines"][0]["source"] == "FFMA R4, R7, R4, R6"
    calls = [json.loads(c) for c in fake_ncu.read_text().splitlines()]
    assert calls[-1][-4:] == ["--page", "source", "--print-source", "sass"]
    # a report whose source page ncu cannot print still opens, without hot lines
    assert main(["ncu", str(corpus / "ncu" / "tc.ncu-rep"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kernels"][0]["hot_lines"] == []
