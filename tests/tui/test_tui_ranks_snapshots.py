"""Snapshots (SVG, pytest-textual-snapshot, textual==8.2.8) of panel 7 (Ranks) and ranks side by side on the corpus
DDP pair, at 80×24 and 160×48, plus the comparison in monochrome and on the common clock.

Regenerate after an intended change with ``pytest tests/test_tui_ranks_snapshots.py --snapshot-update`` and
review the SVGs before committing them."""

from __future__ import annotations

from typing import Any

import pytest

from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.screens.compare import CompareScreen
from tests.conftest import corpus_file
from tests.tui_helpers import app_test, timeline, wait_loaded, wait_until

SIZES = [(80, 24), (160, 48)]
DDP = "kineto/h200_ddp_2gpu"

pytestmark = pytest.mark.corpus

#: keys after the trace is loaded (the cursor is put inside rank 0's step_2 first)
VIEWS: dict[str, list[str]] = {
    "ranks-panel": ["7"],
    "compare": ["R"],
    "compare-next-step": ["R", "right_square_bracket"],
    "compare-clock": ["R", "t"],
}


async def _loaded(pilot: Any) -> None:
    app = pilot.app
    await wait_loaded(app, pilot)
    tl = timeline(app)
    tl.cursor_t = 70_000_000  # inside rank 0's step_2
    tl.move_cursor(0)  # snaps to the column and tells the status bar
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("view", ["ranks-panel", "compare"])
def test_snapshot(snap_compare: Any, view: str, size: tuple[int, int]) -> None:
    app = GputopApp([corpus_file(DDP)])
    assert snap_compare(app, press=VIEWS[view], terminal_size=size, run_before=_loaded)


@pytest.mark.parametrize("view", ["compare-next-step", "compare-clock"])
def test_snapshot_variants(snap_compare: Any, view: str) -> None:
    app = GputopApp([corpus_file(DDP)])
    assert snap_compare(app, press=VIEWS[view], terminal_size=(120, 36), run_before=_loaded)


def test_snapshot_monochrome(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = GputopApp([corpus_file(DDP)])
    assert snap_compare(app, press=VIEWS["compare"], terminal_size=(80, 24), run_before=_loaded)


@app_test
async def test_the_snapshot_keys_open_the_comparison_on_step_2() -> None:
    """The snapshots above show what they claim: R from that cursor opens step_2 (not a blank screen)."""
    from tests.tui_helpers import press

    app = GputopApp([corpus_file(DDP)])
    async with app.run_test(size=(80, 24)) as pilot:
        await _loaded(pilot)
        await press(pilot, "R")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen))
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await wait_until(pilot, lambda: screen.compare.slot is not None)
        assert screen.compare.slot is not None and screen.compare.slot.label == "step_2"
