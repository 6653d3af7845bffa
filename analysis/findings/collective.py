"""Findings about the time ranks spend inside collective kernels waiting for a straggler. Times are int64 ns."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gputop_trace.analysis.findings.draft import Draft, pct
from gputop_trace.analysis.gaps.detect import DeviceGaps
from gputop_trace.model.arrays import I64, distinct, percentile
from gputop_trace.model.trace import Trace
from gputop_trace.units import format_ns, plural

if TYPE_CHECKING:  # the cross-rank matching is imported only for a trace with several ranks
    from gputop_trace.analysis.ranks.collectives import Collectives
    from gputop_trace.analysis.ranks.stragglers import RankWait, StragglerReport

#: Collective wait: report a rank that waits at least this share of its active span.
MIN_COLLECTIVE_SHARE = 0.05
#: Single-rank estimate: a call's usual duration is this percentile of the calls of its kernel and message size.
BASELINE_PERCENTILE = 25


def single_rank_wait_estimate(name_ids: I64, sizes: I64, dur_ns: I64) -> int:
    """Estimated waiting (ns) inside one rank's collectives: the time each call runs beyond a usual call of the
    same kernel name and message size (``sizes`` in bytes, ``-1`` unknown), taken as the
    :data:`BASELINE_PERCENTILE` percentile of those calls' durations. A robust baseline: one outlier (a 4 µs call
    among 30 ms ones) does not turn the others into waiting, as the fastest call would."""
    wait = 0
    keys = np.stack((name_ids.astype(np.int64), sizes.astype(np.int64)), axis=1)
    _, inverse = np.unique(keys, axis=0, return_inverse=True)
    for g in distinct(inverse).tolist():
        d = dur_ns[inverse.reshape(-1) == g]
        base = percentile(d, BASELINE_PERCENTILE)
        wait += int(np.clip(d - base, 0, None).sum())
    return wait


def waited_on(w: RankWait, straggler: int | None) -> str:
    """Whom rank ``w`` waited for, in words: the straggler when most of its wait was for it, otherwise the ranks
    that arrived last while it waited (largest share first). A rank never waits for itself."""
    if straggler is not None and w.rank != straggler and 2 * w.waited_for.get(straggler, 0) >= w.wait_ns:
        return f"the straggling rank {straggler}"
    others = [r for r, _ in sorted(w.waited_for.items(), key=lambda kv: (-kv[1], kv[0])) if r != w.rank]
    if len(others) == 1:
        return f"rank {others[0]}"
    if others:
        return "the last rank to arrive (ranks " + ", ".join(str(r) for r in others[:4]) + ")"
    return "the last rank to arrive"


def _cross_rank_detail(
    w: RankWait, rep: StragglerReport, idle: dict[int, DeviceGaps], total_ns: int, count: int
) -> str:
    """The explanation of one rank's cross-rank collective wait (see :func:`collective_wait_findings`)."""
    s = rep.straggler
    head = (
        f"Rank {w.rank} spends {format_ns(total_ns)} in {plural(count, 'collective kernel')}; "
        f"{format_ns(w.wait_ns)} of that is"
    )
    if s is None:
        return (
            f"{head} waiting for the last rank to arrive, which is not always the same rank. Fix: look for uneven "
            "work between ranks (data, sequence lengths)."
        )
    late = format_ns(next((x.late_median_ns for x in rep.ranks if x.rank == s), 0))
    matched = plural(rep.instances, "matched collective")
    last_in = f"rank {s} arrived last in {rep.straggler_share * 100:.0f}% of {matched}"
    if w.rank == s:
        return (
            f"{head} waiting, inside the kernel, for {waited_on(w, s)}, in the collectives where rank {s} was not "
            f"the last to arrive. Rank {s} is itself the straggler ({last_in}, by {late} (median)): the other "
            "ranks' findings show what its lateness costs them. Fix: remove the straggler's extra host work or "
            "balance the load across ranks."
        )
    extra = ""
    if rep.host_activity:
        acts = ", ".join(f"`{a}`" for a, _ in rep.host_activity[:2])
        extra = f" While rank {w.rank} waited, rank {s}'s host was mostly in {acts}."
    sg = idle.get(s)
    if sg is not None and sg.idle_ns:
        top = max(sg.by_cause.values(), key=lambda ct: ct.total_ns)
        extra += (
            f" Rank {s}'s {sg.trace.device_words(s, sg.device).noun} is idle {sg.idle_pct:.1f}% of its active time, "
            f"mostly {top.label} "
            f"({format_ns(top.total_ns)})."
        )
    for_s = w.waited_for.get(s, 0)
    share = f" ({format_ns(for_s)} of it for rank {s})" if for_s < w.wait_ns else ""
    return (
        f"{head} waiting, inside the kernel, for the last rank to arrive{share} ({last_in}, by {late} (median))."
        f"{extra} Fix: remove the straggler's extra host work or balance the load across ranks."
    )


def collective_wait_findings(trace: Trace, gaps: list[DeviceGaps]) -> list[Draft]:
    """Time ranks spend inside collective kernels waiting for the last rank to arrive.

    With several ranks this is :func:`~gputop_trace.analysis.ranks.stragglers.find_stragglers` (collectives matched
    across ranks, arrivals compared); with one rank only, an estimate (:func:`single_rank_wait_estimate`)."""
    from gputop_trace.analysis.ranks.collectives import find_collectives

    coll = find_collectives(trace)
    if not len(coll):
        return []
    ranks = sorted({int(r) for r in coll.rank.tolist()})
    dur = coll.end_ns - coll.start_ns
    total = {r: int(dur[coll.rank == r].sum()) for r in ranks}
    count = {r: int((coll.rank == r).sum()) for r in ranks}
    library = trace.device_words().collective_library
    colls = f"{library} collectives" if library else "collectives"
    if len(ranks) > 1:
        return _cross_rank_drafts(trace, gaps, coll, dur, total, count, colls)
    return _single_rank_drafts(trace, gaps, coll, dur, ranks[0], total, count, colls)


def _cross_rank_drafts(
    trace: Trace,
    gaps: list[DeviceGaps],
    coll: Collectives,
    dur: I64,
    total: dict[int, int],
    count: dict[int, int],
    colls: str,
) -> list[Draft]:
    """One finding per rank that waits long enough in the collectives ``coll`` (``dur``: their durations, ns;
    ``total`` and ``count``: their time, ns, and number per rank; ``colls``: what to call them) for the others."""
    from gputop_trace.analysis.ranks.stragglers import find_stragglers

    spans = {g.rank: g.span_ns for g in gaps}
    devices = {g.rank: g.device for g in gaps}
    idle = {g.rank: g for g in gaps}
    out: list[Draft] = []
    rep = find_stragglers(trace)
    s = rep.straggler
    for w in rep.ranks:
        span = spans.get(w.rank, 0)
        if w.wait_ns <= 0 or w.wait_ns < MIN_COLLECTIVE_SHARE * span:
            continue
        out.append(
            Draft(
                kind="collective_wait",
                title=f"Rank {w.rank} waits {format_ns(w.wait_ns)} in {colls} for {waited_on(w, s)} "
                f"({pct(w.wait_ns, span)} of its active time)",
                detail=_cross_rank_detail(w, rep, idle, total[w.rank], count[w.rank]),
                time_ns=w.wait_ns,
                span_ns=span,
                evidence={
                    "rank": w.rank,
                    "straggler": s,
                    "wait_ns": w.wait_ns,
                    "waited_for": {str(k): v for k, v in w.waited_for.items()},
                    "collective_ns": total[w.rank],
                    "collectives": count[w.rank],
                    "by_rank": {
                        str(x.rank): {"wait_ns": x.wait_ns, "imposed_ns": x.imposed_ns, "times_last": x.times_last}
                        for x in rep.ranks
                    },
                    "straggler_host": [{"where": a, "wait_ns": v} for a, v in rep.host_activity],
                    "method": "cross-rank",
                },
                thresholds={"min_share": MIN_COLLECTIVE_SHARE},
                event=int(coll.event[coll.rank == w.rank][np.argmax(dur[coll.rank == w.rank])]),
                gpu_rank=w.rank,
                device=devices.get(w.rank),
            )
        )
    return out


def _single_rank_drafts(
    trace: Trace,
    gaps: list[DeviceGaps],
    coll: Collectives,
    dur: I64,
    r: int,
    total: dict[int, int],
    count: dict[int, int],
    colls: str,
) -> list[Draft]:
    """The finding of the one rank ``r``, where its collectives run longer than usual calls of their size (an
    estimate, :func:`single_rank_wait_estimate`); arguments as :func:`_cross_rank_drafts`'."""
    spans = {g.rank: g.span_ns for g in gaps}
    devices = {g.rank: g.device for g in gaps}
    out: list[Draft] = []
    wait = single_rank_wait_estimate(trace.name[coll.event].astype(np.int64), coll.bytes, dur)
    span = spans.get(r, 0)
    if wait <= 0 or wait < MIN_COLLECTIVE_SHARE * span:
        return out
    out.append(
        Draft(
            kind="collective_wait",
            title=f"{colls[0].upper()}{colls[1:]} run ~{format_ns(wait)} longer than a usual call of their size "
            f"({pct(wait, span)} of the active time): likely waiting for other ranks (an estimate from one rank)",
            detail=f"The {plural(count[r], 'collective kernel')} {'takes' if count[r] == 1 else 'take'} "
            f"{format_ns(total[r])}; an estimated {format_ns(wait)} of that is time above a usual call of the same "
            "kernel and message size (the lower quartile of those calls' durations, so one unusually fast call does "
            "not count the rest as waiting), usually spent waiting for a slower rank. It is an estimate: one rank's "
            "trace cannot show who was late. Open all ranks' traces together (a directory) to see which rank is "
            "late.",
            time_ns=wait,
            span_ns=span,
            evidence={
                "rank": r,
                "wait_ns": wait,
                "collective_ns": total[r],
                "collectives": count[r],
                "method": "single-rank",
                "estimate": True,
                "baseline": f"p{BASELINE_PERCENTILE} per kernel and message size",
            },
            thresholds={"min_share": MIN_COLLECTIVE_SHARE, "baseline_percentile": BASELINE_PERCENTILE},
            event=int(coll.event[np.argmax(dur)]),
            gpu_rank=r,
            device=devices.get(r),
        )
    )
    return out
