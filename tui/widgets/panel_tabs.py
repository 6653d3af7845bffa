"""The one-line list of panels below the timeline, the shown one in reverse video."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

#: (content id, title) of panels 1–9; "details" is shown when no panel is.
PANELS: tuple[tuple[str, str], ...] = (
    ("kernels", "Kernels"),
    ("gaps", "Gaps"),
    ("transfers", "Transfers"),
    ("ranges", "Ranges"),
    ("drilldown", "Drill-down"),
    ("findings", "Findings"),
    ("ranks", "Ranks"),
    ("ops", "Ops"),
    ("path", "Critical path"),
)
#: shorter titles for a narrow terminal (80 columns), where the full ones do not all fit
SHORT: dict[str, str] = {"transfers": "Copies", "drilldown": "ncu", "path": "Path"}
CYCLE: tuple[str, ...] = ("details", *(p for p, _ in PANELS))


class PanelTabs(Static):
    """One line naming the panels, the shown one in reverse video."""

    DEFAULT_CSS = """
    PanelTabs { height: 1; width: 100%; background: $panel; }
    """

    def show(self, current: str) -> None:
        self.update(tabs_text(current, max(1, self.size.width or 80)))


def tabs_text(current: str, width: int) -> Text:
    """The tab line for ``width`` columns: padded names when they all fit, else without the padding, else without
    the space after each number (every panel still named: ``5Drill-down│6Findings``), else with the
    :data:`SHORT` titles (``5ncu``, ``9Path``), else cut with an ellipsis."""
    entries = [("details", "Details", "")] + [(pid, title, str(i + 1)) for i, (pid, title) in enumerate(PANELS)]
    for pad, gap, short in ((" ", " ", False), ("", " ", False), ("", "", False), ("", "", True)):
        text = Text()
        for pid, title, num in entries:
            name = SHORT.get(pid, title) if short else title
            label = f"{pad}{num + gap if num else ''}{name}{pad}"
            text.append(label, style="reverse bold" if pid == current else "")
            text.append("│", style="dim")
        if text.cell_len <= width:
            return text
    text.truncate(width, overflow="ellipsis")
    return text
