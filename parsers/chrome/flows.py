"""Flows of a Chrome trace: launch flows (CPU launch → GPU op) joined on correlation ids, and the trace's own flow
events (``s``/``t``/``f`` other than launch flows: fwdbwd ...) bound to the slices they point at once lanes are
final."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from gputop_trace.model.kinds import FlowKind, Kind
from gputop_trace.model.tables import FlowTable
from gputop_trace.model.trace import Trace
from gputop_trace.parsers.chrome.state import State
from gputop_trace.parsers.chrome.values import dense_ids


def launch_flows(kind: np.ndarray[Any, Any], corr: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
    """(src api event, dst gpu event) pairs joined on correlation id (one profiled process per file)."""
    api = np.flatnonzero((kind == Kind.API) & (corr >= 0))
    gpu = np.flatnonzero(np.isin(kind, [Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET]) & (corr >= 0))
    if not len(api) or not len(gpu):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    order = np.argsort(corr[api], kind="stable")
    api_sorted, corr_sorted = api[order], corr[api][order]
    pos = np.searchsorted(corr_sorted, corr[gpu])
    pos_c = np.minimum(pos, len(corr_sorted) - 1)
    hit = corr_sorted[pos_c] == corr[gpu]
    return api_sorted[pos_c[hit]].astype(np.int64), gpu[hit].astype(np.int64)


def bind_flow_events(trace: Trace, st: State) -> Trace:
    """``trace`` with the file's flow events added to its flows, bound to slices of the built trace's lanes."""
    lane_of_src: dict[int, list[int]] = defaultdict(list)
    for key, lid in st.builder._lane_ids.items():
        if isinstance(key, tuple) and key[0] in ("cpu", "other") and (key[1], key[2]) in st.srcs:
            lane_of_src[st.srcs[(key[1], key[2])]].append(lid)
    return _replace_flows(trace, _bind_flows(trace, st, lane_of_src))


def _bind_flows(trace: Trace, st: State, lane_of_src: dict[int, list[int]]) -> FlowTable:
    """Bind Chrome flow events (s/t/f, other than launch flows) to the slices they point at."""
    cat_names = list(st.cats)
    fl = st.flows
    n = len(fl)
    if not n:
        return trace.flows
    ident = fl.ident
    cat = np.concatenate(fl.cat)
    src = np.concatenate(fl.src)
    rel = np.concatenate(fl.ts) - np.int64(trace.meta.t0_ns)
    next_slice = np.concatenate(fl.next_slice)
    seq = np.concatenate(fl.seq)
    bound = np.full(n, -1, dtype=np.int64)
    for s_id in np.flatnonzero(np.bincount(src)).tolist():  # (np.unique would import numpy.ma: 20 ms)
        sel = np.flatnonzero(src == s_id)
        for lane in lane_of_src.get(s_id, []):
            sl = trace.lane_slice(lane)
            starts = trace.start_ns[sl]
            if not len(starts):
                continue
            ends = starts + trace.dur_ns[sl]
            todo = sel[bound[sel] < 0]
            if not len(todo):
                break
            t = rel[todo]
            nxt = next_slice[todo]
            k_right = np.searchsorted(starts, t, side="right") - 1
            k_left = np.searchsorted(starts, t, side="left")
            # enclosing: the latest-starting slice at or before t, when it still runs at t
            ok = (k_right >= 0) & ~nxt
            kr = np.maximum(k_right, 0)
            enc = ok & (ends[kr] >= t)
            bound[todo[enc]] = sl.start + kr[enc]
            # an ancestor encloses t although a later sibling ended before it: walk back (rare)
            for j in np.flatnonzero(ok & ~enc).tolist():
                tt = int(t[j])
                for kk in range(int(kr[j]) - 1, max(-1, int(kr[j]) - 256), -1):
                    if starts[kk] <= tt <= ends[kk]:
                        bound[todo[j]] = sl.start + kk
                        break
            nx = nxt & (k_left < len(starts))
            bound[todo[nx]] = sl.start + k_left[nx]
    # chain the bound points of each flow id (and category) in time order, file order breaking ties: a file may
    # write a flow's end before its start (MTIA traces write every backward op's "f" before the forward op's "s").
    # A profiler may reuse an id: a start ("s") after a finish ("f") of the same id begins a new flow, so every
    # point carries the number of its flow (``segment``), counted over all the points, bound or not
    phase = np.concatenate(fl.phase) if fl.phase else np.zeros(n, dtype=np.uint8)
    ids = _int_ids(ident)
    if ids is not None:  # (as a rule: ids sorted as numbers, no Python pass over the pairs)
        every = np.lexsort((seq, rel, ids, cat))
        same_id = (ids[every][1:] == ids[every][:-1]) & (cat[every][1:] == cat[every][:-1])
    else:  # string ids, or ids of mixed types: grouped by Python equality
        group = dense_ids({}, list(zip(ident, cat.tolist(), strict=True)))
        every = np.lexsort((seq, rel, group))
        same_id = group[every][1:] == group[every][:-1]
    reuse = (phase[every][:-1] == ord("f")) & (phase[every][1:] == ord("s"))
    segment = np.empty(n, dtype=np.int64)
    segment[every] = np.concatenate([[0], np.cumsum(~same_id | reuse)])
    order = every[bound[every] >= 0]
    same = segment[order][1:] == segment[order][:-1]
    b = bound[order]
    pair = same & (b[1:] != b[:-1])
    fwd = cat_names.index("fwdbwd") if "fwdbwd" in cat_names else -1
    kinds = np.where(cat[order][1:][pair] == fwd, FlowKind.FWDBWD, FlowKind.OTHER).astype(np.uint8)
    old = trace.flows
    return FlowTable(
        src=np.concatenate([old.src, b[:-1][pair]]),
        dst=np.concatenate([old.dst, b[1:][pair]]),
        kind=np.concatenate([old.kind, kinds]),
    )


def _int_ids(ident: list[Any]) -> np.ndarray[Any, Any] | None:
    """The flow ids as int64 when every one is a plain int that fits (not a bool, str, float or None), else None."""
    if not ident or set(map(type, ident)) != {int}:
        return None
    try:
        return np.array(ident, dtype=np.int64)
    except OverflowError:
        return None


def _replace_flows(trace: Trace, flows: FlowTable) -> Trace:
    import dataclasses

    order = np.lexsort((flows.src, flows.dst, flows.kind))
    flows = FlowTable(src=flows.src[order], dst=flows.dst[order], kind=flows.kind[order])
    for a in (flows.src, flows.dst, flows.kind):
        a.flags.writeable = False
    return dataclasses.replace(trace, flows=flows)
