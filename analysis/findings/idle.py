"""Findings from the idle gaps (detectors.md §2): one per GPU and cause holding enough of the GPU's active span,
naming where the gaps happened and what to do. Times are int64 ns relative to the trace start."""

from __future__ import annotations

import numpy as np

from gputop_trace.analysis.compiled.regions import CompiledProgram
from gputop_trace.analysis.findings.compiled import cause_fix, compile_gap_mask
from gputop_trace.analysis.findings.draft import Draft, family_label, gpu_label, name_family, name_of, pct
from gputop_trace.analysis.findings.launch import lazy_loading_words
from gputop_trace.analysis.gaps.attribution import SLOW_LAUNCH_SHARE
from gputop_trace.analysis.gaps.causes import CAUSES, cause_label
from gputop_trace.analysis.gaps.detect import DeviceGaps
from gputop_trace.analysis.kernels import short_name
from gputop_trace.model.arrays import I64
from gputop_trace.model.trace import Trace
from gputop_trace.units import format_ns, plural

#: A cause group of gaps becomes a finding when it holds at least this share of the device's active span ...
MIN_IDLE_SHARE = 0.02
#: ... or at least this much time (ns).
MIN_IDLE_NS = 1_000_000


def slow_launch_gaps(dg: DeviceGaps) -> I64:
    """The gaps (row indices) the host spent inside one slow launch call (cause ``slow_launch``,
    :func:`~gputop_trace.analysis.gaps.attribution.attribute_gaps`)."""
    out: I64 = np.flatnonzero(dg.columns.cause == CAUSES.index("slow_launch"))
    return out


def _slow_launch_draft(trace: Trace, dg: DeviceGaps, idx: I64, gpu: str) -> Draft:
    """One finding for the gaps ``idx`` of :func:`slow_launch_gaps` (their launch calls are listed in the
    evidence, so the launch detector does not report them again)."""
    c = dg.columns
    total = int(c.dur_ns[idx].sum())
    longest = idx[np.argsort(-c.dur_ns[idx], kind="stable")]
    worst = int(longest[0])
    api = int(c.launch_event[worst])
    n = len(idx)
    loading, eager = lazy_loading_words(trace, api, trace.device_words(dg.rank, dg.device))
    return Draft(
        kind="slow_launch",
        title=f"{gpu}: {pct(total, dg.span_ns)} of its active time idle in {plural(n, 'gap')} "
        f"({format_ns(total)}) while the host sat inside one slow launch call (worst: `{name_of(trace, api)}` "
        f"{format_ns(int(trace.dur_ns[api]))} for {short_name(name_of(trace, int(c.next_op[worst])))})",
        detail="In each of these gaps most of the host's time went to the launch call of the next kernel itself, "
        f"not to framework or Python work: one-time work inside the call, usually lazy loading of the kernel's "
        f"{loading}, a driver stall, autotuning or allocator growth. Fix: warm up before profiling{eager}.",
        time_ns=total,
        span_ns=dg.span_ns,
        evidence={
            "rank": dg.rank,
            "device": dg.device,
            "gaps": n,
            "total_ns": total,
            "launches": [
                {
                    "api": int(c.launch_event[i]),
                    "op": int(c.next_op[i]),
                    "launch_ns": int(trace.dur_ns[int(c.launch_event[i])]),
                    "gap_start_ns": int(c.start_ns[i]),
                    "gap_ns": int(c.dur_ns[i]),
                }
                for i in longest[:10].tolist()
            ],
            "launch_events": [int(x) for x in c.launch_event[idx].tolist()],
        },
        thresholds={"gap_threshold_ns": dg.threshold_ns, "min_launch_share": SLOW_LAUNCH_SHARE},
        event=api,
        gpu_rank=dg.rank,
        device=dg.device,
    )


def _subject_events(dg: DeviceGaps, idx: I64, cause: str) -> I64:
    """The event naming each gap in ``idx`` (``-1`` none): the call, range or operator that explains it; for
    GPU-side dependencies the op that waited; for untraced time the range the thread was in."""
    c = dg.columns
    ce, rng = c.cause_event[idx], c.range_event[idx]
    if cause == "gpu_dependency":
        return c.next_op[idx]
    if cause == "untraced":
        return np.where(rng >= 0, rng, ce)
    return np.where(ce >= 0, ce, rng)


def _top_subjects(trace: Trace, events: I64, weights: I64, n: int = 3, *, short: bool = False) -> list[str]:
    """The ``n`` names (grouped into ``step_<n>`` families) carrying the most weight, heaviest first.
    Vectorized: one weighted count per distinct name, string work once per distinct name."""
    ok = events >= 0
    if not ok.any():
        return []
    name_ids = trace.name[events[ok]]
    per_name = np.bincount(name_ids, weights=weights[ok], minlength=len(trace.names))
    present = np.flatnonzero(per_name)
    families: dict[str, float] = {}
    members: dict[str, set[str]] = {}
    for i in present.tolist():
        raw = trace.names[i]
        shown = short_name(raw) if short else raw
        fam = name_family(shown)
        families[fam] = families.get(fam, 0.0) + float(per_name[i])
        members.setdefault(fam, set()).add(shown)
    ranked = sorted(families, key=lambda f: -families[f])[:n]
    return [family_label(members[f]) for f in ranked]


_CAUSE_PHRASE = {
    "data_loading": "while the host was loading data in {s}",
    "blocked_os": "while the launching thread was blocked in {s}",
    "sync_stall": "right after the host synchronized with the GPU in {s}",
    "cpu_bound": "while the host was busy with framework/Python work{s_in}",
    "untraced": "while the launching thread ran code the profiler did not record{s_in}",
    "gpu_dependency": "while queued work ({s}) waited on another stream, event or rank",
}
_CAUSE_WHY = {
    "data_loading": "The input pipeline starves the GPU.",
    "blocked_os": "The thread that feeds the GPU was stuck in the operating system.",
    "sync_stall": "Each synchronization empties the GPU queue, so the GPU waits while the host prepares the next work.",
    "cpu_bound": "The host cannot issue work fast enough.",
    "untraced": "",
    "gpu_dependency": "The work was already queued; the GPU waited for a dependency.",
}


def idle_findings(trace: Trace, dg: DeviceGaps, multi: bool, prog: CompiledProgram | None = None) -> list[Draft]:
    """One finding per cause whose gaps on this GPU add up to :data:`MIN_IDLE_NS` or :data:`MIN_IDLE_SHARE` of
    its active span (``multi``: the findings cover several GPUs, so name the rank; ``prog``: what the program
    already does with torch.compile / CUDA graphs, so the advice does not repeat it)."""
    c = dg.columns
    out: list[Draft] = []
    if not len(c):
        return out
    gpu = gpu_label(dg.rank, dg.device, multi, trace)
    slow = slow_launch_gaps(dg)
    if len(slow) and (int(c.dur_ns[slow].sum()) >= MIN_IDLE_NS or c.dur_ns[slow].sum() >= MIN_IDLE_SHARE * dg.span_ns):
        out.append(_slow_launch_draft(trace, dg, slow, gpu))
    others = ~compile_gap_mask(trace, prog, dg)  # the recompilation finding tells those
    for code, cause in enumerate(CAUSES):
        if cause == "slow_launch":  # its own finding, above
            continue
        idx = np.flatnonzero((c.cause == code) & others)
        if not len(idx):
            continue
        total = int(c.dur_ns[idx].sum())
        if total < MIN_IDLE_NS and total < MIN_IDLE_SHARE * dg.span_ns:
            continue
        out.append(_cause_draft(trace, dg, cause, idx, total, gpu, prog))
    return out


def _cause_draft(
    trace: Trace,
    dg: DeviceGaps,
    cause: str,
    idx: I64,
    total: int,
    gpu: str,
    prog: CompiledProgram | None,
) -> Draft:
    """The finding of one cause on one GPU: its gaps ``idx`` (rows of ``dg.columns``) add up to ``total`` ns;
    ``gpu``: the GPU's label in the text."""
    c = dg.columns
    top = _top_subjects(trace, _subject_events(dg, idx, cause), c.dur_ns[idx], short=cause == "gpu_dependency")
    longest = idx[np.argsort(-c.dur_ns[idx], kind="stable")]
    s_main = f"`{top[0]}`" if top else "(unknown)"
    s_in = f", mostly in {', '.join(f'`{s}`' for s in top[:2])}" if top else ""
    words = trace.device_words(dg.rank, dg.device)
    phrase = words.say(_CAUSE_PHRASE[cause]).format(s=s_main, s_in=s_in)
    n = len(idx)
    lengths = ", ".join(format_ns(int(x)) for x in c.dur_ns[longest[:3]].tolist())
    mean = total / n
    title = (
        # the share is this cause's, not the GPU's whole idle time (the detail gives that)
        f"{gpu}: {pct(total, dg.span_ns)} of its active time idle in {plural(n, 'gap')}"
        f"{f' of ~{format_ns(mean)} each' if n > 1 and c.dur_ns[idx].max() < 2 * mean else ''} "
        f"({format_ns(total)}) {phrase}"
    )
    why = words.say(_CAUSE_WHY[cause])
    fix = cause_fix(cause, prog, words)
    if cause == "blocked_os" and top and "sleep" in top[0].lower():
        why = words.say("The thread that feeds the GPU sleeps.")
        fix = words.say("remove the sleep from the launching thread, or issue the next GPU work before sleeping")
    detail = (
        f"{gpu} is idle {dg.idle_pct:.1f}% of its active span ({format_ns(dg.idle_ns)} of "
        f"{format_ns(dg.span_ns)}); {format_ns(total)} of it is in {plural(n, 'gap')} of at least "
        f"{format_ns(dg.threshold_ns)} attributed to {cause_label(cause, words)} (longest: {lengths}). "
        f"{why + ' ' if why else ''}Fix: {fix}."
    )
    first = int(longest[0])
    return Draft(
        kind="idle_gaps",
        title=title,
        detail=detail,
        time_ns=total,
        span_ns=dg.span_ns,
        evidence={
            "cause": cause,
            "rank": dg.rank,
            "device": dg.device,
            "gaps": n,
            "total_ns": total,
            "idle_ns": dg.idle_ns,
            "span_ns": dg.span_ns,
            "where": top,
            "longest": [
                {
                    "start_ns": int(c.start_ns[i]),
                    "dur_ns": int(c.dur_ns[i]),
                    "next_op": int(c.next_op[i]),
                    "launch": int(c.launch_event[i]),
                    "cause_event": int(c.cause_event[i]),
                }
                for i in longest[:5].tolist()
            ],
        },
        thresholds={
            "gap_threshold_ns": dg.threshold_ns,
            "min_share": MIN_IDLE_SHARE,
            "min_total_ns": MIN_IDLE_NS,
        },
        interval=(int(c.start_ns[first]), int(c.start_ns[first] + c.dur_ns[first])),
        gpu_rank=dg.rank,
        device=dg.device,
    )
