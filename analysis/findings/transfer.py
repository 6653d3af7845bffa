"""Findings about copies and memsets (detectors.md §3): the transfer flags with their exposed time, and how much
of the copies on side streams is hidden behind kernels. Times are int64 ns."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np

from gputop_trace.analysis.findings.draft import Draft, family_label, name_family, plain_name
from gputop_trace.analysis.transfers import CopyRows, TransferReport, direction_label, host_memory_label
from gputop_trace.model.arrays import I64, distinct, isin
from gputop_trace.model.devices import DeviceWords
from gputop_trace.model.kinds import Kind, LaneKind
from gputop_trace.model.trace import Trace
from gputop_trace.units import format_bytes, format_ns, plural


def transfer_findings(trace: Trace, rep: TransferReport, spans: dict[tuple[int, int], int]) -> list[Draft]:
    """One finding per transfer flag (a copy that blocks the host is reported once, under its blocking flag),
    and the side-stream copy finding; ``spans``: active span (ns) per (rank, device). Totals and groups come from
    the report's columns; only the copies a finding names become rows."""
    out: list[Draft] = []
    span_all = max(spans.values(), default=trace.span_ns)
    kernel_lanes = distinct(trace.lane[trace.of_kind(Kind.KERNEL, Kind.GRAPH)])  # once for every finding below
    blocking = [f.rows.events for f in rep.flags if f.flag in ("pageable_async", "sync_copy")]
    blocking_events = np.concatenate(blocking) if blocking else np.zeros(0, dtype=np.int64)
    for flag in rep.flags:
        rows = flag.rows
        if flag.flag == "copy_on_compute_stream":
            # a copy that blocks the host is reported once, under its blocking flag
            rows = CopyRows(rep, rows.positions[~isin(rows.events, blocking_events)])
            if not len(rows):
                continue
        top = rows[0]
        exposed = rows.total("exposed_ns")
        # the copies may sit on several GPUs: weigh them against those GPUs' spans together
        where_lanes = [trace.lanes[ln] for ln in distinct(trace.lane[rows.events]).tolist()]
        groups = _copy_groups(trace, rows, set(kernel_lanes.tolist()), len({ln.rank for ln in where_lanes}) > 1)
        span = sum(spans.get(k, 0) for k in {(ln.rank, ln.device) for ln in where_lanes}) or span_all
        where = f" in `{plain_name(top.range_name)}`" if top.range_name else ""
        biggest = (
            f"largest: {format_bytes(top.bytes)} {top.direction}"
            f"{f' ({top.host_memory})' if top.host_memory else ''} of {format_ns(top.dur_ns)} on stream "
            f"{top.stream}{where}"
        )
        n = len(rows)
        title = (
            f"{flag.title[0].upper()}{flag.title[1:]}: {plural(n, 'copy', 'copies')}, "
            f"{format_ns(exposed)} exposed ({biggest})"
        )
        out.append(
            Draft(
                kind=flag.flag,
                title=title,
                detail=f"{_flag_why(flag.flag, trace.device_words())} {groups} Fix: {flag.fix}",
                time_ns=exposed,
                span_ns=span,
                evidence={
                    "count": n,
                    "bytes": rows.total("bytes"),
                    "time_ns": rows.total("dur_ns"),
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
    out.extend(_side_stream_copies(trace, rep, spans, kernel_lanes))
    return out


def _copy_groups(trace: Trace, rows: CopyRows, kernel_lanes: set[int], multi_rank: bool) -> str:
    """``"Copies: 1 × 32.0 MiB DtoH (pageable) in `checkpoint_d2h` on stream 7 (24.0 ms); ..."``: the copies
    grouped by direction, host memory, the family of their range's name, stream and size, the four groups with the
    most exposed time first (groups met first first among equals); ``kernel_lanes``: the lanes that run kernels;
    ``multi_rank``: the copies are on several ranks (each group names its rank)."""
    rep, pos = rows.report, rows.positions
    cols = rep.columns
    ev = cols.event[pos]
    lane = trace.lane[ev]
    # each row's labels as small ids (equal labels, equal ids: groups are of what the text says)
    dir_key = cols.direction[pos].astype(np.int64) * 2 + cols.is_memset[pos]
    host_key = cols.host_kind[pos].astype(np.int64)
    labels: dict[tuple[str, str], int] = {}
    dir_label = {k: direction_label(k // 2, bool(k % 2)) for k in distinct(dir_key).tolist()}
    host_label = {k: host_memory_label(k) for k in distinct(host_key).tolist()}
    dir_id = _ids_of(dir_key, lambda k: labels.setdefault(("dir", dir_label[k]), len(labels)))
    host_id = _ids_of(host_key, lambda k: labels.setdefault(("host", str(host_label[k])), len(labels)))
    rng = rep.range_events[pos]
    rng_name = np.where(rng >= 0, trace.name[np.maximum(rng, 0)], -1)

    def family(name_id: int) -> int:
        name = trace.names[name_id] if name_id >= 0 else ""
        return labels.setdefault(("fam", name_family(name)), len(labels)) if name else -1

    fam_id = _ids_of(rng_name, family)
    keys = np.stack([dir_id, host_id, fam_id, lane, cols.bytes[pos]], axis=1)
    uniq, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    exposed = np.zeros(len(uniq), dtype=np.int64)
    np.add.at(exposed, inverse, cols.exposed_ns[pos])
    count = np.bincount(inverse, minlength=len(uniq))
    parts = []
    for g in np.lexsort((first, -exposed))[:4].tolist():
        i = int(first[g])  # the group's first row
        ln = trace.lanes[int(lane[i])]
        direction = dir_label[int(dir_key[i])]
        host = host_label[int(host_key[i])]
        nbytes = int(cols.bytes[pos[i]])
        members = np.flatnonzero(inverse == g)
        fam = None
        if fam_id[i] >= 0:
            fam = family_label({trace.names[int(x)] for x in distinct(rng_name[members]).tolist()})
        compute = " (a compute stream)" if int(lane[i]) in kernel_lanes else ""
        parts.append(
            f"{int(count[g])} × {format_bytes(nbytes)} {direction}{f' ({host})' if host else ''}"
            f"{f' in `{fam}`' if fam else ''} on {f'rank {ln.rank} ' if multi_rank else ''}stream "
            f"{ln.stream}{compute}, "
            f"{format_ns(int(exposed[g]))} exposed"
        )
    more = f"; {plural(len(uniq) - 4, 'more group')}" if len(uniq) > 4 else ""
    return "Copies: " + "; ".join(parts) + more + "."


def _ids_of(values: np.ndarray, id_of: Callable[[int], int]) -> np.ndarray:
    """``id_of(v)`` for each value, computed once per distinct value."""
    d = distinct(values)
    table = np.array([id_of(v) for v in d.tolist()], dtype=np.int64)
    return table[np.searchsorted(d, values)]


_FLAG_WHY = {
    "pageable_async": "An asynchronous copy (a MemcpyAsync call) to or from pageable (not pinned) host memory is "
    "staged by the driver: the host call blocks and the copy cannot overlap with kernels.",
    "sync_copy": "A synchronous cudaMemcpy blocks the host until the copy is done.",
    "copy_on_compute_stream": "These copies run on a stream that also runs kernels before and after them, so the "
    "GPU serializes them between the kernels instead of overlapping them.",
    "sync_memset": "A synchronous memset on pinned or managed memory blocks the host.",
}


def _flag_why(flag: str, words: DeviceWords) -> str:
    """Why a flag matters, said of the device (``hipMemcpy`` on ROCm, a synchronous copy call elsewhere)."""
    why = words.say(_FLAG_WHY[flag])
    if words.runtime != "CUDA":
        why = why.replace("cudaMemcpy", f"{words.runtime.lower()}Memcpy" if words.runtime else "copy call")
    return why


def _side_stream_copies(
    trace: Trace, rep: TransferReport, spans: dict[tuple[int, int], int], k_lanes: I64
) -> list[Draft]:
    """How much of the copies on streams that run no kernels (``k_lanes``: the lanes that do) is hidden behind
    kernels."""
    cols = rep.columns
    if not len(cols):
        return []
    lanes = trace.lane[cols.event]
    side = ~cols.is_memset & ~isin(lanes, k_lanes) & (trace.lane_kind[lanes] == LaneKind.GPU_STREAM)
    sel = np.flatnonzero(side)
    if not len(sel):
        return []
    dur = trace.dur_ns[cols.event[sel]]
    time = int(dur.sum())
    exposed = int(cols.exposed_ns[sel].sum())
    hidden = time - exposed
    pct = 100.0 * hidden / time if time else 100.0
    per_stream = []
    for ln in distinct(lanes[sel]).tolist():
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
    noun = trace.device_words(first.rank, first.device).noun
    advice = (
        f"A side stream only helps while kernels run on another stream; these copies were issued while the {noun} "
        "had nothing else to do. Issue them earlier (prefetch the next batch while the current step computes)."
        if pct < 50
        else "Most of the copy time overlaps with kernels, as intended."
    )
    streams = "; ".join(p for p, _ in per_stream[:4])
    return [
        Draft(
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
