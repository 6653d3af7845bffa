"""Large traces for benchmarks, made by repeating a real trace along the time axis *in the model* (no JSON
round trip): every lane gets ``copies`` back-to-back copies of its events, shifted by the trace's span plus a
gap; kernel and copy side tables and launch flows are re-indexed, correlation ids kept unique per copy.

    from benchmarks.tile_model import tile_trace, tiled_to_events
    big = tiled_to_events(load_paths([path]), 10_000_000)

Row assignment (``depth``) is copied, not recomputed: the copies of one lane never overlap in time, so the
original rows stay valid. Run from the repository root (``benchmarks`` is a namespace package).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from gputop_trace.model.tables import CopyTable, FlowTable, KernelTable
from gputop_trace.model.trace import Trace


def tile_trace(trace: Trace, copies: int, *, gap_ns: int | None = None) -> Trace:
    """``copies`` repetitions of ``trace`` one after another (copy k shifted by k × (span + gap))."""
    if copies < 1:
        raise ValueError("copies must be >= 1")
    n = len(trace)
    gap = gap_ns if gap_ns is not None else max(trace.span_ns // 20, 1)
    shift = int(trace.span_ns) + int(gap)
    offsets = trace.lane_offsets
    lane_sizes = np.diff(offsets)
    # new order: lane by lane, copy by copy, original order inside
    src_parts = []
    k_parts = []
    for lane in range(len(trace.lanes)):
        a, b = int(offsets[lane]), int(offsets[lane + 1])
        if b <= a:
            continue
        idx = np.arange(a, b, dtype=np.int64)
        src_parts.append(np.tile(idx, copies))
        k_parts.append(np.repeat(np.arange(copies, dtype=np.int64), b - a))
    src = np.concatenate(src_parts) if src_parts else np.zeros(0, dtype=np.int64)
    kk = np.concatenate(k_parts) if k_parts else np.zeros(0, dtype=np.int64)
    # where does (copy k, original i) land?
    new_of = np.empty((copies, n), dtype=np.int64)
    new_of[kk, src] = np.arange(len(src), dtype=np.int64)
    corr_span = int(trace.corr.max()) + 1 if n else 1
    ext_span = int(trace.ext.max()) + 1 if n else 1

    def frozen(a: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
        a.flags.writeable = False
        return a

    corr = np.where(trace.corr[src] >= 0, trace.corr[src] + kk * corr_span, -1)
    ext = np.where(trace.ext[src] >= 0, trace.ext[src] + kk * ext_span, -1)
    lane_offsets = np.concatenate(([0], np.cumsum(lane_sizes * copies))).astype(np.int64)

    def side(table: object, cls: type) -> object:
        cols = {f.name: getattr(table, f.name) for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        ev = cols["event"]
        m = len(ev)
        new_ev = new_of[:, ev].reshape(-1)  # copy-major
        out = {}
        for name, col in cols.items():
            if name == "event":
                continue
            out[name] = np.concatenate([col] * copies) if m else col
        order = np.argsort(new_ev, kind="stable")
        out = {k: frozen(np.ascontiguousarray(v[order])) for k, v in out.items()}
        return cls(event=frozen(new_ev[order]), **out)

    fl = trace.flows
    f_src = new_of[:, fl.src].reshape(-1)
    f_dst = new_of[:, fl.dst].reshape(-1)
    f_kind = np.concatenate([fl.kind] * copies) if len(fl) else fl.kind
    forder = np.lexsort((f_src, f_dst, f_kind))
    flows = FlowTable(src=frozen(f_src[forder]), dst=frozen(f_dst[forder]), kind=frozen(f_kind[forder]))
    return Trace(
        start_ns=frozen(trace.start_ns[src] + kk * shift),
        dur_ns=frozen(trace.dur_ns[src]),
        kind=frozen(trace.kind[src]),
        lane=frozen(trace.lane[src]),
        name=frozen(trace.name[src]),
        depth=frozen(trace.depth[src]),
        corr=frozen(corr),
        ext=frozen(ext),
        names=trace.names,
        lanes=trace.lanes,
        lane_offsets=frozen(lane_offsets),
        kernels=side(trace.kernels, KernelTable),  # type: ignore[arg-type]
        copies=side(trace.copies, CopyTable),  # type: ignore[arg-type]
        flows=flows,
        counters=(),
        meta=dataclasses.replace(trace.meta, warnings=()),
    )


def tiled_to_events(trace: Trace, events: int) -> Trace:
    """``trace`` repeated until it holds at least ``events`` events."""
    return tile_trace(trace, max(1, math.ceil(events / max(len(trace), 1))))
