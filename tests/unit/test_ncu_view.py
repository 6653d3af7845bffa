"""The Rich renderables of the drill-down: the terminal roofline plot and the bars, at several widths."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from rich.console import Console, RenderableType

from gputop_trace.analysis.roofline.kernel_verdict import KernelVerdict
from gputop_trace.analysis.roofline.verdict import analyze_kernel
from gputop_trace.ncu.report_reader import load_report
from gputop_trace.ncu.runner import Guidance
from gputop_trace.presentation.ncu_verdict import PctBar, RooflinePlot, render_guidance, render_verdict


def _lines(renderable: RenderableType, width: int) -> list[str]:
    console = Console(width=width, color_system=None, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text().splitlines()


def _verdict(corpus: Path, name: str) -> KernelVerdict:
    return analyze_kernel(load_report(str(corpus / "ncu" / name)).kernels[0])


def _point_and_ridge(lines: list[str]) -> tuple[int, int, int]:
    """(row of ●, column of ●, column of the ridge line ┊)."""
    row = next(i for i, ln in enumerate(lines) if "●" in ln)
    ridge = next(ln.index("┊") for ln in lines if "┊" in ln)
    return row, lines[row].index("●"), ridge


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("report", "side"), [("tc.ncu-rep", "right"), ("full.ncu-rep", "right"), ("fullsaxpy.ncu-rep", "left")]
)
def test_the_kernel_sits_on_its_side_of_the_ridge(corpus: Path, report: str, side: str) -> None:
    lines = _lines(RooflinePlot(_verdict(corpus, report)), 80)
    _, col, ridge = _point_and_ridge(lines)
    assert (col > ridge) if side == "right" else (col < ridge)
    assert "this kernel" in "\n".join(lines)
    assert "FLOP/byte" in lines[-1] and "ridge" in lines[-1]


@pytest.mark.corpus
def test_gemm_point_is_at_the_compute_roof(corpus: Path) -> None:
    v = _verdict(corpus, "tc.ncu-rep")
    lines = _lines(RooflinePlot(v, height=9), 80)
    roof_row = next(i for i, ln in enumerate(lines) if "━" in ln)
    row, _, _ = _point_and_ridge(lines)
    assert abs(row - roof_row) <= 1  # 90% of peak: on (or just under) the flat roof
    assert lines[roof_row].lstrip().startswith("859 TFLOP/s")


@pytest.mark.corpus
@pytest.mark.parametrize("width", [40, 60, 80, 120, 160, 200])
@pytest.mark.parametrize("report", ["tc.ncu-rep", "full.ncu-rep", "fullsaxpy.ncu-rep"])
def test_nothing_is_wider_than_the_terminal(corpus: Path, report: str, width: int) -> None:
    lines = _lines(render_verdict(_verdict(corpus, report)), width)
    assert max(len(ln) for ln in lines) <= width
    text = "\n".join(lines)
    assert "Roofline" in text and "Why" in text and "ncu rules" in text


@pytest.mark.corpus
def test_no_plot_without_flop_counts(corpus: Path) -> None:
    v = analyze_kernel(load_report(str(corpus / "ncu" / "details_basic.csv")).kernels[0])
    (line,) = _lines(RooflinePlot(v), 80)
    assert line.startswith("roofline unavailable")


def test_bars_clamp_and_show_missing_values() -> None:
    (over,) = _lines(PctBar("L1", 118.65), 60)
    assert "░" not in over and "118.7%" in over
    (missing,) = _lines(PctBar("L2", math.nan), 60)
    assert "·" in missing and "-" in missing
    (marked,) = _lines(PctBar("Occupancy", 14.6, marker=18.75), 60)
    assert "┃" in marked and marked.index("┃") < 25


def test_guidance_lists_kernels_and_last_lines() -> None:
    g = Guidance("no_kernels", "No kernel matched", "text", details=("a", "b"), available_kernels=("k1", "k2"))
    text = "\n".join(_lines(render_guidance(g), 80))
    assert "1. k1" in text and "2. k2" in text and "Last lines" in text
    assert "1. k1" not in "\n".join(_lines(render_guidance(g, list_kernels=False), 80))
