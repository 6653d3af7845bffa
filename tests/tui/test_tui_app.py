"""The app end to end in Pilot: loading in a worker, load errors shown with the command line's exact text,
untrusted names shown literally, monochrome, resizing, the bundled sample and real corpus traces."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from gputop_trace.load.loader import load_paths
from gputop_trace.load.samples import default_sample
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace
from gputop_trace.parsers.source import Progress
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.screens.dialogs import ErrorDialog
from gputop_trace.tui.screens.loading import LoadingScreen
from gputop_trace.tui.screens.main import MainScreen
from gputop_trace.tui.widgets.details_pane import DetailsPane
from gputop_trace.tui.widgets.kernels_panel import KernelTable
from tests.conftest import CORPUS, corpus_file
from tests.paths import ROOT
from tests.tui_helpers import (
    MARKUP_NAME,
    app_test,
    lane_named,
    line_of_lane,
    press,
    run,
    screen_text,
    synthetic_trace,
    timeline,
    wait_loaded,
    wait_text,
    wait_until,
)

CLI = [sys.executable, "-m", "gputop_trace"]


def cli_error(path: str) -> str:
    """What ``gputop-trace summary PATH`` prints on stderr (and its exit code must be 2)."""
    proc = subprocess.run([*CLI, "summary", path], capture_output=True, text=True, env={"COLUMNS": "400"}, check=False)
    assert proc.returncode == 2
    return " ".join(proc.stderr.split())


@pytest.mark.parametrize("content", [b"hello, not a trace", b"", b'{"traceEvents": [ {"ph": "X", "ts": 1'])
def test_load_error_dialog_has_the_cli_text_and_exits_2(tmp_path: Path, content: bytes) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)

    async def body() -> str | None:
        app = GputopApp([str(bad)])
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, (ErrorDialog, MainScreen)))
            screen = app.screen
            if isinstance(screen, MainScreen):  # a truncated file can still be recovered: no error then
                return None
            assert isinstance(screen, ErrorDialog)
            text = screen.text
            await wait_text(pilot, app, "Could not open the trace")
            await press(pilot, "enter")
            await wait_until(pilot, lambda: app.return_code is not None)
            assert app.return_code == 2
            return text

    shown = run(body())
    if shown is not None:
        assert " ".join(shown.split()) == cli_error(str(bad))


def test_missing_file_dialog(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.json")

    async def body() -> str:
        app = GputopApp([missing])
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, ErrorDialog))
            assert isinstance(app.screen, ErrorDialog)
            text = app.screen.text
            await press(pilot, "escape")
            await wait_until(pilot, lambda: app.return_code is not None)
            assert app.return_code == 2
            return text

    assert " ".join(run(body()).split()) == cli_error(missing)


@app_test
async def test_loading_runs_in_a_worker_thread_and_reports_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    from gputop_trace.load import loader

    threads: list[threading.Thread] = []
    real = loader.load_paths

    def spy(paths: list[str], progress: Progress | None = None, **options: Any) -> Trace:
        threads.append(threading.current_thread())
        if progress:
            progress(1 << 20, 4 << 20, 1234)
        return real(paths, progress=progress, **options)

    monkeypatch.setattr(loader, "load_paths", spy)

    app = GputopApp([default_sample()])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(app, pilot)
        assert threads and threads[0] is not threading.main_thread()


@app_test
async def test_progress_screen_shows_bytes_and_events() -> None:
    app = GputopApp(["/nonexistent-but-never-loaded"], trace=synthetic_trace())
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(app, pilot, analyses=False)  # the given trace's own loading screen is gone
        screen = LoadingScreen(["big.json.gz"])
        await app.push_screen(screen)
        screen.show_progress(1 << 20, 4 << 20, 1234, "reading")
        await pilot.pause()
        text = screen_text(app)
        assert "Opening big.json.gz" in text
        assert "reading: 1.0 MiB of 4.0 MiB · 1,234 events" in text


@app_test
async def test_names_from_the_trace_are_shown_literally(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")

    app = GputopApp(["synthetic.json"], trace=synthetic_trace(kernel0=MARKUP_NAME + "\x1b[31mred"))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(app, pilot)
        tl = timeline(app)
        tl.cursor_t = 0
        tl.zoom(0.5)
        await pilot.pause()
        assert app.trace is not None
        line = line_of_lane(tl, lane_named(app.trace, "stream 7"))
        assert "[bold red]x[/]red" in tl.render_line(line - tl.top + 1).text
        k0 = next(i for i in range(len(app.trace)) if app.trace.event_name(i).startswith("[bold"))
        tl.select(k0)
        await pilot.pause()
        text = screen_text(app)
        assert "[bold red]x[/]red" in text and "\x1b" not in text


@app_test
async def test_monochrome_selection_is_reverse_video(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")

    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(app, pilot)
        tl = timeline(app)
        assert tl.palette.mono
        assert app.trace is not None
        gemm = app.trace.name_ids["sgemm_big"]
        ev = next(i for i in range(len(app.trace)) if int(app.trace.name[i]) == gemm)
        tl.select(ev)
        await pilot.pause()
        line = line_of_lane(tl, lane_named(app.trace, "stream 7"))
        strip = tl.render_line(line - tl.top + 1)
        sel = [seg for seg in strip if "sgemm_big" in seg.text]
        assert sel and sel[0].style is not None and sel[0].style.reverse
        # no colour of our own: only the widget's base colours (which the terminal's NO_COLOR filter greys)
        base = tl._base_style
        for seg in strip:
            assert seg.style is not None
            assert seg.style.bgcolor in (None, base.bgcolor) and seg.style.color in (None, base.color), seg


@app_test
async def test_resize_redraws_at_the_new_width() -> None:
    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(app, pilot)
        tl = timeline(app)
        assert tl.plot_width == 64
        await pilot.resize_terminal(160, 48)
        await pilot.pause(0.1)
        assert tl.render_line(0).cell_length == 160 and tl.plot_width == 132
        assert "win 1.00 µs" in screen_text(app)
        await pilot.resize_terminal(80, 24)
        await pilot.pause(0.1)
        assert all(len(line) == 80 for line in screen_text(app).splitlines())


@app_test
async def test_details_of_a_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_loaded(app, pilot)
        tl = timeline(app)
        assert app.trace is not None
        ev = app.trace.name_ids["sgemm_big"]
        tl.select(next(i for i in range(len(app.trace)) if int(app.trace.name[i]) == ev))
        await pilot.pause()
        text = app.screen.query_one(DetailsPane).body.render()
        plain = screen_text(app)
        del text
        for expected in (
            "kernel (GEMM) on GPU 0 · stream 7",
            "0 ns for 300 ns",
            "launched by cudaLaunchKernel at 0 ns",
            "started 0 ns after the call",
            "inside step › aten::mm",
            "(132, 1, 1) × block (256, 1, 1)",
            "128 registers/thread · shared 48.0 KiB static",
            "correlation 1",
        ):
            assert expected in plain, expected


def test_view_needs_a_terminal() -> None:
    proc = subprocess.run([*CLI, "view"], capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 2
    assert "needs an interactive terminal" in proc.stderr and "summary" in proc.stderr


def test_view_is_registered_first_and_starts_without_textual() -> None:
    code = (
        "import sys; from gputop_trace.cli.main import build_parser; p = build_parser(); "
        "import gputop_trace.cli as c; print(c.COMMANDS[0].__name__); "
        "print('textual' in sys.modules, 'pandas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["gputop_trace.cli.view", "False", "False"]


def test_no_argument_opens_the_bundled_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    from argparse import Namespace

    from gputop_trace.cli import view

    seen: list[list[str]] = []

    class FakeApp:
        def __init__(self, paths: list[str], **options: object) -> None:
            seen.append(paths)
            self.return_code = 0

        def run(self) -> int:
            return 0

    import gputop_trace.tui.app as app_mod

    monkeypatch.setattr(app_mod, "GputopApp", FakeApp)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert view.run(Namespace(paths=[], max_memory=None)) == 0
    assert seen == [[default_sample()]]


# ---- real traces ----------------------------------------------------------------------------------------------
@pytest.mark.corpus
@app_test
async def test_ddp_pair_shows_both_ranks_and_nccl_dominates() -> None:
    app = GputopApp([corpus_file("kineto/h200_ddp_2gpu")])
    async with app.run_test(size=(160, 48)) as pilot:
        main = await wait_loaded(app, pilot)
        tl = timeline(app)
        labels = [ln.label for ln in tl.lines]
        assert "rank 0" in labels and "rank 1" in labels
        assert sum(1 for ln in tl.lines if ln.kind == 1) == 2  # a busy strip per GPU
        await press(pilot, "1")
        top = main.query_one(KernelTable).current_item()
        assert top is not None and top.name.startswith("ncclDevKernel_AllReduce")
        await press(pilot, "enter")
        assert app.trace is not None and app.trace.event_name(tl.selected).startswith("ncclDevKernel")
        await press(pilot, "escape")
        assert "collective" in screen_text(app)


@pytest.mark.corpus
@app_test
async def test_jax_trace_shows_streams_and_host_threads() -> None:
    app = GputopApp([corpus_file("jax/h200_jax_mlp.perfetto_trace.json.gz")])
    async with app.run_test(size=(120, 40)) as pilot:
        main = await wait_loaded(app, pilot)
        text = screen_text(app)
        assert "Stream #14" in text and "GPU busy" in text
        await press(pilot, "1")
        top = main.query_one(KernelTable).current_item()
        assert top is not None and "gemm" in top.name


@app_test
async def test_sample_first_screen_at_80x24() -> None:
    app = GputopApp([default_sample()])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(app, pilot)
        lines = screen_text(app).splitlines()
        assert len(lines) == 24 and all(len(line) == 80 for line in lines)
        assert lines[0].startswith("⟷ 109 ms")
        assert any("GPU 0 · H200" in line for line in lines)
        assert any("stream 7" in line for line in lines)
        assert "h200_train_step.json.gz" in lines[-2] and "6,387 ev" in lines[-2]


@app_test
async def test_click_selects_the_event_under_the_mouse() -> None:
    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=(62, 20)) as pilot:
        await wait_loaded(app, pilot)
        tl = timeline(app)
        assert app.trace is not None
        line = line_of_lane(tl, lane_named(app.trace, "stream 7"))
        # 12-column gutter, 20 ns per column: column 5 is inside sgemm_big [0, 300)
        await pilot.click("#timeline", offset=(12 + 5, line - tl.top + 1))
        await pilot.pause()
        assert app.trace.event_name(tl.selected) == "sgemm_big"
        # a click on a group label folds the group
        await pilot.click("#timeline", offset=(2, 1))
        await pilot.pause()
        assert tl.lines[0].folded


@app_test
async def test_palette_goes_to_a_range_a_kernel_and_folds_lanes() -> None:
    from gputop_trace.tui.commands import palette_entries

    app = GputopApp(["synthetic.json"], trace=synthetic_trace())
    async with app.run_test(size=(80, 24)) as pilot:
        main = await wait_loaded(app, pilot)
        entries = {text: cb for text, _, cb in palette_entries(main)}
        assert "Go to range: step" in entries and "Go to kernel: sgemm_big" in entries
        entries["Go to kernel: tiny"]()
        await pilot.pause()
        tl = timeline(app)
        assert app.trace is not None and app.trace.event_name(tl.selected) == "tiny"
        assert tl.t0 <= 600 < tl.t1  # brought into view
        entries["Go to range: step"]()
        await pilot.pause()
        assert app.trace.event_name(tl.selected) == "step"
        n = len(tl.lines)
        entries["Lanes: collapse every CPU process"]()
        await pilot.pause()
        assert len(tl.lines) < n
        entries["Lanes: expand everything"]()
        await pilot.pause()
        assert len(tl.lines) == n


def test_export_writes_markdown_with_the_top_kernels(tmp_path: Path) -> None:
    from gputop_trace.tui.view.export import export_path, findings_document, findings_markdown

    path, fmt = export_path("report", cwd=str(tmp_path))
    assert path == str(tmp_path / "report.md") and fmt == "markdown"
    assert export_path(str(tmp_path), cwd="/")[0] == str(tmp_path / "gputop-findings.md")
    assert export_path("x.JSON", cwd=str(tmp_path))[1] == "json"
    text = findings_markdown(findings_document(synthetic_trace(), ["synthetic.json"]))
    assert text.startswith("# gputop-trace findings")
    assert "| 0 | 0 |" in text  # GPU busy table row for rank 0, GPU 0
    assert "`sgemm_big`" in text


def test_every_tui_package_and_the_stylesheet_ship_in_the_wheel() -> None:
    root = ROOT
    pyproject = (root / "pyproject.toml").read_text()
    for init in (root / "tui").rglob("__init__.py"):
        package = ".".join(("gputop_trace", *init.parent.relative_to(root).parts))
        assert f'"{package}"' in pyproject, f"{package} is missing from [tool.setuptools] packages"
    assert '"gputop_trace.tui" = ["*.tcss"]' in pyproject
    assert (root / "tui" / "app.tcss").is_file()


@pytest.mark.corpus
@app_test
async def test_nsys_export_with_two_gpus_and_nvtx() -> None:
    from gputop_trace.analysis.kernels import kernel_table

    path = corpus_file("nsys/GindaChen__nsys-ai__h100_2gpu_1s.sqlite")
    top = kernel_table(load_paths([path]))[0]

    app = GputopApp([path])
    async with app.run_test(size=(160, 48)) as pilot:
        main = await wait_loaded(app, pilot)
        tl = timeline(app)
        assert sum(1 for ln in tl.lines if ln.kind == 1) == 2  # a busy strip per GPU
        text = screen_text(app)
        assert "GPU 0" in text and "GPU 1" in text and "nsys" in text.splitlines()[-2]
        await press(pilot, "1")
        first = main.query_one(KernelTable).current_item()
        assert first is not None and first.name == top.name
        await press(pilot, "enter")
        assert app.trace is not None and app.trace.event_name(tl.selected) == top.name
        # a launch of it whose CUDA call is inside the one-second slice: x goes to that call, x comes back
        launched = next(int(e) for e in first.events if app.trace.launch_of[e] >= 0)
        tl.select(launched)
        await press(pilot, "x")
        assert int(app.trace.kind[tl.selected]) == Kind.API
        await press(pilot, "x")
        assert tl.selected == launched


@pytest.mark.corpus
@app_test
async def test_nsys_export_without_gpu_activity_says_so() -> None:
    app = GputopApp([corpus_file("nsys/h200_nsys2022.4_nvtx_osrt_only.sqlite")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(app, pilot)
        assert "No GPU activity was recorded in this profile" in screen_text(app)
        await press(pilot, "6")
        assert "nothing that ran on a GPU" in screen_text(app)
        await press(pilot, "1")
        assert "no kernels" in screen_text(app)


NSYS_FILES = sorted(p.name for p in (CORPUS / "nsys").glob("*.sqlite")) if (CORPUS / "nsys").is_dir() else []


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.parametrize("name", NSYS_FILES)
@app_test
async def test_every_nsys_export_opens_and_every_panel_fills(name: str) -> None:
    app = GputopApp([corpus_file(f"nsys/{name}")])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(app, pilot)
        assert not app.results.failures, app.results.failures
        for key in ("1", "2", "3", "4", "6", "escape", "w", "right_square_bracket", "x", "0"):
            await press(pilot, key)
        assert isinstance(app.screen, MainScreen)
        assert len(screen_text(app).splitlines()) == 24


@app_test
async def test_a_palette_opened_while_loading_gives_way_to_the_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    from textual.command import CommandPalette

    from gputop_trace.load import loader

    release = threading.Event()
    real = loader.load_paths

    def slow(paths: list[str], **kwargs: Any) -> Trace:
        release.wait(30)
        return real(paths, **kwargs)

    monkeypatch.setattr(loader, "load_paths", slow)

    app = GputopApp([default_sample()])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, LoadingScreen))
        app.action_command_palette()
        await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette))
        release.set()
        await wait_loaded(app, pilot)
        assert not any(isinstance(s, (LoadingScreen, CommandPalette)) for s in app.screen_stack)


@app_test
async def test_a_time_too_large_typed_in_the_palette_is_ignored() -> None:
    """'1e999' once reached round() as infinity (OverflowError) and ended the app."""

    app = GputopApp([default_sample()])
    async with app.run_test(size=(80, 24)) as pilot:
        main = await wait_loaded(app, pilot)
        assert main.parse_time("1e999") is None and main.parse_time("12.5ms") == 12_500_000
        await press(pilot, "ctrl+p", *"1e999", "enter", "escape")
        await pilot.pause()
        assert app.return_code is None and isinstance(app.screen, MainScreen)
