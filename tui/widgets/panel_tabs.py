"""The one-line list of panels below the timeline, the shown one in reverse video."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

#: (content id, title) of panels 1–6; "details" is shown when no panel is.
PANELS: tuple[tuple[str, str], ...] = (
    ("kernels", "Kernels"),
    ("gaps", "Gaps"),
    ("transfers", "Transfers"),
    ("ranges", "Ranges"),
    ("drilldown", "Drill-down"),
    ("findings", "Findings"),
)
CYCLE: tuple[str, ...] = ("details", *(p for p, _ in PANELS))


class PanelTabs(Static):
    """One line naming the panels, the shown one in reverse video."""

    DEFAULT_CSS = """
    PanelTabs { height: 1; width: 100%; background: $panel; }
    """

    def show(self, current: str) -> None:
        text = Text()
        entries = [("details", "Details", "")] + [(pid, title, str(i + 1)) for i, (pid, title) in enumerate(PANELS)]
        for pid, title, num in entries:
            label = f" {num + ' ' if num else ''}{title} "
            text.append(label, style="reverse bold" if pid == current else "")
            text.append("│", style="dim")
        text.truncate(max(1, self.size.width or 80), overflow="ellipsis")
        self.update(text)
