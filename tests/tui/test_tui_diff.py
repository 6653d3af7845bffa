"""The Diff view (issue 16): both runs loaded and compared behind the progress screen, the verdict, the Diff panel
ranked by category, the same step of both runs stacked on one time axis, one unreadable side, and snapshots at
80×24 and 160×48 of DDP rank 0 against a copy of it 5 % slower (written to tmp_path, never committed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gputop_trace.model.trace import Trace
from gputop_trace.tui.diff_app import DiffApp
from gputop_trace.tui.screens.dialogs import ErrorDialog
from gputop_trace.tui.screens.diff import DiffScreen
from gputop_trace.tui.view.rank_compare import LineKind
from gputop_trace.tui.widgets.diff_panel import DiffPanel
from gputop_trace.tui.widgets.diff_stack import DiffStack
from tests.conftest import CORPUS
from tests.diff_copies import slower_copy
from tests.tui_helpers import app_test, run, wait_until

pytestmark = pytest.mark.corpus

RANK0 = CORPUS / "kineto" / "h200_ddp_2gpu" / "rank0.pt.trace.json.gz"
SIZES = [(80, 24), (160, 48)]


@pytest.fixture
def slower(tmp_path: Path) -> Path:
    (tmp_path / "runs").mkdir()
    return slower_copy(RANK0, tmp_path / "runs" / "slower.json.gz", 1.05)


async def _shown(pilot: Any) -> None:
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, DiffScreen) and pilot.app.screen.is_mounted)
    await pilot.pause()


def test_the_diff_view_shows_the_verdict_the_panel_and_the_stacked_step(slower: Path) -> None:
    run(_verdict_panel_and_stack(slower))


async def _verdict_panel_and_stack(slower: Path) -> None:
    app = DiffApp([str(RANK0)], [str(slower)], use_cache=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _shown(pilot)
        screen = app.screen
        assert isinstance(screen, DiffScreen)
        verdict = str(screen.query_one("#diff-verdict").render())
        assert "TEST is 5.0 % slower per step" in verdict and "beyond noise" in verdict
        panel = screen.query_one(DiffPanel)
        cats = [r.category for r in panel.items]
        assert cats[:2] == ["gpu", "gpu"] and "kernel" in cats and "idle_cause" in cats
        assert cats == sorted(cats, key=["gpu", "kernel", "launcher", "range", "idle_cause", "copy"].index)
        # the stacking: both runs' step_0, TEST's 5 % longer
        stack = screen.query_one(DiffStack)
        assert stack.step is not None and stack.step.labels == ("step_0", "step_0")
        heads = [ln.label for ln in stack.step.lines if ln.kind == LineKind.HEADER]
        assert heads[0].startswith("BASE step_0 ") and heads[1].startswith("TEST step_0 ")
        assert heads[1].endswith("· +5.0 %")
        b_end, t_end = (e - s for s, e in stack.step.spans)
        assert t_end > b_end
        busy = [i for i, ln in enumerate(stack.step.lines) if ln.kind == LineKind.UTIL]
        assert len(busy) == 2 and stack.plot_text(busy[0]).strip() and stack.plot_text(busy[1]).strip()
        await pilot.press("right_square_bracket")
        assert stack.step.labels == ("step_1", "step_1") and screen.pair == 1
        await pilot.press("left_square_bracket", "left_square_bracket")  # no step before the first: a notice
        assert screen.pair == 0
        await pilot.press("R")
        assert screen.has_class("-stack-only") and stack.has_focus and not panel.display
        await pilot.press("w", "a", "0", "R")
        assert not screen.has_class("-stack-only")
        await pilot.press("q")
    assert app.return_code == 0


def test_one_unreadable_side_is_an_error_naming_it(tmp_path: Path) -> None:
    run(_unreadable_side(tmp_path))


async def _unreadable_side(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text("{ not json")
    app = DiffApp([str(RANK0)], [str(bad)], use_cache=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ErrorDialog) and bool(app.screen.query("#error-text")))
        text = "".join(str(app.screen.query_one("#error-text").render()).split())
        assert text.startswith("".join(f"gputop-trace: error: TEST ({bad}) could not be read:".split()))
        await pilot.press("enter")
    assert app.return_code == 2


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_diff_snapshot(snap_compare: Any, slower: Path, size: tuple[int, int]) -> None:
    app = DiffApp([str(RANK0)], [str(slower)], use_cache=False)
    assert snap_compare(app, terminal_size=size, run_before=_shown)


def test_view_diff_needs_two_paths_and_a_terminal() -> None:
    for argv in (["view", "--diff", str(RANK0)], ["diff", "--view", str(RANK0), str(RANK0)]):
        proc = subprocess.run(
            [sys.executable, "-m", "gputop_trace", *argv], capture_output=True, text=True, timeout=120, check=False
        )
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "compares two runs" in " ".join(
        subprocess.run(
            [sys.executable, "-m", "gputop_trace", "view", "--diff", str(RANK0)],
            capture_output=True, text=True, timeout=120, check=False,
        ).stderr.split()
    )  # fmt: skip


@pytest.mark.corpus
def test_view_of_two_runs_opens_the_diff_and_of_two_ranks_the_timeline(
    slower: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`view A B`: two runs (both rank 0, or of another world size) are compared; two ranks of one job are ranks.
    Each file is read once (issue 20.15: `view A B` used to load both files to decide, then again in the app)."""
    from gputop_trace.cli.view import _load_pair
    from gputop_trace.load import loader

    reads: list[str] = []
    python: list[bool] = []
    real_load_file = loader.load_file

    def counting_load_file(path: str, **kw: Any) -> Trace:
        reads.append(os.path.basename(path))
        python.append(kw["include_python"])
        return real_load_file(path, **kw)

    monkeypatch.setattr(loader, "load_file", counting_load_file)

    def pair(paths: list[Path]) -> tuple[Trace, ...] | None:
        return _load_pair([str(p) for p in paths], max_memory=None, use_cache=False, include_python=True)

    ddp = CORPUS / "kineto" / "h200_ddp_2gpu"
    job = pair([ddp / "rank0.pt.trace.json.gz", ddp / "rank1.pt.trace.json.gz"])
    assert job is not None and len(job) == 1 and sorted(job[0].meta.ranks) == [0, 1]
    assert reads == ["rank0.pt.trace.json.gz", "rank1.pt.trace.json.gz"]
    runs = pair([RANK0, slower])
    assert runs is not None and len(runs) == 2 and runs[0].meta.ranks == runs[1].meta.ranks == (0,)
    other_job = CORPUS / "external" / "trace_filter" / "sampled_rank-1.json.gz"
    runs = pair([CORPUS / "external/negative_queue_length_values_check/rank0.json.gz", other_job])
    assert runs is not None and len(runs) == 2
    assert pair([ddp, RANK0]) is None  # a folder: ranks of a job, loaded by the timeline
    assert pair([RANK0]) is None
    # the --no-python choice reaches this load too
    ranks = [str(ddp / "rank0.pt.trace.json.gz"), str(ddp / "rank1.pt.trace.json.gz")]
    python.clear()
    assert _load_pair(ranks, max_memory=None, use_cache=False, include_python=False) is not None
    assert python == [False, False]


@app_test
async def test_diff_app_given_both_runs_does_not_read_them_again(slower: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gputop_trace.load import runs as runs_mod
    from gputop_trace.load.loader import load_paths

    base, test = load_paths([str(RANK0)], use_cache=False), load_paths([str(slower)], use_cache=False)

    def no_second_read(*a: Any, **k: Any) -> Trace:
        raise AssertionError("the runs were read again")

    monkeypatch.setattr(runs_mod, "load_run", no_second_read)

    app = DiffApp([str(RANK0)], [str(slower)], use_cache=False, runs=(base, test))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, DiffScreen))
        assert app.diff is not None
