"""Aligning the clocks of ranks recorded on different hosts, from the end times of their collectives."""

from __future__ import annotations

import dataclasses

import numpy as np

from gputop_trace.analysis.ranks.stragglers import clock_offsets, match_collectives
from gputop_trace.model.trace import Trace
from gputop_trace.units import plural

#: offsets smaller than this are clock noise between processes on one host and are left alone (ns)
ALIGN_THRESHOLD_NS = 500_000


def align_rank_clocks(trace: Trace, threshold_ns: int = ALIGN_THRESHOLD_NS) -> Trace:
    """Shift each rank whose clock is off by at least ``threshold_ns`` so that matched collectives end together.

    Returns the same trace when nothing needs shifting; otherwise a new trace whose ``meta.rank_shift_ns`` records
    the shift (file time = ``start_ns + t0_ns - shift``) with a warning per shifted rank.
    """
    if len(trace.meta.ranks) < 2:
        return trace
    groups = match_collectives(trace)
    offsets = clock_offsets(groups)
    shifts = {r: -off for r, off in offsets.items() if abs(off) >= threshold_ns}
    if not shifts:
        return trace
    matched = sum(len(g) for g in groups)
    start = trace.start_ns.copy()
    rank_of = trace.event_rank
    for r, s in shifts.items():
        start[rank_of == r] += s
    counters = tuple(
        dataclasses.replace(c, ts_ns=c.ts_ns + shifts.get(c.rank, 0)) if c.rank in shifts else c for c in trace.counters
    )
    low = int(start.min()) if len(start) else 0
    start -= low
    start.flags.writeable = False
    warnings = [
        f"Rank {r}'s clock was {abs(s) / 1e6:.3f} ms {'ahead of' if s < 0 else 'behind'} rank "
        f"{min(trace.meta.ranks)}'s (estimated from the end times of {plural(matched, 'matched collective')}); its "
        "events are shifted so that collectives line up."
        for r, s in sorted(shifts.items())
    ]
    new_shift = {**trace.meta.rank_shift_ns}
    for r, s in shifts.items():
        new_shift[r] = new_shift.get(r, 0) + s
    out = dataclasses.replace(
        trace,
        start_ns=start,
        counters=counters,
        meta=dataclasses.replace(
            trace.meta,
            t0_ns=trace.meta.t0_ns + low,
            rank_shift_ns=new_shift,
            warnings=(*trace.meta.warnings, *warnings),
        ),
    )
    assert np.all(out.start_ns >= 0)
    return out
