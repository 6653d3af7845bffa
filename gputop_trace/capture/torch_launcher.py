"""Run a user's unmodified training script under ``torch.profiler`` (what ``gputop-trace record --torch`` starts).

Run by path with the user's own Python, so it needs nothing but PyTorch (gputop-trace need not be installed in that
environment)::

    python torch_launcher.py --out TRACE.json [--steps N] [--wait W] [--warmup U] [--no-stack] -- train.py ARGS...

The profiler records CPU activity, and CUDA activity when CUDA is available (the CPU build of PyTorch works too),
with ``record_shapes`` and ``with_stack`` (``--no-stack`` turns it off), on a wait / warm-up / active schedule of
``W`` / ``U`` / ``N`` steps. One step is one optimizer step: a global ``Optimizer.step`` post-hook
(``torch.optim.optimizer.register_optimizer_step_post_hook``) steps the profiler, so each active step becomes a
``ProfilerStep#i`` range in the trace. The script runs with ``runpy.run_path`` as ``__main__``, ``sys.argv`` set to
its own arguments. The trace is written (Chrome JSON) when the active steps are done, or when the script ends.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
from typing import Any


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="torch_launcher")
    p.add_argument("--out", required=True, help="Chrome trace to write (.json or .json.gz)")
    p.add_argument("--steps", type=int, default=3, help="active (recorded) optimizer steps")
    p.add_argument("--wait", type=int, default=1, help="optimizer steps skipped first")
    p.add_argument("--warmup", type=int, default=1, help="optimizer steps profiled but not recorded")
    p.add_argument("--no-stack", action="store_true", help="record without Python stacks (with_stack=False)")
    p.add_argument("script", help="the training script")
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Profile the script; returns its exit status (2 when no active step was reached)."""
    args = _parse(list(sys.argv[1:] if argv is None else argv))
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook
    from torch.profiler import ProfilerActivity, profile, schedule

    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    written: list[str] = []

    def on_ready(prof: Any) -> None:
        prof.export_chrome_trace(args.out)
        written.append(args.out)

    prof = profile(
        activities=activities,
        schedule=schedule(wait=args.wait, warmup=args.warmup, active=args.steps, repeat=1),
        on_trace_ready=on_ready,
        record_shapes=True,
        with_stack=not args.no_stack,
    )
    handle = register_optimizer_step_post_hook(lambda *_: prof.step())
    script_args = args.args[1:] if args.args[:1] == ["--"] else args.args
    sys.argv = [args.script, *script_args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.script)))
    status = 0
    prof.start()
    try:
        runpy.run_path(args.script, run_name="__main__")
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        handle.remove()
        prof.stop()
    if not written:
        print(
            f"gputop-trace record: the script made fewer than {args.wait + args.warmup + 1} optimizer steps, so no "
            f"step was recorded (schedule: wait {args.wait}, warm-up {args.warmup}, active {args.steps}).",
            file=sys.stderr,
        )
        return status or 2
    print(f"gputop-trace record: wrote {args.out}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
