"""End to end: the installed ``gputop-trace view`` on a corpus trace in a real pseudo-terminal (tmux, 80×24),
driven with keys, checked on the captured screen the way a person would read it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from gputop_trace.analysis.kernels import kernel_table
from gputop_trace.load.loader import load_paths
from gputop_trace.presentation.kernel_labels import kernel_label
from tests.conftest import corpus_file

TRACE = "kineto/h200_gpt_train_small.json.gz"


def _gputop() -> str:
    beside = Path(sys.executable).parent / "gputop-trace"
    found = str(beside) if beside.exists() else shutil.which("gputop-trace")
    if not found:
        pytest.fail("gputop-trace is not installed (pip install -e .)")
    return found


class Tmux:
    """A private tmux server with one 80×24 window running a command."""

    def __init__(self, argv: list[str], width: int = 80, height: int = 24) -> None:
        self.socket = f"gputop-e2e-{uuid.uuid4().hex[:8]}"
        # the exit code is written by a tiny shell wrapper (tmux's own #{pane_dead_status} is not always set);
        # argv reaches the program as positional parameters, never through the shell's parser
        self.status_file = Path(tempfile.mkdtemp(prefix="gputop-e2e-")) / "status"
        argv = ["sh", "-c", '"$@"; echo $? > "$0"', str(self.status_file), *argv]
        env = dict(os.environ, TERM="xterm-256color")
        for var in ("NO_COLOR", "COLUMNS", "LINES"):  # a fixed COLUMNS/LINES (pytest-xdist sets them) stops resizing
            env.pop(var, None)
        self._run("-f", "/dev/null", "new-session", "-d", "-s", "e2e", "-x", str(width), "-y", str(height), env=env)
        self._run("set-option", "-t", "e2e", "remain-on-exit", "on")
        self._run("respawn-pane", "-k", "-t", "e2e", "--", *argv, env=env)

    def _run(self, *args: str, env: dict[str, str] | None = None) -> str:
        proc = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True, env=env, timeout=20
        )
        return proc.stdout

    def screen(self) -> str:
        return self._run("capture-pane", "-p", "-t", "e2e")

    def keys(self, *keys: str) -> None:
        for k in keys:
            self._run("send-keys", "-t", "e2e", k)
            time.sleep(0.15)

    def wait_for(self, predicate: Callable[[str], bool], timeout: float = 30.0) -> str:
        end = time.monotonic() + timeout
        text = ""
        while time.monotonic() < end:
            text = self.screen()
            if predicate(text):
                return text
            time.sleep(0.2)
        raise AssertionError(f"the screen never showed what was expected; last screen:\n{text}")

    def dead_status(self) -> int | None:
        """The program's exit code once it has ended, None while it runs."""
        try:
            text = self.status_file.read_text().strip()
        except FileNotFoundError:
            return None
        return int(text) if text else None

    def quit(self, timeout: float = 10.0) -> int | None:
        """Press q and wait up to ``timeout`` s for the program to end: its exit code (None if it is still running)."""
        self.keys("q")
        end = time.monotonic() + timeout
        while self.dead_status() is None and time.monotonic() < end:
            time.sleep(0.1)
        return self.dead_status()

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, check=False)


@pytest.mark.corpus
@pytest.mark.slow
def test_view_in_a_real_terminal() -> None:
    if not shutil.which("tmux"):
        pytest.fail("tmux is needed for the end-to-end test (apt-get install tmux)")
    path = corpus_file(TRACE)
    top = kernel_table(load_paths([path]))[0]
    top_label = kernel_label(top.name)
    tm = Tmux([_gputop(), "view", path])
    try:
        first = tm.wait_for(lambda s: "GPU busy" in s and " ev" in s)
        lines = first.splitlines()
        # lanes are named
        for lane in ("GPU 0", "GPU busy", "annotations", "stream 7", "thread"):
            assert lane in first, lane
        assert lines[0].startswith("⟷ 96.9 ms")  # the whole trace
        assert "h200_gpt_train_small" in lines[-2] and "ev" in lines[-2]
        # zoom in: the ruler's window and ticks change
        tm.keys("w")
        # the ruler and the status bar are separate widgets, redrawn one after the other: wait for both
        zoomed = tm.wait_for(lambda s: s.splitlines()[0] != lines[0] and "win 96.9 ms" not in s.splitlines()[-2])
        assert zoomed.splitlines()[0].startswith("⟷ 48.5 ms")
        assert "win 48.5 ms" in zoomed.splitlines()[-2]
        # the Kernels panel lists the top kernel first
        tm.keys("1")
        panel = tm.wait_for(lambda s: "count" in s and "kernel" in s)
        table = panel[panel.index("count") :]
        first_row = next(line for line in table.splitlines()[1:] if line.strip())
        assert top_label[:12] in first_row, first_row
        assert f"{top.pct:.1f}" in first_row
        # Enter shows that kernel on the timeline, Esc comes back, q quits with 0
        tm.keys("Enter")
        tm.keys("Escape")
        back = tm.wait_for(lambda s: "what" in s and "kernel" in s)
        assert "launched by" in back
        assert tm.quit() == 0
    finally:
        tm.close()


@pytest.mark.corpus
@pytest.mark.slow
def test_resize_and_ctrl_c_in_a_real_terminal() -> None:
    if not shutil.which("tmux"):
        pytest.fail("tmux is needed for the end-to-end test (apt-get install tmux)")
    tm = Tmux([_gputop(), "view", corpus_file("kineto/h200_ddp_2gpu")])
    try:
        first = tm.wait_for(lambda s: "rank 0" in s and " ev" in s)
        assert len(first.splitlines()[0]) <= 80
        tm._run("set-option", "-t", "e2e", "window-size", "manual")
        tm._run("resize-window", "-t", "e2e", "-x", "120", "-y", "40")
        assert tm._run("display-message", "-p", "-t", "e2e", "#{window_width}x#{window_height}").strip() == "120x40"
        wide = tm.wait_for(lambda s: len(s.splitlines()) >= 39 and "events" in s.splitlines()[-2])
        assert "2 GPUs" in wide.splitlines()[-2]  # the roomier status line at 120 columns
        tm.keys("C-c")
        end = time.monotonic() + 10
        while tm.dead_status() is None and time.monotonic() < end:
            time.sleep(0.1)
        assert tm.dead_status() == 0
    finally:
        tm.close()
