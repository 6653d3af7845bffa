"""Issue 20.8 (footer) and 20.10 (palette and help), at 80×24 and 160×48 on the bundled sample: the footer's keys
fit beside the palette key on every panel; the palette holds our entries and a screenshot that is saved where the
user is told, not Textual's Theme / Keys / Maximize; ``?`` on the Kernels panel starts with that panel's keys."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gputop_trace.load.samples import default_sample
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.commands import save_screenshot
from gputop_trace.tui.screens.help import HelpScreen
from tests.tui_helpers import app_test, press, screen_text, wait_loaded, wait_text, wait_until

SIZES = [(80, 24), (160, 48)]


@pytest.mark.parametrize("size", SIZES)
@app_test
async def test_the_footer_fits_on_every_panel(size: tuple[int, int]) -> None:
    app = GputopApp([default_sample()])
    async with app.run_test(size=size) as pilot:
        await wait_loaded(app, pilot)
        for key in ("1", "2", "3", "4", "5", "6", "7"):
            await press(pilot, key)
            await pilot.pause(0.1)
            footer = screen_text(app).splitlines()[-1]
            assert footer.rstrip().endswith("▏^p palette"), (key, footer)
            assert "q Quit" in footer and "? Help" in footer, (key, footer)
            keys = footer.split("▏")[0]
            assert re.search(r"\S▏", footer) is None or keys.rstrip().endswith("Quit"), (key, footer)


@pytest.mark.parametrize("size", SIZES)
@app_test
async def test_the_palette_has_our_entries_and_not_textuals(size: tuple[int, int]) -> None:
    app = GputopApp([default_sample()])
    async with app.run_test(size=size) as pilot:
        await wait_loaded(app, pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert titles == ["Quit", "Save a screenshot (SVG)"]
        await press(pilot, "ctrl+p")
        text = await wait_text(pilot, app, "Panel: Details")
        for generic in ("Theme", "Maximize", "Keys", "Change the current theme"):
            assert generic not in text


@app_test
async def test_the_palettes_screenshot_is_saved_where_the_user_is_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    app = GputopApp([default_sample()])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "ctrl+p")
        await wait_text(pilot, app, "Panel: Details")
        await press(pilot, *"screenshot")
        await wait_text(pilot, app, "Save a screenshot")
        await press(pilot, "enter")
        await wait_until(pilot, lambda: any(tmp_path.glob("gputop-trace-*.svg")))
        (svg,) = tmp_path.glob("gputop-trace-*.svg")
        assert svg.read_text().lstrip().startswith("<svg")
        assert "Details" in svg.read_text()  # the main screen, not the palette
        messages = [n.message for n in app._notifications]
        assert any(str(svg) in m for m in messages), messages


@app_test
async def test_a_screenshot_that_cannot_be_written_says_why(tmp_path: Path) -> None:
    app = GputopApp([default_sample()])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(app, pilot)
        assert save_screenshot(app, str(tmp_path / "missing" / "folder")) is None
        await pilot.pause()
        messages = [n.message for n in app._notifications]
        assert any("Could not write" in m and "missing" in m for m in messages), messages


@pytest.mark.parametrize("size", SIZES)
@app_test
async def test_help_on_the_kernels_panel_starts_with_its_keys(size: tuple[int, int]) -> None:
    app = GputopApp([default_sample()])
    async with app.run_test(size=size) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "1")
        await pilot.pause(0.2)
        await press(pilot, "question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        titles = [s.title for s in screen.sections]
        assert titles[0] == "Kernels panel" and titles[-1] == "Table (standard keys)"
        first = [e.keys for e in screen.sections[0].entries]
        assert first[:3] == ["j", "k", "/"]
        text = await wait_text(pilot, app, "Kernels panel")
        lines = [ln.strip(" │") for ln in text.splitlines()]
        assert lines.index(next(ln for ln in lines if ln.startswith("Kernels panel"))) < 4
        assert not any(re.match(r"Home\s+Home", ln) for ln in lines)
        quits = [e for s in screen.sections for e in s.entries if e.description == "Quit"]
        assert len(quits) == 1  # one line for every key that quits
