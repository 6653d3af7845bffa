"""The Drill-down panel: profile the selected kernel with Nsight Compute and explain the verdict.

Usage (the app's panel 5; the ``c`` key calls :meth:`DrilldownPanel.start`)::

    panel = DrilldownPanel(ncu_path=None, timeout_s=1800, section_set="full", clock_control=None)
    panel.start(request_for_event(trace, event, trace_path))   # ask → confirm → run → result
    panel.open_report("old.ncu-rep")                          # show an existing report, no run

Constructor: ``DrilldownPanel(*, ncu_path=None, timeout_s=DEFAULT_TIMEOUT_S, section_set="full",
clock_control=None, now=None, name=None, id=None, classes=None)``. ``ncu_path`` defaults to
:func:`gputop_trace.ncu.locate.find_ncu`; ``now`` fixes the time stamp of report names (tests).

Flow of :meth:`start`: the :class:`NcuConfirmScreen` modal asks for the target command (prefilled with the one
remembered for the trace, saved again on confirm), shows the exact ncu argument list and returns only when the user
presses Run. Then ncu runs in an async worker (``asyncio.create_subprocess_exec``, no shell): its log and the
workload's output stream into the panel with the elapsed time; ``x`` cancels (the whole process group is killed).
The result view shows duration, SM and memory % of peak as bars, the roofline verdict with a terminal roofline
plot, occupancy and its limiter, top warp stalls, tensor-pipe use, cache hit rates, ncu's rule messages, the
plain-words explanation and warnings (tiny kernels, compiled / CUDA-graph kernels). Failures show guidance; when
no kernel matched, ncu's list of kernels is offered (Enter profiles the chosen one) and ``n`` retries without the
NVTX filter.

Messages (bubble to the app): :class:`DrilldownPanel.RunStarted` (``command``), :class:`DrilldownPanel.RunFinished`
(``result`` — None for :meth:`open_report` —, ``verdicts``), :class:`DrilldownPanel.RunFailed` (``guidance``,
``result``). Keys: ``x`` cancel the run, ``r`` profile the same kernel again, ``n`` retry without the NVTX filter.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from typing import ClassVar

from rich.console import Group, RenderableType
from rich.rule import Rule
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Log, OptionList, Static
from textual.widgets.option_list import Option

from gputop_trace.analysis.roofline.verdict import KernelVerdict, analyze_kernel
from gputop_trace.errors import TraceError
from gputop_trace.model.ncu import NcuReport
from gputop_trace.ncu import locate
from gputop_trace.ncu.drilldown import DrilldownRequest, NcuCommand, load_target, save_target
from gputop_trace.ncu.report_reader import load_report
from gputop_trace.ncu.runner import DEFAULT_TIMEOUT_S, Guidance, NcuRunner, NcuRunResult, not_installed
from gputop_trace.presentation.ncu_verdict import render_guidance, render_verdict
from gputop_trace.safe_text import clean
from gputop_trace.tui.widgets.ncu_confirm import ConfirmResult, NcuConfirmScreen

IDLE_TEXT = (
    "Select a kernel in the timeline or the Kernels panel and press c: gputop-trace shows the exact Nsight Compute "
    "command, runs it after you confirm, and explains why that kernel is slow."
)


class DrilldownPanel(Widget):
    """The ncu drill-down (see the module docstring for the constructor, methods, messages and keys)."""

    DEFAULT_CSS = """
    DrilldownPanel { height: 1fr; layout: vertical; }
    DrilldownPanel #dd-status { height: 1; background: $boost; padding: 0 1; }
    DrilldownPanel #dd-log { height: 1fr; display: none; }
    DrilldownPanel #dd-body { height: 1fr; padding: 0 1; }
    DrilldownPanel #dd-kernels { height: auto; max-height: 12; display: none; }
    DrilldownPanel.running #dd-log { display: block; }
    DrilldownPanel.running #dd-body { display: none; }
    DrilldownPanel.choose #dd-kernels { display: block; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("x", "cancel_run", "Cancel ncu"),
        Binding("r", "rerun", "Profile again"),
        Binding("n", "retry_without_nvtx", "Retry without NVTX"),
    ]

    class RunStarted(Message):
        """ncu started with ``command``."""

        def __init__(self, command: NcuCommand) -> None:
            super().__init__()
            self.command = command

    class RunFinished(Message):
        """A report is shown: ``verdicts`` per kernel; ``result`` is None when an existing report was opened."""

        def __init__(self, result: NcuRunResult | None, verdicts: list[KernelVerdict]) -> None:
            super().__init__()
            self.result = result
            self.verdicts = verdicts

    class RunFailed(Message):
        """The run produced no report (or the report could not be read): ``guidance`` says why and what to do."""

        def __init__(self, guidance: Guidance, result: NcuRunResult | None) -> None:
            super().__init__()
            self.guidance = guidance
            self.result = result

    def __init__(
        self,
        *,
        ncu_path: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        section_set: str = "full",
        clock_control: str | None = None,
        now: float | None = None,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.ncu_path = ncu_path
        self.timeout_s = timeout_s
        self.section_set = section_set
        self.clock_control = clock_control
        self.now = now
        self.request: DrilldownRequest | None = None
        self.last_command: NcuCommand | None = None
        self.last_guidance: Guidance | None = None
        self.verdicts: list[KernelVerdict] = []
        self._runner: NcuRunner | None = None
        self._ticker: Timer | None = None
        self._status_base = ""

    def compose(self) -> ComposeResult:
        yield Static(Text("Drill-down · Nsight Compute", no_wrap=True, overflow="ellipsis"), id="dd-status")
        yield Log(id="dd-log", highlight=False, max_lines=5000)
        with Vertical(id="dd-main"):
            yield OptionList(id="dd-kernels")
            with VerticalScroll(id="dd-body"):
                yield Static(Text(IDLE_TEXT), id="dd-content")

    # ---- public API --------------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """Whether ncu is running now."""
        return self._runner is not None

    def start(self, request: DrilldownRequest) -> None:
        """Profile the kernel of ``request``: confirm the command in a modal, then run ncu."""
        if self.running:
            self.notify("ncu is still running: press x to cancel it first.", severity="warning")
            return
        self.request = request
        ncu = self.ncu_path or locate.find_ncu()
        target = load_target(request.trace_path)
        if ncu is None:
            self._show_elsewhere(request, target.argv if target is not None else None)
            return
        screen = NcuConfirmScreen(
            request,
            target,
            ncu=ncu,
            section_set=self.section_set,
            clock_control=self.clock_control,
            now=self.now,
        )
        self.app.push_screen(screen, self._confirmed)

    def open_report(self, path: str, *, launch: int | None = None) -> None:
        """Show an existing report (read in a worker thread)."""
        self._set_status(f"reading {os.path.basename(path)} …")
        self.run_worker(self._open(path, launch, None), exclusive=True, group="ncu-read")

    def cancel(self) -> None:
        """Stop the running ncu (and its workload)."""
        if self._runner is not None:
            self._runner.cancel()
            self._set_status(f"cancelling … · {self._status_base}")

    # ---- flow --------------------------------------------------------------------------------------------------
    def _confirmed(self, result: ConfirmResult | None) -> None:
        if result is None or self.request is None:
            self._set_status("Not run.")
            return
        try:
            save_target(self.request.trace_path, result.target)
        except OSError as e:
            self.notify(f"Could not remember the target command: {e.strerror}", severity="warning")
        self.run_command(result.command, cwd=result.target.cwd)

    def run_command(self, command: NcuCommand, *, cwd: str | None = None) -> None:
        """Run a confirmed ncu command now (the confirm step has already happened)."""
        self.last_command = command
        self.last_guidance = None
        log = self.query_one("#dd-log", Log)
        log.clear()
        log.write_line(clean("$ " + command.display()))
        self.add_class("running")
        self.remove_class("choose")
        self._runner = NcuRunner(command, cwd=cwd, timeout_s=self.timeout_s, on_line=self._on_line)
        self._status_base = f"{command.kernel_name} launch {command.launch_skip}"
        self._set_status(f"ncu starting · x to cancel · {self._status_base}")
        self._ticker = self.set_interval(0.5, self._tick)
        self.post_message(self.RunStarted(command))
        self.run_worker(self._run(self._runner), exclusive=True, group="ncu-run")

    def _on_line(self, source: str, line: str) -> None:
        prefix = "ncu│ " if source == "ncu" else "app│ "
        self.query_one("#dd-log", Log).write_line(prefix + clean(line))

    def _tick(self) -> None:
        if self._runner is not None:
            self._set_status(f"ncu running {self._runner.elapsed_s:.0f} s · x to cancel · {self._status_base}")

    async def _run(self, runner: NcuRunner) -> None:
        try:
            result = await runner.run()
        except OSError as e:  # e.g. the cache folder cannot be created
            g = Guidance("failed", "ncu could not be started", f"{e.strerror or e}: {e.filename or ''}".strip(": "))
            self._show_failure(g, None)
            return
        finally:
            self._runner = None
            if self._ticker is not None:
                self._ticker.stop()
                self._ticker = None
            self.remove_class("running")
        if result.failure is not None or result.report_path is None:
            g = result.failure or Guidance("no_report", "ncu wrote no report", "See the log.")
            self._show_failure(g, result)
            return
        launch = result.command.launch_skip
        await self._open(result.report_path, launch, result)

    async def _open(self, path: str, launch: int | None, result: NcuRunResult | None) -> None:
        compiled = bool(self.request and self.request.compiled and result is not None)
        try:
            report: NcuReport = await asyncio.to_thread(load_report, path, ncu_path=self.ncu_path)
            verdicts = [
                analyze_kernel(k, launch=launch if len(report.kernels) == 1 else None, compiled=compiled)
                for k in report.kernels
            ]
        except TraceError as e:
            self._show_failure(Guidance("failed", "Could not read the report", e.message), result)
            return
        except Exception as e:  # the ncu_report extension can raise its own errors on damaged files
            text = f"Reading {path} failed: {type(e).__name__}: {e}. Try 'gputop-trace ncu {path}' for details."
            self._show_failure(Guidance("failed", "Could not read the report", text), result)
            return
        self.verdicts = verdicts
        extra = list(result.warnings) if result else []
        extra += list(report.warnings)
        parts: list[RenderableType] = []
        for i, v in enumerate(verdicts):
            if len(verdicts) > 1:
                parts.append(Rule(f"kernel {i + 1} of {len(verdicts)}"))
            parts.append(render_verdict(v, extra_warnings=extra))
        self.remove_class("choose")
        self.query_one("#dd-content", Static).update(Group(*parts))
        took = f" · ncu took {result.elapsed_s:.1f} s" if result is not None else ""
        first = verdicts[0] if verdicts else None
        verdict = f" · {first.verdict}" if first else ""
        self._set_status(f"{os.path.basename(path)}{verdict}{took}")
        self.query_one("#dd-body", VerticalScroll).scroll_home(animate=False)
        self.post_message(self.RunFinished(result, verdicts))

    def _show_failure(self, g: Guidance, result: NcuRunResult | None) -> None:
        self.last_guidance = g
        parts: list[RenderableType] = [render_guidance(g, list_kernels=False)]
        if result is not None:
            parts.append(Text(""))
            parts.append(Text(clean("Command: " + result.command.display()), style="dim"))
        if g.kind == "no_kernels" and result is not None and result.command.nvtx_include is not None:
            parts.append(Text("Press n to retry without the NVTX filter.", style="bold"))
        kernels = self.query_one("#dd-kernels", OptionList)
        kernels.clear_options()
        if g.available_kernels:
            kernels.add_options(
                [
                    Option(Text(clean(n), no_wrap=True, overflow="ellipsis"), id=f"k{i}")
                    for i, n in enumerate(g.available_kernels)
                ]
            )
            self.add_class("choose")
            parts.insert(1, Text("ncu saw the kernels listed above: Enter on one profiles it instead.", style="bold"))
        else:
            self.remove_class("choose")
        self.query_one("#dd-content", Static).update(Group(*parts))
        self._set_status(f"✗ {g.title}")
        self.post_message(self.RunFailed(g, result))
        if g.available_kernels:
            kernels.focus()

    def _show_elsewhere(self, request: DrilldownRequest, target: tuple[str, ...] | None) -> None:
        """ncu is not installed here: show the commands to run where it is (in the panel, and in a dialog where
        they can be selected and copied). Nothing runs."""
        from gputop_trace.ncu.elsewhere import commands_elsewhere
        from gputop_trace.tui.widgets.ncu_elsewhere import NcuElsewhereScreen, elsewhere_text

        g = not_installed()
        self.last_guidance = g
        try:
            cmds = commands_elsewhere(
                request, target, section_set=self.section_set, clock_control=self.clock_control, now=self.now
            )
        except ValueError as e:  # a kernel name ncu cannot filter on: say so, as a failed run would
            self._show_failure(Guidance("failed", g.title, f"{g.text} {e}."), None)
            return
        self.remove_class("choose")
        self.query_one("#dd-content", Static).update(elsewhere_text(g, cmds))
        self._set_status(f"✗ {g.title} · the command to run where it is")
        self.app.push_screen(NcuElsewhereScreen(g, cmds))

    def _set_status(self, text: str) -> None:
        self.query_one("#dd-status", Static).update(Text(clean(text), no_wrap=True, overflow="ellipsis"))
        self.refresh_bindings()  # every change of state comes with a status: the footer's keys follow it

    # ---- actions -----------------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The keys show (and work) only when they apply: x while ncu runs, r after a run or a failure, n after
        "no kernel matched" with an NVTX filter."""
        if action == "cancel_run":
            return self.running
        if action == "rerun":
            return self.request is not None and not self.running and self.last_command is not None
        if action == "retry_without_nvtx":
            g = self.last_guidance
            return not self.running and g is not None and g.kind == "no_kernels" and self.request is not None
        return True

    def action_cancel_run(self) -> None:
        """Cancel the running ncu."""
        self.cancel()

    def action_rerun(self) -> None:
        """Profile the same kernel again (asks for confirmation again)."""
        if self.request is not None and not self.running:
            self.start(self.request)

    def action_retry_without_nvtx(self) -> None:
        """After "no kernel matched" with an NVTX filter: the same request without the filter."""
        if self.request is None or self.running or self.last_guidance is None:
            return
        self.start(replace(self.request, nvtx_default=False))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Profile a kernel ncu listed as available (launch 0 of that name)."""
        g = self.last_guidance
        if g is None or self.request is None or event.option_index >= len(g.available_kernels):
            return
        name = g.available_kernels[event.option_index]
        event.stop()
        self.start(
            replace(
                self.request,
                kernel_name=name,
                raw_name=name,
                launch=0,
                launch_in_range=None,
                nvtx_range=None,
                ranges=(),
                nvtx_default=False,
            )
        )

    def on_unmount(self) -> None:
        if self._runner is not None:
            self._runner.cancel()


__all__ = ["DrilldownPanel"]
