"""Decoded chunks → the loader's columns (:func:`process_chunk`): complete and instant events become events at
once, column-wise (no Python loop per slice); their Kineto args become kernel, copy, collective and details rows;
B/E, async and flow events are kept for matching; metadata fills the name tables; counters become series."""

from __future__ import annotations

import operator
from collections.abc import Callable
from itertools import compress, repeat
from operator import attrgetter
from typing import Any

import numpy as np

from gputop_trace.model.devices import PROFILER_SERIES
from gputop_trace.parsers.chrome.classify import append_events
from gputop_trace.parsers.chrome.document import Chunk
from gputop_trace.parsers.chrome.kernel_args import KernelCols, kernel_cols
from gputop_trace.parsers.chrome.op_args import OpCols, gather_op_args, op_cols
from gputop_trace.parsers.chrome.state import PH_I, PH_X, State
from gputop_trace.parsers.chrome.structs import Args
from gputop_trace.parsers.chrome.values import (
    MAX_ABS_US,
    OUT_OF_RANGE_NS,
    T_FAR,
    T_MISSING,
    NotANumberError,
    dense_ids,
    float_to_ns,
    one_ns,
    tokens_to_ns,
    us_value,
)

# how a chunk is split by phase: slices and instants become events at once, B/E and async pairs are matched
# after streaming, flows are bound to slices after the build, metadata fills the name tables
GROUP_X, GROUP_I, GROUP_BE, GROUP_FLOW, GROUP_ASYNC, GROUP_META, GROUP_COUNTER, GROUP_NONE, GROUP_OTHER = range(9)
PHASE_GROUP: dict[str, int] = {
    "X": GROUP_X,
    "i": GROUP_I,
    "I": GROUP_I,
    "R": GROUP_I,
    "B": GROUP_BE,
    "E": GROUP_BE,
    "s": GROUP_FLOW,
    "t": GROUP_FLOW,
    "f": GROUP_FLOW,
    "b": GROUP_ASYNC,
    "e": GROUP_ASYNC,
    "n": GROUP_ASYNC,
    "M": GROUP_META,
    "C": GROUP_COUNTER,
    "": GROUP_NONE,
}


_A_PH = attrgetter("ph")
_A_TS = attrgetter("ts")
_A_DUR = attrgetter("dur")
_A_CAT = attrgetter("cat")
_A_NAME = attrgetter("name")
_A_PIDTID = attrgetter("pid", "tid")
_A_ID = attrgetter("id")
_A_ARGS = attrgetter("args")
_A_CORR = attrgetter("correlation")
_A_CORR_ID = attrgetter("correlation_id")
_A_EXT = attrgetter("external_id")
_A_DEVICE = attrgetter("device")
_A_SIZE = attrgetter("size")
_A_KDETAILS = attrgetter("kernel_details")
_A_KFILE = attrgetter("kernel_file")
_A_COLLECTIVE = attrgetter("collective")
_A_MDETAILS = attrgetter("memcpy_details")
_A_SDETAILS = attrgetter("memset_details")
_NO_ARGS = Args()


def _name_ids(st: State, names: list[str]) -> np.ndarray[Any, Any]:
    """Ids of event names, interned in the order they first appear."""
    table = st.builder.names
    got = list(map(table.ids.get, names))
    if None in got:
        for s in compress(names, map(operator.is_, got, repeat(None))):
            table.intern(s)
        got = list(map(table.ids.__getitem__, names))
    return np.array(got, dtype=np.int64)


def _int64_or(v: Any, default: int) -> int:
    """``v`` as an int when it is an int (or the text of one) within int64, else ``default``."""
    if isinstance(v, str):
        try:
            v = int(v)
        except ValueError:
            return default
    if isinstance(v, bool) or not isinstance(v, int):
        return default
    return v if -(2**63) <= v < 2**63 else default


def process_chunk(st: State, chunk: Chunk, *, include_python: bool = True) -> None:
    """Turn one decoded chunk into columns and side rows (column-wise; no Python loop per slice)."""
    evs = chunk.events
    st.skipped += chunk.skipped
    st.skipped_example = st.skipped_example or chunk.skipped_example
    st.repaired += chunk.repaired
    st.repaired_example = st.repaired_example or chunk.repaired_example
    for note in chunk.notes:
        st.builder.warn(f"The file is not strict JSON: {note}.")
    if chunk.counters:
        process_counters(st, chunk.counters)
    if chunk.profiler_ranges:
        _process_profiler_ranges(st, chunk.profiler_ranges)
    n = len(evs)
    if n == 0:
        return
    exact = chunk.exact
    phs: list[str] = chunk.phs if chunk.phs is not None else list(map(_A_PH, evs))
    ts_f = chunk.ts
    ts_x = chunk.ts_ns  # exact chunks: ns from the text (ts_f is None)
    if ts_f is None and ts_x is None:  # a lenient read: float timestamps, NaN when missing
        ts_f = np.fromiter(map(_A_TS, evs), np.float64, n)
    # an event without a timestamp is skipped, except metadata, which needs none
    if ts_f is not None:
        no_ts = np.isnan(ts_f)
        far = np.abs(ts_f) > MAX_ABS_US
    else:
        assert chunk.ts_state is not None and ts_x is not None
        no_ts = chunk.ts_state == T_MISSING
        far = chunk.ts_state == T_FAR
    drop = drop_without_time(st, no_ts, far, lambda: np.fromiter(map("M".__ne__, phs), bool, n), evs.__getitem__)
    if not include_python:
        cats = list(map(_A_CAT, evs))
        if "python_function" in cats:
            python = np.fromiter(map("python_function".__eq__, cats), bool, n)
            st.python_left_out += int(python.sum())
            drop = python if drop is None else drop | python
    if drop is not None:
        keep = (~drop).tolist()
        evs = list(compress(evs, keep))
        phs = list(compress(phs, keep))
        if ts_f is not None:
            ts_f = ts_f[~drop]
        if ts_x is not None:
            ts_x = ts_x[~drop]
        n = len(evs)
        if n == 0:
            return
    seq0 = st.seq
    st.seq += n
    if phs.count("X") == n:  # the common case: a run of complete events only
        _process_slices(st, evs, None, _ts_ns(ts_f, ts_x, None), exact, seq0, None)
        return
    group = np.fromiter(map(PHASE_GROUP.get, phs, repeat(GROUP_OTHER)), dtype=np.uint8, count=n)
    is_p = group <= GROUP_FLOW
    idx_p = np.flatnonzero(is_p)
    if len(idx_p):
        ev_p = list(compress(evs, is_p.tolist())) if len(idx_p) < n else evs
        _process_slices(st, ev_p, group[idx_p], _ts_ns(ts_f, ts_x, idx_p), exact, seq0, idx_p)
    if len(idx_p) < n:
        process_other(st, evs, phs, group, exact, seq0)


def _ts_ns(
    ts_f: np.ndarray[Any, Any] | None, ts_x: np.ndarray[Any, Any] | None, idx: np.ndarray[Any, Any] | None
) -> np.ndarray[Any, Any]:
    """The ns timestamps of the events at ``idx`` (None: all): from the floats, or the exact ns of the text."""
    if ts_f is not None:
        return np.rint((ts_f if idx is None else ts_f[idx]) * 1000.0).astype(np.int64)
    assert ts_x is not None
    return ts_x if idx is None else ts_x[idx]


def _process_slices(
    st: State,
    evs: list[Any],
    group: np.ndarray[Any, Any] | None,
    ts: np.ndarray[Any, Any],
    exact: bool,
    seq0: int,
    pos: np.ndarray[Any, Any] | None,
) -> None:
    """Slices, instants, B/E and flow events of a chunk (``group`` None: slices only); ``pos`` = their places."""
    n = len(evs)
    src = dense_ids(st.srcs, list(map(_A_PIDTID, evs)))
    cat = dense_ids(st.cats, list(map(_A_CAT, evs)))
    if group is None:
        add_slices(st, *_x_fields(evs, exact), ts, src, cat, _name_ids(st, list(map(_A_NAME, evs))), None)
        return
    named = group <= GROUP_BE
    name = np.full(n, -1, dtype=np.int64)
    if named.all():
        name = _name_ids(st, list(map(_A_NAME, evs)))
    elif named.any():
        name[named] = _name_ids(st, list(map(_A_NAME, compress(evs, named.tolist()))))
    direct = group <= GROUP_I
    sel = np.flatnonzero(direct)
    if len(sel):
        ev_d = evs if len(sel) == n else list(compress(evs, direct.tolist()))
        is_x = group[sel] == GROUP_X
        xs = ev_d if is_x.all() else list(compress(ev_d, is_x.tolist()))
        inst = None if is_x.all() else list(map(_A_ARGS, compress(ev_d, (~is_x).tolist())))
        add_slices(
            st,
            *_x_fields(xs, exact),
            ts[sel],
            src[sel],
            cat[sel],
            name[sel],
            None if inst is None else is_x,
            None,
            inst,
        )
    seq = seq0 + (pos if pos is not None else np.arange(n))
    for i in np.flatnonzero(group == GROUP_BE).tolist():
        st.be.append((int(src[i]), int(ts[i]), int(seq[i]), int(name[i]), int(cat[i]), evs[i].ph))
    sel = np.flatnonzero(group == GROUP_FLOW)
    if len(sel):
        ac2g = st.cats.get("ac2g", -1)
        sel = sel[cat[sel] != ac2g]  # launch flows come from correlation ids
    if len(sel):
        ev_f = [evs[i] for i in sel.tolist()]
        f = st.flows
        f.ident.extend(map(_A_ID, ev_f))
        f.cat.append(cat[sel])
        f.src.append(src[sel])
        f.ts.append(ts[sel])
        f.next_slice.append(np.array([e.ph == "f" and e.bp != "e" for e in ev_f], dtype=bool))
        f.seq.append(seq[sel])
        f.phase.append(np.array([ord(e.ph[:1] or " ") for e in ev_f], dtype=np.uint8))


def drop_without_time(
    st: State,
    no_ts: np.ndarray[Any, Any],
    far: np.ndarray[Any, Any],
    not_meta: Callable[[], np.ndarray[Any, Any]],
    event: Callable[[int], Any],
) -> np.ndarray[Any, Any] | None:
    """The events a chunk skips (None: none), counted with an example: those without a timestamp and those with
    one no clock gives (beyond ±146 years), except metadata events (``not_meta``: False for them), which need
    none. ``event(i)`` is event ``i`` decoded. One rule for both paths."""
    drop = None
    if far.any():
        far &= not_meta()
        if far.any():
            first = event(int(np.flatnonzero(far)[0]))
            st.skipped += int(far.sum())
            st.skipped_example = st.skipped_example or (
                f"a {first.ph!r} event named {first.name!r} with ts {us_value(first.ts):.3g} µs, out of range"
            )
            drop = far
            no_ts &= ~far
    if no_ts.any():
        no_ts &= not_meta()
        if no_ts.any():
            first = event(int(np.flatnonzero(no_ts)[0]))
            st.skipped += int(no_ts.sum())
            st.skipped_example = st.skipped_example or f"a {first.ph!r} event named {first.name!r} without ts"
            drop = no_ts if drop is None else drop | no_ts
    return drop


def _x_fields(xs: list[Any], exact: bool) -> tuple[list[Any], np.ndarray[Any, Any], Callable[[int], str]]:
    """The args (never None), ns durations and a name getter of decoded ``X`` events."""
    dur_x = tokens_to_ns(list(map(_A_DUR, xs)))[0] if exact else float_to_ns(np.fromiter(map(_A_DUR, xs), np.float64))
    argl = list(map(_A_ARGS, xs))
    if None in argl:
        argl = [a if a is not None else _NO_ARGS for a in argl]
    return argl, dur_x, lambda i: str(xs[i].name)


def add_slices(
    st: State,
    argl: list[Any],
    dur_x: np.ndarray[Any, Any],
    name_of: Callable[[int], str],
    start: np.ndarray[Any, Any],
    src: np.ndarray[Any, Any],
    cat: np.ndarray[Any, Any],
    name: np.ndarray[Any, Any],
    is_x: np.ndarray[Any, Any] | None,
    ids: tuple[np.ndarray[Any, Any], ...] | None = None,
    inst_args: list[Any] | None = None,
    op: OpCols | None = None,
    kern: tuple[KernelCols, np.ndarray[Any, Any]] | None = None,
) -> None:
    """Complete (``X``) events and instants (where ``is_x`` is False; None: all are ``X``) become events
    (``inst_args``: the instants' args in their order, for the allocator records of ``profile_memory``):
    ``dur_x`` (ns) and ``name_of`` are those of the ``X`` events alone; ``argl`` their args, or, with ``ids``
    (the compiled scanner's: correlation, External id and device of every ``X`` event, and the places of the
    events whose args hold more), the args of those events only, ``op`` the scanner's operator args of every ``X``
    event and ``kern`` its kernel args of the ``X`` events that may be kernels or copies, with their places among
    the ``X`` events (every event in ``argl`` among them); those of the events in ``argl`` are read from their
    args."""
    n = len(start)
    base = st.n
    _repair_durations(st, dur_x, name_of)
    corr_x, ext_x, dev_x, at = _x_ids(argl, len(dur_x), ids)
    # provisional index of every X event
    ev_x = base + (np.arange(n, dtype=np.int64) if is_x is None else np.flatnonzero(is_x))
    _record_sizes(st, argl, at, ev_x, corr_x)
    ev_a = ev_x[at] if ids is not None else ev_x  # the X event of each args in argl
    if kern is None:  # the args of every X event
        kc, ev_k = kernel_cols(argl), ev_a
    else:  # the scanner's, of the X events that may be kernels or copies (``krows``, the events in argl among them)
        kc, krows = kern
        kc, ev_k = kc.override(np.searchsorted(krows, at), kernel_cols(argl)), ev_x[krows]
    _add_kernel_and_copy_rows(st, kc, ev_k, argl, ev_a)
    files = list(map(_A_KFILE, argl))
    if files.count(None) != len(argl):
        _add_inductor_args(st, [name_of(int(j)) for j in at.tolist()], argl, files)
    instants: list[tuple[int, Any]] = []
    if is_x is not None and inst_args:
        instants = list(zip((base + np.flatnonzero(~is_x)).tolist(), inst_args, strict=True))
    if op is None:
        gather_op_args(st.op_args, op_cols(argl), ev_a, instants)
    else:
        op.override(at, op_cols(argl))
        gather_op_args(st.op_args, op, ev_x, instants)
    if is_x is None:
        dur, corr, ext, device = dur_x, corr_x, ext_x, dev_x
        phc = np.full(n, PH_X, dtype=np.uint8)
    else:
        dur, corr, ext, device = _spread_over_events(is_x, dur_x, corr_x, ext_x, dev_x)
        phc = np.where(is_x, PH_X, PH_I).astype(np.uint8)
    append_events(st, start, dur, src, cat, name, corr, ext, device, phc)


def _repair_durations(st: State, dur_x: np.ndarray[Any, Any], name_of: Callable[[int], str]) -> None:
    """Durations (ns) out of range or negative become 0, in place, and are counted on ``st``."""
    far = dur_x == OUT_OF_RANGE_NS
    if far.any():
        st.repaired += int(far.sum())
        st.repaired_example = st.repaired_example or f"an event named {name_of(int(np.flatnonzero(far)[0]))!r} " + (
            "whose dur is out of range (shown with duration 0)"
        )
        dur_x[far] = 0
    neg = dur_x < 0
    if neg.any():
        st.negative_dur += int(neg.sum())
        dur_x[neg] = 0


def _x_ids(
    argl: list[Any], nx: int, ids: tuple[np.ndarray[Any, Any], ...] | None
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Correlation id, External id and device of each of the ``nx`` ``X`` events (-1 none), and the ``X`` event of
    each args in ``argl``: read from the args, or the scanner's ``ids`` (a correlation it could not read as a number
    is read here from its text)."""
    if ids is None:
        corr_x = np.fromiter(map(_A_CORR, argl), np.int64, nx)
        ext_x = np.fromiter(map(_A_EXT, argl), np.int64, nx)
        dev_x = np.fromiter(map(_A_DEVICE, argl), np.int64, nx)
        at = np.arange(nx)  # the X event of each args in argl
    else:
        corr_x, ext_x, dev_x, at = ids
        corr_x = corr_x.copy()
    no_corr = corr_x < 0
    if no_corr.any():
        corr_x[no_corr] = -1
        texts = list(map(_A_CORR_ID, argl))
        if texts.count(None) != len(argl):
            for i, t in enumerate(texts):
                if t is not None and no_corr[at[i]]:
                    corr_x[at[i]] = _int64_or(t, -1)
    return corr_x, ext_x, dev_x, at


def _record_sizes(
    st: State, argl: list[Any], at: np.ndarray[Any, Any], ev_x: np.ndarray[Any, Any], corr_x: np.ndarray[Any, Any]
) -> None:
    """Bytes of a copy in its runtime call's args (HIP: ``"size": "2560"``) or its own, by event and by
    correlation id."""
    sizes = list(map(_A_SIZE, argl))
    if sizes.count(-1) != len(argl):
        for i, v in enumerate(sizes):
            size = _int64_or(v, -1)
            if size >= 0:
                j = int(at[i])
                st.own_size[int(ev_x[j])] = (size, argl[i].direction)
                if corr_x[j] >= 0:
                    st.call_size[int(corr_x[j])] = size


def _spread_over_events(is_x: np.ndarray[Any, Any], *x_cols: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
    """The ``X`` events' duration (ns), correlation, External id and device columns spread over all the events
    (the instants: duration 0, ids -1)."""
    n = len(is_x)
    dur = np.zeros(n, dtype=np.int64)
    dur[is_x] = x_cols[0]
    out = [dur]
    for col in x_cols[1:]:
        full = np.full(n, -1, dtype=np.int64)
        full[is_x] = col
        out.append(full)
    return tuple(out)


def _add_kernel_and_copy_rows(
    st: State, kc: KernelCols, ev_k: np.ndarray[Any, Any], argl: list[Any], ev_a: np.ndarray[Any, Any]
) -> None:
    """Kernel rows (events with a grid or registers) and copy rows (events with bytes) from the kernel columns of
    the events ``ev_k``; collectives and JAX details strings from the args ``argl`` of the events ``ev_a``."""
    is_kernel = kc.is_kernel()
    k = np.flatnonzero(is_kernel)
    if len(k):
        kr = st.kern
        kr.event.append(ev_k[k])
        kr.grid.append(kc.grid[k])
        kr.block.append(kc.block[k])
        kr.registers.append(kc.registers[k])
        kr.shared.append(kc.shared[k])
        kr.blocks_per_sm.append(kc.blocks_per_sm[k])
        kr.warps_per_sm.append(kc.warps_per_sm[k])
        kr.occupancy.append(kc.occupancy[k])
    c = np.flatnonzero((kc.nbytes >= 0) & ~is_kernel)
    if len(c):
        st.copy_ev.append(ev_k[c])
        st.copy_bytes.append(kc.nbytes[c])
    nx = len(argl)
    coll = list(map(_A_COLLECTIVE, argl))
    if coll.count(None) != nx:
        for i, name in enumerate(coll):
            if name is not None:
                a = argl[i]
                st.coll_rows.append((int(ev_a[i]), name, a.group, a.group_size, a.in_nelems, a.out_nelems, a.dtype))
    kd = list(map(_A_KDETAILS, argl))
    md = list(map(_A_MDETAILS, argl))
    sd = list(map(_A_SDETAILS, argl))
    if kd.count(None) != nx or md.count(None) != nx or sd.count(None) != nx:
        for i, (kt, mt, stx) in enumerate(zip(kd, md, sd, strict=True)):
            if kt is not None:
                st.details.append((int(ev_a[i]), "kernel", kt))
            elif mt is not None:
                st.details.append((int(ev_a[i]), "memcpy", mt))
            elif stx is not None:
                st.details.append((int(ev_a[i]), "memset", stx))


def _add_inductor_args(st: State, names: list[str], argl: list[Any], files: list[Any]) -> None:
    """torch.compile's launcher ops (``kernel_file``, ``kernel_hash``, ``kernel_backend`` args) by op name."""
    for op, a, f in zip(names, argl, files, strict=True):
        if isinstance(f, str):
            h, b = a.kernel_hash, a.kernel_backend
            st.inductor_args[op].add((f, h if isinstance(h, str) else "", b if isinstance(b, str) else ""))


def process_other(
    st: State, evs: list[Any], phs: list[str], group: np.ndarray[Any, Any], exact: bool, seq0: int
) -> None:
    """Metadata, async and unknown-phase events of a chunk (one by one: there are few)."""
    for i in np.flatnonzero(group > GROUP_FLOW).tolist():
        e = evs[i]
        g = group[i]
        if g == GROUP_META:
            _metadata(st, e)
        elif g == GROUP_ASYNC:
            ident = e.id if e.id is not None else (e.id2 if isinstance(e.id2, (int, str)) else None)
            st.asyncs.append((e.ph, e.pid, e.cat, ident, one_ns(e.ts), e.name, seq0 + i))
        elif g == GROUP_OTHER:
            st.other_phases[phs[i]] += 1


def _metadata(st: State, e: Any) -> None:
    a = e.args
    if a is None:
        return
    if e.name == "process_name" and a.name is not None:
        st.proc_name[e.pid] = a.name
    elif e.name == "process_labels" and a.labels is not None:
        st.proc_labels[e.pid] = a.labels
    elif e.name == "process_sort_index" and a.sort_index is not None:
        st.proc_sort[e.pid] = a.sort_index
    elif e.name == "thread_name" and a.name is not None:
        st.thread_name[(e.pid, e.tid)] = a.name.strip()
    elif e.name == "thread_sort_index" and a.sort_index is not None:
        st.thread_sort[(e.pid, e.tid)] = a.sort_index


def _process_profiler_ranges(st: State, ranges: list[Any]) -> None:
    """The hardware counters of CUPTI range-profiler ranges: one sample per range and counter, at the range's
    start, in a series named :data:`~gputop_trace.model.devices.PROFILER_SERIES` + the counter's name (the
    ranges themselves are events on the device's profiler lane)."""
    for r in ranges:
        if not isinstance(r.args, dict):
            continue
        try:
            ts = one_ns(r.ts)
        except NotANumberError:  # a ts that is no number: the range's counters are not read
            continue
        if ts == OUT_OF_RANGE_NS:
            continue
        for key, value in r.args.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            ts_list, values = st.counters[(r.pid, PROFILER_SERIES + key)]
            ts_list.append(ts)
            values.append(float(value))


def process_counters(st: State, counters: list[Any]) -> None:
    """Counter (``C``) events become counter samples: each numeric arg of one is a series, its value at ``ts`` (ns)."""
    for c in counters:
        if not isinstance(c.args, dict):
            continue
        try:
            ts = one_ns(c.ts)
        except NotANumberError:  # a ts that is no number (a string, null): the counter is not read
            continue
        if ts == OUT_OF_RANGE_NS:
            continue
        for key, value in c.args.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            series = f"{c.name}.{key}" if key not in ("value", c.name) else c.name
            if c.id is not None:
                series = f"{series}[{c.id}]"
            ts_list, values = st.counters[(c.pid, series)]
            ts_list.append(ts)
            values.append(float(value))
