"""Issue 20, "the first minute in the app", in Pilot at 80x24 and 160x48: prompts show what is typed, the first
screen says where the time went, names stay tellable apart, navigation centres its target."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.screens.dialogs import PromptScreen
from tests.tui_helpers import app_test, press, screen_text, synthetic_trace, wait_loaded, wait_text, wait_until

SIZES = [(80, 24), (160, 48)]


@pytest.mark.parametrize("size", SIZES)
@app_test
async def test_search_prompt_shows_what_is_typed(size: tuple[int, int]) -> None:
    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=size) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "slash")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen))
        await press(pilot, *"gemm")
        text = await wait_text(pilot, app, "Search event names")
        assert "gemm" in text.split("Search event names", 1)[1]


@pytest.mark.parametrize("size", SIZES)
@app_test
async def test_export_prompt_shows_its_default_name(size: tuple[int, int], tmp_path: Path) -> None:
    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=size) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "e")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen))
        text = await wait_text(pilot, app, "Export findings")
        assert "gputop-findings.md" in text
        await press(pilot, "end", "backspace", "backspace", *"json")
        text = await wait_text(pilot, app, "gputop-findings.json")


@pytest.mark.parametrize("size", SIZES)
@app_test
async def test_first_screen_says_where_the_time_went(size: tuple[int, int]) -> None:
    from gputop_trace.load.samples import default_sample

    app = GputopApp([default_sample()])
    async with app.run_test(size=size) as pilot:
        main = await wait_loaded(app, pilot)
        text = await wait_text(pilot, app, "Where the time went")
        assert "GPU 0 busy" in text and "step time" in text
        assert "Nothing selected" not in text or size[1] > 24
        assert main.overview is not None
        first = next(f for f in main.overview.findings if f.priority > 0)
        assert "1. " in text and first.title[:20] in text
        main.action_open_finding(0)  # what a click on the first line does
        await pilot.pause()
        tl = main.timeline
        assert tl.selected >= 0 or tl.interval is not None
        assert "Where the time went" not in screen_text(app)


NVJET_A = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
NVJET_B = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopB_TNN"
XMMA = "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize{}x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel"


def test_fit_names_keeps_what_differs() -> None:
    from gputop_trace.presentation.name_fitting import fit_names

    names = [NVJET_A, NVJET_B, *(XMMA.format(t) for t in (64, 128, 192, 256, 320)), "short"]
    for width in (16, 24, 28, 40):
        fitted = fit_names(names, width)
        assert all(len(f) <= width for f in fitted)
        assert len(set(fitted)) == len(names), fitted
    assert fit_names(names, 28)[0].endswith("coopA_NNT") and fit_names(names, 28)[-1] == "short"
    assert fit_names(["add·vectorized_elementwise_kernel"], 12) == ["add·vectori…"]  # the hint stays


# cuBLAS kernels of the corpus' 2xH100 nsys export: they differ in two places (tile size, then split_k), and the
# instantiations of one PyTorch template that kernel_label names alike (``Mul·vectorized_elementwise_kernel``)
SM80 = (
    "sm80_xmma_gemm_f32f32_f32f32_f32_{}_n_tilesize{}_stage3_warpsize{}_ffma_aligna4_alignc4_execute_{}"
    "kernel__5x_cublas"
)
SM80_NAMES = [
    SM80.format("tn", "64x256x8", "1x4x1", ""),
    SM80.format("tn", "128x128x8", "2x2x1", ""),
    SM80.format("tn", "64x256x8", "1x4x1", "split_k_"),
    SM80.format("tn", "128x128x8", "2x2x1", "split_k_"),
    SM80.format("nn", "32x32x8", "1x2x1", ""),
    SM80.format("tn", "32x32x8", "1x2x1", ""),
]
MUL = (
    "void at::native::vectorized_elementwise_kernel<(int)4, at::native::{}<float, float, float, "
    "at::native::binary_internal::MulFunctor<float>>, std::array<char *, (unsigned long){}>>(int, T2, T3)"
)
MUL_NAMES = [MUL.format("AUnaryFunctor", 2), MUL.format("BinaryFunctor", 3)]


def test_fit_names_shows_every_place_where_names_differ() -> None:
    from gputop_trace.presentation.name_fitting import fit_names

    for width in (20, 24, 28, 46):
        fitted = fit_names(SM80_NAMES, width)
        assert all(len(f) <= width for f in fitted)
        assert len(set(fitted)) == len(SM80_NAMES), fitted
    fitted = fit_names(SM80_NAMES, 28)  # the split_k kernels say so, beside their tile size
    assert ["spl" in f for f in fitted] == [False, False, True, True, False, False], fitted
    assert "64" in fitted[2] and "128" in fitted[3], fitted
    # many names alike (a table of 2,000 GEMM variants) are fitted at once, not pair by pair
    import time

    many = [SM80.format("tn", f"{i}x{i % 7}", "1x4x1", "") for i in range(2000)]
    start = time.perf_counter()
    assert len(set(fit_names(many, 24))) == len(many)
    assert time.perf_counter() - start < 3.0


def test_kernel_labels_tell_instantiations_of_one_template_apart() -> None:
    from gputop_trace.presentation.kernel_labels import kernel_label, kernel_labels
    from gputop_trace.presentation.name_fitting import fit_names

    assert kernel_label(MUL_NAMES[0]) == kernel_label(MUL_NAMES[1]) == "Mul·vectorized_elementwise_kernel"
    labels = kernel_labels([*MUL_NAMES, NVJET_A])
    assert labels[NVJET_A] == NVJET_A  # a label that no other kernel shares stays as it is
    for width in (20, 24, 46):
        a, b = fit_names([labels[n] for n in MUL_NAMES], width)
        assert a != b and a.startswith("Mul·") and b.startswith("Mul·"), (a, b)
    a, b = fit_names([labels[n] for n in MUL_NAMES], 24)
    assert "AUnary" in a and "Binary" in b, (a, b)


@pytest.mark.parametrize("size", SIZES)
@app_test
async def test_kernel_rows_can_be_told_apart(size: tuple[int, int]) -> None:
    import numpy as np

    from gputop_trace.analysis.kernels import KernelRow
    from gputop_trace.tui.commands import palette_entries
    from gputop_trace.tui.widgets.kernels_panel import KernelsPanel, KernelTable

    names = [NVJET_A, NVJET_B, *(XMMA.format(t) for t in (64, 128, 192, 256, 320)), *SM80_NAMES, *MUL_NAMES]
    rows = [
        KernelRow(n, 0, dev, 1, 1000 - i, 1.0, 1.0, 1, 1, 0.0, 1.0)
        for i, n in enumerate(names)
        for dev in (0, 1)  # one row per GPU
    ]
    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=size) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "1")
        panel = main.query_one(KernelsPanel)
        panel.set_rows(app.trace, rows)
        await pilot.pause()
        table = main.query_one(KernelTable).table
        seen = [
            tuple(str(c) for c in table.get_row_at(r)[-2:]) for r in range(table.row_count)
        ]  # (GPU, kernel): every row differs
        assert len(set(seen)) == len(rows), seen
        text = screen_text(app)
        assert "coopA_NNT" in text and "coopB_TNN" in text
        # the palette's "Go to kernel" entries too (one GPU: no GPU suffix to tell them apart)
        main.kernel_rows = [
            KernelRow(r.name, 0, 0, 1, r.total_ns, 1.0, 1.0, 1, 1, 0.0, 1.0, events=np.zeros(1, dtype=np.int64))
            for r in rows
            if r.device == 0
        ]
        entries = [t for t, _, _ in palette_entries(main) if t.startswith("Go to kernel:")]
        assert len(entries) == len(set(entries)) == len(names), entries


def test_histogram_bin_labels_do_not_repeat() -> None:
    import numpy as np

    from gputop_trace.tui.view.histogram import bin_labels, duration_bins

    hb = duration_bins(np.array([152_000, 152_300, 152_600, 152_900, 153_400] * 4, dtype=np.int64))
    labels = bin_labels(hb)
    assert len(set(labels)) == len(labels), labels


@pytest.mark.parametrize("size", SIZES)
@app_test
async def test_kernels_note_counts_the_filtered_rows(size: tuple[int, int]) -> None:
    from gputop_trace.tui.widgets.kernels_panel import KernelTable

    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=size) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "1")
        await wait_text(pilot, app, "3 kernels")
        await press(pilot, "slash", *"tiny")
        await wait_text(pilot, app, "1 of 3 kernels match")
        assert main.query_one(KernelTable).table.row_count == 1


@pytest.mark.parametrize("size", SIZES)
@app_test
async def test_jumps_centre_the_target_and_show_its_details(size: tuple[int, int]) -> None:
    from gputop_trace.tui.commands import palette_entries

    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=size) as pilot:
        main = await wait_loaded(app, pilot)
        tl = main.timeline
        assert app.trace is not None
        await press(pilot, "1")  # a panel is open ...
        assert main.panel == "kernels"
        entries = {text: cb for text, _, cb in palette_entries(main)}
        entries["Go to kernel: tiny"]()  # ... the palette's jump shows the details instead
        await pilot.pause()
        assert main.panel == "details" and app.trace.event_name(tl.selected) == "tiny"
        s = int(app.trace.start_ns[tl.selected])
        span = tl.t1 - tl.t0
        assert tl.t0 + span // 10 <= s <= tl.t1 - span // 10  # not at the screen's edge
        await wait_text(pilot, app, "tiny")
        assert "Where the time went" not in screen_text(app)  # the details, not the overview
        # n walks the instances; each stays away from the edges, with its details shown
        tl.t0, tl.t1 = 560, 610  # a narrow window whose right edge the next instances sit at
        await press(pilot, "1", "n")
        assert main.panel == "details"
        s = int(app.trace.start_ns[tl.selected])
        span = tl.t1 - tl.t0
        assert tl.t0 + span // 10 <= s <= tl.t1 - span // 10


@pytest.mark.parametrize("size", SIZES)
@app_test
async def test_export_names_its_file_and_asks_before_overwriting(
    size: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gputop-findings.md").write_text("keep me")

    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=size) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "e")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen))
        await wait_text(pilot, app, "writes markdown to")
        await press(pilot, "enter")
        await wait_text(pilot, app, "exists: Enter again overwrites")
        assert isinstance(app.screen, PromptScreen)  # not written yet
        assert (tmp_path / "gputop-findings.md").read_text() == "keep me"
        await press(pilot, "enter")
        await wait_until(pilot, lambda: (tmp_path / "gputop-findings.md").read_text() != "keep me")


def test_idle_finding_titles_say_the_share_is_this_causes() -> None:
    from gputop_trace.analysis.findings.assemble import find_findings
    from gputop_trace.load.loader import load_paths
    from gputop_trace.load.samples import default_sample

    idle = [f for f in find_findings(load_paths([default_sample()])) if "gaps" in f.title]
    assert idle and all("of its active time idle in" in f.title for f in idle)
