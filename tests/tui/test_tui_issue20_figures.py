"""Issue 20's leftovers in the app, at 80x24 and 160x48 on real corpus traces: JAX memsets show their bytes in the
Transfers panel (14); the details pane never splits a figure from its unit across lines (the DDP pair's "29.0" at
the end of one line and "ms" at the start of the next); a range whose ends round alike is said once ("2 GPUs busy
99%", not "99–99%")."""

from __future__ import annotations

import gzip
import itertools
import json
import re

import pytest
from rich.console import Console
from rich.text import Text
from textual.content import Content
from textual.geometry import Region

from gputop_trace.report.summary import RankSteps
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.screens.main import MainScreen
from gputop_trace.units import format_bytes
from tests.conftest import corpus_file
from tests.tui_helpers import app_test, press, screen_text, wait_loaded, wait_text, wait_until

SIZES = [(80, 24), (160, 48)]

pytestmark = pytest.mark.corpus

JAX = corpus_file("jax/h200_jax_mlp.perfetto_trace.json.gz")
DDP = corpus_file("kineto/h200_ddp_2gpu")
NSYS_2GPU = corpus_file("nsys/GindaChen__nsys-ai__h100_2gpu_1s.sqlite")


def _jax_gpu_memset_bytes() -> list[int]:
    """``num_bytes`` of every memset on a ``/device:GPU`` process of the JAX trace, read with the stdlib (the
    host's ``Memset`` calls carry the same details string but are CPU events)."""
    with gzip.open(JAX, "rt") as f:
        events = json.load(f)["traceEvents"]
    gpu_pids = {
        e["pid"]
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name" and e["args"]["name"].startswith("/device:GPU")
    }
    out = []
    for e in events:
        details = (e.get("args") or {}).get("Memset_details")
        if e.get("ph") == "X" and e["pid"] in gpu_pids and details is not None:
            m = re.search(r"num_bytes:(\d+)", details)
            assert m is not None, details
            out.append(int(m.group(1)))
    return out


@pytest.mark.parametrize("size", SIZES)
@app_test
async def test_transfers_panel_shows_the_jax_memsets_bytes(size: tuple[int, int]) -> None:
    """Issue 20.14 in the app: 25 memsets of 4 B each (``Memset_details: "kind:unknown num_bytes:4 async:1"``)
    read ``memset 25× 100 B`` in the panel's summary and ``4 B`` in each memset row; they read 0 B."""
    sizes = _jax_gpu_memset_bytes()
    assert len(sizes) == 25 and set(sizes) == {4}
    summary = f"memset {len(sizes)}× {format_bytes(sum(sizes))}"
    assert summary == "memset 25× 100 B"

    app = GputopApp([JAX])
    async with app.run_test(size=size) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "3")
        text = await wait_text(pilot, app, "copies and memsets")
        assert summary in text, text
        rows = [ln.split() for ln in text.splitlines() if re.match(r"\s*[\d.]+ (?:ns|µs)\s+[\d.]+ (?:ns|µs)\s", ln)]
        memsets = [r for r in rows if r[4] == "memset"]
        assert memsets and all(r[5:7] == ["4", "B"] for r in memsets), rows
        assert "memset 25× 0 B" not in text


# a figure ending one line, its unit starting the next (written apart from presentation/figure_wrap.py, on purpose)
_FIGURE_AT_END = re.compile(r"(?<![\w.,])[-+]?\d[\d,]*(?:\.\d+)?$")
_UNIT_AT_START = re.compile(r"^(?:ns|µs|ms|s|%|B|KiB|MiB|GiB|kB|MB|GB|GB/s|[kMGTP]?FLOP(?:/s)?)(?![\w/])")


def _split_figures(lines: list[str]) -> list[tuple[str, str]]:
    """Every pair of consecutive lines where the first ends with a bare figure and the second starts with its unit."""
    return [
        (a, b)
        for a, b in itertools.pairwise(lines)
        if _FIGURE_AT_END.search(a.rstrip()) and _UNIT_AT_START.match(b.lstrip())
    ]


def _pane_lines(main: MainScreen) -> list[str]:
    """The details pane's text as drawn, all of it (also the part scrolled out of view)."""
    body = main.query_one("#details-body")
    return [s.text for s in body.render_lines(Region(0, 0, body.size.width, body.size.height))]


@pytest.mark.parametrize("size", SIZES)
@app_test
async def test_details_pane_never_splits_a_figure_from_its_unit(size: tuple[int, int]) -> None:
    """The DDP pair's first screen at 160x48 wrapped "… 2 ranks 29.0" / "ms–33.1 ms". On the first screen, and
    in the details of each top finding's evidence, no line ends with a figure whose unit starts the next; nor in
    the same texts wrapped at every width up to 160 columns: from 24 for the first screen's text, from 40 for an
    event's details (below that their value column is narrower than ``5,197,610,338,195,070 ns``, which must then
    be folded)."""
    from gputop_trace.tui.view.details import describe_event, details_text
    from gputop_trace.tui.view.overview import overview_text
    from gputop_trace.tui.widgets.details_pane import DetailsBody, FiguresKeptWhole

    app = GputopApp([DDP])
    async with app.run_test(size=size) as pilot:
        main = await wait_loaded(app, pilot)
        await wait_text(pilot, app, "Where the time went")
        assert isinstance(main.query_one(DetailsBody).visual, FiguresKeptWhole)  # what the sweep below wraps
        lines = _pane_lines(main)
        flat = " ".join(" ".join(lines).split())
        assert "2 ranks 29.0 ms–33.1 ms" in flat  # the figure that was split, still there
        assert not _split_figures(lines), _split_figures(lines)
        assert main.overview is not None
        overview = overview_text(main.overview, multi_rank=True)
        # the evidence of the top findings: the details of an event, laid out by Rich
        shown = []
        for i in range(3):
            main.action_open_finding(i)
            await pilot.pause()
            tl = main.timeline
            if tl.selected < 0:
                continue
            await wait_until(pilot, lambda: "Where the time went" not in screen_text(app))
            lines = _pane_lines(main)
            assert not _split_figures(lines), _split_figures(lines)
            shown.append(describe_event(main.data, tl.selected, names=main.names, flows=main.flows))
        assert shown
    # every width: the first screen's text as the pane wraps it, an event's details as Rich lays them out
    cut = Content.from_rich_text(overview)
    for width in range(24, 161):
        lines = FiguresKeptWhole(cut).wrapped(width).plain.split("\n")
        assert all(len(ln) <= width for ln in lines)
        assert "".join("".join(lines).split()) == "".join(overview.plain.split())  # nothing lost
        assert not _split_figures(lines), (width, _split_figures(lines))
        if width < 40:  # the details' value column is narrower than "5,197,610,338,195,070 ns": folded
            continue
        console = Console(width=width, color_system=None, legacy_windows=False)
        for title, rows in shown:
            drawn = ["".join(s.text for s in ln) for ln in console.render_lines(details_text(title, rows))]
            assert not _split_figures(drawn), (width, _split_figures(drawn))


def test_figure_text_wraps_like_text_but_keeps_figures_whole() -> None:
    from gputop_trace.presentation.figure_wrap import FigureText, break_offsets, unit_spaces

    line = "rank 0 step time 29.0 ms mean over 5 steps (min 22.8 ms, max 35.3 ms); 2 ranks 29.0 ms–33.1 ms"
    assert [line[i - 4 : i + 3] for i in unit_spaces(line)] == [
        "29.0 ms",
        "22.8 ms",
        "35.3 ms",
        "29.0 ms",
        "33.1 ms",
    ]  # not "5 steps", not "2 ranks"
    line = "1,024 KiB · 12.5% · 3.1 GB/s · 4 TFLOP/s · 99 % · 2 s · 3 seconds"
    assert [line[: i + 1].split()[-1] + " " + line[i + 1 :].split()[0] for i in unit_spaces(line)] == [
        "1,024 KiB",
        "3.1 GB/s",
        "4 TFLOP/s",
        "99 %",
        "2 s",
    ]
    console = Console(width=80, color_system=None)
    for text, width in (("x" * 13 + " 29.0 ms", 20), ("GPU 0 busy 1.5 s of 2 s", 15)):
        plain = [str(ln) for ln in Text(text).wrap(console, width)]
        assert _split_figures(plain), plain  # what Rich does by itself
        wrapped = [str(ln).rstrip() for ln in FigureText(text).wrap(console, width)]
        assert not _split_figures(wrapped) and " ".join(wrapped) == text, wrapped
        assert all(len(ln) <= width for ln in wrapped)
    assert [str(ln).rstrip() for ln in FigureText("x" * 13 + " 29.0 ms").wrap(console, 20)] == ["x" * 13, "29.0 ms"]
    assert break_offsets("x" * 13 + " 29.0 ms", 20) == [14]


def test_a_range_whose_ends_read_alike_is_said_once() -> None:
    from gputop_trace.analysis.busy import DeviceBusy
    from gputop_trace.analysis.ranks.table import RankRow
    from gputop_trace.tui.view.overview import busy_line, step_line
    from gputop_trace.tui.widgets.ranks_panel import RanksPanel
    from gputop_trace.units import format_range

    assert format_range("29", "87", unit="%") == "29–87%"
    assert format_range("99", "99", unit="%") == "99%"
    assert format_range("22.8 ms", "35.3 ms", sep=" – ") == "22.8 ms – 35.3 ms"

    def gpu(device: int, span: int, idle: int) -> DeviceBusy:
        busy = span - idle
        return DeviceBusy(0, device, 0, span, span, busy, idle, 100 * busy / span, 1, label=f"GPU {device}")

    # the 2xH100 nsys export's GPUs: 99.32% and 99.33% busy
    both = [gpu(0, 969_447_605, 6_557_358), gpu(1, 969_258_578, 6_447_873)]
    assert busy_line(both, False).plain == "2 GPUs busy 99% · idle 13.0 ms in all"
    apart = [gpu(0, 100_000_000, 70_600_000), gpu(1, 100_000_000, 13_000_000)]
    assert busy_line(apart, False).plain == "2 GPUs busy 29–87% (mean 58%) · idle 83.6 ms in all"

    def step(rank: int, mean_ns: int = 29_010_000) -> RankSteps:
        return RankSteps(
            rank, 5, [], mean_ns, 0, 22_800_000, 35_300_000, [], [], [], None, None, cut=[], left_out=[], note=None
        )

    line = step_line([step(0), step(1, 29_040_000)])
    assert line is not None and line.plain.endswith("; 2 ranks 29.0 ms"), line
    line = step_line([step(0), step(1, 33_100_000)])
    assert line is not None and line.plain.endswith("; 2 ranks 29.0 ms–33.1 ms"), line

    def rank(step_ns: tuple[int, ...]) -> RankRow:
        return RankRow(0, (0,), len(step_ns), step_ns, 1, 0, 1, 0, 0, 0, 0.0, 0, 0, 0)

    assert "2 steps 29.0 ms ·" in RanksPanel().row_detail(rank((29_010_000, 29_040_000)))
    assert "2 steps 22.8 ms – 35.3 ms ·" in RanksPanel().row_detail(rank((22_800_000, 35_300_000)))


@pytest.mark.parametrize("size", SIZES)
@app_test
async def test_first_screen_says_a_busy_share_once_when_both_gpus_round_alike(size: tuple[int, int]) -> None:
    """The 2xH100 nsys export (no step ranges): GPU 0 is busy 99.32% and GPU 1 99.33% of their spans (a stdlib
    union of the KERNEL, MEMCPY and MEMSET rows per device agrees), idle 6.56 + 6.45 ms; it said "99–99% (mean
    99%)"."""

    app = GputopApp([NSYS_2GPU])
    async with app.run_test(size=size) as pilot:
        await wait_loaded(app, pilot)
        text = await wait_text(pilot, app, "Where the time went")
        flat = " ".join(text.split())
        assert "Where the time went: 2 GPUs busy 99% · idle 13.0 ms in all" in flat, flat
        assert "99–99" not in flat and "(mean 99%)" not in flat
