"""The Drill-down panel in a small test app: confirm → run (stand-in ncu) → result, failures as guidance, cancel,
the remembered target command; snapshots at 80×24 and 160×48."""

from __future__ import annotations

import asyncio
import functools
import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Input, OptionList

from gputop_trace.ncu import locate
from gputop_trace.ncu.drilldown import DrilldownRequest, TargetCommand, load_target, save_target
from gputop_trace.tui.widgets.drilldown import DrilldownPanel
from gputop_trace.tui.widgets.ncu_confirm import NcuConfirmScreen
from tests.conftest import wait_gone

pytestmark = pytest.mark.corpus

FIXED_NOW = 1_790_000_000.0  # report names carry a time stamp: fixed for snapshots
SNAP_DIR = "/tmp/gputop-trace-snapshot"  # fixed paths: they are shown on screen


def sync(fn: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test body with asyncio (no pytest-asyncio needed); fixtures pass through."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        asyncio.run(fn(*args, **kwargs))

    return wrapper


class DrilldownApp(App[None]):
    """The panel alone, recording the messages it posts."""

    def __init__(self, **panel: Any) -> None:
        super().__init__()
        self.panel_kwargs = panel
        self.messages: list[Any] = []

    def compose(self) -> ComposeResult:
        yield DrilldownPanel(id="dd", **self.panel_kwargs)

    def on_drilldown_panel_run_started(self, m: DrilldownPanel.RunStarted) -> None:
        self.messages.append(("started", m.command))

    def on_drilldown_panel_run_finished(self, m: DrilldownPanel.RunFinished) -> None:
        self.messages.append(("finished", m.verdicts))

    def on_drilldown_panel_run_failed(self, m: DrilldownPanel.RunFailed) -> None:
        self.messages.append(("failed", m.guidance))


def _request(trace: str, **kw: Any) -> DrilldownRequest:
    args: dict[str, Any] = {
        "kernel_name": "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)",
        "raw_name": "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)",
        "launch": 12,
        "nvtx_range": "step_2",
        "launch_in_range": 1,
        "ranges": (("step_2", 1), ("forward", 7)),
        "trace_path": trace,
        "duration_ns": 3104,
    }
    args.update(kw)
    return DrilldownRequest(**args)


def screen_text(app: App[Any]) -> str:
    """What the terminal shows now, as plain text."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def _until(pilot: Pilot[Any], condition: Any, timeout: float = 15.0) -> None:
    steps = int(timeout / 0.05)
    for _ in range(steps):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError("timed out waiting for the panel")


async def _type(pilot: Pilot[Any], text: str) -> None:
    await pilot.press(*[{" ": "space"}.get(c, c) for c in text])


async def _fill(pilot: Pilot[Any], text: str) -> None:
    """Set the target command field at once (typing is tested in the first test)."""
    pilot.app.screen.query_one("#target", Input).value = text
    await pilot.pause()


def _workload(code: str = "print('workload step')") -> str:
    return f'{sys.executable} -c "{code}"'


@sync
async def test_confirm_then_run_shows_the_verdict_and_remembers_the_target(fake_ncu: Path, tmp_path: Path) -> None:
    trace = str(tmp_path / "run.pt.trace.json")
    app = DrilldownApp()
    async with app.run_test(size=(120, 40)) as pilot:
        panel = app.query_one(DrilldownPanel)
        panel.start(_request(trace))
        await pilot.pause()
        assert isinstance(app.screen, NcuConfirmScreen)
        assert not fake_ncu.exists()  # nothing runs before the user confirms
        await _type(pilot, _workload())
        await pilot.pause()
        shown = screen_text(app)
        assert "--kernel-name-base function" in shown and "regex:^vectorized_elementwise_kernel$" in shown
        assert "-s 12" in shown  # NVTX filter off by default for Kineto ranges: the plain launch count
        await pilot.press("ctrl+r")
        await _until(pilot, lambda: bool(panel.verdicts))
        await pilot.pause()
        text = screen_text(app)
        assert "COMPUTE-BOUND" in text and "heavy tensor-core use" in text
        assert [m[0] for m in app.messages] == ["started", "finished"]
        cmd = app.messages[0][1]
        assert cmd.launch_skip == 12 and cmd.nvtx_include is None
    saved = load_target(trace)
    assert saved is not None and saved.argv == (sys.executable, "-c", "print('workload step')")
    assert sorted(os.listdir(tmp_path)) == ["cache", "ncu-argv.jsonl"]  # nothing written next to the trace


@sync
async def test_nvtx_filter_switch_changes_the_launch_count(fake_ncu: Path, tmp_path: Path) -> None:
    app = DrilldownApp()
    async with app.run_test(size=(120, 40)) as pilot:
        app.query_one(DrilldownPanel).start(_request(str(tmp_path / "t.json")))
        await pilot.pause()
        await _fill(pilot, "python3 train.py")
        screen = app.screen
        assert isinstance(screen, NcuConfirmScreen)
        await pilot.click("#nvtx")
        await pilot.pause()
        assert screen.command is not None
        assert screen.command.nvtx_include == "step_2/" and screen.command.launch_skip == 1
        assert "--nvtx-include step_2/" in screen_text(app)


@sync
async def test_escape_runs_nothing(fake_ncu: Path, tmp_path: Path) -> None:
    app = DrilldownApp()
    async with app.run_test(size=(80, 24)) as pilot:
        app.query_one(DrilldownPanel).start(_request(str(tmp_path / "t.json")))
        await pilot.pause()
        await _fill(pilot, "python3 train.py")
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, NcuConfirmScreen)
        assert "Not run." in screen_text(app)
    assert not fake_ncu.exists() and app.messages == []


@sync
async def test_the_panel_asks_the_one_ncu_locator(
    fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stand-in ncu is on PATH, but :func:`gputop_trace.ncu.locate.find_ncu` says there is none."""
    monkeypatch.setattr(locate, "find_ncu", lambda: None)
    app = DrilldownApp()
    async with app.run_test(size=(120, 40)) as pilot:
        app.query_one(DrilldownPanel).start(_request(str(tmp_path / "t.json")))
        await pilot.pause()
        assert not isinstance(app.screen, NcuConfirmScreen)
        assert "ncu was not found" in " ".join(screen_text(app).split())
    assert not fake_ncu.exists()


@sync
async def test_shell_operators_are_refused_in_the_modal(fake_ncu: Path, tmp_path: Path) -> None:
    app = DrilldownApp()
    async with app.run_test(size=(100, 30)) as pilot:
        app.query_one(DrilldownPanel).start(_request(str(tmp_path / "t.json")))
        await pilot.pause()
        await _type(pilot, "python3 train.py | tee log")
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, NcuConfirmScreen)
        assert "runs without a shell" in screen_text(app)
    assert not fake_ncu.exists()


@sync
async def test_remembered_target_is_prefilled(fake_ncu: Path, tmp_path: Path) -> None:
    trace = str(tmp_path / "t.json")
    save_target(trace, TargetCommand(("python3", "train.py", "--steps", "3"), str(tmp_path)))
    app = DrilldownApp()
    async with app.run_test(size=(100, 30)) as pilot:
        app.query_one(DrilldownPanel).start(_request(trace))
        await pilot.pause()
        assert app.screen.query_one("#target", Input).value == "python3 train.py --steps 3"
        assert app.screen.query_one("#cwd", Input).value == str(tmp_path)


@sync
async def test_no_kernel_matched_offers_ncus_kernels(
    fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NCU_SCENARIO", "no_kernel")
    app = DrilldownApp()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(DrilldownPanel)
        panel.start(_request(str(tmp_path / "t.json")))
        await pilot.pause()
        await _fill(pilot, _workload())
        await pilot.press("ctrl+r")
        await _until(pilot, lambda: any(m[0] == "failed" for m in app.messages))
        await pilot.pause()
        text = screen_text(app)
        assert "No kernel matched" in text and "fma_heavy" in text and "saxpy" in text
        options = panel.query_one("#dd-kernels", OptionList)
        assert options.option_count == 3
        options.highlighted = 1
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, NcuConfirmScreen)
        assert app.screen.request.raw_name == "saxpy" and app.screen.request.launch == 0


@sync
async def test_permission_error_is_explained(fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NCU_SCENARIO", "permission")
    app = DrilldownApp()
    async with app.run_test(size=(120, 40)) as pilot:
        app.query_one(DrilldownPanel).start(_request(str(tmp_path / "t.json")))
        await pilot.pause()
        await _fill(pilot, _workload())
        await pilot.press("ctrl+r")
        await _until(pilot, lambda: bool(app.messages) and app.messages[-1][0] == "failed")
        await pilot.pause()
        text = " ".join(screen_text(app).split())
        assert "ERR_NVGPUCTRPERM" in text and "NVreg_RestrictProfilingToAdminUsers=0" in text
        assert app.messages[-1][1].kind == "permission"


@sync
async def test_x_cancels_a_slow_run_and_the_ui_stays_responsive(
    fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NCU_SCENARIO", "slow")
    pid_file = tmp_path / "child.pid"
    monkeypatch.setenv("FAKE_NCU_CHILD_PID", str(pid_file))
    app = DrilldownApp()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(DrilldownPanel)
        panel.start(_request(str(tmp_path / "t.json")))
        await pilot.pause()
        await _fill(pilot, _workload("import time; time.sleep(120)"))
        await pilot.press("ctrl+r")
        # the status line counts seconds on a 0.5 s timer: wait for it, a loaded machine may be slow to fire it
        await _until(
            pilot,
            lambda: (
                panel.running
                and pid_file.exists()
                and "pass 3" in screen_text(app)
                and "ncu running" in screen_text(app)
            ),
        )
        assert "x to cancel" in screen_text(app)
        panel.focus()
        await pilot.press("x")
        await _until(pilot, lambda: not panel.running and any(m[0] == "failed" for m in app.messages))
        await pilot.pause()
        assert app.messages[-1][1].kind == "cancelled"
        assert "Profiling cancelled" in screen_text(app)
    assert wait_gone(int(pid_file.read_text())), "the workload survived the cancel"


# ---- snapshots -------------------------------------------------------------------------------------------------


def _report_app(corpus: Path) -> tuple[DrilldownApp, Any]:
    app = DrilldownApp()

    async def run_before(pilot: Pilot[Any]) -> None:
        panel = app.query_one(DrilldownPanel)
        panel.open_report(str(corpus / "ncu" / "tc.ncu-rep"))
        await _until(pilot, lambda: bool(panel.verdicts))
        await pilot.pause()

    return app, run_before


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_snapshot_result_view(snap_compare: Any, corpus: Path, size: tuple[int, int]) -> None:
    app, run_before = _report_app(corpus)
    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_snapshot_confirm_modal(
    snap_compare: Any, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int], tmp_path: Path
) -> None:
    monkeypatch.setenv("GPUTOP_CACHE_DIR", "/home/user/.cache/gputop-trace")
    monkeypatch.setattr(
        "gputop_trace.tui.widgets.drilldown.load_target",
        lambda _trace: TargetCommand(("python3", "train.py", "--steps", "3"), "/home/user/project"),
    )
    app = DrilldownApp(ncu_path="ncu", now=FIXED_NOW)

    async def run_before(pilot: Pilot[Any]) -> None:
        app.query_one(DrilldownPanel).start(_request("/home/user/project/run.pt.trace.json"))
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_snapshot_no_kernel_guidance(
    snap_compare: Any, fake_ncu: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FAKE_NCU_SCENARIO", "no_kernel")
    app = DrilldownApp()

    async def run_before(pilot: Pilot[Any]) -> None:
        panel = app.query_one(DrilldownPanel)
        request = _request(str(tmp_path / "t.json"))
        from gputop_trace.ncu.drilldown import build_ncu_command

        cmd = build_ncu_command(
            request.raw_name,
            ["python3", "-c", "print('app done: no error')"],
            launch_skip=3,
            report_base=f"{SNAP_DIR}/r",
            log_path=f"{SNAP_DIR}/r.log",
            ncu="ncu",
        )
        panel.request = request
        panel.run_command(cmd)
        await _until(pilot, lambda: any(m[0] == "failed" for m in app.messages))
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
