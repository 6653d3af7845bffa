"""What every benchmark script shares: the :class:`Result` rows it returns and a way to measure a child process.

A benchmark script (``benchmarks/bench_*.py``) exposes ``run(workdir: pathlib.Path) -> list[Result]``; see
``benchmarks/README.md``. Measurements run in fresh child processes (:func:`run_child`), so one measurement's
imports, caches and heap never help or hurt the next one; the child's peak RSS is the kernel's high-water mark
of its own memory (``VmHWM``; ``os.wait4``'s figure where ``/proc`` is missing).
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


PEAK_TAG = "__peak_rss_mb="
#: run first in every child: at exit, print the process's own peak RSS. On Linux that is ``VmHWM`` of
#: ``/proc/self/status``; ``wait4``'s ``ru_maxrss`` would also count the parent's memory that the child
#: shared between fork and exec (a 300 MB parent makes every child look 300 MB large).
PEAK_RSS_PROLOGUE = f"""
import atexit as _atexit
def _peak_rss():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    print("{PEAK_TAG}" + str(int(line.split()[1]) / 1024), flush=True)
    except OSError:
        pass
_atexit.register(_peak_rss)
"""


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
        [sys.executable, "-c", PEAK_RSS_PROLOGUE + code, *args],
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
    peak = usage.ru_maxrss / 1024
    lines = []
    for ln in out.strip().splitlines():
        if ln.startswith(PEAK_TAG):
            peak = float(ln[len(PEAK_TAG) :])
        elif ln.startswith("{"):
            lines.append(ln)
    output = json.loads(lines[-1]) if lines else {}
    return ChildRun(wall, peak, output)


def median(values: Sequence[float]) -> float:
    """The median of some runs."""
    return float(statistics.median(values))


def spread(values: Sequence[float], fmt: str = "{:.3g}") -> str:
    """``"n runs: a–b"`` for a detail column."""
    if len(values) == 1:
        return "1 run"
    return f"{len(values)} runs: {fmt.format(min(values))}–{fmt.format(max(values))}"
