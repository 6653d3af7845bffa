"""benchmarks/run.py lists under "Targets missed" the targets an embedded report (bench_nsys.py, ...) missed,
read off that report's own table rows and sentences, so a missed target is never only in a script's output."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _run_module() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("bench_run", BENCH / "run.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


NSYS = """
| what | median | runs | target |
|---|---|---|---|
| load time | 23.28 s | 26.30, 23.28, 19.72 s | |
| GPU activity rows into the model | 0.43 M rows/s | 0.38, 0.43, 0.51 | ≥ 1 M rows/s |
| fastest run | 1.20 M rows/s (19.72 s) | | |
"""


def test_a_table_row_below_its_target_is_listed_with_how_far_it_is() -> None:
    run = _run_module()
    assert run.embedded_misses("bench_nsys", NSYS) == [
        "From `bench_nsys.py` / GPU activity rows into the model: 0.43 M rows/s is 57% short of ≥ 1 M rows/s"
    ]
    assert run.embedded_misses("bench_nsys", NSYS.replace("0.43 M rows/s |", "1.43 M rows/s |")) == []


def test_a_sentence_over_its_target_is_listed_and_one_within_it_is_not() -> None:
    run = _run_module()
    over = "kernels 0.42 s, gaps 1.94 s, total 2.68 s wall, 1.62 s CPU (target ≤ 2 s) — 36 kernel rows"
    assert run.embedded_misses("bench_analyses", over) == ["From `bench_analyses.py` / total: 2.68 s is 34% over ≤ 2 s"]
    assert run.embedded_misses("bench_analyses", over.replace("2.68 s wall", "1.68 s wall")) == []
