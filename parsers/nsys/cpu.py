"""CPU-side tables of an nsys export: thread and process names, CUDA runtime/driver API calls, CUDA
synchronization waits, NVTX ranges and marks, OS-runtime calls and profiler overhead.

Everything lands on the lane of the thread that recorded it (one lane per globalTid), except NVTX start/end
ranges that end on another thread (a per-process "across threads" lane) and synchronization rows whose API call
is unknown (a per-process lane).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from gputop_trace.model.arrays import I64
from gputop_trace.model.kinds import Kind
from gputop_trace.parsers.nsys.columns import read_text_by_rowid
from gputop_trace.parsers.nsys.common import (
    DUR_SQL,
    GPID_MASK,
    Batch,
    Context,
    col_or,
    factorize,
    kind_array,
    pack_join_key,
    thread_row_exprs,
)
from gputop_trace.parsers.nsys.gpu import add_gpu_busy_overhead
from gputop_trace.parsers.nsys.schema import as_text, row_span

I32 = npt.NDArray[np.int32]

_API_VERSION_SUFFIX = re.compile(r"_v\d{4,}$")

# NVTX_EVENTS.eventType (ENUM_NSYS_EVENT_TYPE; stable across every version in the corpus)
NVTX_MARK = (34, 65)  # NvtxMark, NvtxtMark
NVTX_THREAD_NAME = 39  # NvtxThread
NVTX_PUSH_POP = (59, 70)  # NvtxPushPopRange, NvtxtPushPopRange
NVTX_START_END = (60, 71)  # NvtxStartEndRange, NvtxtStartEndRange
NVTX_DOMAIN_CREATE = 75  # NvtxDomainCreate
_NVTX_TYPES = (*NVTX_MARK, NVTX_THREAD_NAME, *NVTX_PUSH_POP, *NVTX_START_END, NVTX_DOMAIN_CREATE)


def api_display_name(name: str) -> str:
    """``cudaLaunchKernel_v7000`` → ``cudaLaunchKernel`` (the runtime's ABI version suffix, as nsys' reports
    strip it); driver names such as ``cuMemAlloc_v2`` are real function names and stay."""
    return _API_VERSION_SUFFIX.sub("", name)


def read_names(ctx: Context) -> None:
    """Thread names (``ThreadNames``) and process names (``PROCESSES``)."""
    s = ctx.schema
    t = s.table("ThreadNames")
    if t and {"nameid", "globaltid"} <= s.cols(t):
        for sid, gtid in ctx.conn.execute(f'SELECT nameId, globalTid FROM "{t}"'):
            if isinstance(gtid, int) and isinstance(sid, int):
                name = ctx.strings.get(sid)
                if name:
                    ctx.thread_names[gtid] = name
    t = s.table("PROCESSES")
    if t and {"globalpid", "name"} <= s.cols(t):
        for gpid, name in ctx.conn.execute(f'SELECT globalPid, name FROM "{t}"'):
            if isinstance(gpid, int) and name:
                ctx.process_names[gpid & GPID_MASK] = as_text(name)


def read_runtime(ctx: Context) -> None:
    """``CUPTI_ACTIVITY_KIND_RUNTIME`` (runtime and driver API calls) → API events.

    Rows of the CUDA-backtrace event class (``--cudabacktrace``) duplicate the API call they wrap with the same
    correlation id; they are left out so that every GPU op joins exactly one call.

    Read in chunks (16.8 M rows in a large export): each chunk's backtrace rows are dropped and its threads and
    names factorized on the reader thread that read it; here the chunk's times and correlation ids are copied into
    the table's rows of the event store. Names, lanes and processes are then registered once, from every chunk's
    distinct values together in sorted order (the order one factorization of the whole table gives, so ids are
    numbered as before), and each chunk's lane, name and join key written into place: no table-long temporaries.
    """
    t = ctx.event_table("CUPTI_ACTIVITY_KIND_RUNTIME")
    if t is None:
        return
    s = ctx.schema
    exprs = [
        "start",
        DUR_SQL,
        f"ifnull({col_or(s, t, '0', 'globalTid')}, 0)",
        f"ifnull({col_or(s, t, '0', 'correlationId')}, 0)",
        f"ifnull({col_or(s, t, '-1', 'nameId')}, -1)",
        f"ifnull({col_or(s, t, '-1', 'eventClass')}, -1)",
    ]
    backtrace = ctx.enums.event_class_value("TRACE_PROCESS_EVENT_CUDABACKTRACE")
    rows = _Rows(ctx, row_span(ctx.conn, t))
    chunks = ctx.reader.read_prepared(
        t, exprs, lambda cols: _prepare_runtime_chunk(cols, backtrace), rows.take, restart=rows.restart
    )
    n = rows.at
    start, dur, corr, lane, name = rows.columns()
    dropped = sum(c.dropped for c in chunks)
    if dropped:
        ctx.properties["cuda_backtrace_rows_skipped"] = dropped
    key = _place_runtime_chunks(ctx, chunks, n, lane, name, corr)
    del chunks
    order = np.argsort(key, kind="stable")
    batch = Batch(
        table=t,
        start=start,
        dur=dur,
        kind=kind_array(Kind.API, n),
        lane=lane,
        name=name,
        corr=corr,
        api_name=name,
        api_order=order,
        api_sorted=key[order],
    )
    del key
    ctx.add(batch)
    batch.api_name = batch.name  # the store's rows (the same arrays where the rows were read into the store)
    assert batch.api_sorted is not None
    # the lanes stay in file order (read_sync looks up a few rows through ``order``): no sorted copy of 16.8 M
    ctx.api_lookup = (batch.api_sorted, batch.lane, order)


def _prepare_runtime_chunk(cols: list[I64], backtrace: int | None) -> _RuntimeChunk:
    """One chunk of the runtime table on its reader thread: the rows of event class ``backtrace`` dropped, names
    and threads factorized."""
    start, dur, gtid, corr, name_sid, event_class = cols
    dropped = 0
    if backtrace is not None:
        keep = event_class != backtrace
        dropped = int(start.shape[0] - np.count_nonzero(keep))
        if dropped:
            start, dur, gtid, corr, name_sid = start[keep], dur[keep], gtid[keep], corr[keep], name_sid[keep]
    names, name_code = factorize(name_sid)
    threads, thread_code = factorize(gtid)
    small = np.int32 if start.shape[0] < 2**31 else np.int64
    return _RuntimeChunk(start, dur, corr, names, name_code.astype(small), threads, thread_code.astype(small), dropped)


def _place_runtime_chunks(
    ctx: Context,
    chunks: list[_RuntimeChunk],
    n: int,
    lane: npt.NDArray[np.int32],
    name: npt.NDArray[np.int32],
    corr: I64,
) -> I64:
    """Register the chunks' names, lanes and processes (in the order one factorization of the whole table gives:
    names, lanes, then processes), write each chunk's lane and name ids into ``lane`` and ``name`` in place, and
    return the join key (process, correlation id) of each of the ``n`` rows."""
    empty = np.zeros(0, dtype=np.int64)
    all_names = np.unique(np.concatenate([c.names for c in chunks])) if chunks else empty
    name_ids = ctx.strings.intern_codes(
        all_names, np.arange(all_names.shape[0]), missing="(unknown CUDA API)", transform=api_display_name
    )
    threads = np.unique(np.concatenate([c.threads for c in chunks])) if chunks else empty
    lane_ids = np.array([ctx.cpu_lane(int(g)) for g in threads.tolist()], dtype=np.int32)
    procs, proc_of_thread = factorize(threads & GPID_MASK)
    thread_proc = ctx.process_index_codes(procs, proc_of_thread)  # per distinct thread: its process's index
    key = np.empty(n, dtype=np.int64)
    for c in chunks:
        a, b = c.at, c.at + c.start_rows
        name[a:b] = name_ids[np.searchsorted(all_names, c.names)][c.name_code]
        thread = np.searchsorted(threads, c.threads)
        lane[a:b] = lane_ids[thread][c.thread_code]
        pack_join_key(thread_proc[thread][c.thread_code], corr[a:b], out=key[a:b])
    return key


@dataclass
class _RuntimeChunk:
    """One chunk of the runtime table, prepared on a reader thread: its kept rows' columns, the distinct names and
    threads with each row's code, the backtrace rows dropped, and (set here) its first row in the table."""

    start: I64
    dur: I64
    corr: I64
    names: I64
    name_code: npt.NDArray[np.signedinteger[Any]]
    threads: I64
    thread_code: npt.NDArray[np.signedinteger[Any]]
    dropped: int
    at: int = 0
    start_rows: int = 0


class _Rows:
    """The runtime table's event columns, filled chunk by chunk: the table's rows of the event store reserved for
    them (at most ``span`` rows), or, without a store or for a span the file cannot hold (a damaged rowid),
    collected and concatenated."""

    def __init__(self, ctx: Context, span: int) -> None:
        self.at = 0
        self.parts: list[tuple[I64, I64, I64]] = []
        self.cols: dict[str, npt.NDArray[Any]] | None = None
        if ctx.store is not None and span <= ctx.store.plausible:
            self.cols = ctx.store.reserve(span)

    def restart(self) -> None:
        """The reader drops the chunks taken so far and reads the table again (one chunk, the safe way)."""
        self.at = 0
        self.parts.clear()

    def take(self, c: _RuntimeChunk) -> _RuntimeChunk:
        """Place one chunk's times and correlation ids (this thread, in table order); keep its codes only."""
        m = int(c.start.shape[0])
        c.at, c.start_rows = self.at, m
        if self.cols is not None:
            for k, v in (("start", c.start), ("dur", c.dur), ("corr", c.corr)):
                self.cols[k][self.at : self.at + m] = v
        else:
            self.parts.append((c.start, c.dur, c.corr))
        self.at += m
        c.start = c.dur = c.corr = _NONE
        return c

    def columns(self) -> tuple[I64, I64, I64, I32, I32]:
        """start, dur, corr of every row taken, and lane and name columns to fill."""
        n = self.at
        if self.cols is not None:
            return (
                self.cols["start"][:n],
                self.cols["dur"][:n],
                self.cols["corr"][:n],
                self.cols["lane"][:n],
                self.cols["name"][:n],
            )
        start, dur, corr = (
            np.concatenate([p[i] for p in self.parts]) if self.parts else np.zeros(0, dtype=np.int64) for i in range(3)
        )
        self.parts.clear()
        return start, dur, corr, np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int32)


_NONE: I64 = np.zeros(0, dtype=np.int64)


def read_sync(ctx: Context) -> None:
    """``CUPTI_ACTIVITY_KIND_SYNCHRONIZATION`` → host waits, on the thread of the API call they belong to."""
    t = ctx.event_table("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
    if t is None:
        return
    s = ctx.schema
    exprs = [
        "start",
        DUR_SQL,
        f"ifnull({col_or(s, t, '0', 'globalPid')}, 0)",
        f"ifnull({col_or(s, t, '0', 'correlationId')}, 0)",
        f"ifnull({col_or(s, t, '0', 'syncType')}, 0)",
    ]
    start, dur, gpid, corr, sync_type = ctx.reader.read(t, exprs)
    gpid = gpid & GPID_MASK
    lane = np.full(start.shape[0], -1, dtype=np.int32)
    if ctx.api_lookup is not None and start.shape[0]:
        keys, lanes, order = ctx.api_lookup
        want = ctx.join_key(gpid, corr)
        pos = np.searchsorted(keys, want)
        hit = pos < keys.shape[0]
        hit[hit] = keys[pos[hit]] == want[hit]
        lane[hit] = lanes[order[pos[hit]]]
    missing = lane < 0
    if missing.any():
        lane[missing] = ctx.lanes_by(gpid[missing], lambda g: ctx.process_other_lane(g, "CUDA synchronization"))
    uniq, inverse = factorize(sync_type)
    ids = np.array(
        [ctx.builder.names.intern(ctx.enums.sync_label.get(v, "Synchronization")) for v in uniq.tolist()],
        dtype=np.int32,
    )
    ctx.add(
        Batch(
            table=t,
            start=start,
            dur=dur,
            kind=kind_array(Kind.SYNC, start.shape[0]),
            lane=lane,
            name=ids[inverse] if len(uniq) else np.zeros(0, dtype=np.int32),
            corr=corr,
        )
    )


def read_nvtx(ctx: Context) -> None:
    """``NVTX_EVENTS`` → ranges (push/pop and start/end) and marks; thread names and domain names.

    A range's name is its registered string (``textId``) or its inline ``text``; ranges of a named domain are
    called ``"<domain>:<name>"`` (nsys' own report notation) and the domains are listed in
    ``meta.properties["nvtx_domains"]``. Ranges that never ended run to the end of the profile.
    """
    t = ctx.event_table("NVTX_EVENTS", "eventType")
    if t is None:
        return
    s = ctx.schema
    where = f"eventType IN ({', '.join(str(v) for v in _NVTX_TYPES)})"
    exprs = [
        "rowid",
        "start",
        DUR_SQL,
        "ifnull(eventType, 0)",
        f"ifnull({col_or(s, t, '-1', 'textId')}, -1)",
        f"ifnull({col_or(s, t, '0', 'domainId')}, 0)",
        f"ifnull({col_or(s, t, '0', 'globalTid')}, 0)",
        f"ifnull({col_or(s, t, '-1', 'endGlobalTid')}, -1)",
    ]
    rowid, start, dur, etype, text_id, domain, gtid, end_gtid = ctx.reader.read(t, exprs, where=where)
    n = start.shape[0]
    text: list[str | None] = [None] * n
    if s.column(t, "text"):
        ids, texts = read_text_by_rowid(ctx.conn, t, str(s.column(t, "text")), where)
        pos = np.searchsorted(rowid, ids)
        for p, txt in zip(pos.tolist(), texts, strict=True):
            if p < n:
                text[p] = txt
    gpid = gtid & GPID_MASK

    def label(i: int) -> str | None:
        if text_id[i] >= 0:
            v = ctx.strings.get(int(text_id[i]))
            if v is not None:
                return v
        return text[i]

    domains: dict[tuple[int, int], str] = {}
    for i in np.flatnonzero(etype == NVTX_DOMAIN_CREATE).tolist():
        name = label(i)
        if name:
            domains[(int(gpid[i]), int(domain[i]))] = name
    for i in np.flatnonzero(etype == NVTX_THREAD_NAME).tolist():
        name = label(i)
        if name:
            ctx.nvtx_thread_names[int(gtid[i])] = name
    if domains:
        ctx.properties["nvtx_domains"] = sorted(set(domains.values()))

    ev = np.flatnonzero(np.isin(etype, np.array((*NVTX_MARK, *NVTX_PUSH_POP, *NVTX_START_END))))
    if not ev.size:
        return
    names = _range_names(ctx, ev, text_id, text, domain, gpid, domains)
    et = etype[ev]
    is_mark = np.isin(et, np.array(NVTX_MARK))
    cross = np.isin(et, np.array(NVTX_START_END)) & (end_gtid[ev] > 0) & (end_gtid[ev] != gtid[ev])
    lane = ctx.cpu_lanes(gtid[ev])
    if cross.any():
        lane[cross] = ctx.lanes_by(gpid[ev][cross], ctx.async_lane)
    for sel, kind in ((is_mark, Kind.MARKER), (~is_mark, Kind.RANGE)):
        if not sel.any():
            continue
        d = dur[ev][sel]
        ctx.add(
            Batch(
                table=t,
                start=start[ev][sel],
                dur=np.zeros_like(d) if kind == Kind.MARKER else d,
                kind=kind_array(kind, int(sel.sum())),
                lane=lane[sel],
                name=names[sel],
                open_ended=kind == Kind.RANGE,
            )
        )


def _range_names(
    ctx: Context,
    ev: I64,
    text_id: I64,
    text: list[str | None],
    domain: I64,
    gpid: I64,
    domains: dict[tuple[int, int], str],
) -> I32:
    """Name ids of the NVTX rows ``ev``: the registered string (``textId``) when the export has it, else the
    inline text, else "(unnamed NVTX range)"; prefixed ``"<domain>:"`` in named domains. Vectorized except for
    one dictionary lookup per row that carries inline text."""
    intern = ctx.builder.names.intern
    tid = text_id[ev]
    name = np.full(ev.size, -1, dtype=np.int32)
    registered = ctx.strings.known(tid)
    if registered.any():
        name[registered] = ctx.strings.intern(tid[registered], missing="")
    for j in np.flatnonzero(~registered).tolist():
        txt = text[int(ev[j])]
        if txt:
            name[j] = intern(txt)
    name[name < 0] = intern("(unnamed NVTX range)")
    in_domain = domain[ev] != 0
    if domains and in_domain.any():
        rows = np.flatnonzero(in_domain)
        pair = (ctx.process_index(gpid[ev][rows]) << 32) | (domain[ev][rows] & 0xFFFFFFFF)
        combo, code = factorize((pair << 31) | name[rows].astype(np.int64))
        renamed = np.empty(combo.shape[0], dtype=np.int32)
        for k, c in enumerate(combo.tolist()):
            p, nid = c >> 31, c & 0x7FFFFFFF
            dom = domains.get((ctx.gpid_of_index(p >> 32), p & 0xFFFFFFFF))
            base = ctx.builder.names.strings[nid]
            renamed[k] = intern(f"{dom}:{base}") if dom else nid
        name[rows] = renamed[code]
    return name


def _simple_cpu_table(ctx: Context, logical: str, kind: Kind, missing: str) -> tuple[I64, I64, I64, I64] | None:
    t = ctx.event_table(logical)
    if t is None:
        return None
    start, dur, gtid, name_sid = ctx.reader.read(t, thread_row_exprs(ctx.schema, t))
    ctx.add(
        Batch(
            table=t,
            start=start,
            dur=dur,
            kind=kind_array(kind, start.shape[0]),
            lane=ctx.cpu_lanes(gtid),
            name=ctx.strings.intern(name_sid, missing=missing),
        )
    )
    return start, dur, gtid, name_sid


def read_osrt(ctx: Context) -> None:
    """``OSRT_API`` → OS-runtime calls (``poll``, ``pthread_cond_wait`` ...): why a CPU thread was blocked."""
    _simple_cpu_table(ctx, "OSRT_API", Kind.OSRT, "(unknown OS call)")


def read_overhead(ctx: Context) -> None:
    """``PROFILER_OVERHEAD`` and ``CUPTI_ACTIVITY_KIND_OVERHEAD`` → profiler-overhead events on their threads;
    the ``PROFILER_OVERHEAD`` rows nsys counts as GPU busy are also copied to GPU lanes (see
    :func:`~gputop_trace.parsers.nsys.gpu.add_gpu_busy_overhead`). Read after the GPU tables."""
    rows = _simple_cpu_table(ctx, "PROFILER_OVERHEAD", Kind.OVERHEAD, "profiler overhead")
    if rows is not None:
        add_gpu_busy_overhead(ctx, *rows)
    _simple_cpu_table(ctx, "CUPTI_ACTIVITY_KIND_OVERHEAD", Kind.OVERHEAD, "CUPTI overhead")
