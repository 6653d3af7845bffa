"""Command palette (Ctrl+P) entries: go to a kernel, a range or a time; switch panels; collapse and expand lane
groups; compare ranks side by side; search, export, help."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import App, SystemCommand
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.fuzzy import Matcher

from gputop_trace.model.trace import python_left_out
from gputop_trace.safe_text import clean
from gputop_trace.units import format_ns, plural

if TYPE_CHECKING:
    from gputop_trace.tui.screens.main import MainScreen

MAX_KERNELS = 200
MAX_RANGES = 200


def _main(provider: Provider) -> MainScreen | None:
    from gputop_trace.tui.screens.main import MainScreen

    screen = provider.screen
    return screen if isinstance(screen, MainScreen) else None


Entry = tuple[str, str, Callable[[], Any]]


def palette_entries(main: MainScreen) -> list[Entry]:
    """Every palette entry as ``(text, help, callback)``: panels and lanes, the screen's actions, then the
    kernels and the ranges to go to."""
    return [*_panel_and_lane_entries(main), *_action_entries(main), *_kernel_entries(main), *_range_entries(main)]


def _panel_and_lane_entries(main: MainScreen) -> list[Entry]:
    """Show a panel; fold or unfold a lane, collapse or expand a group, or all of them."""
    from gputop_trace.tui.widgets.panel_tabs import PANELS

    out: list[Entry] = []
    for pid, title in (("details", "Details"), *PANELS):
        out.append((f"Panel: {title}", f"show the {title} panel", partial(main.show_panel, pid)))
    tl = main.timeline
    layout = main.data.layout
    for key in layout.foldable_keys():
        label = clean(layout.label_of(key))
        if key.startswith("lane:"):
            out.append(
                (f"Lanes: fold / unfold {label}", "show one row or all rows of this lane", partial(tl.toggle_fold, key))
            )
        else:
            out.append(
                (f"Lanes: collapse / expand {label}", "hide or show this group's lanes", partial(tl.toggle_fold, key))
            )
    out.append(("Lanes: expand everything", "open every group and lane", partial(tl.set_collapsed, set())))
    out.append(
        (
            "Lanes: collapse every CPU process",
            "keep only the GPU groups open",
            partial(tl.set_collapsed, {k for k in layout.group_keys() if "/pid" in k}),
        )
    )
    return out


def _action_entries(main: MainScreen) -> list[Entry]:
    """The app's and the screen's actions: back to the fleet, load Python events, fit, the critical path,
    ranks side by side, search, export, help."""
    out: list[Entry] = []
    back = getattr(main.app, "back_to_fleet", None)
    if getattr(main.app, "fleet", None) is not None and callable(back):
        out.append(("Back to the fleet", "close this rank's trace and show every rank again (Esc)", back))
    load_python = getattr(main.app, "load_python_events", None)
    if python_left_out(main.trace) and callable(load_python):
        out.append(
            (
                "Load Python stack events",
                "load the trace again with the python_function events --no-python left out",
                load_python,
            )
        )
    out.append(("Fit the whole trace", "zoom out to show everything (0)", main.timeline.fit_all))
    out.append(
        (
            "Critical path: show / hide",
            "the path of the step under the cursor drawn on the timeline; n / N walk it (p)",
            main.action_toggle_path,
        )
    )
    out.append(
        (
            "Compare ranks side by side",
            "the step under the cursor on every rank, aligned: who is late, by how much, who waits (R)",
            main.action_compare_ranks,
        )
    )
    out.append(("Search event names…", "regex search; n / N walk the matches (/)", main.action_search))
    out.append(("Export findings…", "write Markdown or JSON (e)", main.action_export))
    out.append(("Help: keys", "every key of the focused pane (?)", main.action_help))
    return out


def _kernel_entries(main: MainScreen) -> list[Entry]:
    """Go to the first launch of each of the top kernels (names cut where they still read differently)."""
    from gputop_trace.presentation.kernel_labels import kernel_labels
    from gputop_trace.presentation.name_fitting import fit_names

    out: list[Entry] = []
    rows = main.kernel_rows or []
    multi = len({(r.rank, r.device) for r in rows}) > 1
    shown = [r for r in rows[:MAX_KERNELS] if len(r.events)]
    labels = kernel_labels(r.name for r in shown)
    names = fit_names([clean(labels[r.name]) for r in shown], 60)  # cut where kernels still read differently
    for r, name in zip(shown, names, strict=True):
        if multi:
            name += f"  (rank {r.rank}, GPU {r.device})"
        out.append(
            (
                f"Go to kernel: {name}",
                f"{r.pct:.1f}% of kernel time, {plural(r.count, 'launch', 'launches')}, "
                f"first at {format_ns(int(main.trace.start_ns[r.events[0]]))}",
                partial(main.select_and_show, int(r.events[0]), rezoom=True),
            )
        )
    return out


def _range_entries(main: MainScreen) -> list[Entry]:
    """Go to the first instance of each of the top range names."""
    out: list[Entry] = []
    t = main.trace
    for rn in main.range_names[:MAX_RANGES]:
        what = "GPU annotation" if rn.on_gpu else "range"
        out.append(
            (
                f"Go to range: {clean(t.names[rn.name_id])}",
                f"{what}, {plural(rn.count, 'instance')}; first at {format_ns(int(t.start_ns[rn.first]))}",
                partial(main.select_and_show, rn.first, rezoom=True),
            )
        )
    return out


def highlighted(matcher: Matcher, text: str) -> Text:
    """``text`` with the letters the query matched in reverse video. Unlike ``Matcher.highlight`` it never reads
    ``text`` as markup: entries hold names from the trace, and one such as ``a[/]b`` must neither be styled nor
    break the palette."""
    out = Text(text)
    score, offsets = matcher.fuzzy_search.match(matcher.query, text)
    if score:
        for offset in offsets:
            if not text[offset].isspace():
                out.stylize("reverse", offset, offset + 1)
    return out


class TraceCommands(Provider):
    """Palette entries for the loaded trace."""

    async def discover(self) -> Hits:
        main = _main(self)
        if main is None:
            return
        for text, help_text, cb in palette_entries(main):
            if text.startswith(
                (
                    "Panel:",
                    "Back to",
                    "Load Python",
                    "Fit",
                    "Compare",
                    "Search",
                    "Export",
                    "Help",
                    "Lanes: expand everything",
                )
            ):
                yield DiscoveryHit(text, cb, help=help_text)
        yield DiscoveryHit("Go to time…", main.action_goto_time_prompt, help="type a time such as 12.5ms")

    async def search(self, query: str) -> Hits:
        main = _main(self)
        if main is None:
            return
        matcher = self.matcher(query)
        q = query.strip()
        for prefix in ("go to time", "goto", "time", "go", "@", "t "):
            if q.lower().startswith(prefix):
                q = q[len(prefix) :].strip()
                break
        t = main.parse_time(q) if q else None
        if t is not None:
            yield Hit(
                1e6,  # above any fuzzy match: a time typed is a time meant
                Text(f"Go to time {format_ns(t, precision=6)}"),
                partial(main.goto_time, t),
                text=f"Go to time {format_ns(t, precision=6)}",
                help="centre the timeline on this time (from the trace start)",
            )
        for text, help_text, cb in palette_entries(main):
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, highlighted(matcher, text), cb, text=text, help=help_text)


def system_commands(app: App[Any], quit_app: Callable[[], Any]) -> Iterator[SystemCommand]:
    """The palette's entries that are not about the trace, in place of Textual's own (Theme, Keys, Maximize, …,
    which are no part of this program and sat among the trace's entries): quitting, and a screenshot saved where
    the user is told."""
    yield SystemCommand("Quit", "quit gputop-trace (q)", quit_app)
    yield SystemCommand(
        "Save a screenshot (SVG)",
        "the screen as an SVG file in the current folder; its path is shown",
        lambda: app.set_timer(0.1, partial(save_screenshot, app)),  # once the palette has closed
    )


def save_screenshot(app: App[Any], directory: str | None = None) -> str | None:
    """Save the screen as ``gputop-trace-<date>-<time>.svg`` in ``directory`` (default: the current folder) and say
    where; the path written, or None when it could not be (the notification says why)."""
    import os
    import time

    folder = os.path.abspath(directory or os.getcwd())
    name = time.strftime("gputop-trace-%Y%m%d-%H%M%S.svg")
    path = os.path.join(folder, name)
    try:
        app.save_screenshot(name, folder)
    except OSError as e:
        app.notify(f"Could not write {path}: {e.strerror or e}.", title="Screenshot", severity="error", timeout=8)
        return None
    app.notify(f"Saved the screen to {path}", title="Screenshot", timeout=6)
    return path
