"""Every screen that shows a timeline binds the same navigation keys to the same actions, taken from the one
shared table (tui/keymap.py): the keys can't drift between the main timeline, ranks side by side and the Diff
view's stacking (``h`` / ``l`` once panned on two of them only)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from textual.binding import Binding, BindingType
from textual.screen import Screen

from gputop_trace.tui.keymap import LINE_MOVES, TIMELINE_NAVIGATION, NavKey
from gputop_trace.tui.screens.compare import CompareScreen
from gputop_trace.tui.screens.diff import DiffScreen
from gputop_trace.tui.screens.main import MainScreen

#: the screens that show a timeline, and whether theirs has a line (lane) cursor
TIMELINE_SCREENS: list[tuple[type[Screen[Any]], bool]] = [
    (MainScreen, True),
    (CompareScreen, True),
    (DiffScreen, False),
]


def _key_actions(bindings: Sequence[BindingType]) -> dict[str, str]:
    """Each key of ``bindings`` -> its action."""
    out: dict[str, str] = {}
    for b in bindings:
        binding = b if isinstance(b, Binding) else Binding(*b)
        for key in binding.key.split(","):
            out[key.strip()] = binding.action
    return out


def _expected(keys: Sequence[NavKey]) -> dict[str, str]:
    return {k.strip(): n.action for n in keys for k in n.keys.split(",")}


@pytest.mark.parametrize(("screen", "has_lines"), TIMELINE_SCREENS, ids=lambda x: getattr(x, "__name__", str(x)))
def test_timeline_screens_share_the_navigation_keys(screen: type[Screen[Any]], has_lines: bool) -> None:
    bound = _key_actions(screen.BINDINGS)
    shared = TIMELINE_NAVIGATION + (LINE_MOVES if has_lines else ())
    expected = _expected(shared)
    assert {k: bound.get(k) for k in expected} == expected


def test_the_shared_table_has_the_keys_the_spec_names() -> None:
    keys = _expected(TIMELINE_NAVIGATION)
    for key in ("w", "s", "a", "d", "h", "l", "left", "right", "0", "home"):
        assert key in keys
    assert keys["h"] == keys["a"] == "pan(-0.25)" and keys["l"] == keys["d"] == "pan(0.25)"


def test_diff_screen_pans_with_h_and_l() -> None:
    bound = _key_actions(DiffScreen.BINDINGS)
    assert bound["h"] == "pan(-0.25)" and bound["l"] == "pan(0.25)"
