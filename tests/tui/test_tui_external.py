"""The app on traces of other accelerators and modes (issue 14, items 1 and 2): a CUPTI range-profiler trace's
first screen says what the trace holds and its ranges are a lane; an MTIA-like device is named for itself."""

from __future__ import annotations

import pytest

from gputop_trace.tui.app import GputopApp
from tests.conftest import corpus_file
from tests.tui_helpers import press, run, wait_loaded, wait_text

CUPTI = "external/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz"


@pytest.mark.corpus
def test_range_profiler_trace_first_screen_and_lane() -> None:
    async def body() -> None:
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

    run(body())
