"""Fleet findings: which of many ranks stand out, and what holds the fleet's GPUs idle. Input: per-rank summaries.

* **Outliers** by a robust z-score (Iglewicz and Hoaglin's modified z: ``0.6745 (x − median) / MAD``, or
  ``(x − median) / (1.2533 · mean absolute deviation)`` when the MAD is 0) on each rank's mean step time and on
  its arrival lateness at collectives (:mod:`gputop_trace.analysis.fleet.collectives`). Only the slow side
  counts, and only by a margin a user would care about (:data:`MIN_STEP_EXCESS`, :data:`MIN_LATE_NS`).
* The **slowest** ranks (mean step time) and the **most waited-on** ranks (the waiting they imposed on the
  others while they were the last to arrive).
* **Idle causes** that dominate across the fleet: the gap causes of :mod:`gputop_trace.analysis.gaps.detect` summed
  over every rank.

Each finding is a :class:`~gputop_trace.analysis.findings.assemble.Finding` whose ``time_ns`` is the time at stake and
whose ``severity`` is that time over the summed active GPU span of the fleet. Times are int64 ns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from gputop_trace.analysis.findings.assemble import Finding, at_stake_order
from gputop_trace.analysis.fleet.collectives import FleetCollectives, RankArrival, match_fleet
from gputop_trace.analysis.fleet.rank_summary import RankSummary
from gputop_trace.analysis.gaps.causes import CAUSE_LABELS, CAUSES
from gputop_trace.analysis.gaps.detect import CAUSE_FIX
from gputop_trace.analysis.ranks.stragglers import STRAGGLER_MIN_LATE_NS, RankWait
from gputop_trace.units import format_ns, plural

F64 = npt.NDArray[np.float64]

#: A rank is an outlier when its robust z-score is at least this …
Z_OUTLIER = 3.5
#: … and its mean step time is at least this share above the fleet median …
MIN_STEP_EXCESS = 0.05
#: … or it arrives at least this much later than the median rank (ns).
MIN_LATE_NS = STRAGGLER_MIN_LATE_NS
#: Outlier tests need at least this many ranks with a value.
MIN_RANKS = 3
#: An idle cause "dominates" when it holds at least this share of the fleet's gap time.
DOMINANT_CAUSE_SHARE = 0.25
#: Ranks named in a "slowest" / "most waited-on" finding.
TOP_RANKS = 5
#: Ranks whose mean step is at least this share of the slowest one's count as equally slow.
SAME_STEP = 0.99
#: Ranks named in a finding's title (the evidence lists all of them).
TITLE_RANKS = 4
MAX_FINDINGS = 10

_KIND_ORDER = {
    k: i
    for i, k in enumerate(
        ("late_arrival", "step_time_outlier", "most_waited_on", "slowest_ranks", "dominant_idle_cause")
    )
}


@dataclass(frozen=True)
class FleetRank:
    """One rank's fleet-level figures (ns). ``step_z``/``arrival_z`` are robust z-scores (None when the rank has
    no steps / no matched collectives, or the fleet is too small); ``*_outlier`` whether the rank is flagged.
    ``collective_wait_ns``, ``imposed_wait_ns``, ``times_last``, ``late_median_ns`` as in
    :class:`~gputop_trace.analysis.ranks.stragglers.RankWait`; ``arrival_late_ns`` its mean lateness against the
    median rank in each collective (``arrival_late_median_ns``, ``arrival_late_max_ns``: median, largest);
    ``clock_offset_ns`` its clock's estimated offset from the lowest rank's."""

    rank: int
    mean_step_ns: float | None = None
    step_z: float | None = None
    step_outlier: bool = False
    collective_wait_ns: int = 0
    imposed_wait_ns: int = 0
    times_last: int = 0
    instances: int = 0
    late_median_ns: int = 0
    late_max_ns: int = 0
    arrival_late_ns: int | None = None
    arrival_late_median_ns: int | None = None
    arrival_late_max_ns: int | None = None
    arrival_z: float | None = None
    late_outlier: bool = False
    clock_offset_ns: int | None = None


@dataclass(frozen=True)
class FleetReport:
    """The fleet: per-rank figures keyed by rank, matched collectives, findings (most important first) and the
    fleet medians the outlier tests used."""

    ranks: dict[int, FleetRank]
    collectives: FleetCollectives
    findings: list[Finding]
    median_step_ns: float | None = None
    median_late_ns: float | None = None
    stats: dict[str, Any] = field(default_factory=dict)


def robust_z(values: F64) -> F64:
    """Modified z-score of each value against the others (0 where all values are equal)."""
    x = np.asarray(values, dtype=np.float64)
    if not len(x):
        return x
    med = float(np.median(x))
    dev = x - med
    mad = float(np.median(np.abs(dev)))
    if mad > 0:
        out: F64 = 0.6745 * dev / mad
        return out
    mean_ad = float(np.mean(np.abs(dev)))
    if mean_ad > 0:
        out = dev / (1.253314 * mean_ad)
        return out
    return np.zeros_like(x)


def analyse_fleet(summaries: Sequence[RankSummary]) -> FleetReport:
    """Per-rank fleet figures and findings from the summaries of the ranks that were analysed."""
    ok = sorted((s for s in summaries if s.ok), key=lambda s: s.rank)
    coll = match_fleet(ok)
    waits = {w.rank: w for w in coll.waits}
    arrivals = {a.rank: a for a in coll.arrivals}
    stepped = [s for s in ok if s.step_ns]
    step_vals = np.array([s.mean_step_ns for s in stepped], dtype=np.float64)
    step_z = robust_z(step_vals) if len(stepped) >= MIN_RANKS else np.full(len(stepped), np.nan)
    med_step = float(np.median(step_vals)) if stepped else None
    late_ranks = sorted(arrivals)
    late_vals = np.array([arrivals[r].late_ns for r in late_ranks], dtype=np.float64)
    late_z = robust_z(late_vals) if len(late_ranks) >= MIN_RANKS else np.full(len(late_ranks), np.nan)
    med_late = float(np.median(late_vals)) if late_ranks else None
    sz = {s.rank: float(z) for s, z in zip(stepped, step_z, strict=True)}
    lz = {r: float(z) for r, z in zip(late_ranks, late_z, strict=True)}
    ranks = {
        s.rank: _fleet_rank(
            s, coll, (waits.get(s.rank), arrivals.get(s.rank)), (sz.get(s.rank), lz.get(s.rank)), med_step, med_late
        )
        for s in ok
    }
    span = sum(s.span_ns for s in ok)
    by_rank = {s.rank: s for s in ok}
    drafts: list[Finding] = []
    drafts += _late_arrival(ranks, by_rank, late_vals, med_late)
    drafts += _step_outliers(ranks, by_rank, step_vals, med_step)
    drafts += _most_waited_on(ranks, by_rank, coll)
    drafts += _slowest(ranks, by_rank, med_step)
    drafts += _dominant_causes(ok)
    drafts = [d for d in drafts if d.time_ns > 0]
    for i, d in enumerate(drafts):
        drafts[i] = _weighed(d, span)
    drafts.sort(key=lambda d: at_stake_order(d.time_ns, d.severity, d.kind, _KIND_ORDER))
    findings = [_numbered(i + 1, d) for i, d in enumerate(drafts[:MAX_FINDINGS])]
    stats = {
        "ranks": len(ok),
        "ranks_with_steps": len(stepped),
        "ranks_with_collectives": len(late_ranks),
        "median_step_ns": med_step,
        "step_mad_ns": _mad(step_vals),
        "median_arrival_late_ns": med_late,
        "arrival_mad_ns": _mad(late_vals),
        "collective_instances": coll.instances,
        "straggler": coll.straggler,
        "straggler_share_last": round(coll.straggler_share, 4),
        "clock_offset_ns": {str(k): v for k, v in sorted(coll.clock_offset_ns.items())},
        "groups": [
            {"group": g.group, "ranks": len(g.ranks), "matched": len(g), "unmatched": g.unmatched} for g in coll.groups
        ],
        "gpu_span_ns": span,
    }
    return FleetReport(
        ranks=ranks, collectives=coll, findings=findings, median_step_ns=med_step, median_late_ns=med_late, stats=stats
    )


def _fleet_rank(
    s: RankSummary,
    coll: FleetCollectives,
    wait: tuple[RankWait | None, RankArrival | None],
    z: tuple[float | None, float | None],
    med_step: float | None,
    med_late: float | None,
) -> FleetRank:
    """The fleet figures of one rank: its collective wait and arrival (``wait``; ``coll``: the fleet's), and whether
    its step time or its lateness (``z``: their robust z-scores, None where not computed) is an outlier against the
    medians (ns)."""
    w, a = wait
    z_s, z_l = z
    mean = s.mean_step_ns
    step_out = bool(
        z_s is not None
        and np.isfinite(z_s)
        and z_s >= Z_OUTLIER
        and med_step
        and mean is not None
        and mean - med_step >= MIN_STEP_EXCESS * med_step
    )
    late_out = bool(
        z_l is not None
        and np.isfinite(z_l)
        and z_l >= Z_OUTLIER
        and a is not None
        and med_late is not None
        and a.late_ns - med_late >= MIN_LATE_NS
    )
    return FleetRank(
        rank=s.rank,
        mean_step_ns=mean,
        step_z=_finite(z_s),
        step_outlier=step_out,
        collective_wait_ns=w.wait_ns if w else 0,
        imposed_wait_ns=w.imposed_ns if w else 0,
        times_last=w.times_last if w else 0,
        instances=w.instances if w else 0,
        late_median_ns=w.late_median_ns if w else 0,
        late_max_ns=w.late_max_ns if w else 0,
        arrival_late_ns=a.late_ns if a else None,
        arrival_late_median_ns=a.late_median_ns if a else None,
        arrival_late_max_ns=a.late_max_ns if a else None,
        arrival_z=_finite(z_l),
        late_outlier=late_out,
        clock_offset_ns=coll.clock_offset_ns.get(s.rank),
    )


def _finite(z: float | None) -> float | None:
    return round(z, 3) if z is not None and np.isfinite(z) else None


def _mad(v: F64) -> float | None:
    return float(np.median(np.abs(v - np.median(v)))) if len(v) else None


def _weighed(f: Finding, span: int) -> Finding:
    sev = min(1.0, f.time_ns / span) if span > 0 else 1.0
    return Finding(
        priority=0,
        kind=f.kind,
        title=f.title,
        detail=f.detail,
        severity=sev,
        time_ns=f.time_ns,
        evidence=f.evidence,
        thresholds=f.thresholds,
        gpu_rank=f.gpu_rank,
    )


def _numbered(i: int, f: Finding) -> Finding:
    return Finding(
        priority=i,
        kind=f.kind,
        title=f.title,
        detail=f.detail,
        severity=f.severity,
        time_ns=f.time_ns,
        evidence=f.evidence,
        thresholds=f.thresholds,
        gpu_rank=f.gpu_rank,
    )


def _draft(
    kind: str,
    title: str,
    detail: str,
    time_ns: int,
    evidence: dict[str, Any],
    thresholds: dict[str, Any],
    ranks: list[int],
) -> Finding:
    return Finding(
        priority=0,
        kind=kind,
        title=title,
        detail=detail,
        severity=0.0,
        time_ns=int(time_ns),
        evidence={**evidence, "ranks": ranks},
        thresholds=thresholds,
        gpu_rank=ranks[0] if len(ranks) == 1 else None,
    )


def _named(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c`` … with "and N more" past :data:`TITLE_RANKS`."""
    shown = items[:TITLE_RANKS]
    more = len(items) - len(shown)
    if more:
        return ", ".join(shown) + f" and {more} more"
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def _late_arrival(
    ranks: dict[int, FleetRank], by_rank: dict[int, RankSummary], late_vals: F64, med_late: float | None
) -> list[Finding]:
    out = sorted((r for r in ranks.values() if r.late_outlier), key=lambda r: -(r.arrival_late_ns or 0))
    if not out or med_late is None:
        return []
    all_wait = sum(r.collective_wait_ns for r in ranks.values())
    typical = min(
        (r for r in ranks.values() if r.arrival_late_ns is not None and not r.late_outlier),
        key=lambda r: abs((r.arrival_late_ns or 0) - med_late),
        default=None,
    )
    late = [f"rank {r.rank} (+{format_ns((r.arrival_late_ns or 0) - med_late)})" for r in out]
    if len(out) == 1:
        r = out[0]
        title = (
            f"Rank {r.rank} arrives late at collectives: {format_ns((r.arrival_late_ns or 0) - med_late)} after the "
            f"median rank on average, up to {format_ns(r.arrival_late_max_ns or 0)}"
        )
    else:
        title = f"{len(out)} ranks arrive late at collectives: {_named(late)} on average"
    at_stake = sum(max(r.imposed_wait_ns, round(((r.arrival_late_ns or 0) - med_late) * r.instances)) for r in out)
    detail = (
        "A collective kernel starts on a rank's GPU when the rank is ready for it (its host launched it and its "
        "stream is free), and it cannot finish before the last rank of the group has started it. "
        + ("This rank starts its collectives" if len(out) == 1 else "These ranks start their collectives")
        + f" later than the median rank (mean over {plural(out[0].instances, 'collective')}; robust z ≥ "
        f"{Z_OUTLIER} over {len(late_vals)} ranks, whose median is {format_ns(med_late)} with a MAD of "
        f"{format_ns(_mad(late_vals) or 0)}). Every other rank waits inside the kernel meanwhile: "
        f"{format_ns(sum(r.imposed_wait_ns for r in out))} of waiting while one of them was the last"
        + (
            f" ({100.0 * sum(r.imposed_wait_ns for r in out) / all_wait:.0f}% of all collective waiting)"
            if all_wait
            else ""
        )
        + ". Open one of them (gputop-trace view PATH) and compare what its host does before its collectives with "
        + (f"a typical rank such as rank {typical.rank}." if typical else "a typical rank.")
    )
    ev = {
        "outliers": [
            {
                "rank": r.rank,
                "path": by_rank[r.rank].path,
                "arrival_late_ns": r.arrival_late_ns,
                "arrival_late_median_ns": r.arrival_late_median_ns,
                "arrival_late_max_ns": r.arrival_late_max_ns,
                "arrival_z": r.arrival_z,
                "imposed_wait_ns": r.imposed_wait_ns,
                "times_last": r.times_last,
                "instances": r.instances,
            }
            for r in out
        ],
        "median_late_ns": round(med_late),
        "mad_ns": round(_mad(late_vals) or 0),
        "typical_rank": typical.rank if typical else None,
    }
    return [
        _draft(
            "late_arrival",
            title,
            detail,
            at_stake,
            ev,
            {"z": Z_OUTLIER, "min_late_ns": MIN_LATE_NS},
            [r.rank for r in out],
        )
    ]


def _step_outliers(
    ranks: dict[int, FleetRank], by_rank: dict[int, RankSummary], step_vals: F64, med_step: float | None
) -> list[Finding]:
    out = sorted((r for r in ranks.values() if r.step_outlier), key=lambda r: -(r.mean_step_ns or 0))
    if not out or not med_step:
        return []
    excess = sum(((r.mean_step_ns or 0) - med_step) * by_rank[r.rank].steps for r in out)

    def pct(r: FleetRank) -> str:
        return f"{100.0 * ((r.mean_step_ns or 0) - med_step) / med_step:.0f}%"

    if len(out) == 1:
        r = out[0]
        title = (
            f"Rank {r.rank}'s steps take {format_ns(r.mean_step_ns or 0)}, {pct(r)} longer than the fleet "
            f"median ({format_ns(med_step)})"
        )
    else:
        title = (
            f"{len(out)} ranks have slow steps: "
            + _named([f"rank {r.rank} ({format_ns(r.mean_step_ns or 0)}, +{pct(r)})" for r in out])
            + f"; fleet median {format_ns(med_step)}"
        )
    detail = (
        "Mean step time (the ProfilerStep#/step ranges) is an outlier on "
        + ("this rank" if len(out) == 1 else "these ranks")
        + f" (robust z ≥ {Z_OUTLIER} over {len(step_vals)} ranks and at least {MIN_STEP_EXCESS:.0%} above the median; "
        f"MAD {format_ns(_mad(step_vals) or 0)}). In synchronous training the others end up waiting for it: compare "
        "its trace with a typical rank's (idle causes, top kernels, host work per step)."
    )
    ev = {
        "outliers": [
            {
                "rank": r.rank,
                "path": by_rank[r.rank].path,
                "mean_step_ns": round(r.mean_step_ns or 0),
                "step_z": r.step_z,
                "steps": by_rank[r.rank].steps,
            }
            for r in out
        ],
        "median_step_ns": round(med_step),
        "mad_ns": round(_mad(step_vals) or 0),
    }
    return [
        _draft(
            "step_time_outlier",
            title,
            detail,
            round(excess),
            ev,
            {"z": Z_OUTLIER, "min_excess": MIN_STEP_EXCESS},
            [r.rank for r in out],
        )
    ]


def _most_waited_on(
    ranks: dict[int, FleetRank], by_rank: dict[int, RankSummary], coll: FleetCollectives
) -> list[Finding]:
    top = sorted((r for r in ranks.values() if r.imposed_wait_ns > 0), key=lambda r: (-r.imposed_wait_ns, r.rank))
    top = top[:TOP_RANKS]
    if not top:
        return []
    total = sum(r.imposed_wait_ns for r in ranks.values())
    names = [f"rank {r.rank} ({format_ns(r.imposed_wait_ns)})" for r in top]
    if coll.straggler is not None:
        r = ranks[coll.straggler]
        title = (
            f"Rank {r.rank} is the last to arrive at {r.times_last} of {plural(r.instances, 'collective')}; the others "
            f"wait {format_ns(r.imposed_wait_ns)} for it"
        )
    elif len(top) == 1:
        title = f"Rank {top[0].rank} makes the others wait most: {format_ns(top[0].imposed_wait_ns)} in collectives"
    else:
        title = "Ranks that make the others wait most: " + _named(names)
    detail = (
        "The last rank to arrive at a collective makes every other rank of its group wait inside the collective "
        "kernel; the time is the others' waiting while each of these ranks was the last"
        f" ({format_ns(total)} of waiting in all, over {plural(coll.instances, 'matched collective')}). "
        + "; ".join(f"rank {r.rank} was last at {r.times_last} of {r.instances}" for r in top)
        + "."
    )
    ev = {
        "ranks_detail": [
            {
                "rank": r.rank,
                "path": by_rank[r.rank].path,
                "imposed_wait_ns": r.imposed_wait_ns,
                "times_last": r.times_last,
                "instances": r.instances,
                "late_median_ns": r.late_median_ns,
            }
            for r in top
        ],
        "total_wait_ns": total,
        "straggler": coll.straggler,
        "straggler_share_last": round(coll.straggler_share, 4),
    }
    return [
        _draft(
            "most_waited_on",
            title,
            detail,
            sum(r.imposed_wait_ns for r in top),
            ev,
            {"top": TOP_RANKS},
            [r.rank for r in top],
        )
    ]


def _slowest(ranks: dict[int, FleetRank], by_rank: dict[int, RankSummary], med_step: float | None) -> list[Finding]:
    stepped = sorted(
        (r for r in ranks.values() if r.mean_step_ns is not None), key=lambda r: (-(r.mean_step_ns or 0), r.rank)
    )
    if len(stepped) < 2 or not med_step:
        return []
    slowest = stepped[0].mean_step_ns or 0.0
    if slowest <= med_step:
        return []
    # ranks within 1% of the slowest are as slow as it: name how many when they are more than a handful
    tied = [r for r in stepped if (r.mean_step_ns or 0) >= SAME_STEP * slowest]
    top = tied if len(tied) > TOP_RANKS else [r for r in stepped[:TOP_RANKS] if (r.mean_step_ns or 0) > med_step]
    excess = sum(((r.mean_step_ns or 0) - med_step) * by_rank[r.rank].steps for r in top)
    pct = 100.0 * (slowest - med_step) / med_step
    if len(tied) > TOP_RANKS:
        title = (
            f"{len(tied)} of {len(stepped)} ranks share the slowest mean step time ({format_ns(slowest)}, {pct:.0f}% "
            f"above the fleet median {format_ns(med_step)}): " + _named([str(r.rank) for r in tied])
        )
    else:
        title = (
            "Slowest ranks by mean step time: "
            + ", ".join(f"{r.rank} ({format_ns(r.mean_step_ns or 0)})" for r in top[:TITLE_RANKS])
            + f"; fleet median {format_ns(med_step)}"
        )
    detail = (
        f"Mean duration of the step ranges on the slowest of {len(stepped)} ranks, against the fleet median; the "
        "time at stake is their steps' excess over the median. Steps differ little across ranks of a synchronous "
        "job (they wait for each other at every collective), so a spread points at work the slow ranks do outside "
        "the synchronised part of the step (data loading, host stalls), or at profiles that cover different steps."
    )
    ev = {
        "ranks_detail": [
            {
                "rank": r.rank,
                "path": by_rank[r.rank].path,
                "mean_step_ns": round(r.mean_step_ns or 0),
                "steps": by_rank[r.rank].steps,
            }
            for r in top
        ],
        "median_step_ns": round(med_step),
        "slowest_step_ns": round(slowest),
        "ranks_as_slow": len(tied),
    }
    return [
        _draft(
            "slowest_ranks",
            title,
            detail,
            round(excess),
            ev,
            {"top": TOP_RANKS, "same": SAME_STEP},
            [r.rank for r in top],
        )
    ]


def _dominant_causes(ok: list[RankSummary]) -> list[Finding]:
    totals = {c: sum(s.idle_by_cause.get(c, {}).get("total_ns", 0) for s in ok) for c in CAUSES}
    counts = {c: sum(s.idle_by_cause.get(c, {}).get("count", 0) for s in ok) for c in CAUSES}
    all_gaps = sum(totals.values())
    if not all_gaps:
        return []
    top_cause_of = {
        s.rank: max(CAUSES, key=lambda c: s.idle_by_cause.get(c, {}).get("total_ns", 0))
        for s in ok
        if sum(v.get("total_ns", 0) for v in s.idle_by_cause.values())
    }
    out: list[Finding] = []
    for c in sorted(CAUSES, key=lambda c: -totals[c]):
        share = totals[c] / all_gaps
        if share < DOMINANT_CAUSE_SHARE or not totals[c]:
            continue
        on = sum(1 for v in top_cause_of.values() if v == c)
        worst = sorted(
            (s for s in ok if s.idle_by_cause.get(c, {}).get("total_ns", 0) > 0),
            key=lambda s: (-s.idle_by_cause.get(c, {}).get("total_ns", 0), s.rank),
        )[:3]
        title = (
            f"{CAUSE_LABELS[c][0].upper() + CAUSE_LABELS[c][1:]} holds {100 * share:.0f}% of GPU idle time "
            f"across the fleet ({format_ns(totals[c])} over {plural(len(ok), 'rank')}"
            + (f"; the largest cause on {on} of them)" if on else ")")
        )
        detail = (
            f"Idle gaps of at least {format_ns(ok[0].gap_threshold_ns)} summed over every rank's GPUs: "
            f"{format_ns(totals[c])} of {format_ns(all_gaps)} ({plural(counts[c], 'gap')}) are {CAUSE_LABELS[c]}; "
            "worst on "
            + ", ".join(f"rank {s.rank} ({format_ns(s.idle_by_cause.get(c, {}).get('total_ns', 0))})" for s in worst)
            + f". Fix: {CAUSE_FIX[c]}."
        )
        ev = {
            "cause": c,
            "label": CAUSE_LABELS[c],
            "total_ns": totals[c],
            "count": counts[c],
            "share_pct": round(100 * share, 3),
            "fleet_gaps_ns": all_gaps,
            "top_cause_on_ranks": on,
            "worst": [
                {"rank": s.rank, "path": s.path, "total_ns": s.idle_by_cause.get(c, {}).get("total_ns", 0)}
                for s in worst
            ],
        }
        out.append(
            _draft(
                "dominant_idle_cause",
                title,
                detail,
                totals[c],
                ev,
                {"min_share": DOMINANT_CAUSE_SHARE},
                [s.rank for s in worst],
            )
        )
    return out
