"""Nsight Systems SQLite exports (``nsys export --type sqlite``) → :class:`~gputop_trace.model.trace.Trace`.

Works on every export from nsys 2020.3 to 2026.2 (formats.md §2): the schema is mapped from the file itself
(:mod:`.nsys_schema`), integer columns are read in bulk without a Python object per row (:mod:`.nsys_columns`),
GPU tables become stream lanes (:mod:`.nsys_gpu`) and CPU tables thread lanes (:mod:`.nsys_cpu`). GPU ops are
linked to their launching API call on (correlationId, process).

Times stay in the file's own time base: ``meta.t0_ns`` is the file time of the first event (session-relative
ns, or epoch ns for exports made with ``--ts-normalize``). ``.nsys-rep`` reports are converted with ``nsys``
when it is installed (:mod:`.nsys_report`).
"""

from __future__ import annotations

import re
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

from gputop_trace.errors import TraceError
from gputop_trace.model.arrays import I64
from gputop_trace.model.builder import TraceBuilder
from gputop_trace.model.kinds import FlowKind, Kind
from gputop_trace.model.tables import TraceMeta
from gputop_trace.model.trace import Trace
from gputop_trace.parsers.cores import usable_cores
from gputop_trace.parsers.nsys import cpu as nsys_cpu
from gputop_trace.parsers.nsys import gpu as nsys_gpu
from gputop_trace.parsers.nsys.columns import ColumnReader, file_bytes
from gputop_trace.parsers.nsys.common import NULL_DUR, Batch, Context, EventStore, Strings
from gputop_trace.parsers.nsys.graph_events import read_graph_events
from gputop_trace.parsers.nsys.schema import (
    EXPORT_HINT,
    NSYS_MARKER_TABLES,
    ExportInfo,
    Schema,
    TextDecoder,
    check_not_truncated,
    connect_readonly,
    damaged_error,
    read_enums,
    read_export_info,
    row_span,
)
from gputop_trace.parsers.source import Progress
from gputop_trace.units import plural

#: ``progress(rows_read, rows_total, events_so_far)``; may raise :class:`LoadCancelled`.


#: Tables read row by row, in reading order (GPU tables first: profiler overhead needs their spans).
EVENT_TABLES = (
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "NVTX_EVENTS",
    "OSRT_API",
    "PROFILER_OVERHEAD",
    "CUPTI_ACTIVITY_KIND_OVERHEAD",
    "CUDA_GRAPH_EVENTS",
)
GPU_TABLES = EVENT_TABLES[:4]


def load(path: str, *, progress: Progress | None = None, default_rank: int = 0) -> Trace:
    """Load an nsys SQLite export. Raises :class:`TraceError` for damaged files and SQLite files that are not
    nsys exports."""
    check_not_truncated(path)
    decoder = TextDecoder()
    conn = connect_readonly(path, decoder)
    try:
        return _load(path, conn, decoder, progress, default_rank)
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:  # the latter: SQLite's message quoted damaged bytes
        raise damaged_error(path, e) from None
    finally:
        conn.close()


def _load(path: str, conn: sqlite3.Connection, decoder: TextDecoder, progress: Progress | None, rank: int) -> Trace:
    schema = Schema.read(conn)
    if not any(schema.has(t) for t in NSYS_MARKER_TABLES):
        tables = ", ".join(schema.table_names[:12]) or "no tables"
        raise TraceError(
            f"{path} is a SQLite database but not an Nsight Systems export: it has none of the tables nsys "
            f"writes (StringIds, ThreadNames, CUPTI_ACTIVITY_KIND_*, NVTX_EVENTS ...); it has {tables}. "
            f"Open the export made by: {EXPORT_HINT}",
            path=path,
        )
    info = read_export_info(conn, schema)
    builder = TraceBuilder("nsys")
    _warn_about_views(conn, schema, builder)
    total = sum(row_span(conn, schema.table(t)) for t in EVENT_TABLES)  # an upper bound: progress only
    done = [0]

    def on_rows(n: int) -> None:
        done[0] += n
        if progress is not None:
            progress(done[0], total, done[0])

    reader = ColumnReader(path, conn, on_rows=on_rows)
    plausible = file_bytes(path) // 16 + 4096  # more rows than any table of the file can hold
    ctx = Context(
        path=path,
        conn=conn,
        schema=schema,
        info=info,
        enums=read_enums(conn, schema),
        reader=reader,
        builder=builder,
        strings=Strings(conn, schema, builder),
        rank=rank,
        store=EventStore(min(total, plausible), plausible),  # a damaged rowid may make a span of 2**62 rows
    )
    try:
        nsys_cpu.read_names(ctx)
        nsys_gpu.read_gpus(ctx)
        nsys_gpu.read_kernels(ctx)
        nsys_gpu.read_memcpy(ctx)
        nsys_gpu.read_memset(ctx)
        nsys_gpu.read_graph_trace(ctx)
        nsys_cpu.read_runtime(ctx)
        nsys_cpu.read_sync(ctx)
        nsys_cpu.read_nvtx(ctx)
        nsys_cpu.read_osrt(ctx)
        nsys_cpu.read_overhead(ctx)
        read_graph_events(ctx)
    finally:
        reader.close()
    ctx.relabel_lanes()
    _add_batches(ctx)
    _warn_about_content(ctx, decoder)
    if reader.slow_tables:
        ctx.properties["tables_read_row_by_row"] = sorted(set(reader.slow_tables))
    for table, columns in sorted(reader.not_integers.items()):
        what = ", ".join(f"{c} ({plural(n, 'row')})" for c, n in sorted(columns.items()))
        builder.warn(
            f"Table {table} holds values that are not integers where nsys writes integers: {what}. They were read "
            "as whole numbers (text that is no number as 0), so those rows may be misplaced; the export was "
            "probably edited or damaged."
        )
    meta = TraceMeta(
        format="nsys",
        source=(path,),
        producer=info.producer,
        gpus=tuple(g for d, g in sorted(ctx.gpus.items()) if g.sm_count or _device_used(ctx, d)),
        ranks=(rank,),
        properties=_properties(ctx, info),
    )
    if progress is not None:
        progress(total, total, builder.n_events)
    # the builder now holds the only references to the event columns and side tables: it may drop each as it has
    # used it (the batches' views of the store, the API calls' sorted keys would keep them all alive)
    ctx.batches.clear()
    ctx.store = None
    ctx.api_lookup = None
    return builder.build(meta, consume=True)


def _warn_about_views(conn: sqlite3.Connection, schema: Schema, builder: TraceBuilder) -> None:
    """Views named like the tables the loader reads are never read (a view runs SQL the file chose): say so."""
    known = {t.upper() for t in (*EVENT_TABLES, *NSYS_MARKER_TABLES)}
    views = [str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'view'")]
    for v in sorted(views):
        m = re.match(r"^(.+?)(?:_V\d+)?$", v, re.IGNORECASE)
        base = (m.group(1) if m else v).upper()
        if base in known and schema.table(base) is None:
            builder.warn(
                f"{v} is a view, not a table: gputop-trace never runs the SQL of views in a file, so its rows were "
                "not read. Export the report again with nsys to get the table."
            )


def _device_used(ctx: Context, device: int) -> bool:
    return any(ln.device == device for ln in ctx.builder.lanes)


#: threads linking GPU batches to their launching calls (:func:`_add_batches`), the loading thread's included
LINK_WORKERS = min(4, usable_cores())

#: the largest |time| and duration (ns) an export row may have: about 73 years, so that any difference of two
#: times and any end still fits int64 (epoch-normalized times are about 2**60.6 in 2026)
MAX_ABS_NS = 2**61


def _drop_impossible_times(ctx: Context) -> None:
    """Rows whose start lies beyond ±:data:`MAX_ABS_NS` are left out; durations beyond it become zero (a NULL end
    stays :data:`NULL_DUR`). Both are counted in warnings: such values come from damaged or edited files."""
    dropped = too_long = 0
    for b in ctx.batches:
        if not len(b):
            continue
        bad = (b.start > MAX_ABS_NS) | (b.start < -MAX_ABS_NS)
        if bad.any():
            dropped += int(bad.sum())
            b.keep(~bad)
        long = (b.dur > MAX_ABS_NS) | ((b.dur < -MAX_ABS_NS) & (b.dur != NULL_DUR))
        if long.any():
            too_long += int(long.sum())
            b.dur[long] = 0  # in place: the batch's rows of the event store
    if dropped:
        ctx.warn(
            f"{_rows_have(dropped)} start times beyond ±73 years (damaged or edited values); "
            f"{'it was' if dropped == 1 else 'they were'} left out."
        )
    if too_long:
        ctx.warn(
            f"{plural(too_long, 'row')} {'lasts' if too_long == 1 else 'last'} longer than 73 years (damaged or "
            "edited values); shown with zero length."
        )


def _rows_have(n: int) -> str:
    """``1 row has`` / ``3 rows have``."""
    return f"{plural(n, 'row')} {'has' if n == 1 else 'have'}"


def _fix_durations(ctx: Context) -> None:
    """Missing ends: NVTX ranges run to the end of the profile, everything else gets zero length.
    Negative durations (end before start) become zero. Both are counted in warnings."""
    _drop_impossible_times(ctx)
    # the latest end or start: start + max(dur, 0) is the end where dur >= 0, else the start (|times| <= 2**61 here)
    last, any_end = None, False
    for b in ctx.batches:
        if len(b):
            ends = np.maximum(b.dur, 0)
            any_end = any_end or bool(ends.any()) or bool((b.dur == 0).any())
            ends += b.start
            last = int(ends.max()) if last is None else max(last, int(ends.max()))
    if last is None or not any_end:
        last = max(last or 0, 0)  # as before: 0 stands for the latest end when no row has one
    open_ranges = lost_ends = negative = 0
    for b in ctx.batches:
        if not len(b):
            continue
        null = b.dur == NULL_DUR
        neg = (b.dur < 0) & ~null
        # changed in place: the batch's rows of the event store
        if null.any():
            if b.open_ended:
                b.dur[null] = np.maximum(last - b.start[null], 0)
                open_ranges += int(null.sum())
            else:
                b.dur[null] = 0
                lost_ends += int(null.sum())
        if neg.any():
            b.dur[neg] = 0
            negative += int(neg.sum())
    if open_ranges:
        ctx.warn(
            f"{plural(open_ranges, 'NVTX range')} never ended (the program stopped inside "
            f"{'it' if open_ranges == 1 else 'them'}); drawn to the end of the profile."
        )
    if lost_ends:
        ctx.warn(
            f"{_rows_have(lost_ends)} no end time (the profiler lost their completion records); shown with zero length."
        )
    if negative:
        ctx.warn(
            f"{plural(negative, 'row')} {'ends' if negative == 1 else 'end'} before "
            f"{'it starts' if negative == 1 else 'they start'} (clock errors in the export); shown with zero length."
        )


def _add_batches(ctx: Context) -> None:
    """Hand every batch to the builder, then add kernel/copy side tables and launch flows."""
    _fix_durations(ctx)
    apis, pending = _add_events(ctx)
    index = _CallIndex(*_sorted_calls(apis))
    gpu = [(batch, idx) for batch, idx in pending if batch.launch_key is not None or batch.kernel is not None
           or batch.copy is not None]  # fmt: skip
    # CPU rows have nothing to link or to add (their launch arrays would be filled and dropped)
    ctx.properties["launch_links"] = _link_and_add_gpu_rows(ctx.builder, gpu, index)


def _add_events(ctx: Context) -> tuple[list[tuple[Batch, I64]], list[tuple[Batch, I64]]]:
    """Every batch's rows as events of the builder; the batches of API calls that GPU rows join and all the
    non-empty batches, each with its rows' event indices."""
    b = ctx.builder
    apis: list[tuple[Batch, I64]] = []
    pending: list[tuple[Batch, I64]] = []
    whole = ctx.store.columns() if ctx.store is not None else None
    if whole is not None:  # every batch's rows in one array per column, in batch order: one call, no copy
        every = b.add_events(
            start_ns=whole["start"],
            dur_ns=whole["dur"],
            kind=whole["kind"],
            lane=whole["lane"],
            name=whole["name"],
            corr=whole["corr"],
        )
    for batch in ctx.batches:
        if not len(batch):
            continue
        if whole is not None:
            idx = every[batch.slot : batch.slot + len(batch)]
        else:
            idx = b.add_events(
                start_ns=batch.start,
                dur_ns=batch.dur,
                kind=batch.kind,
                lane=batch.lane,
                name=batch.name,
                corr=batch.corr,
            )
        if batch.api_name is not None and (batch.api_key is not None or batch.api_sorted is not None):
            apis.append((batch, idx))
        pending.append((batch, idx))
    return apis, pending


def _sorted_calls(apis: list[tuple[Batch, I64]]) -> tuple[I64, npt.NDArray[np.int32], I64, I64]:
    """The API calls' events (``calls``) and name ids (``call_names``), which stay in row order, their join keys
    sorted (``keys``), and for each sorted key the call's row (``perm``): no sorted copies of 16.8 M calls."""
    calls: I64 = np.zeros(0, dtype=np.int64)
    call_names: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
    keys: I64 = np.zeros(0, dtype=np.int64)
    perm: I64 = keys
    one = apis[0][0] if len(apis) == 1 else None
    if one is not None and one.api_sorted is not None and one.api_order is not None:
        calls = apis[0][1]  # the runtime reader sorted its keys already
        keys, perm = one.api_sorted, one.api_order
        call_names = one.api_name if one.api_name is not None else call_names
    elif apis:
        rows = [a.join_keys() for a, _ in apis]
        all_keys = np.concatenate([r for r in rows if r is not None])
        perm = np.argsort(all_keys, kind="stable")  # (keys kept in row order: Batch.keep dropped their order)
        keys = all_keys[perm]
        calls = np.concatenate([i for _, i in apis])
        call_names = np.concatenate([a.api_name for a, _ in apis if a.api_name is not None])
    return calls, call_names, keys, perm


class _CallIndex:
    """The API calls a GPU row's launch key joins (see :func:`_sorted_calls` for the four arrays)."""

    def __init__(self, calls: I64, call_names: npt.NDArray[np.int32], keys: I64, perm: I64) -> None:
        self.calls, self.call_names, self.keys, self.perm = calls, call_names, keys, perm
        self.lookup = _SortedKeys(keys)

    def link(self, batch: Batch, idx: I64) -> tuple[I64, I64, npt.NDArray[np.bool_] | None]:
        """(launching call's event, its name id, which rows have one) of a GPU batch: pure numpy, so the batches
        are linked on worker threads where there are cores for them (numpy releases the GIL in the searches)."""
        call = np.full(idx.shape[0], -1, dtype=np.int64)
        call_name = np.full(idx.shape[0], -1, dtype=np.int64)
        if batch.launch_key is None or not self.keys.shape[0]:
            return call, call_name, None
        hit, pos = self.lookup.find(batch.launch_key)
        row = self.perm[pos[hit]]
        call[hit] = self.calls[row]
        call_name[hit] = self.call_names[row]
        return call, call_name, hit


def _link_and_add_gpu_rows(b: TraceBuilder, gpu: list[tuple[Batch, I64]], index: _CallIndex) -> int:
    """Launch flows from each GPU row's call, and the kernel and copy side tables, batch by batch in order (ids as
    before; the links found on worker threads where there are enough batches); returns how many rows were linked."""
    is_async_name = np.array(["Async" in n for n in b.names.strings], dtype=bool)
    workers = min(LINK_WORKERS, len(gpu) // 8)
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="link") if workers > 1 else None
    try:
        links = pool.map(lambda p: index.link(*p), gpu) if pool is not None else (index.link(*p) for p in gpu)
        linked = 0
        for (batch, idx), (call, call_name, hit) in zip(gpu, links, strict=True):  # in order: ids as before
            if hit is not None and hit.any():
                b.add_flows(call[hit], idx[hit], FlowKind.LAUNCH)
                linked += int(hit.sum())
            if batch.kernel is not None:
                b.add_kernels(event=idx, **batch.kernel)
            if batch.copy is not None:
                is_async = np.where(call_name >= 0, is_async_name[np.maximum(call_name, 0)].astype(np.int8), -1)
                b.add_copies(event=idx, is_async=is_async, **batch.copy)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return linked


class _SortedKeys:
    """Finds values in sorted join keys (``process index << 32 | correlationId``) of the API calls.

    CUPTI numbers a process's correlation ids densely, so where the keys are distinct and span at most about four
    times their number (one process, as in most exports) a table indexed by key holds each key's position: a GPU
    row's call is one gather instead of a binary search of 24 probes in 16.8 M keys. Otherwise (several processes:
    keys 2^32 apart; repeated keys, where the first is wanted) it is ``np.searchsorted``. Both find the same."""

    def __init__(self, keys: I64) -> None:
        self.keys = keys
        self.lo = 0
        self.table: npt.NDArray[np.signedinteger[Any]] | None = None
        n = keys.shape[0]
        if n and int(keys[-1]) - int(keys[0]) < 4 * n + 1024 and bool((keys[1:] != keys[:-1]).all()):
            self.lo = int(keys[0])
            self.table = np.full(int(keys[-1]) - self.lo + 1, -1, dtype=np.int32 if n < 2**31 else np.int64)
            self.table[keys - self.lo] = np.arange(n, dtype=self.table.dtype)

    def find(self, want: I64) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.signedinteger[Any]]]:
        """(found, position of the key equal to each value; meaningful where found)."""
        if self.table is None:
            pos = np.searchsorted(self.keys, want)
            hit = pos < self.keys.shape[0]
            hit[hit] = self.keys[pos[hit]] == want[hit]
            return hit, pos
        off = want - self.lo
        inside = (off >= 0) & (off < self.table.shape[0])
        if inside.all():
            pos = self.table[off]
        else:
            pos = np.full(want.shape[0], -1, dtype=self.table.dtype)
            pos[inside] = self.table[off[inside]]
        return pos >= 0, pos


def _properties(ctx: Context, info: ExportInfo) -> dict[str, Any]:
    props: dict[str, Any] = {
        "nsys_version": info.version or None,
        "nsys_version_estimated": info.estimated or None,
        "export_schema_version": info.schema_version or None,
        "enums_from_file": ctx.enums.from_file,
        "rows": {k: v for k, v in ctx.counts.items() if v},
        "tables": ctx.schema.table_names,
    }
    props.update(ctx.properties)
    t = ctx.schema.table("TARGET_INFO_SESSION_START_TIME")
    if t and "utcepochns" in ctx.schema.cols(t):
        row = ctx.conn.execute(f'SELECT utcEpochNs FROM "{t}" LIMIT 1').fetchone()
        if row and isinstance(row[0], int):
            props["session_start_utc_ns"] = row[0]
    env = _system_env(ctx)
    if env.get("CudaDriverVersion", "").isdigit():
        v = int(env["CudaDriverVersion"])
        props["cuda_driver_version"] = f"{v // 1000}.{(v % 1000) // 10}"
    if env.get("NvDriverVersion"):
        props["nvidia_driver_version"] = env["NvDriverVersion"]
    starts = [b.start for b in ctx.batches if len(b)]
    props["time_base"] = "epoch" if starts and min(int(s.min()) for s in starts) > 10**17 else "session"
    return props


def _system_env(ctx: Context) -> dict[str, str]:
    t = ctx.schema.table("TARGET_INFO_SYSTEM_ENV")
    if not t or not {"name", "value"} <= ctx.schema.cols(t):
        return {}
    out: dict[str, str] = {}
    for name, value in ctx.conn.execute(
        f"SELECT name, value FROM \"{t}\" WHERE name IN ('CudaDriverVersion', 'NvDriverVersion')"
    ):
        if isinstance(name, str) and value is not None:
            out.setdefault(name, str(value))
    return out


def _warn_about_content(ctx: Context, decoder: TextDecoder) -> None:
    """The plain-words warning for exports without GPU activity, and text-decoding notes."""
    gpu_rows = sum(ctx.counts.get(str(ctx.schema.table(t)), 0) for t in GPU_TABLES if ctx.schema.has(t))
    if gpu_rows == 0:
        have = []
        for kind, label in (
            (Kind.RANGE, "NVTX range"),
            (Kind.MARKER, "NVTX mark"),
            (Kind.API, "CUDA API call"),
            (Kind.OSRT, "OS-runtime call"),
        ):
            n = sum(int((b.kind == kind).sum()) for b in ctx.batches if len(b))
            if n:
                have.append(f"{n:,} {label}{'' if n == 1 else 's'}")
        listed = ", ".join(have[:-1]) + (" and " if len(have) > 1 else "") + have[-1] if have else ""
        holds = f"It holds {listed}, shown on the CPU thread lanes. " if have else "It holds no events at all. "
        version = ctx.info.version or ctx.info.estimated
        env = _system_env(ctx)
        cuda = ""
        if env.get("CudaDriverVersion", "").isdigit():
            v = int(env["CudaDriverVersion"])
            cuda = f"CUDA driver {v // 1000}.{(v % 1000) // 10}"
        api_only = ctx.counts.get(str(ctx.schema.table("CUPTI_ACTIVITY_KIND_RUNTIME")), 0) > 0
        fits = ""
        if api_only:
            fits = (
                f"The second fits here: nsys {version} recorded "
                + (f"a machine with {cuda}" if cuda else "this program")
                + ", and CUDA API calls were traced but no GPU work was. "
            )
        ctx.warn(
            "This export holds no GPU activity: it has no CUDA kernel, memory-copy or memset rows. "
            + holds
            + "The usual reasons: CUDA tracing was off (record with nsys profile -t cuda,nvtx,osrt ...), or the "
            + "nsys that recorded it is older than the CUDA version the program used, so it could not trace the "
            + "GPU. "
            + fits
            + "Record again with CUDA tracing on, using an nsys at least as new as your CUDA"
            + (f" ({cuda} here)." if cuda and not api_only else ".")
        )
    if decoder.replaced:
        ctx.warn(
            f"{decoder.replaced:,} text values in the export are not valid UTF-8; the invalid bytes are shown as �."
        )
