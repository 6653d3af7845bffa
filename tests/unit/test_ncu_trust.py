"""Trust notes on Nsight Compute results (issue 19 §1): replay passes, atomics, pass-dependent disagreement, on the
corpus reports that warrant them and on those that do not."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputop_trace.analysis.ncu_diagnosis.trust import (
    atomic_instructions,
    pass_disagreements,
    replay_passes,
    trust_notes,
)
from gputop_trace.analysis.roofline.verdict import analyze_kernel
from gputop_trace.model.ncu import NcuKernel
from gputop_trace.ncu.report_reader import load_report


def _kinds(k: NcuKernel) -> list[str]:
    return [t.kind for t in trust_notes(k)]


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["full.ncu-rep", "fullsaxpy.ncu-rep", "tc.ncu-rep"])
def test_full_set_reports_say_their_38_passes_are_combined(corpus: Path, name: str) -> None:
    (k,) = load_report(str(corpus / "ncu" / name)).kernels
    assert replay_passes(k.metrics) == 38
    (replay,) = [t for t in trust_notes(k) if t.kind == "replay"]
    assert replay.level == "info" and "38 times" in replay.text and "different passes" in replay.text


@pytest.mark.corpus
def test_cublas_gemm_with_atomics_is_flagged_not_reproducible(corpus: Path) -> None:
    (k,) = load_report(str(corpus / "ncu" / "tc.ncu-rep")).kernels
    assert atomic_instructions(k.metrics) == 190  # the GEMM's atomic adds (smsp__inst_executed_op_generic_atom_dot_alu)
    (note,) = [t for t in analyze_kernel(k).trust if t.kind == "atomics"]
    assert note.level == "warning" and "Not reproducible" in note.text and "190" in note.text


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["full.ncu-rep", "fullsaxpy.ncu-rep"])
def test_kernels_without_atomics_and_consistent_passes_get_no_warning(corpus: Path, name: str) -> None:
    (k,) = load_report(str(corpus / "ncu" / name)).kernels
    assert atomic_instructions(k.metrics) == 0
    assert pass_disagreements(k.metrics) == []  # sm__cycles_active.avg agrees within 2 % across its two passes
    assert [t.level for t in trust_notes(k)] == ["info"]


@pytest.mark.corpus
def test_single_pass_csv_page_has_no_trust_note(corpus: Path) -> None:
    (k,) = load_report(str(corpus / "ncu" / "nvtx_warm_raw.csv")).kernels
    assert replay_passes(k.metrics) == 1 and _kinds(k) == []


def test_pass_dependent_figures_that_disagree_are_named() -> None:
    k = NcuKernel(
        0,
        "k",
        metrics={
            "profiler__replayer_passes": 12.0,
            "sm__cycles_active.avg": 100_000.0,
            "TPC.TriageCompute.sm__cycles_active.avg": 150_000.0,
        },
    )
    assert pass_disagreements(k.metrics) == [("sm__cycles_active.avg", 100_000.0, 150_000.0)]
    (note,) = [t for t in trust_notes(k) if t.kind == "disagree"]
    assert note.level == "warning" and "sm__cycles_active.avg" in note.text and "33% apart" in note.text


def test_atomic_and_reduction_instructions_are_counted() -> None:
    m = {
        "smsp__inst_executed_op_global_red.sum": 4.0,
        "smsp__inst_executed_op_shared_atom.sum": 6.0,
        "smsp__inst_executed_op_shared_ld.sum": 100.0,
        "smsp__inst_executed.sum": 1000.0,
    }
    assert atomic_instructions(m) == 10.0
