"""Findings about host synchronizations (detectors.md §2.4): groups of synchronizing calls, the GPU idle time
that followed them and how to avoid them. Times are int64 ns relative to the trace start."""

from __future__ import annotations

import numpy as np

from gputop_trace.analysis.enclosing import innermost_enclosing
from gputop_trace.analysis.findings.draft import Draft, family_label, name_family, name_of
from gputop_trace.analysis.gaps.causes import CAUSES
from gputop_trace.analysis.gaps.detect import DeviceGaps
from gputop_trace.analysis.host.classes import HostClass, cpu_lanes, host_classes, pageable_copy_calls
from gputop_trace.model.arrays import I64, distinct, isin
from gputop_trace.model.devices import DeviceWords
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace
from gputop_trace.units import format_ns

#: Host syncs: report a (range, call) group whose total wait is at least this long (ns).
MIN_SYNC_NS = 50_000


def sync_findings(trace: Trace, gaps: list[DeviceGaps], spans: dict[tuple[int, int], int]) -> list[Draft]:
    """One finding per (enclosing range family, call, rank) group of outermost synchronizing calls whose time
    at stake is at least :data:`MIN_SYNC_NS`; ``spans``: active span (ns) per (rank, device)."""
    lanes = cpu_lanes(trace)
    if not len(lanes):
        return []
    on_cpu = np.zeros(len(trace.lanes), dtype=bool)  # by lane id (np.isin over the lane column costs more)
    on_cpu[lanes] = True
    ev = np.flatnonzero(on_cpu[trace.lane]).astype(np.int64)
    cls = host_classes(trace, ev)
    sync = ev[cls == HostClass.SYNC]
    sync = sync[~isin(sync, pageable_copy_calls(trace))]
    if not len(sync):
        return []
    # outermost syncs only (aten::item around cudaStreamSynchronize counts once); each inner sync maps to its
    # outermost sync, so the gaps found "after" an inner call are charged to the outer one
    owner = _outermost(trace, sync)
    outer = sync[owner == np.arange(len(sync))]
    rng = _enclosing_range(trace, outer)
    uniq, group = _group_keys(trace, outer, rng)
    n_groups = uniq.shape[1]
    # gaps the syncs led into, charged to the outer sync of the call the thread was leaving
    group_by_pos = np.full(len(sync), -1, dtype=np.int64)
    group_by_pos[np.flatnonzero(owner == np.arange(len(sync)))] = group
    followed, stalled = _gap_time_after(gaps, sync, group_by_pos[owner], n_groups)
    members_by_group = np.argsort(group, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(group, minlength=n_groups))))
    out: list[Draft] = []
    for key in range(n_groups):
        arr = outer[members_by_group[bounds[key] : bounds[key + 1]]]
        call = trace.names[int(uniq[1, key])]
        rank = int(uniq[2, key])
        range_name = family_label(
            {name_of(trace, int(r)) for r in distinct(rng[members_by_group[bounds[key] : bounds[key + 1]]]).tolist()}
        )
        waited = int(trace.dur_ns[arr].sum())
        # removing the sync lets the host run ahead by at most the time it blocked, and that only pays off
        # where the GPU then idled; gaps already attributed to the sync count in full
        at_stake = int(stalled[key]) + min(waited, int(followed[key] - stalled[key]))
        if at_stake < MIN_SYNC_NS:
            continue
        span = max((v for (r, _), v in spans.items() if r == rank), default=trace.span_ns)
        times = (waited, at_stake, int(followed[key]), int(stalled[key]), span)
        out.append(_sync_draft(trace, arr, call, rank, range_name, times))
    return out


def _sync_draft(
    trace: Trace, arr: I64, call: str, rank: int, range_name: str, times: tuple[int, int, int, int, int]
) -> Draft:
    """The finding of one group: the outer syncs ``arr`` of ``call`` on ``rank`` in ranges of family
    ``range_name``; ``times``: (blocked, at stake, GPU idle after, of it sync stall, active span), all ns."""
    waited, at_stake, followed, stalled, span = times
    members = arr.tolist()
    where = f" in `{range_name}`" if range_name else ""
    n = len(members)
    words = trace.device_words(rank)
    what = (
        "reads a GPU value on the host (.item(), .cpu(), .tolist(), print of a tensor)"
        if call in ("aten::item", "aten::_local_scalar_dense")
        else ("copies a device array to the host" if call.startswith("np.asarray") else "waits for the GPU")
    )
    what = words.say(what)
    who = f"Rank {rank}: host" if len(trace.meta.ranks) > 1 else "Host"
    title = f"{who} waits for the {words.noun}: {n} × `{call}`{where} ({format_ns(waited)} blocked)"
    idle_after = (
        f" (the {words.noun} then sat idle {format_ns(followed)} in the gaps that followed)" if followed else ""
    )
    detail = (
        f"`{call}`{where} {what}; the host blocks until every queued kernel has finished, which also empties the "
        f"{words.noun} queue{idle_after}. Fix: {_sync_fix(call, words)}"
    )
    return Draft(
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
            "idle_after_ns": followed,
            "sync_stall_ns": stalled,
            "events": members[:20],
        },
        thresholds={"min_ns": MIN_SYNC_NS},
        event=int(arr[np.argmax(trace.dur_ns[arr])]),
        gpu_rank=rank,
    )


def _group_keys(trace: Trace, outer: I64, rng: I64) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (family of the enclosing range's name, call name, rank) keys of the outer syncs (one column
    each) and each sync's group among them; string work once per distinct name, everything else vectorized."""
    rng_name = np.where(rng >= 0, trace.name[np.maximum(rng, 0)], -1).astype(np.int64)
    fam_ids: dict[str, int] = {"": 0}
    fam_of_name = np.zeros(len(trace.names) + 1, dtype=np.int64)  # last slot: no range
    for i in distinct(rng_name[rng_name >= 0]).tolist():
        fam_of_name[i] = fam_ids.setdefault(name_family(trace.names[i]), len(fam_ids))
    fam = fam_of_name[rng_name]  # -1 indexes the last slot (no range → family "")
    keys = np.stack([fam, trace.name[outer].astype(np.int64), trace.event_rank[outer].astype(np.int64)])
    uniq, group = np.unique(keys, axis=1, return_inverse=True)
    return uniq, np.asarray(group).reshape(-1)


def _gap_time_after(gaps: list[DeviceGaps], sync: I64, group_of_sync: I64, n_groups: int) -> tuple[I64, I64]:
    """Per group: the GPU idle time (ns) in the gaps that followed its syncs, and the part of it attributed to the
    sync (cause ``sync_stall``); ``group_of_sync``: the group of each of ``sync``'s outer sync."""
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
        g = group_of_sync[p[ok]]
        d = c.dur_ns[j[ok]]
        followed += np.bincount(g, weights=d, minlength=n_groups).astype(np.int64)
        st = c.cause[j[ok]] == stall_code
        stalled += np.bincount(g[st], weights=d[st], minlength=n_groups).astype(np.int64)
    return followed, stalled


def _sync_fix(call: str, words: DeviceWords) -> str:
    """One sentence on how to avoid a synchronizing call, by framework and device (a CUDA event and
    ``cudaStreamWaitEvent`` on CUDA, HIP's on ROCm, a plain event elsewhere)."""
    event = f"a {words.runtime} event" if words.runtime else "an event"
    if call in ("aten::item", "aten::_local_scalar_dense"):
        return (
            f"keep values on the {words.noun} and read them every N steps (accumulate losses in a tensor), or copy "
            f"with non_blocking=True into pinned memory and wait on {event} later."
        )
    if call.startswith("np.asarray") or "block_until_ready" in call or "ToLiteral" in call:
        return (
            "fetch device values less often (every N steps), or start the transfer early with "
            "jax.Array.copy_to_host_async() and read it a step later."
        )
    wait_event = f" ({words.runtime.lower()}StreamWaitEvent)" if words.runtime else ""
    return (
        f"synchronize less often; order work between streams with events{wait_event} instead of "
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
