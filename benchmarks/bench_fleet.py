"""Throughput of ``gputop-trace fleet`` on a generated fleet: one process, the local process pool and a local
Dask cluster of worker processes; per-GB costs of one rank; an estimate for 1,024 ranks of 1 GB.

    python benchmarks/bench_fleet.py                          # 64 ranks × 10 repetitions of the DDP steps
    python benchmarks/bench_fleet.py --ranks 32 --repeat 5 --workers 2
    python benchmarks/bench_fleet.py --write benchmarks/RESULTS.md

The fleet is written by ``make_fleet.py`` (gzip level 1) into a temporary directory and read once before the
runs, so every executor finds it in the page cache (storage speed is not measured). Each executor runs the
whole command path except printing: expand paths, summarise every rank, match collectives, find outliers.
The Dask cluster's start-up is timed separately and left out of its throughput, as an existing cluster has
none. Per-GB costs come from one larger rank written as plain JSON (what ``torch.profiler`` writes by
default), summarised in a fresh process that reports its peak RSS.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import pickle
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Fleet (bench_fleet.py)"
sys.path.insert(0, str(ROOT / "benchmarks"))


def _corpus() -> Path:
    return Path(os.environ.get("GPUTOP_CORPUS", ROOT.parent / "shared" / "corpus"))


def _json_bytes(paths: list[str]) -> int:
    from gputop_trace.load.resources import estimate

    return sum(estimate([p]).decompressed for p in paths)


def run_executor(executor: str, paths: list[str], workers: int) -> dict[str, Any]:
    """Summarise and analyse the fleet on one executor; wall seconds and the result's outline."""
    from gputop_trace.analysis.fleet.analyse import analyse_fleet
    from gputop_trace.analysis.fleet.rank_summary import SummaryOptions
    from gputop_trace.fleet.executors import expand_paths, plan_jobs, run_dask, run_local, run_processes
    from gputop_trace.fleet.table import assign_ranks

    opts = SummaryOptions()
    startup = 0.0
    t0 = time.perf_counter()
    jobs = plan_jobs(expand_paths(paths))
    if executor == "local":
        per_file = run_local(jobs, opts)
    elif executor == "processes":
        per_file = run_processes(jobs, opts, workers=workers)
    else:
        from distributed import Client, LocalCluster

        s0 = time.perf_counter()
        cluster = LocalCluster(n_workers=workers, processes=True, threads_per_worker=1, dashboard_address=None)
        client = Client(cluster)
        client.wait_for_workers(workers)
        startup = time.perf_counter() - s0
        t0 = time.perf_counter()
        jobs = plan_jobs(expand_paths(paths))
        try:
            per_file = run_dask(jobs, opts, client=client)
        finally:
            client.close()
            cluster.close()
    t_summaries = time.perf_counter() - t0
    a0 = time.perf_counter()
    summaries, _ = assign_ranks(per_file)
    report = analyse_fleet(summaries)
    t_fleet = time.perf_counter() - a0
    wall = time.perf_counter() - t0
    return {
        "executor": executor,
        "workers": 1 if executor == "local" else workers,
        "wall_s": wall,
        "summaries_s": t_summaries,
        "fleet_step_s": t_fleet,
        "startup_s": startup,
        "ok": sum(1 for s in summaries if s.ok),
        "late": sorted(r for r, f in report.ranks.items() if f.late_outlier),
        "rank_wall_s": sum(s.load_s + s.analyse_s for s in summaries),
        "rank_cpu_s": sum(s.cpu_s for s in summaries),
        "load_s": sum(s.load_s for s in summaries),
        "analyse_s": sum(s.analyse_s for s in summaries),
        "summary_bytes": sum(len(pickle.dumps(s)) for s in summaries),
    }


_ONE_RANK = """
import json, sys, time
def hwm():  # this process' own peak RSS (ru_maxrss can carry the parent's peak over fork + exec)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
from gputop_trace.numpy_env import prepare
prepare()  # as the gputop-trace command does, before numpy is imported
from gputop_trace.fleet.summarize import summarize_file
import gputop_trace.load.loader, numpy
base = hwm()
path = sys.argv[1]
summarize_file(path, 0)  # warm: page cache, lazy imports
t = time.perf_counter(); (s,) = summarize_file(path, 0); wall = time.perf_counter() - t
print(json.dumps({"ok": s.ok, "load_s": s.load_s, "analyse_s": s.analyse_s, "wall_s": wall, "cpu_s": s.cpu_s,
                  "collectives": s.collectives, "steps": s.steps, "maxrss_bytes": hwm(), "base_rss_bytes": base}))
"""


def one_rank_costs(path: str) -> dict[str, Any]:
    """Summarise one rank in a fresh process (second call timed); its load/analyse split and peak RSS."""
    out = subprocess.run(
        [sys.executable, "-c", _ONE_RANK, path], capture_output=True, text=True, check=True, timeout=1800
    )
    res: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    res["json_bytes"] = _json_bytes([path])
    res["file_bytes"] = os.path.getsize(path)
    return res


def fleet_step_at(summaries_per_rank: Any, n: int) -> float:
    """Seconds of the fleet step (matching, outliers, findings) for ``n`` ranks, from copies of real summaries."""
    import dataclasses

    from gputop_trace.analysis.fleet.analyse import analyse_fleet

    src = summaries_per_rank
    many = [dataclasses.replace(src[i % len(src)], rank=i, path=f"/x/rank{i}.json") for i in range(n)]
    t = time.perf_counter()
    analyse_fleet(many)
    return time.perf_counter() - t


def estimate_1024(
    per_gb_s: float, rss_per_gb: float, base_rss: float, step_1024_s: float, dispatch_s: float, workers: list[int]
) -> list[dict[str, Any]]:
    """Wall time for 1,024 ranks of 1 GB of JSON on N single-core workers (see the assumptions in RESULTS.md)."""
    out = []
    for n in workers:
        waves = math.ceil(1024 / n)
        wall = waves * (per_gb_s + dispatch_s) + step_1024_s
        out.append(
            {
                "workers": n,
                "waves": waves,
                "wall_s": wall,
                "ranks_per_min": 60 * 1024 / wall,
                "gb_per_min": 60 * 1024 / wall,
                "worker_rss_gb": (base_rss + rss_per_gb) / 1e9,
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=64)
    p.add_argument("--repeat", type=int, default=10, help="DDP steps repeated K times per rank file")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--runs", type=int, default=3, help="runs of each executor (the median is reported)")
    p.add_argument("--big-repeat", type=int, default=100, help="repetitions in the rank used for per-GB costs")
    p.add_argument("--dir", help="reuse (or write) the fleet here instead of a temporary directory")
    p.add_argument("--write", help="append/replace the Fleet section of this RESULTS.md")
    a = p.parse_args(argv)

    from make_fleet import make_fleet

    tmp = tempfile.TemporaryDirectory(prefix="gputop-fleet-")
    base = Path(a.dir or tmp.name)
    fleet_dir = base / f"fleet{a.ranks}x{a.repeat}"
    if not any(fleet_dir.glob("rank*.json.gz")):
        t = time.perf_counter()
        make_fleet(fleet_dir, a.ranks, {a.ranks // 3: 4_000_000}, seed=1, repeat=a.repeat, corpus=_corpus())
        print(f"generated {a.ranks} ranks in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    paths = sorted(str(x) for x in fleet_dir.glob("rank*.json.gz"))
    disk = sum(os.path.getsize(x) for x in paths)
    jbytes = _json_bytes(paths)
    for x in paths:  # page cache
        Path(x).read_bytes()
    load_before = os.getloadavg()[0]
    executors = ("local", "processes", "dask-local")
    every: dict[str, list[dict[str, Any]]] = {e: [] for e in executors}
    for _ in range(a.runs):  # interleaved, so that a busy moment on the machine hits every executor alike
        for e in executors:
            every[e].append(run_executor(e, paths, a.workers))
    load_after = os.getloadavg()[0]
    runs = []
    for e in executors:
        by_wall = sorted(every[e], key=lambda r: r["wall_s"])
        med = dict(by_wall[len(by_wall) // 2])
        med["all_walls"] = [r["wall_s"] for r in every[e]]
        runs.append(med)
    base_rate = len(paths) / runs[0]["wall_s"]
    for r in runs:
        r["ranks_per_min"] = 60 * len(paths) / r["wall_s"]
        r["gb_per_min_disk"] = 60 * disk / 1e9 / r["wall_s"]
        r["gb_per_min_json"] = 60 * jbytes / 1e9 / r["wall_s"]
        r["efficiency"] = (len(paths) / r["wall_s"]) / (base_rate * r["workers"])
        print(json.dumps(r), file=sys.stderr)

    big_dir = base / f"big{a.big_repeat}"
    big = big_dir / "rank0000.pt.trace.json"
    if not big.exists():
        make_fleet(big_dir, 1, {}, seed=2, repeat=a.big_repeat, corpus=_corpus(), level=0)
    one = one_rank_costs(str(big))
    gb = one["json_bytes"] / 1e9
    per_gb = one["wall_s"] / gb
    load_per_gb = one["load_s"] / gb
    analyse_per_gb = one["analyse_s"] / gb
    rss_per_gb = max(0.0, one["maxrss_bytes"] - one["base_rss_bytes"]) / gb
    print(json.dumps(one), file=sys.stderr)

    from gputop_trace.fleet.executors import plan_jobs
    from gputop_trace.fleet.summarize import summarize_file

    sample = [s for j in plan_jobs(paths[:8]) for s in summarize_file(j.path, j.default_rank)]
    step_1024 = fleet_step_at(sample, 1024)
    # per-task dispatch overhead on Dask: what its run costs beyond the pool's, per rank
    dispatch = max(0.0, (runs[2]["summaries_s"] - runs[1]["summaries_s"]) / len(paths) * a.workers)
    est = estimate_1024(per_gb, rss_per_gb, one["base_rss_bytes"], step_1024, dispatch, [2, 16, 64, 256, 1024])

    text = render(
        a,
        runs,
        paths,
        disk,
        jbytes,
        one,
        per_gb,
        load_per_gb,
        analyse_per_gb,
        rss_per_gb,
        step_1024,
        dispatch,
        est,
        (load_before, load_after),
    )
    print(text)
    if a.write:
        write_section(Path(a.write), text)
    tmp.cleanup()
    return 0


def render(
    a: argparse.Namespace,
    runs: list[dict[str, Any]],
    paths: list[str],
    disk: int,
    jbytes: int,
    one: dict[str, Any],
    per_gb: float,
    load_per_gb: float,
    analyse_per_gb: float,
    rss_per_gb: float,
    step_1024: float,
    dispatch: float,
    est: list[dict[str, Any]],
    load: tuple[float, float],
) -> str:
    import numpy as np

    import gputop_trace

    now = _dt.date.today().isoformat()
    lines = [
        SECTION,
        "",
        f"Measured {now} by `python benchmarks/bench_fleet.py --ranks {a.ranks} --repeat {a.repeat} --workers "
        f"{a.workers} --runs {a.runs}` on {platform.node() or 'this machine'} ({os.cpu_count()} CPUs, "
        f"{platform.machine()}), "
        f"Python {platform.python_version()}, numpy {np.__version__}, gputop-trace {gputop_trace.__version__}. "
        f"Load average {load[0]:.1f} before the runs, {load[1]:.1f} after (the machine is shared).",
        "",
        f"Input: {len(paths)} ranks written by `make_fleet.py` from the corpus DDP pair, each with the 5 recorded "
        f"steps repeated {a.repeat}× ({runs[0]['ok']} analysed; {disk / 1e6:.0f} MB gzip on disk, "
        f"{jbytes / 1e9:.2f} GB of JSON; {disk / len(paths) / 1e6:.1f} MB / {jbytes / len(paths) / 1e6:.0f} MB per "
        "rank), one injected straggler. Files in the page cache. Wall time of the whole analysis (paths → per-rank "
        "summaries → matching → findings); the run with the median wall time of "
        f"{a.runs} interleaved runs per executor (all runs' wall times in the last column).",
        "",
        "| executor | workers | wall (s) | ranks/min | GB/min (JSON) | GB/min (gzip) | scaling efficiency | "
        "per rank: wall / CPU (s) | fleet step (s) | start-up (s, excluded) | all runs (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    names = {
        "local": "one process (`local`)",
        "processes": "process pool (`processes`)",
        "dask-local": "Dask LocalCluster (`dask-local`)",
    }
    for r in runs:
        lines.append(
            f"| {names[r['executor']]} | {r['workers']} | {r['wall_s']:.2f} | {r['ranks_per_min']:.0f} | "
            f"{r['gb_per_min_json']:.2f} | {r['gb_per_min_disk']:.3f} | {100 * r['efficiency']:.0f}% | "
            f"{r['rank_wall_s'] / r['ok']:.3f} / {r['rank_cpu_s'] / r['ok']:.3f} | "
            f"{r['fleet_step_s']:.3f} | {r['startup_s']:.1f} | {', '.join(f'{w:.2f}' for w in r['all_walls'])} |"
        )
    lines += [
        "",
        "Scaling efficiency = throughput / (workers × one process' throughput). *Per rank* is the mean time one "
        "rank took inside its worker (load + analyses), wall and CPU: when the wall time per rank grows with "
        "more workers while the CPU time does not, the workers did not get a core each (other jobs on the "
        "machine), which is what limits the efficiency here. The Dask run also shares the cores with its scheduler, "
        "the workers' nanny processes and the client (all on this machine; on a cluster they are elsewhere). "
        f"The executors themselves cost little: CPU time per rank is {_cpu_ratio(runs, 1)} of one process' in the "
        f"pool and {_cpu_ratio(runs, 2)} on Dask ({_cpu_extra_ms(runs, 2):.0f} ms more per task, negligible next "
        "to the tens of seconds of a 1 GB rank). Every executor found the injected "
        f"straggler (late outliers: {', '.join(str(r['late']) for r in runs)}). What travels back per rank is its "
        f"summary: {runs[0]['summary_bytes'] / len(paths) / 1e3:.1f} kB pickled on average, against "
        f"{jbytes / len(paths) / 1e6:.0f} MB of trace.",
        "",
        f"Per-GB cost of one rank: a {one['json_bytes'] / 1e6:.0f} MB plain-JSON rank ({a.big_repeat}× the DDP "
        f"steps, {one['collectives']:,} collectives) summarised in a fresh process: load {one['load_s']:.2f} s, "
        f"analyses {one['analyse_s']:.2f} s → **{per_gb:.1f} s per GB of JSON** ({load_per_gb:.1f} s loading, "
        f"{analyse_per_gb:.1f} s analysing); peak RSS {one['maxrss_bytes'] / 1e6:.0f} MB, "
        f"{rss_per_gb / 1e9:.2f} GB per GB of JSON above the {one['base_rss_bytes'] / 1e6:.0f} MB of an idle "
        f"worker. The fleet step for 1,024 ranks (copies of real summaries, {30 * a.repeat} collectives per "
        f"rank) takes {step_1024:.2f} s on the client.",
        "",
        "### Estimate: 1,024 ranks of 1 GB (JSON) each",
        "",
        "| workers (1 core each) | waves | wall | ranks/min | GB/min | memory per worker |",
        "|---|---|---|---|---|---|",
    ]
    for e in est:
        lines.append(
            f"| {e['workers']} | {e['waves']} | {_dur(e['wall_s'])} | {e['ranks_per_min']:.0f} | "
            f"{e['gb_per_min']:.0f} | {e['worker_rss_gb']:.1f} GB |"
        )
    lines += [
        "",
        f"wall ≈ ⌈1024 / N⌉ × ({per_gb:.1f} s per GB + {dispatch:.2f} s dispatch per task) + {step_1024:.1f} s "
        "fleet step. Assumes: every worker is one process on its own core reading its rank from shared storage "
        "at least as fast as it parses (≈ "
        f"{1 / max(load_per_gb, 1e-9):.2f} GB/s per worker, so 64 workers need ≈ "
        f"{64 / max(load_per_gb, 1e-9):.0f} GB/s from the storage, else storage bandwidth is the limit); "
        "per-GB costs scale linearly with the trace (measured here on one rank); a 1 GB rank has the event mix "
        "of the DDP trace (other workloads have other events per byte); the client only gathers summaries "
        "(tens of kB per rank). Each worker must hold one rank at a time: give Dask workers at least the memory "
        "in the last column (`dask worker --nthreads 1 --memory-limit …`).",
    ]
    return "\n".join(lines) + "\n"


def _cpu_ratio(runs: list[dict[str, Any]], i: int) -> str:
    return f"{100 * (runs[i]['rank_cpu_s'] / runs[i]['ok']) / (runs[0]['rank_cpu_s'] / runs[0]['ok']):.0f}%"


def _cpu_extra_ms(runs: list[dict[str, Any]], i: int) -> float:
    return 1000 * (runs[i]["rank_cpu_s"] / runs[i]["ok"] - runs[0]["rank_cpu_s"] / runs[0]["ok"])


def _dur(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def write_section(path: Path, text: str) -> None:
    """Replace the section (up to the next ``## `` heading) or append it."""
    old = path.read_text() if path.exists() else "# Benchmark results\n"
    start = old.find(SECTION)
    if start < 0:
        new = old.rstrip("\n") + "\n\n" + text
    else:
        nxt = old.find("\n## ", start + len(SECTION))
        new = old[:start] + text + (old[nxt + 1 :] if nxt >= 0 else "")
    path.write_text(new)


if __name__ == "__main__":
    sys.exit(main())
