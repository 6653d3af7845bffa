"""Findings: the few things to fix first, in plain words, each with its evidence and the thresholds used.

Each detector below turns one analysis into findings with a ``time_ns`` at stake (GPU time lost or exposed)
and a ``severity`` = that time / the active span of the GPU concerned (0–1). Findings are ranked by severity;
``rank`` is the 1-based position. Times in ``evidence`` are int64 ns relative to the trace start, like
everything in :mod:`gputop_trace.analysis` (the command layer converts them to the file's time base).

Detectors: idle gaps grouped by cause (§2), host synchronizations (§2.4), transfer flags and side-stream copy
hiding (§3), launch-bound devices and launch overhead (§2.5, §5), time ranks spend waiting in collectives
for a straggler, and a profile with no GPU activity at all.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gputop_trace.analysis.enclosing import innermost_enclosing
from gputop_trace.analysis.gaps import CAUSE_FIX, CAUSE_LABELS, CAUSES, DEFAULT_THRESHOLD_NS, DeviceGaps, find_gaps
from gputop_trace.analysis.host import HostClass, cpu_lanes, host_classes, pageable_copy_calls
from gputop_trace.analysis.kernels import short_name
from gputop_trace.analysis.launches import LaunchReport, launch_behaviour
from gputop_trace.analysis.ranges import split_range_name
from gputop_trace.analysis.transfers import TransferReport, transfer_overlap
from gputop_trace.model.arrays import I64
from gputop_trace.model.kinds import GPU_BUSY_KINDS, Kind, LaneKind
from gputop_trace.model.trace import Trace
from gputop_trace.units import format_bytes, format_ns

#: A cause group of gaps becomes a finding when it holds at least this share of the device's active span ...
MIN_IDLE_SHARE = 0.02
#: ... or at least this much time (ns).
MIN_IDLE_NS = 1_000_000
#: Host syncs: report a (range, call) group whose total wait is at least this long (ns).
MIN_SYNC_NS = 50_000
#: Collective wait: report a rank that waits at least this share of its active span.
MIN_COLLECTIVE_SHARE = 0.05
#: Launch overhead: kernels shorter than their launch call, at least this many and this share of kernels.
MIN_TINY_KERNELS = 100
MIN_TINY_SHARE = 0.3
#: A single launch call at least this long is reported.
VERY_SLOW_LAUNCH_NS = 1_000_000
#: At most this many findings are returned.
MAX_FINDINGS = 10


#: Order of findings of equal weight: the root cause before its consequences.
_KIND_ORDER = {
    k: i
    for i, k in enumerate(
        (
            "no_gpu_activity",
            "collective_wait",
            "idle_gaps",
            "pageable_async",
            "sync_copy",
            "sync_memset",
            "host_sync",
            "copy_on_compute_stream",
            "launch_bound",
            "slow_launch",
            "launch_overhead",
            "side_stream_copy",
        )
    )
}


@dataclass(frozen=True)
class Finding:
    """One thing to look at. ``kind`` is a stable id (``idle_gaps``, ``host_sync``, ``pageable_async``, ...);
    ``title`` one line, ``detail`` a short paragraph with the fix; ``evidence`` the figures and event indices
    behind it (ns, model time); ``thresholds`` the limits that made it a finding. ``time_ns`` is the time at
    stake, ``severity`` its share of the concerned GPU's active span (0–1). ``event`` (trace index, ``-1``
    none) or ``interval`` (start, end ns) is where the timeline should jump. ``gpu_rank``/``device`` say
    which GPU it concerns (``None`` for the whole trace)."""

    rank: int
    kind: str
    title: str
    detail: str
    severity: float
    time_ns: int
    evidence: dict[str, Any] = field(default_factory=dict)
    thresholds: dict[str, Any] = field(default_factory=dict)
    event: int = -1
    interval: tuple[int, int] | None = None
    gpu_rank: int | None = None
    device: int | None = None


@dataclass
class _Draft:
    kind: str
    title: str
    detail: str
    time_ns: int
    span_ns: int
    evidence: dict[str, Any]
    thresholds: dict[str, Any]
    event: int = -1
    interval: tuple[int, int] | None = None
    gpu_rank: int | None = None
    device: int | None = None

    @property
    def severity(self) -> float:
        return min(1.0, self.time_ns / self.span_ns) if self.span_ns > 0 else (1.0 if self.time_ns else 0.0)


def find_findings(
    trace: Trace,
    *,
    gap_threshold_ns: int = DEFAULT_THRESHOLD_NS,
    gaps: list[DeviceGaps] | None = None,
    transfers: TransferReport | None = None,
    launches: LaunchReport | None = None,
    limit: int = MAX_FINDINGS,
) -> list[Finding]:
    """The ranked findings of a trace (most important first). Analyses already computed can be passed in."""
    if not len(trace.of_kind(*GPU_BUSY_KINDS)):
        return [_rank(1, d) for d in _no_gpu(trace)]
    gaps = gaps if gaps is not None else find_gaps(trace, gap_threshold_ns)
    transfers = transfers if transfers is not None else transfer_overlap(trace)
    launches = launches if launches is not None else launch_behaviour(trace)
    spans = {(g.rank, g.device): g.span_ns for g in gaps}
    drafts: list[_Draft] = []
    for dg in gaps:
        drafts.extend(_idle_findings(trace, dg, len(gaps) > 1))
        if dg.launch_bound:
            drafts.append(_launch_bound(dg, len(gaps) > 1))
    drafts.extend(_collective_wait(trace, gaps))
    drafts.extend(_sync_findings(trace, gaps, spans))
    drafts.extend(_transfer_findings(trace, transfers, spans))
    drafts.extend(_launch_findings(trace, launches, spans))
    drafts = [d for d in drafts if d.time_ns > 0 or d.kind in ("side_stream_copy",)]
    drafts.sort(key=lambda d: (-d.severity, -d.time_ns, _KIND_ORDER.get(d.kind, 99)))
    return [_rank(i + 1, d) for i, d in enumerate(drafts[:limit])]


def _rank(i: int, d: _Draft) -> Finding:
    return Finding(
        rank=i,
        kind=d.kind,
        title=d.title,
        detail=d.detail,
        severity=d.severity,
        time_ns=int(d.time_ns),
        evidence=d.evidence,
        thresholds=d.thresholds,
        event=d.event,
        interval=d.interval,
        gpu_rank=d.gpu_rank,
        device=d.device,
    )


def _gpu_label(rank: int, device: int, multi: bool, trace: Trace) -> str:
    if multi and len(trace.meta.ranks) > 1:
        return f"rank {rank} GPU {device}"
    return f"GPU {device}"


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "0%"


def _name(trace: Trace, i: int) -> str:
    return trace.event_name(i) if i >= 0 else ""


_NUMBER = re.compile(r"\d+")


def _plain(name: str) -> str:
    """A range or operator name without PyTorch ``emit_nvtx``'s per-call suffix (``, op_id = 317175``)."""
    return split_range_name(name, set())[1]


def _family(name: str) -> str:
    """A name with its numbers replaced, so ``step_1`` and ``step_2`` group together as ``step_<n>``."""
    return _NUMBER.sub("<n>", _plain(name))


def _family_label(names: set[str]) -> str:
    """The one name, or the family pattern when several names share it."""
    plain = {_plain(n) for n in names}
    return next(iter(plain)) if len(plain) == 1 else _family(next(iter(plain)))


# ---- idle gaps ------------------------------------------------------------------------------------------
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
        fam = _family(shown)
        families[fam] = families.get(fam, 0.0) + float(per_name[i])
        members.setdefault(fam, set()).add(shown)
    ranked = sorted(families, key=lambda f: -families[f])[:n]
    return [_family_label(members[f]) for f in ranked]


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


def _idle_findings(trace: Trace, dg: DeviceGaps, multi: bool) -> list[_Draft]:
    c = dg.columns
    out: list[_Draft] = []
    if not len(c):
        return out
    gpu = _gpu_label(dg.rank, dg.device, multi, trace)
    for code, cause in enumerate(CAUSES):
        idx = np.flatnonzero(c.cause == code)
        if not len(idx):
            continue
        total = int(c.dur_ns[idx].sum())
        if total < MIN_IDLE_NS and total < MIN_IDLE_SHARE * dg.span_ns:
            continue
        top = _top_subjects(trace, _subject_events(dg, idx, cause), c.dur_ns[idx], short=cause == "gpu_dependency")
        longest = idx[np.argsort(-c.dur_ns[idx], kind="stable")]
        s_main = f"`{top[0]}`" if top else "(unknown)"
        s_in = f", mostly in {', '.join(f'`{s}`' for s in top[:2])}" if top else ""
        phrase = _CAUSE_PHRASE[cause].format(s=s_main, s_in=s_in)
        n = len(idx)
        lengths = ", ".join(format_ns(int(x)) for x in c.dur_ns[longest[:3]].tolist())
        mean = total / n
        title = (
            # the share is this cause's, not the GPU's whole idle time (the detail gives that)
            f"{gpu}: {_pct(total, dg.span_ns)} of its active time idle in {n} gap{'s' if n > 1 else ''}"
            f"{f' of ~{format_ns(mean)} each' if n > 1 and c.dur_ns[idx].max() < 2 * mean else ''} "
            f"({format_ns(total)}) {phrase}"
        )
        why = _CAUSE_WHY[cause]
        fix = CAUSE_FIX[cause]
        if cause == "blocked_os" and top and "sleep" in top[0].lower():
            why = "The thread that feeds the GPU sleeps."
            fix = "remove the sleep from the launching thread, or issue the next GPU work before sleeping"
        detail = (
            f"{gpu} is idle {dg.idle_pct:.1f}% of its active span ({format_ns(dg.idle_ns)} of "
            f"{format_ns(dg.span_ns)}); {format_ns(total)} of it is in {n} gap{'s' if n > 1 else ''} of at least "
            f"{format_ns(dg.threshold_ns)} attributed to {CAUSE_LABELS[cause]} (longest: {lengths}). "
            f"{why + ' ' if why else ''}Fix: {fix}."
        )
        first = int(longest[0])
        out.append(
            _Draft(
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
        )
    return out


def _launch_bound(dg: DeviceGaps, multi: bool) -> _Draft:
    from gputop_trace.analysis.gaps import LAUNCH_GAP_NS, SHORT_OP_NS

    gpu = f"GPU {dg.device}" if not multi else f"rank {dg.rank} GPU {dg.device}"
    return _Draft(
        kind="launch_bound",
        title=f"{gpu} is launch-bound: {dg.short_gaps:,} gaps under {format_ns(LAUNCH_GAP_NS)} between short "
        f"kernels ({format_ns(dg.short_gaps_ns)}, {_pct(dg.short_gaps_ns, dg.span_ns)} of its active time)",
        detail=f"Kernels shorter than {format_ns(SHORT_OP_NS)} run back to back with small idle gaps between them: "
        "launch overhead, not GPU work, sets the pace. Fix: fuse small ops (torch.compile), capture the step in a "
        "CUDA graph, or make each kernel do more work (larger batch).",
        time_ns=dg.short_gaps_ns,
        span_ns=dg.span_ns,
        evidence={"rank": dg.rank, "device": dg.device, "short_gaps": dg.short_gaps, "short_gaps_ns": dg.short_gaps_ns},
        thresholds={"gap_below_ns": LAUNCH_GAP_NS, "kernel_below_ns": SHORT_OP_NS},
        interval=(dg.first_ns, dg.last_ns),
        gpu_rank=dg.rank,
        device=dg.device,
    )


# ---- collectives ----------------------------------------------------------------------------------------
def _collective_wait(trace: Trace, gaps: list[DeviceGaps]) -> list[_Draft]:
    """Time ranks spend inside collective kernels waiting for the last rank to arrive.

    With several ranks this is :func:`~gputop_trace.analysis.stragglers.find_stragglers` (collectives matched
    across ranks, arrivals compared); with one rank only, an estimate: the time each collective kernel runs
    beyond the fastest call of the same kernel."""
    from gputop_trace.analysis.collectives import find_collectives

    coll = find_collectives(trace)
    if not len(coll):
        return []
    spans = {g.rank: g.span_ns for g in gaps}
    devices = {g.rank: g.device for g in gaps}
    idle = {g.rank: g for g in gaps}
    ranks = sorted({int(r) for r in coll.rank.tolist()})
    dur = coll.end_ns - coll.start_ns
    total = {r: int(dur[coll.rank == r].sum()) for r in ranks}
    count = {r: int((coll.rank == r).sum()) for r in ranks}
    out: list[_Draft] = []
    if len(ranks) > 1:
        from gputop_trace.analysis.stragglers import find_stragglers

        rep = find_stragglers(trace)
        s = rep.straggler
        for w in rep.ranks:
            span = spans.get(w.rank, 0)
            if w.wait_ns <= 0 or w.wait_ns < MIN_COLLECTIVE_SHARE * span:
                continue
            who = f"the straggling rank {s}" if s is not None else "the last rank to arrive"
            extra = ""
            if s is not None and rep.host_activity:
                acts = ", ".join(f"`{a}`" for a, _ in rep.host_activity[:2])
                extra = f" While rank {w.rank} waited, rank {s}'s host was mostly in {acts}."
            sg = idle.get(s) if s is not None else None
            if sg is not None and sg.idle_ns:
                top = max(sg.by_cause.values(), key=lambda ct: ct.total_ns)
                extra += (
                    f" Rank {s}'s GPU is idle {sg.idle_pct:.1f}% of its active time, mostly {top.label} "
                    f"({format_ns(top.total_ns)})."
                )
            out.append(
                _Draft(
                    kind="collective_wait",
                    title=f"Rank {w.rank} waits {format_ns(w.wait_ns)} in NCCL collectives for {who} "
                    f"({_pct(w.wait_ns, span)} of its active time)",
                    detail=f"Rank {w.rank} spends {format_ns(total[w.rank])} in {count[w.rank]} collective kernels; "
                    f"{format_ns(w.wait_ns)} of that is waiting, inside the kernel, for the last rank to arrive "
                    f"(rank {s} arrived last in {rep.straggler_share * 100:.0f}% of {rep.instances} matched "
                    f"collectives, by {format_ns(next((x.late_median_ns for x in rep.ranks if x.rank == s), 0))} "
                    f"(median)).{extra} Fix: remove the straggler's extra host work or balance the load across "
                    "ranks."
                    if s is not None
                    else f"Rank {w.rank} spends {format_ns(total[w.rank])} in {count[w.rank]} collective kernels; "
                    f"{format_ns(w.wait_ns)} of that is waiting for the last rank to arrive, which is not always "
                    "the same rank. Fix: look for uneven work between ranks (data, sequence lengths).",
                    time_ns=w.wait_ns,
                    span_ns=span,
                    evidence={
                        "rank": w.rank,
                        "straggler": s,
                        "wait_ns": w.wait_ns,
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
    r = ranks[0]
    wait = 0
    for name_id in np.unique(trace.name[coll.event]).tolist():
        d = dur[trace.name[coll.event] == name_id]
        wait += int((d - d.min()).sum())
    span = spans.get(r, 0)
    if wait <= 0 or wait < MIN_COLLECTIVE_SHARE * span:
        return out
    out.append(
        _Draft(
            kind="collective_wait",
            title=f"NCCL collectives run ~{format_ns(wait)} longer than their fastest call "
            f"({_pct(wait, span)} of the active time): likely waiting for other ranks",
            detail=f"The {count[r]} collective kernels take {format_ns(total[r])}; {format_ns(wait)} of that is time "
            "above the fastest call of the same kernel, usually spent waiting for a slower rank. Open all ranks' "
            "traces together (a directory) to see which rank is late.",
            time_ns=wait,
            span_ns=span,
            evidence={
                "rank": r,
                "wait_ns": wait,
                "collective_ns": total[r],
                "collectives": count[r],
                "method": "single-rank",
            },
            thresholds={"min_share": MIN_COLLECTIVE_SHARE},
            event=int(coll.event[np.argmax(dur)]),
            gpu_rank=r,
            device=devices.get(r),
        )
    )
    return out


# ---- host syncs -----------------------------------------------------------------------------------------
def _sync_findings(trace: Trace, gaps: list[DeviceGaps], spans: dict[tuple[int, int], int]) -> list[_Draft]:
    lanes = cpu_lanes(trace)
    if not len(lanes):
        return []
    ev = np.flatnonzero(np.isin(trace.lane, lanes)).astype(np.int64)
    cls = host_classes(trace, ev)
    sync = ev[cls == HostClass.SYNC]
    sync = sync[~np.isin(sync, pageable_copy_calls(trace))]
    if not len(sync):
        return []
    # outermost syncs only (aten::item around cudaStreamSynchronize counts once); each inner sync maps to its
    # outermost sync, so the gaps found "after" an inner call are charged to the outer one
    owner = _outermost(trace, sync)
    outer = sync[owner == np.arange(len(sync))]
    rng = _enclosing_range(trace, outer)
    # group key per outer sync: (family of the enclosing range's name, call name, rank); string work once per
    # distinct name, everything else vectorized
    rng_name = np.where(rng >= 0, trace.name[np.maximum(rng, 0)], -1).astype(np.int64)
    fam_ids: dict[str, int] = {"": 0}
    fam_of_name = np.zeros(len(trace.names) + 1, dtype=np.int64)  # last slot: no range
    for i in np.unique(rng_name[rng_name >= 0]).tolist():
        fam_of_name[i] = fam_ids.setdefault(_family(trace.names[i]), len(fam_ids))
    fam = fam_of_name[rng_name]  # -1 indexes the last slot (no range → family "")
    keys = np.stack([fam, trace.name[outer].astype(np.int64), trace.event_rank[outer].astype(np.int64)])
    uniq, group = np.unique(keys, axis=1, return_inverse=True)
    group = np.asarray(group).reshape(-1)
    n_groups = uniq.shape[1]
    # gaps the syncs led into, charged to the outer sync of the call the thread was leaving
    group_by_pos = np.full(len(sync), -1, dtype=np.int64)
    group_by_pos[np.flatnonzero(owner == np.arange(len(sync)))] = group
    followed = np.zeros(n_groups, dtype=np.int64)
    stalled = np.zeros(n_groups, dtype=np.int64)
    stall_code = CAUSES.index("sync_stall")
    for dg in gaps:
        c = dg.columns
        j = np.flatnonzero(c.after_sync >= 0)
        if not len(j):
            continue
        a = c.after_sync[j]
        p = np.minimum(np.searchsorted(sync, a), len(sync) - 1)
        ok = sync[p] == a  # pageable copy calls are not in ``sync``
        g = group_by_pos[owner[p[ok]]]
        d = c.dur_ns[j[ok]]
        followed += np.bincount(g, weights=d, minlength=n_groups).astype(np.int64)
        st = c.cause[j[ok]] == stall_code
        stalled += np.bincount(g[st], weights=d[st], minlength=n_groups).astype(np.int64)
    members_by_group = np.argsort(group, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(group, minlength=n_groups))))
    out: list[_Draft] = []
    for key in range(n_groups):
        arr = outer[members_by_group[bounds[key] : bounds[key + 1]]]
        members = arr.tolist()
        call = trace.names[int(uniq[1, key])]
        rank = int(uniq[2, key])
        range_name = _family_label(
            {_name(trace, int(r)) for r in np.unique(rng[members_by_group[bounds[key] : bounds[key + 1]]]).tolist()}
        )
        waited = int(trace.dur_ns[arr].sum())
        # removing the sync lets the host run ahead by at most the time it blocked, and that only pays off
        # where the GPU then idled; gaps already attributed to the sync count in full
        at_stake = int(stalled[key]) + min(waited, int(followed[key] - stalled[key]))
        if at_stake < MIN_SYNC_NS:
            continue
        span = max((v for (r, _), v in spans.items() if r == rank), default=trace.span_ns)
        where = f" in `{range_name}`" if range_name else ""
        n = len(members)
        what = (
            "reads a GPU value on the host (.item(), .cpu(), .tolist(), print of a tensor)"
            if call in ("aten::item", "aten::_local_scalar_dense")
            else ("copies a device array to the host" if call.startswith("np.asarray") else "waits for the GPU")
        )
        who = f"Rank {rank}: host" if len(trace.meta.ranks) > 1 else "Host"
        title = f"{who} waits for the GPU: {n} × `{call}`{where} ({format_ns(waited)} blocked)"
        idle_after = (
            f" (the GPU then sat idle {format_ns(followed[key])} in the gaps that followed)" if followed[key] else ""
        )
        detail = (
            f"`{call}`{where} {what}; the host blocks until every queued kernel has finished, which also empties the "
            f"GPU queue{idle_after}. Fix: {_sync_fix(call)}"
        )
        out.append(
            _Draft(
                kind="host_sync",
                title=title,
                detail=detail,
                time_ns=at_stake,
                span_ns=span,
                evidence={
                    "call": call,
                    "range": range_name or None,
                    "rank": rank,
                    "count": n,
                    "blocked_ns": waited,
                    "idle_after_ns": int(followed[key]),
                    "sync_stall_ns": int(stalled[key]),
                    "events": members[:20],
                },
                thresholds={"min_ns": MIN_SYNC_NS},
                event=int(arr[np.argmax(trace.dur_ns[arr])]),
                gpu_rank=rank,
            )
        )
    return out


def _sync_fix(call: str) -> str:
    """One sentence on how to avoid a synchronizing call, by framework."""
    if call in ("aten::item", "aten::_local_scalar_dense"):
        return (
            "keep values on the GPU and read them every N steps (accumulate losses in a tensor), or copy with "
            "non_blocking=True into pinned memory and wait on a CUDA event later."
        )
    if call.startswith("np.asarray") or "block_until_ready" in call or "ToLiteral" in call:
        return (
            "fetch device values less often (every N steps), or start the transfer early with "
            "jax.Array.copy_to_host_async() and read it a step later."
        )
    return (
        "synchronize less often; order work between streams with events (cudaStreamWaitEvent) instead of "
        "waiting on the host, and wait on a specific event rather than the whole device."
    )


def _enclosing_range(trace: Trace, events: I64) -> I64:
    """Innermost annotation range around each event's start, other than the event itself."""
    rng = innermost_enclosing(trace, trace.lane[events], trace.start_ns[events], (Kind.RANGE,))
    self_hit = np.flatnonzero(rng == events)
    if len(self_hit):
        ev = events[self_hit]
        up = innermost_enclosing(trace, trace.lane[ev], trace.start_ns[ev] - 1, (Kind.RANGE,))
        ok = up >= 0
        ends = trace.start_ns[ev] + trace.dur_ns[ev]
        ok[ok] = trace.start_ns[up[ok]] + trace.dur_ns[up[ok]] >= ends[ok]
        rng[self_hit] = np.where(ok, up, -1)
    return rng


def _outermost(trace: Trace, events: I64) -> I64:
    """For each event (sorted by trace index: lane, then start), the position in ``events`` of the outermost
    event of the same lane that contains it (itself when none does)."""
    out = np.arange(len(events), dtype=np.int64)
    lanes = trace.lane[events]
    cut = np.flatnonzero(lanes[1:] != lanes[:-1]) + 1
    for a, b in zip(np.concatenate(([0], cut)).tolist(), np.concatenate((cut, [len(events)])).tolist(), strict=True):
        s = trace.start_ns[events[a:b]]
        e = s + trace.dur_ns[events[a:b]]
        run = np.maximum.accumulate(e)
        # a new outermost event starts where nothing earlier reaches past its start (or its end)
        contained = np.concatenate(([False], e[1:] <= run[:-1]))
        top = np.maximum.accumulate(np.where(~contained, np.arange(b - a), 0))
        out[a:b] = a + top
    return out


# ---- transfers ------------------------------------------------------------------------------------------
def _transfer_findings(trace: Trace, rep: TransferReport, spans: dict[tuple[int, int], int]) -> list[_Draft]:
    out: list[_Draft] = []
    span_all = max(spans.values(), default=trace.span_ns)
    blocking = {r.event for f in rep.flags if f.flag in ("pageable_async", "sync_copy") for r in f.rows}
    for flag in rep.flags:
        rows = flag.rows
        if flag.flag == "copy_on_compute_stream":
            # a copy that blocks the host is reported once, under its blocking flag
            rows = [r for r in rows if r.event not in blocking]
            if not rows:
                continue
        top = rows[0]
        exposed = sum(r.exposed_ns for r in rows)
        # the copies may sit on several GPUs: weigh them against those GPUs' spans together
        span = sum(spans.get(k, 0) for k in {(r.rank, r.device) for r in rows}) or span_all
        where = f" in `{_plain(top.range_name)}`" if top.range_name else ""
        biggest = (
            f"largest: {format_bytes(top.bytes)} {top.direction}"
            f"{f' ({top.host_memory})' if top.host_memory else ''} of {format_ns(top.dur_ns)} on stream "
            f"{top.stream}{where}"
        )
        n = len(rows)
        title = (
            f"{flag.title[0].upper()}{flag.title[1:]}: {n} cop{'ies' if n > 1 else 'y'}, "
            f"{format_ns(exposed)} exposed ({biggest})"
        )
        out.append(
            _Draft(
                kind=flag.flag,
                title=title,
                detail=f"{_FLAG_WHY[flag.flag]} {_copy_groups(trace, rows)} Fix: {flag.fix}",
                time_ns=exposed,
                span_ns=span,
                evidence={
                    "count": n,
                    "bytes": sum(r.bytes for r in rows),
                    "time_ns": sum(r.dur_ns for r in rows),
                    "exposed_ns": exposed,
                    "copies": [
                        {
                            "event": r.event,
                            "direction": r.direction,
                            "host_memory": r.host_memory,
                            "bytes": r.bytes,
                            "start_ns": r.start_ns,
                            "dur_ns": r.dur_ns,
                            "exposed_ns": r.exposed_ns,
                            "stream": r.stream,
                            "api": r.api,
                            "range": r.range_name,
                        }
                        for r in rows[:10]
                    ],
                },
                thresholds={"small_htod_bytes": 64 * 1024} if flag.flag == "sync_copy" else {},
                event=top.event,
                gpu_rank=top.rank,
                device=top.device,
            )
        )
    out.extend(_side_stream_copies(trace, rep, spans))
    return out


def _copy_groups(trace: Trace, rows: list[Any]) -> str:
    """``"Copies: 1 × 32.0 MiB DtoH (pageable) in `checkpoint_d2h` on stream 7 (24.0 ms); ..."``."""
    kernel_lanes = set(np.unique(trace.lane[trace.of_kind(Kind.KERNEL, Kind.GRAPH)]).tolist())
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for r in rows:
        fam = _family(r.range_name) if r.range_name else None
        groups.setdefault((r.direction, r.host_memory, fam, r.stream, r.lane, r.bytes), []).append(r)
    multi_rank = len({r.rank for r in rows}) > 1
    parts = []
    for (direction, host, fam, stream, lane, nbytes), members in sorted(
        groups.items(), key=lambda kv: -sum(r.exposed_ns for r in kv[1])
    )[:4]:
        rng = _family_label({r.range_name for r in members}) if fam is not None else None
        compute = " (a compute stream)" if lane in kernel_lanes else ""
        parts.append(
            f"{len(members)} × {format_bytes(nbytes)} {direction}{f' ({host})' if host else ''}"
            f"{f' in `{rng}`' if rng else ''} on {f'rank {members[0].rank} ' if multi_rank else ''}stream "
            f"{stream}{compute}, "
            f"{format_ns(sum(r.exposed_ns for r in members))} exposed"
        )
    more = f"; {len(groups) - 4} more groups" if len(groups) > 4 else ""
    return "Copies: " + "; ".join(parts) + more + "."


_FLAG_WHY = {
    "pageable_async": "An *Async copy to or from pageable (not pinned) host memory is staged by the driver: the "
    "host call blocks and the copy cannot overlap with kernels.",
    "sync_copy": "A synchronous cudaMemcpy blocks the host until the copy is done.",
    "copy_on_compute_stream": "These copies run on a stream that also runs kernels before and after them, so the "
    "GPU serializes them between the kernels instead of overlapping them.",
    "sync_memset": "A synchronous memset on pinned or managed memory blocks the host.",
}


def _side_stream_copies(trace: Trace, rep: TransferReport, spans: dict[tuple[int, int], int]) -> list[_Draft]:
    """How much of the copies on streams that run no kernels (copy side streams) is hidden behind kernels."""
    cols = rep.columns
    if not len(cols):
        return []
    k = trace.of_kind(Kind.KERNEL, Kind.GRAPH)
    k_lanes = np.unique(trace.lane[k])
    lanes = trace.lane[cols.event]
    side = ~cols.is_memset & ~np.isin(lanes, k_lanes) & (trace.lane_kind[lanes] == LaneKind.GPU_STREAM)
    sel = np.flatnonzero(side)
    if not len(sel):
        return []
    dur = trace.dur_ns[cols.event[sel]]
    time = int(dur.sum())
    exposed = int(cols.exposed_ns[sel].sum())
    hidden = time - exposed
    pct = 100.0 * hidden / time if time else 100.0
    per_stream = []
    for ln in np.unique(lanes[sel]).tolist():
        m = sel[lanes[sel] == ln]
        t_ns = int(trace.dur_ns[cols.event[m]].sum())
        h_ns = t_ns - int(cols.exposed_ns[m].sum())
        kinds = Counter(
            f"{'pinned ' if h == 2 else ('pageable ' if h == 1 else '')}{_dir_label(int(d))}"
            for d, h in zip(cols.direction[m].tolist(), cols.host_kind[m].tolist(), strict=True)
        )
        lane = trace.lanes[ln]
        per_stream.append(
            (
                f"stream {lane.stream}: {', '.join(f'{n} {kd}' for kd, n in kinds.most_common())}, "
                f"{100.0 * h_ns / t_ns if t_ns else 100.0:.0f}% hidden",
                {
                    "rank": lane.rank,
                    "device": lane.device,
                    "stream": lane.stream,
                    "copies": len(m),
                    "time_ns": t_ns,
                    "hidden_ns": h_ns,
                },
            )
        )
    first = trace.lanes[int(lanes[sel[0]])]
    advice = (
        "A side stream only helps while kernels run on another stream; these copies were issued while the GPU had "
        "nothing else to do. Issue them earlier (prefetch the next batch while the current step computes)."
        if pct < 50
        else "Most of the copy time overlaps with kernels, as intended."
    )
    streams = "; ".join(p for p, _ in per_stream[:4])
    return [
        _Draft(
            kind="side_stream_copy",
            title=f"Copies on side streams are {pct:.0f}% hidden behind kernels ({format_ns(hidden)} of "
            f"{format_ns(time)}; {streams})",
            detail=advice,
            time_ns=exposed,
            span_ns=spans.get((first.rank, first.device), trace.span_ns),
            evidence={
                "copies": len(sel),
                "time_ns": time,
                "hidden_ns": hidden,
                "exposed_ns": exposed,
                "hidden_pct": pct,
                "streams": [d for _, d in per_stream],
                "events": cols.event[sel][:20].tolist(),
            },
            event=int(cols.event[sel][0]),
            thresholds={},
            gpu_rank=first.rank,
            device=first.device,
        )
    ]


def _dir_label(d: int) -> str:
    from gputop_trace.model.kinds import COPY_KIND_LABEL

    return COPY_KIND_LABEL.get(d, "unknown")


# ---- launches -------------------------------------------------------------------------------------------
def _launch_findings(trace: Trace, rep: LaunchReport, spans: dict[tuple[int, int], int]) -> list[_Draft]:
    out: list[_Draft] = []
    if not len(rep):
        return out
    span_all = max(spans.values(), default=trace.span_ns)
    kernels = int((trace.kind[rep.op] == Kind.KERNEL).sum())
    tiny = rep.shorter_than_launch
    if len(tiny) >= MIN_TINY_KERNELS and kernels and len(tiny) >= MIN_TINY_SHARE * kernels:
        lost = int((rep.launch_ns[tiny] - trace.dur_ns[rep.op[tiny]]).sum())
        out.append(
            _Draft(
                kind="launch_overhead",
                title=f"{len(tiny):,} of {kernels:,} kernels ({_pct(len(tiny), kernels)}) run shorter than their own "
                f"launch call (median launch {format_ns(float(np.median(rep.launch_ns[tiny])))}, median kernel "
                f"{format_ns(float(np.median(trace.dur_ns[rep.op[tiny]])))})",
                detail="The host spends longer launching these kernels than the GPU spends running them, so the GPU "
                "cannot get ahead of the host. Fix: fuse them (torch.compile), capture the step in a CUDA graph, or "
                "batch more work per kernel.",
                time_ns=lost,
                span_ns=span_all,
                evidence={"kernels": kernels, "shorter_than_launch": len(tiny), "excess_launch_ns": lost},
                thresholds={"min_count": MIN_TINY_KERNELS, "min_share": MIN_TINY_SHARE},
                event=int(rep.op[tiny[0]]),
            )
        )
    slow = rep.slow_launches[rep.launch_ns[rep.slow_launches] >= VERY_SLOW_LAUNCH_NS]
    # copies have their own findings (a pageable copy call blocks for the whole copy)
    slow = slow[trace.kind[rep.op[slow]] == Kind.KERNEL]
    if len(slow):
        worst = int(slow[np.argmax(rep.launch_ns[slow])])
        total = int(rep.launch_ns[slow].sum())
        out.append(
            _Draft(
                kind="slow_launch",
                title=f"{len(slow)} kernel launch call{'s' if len(slow) > 1 else ''} took over "
                f"{format_ns(VERY_SLOW_LAUNCH_NS)} (worst: `{_name(trace, int(rep.api[worst]))}` "
                f"{format_ns(int(rep.launch_ns[worst]))} for {short_name(_name(trace, int(rep.op[worst])))})",
                detail="A launch this slow is usually one-time work inside the call: lazy loading of the kernel's "
                "module (CUDA_MODULE_LOADING=LAZY), autotuning, or allocator growth. Fix: warm up before profiling, "
                "or set CUDA_MODULE_LOADING=EAGER if it happens every run.",
                time_ns=total,
                span_ns=span_all,
                evidence={
                    "launches": [
                        {"api": int(rep.api[i]), "op": int(rep.op[i]), "launch_ns": int(rep.launch_ns[i])}
                        for i in slow[:10].tolist()
                    ]
                },
                thresholds={"min_launch_ns": VERY_SLOW_LAUNCH_NS},
                event=int(rep.api[worst]),
            )
        )
    return out


# ---- no GPU data ----------------------------------------------------------------------------------------
def _no_gpu(trace: Trace) -> list[_Draft]:
    counts = trace.count_by_kind()
    what = ", ".join(f"{n:,} {k.name.lower().replace('_', ' ')}" for k, n in counts.items()) or "no events"
    return [
        _Draft(
            kind="no_gpu_activity",
            title="No GPU activity in this profile: no kernel, copy or memset was recorded",
            detail=f"The profile holds {what}, but nothing that ran on a GPU, so GPU time, idle gaps and transfers "
            "cannot be analysed. CUDA tracing was off or failed (for example an Nsight Systems version too old for "
            "the installed CUDA, or torch.profiler without ProfilerActivity.CUDA). Re-record with CUDA tracing on.",
            time_ns=trace.span_ns,
            span_ns=trace.span_ns,
            evidence={"events": {k.name.lower(): n for k, n in counts.items()}},
            thresholds={},
            interval=(0, trace.span_ns),
        )
    ]
