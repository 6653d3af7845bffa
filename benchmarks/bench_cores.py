"""Load time of the 100 MB Kineto input (and its Unix-epoch variant) against the cores the process may use.

    python setup.py build_ext --inplace -q      # the compiled scanner (else the pure-Python path is measured)
    python benchmarks/bench_cores.py            # builds its inputs with make_large.py, prints a table

Meant for a larger machine (a GPU box with 16+ cores): each load runs in a fresh process pinned to the first N
cores (``os.sched_setaffinity``), N in 1, 2, 4, 8, 16 (those the machine has), no cache. Columns: the compiled
path (wall median of ``--repeat`` runs, CPU time of its threads, MB/s), the pure-Python path
(``GPUTOP_PURE_PYTHON=1``), and Holistic Trace Analysis on the same file with the same cores when it is
installed (its pool workers inherit the affinity; skipped otherwise). Needs only the repository: without the
shared corpus, make_large.py repeats the bundled sample trace.

What scales with cores here: the loader is one process. A read-ahead thread reads the file, gzip is inflated on
a thread of its own, each window of the stream is scanned by one thread per usable core (at most 8), and the
loading thread turns the scanned parts into columns while holding the GIL: one file gains from cores until that
thread is the limit (more cores help the fleet command and folders of ranks, parsed in parallel processes).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import make_large
from harness import median, run_child

PIN = "import os, sys\nos.sched_setaffinity(0, set(range(int(os.environ['BENCH_CORES']))))\n"
LOAD = (
    PIN
    + """import json, time
from gputop_trace.numpy_env import prepare
prepare()  # as the gputop-trace command does, before numpy is imported
from gputop_trace.parsers.chrome import fast
from gputop_trace.load.loader import load_paths
t = time.perf_counter(); c = time.process_time()
trace = load_paths([sys.argv[1]], use_cache=False)
print(json.dumps({"s": time.perf_counter() - t, "cpu": time.process_time() - c, "n": len(trace),
                  "compiled": fast.enabled()}))
"""
)
HTA = (
    PIN
    + """import json, logging, time
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
t = time.perf_counter()
TraceAnalysis(trace_dir=sys.argv[1])
print(json.dumps({"s": time.perf_counter() - t}))
"""
)


def _hta_installed() -> bool:
    try:
        import hta  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=make_large.DEFAULT_OUT, help="folder for the generated inputs")
    ap.add_argument("--repeat", type=int, default=3, help="runs per cell (median)")
    ap.add_argument("--cores", default="1,2,4,8,16", help="core counts to try (those above the machine's are skipped)")
    ap.add_argument("--no-hta", action="store_true", help="skip the peer even when it is installed")
    ap.add_argument(
        "--inputs",
        default="kineto_100mb.json,kineto_epoch_100mb.json",
        help="make_large.py inputs to load (issue 29's target is on kineto_1gb.json)",
    )
    args = ap.parse_args(argv)
    have = len(os.sched_getaffinity(0))
    cores = [n for n in (int(c) for c in args.cores.split(",")) if n <= have]
    names = [n for n in args.inputs.split(",") if n]
    inputs = make_large.ensure(args.work, names, log=lambda s: print(s, file=sys.stderr))
    hta = _hta_installed() and not args.no_hta
    print(f"{have} cores here; source trace {make_large.KINETO_SOURCE.name}; load average {os.getloadavg()[0]:.2f}")
    head = "| file | cores | compiled: wall s | CPU s | MB/s | pure Python: wall s | HTA: wall s | × HTA |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name in names:
        path = inputs[name]
        mb = path.stat().st_size / 1e6
        folder = args.work / f"cores_hta_{name.replace('.', '_')}"
        folder.mkdir(exist_ok=True)
        link = folder / "rank0.json"
        if not link.exists():
            link.symlink_to(path)
        for n in cores:
            env = {"BENCH_CORES": str(n), "GPUTOP_TRACE_NO_CACHE": "1"}
            runs = [run_child(LOAD, args=[str(path)], env=env).output for _ in range(args.repeat)]
            wall, cpu = median([r["s"] for r in runs]), median([r["cpu"] for r in runs])
            pure = run_child(LOAD, args=[str(path)], env={**env, "GPUTOP_PURE_PYTHON": "1"}).output["s"]
            peer = run_child(HTA, args=[str(folder)], env=env, timeout=3600).output["s"] if hta else None
            compiled = "" if runs[0]["compiled"] else " (scanner not built)"
            print(
                f"| {name}{compiled} | {n} | {wall:.2f} | {cpu:.2f} | {mb / wall:.0f} | {pure:.2f} | "
                + (f"{peer:.1f} | {peer / wall:.1f}× |" if peer is not None else "not installed | — |"),
                flush=True,
            )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
