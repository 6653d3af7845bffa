"""The one command that measures everything in ``shared/spec/performance.md`` and rewrites ``RESULTS.md``.

    python benchmarks/run.py                 # full run (builds the large inputs first, ~20 min)
    python benchmarks/run.py --quick         # 100 MB inputs only, fewer repeats (a smoke run; not for RESULTS.md)

Every measurement runs in a fresh child process (:func:`harness.run_child`); the median of the repeats is
reported with the child's peak RSS. Holistic Trace Analysis (``pip install holistictraceanalysis``) loads the
same files in the same run when it is installed. The other benchmark scripts (``bench_*.py``, each exposing
``run(workdir) -> list[Result]``) are imported and run after the load measurements; one that is missing or
fails gets a line saying so. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import compileall
import datetime
import importlib.metadata
import importlib.util
import os
import platform
import re
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import make_large
from harness import ROOT, Result, median, run_child, spread

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
PLUGINS = (
    "bench_nsys",
    "bench_analyses",
    "bench_tui",
    "bench_commands",
    "bench_critical_path",
    "bench_large_loads",
)
MB = 1_000_000

LOAD_TARGET_MBPS = 150.0
PEER_TARGET = 20.0
REOPEN_TARGET_S = 1.0
RSS_SLACK_MB = 200.0
#: runs of the shared epoch trace (ours, HTA's): a load of ~0.15 s, whose median moved by a quarter between full
#: runs with 5 and 3
SHORT_REPEAT, SHORT_PEER_REPEAT = 11, 5
RSS_FACTOR = 0.75  # peak memory ≤ 0.75 × the uncompressed JSON + 200 MB (shared/spec/performance.md)
#: a real trace recorded by another team with Unix-epoch timestamps (shared corpus, external/)
EXTERNAL_EPOCH = make_large.CORPUS / "external" / "negative_queue_length_values_check" / "rank0.json.gz"
EXTERNAL_EPOCH_NAME = "external epoch trace (negative_queue_length_values_check/rank0.json.gz)"

# ------------------------------------------------------------------------------------------------------
# child programs (each prints one JSON line)
# ------------------------------------------------------------------------------------------------------
#: each of our children starts as the gputop-trace command does: one BLAS thread asked for before numpy is imported
#: and no huge-page advice (gputop_trace/numpy_env.py; numpy's OpenBLAS threads otherwise spin on the cores for a
#: while after the import, and its huge-page advice can stall allocations while the kernel compacts memory)
LOAD_CODE = """
import json, resource, sys, time
from gputop_trace.numpy_env import prepare
prepare()
t0 = time.perf_counter()
from gputop_trace.load.loader import load_paths
t1 = time.perf_counter()
c1 = time.process_time()
f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
trace = load_paths([sys.argv[1]], use_cache=False)
t2 = time.perf_counter()
c2 = time.process_time()
f2 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "cpu_s": c2 - c1, "events": len(trace), "faults": f2 - f1,
                  "decompressed": trace.meta.properties.get("decompressed_size", 0)}))
"""
#: the same load with the Chrome parser imported before the timer starts, as HTA's timing leaves its own imports
#: out (ours is imported lazily, inside the load: that is what a user's process pays, and what LOAD_CODE times)
LOAD_PARSER_IMPORTED_CODE = LOAD_CODE.replace(
    "from gputop_trace.load.loader import load_paths\n",
    "from gputop_trace.load.loader import load_paths\nimport gputop_trace.parsers.chrome.loader\n",
)

CACHE_CODE = """
import json, sys, time
from gputop_trace.numpy_env import prepare
prepare()
t0 = time.perf_counter()
from gputop_trace.load import cache
from gputop_trace.load.loader import load_paths
t1 = time.perf_counter()
trace = load_paths([sys.argv[1]])
t2 = time.perf_counter()
# touch what a first screen needs: every lane's rows and the span
rows = int(trace.lane_rows.sum()); span = trace.span_ns
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "open_s": t2 - t1, "first_use_s": t3 - t2, "events": len(trace)}))
"""

BROWSE_CODE = """
import json, sys, time
from gputop_trace.numpy_env import prepare
prepare()
import numpy as np
t0 = time.perf_counter()
from gputop_trace.load.loader import load_paths
trace = load_paths([sys.argv[1]], use_cache=False)
t1 = time.perf_counter()
# browse: what the timeline and the first analyses touch - every lane's rows, a window of events per lane
# at several zoom levels, the kernels' launches and a per-name duration total
rows = trace.lane_rows
span = trace.span_ns
visited = 0
for frac in (1.0, 0.1, 0.001):
    lo, hi = int(span * 0.45), int(span * 0.45 + span * frac)
    for lane in range(len(trace.lanes)):
        sl = trace.lane_slice(lane)
        s = trace.start_ns[sl]
        a, b = np.searchsorted(s, lo), np.searchsorted(s, hi)
        visited += int(b - a)
launch = trace.launch_of
k = trace.of_kind(*__import__("gputop_trace.model.kinds", fromlist=["GPU_BUSY_KINDS"]).GPU_BUSY_KINDS)
per_name = np.bincount(trace.name[k], weights=trace.dur_ns[k], minlength=len(trace.names))
t2 = time.perf_counter()
print(json.dumps({"load_s": t1 - t0, "browse_s": t2 - t1, "events": len(trace), "visited": visited,
                  "lanes": len(trace.lanes), "kernels": int(len(k))}))
"""

HTA_CODE = """
import json, logging, sys, time
logging.disable(logging.WARNING)
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
t1 = time.perf_counter()
analysis = TraceAnalysis(trace_dir=sys.argv[1])
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "events": int(len(analysis.t.get_trace(0)))}))
"""


# ------------------------------------------------------------------------------------------------------
# measurements
# ------------------------------------------------------------------------------------------------------
class Run:
    """One invocation of the harness: settings, inputs, the results so far, a log."""

    def __init__(self, work: Path, quick: bool, repeat: int, hta_1gb: bool) -> None:
        self.work = work
        self.quick = quick
        self.repeat = repeat
        self.hta_1gb = hta_1gb
        self.results: list[Result] = []
        self.skipped: list[str] = []
        self.inputs: dict[str, Path] = {}
        self.hta = _version("holistictraceanalysis")
        self.no_cache_env = {"GPUTOP_TRACE_NO_CACHE": "1"}
        self.loadavg: list[tuple[float, float, float]] = []
        self.embedded: list[tuple[str, str]] = []  # (script, its printed output) of bench scripts without run()

    def log(self, text: str) -> None:
        print(text, flush=True)

    def add(self, r: Result) -> None:
        self.results.append(r)
        shown = "—" if r.value is None else f"{r.value:,.3g} {r.unit}"
        self.log(f"  {r.section} / {r.what}: {shown} {'' if r.met is None else ('ok' if r.met else 'MISSED')}")


def _uncompressed(path: Path) -> int:
    if path.suffix == ".gz":
        plain = path.with_suffix("")
        if plain.exists():
            return plain.stat().st_size
        import gzip

        with gzip.open(path, "rb") as f:
            n = 0
            while piece := f.read(1 << 24):
                n += len(piece)
        return n
    return path.stat().st_size


def measure_load(run: Run, name: str, repeat: int, *, peer_repeat: int = 0, split_import: bool = False) -> None:
    """Kineto JSON → model ready for the timeline: MB/s of uncompressed JSON and peak RSS; with ``peer_repeat``,
    HTA loads the same file in between (runs interleaved, so both see the same machine); with ``split_import``, the
    load is also timed with the Chrome parser imported before the timer, interleaved too."""
    path = run.inputs[name]
    size = _uncompressed(path)
    load_before = os.getloadavg()[0]
    runs, peer, imported = [], [], []
    for i in range(repeat):
        runs.append(run_child(LOAD_CODE, args=[str(path)], env=run.no_cache_env))
        if split_import:
            imported.append(run_child(LOAD_PARSER_IMPORTED_CODE, args=[str(path)], env=run.no_cache_env))
        if i < peer_repeat:
            got = run_hta(run, name)
            if got is None:
                break
            peer.append(got)
    secs = [r.output["load_s"] for r in runs]
    cpus = [r.output["cpu_s"] for r in runs]
    rss = max(r.peak_rss_mb for r in runs)
    mbps, mbps_cpu = size / MB / median(secs), size / MB / median(cpus)
    bound = RSS_FACTOR * size / MB + RSS_SLACK_MB
    events = runs[0].output["events"]
    load_text = f"machine load (1-min average) {load_before:.2f} before, {os.getloadavg()[0]:.2f} after"
    run.add(
        Result(
            "Kineto load (one process)",
            name,
            mbps,
            "MB/s",
            f"≥ {LOAD_TARGET_MBPS:.0f} MB/s",
            mbps >= LOAD_TARGET_MBPS,
            f"{median(secs):.2f} s wall median ({spread(secs)}); by CPU time {mbps_cpu:.0f} MB/s "
            f"({median(cpus):.2f} s, both threads); {events:,} events; {size / MB:,.0f} MB uncompressed; "
            f"{median([r.output['faults'] for r in runs]):,.0f} page faults during the load "
            f"({median([r.output['faults'] for r in runs]) * 4 / 1024:,.0f} MiB first touched); {load_text}",
            {"seconds": median(secs), "events": events, "size_mb": size / MB},
        )
    )
    run.add(
        Result(
            "Peak memory while loading",
            name,
            rss,
            "MB",
            f"≤ {bound:,.0f} MB ({RSS_FACTOR} × {size / MB:,.0f} MB + 200 MB)",
            rss <= bound,
            f"{rss / (size / MB):.2f} × the uncompressed JSON; whole process (Python, numpy, the model), "
            f"peak of {len(runs)} runs",
        )
    )
    if peer_repeat:
        pre = median([r.output["load_s"] for r in imported]) if imported else None
        add_peer(run, name, median(secs), rss, peer, load_text, median([r.wall_s for r in runs]), pre)


def compile_our_bytecode() -> int:
    """Write the ``.pyc`` files of our package folders, as ``pip install`` does for an installed package (HTA's
    among them): an editable checkout run with ``PYTHONDONTWRITEBYTECODE=1`` (as here and in CI) would otherwise
    compile every module from source in each child, inside the timed load (the Chrome parser is imported
    lazily). Returns the number of folders compiled."""
    folders = [ROOT / name for name in ("gputop_trace", "parsers", "analysis", "tui")]
    for folder in folders:
        compileall.compile_dir(str(folder), quiet=1)
    return len(folders)


def run_hta(run: Run, name: str) -> dict[str, Any] | str | None:
    """One HTA load of an input (a folder holding only it, as HTA wants); an error text when HTA fails."""
    if run.hta is None:
        return None
    folder = run.work / ("hta_" + "".join(c if c.isalnum() else "_" for c in name))
    folder.mkdir(exist_ok=True)
    link = folder / ("rank0.json.gz" if run.inputs[name].name.endswith(".gz") else "rank0.json")
    if not link.exists():
        link.symlink_to(run.inputs[name])
    try:
        r = run_child(HTA_CODE, args=[str(folder)], timeout=3600)
    except RuntimeError as e:
        last = [line.strip() for line in str(e).splitlines() if line.strip()]
        return f"HTA failed: {last[-1] if last else e}"
    return {"load_s": r.output["load_s"], "rss": r.peak_rss_mb, "events": r.output["events"], "wall_s": r.wall_s}


def add_peer(
    run: Run,
    name: str,
    ours_s: float,
    ours_rss: float,
    peer: list[Any],
    load_text: str = "",
    ours_wall: float = 0.0,
    ours_imported_s: float | None = None,
) -> None:
    """The HTA row: its load time over ours, measured in the same run (the whole child processes too: Python's
    start-up and each side's imports, which the load times leave out, HTA's pandas among them)."""
    target = f"≥ {PEER_TARGET:.0f}×"
    if run.hta is None:
        run.add(Result("Peer (HTA)", name, None, "×", target, None, "holistictraceanalysis is not installed"))
        return
    failed = [p for p in peer if isinstance(p, str)]
    ok = [p for p in peer if isinstance(p, dict)]
    if not ok:
        run.add(Result("Peer (HTA)", name, None, "×", target, None, failed[0] if failed else "not run"))
        return
    secs = [p["load_s"] for p in ok]
    walls = [p["wall_s"] for p in ok]
    ratio = median(secs) / ours_s
    run.add(
        Result(
            "Peer (HTA)",
            name,
            ratio,
            "×",
            target,
            ratio >= PEER_TARGET,
            f"HTA `TraceAnalysis(trace_dir=...)` {median(secs):.1f} s ({spread(secs)}), peak RSS "
            f"{max(p['rss'] for p in ok):,.0f} MB (its main process: it parses in a pool worker, not counted); "
            f"gputop-trace {ours_s:.2f} s, peak RSS {ours_rss:,.0f} MB "
            f"(runs interleaved); whole processes (start-up, imports, load): HTA {median(walls):.1f} s, ours "
            f"{ours_wall:.2f} s ({median(walls) / ours_wall:.1f}×); "
            + (
                f"ours with the Chrome parser imported before the timer, as HTA's imports are: {ours_imported_s:.2f} s "
                f"({median(secs) / ours_imported_s:.1f}×); "
                if ours_imported_s
                else ""
            )
            + f"HTA kept {ok[0]['events']:,} rows; {load_text}",
            {"hta_s": median(secs)},
        )
    )


def measure_cache(run: Run, name: str, repeat: int) -> None:
    """First open (parse + write the cache) and reopen from the cache, in fresh processes."""
    import shutil

    cache_dir = run.work / "cache"
    shutil.rmtree(cache_dir, ignore_errors=True)
    env = {"GPUTOP_TRACE_CACHE_DIR": str(cache_dir), "GPUTOP_TRACE_CACHE_MIN": "0", "GPUTOP_TRACE_NO_CACHE": ""}
    path = str(run.inputs[name])
    first = run_child(CACHE_CODE, args=[path], env=env)
    runs = [run_child(CACHE_CODE, args=[path], env=env) for _ in range(repeat)]
    secs = [r.output["open_s"] for r in runs]
    walls = [r.wall_s for r in runs]
    size = sum(f.stat().st_size for f in cache_dir.rglob("*") if f.is_file())
    run.add(
        Result(
            "Reopen from the cache",
            name,
            median(secs),
            "s",
            f"≤ {REOPEN_TARGET_S:.0f} s (1 GB original)",
            median(secs) <= REOPEN_TARGET_S,
            f"{spread(secs)}; whole process incl. Python start-up and imports {median(walls):.2f} s; "
            f"peak RSS {max(r.peak_rss_mb for r in runs):,.0f} MB; first open (parse + write) "
            f"{first.output['open_s']:.2f} s; cache entry {size / MB:,.0f} MB",
        )
    )


def measure_browse(run: Run, name: str) -> None:
    """The largest trace opens and is browsed (lanes, rows, windows at three zooms, launches, totals)."""
    r = run_child(BROWSE_CODE, args=[str(run.inputs[name])], env=run.no_cache_env)
    o = r.output
    total_gb = _total_ram_gb()
    run.add(
        Result(
            "Largest trace",
            f"{name} opens and browses",
            r.peak_rss_mb,
            "MB peak RSS",
            f"fits in {total_gb:.0f} GB",
            r.peak_rss_mb < total_gb * 1024,
            f"load {o['load_s']:.1f} s, browse {o['browse_s']:.2f} s; {o['events']:,} events, {o['lanes']} lanes, "
            f"{o['kernels']:,} GPU ops",
        )
    )


#: arguments for a bench script that has no ``run(workdir)`` and is run as a program (its printed output is
#: embedded in the report); chosen to match the spec's sizes
PLUGIN_ARGS: dict[str, list[str]] = {
    "bench_nsys": ["--rows", "10000000", "--runs", "3"],
    "bench_analyses": ["--events", "10M", "--repeat", "3"],
    "bench_tui": ["--events", "1000000", "10000000", "--source", str(make_large.KINETO_SOURCE)],
}


def run_plugins(run: Run, names: tuple[str, ...] = PLUGINS) -> None:
    for mod_name in names:
        path = HERE / f"{mod_name}.py"
        if not path.exists():
            run.skipped.append(f"`benchmarks/{mod_name}.py` is not there yet: its measurements are missing.")
            run.log(f"skipped {mod_name}: not there yet")
            continue
        run.log(f"running {mod_name}")
        try:
            spec = importlib.util.spec_from_file_location(mod_name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[mod_name] = module
            spec.loader.exec_module(module)
            fn: Callable[[Path], list[Result]] | None = getattr(module, "run", None)
            if fn is not None:
                for r in fn(run.work):
                    run.add(r)
            else:
                run.embedded.append((mod_name, _run_script(path, PLUGIN_ARGS.get(mod_name, []))))
        except Exception as e:
            run.skipped.append(f"`benchmarks/{mod_name}.py` failed: {type(e).__name__}: {e}")
            run.log(traceback.format_exc())


def _run_script(path: Path, args: list[str]) -> str:
    """Run a bench script that has no ``run()`` as a program; its standard output (retried without the
    arguments when it does not take them)."""
    for argv in ([*args], []) if args else ([],):
        proc = subprocess.run(
            [sys.executable, str(path), *argv],
            check=False,
            capture_output=True,
            text=True,
            cwd=str(ROOT),
            timeout=3600,
            env={**os.environ, "GPUTOP_CORPUS": str(make_large.CORPUS)},
        )
        if proc.returncode == 0:
            out = proc.stdout.strip("\n")
            if not out.lstrip().startswith(("#", "|")):  # plain text: keep its columns
                out = f"```\n{out}\n```"
            return f"`python benchmarks/{path.name} {' '.join(argv)}`\n\n{out}"
        if proc.returncode != 2:  # 2: argparse rejected the arguments
            break
    raise RuntimeError(f"exit {proc.returncode}: {proc.stderr.strip()[-1500:]}")


# ------------------------------------------------------------------------------------------------------
# the report
# ------------------------------------------------------------------------------------------------------
def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _total_ram_gb() -> float:
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
        return kb / 1024 / 1024
    except (OSError, ValueError, IndexError):
        return 0.0


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _commit() -> str:
    try:
        argv = ["git", "-C", str(ROOT), "describe", "--always", "--dirty"]
        out = subprocess.run(argv, check=False, capture_output=True, text=True)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def _fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "—"
    if unit in ("MB", "MB peak RSS"):
        return f"{v:,.0f} {unit}"
    if abs(v) >= 100:
        return f"{v:,.0f} {unit}"
    return f"{v:.3g} {unit}"


def _miss_text(r: Result) -> str:
    extra = r.extra
    if r.unit == "MB/s" and r.value:
        need = LOAD_TARGET_MBPS / r.value
        return f"{r.value:.0f} MB/s is {100 * (1 - r.value / LOAD_TARGET_MBPS):.0f}% short ({need:.2f}× needed)"
    if r.unit == "×" and r.value:
        t = _TARGET_CELL.match(r.target)
        target = float(t.group(2).replace(",", "")) if t else PEER_TARGET  # the row's own target (cores: 3×)
        return f"{r.value:.2f}× is {100 * (1 - r.value / target):.0f}% short of {target:g}×"
    return f"{_fmt(r.value, r.unit)} against {r.target}" + (f" ({extra})" if extra else "")


_TARGET_CELL = re.compile(r"^(≥|≤)\s*([0-9][0-9.,]*)\s*(.*)$")
_VALUE_CELL = re.compile(r"^([0-9][0-9.,]*)\s*(.*)$")
_TEXT_TARGET = re.compile(r"([0-9][0-9.,]*) (\w+) wall[^(]*\(target (≥|≤) ([0-9][0-9.,]*) (\w+)\)")


def embedded_misses(name: str, text: str) -> list[str]:
    """The targets an embedded report missed, read off its own words: table rows whose last cell is a target
    (``≥ 1 M rows/s``) and whose second cell is the value in the same unit, and ``X s wall ... (target ≤ Y s)``."""
    found: list[tuple[str, float, str, str, float]] = []  # (what, value, unit, sign, target)
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.lstrip().startswith("|") else []
        if len(cells) >= 3:
            t, v = _TARGET_CELL.match(cells[-1]), _VALUE_CELL.match(cells[1])
            if t and v and v.group(2) == t.group(3):
                found.append(
                    (
                        cells[0],
                        float(v.group(1).replace(",", "")),
                        v.group(2),
                        t.group(1),
                        float(t.group(2).replace(",", "")),
                    )
                )
        for m in _TEXT_TARGET.finditer(line):
            if m.group(2) == m.group(5):
                found.append(
                    (
                        "total",
                        float(m.group(1).replace(",", "")),
                        m.group(2),
                        m.group(3),
                        float(m.group(4).replace(",", "")),
                    )
                )
    out = []
    for what, value, unit, sign, target in found:
        if (sign == "≥" and value < target) or (sign == "≤" and value > target):
            how = (
                f"{100 * (1 - value / target):.0f}% short of"
                if sign == "≥"
                else f"{100 * (value / target - 1):.0f}% over"
            )
            out.append(f"From `{name}.py` / {what}: {value:g} {unit} is {how} {sign} {target:g} {unit}")
    return out


def write_report(run: Run, notes: str) -> str:
    import msgspec
    import numpy

    lines = [
        "# Benchmark results",
        "",
        f"Full run of `python benchmarks/run.py {' '.join(sys.argv[1:])}` on {datetime.date.today().isoformat()}. "
        "Every number is",
        "the median of fresh child processes; peak RSS is the child's own high-water mark (`VmHWM`), whole process.",
        "",
        "| | |",
        "|---|---|",
        f"| machine | {_cpu()}, {os.cpu_count()} cores, {_total_ram_gb():.0f} GB RAM, {platform.system()} "
        f"{platform.release()} |",
        f"| Python | {platform.python_version()} |",
        f"| gputop-trace | {_version('gputop-trace')} (commit {_commit()}) |",
        f"| numpy / msgspec / isal | {numpy.__version__} / {msgspec.__version__} / {_version('isal') or 'absent'} |",
        f"| peer | holistictraceanalysis {run.hta or 'not installed'} |",
        f"| inputs | `benchmarks/make_large.py` → `{run.work}` (repeats of the corpus GPT trace along time) |",
        f"| machine load | 1-minute load average {', '.join(f'{a[0]:.2f}' for a in run.loadavg)} (start, end of the"
        f" load measurements): the {os.cpu_count()} cores may be shared with other work, so wall times carry its"
        " noise |",
        "",
    ]
    sections: dict[str, list[Result]] = {}
    for r in run.results:
        sections.setdefault(r.section, []).append(r)
    for section, rows in sections.items():
        lines += [f"## {section}", "", "| what | value | target | met | detail |", "|---|---|---|---|---|"]
        for r in rows:
            met = "—" if r.met is None else ("yes" if r.met else "**no**")
            lines.append(f"| {r.what} | {_fmt(r.value, r.unit)} | {r.target} | {met} | {r.detail} |")
        lines.append("")
    for name, text in run.embedded:
        lines += [f"## From `{name}.py` (its own report)", "", text.replace("\n## ", "\n### "), ""]
    missed = [f"{r.section} / {r.what}: {_miss_text(r)}" for r in run.results if r.met is False]
    missed += [m for name, text in run.embedded for m in embedded_misses(name, text)]
    lines += ["## Targets missed", ""]
    lines += [f"- {m}." for m in missed] or ["- none"]
    lines.append("")
    if run.skipped:
        lines += ["## Not measured", ""] + [f"- {s}" for s in run.skipped] + [""]
    lines += [
        "## Notes",
        "",
        "Every figure above comes from this one command, run in a checkout with no uncommitted change at the commit in",
        "the table, our children and HTA's interleaved, the machine's 1-minute load average beside each row. Before it",
        "measures, the harness compiles our modules' bytecode, as `pip install` does for an installed package (HTA's",
        "among them). Development measurements (profiles, base-against-new pairs of single functions, the 16-core",
        "device) are not figures of this harness: they are in `benchmarks/NOTES.md` and `benchmarks/RESULTS-device.md`",
        "(the latter from `run.py --only-plugin bench_large_loads` on that machine).",
        "",
    ]
    if notes:  # a note given for this run alone
        lines += [notes.strip(), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=make_large.DEFAULT_OUT, help="folder for generated inputs")
    ap.add_argument("--quick", action="store_true", help="100 MB inputs only, 2 repeats; prints, does not write")
    ap.add_argument("--repeat", type=int, default=5, help="repeats of each 100 MB measurement (default 5)")
    ap.add_argument("--hta-1gb", action="store_true", help="also time HTA on the 1 GB file (minutes, ~10 GB RAM)")
    ap.add_argument("--no-plugins", action="store_true", help="skip the bench_*.py scripts")
    ap.add_argument("--no-1gb", action="store_true", help="skip the 1 GB inputs (load, cache, browse)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="where to write the report")
    ap.add_argument(
        "--only-plugin",
        action="append",
        choices=PLUGINS,
        help="run only this plug-in (repeatable), none of the load measurements: e.g. bench_large_loads on a "
        "16-core machine, written with --out to a report of its own",
    )
    args = ap.parse_args(argv)
    run = Run(args.work, args.quick, 2 if args.quick else args.repeat, args.hta_1gb)
    if args.only_plugin:
        compile_our_bytecode()
        run.loadavg.append(os.getloadavg())
        run_plugins(run, tuple(args.only_plugin))
        run.loadavg.append(os.getloadavg())
        args.out.write_text(write_report(run, ""))
        run.log(f"wrote {args.out}")
        return 0
    small = ["kineto_100mb.json", "kineto_100mb.json.gz", "kineto_epoch_100mb.json"]
    only = small if args.quick or (args.no_1gb and args.no_plugins) else None
    run.log(f"inputs in {run.work}")
    run.inputs = make_large.ensure(run.work, only, log=run.log)
    if EXTERNAL_EPOCH.exists():
        run.inputs[EXTERNAL_EPOCH_NAME] = EXTERNAL_EPOCH
    else:
        run.skipped.append(f"the shared external epoch trace is not at {EXTERNAL_EPOCH}")
    compiled = compile_our_bytecode()
    run.log(f"bytecode of {compiled} packages compiled (as an installed package has it, and HTA has)")
    run.loadavg.append(os.getloadavg())
    peers = 1 if args.quick else 3
    measure_load(run, "kineto_100mb.json", run.repeat, peer_repeat=peers)
    measure_load(run, "kineto_epoch_100mb.json", run.repeat, peer_repeat=peers)
    if EXTERNAL_EPOCH_NAME in run.inputs:  # a short load: more runs, its median moves most with the host's load
        short = (run.repeat, peers) if args.quick else (max(run.repeat, SHORT_REPEAT), max(peers, SHORT_PEER_REPEAT))
        measure_load(run, EXTERNAL_EPOCH_NAME, short[0], peer_repeat=short[1], split_import=True)
    measure_load(run, "kineto_100mb.json.gz", run.repeat)
    if not args.quick and not args.no_1gb:
        measure_load(run, "kineto_1gb.json", 3, peer_repeat=1 if args.hta_1gb else 0)
        measure_load(run, "kineto_1gb.json.gz", 2)
        measure_cache(run, "kineto_1gb.json", 5)
        measure_browse(run, "kineto_1gb.json")
    else:
        measure_cache(run, "kineto_100mb.json", 2)
    run.loadavg.append(os.getloadavg())
    if not args.no_plugins:
        run_plugins(run)
    report = write_report(run, "")
    if args.quick:
        print(report)
    else:
        args.out.write_text(report)
        run.log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
