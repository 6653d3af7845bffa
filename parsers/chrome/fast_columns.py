"""Scanned chunks (:class:`~gputop_trace.parsers.chrome.fast.FastChunk`) → the loader's columns, by the rules of
:func:`~gputop_trace.parsers.chrome.columns.process_chunk` (the pure-Python path), step for step: which events
are skipped and why, ids in file order, ns from the float or the exact text as that path chooses per chunk, the
same slice, kernel, copy, B/E, flow, async, metadata and counter rows."""

from __future__ import annotations

from typing import Any

import numpy as np

from gputop_trace.parsers.chrome.columns import (
    GROUP_BE,
    GROUP_FLOW,
    GROUP_I,
    GROUP_OTHER,
    GROUP_X,
    PHASE_GROUP,
    add_slices,
    drop_without_time,
    process_counters,
    process_other,
)
from gputop_trace.parsers.chrome.decode import EXACT_FLOAT_LIMIT_US
from gputop_trace.parsers.chrome.fast import FastChunk, decode_src, decode_strings
from gputop_trace.parsers.chrome.op_args import OpCols
from gputop_trace.parsers.chrome.state import State
from gputop_trace.parsers.chrome.values import (
    MAX_ABS_US,
    OUT_OF_RANGE_NS,
    T_FAR,
    T_MISSING,
    float_to_ns,
    local_to_global,
    map_local_ids,
)

_GROUP_OF = np.full(256, GROUP_OTHER, dtype=np.uint8)
for _ph, _g in PHASE_GROUP.items():
    _GROUP_OF[ord(_ph) if _ph else 0] = _g
_M = ord("M")


class _Lazy:
    """``evs[i]`` / ``phs[i]`` of the kept events, decoded from their bytes only when asked (rare events)."""

    def __init__(self, fc: FastChunk, kept: np.ndarray[Any, Any], exact: bool, what: str) -> None:
        self.fc, self.kept, self.exact, self.what = fc, kept, exact, what

    def __getitem__(self, i: int) -> Any:
        j = int(self.kept[i])
        if self.what == "ph":
            return chr(int(self.fc.ph[j])) if self.fc.ph[j] else ""
        return self.fc.event(j, self.exact)


def process_fast(st: State, fc: FastChunk, *, include_python: bool = True) -> None:
    """One scanned chunk into columns and side rows (what ``process_chunk`` does with a decoded one)."""
    if fc.counters:
        process_counters(st, fc.counters)
    n = fc.n
    if n == 0:
        return
    ts_d = fc.ts_d
    exact = bool(float(np.fmax.reduce(np.abs(ts_d))) > EXACT_FLOAT_LIMIT_US)  # as decode._finish_chunk decides
    ph = fc.ph
    if exact:
        no_ts = fc.ts_st == T_MISSING
        far = fc.ts_st == T_FAR
    else:
        no_ts = np.isnan(ts_d)
        far = np.abs(ts_d) > MAX_ABS_US
    drop = drop_without_time(st, no_ts, far, lambda: ph != _M, lambda i: fc.event(i, exact))
    cats = decode_strings(fc.cats)
    if not include_python and "python_function" in cats:
        python = fc.cat == cats.index("python_function")
        st.python_left_out += int(python.sum())
        drop = python if drop is None else drop | python
    kept = np.arange(n) if drop is None else np.flatnonzero(~drop)
    n = len(kept)
    if n == 0:
        return
    seq0 = st.seq
    st.seq += n
    group = _GROUP_OF[ph[kept]]
    idx_p = np.flatnonzero(group <= GROUP_FLOW)
    if len(idx_p):
        _slices(st, fc, kept[idx_p], group[idx_p], exact, seq0, idx_p)
    if len(idx_p) < n:
        process_other(st, _Lazy(fc, kept, exact, "ev"), _Lazy(fc, kept, exact, "ph"), group, exact, seq0)  # type: ignore[arg-type]


def _ns(fc: FastChunk, rows: np.ndarray[Any, Any], exact: bool, dur: bool) -> np.ndarray[Any, Any]:
    out: np.ndarray[Any, Any]
    if exact:
        out = (fc.dur_ns if dur else fc.ts_ns)[rows].astype(np.int64)
    elif dur:
        out = float_to_ns(fc.dur_d[rows])
    else:
        out = np.rint(fc.ts_d[rows] * 1000.0).astype(np.int64)
    return out


def _slices(
    st: State,
    fc: FastChunk,
    rows: np.ndarray[Any, Any],
    group: np.ndarray[Any, Any],
    exact: bool,
    seq0: int,
    pos: np.ndarray[Any, Any],
) -> None:
    """Slices, instants, B/E and flow events (``rows`` in the chunk; ``pos`` their places among kept events)."""
    n = len(rows)
    ts = _ns(fc, rows, exact, dur=False)
    src = local_to_global(fc.src[rows], [decode_src(t) for t in fc.srcs], st.srcs)
    cat = local_to_global(fc.cat[rows], decode_strings(fc.cats), st.cats)
    named = group <= GROUP_BE
    name = np.full(n, -1, dtype=np.int64)
    if named.any():
        name[named] = _name_ids(st, fc, fc.name[rows[named]])
    sel = np.flatnonzero(group <= GROUP_I)
    if len(sel):
        is_x = group[sel] == GROUP_X
        xrows = rows[sel[is_x]]
        detail = np.flatnonzero(fc.need[xrows])
        krows = np.flatnonzero(fc.maybe_kernel()[xrows])  # X events with kernel or copy args (or decoded ones)
        argl = fc.args_of(xrows[detail])
        ids = (fc.corr[xrows], fc.ext[xrows], fc.dev[xrows], detail)
        dur_x = _ns(fc, xrows, exact, dur=True)
        loc = fc.name[xrows]
        op = OpCols(
            seq=fc.seq[xrows],
            fwd=fc.fwd[xrows],
            shape=fc.dims[xrows].astype(np.int64),
            shape_keys=fc.texts("shapes"),
            type=fc.types[xrows].astype(np.int64),
            type_keys=fc.texts("typestrs"),
        )
        add_slices(
            st,
            argl,
            dur_x,
            lambda i: fc.name_strings()[int(loc[i])],
            ts[sel],
            src[sel],
            cat[sel],
            name[sel],
            None if is_x.all() else is_x,
            ids,
            None if is_x.all() else fc.args_of(rows[sel[~is_x]]),
            op,
            (fc.kernel_cols(xrows[krows]), krows),
        )
    seq = seq0 + pos
    for i in np.flatnonzero(group == GROUP_BE).tolist():
        ph = chr(int(fc.ph[rows[i]]))
        st.be.append((int(src[i]), int(ts[i]), int(seq[i]), int(name[i]), int(cat[i]), ph))
    sel = np.flatnonzero(group == GROUP_FLOW)
    if len(sel):
        ac2g = st.cats.get("ac2g", -1)
        sel = sel[cat[sel] != ac2g]  # launch flows come from correlation ids
    if len(sel):
        ident, next_slice = fc.flow_ids(rows[sel], exact)
        f = st.flows
        f.ident.extend(ident)
        f.cat.append(cat[sel])
        f.src.append(src[sel])
        f.ts.append(ts[sel])
        f.next_slice.append(next_slice)
        f.seq.append(seq[sel])
        f.phase.append(fc.ph[rows[sel]].astype(np.uint8))


def _name_ids(st: State, fc: FastChunk, local: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Local name ids → the trace's name ids, interned in the order they first appear."""
    table = st.builder.names
    # (a name is decoded once per trace, not once per chunk: ``st.name_by_text`` keys the trace's ids by JSON text)
    m = map_local_ids(local, fc.names, st.name_by_text, lambda text: table.intern(decode_strings([text])[0]))
    out: np.ndarray[Any, Any] = m[local]
    return out


__all__ = ["OUT_OF_RANGE_NS", "process_fast"]
