"""The timeline's arithmetic without Textual: column mapping, zoom and pan, binning a row into cells, labels,
ruler ticks, kernel families."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gputop_trace.presentation.kernel_labels import Family, kernel_family, kernel_hint, kernel_label
from gputop_trace.tui.view.histogram import duration_bins, histogram_text
from gputop_trace.tui.view.timeline_math import (
    RowData,
    Window,
    bin_row,
    clamp_window,
    column_bounds,
    fit_label,
    fraction_glyphs,
    label_with_duration,
    pan_window,
    ruler_line,
    ruler_ticks,
    runs,
    zoom_window,
)


def row(*intervals: tuple[int, int]) -> RowData:
    s = np.array([a for a, _ in intervals], dtype=np.int64)
    e = np.array([b for _, b in intervals], dtype=np.int64)
    return RowData.from_intervals(np.arange(len(s), dtype=np.int64), s, e)


# ---- columns --------------------------------------------------------------------------------------------------
def test_every_integer_time_falls_in_exactly_the_column_its_bounds_say() -> None:
    for t0, t1, width in [(0, 100, 10), (7, 1000, 13), (123_456, 9_876_543, 77), (0, 5, 80)]:
        w = Window(t0, t1, width)
        b = column_bounds(w)
        assert b[0] == t0 and b[-1] == t1
        ts = np.arange(t0, t1, max(1, (t1 - t0) // 5000), dtype=np.int64)
        cols = w.cols_of(ts)
        assert np.all(b[cols] <= ts) and np.all(ts < b[cols + 1])
        assert all(w.col_of(int(t)) == int(c) for t, c in zip(ts[:50], cols[:50], strict=True))


def test_time_of_is_the_first_time_of_a_column() -> None:
    w = Window(100, 200, 8)  # 12.5 ns per column
    assert [w.time_of(c) for c in range(9)] == column_bounds(w).tolist()
    assert w.col_of(w.time_of(3)) == 3 and w.col_of(w.time_of(3) - 1) == 2


def test_window_rejects_empty_spans() -> None:
    with pytest.raises(ValueError):
        Window(5, 5, 10)
    with pytest.raises(ValueError):
        Window(0, 10, 0)


# ---- zoom and pan ---------------------------------------------------------------------------------------------
def test_zoom_keeps_the_pivot_at_the_same_screen_position() -> None:
    t0, t1 = zoom_window(0, 1000, 250, 0.5, lo=0, hi=1000, width=100)
    assert (t0, t1) == (125, 625)  # 250 stays a quarter of the way in
    t0, t1 = zoom_window(t0, t1, 250, 2.0, lo=0, hi=1000, width=100)
    assert (t0, t1) == (0, 1000)


def test_zoom_stops_at_one_nanosecond_per_column_and_at_the_whole_trace() -> None:
    t0, t1 = 0, 1000
    for _ in range(20):
        t0, t1 = zoom_window(t0, t1, 500, 0.5, lo=0, hi=1000, width=100)
    assert t1 - t0 == 100
    for _ in range(20):
        t0, t1 = zoom_window(t0, t1, 500, 2.0, lo=0, hi=1000, width=100)
    assert (t0, t1) == (0, 1000)


def test_pan_moves_by_a_fraction_and_stops_at_the_edges() -> None:
    assert pan_window(100, 200, 0.25, lo=0, hi=1000, width=10) == (125, 225)
    assert pan_window(100, 200, -0.25, lo=0, hi=1000, width=10) == (75, 175)
    assert pan_window(950, 1000, 0.5, lo=0, hi=1000, width=10) == (950, 1000)
    assert pan_window(0, 50, -0.5, lo=0, hi=1000, width=10) == (0, 50)
    assert clamp_window(-30, 70, 0, 1000, 10) == (0, 100)


# ---- binning --------------------------------------------------------------------------------------------------
def test_binning_counts_busy_time_and_dominant_event_per_column() -> None:
    # 10 columns of 10 ns: event 0 fills columns 0-2, event 1 covers half of column 4, events 2-4 share column 7
    r = row((0, 30), (40, 45), (70, 72), (73, 75), (76, 79))
    b = bin_row(r, column_bounds(Window(0, 100, 10)))
    assert b.count.tolist() == [1, 1, 1, 0, 1, 0, 0, 3, 0, 0]
    assert b.busy.tolist() == [10, 10, 10, 0, 5, 0, 0, 7, 0, 0]
    assert b.dominant.tolist() == [0, 0, 0, -1, 1, -1, -1, 4, -1, -1]  # 4 covers 3 ns of column 7


def test_event_spanning_a_column_boundary_is_counted_in_both_columns() -> None:
    b = bin_row(row((15, 25)), column_bounds(Window(0, 40, 4)))
    assert b.count.tolist() == [0, 1, 1, 0]
    assert b.busy.tolist() == [0, 5, 5, 0]


def test_zero_length_events_stay_visible() -> None:
    r = row((10, 10), (55, 55))
    b = bin_row(r, column_bounds(Window(0, 100, 10)))
    assert b.count.tolist() == [0, 1, 0, 0, 0, 1, 0, 0, 0, 0]
    assert fraction_glyphs(b.fraction, b.count) == [" ", "▁", " ", " ", " ", "▁", " ", " ", " ", " "]


def test_binning_matches_a_brute_force_count_on_random_rows() -> None:
    rng = np.random.default_rng(7)
    gaps = rng.integers(0, 50, 400)
    durs = rng.integers(0, 40, 400)
    starts = np.cumsum(gaps + np.r_[0, durs[:-1]])
    r = row(*zip(starts.tolist(), (starts + durs).tolist(), strict=True))
    for t0, t1, width in [(0, int(starts[-1]) + 50, 37), (1000, 3000, 64), (5000, 5100, 100)]:
        bounds = column_bounds(Window(t0, t1, width))
        b = bin_row(r, bounds)
        vis = np.maximum(r.ends, r.starts + 1)
        for c in range(width):
            lo, hi = bounds[c], bounds[c + 1]
            touch = (r.starts < hi) & (vis > lo)
            assert b.count[c] == touch.sum()
            cover = np.clip(np.minimum(r.ends, hi) - np.maximum(r.starts, lo), 0, None).sum()
            assert b.busy[c] == cover
            if touch.any():
                ov = np.minimum(vis, hi) - np.maximum(r.starts, lo)
                best = ov[touch].max()
                # the dominant event is the best one whenever some event covers more than a quarter of the column
                if best * 4 > hi - lo:
                    assert ov[b.dominant[c]] == best
            else:
                assert b.dominant[c] == -1


def test_binning_work_does_not_depend_on_the_number_of_events_outside_the_window() -> None:
    big = row(*[(i * 10, i * 10 + 5) for i in range(100_000)])
    b = bin_row(big, column_bounds(Window(500_000, 500_100, 10)))
    assert b.count.tolist() == [1] * 10
    assert b.busy.tolist() == [5] * 10


def test_runs_of_equal_values() -> None:
    s, n = runs(np.array([3, 3, -1, 4, 4, 4, 3]))
    assert s.tolist() == [0, 2, 3, 6] and n.tolist() == [2, 1, 3, 1]


def test_busy_fraction_becomes_block_height_and_any_event_shows() -> None:
    frac = np.array([0.0, 0.001, 0.125, 0.5, 0.99, 1.0])
    count = np.array([0, 1, 1, 1, 1, 1])
    assert fraction_glyphs(frac, count) == [" ", "▁", "▁", "▄", "█", "█"]


# ---- labels ---------------------------------------------------------------------------------------------------
def test_labels_fit_or_are_cut_with_an_ellipsis_or_left_out() -> None:
    assert fit_label("gemm", 10) == "gemm"
    assert fit_label("vectorized_elementwise", 8) == "vectori…"
    assert fit_label("vectorized", 4) == "vec…"
    assert fit_label("vectorized", 3) == ""
    assert fit_label("abc", 0) == ""
    assert label_with_duration("gemm", "1.2ms", 10) == "gemm 1.2ms"
    assert label_with_duration("gemm", "1.2ms", 9) == "gemm"


# ---- ruler ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("t0", "t1", "width"),
    [(0, 108_729_747, 130), (31_000_000, 31_050_000, 130), (53_123_000, 53_125_000, 64), (10, 90, 64)],
)
def test_ruler_labels_never_overlap_and_never_repeat(t0: int, t1: int, width: int) -> None:
    w = Window(t0, t1, width)
    ticks = ruler_ticks(w)
    assert len(ticks) >= 2
    labels = [t.label for t in ticks]
    assert len(set(labels)) == len(labels), labels
    for a, b in itertools.pairwise(ticks):
        assert a.col + 1 + len(a.label) < b.col
    assert all(t.col + 1 + len(t.label) <= width for t in ticks)


def test_tick_precision_follows_the_zoom() -> None:
    assert [t.label for t in ruler_ticks(Window(0, 100_000_000, 120))][:3] == ["0 ms", "10 ms", "20 ms"]
    fine = [t.label for t in ruler_ticks(Window(53_123_000, 53_125_000, 64))]
    assert fine[0].startswith("53.12") and fine[0].endswith(" ms")
    assert len(fine[0].split(".")[1].split()[0]) >= 4  # µs steps at a ms offset need four decimals


def test_ruler_line_puts_a_flag_at_the_cursor_and_drops_the_ticks_it_would_touch() -> None:
    w = Window(0, 100_000_000, 100)
    r = ruler_line(w, 50_000_000)
    assert r.text[r.flag_start : r.flag_end] == "▼50.0 ms"  # 1 ms per column: one decimal more than that
    assert r.flag_start == 50 == r.cursor_col
    assert len(r.text) == 100
    assert "│50 ms" not in r.text and "│40 ms" in r.text
    end = ruler_line(w, 99_500_000)
    assert end.text.endswith("99.5 ms▼") and end.flag_end == 100
    fine = ruler_line(Window(53_123_000, 53_125_000, 100), 53_124_020)
    assert fine.text[fine.flag_start : fine.flag_end] == "▼53.124020 ms"
    outside = ruler_line(w, 200_000_000)
    assert outside.flag_start == -1 and "▼" not in outside.text


# ---- kernel names ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x256x32", Family.GEMM),
        ("nvjet_sm90_tst_128x64_64x8_1x2_h_bz_NNT", Family.GEMM),
        ("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nt_align1>(Params)", Family.GEMM),
        ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7", Family.ATTENTION),
        ("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64>>(Flash_fwd_params)", Family.ATTENTION),
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", Family.COLLECTIVE),
        ("triton_per_fused_addmm_gelu_native_layer_norm_0", Family.TRITON),
        ("void at::native::reduce_kernel<128, 4, at::native::ReduceOp<float>>(...)", Family.REDUCTION),
        ("void at::native::(anonymous namespace)::cunn_SoftMaxForwardReg<float>(float*)", Family.REDUCTION),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)", Family.ELEMENTWISE),
        ("loop_multiply_tanh_fusion_1", Family.ELEMENTWISE),
        ("my_custom_kernel", Family.OTHER),
    ],
)
def test_kernel_families(name: str, family: Family) -> None:
    assert kernel_family(name) == family


def test_kernel_labels_keep_what_tells_instantiations_apart() -> None:
    add = (
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
        "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
    )
    mul = (
        "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::BUnaryFunctor<"
        "float, float, float, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&)>(int)"
    )
    assert kernel_hint(add) == "add"
    assert kernel_label(add) == "add·vectorized_elementwise_kernel"
    assert kernel_label(mul) == "Mul·elementwise_kernel"
    assert kernel_label("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nt_align1>(X::Params)") == (
        "cutlass_80_simt_sgemm_256x128_8x4_nt_align1"
    )
    assert kernel_label("nvjet_sm90_tst_128x64_64x8_1x2_h_bz_NNT") == "nvjet_sm90_tst_128x64_64x8_1x2_h_bz_NNT"


# ---- histogram ------------------------------------------------------------------------------------------------
def test_duration_histogram_bins_cover_every_launch() -> None:
    d = np.array([1_000, 1_100, 1_200, 5_000, 50_000, 52_000], dtype=np.int64)
    bins = duration_bins(d, 4)
    assert sum(b.count for b in bins) == 6
    assert bins[0].lo_ns == 1_000 and bins[-1].hi_ns == 52_000
    text = histogram_text(d, width=30).plain
    assert "6× · median 3.10 µs" in text and "max 52.0 µs" in text
    assert all(len(line) <= 30 for line in text.splitlines())
    assert duration_bins(np.array([7, 7, 7]))[0].count == 3


def test_the_timeline_maths_and_views_do_not_import_textual() -> None:
    import subprocess
    import sys

    pure = [
        "timeline_math",
        "lanes",
        "timeline_data",
        "row_render",
        "navigation",
        "details",
        "palette",
        "histogram",
        "export",
        "analysis_views",
        "rank_compare",
        "ranks_view",
    ]
    shared = ["figure_wrap", "kernel_labels", "name_fitting", "ncu_verdict"]  # the text both front ends show
    code = (
        "import sys\n"
        + "".join(f"import gputop_trace.tui.view.{m}\n" for m in pure)
        + "".join(f"import gputop_trace.presentation.{m}\n" for m in shared)
        + "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'pandas')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
