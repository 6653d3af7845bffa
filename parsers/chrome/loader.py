"""Chrome trace JSON → :class:`~gputop_trace.model.trace.Trace`: PyTorch/Kineto, JAX/XLA and generic producers.

Timestamps (µs floats in the file) become int64 nanoseconds without rounding to whole microseconds. Events are
decoded chunk by chunk (:mod:`gputop_trace.parsers.chrome.json_stream`), turned into numpy columns per chunk, and
classified into kinds and lanes once every metadata event is known (metadata may come last in a file).

Classification: Kineto by ``cat``; JAX/XLA (no ``cat``) by process and thread names (``/device:GPU:N``,
``Stream #N(...)``, ``/host:CPU``) and event names; anything else is a generic slice on its thread.
"""

from __future__ import annotations

import operator
import os
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from itertools import compress, repeat
from operator import attrgetter
from typing import Any

import numpy as np

from gputop_trace.errors import LoadCancelled, TraceError
from gputop_trace.model.builder import TraceBuilder
from gputop_trace.model.kinds import CopyKind, FlowKind, Kind, LaneKind, MemKind
from gputop_trace.model.tables import CounterSeries, FlowTable, GpuInfo, Lane, TraceMeta
from gputop_trace.model.trace import PYTHON_LEFT_OUT, Trace
from gputop_trace.parsers.chrome.json_stream import Args, Chunk, DocumentInfo, stream_events
from gputop_trace.parsers.source import ByteStream

#: ``progress(bytes_read_from_disk, file_size, events_so_far)``; may raise :class:`LoadCancelled`.
Progress = Callable[[int, int, int], None]

LOADER_VERSION = 1

# Kineto categories (lower-cased) → kind. Old PyTorch (≤ 1.10) wrote capitalised names.
_CAT_KIND: dict[str, Kind] = {
    "kernel": Kind.KERNEL,
    "gpu_memcpy": Kind.MEMCPY,
    "memcpy": Kind.MEMCPY,
    "gpu_memset": Kind.MEMSET,
    "memset": Kind.MEMSET,
    "cuda_runtime": Kind.API,
    "cuda_driver": Kind.API,
    "runtime": Kind.API,
    "driver": Kind.API,
    "cuda_sync": Kind.SYNC,
    "cpu_op": Kind.CPU_OP,
    "operator": Kind.CPU_OP,
    "user_annotation": Kind.RANGE,
    "gpu_user_annotation": Kind.GPU_RANGE,
    "python_function": Kind.PYTHON,
    "python": Kind.PYTHON,
    "overhead": Kind.OVERHEAD,
    "trace": Kind.OTHER,
}
_GPU_EVENT_KINDS = {Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET}

_JAX_GPU_PROC = re.compile(r"^/device:GPU:(\d+)")
_JAX_HOST_PROC = re.compile(r"^/host:CPU")
_JAX_STREAM = re.compile(r"^Stream #(\d+)")
_KINETO_COPY = re.compile(r"Memcpy\s+(HtoD|DtoH|DtoD|HtoH|PtoP)(?:\s*\((\w+)\s*->\s*(\w+)\))?", re.IGNORECASE)
_JAX_COPY = re.compile(r"^Memcpy(H2D|D2H|D2D|P2P|H2H)", re.IGNORECASE)
_DETAIL_KV = re.compile(r"(\w+):([^\s]+)")
_CUDA_API_NAME = re.compile(r"^(cu[A-Z]|cuda[A-Z])")
_RANK_IN_NAME = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)

_DIRECTION = {
    "htod": CopyKind.HTOD,
    "h2d": CopyKind.HTOD,
    "dtoh": CopyKind.DTOH,
    "d2h": CopyKind.DTOH,
    "dtod": CopyKind.DTOD,
    "d2d": CopyKind.DTOD,
    "htoh": CopyKind.HTOH,
    "h2h": CopyKind.HTOH,
    "ptop": CopyKind.PTOP,
    "p2p": CopyKind.PTOP,
}
_MEMKIND = {
    "pageable": MemKind.PAGEABLE,
    "pinned": MemKind.PINNED,
    "device": MemKind.DEVICE,
    "array": MemKind.ARRAY,
    "managed": MemKind.MANAGED,
    "unified": MemKind.MANAGED,
}

# values of the per-event "ph class" column
_PH_X, _PH_I, _PH_BE, _PH_ASYNC, _PH_ASYNC_I = 0, 1, 2, 3, 4

# how a chunk is split by phase: slices and instants become events at once, B/E and async pairs are matched
# after streaming, flows are bound to slices after the build, metadata fills the name tables
_G_X, _G_I, _G_BE, _G_FLOW, _G_ASYNC, _G_META, _G_COUNTER, _G_NONE, _G_OTHER = range(9)
_PH_GROUP: dict[str, int] = {
    "X": _G_X,
    "i": _G_I,
    "I": _G_I,
    "R": _G_I,
    "B": _G_BE,
    "E": _G_BE,
    "s": _G_FLOW,
    "t": _G_FLOW,
    "f": _G_FLOW,
    "b": _G_ASYNC,
    "e": _G_ASYNC,
    "n": _G_ASYNC,
    "M": _G_META,
    "C": _G_COUNTER,
    "": _G_NONE,
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
_A_REGS = attrgetter("registers")
_A_GRID = attrgetter("grid")
_A_BYTES = attrgetter("bytes")
_A_KDETAILS = attrgetter("kernel_details")
_A_COLLECTIVE = attrgetter("collective")
_A_MDETAILS = attrgetter("memcpy_details")
_A_KERNEL = attrgetter("grid", "block", "registers", "shared_memory", "blocks_per_sm", "warps_per_sm", "occupancy")
_NO_ARGS = Args()


@dataclass
class _Columns:
    """Per-event numpy columns gathered chunk by chunk (provisional order = file order)."""

    start: list[np.ndarray[Any, Any]] = field(default_factory=list)
    dur: list[np.ndarray[Any, Any]] = field(default_factory=list)
    src: list[np.ndarray[Any, Any]] = field(default_factory=list)
    cat: list[np.ndarray[Any, Any]] = field(default_factory=list)
    name: list[np.ndarray[Any, Any]] = field(default_factory=list)
    corr: list[np.ndarray[Any, Any]] = field(default_factory=list)
    ext: list[np.ndarray[Any, Any]] = field(default_factory=list)
    device: list[np.ndarray[Any, Any]] = field(default_factory=list)
    phc: list[np.ndarray[Any, Any]] = field(default_factory=list)

    def concat(self, name: str, dtype: Any) -> np.ndarray[Any, Any]:
        parts: list[np.ndarray[Any, Any]] = getattr(self, name)
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)


@dataclass
class _Flows:
    """Chrome flow events (``s``/``t``/``f``) other than launch flows, column-wise in file order."""

    ident: list[Any] = field(default_factory=list)  # the flow id (int, str or None)
    cat: list[np.ndarray[Any, Any]] = field(default_factory=list)
    src: list[np.ndarray[Any, Any]] = field(default_factory=list)
    ts: list[np.ndarray[Any, Any]] = field(default_factory=list)  # ns, file time
    next_slice: list[np.ndarray[Any, Any]] = field(default_factory=list)  # an "f" bound to the next slice
    seq: list[np.ndarray[Any, Any]] = field(default_factory=list)  # file order

    def __len__(self) -> int:
        return len(self.ident)


@dataclass
class _KernelRows:
    """Kineto kernel args of slices, column-wise (``event`` = provisional index)."""

    event: list[np.ndarray[Any, Any]] = field(default_factory=list)
    grid: list[np.ndarray[Any, Any]] = field(default_factory=list)
    block: list[np.ndarray[Any, Any]] = field(default_factory=list)
    registers: list[np.ndarray[Any, Any]] = field(default_factory=list)
    shared: list[np.ndarray[Any, Any]] = field(default_factory=list)
    blocks_per_sm: list[np.ndarray[Any, Any]] = field(default_factory=list)
    warps_per_sm: list[np.ndarray[Any, Any]] = field(default_factory=list)
    occupancy: list[np.ndarray[Any, Any]] = field(default_factory=list)


class _State:
    """Everything gathered while streaming one file.

    Ids are handed out in file order, whatever the chunking: a thread ``(pid, tid)`` and a category get their id
    at the first slice, instant, B/E or flow event that names them; an event name at the first slice, instant or
    B/E event. ``seq`` counts every event of the array, so it orders any two events as the file does.
    """

    def __init__(self) -> None:
        self.builder = TraceBuilder("chrome")
        self.cols = _Columns()
        self.n = 0
        self.cats: dict[str, int] = {"": 0}
        self.srcs: dict[tuple[Any, Any], int] = {}
        self.proc_name: dict[Any, str] = {}
        self.proc_labels: dict[Any, str] = {}
        self.proc_sort: dict[Any, int] = {}
        self.thread_name: dict[tuple[Any, Any], str] = {}
        self.thread_sort: dict[tuple[Any, Any], int] = {}
        # side info by provisional event index
        self.kern = _KernelRows()
        self.copy_ev: list[np.ndarray[Any, Any]] = []
        self.copy_bytes: list[np.ndarray[Any, Any]] = []
        self.coll_rows: list[tuple[int, str, str | None, int, int, int, str | None]] = []
        self.details: list[tuple[int, str, str]] = []  # (event, "kernel"|"memcpy", details text)
        # B/E, async and flow events (matched after streaming)
        self.be: list[tuple[int, int, int, int, int, str]] = []  # (src, ts, seq, name, cat, ph)
        self.asyncs: list[tuple[Any, ...]] = []  # (ph, pid, cat, id, ts, name, seq)
        self.flows = _Flows()
        self.counters: dict[tuple[Any, str], tuple[list[int], list[float]]] = defaultdict(lambda: ([], []))
        self.other_phases: dict[str, int] = defaultdict(int)
        self.skipped = 0
        self.python_left_out = 0  # python_function events left out on request (include_python=False)
        self.skipped_example = ""
        self.repaired = 0
        self.repaired_example = ""
        self.negative_dur = 0
        self.seq = 0

    def src_id(self, pid: Any, tid: Any) -> int:
        key = (pid, tid)
        i = self.srcs.get(key)
        if i is None:
            i = self.srcs[key] = len(self.srcs)
        return i

    def cat_id(self, cat: str) -> int:
        i = self.cats.get(cat)
        if i is None:
            i = self.cats[cat] = len(self.cats)
        return i

    def name_id(self, name: str) -> int:
        return self.builder.names.intern(name)


#: the largest |timestamp| or duration in µs the model holds: int64 ns with room for differences (2**62 ns,
#: about 146 years); beyond it a value is no time (an epoch in ns written as µs, a corrupted number)
MAX_ABS_US = float(2**62) / 1000.0
#: what :func:`_to_ns` gives for a value beyond :data:`MAX_ABS_US`
OUT_OF_RANGE_NS = np.iinfo(np.int64).min


def _to_ns(values: Iterable[Any], exact: bool) -> np.ndarray[Any, Any]:
    """µs values (float or Decimal) → int64 ns, rounded to the nearest ns (never to whole µs); values beyond
    :data:`MAX_ABS_US` (or not finite) become :data:`OUT_OF_RANGE_NS`."""
    if exact:
        return np.array([_one_ns(v, True) for v in values], dtype=np.int64)
    arr = values if isinstance(values, np.ndarray) else np.fromiter(values, np.float64)
    ok = np.abs(arr) <= MAX_ABS_US
    if ok.all():
        return np.rint(arr * 1000.0).astype(np.int64)
    out = np.rint(np.where(ok, arr, 0.0) * 1000.0).astype(np.int64)
    out[~ok] = OUT_OF_RANGE_NS
    return out


def _one_ns(v: Any, exact: bool) -> int:
    """One µs value → int ns (see :func:`_to_ns`)."""
    if not abs(float(v)) <= MAX_ABS_US:
        return int(OUT_OF_RANGE_NS)
    if exact:
        return int((Decimal(v) * 1000).to_integral_value(ROUND_HALF_EVEN))
    return round(float(v) * 1000.0)


def _ids(table: dict[Any, int], keys: list[Any]) -> np.ndarray[Any, Any]:
    """Dense ids of ``keys`` from ``table``; keys not in it yet are added in the order they first appear."""
    got = list(map(table.get, keys))
    if None in got:
        for k in compress(keys, map(operator.is_, got, repeat(None))):
            if k not in table:
                table[k] = len(table)
        got = list(map(table.__getitem__, keys))
    return np.array(got, dtype=np.int64)


def _name_ids(st: _State, names: list[str]) -> np.ndarray[Any, Any]:
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


def _process_chunk(st: _State, chunk: Chunk, *, include_python: bool = True) -> None:
    """Turn one decoded chunk into columns and side rows (column-wise; no Python loop per slice)."""
    evs = chunk.events
    st.skipped += chunk.skipped
    st.skipped_example = st.skipped_example or chunk.skipped_example
    st.repaired += chunk.repaired
    st.repaired_example = st.repaired_example or chunk.repaired_example
    for note in chunk.notes:
        st.builder.warn(f"The file is not strict JSON: {note}.")
    if chunk.counters:
        _process_counters(st, chunk.counters, chunk.exact)
    n = len(evs)
    if n == 0:
        return
    exact = chunk.exact
    phs: list[str] = chunk.phs if chunk.phs is not None else list(map(_A_PH, evs))
    ts_f = chunk.ts
    # an event without a timestamp (NaN) is skipped, except metadata, which needs none
    no_ts = np.isnan(ts_f) if ts_f is not None else np.fromiter((e.ts != e.ts for e in evs), bool, n)
    far = (
        np.abs(ts_f) > MAX_ABS_US
        if ts_f is not None
        else np.fromiter((abs(float(e.ts)) > MAX_ABS_US for e in evs), bool, n)
    )
    drop = None
    if far.any():  # a timestamp no clock gives (beyond ±146 years): the event is skipped like one without ts
        far &= np.fromiter(map("M".__ne__, phs), bool, n)
        if far.any():
            first = evs[int(np.flatnonzero(far)[0])]
            st.skipped += int(far.sum())
            st.skipped_example = st.skipped_example or (
                f"a {first.ph!r} event named {first.name!r} with ts {float(first.ts):.3g} µs, out of range"
            )
            drop = far
            no_ts &= ~far
    if no_ts.any():
        no_ts &= np.fromiter(map("M".__ne__, phs), bool, n)
        if no_ts.any():
            first = evs[int(np.flatnonzero(no_ts)[0])]
            st.skipped += int(no_ts.sum())
            st.skipped_example = st.skipped_example or f"a {first.ph!r} event named {first.name!r} without ts"
            drop = no_ts if drop is None else drop | no_ts
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
        n = len(evs)
        if n == 0:
            return
    seq0 = st.seq
    st.seq += n
    if phs.count("X") == n:  # the common case: a run of complete events only
        _process_slices(st, evs, None, ts_f, exact, seq0, None)
        return
    group = np.fromiter(map(_PH_GROUP.get, phs, repeat(_G_OTHER)), dtype=np.uint8, count=n)
    is_p = group <= _G_FLOW
    idx_p = np.flatnonzero(is_p)
    if len(idx_p):
        ev_p = list(compress(evs, is_p.tolist())) if len(idx_p) < n else evs
        _process_slices(st, ev_p, group[idx_p], ts_f[idx_p] if ts_f is not None else None, exact, seq0, idx_p)
    if len(idx_p) < n:
        _process_other(st, evs, phs, group, exact, seq0)


def _process_slices(
    st: _State,
    evs: list[Any],
    group: np.ndarray[Any, Any] | None,
    ts_f: np.ndarray[Any, Any] | None,
    exact: bool,
    seq0: int,
    pos: np.ndarray[Any, Any] | None,
) -> None:
    """Slices, instants, B/E and flow events of a chunk (``group`` None: slices only); ``pos`` = their places."""
    n = len(evs)
    src = _ids(st.srcs, list(map(_A_PIDTID, evs)))
    cat = _ids(st.cats, list(map(_A_CAT, evs)))
    ts = np.rint(ts_f * 1000.0).astype(np.int64) if ts_f is not None else _to_ns(map(_A_TS, evs), exact)
    if group is None:
        _add_slices(st, evs, ts, src, cat, _name_ids(st, list(map(_A_NAME, evs))), None, exact)
        return
    named = group <= _G_BE
    name = np.full(n, -1, dtype=np.int64)
    if named.all():
        name = _name_ids(st, list(map(_A_NAME, evs)))
    elif named.any():
        name[named] = _name_ids(st, list(map(_A_NAME, compress(evs, named.tolist()))))
    direct = group <= _G_I
    sel = np.flatnonzero(direct)
    if len(sel):
        ev_d = evs if len(sel) == n else list(compress(evs, direct.tolist()))
        is_x = group[sel] == _G_X
        _add_slices(st, ev_d, ts[sel], src[sel], cat[sel], name[sel], None if is_x.all() else is_x, exact)
    seq = seq0 + (pos if pos is not None else np.arange(n))
    for i in np.flatnonzero(group == _G_BE).tolist():
        st.be.append((int(src[i]), int(ts[i]), int(seq[i]), int(name[i]), int(cat[i]), evs[i].ph))
    sel = np.flatnonzero(group == _G_FLOW)
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


def _add_slices(
    st: _State,
    evs: list[Any],
    start: np.ndarray[Any, Any],
    src: np.ndarray[Any, Any],
    cat: np.ndarray[Any, Any],
    name: np.ndarray[Any, Any],
    is_x: np.ndarray[Any, Any] | None,
    exact: bool,
) -> None:
    """Complete (``X``) events and instants (where ``is_x`` is False; None: all are ``X``) become events."""
    n = len(evs)
    base = st.n
    xs = evs if is_x is None else list(compress(evs, is_x.tolist()))
    nx = len(xs)
    dur_x = _to_ns(map(_A_DUR, xs), exact)
    far = dur_x == OUT_OF_RANGE_NS
    if far.any():
        st.repaired += int(far.sum())
        st.repaired_example = st.repaired_example or f"an event named {xs[int(np.flatnonzero(far)[0])].name!r} " + (
            "whose dur is out of range (shown with duration 0)"
        )
        dur_x[far] = 0
    neg = dur_x < 0
    if neg.any():
        st.negative_dur += int(neg.sum())
        dur_x[neg] = 0
    argl = list(map(_A_ARGS, xs))
    if None in argl:
        argl = [a if a is not None else _NO_ARGS for a in argl]
    corr_x = np.fromiter(map(_A_CORR, argl), np.int64, nx)
    no_corr = corr_x < 0
    if no_corr.any():
        corr_x[no_corr] = -1
        texts = list(map(_A_CORR_ID, argl))
        if texts.count(None) != nx:
            for i in np.flatnonzero(no_corr).tolist():
                if texts[i] is not None:
                    corr_x[i] = _int64_or(texts[i], -1)
    ext_x = np.fromiter(map(_A_EXT, argl), np.int64, nx)
    dev_x = np.fromiter(map(_A_DEVICE, argl), np.int64, nx)
    # provisional index of every X event
    ev_x = base + (np.arange(n, dtype=np.int64) if is_x is None else np.flatnonzero(is_x))
    _add_kernel_and_copy_rows(st, argl, ev_x)
    if is_x is None:
        dur, corr, ext, device = dur_x, corr_x, ext_x, dev_x
        phc = np.full(n, _PH_X, dtype=np.uint8)
    else:
        dur = np.zeros(n, dtype=np.int64)
        corr = np.full(n, -1, dtype=np.int64)
        ext = np.full(n, -1, dtype=np.int64)
        device = np.full(n, -1, dtype=np.int64)
        dur[is_x], corr[is_x], ext[is_x], device[is_x] = dur_x, corr_x, ext_x, dev_x
        phc = np.where(is_x, _PH_X, _PH_I).astype(np.uint8)
    _append(st, start, dur, src, cat, name, corr, ext, device, phc)


def _add_kernel_and_copy_rows(st: _State, argl: list[Any], ev_x: np.ndarray[Any, Any]) -> None:
    """Kernel rows (args with a grid or registers), copy rows (args with bytes) and JAX details strings."""
    nx = len(argl)
    regs = np.fromiter(map(_A_REGS, argl), np.int64, nx)
    grids = list(map(_A_GRID, argl))
    is_kernel = regs >= 0
    if grids.count(None) != nx:
        is_kernel |= np.fromiter(map(operator.is_not, grids, repeat(None)), bool, nx)
    k = np.flatnonzero(is_kernel)
    if len(k):
        rows = [_A_KERNEL(argl[i]) for i in k.tolist()]
        grid, block, registers, shared, bps, wps, occ = zip(*rows, strict=True)
        kr = st.kern
        kr.event.append(ev_x[k])
        kr.grid.append(np.array([g or (0, 0, 0) for g in grid], dtype=np.int64).reshape(-1, 3))
        kr.block.append(np.array([b or (0, 0, 0) for b in block], dtype=np.int64).reshape(-1, 3))
        kr.registers.append(np.array(registers, dtype=np.int64))
        kr.shared.append(np.array(shared, dtype=np.int64))
        kr.blocks_per_sm.append(np.array(bps, dtype=np.float64))
        kr.warps_per_sm.append(np.array(wps, dtype=np.float64))
        kr.occupancy.append(np.array(occ, dtype=np.float64))
    nbytes = np.fromiter(map(_A_BYTES, argl), np.int64, nx)
    c = np.flatnonzero((nbytes >= 0) & ~is_kernel)
    if len(c):
        st.copy_ev.append(ev_x[c])
        st.copy_bytes.append(nbytes[c])
    coll = list(map(_A_COLLECTIVE, argl))
    if coll.count(None) != nx:
        for i, name in enumerate(coll):
            if name is not None:
                a = argl[i]
                st.coll_rows.append((int(ev_x[i]), name, a.group, a.group_size, a.in_nelems, a.out_nelems, a.dtype))
    kd = list(map(_A_KDETAILS, argl))
    md = list(map(_A_MDETAILS, argl))
    if kd.count(None) != nx or md.count(None) != nx:
        for i, (kt, mt) in enumerate(zip(kd, md, strict=True)):
            if kt is not None:
                st.details.append((int(ev_x[i]), "kernel", kt))
            elif mt is not None:
                st.details.append((int(ev_x[i]), "memcpy", mt))


def _append(
    st: _State,
    start: np.ndarray[Any, Any],
    dur: np.ndarray[Any, Any],
    src: np.ndarray[Any, Any],
    cat: np.ndarray[Any, Any],
    name: np.ndarray[Any, Any],
    corr: np.ndarray[Any, Any],
    ext: np.ndarray[Any, Any],
    device: np.ndarray[Any, Any],
    phc: np.ndarray[Any, Any],
) -> None:
    c = st.cols
    c.start.append(start)
    c.dur.append(dur)
    c.src.append(src.astype(np.int32))
    c.cat.append(cat.astype(np.int32))
    c.name.append(name.astype(np.int32))
    c.corr.append(corr)
    c.ext.append(ext)
    c.device.append(device)
    c.phc.append(phc)
    st.n += int(start.shape[0])


def _process_other(
    st: _State, evs: list[Any], phs: list[str], group: np.ndarray[Any, Any], exact: bool, seq0: int
) -> None:
    """Metadata, async and unknown-phase events of a chunk (one by one: there are few)."""
    for i in np.flatnonzero(group > _G_FLOW).tolist():
        e = evs[i]
        g = group[i]
        if g == _G_META:
            _metadata(st, e)
        elif g == _G_ASYNC:
            ident = e.id if e.id is not None else (e.id2 if isinstance(e.id2, (int, str)) else None)
            st.asyncs.append((e.ph, e.pid, e.cat, ident, _one_ns(e.ts, exact), e.name, seq0 + i))
        elif g == _G_OTHER:
            st.other_phases[phs[i]] += 1


def _metadata(st: _State, e: Any) -> None:
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


def _process_counters(st: _State, counters: list[Any], exact: bool) -> None:
    for c in counters:
        if not isinstance(c.args, dict):
            continue
        ts = _one_ns(c.ts, exact)
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


# ---------------------------------------------------------------------------------------------------------
# matching B/E and async pairs
# ---------------------------------------------------------------------------------------------------------
def _match_begin_end(st: _State, end_of_trace: int) -> None:
    if not st.be:
        return
    rows = sorted(st.be, key=lambda r: (r[0], r[1], r[2]))
    out_start: list[int] = []
    out_dur: list[int] = []
    out_src: list[int] = []
    out_cat: list[int] = []
    out_name: list[int] = []
    stacks: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    orphan_e = 0
    for src, ts, _seq, name, cat, ph in rows:
        if ph == "B":
            stacks[src].append((ts, name, cat))
        elif stacks[src]:
            b_ts, b_name, b_cat = stacks[src].pop()
            out_start.append(b_ts)
            out_dur.append(max(0, ts - b_ts))
            out_src.append(src)
            out_cat.append(b_cat)
            out_name.append(b_name)
        else:
            orphan_e += 1
    open_b = 0
    for src, stack in stacks.items():
        for b_ts, b_name, b_cat in stack:
            open_b += 1
            out_start.append(b_ts)
            out_dur.append(max(0, end_of_trace - b_ts))
            out_src.append(src)
            out_cat.append(b_cat)
            out_name.append(b_name)
    if orphan_e:
        st.builder.warn(f"{orphan_e} end (E) events had no matching begin (B) and were ignored.")
    if open_b:
        st.builder.warn(
            f"{open_b} begin (B) events were never ended (no E); they are shown running to the end of the trace."
        )
    n = len(out_start)
    if n:
        _append(
            st,
            np.array(out_start, dtype=np.int64),
            np.array(out_dur, dtype=np.int64),
            np.array(out_src, dtype=np.int32),
            np.array(out_cat, dtype=np.int16),
            np.array(out_name, dtype=np.int32),
            np.full(n, -1, dtype=np.int64),
            np.full(n, -1, dtype=np.int64),
            np.full(n, -1, dtype=np.int32),
            np.full(n, _PH_BE, dtype=np.uint8),
        )


def _match_async(st: _State, end_of_trace: int) -> None:
    if not st.asyncs:
        return
    rows = sorted(st.asyncs, key=lambda r: (r[4], r[6]))
    stacks: dict[tuple[Any, ...], list[tuple[int, str]]] = defaultdict(list)
    starts: list[int] = []
    durs: list[int] = []
    srcs: list[int] = []
    names: list[int] = []
    cats: list[int] = []
    phcs: list[int] = []
    unmatched = 0
    for ph, pid, cat, ident, ts, name, _seq in rows:
        key = (pid, cat, ident)
        src = st.src_id(pid, ("async", cat))
        if ph == "b":
            stacks[key].append((ts, name))
        elif ph == "e":
            if stacks[key]:
                b_ts, b_name = stacks[key].pop()
                starts.append(b_ts)
                durs.append(max(0, ts - b_ts))
                srcs.append(src)
                names.append(st.builder.names.intern(b_name))
                cats.append(st.cat_id(cat))
                phcs.append(_PH_ASYNC)
            else:
                unmatched += 1
        else:
            starts.append(ts)
            durs.append(0)
            srcs.append(src)
            names.append(st.builder.names.intern(name))
            cats.append(st.cat_id(cat))
            phcs.append(_PH_ASYNC_I)
    for (pid, cat, _ident), stack in stacks.items():
        for b_ts, b_name in stack:
            unmatched += 1
            starts.append(b_ts)
            durs.append(max(0, end_of_trace - b_ts))
            srcs.append(st.src_id(pid, ("async", cat)))
            names.append(st.builder.names.intern(b_name))
            cats.append(st.cat_id(cat))
            phcs.append(_PH_ASYNC)
    if unmatched:
        st.builder.warn(f"{unmatched} async (b/e) events had no partner; open ones run to the end of the trace.")
    n = len(starts)
    if n:
        _append(
            st,
            np.array(starts, dtype=np.int64),
            np.array(durs, dtype=np.int64),
            np.array(srcs, dtype=np.int32),
            np.array(cats, dtype=np.int16),
            np.array(names, dtype=np.int32),
            np.full(n, -1, dtype=np.int64),
            np.full(n, -1, dtype=np.int64),
            np.full(n, -1, dtype=np.int32),
            np.array(phcs, dtype=np.uint8),
        )


# ---------------------------------------------------------------------------------------------------------
# classification into kinds and lanes
# ---------------------------------------------------------------------------------------------------------
def _detect_format(st: _State, header: dict[str, Any]) -> str:
    if any(_JAX_GPU_PROC.match(n) or _JAX_HOST_PROC.match(n) for n in st.proc_name.values()):
        return "jax"
    kineto_cats = {"kernel", "cpu_op", "cuda_runtime", "gpu_memcpy", "user_annotation", "python_function"}
    if "schemaVersion" in header or "deviceProperties" in header or kineto_cats & {c.lower() for c in st.cats}:
        return "kineto"
    return "chrome"


def _int_or(v: Any, default: int) -> int:
    if isinstance(v, bool):
        return default
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.lstrip("-").isdigit():
        return int(v)
    return default


def _stable_int(v: Any) -> int:
    """An int id for a pid/tid that may be a string (string ids get a negative stable hash-free id)."""
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    return -1


class _Classifier:
    """Maps (source thread, category, name) to (kind, lane) following the producer's conventions."""

    def __init__(self, st: _State, fmt: str, rank: int) -> None:
        self.st = st
        self.fmt = fmt
        self.rank = rank
        self.b = st.builder

    def _proc_display(self, pid: Any) -> str:
        name = self.st.proc_name.get(pid, "")
        label = self.st.proc_labels.get(pid, "")
        if name and label:
            return f"{name} ({label})"
        return name or label or (f"process {pid}" if pid not in ("", None) else "process")

    def cpu_lane(self, pid: Any, tid: Any) -> int:
        tname = self.st.thread_name.get((pid, tid)) or f"thread {tid}"
        psort = self.st.proc_sort.get(pid, _stable_int(pid))
        tsort = self.st.thread_sort.get((pid, tid), _stable_int(tid))
        return self.b.lane(
            ("cpu", pid, tid),
            Lane(
                kind=LaneKind.CPU_THREAD,
                name=tname,
                rank=self.rank,
                pid=_stable_int(pid),
                tid=_stable_int(tid),
                process_name=self._proc_display(pid),
                sort_key=(self.rank, 0, psort, str(pid), tsort, str(tid)),
            ),
        )

    def other_lane(self, pid: Any, tid: Any) -> int:
        pname = self._proc_display(pid)
        tname = self.st.thread_name.get((pid, tid)) or (str(tid) if tid not in ("", None) else "events")
        return self.b.lane(
            ("other", pid, tid),
            Lane(
                kind=LaneKind.OTHER,
                name=tname,
                rank=self.rank,
                pid=_stable_int(pid),
                tid=_stable_int(tid),
                process_name=pname,
                sort_key=(self.rank, 9, str(pid), str(tid)),
            ),
        )

    def async_lane(self, pid: Any, cat: Any) -> int:
        return self.b.lane(
            ("async", pid, cat),
            Lane(
                kind=LaneKind.ASYNC,
                name=f"async {cat}" if cat else "async",
                rank=self.rank,
                pid=_stable_int(pid),
                process_name=self._proc_display(pid),
                sort_key=(
                    self.rank,
                    0,
                    self.st.proc_sort.get(pid, _stable_int(pid)),
                    str(pid),
                    1 << 40,
                    str(cat),
                ),
            ),
        )

    def gpu_lane(self, device: int, stream: int, pid: Any, tid: Any) -> int:
        tname = self.st.thread_name.get((pid, tid), "")
        name = f"stream {stream}"
        if tname and self.fmt == "jax":
            name = tname
        return self.b.lane(
            ("gpu", device, stream),
            Lane(
                kind=LaneKind.GPU_STREAM,
                name=name,
                rank=self.rank,
                pid=_stable_int(pid),
                device=device,
                stream=stream,
                process_name=f"GPU {device}",
                sort_key=(self.rank, 1, device, 1, stream),
            ),
        )

    def gpu_ranges_lane(self, device: int) -> int:
        return self.b.lane(
            ("gpuranges", device),
            Lane(
                kind=LaneKind.GPU_RANGES,
                name="annotations",
                rank=self.rank,
                device=device,
                process_name=f"GPU {device}",
                sort_key=(self.rank, 1, device, 0, 0),
            ),
        )

    def classify(self, pid: Any, tid: Any, cat: str, name: str, device_arg: int, phc: int) -> tuple[Kind, int]:
        """(kind, lane id) of an event from its thread, category, name and args."""
        if phc in (_PH_ASYNC, _PH_ASYNC_I):
            kind = Kind.MARKER if phc == _PH_ASYNC_I else Kind.RANGE
            return kind, self.async_lane(pid, tid[1] if isinstance(tid, tuple) else "")
        if self.fmt == "jax":
            return self._classify_jax(pid, tid, name, phc)
        kind = _CAT_KIND.get(cat.lower(), Kind.OTHER) if cat else Kind.OTHER
        if phc == _PH_I:
            kind = Kind.MARKER
        if kind in _GPU_EVENT_KINDS:
            device = device_arg if device_arg >= 0 else max(_int_or(pid, 0), 0)
            stream = _int_or(tid, 0)
            return kind, self.gpu_lane(device, stream, pid, tid)
        if kind == Kind.GPU_RANGE:
            device = device_arg if device_arg >= 0 else max(_int_or(pid, 0), 0)
            return kind, self.gpu_ranges_lane(device)
        if kind == Kind.OVERHEAD or not isinstance(pid, int) or pid < 0:
            return kind, self.other_lane(pid, tid)
        if kind == Kind.OTHER and cat == "" and phc == _PH_X:
            kind = Kind.OTHER
        return kind, self.cpu_lane(pid, tid)

    def _classify_jax(self, pid: Any, tid: Any, name: str, phc: int) -> tuple[Kind, int]:
        pname = self.st.proc_name.get(pid, "")
        m = _JAX_GPU_PROC.match(pname)
        if m:
            device = int(m.group(1))
            tname = self.st.thread_name.get((pid, tid), "")
            sm = _JAX_STREAM.match(tname)
            if sm is None:
                return (Kind.MARKER if phc == _PH_I else Kind.GPU_RANGE), self.gpu_ranges_lane(device)
            stream = int(sm.group(1))
            if phc == _PH_I:
                kind = Kind.MARKER
            elif _JAX_COPY.match(name):
                kind = Kind.MEMCPY
            elif name.startswith("Memset"):
                kind = Kind.MEMSET
            else:
                kind = Kind.KERNEL
            return kind, self.gpu_lane(device, stream, pid, tid)
        if phc == _PH_I:
            kind = Kind.MARKER
        elif name.startswith("$"):
            kind = Kind.PYTHON
        elif _CUDA_API_NAME.match(name):
            kind = Kind.API
        else:
            kind = Kind.RANGE
        if not isinstance(pid, int):
            return kind, self.other_lane(pid, tid)
        return kind, self.cpu_lane(pid, tid)


def _classify_all(
    st: _State,
    fmt: str,
    rank: int,
    src: np.ndarray[Any, Any],
    cat: np.ndarray[Any, Any],
    name: np.ndarray[Any, Any],
    device: np.ndarray[Any, Any],
    phc: np.ndarray[Any, Any],
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Kind and lane of every event, computed once per distinct (thread, category[, name], ph class)."""
    n = src.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.int32)
    use_name = (cat == 0) if fmt != "jax" else np.ones(n, dtype=bool)
    name_key = np.where(use_name, name, -1).astype(np.int64)
    first, inverse = _distinct_rows(
        [src.astype(np.int64), cat.astype(np.int64), phc.astype(np.int64), device.astype(np.int64), name_key]
    )
    src_keys = list(st.srcs)
    cat_names = list(st.cats)
    names = st.builder.names.strings
    cls = _Classifier(st, fmt, rank)
    kinds = np.empty(len(first), dtype=np.uint8)
    lanes = np.empty(len(first), dtype=np.int32)
    for j, i in enumerate(first.tolist()):
        pid, tid = src_keys[int(src[i])]
        kind, lane = cls.classify(pid, tid, cat_names[int(cat[i])], names[int(name[i])], int(device[i]), int(phc[i]))
        kinds[j] = kind
        lanes[j] = lane
    inverse = np.asarray(inverse).reshape(-1)
    return kinds[inverse], lanes[inverse]


def _distinct_rows(cols: list[np.ndarray[Any, Any]]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Distinct rows of equally long int64 columns, in lexicographic order: (index of each one's first
    occurrence, row id of every row), like ``np.unique(np.stack(cols), axis=1, return_index, return_inverse)``.

    The columns are packed into one int64 key (mixed radix over each column's range) when that fits, which is
    several times faster than a multi-column unique.
    """
    key = np.zeros(cols[0].shape[0], dtype=np.int64)
    radix = 1
    for c in reversed(cols):
        lo = int(c.min())
        span = int(c.max()) - lo + 1
        if radix * span >= 2**62:
            _, first, inverse = np.unique(np.stack(cols), axis=1, return_index=True, return_inverse=True)
            return first, np.asarray(inverse).reshape(-1)
        key += (c - lo) * np.int64(radix)
        radix *= span
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, np.asarray(inverse).reshape(-1)


def _parse_details(text: str) -> dict[str, str]:
    return dict(_DETAIL_KV.findall(text))


def _add_side_tables(st: _State, kind: np.ndarray[Any, Any], names: list[str], name: np.ndarray[Any, Any]) -> None:
    b = st.builder
    # kernels from Kineto args
    kr = st.kern
    k_ev = np.concatenate(kr.event) if kr.event else np.zeros(0, dtype=np.int64)
    keep = kind[k_ev] == Kind.KERNEL

    def kcol(parts: list[np.ndarray[Any, Any]], dtype: Any, width: int = 0) -> np.ndarray[Any, Any]:
        if not parts:
            return np.zeros((0, width) if width else 0, dtype=dtype)
        out: np.ndarray[Any, Any] = np.concatenate(parts)[keep].astype(dtype)
        return out

    def nan_if_negative(values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        return np.where(values >= 0, values, np.nan)

    kineto_kernels = {
        "event": k_ev[keep],
        "grid": kcol(kr.grid, np.int32, 3),
        "block": kcol(kr.block, np.int32, 3),
        "registers": kcol(kr.registers, np.int32),
        "shared_static": np.maximum(kcol(kr.shared, np.int64), 0).astype(np.int32),
        "shared_dynamic": np.zeros(int(keep.sum()), dtype=np.int32),
        "occupancy": nan_if_negative(kcol(kr.occupancy, np.float64)).astype(np.float32),
        "blocks_per_sm": nan_if_negative(kcol(kr.blocks_per_sm, np.float64)).astype(np.float32),
        "warps_per_sm": nan_if_negative(kcol(kr.warps_per_sm, np.float64)).astype(np.float32),
    }
    kern_events: list[int] = []
    grid: list[tuple[int, int, int]] = []
    block: list[tuple[int, int, int]] = []
    regs: list[int] = []
    smem: list[int] = []
    dyn: list[int] = []
    occ: list[float] = []
    copy_ev: list[int] = []
    copy_bytes: list[int] = []
    copy_dir: list[int] = []
    copy_src: list[int] = []
    copy_dst: list[int] = []
    copy_async: list[int] = []
    seen_copy = set()
    # JAX details strings (a kernel that also carries Kineto's launch args keeps those: one row per kernel)
    has_kineto_row = set(kineto_kernels["event"].tolist()) if st.details else set()
    for ev, what, text in st.details:
        d = _parse_details(text)
        if what == "kernel" and kind[ev] == Kind.KERNEL and ev not in has_kineto_row:
            kern_events.append(ev)
            grid.append(_triple(d.get("grid")))
            block.append(_triple(d.get("block")))
            regs.append(_int_or(d.get("regs"), -1))
            smem.append(max(_int_or(d.get("static_shared"), 0), 0))
            dyn.append(max(_int_or(d.get("dynamic_shared"), 0), 0))
            occ.append(_float_or_nan(d.get("occ_pct")))
        elif what == "memcpy" and kind[ev] == Kind.MEMCPY:
            seen_copy.add(ev)
            m = _JAX_COPY.match(names[int(name[ev])])
            copy_ev.append(ev)
            copy_bytes.append(max(_int_or(d.get("size"), 0), 0))
            copy_dir.append(_DIRECTION.get(m.group(1).lower(), CopyKind.UNKNOWN) if m else CopyKind.UNKNOWN)
            copy_src.append(_MEMKIND.get(d.get("kind_src", "").lower(), MemKind.UNKNOWN))
            copy_dst.append(_MEMKIND.get(d.get("kind_dst", "").lower(), MemKind.UNKNOWN))
            copy_async.append(_int_or(d.get("async"), -1))
    if len(kineto_kernels["event"]):
        b.add_kernels(**kineto_kernels)
    if kern_events:
        nan = np.full(len(kern_events), np.nan, dtype=np.float32)
        b.add_kernels(
            event=np.array(kern_events, dtype=np.int64),
            grid=np.array(grid, dtype=np.int32).reshape(-1, 3),
            block=np.array(block, dtype=np.int32).reshape(-1, 3),
            registers=np.array(regs, dtype=np.int32),
            shared_static=np.array(smem, dtype=np.int32),
            shared_dynamic=np.array(dyn, dtype=np.int32),
            occupancy=np.array(occ, dtype=np.float32),
            blocks_per_sm=nan,
            warps_per_sm=nan,
        )
    # collectives (Kineto writes the framework's view of the NCCL call on the kernel)
    colls = [r for r in st.coll_rows if kind[r[0]] == Kind.KERNEL]
    if colls:
        intern = b.names.intern
        b.add_collectives(
            event=np.array([r[0] for r in colls], dtype=np.int64),
            op=np.array([intern(r[1]) for r in colls], dtype=np.int32),
            group=np.array([intern(r[2]) if r[2] is not None else -1 for r in colls], dtype=np.int32),
            group_size=np.array([max(r[3], 0) for r in colls], dtype=np.int32),
            bytes_in=np.array([_coll_bytes(r[4], r[6]) for r in colls], dtype=np.int64),
            bytes_out=np.array([_coll_bytes(r[5], r[6]) for r in colls], dtype=np.int64),
            dtype=np.array([intern(r[6]) if r[6] is not None else -1 for r in colls], dtype=np.int32),
        )
    # copies and memsets from Kineto args; direction and memory kinds from the name
    c_ev = np.concatenate(st.copy_ev) if st.copy_ev else np.zeros(0, dtype=np.int64)
    c_bytes = np.concatenate(st.copy_bytes) if st.copy_bytes else np.zeros(0, dtype=np.int64)
    copy_like = np.flatnonzero((kind == Kind.MEMCPY) | (kind == Kind.MEMSET))
    if seen_copy:
        copy_like = copy_like[~np.isin(copy_like, np.array(sorted(seen_copy), dtype=np.int64))]
    nbytes = np.zeros(len(copy_like), dtype=np.int64)
    if len(c_ev) and len(copy_like):
        at = np.minimum(np.searchsorted(c_ev, copy_like), len(c_ev) - 1)  # c_ev ascends: file order
        hit = c_ev[at] == copy_like
        nbytes[hit] = np.maximum(c_bytes[at[hit]], 0)
    parsed: dict[tuple[int, bool], tuple[int, int, int]] = {}
    for ev, nb in zip(copy_like.tolist(), nbytes.tolist(), strict=True):
        key = (int(name[ev]), bool(kind[ev] == Kind.MEMSET))
        got = parsed.get(key)
        if got is None:
            got = parsed[key] = _copy_from_label(names[key[0]], key[1])
        copy_ev.append(ev)
        copy_bytes.append(nb)
        copy_dir.append(got[0])
        copy_src.append(got[1])
        copy_dst.append(got[2])
        copy_async.append(-1)
    if copy_ev:
        b.add_copies(
            event=np.array(copy_ev, dtype=np.int64),
            bytes=np.array(copy_bytes, dtype=np.int64),
            direction=np.array(copy_dir, dtype=np.uint8),
            src_kind=np.array(copy_src, dtype=np.uint8),
            dst_kind=np.array(copy_dst, dtype=np.uint8),
            is_async=np.array(copy_async, dtype=np.int8),
        )


def _copy_from_label(label: str, memset: bool) -> tuple[int, int, int]:
    """(direction, source memory kind, destination memory kind) of a copy or memset, from its name."""
    if memset:
        inner = label[label.find("(") + 1 : label.rfind(")")].strip().lower() if "(" in label else ""
        return CopyKind.UNKNOWN, MemKind.UNKNOWN, _MEMKIND.get(inner, MemKind.UNKNOWN)
    m = _KINETO_COPY.search(label)
    if m:
        return (
            _DIRECTION.get(m.group(1).lower(), CopyKind.UNKNOWN),
            _MEMKIND.get((m.group(2) or "").lower(), MemKind.UNKNOWN),
            _MEMKIND.get((m.group(3) or "").lower(), MemKind.UNKNOWN),
        )
    jm = _JAX_COPY.match(label)
    return (
        _DIRECTION.get(jm.group(1).lower(), CopyKind.UNKNOWN) if jm else CopyKind.UNKNOWN,
        MemKind.UNKNOWN,
        MemKind.UNKNOWN,
    )


_DTYPE_BYTES = {
    "float": 4, "float32": 4, "half": 2, "float16": 2, "bfloat16": 2, "double": 8, "float64": 8,
    "int": 4, "int32": 4, "long": 8, "int64": 8, "short": 2, "int16": 2, "char": 1, "byte": 1, "int8": 1,
    "uint8": 1, "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1,
}  # fmt: skip


def _coll_bytes(nelems: int, dtype: str | None) -> int:
    """Message size in bytes from an element count and a dtype name (``-1`` when either is unknown)."""
    size = _DTYPE_BYTES.get((dtype or "").lower())
    return nelems * size if nelems >= 0 and size else -1


def _triple(v: str | None) -> tuple[int, int, int]:
    if not v:
        return (0, 0, 0)
    parts = [_int_or(p, 0) for p in v.split(",")][:3]
    while len(parts) < 3:
        parts.append(1)
    return (parts[0], parts[1], parts[2])


def _float_or_nan(v: str | None) -> float:
    try:
        return float(v) if v is not None else float("nan")
    except ValueError:
        return float("nan")


def _launch_flows(kind: np.ndarray[Any, Any], corr: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], ...]:
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


def _bind_flows(trace: Trace, st: _State, lane_of_src: dict[int, list[int]]) -> FlowTable:
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
    for s_id in np.unique(src).tolist():
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
    # chain the bound points of each flow id in file order
    group = _ids({}, list(zip(ident, cat.tolist(), strict=True)))
    keep = np.flatnonzero(bound >= 0)
    order = keep[np.lexsort((seq[keep], group[keep]))]
    g, b = group[order], bound[order]
    pair = (g[1:] == g[:-1]) & (b[1:] != b[:-1])
    fwd = cat_names.index("fwdbwd") if "fwdbwd" in cat_names else -1
    kinds = np.where(cat[order][1:][pair] == fwd, FlowKind.FWDBWD, FlowKind.OTHER).astype(np.uint8)
    old = trace.flows
    return FlowTable(
        src=np.concatenate([old.src, b[:-1][pair]]),
        dst=np.concatenate([old.dst, b[1:][pair]]),
        kind=np.concatenate([old.kind, kinds]),
    )


# ---------------------------------------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------------------------------------
def load(
    path: str,
    *,
    progress: Progress | None = None,
    rank: int | None = None,
    default_rank: int = 0,
    include_python: bool = True,
) -> Trace:
    """Load a Chrome trace (``.json`` or gzip, object or bare-array form) into a :class:`Trace`.

    ``rank`` overrides the rank (default: ``distributedInfo.rank``, else ``default_rank``).
    ``include_python=False`` leaves out ``python_function`` events (often most of a trace recorded
    ``with_stack=True``). Raises :class:`TraceError` for input that is not a readable trace; recovers what it
    can from a truncated one.
    """
    st = _State()
    file_size = os.path.getsize(path) if os.path.exists(path) else 0

    def on_read(nbytes: int) -> None:
        if progress is not None:
            progress(nbytes, file_size, st.n)

    info = DocumentInfo()
    with ByteStream(path, on_read=on_read) as src:
        try:
            for chunk in stream_events(src, info):
                _process_chunk(st, chunk, include_python=include_python)
                if progress is not None:
                    progress(src.bytes_in, file_size, st.n)
        except LoadCancelled:
            raise
        except RecursionError:
            raise TraceError(
                f"{path} nests JSON too deeply to read. It is probably not a trace; if it is, report it.",
                path=path,
            ) from None
        gz_truncated, corrupt = src.truncated, src.corrupt
    return _finish(st, info, path, file_size, rank, default_rank, gz_truncated, corrupt)


def _finish(
    st: _State,
    info: DocumentInfo,
    path: str,
    file_size: int,
    rank: int | None,
    default_rank: int,
    gz_truncated: bool,
    corrupt: str | None,
) -> Trace:
    b = st.builder
    header = info.header
    dist = header.get("distributedInfo") if isinstance(header.get("distributedInfo"), dict) else None
    if rank is None:
        rank = _int_or(dist.get("rank"), default_rank) if dist else default_rank
    # truncation, damage and skipped events
    lost = max(0, info.total - info.consumed) if info.truncated else 0
    if info.truncated:
        where = "the gzip stream ends early" if gz_truncated else "the file ends in the middle of the events"
        if lost:
            b.warn(
                f"Trace is truncated ({where}): loaded every complete event; the last {lost:,} bytes "
                f"(decompressed) after the last complete event were not read."
            )
        else:
            b.warn(
                f"Trace is truncated ({where}, right after a complete event): every event in the file was "
                "loaded; the metadata that usually follows the events is missing."
            )
    if corrupt:
        b.warn(f"{corrupt}; events up to the damage were loaded.")
    real_damage = [d for d in info.damaged if not (info.truncated and d is info.damaged[-1])]
    if real_damage:
        skipped_bytes = sum(n for _, n in real_damage)
        b.warn(
            f"The file is damaged: {skipped_bytes:,} bytes in {len(real_damage)} place(s) could not be read (first "
            f"at byte {real_damage[0][0]:,} of the decompressed JSON); the events there were skipped, everything "
            "else was loaded."
        )
    if info.too_deep:
        deep_bytes = sum(n for _, n in info.too_deep)
        b.warn(
            f"{len(info.too_deep)} event(s) nest JSON deeper than the decoder can follow ({deep_bytes:,} bytes, first "
            f"at byte {info.too_deep[0][0]:,} of the decompressed JSON); they were skipped, everything else was "
            "loaded."
        )
    if info.trailer_unreadable:
        b.warn(
            f"The {info.trailer_unreadable:,} bytes after the traceEvents array are cut short or damaged: every "
            "event was loaded, the metadata there was not."
        )
    if gz_truncated and not info.truncated:
        b.warn(
            "The gzip stream ends before its checksum (the file was cut short, perhaps by a crash or an "
            "interrupted copy): every event was read, but the data could not be verified."
        )
    if info.trailer_too_deep:
        b.warn("The keys after the traceEvents array nest JSON too deeply to read; that metadata was skipped.")
    if st.repaired:
        b.warn(
            f"{st.repaired} events had fields of the wrong type or out of range (e.g. numbers beyond 64 bits); "
            f"those fields were ignored and the events kept; first one: {st.repaired_example}"
        )
    if st.skipped:
        b.warn(
            f"{st.skipped} events had unreadable fields (wrong types, NaN, bad numbers) and were skipped; "
            f"first one: {st.skipped_example}"
        )
    if st.negative_dur:
        b.warn(f"{st.negative_dur} events had a negative duration; shown with duration 0.")
    if st.other_phases:
        phases = ", ".join(f"{k} ×{v}" for k, v in sorted(st.other_phases.items()))
        b.warn(f"Events of phases this viewer does not draw were ignored: {phases}.")
    if st.n == 0 and not st.be and not st.asyncs and info.truncated:
        raise TraceError(
            f"{path} is cut short before its first complete event ({info.total:,} bytes read). "
            "Re-copy the file or re-record the profile.",
            path=path,
        )
    if st.n == 0 and not st.be and not st.asyncs and info.too_deep:
        raise TraceError(
            f"{path} nests JSON too deeply to read ({info.too_deep[0][1]:,} bytes of nested brackets) and holds no "
            "event that could be read. It is probably not a trace; if it is, report it.",
            path=path,
        )
    if st.n == 0 and not st.be and not st.asyncs:
        if st.skipped:
            raise TraceError(
                f"{path} is JSON, but none of its {st.skipped} trace entries is a usable event (first one: "
                f"{st.skipped_example}). Open a trace written by torch.profiler, jax.profiler or another Chrome-trace "
                "exporter.",
                path=path,
            )
        b.warn("The trace holds no events (its traceEvents list is empty).")
    # end of the trace, for B/async events that never ended
    ends = [int((c_s + c_d).max()) for c_s, c_d in zip(st.cols.start, st.cols.dur, strict=True) if len(c_s)]
    be_ts = [r[1] for r in st.be] + [r[4] for r in st.asyncs]
    end_of_trace = max(ends + be_ts, default=0)
    _match_begin_end(st, end_of_trace)
    _match_async(st, end_of_trace)

    fmt = _detect_format(st, header)
    b.format = fmt
    src = st.cols.concat("src", np.int32)
    cat = st.cols.concat("cat", np.int32)
    name = st.cols.concat("name", np.int32)
    device = st.cols.concat("device", np.int32)
    phc = st.cols.concat("phc", np.uint8)
    start = st.cols.concat("start", np.int64)
    dur = st.cols.concat("dur", np.int64)
    corr = st.cols.concat("corr", np.int64)
    ext = st.cols.concat("ext", np.int64)
    kind, lane = _classify_all(st, fmt, rank, src, cat, name, device, phc)
    _add_side_tables(st, kind, st.builder.names.strings, name)
    b.add_events(start_ns=start, dur_ns=dur, kind=kind, lane=lane, name=name, corr=corr, ext=ext)
    fsrc, fdst = _launch_flows(kind, corr)
    if len(fsrc):
        b.add_flows(fsrc, fdst, FlowKind.LAUNCH)
    for (pid, series), (ts_list, values) in st.counters.items():
        order = np.argsort(np.array(ts_list, dtype=np.int64), kind="stable")
        b.counters.append(
            CounterSeries(
                name=series,
                ts_ns=np.array(ts_list, dtype=np.int64)[order],
                values=np.array(values, dtype=np.float64)[order],
                rank=rank,
                pid=_stable_int(pid),
            )
        )
    meta = TraceMeta(
        format=fmt,
        source=(os.path.abspath(path),),
        producer=_producer(fmt, header),
        gpus=_gpus(header, st, fmt, rank),
        ranks=(rank,),
        world_size=_int_or(dist.get("world_size"), 0) or None if dist else None,
        truncated_bytes=lost,
        properties=_properties(header, info, file_size, st.python_left_out),
    )
    if fmt == "jax" and not any(k == Kind.KERNEL for k in np.unique(kind).tolist()):
        b.warn("No GPU kernels were found: the JAX trace has no /device:GPU process with stream threads.")
    trace = b.build(meta)
    # bind non-launch flow events (fwdbwd ...) now that lanes are final
    if st.flows:
        lane_of_src: dict[int, list[int]] = defaultdict(list)
        src_keys = list(st.srcs)
        for key, lid in b._lane_ids.items():
            if isinstance(key, tuple) and key[0] in ("cpu", "other") and (key[1], key[2]) in st.srcs:
                lane_of_src[st.srcs[(key[1], key[2])]].append(lid)
        del src_keys
        trace = _replace_flows(trace, _bind_flows(trace, st, lane_of_src))
    return trace


def _replace_flows(trace: Trace, flows: FlowTable) -> Trace:
    import dataclasses

    order = np.lexsort((flows.src, flows.dst, flows.kind))
    flows = FlowTable(src=flows.src[order], dst=flows.dst[order], kind=flows.kind[order])
    for a in (flows.src, flows.dst, flows.kind):
        a.flags.writeable = False
    return dataclasses.replace(trace, flows=flows)


def _producer(fmt: str, header: dict[str, Any]) -> str:
    if fmt == "kineto":
        parts = ["PyTorch profiler (Kineto)"]
        if "schemaVersion" in header:
            parts.append(f"schema {header['schemaVersion']}")
        for key, label in (
            ("cuda_runtime_version", "CUDA runtime"),
            ("cuda_driver_version", "driver"),
            ("cupti_version", "CUPTI"),
        ):
            if key in header:
                parts.append(f"{label} {header[key]}")
        return ", ".join(parts)
    if fmt == "jax":
        return "JAX / XLA profiler"
    return "Chrome trace"


def _gpus(header: dict[str, Any], st: _State, fmt: str, rank: int) -> tuple[GpuInfo, ...]:
    out: list[GpuInfo] = []
    props = header.get("deviceProperties")
    if isinstance(props, list):
        for p in props:
            if not isinstance(p, dict):
                continue
            major, minor = p.get("computeMajor"), p.get("computeMinor")
            out.append(
                GpuInfo(
                    device=_int_or(p.get("id"), len(out)),
                    name=str(p.get("name", "GPU")),
                    rank=rank,
                    sm_count=_int_or(p.get("numSms"), 0) or None,
                    total_memory=_int_or(p.get("totalGlobalMem"), 0) or None,
                    compute_capability=f"{major}.{minor}" if major is not None else None,
                    properties=dict(p),
                )
            )
    if fmt == "jax":
        for pname in st.proc_name.values():
            m = _JAX_GPU_PROC.match(pname)
            if m and not any(g.device == int(m.group(1)) for g in out):
                out.append(GpuInfo(device=int(m.group(1)), name=f"GPU {m.group(1)} (model not recorded)", rank=rank))
    return tuple(sorted(out, key=lambda g: g.device))


def _properties(header: dict[str, Any], info: DocumentInfo, file_size: int, python_left_out: int) -> dict[str, Any]:
    keep = {k: v for k, v in header.items() if k not in ("deviceProperties",) and not isinstance(v, (list, dict))}
    if isinstance(header.get("distributedInfo"), dict):
        keep["distributedInfo"] = header["distributedInfo"]
    keep["json_form"] = info.form
    keep["file_size"] = file_size
    keep["decompressed_size"] = info.total
    if python_left_out:
        keep[PYTHON_LEFT_OUT] = python_left_out
    return keep


def rank_from_filename(path: str) -> int | None:
    """A rank written in a file name (``rank3.pt.trace.json``, ``trace_rank_12.json.gz``), if any."""
    m = _RANK_IN_NAME.search(os.path.basename(path))
    return int(m.group(1)) if m else None
