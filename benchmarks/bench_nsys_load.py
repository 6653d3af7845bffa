"""One nsys load in this process: wall, CPU (getrusage: user + system), peak RSS, load average, and a hash of every
model column (``--hash``), so that two trees can be compared for speed and for the same model.

    python benchmarks/bench_nsys_load.py /tmp/gputop-bench/nsys_10m.sqlite --hash --profile out.prof
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import resource
import time
from typing import Any

from gputop_trace.numpy_env import prepare

prepare()  # as the gputop-trace command does, before numpy is imported
import numpy as np  # noqa: E402


def _digest(obj: Any, h: Any, seen: set[int]) -> None:
    """Feed ``obj`` (arrays, dataclasses, tuples, dicts, scalars) into ``h`` in a fixed order."""
    if isinstance(obj, np.ndarray):
        h.update(str((obj.dtype.str, obj.shape)).encode())
        h.update(np.ascontiguousarray(obj).tobytes())
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        h.update(type(obj).__name__.encode())
        for f in dataclasses.fields(obj):
            h.update(f.name.encode())
            _digest(getattr(obj, f.name), h, seen)
    elif isinstance(obj, (list, tuple)):
        h.update(b"[%d" % len(obj))
        for x in obj:
            _digest(x, h, seen)
    elif isinstance(obj, dict):
        h.update(b"{%d" % len(obj))
        for k in sorted(obj, key=repr):
            h.update(repr(k).encode())
            _digest(obj[k], h, seen)
    else:
        h.update(repr(obj).encode())


def column_hashes(trace: Any) -> dict[str, str]:
    """One sha1 per field of the trace (columns, names, lanes, side tables, meta)."""
    out = {}
    for f in dataclasses.fields(trace):
        h = hashlib.sha1()
        _digest(getattr(trace, f.name), h, set())
        out[f.name] = h.hexdigest()[:16]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--hash", action="store_true", help="print a hash of every model column")
    ap.add_argument("--profile", help="write a cProfile of the load here")
    ap.add_argument("--label", default="")
    ap.add_argument("--nsys-from", help="a folder holding another tree's parsers/nsys (as nsys/), loaded instead")
    ap.add_argument(
        "--model-from", help="a folder holding another tree's gputop_trace/model (as model/), loaded instead"
    )
    a = ap.parse_args()
    if a.model_from:
        import gputop_trace.model

        gputop_trace.model.__path__.insert(0, os.path.join(a.model_from, "model"))
    if a.nsys_from:
        import gputop_trace.parsers

        gputop_trace.parsers.__path__.insert(0, a.nsys_from)
    from gputop_trace.parsers.nsys.loader import load

    load1 = os.getloadavg()[0]
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    th0 = time.thread_time()
    if a.profile:
        import cProfile

        prof = cProfile.Profile()
        trace = prof.runcall(load, a.path)
        prof.dump_stats(a.profile)
    else:
        trace = load(a.path)
    wall = time.perf_counter() - t0
    loading_thread_cpu = time.thread_time() - th0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    kernels = int(trace.kernels.event.shape[0])
    res = {
        "label": a.label,
        "wall_s": round(wall, 2),
        "user_s": round(r1.ru_utime - r0.ru_utime, 2),
        "sys_s": round(r1.ru_stime - r0.ru_stime, 2),
        "cpu_s": round(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime, 2),
        "loading_thread_cpu_s": round(loading_thread_cpu, 2),
        "minflt": r1.ru_minflt - r0.ru_minflt,
        "peak_rss_mb": r1.ru_maxrss // 1024,
        "events": len(trace),
        "kernels": kernels,
        "kernel_rows_per_s_M": round(kernels / wall / 1e6, 3),
        "load_avg_1m": [round(load1, 2), round(os.getloadavg()[0], 2)],
    }
    import gputop_trace.model.builder
    import gputop_trace.parsers.nsys

    res["nsys_from"] = gputop_trace.parsers.nsys.__path__[0]
    res["model_from"] = os.path.dirname(gputop_trace.model.builder.__file__)
    if a.hash:
        res["hashes"] = column_hashes(trace)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
