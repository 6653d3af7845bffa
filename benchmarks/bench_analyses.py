"""Time the kernel table, the gap detector and the transfer-overlap detector on a 10 M-event trace.

The large trace is a real corpus trace repeated along the time axis *in the model* (no JSON is written): every
lane keeps its events, each copy is shifted by the source's span plus a pause, correlation ids stay unique per
copy, and the kernel/copy side tables and launch flows are repeated with the events, so the analyses see the
same structure as in the real file, many times over.

    python benchmarks/bench_analyses.py                      # 10 M events from the GPT training trace
    python benchmarks/bench_analyses.py --events 2M --repeat 5
    python benchmarks/bench_analyses.py --write benchmarks/RESULTS.md

Each repetition runs the three analyses on a fresh ``Trace`` object (no cached per-trace columns carried over)
and reports wall time per analysis; the median over the repetitions is printed (target: ≤ 2 s together).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from gputop_trace.numpy_env import prepare

prepare()  # as the gputop-trace command does, before numpy is imported
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = "kineto/h200_gpt_train_small.json.gz"
SECTION = "## Analyses at 10 M events (bench_analyses.py)"


def _corpus() -> Path:
    return Path(os.environ.get("GPUTOP_CORPUS", ROOT.parent / "shared" / "corpus"))


def tile_trace(trace: Any, n_events: int, pause_ns: int = 1_000_000) -> Any:
    """``trace`` repeated along time until it holds at least ``n_events`` events (a new frozen ``Trace``)."""
    from gputop_trace.model.tables import CopyTable, FlowTable, KernelTable
    from gputop_trace.model.trace import Trace

    n = len(trace)
    k = max(1, -(-n_events // n))
    period = np.int64(int(trace.end_ns.max()) + pause_ns)
    offsets = trace.lane_offsets
    sizes = np.diff(offsets)
    # new index of (original event i, copy c): its lane's new base + c * lane size + position in the lane
    lane = trace.lane.astype(np.int64)
    pos_in_lane = np.arange(n, dtype=np.int64) - offsets[lane]
    new_base = offsets * k

    def new_index(orig: np.ndarray, copy: np.ndarray) -> np.ndarray:
        ln = lane[orig]
        return new_base[ln] + copy * sizes[ln] + pos_in_lane[orig]

    orig = np.empty(n * k, dtype=np.int64)
    copy = np.empty(n * k, dtype=np.int64)
    for li in range(len(sizes)):
        a, m = int(offsets[li]), int(sizes[li])
        if not m:
            continue
        dst = slice(int(new_base[li]), int(new_base[li]) + m * k)
        orig[dst] = np.tile(np.arange(a, a + m, dtype=np.int64), k)
        copy[dst] = np.repeat(np.arange(k, dtype=np.int64), m)
    corr_step = np.int64(max(int(trace.corr.max(initial=0)), int(trace.ext.max(initial=0))) + 1)

    def frozen(a: np.ndarray) -> np.ndarray:
        a.flags.writeable = False
        return a

    def shifted_ids(col: np.ndarray) -> np.ndarray:
        v = col[orig]
        return frozen(np.where(v >= 0, v + copy * corr_step, v))

    def side(table: Any, cls: Any) -> Any:
        m = len(table)
        if not m:
            return table
        c = np.repeat(np.arange(k, dtype=np.int64), m)
        rows = np.tile(np.arange(m, dtype=np.int64), k)
        ev = new_index(table.event[rows], c)
        order = np.argsort(ev, kind="stable")
        cols = {f.name: getattr(table, f.name)[rows][order] for f in dataclasses.fields(cls)}
        cols["event"] = ev[order]
        return cls(**{name: frozen(v) for name, v in cols.items()})

    f = trace.flows
    fc = np.repeat(np.arange(k, dtype=np.int64), len(f))
    fr = np.tile(np.arange(len(f), dtype=np.int64), k)
    flows = FlowTable(
        src=frozen(new_index(f.src[fr], fc)), dst=frozen(new_index(f.dst[fr], fc)), kind=frozen(f.kind[fr])
    )
    assert isinstance(trace.kernels, KernelTable) and isinstance(trace.copies, CopyTable)
    return Trace(
        start_ns=frozen(trace.start_ns[orig] + copy * period),
        dur_ns=frozen(trace.dur_ns[orig]),
        kind=frozen(trace.kind[orig]),
        lane=frozen(trace.lane[orig]),
        name=frozen(trace.name[orig]),
        depth=frozen(trace.depth[orig]),
        corr=shifted_ids(trace.corr),
        ext=shifted_ids(trace.ext),
        names=trace.names,
        lanes=trace.lanes,
        lane_offsets=frozen(offsets * k),
        kernels=side(trace.kernels, KernelTable),
        copies=side(trace.copies, CopyTable),
        flows=flows,
        counters=(),
        meta=trace.meta,
    )


def _parse_count(text: str) -> int:
    t = text.strip().upper()
    mult = {"K": 1_000, "M": 1_000_000}.get(t[-1:], 1)
    return int(float(t[:-1] if mult > 1 else t) * mult)


def measure(trace: Any, repeat: int) -> dict[str, Any]:
    """Median wall seconds of each analysis over ``repeat`` runs on fresh trace objects."""
    from gputop_trace.analysis.gaps.detect import find_gaps
    from gputop_trace.analysis.kernels import kernel_table
    from gputop_trace.analysis.transfers import transfer_overlap

    runs: dict[str, list[float]] = {"kernels": [], "gaps": [], "transfers": [], "total": [], "total_cpu": []}
    info: dict[str, Any] = {}
    for _ in range(repeat):
        fresh = dataclasses.replace(trace)  # same columns, empty per-trace caches
        c0 = time.process_time()
        t0 = time.perf_counter()
        rows = kernel_table(fresh)
        t1 = time.perf_counter()
        gaps = find_gaps(fresh)
        t2 = time.perf_counter()
        rep = transfer_overlap(fresh)
        t3 = time.perf_counter()
        runs["total_cpu"].append(time.process_time() - c0)
        runs["kernels"].append(t1 - t0)
        runs["gaps"].append(t2 - t1)
        runs["transfers"].append(t3 - t2)
        runs["total"].append(t3 - t0)
        info = {
            "kernel_rows": len(rows),
            "gaps": sum(len(d.columns) for d in gaps),
            "copies": len(rep.columns),
        }
    return {"median_s": {k: statistics.median(v) for k, v in runs.items()}, "runs_s": runs, **info}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", default=DEFAULT_SOURCE, help=f"corpus-relative trace to tile (default {DEFAULT_SOURCE})")
    p.add_argument("--events", default="10M", help="events in the tiled trace (default 10M)")
    p.add_argument("--repeat", type=int, default=3, help="repetitions; the median is reported (default 3)")
    p.add_argument("--write", metavar="RESULTS_MD", help="replace this script's section of a results file")
    args = p.parse_args(argv)

    from gputop_trace import __version__
    from gputop_trace.load.loader import load_paths
    from gputop_trace.model.kinds import Kind

    src = _corpus() / args.source
    base = load_paths([str(src)])
    t0 = time.perf_counter()
    big = tile_trace(base, _parse_count(args.events))
    build_s = time.perf_counter() - t0
    counts = big.count_by_kind()
    gpu_ops = sum(counts.get(k, 0) for k in (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET))
    print(
        f"source {args.source}: {len(base):,} events; tiled {len(big) // len(base)}× → {len(big):,} events "
        f"({gpu_ops:,} GPU ops) in {build_s:.1f} s",
        file=sys.stderr,
    )
    res = measure(big, args.repeat)
    med = res["median_s"]
    line = (
        f"kernels {med['kernels']:.2f} s, gaps {med['gaps']:.2f} s, transfers {med['transfers']:.2f} s, "
        f"total {med['total']:.2f} s wall, {med['total_cpu']:.2f} s CPU (target ≤ 2 s) — {res['kernel_rows']} kernel "
        f"rows, {res['gaps']:,} gaps ≥ 20 µs, "
        f"{res['copies']:,} copies"
    )
    print(line)
    if args.write:
        cpu = platform.processor() or platform.machine()
        section = "\n".join(
            [
                SECTION,
                "",
                f"Measured {_dt.date.today().isoformat()} on {platform.node()} ({os.cpu_count()} CPUs, {cpu}), "
                f"Python {platform.python_version()}, numpy {np.__version__}, gputop-trace {__version__}.",
                f"Input: `{args.source}` ({len(base):,} events) repeated {len(big) // len(base)}× along time in the "
                f"model → {len(big):,} events, {gpu_ops:,} GPU ops. Median of {args.repeat} runs, each on a fresh "
                "`Trace` (no cached columns), default gap threshold 20 µs. Wall seconds per analysis; `total_cpu` "
                f"is the process CPU time of all three (load average when measured: {os.getloadavg()[0]:.1f}).",
                "",
                "| analysis | median (s) | runs (s) |",
                "|---|---|---|",
                *(
                    f"| {k} | {med[k]:.2f} | {', '.join(f'{x:.2f}' for x in res['runs_s'][k])} |"
                    for k in ("kernels", "gaps", "transfers", "total", "total_cpu")
                ),
                "",
                f"Target: kernels + gaps + transfers ≤ 2 s together. Result: {res['kernel_rows']} kernel rows, "
                f"{res['gaps']:,} gaps, {res['copies']:,} copies and memsets.",
                "",
            ]
        )
        path = Path(args.write)
        text = path.read_text() if path.exists() else "# Benchmark results\n\n"
        if SECTION in text:
            start = text.index(SECTION)
            nxt = text.find("\n## ", start + len(SECTION))
            text = text[:start] + section + (text[nxt + 1 :] if nxt >= 0 else "")
        else:
            text = text.rstrip("\n") + "\n\n" + section
        path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
