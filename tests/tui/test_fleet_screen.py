"""The fleet screen in a small test app: heat strip levels, sorting, Enter opening a rank's trace, failed ranks,
a real fleet Parquet file read back; snapshots at 80×24 and 160×48."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from textual.app import App
from textual.widgets import DataTable

from gputop_trace.fleet.parquet import FleetFile
from gputop_trace.tui.screens.fleet import FleetScreen, heat_levels, step_ratios
from gputop_trace.tui.theme import MONO_THEME, use_gputop_themes
from tests.fleet_helpers import fleet_parquet, fleet_small  # noqa: F401  (fixtures)

CAUSES = ("sync_stall", "blocked_os", "data_loading", "cpu_bound", "untraced", "gpu_dependency")


def sync(fn: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        asyncio.run(fn(*args, **kwargs))

    return wrapper


def _row(
    rank: int,
    steps: list[int],
    late: int,
    *,
    wait: int = 0,
    imposed: int = 0,
    outlier: bool = False,
    cause: str = "cpu_bound",
) -> dict[str, Any]:
    return {
        "rank": rank,
        "path": f"/fleet/rank{rank}.pt.trace.json.gz",
        "step_ns": steps,
        "mean_step_ns": round(sum(steps) / len(steps)),
        "busy_pct": 60.0 + rank,
        "idle_ns": 1_000_000 * (rank + 1),
        "idle_by_cause": {c: {"count": 1, "total_ns": 500_000 if c == cause else 0} for c in CAUSES},
        "collective_wait_ns": wait,
        "arrival_late_ns": late,
        "arrival_z": 40.0 if outlier else 0.3,
        "imposed_wait_ns": imposed,
        "late_outlier": outlier,
        "step_outlier": False,
    }


def small_fleet() -> FleetFile:
    """Six ranks of 4 steps: rank 4 is late at collectives and slow in step 3; rank 2's steps are all fast; one
    rank failed."""
    base = [30_000_000, 31_000_000, 30_000_000, 29_000_000]
    rows = [
        _row(0, base, -2_000, wait=4_000_000),
        _row(1, base, 1_000, wait=4_100_000),
        _row(2, [int(v * 0.9) for v in base], -1_000, wait=4_000_000, cause="data_loading"),
        _row(3, base, 0, wait=3_900_000),
        _row(4, [30_000_000, 31_000_000, 45_000_000, 29_000_000], 1_500_000, imposed=16_000_000, outlier=True),
        _row(5, base, 2_000, wait=4_000_000, cause="gpu_dependency"),
    ]
    errors = [
        {"rank": 6, "path": "/fleet/rank6.pt.trace.json.gz", "error": "rank6 is truncated", "error_kind": "input"}
    ]
    doc = {
        "fleet": {"median_step_ns": 30_000_000},
        "findings": [
            {"priority": 1, "title": "Rank 4 arrives late at collectives: 1.50 ms after the median rank on average"},
            {"priority": 2, "title": "Rank 4 makes the others wait most: 16.0 ms in collectives"},
        ],
    }
    return FleetFile(path="/fleet/fleet.parquet", rows=rows, errors=errors, doc=doc)


class FleetApp(App[None]):
    """The fleet screen alone, recording the ranks Enter opened (message and callback)."""

    def __init__(self, fleet: FleetFile) -> None:
        super().__init__()
        use_gputop_themes(self)
        self.fleet = fleet
        self.opened: list[tuple[str, int]] = []
        self.called: list[tuple[str, int]] = []

    def on_mount(self) -> None:
        self.push_screen(FleetScreen(self.fleet, on_open=lambda p, r: self.called.append((p, r))))

    def on_fleet_screen_open_rank(self, m: FleetScreen.OpenRank) -> None:
        self.opened.append((m.path, m.rank))


def _screen(app: FleetApp) -> FleetScreen:
    s = app.screen
    assert isinstance(s, FleetScreen)
    return s


def _ranks(screen: FleetScreen) -> list[int]:
    return [int(r["rank"]) for r in screen.order]


# ---- the heat strip -----------------------------------------------------------------------------------------
def test_step_ratios_compare_each_step_with_the_median_rank() -> None:
    rows: list[dict[str, Any]] = [
        {"step_ns": [10, 20]},
        {"step_ns": [10, 20, 30]},
        {"step_ns": [20, 40]},
        {"step_ns": []},
    ]
    r = step_ratios(rows)
    assert r[0].tolist() == [1.0, 1.0]
    assert r[2].tolist() == [2.0, 2.0]
    assert r[1].tolist() == [1.0, 1.0, 1.0]  # the third step: only one rank has it
    assert len(r[3]) == 0


def test_heat_levels_bins_and_keeps_the_slowest_step_of_a_cell() -> None:
    ratio = np.array([0.9, 1.0, 1.05, 1.2, 1.5])
    assert heat_levels(ratio, 10).tolist() == [0, 1, 2, 3, 4, -1, -1, -1, -1, -1]
    # 5 steps in 2 cells: [0.9, 1.0] and [1.05, 1.2, 1.5]; each cell shows its slowest step
    assert heat_levels(ratio, 2).tolist() == [1, 4]
    assert heat_levels(np.array([np.nan, 1.0]), 2).tolist() == [1, 1]  # an unknown step reads as the median
    assert heat_levels(np.zeros(0), 3).tolist() == [-1, -1, -1]
    # room to spare: each step takes the same number of cells on every row
    assert heat_levels(ratio[:2], 7, cells_per_step=3).tolist() == [0, 0, 0, 1, 1, 1, -1]
    assert heat_levels(ratio[:3], 7, cells_per_step=3).tolist() == [0, 0, 1, 1, 2, 2, -1]  # 2 fit, not 3


# ---- the screen ---------------------------------------------------------------------------------------------
@sync
async def test_sorted_by_lateness_first_and_enter_opens_that_ranks_trace() -> None:
    app = FleetApp(small_fleet())
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        screen = _screen(app)
        assert _ranks(screen) == [4, 5, 1, 3, 2, 0]  # latest first
        table = screen.query_one(DataTable)
        assert table.row_count == 7  # six ranks and the failed one, last
        await pilot.press("enter")
        await pilot.pause()
        assert app.opened == [("/fleet/rank4.pt.trace.json.gz", 4)]
        assert app.called == app.opened
        await pilot.press("j", "enter")
        await pilot.pause()
        assert app.opened[-1] == ("/fleet/rank5.pt.trace.json.gz", 5)


@sync
async def test_s_cycles_sort_columns_and_r_reverses() -> None:
    app = FleetApp(small_fleet())
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        screen = _screen(app)
        await pilot.press("s")  # mean step time, slowest first
        await pilot.pause()
        assert _ranks(screen)[0] == 4 and _ranks(screen)[-1] == 2
        assert "sorted by step ↓" in str(screen.query_one("#fleet-title").render())
        await pilot.press("r")
        await pilot.pause()
        assert _ranks(screen)[0] == 2
        await pilot.press("S", "S")  # back past "late" to "rank", ascending
        await pilot.pause()
        assert _ranks(screen) == [0, 1, 2, 3, 4, 5]


@sync
async def test_enter_on_a_failed_rank_opens_nothing_and_says_why() -> None:
    app = FleetApp(small_fleet())
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        screen = _screen(app)
        screen.query_one(DataTable).move_cursor(row=6)
        await pilot.press("enter")
        await pilot.pause()
        assert app.opened == []
        assert any("rank6 is truncated" in n.message for n in app._notifications)


@sync
async def test_heat_strip_marks_the_slow_step() -> None:
    app = FleetApp(small_fleet())
    app.theme = MONO_THEME  # as under NO_COLOR
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        table = _screen(app).query_one(DataTable)
        strip = str(table.get_row_at(0)[-1])  # rank 4: its third step is 1.5× the median rank's
        assert strip[:12] == "▂▂▂▂▂▂███▂▂▂"  # three cells per step when there is room
        strip2 = str(table.get_row("2:/fleet/rank2.pt.trace.json.gz")[-1])  # all steps 10% faster
        assert strip2[:12] == "▁" * 12


SIZES = [(80, 24), (160, 48)]


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_snapshot(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(FleetApp(small_fleet()), terminal_size=size)


# ---- a real fleet file --------------------------------------------------------------------------------------
@pytest.mark.corpus
@sync
async def test_real_fleet_parquet_opens_the_worst_straggler_first(
    fleet_parquet: tuple[Path, dict[int, int]],  # noqa: F811
) -> None:
    path, stragglers = fleet_parquet
    app = FleetApp(FleetScreen.from_parquet(str(path)).fleet)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = _screen(app)
        worst = max(stragglers, key=lambda r: stragglers[r])
        assert _ranks(screen)[0] == worst
        await pilot.press("enter")
        await pilot.pause()
        opened_path, opened_rank = app.opened[0]
        assert opened_rank == worst and Path(opened_path).is_file() and f"rank{worst:04d}" in opened_path


def test_other_files_are_refused_with_a_clear_message(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from gputop_trace.errors import TraceError
    from gputop_trace.fleet.parquet import is_fleet_parquet, read_fleet

    plain = tmp_path / "other.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), plain)
    assert is_fleet_parquet(str(plain))  # starts like Parquet: the caller routes it here …
    with pytest.raises(TraceError, match="not one 'gputop-trace fleet --out' wrote"):
        FleetScreen.from_parquet(str(plain))  # … and the screen says what it is not
    text = tmp_path / "rank0.json"
    text.write_text("{}")
    assert not is_fleet_parquet(str(text))
    with pytest.raises(TraceError, match="not a readable Parquet file"):
        read_fleet(str(text))
