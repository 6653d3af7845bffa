"""Lanes, GPU properties, counters, metadata and the per-kind side tables (frozen numpy columns keyed by event
index). Times are int64 ns, sizes bytes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from gputop_trace.model.arrays import F32, F64, I32, I64, U8
from gputop_trace.model.kinds import LaneKind


@dataclass(frozen=True)
class Lane:
    """One horizontal track of the timeline.

    ``pid``/``tid`` identify a CPU thread (tid is ``-1`` for GPU lanes); ``device``/``stream`` a GPU stream
    (``-1`` on CPU lanes). ``sort_key`` orders lanes on screen; lane ids are positions in ``Trace.lanes``.
    ``accelerator`` is the kind of device a device lane belongs to (:mod:`gputop_trace.model.devices`; ``""`` on
    CPU lanes, and on a device lane it means a CUDA GPU).
    """

    kind: LaneKind
    name: str
    rank: int = 0
    pid: int = -1
    tid: int = -1
    device: int = -1
    stream: int = -1
    process_name: str = ""
    sort_key: tuple[Any, ...] = ()
    accelerator: str = ""


@dataclass(frozen=True)
class GpuInfo:
    """One GPU as the profile describes it. Sizes in bytes, clocks in kHz, bandwidth in bytes/s."""

    device: int
    name: str
    rank: int = 0
    sm_count: int | None = None
    total_memory: int | None = None
    compute_capability: str | None = None
    memory_bandwidth: float | None = None
    clock_khz: int | None = None
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CounterSeries:
    """A named numeric series over time (Chrome ``C`` events, nsys metrics). ``ts_ns`` relative to trace start."""

    name: str
    ts_ns: I64
    values: F64
    rank: int = 0
    pid: int = -1


@dataclass(frozen=True)
class TraceMeta:
    """Everything about a trace that is not an event.

    ``t0_ns`` is the file-time (ns) of relative time 0. ``rank_shift_ns`` maps a rank to the shift (ns) that was
    added to its events when clocks were aligned; file time of an event = start_ns + t0_ns - shift.
    """

    format: str  # "kineto" | "chrome" | "jax" | "nsys"
    source: tuple[str, ...] = ()
    producer: str = ""
    t0_ns: int = 0
    gpus: tuple[GpuInfo, ...] = ()
    ranks: tuple[int, ...] = (0,)
    world_size: int | None = None
    rank_shift_ns: dict[int, int] = field(default_factory=dict)
    truncated_bytes: int = 0
    warnings: tuple[str, ...] = ()
    properties: dict[str, Any] = field(default_factory=dict)


def read_only(a: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``a`` itself, made read-only (the model's columns are never written after the build)."""
    a.flags.writeable = False
    return a


@dataclass(frozen=True)
class KernelTable:
    """Launch geometry and resources of kernels, one row per kernel event (``event`` is sorted).

    ``grid``/``block`` are (n, 3) int32; ``shared_static``/``shared_dynamic`` bytes; ``registers`` per thread;
    ``occupancy`` Kineto's "est. achieved occupancy %" (NaN when unknown); ``raw_name`` the mangled or raw name
    id (``-1`` when the event name is already the raw name); ``graph_id`` ``-1`` outside CUDA graphs;
    ``graph_node`` the graph node the kernel ran as (Nsight Systems' node-level graph trace), ``-1`` unknown.
    """

    event: I64
    grid: I32
    block: I32
    registers: I32
    shared_static: I32
    shared_dynamic: I32
    occupancy: F32
    blocks_per_sm: F32
    warps_per_sm: F32
    raw_name: I32
    graph_id: I64
    graph_node: I64

    @staticmethod
    def empty() -> KernelTable:
        return KernelTable(**empty_side_columns(KernelTable))

    def __len__(self) -> int:
        return int(self.event.shape[0])


@dataclass(frozen=True)
class CopyTable:
    """Bytes, direction and memory kinds of memcpy / memset / UVM events (``event`` sorted).

    ``direction`` is a :class:`CopyKind` (0 for memsets), ``src_kind``/``dst_kind`` :class:`MemKind` (a memset's
    memory kind is in ``dst_kind``), ``is_async`` 1/0, or -1 when unknown.
    """

    event: I64
    bytes: I64
    direction: U8
    src_kind: U8
    dst_kind: U8
    is_async: npt.NDArray[np.int8]

    @staticmethod
    def empty() -> CopyTable:
        return CopyTable(**empty_side_columns(CopyTable))

    def __len__(self) -> int:
        return int(self.event.shape[0])


@dataclass(frozen=True)
class CollectiveTable:
    """What the profiler recorded about collective (NCCL) kernels, one row per kernel event (``event`` sorted).

    ``op`` is the interned collective name as the framework wrote it (``allreduce``), ``group`` the interned
    process-group name (``-1`` unknown), ``group_size`` ranks in the group (0 unknown), ``bytes_in``/``bytes_out``
    message sizes in bytes (``-1`` unknown), ``dtype`` the interned element type name (``-1`` unknown).
    """

    event: I64
    op: I32
    group: I32
    group_size: I32
    bytes_in: I64
    bytes_out: I64
    dtype: I32

    @staticmethod
    def empty() -> CollectiveTable:
        return CollectiveTable(**empty_side_columns(CollectiveTable))

    def __len__(self) -> int:
        return int(self.event.shape[0])


@dataclass(frozen=True)
class FlowTable:
    """Arrows between events: ``src`` → ``dst`` event indices, with a :class:`FlowKind`."""

    src: I64
    dst: I64
    kind: U8

    @staticmethod
    def empty() -> FlowTable:
        return FlowTable(**empty_side_columns(FlowTable))

    def __len__(self) -> int:
        return int(self.src.shape[0])


@dataclass(frozen=True)
class OpArgTable:
    """What ``record_shapes`` wrote on framework operators, one row per operator event (``event`` sorted).

    ``shapes`` is the interned text of the op's ``Input Dims`` exactly as PyTorch prints the list
    (``[[512, 256], [256, 768], []]``; ``-1`` unknown), ``types`` the interned text of its ``Input type`` list
    (``float, float, Scalar``; ``-1`` unknown), ``seq`` the autograd ``Sequence number`` and ``fwd_tid`` the
    ``Fwd thread id`` (``-1`` when absent).
    """

    event: I64
    shapes: I32
    types: I32
    seq: I64
    fwd_tid: I64

    @staticmethod
    def empty() -> OpArgTable:
        return OpArgTable(**empty_side_columns(OpArgTable))

    def __len__(self) -> int:
        return int(self.event.shape[0])


@dataclass(frozen=True)
class MemoryTable:
    """The allocator's record of each allocation and free (Kineto ``[memory]`` instants of ``profile_memory``),
    one row per event (``event`` sorted). Sizes in bytes: ``bytes`` the change (negative for a free),
    ``allocated``/``reserved`` the allocator's totals after it (``-1`` unknown); ``device`` the device index
    (``-1`` for host memory), ``device_type`` PyTorch's ``DeviceType`` number (0 CPU, 1 CUDA)."""

    event: I64
    bytes: I64
    allocated: I64
    reserved: I64
    device: I32
    device_type: I32

    @staticmethod
    def empty() -> MemoryTable:
        return MemoryTable(**empty_side_columns(MemoryTable))

    def __len__(self) -> int:
        return int(self.event.shape[0])


_SIDE_DTYPES: dict[str, dict[str, Any]] = {
    "KernelTable": {
        "event": np.int64,
        "grid": (np.int32, 3),
        "block": (np.int32, 3),
        "registers": np.int32,
        "shared_static": np.int32,
        "shared_dynamic": np.int32,
        "occupancy": np.float32,
        "blocks_per_sm": np.float32,
        "warps_per_sm": np.float32,
        "raw_name": np.int32,
        "graph_id": np.int64,
        "graph_node": np.int64,
    },
    "CopyTable": {
        "event": np.int64,
        "bytes": np.int64,
        "direction": np.uint8,
        "src_kind": np.uint8,
        "dst_kind": np.uint8,
        "is_async": np.int8,
    },
    "FlowTable": {"src": np.int64, "dst": np.int64, "kind": np.uint8},
    "CollectiveTable": {
        "event": np.int64,
        "op": np.int32,
        "group": np.int32,
        "group_size": np.int32,
        "bytes_in": np.int64,
        "bytes_out": np.int64,
        "dtype": np.int32,
    },
    "OpArgTable": {"event": np.int64, "shapes": np.int32, "types": np.int32, "seq": np.int64, "fwd_tid": np.int64},
    "MemoryTable": {
        "event": np.int64,
        "bytes": np.int64,
        "allocated": np.int64,
        "reserved": np.int64,
        "device": np.int32,
        "device_type": np.int32,
    },
}


def side_table_dtypes(cls: type) -> dict[str, Any]:
    """Column name → numpy dtype (or ``(dtype, width)`` for 2-D columns) of a side table class."""
    return _SIDE_DTYPES[cls.__name__]


def empty_side_columns(cls: type) -> dict[str, Any]:
    """The columns of side table ``cls`` with no rows, each of its dtype (and row width, for 2-D columns)."""
    out: dict[str, Any] = {}
    for name, dt in side_table_dtypes(cls).items():
        out[name] = np.zeros((0, dt[1]) if isinstance(dt, tuple) else 0, dtype=dt[0] if isinstance(dt, tuple) else dt)
    return out


EVENT_COLUMNS: dict[str, Any] = {
    "start_ns": np.int64,
    "dur_ns": np.int64,
    "kind": np.uint8,
    "lane": np.int32,
    "name": np.int32,
    "depth": np.int16,
    "corr": np.int64,
    "ext": np.int64,
}
