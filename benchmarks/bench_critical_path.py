"""Critical path (issue 30): how long the path of every step of the 100 MB Kineto input takes, and our paths next
to Holistic Trace Analysis' ``critical_path_analysis`` on the corpus traces with several streams or ranks.

    python benchmarks/bench_critical_path.py                 # both parts, printed
    python benchmarks/bench_critical_path.py --no-hta        # only the timing

Timing: a fresh child loads ``kineto_100mb.json`` (``make_large``), then times ``critical_paths(trace,
what_if=False)`` (every step of every rank; the graph, the binding predecessors and the walk), median of 3 runs in 3
children (target ≤ 1 s). A second figure times the default (what-ifs for the top 5 items of every step).

Comparison: for each trace, each step of each rank: our path length and breakdown, and HTA's (the sum of the
weights of its longest path's edges and HTA's ``bound_by`` classes), HTA run in its own child per trace on a folder
holding only that trace. HTA 0.5 calls ``DataFrame.drop(axis=1, columns=...)``, which pandas 3 refuses; the child
drops the redundant ``axis`` argument before calling pandas (nothing else of HTA is touched). HTA counts in µs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import make_large  # noqa: E402
from harness import Result, run_child  # noqa: E402

SECTION = "Critical path (bench_critical_path.py)"
TARGET_S = 1.0
#: corpus traces with several streams or ranks, and the annotation HTA selects steps by
COMPARE = (
    ("external/negative_queue_length_values_check/rank0.json.gz", "ProfilerStep"),
    ("external/trace_filter", "ProfilerStep"),
    ("kineto/h200_ddp_2gpu", "step_"),
)

_OURS_TIMING = """
import json, sys, time
from gputop_trace.numpy_env import prepare
prepare()  # as the gputop-trace command does, before numpy is imported
from gputop_trace.load.loader import load_paths
from gputop_trace.analysis.critical_path.path import critical_paths
trace = load_paths([sys.argv[1]], use_cache=False)
t0, c0 = time.perf_counter(), time.process_time()
paths = critical_paths(trace, what_if=False)
t1, c1 = time.perf_counter(), time.process_time()
full = critical_paths(trace)
t2 = time.perf_counter()
print(json.dumps({"paths_s": t1 - t0, "paths_cpu_s": c1 - c0, "what_if_s": t2 - t1, "steps": len(paths),
                  "events": len(trace), "segments": sum(len(p.segments) for p in paths)}))
"""

_OURS_PATHS = """
import json, sys
from gputop_trace.numpy_env import prepare
prepare()  # as the gputop-trace command does, before numpy is imported
from pathlib import Path
from gputop_trace.load.loader import load_paths
from gputop_trace.analysis.critical_path.path import critical_paths
p = Path(sys.argv[1])
trace = load_paths(sorted(str(x) for x in p.iterdir()) if p.is_dir() else [str(p)])
out = []
for sp in critical_paths(trace, what_if=False):
    launch = sum(s.dur_ns for s in sp.segments if s.label == "launch latency")
    gpu_idle = sum(s.dur_ns for s in sp.segments if s.label == "idle: GPU")
    out.append({"rank": sp.rank, "step": sp.step, "name": sp.step_name, "dur_ns": sp.dur_ns,
                "length_ns": sp.length_ns, "breakdown": sp.breakdown, "launch_latency_ns": launch,
                "gpu_idle_ns": gpu_idle, "edges": sp.edges,
                "ranks_on_path": sorted({s.rank for s in sp.segments}),
                "streams_on_path": len({s.lane for s in sp.segments
                                        if s.category in ("kernel", "copy", "collective")})})
print(json.dumps({"rows": out}))
"""

_HTA = """
import json, logging, sys, time, warnings
logging.disable(logging.WARNING)
warnings.filterwarnings("ignore")
import pandas as pd
_drop = pd.DataFrame.drop
def _compat_drop(self, *a, **k):
    if k.get("columns") is not None or k.get("index") is not None:
        k.pop("axis", None)  # pandas 3 refuses axis next to columns=/index=; HTA 0.5 passes both
    return _drop(self, *a, **k)
pd.DataFrame.drop = _compat_drop
from hta.trace_analysis import TraceAnalysis
analysis = TraceAnalysis(trace_dir=sys.argv[1])
steps = json.loads(sys.argv[3])
out = []
for rank, inst in steps:
    t0 = time.perf_counter()
    try:
        g, ok = analysis.critical_path_analysis(rank=rank, annotation=sys.argv[2], instance_id=inst)
        if not ok:
            out.append({"rank": rank, "step": inst, "error": "critical_path_analysis returned False"})
            continue
        df = g.get_critical_path_breakdown()
        out.append({"rank": rank, "step": inst, "s": time.perf_counter() - t0,
                    "length_us": float(df.duration.sum()),
                    "bound_by": {str(k) or "dependency": float(v)
                                 for k, v in df.groupby("bound_by").duration.sum().items()},
                    "edge_types": {str(k): float(v) for k, v in df.groupby("type").duration.sum().items()}})
    except Exception as e:
        out.append({"rank": rank, "step": inst, "error": f"{type(e).__name__}: {str(e)[:160]}"})
print(json.dumps({"rows": out}))
"""


def _corpus() -> Path:
    return Path(os.environ.get("GPUTOP_CORPUS", ROOT.parent / "shared" / "corpus"))


def time_paths(workdir: Path, repeat: int = 3) -> list[Result]:
    """Every step's path on the 100 MB input: median over ``repeat`` children."""
    path = make_large.ensure(workdir, ["kineto_100mb.json"])["kineto_100mb.json"]
    runs = [run_child(_OURS_TIMING, args=[str(path)]).output for _ in range(repeat)]
    paths_s = statistics.median(r["paths_s"] for r in runs)
    what_if_s = statistics.median(r["what_if_s"] for r in runs)
    detail = (
        f"{runs[0]['steps']} steps, {runs[0]['events']:,} events, {runs[0]['segments']:,} path segments; runs "
        + ", ".join(f"{r['paths_s']:.2f}" for r in runs)
        + " s wall, "
        + ", ".join(f"{r['paths_cpu_s']:.2f}" for r in runs)
        + " s CPU"
    )
    return [
        Result(
            SECTION, "path of every step, 100 MB Kineto", paths_s, "s", f"≤ {TARGET_S:g} s", paths_s <= TARGET_S, detail
        ),
        Result(
            SECTION,
            "same, with what-ifs for the top 5 items of every step",
            what_if_s,
            "s",
            "",
            None,
            "runs " + ", ".join(f"{r['what_if_s']:.2f}" for r in runs) + " s wall",
        ),
    ]


def compare(rel: str, annotation: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(ours, HTA's) per step for one corpus trace (file or folder of ranks)."""
    src = _corpus() / rel
    ours: list[dict[str, Any]] = run_child(_OURS_PATHS, args=[str(src)]).output["rows"]
    with tempfile.TemporaryDirectory(prefix="hta_cp_") as tmp:
        for f in sorted(src.iterdir()) if src.is_dir() else [src]:
            shutil.copy(f, Path(tmp) / f.name)
        steps = [[o["rank"], o["step"]] for o in ours]
        hta: list[dict[str, Any]] = run_child(_HTA, args=[tmp, annotation, json.dumps(steps)], timeout=1800).output[
            "rows"
        ]
    return ours, hta


def _ms(ns: float) -> str:
    return f"{ns / 1e6:9.2f}"


def report(rel: str, ours: list[dict[str, Any]], hta: list[dict[str, Any]]) -> str:
    """Both paths of every step side by side, in ms."""
    lines = [f"### {rel}", ""]
    lines.append(
        "| rank | step | step ms | ours ms | HTA ms | ours: host (ops + calls) / kernels+copies / collective / launch "
        "latency / GPU idle / sync waits / CPU idle | HTA: cpu_bound / gpu_compute / gpu_comm / launch_overhead / "
        "kernel_kernel_overhead / dependency | streams, ranks on our path |"
    )
    lines.append("|---|---|---|---|---|---|---|---|")
    by_key = {(h["rank"], h["step"]): h for h in hta}
    for o in ours:
        h = by_key.get((o["rank"], o["step"]), {})
        b = o["breakdown"]
        host = b["cpu_op"] + b["launch"] - o["launch_latency_ns"]
        cpu_idle = b["idle"] - o["gpu_idle_ns"]
        mine = " / ".join(
            _ms(x).strip()
            for x in (
                host,
                b["kernel"] + b["copy"],
                b["collective"],
                o["launch_latency_ns"],
                o["gpu_idle_ns"],
                b["sync_wait"],
                cpu_idle,
            )
        )
        if "error" in h or not h:
            theirs, length = f"HTA failed: {h.get('error', 'no result')}", "—"
        else:
            bb = h["bound_by"]
            theirs = " / ".join(
                _ms(bb.get(k, 0.0) * 1000).strip()
                for k in (
                    "cpu_bound",
                    "gpu_compute_bound",
                    "gpu_communication_bound",
                    "gpu_kernel_launch_overhead",
                    "gpu_kernel_kernel_overhead",
                    "dependency",
                )
            )
            length = _ms(h["length_us"] * 1000).strip()
        lines.append(
            f"| {o['rank']} | {o['step']} {o['name']} | {_ms(o['dur_ns']).strip()} | {_ms(o['length_ns']).strip()} | "
            f"{length} | {mine} | {theirs} | {o['streams_on_path']}, {o['ranks_on_path']} |"
        )
    return "\n".join(lines) + "\n"


def run(workdir: Path) -> list[Result]:
    """The plug-in entry (benchmarks/README.md): the timing rows; the comparison goes in the detail."""
    results = time_paths(workdir)
    try:
        import hta  # noqa: F401
    except ImportError:
        results.append(Result(SECTION, "HTA critical_path_analysis comparison", None, "", detail="HTA not installed"))
        return results
    for rel, ann in COMPARE:
        if not (_corpus() / rel).exists():
            continue
        ours, theirs = compare(rel, ann)
        ok = [h for h in theirs if "error" not in h]
        detail = f"{len(ok)} of {len(theirs)} steps analysed by HTA; " + "; ".join(
            f"r{o['rank']}s{o['step']}: ours {o['length_ns'] / 1e6:.1f} ms"
            + (f", HTA {h['length_us'] / 1e3:.1f} ms" if "error" not in h else ", HTA failed")
            for o, h in zip(ours, theirs, strict=False)
        )
        results.append(Result(SECTION, f"vs HTA: {rel}", len(ok), "steps", "", None, detail))
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=make_large.DEFAULT_OUT, help="inputs folder (make_large)")
    ap.add_argument("--no-hta", action="store_true", help="only time our paths")
    ap.add_argument("--no-timing", action="store_true", help="only the comparison with HTA")
    args = ap.parse_args(argv)
    if not args.no_timing:
        for r in time_paths(args.work):
            print(f"{r.what}: {r.value:.3f} {r.unit} (target {r.target or '—'}; {r.detail})")
    if not args.no_hta:
        for rel, ann in COMPARE:
            if (_corpus() / rel).exists():
                ours, theirs = compare(rel, ann)
                print(report(rel, ours, theirs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
