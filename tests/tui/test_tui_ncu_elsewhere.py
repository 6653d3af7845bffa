"""Issue 20.6: ``c`` on a machine without ncu shows the exact commands to run where ncu is (the gputop-trace ncu
command and the plain ncu one), in a dialog whose text can be selected and copied and in the Drill-down panel,
with the "not installed" explanation; nothing runs. At 80×24 and 160×48, on the bundled sample trace."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gputop_trace.load.samples import default_sample
from gputop_trace.model.kinds import Kind
from gputop_trace.ncu import locate, runner
from gputop_trace.ncu.drilldown import TargetCommand, request_for_event, save_target
from gputop_trace.ncu.elsewhere import PLACEHOLDER_TARGET, commands_elsewhere
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.screens.main import MainScreen
from gputop_trace.tui.widgets.drilldown import DrilldownPanel
from gputop_trace.tui.widgets.ncu_elsewhere import NcuElsewhereScreen
from tests.tui_helpers import app_test, press, screen_text, wait_loaded, wait_text, wait_until

SIZES = [(80, 24), (160, 48)]


@pytest.fixture
def no_ncu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setattr(locate, "find_ncu", lambda: None)
    monkeypatch.setenv("GPUTOP_CACHE_DIR", str(tmp_path / "cache"))

    def never(*a: Any, **k: Any) -> None:
        raise AssertionError("nothing may run")

    monkeypatch.setattr(runner.NcuRunner, "__init__", never)
    return tmp_path


def _first_kernel(main: MainScreen) -> int:
    return int(np.flatnonzero(main.trace.kind == int(Kind.KERNEL))[0])


@pytest.mark.parametrize("size", SIZES)
@app_test
async def test_c_without_ncu_shows_the_commands_to_run_elsewhere(size: tuple[int, int], no_ncu: Path) -> None:
    app = GputopApp([default_sample()])
    async with app.run_test(size=size) as pilot:
        main = await wait_loaded(app, pilot)
        event = _first_kernel(main)
        main.select_and_show(event)
        await press(pilot, "c")
        await wait_until(pilot, lambda: isinstance(app.screen, NcuElsewhereScreen))
        dialog = app.screen
        assert isinstance(dialog, NcuElsewhereScreen)
        text = await wait_text(pilot, app, "not installed")
        assert "gputop-trace ncu --kernel" in text.replace("\n", " ")
        # the dialog's commands are the commands for this kernel, in full, in selectable text areas
        request = request_for_event(main.trace, event, default_sample())
        expected = commands_elsewhere(request, None)
        assert dialog.commands.gputop_trace == expected.gputop_trace
        argv = shlex.split(dialog.commands.gputop_trace)
        assert argv[:4] == ["gputop-trace", "ncu", "--kernel", request.raw_name or request.kernel_name]
        assert argv[-2:] == list(PLACEHOLDER_TARGET)
        ncu_argv = shlex.split(dialog.commands.ncu)
        assert ncu_argv[0] == "ncu" and "--set" in ncu_argv and not any(os.sep + "cache" in a for a in ncu_argv)
        await press(pilot, "g")
        assert app.clipboard == dialog.commands.gputop_trace
        await press(pilot, "n")
        assert app.clipboard == dialog.commands.ncu
        await press(pilot, "escape")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen))
        panel = app.screen.query_one(DrilldownPanel)
        assert panel.display and main.panel == "drilldown"
        shown = " ".join(screen_text(app).split())
        assert "not installed" in shown and "On a machine with ncu" in shown


@app_test
async def test_the_remembered_workload_command_is_used(no_ncu: Path) -> None:
    save_target(default_sample(), TargetCommand(("python3", "train.py", "--steps", "3"), str(no_ncu)))
    app = GputopApp([default_sample()])
    async with app.run_test(size=(160, 48)) as pilot:
        main = await wait_loaded(app, pilot)
        main.select_and_show(_first_kernel(main))
        await press(pilot, "c")
        await wait_until(pilot, lambda: isinstance(app.screen, NcuElsewhereScreen))
        dialog = app.screen
        assert isinstance(dialog, NcuElsewhereScreen)
        assert dialog.commands.gputop_trace.endswith("-- python3 train.py --steps 3")
        assert dialog.commands.ncu.endswith("-- python3 train.py --steps 3")
        assert "YOUR_COMMAND" not in screen_text(app)
