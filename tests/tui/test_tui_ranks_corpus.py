"""Panel 7 and ranks side by side on real multi-GPU traces: the DDP pair (rank 1 sleeps 4 ms per step, rank 0 waits
inside its all-reduces) and the nsys export of two GPU-driving processes (two ranks, no collectives, no steps)."""

from __future__ import annotations

import numpy as np
import pytest

from gputop_trace.analysis.ranks.collectives import find_collectives
from gputop_trace.analysis.ranks.table import rank_table
from gputop_trace.analysis.steps import find_steps
from gputop_trace.load.loader import load_paths
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.screens.compare import CompareScreen
from gputop_trace.tui.screens.main import MainScreen
from gputop_trace.tui.view.rank_compare import LineKind
from gputop_trace.tui.widgets.rank_compare import RankCompare
from gputop_trace.tui.widgets.ranks_panel import RanksPanel
from gputop_trace.units import format_ns
from tests.conftest import corpus_file
from tests.tui_helpers import app_test, press, screen_text, timeline, wait_loaded, wait_until

DDP = "kineto/h200_ddp_2gpu"
NSYS_2GPU = "nsys/GindaChen__nsys-ai__h100_2gpu_1s.sqlite"
SIZE = (120, 40)

pytestmark = pytest.mark.corpus


def _flat(text: str) -> str:
    return " ".join(text.split())


@app_test
async def test_ddp_ranks_panel_names_rank_1_and_shows_rank_0_waiting() -> None:
    rows = {r.rank: r for r in rank_table(load_paths([corpus_file(DDP)]))}

    app = GputopApp([corpus_file(DDP)])
    async with app.run_test(size=SIZE) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "7")
        panel = main.query_one(RanksPanel)
        assert panel.view is not None and panel.view.straggler == 1
        text = screen_text(app)
        flat = _flat(text)
        assert "Rank 1 is the last to arrive at 30 of 30 collectives" in flat
        assert f"rank 0 waits {format_ns(rows[0].collective_wait_ns)} in total inside collective kernels" in flat
        lines = text.splitlines()
        row0 = next(line for line in lines if line.split()[:1] == ["0"])
        row1 = next(line for line in lines if line.split()[:2] == ["1", "⚑"])
        assert format_ns(rows[0].collective_wait_ns) in row0 and row0.split()[-2:] != ["0", "ns"]
        assert rows[0].collective_wait_ns > 90_000_000  # rank 0 waits about 100 ms over the five steps
        assert "straggler: last at 30 collectives" in row1
        assert f"waits {format_ns(rows[0].collective_wait_ns)} for rank 1" in row0


def _first_issued(trace_path: str) -> dict[str, dict[int, tuple[int, int]]]:
    """Per step name and rank: (event, start relative to the rank's step start) of the first all-reduce the rank
    issued inside that step."""
    trace = load_paths([trace_path])
    coll = find_collectives(trace)
    out: dict[str, dict[int, tuple[int, int]]] = {}
    for st in find_steps(trace):
        for e, s, d in zip(st.events.tolist(), st.start_ns.tolist(), st.dur_ns.tolist(), strict=True):
            mine = np.flatnonzero((coll.rank == st.rank) & (coll.issue_ns >= s) & (coll.issue_ns < s + d))
            if len(mine):
                first = mine[np.argmin(coll.issue_ns[mine])]
                pair = (int(coll.event[first]), int(coll.start_ns[first]) - s)
                out.setdefault(trace.event_name(e), {})[st.rank] = pair
    return out


def _nccl_line(cmp: RankCompare, rank: int) -> int:
    return next(
        i
        for i, ln in enumerate(cmp.lines)
        if ln.rank == rank and ln.kind == LineKind.EVENTS and ln.label.startswith("NCCL")
    )


@app_test
async def test_ddp_side_by_side_shows_rank_1s_all_reduce_later_in_every_step() -> None:
    """Each step's first all-reduce, drawn where it ran on each rank. On the common clock rank 1's starts 8–21 ms
    after rank 0's in every step (rank 0 waits in it). On each rank's step start it starts later too while rank 1's
    lag builds up (steps 0–2); from step 3 on rank 1 begins the whole step ~21 ms late and then reaches the
    all-reduce as soon into it as rank 0 does, which the header says ("starts 21.3 ms after rank 0")."""
    firsts = _first_issued(corpus_file(DDP))
    assert len(firsts) == 5

    app = GputopApp([corpus_file(DDP)])
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        tl = timeline(app)
        tl.cursor_t = 1_000_000  # inside the first step on rank 0
        await press(pilot, "R")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen))
        cmp = app.screen.query_one(RankCompare)
        await wait_until(pilot, lambda: cmp.slot is not None)
        seen = []
        for k in range(5):
            assert cmp.slot is not None and cmp.comparison is not None
            label = cmp.slot.label
            seen.append(label)
            assert f"{label} ({k + 1} of 5)" in screen_text(app)
            for align in ("step", "clock"):
                w = cmp.window
                cols = {}
                for r in (0, 1):
                    ev, rel = firsts[label][r]
                    if align == "clock":
                        rel += cmp.slot.spans[r][0] - cmp.offsets[r]
                    cols[r] = w.col_of(rel)
                    cells = cmp.cells_of(_nccl_line(cmp, r))
                    assert 0 <= cols[r] < w.width and int(cells.events[cols[r]]) == ev, (label, align, r)
                if align == "clock" or k < 3:
                    assert cols[1] > cols[0], (label, align)
                await press(pilot, "t")
            c = cmp.comparison
            assert c.late_rank == 1 and c.first_rank == 0 and c.has_late_rank
            assert c.figures[0].wait_ns > 5_000_000 and c.figures[1].wait_ns == 0
            lag = cmp.slot.spans[1][0] - cmp.slot.spans[0][0]
            text = _flat(screen_text(app))
            assert f"rank 1 · {label}" in text and "LATE" in text
            assert f"rank 0 · {label}" in text and "waited" in text
            assert f"rank 1 arrives {format_ns(c.spread_ns)} after rank 0 at all-reduce" in text
            assert f"Rank 1 began this step {format_ns(lag)} after rank 0" in text
            assert f"rank 0 waits {format_ns(c.figures[0].wait_ns)}" in text
            await press(pilot, "right_square_bracket")
        assert seen == ["step_0", "step_1", "step_2", "step_3", "step_4"]


@app_test
async def test_ddp_side_by_side_on_the_common_clock_all_reduces_end_together() -> None:
    firsts = _first_issued(corpus_file(DDP))

    app = GputopApp([corpus_file(DDP)])
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        timeline(app).cursor_t = 1_000_000
        await press(pilot, "R")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen))
        cmp = app.screen.query_one(RankCompare)
        await wait_until(pilot, lambda: cmp.slot is not None)
        await press(pilot, "t")
        trace = app.trace
        assert trace is not None and cmp.slot is not None and cmp.slot.label == "step_0"
        assert len(set(cmp.offsets.values())) == 1
        w, off = cmp.window, cmp.offsets[0]
        (e0, _), (e1, _) = firsts["step_0"][0], firsts["step_0"][1]
        start = {r: w.col_of(int(trace.start_ns[e]) - off) for r, e in ((0, e0), (1, e1))}
        end = {r: w.col_of(int(trace.end_ns[e]) - 1 - off) for r, e in ((0, e0), (1, e1))}
        assert start[1] - start[0] >= 10  # rank 0 arrived 8 ms earlier …
        assert abs(end[1] - end[0]) <= 1  # … and waited in its kernel until rank 1's ended with it
        for r, e in ((0, e0), (1, e1)):
            cells = cmp.cells_of(_nccl_line(cmp, r))
            assert int(cells.events[start[r]]) == e and int(cells.events[end[r] - 1]) == e
        # the marker (rank 0 reaching the all-reduce) is the same column on both ranks on one clock
        assert cmp.comparison is not None
        f = cmp.comparison.figures
        assert abs(w.col_of(f[0].marker_ns - off) - w.col_of(f[1].marker_ns - off)) <= 1
        assert w.col_of(f[0].marker_ns - off) == start[0]


@app_test
async def test_ddp_enter_in_the_comparison_shows_the_rank_in_the_timeline() -> None:
    app = GputopApp([corpus_file(DDP)])
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "R")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen))
        cmp = app.screen.query_one(RankCompare)
        await wait_until(pilot, lambda: cmp.slot is not None)
        await press(pilot, "tab")  # rank 1's header
        assert cmp.current_rank == 1 and cmp.slot is not None
        start, end, _ = cmp.slot.spans[1]
        await press(pilot, "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen))
        tl = timeline(app)
        assert tl.t0 <= start and tl.t1 >= end
        line = tl.current_line
        assert line is not None and line.rank == 1


@app_test
async def test_nsys_two_processes_two_ranks_without_collectives() -> None:
    app = GputopApp([corpus_file(NSYS_2GPU)])
    async with app.run_test(size=SIZE) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "7")
        panel = main.query_one(RanksPanel)
        assert [r.rank for r in panel.items] == [0, 1]
        assert [r.devices for r in panel.items] == [(0,), (1,)]
        text = _flat(screen_text(app))
        assert "No collective kernels in this trace: the ranks do not communicate through NCCL/RCCL here." in text
        # side by side: no step ranges, so the timeline's window on both ranks
        await press(pilot, "escape", "w", "w", "w", "R")  # an eighth of the trace, around the cursor
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen))
        cmp = app.screen.query_one(RankCompare)
        await wait_until(pilot, lambda: cmp.slot is not None)
        assert cmp.slot is not None and cmp.slot.window and cmp.steps == 0
        text = _flat(screen_text(app))
        assert "no step ranges in this trace" in text
        assert "In this window, no collective kernels were matched across ranks" in text
        kinds = {(ln.rank, ln.kind) for ln in cmp.lines}
        assert {(0, LineKind.UTIL), (1, LineKind.UTIL), (0, LineKind.EVENTS), (1, LineKind.EVENTS)} <= kinds
        busy = cmp.plot_text(next(i for i, ln in enumerate(cmp.lines) if ln.rank == 1 and ln.kind == LineKind.UTIL))
        assert busy.strip()  # rank 1's GPU work is drawn
        before = cmp.slot.spans[0]
        await press(pilot, "right_square_bracket")
        after = cmp.slot.spans[0]
        assert after[0] > before[0] and after[1] - after[0] == before[1] - before[0]


@app_test
async def test_the_bundled_sample_has_one_rank() -> None:
    from gputop_trace.load.samples import default_sample

    app = GputopApp([default_sample()])
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(app, pilot)
        await press(pilot, "7")
        assert "This trace has one rank: there is nothing to compare." in _flat(screen_text(app))


def test_ddp_host_activity_per_step_agrees_with_the_straggler_analysis() -> None:
    """The comparison names the late rank's host activity at the step's most uneven collective with the straggler
    analysis's one definition (analysis/host/activity.py); it must say what that analysis says for that single
    collective."""
    import dataclasses

    from gputop_trace.analysis.ranks.stragglers import _host_activity
    from gputop_trace.tui.view.rank_compare import compare_step
    from gputop_trace.tui.view.ranks_view import ranks_view
    from gputop_trace.tui.view.timeline_data import prepare_timeline

    trace = load_paths([corpus_file(DDP)])
    data = prepare_timeline(trace)
    view = ranks_view(trace, set(data.util))
    (g,) = view.report.groups
    seen = set()
    for slot in view.slots:
        cmp = compare_step(data, view.report, view.collectives, slot)
        # the step's most uneven collective, as an instance of the matched group
        spread = g.arrival_ns.max(axis=1) - g.arrival_ns.min(axis=1)
        c1 = g.ranks.index(1)
        i = int(np.flatnonzero(spread == cmp.spread_ns)[0])
        one = dataclasses.replace(
            g,
            op=(g.op[i],),
            event=g.event[i : i + 1],
            arrival_ns=g.arrival_ns[i : i + 1],
            end_ns=g.end_ns[i : i + 1],
            wait_ns=g.wait_ns[i : i + 1],
            last=g.last[i : i + 1],
        )
        assert int(g.last[i]) == c1
        expected = _host_activity(trace, [one], 1, view.report.clock_offset_ns)[0][0]
        assert cmp.activity == expected, slot.label
        seen.add(cmp.activity)
    assert len(seen) >= 2  # not one answer for every step
