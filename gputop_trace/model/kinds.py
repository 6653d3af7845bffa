"""Event, lane, copy, memory and flow kinds of the model, and their labels."""

from __future__ import annotations

from enum import IntEnum


class Kind(IntEnum):
    """What an event is. Stored as ``uint8`` in ``Trace.kind``."""

    KERNEL = 0
    MEMCPY = 1
    MEMSET = 2
    API = 3  # CUDA runtime / driver API call on a CPU thread
    SYNC = 4  # host-side wait (Kineto cuda_sync, nsys CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)
    CPU_OP = 5  # framework operator (ATen op, XLA host op)
    RANGE = 6  # annotation range on a CPU thread (record_function, NVTX push/pop, JAX TraceAnnotation)
    GPU_RANGE = 7  # annotation projected on a GPU (Kineto gpu_user_annotation)
    PYTHON = 8  # Python stack frame
    GRAPH = 9  # whole CUDA-graph execution on the GPU (nsys graph trace)
    MARKER = 10  # instant / NVTX mark
    OSRT = 11  # OS runtime call (nsys OSRT_API: poll, pthread_cond_wait ...)
    OVERHEAD = 12  # profiler bookkeeping
    UVM = 13  # unified-memory migration
    OTHER = 14


#: Kinds that make a GPU busy (detectors.md §2.1). Unified-memory migrations are GPU activity for busy time and
#: gaps, as ``nsys analyze -r gpu_gaps`` counts them (they stay out of exposed copies: analysis/transfers.py).
GPU_BUSY_KINDS: tuple[Kind, ...] = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.GRAPH, Kind.UVM)
#: Kinds that run on a GPU.
GPU_KINDS: tuple[Kind, ...] = GPU_BUSY_KINDS

#: The key each kind has in the ``events`` object of the JSON contract.
KIND_JSON_KEY: dict[Kind, str] = {
    Kind.KERNEL: "kernel",
    Kind.MEMCPY: "memcpy",
    Kind.MEMSET: "memset",
    Kind.API: "api",
    Kind.CPU_OP: "cpu_op",
    Kind.RANGE: "range",
    Kind.GPU_RANGE: "range",
    Kind.PYTHON: "python",
}


#: Each kind in words, singular and plural, for text a user reads (the ``events`` counts of a profile, details).
KIND_WORDS: dict[Kind, tuple[str, str]] = {
    Kind.KERNEL: ("kernel", "kernels"),
    Kind.MEMCPY: ("memcpy", "memcpys"),
    Kind.MEMSET: ("memset", "memsets"),
    Kind.API: ("CUDA API call", "CUDA API calls"),
    Kind.SYNC: ("synchronization (host waits)", "synchronizations (host waits)"),
    Kind.CPU_OP: ("CPU operator", "CPU operators"),
    Kind.RANGE: ("annotation range", "annotation ranges"),
    Kind.GPU_RANGE: ("GPU annotation", "GPU annotations"),
    Kind.PYTHON: ("Python frame", "Python frames"),
    Kind.GRAPH: ("CUDA graph", "CUDA graphs"),
    Kind.MARKER: ("marker", "markers"),
    Kind.OSRT: ("OS runtime call", "OS runtime calls"),
    Kind.OVERHEAD: ("profiler overhead event", "profiler overhead events"),
    Kind.UVM: ("unified-memory migration", "unified-memory migrations"),
    Kind.OTHER: ("event", "events"),
}

#: The words of each key of the JSON ``events`` counts (:data:`KIND_JSON_KEY`; ``other`` for the rest).
JSON_KEY_WORDS: dict[str, tuple[str, str]] = {
    **{key: KIND_WORDS[k] for k, key in reversed(KIND_JSON_KEY.items())},
    "other": ("other event", "other events"),
}


class LaneKind(IntEnum):
    """What a lane shows."""

    CPU_THREAD = 0
    GPU_STREAM = 1
    GPU_RANGES = 2  # annotation bands of one GPU (Kineto gpu_user_annotation)
    UVM = 3  # unified-memory migrations of one GPU
    ASYNC = 4  # async (b/e) and cross-thread ranges of one process
    OTHER = 5  # profiler bookkeeping, unknown producers


class CopyKind(IntEnum):
    """Direction of a copy; values follow CUPTI's ``CUpti_ActivityMemcpyKind`` (and nsys' ``copyKind``)."""

    UNKNOWN = 0
    HTOD = 1
    DTOH = 2
    HTOA = 3
    ATOH = 4
    ATOA = 5
    ATOD = 6
    DTOA = 7
    DTOD = 8
    HTOH = 9
    PTOP = 10
    UVM_HTOD = 11
    UVM_DTOH = 12
    UVM_DTOD = 13


COPY_KIND_LABEL: dict[int, str] = {
    0: "unknown",
    1: "HtoD",
    2: "DtoH",
    3: "HtoA",
    4: "AtoH",
    5: "AtoA",
    6: "AtoD",
    7: "DtoA",
    8: "DtoD",
    9: "HtoH",
    10: "PtoP",
    11: "UVM",
    12: "UVM",
    13: "UVM",
}


class MemKind(IntEnum):
    """Memory kind of a copy's source or destination; values follow CUPTI's ``CUpti_ActivityMemoryKind``."""

    UNKNOWN = 0
    PAGEABLE = 1
    PINNED = 2
    DEVICE = 3
    ARRAY = 4
    MANAGED = 5
    DEVICE_STATIC = 6
    MANAGED_STATIC = 7


MEM_KIND_LABEL: dict[int, str] = {
    0: "unknown",
    1: "pageable",
    2: "pinned",
    3: "device",
    4: "array",
    5: "managed",
    6: "device static",
    7: "managed static",
}


class FlowKind(IntEnum):
    """What an arrow between two events means."""

    LAUNCH = 0  # CPU launch call -> GPU op (Kineto ac2g, nsys correlationId)
    FWDBWD = 1  # forward op -> its backward op (Kineto fwdbwd)
    OTHER = 2
