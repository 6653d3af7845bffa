"""Collectives of a fleet matched across ranks from their summaries alone: clock offsets, who waits, who is late.

The per-rank collective sequences of :class:`~gputop_trace.analysis.fleet.rank_summary.RankSummary` (file times) are
matched with :func:`~gputop_trace.analysis.ranks.stragglers.match_sequences` and clock offsets estimated with
:func:`~gputop_trace.analysis.ranks.stragglers.clock_offsets`, and each rank's waiting, imposed waiting, times last
and lateness are computed exactly as :func:`~gputop_trace.analysis.ranks.stragglers.find_stragglers` computes them
for a multi-rank trace (vectorized over ranks, so a thousand ranks cost no more than a few array passes).

On top of that, every rank gets an *arrival lateness*: in each matched collective instance, its arrival minus
the median arrival of all ranks (offsets removed), averaged over its instances. Unlike the lateness of
:class:`~gputop_trace.analysis.ranks.stragglers.RankWait` (only counted when the rank is the very last) it is defined
for every rank, which is what an outlier test over the fleet needs. It is a mean, not a median, on purpose: when
several ranks straggle, the latest one holds every rank's collective stream, so the others' kernels start late
only in the collectives where the stream was free (typically the first of each step); a median would hide them.
Times are int64 ns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from gputop_trace.analysis.fleet.rank_summary import RankSummary
from gputop_trace.analysis.ranks.stragglers import (
    MatchedGroup,
    RankSequence,
    RankWait,
    clock_offsets,
    match_sequences,
    pick_straggler,
)
from gputop_trace.model.arrays import I64


@dataclass(frozen=True)
class RankArrival:
    """One rank's place in the fleet's collectives (ns): own arrival − the instance's median arrival, averaged
    (``late_ns``), median (``late_median_ns``) and largest (``late_max_ns``) over its ``instances``."""

    rank: int
    instances: int
    late_ns: int
    late_median_ns: int
    late_max_ns: int


@dataclass(frozen=True)
class FleetCollectives:
    """Matched collectives of a fleet: per-group matches, clock offsets, per-rank waiting (the same figures as
    :func:`~gputop_trace.analysis.ranks.stragglers.find_stragglers`), per-rank arrival lateness, and the straggler by
    the same rule (``None`` when no rank is the last of most collectives by a clear margin)."""

    groups: list[MatchedGroup]
    waits: list[RankWait]
    arrivals: list[RankArrival]
    clock_offset_ns: dict[int, int]
    straggler: int | None = None
    straggler_share: float = 0.0
    instances: int = 0
    unmatched: dict[str, int] = field(default_factory=dict)


def rank_sequences(summaries: Sequence[RankSummary]) -> dict[str, dict[int, RankSequence]]:
    """Group name → rank → that rank's collective sequence in the group (file times, ids = position)."""
    out: dict[str, dict[int, RankSequence]] = {}
    for s in summaries:
        if not s.ok or not s.collectives:
            continue
        group = np.asarray(s.coll_group, dtype=np.int64)
        op = np.asarray(s.coll_op, dtype=np.int64)
        start = np.asarray(s.coll_start_ns, dtype=np.int64)
        end = np.asarray(s.coll_end_ns, dtype=np.int64)
        for gi, gname in enumerate(s.coll_groups):
            idx = np.flatnonzero(group == gi)
            out.setdefault(gname, {})[s.rank] = RankSequence(
                ops=[s.coll_ops[int(o)] for o in op[idx].tolist()],
                start_ns=start[idx],
                end_ns=end[idx],
                ids=idx.astype(np.int64),
            )
    return out


def match_fleet(summaries: Sequence[RankSummary]) -> FleetCollectives:
    """Match the collectives of every process group across the ranks and tally waiting and lateness."""
    groups: list[MatchedGroup] = []
    for gname, seqs in sorted(rank_sequences(summaries).items()):
        m = match_sequences(gname, seqs)
        if m is not None:
            groups.append(m)
    offsets = clock_offsets(groups)
    waits = _rank_waits(groups)
    arrivals = _rank_arrivals(groups)
    total = sum(len(g) for g in groups)
    straggler, share = pick_straggler(waits, total)
    return FleetCollectives(
        groups=groups,
        waits=waits,
        arrivals=arrivals,
        clock_offset_ns=offsets,
        straggler=straggler,
        straggler_share=share,
        instances=total,
        unmatched={g.group: g.unmatched for g in groups},
    )


def _rank_waits(groups: list[MatchedGroup]) -> list[RankWait]:
    """Per rank: instances, times last, own waiting, waiting imposed on the others while it was last, and its
    lateness (own arrival − earliest other arrival) where it was last. The last arriver's own wait is 0 and the
    earliest other arrival is the instance minimum, so each sum is one pass over the ``[instance, rank]`` arrays."""
    instances: dict[int, int] = {}
    last: dict[int, int] = {}
    wait: dict[int, int] = {}
    imposed: dict[int, int] = {}
    late: dict[int, list[I64]] = {}
    waited_for: dict[int, dict[int, int]] = {}
    for g in groups:
        n_ranks = len(g.ranks)
        if len(g):
            times_last = np.bincount(g.last, minlength=n_ranks)
            own_wait = g.wait_ns.sum(axis=0)
            row_wait = g.wait_ns.sum(axis=1)
            imposed_g = np.zeros(n_ranks, dtype=np.int64)
            np.add.at(imposed_g, g.last, row_wait)
            rows = np.arange(len(g))
            lateness = g.arrival_ns[rows, g.last] - g.arrival_ns.min(axis=1)
        else:
            times_last = own_wait = imposed_g = np.zeros(n_ranks, dtype=np.int64)
            lateness = np.zeros(0, dtype=np.int64)
        for c, r in enumerate(g.ranks):
            instances[r] = instances.get(r, 0) + len(g)
            last[r] = last.get(r, 0) + int(times_last[c])
            wait[r] = wait.get(r, 0) + int(own_wait[c])
            imposed[r] = imposed.get(r, 0) + int(imposed_g[c])
            late.setdefault(r, []).append(lateness[g.last == c] if len(g) else lateness)
            wf = waited_for.setdefault(r, {})
            if len(g):
                col = g.wait_ns[:, c]
                m = (g.last != c) & (col > 0)
                per = np.zeros(n_ranks, dtype=np.int64)
                np.add.at(per, g.last[m], col[m])
                for lc in np.flatnonzero(per).tolist():
                    wf[g.ranks[lc]] = wf.get(g.ranks[lc], 0) + int(per[lc])
    out: list[RankWait] = []
    for r in sorted(instances):
        lv = np.concatenate(late[r]) if late[r] else np.zeros(0, dtype=np.int64)
        out.append(
            RankWait(
                rank=r,
                instances=instances[r],
                times_last=last[r],
                wait_ns=wait[r],
                imposed_ns=imposed[r],
                late_median_ns=int(np.median(lv)) if len(lv) else 0,
                late_max_ns=int(lv.max()) if len(lv) else 0,
                waited_for=dict(sorted(waited_for[r].items())),
            )
        )
    return out


def _rank_arrivals(groups: list[MatchedGroup]) -> list[RankArrival]:
    """Per rank: its arrival minus the instance's median arrival; mean, median and maximum over its instances."""
    parts: dict[int, list[npt.NDArray[np.float64]]] = {}
    for g in groups:
        if not len(g):
            continue
        rel = g.arrival_ns - np.median(g.arrival_ns, axis=1, keepdims=True)
        for c, r in enumerate(g.ranks):
            parts.setdefault(r, []).append(rel[:, c])
    out: list[RankArrival] = []
    for r in sorted(parts):
        v = np.concatenate(parts[r])
        out.append(
            RankArrival(
                rank=r,
                instances=len(v),
                late_ns=round(float(v.mean())),
                late_median_ns=round(float(np.median(v))),
                late_max_ns=round(float(v.max())),
            )
        )
    return out
