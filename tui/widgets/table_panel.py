"""A panel made of an optional filter line, a table and a note line. Enter on a row jumps the timeline to what the
row is about; j/k move like ↓/↑; ``/`` focuses the filter; Esc leaves the filter, then the panel."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import DataTable, Input, Static

from gputop_trace.presentation.name_fitting import fit_names
from gputop_trace.tui.hosts import shown_trace
from gputop_trace.tui.view.navigation import compile_search
from gputop_trace.tui.widgets.figure_static import FigureStatic


@dataclass(frozen=True)
class Column:
    """A table column: label, width (None: takes the room left), right-aligned or not, the narrowest
    panel width (in cells) at which it is shown, and whether its texts are names to cut so that they stay
    distinct (:func:`fit_names`) rather than cut at the end."""

    label: str
    width: int | None
    right: bool = True
    min_panel: int = 0
    distinct: bool = False


class TablePanel(Vertical):
    """Base of the Kernels, Gaps, Transfers, Ranges and Findings panels."""

    DEFAULT_CSS = """
    TablePanel { height: 1fr; }
    TablePanel > Input.panel-filter { height: 1; border: none; padding: 0 1; background: $boost; display: none; }
    TablePanel > Input.panel-filter.-shown { display: block; }
    TablePanel > DataTable { height: 1fr; }
    TablePanel > .panel-note {
        height: 1; color: $text-muted; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis;
    }
    TablePanel > .panel-note.-message { height: auto; text-wrap: wrap; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "row(1)", "Next row", show=False),
        Binding("k", "row(-1)", "Previous row", show=False),
        Binding("slash", "focus_filter", "Filter"),
    ]

    title: ClassVar[str] = ""
    has_filter: ClassVar[bool] = True
    filter_hint: ClassVar[str] = "filter (regex) — / to type, Esc to leave"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.items: list[Any] = []
        self.shown: list[int] = []
        self.pattern: re.Pattern[str] | None = None
        self._columns_key: tuple[object, ...] = ()

    # composition -------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        if self.has_filter:
            yield Input(placeholder=self.filter_hint, classes="panel-filter")
        yield DataTable(cursor_type="row", zebra_stripes=False, show_cursor=True)
        yield FigureStatic("", classes="panel-note")

    @property
    def table(self) -> DataTable[Any]:
        return self.query_one(DataTable)

    @property
    def note(self) -> Static:
        return self.query_one(".panel-note", Static)

    def focus_table(self) -> None:
        """Give the table the keyboard."""
        self.table.focus()

    # to override -------------------------------------------------------------------------------------------
    def columns(self) -> Sequence[Column]:
        """The columns, left to right."""
        return []

    def cells(self, item: Any) -> Sequence[Text | str]:
        """The cells of one item, one per column of :meth:`columns`."""
        return []

    def matches(self, item: Any, pattern: re.Pattern[str]) -> bool:
        """Whether an item passes the filter."""
        return bool(pattern.search(" ".join(str(c) for c in self.cells(item))))

    def activate(self, item: Any) -> None:
        """Enter on an item's row."""

    def highlighted(self, item: Any) -> None:
        """The cursor moved onto an item's row."""

    def say(self, text: str) -> str:
        """``text`` (which calls the device ``GPU``) in the loaded trace's own words: ``MTIA``, ``device`` ..."""
        trace = shown_trace(self)
        return trace.device_words().say(text) if trace is not None else text

    # filling -----------------------------------------------------------------------------------------------
    def set_items(self, items: Sequence[Any], note: str | Text = "") -> None:
        """Replace the rows."""
        self.table.display = True
        self.note.remove_class("-message")
        self.items = list(items)
        self.refill()
        self.note.update(note if isinstance(note, Text) else Text(note))

    def set_message(self, text: str | Text) -> None:
        """No rows; say why."""
        self.items = []
        self.refill()
        self.table.display = False
        self.note.add_class("-message")
        self.note.update(text if isinstance(text, Text) else Text(text))

    def visible_columns(self) -> list[Column]:
        width = self.size.width or (self.app.size.width if self.is_attached else 80)
        return [c for c in self.columns() if width >= c.min_panel]

    def refill(self) -> None:
        """Redraw the table from ``items`` and the filter (keeps the cursor on the same item when it can)."""
        table = self.table
        keep = self.current_item()
        cols = self.visible_columns()
        width = self.size.width or 80
        key = (width, *(c.label for c in cols))
        fixed = sum((c.width or 0) + 2 for c in cols)
        flex = max(10, width - fixed - 3)
        table.clear(columns=True)
        for c in cols:
            label = Text(c.label, justify="right" if c.right else "left")
            table.add_column(label, width=c.width if c.width is not None else flex, key=c.label)
        self._columns_key = key
        all_cols = list(self.columns())
        idx = [all_cols.index(c) for c in cols]
        self.shown = [i for i, it in enumerate(self.items) if self.pattern is None or self.matches(it, self.pattern)]
        rows = [list(self.cells(self.items[i])) for i in self.shown]
        for j, c in enumerate(all_cols):
            if c.distinct and j in idx and rows:
                fitted = fit_names([str(r[j]) for r in rows], c.width if c.width is not None else flex)
                for r, text in zip(rows, fitted, strict=True):
                    r[j] = text
        for i, cells in zip(self.shown, rows, strict=True):
            row = []
            for j in idx:
                v = cells[j]
                t = v if isinstance(v, Text) else Text(str(v))
                t.no_wrap = True
                t.overflow = "ellipsis"
                if all_cols[j].right:
                    t.justify = "right"
                row.append(t)
            table.add_row(*row, key=str(i))
        if keep is not None and keep in [self.items[i] for i in self.shown]:
            table.move_cursor(row=[self.items[i] for i in self.shown].index(keep), animate=False)

    def current_item(self) -> Any | None:
        """The item under the table's cursor."""
        table = self.table
        if not self.shown or table.row_count == 0:
            return None
        r = table.cursor_row
        if 0 <= r < len(self.shown):
            return self.items[self.shown[r]]
        return None

    def on_resize(self) -> None:
        key = (self.size.width or 80, *(c.label for c in self.visible_columns()))
        if self.items and key != self._columns_key:
            self.refill()

    # events ------------------------------------------------------------------------------------------------
    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        text = event.value
        if not text:
            self.pattern = None
        else:
            try:
                self.pattern = compile_search(text)
            except re.error as e:
                self.note.update(Text(f"not a regular expression: {e}", style="red"))
                return
        self.refill()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.leave_filter()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        item = self.current_item()
        if item is not None:
            self.activate(item)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        item = self.current_item()
        if item is not None:
            self.highlighted(item)

    # actions -----------------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A panel without a filter has no ``/`` key (so neither the footer nor the help lists one)."""
        return not (action == "focus_filter" and not self.has_filter)

    def action_row(self, delta: int) -> None:
        """Move the table cursor."""
        t = self.table
        if t.row_count:
            t.move_cursor(row=max(0, min(t.row_count - 1, t.cursor_row + delta)))

    def action_focus_filter(self) -> None:
        """Show the filter line (hidden while empty) and give it the keyboard."""
        if self.has_filter:
            field = self.query_one(Input)
            field.add_class("-shown")
            field.focus()

    def leave_filter(self) -> bool:
        """If the filter has the keyboard, give it back to the table (hiding it when empty); True when it did."""
        if self.has_filter and self.query_one(Input).has_focus:
            field = self.query_one(Input)
            field.set_class(bool(field.value), "-shown")
            self.focus_table()
            return True
        return False


class SortedTablePanel(TablePanel):
    """A table panel sorted on one of :attr:`sorts` (``o`` the next one, ``r`` reverses): largest first, except
    ``name``, A → Z. Subclasses give each sort's value (:meth:`sort_value`) and the note under the table."""

    sorts: ClassVar[tuple[str, ...]] = ()
    sort: str = ""
    descending: bool = True

    def sort_value(self, name: str) -> Any:
        """The function a row is sorted on for the sort ``name``."""
        raise NotImplementedError

    def sort_note(self) -> str:
        """The note under the table once the rows are sorted again."""
        return ""

    def sorted_rows(self, rows: Sequence[Any]) -> list[Any]:
        desc = self.descending if self.sort != "name" else not self.descending
        return sorted(rows, key=self.sort_value(self.sort), reverse=desc)

    def action_cycle_sort(self) -> None:
        """Sort by the next column."""
        self.sort = self.sorts[(self.sorts.index(self.sort) + 1) % len(self.sorts)]
        self.descending = True
        self.items = self.sorted_rows(self.items)
        self.set_items(self.items, self.sort_note())

    def action_reverse_sort(self) -> None:
        """Reverse the sort order."""
        self.descending = not self.descending
        self.items = self.sorted_rows(self.items)
        self.set_items(self.items, self.sort_note())
