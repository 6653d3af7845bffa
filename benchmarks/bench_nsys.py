"""Benchmark: Nsight Systems SQLite export → model, in GPU activity rows per second (performance.md target:
≥ 1 M rows/s).

The input is built from the real corpus: the 2-GPU GindaChen export is copied to a temporary folder and its
kernel and memcpy rows are repeated along the time axis (each copy shifted past the previous one, correlation
ids kept unique per copy) until the export holds at least ``--rows`` GPU activity rows. Each measurement loads
that file in a fresh Python process (``gputop_trace.parsers.nsys.loader.load``, model fully built), timing the load
call and recording the child's peak RSS; the median of ``--runs`` runs is reported.

    python benchmarks/bench_nsys.py                 # 2 M rows, 5 runs, print a table
    python benchmarks/bench_nsys.py --write-results # and update the section in benchmarks/RESULTS.md
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("GPUTOP_CORPUS", ROOT.parent / "shared" / "corpus")).resolve()
SOURCE = CORPUS / "nsys" / "GindaChen__nsys-ai__h100_2gpu_1s.sqlite"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
SECTION = "## nsys SQLite loading"
GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY")

_CHILD = r"""
import json, resource, sys, threading, time
from gputop_trace.numpy_env import prepare
prepare()  # as the gputop-trace command does, before numpy is imported
t0 = time.perf_counter()
from gputop_trace.parsers.nsys import loader as nsys
from gputop_trace.parsers.nsys import columns as nsys_columns
from gputop_trace.model.builder import TraceBuilder
from gputop_trace.model.kinds import Kind
t1 = time.perf_counter()
phases = {"sql_cpu_s": 0.0, "build_s": 0.0}
lock = threading.Lock()
def timed(scan):
    def timed_scan(*a, **k):
        c = time.thread_time()
        out = scan(*a, **k)
        with lock:
            phases["sql_cpu_s"] += time.thread_time() - c
        return out
    return timed_scan
nsys_columns.ColumnReader._chunk = timed(nsys_columns.ColumnReader._chunk)
nsys_columns.ColumnReader._chunk_into = timed(nsys_columns.ColumnReader._chunk_into)  # whole tables, in place
build = TraceBuilder.build
def timed_build(*a, **k):
    c = time.perf_counter()
    out = build(*a, **k)
    phases["build_s"] += time.perf_counter() - c
    return out
TraceBuilder.build = timed_build
r1 = resource.getrusage(resource.RUSAGE_SELF)
trace = nsys.load(sys.argv[1])
t2 = time.perf_counter()
r2 = resource.getrusage(resource.RUSAGE_SELF)
kinds = trace.count_by_kind()
gpu = sum(kinds.get(k, 0) for k in (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.UVM, Kind.GRAPH))
cpu = r2.ru_utime - r1.ru_utime + r2.ru_stime - r1.ru_stime
print(json.dumps({**phases, "import_s": t1 - t0, "load_s": t2 - t1, "cpu_s": cpu, "events": len(trace), "gpu_rows": gpu,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def build_large_export(folder: Path, min_rows: int) -> tuple[Path, int]:
    """Copy the source export into ``folder`` and repeat its kernel/memcpy rows until there are ``min_rows``."""
    if not SOURCE.is_file():
        sys.exit(f"the corpus export {SOURCE} is missing (set GPUTOP_CORPUS)")
    out = folder / "large.sqlite"
    shutil.copyfile(SOURCE, out)
    out.chmod(0o644)
    conn = sqlite3.connect(out)
    per_copy = sum(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in GPU_TABLES)
    union = " UNION ALL ".join(f"SELECT start s, end e FROM {t}" for t in GPU_TABLES)
    lo, hi = conn.execute(f"SELECT min(s), max(e) FROM ({union})").fetchone()
    span = hi - lo + 1_000_000
    max_corr = max(conn.execute(f"SELECT max(correlationId) FROM {t}").fetchone()[0] for t in GPU_TABLES) + 1
    copies = -(-min_rows // per_copy)
    for t in GPU_TABLES:
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({t})")]
        conn.execute(f"CREATE TEMP TABLE base_{t} AS SELECT * FROM {t}")
        for i in range(1, copies):
            shifted = {
                "start": f"start + {i * span}",
                "end": f"end + {i * span}",
                "correlationId": f"correlationId + {i * max_corr}",
            }
            sel = ", ".join(shifted.get(c, c) for c in cols)
            conn.execute(f"INSERT INTO {t} ({', '.join(cols)}) SELECT {sel} FROM base_{t}")
    conn.commit()
    rows = sum(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in GPU_TABLES)
    conn.close()
    return out, rows


def measure(path: Path, runs: int) -> list[dict[str, float]]:
    """Load ``path`` in ``runs`` fresh processes."""
    out: list[dict[str, float]] = []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    for _ in range(runs):
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, env=env, check=True
        )
        run = json.loads(proc.stdout.strip().splitlines()[-1])
        run["loadavg"] = os.getloadavg()[0]
        out.append(run)
    return out


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        if names:
            cpu = names[0]
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def report(results: list[dict[str, float]], rows: int, size: int) -> str:
    import numpy

    load = statistics.median(r["load_s"] for r in results)
    best = min(r["load_s"] for r in results)
    cpu = statistics.median(r["cpu_s"] for r in results)
    sql = statistics.median(r["sql_cpu_s"] for r in results)
    build = statistics.median(r["build_s"] for r in results)
    rss = statistics.median(r["peak_rss_mb"] for r in results)
    loadavg = statistics.median(r["loadavg"] for r in results)
    gpu = int(results[0]["gpu_rows"])
    times = [f"{r['load_s']:.2f}" for r in results]
    rates = [f"{r['gpu_rows'] / r['load_s'] / 1e6:.2f}" for r in results]
    lines = [
        SECTION,
        "",
        f"Measured {datetime.date.today().isoformat()} by `python benchmarks/bench_nsys.py` on {machine()};",
        f"Python {platform.python_version()}, numpy {numpy.__version__}, SQLite {sqlite3.sqlite_version}.",
        "",
        f"Input: `{SOURCE.name}` (nsys 2026.2, 2 × H100) with its kernel and memcpy rows repeated along the time",
        f"axis to {rows:,} GPU activity rows ({size / 1e6:,.0f} MB); {int(results[0]['events']):,} events in the "
        "model (its CUDA API calls, NVTX ranges and memsets are not repeated).",
        "Each run loads the file in a fresh process (`parsers.nsys.loader.load`, model fully built: lanes,",
        "rows, kernel and copy side tables, launch links); median of the runs.",
        "",
        "| what | median | runs | target |",
        "|---|---|---|---|",
        f"| load time | {load:.2f} s | {', '.join(times)} s | |",
        f"| GPU activity rows into the model | {gpu / load / 1e6:.2f} M rows/s | {', '.join(rates)} | ≥ 1 M rows/s |",
        f"| fastest run | {gpu / best / 1e6:.2f} M rows/s ({best:.2f} s) | | |",
        f"| CPU time of the load (user + system, both threads) | {cpu:.2f} s | | |",
        f"| … of which SQLite scans (and text parsing without the compiled reader) | {sql:.2f} s | | |",
        f"| … of which `TraceBuilder.build` (sort, rows, side tables) | {build:.2f} s wall | | |",
        f"| peak RSS of the loading process (includes the memory-mapped export) | {rss:,.0f} MB | | |",
        "",
        f"The machine is shared with other jobs: the 1-minute load average during the runs was {loadavg:.1f} on "
        f"{os.cpu_count()} cores, so wall-clock times vary from run to run.",
        "",
    ]
    return "\n".join(lines)


def write_results(section: str) -> None:
    """Replace (or add) this benchmark's section of RESULTS.md, leaving other sections alone."""
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\n"
    start = text.find(SECTION)
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        nxt = text.find("\n## ", start + len(SECTION))
        text = text[:start] + section + (text[nxt + 1 :] if nxt >= 0 else "")
    RESULTS.write_text(text.rstrip("\n") + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000, help="GPU activity rows in the built export")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--write-results", action="store_true", help="update benchmarks/RESULTS.md")
    ap.add_argument("--keep", metavar="DIR", help="build the export in DIR and keep it")
    args = ap.parse_args()
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="gputop-bench-nsys-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        path, rows = build_large_export(folder, args.rows)
        section = report(measure(path, args.runs), rows, path.stat().st_size)
        print(section)
        if args.write_results:
            write_results(section)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
