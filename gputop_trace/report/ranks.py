"""The ranks document: per-rank rows, the straggler verdict as data and in plain words (JSON-contract form). The
command line prints it; the app's Ranks panel shows the same sentence.

Times are int64 ns; shares are percentages 0-100 (``share_last`` a fraction 0-1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gputop_trace.units import plural

if TYPE_CHECKING:
    from gputop_trace.analysis.ranks.stragglers import StragglerReport
    from gputop_trace.analysis.ranks.table import RankRow
    from gputop_trace.model.trace import Trace

COLUMNS = (
    "rank", "devices", "steps", "step_ns", "busy_ns", "idle_ns", "collectives", "collective_ns",
    "exposed_collective_ns", "hidden_collective_pct", "collective_wait_ns", "times_last", "late_median_ns",
)  # fmt: skip


def row_json(r: RankRow) -> dict[str, Any]:
    """One rank as a JSON-contract object."""
    return {
        "rank": r.rank,
        "devices": list(r.devices),
        "steps": r.steps,
        "step_ns": list(r.step_ns),
        "busy_ns": r.busy_ns,
        "idle_ns": r.idle_ns,
        "collectives": r.collectives,
        "collective_ns": r.collective_ns,
        "exposed_collective_ns": r.exposed_collective_ns,
        "hidden_collective_pct": round(r.hidden_collective_pct, 3),
        "collective_wait_ns": r.collective_wait_ns,
        "times_last": r.times_last,
        "late_median_ns": r.late_median_ns,
        "by_op": {op: {"count": n, "total_ns": t, "bytes": b} for op, (n, t, b) in r.by_op.items()},
    }


def straggler_json(s: StragglerReport, applied_shift_ns: dict[int, int] | None = None) -> dict[str, Any]:
    """The straggler verdict as a JSON-contract object.

    ``clock_offset_ns`` is, per rank, the clock offset that was applied (ns; positive: that rank's clock was
    ahead of the lowest rank's, and its events were moved back by as much; ``-meta.rank_shift_ns``), 0 for a rank
    left as recorded. ``residual_clock_offset_ns`` is what matching the collectives still estimates after that
    (offsets under the alignment threshold, 0.5 ms, are clock noise and left alone)."""
    shifts = applied_shift_ns or {}
    return {
        "straggler": s.straggler,
        "share_last": round(s.straggler_share, 4),
        "instances": s.instances,
        "clock_offset_ns": {str(k): -shifts.get(k, 0) for k in sorted(set(s.clock_offset_ns) | set(shifts))},
        "residual_clock_offset_ns": {str(k): v for k, v in s.clock_offset_ns.items()},
        "host_activity": [{"activity": a, "others_wait_ns": ns} for a, ns in s.host_activity],
        "groups": [{"group": g.group, "ranks": list(g.ranks), "matched": len(g), "unmatched": g.unmatched}
                   for g in s.groups],
    }  # fmt: skip


def straggler_sentence(s: StragglerReport, rows: list[RankRow]) -> str | None:
    """The verdict in plain words, or None when no rank stands out."""
    from gputop_trace.units import format_ns

    if s.straggler is None:
        return None
    me = next(w for w in s.ranks if w.rank == s.straggler)
    # only the waiting for the straggler: a rank's other waits are for whoever else arrived last
    waits = {w.rank: w.waited_for.get(me.rank, 0) for w in s.ranks if w.rank != me.rank}
    waiting = sorted(waits, key=lambda r: (-waits[r], r))
    who = ", ".join(f"rank {r} waits {format_ns(waits[r])}" for r in waiting[:3] if waits[r])
    text = (
        f"Rank {s.straggler} is the last to arrive at {me.times_last} of {plural(me.instances, 'collective')} "
        f"(late by {format_ns(me.late_median_ns)} median, {format_ns(me.late_max_ns)} at most); {who} in total "
        "inside collective kernels for it."
    )
    if s.host_activity:
        top, _ = s.host_activity[0]
        text += f" Meanwhile its host was in `{top}`: look there for work the other ranks do not do."
    return text


def ranks_document(trace: Trace, paths: list[str]) -> dict[str, Any]:
    """The ranks document."""
    from gputop_trace.analysis.ranks.stragglers import find_stragglers
    from gputop_trace.analysis.ranks.table import rank_table
    from gputop_trace.analysis.steps import find_steps, steps_note
    from gputop_trace.report.envelope import envelope

    strag = find_stragglers(trace)
    rows = rank_table(trace, strag)
    return envelope(
        "ranks",
        trace,
        paths,
        ranks=[row_json(r) for r in rows],
        stragglers=straggler_json(strag, trace.meta.rank_shift_ns),
        verdict=straggler_sentence(strag, rows),
        step_notes=[{"rank": s.rank, "note": n} for s in find_steps(trace) if (n := steps_note(trace, s)) is not None],
    )
