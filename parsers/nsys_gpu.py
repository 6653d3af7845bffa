"""GPU-side tables of an nsys export: kernels, memcpy, memset, CUDA-graph rows, unified-memory migrations,
profiler overhead that nsys counts as GPU busy, and the GPUs themselves.

Rows become events on one lane per (process, device, stream); unified-memory migrations (copyKind 11–13,
stream 0, correlation 0) go to one lane per device. Several small integer columns are packed into one SQL
expression per row and unpacked with numpy (every field is at most its CUPTI type's width: correlation, stream
and shared-memory sizes are uint32, block dimensions ≤ 1024, grid y/z ≤ 65535), which halves the text SQLite
has to format (see :mod:`gputop_trace.parsers.nsys_columns`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from gputop_trace.model import COPY_KIND_LABEL, MEM_KIND_LABEL, CopyKind, GpuInfo, Kind, MemKind
from gputop_trace.parsers.nsys_common import DUR_SQL, GPID_MASK, Batch, Context, col_or, factorize, kind_array, pid_of
from gputop_trace.parsers.nsys_schema import as_text

I64 = npt.NDArray[np.int64]

_M32 = 0xFFFFFFFF
#: StringIds id that marks "no string" in packed name columns.
_NO_STRING = _M32
_UVM = (int(CopyKind.UVM_HTOD), int(CopyKind.UVM_DTOH), int(CopyKind.UVM_DTOD))
#: PROFILER_OVERHEAD rows that nsys' GPU reports (gpu_gaps, gpu_time_util) count as GPU busy time.
GPU_BUSY_OVERHEAD_NAMES = frozenset(
    {"CUDA profiling data flush overhead", "CUDA profiling stop overhead", "CUDA profiling overhead"}
)


def _parts(a: I64, dtype: str) -> npt.NDArray[Any]:
    """A packed int64 column seen as its little-endian 32-, 16- or 8-bit parts: shape (n, 2|4|8), no copy on
    little-endian machines (column 0 is the lowest part)."""
    le = a.astype("<i8", copy=False)
    width = 8 // np.dtype(dtype).itemsize
    return le.view(dtype).reshape(-1, width)


def _common_exprs(ctx: Context, table: str) -> list[str]:
    """start, dur, correlation (low 32 bits) | stream (high 32 bits), globalPid | device (low 24 bits)."""
    corr = col_or(ctx.schema, table, "0", "correlationId")
    stream = col_or(ctx.schema, table, "0", "streamId")
    gpid = col_or(ctx.schema, table, "0", "globalPid")
    dev = col_or(ctx.schema, table, "0", "deviceId")
    return [
        "start",
        DUR_SQL,
        f"(ifnull({corr}, 0) & {_M32}) | ((ifnull({stream}, 0) & {_M32}) << 32)",
        f"(ifnull({gpid}, 0) & {GPID_MASK}) | (ifnull({dev}, 0) & 16777215)",
    ]


def _unpack_common(cols: list[I64]) -> tuple[I64, I64, I64, I64, I64, I64]:
    """start, dur, corr, stream, globalPid, device from :func:`_common_exprs` columns."""
    start, dur, cs, gd = cols[:4]
    halves = _parts(cs, "<u4")
    corr = halves[:, 0].astype(np.int64)
    stream = halves[:, 1].astype(np.int64)
    device = gd & 0xFFFFFF
    gd &= GPID_MASK  # in place: the packed column becomes the globalPid column
    return start, dur, corr, stream, gd, device


def read_kernels(ctx: Context) -> None:
    """``CUPTI_ACTIVITY_KIND_KERNEL`` → kernel events named by their full demangled name."""
    t = ctx.event_table("CUPTI_ACTIVITY_KIND_KERNEL")
    if t is None:
        return
    s = ctx.schema
    demangled = col_or(s, t, "NULL", "demangledName")
    short = col_or(s, t, "NULL", "shortName")
    mangled = col_or(s, t, "NULL", "mangledName")
    graph = col_or(s, t, "NULL", "graphId")

    def c(name: str) -> str:
        return f"ifnull({col_or(s, t, '0', name)}, 0)"

    exprs = [
        *_common_exprs(ctx, t),
        f"(ifnull({demangled}, ifnull({short}, {_NO_STRING})) & {_M32}) | (ifnull({mangled}, {_NO_STRING}) << 32)",
        f"({c('gridX')} & {_M32}) | (({c('gridY')} & {_M32}) << 32)",
        f"({c('gridZ')} & 65535) | (({c('blockX')} & 65535) << 16) | (({c('blockY')} & 65535) << 32)"
        f" | (({c('blockZ')} & 65535) << 48)",
        f"({c('staticSharedMemory')} & {_M32}) | (({c('registersPerThread')} & 65535) << 32)",
        f"({c('dynamicSharedMemory')} & {_M32}) | (ifnull({graph}, {_NO_STRING}) << 32)",
    ]
    cols = ctx.reader.read(t, exprs)
    n = cols[0].shape[0]
    start, dur, corr, stream, gpid, device = _unpack_common(cols)
    names = _parts(cols[4], "<u4")
    gx, gz = _parts(cols[5], "<u4"), _parts(cols[6], "<u2")
    res, dyn = _parts(cols[7], "<u4"), _parts(cols[8], "<u4")
    demangled_id = names[:, 0].astype(np.int64)
    demangled_id[demangled_id == _NO_STRING] = -1
    name = ctx.strings.intern(demangled_id, missing="(unnamed kernel)")
    raw = np.full(n, -1, dtype=np.int32)
    has_raw = names[:, 1] != _NO_STRING
    if has_raw.any():
        raw[has_raw] = ctx.strings.intern(names[has_raw, 1].astype(np.int64), missing="")
        raw[has_raw & (raw == name)] = -1
    grid = np.empty((n, 3), dtype=np.int32)
    grid[:, 0], grid[:, 1], grid[:, 2] = gx[:, 0], gx[:, 1], gz[:, 0]
    block = np.empty((n, 3), dtype=np.int32)
    block[:, 0], block[:, 1], block[:, 2] = gz[:, 1], gz[:, 2], gz[:, 3]
    graph_id = dyn[:, 1].astype(np.int64)
    graph_id[graph_id == _NO_STRING] = -1
    kernel = {
        "grid": grid,
        "block": block,
        "registers": _parts(cols[7], "<u2")[:, 2].astype(np.int32),
        "shared_static": res[:, 0].astype(np.int32),
        "shared_dynamic": dyn[:, 0].astype(np.int32),
        "raw_name": raw,
        "graph_id": graph_id,
    }
    del cols, names, gx, gz, res, dyn
    ctx.add(
        Batch(
            table=t,
            start=start,
            dur=dur,
            kind=kind_array(Kind.KERNEL, n),
            lane=ctx.stream_lanes(gpid, device, stream),
            name=name,
            corr=corr,
            kernel=kernel,
            launch_key=ctx.join_key(gpid, corr),
        )
    )
    ctx.gpu_ops.append((start, dur, gpid, device))


def _copy_name(direction: int, src: int, dst: int, *, memset: bool = False) -> str:
    """Kineto-style names: ``Memcpy HtoD (Pageable -> Device)``, ``Memset (Device)``, ``Unified memory HtoD``."""
    if memset:
        return f"Memset ({MEM_KIND_LABEL.get(dst, 'unknown').title()})"
    label = COPY_KIND_LABEL.get(direction, "unknown")
    if direction in _UVM:
        return f"Unified memory {('HtoD', 'DtoH', 'DtoD')[direction - 11]}"
    if src == MemKind.UNKNOWN and dst == MemKind.UNKNOWN:
        return f"Memcpy {label}"
    return (
        f"Memcpy {label} ({MEM_KIND_LABEL.get(src, 'unknown').title()} -> {MEM_KIND_LABEL.get(dst, 'unknown').title()})"
    )


def _lut(mapping: dict[int, int], values: I64, default: int) -> I64:
    """Map small non-negative enum values through ``mapping`` (anything else → ``default``)."""
    top = max([*mapping, 0]) + 1
    table = np.full(top, default, dtype=np.int64)
    for k, v in mapping.items():
        if 0 <= k < top:
            table[k] = v
    ok = (values >= 0) & (values < top)
    return np.where(ok, table[np.clip(values, 0, top - 1)], default)


def read_memcpy(ctx: Context) -> None:
    """``CUPTI_ACTIVITY_KIND_MEMCPY`` → copies on stream lanes, unified-memory migrations on UVM lanes."""
    t = ctx.event_table("CUPTI_ACTIVITY_KIND_MEMCPY")
    if t is None:
        return
    s = ctx.schema
    kinds = (
        f"(ifnull({col_or(s, t, '0', 'copyKind')}, 0) & 255)"
        f" | ((ifnull({col_or(s, t, '7', 'srcKind')}, 7) & 255) << 8)"
        f" | ((ifnull({col_or(s, t, '7', 'dstKind')}, 7) & 255) << 16)"
    )
    exprs = [*_common_exprs(ctx, t), f"ifnull({col_or(s, t, '0', 'bytes')}, 0)", kinds]
    cols = ctx.reader.read(t, exprs)
    start, dur, corr, stream, gpid, device = _unpack_common(cols)
    nbytes, packed = cols[4], _parts(cols[5], "<u1")
    direction = _lut(ctx.enums.copy_kind_lut(), packed[:, 0].astype(np.int64), int(CopyKind.UNKNOWN))
    src = _lut(ctx.enums.mem_kind_lut(), packed[:, 1].astype(np.int64), int(MemKind.UNKNOWN))
    dst = _lut(ctx.enums.mem_kind_lut(), packed[:, 2].astype(np.int64), int(MemKind.UNKNOWN))
    combo = direction * 65536 + src * 256 + dst
    uniq, inverse = factorize(combo)
    ids = np.array([ctx.builder.names.intern(_copy_name(c >> 16, (c >> 8) & 255, c & 255)) for c in uniq.tolist()])
    name = ids.astype(np.int32)[inverse] if len(uniq) else np.zeros(0, dtype=np.int32)
    uvm = np.isin(direction, np.array(_UVM, dtype=np.int64))
    for sel, is_uvm in ((~uvm, False), (uvm, True)):
        if not sel.any():
            continue
        if is_uvm:
            lane = ctx.lanes_by(device[sel], ctx.uvm_lane)
        else:
            lane = ctx.stream_lanes(gpid[sel], device[sel], stream[sel])
        ctx.add(
            Batch(
                table=t,
                start=start[sel],
                dur=dur[sel],
                kind=kind_array(Kind.UVM if is_uvm else Kind.MEMCPY, int(sel.sum())),
                lane=lane,
                name=name[sel],
                corr=corr[sel],
                copy={
                    "bytes": nbytes[sel],
                    "direction": direction[sel],
                    "src_kind": src[sel],
                    "dst_kind": dst[sel],
                },
                launch_key=None if is_uvm else ctx.join_key(gpid[sel], corr[sel]),
            )
        )
    ctx.gpu_ops.append((start, dur, gpid, device))


def read_memset(ctx: Context) -> None:
    """``CUPTI_ACTIVITY_KIND_MEMSET`` → memset events (the memory kind in ``dst_kind``)."""
    t = ctx.event_table("CUPTI_ACTIVITY_KIND_MEMSET")
    if t is None:
        return
    s = ctx.schema
    exprs = [
        *_common_exprs(ctx, t),
        f"ifnull({col_or(s, t, '0', 'bytes')}, 0)",
        f"ifnull({col_or(s, t, '7', 'memKind')}, 7)",
    ]
    cols = ctx.reader.read(t, exprs)
    start, dur, corr, stream, gpid, device = _unpack_common(cols)
    nbytes, memkind = cols[4], _lut(ctx.enums.mem_kind_lut(), cols[5], int(MemKind.UNKNOWN))
    uniq, inverse = factorize(memkind)
    ids = np.array([ctx.builder.names.intern(_copy_name(0, 0, k, memset=True)) for k in uniq.tolist()])
    name = ids.astype(np.int32)[inverse] if len(uniq) else np.zeros(0, dtype=np.int32)
    n = start.shape[0]
    ctx.add(
        Batch(
            table=t,
            start=start,
            dur=dur,
            kind=kind_array(Kind.MEMSET, n),
            lane=ctx.stream_lanes(gpid, device, stream),
            name=name,
            corr=corr,
            copy={
                "bytes": nbytes,
                "direction": np.zeros(n, dtype=np.int64),
                "src_kind": np.zeros(n, dtype=np.int64),
                "dst_kind": memkind,
            },
            launch_key=ctx.join_key(gpid, corr),
        )
    )
    ctx.gpu_ops.append((start, dur, gpid, device))


def read_graph_trace(ctx: Context) -> None:
    """``CUPTI_ACTIVITY_KIND_GRAPH_TRACE`` (whole-graph GPU rows, nsys' default graph mode) → graph events."""
    t = ctx.event_table("CUPTI_ACTIVITY_KIND_GRAPH_TRACE")
    if t is None:
        return
    exprs = [*_common_exprs(ctx, t), f"ifnull({col_or(ctx.schema, t, '-1', 'graphId')}, -1)"]
    cols = ctx.reader.read(t, exprs)
    start, dur, corr, stream, gpid, device = _unpack_common(cols)
    graph_ids = cols[4]
    uniq, inverse = factorize(graph_ids)
    ids = np.array([ctx.builder.names.intern(f"CUDA graph {g}" if g >= 0 else "CUDA graph") for g in uniq.tolist()])
    name = ids.astype(np.int32)[inverse] if len(uniq) else np.zeros(0, dtype=np.int32)
    ctx.add(
        Batch(
            table=t,
            start=start,
            dur=dur,
            kind=kind_array(Kind.GRAPH, start.shape[0]),
            lane=ctx.stream_lanes(gpid, device, stream),
            name=name,
            corr=corr,
            launch_key=ctx.join_key(gpid, corr),
        )
    )


def add_gpu_busy_overhead(ctx: Context, start: I64, dur: I64, gtid: I64, name_sid: I64) -> None:
    """Copy the ``PROFILER_OVERHEAD`` rows nsys counts as GPU busy onto per-(process, device) lanes.

    As nsys' GPU reports do: only rows named in :data:`GPU_BUSY_OVERHEAD_NAMES`, duplicated onto every device
    the process used, and only where the row lies strictly inside that (process, device)'s span of GPU
    kernels, memcpys and memsets with ``start > 0`` (``start > first.start and end < last.end``).
    """
    ops = ctx.gpu_ops
    if not ops or not start.shape[0]:
        return
    busy_ids = [sid for sid, s in ctx.strings.values.items() if s in GPU_BUSY_OVERHEAD_NAMES]
    sel = np.isin(name_sid, np.array(busy_ids, dtype=np.int64)) & (dur >= 0)
    if not sel.any():
        return
    o_start, o_end, o_pid = start[sel], start[sel] + dur[sel], pid_of(gtid[sel])
    o_name = name_sid[sel]
    s_all = np.concatenate([o[0] for o in ops])
    e_all = s_all + np.concatenate([o[1] for o in ops])
    g_all = np.concatenate([o[2] for o in ops])
    d_all = np.concatenate([o[3] for o in ops])
    keep = s_all > 0
    spans: dict[tuple[int, int], list[int]] = {}
    for g in np.unique(g_all[keep]).tolist():
        for d in np.unique(d_all[keep & (g_all == g)]).tolist():
            m = keep & (g_all == g) & (d_all == d)
            spans[(g, d)] = [int(s_all[m].min()), int(e_all[m].max())]
    for (g, d), (lo, hi) in sorted(spans.items()):
        inside = (o_pid == ((g >> 24) & 0xFFFFFF)) & (o_start > lo) & (o_end < hi)
        if not inside.any():
            continue
        n = int(inside.sum())
        ctx.add(
            Batch(
                table="PROFILER_OVERHEAD (GPU busy)",
                start=o_start[inside],
                dur=o_end[inside] - o_start[inside],
                kind=kind_array(Kind.OVERHEAD, n),
                lane=np.full(n, ctx.overhead_lane(g, d), dtype=np.int32),
                name=ctx.strings.intern(o_name[inside], missing="profiler overhead"),
            )
        )


# ---------------------------------------------------------------------------------------------------------
# GPUs
# ---------------------------------------------------------------------------------------------------------
def read_gpus(ctx: Context) -> None:
    """GPU names and properties from ``TARGET_INFO_GPU`` (2021+) and ``TARGET_INFO_CUDA_GPU`` (2020.x)."""
    s = ctx.schema
    t = s.table("TARGET_INFO_GPU")
    if t is not None:
        want = ["id", "deviceId", "name", "smCount", "totalMemory", "memoryBandwidth", "clockRate"]
        want += ["computeMajor", "computeMinor", "busLocation", "chipName", "cuDevice", "uuid", "l2CacheSize"]
        present = [c for c in want if s.column(t, c)]
        if "id" in present or "deviceId" in present:
            sql = ", ".join(f'"{s.column(t, c)}"' for c in present)
            for row in ctx.conn.execute(f'SELECT {sql} FROM "{t}"'):
                r = dict(zip(present, row, strict=True))
                dev = r.get("id", r.get("deviceId"))
                if not isinstance(dev, int):
                    continue
                cc = (
                    f"{r['computeMajor']}.{r['computeMinor']}"
                    if isinstance(r.get("computeMajor"), int) and r.get("computeMajor")
                    else None
                )
                clock = _pos(r.get("clockRate"))
                ctx.gpus[dev] = GpuInfo(
                    device=dev,
                    name=(as_text(r.get("name")) or f"GPU {dev}").strip(),
                    rank=ctx.rank,
                    sm_count=_pos(r.get("smCount")),
                    total_memory=_pos(r.get("totalMemory")),
                    compute_capability=cc,
                    memory_bandwidth=float(r["memoryBandwidth"]) if _pos(r.get("memoryBandwidth")) else None,
                    clock_khz=clock // 1000 if clock else None,
                    properties={k: v for k, v in r.items() if k in ("busLocation", "chipName", "cuDevice", "uuid")},
                )
    t = s.table("TARGET_INFO_CUDA_GPU")
    if t is not None:
        want = ["deviceId", "name", "numMultiprocessors", "globalMemoryBandwidth", "coreClockRate"]
        want += ["globalMemorySize", "computeCapabilityMajor", "computeCapabilityMinor", "pciBusId"]
        present = [c for c in want if s.column(t, c)]
        if "deviceId" in present:
            sql = ", ".join(f'"{s.column(t, c)}"' for c in present)
            for row in ctx.conn.execute(f'SELECT {sql} FROM "{t}"'):
                r = dict(zip(present, row, strict=True))
                dev = r["deviceId"]
                if not isinstance(dev, int) or (dev in ctx.gpus and ctx.gpus[dev].sm_count):
                    continue
                mem = _pos(r.get("globalMemorySize"))
                bw = _pos(r.get("globalMemoryBandwidth"))
                major = r.get("computeCapabilityMajor")
                ctx.gpus[dev] = GpuInfo(
                    device=dev,
                    name=(as_text(r.get("name")) or (ctx.gpus[dev].name if dev in ctx.gpus else f"GPU {dev}")).strip(),
                    rank=ctx.rank,
                    sm_count=_pos(r.get("numMultiprocessors")),
                    # 2020.x wrote the size in MiB on some systems and in bytes on others
                    total_memory=(mem << 20 if mem < 1 << 24 else mem) if mem else None,
                    compute_capability=f"{major}.{r.get('computeCapabilityMinor', 0)}" if major else None,
                    memory_bandwidth=float(bw) * 1000.0 if bw else None,  # kB/s
                    clock_khz=_pos(r.get("coreClockRate")),
                    properties={"pciBusId": r.get("pciBusId")},
                )


def _pos(v: object) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else None
