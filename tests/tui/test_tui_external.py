"""The app on traces of other accelerators and modes (issue 14, items 1 and 2): a CUPTI range-profiler trace's
first screen says what the trace holds and its ranges are a lane; an MTIA-like device is named for itself."""

from __future__ import annotations

import re

import pytest

from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.screens.main import MainScreen
from tests.conftest import corpus_file
from tests.tui_helpers import app_test, press, wait_loaded, wait_text, wait_until

CUPTI = "external/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz"


@pytest.mark.corpus
@app_test
async def test_range_profiler_trace_first_screen_and_lane() -> None:
    app = GputopApp([corpus_file(CUPTI)])
    async with app.run_test(size=(160, 48)) as pilot:
        main = await wait_loaded(app, pilot)
        text = await wait_text(pilot, app, "Where the time went")
        flat = " ".join(text.split())
        assert "CUPTI range-profiler trace: 77 kernel ranges" in flat and "No GPU work" not in flat
        assert "need activity tracing" in flat
        assert main.overview is not None
        (first,) = [f for f in main.overview.findings if f.priority > 0]
        assert first.title.startswith("CUPTI range-profiler trace: 77 profiled kernels")
        await wait_text(pilot, app, "CUPTI range profiler")  # the ranges' lane under GPU 0
        await press(pilot, "1")  # the Kernels panel says why it is empty and where the counters are
        text = await wait_text(pilot, app, "No kernel activity")
        assert "range-profiler trace" in " ".join(text.split())


MTIA = "external/mtia_trace_single_rank/mtia_rank_0.json.gz"


@pytest.mark.corpus
@app_test
async def test_mtia_trace_panels_call_the_device_mtia() -> None:
    """On the Meta MTIA trace the app's own words call the device what it is: the status bar, the busy strip's
    cursor hint, the Transfers, Ranges and Ranks panels say "MTIA" ("rank 0: MTIA 9"), never "GPU"."""
    gpu_word = re.compile(r"\bGPUs?\b")

    app = GputopApp([corpus_file(MTIA)])
    async with app.run_test(size=(200, 60)) as pilot:
        # 87 MB of JSON: give the load and the analyses time before the usual waits
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen) and app.analyses_done, timeout=240)
        await wait_loaded(app, pilot)
        for key, needles in (
            ("", ("· 1 MTIA ·", "MTIA busy")),
            ("3", ("MTIA/stream",)),
            ("4", ("MTIA time: the busy time of the MTIA work", "of MTIA time from 3,453 MTIA ops")),
            ("7", ("MTIA busy", "rank 0: MTIA 9 ·")),
        ):
            if key:
                await press(pilot, key)
            text = await wait_text(pilot, app, *needles)
            ours = [ln.strip() for ln in text.splitlines() if gpu_word.search(ln)]
            assert not ours, (key, ours[:3])
