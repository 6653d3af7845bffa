"""The app's colours come from its Textual theme: ``gputop`` carries the palette's colours as theme variables (and
Textual's dark theme's own colours, so the app looks as it was drawn), ``gputop-mono`` is taken under NO_COLOR,
and the Line-API widgets take a new palette when the theme changes (made once per theme, not per cell)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from textual.theme import BUILTIN_THEMES

from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.theme import GPUTOP_MONO_THEME, GPUTOP_THEME, MONO_THEME, THEME, theme_palette
from gputop_trace.tui.view.palette import MONO_VARIABLE, THEME_COLOURS, Palette, Role, Sid, style_key
from tests.tui_helpers import run, synthetic_trace, timeline, wait_loaded


def test_the_theme_carries_the_palette_and_textuals_dark_colours() -> None:
    dark = BUILTIN_THEMES["textual-dark"]
    for theme in (GPUTOP_THEME, GPUTOP_MONO_THEME):
        assert theme.to_color_system().generate() == dark.to_color_system().generate()
        assert {k: theme.variables[k] for k in THEME_COLOURS} == THEME_COLOURS
    assert GPUTOP_THEME.variables[MONO_VARIABLE] == "false" and GPUTOP_MONO_THEME.variables[MONO_VARIABLE] == "true"


def test_a_themes_palette_is_made_once() -> None:
    pal = theme_palette(GPUTOP_THEME)
    assert pal is theme_palette(GPUTOP_THEME) and not pal.mono and pal.same_as(Palette())
    assert theme_palette(GPUTOP_MONO_THEME).mono
    assert theme_palette(BUILTIN_THEMES["textual-dark"]).same_as(Palette())  # no variables of ours: the defaults


@pytest.mark.parametrize("no_color", [False, True], ids=["colour", "NO_COLOR"])
def test_the_app_takes_the_gputop_theme(no_color: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)

    async def body() -> None:
        app = GputopApp(["synthetic.json"], trace=synthetic_trace())
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_loaded(app, pilot)
            assert app.theme == (MONO_THEME if no_color else THEME)
            assert app.theme_variables["gputop-kernel-gemm"] == THEME_COLOURS["gputop-kernel-gemm"]
            assert timeline(app).palette.mono == no_color

    run(body())


def _fill(palette: Palette, key: int) -> str | None:
    """The background colour ``palette`` gives style key ``key`` (None: no colour)."""
    bg = palette.style(key).bgcolor
    return None if bg is None else bg.name


def test_a_theme_change_redraws_the_timeline_in_its_colours(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    other = replace(
        GPUTOP_THEME, name="gputop-test", variables={**GPUTOP_THEME.variables, "gputop-kernel-gemm": "#123456"}
    )
    gemm_box = style_key(int(Sid.K_GEMM), int(Role.BOX))

    async def body() -> None:
        app = GputopApp(["synthetic.json"], trace=synthetic_trace())
        app.register_theme(other)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_loaded(app, pilot)
            tl = timeline(app)
            assert _fill(tl.palette, gemm_box) == THEME_COLOURS["gputop-kernel-gemm"]
            generation = tl.generation
            app.theme = "gputop-test"
            await pilot.pause()
            await pilot.pause()
            assert _fill(tl.palette, gemm_box) == "#123456"
            assert tl.generation > generation  # the strips drawn in the old colours are forgotten
            app.theme = MONO_THEME
            await pilot.pause()
            await pilot.pause()
            assert tl.palette.mono and _fill(tl.palette, gemm_box) is None

    run(body())
