"""A rank's trace reduced to a small, plain summary: what a fleet run ships between machines instead of the trace.

:func:`summarize_trace` makes the per-rank records from a loaded trace (the fleet's
:func:`gputop_trace.fleet.summarize.summarize_file` loads the file, then calls it next to the file).

The summary holds per-rank figures (steps, GPU busy/idle, idle by cause, top kernels, exposed copies, collective
time) and the rank's collective sequence as compact lists (op and group codes, start and end times in the file's
own time base), so that collectives can be matched across ranks afterwards exactly the way
:func:`~gputop_trace.analysis.ranks.stragglers.find_stragglers` matches them in one multi-rank trace.
Times are integer ns; points in time are in the file's own time base.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gputop_trace.model.trace import Trace

#: How many kernels (by total time) a summary keeps.
TOP_KERNELS = 10


@dataclass(frozen=True)
class SummaryOptions:
    """What :func:`summarize_file` computes: the idle-gap threshold (ns), the number of top kernels, an optional
    memory limit (bytes) checked before a file is loaded (``None``: what the machine has), and whether the
    loader's columnar cache is used (off: a fleet run reads each trace once, and a cache entry per rank would
    fill the workers' disks)."""

    gap_threshold_ns: int = 20_000
    top_kernels: int = TOP_KERNELS
    max_memory: int | None = None
    use_cache: bool = False


@dataclass(frozen=True)
class RankSummary:
    """One rank of a fleet, as plain data (ints, floats, strings, tuples, dicts): nothing of the trace itself.

    ``error`` is set when the file could not be analysed (``error_kind`` ``"input"`` for bad input,
    ``"internal"`` for a bug, with ``traceback``, ``"worker"`` when the process running it died); the figures are
    then zero. ``rank_given`` says whether the file stated the rank (Kineto ``distributedInfo``) rather than
    the rank being derived from its name or position; ``file_ranks`` how many ranks its file holds.
    ``t0_ns`` is the file time of the trace's first event; ``step_start_ns`` and ``coll_start_ns``/``coll_end_ns``
    are file times (ns).
    ``idle_by_cause`` maps each gap cause to ``{"count", "total_ns"}`` (gaps of at least ``gap_threshold_ns``,
    summed over the rank's GPUs). The collective sequence is ``coll_op``/``coll_group`` (indices into
    ``coll_ops``/``coll_groups``) with start and end times, in order of issue within each group.
    ``load_s``/``analyse_s`` are wall seconds and ``cpu_s`` the CPU seconds of the worker process for the
    rank (not part of the result proper: see :meth:`without_timings`).
    """

    path: str
    rank: int
    rank_given: bool = False
    file_ranks: int = 1
    error: str | None = None
    error_kind: str | None = None
    traceback: str | None = None
    format: str = ""
    producer: str = ""
    version: str = ""
    file_bytes: int = 0
    world_size: int | None = None
    devices: tuple[int, ...] = ()
    t0_ns: int = 0
    span_ns: int = 0
    busy_ns: int = 0
    idle_ns: int = 0
    gap_threshold_ns: int = 0
    gaps_ns: int = 0
    idle_by_cause: dict[str, dict[str, int]] = field(default_factory=dict)
    step_ns: tuple[int, ...] = ()
    step_start_ns: tuple[int, ...] = ()
    top_kernels: tuple[dict[str, Any], ...] = ()
    kernel_ns: int = 0
    copy_ns: int = 0
    copy_bytes: int = 0
    exposed_copy_ns: int = 0
    collectives: int = 0
    collective_ns: int = 0
    exposed_collective_ns: int = 0
    coll_ops: tuple[str, ...] = ()
    coll_groups: tuple[str, ...] = ()
    coll_op: tuple[int, ...] = ()
    coll_group: tuple[int, ...] = ()
    coll_start_ns: tuple[int, ...] = ()
    coll_end_ns: tuple[int, ...] = ()
    warnings: tuple[str, ...] = ()
    load_s: float = 0.0
    analyse_s: float = 0.0
    cpu_s: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether the rank was analysed."""
        return self.error is None

    @property
    def steps(self) -> int:
        """Number of steps found."""
        return len(self.step_ns)

    @property
    def mean_step_ns(self) -> float | None:
        """Mean step duration (ns), None without steps."""
        return sum(self.step_ns) / len(self.step_ns) if self.step_ns else None

    @property
    def busy_pct(self) -> float:
        """GPU busy share of the active span (0–100; several GPUs: summed busy over summed span)."""
        total = self.busy_ns + self.idle_ns
        return 100.0 * self.busy_ns / total if total else 0.0

    def without_timings(self) -> RankSummary:
        """The same summary with the wall-clock fields zeroed (for comparing results of different runs)."""
        return dataclasses.replace(self, load_s=0.0, analyse_s=0.0, cpu_s=0.0)


def summarize_trace(trace: Trace, path: str, options: SummaryOptions | None = None) -> list[RankSummary]:
    """The summaries of a loaded trace, one per rank, by rank (the analysis half of
    :func:`gputop_trace.fleet.summarize.summarize_file`, which adds the file's size and the tool's version)."""

    from gputop_trace.analysis.busy import device_busy
    from gputop_trace.analysis.gaps.detect import find_gaps
    from gputop_trace.analysis.ranks.collectives import comm_compute_overlap, find_collectives
    from gputop_trace.analysis.steps import find_steps, steps_note
    from gputop_trace.analysis.transfers import transfer_overlap
    from gputop_trace.model.arrays import isin
    from gputop_trace.model.kinds import Kind

    opts = options or SummaryOptions()
    ranks = sorted(trace.meta.ranks) or [0]
    gaps = find_gaps(trace, opts.gap_threshold_ns)
    busy = device_busy(trace)
    steps = {s.rank: s for s in find_steps(trace)}
    transfers = transfer_overlap(trace)
    coll = find_collectives(trace)
    overlap = comm_compute_overlap(trace, coll)
    memcpy = trace.copies.event[trace.kind[trace.copies.event] == Kind.MEMCPY]
    copy_rank = trace.event_rank[memcpy]
    copy_bytes = trace.copies.bytes[isin(trace.copies.event, memcpy)].clip(0)
    given = isinstance(trace.meta.properties.get("distributedInfo"), dict)
    warnings = tuple(dict.fromkeys(trace.meta.warnings))
    common = {
        "path": path,
        "rank_given": given,
        "file_ranks": len(ranks),
        "format": trace.meta.format,
        "producer": trace.meta.producer,
        "world_size": trace.meta.world_size,
        "gap_threshold_ns": int(opts.gap_threshold_ns),
        "warnings": warnings,
    }
    out = []
    for r in ranks:
        note = steps_note(trace, steps[r]) if r in steps else None  # a step cut at the end of the recording
        out.append(
            _rank_summary(
                trace,
                r,
                {**common, "warnings": (*warnings, note)} if note else common,
                opts,
                gaps=[g for g in gaps if g.rank == r],
                busy=[b for b in busy if b.rank == r],
                steps=steps.get(r),
                transfers=[d for d in transfers.devices if d.rank == r],
                coll=coll,
                overlap=[o for o in overlap if o.rank == r],
                copy_bytes=int(copy_bytes[copy_rank == r].sum()),
            )
        )
    return out


def _rank_summary(
    trace: Trace,
    rank: int,
    common: dict[str, Any],
    opts: SummaryOptions,
    *,
    gaps: list[Any],
    busy: list[Any],
    steps: Any,
    transfers: list[Any],
    coll: Any,
    overlap: list[Any],
    copy_bytes: int,
) -> RankSummary:
    import numpy as np

    from gputop_trace.analysis.gaps.causes import CAUSES
    from gputop_trace.analysis.kernels import kernel_table

    base = trace.file_time_ns(0, rank)
    by_cause = {c: {"count": 0, "total_ns": 0} for c in CAUSES}
    for dg in gaps:
        for c, tot in dg.by_cause.items():
            by_cause[c]["count"] += tot.count
            by_cause[c]["total_ns"] += tot.total_ns
    krows = kernel_table(trace, rank=rank, merge_devices=True)
    top = tuple(
        {
            "name": k.name,
            "count": k.count,
            "total_ns": k.total_ns,
            "mean_ns": round(k.mean_ns, 1),
            "max_ns": k.max_ns,
            "pct": round(k.pct, 3),
        }
        for k in krows[: opts.top_kernels]
    )
    mine = np.flatnonzero(coll.rank == rank)  # in issue order within each group, as match_collectives reads them
    ops: dict[str, int] = {}
    groups: dict[str, int] = {}
    op_codes = tuple(ops.setdefault(coll.op[i], len(ops)) for i in mine.tolist())
    group_codes = tuple(groups.setdefault(coll.group[i], len(groups)) for i in mine.tolist())
    return RankSummary(
        **common,
        rank=rank,
        devices=tuple(b.device for b in busy),
        t0_ns=base,
        span_ns=sum(b.span_ns for b in busy),
        busy_ns=sum(b.busy_ns for b in busy),
        idle_ns=sum(b.idle_ns for b in busy),
        gaps_ns=sum(dg.gaps_ns for dg in gaps),
        idle_by_cause=by_cause,
        step_ns=tuple(int(v) for v in steps.dur_ns.tolist()) if steps is not None else (),
        step_start_ns=tuple(int(v) + base for v in steps.start_ns.tolist()) if steps is not None else (),
        top_kernels=top,
        kernel_ns=sum(k.total_ns for k in krows),
        copy_ns=int(sum(d.copy_ns for d in transfers)),
        copy_bytes=copy_bytes,
        exposed_copy_ns=int(sum(d.exposed_ns for d in transfers)),
        collectives=len(mine),
        collective_ns=sum(o.comm_ns for o in overlap),
        exposed_collective_ns=sum(o.exposed_ns for o in overlap),
        coll_ops=tuple(ops),
        coll_groups=tuple(groups),
        coll_op=op_codes,
        coll_group=group_codes,
        coll_start_ns=tuple((coll.start_ns[mine] + base).tolist()),
        coll_end_ns=tuple((coll.end_ns[mine] + base).tolist()),
    )
