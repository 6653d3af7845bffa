"""The confirm-command modal of the ncu drill-down: edit how to rerun the workload, see the exact ncu command, run.

``NcuConfirmScreen(request, target, *, ncu="ncu", section_set="full", clock_control=None, now=None)`` is a
``ModalScreen[ConfirmResult | None]``. It shows the kernel and which launch will be profiled, and lets the user edit
the target command (prefilled from the command remembered for the trace), its working directory, the launch skip,
the NVTX filter (on/off and which enclosing range) and the section set. The exact ncu argument list is shown as it
changes. Nothing runs until the user presses **Run** (or ``ctrl+r``); ``escape`` dismisses with ``None``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from gputop_trace.ncu.drilldown import (
    SECTION_SETS,
    DrilldownRequest,
    NcuCommand,
    TargetCommand,
    command_for_request,
    nvtx_filter,
    split_command,
)
from gputop_trace.safe_text import clean


@dataclass(frozen=True)
class ConfirmResult:
    """What the user confirmed: the ncu command to run and the target command (to remember for the trace)."""

    command: NcuCommand
    target: TargetCommand


class NcuConfirmScreen(ModalScreen["ConfirmResult | None"]):
    """Edit the target command and confirm the exact ncu command (see the module docstring)."""

    DEFAULT_CSS = """
    NcuConfirmScreen { align: center middle; }
    NcuConfirmScreen > Vertical {
        width: 100%; max-width: 140; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    NcuConfirmScreen .title { text-style: bold; }
    NcuConfirmScreen #form { height: auto; max-height: 75vh; }
    NcuConfirmScreen .row { height: 1; }
    NcuConfirmScreen .row Label { width: 12; }
    NcuConfirmScreen .row Input { width: 1fr; }
    NcuConfirmScreen #skip { width: 8; }
    NcuConfirmScreen .set-label { width: 5; padding-left: 1; }
    NcuConfirmScreen #set { width: 14; }
    NcuConfirmScreen #nvtx { width: 21; }
    NcuConfirmScreen #nvtx-range { width: 1fr; }
    NcuConfirmScreen #command-title { margin-top: 1; }
    NcuConfirmScreen #command { height: auto; background: $boost; padding: 0 1; }
    NcuConfirmScreen #error { color: $error; height: auto; }
    NcuConfirmScreen #buttons { height: 1; margin-top: 1; align-horizontal: right; }
    NcuConfirmScreen #buttons Button { margin-left: 2; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+r", "run", "Run", priority=True),
    ]

    def __init__(
        self,
        request: DrilldownRequest,
        target: TargetCommand | None,
        *,
        ncu: str = "ncu",
        section_set: str = "full",
        clock_control: str | None = None,
        now: float | None = None,
    ) -> None:
        super().__init__()
        self.request = request
        self.target = target
        self.ncu = ncu
        self.section_set = section_set if section_set in SECTION_SETS else "full"
        self.clock_control = clock_control
        self.now = now
        self.command: NcuCommand | None = None

    # ---- layout ------------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        r = self.request
        usable = [(name, skip) for name, skip in r.ranges if nvtx_filter(name)[0] is not None]
        if r.nvtx_range and r.nvtx_range not in dict(usable):
            usable.insert(0, (r.nvtx_range, r.launch_in_range if r.launch_in_range is not None else r.launch))
        with Vertical():
            yield Static(Text("Profile this kernel with Nsight Compute", style="bold"), classes="title")
            yield Static(Text(clean(r.kernel_name), no_wrap=True, overflow="ellipsis"), id="kernel")
            yield Static(self._launch_text(), id="launch-info")
            yield Static("")
            with VerticalScroll(id="form"):
                with Horizontal(classes="row"):
                    yield Label("Command")
                    yield Input(
                        value=self.target.display() if self.target else "",
                        placeholder="how to rerun the workload, e.g. python3 train.py --steps 3",
                        id="target",
                        compact=True,
                    )
                with Horizontal(classes="row"):
                    yield Label("In folder")
                    yield Input(value=self.target.cwd if self.target else os.getcwd(), id="cwd", compact=True)
                with Horizontal(classes="row"):
                    yield Label("Launch (-s)")
                    yield Input(value=str(self._default_skip()), id="skip", type="integer", compact=True)
                    yield Label("Set", classes="set-label")
                    yield Select(
                        [(s, s) for s in SECTION_SETS],
                        value=self.section_set,
                        allow_blank=False,
                        id="set",
                        compact=True,
                    )
                with Horizontal(classes="row"):
                    on = bool(r.nvtx_default and r.nvtx_range)
                    yield Checkbox(self._nvtx_label(on), value=on, id="nvtx", compact=True)
                    yield Select(
                        [(f"{name}  (launch {skip} inside)", name) for name, skip in usable],
                        value=r.nvtx_range if r.nvtx_range in dict(usable) else Select.NULL,
                        prompt="no enclosing range",
                        allow_blank=True,
                        id="nvtx-range",
                        disabled=not usable,
                        compact=True,
                    )
                yield Static(Text("The exact command (runs without a shell):", style="bold"), id="command-title")
                yield Static(id="command")
                yield Static(id="error")
            with Horizontal(id="buttons"):
                yield Button("Run (ctrl+r)", variant="primary", id="run", compact=True)
                yield Button("Cancel (esc)", id="cancel", compact=True)

    def _launch_text(self) -> Text:
        r = self.request
        t = Text(f"launch {r.launch} of this name in the trace", style="dim")
        if r.compiled:
            t.append(" · compiled / CUDA-graph kernel", style="yellow")
        t.append(" · launches before the trace began shift -s; an NVTX range makes it exact", style="dim")
        t.no_wrap = True
        t.overflow = "ellipsis"
        return t

    def _default_skip(self) -> int:
        r = self.request
        if r.nvtx_default and r.nvtx_range:
            return r.skip_in_range(r.nvtx_range)
        return r.launch

    def on_mount(self) -> None:
        self.query_one("#target", Input).focus()
        self._refresh_command()

    # ---- state -------------------------------------------------------------------------------------------------
    def _nvtx_choice(self) -> str | None:
        if not self.query_one("#nvtx", Checkbox).value:
            return None
        value = self.query_one("#nvtx-range", Select).value
        return value if isinstance(value, str) else None

    def _refresh_command(self) -> None:
        error = self.query_one("#error", Static)
        box = self.query_one("#command", Static)
        self.command = None
        text = self.query_one("#target", Input).value
        try:
            argv = split_command(text) if text.strip() else []
            skip_text = self.query_one("#skip", Input).value.strip()
            skip = int(skip_text) if skip_text else 0
            if skip < 0:
                raise ValueError("the launch number must be 0 or more")
            set_value = self.query_one("#set", Select).value
            nvtx = self._nvtx_choice()
            cmd = command_for_request(
                self.request,
                argv or ["<command>"],
                use_nvtx=nvtx is not None,
                nvtx_range=nvtx,
                section_set=set_value if isinstance(set_value, str) else "full",
                ncu=self.ncu,
                clock_control=self.clock_control,
                launch_skip=skip,
                now=self.now,
            )
        except ValueError as e:
            box.update(Text(""))
            error.update(Text(clean(str(e))))
            return
        box.update(Text(clean(cmd.display())))
        notes = list(cmd.notes)
        if not argv:
            notes.insert(0, "Type the command that reruns the workload.")
        error.update(Text(" ".join(clean(n) for n in notes)))
        if argv:
            self.command = cmd

    def on_input_changed(self, event: Input.Changed) -> None:
        self._refresh_command()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "nvtx-range" and isinstance(event.value, str) and self.query_one("#nvtx", Checkbox).value:
            self.query_one("#skip", Input).value = str(self.request.skip_in_range(event.value))
        self._refresh_command()

    @staticmethod
    def _nvtx_label(on: bool) -> str:
        return "NVTX filter on " if on else "NVTX filter off"

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        event.checkbox.label = self._nvtx_label(event.value)
        nvtx = self._nvtx_choice()
        self.query_one("#skip", Input).value = str(self.request.skip_in_range(nvtx))
        self._refresh_command()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._refresh_command()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "run":
            self.action_run()
        else:
            self.action_cancel()

    # ---- actions -----------------------------------------------------------------------------------------------
    def action_run(self) -> None:
        """Confirm: dismiss with the command (only when it is complete and valid)."""
        self._refresh_command()
        if self.command is None:
            return
        argv = tuple(self.command.target)
        cwd = self.query_one("#cwd", Input).value.strip() or os.getcwd()
        if not os.path.isdir(cwd):
            self.query_one("#error", Static).update(Text(clean(f"The folder {cwd!r} does not exist.")))
            return
        self.dismiss(ConfirmResult(self.command, TargetCommand(argv, cwd)))

    def action_cancel(self) -> None:
        """Dismiss without running."""
        self.dismiss(None)
