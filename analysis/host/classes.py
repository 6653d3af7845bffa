"""What a CPU thread was doing: the host-activity classes the gap detector attributes idle GPU time to.

Every event on a CPU thread falls in at most one class (detectors.md §2.4), checked in this order:

1. **sync** — the host waits for the GPU: Kineto/nsys synchronization rows (``Kind.SYNC``), CUDA calls that
   block until the device is done (``cudaStreamSynchronize``, ``cudaDeviceSynchronize``,
   ``cudaEventSynchronize``, ``cuCtxSynchronize`` ..., a non-``Async`` ``cudaMemcpy*``), any copy call whose
   host side is pageable (it stages through a driver buffer, so the host waits), and the PyTorch operators
   that read a GPU value on the host (``aten::item``, ``aten::_local_scalar_dense``);
   Runtime ranges that mean the same are included: JAX's ``np.asarray(jax.Array)``, ``block_until_ready``,
   ``PjRtBuffer::ToLiteral``;
2. **os** — an OS-runtime call (nsys ``OSRT_API``: ``poll``, ``pthread_cond_wait``, ``sem_wait``, ``read`` ...)
   or a Python ``sleep`` frame;
3. **data** — an annotation range (or Python frame) whose name says data loading: a word of it is ``data``
   (not in ``DataParallel``), ``load``, ``loader``, ``loading``, ``dataset``, ``prefetch``, ``fetch``,
   ``collate``, ``infeed`` (names are split at non-letters and lower→upper case changes, so ``DataLoader`` and
   ``data_load`` both match); Python frames count when they are in ``torch/utils/data``;
4. **cpu** — any other traced work: framework operators, Python frames, CUDA API calls, other slices, and
   annotation ranges that are nested in another event or have nothing nested in them (JAX runtime ranges,
   NVTX-wrapped operators, ``forward`` inside ``step_3``).

An outermost annotation range with events nested in it (``step_3``, ``ProfilerStep#3``) is a label, not work:
time inside it that nothing else covers is untraced host time.
"""

from __future__ import annotations

import re
import weakref
from enum import IntEnum

import numpy as np
import numpy.typing as npt

from gputop_trace.model.arrays import I64, distinct, isin
from gputop_trace.model.kinds import CopyKind, Kind, LaneKind, MemKind
from gputop_trace.model.trace import Trace

I8 = npt.NDArray[np.int8]


class HostClass(IntEnum):
    """Host-activity class of an event; lower values win when events of several classes overlap."""

    SYNC = 0
    OS = 1
    DATA = 2
    CPU = 3


NONE = -1

_SYNC_CALL = re.compile(
    r"^(?:cuda(?:Stream|Device|Event|Thread)Synchronize|cu(?:Stream|Ctx|Event)Synchronize"
    r"|hip(?:Stream|Device|Event)Synchronize)"
)
_SYNC_MEMCPY = re.compile(r"^(?:cuda|cu|hip)Memcpy(?!.*Async)")
_SYNC_OPS = frozenset({"aten::item", "aten::_local_scalar_dense", "np.asarray(jax.Array)"})
_SYNC_FRAGMENTS = re.compile(r"block_until_ready|BlockHostUntilReady|PjRtBuffer::ToLiteral")
_DATA_WORDS = frozenset(
    {"load", "loader", "loading", "dataloader", "dataset", "prefetch", "fetch", "collate", "infeed"}
)
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
_PY_DATA = re.compile(r"torch/utils/data/|DataLoader", re.IGNORECASE)


def is_sync_call_name(name: str) -> bool:
    """Whether a CUDA API, operator or runtime range name blocks the host until GPU work is done."""
    return bool(_SYNC_CALL.match(name) or _SYNC_MEMCPY.match(name) or _SYNC_FRAGMENTS.search(name)) or name in _SYNC_OPS


def is_data_loading_name(name: str) -> bool:
    """Whether an annotation range name says data loading (``data_load``, ``DataLoader``, ``load_batch`` ...).

    ``data`` counts as a word on its own except in ``DataParallel`` (``DistributedDataParallel.forward`` is
    not data loading).
    """
    words = [w.lower() for w in _WORDS.findall(name)]
    for i, w in enumerate(words):
        if w in _DATA_WORDS:
            return True
        if w == "data" and (i + 1 >= len(words) or words[i + 1] != "parallel"):
            return True
    return False


def is_sleep_name(name: str) -> bool:
    """Whether a Python frame is a sleep (``time.sleep``, JAX's ``$time sleep``): the thread blocks in the OS."""
    return "sleep" in (w.lower() for w in _WORDS.findall(name))


_NAME_TABLES: weakref.WeakKeyDictionary[Trace, npt.NDArray[np.uint8]] = weakref.WeakKeyDictionary()


#: Above this many distinct names, only the names of the events at hand are classified (not the whole table).
_MAX_EAGER_NAMES = 100_000


def _name_tables(trace: Trace, used: npt.NDArray[np.int32]) -> npt.NDArray[np.uint8]:
    """Per name id, bit flags: 1 sync call, 2 data-loading range name, 4 data-loading Python frame, 8 sleep.

    Computed once per trace for all names (the tests run once per distinct name); for traces with a huge name
    table (unique NVTX strings), only for the names in ``used``, cached as they are met."""
    cached = _NAME_TABLES.get(trace)
    if cached is None:
        cached = np.full(len(trace.names), 255, dtype=np.uint8)  # 255: not classified yet
        _NAME_TABLES[trace] = cached
    if len(trace.names) <= _MAX_EAGER_NAMES:
        todo = np.flatnonzero(cached == 255)
    else:
        present = np.flatnonzero(np.bincount(used, minlength=len(trace.names)))
        todo = present[cached[present] == 255]
    for i in todo.tolist():
        n = trace.names[i]
        cached[i] = (
            (1 if is_sync_call_name(n) else 0)
            | (2 if is_data_loading_name(n) else 0)
            | (4 if _PY_DATA.search(n) else 0)
            | (8 if is_sleep_name(n) else 0)
        )
    return cached


#: Host class of each event kind before its name is looked at (-1: not host work).
_KIND_CLASS = np.full(256, NONE, dtype=np.int8)
for _k in (Kind.CPU_OP, Kind.PYTHON, Kind.API, Kind.OTHER):
    _KIND_CLASS[int(_k)] = HostClass.CPU
_KIND_CLASS[int(Kind.OSRT)] = HostClass.OS
_KIND_CLASS[int(Kind.SYNC)] = HostClass.SYNC


def host_classes(trace: Trace, events: I64 | slice) -> I8:
    """:class:`HostClass` of each event (``-1`` for events that are no host work: label ranges, markers,
    GPU events). ``events`` are indices, or a slice (a lane: no copies of the columns are made).
    Vectorized: lookup tables by kind and by name id."""
    if isinstance(events, slice):
        offset = events.start or 0
        n = (events.stop or 0) - offset
    else:
        offset, n = 0, len(events)
    if not n:
        return np.full(n, NONE, dtype=np.int8)
    kind = trace.kind[events]
    out = _KIND_CLASS[kind]
    is_range = kind == Kind.RANGE
    ranges = np.flatnonzero(is_range)
    if len(ranges):
        idx = ranges + offset if isinstance(events, slice) else events[ranges]
        out[ranges[~_is_label_range(trace, idx)]] = HostClass.CPU
    names = trace.name[events]
    flags = _name_tables(trace, names)[names]
    is_py = kind == Kind.PYTHON
    out[(is_range & ((flags & 2) > 0)) | (is_py & ((flags & 4) > 0))] = HostClass.DATA
    out[is_py & ((flags & 8) > 0)] = HostClass.OS
    named = is_range | is_py | (kind == Kind.API) | (kind == Kind.CPU_OP)
    out[named & ((flags & 1) > 0)] = HostClass.SYNC
    blocking = pageable_copy_calls(trace)
    if len(blocking):
        if isinstance(events, slice):
            inside = blocking[(blocking >= offset) & (blocking < offset + n)]
            out[inside - offset] = HostClass.SYNC
        else:
            out[isin(events, blocking)] = HostClass.SYNC
    return out


def _is_label_range(trace: Trace, events: I64) -> npt.NDArray[np.bool_]:
    """Whether each range is an outermost range with something nested in it (a label such as ``step_3``),
    as opposed to a nested or leaf range (the work itself: a JAX runtime range, an NVTX-wrapped operator)."""
    nxt = np.minimum(events + 1, len(trace) - 1)
    end = trace.start_ns[events] + trace.dur_ns[events]
    has_child = (events + 1 < len(trace)) & (trace.lane[nxt] == trace.lane[events]) & (trace.start_ns[nxt] < end)
    outermost = trace.depth[events] == 0
    return np.asarray(outermost & has_child, dtype=bool)


def host_side_kind(trace: Trace) -> npt.NDArray[np.uint8]:
    """For every row of ``trace.copies``: the :class:`MemKind` of the host side (source of HtoD, destination
    of DtoH, else 0)."""
    c = trace.copies
    return np.where(
        c.direction == CopyKind.HTOD, c.src_kind, np.where(c.direction == CopyKind.DTOH, c.dst_kind, 0)
    ).astype(np.uint8)


def pageable_copy_calls(trace: Trace) -> I64:
    """Indices of the API calls that launched a copy whose host side is pageable (sorted, unique)."""
    if not len(trace.copies):
        return np.zeros(0, dtype=np.int64)
    pageable = host_side_kind(trace) == MemKind.PAGEABLE
    api = trace.launch_of[trace.copies.event[pageable]]
    return distinct(api[api >= 0])


def cpu_lanes(trace: Trace) -> I64:
    """Ids of the CPU-thread lanes."""
    return np.flatnonzero(trace.lane_kind == LaneKind.CPU_THREAD).astype(np.int64)
