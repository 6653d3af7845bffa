"""The key footer, fitted to the terminal's width: Textual's footer lets its keys run on under the command palette
key at the right (at 80 columns that drew ``q Q▏^p palette`` and ``…▏^p paletteu``). This one leaves out the
keys that matter least until the rest fits; every key stays in the help (``?``)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

#: the actions whose footer keys go first when the footer is too narrow, in that order
DROP_FIRST = (
    "zoom(2.0)",
    "zoom(0.5)",
    "search",
    "cycle_panel(1)",
    "reverse_sort",
)


def key_width(key: FooterKey) -> int:
    """Columns a compact footer key takes: its key, a space, its words, a space."""
    return len(key.key_display) + 1 + len(key.description) + 1 if key.description else len(key.key_display) + 1


class FittingFooter(Footer):
    """A compact footer whose keys never run under the command palette key (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__(compact=True)

    def compose(self) -> ComposeResult:
        widgets = list(super().compose())
        width = self.app.size.width
        keys = [w for w in widgets if isinstance(w, FooterKey)]
        used = sum(key_width(k) for k in keys) + 1  # the palette key's separator
        for action in DROP_FIRST:
            if used <= width:
                break
            for k in [k for k in keys if k.action == action and not k.has_class("-command-palette")]:
                widgets.remove(k)
                keys.remove(k)
                used -= key_width(k)
        yield from widgets

    def on_resize(self) -> None:
        self.call_after_refresh(self.recompose)
