"""Snapshots (SVG) of the critical path at 80×24 and 160×48: panel 9 and the path drawn on the timeline while ``n``
walks it. On the synthetic trace with a hand-built path (every column of the what-if table filled, the same
whatever the analysis finds) and on the bundled sample with the real analysis.

Regenerate after an intended change with ``--snapshot-update`` (Textual 8.2.8, see test_tui_snapshots.py); the
sample's SVGs change whenever ``critical_paths`` finds another path on the sample."""

from __future__ import annotations

from typing import Any

import pytest

from gputop_trace.analysis.critical_path import path as cp_module

# the findings' critical-path finding keeps the real analysis: imported here, before the tests replace
# critical_paths for the app's panel (the app imports the findings only when the analyses start)
from gputop_trace.analysis.findings import assemble as _findings  # noqa: F401
from gputop_trace.load.samples import default_sample
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.screens.main import MainScreen
from tests.critical_path_fixtures import synthetic_path
from tests.tui_helpers import synthetic_trace, timeline, wait_loaded, wait_until

SIZES = [(80, 24), (160, 48)]
KEYS: dict[str, list[str]] = {"panel": ["9"], "timeline": ["p", "n", "n"]}


def _ready(cursor: int) -> Any:
    async def run_before(pilot: Any) -> None:
        app = pilot.app
        main = await wait_loaded(app, pilot)
        assert isinstance(main, MainScreen)
        tl = timeline(app)
        tl.cursor_t = cursor
        tl.refresh()
        app.want_critical_path()
        await wait_until(pilot, lambda: main.critical_path.step_paths is not None)
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("what", list(KEYS))
def test_synthetic_path_snapshot(
    snap_compare: Any, what: str, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cp_module, "critical_paths", lambda trace, **kw: [synthetic_path(trace)])
    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    assert snap_compare(app, press=KEYS[what], terminal_size=size, run_before=_ready(250))


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("what", list(KEYS))
def test_sample_path_snapshot(snap_compare: Any, what: str, size: tuple[int, int]) -> None:
    app = GputopApp([default_sample()])
    assert snap_compare(app, press=KEYS[what], terminal_size=size, run_before=_ready(31_200_000))
