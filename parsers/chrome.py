"""Chrome trace JSON → :class:`~gputop_trace.model.Trace`: PyTorch/Kineto, JAX/XLA and generic producers.

Timestamps (µs floats in the file) become int64 nanoseconds without rounding to whole microseconds. Events are
decoded chunk by chunk (:mod:`gputop_trace.parsers.chrome_json`), turned into numpy columns per chunk, and
classified into kinds and lanes once every metadata event is known (metadata may come last in a file).

Classification: Kineto by ``cat``; JAX/XLA (no ``cat``) by process and thread names (``/device:GPU:N``,
``Stream #N(...)``, ``/host:CPU``) and event names; anything else is a generic slice on its thread.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

import numpy as np

from gputop_trace.errors import LoadCancelled, TraceError
from gputop_trace.model import (
    CopyKind,
    CounterSeries,
    FlowKind,
    FlowTable,
    GpuInfo,
    Kind,
    Lane,
    LaneKind,
    MemKind,
    Trace,
    TraceBuilder,
    TraceMeta,
)
from gputop_trace.parsers.chrome_json import Chunk, DocumentInfo, stream_events
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


class _State:
    """Everything gathered while streaming one file."""

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
        self.kern_rows: list[tuple[Any, ...]] = []
        self.copy_rows: list[tuple[int, int]] = []
        self.coll_rows: list[tuple[int, str, str | None, int, int, int, str | None]] = []
        self.details: list[tuple[int, str, str]] = []  # (event, "kernel"|"memcpy", details text)
        # B/E, async and flow events (matched after streaming)
        self.be: list[tuple[int, int, int, int, int, str]] = []  # (src, ts, seq, name, cat, ph)
        self.asyncs: list[tuple[Any, ...]] = []
        self.flows: list[tuple[str, Any, int, int, int, str, int]] = []  # (ph, id, cat, src, ts, bp, seq)
        self.counters: dict[tuple[Any, str], tuple[list[int], list[float]]] = defaultdict(lambda: ([], []))
        self.other_phases: dict[str, int] = defaultdict(int)
        self.skipped = 0
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


def _to_ns(values: list[Any], exact: bool) -> np.ndarray[Any, Any]:
    """µs values (float or Decimal) → int64 ns, rounded to the nearest ns (never to whole µs)."""
    if exact:
        return np.array([int((Decimal(v) * 1000).to_integral_value(ROUND_HALF_EVEN)) for v in values], dtype=np.int64)
    return np.rint(np.asarray(values, dtype=np.float64) * 1000.0).astype(np.int64)


def _one_ns(v: Any, exact: bool) -> int:
    """One µs value → int ns (see :func:`_to_ns`)."""
    if exact:
        return int((Decimal(v) * 1000).to_integral_value(ROUND_HALF_EVEN))
    return round(float(v) * 1000.0)


def _process_chunk(st: _State, chunk: Chunk) -> None:
    evs = chunk.events
    no_ts = [e for e in evs if e.ts != e.ts and e.ph != "M"]  # NaN: the event has no timestamp
    if no_ts:
        st.skipped += len(no_ts)
        st.skipped_example = st.skipped_example or f"a {no_ts[0].ph!r} event named {no_ts[0].name!r} without ts"
        evs = [e for e in evs if e.ts == e.ts or e.ph == "M"]
    st.skipped += chunk.skipped
    st.skipped_example = st.skipped_example or chunk.skipped_example
    st.repaired += chunk.repaired
    st.repaired_example = st.repaired_example or chunk.repaired_example
    for note in chunk.notes:
        st.builder.warn(f"The file is not strict JSON: {note}.")
    xs = [e for e in evs if e.ph == "X"]
    if len(xs) != len(evs):
        _process_other(st, [e for e in evs if e.ph != "X"], chunk.exact)
    if chunk.counters:
        _process_counters(st, chunk.counters, chunk.exact)
    if not xs:
        return
    n = len(xs)
    base = st.n
    intern = st.builder.names.intern
    src_id = st.src_id
    cat_id = st.cat_id
    start = _to_ns([e.ts for e in xs], chunk.exact)
    dur = _to_ns([e.dur for e in xs], chunk.exact)
    neg = dur < 0
    if neg.any():
        st.negative_dur += int(neg.sum())
        dur[neg] = 0
    src = np.array([src_id(e.pid, e.tid) for e in xs], dtype=np.int32)
    cat = np.array([cat_id(e.cat) for e in xs], dtype=np.int16)
    name = np.array([intern(e.name) for e in xs], dtype=np.int32)
    argl = [e.args for e in xs]
    corr = np.array([a.correlation if a is not None and a.correlation >= 0 else _corr(a) for a in argl], dtype=np.int64)
    ext = np.array([a.external_id if a is not None else -1 for a in argl], dtype=np.int64)
    device = np.array([a.device if a is not None else -1 for a in argl], dtype=np.int32)
    for i, a in enumerate(argl):
        if a is None:
            continue
        if a.grid is not None or a.registers >= 0:
            st.kern_rows.append(
                (
                    base + i,
                    a.grid or (0, 0, 0),
                    a.block or (0, 0, 0),
                    a.registers,
                    a.shared_memory,
                    a.blocks_per_sm,
                    a.warps_per_sm,
                    a.occupancy,
                )
            )
        elif a.bytes >= 0:
            st.copy_rows.append((base + i, a.bytes))
        if a.collective is not None:
            st.coll_rows.append((base + i, a.collective, a.group, a.group_size, a.in_nelems, a.out_nelems, a.dtype))
        if a.kernel_details is not None:
            st.details.append((base + i, "kernel", a.kernel_details))
        elif a.memcpy_details is not None:
            st.details.append((base + i, "memcpy", a.memcpy_details))
    _append(st, start, dur, src, cat, name, corr, ext, device, np.full(n, _PH_X, dtype=np.uint8))


def _corr(a: Any) -> int:
    if a is None:
        return -1
    if a.correlation >= 0:
        return int(a.correlation)
    if a.correlation_id is not None:
        try:
            return int(a.correlation_id)
        except ValueError:
            return -1
    return -1


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
    c.src.append(src)
    c.cat.append(cat)
    c.name.append(name)
    c.corr.append(corr)
    c.ext.append(ext)
    c.device.append(device)
    c.phc.append(phc)
    st.n += int(start.shape[0])


def _process_other(st: _State, evs: list[Any], exact: bool) -> None:
    """Metadata, instants, B/E, async and flow events (everything but ``X``)."""
    instants: list[Any] = []
    for e in evs:
        ph = e.ph
        if ph == "M":
            _metadata(st, e)
        elif ph in ("B", "E"):
            st.seq += 1
            st.be.append(
                (
                    st.src_id(e.pid, e.tid),
                    _one_ns(e.ts, exact),
                    st.seq,
                    st.builder.names.intern(e.name),
                    st.cat_id(e.cat),
                    ph,
                )
            )
        elif ph in ("i", "I", "R"):
            instants.append(e)
        elif ph in ("s", "t", "f"):
            st.seq += 1
            st.flows.append((ph, e.id, st.cat_id(e.cat), st.src_id(e.pid, e.tid), _one_ns(e.ts, exact), e.bp, st.seq))
        elif ph in ("b", "e", "n"):
            st.seq += 1
            ident = e.id if e.id is not None else (e.id2 if isinstance(e.id2, (int, str)) else None)
            st.asyncs.append((ph, e.pid, e.cat, ident, _one_ns(e.ts, exact), e.name, st.seq))
        elif ph == "C":
            pass  # handled from chunk.counters
        elif ph:
            st.other_phases[ph] += 1
    if instants:
        n = len(instants)
        _append(
            st,
            _to_ns([e.ts for e in instants], exact),
            np.zeros(n, dtype=np.int64),
            np.array([st.src_id(e.pid, e.tid) for e in instants], dtype=np.int32),
            np.array([st.cat_id(e.cat) for e in instants], dtype=np.int16),
            np.array([st.builder.names.intern(e.name) for e in instants], dtype=np.int32),
            np.full(n, -1, dtype=np.int64),
            np.full(n, -1, dtype=np.int64),
            np.full(n, -1, dtype=np.int32),
            np.full(n, _PH_I, dtype=np.uint8),
        )


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
    stacked = np.stack(
        [src.astype(np.int64), cat.astype(np.int64), phc.astype(np.int64), device.astype(np.int64), name_key]
    )
    _, first, inverse = np.unique(stacked, axis=1, return_index=True, return_inverse=True)
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


def _parse_details(text: str) -> dict[str, str]:
    return dict(_DETAIL_KV.findall(text))


def _add_side_tables(st: _State, kind: np.ndarray[Any, Any], names: list[str], name: np.ndarray[Any, Any]) -> None:
    b = st.builder
    # kernels from Kineto args
    rows = [r for r in st.kern_rows if kind[r[0]] == Kind.KERNEL]
    kern_events: list[int] = [r[0] for r in rows]
    grid = [r[1] for r in rows]
    block = [r[2] for r in rows]
    regs = [r[3] for r in rows]
    smem = [max(r[4], 0) for r in rows]
    bps = [r[5] if r[5] >= 0 else np.nan for r in rows]
    wps = [r[6] if r[6] >= 0 else np.nan for r in rows]
    occ = [r[7] if r[7] >= 0 else np.nan for r in rows]
    dyn = [0] * len(rows)
    copy_ev: list[int] = []
    copy_bytes: list[int] = []
    copy_dir: list[int] = []
    copy_src: list[int] = []
    copy_dst: list[int] = []
    copy_async: list[int] = []
    seen_copy = set()
    # JAX details strings
    for ev, what, text in st.details:
        d = _parse_details(text)
        if what == "kernel" and kind[ev] == Kind.KERNEL:
            kern_events.append(ev)
            grid.append(_triple(d.get("grid")))
            block.append(_triple(d.get("block")))
            regs.append(_int_or(d.get("regs"), -1))
            smem.append(max(_int_or(d.get("static_shared"), 0), 0))
            dyn.append(max(_int_or(d.get("dynamic_shared"), 0), 0))
            bps.append(np.nan)
            wps.append(np.nan)
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
    if kern_events:
        b.add_kernels(
            event=np.array(kern_events, dtype=np.int64),
            grid=np.array(grid, dtype=np.int32).reshape(-1, 3),
            block=np.array(block, dtype=np.int32).reshape(-1, 3),
            registers=np.array(regs, dtype=np.int32),
            shared_static=np.array(smem, dtype=np.int32),
            shared_dynamic=np.array(dyn, dtype=np.int32),
            occupancy=np.array(occ, dtype=np.float32),
            blocks_per_sm=np.array(bps, dtype=np.float32),
            warps_per_sm=np.array(wps, dtype=np.float32),
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
    byte_of = dict(st.copy_rows)
    copy_like = np.flatnonzero((kind == Kind.MEMCPY) | (kind == Kind.MEMSET))
    for ev in copy_like.tolist():
        if ev in seen_copy:
            continue
        label = names[int(name[ev])]
        copy_ev.append(ev)
        copy_bytes.append(max(byte_of.get(ev, 0), 0))
        if kind[ev] == Kind.MEMSET:
            copy_dir.append(CopyKind.UNKNOWN)
            copy_src.append(MemKind.UNKNOWN)
            inner = label[label.find("(") + 1 : label.rfind(")")].strip().lower() if "(" in label else ""
            copy_dst.append(_MEMKIND.get(inner, MemKind.UNKNOWN))
            copy_async.append(-1)
            continue
        m = _KINETO_COPY.search(label)
        if m:
            copy_dir.append(_DIRECTION.get(m.group(1).lower(), CopyKind.UNKNOWN))
            copy_src.append(_MEMKIND.get((m.group(2) or "").lower(), MemKind.UNKNOWN))
            copy_dst.append(_MEMKIND.get((m.group(3) or "").lower(), MemKind.UNKNOWN))
        else:
            jm = _JAX_COPY.match(label)
            copy_dir.append(_DIRECTION.get(jm.group(1).lower(), CopyKind.UNKNOWN) if jm else CopyKind.UNKNOWN)
            copy_src.append(MemKind.UNKNOWN)
            copy_dst.append(MemKind.UNKNOWN)
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
    pts = [p for p in st.flows if cat_names[p[2]] != "ac2g"]  # launch flows come from correlation ids
    if not pts:
        return trace.flows
    n = len(pts)
    ph = np.array([p[0] for p in pts])
    ident = [p[1] for p in pts]
    cat = np.array([p[2] for p in pts], dtype=np.int64)
    src = np.array([p[3] for p in pts], dtype=np.int64)
    rel = np.array([p[4] for p in pts], dtype=np.int64) - np.int64(trace.meta.t0_ns)
    next_slice = (ph == "f") & np.array([p[5] != "e" for p in pts])
    seq = np.array([p[6] for p in pts], dtype=np.int64)
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
    key_ids: dict[tuple[Any, int], int] = {}
    group = np.array([key_ids.setdefault((ident[i], int(cat[i])), len(key_ids)) for i in range(n)], dtype=np.int64)
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
                if not include_python:
                    chunk.events = [e for e in chunk.events if e.cat != "python_function"]
                _process_chunk(st, chunk)
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
        b.warn(
            f"Trace is truncated ({where}): loaded every complete event; the last {lost:,} bytes "
            f"(decompressed) after the last complete event were not read."
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
    cat = st.cols.concat("cat", np.int16)
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
        properties=_properties(header, info, file_size),
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


def _properties(header: dict[str, Any], info: DocumentInfo, file_size: int) -> dict[str, Any]:
    keep = {k: v for k, v in header.items() if k not in ("deviceProperties",) and not isinstance(v, (list, dict))}
    if isinstance(header.get("distributedInfo"), dict):
        keep["distributedInfo"] = header["distributedInfo"]
    keep["json_form"] = info.form
    keep["file_size"] = file_size
    keep["decompressed_size"] = info.total
    return keep


def rank_from_filename(path: str) -> int | None:
    """A rank written in a file name (``rank3.pt.trace.json``, ``trace_rank_12.json.gz``), if any."""
    m = _RANK_IN_NAME.search(os.path.basename(path))
    return int(m.group(1)) if m else None
