"""Issue 20.8, the layout at 80×24 (and 160×48): the status bar keeps the file name during a search; lanes named
alike keep what tells them apart; the ruler keeps every tick its cursor flag does not cover; notifications are
one at a time, short, and never over the details pane or the status bar. (The footer: test_tui_palette_help.)"""

from __future__ import annotations

import pytest

from gputop_trace.load.samples import default_sample
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.screens.dialogs import PromptScreen
from gputop_trace.tui.view.timeline_math import Window, ruler_line, ruler_ticks
from gputop_trace.tui.widgets.status_bar import NAME_MIN, status_text
from tests.conftest import CORPUS
from tests.tui_helpers import app_test, press, screen_text, synthetic_trace, timeline, wait_loaded, wait_until

SIZES = [(80, 24), (160, 48)]
JAX = CORPUS / "jax" / "h200_jax_mlp.perfetto_trace.json.gz"


@pytest.mark.parametrize("size", SIZES)
@app_test
async def test_the_status_bar_keeps_the_file_name_during_a_search(size: tuple[int, int]) -> None:
    app = GputopApp([default_sample()])
    async with app.run_test(size=size) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "slash")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen))
        await press(pilot, *"gemm", "enter")
        await wait_until(pilot, lambda: "match" in screen_text(app).splitlines()[-2])
        status = screen_text(app).splitlines()[-2]
        assert status.startswith("h200_train_step.json.gz"), status
        assert "/gemm/" in status and "match" in status


def test_a_long_search_pattern_is_cut_not_the_file_name_nor_the_count() -> None:
    trace = synthetic_trace()
    pattern = "/" + "x" * 120 + "/ 1,234 matches"
    for width in (80, 160):
        text = status_text(
            trace, ["h200_train_step.json.gz"], width=width, window_ns=10**8, cursor_ns=5, search=pattern
        ).plain
        assert len(text) <= width
        assert text.startswith("h200_train_step"[: NAME_MIN - 1]) and text.endswith("/ 1,234 matches")


@pytest.mark.corpus
@pytest.mark.parametrize("size", SIZES)
@app_test
async def test_lanes_named_alike_stay_apart(size: tuple[int, int]) -> None:
    app = GputopApp([str(JAX)])
    async with app.run_test(size=size) as pilot:
        await wait_loaded(app, pilot)
        tl = timeline(app)
        tl.set_collapsed(set())
        await pilot.pause()
        labels = []
        for y in range(1, tl.size.height):
            gutter = tl.render_line(y).text[: tl.label_width].strip(" ▾▸")
            if "Host" in gutter or "Hos…" in gutter:
                labels.append(gutter)
        assert len(labels) == 3, labels
        assert len(set(labels)) == 3, labels  # Host Threads/554, /631, /632: never three "Host Threa…"
        assert all(lab.endswith(("554", "631", "632")) for lab in labels), labels


def test_the_ruler_drops_only_the_ticks_its_flag_covers() -> None:
    for width in (58, 137):  # the plot columns at 80 and 160
        for span in (10**5, 1_700_000, 13_600_000, 109_000_000):
            w = Window(54_000_000 - span // 2, 54_000_000 + span // 2, width)
            for frac in (0.05, 0.3, 0.5, 0.7, 0.95):
                cursor = w.t0 + int(frac * (w.t1 - w.t0))
                r = ruler_line(w, cursor)
                for tick in ruler_ticks(w):
                    end = tick.col + 1 + len(tick.label)
                    covered = tick.col < r.flag_end + 1 and end > r.flag_start - 1
                    if not covered:
                        assert r.text[tick.col : end] == "│" + tick.label, (width, span, frac, tick)


@pytest.mark.parametrize("size", SIZES)
@app_test
async def test_the_ruler_on_screen_keeps_ticks_right_of_the_cursor_flag(size: tuple[int, int]) -> None:
    app = GputopApp([default_sample()])
    async with app.run_test(size=size) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, *["w"] * 6)  # zoomed in: long tick and cursor labels
        ruler = screen_text(app).splitlines()[0]
        flag = ruler.index("▼")
        assert "│" in ruler[flag:], ruler


@pytest.mark.parametrize("size", SIZES)
@app_test
async def test_notifications_are_one_at_a_time_and_off_the_details_and_status(size: tuple[int, int]) -> None:
    from textual.widgets._toast import Toast

    app = GputopApp([default_sample()])
    async with app.run_test(size=size, notifications=True) as pilot:
        await wait_loaded(app, pilot)
        app.notify("first")
        await press(pilot, "c")  # nothing selected: "Select a kernel first …"
        await wait_until(pilot, lambda: bool(list(app.screen.query(Toast))))
        await pilot.pause(0.3)
        toasts = list(app.screen.query(Toast))
        assert len(toasts) == 1 and len(app._notifications) == 1
        region = toasts[0].region
        assert region.height <= 3
        for widget in ("#bottom", "#status"):
            assert not region.overlaps(app.screen.query_one(widget).region), widget
