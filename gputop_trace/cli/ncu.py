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
import os
from typing import TYPE_CHECKING, Any

from gputop_trace.cli import common
from gputop_trace.errors import TraceError
from gputop_trace.units import plural

if TYPE_CHECKING:
    from gputop_trace.analysis.roofline.verdict import KernelVerdict
    from gputop_trace.model.ncu import NcuReport
    from gputop_trace.ncu.drilldown import NcuCommand
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


def analyze_report(report: NcuReport, *, launch: int | None = None) -> list[KernelVerdict]:
    """A verdict for every kernel of a report (``launch`` applies to a single-kernel report from our own run)."""
    from gputop_trace.analysis.roofline.verdict import analyze_kernel

    single = len(report.kernels) == 1
    return [analyze_kernel(k, launch=launch if single else None) for k in report.kernels]


def _print_verdicts(verdicts: list[KernelVerdict], report: NcuReport, extra_warnings: list[str]) -> None:
    from rich.rule import Rule
    from rich.text import Text

    from gputop_trace.presentation.ncu_verdict import render_verdict
    from gputop_trace.safe_text import clean

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
        from gputop_trace.report.ncu_json import report_json

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


def _profile_target(args: argparse.Namespace) -> list[str]:
    """The workload's command line (after ``--``), once the profiling options are checked."""
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
    return target


def _build_command(args: argparse.Namespace, target: list[str], ncu: str) -> NcuCommand:
    """The exact ncu command for the options, writing its report and log to ``--output`` or the user cache dir."""
    from gputop_trace.ncu.drilldown import build_ncu_command, run_files

    if args.output:
        base = args.output.removesuffix(".ncu-rep")
        log_path = base + ".log"
    else:
        base, log_path = run_files(args.kernel or args.kernel_regex, args.launch, None)
    try:
        return build_ncu_command(
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


def _run_ncu(cmd: NcuCommand, timeout_ns: int | None, err: common.Stderr) -> NcuRunResult:
    """Run ``cmd`` (``timeout_ns``: ``--timeout``, else the runner's default), its lines and ncu's on stderr."""
    import asyncio

    from gputop_trace.ncu.runner import DEFAULT_TIMEOUT_S, NcuRunner

    def on_line(source: str, line: str) -> None:
        err.line(line, style="dim" if source == "ncu" else "", prefix=f"{source:>3}│ ", prefix_style="grey50")

    timeout_s = timeout_ns / 1e9 if timeout_ns else DEFAULT_TIMEOUT_S
    runner = NcuRunner(cmd, timeout_s=timeout_s, on_line=on_line)
    result: NcuRunResult = asyncio.run(runner.run())
    err.line(f"ncu finished in {result.elapsed_s:.1f} s (exit code {result.returncode})", style="bold")
    return result


def _run_document(cmd: NcuCommand, result: NcuRunResult) -> dict[str, Any]:
    """The run's part of the JSON document: the command, its files, how long it took (s), how it ended."""
    return {
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


def run_profile(args: argparse.Namespace) -> int:
    """``gputop-trace ncu --kernel NAME ... -- CMD``."""
    from gputop_trace.ncu.locate import find_ncu
    from gputop_trace.ncu.report_reader import load_report
    from gputop_trace.ncu.runner import not_installed
    from gputop_trace.report.ncu_json import empty_document, guidance_json, report_json

    target = _profile_target(args)
    ncu = args.ncu or find_ncu()
    if not ncu:
        g = not_installed()
        if args.json:
            common.emit_json({**empty_document(), "error": guidance_json(g)})
        raise TraceError(g.text)
    cmd = _build_command(args, target, ncu)
    err = common.Stderr()
    for note in cmd.notes:
        err.line(note, style="yellow", prefix="note: ")
    if not common.confirm_command("ncu command:", [cmd.display()], args.yes, err, what="ncu"):
        err.line("Not run.")
        return 0
    result = _run_ncu(cmd, args.timeout, err)
    run_doc = _run_document(cmd, result)
    if result.failure is not None or result.report_path is None:
        from gputop_trace.ncu.runner import Guidance

        g = result.failure or Guidance("no_report", "ncu wrote no report", "See the log above.")
        if args.json:
            common.emit_json({**empty_document(cmd.report_path), "run": run_doc, "error": guidance_json(g)})
        raise TraceError(_guidance_message(g, target))
    report = load_report(result.report_path, ncu_path=ncu)
    verdicts = analyze_report(report, launch=cmd.launch_skip if cmd.launch_count == 1 else None)
    if args.json:
        common.emit_json(report_json(report, verdicts, run=run_doc))
    else:
        _print_verdicts(verdicts, report, list(result.warnings))
    return 0


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
