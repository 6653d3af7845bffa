"""The drill-down's commands for a machine other than this one: where ncu is not installed, the app still shows
what to run on a box that has it, ready to paste (``gputop-trace ncu ...`` when gputop-trace is installed there,
else the plain ncu command, whose report ``gputop-trace ncu REPORT`` then explains anywhere)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from gputop_trace.ncu.drilldown import DrilldownRequest, build_ncu_command, run_files
from gputop_trace.safe_text import shell_join

#: stands for the workload's command line when none was remembered for the trace
PLACEHOLDER_TARGET = ("YOUR_COMMAND", "ARGS...")


@dataclass(frozen=True)
class ElsewhereCommands:
    """``gputop_trace``: the ``gputop-trace ncu`` command line; ``ncu``: the ncu command line (report and log in
    the current folder); ``report``: the report file the ncu command writes; ``placeholder``: whether the
    workload's command is :data:`PLACEHOLDER_TARGET` (none was remembered for this trace)."""

    gputop_trace: str
    ncu: str
    report: str
    placeholder: bool


def commands_elsewhere(
    request: DrilldownRequest,
    target: Sequence[str] | None,
    *,
    section_set: str = "full",
    clock_control: str | None = None,
    now: float | None = None,
) -> ElsewhereCommands:
    """The commands that profile ``request``'s launch on another machine, with the NVTX filter the request starts
    with (its ``nvtx_default``). ``target`` is the workload's command line (None: :data:`PLACEHOLDER_TARGET`)."""
    argv = tuple(target) if target else PLACEHOLDER_TARGET
    name = request.raw_name or request.kernel_name
    rng = request.nvtx_range if request.nvtx_default else None
    skip = request.skip_in_range(rng)
    gputop = ["gputop-trace", "ncu", "--kernel", name, "--launch", str(skip)]
    if rng is not None:
        gputop += ["--nvtx", rng]
    if section_set != "full":
        gputop += ["--set", section_set]
    if clock_control is not None:
        gputop += ["--clock-control", clock_control]
    base, _ = run_files(name, skip, request.trace_path, now=now)
    # written where the command runs (that machine has no cache folder of ours), named without run_files' time
    # stamp so that the command reads the same every time it is shown: KERNEL-launchN
    stem = os.path.basename(base).rsplit("-", 2)[0]
    cmd = build_ncu_command(
        name,
        argv,
        launch_skip=skip,
        nvtx_range=rng,
        section_set=section_set,
        report_base=stem,
        log_path=stem + ".log",
        clock_control=clock_control,
    )
    return ElsewhereCommands(
        gputop_trace=shell_join([*gputop, "--", *argv]),
        ncu=cmd.display(),
        report=cmd.report_path,
        placeholder=not target,
    )
