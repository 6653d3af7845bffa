"""Whole commands as a user times them (issue 29): ``gputop-trace summary --json --no-cache TRACE`` and
``gputop-trace view TRACE`` (process start → first full screen), each a fresh process with Python's start-up and
every import, against Holistic Trace Analysis' whole process (``TraceAnalysis(trace_dir=...)`` with its imports),
runs interleaved on the same files in one run, the machine's load beside; and where the summary's time goes.

    python benchmarks/bench_commands.py [--work DIR] [--quick]

Inputs: the shared corpus' ``external/negative_queue_length_values_check/rank0.json.gz`` (26 MB of JSON recorded
by another team, Unix-epoch timestamps; the only external trace of 20-60 MB) and ``kineto_180mb.json`` from
``make_large.py`` (the corpus GPT trace repeated along time to ~180 MB).

- **Whole process**: wall time from the parent (what a user waits for) and the child's CPU time (user + sys from
  ``os.wait4``, its pool workers included: the 2 cores here are shared, CPU time carries less of the others' noise).
  The ratio is HTA's median wall over ours.
- **View, first full screen**: ``gputop-trace view TRACE`` in a 160×48 pseudo-terminal, without the cache
  (``GPUTOP_TRACE_NO_CACHE=1``), from process start until the status bar is drawn (``bench_tui.first_screen_seconds``).
- **Imports**: ``python -X importtime`` of the summary, the sum of the top-level imports (target ≤ 150 ms), the
  least disturbed of the runs, with the modules that cost most on their own.
- **Floors** (small trace only): what any command on Python, numpy (and Textual, for ``view``) pays before
  parsing a byte, each measured alone (fresh ``python -c pass``, ``-c 'import numpy'``, ``-c 'import numpy,
  textual.app'``; inflating the gzip file in one process), against the budget that 20× HTA leaves on that file.
- **Phase split**: a child that runs the summary the way ``gputop-trace summary --json`` does, with a timer
  between phases: interpreter start (process spawn → first line of the program), imports (every module the
  command imports, measured by importing the list a real run ends with), load, each analysis (the findings'
  detectors one by one), the document, the JSON text and its writing. Medians of the runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import make_large
from harness import PEAK_RSS_PROLOGUE, PEAK_TAG, ROOT, Result, median, spread

SECTION_PEER = "Whole command vs HTA (whole processes)"
SECTION_SPLIT = "Where `summary --json --no-cache` spends its time (one process, by phase)"
PEER_TARGET = 20.0
RSS_FACTOR, RSS_SLACK_MB = 0.75, 200.0  # peak memory ≤ 0.75 × the uncompressed JSON + 200 MB
MB = 1_000_000
EXTERNAL = make_large.CORPUS / "external" / "negative_queue_length_values_check" / "rank0.json.gz"
EXTERNAL_NAME = "external epoch trace (negative_queue_length_values_check/rank0.json.gz)"
LARGE = "kineto_180mb.json"

#: ``gputop-trace summary --json --no-cache PATH`` as the console script runs it, its JSON written to /dev/null
SUMMARY_CODE = """
import os, sys
from gputop_trace.cli.main import main
out = open(os.devnull, "w")
sys.stdout, real = out, sys.stdout
code = main(["summary", "--json", "--no-cache", sys.argv[1]])
sys.stdout = real
print('{"code": %d}' % code)
from gputop_trace.cli.process_end import end_process
end_process(code)  # as the console script ends (gputop_trace.cli.main.entry)
"""

#: HTA's whole process: its imports and ``TraceAnalysis(trace_dir=...)`` on a folder holding only the trace
HTA_CODE = """
import logging, sys
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
analysis = TraceAnalysis(trace_dir=sys.argv[1])
print('{"events": %d}' % len(analysis.t.get_trace(0)))
"""

#: the modules a real ``summary --json`` run has imported when it ends (the phase split imports exactly these)
MODULES_CODE = """
import json, os, sys
from gputop_trace.cli.main import main
sys.stdout, real = open(os.devnull, "w"), sys.stdout
main(["summary", "--json", "--no-cache", sys.argv[1]])
sys.stdout = real
print(json.dumps({"modules": sorted(m for m in sys.modules if not m.startswith("_"))}))
"""

#: the summary in phases; ``argv``: trace, spawn time (time.time() in the parent), file with the module list
PHASES_CODE = """
import time
t_main = time.time()
import importlib, json, os, sys
p, c = time.perf_counter(), time.process_time()
phases = {"interpreter start": t_main - float(sys.argv[2])}
cpu = {"interpreter start": c}  # the CPU time the process had used when its program started
def lap(name):
    global p, c
    now, now_c = time.perf_counter(), time.process_time()
    phases[name] = phases.get(name, 0.0) + now - p
    cpu[name] = cpu.get(name, 0.0) + now_c - c
    p, c = now, now_c
from gputop_trace.numpy_env import prepare
prepare()
for m in json.load(open(sys.argv[3])):
    try:
        importlib.import_module(m)
    except Exception:
        pass
from gputop_trace.cli import common
from gputop_trace.cli.main import build_parser
lap("imports")
args = build_parser("summary").parse_args(["summary", "--json", "--no-cache", sys.argv[1]])
lap("command line")
trace = common.load(args)
lap("load")
# the analyses of report.summary.analyse, one by one; the findings' detectors timed inside find_findings
from gputop_trace.analysis.findings import assemble as F
from gputop_trace.analysis.gaps.detect import DEFAULT_THRESHOLD_NS, find_gaps
from gputop_trace.analysis.ranges import range_summary
from gputop_trace.analysis.transfers import transfer_overlap
from gputop_trace.report import summary as S
inner = {}
def timed(label, fn):
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            inner[label] = inner.get(label, 0.0) + time.perf_counter() - t
    return wrapper
for name in dir(F):
    obj = getattr(F, name)
    detector = name.endswith(("_findings", "_finding")) and name != "find_findings"
    detector = detector or name in ("launch_behaviour", "compiled_program", "profile_caveat")
    if detector and callable(obj) and getattr(obj, "__module__", "").startswith("gputop_trace.analysis."):
        setattr(F, name, timed("findings: " + name, obj))
thr = DEFAULT_THRESHOLD_NS
gaps = find_gaps(trace, thr)
lap("analysis: gaps")
transfers = transfer_overlap(trace)
lap("analysis: transfers")
findings = F.find_findings(trace, gap_threshold_ns=thr, gaps=gaps, transfers=transfers)
lap("analysis: findings (all)")
ranges = range_summary(trace)
lap("analysis: ranges")
a = S.Analyses(gaps, transfers, findings, ranges, thr)
doc = S.summary_document(trace, args.paths, a)
lap("document (busy, top kernels, steps, memory, JSON objects)")
from gputop_trace.report.envelope import dumps
text = dumps(doc) + "\\n"
lap("JSON text")
with open(os.devnull, "w") as f:
    f.write(text)
lap("write")
print(json.dumps({"phases": phases, "cpu": cpu, "inner": inner, "events": len(trace), "bytes": len(text)}))
"""


def _spawn(code: str, args: list[str], env: dict[str, str] | None = None, timeout: float = 3600) -> dict[str, Any]:
    """One fresh ``python -c code args``: wall (s, from the parent), CPU (user + sys of the child and the children
    it waited for, s), peak RSS (MB, the child's own ``VmHWM``) and its last JSON line."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", PEAK_RSS_PROLOGUE + code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
        cwd=str(ROOT),
        text=True,
    )
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - t0 > timeout:
            proc.kill()
            raise RuntimeError(f"child ran longer than {timeout:.0f} s")
        time.sleep(0.002)
    wall = time.perf_counter() - t0
    out, err = proc.communicate()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"child failed: {err.strip()[-1500:]}")
    peak, output = usage.ru_maxrss / 1024, {}
    for line in out.splitlines():
        if line.startswith(PEAK_TAG):
            peak = float(line[len(PEAK_TAG) :])
        elif line.startswith("{"):
            output = json.loads(line)
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": peak, "out": output}


def _hta_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("hta") is not None


def _hta_folder(work: Path, name: str, path: Path) -> Path:
    folder = work / ("hta_cmd_" + "".join(c if c.isalnum() else "_" for c in name))
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / ("rank0.json.gz" if path.name.endswith(".gz") else "rank0.json")
    if not link.exists():
        link.symlink_to(path)
    return folder


def _uncompressed(path: Path) -> int:
    if path.suffix != ".gz":
        return path.stat().st_size
    import gzip

    n = 0
    with gzip.open(path, "rb") as f:
        while piece := f.read(1 << 24):
            n += len(piece)
    return n


def _load_text(before: float) -> str:
    return f"machine load (1-min average) {before:.2f} before, {os.getloadavg()[0]:.2f} after"


def measure(work: Path, name: str, path: Path, ours_n: int, hta_n: int, view_n: int) -> list[Result]:
    """Ours (summary, view) and HTA's whole processes on one file, interleaved."""
    from bench_tui import first_screen_seconds

    size = _uncompressed(path)
    hta = _hta_installed()
    folder = _hta_folder(work, name, path) if hta else None
    before = os.getloadavg()[0]
    ours, peer, view = [], [], []
    no_cache = {"GPUTOP_TRACE_NO_CACHE": "1"}
    for i in range(max(ours_n, hta_n, view_n)):
        if i < ours_n:
            ours.append(_spawn(SUMMARY_CODE, [str(path)], no_cache))
        if i < view_n:
            view += first_screen_seconds(1, (str(path),), no_cache, timeout=120)
        if folder is not None and i < hta_n:
            peer.append(_spawn(HTA_CODE, [str(folder)]))
    load = _load_text(before)
    walls, cpus = [r["wall"] for r in ours], [r["cpu"] for r in ours]
    rss = max(r["rss"] for r in ours)
    out: list[Result] = []
    what = f"{name}, {size / MB:,.0f} MB"
    hta_text = "holistictraceanalysis is not installed"
    ratio = view_ratio = None
    if peer:
        hw, hc = [r["wall"] for r in peer], [r["cpu"] for r in peer]
        ratio = median(hw) / median(walls)
        view_ratio = median(hw) / median(view) if view else None
        hta_text = (
            f"HTA whole process {median(hw):.2f} s wall ({spread(hw)}), {median(hc):.2f} s CPU, peak RSS "
            f"{max(r['rss'] for r in peer):,.0f} MB (its main process)"
        )
    ours_text = f"ours {median(walls):.3f} s wall ({spread(walls)}), {median(cpus):.3f} s CPU"
    if peer:
        by_cpu = median([r["cpu"] for r in peer]) / median(cpus)
        ours_text += f" (HTA over ours by CPU time: {by_cpu:.1f}×)"
    out.append(
        Result(
            SECTION_PEER,
            f"`summary --json --no-cache`: {what}",
            ratio,
            "×",
            f"≥ {PEER_TARGET:.0f}×",
            None if ratio is None else ratio >= PEER_TARGET,
            f"{ours_text}; {hta_text}; runs interleaved; {load}",
            extra={"hta_wall": median([r["wall"] for r in peer])} if peer else {},
        )
    )
    out.append(
        Result(
            SECTION_PEER,
            f"`view`, first full screen: {what}",
            view_ratio,
            "×",
            f"≥ {PEER_TARGET:.0f}×",
            None if view_ratio is None else view_ratio >= PEER_TARGET,
            (
                f"ours {median(view):.2f} s from process start to the status bar ({spread(view)}; 160×48 "
                f"pseudo-terminal, no cache); {hta_text}; {load}"
            )
            if view
            else "the status bar never appeared",
        )
    )
    bound = RSS_FACTOR * size / MB + RSS_SLACK_MB
    out.append(
        Result(
            "Peak memory of a whole command",
            f"`summary --json --no-cache`: {what}",
            rss,
            "MB",
            f"≤ {bound:,.0f} MB ({RSS_FACTOR} × {size / MB:,.0f} MB + 200 MB)",
            rss <= bound,
            f"whole process (Python, numpy, the model, the analyses, the JSON), peak of {len(ours)} runs",
        )
    )
    return out


def phase_split(name: str, path: Path, runs: int) -> list[Result]:
    """The summary's phases in one process (medians of ``runs`` fresh processes), with their shares."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        modules = _spawn(MODULES_CODE, [str(path)], {"GPUTOP_TRACE_NO_CACHE": "1"})["out"]["modules"]
        json.dump(modules, f)
    before = os.getloadavg()[0]
    got = []
    try:
        for _ in range(runs):
            spawn_at = time.time()
            r = _spawn(PHASES_CODE, [str(path), repr(spawn_at), f.name], {"GPUTOP_TRACE_NO_CACHE": "1"})
            r["out"]["wall"] = r["wall"]
            got.append(r["out"])
    finally:
        os.unlink(f.name)
    names = list(got[0]["phases"])
    med = {n: median([g["phases"][n] for g in got]) for n in names}
    inner_names = sorted(
        {n for g in got for n in g["inner"]}, key=lambda n: -median([g["inner"].get(n, 0.0) for g in got])
    )
    total = sum(med.values())
    wall = median([g["wall"] for g in got])
    load = _load_text(before)
    rows = [
        Result(
            SECTION_SPLIT,
            f"{name}: {phase}",
            med[phase] * 1e3,
            "ms",
            detail=f"{100 * med[phase] / total:.0f}% of the phases' {total * 1e3:,.0f} ms; CPU time "
            f"{median([g['cpu'][phase] for g in got]) * 1e3:,.1f} ms",
        )
        for phase in names
    ]
    for n in inner_names:
        v = median([g["inner"].get(n, 0.0) for g in got])
        if v >= 0.0005:
            rows.append(Result(SECTION_SPLIT, f"{name}: — inside the findings, {n[10:]}", v * 1e3, "ms"))
    rows.append(
        Result(
            SECTION_SPLIT,
            f"{name}: whole process",
            wall * 1e3,
            "ms",
            detail=f"wall from the parent, {runs} runs; {got[0]['events']:,} events, {got[0]['bytes'] / MB:.2f} MB of "
            f"JSON; {len(modules)} modules imported; {load}",
        )
    )
    return rows


SECTION_FLOOR = "What 20× of HTA leaves for a small trace (floors)"

#: inflate a whole gzip file in 1 MiB pieces, as the loader streams it, with the library it uses (ISA-L where the
#: ``isal`` package is installed, else zlib); prints the library and the seconds
INFLATE_CODE = """
import sys, time
try:
    import isal.isal_zlib as z
    lib = "ISA-L"
except ImportError:
    import zlib as z
    lib = "zlib"
data = open(sys.argv[1], "rb").read()
best = None
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    d = z.decompressobj(31)
    n = sum(len(d.decompress(data[i : i + (1 << 20)])) for i in range(0, len(data), 1 << 20))
    dt = time.perf_counter() - t
    best = dt if best is None else min(best, dt)
print(lib, best, n)
"""


def _process_seconds(code: str, runs: int) -> list[float]:
    """Wall seconds of ``runs`` fresh ``python -c code`` processes (from the parent, as a user times them)."""
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, cwd=str(ROOT))
        out.append(time.perf_counter() - t0)
    return out


def floors(path: Path, hta_wall: float | None, runs: int) -> list[Result]:
    """What no command built on Python, numpy and Textual can go below on ``path``: the interpreter's start, numpy's
    import (and Textual's, for ``view``) and inflating the file, each measured alone, against the budget that 20×
    HTA's whole process leaves (``hta_wall``: its median, s; None without HTA)."""
    before = os.getloadavg()[0]
    start = _process_seconds("pass", runs)
    numpy = _process_seconds("import numpy", runs)
    textual = _process_seconds("import numpy, textual.app", runs)
    lib, inflate, size = subprocess.run(
        [sys.executable, "-c", INFLATE_CODE, str(path), str(runs)], check=True, capture_output=True, text=True
    ).stdout.split()
    load = _load_text(before)
    summary_floor = median(numpy) + float(inflate)
    view_floor = median(textual) + float(inflate)
    rows = [
        Result(SECTION_FLOOR, "Python's start-up (`python -c pass`)", median(start) * 1e3, "ms", detail=spread(start)),
        Result(
            SECTION_FLOOR,
            "Python and numpy (`python -c 'import numpy'`)",
            median(numpy) * 1e3,
            "ms",
            detail=spread(numpy),
        ),
        Result(
            SECTION_FLOOR,
            "Python, numpy and Textual's app (`import numpy, textual.app`)",
            median(textual) * 1e3,
            "ms",
            detail=spread(textual),
        ),
        Result(
            SECTION_FLOOR,
            f"inflating {path.name} alone ({lib}, in 1 MiB pieces, in one process)",
            float(inflate) * 1e3,
            "ms",
            detail=f"least of {runs} runs; {int(size) / MB:.1f} MB of JSON; {load}",
        ),
    ]
    if hta_wall is not None:
        budget = hta_wall / PEER_TARGET
        for what, floor in (
            ("`summary`: Python + numpy + inflating", summary_floor),
            ("`view`: Python + numpy + Textual + inflating", view_floor),
        ):
            rows.append(
                Result(
                    SECTION_FLOOR,
                    f"floor of {what}",
                    floor * 1e3,
                    "ms",
                    f"budget {budget * 1e3:.0f} ms (HTA's {hta_wall:.2f} s / {PEER_TARGET:.0f})",
                    None,
                    f"{floor / budget:.2f} × the budget before a byte is parsed or analysed"
                    if floor > budget
                    else f"{(budget - floor) * 1e3:.0f} ms left for parsing, analyses and output",
                )
            )
    return rows


SECTION_IMPORTS = "Start-up of `summary --json` (imports)"
IMPORT_TARGET_MS = 150.0
_IMPORT_LINE = re.compile(r"import time:\s+(-?\d+) \|\s+(\d+) \|( +)(\S+)")


def import_time(path: Path, runs: int) -> list[Result]:
    """``python -X importtime -m gputop_trace summary --json --no-cache PATH``: the sum of the top-level imports'
    cumulative times (everything the command imported, Python's own start-up modules included), the least
    disturbed of ``runs`` fresh processes, and the modules that cost the most on their own."""
    before = os.getloadavg()[0]
    totals: list[float] = []
    own: dict[str, list[float]] = {}
    for _ in range(runs):
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "gputop_trace", "summary", "--json", "--no-cache", str(path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=str(ROOT),
            env={**os.environ, "GPUTOP_TRACE_NO_CACHE": "1"},
            check=True,
        )
        total = 0.0
        for line in proc.stderr.splitlines():
            m = _IMPORT_LINE.match(line)
            if m:
                own.setdefault(m[4], []).append(int(m[1]) / 1e3)
                if len(m[3]) == 1:
                    total += int(m[2]) / 1e3
        totals.append(total)
    heavy = sorted(((min(v), k) for k, v in own.items()), reverse=True)[:8]
    return [
        Result(
            SECTION_IMPORTS,
            f"`summary --json --no-cache` on the {EXTERNAL_NAME}",
            min(totals),
            "ms",
            f"≤ {IMPORT_TARGET_MS:.0f} ms",
            min(totals) <= IMPORT_TARGET_MS,
            f"least disturbed of {runs} runs (median {median(totals):.0f} ms); {len(own)} modules; most on their own: "
            + ", ".join(f"{k} {v:.1f}" for v, k in heavy)
            + f" ms; {_load_text(before)}",
        )
    ]


def run(workdir: Path, quick: bool = False) -> list[Result]:
    """The plug-in entry point of ``benchmarks/run.py``."""
    inputs = make_large.ensure(workdir, [LARGE])
    results: list[Result] = []
    if EXTERNAL.exists():
        results += import_time(EXTERNAL, 5 if quick else 15)
        peer = measure(workdir, EXTERNAL_NAME, EXTERNAL, 3 if quick else 7, 1 if quick else 3, 2 if quick else 3)
        results += peer
        results += floors(EXTERNAL, peer[0].extra.get("hta_wall"), 3 if quick else 7)
        results += phase_split("external epoch trace", EXTERNAL, 2 if quick else 5)
    results += measure(workdir, LARGE, inputs[LARGE], 2 if quick else 3, 1 if quick else 2, 1 if quick else 3)
    results += phase_split(LARGE, inputs[LARGE], 1 if quick else 3)
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=make_large.DEFAULT_OUT, help="folder for generated inputs")
    ap.add_argument("--quick", action="store_true", help="fewer runs (a smoke run)")
    args = ap.parse_args()
    import compileall

    for folder in ("gputop_trace", "parsers", "analysis", "tui"):  # as run.py does: the .pyc an installed package has
        compileall.compile_dir(str(ROOT / folder), quiet=1)
    for r in run(args.work, args.quick):
        shown = "—" if r.value is None else f"{r.value:,.3g} {r.unit}"
        met = "" if r.met is None else ("ok" if r.met else "MISSED")
        print(f"{r.section} / {r.what}: {shown} {met}  {r.detail}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
