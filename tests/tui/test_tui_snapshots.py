"""Snapshots (SVG, pytest-textual-snapshot) of every pane of the app on the bundled sample, at 80×24 and 160×48.

Regenerate after an intended change with ``pytest tests/test_tui_snapshots.py --snapshot-update`` using the
Textual version pinned in the ``test`` extra (textual==8.2.8): other versions draw differently. Review the new
SVGs (``pytest --snapshot-report`` writes an HTML diff) before committing them.
"""

from __future__ import annotations

from typing import Any

import pytest

from gputop_trace.load.samples import default_sample
from gputop_trace.tui.app import GputopApp
from tests.tui_helpers import timeline, wait_loaded

SIZES = [(80, 24), (160, 48)]

# keys after the trace is loaded; each ends on the pane named in the test id
PANES: dict[str, list[str]] = {
    "first": [],  # the first screen: where the time went, until something is selected
    "timeline": ["j", "j", "j", "w", "w", "w", "right_square_bracket"],
    "kernels": ["1", "j", "j"],
    "gaps": ["2"],
    "transfers": ["3"],
    "ranges": ["4"],
    "drilldown": ["j", "j", "j", "w", "right_square_bracket", "c"],
    "findings": ["6"],
    "ops": ["8", "j", "j"],
    "help": ["question_mark"],
}


async def _loaded(pilot: Any) -> None:
    app = pilot.app
    await wait_loaded(app, pilot)
    tl = timeline(app)
    tl.cursor_t = 31_200_000  # a fixed cursor inside the second step's forward pass
    tl.refresh()
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("pane", list(PANES))
def test_pane_snapshot(snap_compare: Any, pane: str, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUTOP_NCU", "/nonexistent/ncu")  # the drill-down shows the same guidance everywhere
    app = GputopApp([default_sample()])
    assert snap_compare(app, press=PANES[pane], terminal_size=size, run_before=_loaded)


def test_monochrome_snapshot(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = GputopApp([default_sample()])
    assert snap_compare(app, press=PANES["timeline"], terminal_size=(80, 24), run_before=_loaded)
