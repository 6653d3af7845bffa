"""The app's Textual themes and the timeline palette drawn from them.

``gputop`` is Textual's dark theme carrying the palette's own colours as theme variables (``$gputop-kernel-gemm``,
``$gputop-path``, … from :data:`~gputop_trace.tui.view.palette.THEME_COLOURS`); ``gputop-mono`` is the same theme
marked monochrome (``$gputop-mono: true``), the one the app takes under ``NO_COLOR``. The Line-API widgets (the
timeline, ranks side by side, the Diff view's stacking) build Rich styles per cell, so they never look colours up
through CSS: they take a :class:`~gputop_trace.tui.view.palette.Palette` made once per theme
(:func:`theme_palette`) and a new one when the theme changes (:func:`watch_palette`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from textual.app import App
from textual.theme import BUILTIN_THEMES, Theme
from textual.widget import Widget

from gputop_trace.tui.view.palette import MONO_VARIABLE, THEME_COLOURS, Palette

#: the app's theme, and its monochrome twin (``NO_COLOR``)
THEME = "gputop"
MONO_THEME = "gputop-mono"


def _gputop_theme(name: str, *, mono: bool) -> Theme:
    """Textual's dark theme (the colours the app was drawn with) plus the palette's variables."""
    base = BUILTIN_THEMES["textual-dark"]
    variables = {**base.variables, **THEME_COLOURS, MONO_VARIABLE: "true" if mono else "false"}
    return replace(base, name=name, variables=variables)


GPUTOP_THEME = _gputop_theme(THEME, mono=False)
GPUTOP_MONO_THEME = _gputop_theme(MONO_THEME, mono=True)


def use_gputop_themes(app: App[Any]) -> None:
    """Register both themes on ``app`` and take ``gputop``, or ``gputop-mono`` when colours are off
    (``NO_COLOR``). A theme the user chose for Textual (``TEXTUAL_THEME``) is kept when colours are on: its
    base colours, with the palette's default colours on the timeline."""
    app.register_theme(GPUTOP_THEME)
    app.register_theme(GPUTOP_MONO_THEME)
    if app.no_color:
        app.theme = MONO_THEME
    elif app.theme == _TEXTUAL_DEFAULT:
        app.theme = THEME


#: the theme Textual takes when the user chose none (the gputop theme has its colours)
_TEXTUAL_DEFAULT = "textual-dark"


#: id of a theme -> (that theme, its palette): a theme object is registered once and lives as long as the app
_palettes: dict[int, tuple[Theme, Palette]] = {}


def theme_palette(theme: Theme) -> Palette:
    """The palette of ``theme``'s variables, made once per theme object (a theme without the palette's
    variables gets the default colours)."""
    hit = _palettes.get(id(theme))
    if hit is not None and hit[0] is theme:
        return hit[1]
    palette = Palette.from_variables(theme.variables)
    _palettes[id(theme)] = (theme, palette)
    return palette


def watch_palette(widget: Widget, apply: Callable[[Palette], None]) -> None:
    """Call ``apply`` with the palette of the app's theme now, and again with the new one whenever the theme
    changes (for as long as ``widget`` is mounted)."""
    app = widget.app
    apply(theme_palette(app.current_theme))
    app.theme_changed_signal.subscribe(widget, lambda theme: apply(theme_palette(theme)))
