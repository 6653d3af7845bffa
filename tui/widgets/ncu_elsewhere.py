"""``c`` where ncu is not installed: a dialog with the commands to run on a machine that has it, as read-only text
areas (select with the mouse, or shift and the arrows) and copy keys (``g``, ``n``: the terminal's clipboard, OSC 52).
Nothing runs from here."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static, TextArea

from gputop_trace.ncu.elsewhere import ElsewhereCommands
from gputop_trace.ncu.runner import Guidance
from gputop_trace.safe_text import clean


def elsewhere_text(g: Guidance, cmds: ElsewhereCommands) -> Text:
    """The explanation and both commands as text (the Drill-down panel shows it, the dialog's fields hold it)."""
    out = Text()
    out.append(f"{g.title}. ", style="bold")
    out.append("Nothing was run. On a machine with ncu and gputop-trace, run:\n")
    out.append(clean(cmds.gputop_trace) + "\n\n")
    out.append("or ncu alone (then open its report anywhere: gputop-trace ncu " + clean(cmds.report) + "):\n")
    out.append(clean(cmds.ncu) + "\n")
    if cmds.placeholder:
        out.append("\nReplace YOUR_COMMAND ARGS... with the command that reruns the workload.\n", style="dim")
    out.append(f"\n{g.text}", style="dim")
    return out


class NcuElsewhereScreen(ModalScreen[None]):
    """The commands to profile the selected kernel on another machine; ``g`` / ``n`` copy one, Esc closes."""

    DEFAULT_CSS = """
    NcuElsewhereScreen { align: center middle; }
    NcuElsewhereScreen > Vertical {
        width: 96%;
        max-width: 120;
        height: auto;
        max-height: 96%;
        border: round $warning;
        background: $surface;
        padding: 0 1;
    }
    NcuElsewhereScreen #ew-title { text-style: bold; color: $warning; }
    NcuElsewhereScreen .ew-label { margin-top: 1; text-style: bold; }
    NcuElsewhereScreen #ew-title { margin-bottom: 1; }
    NcuElsewhereScreen TextArea, NcuElsewhereScreen TextArea:focus {
        border: none; height: auto; max-height: 5; padding: 0;
    }
    NcuElsewhereScreen #ew-hint { color: $text-muted; margin-top: 1; }
    NcuElsewhereScreen VerticalScroll { height: auto; max-height: 3; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("g", "copy('gputop')", "Copy gputop-trace command"),
        Binding("n", "copy('ncu')", "Copy ncu command"),
    ]

    def __init__(self, guidance: Guidance, commands: ElsewhereCommands) -> None:
        super().__init__()
        self.guidance = guidance
        self.commands = commands

    def compose(self) -> ComposeResult:
        g, c = self.guidance, self.commands
        with Vertical():
            yield Static(Text(f"{g.title}: the command to run where it is"), id="ew-title")
            with VerticalScroll():
                yield Static(Text(clean(g.text)))
            yield Static("On a machine with ncu and gputop-trace (g copies):", classes="ew-label")
            yield TextArea(clean(c.gputop_trace), id="ew-gputop", read_only=True, soft_wrap=True, show_cursor=False)
            yield Static(
                "or ncu alone; gputop-trace ncu REPORT explains its report anywhere (n copies):", classes="ew-label"
            )
            yield TextArea(clean(c.ncu), id="ew-ncu", read_only=True, soft_wrap=True, show_cursor=False)
            hint = "Nothing was run. Esc closes; the commands stay in the Drill-down panel."
            if c.placeholder:
                hint = "Replace YOUR_COMMAND ARGS... with the command that reruns the workload. " + hint
            yield Static(hint, id="ew-hint")

    def on_mount(self) -> None:
        self.query_one("#ew-gputop", TextArea).focus()

    def action_copy(self, which: str) -> None:
        """Copy one command to the clipboard (the terminal's, through OSC 52, where it allows it)."""
        text = self.commands.gputop_trace if which == "gputop" else self.commands.ncu
        self.app.copy_to_clipboard(text)
        self.notify("Copied (where the terminal allows programs to set the clipboard).", timeout=3)

    def action_close(self) -> None:
        self.dismiss(None)
