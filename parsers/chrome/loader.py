"""Chrome trace JSON → :class:`~gputop_trace.model.trace.Trace`: PyTorch/Kineto, JAX/XLA and generic producers.

Timestamps (µs floats in the file) become int64 nanoseconds without rounding to whole microseconds. Events are
decoded chunk by chunk (:mod:`gputop_trace.parsers.chrome.stream`), turned into numpy columns per chunk
(:mod:`~gputop_trace.parsers.chrome.columns`), and classified into kinds and lanes once every metadata event is
known (metadata may come last in a file: :mod:`~gputop_trace.parsers.chrome.classify`). This module holds
:func:`load` and the assembly of the trace: warnings about what could not be read, the steps in order, the
metadata.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from gputop_trace.errors import LoadCancelled, TraceError
from gputop_trace.model import devices
from gputop_trace.model.kinds import FlowKind, Kind
from gputop_trace.model.tables import CounterSeries, GpuInfo, TraceMeta
from gputop_trace.model.trace import INDUCTOR_LAUNCHERS, PYTHON_LEFT_OUT, Trace
from gputop_trace.parsers.chrome.classify import classify_all, classify_classes, detect_accelerator, detect_format
from gputop_trace.parsers.chrome.columns import process_chunk
from gputop_trace.parsers.chrome.conventions import JAX_GPU_PROC
from gputop_trace.parsers.chrome.document import Chunk, DocumentInfo
from gputop_trace.parsers.chrome.fast_columns import process_fast
from gputop_trace.parsers.chrome.flows import bind_flow_events, launch_flows
from gputop_trace.parsers.chrome.graph_replays import REPLAY_NAME, replay_bands
from gputop_trace.parsers.chrome.matching import match_async, match_begin_end
from gputop_trace.parsers.chrome.opening import Opened, open_trace
from gputop_trace.parsers.chrome.side_tables import add_side_tables
from gputop_trace.parsers.chrome.state import State
from gputop_trace.parsers.chrome.values import int_or, stable_int
from gputop_trace.parsers.cores import usable_cores
from gputop_trace.parsers.source import ByteStream
from gputop_trace.units import plural

#: ``progress(bytes_read_from_disk, file_size, events_so_far)``; may raise :class:`LoadCancelled`.
Progress = Callable[[int, int, int], None]

LOADER_VERSION = 1
#: bytes of events read before the event columns are sized for the whole file, and the room left beyond the
#: events expected at that density (pages never written cost no memory)
ESTIMATE_AFTER = 16 << 20
ESTIMATE_MARGIN = 1.1
#: usable cores from which the columns' memory is faulted in ahead on a thread of its own (where fewer, that thread
#: would take a core the scanning threads use, for work the loading thread does anyway)
FAULT_IN_CORES = 4

_RANK_IN_NAME = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)


def load(
    path: str,
    *,
    progress: Progress | None = None,
    rank: int | None = None,
    default_rank: int = 0,
    include_python: bool = True,
    opened: Opened | None = None,
) -> Trace:
    """Load a Chrome trace (``.json`` or gzip, object or bare-array form) into a :class:`Trace`.

    ``rank`` overrides the rank (default: ``distributedInfo.rank``, else ``default_rank``).
    ``include_python=False`` leaves out ``python_function`` events (often most of a trace recorded
    ``with_stack=True``). ``opened``: the file as :func:`~gputop_trace.parsers.chrome.opening.open_trace` opened
    it (already being read; this closes it), else it is opened here. Raises :class:`TraceError` for input that is
    not a readable trace; recovers what it can from a truncated one.
    """
    st = State()
    file_size = os.path.getsize(path) if os.path.exists(path) else 0

    def on_read(nbytes: int) -> None:
        if progress is not None:
            progress(nbytes, file_size, st.n)

    trace = opened if opened is not None else open_trace(path)
    trace.on_read = on_read
    try:
        _stream_into(st, trace.chunks, trace.src, progress, file_size, include_python)
    except LoadCancelled:
        raise
    except RecursionError:
        raise TraceError(
            f"{path} nests JSON too deeply to read. It is probably not a trace; if it is, report it.",
            path=path,
        ) from None
    finally:
        trace.close()
    gz_truncated, corrupt = trace.src.truncated, trace.src.corrupt
    return _finish(st, trace.info, path, file_size, rank, default_rank, gz_truncated, corrupt)


def _stream_into(
    st: State,
    chunks: Iterable[Chunk],
    src: ByteStream,
    progress: Progress | None,
    file_size: int,
    include_python: bool,
) -> None:
    """Every chunk of the events array into ``st`` (no chunk is referenced once this returns, so that the memory
    of the scanner's columns can be freed). In a plain (not gzip) file the event columns are sized once the first
    :data:`ESTIMATE_AFTER` bytes are read, for as many events as the file holds at that density (and a little
    more), so that they need not grow (copied) as the events come; where there are :data:`FAULT_IN_CORES` cores or
    more, their memory is faulted in meanwhile on a thread of its own."""
    scanned = 0 if not src.gzip and file_size > 2 * ESTIMATE_AFTER else -1
    try:
        for chunk in chunks:
            if chunk.fast is not None:
                process_fast(st, chunk.fast, include_python=include_python)
                if scanned >= 0:
                    scanned += chunk.fast.end
                    if scanned >= ESTIMATE_AFTER:
                        expect = int(st.n * file_size / scanned)
                        spare = usable_cores() >= FAULT_IN_CORES
                        st.cols.reserve(int(expect * ESTIMATE_MARGIN) + 1024, fault_in=expect if spare else 0)
                        scanned = -1
            else:
                process_chunk(st, chunk, include_python=include_python)
            if progress is not None:
                progress(src.bytes_in, file_size, st.n)
    finally:
        st.cols.settle()


def _finish(
    st: State,
    info: DocumentInfo,
    path: str,
    file_size: int,
    rank: int | None,
    default_rank: int,
    gz_truncated: bool,
    corrupt: str | None,
) -> Trace:
    """The trace out of everything streamed: warnings, B/E and async pairs, kinds and lanes, side tables, flows."""
    b = st.builder
    header = info.header
    dist = header.get("distributedInfo") if isinstance(header.get("distributedInfo"), dict) else None
    if rank is None:
        rank = int_or(dist.get("rank"), default_rank) if dist else default_rank
    lost = _warn_about_unread(st, info, gz_truncated, corrupt)
    _refuse_without_events(st, info, path)
    # end of the trace, for B/async events that never ended
    ends = [st.cols.end] if st.cols.end is not None else []
    be_ts = [r[1] for r in st.be] + [r[4] for r in st.asyncs]
    end_of_trace = max(ends + be_ts, default=0)
    match_begin_end(st, end_of_trace)
    match_async(st, end_of_trace)

    fmt = detect_format(st, header)
    b.format = fmt
    st.accelerator = detect_accelerator(st, header) if fmt != "jax" else devices.CUDA
    kind = _add_events(st, fmt, rank)
    _add_counters(st, rank)
    meta = TraceMeta(
        format=fmt,
        source=(os.path.abspath(path),),
        producer=_producer(fmt, header),
        gpus=_gpus(header, st, fmt, rank),
        ranks=(rank,),
        world_size=int_or(dist.get("world_size"), 0) or None if dist else None,
        truncated_bytes=lost,
        properties=_properties(header, info, file_size, st.python_left_out, st.inductor_args),
    )
    if fmt == "jax" and not bool(np.any(kind == Kind.KERNEL)):
        b.warn("No GPU kernels were found: the JAX trace has no /device:GPU process with stream threads.")
    trace = b.build(meta)
    # bind non-launch flow events (fwdbwd ...) now that lanes are final
    if st.flows:
        trace = bind_flow_events(trace, st)
    return trace


def _warn_about_unread(st: State, info: DocumentInfo, gz_truncated: bool, corrupt: str | None) -> int:
    """Warn about truncation, damage and skipped or repaired events; returns the bytes lost to truncation
    (decompressed, after the last complete event)."""
    b = st.builder
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
            f"{plural(st.repaired, 'event')} had fields of the wrong type or out of range (e.g. numbers beyond 64 "
            f"bits); those fields were ignored and the {'event' if st.repaired == 1 else 'events'} kept; first one: "
            f"{st.repaired_example}"
        )
    if st.skipped:
        b.warn(
            f"{plural(st.skipped, 'event')} had unreadable fields (wrong types, NaN, bad numbers) and "
            f"{'was' if st.skipped == 1 else 'were'} skipped; first one: {st.skipped_example}"
        )
    if st.negative_dur:
        b.warn(f"{plural(st.negative_dur, 'event')} had a negative duration; shown with duration 0.")
    if st.other_phases:
        phases = ", ".join(f"{k} ×{v}" for k, v in sorted(st.other_phases.items()))
        b.warn(f"Events of phases this viewer does not draw were ignored: {phases}.")
    return lost


def _refuse_without_events(st: State, info: DocumentInfo, path: str) -> None:
    """Raise :class:`TraceError` when nothing usable was read (an empty events list is only warned about)."""
    if st.n or st.be or st.asyncs:
        return
    if info.truncated:
        raise TraceError(
            f"{path} is cut short before its first complete event ({info.total:,} bytes read). "
            "Re-copy the file or re-record the profile.",
            path=path,
        )
    if info.too_deep:
        raise TraceError(
            f"{path} nests JSON too deeply to read ({info.too_deep[0][1]:,} bytes of nested brackets) and holds no "
            "event that could be read. It is probably not a trace; if it is, report it.",
            path=path,
        )
    if st.skipped:
        raise TraceError(
            f"{path} is JSON, but none of its {st.skipped} trace entries is a usable event (first one: "
            f"{st.skipped_example}). Open a trace written by torch.profiler, jax.profiler or another Chrome-trace "
            "exporter.",
            path=path,
        )
    st.builder.warn("The trace holds no events (its traceEvents list is empty).")


def _add_events(st: State, fmt: str, rank: int) -> np.ndarray[Any, Any]:
    """Give the builder every event (with its kind and lane), the side tables and the launch flows; returns the
    events' kinds (provisional order)."""
    b = st.builder
    name = st.cols.column("name")
    start = st.cols.column("start")
    dur = st.cols.column("dur")
    corr = st.cols.column("corr")
    ext = st.cols.column("ext")
    kind, lane = _classify(st, fmt, rank, name)
    add_side_tables(st, kind, st.builder.names.strings, name, corr)
    b.add_events(start_ns=start, dur_ns=dur, kind=kind, lane=lane, name=name, corr=corr, ext=ext)
    fsrc, fdst = launch_flows(kind, corr)
    if len(fsrc):
        b.add_flows(fsrc, fdst, FlowKind.LAUNCH)
    bands = replay_bands(b.names.strings, kind, lane, name, corr, ext, start, dur) if fmt == "kineto" else None
    if bands is not None:  # one band per CUDA-graph replay (after every file event: provisional indices hold)
        src = bands.pop("src")
        idx = b.add_events(name=b.names.intern(REPLAY_NAME), **bands)
        b.add_flows(src, idx, FlowKind.LAUNCH)
        kind = np.concatenate((kind, bands["kind"]))
    return kind


def _classify(
    st: State, fmt: str, rank: int, name: np.ndarray[Any, Any]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Kind and lane of every event: by the classes found as the events streamed, or, for a JAX trace (whose
    classification reads every name), from the whole columns."""
    cls = st.cols.column("cls")
    if fmt != "jax":
        return classify_classes(st, fmt, rank, cls)
    # each event's thread, category, ph class and device from its class's row
    rows = np.array(list(st.classes), dtype=np.int64).reshape(-1, 5)[cls]
    src, cat, phc, device = (
        rows[:, j].astype(dt) for j, dt in ((0, np.int32), (1, np.int32), (2, np.uint8), (3, np.int32))
    )
    return classify_all(st, fmt, rank, src, cat, name, device, phc)


def _add_counters(st: State, rank: int) -> None:
    """One counter series per (process, series name), sorted by time."""
    for (pid, series), (ts_list, values) in st.counters.items():
        order = np.argsort(np.array(ts_list, dtype=np.int64), kind="stable")
        st.builder.counters.append(
            CounterSeries(
                name=series,
                ts_ns=np.array(ts_list, dtype=np.int64)[order],
                values=np.array(values, dtype=np.float64)[order],
                rank=rank,
                pid=stable_int(pid),
            )
        )


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


def _gpus(header: dict[str, Any], st: State, fmt: str, rank: int) -> tuple[GpuInfo, ...]:
    out: list[GpuInfo] = []
    props = header.get("deviceProperties")
    if isinstance(props, list):
        for p in props:
            if not isinstance(p, dict):
                continue
            major, minor = p.get("computeMajor"), p.get("computeMinor")
            out.append(
                GpuInfo(
                    device=int_or(p.get("id"), len(out)),
                    name=str(p.get("name", "GPU")),
                    rank=rank,
                    sm_count=int_or(p.get("numSms"), 0) or None,
                    total_memory=int_or(p.get("totalGlobalMem"), 0) or None,
                    compute_capability=f"{major}.{minor}" if major is not None else None,
                    properties=dict(p),
                )
            )
    if fmt == "jax":
        for pname in st.proc_name.values():
            m = JAX_GPU_PROC.match(pname)
            if m and not any(g.device == int(m.group(1)) for g in out):
                out.append(GpuInfo(device=int(m.group(1)), name=f"GPU {m.group(1)} (model not recorded)", rank=rank))
    return tuple(sorted(out, key=lambda g: g.device))


def _properties(
    header: dict[str, Any],
    info: DocumentInfo,
    file_size: int,
    python_left_out: int,
    inductor_args: dict[str, set[tuple[str, str, str]]],
) -> dict[str, Any]:
    keep = {k: v for k, v in header.items() if k not in ("deviceProperties",) and not isinstance(v, (list, dict))}
    if isinstance(header.get("distributedInfo"), dict):
        keep["distributedInfo"] = header["distributedInfo"]
    keep["json_form"] = info.form
    keep["file_size"] = file_size
    keep["decompressed_size"] = info.total
    if python_left_out:
        keep[PYTHON_LEFT_OUT] = python_left_out
    if inductor_args:
        keep[INDUCTOR_LAUNCHERS] = {
            name: [{"kernel_file": f, "kernel_hash": h, "kernel_backend": b} for f, h, b in sorted(rows)]
            for name, rows in sorted(inductor_args.items())
        }
    return keep


def rank_from_filename(path: str) -> int | None:
    """A rank written in a file name (``rank3.pt.trace.json``, ``trace_rank_12.json.gz``), if any."""
    m = _RANK_IN_NAME.search(os.path.basename(path))
    return int(m.group(1)) if m else None
