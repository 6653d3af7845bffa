"""NVTX and annotation ranges with their GPU time (detectors.md §4).

Per range name (and NVTX domain): how many instances, their CPU duration (total, mean, min, max), the deepest
nesting level at which the name occurs (computed per thread among annotation ranges only; 0 = outermost), and
the GPU time projected onto the range: the GPU ops whose launch call falls inside an instance of the range on
the same thread (``nsys`` semantics), or on an autograd thread that thread owns (PyTorch's backward kernels are
launched from the autograd engine's thread: :mod:`~gputop_trace.analysis.autograd`). ``gpu_ns`` is the busy
time of those ops (the union of their intervals, per instance, so concurrent kernels are not counted twice),
``gpu_span_ns`` the first-op-start to last-op-end span per instance (what Kineto's ``gpu_user_annotation`` bands
and nsys' projected NVTX ranges show), ``gpu_annotation_ns`` the union of the Kineto ``gpu_user_annotation``
bands of the same name (``None`` when the trace has none). Times in int64 ns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from gputop_trace.analysis.autograd import autograd_threads
from gputop_trace.analysis.intervals import segmented_union_total
from gputop_trace.model.arrays import I64, distinct, isin
from gputop_trace.model.kinds import GPU_BUSY_KINDS, Kind, LaneKind
from gputop_trace.model.trace import Trace


@dataclass(frozen=True)
class RangeRow:
    """One range name (and domain). Times in ns; ``events`` are the instances (trace indices, start order)."""

    name: str
    domain: str
    count: int
    total_ns: int
    mean_ns: float
    min_ns: int
    max_ns: int
    gpu_ns: int
    gpu_span_ns: int
    gpu_ops: int
    gpu_annotation_ns: int | None
    max_depth: int
    threads: int
    events: I64 = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False, compare=False)
    #: of ``gpu_ops``, those launched by an autograd thread this range's thread owns (see the module text)
    gpu_ops_autograd: int = 0
    #: with ``cut=True``: how many instances were cut to the recording, and their total CPU time as recorded (ns)
    cut: int = 0
    recorded_total_ns: int | None = None


#: PyTorch ``emit_nvtx`` / DLProf suffixes that make every operator range name unique.
_OP_SUFFIX = re.compile(r", (?:seq|op_id|sizes|input_op_ids|stream|fwd_seq) = .*$")


def _domains(trace: Trace) -> set[str]:
    """NVTX domain names the loader recorded (``meta.properties["nvtx_domains"]``, also per rank when merged)."""
    props = trace.meta.properties if isinstance(trace.meta.properties, dict) else {}
    found = set(props.get("nvtx_domains") or [])
    for sub in props.get("ranks") or []:
        if isinstance(sub, dict):
            found.update(sub.get("nvtx_domains") or [])
    return {str(d) for d in found}


def split_range_name(name: str, domains: set[str], *, merge_operator_ids: bool = True) -> tuple[str, str]:
    """``(domain, name)`` of a range: nsys names ranges of a named NVTX domain ``"<domain>:<name>"``; with
    ``merge_operator_ids`` the per-call suffixes PyTorch's ``emit_nvtx`` adds (``, seq = 12, op_id = 345``)
    are dropped so one operator is one row."""
    domain = ""
    if domains and ":" in name:
        head, _, rest = name.partition(":")
        if head in domains and not rest.startswith(":"):
            domain, name = head, rest
    if merge_operator_ids:
        name = _OP_SUFFIX.sub("", name)
    return domain, name


def range_depths(trace: Trace, events: I64) -> I64:
    """Nesting level of each range among the annotation ranges of its own lane (0 = outermost).

    ``events`` must be sorted by trace index (lane, then start, longest first)."""
    out = np.zeros(len(events), dtype=np.int64)
    if not len(events):
        return out
    lanes = trace.lane[events]
    cut = np.flatnonzero(lanes[1:] != lanes[:-1]) + 1
    for a, b in zip(np.concatenate(([0], cut)).tolist(), np.concatenate((cut, [len(events)])).tolist(), strict=True):
        ev = events[a:b]
        s2 = trace.start_ns[ev] * 2
        e2 = np.where(trace.dur_ns[ev] > 0, (trace.start_ns[ev] + trace.dur_ns[ev]) * 2, s2 + 1)
        d = np.arange(len(ev), dtype=np.int64) - np.searchsorted(np.sort(e2), s2, side="right")
        out[a:b] = np.maximum(d, 0)
    return out


def _projection(trace: Trace, ranges: I64, device: int | None = None) -> tuple[I64, I64, I64, I64]:
    """Per range instance: GPU busy ns, GPU span ns, GPU op count of the ops launched inside it on its thread or
    on an autograd thread it owns (:mod:`~gputop_trace.analysis.autograd`), and how many of those ops came from
    an autograd thread (only ops on ``device`` when given)."""
    n = len(ranges)
    busy = np.zeros(n, dtype=np.int64)
    span = np.zeros(n, dtype=np.int64)
    count = np.zeros(n, dtype=np.int64)
    borrowed_count = np.zeros(n, dtype=np.int64)
    ops = trace.of_kind(*GPU_BUSY_KINDS)
    if device is not None:
        ops = ops[trace.event_device[ops] == device]
    api = trace.launch_of[ops]
    has = api >= 0
    ops, api = ops[has], api[has]
    if not len(ops) or not n:
        return busy, span, count, borrowed_count
    a_lane = trace.lane[api].astype(np.int64)
    a_time = trace.start_ns[api]
    borrowed = np.zeros(len(ops), dtype=bool)
    owners = autograd_threads(trace)
    if owners:
        # a launch on an autograd thread also counts on the forward thread that owns it
        lane_owner = np.full(len(trace.lanes), -1, dtype=np.int64)
        for th in owners.values():
            lane_owner[th.lane] = th.owner
        extra = np.flatnonzero(lane_owner[a_lane] >= 0)
        ops = np.concatenate((ops, ops[extra]))
        a_time = np.concatenate((a_time, a_time[extra]))
        a_lane = np.concatenate((a_lane, lane_owner[a_lane[extra]]))
        borrowed = np.concatenate((borrowed, np.ones(len(extra), dtype=bool)))
    order = np.lexsort((a_time, a_lane))
    ops, a_lane, a_time, borrowed = ops[order], a_lane[order], a_time[order], borrowed[order]
    r_lane = trace.lane[ranges].astype(np.int64)
    r_s = trace.start_ns[ranges]
    r_e = r_s + trace.dur_ns[ranges]
    # position of (lane, time) in the sorted launches: offset lanes so one searchsorted does all lanes
    lane_lo = np.searchsorted(a_lane, r_lane, side="left")
    lane_hi = np.searchsorted(a_lane, r_lane, side="right")
    lo = np.empty(n, dtype=np.int64)
    hi = np.empty(n, dtype=np.int64)
    for ln in distinct(r_lane).tolist():
        m = np.flatnonzero(r_lane == ln)
        a, b = int(lane_lo[m[0]]), int(lane_hi[m[0]])
        lo[m] = a + np.searchsorted(a_time[a:b], r_s[m], side="left")
        hi[m] = a + np.searchsorted(a_time[a:b], r_e[m], side="left")
    k = np.maximum(hi - lo, 0)
    count[:] = k
    total = int(k.sum())
    if not total:
        return busy, span, count, borrowed_count
    owner = np.repeat(np.arange(n, dtype=np.int64), k)
    first = np.repeat(np.cumsum(k) - k, k)
    pos = lo[owner] + (np.arange(total, dtype=np.int64) - first)
    op = ops[pos]
    borrowed_count[:] = np.bincount(owner, weights=borrowed[pos], minlength=n).astype(np.int64)
    s = trace.start_ns[op]
    e = s + trace.dur_ns[op]
    busy[:] = segmented_union_total(owner, s, e, n)
    mins = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    maxs = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(mins, owner, s)
    np.maximum.at(maxs, owner, e)
    span[:] = np.where(k > 0, maxs - mins, 0)
    return busy, span, count, borrowed_count


def range_summary(
    trace: Trace,
    *,
    rank: int | None = None,
    device: int | None = None,
    name_filter: str | None = None,
    merge_operator_ids: bool = True,
    cut: bool = False,
) -> list[RangeRow]:
    """One row per range name and domain (CPU-thread and async annotation ranges), sorted by total CPU time,
    largest first. ``device``: project only GPU ops of that device; ``name_filter``: keep names containing this
    text (case-insensitive); ``merge_operator_ids``: group PyTorch ``emit_nvtx`` operator ranges by operator
    (see :func:`split_range_name`). Nesting depth is computed per thread and domain. ``cut``: measure each
    instance inside its rank's recording as steps are (:func:`gputop_trace.analysis.steps.cut_ranges`: a range
    the profiler closed long after its recording ended counts to the last activity recorded, not to its end)."""
    rng = trace.of_kind(Kind.RANGE)
    rng = rng[isin(trace.lane_kind[trace.lane[rng]], np.array([LaneKind.CPU_THREAD, LaneKind.ASYNC], dtype=np.uint8))]
    if rank is not None:
        rng = rng[trace.event_rank[rng] == rank]
    if not len(rng):
        return []
    rng, inv, label_list = _range_groups(trace, rng, name_filter, merge_operator_ids)
    if not len(rng):
        return []
    depth = _depths_by_domain(trace, rng, inv, label_list)
    busy, span, nops, nborrowed = _projection(trace, rng, device)
    g = len(label_list)
    dur = trace.dur_ns[rng]
    recorded = dur
    if cut:
        from gputop_trace.analysis.steps import cut_ranges

        cs, ce = cut_ranges(trace, rng)
        dur = ce - cs
    st = _group_stats(inv, g, dur, recorded, depth, (busy, span, nops, nborrowed))
    count = st["count"]
    annot = _annotation_ns(trace, rank)
    order = np.argsort(inv, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(count)))
    rows: list[RangeRow] = []
    for j in range(g):
        if not count[j]:
            continue
        members = rng[order[bounds[j] : bounds[j + 1]]]
        dom, disp = label_list[j]
        rows.append(
            RangeRow(
                name=disp,
                domain=dom,
                count=int(count[j]),
                total_ns=int(st["total"][j]),
                mean_ns=float(st["total"][j]) / int(count[j]),
                min_ns=int(st["min"][j]),
                max_ns=int(st["max"][j]),
                gpu_ns=int(st["gpu"][j]),
                gpu_span_ns=int(st["gpu_span"][j]),
                gpu_ops=int(st["gpu_ops"][j]),
                gpu_annotation_ns=annot.get(disp) if annot else None,
                max_depth=int(st["max_depth"][j]),
                threads=len(distinct(trace.lane[members])),
                events=np.sort(members),
                gpu_ops_autograd=int(st["borrowed"][j]),
                cut=int(st["cut"][j]),
                recorded_total_ns=int(st["recorded_total"][j]),
            )
        )
    rows.sort(key=lambda r: (-r.total_ns, r.name, r.domain))
    return rows


def _range_groups(
    trace: Trace, rng: I64, name_filter: str | None, merge_operator_ids: bool
) -> tuple[I64, I64, list[tuple[str, str]]]:
    """The ranges ``rng`` whose names pass ``name_filter``, each one's group, and the (domain, display name) of
    each group; the names are split once per distinct name id."""
    domains = _domains(trace)
    name_ids = np.flatnonzero(np.bincount(trace.name[rng], minlength=len(trace.names)))
    group_of_name = np.full(len(trace.names), -1, dtype=np.int64)
    labels: dict[tuple[str, str], int] = {}
    want = name_filter.lower() if name_filter else None
    for i in name_ids.tolist():
        dom, disp = split_range_name(trace.names[i], domains, merge_operator_ids=merge_operator_ids)
        if want is not None and want not in trace.names[i].lower():
            continue
        group_of_name[i] = labels.setdefault((dom, disp), len(labels))
    inv = group_of_name[trace.name[rng]]
    keep = inv >= 0
    return rng[keep], inv[keep], list(labels)


def _depths_by_domain(trace: Trace, rng: I64, inv: I64, label_list: list[tuple[str, str]]) -> I64:
    """Each range's nesting depth among the ranges of its thread and domain."""
    dom_codes: dict[str, int] = {}
    dom_of_group = np.array([dom_codes.setdefault(d, len(dom_codes)) for d, _ in label_list], dtype=np.int64)
    depth = np.zeros(len(rng), dtype=np.int64)
    for code in distinct(dom_of_group[inv]).tolist():
        m = np.flatnonzero(dom_of_group[inv] == code)
        depth[m] = range_depths(trace, rng[m])
    return depth


def _group_stats(
    inv: I64, g: int, dur: I64, recorded: I64, depth: I64, projected: tuple[I64, I64, I64, I64]
) -> dict[str, I64]:
    """Per group of the ``g``: count, total / min / max duration (ns, as measured: ``dur``), instances cut shorter
    than ``recorded`` and the recorded total (ns), deepest nesting, and the sums of the GPU projection
    ``projected`` (busy ns, span ns, ops, ops borrowed from autograd)."""
    busy, span, nops, nborrowed = projected
    mins = np.full(g, np.iinfo(np.int64).max, dtype=np.int64)
    maxs = np.zeros(g, dtype=np.int64)
    np.minimum.at(mins, inv, dur)
    np.maximum.at(maxs, inv, dur)
    maxd = np.zeros(g, dtype=np.int64)
    np.maximum.at(maxd, inv, depth)

    def total(w: np.ndarray) -> I64:
        return np.bincount(inv, weights=w, minlength=g).astype(np.int64)

    return {
        "cut": total(dur < recorded),
        "recorded_total": total(recorded),
        "count": np.bincount(inv, minlength=g),
        "total": total(dur),
        "min": mins,
        "max": maxs,
        "max_depth": maxd,
        "gpu": total(busy),
        "gpu_span": total(span),
        "gpu_ops": total(nops),
        "borrowed": total(nborrowed),
    }


def _annotation_ns(trace: Trace, rank: int | None) -> dict[str, int]:
    """Union length of the Kineto ``gpu_user_annotation`` bands per name (empty when there are none)."""
    ga = trace.of_kind(Kind.GPU_RANGE)
    if rank is not None:
        ga = ga[trace.event_rank[ga] == rank]
    if not len(ga):
        return {}
    ids, inv = np.unique(trace.name[ga], return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    # bands of different devices/ranks are separate GPUs: union per (name, device)
    # (device, rank) as one int64: both are int32, so this is exact for any ids the file holds
    dev = (trace.event_device[ga].astype(np.int64) << 32) + (trace.event_rank[ga].astype(np.int64) + 2**31)
    dk, dinv = np.unique(dev, return_inverse=True)
    grp = inv * len(dk) + np.asarray(dinv).reshape(-1)
    s = trace.start_ns[ga]
    tot = segmented_union_total(grp, s, s + trace.dur_ns[ga], len(ids) * len(dk))
    per_name = tot.reshape(len(ids), len(dk)).sum(axis=1)
    return {trace.names[int(i)]: int(v) for i, v in zip(ids.tolist(), per_name.tolist(), strict=True)}


@dataclass(frozen=True)
class InstanceGpu:
    """The GPU work of one range instance (see the module text): busy ns, op count, and how many of those ops an
    autograd thread of the range's thread launched (``via``: how that thread was tied, ``""`` when none)."""

    gpu_ns: int
    gpu_ops: int
    gpu_ops_autograd: int
    via: str


def instance_gpu(trace: Trace, event: int) -> InstanceGpu:
    """The GPU work launched inside one range instance ``event`` (a trace index), as :func:`range_summary`
    counts it; O(GPU ops), for the details of one selected range."""
    lane = int(trace.lane[event])
    s = int(trace.start_ns[event])
    e = s + int(trace.dur_ns[event])
    owned = [th for th in autograd_threads(trace).values() if th.owner == lane]
    ops = trace.of_kind(*GPU_BUSY_KINDS)
    api = trace.launch_of[ops]
    has = api >= 0
    ops, api = ops[has], api[has]
    a_lane = trace.lane[api]
    a_time = trace.start_ns[api]
    inside = (a_time >= s) & (a_time < e)
    mine = inside & (a_lane == lane)
    theirs = inside & isin(a_lane, np.array([th.lane for th in owned], dtype=a_lane.dtype))
    sel = ops[mine | theirs]
    starts = trace.start_ns[sel]
    busy = segmented_union_total(np.zeros(len(sel), dtype=np.int64), starts, starts + trace.dur_ns[sel], 1)
    return InstanceGpu(
        gpu_ns=int(busy[0]),
        gpu_ops=len(sel),
        gpu_ops_autograd=int(theirs.sum()),
        via=" and ".join(sorted({th.via for th in owned})),
    )
