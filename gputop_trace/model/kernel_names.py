"""Kernel names: shortening C++ kernel signatures (shared by the kernel table, the app and the ncu name filter),
recognising collective kernels (shared by the rank analyses and the timeline's kernel colours), and the name two
runs of one kernel share (the run comparison)."""

from __future__ import annotations

import re


def qualified_name(signature: str) -> str:
    """The qualified function name of a demangled signature: no return type, anonymous-namespace parts,
    template arguments or parameters. ``void at::native::(anonymous namespace)::k<4>(int)`` →
    ``at::native::k``; a name that is not a C++ signature comes back stripped of surrounding space."""
    s = signature.strip().replace("(anonymous namespace)::", "").replace("{anonymous}::", "")
    out: list[str] = []
    depth = 0
    for ch in s:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            if ch == "(" and "".join(out).strip():
                break
            out.append(ch)
    core = "".join(out).strip()
    if " " in core and ("(" in s or "<" in s or "::" in s):  # a return type before a C++ signature
        core = core.rsplit(" ", 1)[-1]
    return core or signature.strip()


def function_name(signature: str) -> str:
    """The bare function name (the last component of :func:`qualified_name`), as ncu's
    ``--kernel-name-base function`` matches it: ``vectorized_elementwise_kernel``."""
    core = qualified_name(signature)
    return core.rsplit("::", 1)[-1] if "::" in core else core


#: Triton's specialization suffix (``_0d1d2d3de`` : argument indices with their divisibility flags) and a
#: trailing hexadecimal hash of at least 8 digits holding a digit (``_5f3a9c1e``): both change from one compile to
#: the next while the kernel stays the same.
_TRITON_SIGNATURE = re.compile(r"_(?:\d+(?:de|d|c|e)){2,}\d*$")
_HEX_HASH = re.compile(r"_(?=[0-9a-f]*\d)[0-9a-f]{8,}$")


def normalized_kernel_name(name: str) -> str:
    """The name two runs of the same kernel share: :func:`qualified_name` (no return type, template arguments or
    parameters) without a Triton specialization suffix or a trailing hash. ``void k<128, float>(float*)`` →
    ``k``; ``_attn_fwd_0d1d2d3de4de`` → ``_attn_fwd``; ``fused_mm_3a9c1e5f77`` → ``fused_mm``. Inductor's kernel
    index (``triton_poi_fused_add_0``) is kept: it tells different kernels of one graph apart."""
    core = qualified_name(name)
    for pattern in (_TRITON_SIGNATURE, _HEX_HASH):
        cut = pattern.sub("", core)
        if cut:
            core = cut
    return core


#: Collective operations by the word a name spells them with (lowercase, no separators).
COLLECTIVE_WORDS: dict[str, str] = {
    "allreduce": "all_reduce",
    "allgather": "all_gather",
    "reducescatter": "reduce_scatter",
    "broadcast": "broadcast",
    "alltoall": "all_to_all",
    "sendrecv": "send_recv",
    "reduce": "reduce",
    "send": "send",
    "recv": "recv",
}
# NCCL / RCCL kernels: ``ncclDevKernel_AllReduce_Sum_f32_RING_LL``, ``ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t``
_LIBRARY_OP = re.compile(
    r"(?:nccl|rccl)\w*?(AllReduce|AllGather|ReduceScatter|Broadcast|AllToAll|SendRecv|Reduce|Send|Recv)",
    re.IGNORECASE,
)
# collective kernels outside NCCL/RCCL, by the operation their name says: the custom all-reduces of vLLM
# (``cross_device_reduce_1stage``), TensorRT-LLM (``oneShotAllReduceKernel``) and PyTorch symmetric memory
# (``one_shot_all_reduce_kernel``, ``multimem_all_reduce_kernel``), and other all-gather / all-to-all kernels
_CUSTOM_OP: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("all_reduce", re.compile(r"all_?reduce|cross_device_reduce", re.IGNORECASE)),
    ("all_gather", re.compile(r"all_?gather", re.IGNORECASE)),
    ("reduce_scatter", re.compile(r"reduce_?scatter", re.IGNORECASE)),
    ("all_to_all", re.compile(r"all_?to_?all", re.IGNORECASE)),
    ("broadcast", re.compile(r"broadcast_kernel", re.IGNORECASE)),
)
# communication kernels whose name does not say the operation
_OTHER_COMMUNICATION = re.compile(r"nccl|rccl|cross_device|\bnvshmem|one_shot_all|two_shot_all|multimem", re.IGNORECASE)


def collective_op(name: str) -> str | None:
    """The collective a kernel (demangled or raw name) stands for, one of the values of :data:`COLLECTIVE_WORDS`
    or ``"other"`` for a communication kernel whose name does not say which; None when it is not a collective."""
    m = _LIBRARY_OP.search(name)
    if m:
        return COLLECTIVE_WORDS[m.group(1).lower()]
    for op, pattern in _CUSTOM_OP:
        if pattern.search(name):
            return op
    if _OTHER_COMMUNICATION.search(name):
        return "other"
    return None
