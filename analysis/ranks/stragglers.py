"""Stragglers: collectives matched across ranks, who arrives last, and how long the others wait for it.

Each collective instance is matched across ranks by its order of issue within its process group (with a small
shift search so that traces whose recording windows start at different steps still line up: the shift that
best aligns the collectives' end times wins, since a collective ends at about the same moment on every rank).
A rank's *arrival* is when its collective kernel starts on the GPU; the rank that arrives last makes every
other rank wait inside the kernel for ``last_arrival - own_arrival``. Clock offsets between ranks (traces from
different hosts) are estimated from the end times and removed before arrivals are compared.
Times are int64 ns relative to the trace start.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from gputop_trace.analysis.host.activity import host_activity, host_activity_weights
from gputop_trace.analysis.ranks.collectives import Collectives, find_collectives
from gputop_trace.model.arrays import I64
from gputop_trace.model.trace import Trace

I32 = npt.NDArray[np.int32]

MAX_SHIFT = 3
#: a rank is called a straggler when it arrives last at least this often …
STRAGGLER_SHARE = 0.5
#: … by at least this much (median over the instances where it was last), ns
STRAGGLER_MIN_LATE_NS = 100_000


@dataclass(frozen=True)
class MatchedGroup:
    """Collective instances of one process group matched across ranks.

    Arrays are ``[instance, rank]`` in the order of ``ranks``; ``event`` is ``-1`` where a rank has no match.
    ``arrival_ns``/``end_ns`` are on the reference rank's clock (offsets removed); ``wait_ns`` is how long each
    rank waited in that instance for the last one, capped by its own instance's duration (a rank cannot wait inside
    a kernel longer than the kernel ran); ``last`` the column of the last arriver.
    """

    group: str
    ranks: tuple[int, ...]
    op: tuple[str, ...]
    event: I64
    arrival_ns: I64
    end_ns: I64
    wait_ns: I64
    last: I32
    unmatched: int = 0
    offset_ns: dict[int, int] = field(default_factory=dict)  # each rank's clock offset vs the first rank

    def __len__(self) -> int:
        return int(self.event.shape[0])


@dataclass(frozen=True)
class RankWait:
    """One rank's share of collective waiting (ns). ``wait_ns``: time spent inside collectives waiting for
    others; ``imposed_ns``: time the others waited while this rank was the last to arrive; ``late_median_ns``:
    median lateness (own arrival − earliest other arrival) over the instances where it was last; ``waited_for``:
    its ``wait_ns`` split by the rank that arrived last in each instance (never the rank itself: the last arriver
    waits 0)."""

    rank: int
    instances: int
    times_last: int
    wait_ns: int
    imposed_ns: int
    late_median_ns: int
    late_max_ns: int = 0
    waited_for: dict[int, int] = field(default_factory=dict)


def pick_straggler(waits: list[RankWait], instances: int) -> tuple[int | None, float]:
    """``(rank, share)``: the rank most often last (then the one imposing most waiting), named the straggler when
    it is last in at least :data:`STRAGGLER_SHARE` of its instances and ≥ :data:`STRAGGLER_MIN_LATE_NS` late at
    the median (None otherwise); ``share`` is its fraction of instances where it was last."""
    if not waits or not instances:
        return None, 0.0
    top = max(waits, key=lambda w: (w.times_last, w.imposed_ns))
    share = top.times_last / max(1, top.instances)
    named = share >= STRAGGLER_SHARE and top.late_median_ns >= STRAGGLER_MIN_LATE_NS
    return (top.rank if named else None), share


@dataclass(frozen=True)
class StragglerReport:
    """Who arrives last at collectives, by how much, and what its host thread was doing meanwhile."""

    groups: list[MatchedGroup]
    ranks: list[RankWait]
    clock_offset_ns: dict[int, int]
    straggler: int | None = None
    straggler_share: float = 0.0
    #: what the straggler's host was in while the others waited: (activity, ns of others' waiting), largest first
    host_activity: list[tuple[str, int]] = field(default_factory=list)
    instances: int = 0


#: end-time spreads within this much of the best count as equally good alignments (ns)
SPREAD_TOLERANCE_NS = 50_000


def _best_shift(ref_end: I64, ref_ops: list[str], end: I64, ops: list[str]) -> tuple[int, int]:
    """The shift s (rank sequence index = ref index + s) that best aligns end times, and the clock offset.

    Collectives end together on every rank, so the right shift makes ``end - ref_end`` nearly constant (small
    spread). Periodic steps make several shifts equally constant; among those, the smallest clock offset wins
    (clocks are assumed to agree to better than half a step)."""
    cands: list[tuple[float, int, int]] = []
    for s in range(-MAX_SHIFT, MAX_SHIFT + 1):
        i = np.arange(len(ref_end))
        j = i + s
        ok = (j >= 0) & (j < len(end))
        i, j = i[ok], j[ok]
        if len(i) == 0:
            continue
        same = np.array([ref_ops[a] == ops[b] for a, b in zip(i.tolist(), j.tolist(), strict=True)], dtype=bool)
        i, j = i[same], j[same]
        if len(i) < max(1, min(len(ref_end), len(end)) // 2):
            continue
        diff = end[j] - ref_end[i]
        med = int(np.median(diff))
        cands.append((float(np.median(np.abs(diff - med))), med, s))
    if not cands:
        return 0, 0
    best_spread = min(c[0] for c in cands)
    good = [c for c in cands if c[0] <= best_spread + SPREAD_TOLERANCE_NS]
    _, med, s = min(good, key=lambda c: (abs(c[1]), abs(c[2])))
    return s, med


@dataclass(frozen=True)
class RankSequence:
    """One rank's collectives of one group in order of issue: op names, start and end times (ns, on the rank's
    own clock) and an id per collective (an event index, or any id the caller wants back)."""

    ops: list[str]
    start_ns: I64
    end_ns: I64
    ids: I64


def match_sequences(group: str, seqs: dict[int, RankSequence]) -> MatchedGroup | None:
    """Match one group's collectives across ranks (None for fewer than two ranks). Works on plain arrays so
    that per-rank summaries gathered from many machines can be matched without their traces."""
    ranks = sorted(seqs)
    if len(ranks) < 2:
        return None
    ref = seqs[ranks[0]]
    n = len(ref.ops)
    event = np.full((n, len(ranks)), -1, dtype=np.int64)
    arrival = np.zeros((n, len(ranks)), dtype=np.int64)
    end = np.zeros((n, len(ranks)), dtype=np.int64)
    present = np.zeros((n, len(ranks)), dtype=bool)
    event[:, 0], arrival[:, 0], end[:, 0], present[:, 0] = ref.ids, ref.start_ns, ref.end_ns, True
    offsets = {ranks[0]: 0}
    unmatched = 0
    for c, r in enumerate(ranks[1:], start=1):
        sq = seqs[r]
        s, offset = _best_shift(ref.end_ns, ref.ops, sq.end_ns, sq.ops)
        offsets[r] = offset
        i = np.arange(n)
        j = i + s
        ok = (j >= 0) & (j < len(sq.ops))
        ok[ok] = np.array([ref.ops[a] == sq.ops[b] for a, b in zip(i[ok].tolist(), j[ok].tolist(), strict=True)])
        unmatched += int(len(sq.ops) - ok.sum())
        event[ok, c] = sq.ids[j[ok]]
        arrival[ok, c] = sq.start_ns[j[ok]] - offset
        end[ok, c] = sq.end_ns[j[ok]] - offset
        present[ok, c] = True
    full: npt.NDArray[np.bool_] = np.all(present, axis=1)
    event, arrival, end = event[full], arrival[full], end[full]
    ops_kept = tuple(op for op, f in zip(ref.ops, list(full), strict=True) if f)
    last = np.argmax(arrival, axis=1).astype(np.int32) if len(event) else np.zeros(0, dtype=np.int32)
    wait = (arrival.max(axis=1, initial=0)[:, None] - arrival) if len(event) else arrival
    # a rank waits inside its own instance only: never longer than that kernel ran (clocks of unrelated or
    # partially loaded jobs can put the last arrival far beyond it)
    wait = np.clip(wait, 0, np.maximum(end - arrival, 0))
    return MatchedGroup(
        group=group,
        ranks=tuple(ranks),
        op=ops_kept,
        event=event,
        arrival_ns=arrival,
        end_ns=end,
        wait_ns=wait,
        last=last,
        unmatched=unmatched + int((~full).sum()),
        offset_ns=offsets,
    )


def match_collectives(trace: Trace, coll: Collectives | None = None) -> list[MatchedGroup]:
    """Match every process group's collectives across the ranks that issued them."""
    coll = coll if coll is not None else find_collectives(trace)
    out: list[MatchedGroup] = []
    group_arr = np.array(coll.group, dtype=object)
    for g in sorted(set(coll.group)):
        in_g = group_arr == g
        seqs: dict[int, RankSequence] = {}
        for r in sorted({int(x) for x in coll.rank[in_g].tolist()}):
            idx = np.flatnonzero(in_g & (coll.rank == r))
            seqs[r] = RankSequence(
                ops=[coll.op[i] for i in idx.tolist()],
                start_ns=coll.start_ns[idx],
                end_ns=coll.end_ns[idx],
                ids=coll.event[idx],
            )
        m = match_sequences(g, seqs)
        if m is not None:
            out.append(m)
    return out


def clock_offsets(groups: list[MatchedGroup]) -> dict[int, int]:
    """Estimated clock offset of every rank relative to the lowest rank (ns): the median difference of the end
    times of its matched collectives, weighted by how many each group matched. Ranks without any are absent."""
    acc: dict[int, list[tuple[int, int]]] = {}
    for g in groups:
        for r, off in g.offset_ns.items():
            acc.setdefault(r, []).append((off, max(1, len(g))))
    out: dict[int, int] = {}
    for r, pairs in acc.items():
        vals = np.repeat([p[0] for p in pairs], [p[1] for p in pairs])
        out[r] = int(np.median(vals))
    return out


@dataclass
class _Acc:
    instances: int = 0
    last: int = 0
    wait: int = 0
    imposed: int = 0
    late: list[int] = field(default_factory=list)
    waited_for: Counter[int] = field(default_factory=Counter)


def find_stragglers(trace: Trace) -> StragglerReport:
    """Per-rank collective waiting, the straggler (if one rank is usually last), and what it was doing."""
    coll = find_collectives(trace)
    groups = match_collectives(trace, coll)
    offsets = clock_offsets(groups)
    acc: dict[int, _Acc] = {}
    for g in groups:
        for c, r in enumerate(g.ranks):
            a = acc.setdefault(r, _Acc())
            a.instances += len(g)
            is_last = g.last == c
            a.last += int(is_last.sum())
            a.wait += int(g.wait_ns[:, c].sum())
            for lc, w in zip(g.last.tolist(), g.wait_ns[:, c].tolist(), strict=True):
                if lc != c and w > 0:
                    a.waited_for[g.ranks[lc]] += int(w)
            a.imposed += int(np.delete(g.wait_ns, c, axis=1)[is_last].sum())
            if is_last.any():
                earliest_other = np.delete(g.arrival_ns, c, axis=1)[is_last].min(axis=1)
                a.late.extend((g.arrival_ns[is_last, c] - earliest_other).tolist())
    ranks = [
        RankWait(
            rank=r,
            instances=a.instances,
            times_last=a.last,
            wait_ns=a.wait,
            imposed_ns=a.imposed,
            late_median_ns=int(np.median(a.late)) if a.late else 0,
            late_max_ns=int(max(a.late)) if a.late else 0,
            waited_for=dict(sorted(a.waited_for.items())),
        )
        for r, a in sorted(acc.items())
    ]
    total = sum(len(g) for g in groups)
    straggler, share = pick_straggler(ranks, total)
    activity = _host_activity(trace, groups, straggler, offsets) if straggler is not None else []
    return StragglerReport(
        groups=groups,
        ranks=ranks,
        clock_offset_ns=offsets,
        straggler=straggler,
        straggler_share=share,
        host_activity=activity,
        instances=total,
    )


def _host_activity(
    trace: Trace, groups: list[MatchedGroup], rank: int, offsets: dict[int, int]
) -> list[tuple[str, int]]:
    """What the straggler's host was doing while the others waited for it (:mod:`~gputop_trace.analysis.
    host_activity`: from the first other rank's arrival to its own), tallied by the others' waiting over the
    instances where it was last."""
    starts: list[int] = []
    ends: list[int] = []
    weights: list[int] = []
    launch_lanes: list[int] = []
    for g in groups:
        if rank not in g.ranks:
            continue
        c = g.ranks.index(rank)
        for i in np.flatnonzero(g.last == c).tolist():
            api = int(trace.launch_of[int(g.event[i, c])])
            others = np.delete(g.arrival_ns[i], c)
            starts.append(int(others.min()) + offsets.get(rank, 0))
            ends.append(int(g.arrival_ns[i, c]) + offsets.get(rank, 0))
            weights.append(int(np.delete(g.wait_ns[i], c).max()))
            launch_lanes.append(int(trace.lane[api]) if api >= 0 else -1)
    if not starts:
        return []
    return host_activity_weights(host_activity(trace, rank, launch_lanes, starts, ends), weights)
