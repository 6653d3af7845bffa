#!/usr/bin/env python3
"""End-to-end check of the ncu drill-down and the annotation helper on a real GPU with a real ncu.

Run on the GPU machine from a plain copy of the repository (no install needed, no network)::

    python3 scripts/real_ncu_check.py [--out DIR] [--clock-control none|base] [--skip-basic]

What it does (outputs under ``$OUT`` when set, else ``--out``, else a temporary folder):

1. writes ``workload.py``: a small PyTorch program whose steps are wrapped in ``gputop_trace.annotate("step_i")``;
   each step scales three float tensors of different sizes in place (``vectorized_elementwise_kernel``, one grid
   size per tensor) and multiplies two 4096² bf16 matrices (cuBLAS, tensor cores);
2. records it under ``torch.profiler`` → ``trace.json`` (Kineto), and checks the ``step_i`` ranges are in it
   (the record_function half of annotate);
3. builds drill-down requests from that trace with the project's own code
   (``gputop_trace.ncu.drilldown.request_for_event``; a stdlib fallback when numpy/msgspec are missing) for the
   middle-size elementwise kernel and the GEMM inside ``step_2``;
4. runs ``gputop-trace ncu --kernel RAW --launch N --nvtx step_2 --yes --json -- python3 workload.py`` for both
   (the NVTX half of annotate: ncu must find the kernels inside ``step_2``), and once more for the elementwise
   kernel without the NVTX filter using the plain launch count (``--set basic``);
5. checks each profiled launch is the one selected in the trace (same grid), prints the verdicts, re-opens a
   report with ``gputop-trace ncu REPORT --json``, and writes ``summary.json``.

Exit code 0 when every check passed, 1 otherwise; the summary says which failed and why.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SIZES = (1 << 20, 1 << 22, 1 << 24)
RANGE = "step_2"

WORKLOAD = '''"""Workload for scripts/real_ncu_check.py: annotated steps of elementwise kernels and a bf16 GEMM."""
import argparse

import torch
from gputop_trace import annotate

SIZES = {sizes!r}


def step(i, a, b, xs):
    with annotate(f"step_{{i}}"):
        for x in xs:
            x.mul_(1.0001)  # vectorized_elementwise_kernel; the grid grows with the tensor
        return a @ b  # cuBLAS bf16 GEMM on tensor cores


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--trace", help="record a Kineto trace to this file")
    p.add_argument("--steps", type=int, default=4)
    args = p.parse_args()
    prof = None
    if args.trace:
        from torch.profiler import ProfilerActivity, profile

        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()
    torch.manual_seed(0)
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    xs = [torch.ones(n, device="cuda") for n in SIZES]
    for i in range(args.steps):
        step(i, a, b, xs)
    torch.cuda.synchronize()
    if prof is not None:
        prof.__exit__(None, None, None)
        prof.export_chrome_trace(args.trace)
    print("workload done")


if __name__ == "__main__":
    main()
'''


# ---- making gputop_trace importable from a plain copy ------------------------------------------------------------


def package_env(work: Path) -> dict[str, str]:
    """Environment that makes this copy's ``gputop_trace`` importable (an install of it, or a symlink tree in the
    layout setuptools would install, like scripts/typecheck.sh builds)."""
    env = dict(os.environ)
    try:
        import gputop_trace

        if Path(gputop_trace.__file__).resolve().is_relative_to(ROOT):
            return env
    except ImportError:
        pass
    tree = work / "pkgtree"
    pkg = tree / "gputop_trace"
    if not pkg.exists():
        pkg.mkdir(parents=True)
        for f in (ROOT / "core").iterdir():
            (pkg / f.name).symlink_to(f)
        for d in ("parsers", "analysis", "tui", "sample_traces"):
            (pkg / d).symlink_to(ROOT / d)
    sys.path.insert(0, str(tree))
    env["PYTHONPATH"] = str(tree) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    for name in [m for m in sys.modules if m == "gputop_trace" or m.startswith("gputop_trace.")]:
        del sys.modules[name]
    return env


# ---- picking kernels in the trace ------------------------------------------------------------------------------


def pick_targets(trace_path: Path) -> tuple[list[dict[str, Any]], str, list[str]]:
    """The elementwise kernel on the middle-size tensor and the GEMM inside ``step_2``, as drill-down requests
    (with the kernel's grid from the trace); how they were computed; the annotation range names seen."""
    try:
        targets, names = _pick_with_project(trace_path)
        return targets, "gputop_trace.ncu.drilldown.request_for_event", names
    except ImportError as e:
        print(f"note: the project's trace loader needs {e.name}; using the stdlib fallback", file=sys.stderr)
        return _pick_with_stdlib(trace_path)


def _pick_with_project(trace_path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    import numpy as np

    from gputop_trace.load.loader import load_paths
    from gputop_trace.model.kinds import Kind
    from gputop_trace.ncu.drilldown import request_for_event

    t = load_paths([str(trace_path)])
    ranges = sorted({t.event_name(int(i)) for i in t.of_kind(Kind.RANGE)})
    step = [int(i) for i in t.of_kind(Kind.RANGE) if t.event_name(int(i)) == RANGE]
    if not step:
        raise SystemExit(f"the trace has no {RANGE!r} range: annotate's record_function half did not work")
    s0, s1 = int(t.start_ns[step[0]]), int(t.start_ns[step[0]] + t.dur_ns[step[0]])
    kernels = t.of_kind(Kind.KERNEL)
    api = t.launch_of[kernels]
    inside = (api >= 0) & (t.start_ns[np.maximum(api, 0)] >= s0) & (t.start_ns[np.maximum(api, 0)] < s1)
    ks = kernels[inside]
    ks = ks[np.argsort(t.start_ns[ks], kind="stable")]
    elementwise = [int(e) for e in ks if "elementwise_kernel" in t.event_name(int(e))]
    others = [int(e) for e in ks if "elementwise_kernel" not in t.event_name(int(e))]
    if len(elementwise) < 3 or not others:
        raise SystemExit(f"unexpected kernels in {RANGE}: {[t.event_name(int(e)) for e in ks]}")
    gemm = max(others, key=lambda e: int(t.dur_ns[e]))
    out = []
    for role, e in (("elementwise", elementwise[1]), ("gemm", gemm)):
        r = request_for_event(t, e, str(trace_path))
        row = t.kernel_row(e)
        out.append(
            {
                "role": role,
                "kernel_name": r.kernel_name,
                "raw_name": r.raw_name,
                "filter": list(r.filter),
                "launch": r.launch,
                "nvtx_range": r.nvtx_range,
                "launch_in_range": r.skip_in_range(RANGE),
                "ranges": [list(x) for x in r.ranges],
                "grid": [int(g) for g in t.kernels.grid[row]] if row >= 0 else None,
                "block": [int(b) for b in t.kernels.block[row]] if row >= 0 else None,
                "duration_ns": r.duration_ns,
            }
        )
    return out, ranges


def _pick_with_stdlib(trace_path: Path) -> tuple[list[dict[str, Any]], str, list[str]]:
    from gputop_trace.ncu.drilldown import kernel_filter

    doc = json.loads(trace_path.read_text())
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    ranges = [e for e in events if e.get("cat") == "user_annotation" and e.get("ph") == "X"]
    names = sorted({e["name"] for e in ranges})
    step = [e for e in ranges if e["name"] == RANGE]
    if not step:
        raise SystemExit(f"the trace has no {RANGE!r} range: annotate's record_function half did not work")
    s0, s1 = float(step[0]["ts"]), float(step[0]["ts"]) + float(step[0]["dur"])
    launch_ts = {
        e["args"]["correlation"]: float(e["ts"])
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: float(e["ts"]))
    in_step = [k for k in kernels if s0 <= launch_ts.get(k["args"].get("correlation"), -1.0) < s1]
    elementwise = [k for k in in_step if "elementwise_kernel" in k["name"]]
    gemm = max((k for k in in_step if "elementwise_kernel" not in k["name"]), key=lambda k: float(k["dur"]))
    out = []
    for role, k in (("elementwise", elementwise[1]), ("gemm", gemm)):
        key = kernel_filter(k["name"])
        same = [x for x in kernels if kernel_filter(x["name"]) == key]
        before = [x for x in same if float(x["ts"]) < float(k["ts"])]
        in_range = [x for x in before if s0 <= launch_ts.get(x["args"].get("correlation"), -1.0) < s1]
        out.append(
            {
                "role": role,
                "kernel_name": k["name"],
                "raw_name": k["name"],
                "filter": list(key),
                "launch": len(before),
                "nvtx_range": RANGE,
                "launch_in_range": len(in_range),
                "ranges": [],
                "grid": list(k["args"].get("grid", [])) or None,
                "block": list(k["args"].get("block", [])) or None,
                "duration_ns": round(float(k["dur"]) * 1000),
            }
        )
    return out, "stdlib fallback (same rules as request_for_event)", names


# ---- running the CLI -----------------------------------------------------------------------------------------------


def gputop(args: list[str], env: dict[str, str], log: Path, timeout: float) -> tuple[int, dict[str, Any] | None]:
    """Run ``python3 -m gputop_trace ARGS``; stderr (ncu's streamed log) goes to ``log``; stdout is JSON."""
    cmd = [sys.executable, "-m", "gputop_trace", *args]
    print("$ " + " ".join(cmd), flush=True)
    with open(log, "w") as err:
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=err, text=True, timeout=timeout, check=False)
    try:
        doc = json.loads(proc.stdout) if proc.stdout.strip() else None
    except ValueError:
        doc = None
        log.with_suffix(".stdout").write_text(proc.stdout)
    return proc.returncode, doc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="output folder (default: $OUT, else a temporary folder)")
    ap.add_argument("--clock-control", default="none", choices=("none", "base"), help="passed to ncu (default none)")
    ap.add_argument("--timeout", type=float, default=540.0, help="seconds per ncu run")
    ap.add_argument("--skip-basic", action="store_true", help="skip the third run (no NVTX filter, --set basic)")
    a = ap.parse_args()
    out = Path(a.out or os.environ.get("OUT") or tempfile.mkdtemp(prefix="gputop-real-ncu-")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = package_env(out)
    env["GPUTOP_CACHE_DIR"] = str(out / "cache")
    checks: list[dict[str, Any]] = []
    summary: dict[str, Any] = {"out": str(out), "checks": checks, "started": time.strftime("%Y-%m-%d %H:%M:%S")}

    def check(name: str, passed: bool, detail: Any = "") -> bool:
        checks.append({"check": name, "passed": bool(passed), "detail": detail})
        print(f"[{'PASS' if passed else 'FAIL'}] {name}: {detail}", flush=True)
        return passed

    def finish() -> int:
        summary["ok"] = all(c["passed"] for c in checks) and bool(checks)
        (out / "summary.json").write_text(json.dumps(summary, indent=2))
        print(json.dumps(summary, indent=2))
        return 0 if summary["ok"] else 1

    from gputop_trace.ncu.locate import find_ncu

    ncu = find_ncu()
    summary["ncu"] = ncu
    if not check("ncu found", ncu is not None, ncu or "set GPUTOP_NCU or put ncu on PATH"):
        return finish()
    assert ncu is not None
    summary["ncu_version"] = subprocess.run(
        [ncu, "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()
    try:
        import torch

        summary["torch"] = torch.__version__
        summary["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        summary["torch"] = None
    if not check("torch with CUDA", bool(summary.get("gpu")), summary.get("gpu") or "torch or CUDA missing"):
        return finish()

    workload = out / "workload.py"
    workload.write_text(WORKLOAD.format(sizes=SIZES))
    trace = out / "trace.json"
    t0 = time.time()
    rec = subprocess.run(
        [sys.executable, str(workload), "--trace", str(trace)], env=env, capture_output=True, text=True, check=False
    )
    (out / "record.log").write_text(rec.stdout + rec.stderr)
    if not check(
        "workload recorded under torch.profiler",
        rec.returncode == 0 and trace.is_file(),
        f"{time.time() - t0:.1f} s, exit {rec.returncode}",
    ):
        return finish()
    targets, how, range_names = pick_targets(trace)
    summary["request_from"] = how
    summary["targets"] = targets
    check(
        "annotate → record_function ranges in the Kineto trace",
        all(f"step_{i}" in range_names for i in range(4)),
        range_names,
    )
    elem = next(t for t in targets if t["role"] == "elementwise")
    check(
        "elementwise kernel counted inside step_2",
        elem["launch_in_range"] == 1,
        f"launch {elem['launch']} overall, {elem['launch_in_range']} inside {RANGE}; suggested range "
        f"{elem['nvtx_range']!r}",
    )

    runs = [(t, RANGE, t["launch_in_range"], "full") for t in targets]
    if not a.skip_basic:
        runs.append((elem, None, elem["launch"], "basic"))
    reports: list[str] = []
    for t, nvtx, launch, section_set in runs:
        tag = f"{t['role']}-{'nvtx' if nvtx else 'plain'}-{section_set}"
        args = [
            "ncu",
            "--kernel",
            t["raw_name"],
            "--launch",
            str(launch),
            "--set",
            section_set,
            "--yes",
            "--json",
            "--clock-control",
            a.clock_control,
            "--timeout",
            f"{int(a.timeout)}s",
            "--output",
            str(out / tag),
        ]
        if nvtx:
            args += ["--nvtx", nvtx]
        args += ["--", sys.executable, str(workload)]
        t0 = time.time()
        rc, doc = gputop(args, env, out / f"{tag}.stderr.log", a.timeout + 60)
        (out / f"{tag}.json").write_text(json.dumps(doc, indent=2) if doc else "null")
        took = f"{time.time() - t0:.0f} s"
        if not check(
            f"{tag}: ncu run",
            rc == 0 and bool(doc and doc.get("kernels")),
            f"exit {rc}, {took}" + (f", error: {doc.get('error')}" if doc and doc.get("error") else ""),
        ):
            continue
        assert doc is not None
        k = doc["kernels"][0]
        reports.append(doc["run"]["report"])
        check(
            f"{tag}: profiled the launch selected in the trace (same grid)",
            k["grid"] == t["grid"],
            f"ncu grid {k['grid']}, trace grid {t['grid']}, ncu {k['duration_ns']} ns vs trace {t['duration_ns']} ns",
        )
        if nvtx:
            check(
                f"{tag}: annotate → NVTX range recorded by ncu for the kernel",
                nvtx in (k.get("nvtx") or []),
                k.get("nvtx"),
            )
        print(
            json.dumps(
                {
                    x: k[x]
                    for x in (
                        "name",
                        "launch",
                        "duration_ns",
                        "verdict",
                        "sm_pct",
                        "memory_pct",
                        "intensity_flop_per_byte",
                        "ridge_flop_per_byte",
                        "tensor_use",
                        "tensor_pipe_pct",
                        "occupancy_limiter",
                    )
                },
                indent=1,
            ),
            flush=True,
        )
        print("explanation:", k["explanation"], flush=True)
        summary.setdefault("verdicts", {})[tag] = {
            x: k[x]
            for x in (
                "name",
                "verdict",
                "tensor_use",
                "sm_pct",
                "memory_pct",
                "intensity_flop_per_byte",
                "ridge_flop_per_byte",
                "explanation",
            )
        }
        if t["role"] == "gemm":
            check(
                f"{tag}: GEMM verdict",
                k["verdict"] == "compute-bound" and k["tensor_use"] == "heavy",
                f"{k['verdict']}, tensor {k['tensor_use']} ({k['tensor_pipe_pct']}%) — expected compute-bound, heavy",
            )
    if reports:
        rc, doc = gputop(["ncu", reports[0], "--json"], env, out / "reopen.stderr.log", 120)
        check(
            "gputop-trace ncu REPORT --json re-opens the report",
            rc == 0 and bool(doc and doc["kernels"]),
            f"exit {rc}, reader: {doc['source']['producer'] if doc else None}",
        )
    for p in (out / "cache").rglob("*.log"):
        shutil.copy(p, out / p.name)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
