"""The memory lane under each GPU of a ``profile_memory`` trace (the H200 reference in tests/data): it sits under
the busy strip, its label gives the most memory allocated in the window, the reserved row under it the most
reserved, both on the scale of the larger peak; plus snapshots at 80×24 and 160×48, and the column maths on
hand-made series."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gputop_trace.analysis.operators.memory import memory_series
from gputop_trace.load.loader import load_paths
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.view.lanes import RowKind
from gputop_trace.tui.view.memory_lane import RESERVED, MemoryRow, column_max
from gputop_trace.tui.view.row_render import memory_row_cells
from gputop_trace.units import format_bytes
from tests.tui_helpers import app_test, screen_text, timeline, wait_loaded

H200 = str(Path(__file__).resolve().parents[1] / "data" / "ops_cuda.json.gz")
SIZES = [(80, 24), (160, 48)]


def test_column_max_carries_the_level_in_and_takes_the_most_inside() -> None:
    row = MemoryRow(np.array([10, 20, 25, 40], dtype=np.int64), np.array([100, 300, 50, 200], dtype=np.int64), 300)
    bounds = np.array([0, 10, 20, 30, 40, 50], dtype=np.int64)
    # [0,10): nothing yet; [10,20): 100; [20,30): 300 then 50; [30,40): 50 carried in; [40,50): 200
    assert column_max(row, bounds).tolist() == [0, 100, 300, 50, 200]
    cells = memory_row_cells(row, bounds)
    assert cells.text == " ▃█▂▆"
    assert row.max_between(30, 40) == 50 and row.max_between(0, 50) == 300


def test_allocated_and_reserved_rows_share_one_scale() -> None:
    """Both rows are scaled to the larger peak (the reserved one), so the space between them is what the caching
    allocator holds unused; a record without the reserved total reads as 0 there."""
    ts = np.array([10, 20, 30], dtype=np.int64)
    row = MemoryRow(ts, np.array([100, 400, 200], dtype=np.int64), 400, np.array([800, 800, -1], dtype=np.int64), 800)
    bounds = np.array([0, 10, 20, 31, 40], dtype=np.int64)  # [31, 40): after the record without a reserved total
    assert row.has_reserved
    assert memory_row_cells(row, bounds, RESERVED).text == " ██ "
    assert memory_row_cells(row, bounds).text == " ▁▄▂"
    assert row.max_between(0, 40, RESERVED) == 800 and row.max_between(0, 40) == 400


@app_test
async def test_memory_lane_sits_under_the_busy_strip_and_shows_the_peak() -> None:
    (gpu,) = [s for s in memory_series(load_paths([H200])) if s.device == 0]

    app = GputopApp([H200])
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_loaded(app, pilot)
        tl = timeline(app)
        kinds = [ln.kind for ln in tl.lines]
        at = kinds.index(RowKind.MEMORY)
        assert kinds[at - 1] == RowKind.UTIL and tl.lines[at].device == 0
        text = tl.plot_text(at)
        assert "█" in text
        mem = tl.data.memory[(0, 0)]
        assert mem.peak == gpu.peak_bytes and mem.max_between(tl.t0, tl.t1) == gpu.peak_bytes
        assert f"mem {format_bytes(gpu.peak_bytes)}" in screen_text(app)
        # the reserved row under it, on the same scale: full height at the reserved peak
        res = tl.lines[at + 1]
        assert res.kind == RowKind.MEMORY and res.series == RESERVED and res.device == 0
        assert gpu.reserved_peak_bytes > gpu.peak_bytes and mem.scale == gpu.reserved_peak_bytes
        assert "█" in tl.plot_text(at + 1)
        assert f"reserved {format_bytes(gpu.reserved_peak_bytes)}" in screen_text(app)


async def _loaded(pilot: Any) -> None:
    await wait_loaded(pilot.app, pilot)
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_memory_lane_snapshot(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(GputopApp([H200]), terminal_size=size, run_before=_loaded)
