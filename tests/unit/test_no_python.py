"""``--no-python``: Kineto ``python_function`` events left out on request, and loaded later from the app.

Real input: the bundled sample recorded ``with_stack=True`` on an H200 (2,310 ``python_function`` events)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputop_trace.analysis.gaps.detect import find_gaps
from gputop_trace.analysis.kernels import kernel_table
from gputop_trace.load.loader import load_paths
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import python_left_out
from gputop_trace.tui.app import GputopApp
from gputop_trace.tui.commands import palette_entries
from tests.cli_run import run_cli
from tests.paths import SAMPLES
from tests.tui_helpers import run, wait_loaded, wait_until

STACK = str(SAMPLES / "h200_train_step_stack.json.gz")


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("GPUTOP_TRACE_CACHE_DIR", str(root))
    monkeypatch.setenv("GPUTOP_TRACE_CACHE_MIN", "0")  # cache even this small sample
    monkeypatch.delenv("GPUTOP_TRACE_NO_CACHE", raising=False)
    return root


def test_everything_but_the_python_events_is_loaded() -> None:
    full = load_paths([STACK], use_cache=False)
    lean = load_paths([STACK], use_cache=False, include_python=False)
    full_counts, lean_counts = full.count_by_kind(), lean.count_by_kind()
    assert full_counts[Kind.PYTHON] == 2310
    assert Kind.PYTHON not in lean_counts
    assert {k: v for k, v in full_counts.items() if k != Kind.PYTHON} == lean_counts
    assert python_left_out(lean) == 2310 and python_left_out(full) == 0
    # the GPU side is untouched: the same kernels, launches and times, the same idle gaps
    assert kernel_table(lean) == kernel_table(full)
    assert len(lean.flows) == len(full.flows)
    g_full, g_lean = find_gaps(full), find_gaps(lean)
    assert [(d.idle_ns, len(d.gaps)) for d in g_lean] == [(d.idle_ns, len(d.gaps)) for d in g_full]
    # ...but the host activity blamed can differ: the planted 5 ms time.sleep in data_load is a Python frame
    sleep_full = [g for g in g_full[0].gaps if g.dur_ns > 5_000_000]
    sleep_lean = [g for g in g_lean[0].gaps if g.dur_ns > 5_000_000]
    assert [g.cause for g in sleep_full] == ["blocked_os"]
    assert [g.cause for g in sleep_lean] == ["data_loading"]


def test_the_cache_keeps_the_two_loads_apart(cache_dir: Path) -> None:
    lean = load_paths([STACK], include_python=False)
    assert sum(1 for p in cache_dir.iterdir() if not p.name.startswith(".")) == 1
    full = load_paths([STACK])  # not the lean entry: its own
    assert full.count_by_kind()[Kind.PYTHON] == 2310
    assert sum(1 for p in cache_dir.iterdir() if not p.name.startswith(".")) == 2
    again = load_paths([STACK], include_python=False)  # reopened from the cache, with its count
    assert python_left_out(again) == 2310 and len(again) == len(lean)


def test_a_directory_of_ranks_counts_every_rank(tmp_path: Path) -> None:
    for r in (0, 1):
        (tmp_path / f"rank{r}.json.gz").write_bytes(Path(STACK).read_bytes())
    trace = load_paths([str(tmp_path)], use_cache=False, include_python=False)
    assert python_left_out(trace) == 2 * 2310 and Kind.PYTHON not in trace.count_by_kind()


def test_summary_says_what_was_left_out(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "summary", STACK, "--no-python", "--no-cache", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["source"]["python_function_left_out"] == 2310 and doc["events"]["python"] == 0
    code, out, _ = run_cli(capsys, "summary", STACK, "--no-cache", "--json")
    doc = json.loads(out)
    assert "python_function_left_out" not in doc["source"] and doc["events"]["python"] == 2310
    code, out, _ = run_cli(capsys, "summary", STACK, "--no-python", "--no-cache")
    assert code == 0 and "2,310 python_function events were left out (--no-python)" in " ".join(out.split())


def test_the_app_loads_the_python_events_when_asked() -> None:
    async def body() -> None:
        app = GputopApp([STACK], include_python=False, use_cache=False)
        async with app.run_test(size=(160, 48), notifications=True) as pilot:
            main = await wait_loaded(app, pilot, analyses=False)
            told = [n.message for n in app._notifications if "left out (--no-python)" in n.message]
            assert told and "2,310 Python stack events" in told[0] and "Load Python stack events" in told[0]
            assert app.trace is not None and Kind.PYTHON not in app.trace.count_by_kind()
            entry = [e for e in palette_entries(main) if e[0] == "Load Python stack events"]
            assert len(entry) == 1
            entry[0][2]()
            await wait_until(pilot, lambda: app.trace is not None and Kind.PYTHON in app.trace.count_by_kind())
            main = await wait_loaded(app, pilot, analyses=False)
            assert app.trace.count_by_kind()[Kind.PYTHON] == 2310
            assert len(app.screen_stack) == 2  # the default screen and the new main screen: nothing left behind
            assert not [e for e in palette_entries(main) if e[0] == "Load Python stack events"]

    run(body())
