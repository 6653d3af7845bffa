"""Issue 29's load targets in the harness (``python benchmarks/run.py`` runs this as a plugin):

- **nsys**: ``nsys_10m.sqlite`` from ``make_large.py`` (10 M kernel rows, 29.5 M events: every CUPTI activity table
  of a corpus export repeated along time), loaded in fresh processes (``parsers.nsys.loader.load``, the model
  fully built), in kernel rows per second (target ≥ 1 M/s), with its CPU time and peak RSS.
- **Cores**: ``kineto_1gb.json`` loaded in fresh processes pinned to the first N cores (``os.sched_setaffinity``,
  as ``bench_cores.py`` does), N = 1, 2 and 8 where the machine has them; the 8-core load must be ≥ 3× faster than
  the 1-core one. On a machine with fewer than 8 cores the rows are reported without that target (2 against 1
  here; ``bench_cores.py`` on a larger machine gives the rest).

    python benchmarks/bench_large_loads.py [--work DIR] [--repeat N]

The machine's 1-minute load average is given beside each row (the loads use every core they may).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import make_large
from harness import Result, median, run_child

SECTION_NSYS = "nsys: the 10 M-kernel export"
SECTION_CORES = "One 1 GB Kineto file against cores"
NSYS_TARGET = 1.0  # M kernel rows/s
CORES_TARGET = 3.0  # 8 cores against 1
NSYS = "nsys_10m.sqlite"
KINETO_1GB = "kineto_1gb.json"

NSYS_CODE = """
import json, resource, sys, time
from gputop_trace.numpy_env import prepare
prepare()  # as the gputop-trace command does, before numpy is imported
from gputop_trace.parsers.nsys.loader import load
r0 = resource.getrusage(resource.RUSAGE_SELF)
t = time.perf_counter()
trace = load(sys.argv[1])
wall = time.perf_counter() - t
r1 = resource.getrusage(resource.RUSAGE_SELF)
cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
print(json.dumps({"s": wall, "cpu": cpu, "kernels": int(trace.kernels.event.shape[0]), "events": len(trace)}))
"""

CORES_CODE = """
import os, sys
os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[: int(os.environ["BENCH_CORES"])]))
import json, time
from gputop_trace.numpy_env import prepare
prepare()  # as the gputop-trace command does, before numpy is imported
from gputop_trace.load.loader import load_paths
t = time.perf_counter(); c = time.process_time()
trace = load_paths([sys.argv[1]], use_cache=False)
print(json.dumps({"s": time.perf_counter() - t, "cpu": time.process_time() - c, "n": len(trace)}))
"""


def _load_avg() -> float:
    return os.getloadavg()[0]


def nsys_rows(path: Path, repeat: int) -> list[Result]:
    """Kernel rows per second of ``repeat`` fresh loads of the 10 M-kernel export."""
    before = _load_avg()
    runs = [run_child(NSYS_CODE, args=[str(path)], env={"GPUTOP_TRACE_NO_CACHE": "1"}) for _ in range(repeat)]
    after = _load_avg()
    walls = [r.output["s"] for r in runs]
    kernels = int(runs[0].output["kernels"])
    rate = kernels / median(walls) / 1e6
    detail = (
        f"{kernels:,} kernel rows, {int(runs[0].output['events']):,} events; load {median(walls):.2f} s "
        f"(runs {', '.join(f'{w:.2f}' for w in walls)} s), CPU {median([r.output['cpu'] for r in runs]):.1f} s, "
        f"peak RSS {median([r.peak_rss_mb for r in runs]):,.0f} MB; {os.cpu_count()} cores, "
        f"machine load (1-min average) {before:.2f} before, {after:.2f} after"
    )
    return [
        Result(
            SECTION_NSYS, f"`{NSYS}` into the model", rate, "M kernel rows/s", "≥ 1 M/s", rate >= NSYS_TARGET, detail
        )
    ]


def cores(path: Path, repeat: int) -> list[Result]:
    """Wall time of the 1 GB load on 1, 2 and 8 cores (those the machine has); the 8-against-1 ratio."""
    have = len(os.sched_getaffinity(0))
    counts = [n for n in (1, 2, 8) if n <= have]
    out: list[Result] = []
    wall: dict[int, float] = {}
    for n in counts:
        before = _load_avg()
        env = {"BENCH_CORES": str(n), "GPUTOP_TRACE_NO_CACHE": "1"}
        runs = [run_child(CORES_CODE, args=[str(path)], env=env) for _ in range(repeat)]
        wall[n] = median([r.output["s"] for r in runs])
        walls = ", ".join(f"{r.output['s']:.2f}" for r in runs)
        cpu = median([r.output["cpu"] for r in runs])
        detail = (
            f"runs {walls} s; CPU {cpu:.2f} s; peak RSS {median([r.peak_rss_mb for r in runs]):,.0f} MB; "
            f"machine load (1-min average) {before:.2f} before, {_load_avg():.2f} after"
        )
        out.append(
            Result(SECTION_CORES, f"`{KINETO_1GB}` on {n} core{'s' if n > 1 else ''}", wall[n], "s", detail=detail)
        )
    top = max(counts)
    if top > 1:
        ratio = wall[1] / wall[top]
        if top >= 8:
            out.append(Result(SECTION_CORES, "8 cores against 1", ratio, "×", "≥ 3×", ratio >= CORES_TARGET))
        else:
            out.append(
                Result(
                    SECTION_CORES,
                    f"{top} cores against 1",
                    ratio,
                    "×",
                    detail=f"this machine has {have} cores: the ≥ 3× target is for 8 (bench_cores.py there)",
                )
            )
    return out


def run(workdir: Path, repeat: int = 3) -> list[Result]:
    inputs = make_large.ensure(workdir, [NSYS, KINETO_1GB], log=lambda s: print(s, file=sys.stderr))
    return nsys_rows(inputs[NSYS], repeat) + cores(inputs[KINETO_1GB], repeat)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=make_large.DEFAULT_OUT, help="folder for generated inputs")
    ap.add_argument("--repeat", type=int, default=3, help="fresh loads per row (median)")
    args = ap.parse_args()
    for r in run(args.work, args.repeat):
        met = "" if r.met is None else (" (met)" if r.met else " (NOT met)")
        print(f"{r.section} | {r.what}: {r.value:.2f} {r.unit} {r.target}{met}  {r.detail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
