"""``gputop-trace ncu``: why is this kernel slow? Nsight Compute's numbers turned into a verdict.

- ``gputop-trace ncu REPORT.ncu-rep [--json]``: open an existing report (no GPU needed);
- ``gputop-trace ncu --kernel NAME [--launch N] [--launch-count C] [--nvtx RANGE] [--set S] [--yes] -- CMD ...``:
  profile launch N (and the C - 1 after it) of kernel NAME while CMD runs, then open the report; ``--kernel-regex
  REGEX`` instead of ``--kernel`` profiles a kernel family (every function name the regex matches). Several launches
  of one kernel are shown with their spread. The exact ncu command is shown and runs only after the user
  says yes (``--yes`` answers for scripts). Without Textual: this path must work on a bare GPU box.
"""

from __future__ import annotations

import argparse
import math
import os
from typing import TYPE_CHECKING, Any

from gputop_trace.cli import common
from gputop_trace.errors import TraceError
from gputop_trace.units import plural

if TYPE_CHECKING:
    from gputop_trace.analysis.ncu_diagnosis.launches import LaunchSpread
    from gputop_trace.analysis.roofline.verdict import KernelVerdict
    from gputop_trace.model.ncu import NcuReport
    from gputop_trace.ncu.runner import Guidance, NcuRunResult


def register(sub: Any) -> None:
    """Add the ``ncu`` parser."""
    p = sub.add_parser(
        "ncu",
        help="profile one kernel with Nsight Compute (or open a .ncu-rep) and explain why it is slow",
        description="Open an Nsight Compute report and explain each kernel's verdict (compute-, memory- or "
        "latency-bound), or profile one launch of a kernel: gputop-trace ncu --kernel NAME [--launch N] -- CMD ... "
        "shows the exact ncu command and runs it after you confirm.",
        epilog="Examples: gputop-trace ncu report.ncu-rep --json | "
        "gputop-trace ncu --kernel vectorized_elementwise_kernel --launch 3 --nvtx step_2 -- python3 train.py",
    )
    p.add_argument(
        "args",
        nargs="*",
        metavar="REPORT | -- CMD",
        help="a .ncu-rep (or ncu CSV page) to open; with --kernel, the command that runs the workload (after --)",
    )
    p.add_argument(
        "--kernel",
        metavar="NAME",
        help="kernel to profile: its name as the trace shows it (demangled or mangled) or the bare function name",
    )
    p.add_argument(
        "--launch",
        type=int,
        default=0,
        metavar="N",
        help="which launch of that kernel (0 = first; counted among launches of that name, inside "
        "--nvtx ranges when given)",
    )
    p.add_argument(
        "--kernel-regex",
        metavar="REGEX",
        help="profile a kernel family instead: every kernel whose function name matches this regular expression "
        "(ncu -k regex:REGEX)",
    )
    p.add_argument(
        "--launch-count",
        type=int,
        default=1,
        metavar="C",
        help="profile C launches from --launch on (default 1); several launches of one kernel are shown with "
        "their spread",
    )
    p.add_argument("--nvtx", metavar="RANGE", help="only count launches inside NVTX push/pop ranges with this name")
    p.add_argument(
        "--set",
        dest="section_set",
        default="full",
        choices=("full", "detailed", "basic"),
        help="ncu section set (default: full)",
    )
    p.add_argument(
        "--clock-control",
        choices=("base", "none"),
        help="ncu --clock-control (none: keep the GPU's own clocks, e.g. where ncu may not lock them)",
    )
    p.add_argument(
        "--timeout",
        type=lambda s: common.duration_arg(s if s[-1:].isalpha() else s + "s"),
        default=None,
        metavar="TIME",
        help="stop ncu after this long (default 30min; e.g. 600s, 20min)",
    )
    p.add_argument("--output", metavar="BASE", help="report path without .ncu-rep (default: the user cache dir)")
    p.add_argument("--ncu", metavar="PATH", help="the ncu executable (default: $GPUTOP_NCU, then PATH)")
    p.add_argument(
        "--source-page",
        metavar="CSV",
        help="a saved source page (ncu -i REPORT --csv --page source --print-source sass) for the hottest lines; "
        "by default it is read from the report through ncu when ncu is installed",
    )
    p.add_argument("--yes", "-y", action="store_true", help="run the ncu command without asking")
    p.add_argument("--json", action="store_true", help="print JSON (see 'JSON output' in the README)")
    p.set_defaults(func=run)


# ---- JSON ------------------------------------------------------------------------------------------------------


def _num(x: float) -> float | None:
    return None if x is None or math.isnan(x) or math.isinf(x) else round(float(x), 4)


def _int(x: float) -> int | None:
    return None if x is None or math.isnan(x) or math.isinf(x) else round(x)


def verdict_json(v: KernelVerdict) -> dict[str, Any]:
    """One kernel of the ``ncu`` JSON contract (json.md), plus extra fields."""
    k = v.kernel
    return {
        "name": k.name,
        "demangled": k.demangled,
        "mangled": k.mangled,
        "launch": v.launch,
        "report_index": k.index,
        "device": k.device_name or None,
        "grid": list(k.grid) if k.grid else None,
        "block": list(k.block) if k.block else None,
        "duration_ns": _int(v.duration_ns),
        "sm_pct": _num(v.sm_pct),
        "memory_pct": _num(v.memory_pct),
        "dram_pct": _num(v.dram_pct),
        "achieved_occupancy_pct": _num(v.occupancy.achieved_pct),
        "theoretical_occupancy_pct": _num(v.occupancy.theoretical_pct),
        "occupancy_limiter": v.occupancy.limiter,
        "registers": v.registers,
        "flops": _int(v.flops),
        "dram_bytes": _int(v.dram_bytes),
        "intensity_flop_per_byte": _num(v.intensity),
        "ridge_flop_per_byte": _num(v.ridge),
        "precision": v.precision or None,
        "peak_flop_per_s": _num(v.peak_flop_per_s),
        "peak_dram_bytes_per_s": _num(v.peak_dram_bytes_per_s),
        "achieved_flop_per_s": _num(v.achieved_flop_per_s),
        "peaks_from": v.peaks_from or None,
        "verdict": v.verdict,
        "verdict_basis": v.verdict_basis or None,
        "explanation": "\n".join(v.explanation),
        "stalls": [
            {"reason": s.reason, "label": s.label, "value": _num(s.cycles), "share_pct": _num(s.share_pct)}
            for s in v.stalls
        ],
        "no_eligible_pct": _num(v.no_eligible_pct),
        "tensor_pipe_pct": _num(v.tensor_pipe_pct),
        "tensor_use": v.tensor_use,
        "l1_hit_pct": _num(v.l1_hit_pct),
        "l2_hit_pct": _num(v.l2_hit_pct),
        "sectors_per_request": _num(v.sectors_per_request),
        "rules": [
            {
                "name": r.identifier,
                "type": r.type,
                "text": r.text,
                "title": r.title,
                "section": r.section,
                "speedup_pct": _num(r.speedup_pct) if r.speedup_pct is not None else None,
            }
            for r in v.rules
        ],
        "nvtx": list(k.nvtx),
        "warnings": list(v.warnings),
        "trust": [{"kind": t.kind, "level": t.level, "text": t.text} for t in v.trust],
        "diagnosis": [{"kind": f.kind, "problem": f.problem, "text": f.text} for f in v.diagnosis],
        "hot_lines": [
            {
                "address": h.line.address,
                "source": h.line.source,
                "samples": _num(h.line.samples),
                "share_pct": _num(h.share_pct),
                "instructions": _num(h.line.instructions),
            }
            for h in v.hot_lines
        ],
    }


def spread_json(s: LaunchSpread) -> dict[str, Any]:
    """Several launches of one kernel: their report indices and each figure's min / median / max."""
    return {
        "name": s.name,
        "report_indices": list(s.indices),
        "figures": [
            {
                "label": f.label,
                "metric": f.metric,
                "unit": f.unit,
                "n": f.n,
                "min": _num(f.min),
                "median": _num(f.median),
                "max": _num(f.max),
                "rel_spread": _num(f.rel_spread),
            }
            for f in s.figures
        ],
        "warning": s.note.text if s.note else None,
    }


def report_json(
    report: NcuReport, verdicts: list[KernelVerdict], *, run: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The whole ``ncu`` JSON document."""
    from gputop_trace.analysis.ncu_diagnosis.launches import launch_spreads
    from gputop_trace.report.envelope import envelope

    doc = envelope("ncu", None, report.path, kernels=[verdict_json(v) for v in verdicts])
    doc["source"].update(
        {
            "format": "ncu",
            "producer": f"Nsight Compute report (read with {report.reader})",
            "ranks": [0],
            "truncated_bytes": 0,
        }
    )
    doc["warnings"] = list(report.warnings) + ([w for w in run.get("warnings", [])] if run else [])
    doc["launch_spread"] = [spread_json(s) for s in launch_spreads(report.kernels)]
    if run is not None:
        doc["run"] = run
    return doc


def guidance_json(g: Guidance) -> dict[str, Any]:
    """A failed run's guidance as JSON."""
    return {
        "kind": g.kind,
        "title": g.title,
        "text": g.text,
        "details": list(g.details),
        "available_kernels": list(g.available_kernels),
        "exit_code": g.exit_code,
    }


# ---- running -----------------------------------------------------------------------------------------------------


def analyze_report(report: NcuReport, *, launch: int | None = None) -> list[KernelVerdict]:
    """A verdict for every kernel of a report (``launch`` applies to a single-kernel report from our own run)."""
    from gputop_trace.analysis.roofline.verdict import analyze_kernel

    single = len(report.kernels) == 1
    return [analyze_kernel(k, launch=launch if single else None) for k in report.kernels]


def _print_verdicts(verdicts: list[KernelVerdict], report: NcuReport, extra_warnings: list[str]) -> None:
    from rich.rule import Rule
    from rich.text import Text

    from gputop_trace.safe_text import clean
    from gputop_trace.presentation.ncu_verdict import render_verdict

    con = common.stdout_console()
    title = (
        Text("gputop-trace ncu  ", style="bold") + Text(clean(report.path)) + Text(f"  ({report.reader})", style="dim")
    )
    title.no_wrap = True
    title.overflow = "ellipsis"
    con.print(title)
    for w in report.warnings:
        con.print(Text("warning: ", style="yellow") + Text(clean(w)))
    for i, v in enumerate(verdicts):
        if len(verdicts) > 1:
            con.print(Rule(f"kernel {i + 1} of {len(verdicts)}"))
        con.print(render_verdict(v, extra_warnings=extra_warnings))
    from gputop_trace.analysis.ncu_diagnosis.launches import launch_spreads
    from gputop_trace.presentation.ncu_verdict import spread_table

    for s in launch_spreads(report.kernels):
        con.print(Rule(f"{plural(len(s.indices), 'launch', 'launches')} of {clean(s.name)}"))
        con.print(spread_table(s))


def open_report(path: str, *, as_json: bool, ncu_path: str | None = None, source_page: str | None = None) -> int:
    """``gputop-trace ncu REPORT``: the report, with its source page (``source_page``, else through ncu when it
    is installed) for the hottest lines."""
    from gputop_trace.ncu.locate import find_ncu
    from gputop_trace.ncu.report_reader import attach_source, load_report, read_source_page
    from gputop_trace.parsers.ncu import parse_source_csv

    report = load_report(path, ncu_path=ncu_path)
    if source_page is not None:
        try:
            with open(source_page, encoding="utf-8", errors="replace") as f:
                report = attach_source(report, parse_source_csv(f.read()))
        except OSError as e:
            raise TraceError(f"Cannot read the source page {source_page}: {e.strerror}.", path=source_page) from None
    elif not path.lower().endswith(".csv") and (exe := ncu_path or find_ncu()):
        report = attach_source(report, read_source_page(exe, path))
    verdicts = analyze_report(report)
    if as_json:
        common.emit_json(report_json(report, verdicts))
    else:
        _print_verdicts(verdicts, report, [])
    return 0


def _guidance_message(g: Guidance, target: list[str]) -> str:
    from gputop_trace.safe_text import shell_join

    parts = [f"{g.title}. {g.text}"]
    if g.available_kernels:
        parts.append("Kernels ncu saw: " + ", ".join(g.available_kernels) + ".")
        parts.append(
            "Profile one of them with: "
            + shell_join(["gputop-trace", "ncu", "--kernel", g.available_kernels[0], "--", *target])
        )
    if g.details:
        parts.append("Last lines: " + " | ".join(g.details[-8:]))
    return " ".join(parts)


def run_profile(args: argparse.Namespace) -> int:
    """``gputop-trace ncu --kernel NAME ... -- CMD``."""
    import asyncio

    from gputop_trace.ncu.drilldown import build_ncu_command, run_files
    from gputop_trace.ncu.locate import find_ncu
    from gputop_trace.ncu.report_reader import load_report
    from gputop_trace.ncu.runner import DEFAULT_TIMEOUT_S, NcuRunner, not_installed

    target = list(args.args)
    if not target:
        raise TraceError(
            "Give the command that runs the workload after --, e.g.: gputop-trace ncu --kernel NAME -- python3 train.py"
        )
    if args.launch < 0:
        raise TraceError(f"--launch must be 0 or more, not {args.launch}.")
    if args.launch_count < 1:
        raise TraceError(f"--launch-count must be 1 or more, not {args.launch_count}.")
    if args.kernel and args.kernel_regex:
        raise TraceError("Give --kernel NAME or --kernel-regex REGEX, not both.")
    kernel_label = args.kernel or args.kernel_regex
    ncu = args.ncu or find_ncu()
    if not ncu:
        g = not_installed()
        if args.json:
            common.emit_json({**_empty_doc(), "error": guidance_json(g)})
        raise TraceError(g.text)
    if args.output:
        base = args.output.removesuffix(".ncu-rep")
        log_path = base + ".log"
    else:
        base, log_path = run_files(kernel_label, args.launch, None)
    try:
        cmd = build_ncu_command(
            args.kernel or "",
            target,
            launch_skip=args.launch,
            launch_count=args.launch_count,
            kernel_regex=args.kernel_regex,
            nvtx_range=args.nvtx,
            section_set=args.section_set,
            report_base=base,
            log_path=log_path,
            ncu=ncu,
            clock_control=args.clock_control,
        )
    except ValueError as e:
        raise TraceError(f"Cannot build the ncu command: {e}.") from None
    err = common.Stderr()
    for note in cmd.notes:
        err.line(note, style="yellow", prefix="note: ")
    if not common.confirm_command("ncu command:", [cmd.display()], args.yes, err, what="ncu"):
        err.line("Not run.")
        return 0

    def on_line(source: str, line: str) -> None:
        err.line(line, style="dim" if source == "ncu" else "", prefix=f"{source:>3}│ ", prefix_style="grey50")

    timeout_s = args.timeout / 1e9 if args.timeout else DEFAULT_TIMEOUT_S
    runner = NcuRunner(cmd, timeout_s=timeout_s, on_line=on_line)
    result: NcuRunResult = asyncio.run(runner.run())
    err.line(f"ncu finished in {result.elapsed_s:.1f} s (exit code {result.returncode})", style="bold")
    run_doc = {
        "command": list(cmd.argv),
        "report": result.report_path,
        "log": cmd.log_path,
        "elapsed_s": round(result.elapsed_s, 3),
        "returncode": result.returncode,
        "launch_skip": cmd.launch_skip,
        "launch_count": cmd.launch_count,
        "kernel_name_base": cmd.kernel_base,
        "nvtx_include": cmd.nvtx_include,
        "warnings": list(result.warnings),
    }
    if result.failure is not None or result.report_path is None:
        from gputop_trace.ncu.runner import Guidance

        g = result.failure or Guidance("no_report", "ncu wrote no report", "See the log above.")
        if args.json:
            common.emit_json({**_empty_doc(cmd.report_path), "run": run_doc, "error": guidance_json(g)})
        raise TraceError(_guidance_message(g, target))
    report = load_report(result.report_path, ncu_path=ncu)
    verdicts = analyze_report(report, launch=cmd.launch_skip if cmd.launch_count == 1 else None)
    if args.json:
        common.emit_json(report_json(report, verdicts, run=run_doc))
    else:
        _print_verdicts(verdicts, report, list(result.warnings))
    return 0


def _empty_doc(path: str = "") -> dict[str, Any]:
    from gputop_trace.report.envelope import envelope

    doc = envelope("ncu", None, path, kernels=[])
    doc["source"].update({"format": "ncu", "producer": "Nsight Compute", "ranks": [0], "truncated_bytes": 0})
    return doc


def run(args: argparse.Namespace) -> int:
    """Dispatch: open a report, or profile."""
    if args.kernel or args.kernel_regex:
        return run_profile(args)
    if len(args.args) != 1:
        raise TraceError(
            "Give one Nsight Compute report to open (gputop-trace ncu report.ncu-rep), or profile a kernel with "
            "gputop-trace ncu --kernel NAME -- CMD ..."
        )
    path = args.args[0]
    if not os.path.exists(path):
        raise TraceError(f"{path} does not exist. Give the path of a .ncu-rep report.", path=path)
    return open_report(path, as_json=args.json, ncu_path=args.ncu, source_page=args.source_page)
