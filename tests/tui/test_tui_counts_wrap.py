"""Issue 31, 3a: a count never wraps apart from its noun, nor a figure from its unit, at 80 columns: in the
command line's text (``summary`` and every other command, on corpus files where Rich alone split ``2,904`` from
``CPU operators`` and ``14.8`` from ``ms``) and in the app's panels, the findings' details included."""

from __future__ import annotations

import itertools
import re

import pytest
from rich.console import Console
from rich.text import Text
from textual.geometry import Region

from gputop_trace.presentation.figure_wrap import FigureText, keep_spaces, unit_spaces
from gputop_trace.tui.app import GputopApp
from tests.cli_run import run_cli
from tests.conftest import corpus_file
from tests.tui_helpers import app_test, press, wait_loaded, wait_until

GPT = corpus_file("kineto/h200_gpt_train_small.json.gz")
JAX = corpus_file("jax/h200_jax_mlp.perfetto_trace.json.gz")
DLPROF = corpus_file("nsys/MohanadOdema__DLProf__nsys_profile.sqlite")
DDP = corpus_file("kineto/h200_ddp_2gpu")
SAXPY = corpus_file("nsys/RajaATAli__SC23_Programming-Your-GPU-with-OpenMP_Tutorial__report3.sqlite")

#: a line ending with a bare count or figure (not part of a name: ``A100-PG509-200``, ``ProfilerStep#553``)
_COUNT_AT_END = re.compile(r"(?<![\w.,#-])[-+]?\d+(?:,\d{3})*(?:\.\d+)?\s*$")
#: a line starting with the word or unit that would follow it
_WORD_AT_START = re.compile(r"^\s*(?:[^\W\d_]|%|×)")


def split_counts(lines: list[str], width: int) -> list[tuple[str, str]]:
    """Pairs of consecutive prose lines (not table rows: no run of 3 spaces inside) that a wrap at ``width``
    columns broke (the next line's first word would not have fit) after a bare number before a word: a count or
    figure cut from its noun or unit."""
    return [
        (a, b)
        for a, b in itertools.pairwise(lines)
        if "   " not in a.strip()
        and "   " not in b.strip()
        and _COUNT_AT_END.search(a)
        and _WORD_AT_START.match(b)
        and len(a.rstrip()) + 1 + len(b.split()[0]) > width
    ]


def test_keep_spaces_hold_counts_with_their_nouns() -> None:
    line = "events: 3,982 (417 kernels, 551 CUDA API calls, 2,904 CPU operators); 3 × 16.0 KiB, step#3 of 5 ms"
    kept = [line[: i + 1].rsplit(maxsplit=1)[-1] + " " + line[i + 1 :].split(maxsplit=1)[0] for i in keep_spaces(line)]
    assert kept == ["(417 kernels,", "551 CUDA", "2,904 CPU", "3 ×", "× 16.0", "16.0 KiB,", "5 ms"]
    assert set(unit_spaces(line)) < set(keep_spaces(line))  # units stay what they were
    console = Console(width=80, color_system=None)
    for width in range(16, 60):
        text = "GPU 0 idle in 12 gaps; 1,024 kernels were launched one by one (3 × 16.0 KiB copies)"
        plain = [str(ln).rstrip() for ln in Text(text).wrap(console, width)]
        wrapped = [str(ln).rstrip() for ln in FigureText(text).wrap(console, width)]
        assert " ".join(wrapped) == text and all(len(ln) <= width for ln in wrapped), wrapped
        assert not split_counts(wrapped, width), (width, wrapped)
        if width == 23:
            assert split_counts(plain, width), plain  # what Rich does by itself


@pytest.mark.corpus
@pytest.mark.parametrize("path", [GPT, JAX, SAXPY], ids=["kineto", "jax", "nsys"])
@pytest.mark.parametrize("command", ["summary", "gaps", "transfers", "ranges", "kernels", "ops"])
def test_cli_text_keeps_counts_with_nouns_at_80_columns(
    path: str, command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(capsys, command, path)
    assert code == 0
    lines = out.splitlines()
    assert all(len(ln) <= 80 for ln in lines)
    assert not split_counts(lines, 80), split_counts(lines, 80)
    if command == "summary" and path == GPT:
        assert any("2,904 CPU operators" in ln for ln in lines), lines  # was "2,904" / "CPU operators"


@pytest.mark.corpus
@pytest.mark.parametrize("path", [DLPROF, DDP], ids=["nsys", "kineto-ddp"])
@app_test
async def test_findings_details_keep_counts_with_nouns_at_80x24(path: str) -> None:
    """Findings whose details Textual alone wraps as ``(longest: 621 µs, 599`` / ``µs, …)`` on these files."""

    from gputop_trace.tui.widgets.findings_panel import FindingsPanel

    app = GputopApp([path])
    async with app.run_test(size=(80, 24)) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "6")
        panel = main.query_one(FindingsPanel)
        await wait_until(pilot, lambda: panel.table.row_count > 0)
        detail = panel.query_one("#finding-detail")
        seen = 0
        for row in range(panel.table.row_count):
            panel.table.move_cursor(row=row, animate=False)
            await pilot.pause()
            lines = [s.text.rstrip() for s in detail.render_lines(Region(0, 0, detail.size.width, 4))]
            assert not split_counts([ln for ln in lines if ln], detail.size.width), lines
            seen += sum(1 for ln in lines if ln.strip())
        assert seen > panel.table.row_count  # details that wrap onto a second line were checked
