"""What every benchmark script shares: the :class:`Result` rows it returns and a way to measure a child process.

A benchmark script (``benchmarks/bench_*.py``) exposes ``run(workdir: pathlib.Path) -> list[Result]``; see
``benchmarks/README.md``. Measurements run in fresh child processes (:func:`run_child`), so one measurement's
imports, caches and heap never help or hurt the next one; the child's peak RSS comes from the kernel
(``os.wait4``), not from the child's own bookkeeping.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Result:
    """One row of a results table.

    ``section`` names the table ("Kineto load", "nsys", "Timeline"...), ``what`` the row; ``value`` is the
    median (``None``: not measured, say why in ``detail``); ``target`` the spec's target as text
    (``"≥ 150 MB/s"``) and ``met`` whether the value meets it (``None``: no target).
    """

    section: str
    what: str
    value: float | None
    unit: str
    target: str = ""
    met: bool | None = None
    detail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class ChildRun:
    """One child process: its wall time (s, from the parent), its peak RSS (MB) and what it printed."""

    wall_s: float
    peak_rss_mb: float
    output: dict[str, Any]


def run_child(
    code: str, *, args: Sequence[str] = (), env: dict[str, str] | None = None, timeout: float = 1800
) -> ChildRun:
    """Run ``code`` in a fresh ``python -c``; its last stdout line must be a JSON object (returned as
    ``output``). Raises ``RuntimeError`` with the child's stderr when it fails."""
    full_env = {**os.environ, **(env or {})}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=full_env,
        cwd=str(ROOT),
        text=True,
    )
    deadline = t0 + timeout
    # wait4 gives this child's own rusage (peak RSS), unlike RUSAGE_CHILDREN which is a maximum over all
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            raise RuntimeError(f"child ran longer than {timeout:.0f} s")
        time.sleep(0.005)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"child failed ({proc.returncode}): {err.strip()[-2000:]}")
    lines = [ln for ln in out.strip().splitlines() if ln.startswith("{")]
    output = json.loads(lines[-1]) if lines else {}
    return ChildRun(wall, usage.ru_maxrss / 1024, output)


def median(values: Sequence[float]) -> float:
    """The median of some runs."""
    return float(statistics.median(values))


def spread(values: Sequence[float], fmt: str = "{:.3g}") -> str:
    """``"n runs: a–b"`` for a detail column."""
    if len(values) == 1:
        return "1 run"
    return f"{len(values)} runs: {fmt.format(min(values))}–{fmt.format(max(values))}"
