"""The key tables: the timeline's navigation keys, defined once and shared by every screen that shows a timeline
(:func:`nav_bindings`), the main screen's keys, the shared sort and quit keys; and the help generated from whatever
bindings are active (focused pane first)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widget import Widget

from gputop_trace.tui.screens.help import HelpEntry, HelpSection


@dataclass(frozen=True)
class NavKey:
    """One timeline navigation key: the keys that run it, its action and the key a footer shows for it. What it
    says (its description and tooltip) is each screen's own: :func:`nav_bindings`."""

    keys: str
    action: str
    key_display: str | None = None


#: Zoom, pan and fit: the same keys on every screen that shows a timeline (the main timeline, ranks side by side,
#: the Diff view's stacking), each screen's table built from them (:func:`nav_bindings`) so that they can't drift.
ZOOM_PAN: tuple[NavKey, ...] = (
    NavKey("w,plus,equals_sign", "zoom(0.5)", "w"),
    NavKey("s,minus", "zoom(2.0)", "s"),
    NavKey("a,h,left", "pan(-0.25)"),
    NavKey("d,l,right", "pan(0.25)"),
)
FIT: tuple[NavKey, ...] = (NavKey("0,home", "fit"),)
#: the lane (line) cursor: the screens whose timeline has one (the main timeline, ranks side by side)
LINE_MOVES: tuple[NavKey, ...] = (NavKey("j,down", "line(1)"), NavKey("k,up", "line(-1)"))
#: every timeline's navigation keys (the Diff view's stacking has no line cursor: its j / k move in its panel)
TIMELINE_NAVIGATION: tuple[NavKey, ...] = ZOOM_PAN + FIT


def nav_bindings(
    keys: Sequence[NavKey], words: Mapping[str, tuple[str, str]], *, shown: Collection[str] = ()
) -> list[Binding]:
    """The bindings of shared navigation ``keys``, with each action's (description, tooltip) from ``words`` (every
    action needs its words: a screen says what its keys do there); the actions in ``shown`` are in the footer."""
    return [
        Binding(
            k.keys,
            k.action,
            words[k.action][0],
            show=k.action in shown,
            key_display=k.key_display,
            tooltip=words[k.action][1],
        )
        for k in keys
    ]


#: Sorting a table panel (Kernels, Ranks, Ops): the same two keys on each.
SORT_BINDINGS: list[BindingType] = [
    Binding("o", "cycle_sort", "Sort"),
    Binding("r", "reverse_sort", "Reverse"),
]


def quit_bindings(keys: str) -> list[BindingType]:
    """An app's quit keys: ``keys`` (in the footer), and Ctrl+C from anywhere, a text field included (priority)."""
    return [
        Binding(keys, "quit_app", "Quit"),
        Binding("ctrl+c", "quit_app", "Quit", show=False, priority=True),
    ]


#: The timeline and panel keys (tui.md's table), defined on the main screen so they also work from a panel.
MAIN_BINDINGS: list[BindingType] = [
    *nav_bindings(
        ZOOM_PAN + LINE_MOVES,
        {
            "zoom(0.5)": ("Zoom in", "Zoom in around the cursor ▼"),
            "zoom(2.0)": ("Zoom out", "Zoom out around the cursor ▼"),
            "pan(-0.25)": ("Pan left", "Pan left by a quarter of the window"),
            "pan(0.25)": ("Pan right", "Pan right by a quarter of the window"),
            "line(1)": ("Next lane", "Next lane row (down)"),
            "line(-1)": ("Previous lane", "Previous lane row (up)"),
        },
        shown={"zoom(0.5)", "zoom(2.0)"},
    ),
    Binding("pagedown", "line(10)", "Lanes page down", show=False, tooltip="Ten lane rows down"),
    Binding("pageup", "line(-10)", "Lanes page up", show=False, tooltip="Ten lane rows up"),
    *nav_bindings(FIT, {"fit": ("Fit whole trace", "Fit the whole trace")}),
    Binding("f", "zoom_selection", "Zoom to selection", show=False, tooltip="Zoom to the selected event"),
    Binding(
        "left_square_bracket",
        "step_event(-1)",
        "Previous event",
        show=False,
        tooltip="Previous event in the current lane row",
    ),
    Binding(
        "right_square_bracket",
        "step_event(1)",
        "Next event",
        show=False,
        tooltip="Next event in the current lane row",
    ),
    Binding(
        "n",
        "instance(1)",
        "Next instance",
        show=False,
        tooltip="Next instance of the selected name on its GPU/rank; after a search, the next match; while the "
        "critical path is shown (p), its next segment",
    ),
    Binding(
        "N",
        "instance(-1)",
        "Previous instance",
        show=False,
        tooltip="Previous instance of the selected name; after a search, the previous match; while the critical "
        "path is shown (p), its previous segment",
    ),
    Binding("comma", "cursor(-1)", "Cursor left", show=False, tooltip="Move the cursor ▼ one column left"),
    Binding("full_stop", "cursor(1)", "Cursor right", show=False, tooltip="Move the cursor ▼ one column right"),
    Binding(
        "enter",
        "select",
        "Select / open",
        show=False,
        tooltip="Select the event under the cursor ▼; on a group header, collapse or expand it",
    ),
    Binding(
        "space",
        "fold",
        "Fold",
        show=False,
        tooltip="Collapse / expand the lane group or multi-row lane under the cursor",
    ),
    Binding("x", "follow_flow", "Follow flow", show=False, tooltip="Follow the flow: launch call ↔ GPU op"),
    Binding("slash", "search", "Search", tooltip="Search event names (regex); n / N walk the matches, Esc clears"),
    Binding(
        "c",
        "drilldown",
        "ncu drill-down",
        show=False,
        tooltip="ncu drill-down for the selected kernel (shows the exact command first)",
    ),
    Binding(
        "p",
        "toggle_path",
        "Critical path",
        show=False,
        tooltip="Show / hide the critical path of the step under the cursor on the timeline (n / N then walk it)",
    ),
    Binding("e", "export", "Export", show=False, tooltip="Export the findings as Markdown or JSON"),
    Binding("1", "panel('kernels')", "Kernels", show=False, tooltip="Kernels panel (again: back to details)"),
    Binding("2", "panel('gaps')", "Gaps", show=False, tooltip="Gaps panel: idle GPU time and why"),
    Binding("3", "panel('transfers')", "Transfers", show=False, tooltip="Transfers panel: copies, exposed time"),
    Binding("4", "panel('ranges')", "Ranges", show=False, tooltip="Ranges panel: NVTX / annotation summary"),
    Binding("5", "panel('drilldown')", "Drill-down", show=False, tooltip="Drill-down panel (ncu)"),
    Binding("6", "panel('findings')", "Findings", show=False, tooltip="Findings panel: what to fix first"),
    Binding("7", "panel('ranks')", "Ranks", show=False, tooltip="Ranks panel: per-rank table and the straggler"),
    Binding("8", "panel('ops')", "Ops", show=False, tooltip="Ops panel: operators as torch.profiler key_averages()"),
    Binding(
        "9",
        "panel('path')",
        "Critical path",
        show=False,
        tooltip="Critical path panel: a step's path by category, its top items and what if they were faster",
    ),
    Binding(
        "R",
        "compare_ranks",
        "Compare ranks",
        show=False,
        tooltip="Ranks side by side: the step under the cursor on every rank, aligned, who is late and why",
    ),
    Binding("tab", "cycle_panel(1)", "Panels", key_display="tab", tooltip="Next panel (Details → 1 … 9)"),
    Binding("shift+tab", "cycle_panel(-1)", "Previous panel", show=False, tooltip="Previous panel"),
    Binding(
        "escape",
        "back",
        "Back",
        show=False,
        tooltip="Back out: leave a filter, then a panel, then clear the search, then the selection (then back to "
        "the fleet, when the trace was opened from one)",
    ),
    Binding("ctrl+d", "scroll_details(1)", "Details down", show=False, tooltip="Scroll the details down"),
    Binding("ctrl+u", "scroll_details(-1)", "Details up", show=False, tooltip="Scroll the details up"),
    Binding("question_mark", "help", "Help", key_display="?", tooltip="This help"),
]


def help_sections(screen: Screen[Any], order_by: Sequence[BindingType]) -> list[HelpSection]:
    """Help generated from the bindings active on ``screen``, grouped by where they are defined: ours first (the
    focused pane's, then the screen's in the order of ``order_by``, then the app's), then the keys Textual's own
    widgets bring (a table's cursor and scrolling keys) under their own heading at the end. Keys that do the same
    (one action, or the same words) share a line."""
    sections: dict[str, list[HelpEntry]] = {}
    seen: dict[tuple[str, str], HelpEntry] = {}
    for key, active in screen.active_bindings.items():
        b = active.binding
        if b.system or not b.description or b.action in _HIDDEN_ACTIONS:
            continue
        node = active.node
        description = _DESCRIPTIONS.get(b.action, b.tooltip or b.description)
        title = _section_title(node, standard=_from_textual(node, b.action))
        shown = _key_name(key)
        ident = (title, description)
        if ident in seen:
            prev = seen[ident]
            if key not in prev.raw_keys:
                raw = tuple(sorted((*prev.raw_keys, key), key=len))  # q before ctrl+c
                entry = HelpEntry(" ".join(_key_name(k) for k in raw), prev.description, prev.action, raw)
                lst = sections[title]
                lst[lst.index(prev)] = entry
                seen[ident] = entry
            continue
        entry = HelpEntry(shown, description, b.action, (key,))
        seen[ident] = entry
        sections.setdefault(title, []).append(entry)
    order = {b.action: i for i, b in enumerate(order_by) if isinstance(b, Binding)}
    ours: list[HelpSection] = []
    standard: list[HelpSection] = []
    for title, entries in sections.items():
        if title == _section_title(screen):
            entries = sorted(entries, key=lambda e: order.get(e.action, len(order)))
        (standard if title.endswith(_STANDARD) else ours).append(HelpSection(title, tuple(entries)))
    return ours + standard


def _from_textual(node: Any, action: str) -> bool:
    """Whether ``node``'s binding for ``action`` comes from one of Textual's own classes (a table's cursor keys)
    rather than from ours."""
    for cls in type(node).__mro__:
        for b in cls.__dict__.get("BINDINGS", ()):
            if (b.action if isinstance(b, Binding) else b[1]) == action:
                return cls.__module__.startswith("textual.")
    return False


#: Textual's own bindings that do nothing useful here (no text selection in a timeline)
_HIDDEN_ACTIONS = frozenset({"screen.copy_text", "app.copy_text"})
_DESCRIPTIONS = {
    "command_palette": "Command palette: go to kernel / range / time, panels, lanes",
    "quit": "Quit",
    "scroll_home": "First column",
    "scroll_end": "Last column",
    "scroll_top": "First row",
    "scroll_bottom": "Last row",
    "page_left": "Page left",
    "page_right": "Page right",
    "select_cursor": "Select the row under the cursor",
}
#: the heading's ending for keys that Textual's own widgets bring
_STANDARD = "(standard keys)"

_KEY_NAMES = {
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "question_mark": "?",
    "slash": "/",
    "plus": "+",
    "minus": "-",
    "equals_sign": "=",
    "comma": ",",
    "full_stop": ".",
    "space": "space",
    "escape": "Esc",
    "enter": "Enter",
    "left": "←",
    "right": "→",
    "up": "↑",
    "down": "↓",
    "home": "Home",
    "end": "End",
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "tab": "Tab",
    "shift+tab": "Shift+Tab",
}


_WIDGET_TITLES = {"DataTable": "Table", "Input": "Text field"}


def _key_name(key: str) -> str:
    return _KEY_NAMES.get(key, key)


def _section_title(node: Any, *, standard: bool = False) -> str:
    if isinstance(node, Screen):
        return str(getattr(node, "HELP_TITLE", "Timeline and panels"))
    if isinstance(node, Widget):
        if standard:
            kind = next((_WIDGET_TITLES[c.__name__] for c in type(node).__mro__ if c.__name__ in _WIDGET_TITLES), "")
            return f"{kind or type(node).__name__} {_STANDARD}"
        title = getattr(node, "title", "") or _WIDGET_TITLES.get(type(node).__name__, type(node).__name__)
        return f"{title} (focused)" if node.has_focus else str(title)
    return "Anywhere"
