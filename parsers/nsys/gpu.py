"""GPU-side tables of an nsys export: kernels, memcpy, memset, CUDA-graph rows, unified-memory migrations,
profiler overhead that nsys counts as GPU busy, and the GPUs themselves.

Rows become events on one lane per (process, device, stream); unified-memory migrations (copyKind 11–13,
stream 0, correlation 0) go to one lane per device. Small integer columns are packed two to four per SQL
expression, on 32/16/8-bit boundaries so that numpy unpacks them as array views (every field fits its CUPTI
type's width: correlation, stream and shared-memory sizes are uint32, block dimensions ≤ 1024, grid y/z ≤ 65535);
that halves the number of values SQLite formats per row (see :mod:`gputop_trace.parsers.nsys.columns`). Each
chunk of rows is decoded as soon as a worker thread has read it, while the next chunks are being read.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from gputop_trace.model.arrays import I64
from gputop_trace.model.kinds import COPY_KIND_LABEL, MEM_KIND_LABEL, CopyKind, Kind, MemKind
from gputop_trace.model.tables import GpuInfo
from gputop_trace.parsers.nsys.common import (
    DUR_SQL,
    GPID_MASK,
    Batch,
    Context,
    col_or,
    factorize,
    gpu_span_parts,
    kind_array,
    pid_of,
    stream_codes,
)
from gputop_trace.parsers.nsys.schema import as_text

I32 = npt.NDArray[np.int32]

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


def _names_for(ctx: Context, codes: I64, label: Any) -> I32:
    """Name ids for small integer codes, ``label(code) -> str`` called once per distinct code."""
    uniq, inverse = factorize(codes)
    ids = np.array([ctx.builder.names.intern(label(int(c))) for c in uniq.tolist()], dtype=np.int32)
    return ids[inverse] if uniq.shape[0] else np.zeros(0, dtype=np.int32)


def _gpu_columns(ctx: Context, cols: list[I64]) -> tuple[dict[str, Any], I64, I64, I64]:
    """Decode the common columns of one chunk: the event columns, and (globalPid, device, stream) for lanes.
    Records the chunk in the per-(process, device) GPU spans."""
    start, dur, corr, stream, gpid, device = _unpack_common(cols)
    ctx.note_gpu_span(start, dur, gpid, device)
    return {"start": start, "dur": dur, "corr": corr}, gpid, device, stream


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
    node = col_or(s, t, "NULL", "graphNodeId")

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
        f"ifnull({node}, -1)",
    ]

    def decode(p: dict[str, Any]) -> dict[str, Any]:
        """Registration of one prepared chunk (:func:`_prepare_kernels`): GPU spans, names, lanes, process ids, in
        the order the one-step decoding had (lane and name ids are numbered in order of first use)."""
        ctx.merge_gpu_spans(p.pop("spans"))
        p["name"] = name = ctx.strings.intern_codes(*p.pop("names"), missing="(unnamed kernel)")
        has_raw, raw_codes = p.pop("has_raw"), p.pop("raw_names")
        raw = np.full(name.shape[0], -1, dtype=np.int32)
        if raw_codes is not None:
            raw[has_raw] = ctx.strings.intern_codes(*raw_codes, missing="")
            raw[has_raw & (raw == name)] = -1
        p["raw_name"] = raw
        procs, proc_code = p.pop("procs")
        p["lane"] = ctx.stream_lanes_codes(procs, *p.pop("streams"))
        p["launch_key"] = ctx.join_key_codes(procs, proc_code, p["corr"])
        return p

    for d in ctx.reader.read_prepared(t, exprs, _prepare_kernels, decode):
        ctx.add(
            Batch(
                table=t,
                start=d.pop("start"),
                dur=d.pop("dur"),
                kind=kind_array(Kind.KERNEL, d["name"].shape[0]),
                lane=d.pop("lane"),
                name=d.pop("name"),
                corr=d.pop("corr"),
                launch_key=d.pop("launch_key"),
                kernel=d,
            )
        )


def _prepare_kernels(cols: list[I64]) -> dict[str, Any]:
    """The pure part of decoding a chunk of :func:`read_kernels`' columns, run on the reader thread that read it
    (numpy on the chunk's own arrays, no shared state): the unpacked columns, the launch geometry, and the
    factorizations (GPU spans, name ids, processes, streams) that the loading thread only registers."""
    start, dur, corr, stream, gpid, device = _unpack_common(cols)
    n = start.shape[0]
    names = _parts(cols[4], "<u4")
    gx, gz = _parts(cols[5], "<u4"), _parts(cols[6], "<u2")
    res, dyn = _parts(cols[7], "<u4"), _parts(cols[8], "<u4")
    demangled_id = names[:, 0].astype(np.int64)
    demangled_id[demangled_id == _NO_STRING] = -1
    has_raw = names[:, 1] != _NO_STRING
    raw_names = factorize(names[has_raw, 1].astype(np.int64)) if has_raw.any() else None
    grid = np.empty((n, 3), dtype=np.int32)
    grid[:, 0], grid[:, 1], grid[:, 2] = gx[:, 0], gx[:, 1], gz[:, 0]
    block = np.empty((n, 3), dtype=np.int32)
    block[:, 0], block[:, 1], block[:, 2] = gz[:, 1], gz[:, 2], gz[:, 3]
    graph_id = dyn[:, 1].astype(np.int64)
    graph_id[graph_id == _NO_STRING] = -1
    if (graph_id >= 0).any():
        graph_node = np.where(graph_id >= 0, cols[9], -1).astype(np.int64)  # nsys writes 0 outside graphs
    else:  # no kernel of the chunk ran in a graph (the usual case): both columns -1, kept as one value broadcast
        graph_id = graph_node = np.broadcast_to(np.int64(-1), (n,))
    procs, proc_code = factorize(gpid)
    return {
        "start": start,
        "dur": dur,
        "corr": corr,
        "spans": gpu_span_parts(start, dur, gpid, device),
        "names": factorize(demangled_id),
        "has_raw": has_raw,
        "raw_names": raw_names,
        "procs": (procs, proc_code),
        "streams": stream_codes(proc_code, device, stream),
        "grid": grid,
        "block": block,
        "registers": _parts(cols[7], "<u2")[:, 2].astype(np.int32),
        "shared_static": res[:, 0].astype(np.int32),
        "shared_dynamic": dyn[:, 0].astype(np.int32),
        "graph_id": graph_id,
        "graph_node": graph_node,
    }


def _copy_name(direction: int, src: int, dst: int, *, memset: bool = False) -> str:
    """Kineto-style names: ``Memcpy HtoD (Pageable -> Device)``, ``Memset (Device)``, ``Unified memory HtoD``."""
    if memset:
        return f"Memset ({MEM_KIND_LABEL.get(dst, 'unknown').title()})"
    label = COPY_KIND_LABEL.get(direction, "unknown")
    if direction in _UVM:
        return f"Unified memory {('HtoD', 'DtoH', 'DtoD')[direction - 11]}"
    if src == MemKind.UNKNOWN and dst == MemKind.UNKNOWN:
        return f"Memcpy {label}"
    src_label = MEM_KIND_LABEL.get(src, "unknown").title()
    return f"Memcpy {label} ({src_label} -> {MEM_KIND_LABEL.get(dst, 'unknown').title()})"


def _lut(mapping: dict[int, int], values: I64, default: int) -> I64:
    """Map enum values through ``mapping`` (anything else → ``default``). The keys come from the file's ENUM
    tables, so they may be anything: the lookup is a search, never a table as large as the largest key."""
    if not mapping:
        return np.full(values.shape, default, dtype=np.int64)
    keys = np.array(sorted(mapping), dtype=np.int64)
    vals = np.array([mapping[k] for k in keys.tolist()], dtype=np.int64)
    pos = np.clip(np.searchsorted(keys, values), 0, len(keys) - 1)
    return np.where(keys[pos] == values, vals[pos], default)


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
    copy_lut, mem_lut = ctx.enums.copy_kind_lut(), ctx.enums.mem_kind_lut()

    def decode(cols: list[I64]) -> dict[str, Any]:
        out, gpid, device, stream = _gpu_columns(ctx, cols)
        packed = _parts(cols[5], "<u1")
        direction = _lut(copy_lut, packed[:, 0].astype(np.int64), int(CopyKind.UNKNOWN))
        src = _lut(mem_lut, packed[:, 1].astype(np.int64), int(MemKind.UNKNOWN))
        dst = _lut(mem_lut, packed[:, 2].astype(np.int64), int(MemKind.UNKNOWN))
        uvm = np.isin(direction, np.array(_UVM, dtype=np.int64))
        lane = np.empty(direction.shape[0], dtype=np.int32)
        lane[~uvm] = ctx.stream_lanes(gpid[~uvm], device[~uvm], stream[~uvm])
        lane[uvm] = ctx.uvm_lanes(gpid[uvm], device[uvm])
        out.update(
            name=_names_for(
                ctx, direction * 65536 + src * 256 + dst, lambda c: _copy_name(c >> 16, (c >> 8) & 255, c & 255)
            ),
            lane=lane,
            uvm=uvm,
            launch_key=ctx.join_key(gpid, out["corr"]),
            bytes=cols[4],
            direction=direction,
            src_kind=src,
            dst_kind=dst,
        )
        return out

    for d in ctx.reader.read_decoded(t, exprs, decode):
        uvm = d.pop("uvm")
        for sel, kind in ((~uvm, Kind.MEMCPY), (uvm, Kind.UVM)):
            if not sel.any():
                continue
            part = {k: v[sel] for k, v in d.items()} if not sel.all() else d
            ctx.add(
                Batch(
                    table=t,
                    start=part["start"],
                    dur=part["dur"],
                    kind=kind_array(kind, part["start"].shape[0]),
                    lane=part["lane"],
                    name=part["name"],
                    corr=part["corr"],
                    copy={k: part[k] for k in ("bytes", "direction", "src_kind", "dst_kind")},
                    launch_key=None if kind == Kind.UVM else part["launch_key"],
                )
            )


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
    mem_lut = ctx.enums.mem_kind_lut()

    def decode(cols: list[I64]) -> dict[str, Any]:
        out, gpid, device, stream = _gpu_columns(ctx, cols)
        memkind = _lut(mem_lut, cols[5], int(MemKind.UNKNOWN))
        n = memkind.shape[0]
        out.update(
            name=_names_for(ctx, memkind, lambda k: _copy_name(0, 0, k, memset=True)),
            lane=ctx.stream_lanes(gpid, device, stream),
            launch_key=ctx.join_key(gpid, out["corr"]),
            bytes=cols[4],
            direction=np.zeros(n, dtype=np.int64),
            src_kind=np.zeros(n, dtype=np.int64),
            dst_kind=memkind,
        )
        return out

    for d in ctx.reader.read_decoded(t, exprs, decode):
        ctx.add(
            Batch(
                table=t,
                start=d["start"],
                dur=d["dur"],
                kind=kind_array(Kind.MEMSET, d["start"].shape[0]),
                lane=d["lane"],
                name=d["name"],
                corr=d["corr"],
                copy={k: d[k] for k in ("bytes", "direction", "src_kind", "dst_kind")},
                launch_key=d["launch_key"],
            )
        )


def read_graph_trace(ctx: Context) -> None:
    """``CUPTI_ACTIVITY_KIND_GRAPH_TRACE`` (whole-graph GPU rows, nsys' default graph mode) → graph events.
    (Not part of nsys' GPU-busy span, which only counts kernels, memcpys and memsets.)"""
    t = ctx.event_table("CUPTI_ACTIVITY_KIND_GRAPH_TRACE")
    if t is None:
        return
    exprs = [*_common_exprs(ctx, t), f"ifnull({col_or(ctx.schema, t, '-1', 'graphId')}, -1)"]

    def decode(cols: list[I64]) -> dict[str, Any]:
        start, dur, corr, stream, gpid, device = _unpack_common(cols)
        return {
            "start": start,
            "dur": dur,
            "corr": corr,
            "name": _names_for(ctx, cols[4], lambda g: f"CUDA graph {g}" if g >= 0 else "CUDA graph"),
            "lane": ctx.stream_lanes(gpid, device, stream),
            "launch_key": ctx.join_key(gpid, corr),
        }

    for d in ctx.reader.read_decoded(t, exprs, decode):
        ctx.add(
            Batch(
                table=t,
                start=d["start"],
                dur=d["dur"],
                kind=kind_array(Kind.GRAPH, d["start"].shape[0]),
                lane=d["lane"],
                name=d["name"],
                corr=d["corr"],
                launch_key=d["launch_key"],
            )
        )


def add_gpu_busy_overhead(ctx: Context, start: I64, dur: I64, gtid: I64, name_sid: I64) -> None:
    """Copy the ``PROFILER_OVERHEAD`` rows nsys counts as GPU busy onto per-(process, device) lanes.

    As nsys' GPU reports do: only rows named in :data:`GPU_BUSY_OVERHEAD_NAMES`, duplicated onto every device
    the process used, and only where the row lies strictly inside that (pid, device)'s span of GPU kernels,
    memcpys and memsets with ``start > 0`` (``start > first.start and end < last.end``).
    """
    if not ctx.gpu_spans or not start.shape[0]:
        return
    busy_ids = [sid for sid, s in ctx.strings.values.items() if s in GPU_BUSY_OVERHEAD_NAMES]
    sel = np.isin(name_sid, np.array(busy_ids, dtype=np.int64)) & (dur >= 0)
    if not sel.any():
        return
    o_start, o_end, o_pid = start[sel], start[sel] + dur[sel], pid_of(gtid[sel])
    o_name = name_sid[sel]
    for (pid, device), (lo, hi, gpid) in sorted(ctx.gpu_spans.items()):
        inside = (o_pid == pid) & (o_start > lo) & (o_end < hi)
        if not inside.any():
            continue
        n = int(inside.sum())
        ctx.add(
            Batch(
                table="PROFILER_OVERHEAD (GPU busy)",
                start=o_start[inside],
                dur=o_end[inside] - o_start[inside],
                kind=kind_array(Kind.OVERHEAD, n),
                lane=np.full(n, ctx.overhead_lane(gpid, device), dtype=np.int32),
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
    """A positive integer property, or None (also for NaN, infinities and values beyond int64)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 2**63:
        return None
    return int(v)
