"""Modal dialogs: a readable error (the command line's exact text) and a one-line prompt (search, export
path, go to time). Esc always closes them."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class ErrorDialog(ModalScreen[None]):
    """Shows a load error exactly as the command line prints it; any of Enter, Esc or q closes it."""

    DEFAULT_CSS = """
    ErrorDialog { align: center middle; }
    ErrorDialog > Vertical {
        width: 90%;
        max-width: 100;
        height: auto;
        max-height: 90%;
        border: thick $error;
        padding: 1 2;
        background: $surface;
    }
    ErrorDialog #error-title { text-style: bold; color: $error; }
    ErrorDialog #error-hint { color: $text-muted; margin-top: 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("enter", "close", "Close", show=False),
        Binding("q", "close", "Close", show=False),
    ]

    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self.title_text = title
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.title_text), id="error-title")
            yield Static(Text(self.text), id="error-text")
            yield Static("Enter or Esc closes", id="error-hint")

    def action_close(self) -> None:
        self.dismiss(None)


class PromptScreen(ModalScreen[str | None]):
    """A one-line question at the bottom of the screen; returns the text (Enter) or None (Esc)."""

    DEFAULT_CSS = """
    PromptScreen { align: center bottom; background: $background 40%; }
    PromptScreen > Vertical {
        width: 100%;
        height: auto;
        border-top: solid $primary;
        background: $surface;
        padding: 0 1;
    }
    PromptScreen #prompt-hint { color: $text-muted; }
    PromptScreen #prompt-error { color: $error; }
    /* :focus too: Textual's own `Input:focus { border: tall }` outranks a plain descendant rule, and a
       tall border in one row leaves no room for the text */
    PromptScreen Input, PromptScreen Input:focus { border: none; height: 1; padding: 0; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        question: str,
        *,
        value: str = "",
        hint: str = "",
        placeholder: str = "",
        validate: Callable[[str], str | None] | None = None,
        describe: Callable[[str], str] | None = None,
    ) -> None:
        super().__init__()
        self.validate = validate
        self.describe = describe
        self.question = question
        self.value = value
        self.hint = hint
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.question, style="bold"))
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt-input")
            yield Static("", id="prompt-error")
            yield Static(Text(self.hint), id="prompt-hint")

    def hint_for(self, value: str) -> Text:
        """The hint line: ``describe(value)`` (what the answer will do, kept up to date) before the hint."""
        if self.describe is None:
            return Text(self.hint)
        return Text(self.describe(value) + (f" · {self.hint}" if self.hint else ""))

    def on_mount(self) -> None:
        for field in self.query(Input):  # absent only if the app is already shutting down
            field.focus()
        if self.describe is not None:
            self.query_one("#prompt-hint", Static).update(self.hint_for(self.value))

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.show_error("")
        if self.describe is not None:
            self.query_one("#prompt-hint", Static).update(self.hint_for(event.value))

    def show_error(self, message: str) -> None:
        """Say why the answer was not accepted (the prompt stays open)."""
        self.query_one("#prompt-error", Static).update(Text(message))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        problem = self.validate(event.value) if self.validate else None
        if problem:
            self.show_error(problem)
            return
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
