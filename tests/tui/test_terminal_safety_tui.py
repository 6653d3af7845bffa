"""The app on traces whose names try to take over the terminal (tests/fixtures/hostile.py): every screen it draws
— timeline, lane labels, details, the six panels, the palette, help, prompts, notifications, the drill-down's
confirm modal, the loading screen and the error dialog — holds no escape sequence, control, bidi or zero-width
character, and markup in a name shows literally (a name such as ``a[/]b`` once crashed notifications and
emptied the palette). A last test runs the real app in tmux and checks that the terminal's title and clipboard
were not touched."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from textual.command import CommandPalette

from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.screens.dialogs import ErrorDialog, PromptScreen
from gputop_trace.tui.screens.loading import LoadingScreen
from gputop_trace.tui.screens.main import MainScreen
from gputop_trace.tui.widgets.ncu_confirm import NcuConfirmScreen
from tests.fixtures.hostile import (
    EXPECTED,
    NSYS_PAYLOADS,
    PAYLOADS,
    unsafe_characters,
    write_kineto,
    write_nsys,
)
from tests.tui_helpers import app_test, press, run, screen_text, timeline, wait_loaded, wait_until

SIZE = (160, 48)


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def clean_screen(app: GputopApp, where: str) -> str:
    """The screen as text, after checking that nothing unsafe is on it."""
    text = screen_text(app)
    bad = unsafe_characters(text)
    assert not bad, f"{where}: {bad}"
    return text


def kernel_named(trace: Trace, name: str) -> int:
    nid = trace.name_ids[name]
    kernels = trace.of_kind(Kind.KERNEL)
    return int(next(i for i in kernels if int(trace.name[i]) == nid))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, str]]]:
    d = tmp_path_factory.mktemp("hostile-app")
    return {
        "kineto": (write_kineto(d / "hostile.json"), PAYLOADS),
        "nsys": (write_nsys(d / "hostile.sqlite"), NSYS_PAYLOADS),
    }


@pytest.mark.parametrize("source", ["kineto", "nsys"])
@app_test
async def test_every_screen_of_the_app_is_clean_and_literal(
    hostile: dict[str, tuple[Path, dict[str, str]]], source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, payloads = hostile[source]
    monkeypatch.chdir(tmp_path)  # the export below writes into the working folder

    app = GputopApp([str(path)])
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        main = await wait_loaded(app, pilot)
        await pilot.pause(0.2)
        text = clean_screen(app, "main screen")
        for tag in ("markup", "badmarkup"):  # thread names as lane labels
            assert EXPECTED[tag] in text, tag
        if source == "kineto":  # the loader's warnings, quoting the file, in a notification
            assert "warnings while loading" in text
        # the details of hostile kernels (one of each kind of payload)
        tl = timeline(app)
        assert app.trace is not None
        for tag in ("csi", "osc52", "c1", "ctl", "bidi", "markup", "badmarkup", "long"):
            tl.select(kernel_named(app.trace, payloads[tag]), rezoom=True)
            await pilot.pause()
            text = clean_screen(app, f"details of kernel {tag}")
            assert _squash(EXPECTED[tag])[:24] in _squash(text), tag
        # the six panels, moving through the rows of each
        for key in ("1", "2", "3", "4", "5", "6"):
            await press(pilot, key)
            await pilot.pause(0.1)
            clean_screen(app, f"panel {key}")
            await press(pilot, "j")
            text = clean_screen(app, f"panel {key}")
            if key == "1":
                for tag in ("markup", "badmarkup", "csi", "wide"):
                    assert EXPECTED[tag] in text, tag
            if key == "4":
                assert EXPECTED["markup"] in text
            await press(pilot, "escape")
        assert main.panel == "details"
        # the palette lists hostile names as they are (and still works with a[/]b among them)
        for query, shown in (("Hbad", "Go to kernel: " + EXPECTED["badmarkup"]),
                             ("Hmark", "Go to range: " + EXPECTED["markup"])):  # fmt: skip
            await press(pilot, "ctrl+p")
            await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette))
            await press(pilot, *query)

            def palette_shows(shown: str = shown) -> bool:
                return shown in screen_text(app)

            await wait_until(pilot, palette_shows)
            clean_screen(app, f"palette {query}")
            await press(pilot, "escape")
            await wait_until(pilot, lambda: isinstance(app.screen, MainScreen))
        # a search typed with markup in it: the prompt, the status bar and the notification show it literally
        await press(pilot, "slash")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen))
        await press(pilot, *"zz[/]", "enter")
        await wait_until(pilot, lambda: "No event name matches /zz[/]/." in screen_text(app))
        clean_screen(app, "search notification")
        await press(pilot, "escape")
        await press(pilot, "question_mark")
        clean_screen(app, "help")
        await press(pilot, "escape")
        # export: the notification says where the file was written; the Markdown holds no raw control text
        await press(pilot, "e")
        await wait_until(pilot, lambda: isinstance(app.screen, PromptScreen))
        await press(pilot, "enter")
        written = tmp_path / "gputop-findings.md"
        await wait_until(pilot, lambda: written.exists() and "Wrote markdown findings" in screen_text(app))
        assert "gputop-findings.md" in _squash(screen_text(app))
        assert any(str(written) in n.message for n in app._notifications)
        assert unsafe_characters(written.read_text()) == []
        clean_screen(app, "after export")


@app_test
async def test_a_hostile_file_name_on_the_loading_screen_and_in_the_error_dialog(tmp_path: Path) -> None:
    name = "t\x1b]52;c;cHduZWQ=\x07[bold red]x[red]\u202e.json"
    bad = tmp_path / name
    bad.write_bytes(b'{"traceEvents": [ {"ph": "X", "name": "\x1b[2J\x1b]2;PWNED\x07"')

    app = GputopApp([str(bad)])
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, (LoadingScreen, ErrorDialog)))
        clean_screen(app, "loading")
        # the dialog is on the stack before it is drawn: wait for its text on the screen
        await wait_until(pilot, lambda: isinstance(app.screen, ErrorDialog) and "json" in screen_text(app))
        text = clean_screen(app, "error dialog")
        assert isinstance(app.screen, ErrorDialog)
        assert "t[bold red]x[red].json" in app.screen.text and "[bold" in text
        await press(pilot, "enter")
        await wait_until(pilot, lambda: app.return_code is not None)
        assert app.return_code == 2


@pytest.mark.corpus
def test_drilldown_on_a_hostile_kernel_shows_and_runs_the_exact_argument_list(
    hostile: dict[str, tuple[Path, dict[str, str]]], fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``c`` on a kernel whose name holds an OSC 52 write and regex metacharacters: the confirm modal shows the
    command cleanly ($'...' escapes), ncu receives exactly the argument list, and no shell ever sees it."""
    path, _ = hostile["kineto"]
    raw = PAYLOADS["osc52"]  # Hosc52 ESC ] 52;c;cHduZWQ= BEL clip
    monkeypatch.chdir(tmp_path)

    async def body() -> None:
        app = GputopApp([str(path)])
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await wait_loaded(app, pilot)
            assert app.trace is not None
            timeline(app).select(kernel_named(app.trace, raw), rezoom=True)
            await press(pilot, "c")
            await wait_until(pilot, lambda: isinstance(app.screen, NcuConfirmScreen))
            await press(pilot, *f"{sys.executable} -c pass")
            await pilot.pause(0.2)
            text = clean_screen(app, "confirm modal")
            assert "$'regex:^Hosc52\\x1b\\\\]52;c;cHduZWQ=\\x07clip$'" in text
            assert not fake_ncu.exists()  # nothing ran before the confirmation
            await press(pilot, "ctrl+r")
            await wait_until(pilot, fake_ncu.exists, timeout=30)
            await wait_until(pilot, lambda: "COMPUTE-BOUND" in screen_text(app) or "✗" in screen_text(app), timeout=30)
            clean_screen(app, "drill-down result")

    run(body())
    (argv,) = [json.loads(line) for line in fake_ncu.read_text().splitlines()]
    assert argv[argv.index("-k") + 1] == "regex:^Hosc52\x1b\\]52;c;cHduZWQ=\x07clip$"
    assert argv[argv.index("--kernel-name-base") + 1] == "function"
    assert argv[argv.index("--") + 1 :] == [sys.executable, "-c", "pass"]
    assert sorted(os.listdir(tmp_path)) == ["cache", "ncu-argv.jsonl"]  # nothing written in the working folder


class _Tmux:
    """A private tmux server running one command; clipboard writes from programs are accepted (so a leak would
    show), and the pane title is what programs set it to."""

    def __init__(self, argv: list[str], tmp: Path) -> None:
        self.socket = f"gputop-safety-{os.getpid()}-{int(time.monotonic() * 1000)}"
        # the exit code is written by a small wrapper (tmux's #{pane_dead_status} is not always set); argv reaches
        # the program as positional parameters, never through the shell's parser
        self.status_file = tmp / "status"
        argv = ["sh", "-c", '"$@"; echo $? > "$0"', str(self.status_file), *argv]
        env = dict(os.environ, TERM="xterm-256color")
        for var in ("NO_COLOR", "COLUMNS", "LINES"):
            env.pop(var, None)
        self.env = env
        self.tmux("-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "160", "-y", "48")
        self.tmux("set-option", "-g", "set-clipboard", "on")
        self.tmux("set-option", "-g", "allow-rename", "on")
        self.tmux("set-option", "-t", "t", "remain-on-exit", "on")
        self.tmux("respawn-pane", "-k", "-t", "t", "--", *argv)

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True,
                              env=self.env, timeout=20).stdout  # fmt: skip

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "t")

    def wait_for(self, what: str, timeout: float = 60.0) -> str:
        end = time.monotonic() + timeout
        text = ""
        while time.monotonic() < end:
            text = self.screen()
            if what in text:
                return text
            time.sleep(0.2)
        raise AssertionError(f"never saw {what!r}; last screen:\n{text}")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, check=False)


@pytest.mark.slow
def test_in_a_real_terminal_the_title_and_clipboard_are_untouched(
    hostile: dict[str, tuple[Path, dict[str, str]]], tmp_path: Path
) -> None:
    if not shutil.which("tmux"):
        pytest.fail("tmux is needed for this test (apt-get install tmux)")
    exe = Path(sys.executable).parent / "gputop-trace"
    path, _ = hostile["kineto"]
    tm = _Tmux([str(exe) if exe.exists() else "gputop-trace", "view", str(path)], tmp_path)
    try:
        tm.wait_for("GPU busy")
        for key in ("1", "2", "3", "4", "6", "Escape", "C-p"):
            tm.tmux("send-keys", "-t", "t", key)
            time.sleep(0.3)
        tm.tmux("send-keys", "-t", "t", "-l", "Hosc")
        shown = tm.wait_for("Go to kernel: Hosc52clip")
        assert "[bold red]x[/]" in shown or "Hosc52clip" in shown
        title = tm.tmux("display-message", "-p", "-t", "t", "#{pane_title}")
        assert "PWNED" not in title
        buffers = tm.tmux("list-buffers", "-F", "#{buffer_sample}")
        assert "pwned" not in buffers.lower() and "cHduZWQ" not in buffers  # OSC 52 would have set a buffer
        tm.tmux("send-keys", "-t", "t", "Escape")
        time.sleep(0.3)
        tm.tmux("send-keys", "-t", "t", "q")
        end = time.monotonic() + 15
        while time.monotonic() < end and not (tm.status_file.exists() and tm.status_file.read_text().strip()):
            time.sleep(0.2)
        assert tm.status_file.read_text().strip() == "0"
    finally:
        tm.close()
