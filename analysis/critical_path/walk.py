"""Replaying a step's critical-path graph, walking its binding chain into segments, and the what-ifs. See
:mod:`gputop_trace.analysis.critical_path.path`. Times int64 ns, model time."""

from __future__ import annotations

import gc
from types import ModuleType

import numpy as np

from gputop_trace.analysis.critical_path.model import (
    CATEGORIES,
    CATEGORY_CODE,
    SPECIAL_LABELS,
    PathSegment,
    StepGraph,
    WhatIf,
)
from gputop_trace.model.arrays import I64, distinct
from gputop_trace.model.native import pure_python_forced
from gputop_trace.model.trace import Trace

_compiled: ModuleType | None
try:
    from gputop_trace.analysis.critical_path import _replay as _compiled  # type: ignore[attr-defined,no-redef,unused-ignore]
except ImportError:  # pragma: no cover - built without a C compiler
    _compiled = None


def compiled() -> bool:
    """Whether what-ifs are replayed by the compiled module (``analysis/critical_path/_replay.c``: built, and not turned
    off by ``GPUTOP_PURE_PYTHON``)."""
    return _compiled is not None and not pure_python_forced()


def replay_graph(g: StepGraph, wc: I64, w1: I64, r: I64) -> I64:
    """Node times with the given weights and residuals: ``t'(n) = max over preds (t'(pred) + w) + r(n)`` (ns).
    The compiled module does it in one pass over the nodes. Without it: solved lane by lane with a max-plus scan,
    repeated while cross-lane hops still change times (a few passes on most steps); when that does not settle in
    :data:`_PASSES` passes (a program that synchronises after every kernel), one pass in topological order finishes
    it."""
    if compiled():
        assert _compiled is not None
        out = np.empty(len(g.t), dtype=np.int64)
        as_c = np.ascontiguousarray
        x1, x2 = as_c(g.x1), as_c(g.x2)  # one index dtype (int32 or int64), as the graph makes them
        i64 = np.int64
        if _compiled.replay(as_c(g.first, bool), x1, x2, as_c(wc, i64), as_c(w1, i64), as_c(r, i64), g.s, out) == 0:
            return out
        # a cycle: the reference below raises the same error
    return _replay_numpy(g, wc, w1, r)


def _replay_numpy(g: StepGraph, wc: I64, w1: I64, r: I64) -> I64:
    """:func:`replay_graph` with numpy and Python alone (the reference and the fallback)."""
    s, first = g.s, g.first
    t: I64 = g.t.copy()
    lane_block = np.cumsum(first)
    lane_block -= 1
    # big_a: per node, the weights and residuals of its lane summed from the lane's first node (a max-plus scan's
    # offsets); a_first: those of each lane's first node
    big_a = np.add(wc, r)
    a_first = big_a[first]
    np.cumsum(big_a, out=big_a)
    base = big_a[first]
    base -= a_first  # cumsum before each lane's first node
    big_a -= base[lane_block]
    del base
    a_first += s
    blocks = int(lane_block[-1]) + 1
    x1_none, x2_none = g.x1 < 0, g.x2 < 0
    for _ in range(_PASSES):
        v = t[np.maximum(g.x1, 0)]
        v += w1
        v[x1_none] = s
        c2 = t[np.maximum(g.x2, 0)]
        c2[x2_none] = s
        np.maximum(v, c2, out=v)
        del c2
        v += r
        v[first] = np.maximum(v[first], a_first)
        v -= big_a
        lo = int(v.min())
        span = int(v.max()) - lo + 1
        if span * blocks >= (1 << 62):  # pragma: no cover - spans beyond ~10^6 s: the ordered pass does it
            break
        v -= lo
        off = lane_block * span
        v += off
        np.maximum.accumulate(v, out=v)
        v -= off
        del off
        v += lo
        v += big_a
        if np.array_equal(v, t):
            return t
        t = v
    return _replay_ordered(g, wc, w1, r)


#: max-plus passes of :func:`replay_graph` before it switches to one ordered pass
_PASSES = 12


def _replay_ordered(g: StepGraph, wc: I64, w1: I64, r: I64) -> I64:
    """The replay node by node, each after its predecessors (recorded time order; a predecessor not yet done, such
    as an equal-time one later in that order, is done first, depth first, one predecessor at a time)."""
    nn = len(g.t)
    order = np.lexsort((np.arange(nn), g.t)).tolist()
    first = g.first.tolist()
    x1, x2 = g.x1.tolist(), g.x2.tolist()
    wcl, w1l, rl = wc.tolist(), w1.tolist(), r.tolist()
    s = g.s
    out = g.t.tolist()
    done = [False] * nn

    def preds(n: int) -> list[int]:
        ps = [] if first[n] else [n - 1]
        if x1[n] >= 0:
            ps.append(x1[n])
        if x2[n] >= 0:
            ps.append(x2[n])
        return ps

    def compute(n: int) -> None:
        best = s + wcl[n] if first[n] else out[n - 1] + wcl[n]
        if x1[n] >= 0:
            best = max(best, out[x1[n]] + w1l[n])
        if x2[n] >= 0:
            best = max(best, out[x2[n]])
        out[n] = best + rl[n]
        done[n] = True

    on_stack = [False] * nn
    for n in order:
        if done[n]:
            continue
        stack = [n]
        on_stack[n] = True
        while stack:
            top = stack[-1]
            todo = next((p for p in preds(top) if not done[p]), None)
            if todo is None:
                stack.pop()
                compute(top)
                continue
            if on_stack[todo]:  # pragma: no cover - a cycle would be a bug in the graph
                raise AssertionError("critical path: the graph's predecessors form a cycle")
            stack.append(todo)
            on_stack[todo] = True
    return np.array(out, dtype=np.int64)


def sink_time(g: StepGraph, t: I64) -> int:
    """The time (ns) the step ends at in node times ``t``: the latest of the step rank's last lane nodes."""
    return int(t[g.sink_nodes].max())


def _chain(g: StepGraph) -> np.ndarray:
    """The nodes of the binding chain from the sink back to the step start, in time order. The walk jumps from lane
    to lane; each lane's run of lane edges is taken whole (vectorized)."""
    nn = len(g.t)
    stop = np.arange(nn, dtype=g.x1.dtype)
    stop[(g.bind == 0) & ~g.first] = -1  # first nodes stop every lane's run
    np.maximum.accumulate(stop, out=stop)
    node = int(g.sink_nodes[np.argmax(g.t[g.sink_nodes])])
    runs: list[np.ndarray] = []
    for _ in range(nn + 1):  # every jump goes to an earlier node in time order: at most nn of them
        m = int(stop[node])
        runs.append(np.arange(m, node + 1, dtype=stop.dtype))
        b = int(g.bind[m])
        if b == 0:
            break
        node = int(g.x1[m]) if b == 1 else int(g.x2[m])
    else:  # pragma: no cover - a cycle of equal-time edges would be a bug in the graph
        raise AssertionError("critical path: the binding predecessors form a cycle")
    del stop
    return np.concatenate(runs[::-1])


def _pieces(g: StepGraph, nodes: np.ndarray) -> tuple[I64, I64, I64, np.ndarray, np.ndarray]:
    """The pieces of time (ns) the chain's ``nodes`` (in time order) stand for: each node's binding edge weight
    (earlier) then its residual (later), those of no time left out: start, duration, item key, event (-1 none) and
    lane of each, in time order. Built one field at a time (a step's chain can be a million nodes)."""
    bind = g.bind[nodes]
    by_x1 = bind == 1
    lane_edge = bind == 0
    w = g.wc[nodes]
    w[by_x1] = g.w1[nodes[by_x1]]
    w[bind == 2] = 0
    r = g.r[nodes]
    dur = _interleave(w, r)
    keep = dur > 0
    dur = dur[keep]
    t = g.t[nodes]
    t -= r
    del r
    t_w = t - w
    del w
    start = _interleave(t_w, t)[keep]
    del t, t_w
    r_key = g.r_item[nodes]
    w_key = g.w1_item[nodes]
    w_key[lane_edge] = g.wc_item[nodes[lane_edge]]
    key = _interleave(w_key, r_key)[keep]
    del w_key
    own, evn = g.own[nodes], g.ev[nodes]
    r_cat = np.where(r_key >= 0, r_key >> 40, -1)
    del r_key
    own_residual = ((r_cat == CATEGORY_CODE["sync_wait"]) | (r_cat == CATEGORY_CODE["cpu_op"])) & lane_edge
    r_event = np.where(own_residual, own, evn)
    r_event[r_cat == CATEGORY_CODE["idle"]] = -1
    del r_cat, own_residual
    w_event = np.where(lane_edge, own, evn)
    del own, evn
    event = _interleave(w_event, r_event)[keep]
    del w_event, r_event
    lane = g.lane[nodes]
    lanes = _interleave(lane, lane)[keep]
    return start, dur, key, event, lanes


def _interleave(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a[0], b[0], a[1], b[1], ...``"""
    out = np.empty(2 * len(a), dtype=np.result_type(a, b))
    out[0::2] = a
    out[1::2] = b
    return out


def walk_path(
    trace: Trace, g: StepGraph, segments: bool = True
) -> tuple[
    list[PathSegment], dict[str, int], tuple[tuple[str, str, int], ...], dict[tuple[str, str], tuple[int, int, int]]
]:
    """The binding chain from the sink back to the step start: its segments in time order (adjacent pieces of one
    item on one lane merged), its breakdown by category and its items, largest first. The walk jumps from lane to
    lane; each lane's run of lane edges is taken whole (vectorized)."""
    start, dur, key, event, lanes = _pieces(g, _chain(g))
    if len(start):
        new = np.ones(len(start), dtype=bool)
        new[1:] = (
            (key[1:] != key[:-1])
            | (event[1:] != event[:-1])
            | (lanes[1:] != lanes[:-1])
            | (start[1:] != start[:-1] + dur[:-1])
        )
        heads = np.flatnonzero(new)
        dur = np.add.reduceat(dur, heads)
        start, key, event, lanes = start[heads], key[heads], event[heads], lanes[heads]
    labels: dict[int, tuple[str, str]] = {}
    n_names = len(trace.names)
    for k in distinct(key).tolist():
        cat, lab = divmod(int(k), 1 << 40)
        labels[int(k)] = (CATEGORIES[cat], trace.names[lab] if lab < n_names else SPECIAL_LABELS[lab - n_names])
    lane_rank = trace.lane_rank.tolist()
    segs: list[PathSegment] = []
    if segments:  # built without the frozen dataclass' per-field object.__setattr__ (a third of the time)
        gc_was_on = gc.isenabled()
        gc.disable()  # hundreds of thousands of new objects, none in a cycle: no collection passes over them
        try:
            new_obj, set_attr, cls, append = object.__new__, object.__setattr__, PathSegment, segs.append
            rows = zip(start.tolist(), dur.tolist(), key.tolist(), event.tolist(), lanes.tolist(), strict=True)
            for st, d, k, e, ln in rows:
                seg_cat, seg_label = labels[k]
                seg = new_obj(cls)
                fields: dict[str, object] = {"start_ns": st, "dur_ns": d, "category": seg_cat, "label": seg_label}
                fields["event"], fields["lane"], fields["rank"] = e, ln, lane_rank[ln]
                set_attr(seg, "__dict__", fields)
                append(seg)
        finally:
            if gc_was_on:
                gc.enable()
    breakdown = {c: 0 for c in CATEGORIES}
    by_item: list[tuple[str, str, int]] = []
    first: dict[tuple[str, str], tuple[int, int, int]] = {}
    if len(key):
        uk, at, inv = np.unique(key, return_index=True, return_inverse=True)  # at: each item's first piece
        sums = np.zeros(len(uk), dtype=np.int64)
        np.add.at(sums, inv, dur)
        for item_key, ns, i in zip(uk.tolist(), sums.tolist(), at.tolist(), strict=True):
            cat_name, label = labels[int(item_key)]
            breakdown[cat_name] += int(ns)
            by_item.append((cat_name, label, int(ns)))
            first[(cat_name, label)] = (int(start[i]), int(event[i]), int(lanes[i]))
    by_item.sort(key=lambda x: (-x[2], x[0], x[1]))
    return segs, breakdown, tuple(by_item), first


def _item_of(trace: Trace, category: str, label: str) -> int:
    n_names = len(trace.names)
    lab = n_names + SPECIAL_LABELS.index(label) if label in SPECIAL_LABELS else trace.name_ids.get(label, -1)
    return CATEGORY_CODE[category] * (1 << 40) + lab if lab >= 0 else -2


def _scaled(x: I64, sel: np.ndarray, div: int) -> I64:
    """``x`` with its selected values floor-divided by ``div`` (``x`` itself where none is selected)."""
    if not sel.any():
        return x
    out: I64 = x.copy()
    out[sel] //= div
    return out


def what_ifs(trace: Trace, g: StepGraph, step_ns: int, items: list[tuple[str, str, int]]) -> tuple[WhatIf, ...]:
    """The step time (ns) were each of ``items`` ((category, label, ns on the path)) 2x faster or gone, by replaying
    ``g`` with that item's weights halved or zeroed; ``step_ns`` is the recorded path length (ns)."""
    out: list[WhatIf] = []
    for cat, lab, ns in items:
        key = _item_of(trace, cat, lab)
        res = []
        sel_w, sel_1, sel_r = g.wc_item == key, g.w1_item == key, g.r_item == key
        for scale in (1, 0):  # 1: halved, 0: gone
            div = 2 if scale else 1 << 62  # floor halving, or nothing left
            wc, w1, r = (_scaled(x, sel, div) for x, sel in ((g.wc, sel_w), (g.w1, sel_1), (g.r, sel_r)))
            res.append(sink_time(g, replay_graph(g, wc, w1, r)) - g.s)
            del wc, w1, r
        out.append(WhatIf(lab, cat, ns, step_ns, min(res[0], step_ns), min(res[1], step_ns)))
    return tuple(out)
