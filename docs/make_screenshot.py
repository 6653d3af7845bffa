"""Regenerate ``docs/screenshot.svg``: ``gputop-trace view`` on the bundled sample at 160×48, one training step
in view with a GEMM kernel selected.

    python docs/make_screenshot.py
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from gputop_trace.load.samples import default_sample
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.screens.main import MainScreen
from gputop_trace.tui.widgets.timeline import Timeline

OUT = Path(__file__).resolve().parent / "screenshot.svg"


async def main() -> None:
    app = GputopApp([default_sample()])
    async with app.run_test(size=(160, 48)) as pilot:
        while not (isinstance(app.screen, MainScreen) and app.analyses_done):
            await pilot.pause(0.05)
        await pilot.pause(0.2)
        trace = app.trace
        assert trace is not None
        tl = app.screen.query_one(Timeline)
        step = next(i for i in range(len(trace)) if trace.event_name(i) == "step_1")
        tl.select(step)
        tl.zoom_to_selection()
        start, end = int(trace.start_ns[step]), int(trace.start_ns[step] + trace.dur_ns[step])
        gemm = next(
            i
            for i in range(len(trace))
            if trace.event_name(i).startswith("nvjet") and start + (end - start) // 3 < trace.start_ns[i] < end
        )
        tl.select(gemm)
        await pilot.pause(0.3)
        OUT.write_text(app.export_screenshot(title="gputop-trace view"))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    asyncio.run(main())
