"""The ``critical_path`` finding: the one item whose speed-up shortens a step the most, in words a performance
engineer acts on ("step_3: 71.0% of its critical path is host work in `aten::index` (optimizer); making it 2x
faster saves 9.1 ms"). Times are int64 ns relative to the trace start."""

from __future__ import annotations

from gputop_trace.analysis.critical_path.path import StepPath, WhatIf, critical_paths, step_windows
from gputop_trace.analysis.enclosing import innermost_enclosing
from gputop_trace.analysis.findings.draft import Draft, plain_name
from gputop_trace.analysis.steps import is_step_name
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace
from gputop_trace.units import format_ns

#: A saving smaller than this share of the step is not worth a finding (%).
MIN_SAVING_PCT = 1.0

_WORDS = {
    "cpu_op": "host work in",
    "launch": "launch and runtime calls in",
    "kernel": "GPU time in kernel",
    "copy": "copy time in",
    "sync_wait": "the host waiting in",
    "collective": "collective time in",
}


def critical_path_findings(trace: Trace) -> list[Draft]:
    """At most one finding: in the slowest step (the longest step window of any rank; the first of equals), the
    item on its critical path whose 2x speed-up saves the most (replaying the step's dependency graph); none when no
    saving reaches :data:`MIN_SAVING_PCT` of its step. One step's graph is built, not every step's: the slowest step
    is what a user waits for, and the command ``critical-path`` has the others."""
    windows = step_windows(trace)
    if not windows:
        return []
    rank, index, _name, _s, _e = max(windows, key=lambda w: w[4] - w[3])  # max keeps the first of equals
    best: tuple[WhatIf, StepPath] | None = None
    # no segments: the item is found by its first piece (a step's segments can be hundreds of thousands of objects)
    for step in critical_paths(trace, step=index, rank=rank, segments=False):
        for w in step.what_if:
            if best is None or w.step_ns - w.if_2x_ns > best[0].step_ns - best[0].if_2x_ns:
                best = (w, step)
    if best is None:
        return []
    w, step = best
    saves = w.step_ns - w.if_2x_ns
    if step.length_ns <= 0 or 100.0 * saves / step.length_ns < MIN_SAVING_PCT:
        return []
    share = 100.0 * w.on_path_ns / step.length_ns
    seg_start, seg_event, seg_lane = step.first_piece[(w.category, w.item)]
    where = _range_of(trace, seg_lane, seg_start, seg_event)
    name = step.step_name or f"step {step.step}"
    who = f"rank {step.rank} " if len(trace.meta.ranks) > 1 else ""
    first_call = w.category == "launch" and _first_runtime_call(trace, step.rank) == seg_event >= 0
    title = (
        f"{who}{name}: {share:.1f}% of its critical path is {_WORDS.get(w.category, 'time in')} `{w.item}`"
        f"{f' ({where})' if where else ''}; making it 2x faster saves {format_ns(saves)}"
    )
    if first_call:  # not a call to speed up: the CUDA context is created by whichever call comes first
        title += (
            " — it is the process's first CUDA call, which creates the CUDA context: a one-time cost; profile after "
            "a warm-up step to see the steady state"
        )
    gone = w.step_ns - w.if_gone_ns
    detail = (
        f"The longest dependency chain through {name} ({format_ns(step.length_ns)} of the "
        f"{format_ns(step.dur_ns)} step) spends {format_ns(w.on_path_ns)} in `{w.item}`. Replaying the step's "
        f"dependency graph with it 2x faster gives {format_ns(w.if_2x_ns)} ({format_ns(saves)} less); without it, "
        f"{format_ns(w.if_gone_ns)} ({format_ns(gone)} less). Work off this path would save nothing: "
        "see `gputop-trace critical-path` for the whole path and the other items."
    )
    return [
        Draft(
            kind="critical_path",
            title=title,
            detail=detail,
            time_ns=saves,
            span_ns=step.dur_ns,
            evidence={
                "rank": step.rank,
                "step": step.step,
                "step_name": step.step_name,
                "category": w.category,
                "item": w.item,
                "range": where or None,
                "on_path_ns": w.on_path_ns,
                "length_ns": step.length_ns,
                "step_ns": step.dur_ns,
                "if_2x_ns": w.if_2x_ns,
                "if_gone_ns": w.if_gone_ns,
                "first_cuda_call": first_call,
            },
            thresholds={"min_saving_pct": MIN_SAVING_PCT},
            event=seg_event,
            interval=(step.start_ns, step.start_ns + step.dur_ns),
            gpu_rank=step.rank,
        )
    ]


def _first_runtime_call(trace: Trace, rank: int) -> int:
    """The rank's first CUDA runtime / driver call (by start), or -1."""
    api = trace.of_kind(Kind.API)
    api = api[trace.event_rank[api] == rank]
    return int(api[trace.start_ns[api].argmin()]) if len(api) else -1


def _range_of(trace: Trace, lane: int, t: int, event: int) -> str:
    """The innermost annotation range (not a step range, not the item itself) around ``t`` on ``lane``; for GPU
    work, around its launch call."""
    if event >= 0 and trace.launch_of[event] >= 0:
        launch = int(trace.launch_of[event])
        lane, t = int(trace.lane[launch]), int(trace.start_ns[launch])
    while True:
        enc = int(innermost_enclosing(trace, [lane], [t], (Kind.RANGE,))[0])
        if enc < 0:
            return ""
        name = trace.event_name(enc)
        if enc != event and not is_step_name(name):
            return plain_name(name)
        if trace.start_ns[enc] == 0:
            return ""
        t = int(trace.start_ns[enc]) - 1
