"""``gputop-trace record``: capture a profile, then open it. The exact commands are shown first and run only after
the user says yes (``--yes`` answers for scripts); they are argument lists, never a shell.

- ``record --torch [--steps N] [--out FILE] [--no-stack] -- python train.py ...``: the unmodified script under
  ``torch.profiler`` (CPU, and CUDA when there is a GPU; ``record_shapes``, ``with_stack``; wait / warm-up / active
  schedule stepped at each optimizer step), written as a Chrome trace;
- ``record --nsys [--out BASE] -- CMD ...``: ``nsys profile --trace=cuda,nvtx,osrt`` then its SQLite export;
- ``record --ncu --kernel NAME [--launch N] -- CMD ...``: the ``gputop-trace ncu --kernel`` path.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from gputop_trace.cli import common
from gputop_trace.errors import TraceError
from gputop_trace.numpy_env import user_env
from gputop_trace.units import plural


def register(sub: Any) -> None:
    """Add the ``record`` parser."""
    p = sub.add_parser(
        "record",
        help="capture a profile (torch.profiler, nsys or ncu) of a command, then open it",
        description="Run a command under a profiler and open the result. The exact command is shown and runs only "
        "after you confirm (--yes to skip). Mark code regions for all three with gputop_trace.annotate.",
        epilog="Examples: gputop-trace record --torch --steps 3 -- python train.py --lr 1e-3 | "
        "gputop-trace record --nsys -- python train.py | gputop-trace record --ncu --kernel gemm -- ./app",
    )
    tool = p.add_mutually_exclusive_group(required=True)
    tool.add_argument("--torch", action="store_true", help="torch.profiler on a Python training script")
    tool.add_argument("--nsys", action="store_true", help="Nsight Systems (nsys profile + SQLite export)")
    tool.add_argument("--ncu", action="store_true", help="Nsight Compute on one kernel (as gputop-trace ncu --kernel)")
    p.add_argument("args", nargs="*", metavar="-- CMD", help="the command to profile (after --)")
    p.add_argument("--out", metavar="FILE", help="where to write the trace (--nsys: path without .nsys-rep)")
    p.add_argument("--steps", type=int, default=3, metavar="N", help="--torch: optimizer steps recorded (default 3)")
    p.add_argument("--wait", type=int, default=1, metavar="N", help="--torch: steps skipped first (default 1)")
    p.add_argument("--warmup", type=int, default=1, metavar="N", help="--torch: warm-up steps (default 1)")
    p.add_argument("--no-stack", action="store_true", help="--torch: no Python stacks (with_stack=False)")
    p.add_argument("--nsys-path", metavar="PATH", help="--nsys: the nsys executable (default: $GPUTOP_NSYS, PATH)")
    p.add_argument("--kernel", metavar="NAME", help="--ncu: the kernel to profile")
    p.add_argument("--kernel-regex", metavar="REGEX", help="--ncu: a kernel family instead of one name")
    p.add_argument("--launch", type=int, default=0, metavar="N", help="--ncu: which launch (0 = first)")
    p.add_argument("--launch-count", type=int, default=1, metavar="C", help="--ncu: how many launches")
    p.add_argument("--no-open", action="store_true", help="do not open the result (print where it is)")
    p.add_argument("--yes", "-y", action="store_true", help="run without asking")
    p.set_defaults(func=run)


def _run_checked(argv: list[str], what: str) -> None:
    import subprocess  # here, not at import: every command's start-up would pay for it

    try:
        code = subprocess.run(argv, check=False, env=user_env()).returncode
    except OSError as e:
        raise TraceError(f"Could not start {argv[0]}: {e.strerror}.") from None
    if code != 0:
        raise TraceError(f"{what} exited with status {code}; see its output above.")


def _open(path: str, no_open: bool) -> int:
    """Open the recorded file in the viewer, or (``--no-open``, no terminal) say where it is and what it holds."""
    if no_open or not (sys.stdout.isatty() and sys.stdin.isatty()):
        from gputop_trace.analysis.steps import find_steps
        from gputop_trace.load.loader import load_file

        trace = load_file(path)
        steps = sum(len(s.events) for s in find_steps(trace))
        counts = f"{plural(trace.n_events, 'event')}, {plural(steps, 'step')}"
        print(f"{path}: {counts}. Open it with: gputop-trace view {path}")
        return 0
    from gputop_trace.cli import view

    parser = argparse.ArgumentParser(prog="gputop-trace")
    view.register(parser.add_subparsers())
    ns = parser.parse_args(["view", path])
    code: int = ns.func(ns)
    return code


def record_torch(args: argparse.Namespace, err: common.Stderr) -> int:
    """``record --torch``: the script under our launcher, then open the trace."""
    from gputop_trace.capture.commands import default_output, torch_command
    from gputop_trace.safe_text import shell_join

    out = args.out or default_output(args.args, ".pt.trace.json")
    try:
        argv = torch_command(
            args.args, out, steps=args.steps, wait=args.wait, warmup=args.warmup, with_stack=not args.no_stack
        )
    except ValueError as e:
        raise TraceError(f"Cannot build the command: {e}.") from None
    if not common.confirm_command("torch.profiler command:", [shell_join(argv)], args.yes, err, what="it"):
        err.line("Not run.")
        return 0
    _run_checked(argv, "The profiled script")
    if not os.path.isfile(out):
        raise TraceError(f"No trace was written to {out}: the script made too few optimizer steps (see above).")
    return _open(out, args.no_open)


def record_nsys(args: argparse.Namespace, err: common.Stderr) -> int:
    """``record --nsys``: ``nsys profile`` then ``nsys export --type sqlite``, then open the export."""
    from gputop_trace.capture.commands import NSYS_MISSING, default_output, find_nsys, nsys_profile_command
    from gputop_trace.load.nsys_report import export_command
    from gputop_trace.safe_text import shell_join

    nsys = find_nsys(args.nsys_path)
    if nsys is None:
        raise TraceError(NSYS_MISSING)
    base = (args.out or default_output(args.args, "")).removesuffix(".nsys-rep")
    try:
        profile = nsys_profile_command(args.args, base, nsys)
    except ValueError as e:
        raise TraceError(f"Cannot build the command: {e}.") from None
    export = export_command(base + ".nsys-rep", base + ".sqlite", nsys)
    if not common.confirm_command(
        "nsys commands:", [shell_join(profile), shell_join(export)], args.yes, err, what="nsys"
    ):
        err.line("Not run.")
        return 0
    _run_checked(profile, "nsys profile")
    if not os.path.isfile(base + ".nsys-rep"):
        raise TraceError(f"nsys wrote no report {base}.nsys-rep; see its output above.")
    _run_checked(export, "nsys export")
    return _open(base + ".sqlite", args.no_open)


def record_ncu(args: argparse.Namespace) -> int:
    """``record --ncu``: the ``gputop-trace ncu --kernel`` path, with the same options."""
    from gputop_trace.cli import ncu

    argv = ["ncu", "--launch", str(args.launch), "--launch-count", str(args.launch_count)]
    argv += ["--kernel", args.kernel] if args.kernel else []
    argv += ["--kernel-regex", args.kernel_regex] if args.kernel_regex else []
    argv += ["--output", args.out] if args.out else []
    argv += ["--yes"] if args.yes else []
    if not (args.kernel or args.kernel_regex):
        raise TraceError("record --ncu needs --kernel NAME (or --kernel-regex REGEX): the kernel to profile.")
    parser = argparse.ArgumentParser(prog="gputop-trace")
    ncu.register(parser.add_subparsers())
    ns = parser.parse_args([*argv, "--", *args.args])
    code: int = ns.func(ns)
    return code


def run(args: argparse.Namespace) -> int:
    """Dispatch on the tool."""
    if not args.args:
        raise TraceError("Give the command to profile after --, e.g.: gputop-trace record --torch -- python train.py")
    if args.ncu:
        return record_ncu(args)
    err = common.Stderr()
    return record_torch(args, err) if args.torch else record_nsys(args, err)
