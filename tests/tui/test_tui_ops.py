"""Panel 8, Ops, on the bundled sample (a Kineto trace with record_shapes): the rows are ``gputop-trace ops``'s,
sortable and filterable; the highlighted operator's calls are broken down by input shape; Enter walks its calls
on the timeline."""

from __future__ import annotations

from gputop_trace.analysis.operators.table import OPERATOR_KINDS, op_table
from gputop_trace.load.loader import load_paths
from gputop_trace.load.samples import default_sample
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.widgets.ops_panel import OpsPanel, OpsTable
from tests.tui_helpers import app_test, press, screen_text, timeline, wait_loaded, wait_until


@app_test
async def test_ops_panel_lists_key_averages_and_walks_an_operators_calls() -> None:
    trace = load_paths([default_sample()])
    rows = [r for r in op_table(trace) if r.kind in OPERATOR_KINDS]
    mm = next(r for r in rows if r.name == "aten::mm")

    app = GputopApp([default_sample()])
    async with app.run_test(size=(160, 48)) as pilot:
        main = await wait_loaded(app, pilot)
        await press(pilot, "8")
        table = main.query_one(OpsTable)
        await wait_until(pilot, lambda: bool(table.items))
        first = table.current_item()
        assert first is not None and first.self_cpu_ns == max(r.self_cpu_ns for r in rows)
        assert len(table.items) == len(rows)
        text = screen_text(app)
        assert "8 Ops" in text and f"{len(rows)} operators · by self CPU" in text
        # filter to aten::mm, then the shape breakdown and the walk through its calls
        await press(pilot, "slash", "a", "t", "e", "n", ":", ":", "m", "m", "$", "enter")
        await wait_until(pilot, lambda: getattr(table.current_item(), "name", "") == "aten::mm")
        shapes = main.query_one("#ops-shapes").render()
        assert "input shapes" in str(shapes) and "[[" in str(shapes)
        await press(pilot, "enter")
        tl = timeline(app)
        assert tl.selected == int(mm.events[0])
        await press(pilot, "enter")
        assert tl.selected == int(mm.events[1])
        assert "call 2 of 80 of aten::mm" in screen_text(app)
        # sorting: o goes to total CPU, r reverses
        await press(pilot, "o")
        assert table.sort == "CPU"
        shown = [table.items[i].cpu_total_ns for i in table.shown]
        assert shown == sorted(shown, reverse=True)
        await press(pilot, "r")
        shown = [table.items[i].cpu_total_ns for i in table.shown]
        assert shown == sorted(shown)
        assert main.query_one(OpsPanel).display
