"""One row per rank: steps, GPU busy/idle, collectives (time, exposed, waiting) — the per-rank table of a
multi-GPU trace and the per-rank summary a fleet run gathers. Times in ns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gputop_trace.analysis.busy import device_busy
from gputop_trace.analysis.ranks.collectives import comm_compute_overlap, find_collectives
from gputop_trace.analysis.ranks.stragglers import StragglerReport, find_stragglers
from gputop_trace.analysis.steps import find_steps
from gputop_trace.model.trace import Trace


@dataclass(frozen=True)
class RankRow:
    """Per-rank figures (ns). ``step_ns`` lists the rank's step durations; ``collective_ns`` the union of its
    collective kernels; ``exposed_collective_ns`` the part with no computation beside it;
    ``collective_wait_ns`` the time spent inside collectives waiting for later ranks; ``times_last`` how often
    it was the last to arrive."""

    rank: int
    devices: tuple[int, ...]
    steps: int
    step_ns: tuple[int, ...]
    busy_ns: int
    idle_ns: int
    span_ns: int
    collectives: int
    collective_ns: int
    exposed_collective_ns: int
    hidden_collective_pct: float
    collective_wait_ns: int
    times_last: int
    late_median_ns: int
    by_op: dict[str, tuple[int, int, int]] = field(default_factory=dict)


def rank_table(trace: Trace, stragglers: StragglerReport | None = None) -> list[RankRow]:
    """The per-rank table, sorted by rank."""
    busy = device_busy(trace)
    coll = find_collectives(trace)
    overlap = comm_compute_overlap(trace, coll)
    strag = stragglers if stragglers is not None else find_stragglers(trace)
    steps = {s.rank: s for s in find_steps(trace)}
    waits = {w.rank: w for w in strag.ranks}
    rows: list[RankRow] = []
    for r in sorted(set(trace.meta.ranks) | {b.rank for b in busy}):
        b = [x for x in busy if x.rank == r]
        o = [x for x in overlap if x.rank == r]
        st = steps.get(r)
        w = waits.get(r)
        comm = sum(x.comm_ns for x in o)
        exposed = sum(x.exposed_ns for x in o)
        by_op: dict[str, tuple[int, int, int]] = {}
        for x in o:
            for op, (n, t, nb) in x.by_op.items():
                p = by_op.get(op, (0, 0, 0))
                by_op[op] = (p[0] + n, p[1] + t, p[2] + nb)
        rows.append(
            RankRow(
                rank=r,
                devices=tuple(x.device for x in b),
                steps=len(st) if st else 0,
                step_ns=tuple(int(v) for v in st.dur_ns.tolist()) if st else (),
                busy_ns=sum(x.busy_ns for x in b),
                idle_ns=sum(x.idle_ns for x in b),
                span_ns=max((x.span_ns for x in b), default=0),
                collectives=int(np.sum(coll.rank == r)),
                collective_ns=comm,
                exposed_collective_ns=exposed,
                hidden_collective_pct=100.0 * (comm - exposed) / comm if comm else 0.0,
                collective_wait_ns=w.wait_ns if w else 0,
                times_last=w.times_last if w else 0,
                late_median_ns=w.late_median_ns if w else 0,
                by_op=by_op,
            )
        )
    return rows
