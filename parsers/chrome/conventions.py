"""What producers' names mean in a Chrome trace: Kineto categories → kinds, the JAX/XLA process, thread and event
name patterns, and the words for copy directions and memory kinds (in copy names and JAX details strings)."""

from __future__ import annotations

import re

from gputop_trace.model.kinds import CopyKind, Kind, MemKind

#: Meta MTIA's category of device work (ops and DMA copies)
MTIA_DEVICE_CAT = "mtia_ccp_events"
#: Kineto's category of a CUPTI range-profiler range: one profiled kernel, its hardware counters in ``args``
PROFILER_RANGE_CAT = "cuda_profiler_range"

# Kineto categories (lower-cased) → kind. Old PyTorch (≤ 1.10) wrote capitalised names.
CAT_KIND: dict[str, Kind] = {
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
    PROFILER_RANGE_CAT: Kind.GPU_RANGE,
    "python_function": Kind.PYTHON,
    "python": Kind.PYTHON,
    "overhead": Kind.OVERHEAD,
    "trace": Kind.OTHER,
    # other accelerators' Kineto categories (ROCm/HIP writes the CUDA ones): device work and the runtime calls
    # that launch it. Meta MTIA puts its device ops (and its DMA copies, named ``dma_request``) in
    # ``mtia_ccp_events``; Intel XPU, Habana HPU and PrivateUse1 backends have their own runtime categories.
    MTIA_DEVICE_CAT: Kind.KERNEL,
    "mtia_insight": Kind.KERNEL,
    "hpu_op": Kind.KERNEL,
    "mtia_runtime": Kind.API,
    "xpu_runtime": Kind.API,
    "xpu_driver": Kind.API,
    "privateuse1_runtime": Kind.API,
    "privateuse1_driver": Kind.API,
    "glow_runtime": Kind.API,
}
#: an event of this name in :data:`MTIA_DEVICE_CAT` is a copy (its args give ``size`` and ``direction``)
MTIA_COPY_NAME = "dma_request"
#: MTIA's direction words (``args.direction``) → copy direction
ARG_DIRECTION = {
    "HOST_TO_DEVICE": CopyKind.HTOD,
    "DEVICE_TO_HOST": CopyKind.DTOH,
    "DEVICE_TO_DEVICE": CopyKind.DTOD,
    "HOST_TO_HOST": CopyKind.HTOH,
}


GPU_EVENT_KINDS = {Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET}


JAX_GPU_PROC = re.compile(r"^/device:GPU:(\d+)")
JAX_HOST_PROC = re.compile(r"^/host:CPU")
JAX_STREAM = re.compile(r"^Stream #(\d+)")
KINETO_COPY = re.compile(r"Memcpy\s+(HtoD|DtoH|DtoD|HtoH|PtoP)(?:\s*\((\w+)\s*->\s*(\w+)\))?", re.IGNORECASE)
JAX_COPY = re.compile(r"^Memcpy(H2D|D2H|D2D|P2P|H2H)", re.IGNORECASE)
DETAIL_KV = re.compile(r"(\w+):([^\s]+)")
CUDA_API_NAME = re.compile(r"^(cu[A-Z]|cuda[A-Z])")


DIRECTION = {
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


MEMKIND = {
    "pageable": MemKind.PAGEABLE,
    "pinned": MemKind.PINNED,
    "device": MemKind.DEVICE,
    "array": MemKind.ARRAY,
    "managed": MemKind.MANAGED,
    "unified": MemKind.MANAGED,
}
