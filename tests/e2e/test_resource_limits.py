"""A trace that would need more memory than there is gets a clear refusal before anything is parsed — from every
command that loads traces and from the app — and the estimate behind it covers the memory a load really takes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from gputop_trace.load.background import BackgroundLoad
from gputop_trace.load.resources import check_paths, estimate
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.screens.dialogs import ErrorDialog
from tests.cli_run import run_cli
from tests.tui_helpers import press, run, wait_until

if TYPE_CHECKING:
    from gputop_trace.tui.view.prepared import PreparedView

LOADING_COMMANDS = ["summary", "kernels", "gaps", "transfers", "ranges", "ranks"]


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    evs = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10 * i, "dur": 5,
            "args": {"device": 0, "stream": 7}} for i in range(2000)]  # fmt: skip
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"traceEvents": evs}))
    return p


@pytest.mark.parametrize("command", LOADING_COMMANDS)
def test_every_loading_command_refuses_before_parsing(
    trace: Path, command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    from gputop_trace.load import loader

    def no_parsing(*a: object, **k: object) -> None:
        raise AssertionError("the trace was parsed although it was refused")

    monkeypatch.setattr(loader, "load_paths", no_parsing)
    code, _, err = run_cli(capsys, command, str(trace), "--max-memory", "50MB")
    assert code == 2, err
    text = " ".join(err.split())
    assert text.startswith("gputop-trace: error: Opening")
    needed = estimate([str(trace)]).needed
    assert f"would need about {round(needed / 1e6)} MB of memory" in text
    assert "only 50 MB is the --max-memory limit" in text
    assert f"--max-memory {round(needed * 1.2 / 1e6)}MB to try anyway" in text and "Traceback" not in err


def test_view_hands_max_memory_to_the_app(trace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gputop_trace.tui.app as app_module
    from gputop_trace.cli.main import main

    seen: dict[str, object] = {}

    class FakeApp:
        def __init__(self, paths: list[str], **options: object) -> None:
            seen.update(options, paths=paths)
            self.return_code = 0

        def run(self) -> None:
            return None

    monkeypatch.setattr(app_module, "GputopApp", FakeApp)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)

    def load_started_by_view() -> BackgroundLoad[PreparedView]:
        # view starts the load before the app (issue 20.15): the load checks the same limit
        assert seen.pop("trace") is None
        background = seen.pop("background")
        assert isinstance(background, BackgroundLoad)
        background.wait(60)
        return background

    assert main(["view", str(trace), "--max-memory", "50MB"]) == 0
    background = load_started_by_view()
    assert seen == {
        "paths": [str(trace)],
        "max_memory": 50_000_000,
        "use_cache": True,
        "include_python": True,
        "inductor_dir": None,
    }
    assert (background.max_memory, background.use_cache, background.include_python) == (50_000_000, True, True)
    seen.clear()
    assert main(["view", str(trace), "--no-cache", "--no-python"]) == 0
    background = load_started_by_view()
    assert seen == {
        "paths": [str(trace)],
        "max_memory": None,
        "use_cache": False,
        "include_python": False,
        "inductor_dir": None,
    }
    assert (background.max_memory, background.use_cache, background.include_python) == (None, False, False)


def test_a_folder_is_estimated_from_every_trace_in_it(tmp_path: Path, trace: Path) -> None:
    folder = tmp_path / "ranks"
    folder.mkdir()
    for r in range(3):
        (folder / f"rank{r}.json").write_bytes(trace.read_bytes())
    (folder / "notes.txt").write_text("not a trace")
    one = estimate([str(trace)])
    est = check_paths([str(folder)], max_memory="100GB")
    assert est.files == 3 and est.decompressed == 3 * one.decompressed


def test_bad_sizes_and_the_environment_variable(
    trace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run_cli(capsys, "summary", str(trace), "--max-memory", "lots")
    assert code == 2 and "is not a size" in err
    monkeypatch.setenv("GPUTOP_MAX_MEMORY", "10MB")
    code, _, err = run_cli(capsys, "summary", str(trace))
    assert code == 2 and "GPUTOP_MAX_MEMORY limit" in " ".join(err.split())
    code, _, err = run_cli(capsys, "summary", str(trace), "--max-memory", "8GB")  # the option wins
    assert code == 0, err


def test_the_app_shows_the_refusal_and_exits_2(trace: Path) -> None:
    async def body() -> None:
        app = GputopApp([str(trace)], max_memory=50_000_000)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, ErrorDialog))
            assert isinstance(app.screen, ErrorDialog)
            assert "only 50 MB is the --max-memory limit" in " ".join(app.screen.text.split())
            assert app.trace is None  # nothing was loaded
            await press(pilot, "enter")
            await wait_until(pilot, lambda: app.return_code is not None)
            assert app.return_code == 2

    run(body())


_CHILD = textwrap.dedent(
    """
    import io, sys, contextlib
    from gputop_trace.cli.main import main
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["summary", sys.argv[1]])
    peak_kb = next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
    print(code, peak_kb)
    """
)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the peak RSS (VmHWM) from /proc")
def test_the_estimate_covers_the_peak_memory_of_a_whole_summary(tmp_path: Path) -> None:
    """Calibration: a ~60 MB Kineto-style trace summarised in a fresh process peaks below the estimate (the
    numbers for 100 MB and 1 GB are in core/resources.py)."""
    ev = (
        b'{"ph":"X","cat":"kernel","name":"k%d","pid":0,"tid":7,"ts":%d.5,"dur":1.5,'
        b'"args":{"device":0,"stream":7,"correlation":%d,"grid":[4,1,1],"block":[128,1,1]}}'
    )
    p = tmp_path / "big.json"
    p.write_bytes(b'{"traceEvents":[' + b",\n".join(ev % (i % 50, i * 3, i) for i in range(420_000)) + b"]}")
    env = {**os.environ, "GPUTOP_TRACE_NO_CACHE": "1"}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(p)], capture_output=True, text=True, env=env, check=True)
    code, peak_kb = (int(x) for x in out.stdout.split())
    assert code == 0
    needed = estimate([str(p)]).needed
    peak = peak_kb * 1024
    assert p.stat().st_size > 50e6
    assert peak < needed, f"peak {peak / 1e6:.0f} MB above the estimate {needed / 1e6:.0f} MB"
    assert needed < 4 * peak  # and not so cautious that it refuses what would fit
