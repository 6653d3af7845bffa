"""Issue 20, "the first minute in the app", in Pilot at 80x24 and 160x48: prompts show what is typed, the first
screen says where the time went, names stay tellable apart, navigation centres its target."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.screens.dialogs import PromptScreen
from tests.tui_helpers import press, run, synthetic_trace, wait_loaded, wait_text, wait_until

SIZES = [(80, 24), (160, 48)]


@pytest.mark.parametrize("size", SIZES)
def test_search_prompt_shows_what_is_typed(size: tuple[int, int]) -> None:
    async def body() -> None:
        app = GputopApp(["synthetic.json"], trace=synthetic_trace())
        async with app.run_test(size=size) as pilot:
            await wait_loaded(app, pilot)
            await press(pilot, "slash")
            await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen))
            await press(pilot, *"gemm")
            text = await wait_text(pilot, app, "Search event names")
            assert "gemm" in text.split("Search event names", 1)[1]

    run(body())


@pytest.mark.parametrize("size", SIZES)
def test_export_prompt_shows_its_default_name(size: tuple[int, int], tmp_path: Path) -> None:
    async def body() -> None:
        app = GputopApp(["synthetic.json"], trace=synthetic_trace())
        async with app.run_test(size=size) as pilot:
            await wait_loaded(app, pilot)
            await press(pilot, "e")
            await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen))
            text = await wait_text(pilot, app, "Export findings")
            assert "gputop-findings.md" in text
            await press(pilot, "end", "backspace", "backspace", *"json")
            text = await wait_text(pilot, app, "gputop-findings.json")

    run(body())
